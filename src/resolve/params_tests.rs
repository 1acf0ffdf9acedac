//! Table-driven tests of parameter binding.

use serde_json::{json, Value};

use super::test_support::*;
use super::*;

/// SSM lookups answer `ssm:<name>`, or fail for names containing `missing`.
struct Ssm;

impl ExternalLookup for Ssm {
    fn ssm_parameter(&self, name: &str) -> Result<String, LookupError> {
        if name.contains("missing") {
            Err(LookupError::Failed(format!("parameter {name} not found")))
        } else if name.contains("list") {
            Ok("x, y".into())
        } else {
            Ok(format!("ssm:{name}"))
        }
    }
}

fn one(param: Value, overrides: &[&str]) -> Result<BoundParameters, ResolveError> {
    let t = template_from(json!({"Parameters": {"P": param}, "Resources": {}}));
    let o: Vec<ParameterOverride> = overrides
        .iter()
        .map(|s| ParameterOverride::parse(s).expect("override parses"))
        .collect();
    bind_parameters(&t, &o, "S", &Ssm)
}

fn value(param: Value, overrides: &[&str]) -> ParameterValue {
    one(param.clone(), overrides)
        .unwrap_or_else(|e| panic!("{param}: {e}"))
        .get("P")
        .cloned()
        .unwrap()
}

#[test]
fn types() {
    let r = |v: Value| ParameterValue::Resolved(v);
    let cases = [
        (
            json!({"Type": "String", "Default": "x"}),
            vec![],
            r(json!("x")),
        ),
        (
            json!({"Type": "String", "Default": 5}),
            vec![],
            r(json!("5")),
        ),
        (
            json!({"Type": "Number", "Default": 345600}),
            vec![],
            r(json!("345600")),
        ),
        (
            json!({"Type": "Number", "Default": "1.5"}),
            vec![],
            r(json!("1.5")),
        ),
        (json!({"Type": "Number"}), vec!["P=-7"], r(json!("-7"))),
        (
            json!({"Type": "List<Number>", "Default": "1, 2,3"}),
            vec![],
            r(json!(["1", "2", "3"])),
        ),
        (
            json!({"Type": "CommaDelimitedList", "Default": "a, b ,c"}),
            vec![],
            r(json!(["a", "b", "c"])),
        ),
        (
            json!({"Type": "CommaDelimitedList", "Default": ["a", "b"]}),
            vec![],
            r(json!(["a", "b"])),
        ),
        (
            json!({"Type": "CommaDelimitedList", "Default": ""}),
            vec![],
            r(json!([""])),
        ),
        (
            json!({"Type": "AWS::EC2::VPC::Id", "Default": "vpc-1"}),
            vec![],
            r(json!("vpc-1")),
        ),
        (
            json!({"Type": "AWS::SSM::Parameter::Name", "Default": "/a"}),
            vec![],
            r(json!("/a")),
        ),
        (
            json!({"Type": "List<AWS::EC2::Subnet::Id>", "Default": "s-1,s-2"}),
            vec![],
            r(json!(["s-1", "s-2"])),
        ),
        (
            json!({"Type": "AWS::SSM::Parameter::Value<String>", "Default": "/p"}),
            vec![],
            r(json!("ssm:/p")),
        ),
        (
            json!({"Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>", "Default": "/ami"}),
            vec![],
            r(json!("ssm:/ami")),
        ),
        (
            json!({"Type": "AWS::SSM::Parameter::Value<List<String>>", "Default": "/list"}),
            vec![],
            r(json!(["x", "y"])),
        ),
        (
            json!({"Type": "AWS::SSM::Parameter::Value<CommaDelimitedList>", "Default": "/list"}),
            vec![],
            r(json!(["x", "y"])),
        ),
        (
            json!({"Type": "String", "Default": "d"}),
            vec!["P=over"],
            r(json!("over")),
        ),
        (
            json!({"Type": "String", "Default": "d"}),
            vec!["S:P=mine", "P=all"],
            r(json!("mine")),
        ),
        (
            json!({"Type": "String", "Default": "d"}),
            vec!["Other:P=theirs"],
            r(json!("d")),
        ),
        (
            json!({"Type": "String"}),
            vec!["P=a=b:c"],
            r(json!("a=b:c")),
        ),
    ];
    for (param, overrides, want) in cases {
        assert_eq!(
            value(param.clone(), &overrides),
            want,
            "{param} {overrides:?}"
        );
    }
}

