//! Reference extraction: every intrinsic form, nesting, escapes, shadowing.

use serde_json::{json, Value};

use super::refs::{references, RefVia};

type Found = (String, Option<String>, RefVia);

fn found(v: Value) -> Vec<Found> {
    references(&v)
        .into_iter()
        .map(|r| (r.target, r.attribute, r.via))
        .collect()
}

fn t(target: &str, attr: Option<&str>, via: RefVia) -> Found {
    (target.to_string(), attr.map(str::to_string), via)
}

#[test]
fn every_form_is_found() {
    use RefVia::*;
    let cases: Vec<(&str, Value, Vec<Found>)> = vec![
        ("ref", json!({"Ref": "A"}), vec![t("A", None, Ref)]),
        ("ref pseudo", json!({"Ref": "AWS::Region"}), vec![]),
        ("ref novalue", json!({"Ref": "AWS::NoValue"}), vec![]),
        (
            "getatt list",
            json!({"Fn::GetAtt": ["A", "Arn"]}),
            vec![t("A", Some("Arn"), GetAtt)],
        ),
        (
            "getatt dotted",
            json!({"Fn::GetAtt": "A.Arn"}),
            vec![t("A", Some("Arn"), GetAtt)],
        ),
        (
            "getatt dotted nested attribute",
            json!({"Fn::GetAtt": "Child.Outputs.Name"}),
            vec![t("Child", Some("Outputs.Name"), GetAtt)],
        ),
        (
            "getatt intrinsic attribute",
            json!({"Fn::GetAtt": ["A", {"Ref": "AttrParam"}]}),
            vec![t("A", None, GetAtt), t("AttrParam", None, Ref)],
        ),
        (
            "sub string",
            json!({"Fn::Sub": "arn:${AWS::Partition}:s3:::${B}/${C.Arn}"}),
            vec![t("B", None, Sub), t("C", Some("Arn"), Sub)],
        ),
        (
            "sub escape",
            json!({"Fn::Sub": "${!Literal} and ${!A.B} then ${D}"}),
            vec![t("D", None, Sub)],
        ),
        (
            "sub vars shadow",
            json!({"Fn::Sub": ["${X}-${Y}-${Z.Arn}", {"X": "lit", "Y": {"Ref": "Q"}}]}),
            vec![t("Z", Some("Arn"), Sub), t("Q", None, Ref)],
        ),
        (
            "sub vars shadow dotted key only as whole name",
            json!({"Fn::Sub": ["${V.Arn}", {"V": "x"}]}),
            vec![t("V", Some("Arn"), Sub)],
        ),
        ("sub unterminated", json!({"Fn::Sub": "a ${B"}), vec![]),
        (
            "sub non-string body",
            json!({"Fn::Sub": [{"Ref": "R"}]}),
            vec![t("R", None, Ref)],
        ),
        (
            "if branches",
            json!({"Fn::If": ["Cond", {"Ref": "A"}, {"Fn::GetAtt": ["B", "Id"]}]}),
            vec![t("A", None, Ref), t("B", Some("Id"), GetAtt)],
        ),
        (
            "join list",
            json!({"Fn::Join": ["", ["x", {"Ref": "A"}, {"Fn::Sub": "${B}"}]]}),
            vec![t("A", None, Ref), t("B", None, Sub)],
        ),
        (
            "deep nesting in plain data",
            json!({"Tags": [{"Key": "k", "Value": {"Fn::Select": [0, [{"Ref": "A"}]]}}]}),
            vec![t("A", None, Ref)],
        ),
        (
            "import value with sub",
            json!({"Fn::ImportValue": {"Fn::Sub": "${Env}-vpc"}}),
            vec![t("Env", None, Sub)],
        ),
        ("condition", json!({"Condition": "IsProd"}), vec![]),
        (
            "multi-key object is data",
            json!({"Ref": "A", "Other": {"Ref": "B"}}),
            vec![t("B", None, Ref)],
        ),
        ("plain strings", json!(["Ref", "A", "${B}"]), vec![]),
        (
            "ref of non-string searched",
            json!({"Ref": {"Ref": "A"}}),
            vec![t("A", None, Ref)],
        ),
    ];
    for (name, value, want) in cases {
        assert_eq!(found(value), want, "case {name}");
    }
}

#[test]
fn very_deep_nesting_does_not_overflow() {
    let mut v = json!({"Ref": "A"});
    for _ in 0..10_000 {
        v = Value::Array(vec![v]);
    }
    assert!(references(&v).is_empty());
    // serde_json drops deep values recursively; leak to keep the test about us.
    std::mem::forget(v);
}
