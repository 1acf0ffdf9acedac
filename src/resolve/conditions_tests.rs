//! Tests of condition evaluation and pruning.

use serde_json::json;

use super::test_support::*;
use super::*;

fn verdicts(conditions: serde_json::Value) -> Result<ConditionVerdicts, ResolveError> {
    let t = template_from(json!({
        "Parameters": {"Env": {"Type": "String", "Default": "prod"}, "N": {"Type": "Number", "Default": 2}},
        "Mappings": {"M": {"us-east-1": {"Big": "true"}}},
        "Conditions": conditions,
        "Resources": {"B": {"Type": "AWS::S3::Bucket"}}
    }));
    let c = ctx();
    let p = bind(&t);
    let mut r = Resolver::new(&t, &c, &p, &Synthetic, &NoExternalLookup);
    r.evaluate_conditions()
}

#[test]
fn nested_conditions() {
    let v = verdicts(json!({
        "All": {"Fn::And": [{"Condition": "IsProd"}, {"Condition": "InUsEast1"}, {"Fn::Not": [{"Condition": "IsDev"}]}]},
        "IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]},
        "IsDev": {"Fn::Equals": ["dev", {"Ref": "Env"}]},
        "InUsEast1": {"Fn::Equals": [{"Ref": "AWS::Region"}, "us-east-1"]},
        "Any": {"Fn::Or": [{"Condition": "IsDev"}, {"Fn::Equals": [{"Ref": "N"}, 3]}]},
        "Big": {"Fn::Equals": [{"Fn::FindInMap": ["M", {"Ref": "AWS::Region"}, "Big"]}, "true"]},
        "Literal": true,
        "StringBool": {"Fn::FindInMap": ["M", "us-east-1", "Big"]}
    }))
    .unwrap();
    let got: Vec<(&str, bool)> = v.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        got,
        vec![
            ("All", true),
            ("IsProd", true),
            ("IsDev", false),
            ("InUsEast1", true),
            ("Any", false),
            ("Big", true),
            ("Literal", true),
            ("StringBool", true),
        ]
    );
}

#[test]
fn condition_errors() {
    let cases = [
        (json!({"A": {"Condition": "B"}, "B": {"Fn::Not": [{"Condition": "A"}]}}), "Conditions.B.Fn::Not[0].Condition: conditions refer to each other in a cycle: A -> B -> A"),
        (json!({"Self": {"Fn::Or": [{"Condition": "Self"}, true]}}), "cycle: Self -> Self"),
        (json!({"A": {"Condition": "Ghost"}}), "Conditions.A.Condition: unknown condition 'Ghost'"),
        (json!({"A": {"Fn::Equals": [{"Ref": "B"}, "x"]}}), "Conditions.A.Fn::Equals[0].Ref: a condition cannot reference resource 'B'"),
        (json!({"A": {"Fn::Equals": [{"Fn::GetAtt": ["B", "Arn"]}, "x"]}}), "a condition cannot reference resource 'B'"),
        (json!({"A": {"Fn::Join": ["", ["a"]]}}), "Conditions.A: condition does not evaluate to true or false (got a string)"),
        (json!({"A": {"Ref": "AWS::NoValue"}}), "a condition cannot be AWS::NoValue"),
    ];
    for (conditions, want) in cases {
        let e = verdicts(conditions.clone()).unwrap_err().to_string();
        assert!(e.contains(want), "{conditions}: {e}");
        assert!(e.starts_with("stack TestStack: Conditions."), "{e}");
    }
}

#[test]
fn seeded_verdicts_are_used() {
    let t = template();
    let c = ctx();
    let p = bind(&t);
    let mut seeded = ConditionVerdicts::new();
    seeded.insert("IsProd".into(), true);
    let mut r = Resolver::new(&t, &c, &p, &Synthetic, &NoExternalLookup).with_conditions(&seeded);
    let v = r
        .resolve_value(&json!({"Fn::If": ["IsProd", "p", "d"]}), "X")
        .unwrap();
    assert_eq!(v, Some(json!("p")));
    assert!(!r.condition("NotProd").unwrap());
}

#[test]
fn pruning() {
    let mut t = template_from(json!({
        "Parameters": {"Env": {"Type": "String", "Default": "dev"}},
        "Conditions": {
            "IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]},
            "IsDev": {"Fn::Equals": [{"Ref": "Env"}, "dev"]}
        },
        "Resources": {
            "Always": {"Type": "AWS::S3::Bucket"},
            "ProdOnly": {"Type": "AWS::S3::Bucket", "Condition": "IsProd"},
            "DevOnly": {"Type": "AWS::S3::Bucket", "Condition": "IsDev"},
            "Unknown": {"Type": "AWS::S3::Bucket", "Condition": "Ghost"}
        },
        "Outputs": {
            "A": {"Value": "a"},
            "P": {"Value": {"Ref": "ProdOnly"}, "Condition": "IsProd"},
            "D": {"Value": {"Ref": "DevOnly"}, "Condition": "IsDev"},
            "G": {"Value": "g", "Condition": "Ghost"}
        }
    }));
    let c = ctx();
    let p = bind(&t);
    let v = Resolver::new(&t, &c, &p, &Synthetic, &NoExternalLookup)
        .evaluate_conditions()
        .unwrap();
    let report = prune(&mut t, &v, "TestStack");
    assert_eq!(report.removed_resources, vec!["ProdOnly"]);
    assert_eq!(report.skipped_outputs, vec!["P"]);
    assert!(report.is_output_skipped("P"));
    let ids: Vec<&str> = t.resources.keys().map(String::as_str).collect();
    assert_eq!(ids, vec!["Always", "DevOnly", "Unknown"]);
    assert_eq!(report.warnings.len(), 2);
    assert_eq!(report.warnings[0].path, "Resources.Unknown.Condition");
    assert_eq!(report.warnings[1].path, "Outputs.G.Condition");
    // The skipped output is not resolved (its Ref would now fail).
    let mut r = Resolver::new(&t, &c, &p, &Synthetic, &NoExternalLookup).with_conditions(&v);
    assert_eq!(r.resolve_output("P").unwrap(), None);
    assert_eq!(
        r.resolve_output("D").unwrap().unwrap().value,
        json!("phys-DevOnly")
    );
    // A Ref to a pruned resource outside Fn::If is an unknown logical id.
    let e = r
        .resolve_value(&json!({"Ref": "ProdOnly"}), "Outputs.X.Value")
        .unwrap_err();
    assert!(matches!(e.kind, ResolveErrorKind::UnknownLogicalId { .. }));
}
