use serde_json::{json, Map, Value};

use super::*;

fn map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn r(t: &str, physical: &str, attributes: Value, properties: Value) -> Value {
    ref_value(t, physical, &map(attributes), &map(properties))
}

#[test]
fn the_embedded_table_parses() {
    parse(TABLE).expect("data/ref-values.json parses");
    assert!(!table().is_empty());
}

/// The table is in step with the schema snapshot: every type whose primary identifier has
/// more than one part has an entry, every entry is such a type, and every name it uses is a
/// part of the identifier (segment) or a read-only property (attribute). Regenerate with
/// `python3 scripts/gen_ref_values.py` after refreshing data/resource-schemas.json.
#[test]
fn every_composite_identifier_type_has_an_entry() {
    let composite: Vec<&str> = schema::known_types()
        .filter(|t| schema::primary_identifier(t).is_some_and(|p| p.len() > 1))
        .collect();
    assert!(composite.len() > 300, "{} composite types", composite.len());
    let missing: Vec<&&str> = composite.iter().filter(|t| rule(t).is_none()).collect();
    assert!(missing.is_empty(), "no Ref entry for {missing:?}");
    for t in listed_types() {
        let s = schema::schema_for(t).unwrap_or_else(|| panic!("{t} is not in the snapshot"));
        assert!(
            s.primary_identifier.len() > 1,
            "{t} has a single identifier"
        );
        match rule(t) {
            Some(RefRule::Segment(n)) => {
                assert!(
                    s.primary_identifier.contains(n),
                    "{t}: {n} is not an identifier part"
                )
            }
            Some(RefRule::Attribute(n)) => assert!(
                s.read_only.iter().any(|p| p.segments().join("/") == *n),
                "{t}: {n} is not read-only"
            ),
            _ => {}
        }
    }
}

#[test]
fn an_identifier_segment_is_cut_out_of_the_composite() {
    let t = "AWS::ApiGateway::Resource";
    assert_eq!(
        r(
            t,
            "api123|res456",
            json!({"ResourceId": "res456"}),
            json!({})
        ),
        json!("res456")
    );
    assert_eq!(
        r(
            "AWS::ApiGateway::Stage",
            "api123|prod",
            json!({}),
            json!({})
        ),
        json!("prod")
    );
    assert_eq!(
        r(
            "AWS::ApiGateway::Deployment",
            "dep1|api123",
            json!({}),
            json!({})
        ),
        json!("dep1")
    );
    assert_eq!(
        r("AWS::EC2::EIP", "52.1.2.3|eipalloc-1", json!({}), json!({})),
        json!("52.1.2.3")
    );
}

#[test]
fn a_segment_the_physical_id_does_not_carry_is_read_from_the_record() {
    // An ECS service recorded by its ARN alone (the SDK shape).
    let arn = "arn:aws:ecs:us-east-1:1:service/c/s";
    assert_eq!(
        r("AWS::ECS::Service", arn, json!({}), json!({})),
        json!(arn)
    );
    // A record set whose id lacks the optional SetIdentifier part.
    let t = "AWS::Route53::RecordSet";
    assert_eq!(
        r(
            t,
            "Z1|www.example.com.|A",
            json!({}),
            json!({"Name": "www.example.com."})
        ),
        json!("www.example.com.")
    );
}

#[test]
fn a_joined_type_returns_the_identifier_and_rebuilds_a_short_one() {
    let t = "AWS::ApiGateway::Method";
    assert_eq!(
        r(t, "api|res|GET", json!({}), json!({})),
        json!("api|res|GET")
    );
    // The SDK Lambda permission provider keeps the bare statement id.
    let p = "AWS::Lambda::Permission";
    let fname = "arn:aws:lambda:us-east-1:1:function:f";
    assert_eq!(
        r(
            p,
            "sid-1",
            json!({"Id": "sid-1"}),
            json!({"FunctionName": fname})
        ),
        json!(format!("{fname}|sid-1"))
    );
    assert_eq!(
        r(p, &format!("{fname}|sid-1"), json!({}), json!({})),
        json!(format!("{fname}|sid-1"))
    );
    // Nothing to rebuild from: the id as recorded.
    assert_eq!(r(p, "sid-1", json!({}), json!({})), json!("sid-1"));
    assert_eq!(
        r(p, "sid-1", json!({"Id": "sid-1"}), json!({})),
        json!("sid-1")
    );
}

#[test]
fn an_attribute_rule_reads_the_cache_and_falls_back_to_the_id() {
    let t = "AWS::AppSync::ApiKey";
    let arn = "arn:aws:appsync:us-east-1:1:apis/a/apikeys/k";
    assert_eq!(r(t, "a|k", json!({"Arn": arn}), json!({})), json!(arn));
    assert_eq!(r(t, "a|k", json!({}), json!({})), json!("a|k"));
}

#[test]
fn a_type_without_an_entry_returns_its_physical_id() {
    assert_eq!(r("AWS::S3::Bucket", "b", json!({}), json!({})), json!("b"));
    assert_eq!(
        r("Custom::Thing", "x|y", json!({}), json!({})),
        json!("x|y")
    );
}

#[test]
fn a_record_without_a_physical_id_has_no_ref() {
    let rec = ResourceState {
        resource_type: "AWS::ApiGateway::Resource".into(),
        ..Default::default()
    };
    assert_eq!(of_record(&rec), None);
    let rec = ResourceState {
        physical_id: Some("api|res".into()),
        ..rec
    };
    assert_eq!(of_record(&rec), Some(json!("res")));
}
