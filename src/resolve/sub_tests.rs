//! Table-driven tests of `Fn::Sub`.

use serde_json::json;

use super::test_support::*;

#[test]
fn substitutions() {
    let cases = [
        (json!({"Fn::Sub": "plain"}), "plain"),
        (
            json!({"Fn::Sub": "${AWS::Region}-${AWS::AccountId}"}),
            "us-east-1-123456789012",
        ),
        (
            json!({"Fn::Sub": "arn:${AWS::Partition}:s3:::${Bucket}/*"}),
            "arn:aws:s3:::phys-Bucket/*",
        ),
        (json!({"Fn::Sub": "${Bucket.Arn}"}), "Bucket.Arn"),
        (
            json!({"Fn::Sub": "${Db.Endpoint.Address}:${Db.Port}"}),
            "Db.Endpoint.Address:5432",
        ),
        (json!({"Fn::Sub": "${Env}/${Count}"}), "dev/3"),
        (
            json!({"Fn::Sub": "${!Literal} and ${!AWS::Region}"}),
            "${Literal} and ${AWS::Region}",
        ),
        (json!({"Fn::Sub": "${!}"}), "${}"),
        (
            json!({"Fn::Sub": "cost: $5 {x} $ {y}"}),
            "cost: $5 {x} $ {y}",
        ),
        (json!({"Fn::Sub": "open ${Env"}), "open ${Env"),
        (json!({"Fn::Sub": "${Env}${Env}"}), "devdev"),
        (
            json!({"Fn::Sub": ["${A}-${B}", {"A": "x", "B": {"Ref": "Bucket"}}]}),
            "x-phys-Bucket",
        ),
        (
            json!({"Fn::Sub": ["${Url}", {"Url": {"Fn::Join": ["", ["https://", {"Fn::GetAtt": ["Db", "Endpoint.Address"]}]]}}]}),
            "https://Db.Endpoint.Address",
        ),
        (
            json!({"Fn::Sub": ["${Env}", {"Env": "shadowed"}]}),
            "shadowed",
        ),
        (
            json!({"Fn::Sub": ["${Bucket.Arn}", {"Bucket.Arn": "var wins"}]}),
            "var wins",
        ),
        (json!({"Fn::Sub": ["no vars"]}), "no vars"),
        (json!({"Fn::Sub": "ünïcode ${Env} ✓"}), "ünïcode dev ✓"),
        // The one list-valued pseudo parameter, empty in cdkd: its join, the empty string.
        (
            json!({"Fn::Sub": "arns=[${AWS::NotificationARNs}]"}),
            "arns=[]",
        ),
        (
            json!({"Fn::Sub": ["${A}${AWS::NotificationARNs}", {"A": "x"}]}),
            "x",
        ),
    ];
    for (input, want) in cases {
        let (got, warnings) = eval_warn(input.clone());
        assert_eq!(got.unwrap().unwrap(), json!(want), "input {input}");
        assert!(warnings.is_empty(), "input {input}: {warnings:?}");
    }
}

#[test]
fn unknown_placeholders_are_kept_with_a_warning() {
    let cases = [
        (
            json!({"Fn::Sub": "${aws:username}/${Env}"}),
            "${aws:username}/dev",
            1,
        ),
        (
            json!({"Fn::Sub": "${Nope} ${Nope.Attr} ${AWS::Bogus}"}),
            "${Nope} ${Nope.Attr} ${AWS::Bogus}",
            3,
        ),
        (json!({"Fn::Sub": "${}"}), "${}", 1),
    ];
    for (input, want, n) in cases {
        let (got, warnings) = eval_warn(input.clone());
        assert_eq!(got.unwrap().unwrap(), json!(want), "input {input}");
        assert_eq!(warnings.len(), n, "input {input}: {warnings:?}");
        for w in &warnings {
            assert_eq!(w.path, "Resources.Test.Properties.P.Fn::Sub");
            assert!(w.to_string().starts_with(
                "stack TestStack: Resources.Test.Properties.P.Fn::Sub: Fn::Sub placeholder ${"
            ));
        }
    }
}

#[test]
fn errors() {
    let cases = [
        (
            json!({"Fn::Sub": "${PendingQueue}"}),
            "has no physical id yet",
        ),
        (
            json!({"Fn::Sub": "${PendingQueue.Arn}"}),
            "cannot be resolved",
        ),
        (
            json!({"Fn::Sub": "${Names}"}),
            "Fn::Sub: expected a string, got a list of 3",
        ),
        (
            json!({"Fn::Sub": "${AWS::NoValue}"}),
            "an Fn::Sub placeholder cannot be AWS::NoValue",
        ),
        (
            json!({"Fn::Sub": "${BootstrapVersion}"}),
            "parameter 'BootstrapVersion' has no value",
        ),
        (
            json!({"Fn::Sub": ["${A}", {"A": {"Ref": "Nope"}}]}),
            "Fn::Sub[1].A.Ref: Ref to unknown logical id",
        ),
        (
            json!({"Fn::Sub": ["${A}", {"A": 1}]}),
            "Fn::Sub: expected a string, got a number",
        ),
        (
            json!({"Fn::Sub": ["${A}", ["x"]]}),
            "the variables must be an object",
        ),
        (
            json!({"Fn::Sub": [{"Ref": "Env"}, {}]}),
            "the template must be a string",
        ),
        (
            json!({"Fn::Sub": 7}),
            "expected a string or [string, {variables}]",
        ),
    ];
    for (input, want) in cases {
        let got = eval_err(input.clone());
        assert!(got.contains(want), "input {input}: {got}");
    }
}