#[test]
fn ssm_lookup_failure_is_deferred() {
    let v = value(
        json!({"Type": "AWS::SSM::Parameter::Value<String>", "Default": "/missing"}),
        &[],
    );
    match v {
        ParameterValue::Unresolved(reason) => assert!(reason.contains("/missing"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // The CDK's BootstrapVersion with no SSM lookup at all: bound, unresolved.
    let t = template();
    let p = bind(&t);
    assert!(matches!(
        p.get("BootstrapVersion"),
        Some(ParameterValue::Unresolved(_))
    ));
}

#[test]
fn failures() {
    let cases = [
        (
            json!({"Type": "String"}),
            vec![],
            "Parameters.P: parameter has no value: pass one with --parameters S:P=VALUE",
        ),
        (
            json!({"Type": "Number", "Default": "abc"}),
            vec![],
            "Type: 'abc' is not a number",
        ),
        (
            json!({"Type": "Number", "Default": "NaN"}),
            vec![],
            "is not a number",
        ),
        (
            json!({"Type": "List<Number>", "Default": "1,x"}),
            vec![],
            "Type: 'x' is not a number",
        ),
        (
            json!({"Type": "Bogus"}),
            vec![],
            "unsupported parameter type 'Bogus'",
        ),
        (
            json!({"Type": "AWS::SSM::Parameter::Value<Number>", "Default": "/x"}),
            vec![],
            "unsupported parameter type",
        ),
        (
            json!({"Type": "String", "Default": "qa", "AllowedValues": ["dev", "prod"]}),
            vec![],
            "AllowedValues: 'qa' is not one of [dev, prod]",
        ),
        (
            json!({"Type": "CommaDelimitedList", "Default": "dev,qa", "AllowedValues": ["dev", "prod"]}),
            vec![],
            "AllowedValues: 'qa'",
        ),
        (
            json!({"Type": "String", "Default": "ab1", "AllowedPattern": "[a-z]+"}),
            vec![],
            "AllowedPattern: 'ab1' does not match '[a-z]+'",
        ),
        (
            json!({"Type": "String", "Default": "x", "AllowedPattern": "[a-"}),
            vec![],
            "AllowedPattern: '[a-' is not a usable regular expression",
        ),
        (
            json!({"Type": "String", "Default": "ab", "MinLength": 3}),
            vec![],
            "MinLength: 'ab' is 2 characters long, shorter than 3",
        ),
        (
            json!({"Type": "String", "Default": "abcd", "MaxLength": 3}),
            vec![],
            "MaxLength: 'abcd' is 4 characters long, longer than 3",
        ),
        (
            json!({"Type": "Number", "Default": 10, "MinValue": 60}),
            vec![],
            "MinValue: '10' is less than 60",
        ),
        (
            json!({"Type": "Number", "Default": 2000000, "MaxValue": 1209600}),
            vec![],
            "MaxValue: '2000000' is greater than 1209600",
        ),
        (
            json!({"Type": "List<Number>", "Default": "1,99", "MaxValue": 10}),
            vec![],
            "MaxValue: '99'",
        ),
        (
            json!({"Type": "String", "Default": "d"}),
            vec!["S:Q=x"],
            "--parameters names 'Q', which this stack's template does not declare",
        ),
        (
            json!({"Type": "String", "Default": "x", "AllowedValues": ["a"], "ConstraintDescription": "pick a"}),
            vec![],
            "(pick a)",
        ),
    ];
    for (param, overrides, want) in cases {
        let e = one(param.clone(), &overrides).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("stack S: Parameters."), "{text}");
        assert!(text.contains(want), "{param}: {text}");
        assert!(!text.contains('\n'));
    }
}

#[test]
fn constraints_that_pass() {
    for param in [
        json!({"Type": "String", "Default": "prod", "AllowedValues": ["dev", "prod"]}),
        json!({"Type": "Number", "Default": 5, "AllowedValues": [1, 5]}),
        json!({"Type": "Number", "Default": "5.0", "AllowedValues": ["5"]}),
        json!({"Type": "String", "Default": "abc", "AllowedPattern": "[a-z]+", "MinLength": 3, "MaxLength": 3}),
        json!({"Type": "String", "Default": "ab|x", "AllowedPattern": "ab\\|x"}),
        json!({"Type": "Number", "Default": 60, "MinValue": 60, "MaxValue": 60}),
    ] {
        one(param.clone(), &[]).unwrap_or_else(|e| panic!("{param}: {e}"));
    }
    // Whole-string match: a pattern matching a prefix is not enough.
    assert!(one(
        json!({"Type": "String", "Default": "abc1", "AllowedPattern": "[a-z]+"}),
        &[]
    )
    .is_err());
    assert!(one(
        json!({"Type": "String", "Default": "x", "AllowedPattern": "a|x"}),
        &[]
    )
    .is_ok());
}

#[test]
fn no_echo_is_tracked_and_never_shown() {
    let t = template();
    let p = bind(&t);
    assert!(p.is_no_echo("Secret"));
    assert!(!p.is_no_echo("Env"));
    let secrets: Vec<_> = p.no_echo_values().collect();
    assert_eq!(secrets, vec![("Secret", &json!("s3cr3t"))]);
    let e = one(
        json!({"Type": "String", "Default": "hunter2", "NoEcho": true, "AllowedValues": ["a"]}),
        &[],
    )
    .unwrap_err();
    assert!(!e.to_string().contains("hunter2"), "{e}");
    assert!(e.to_string().contains("NoEcho, not shown"));
}

#[test]
fn override_parsing() {
    let p = |s: &str| ParameterOverride::parse(s);
    assert_eq!(
        p("Key=Value"),
        Some(ParameterOverride {
            stack: None,
            key: "Key".into(),
            value: "Value".into()
        })
    );
    assert_eq!(
        p("Stack:Key=a:b=c"),
        Some(ParameterOverride {
            stack: Some("Stack".into()),
            key: "Key".into(),
            value: "a:b=c".into()
        })
    );
    assert_eq!(
        p("Key="),
        Some(ParameterOverride {
            stack: None,
            key: "Key".into(),
            value: String::new()
        })
    );
    assert_eq!(p("*:Key=V"), p("Key=V"), "`*:` is every stack");
    assert_eq!(p("NoEquals"), None);
    assert_eq!(p("=v"), None);
    assert_eq!(p(":K=v"), None);
}
