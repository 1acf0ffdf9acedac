//! Short-form tag expansion: each YAML form must give the same template as
//! the equivalent JSON long form.

use super::super::{parse_template, Template};
use super::*;
use serde_json::json;

fn file() -> &'static Path {
    Path::new("t.yaml")
}

/// Puts `expr` (YAML) as the value of a resource property and checks the
/// result equals the template with `long` (JSON) in the same place.
fn same(expr: &str, long: Value) {
    let yaml = format!("Resources:\n  R:\n    Type: AWS::X::Y\n    Properties:\n      P: {expr}\n");
    let json = json!({"Resources": {"R": {"Type": "AWS::X::Y", "Properties": {"P": long}}}});
    let from_yaml = parse_template(&yaml, file()).unwrap_or_else(|e| panic!("{yaml}\n{e}"));
    let from_json = parse_template(&json.to_string(), Path::new("t.json")).expect("json parses");
    assert_eq!(from_yaml, from_json, "yaml: {yaml}");
    assert_eq!(from_yaml.to_value(), json);
    let direct = Template::from_value(json.clone(), file()).expect("from_value");
    assert_eq!(direct, from_yaml);
}

#[test]
fn tag_ref() {
    same("!Ref MyParam", json!({"Ref": "MyParam"}));
}

#[test]
fn tag_condition() {
    same("!Condition IsProd", json!({"Condition": "IsProd"}));
}

#[test]
fn tag_getatt_dotted() {
    same(
        "!GetAtt MyBucket.Arn",
        json!({"Fn::GetAtt": ["MyBucket", "Arn"]}),
    );
}

#[test]
fn tag_getatt_splits_at_first_dot_only() {
    same(
        "!GetAtt Db.Endpoint.Address",
        json!({"Fn::GetAtt": ["Db", "Endpoint.Address"]}),
    );
}

#[test]
fn tag_getatt_sequence() {
    same(
        "!GetAtt [Db, Endpoint.Port]",
        json!({"Fn::GetAtt": ["Db", "Endpoint.Port"]}),
    );
    same(
        "!GetAtt [Db, !Ref AttrName]",
        json!({"Fn::GetAtt": ["Db", {"Ref": "AttrName"}]}),
    );
}

#[test]
fn tag_sub() {
    same(
        "!Sub 'arn:${AWS::Partition}:s3:::x'",
        json!({"Fn::Sub": "arn:${AWS::Partition}:s3:::x"}),
    );
    same(
        "!Sub ['${A}-x', {A: !Ref B}]",
        json!({"Fn::Sub": ["${A}-x", {"A": {"Ref": "B"}}]}),
    );
}

#[test]
fn tag_join_with_nested_tags() {
    same(
        "!Join ['', [!Ref A, !Sub 'x', !GetAtt B.C]]",
        json!({"Fn::Join": ["", [{"Ref": "A"}, {"Fn::Sub": "x"}, {"Fn::GetAtt": ["B", "C"]}]]}),
    );
}

#[test]
fn tag_if() {
    same(
        "!If [IsProd, !Ref AWS::NoValue, 3]",
        json!({"Fn::If": ["IsProd", {"Ref": "AWS::NoValue"}, 3]}),
    );
}

#[test]
fn tag_equals() {
    same(
        "!Equals [!Ref Env, prod]",
        json!({"Fn::Equals": [{"Ref": "Env"}, "prod"]}),
    );
}

#[test]
fn tag_not() {
    same(
        "!Not [!Condition IsProd]",
        json!({"Fn::Not": [{"Condition": "IsProd"}]}),
    );
}

#[test]
fn tag_and() {
    same(
        "!And [!Condition A, !Equals [x, y]]",
        json!({"Fn::And": [{"Condition": "A"}, {"Fn::Equals": ["x", "y"]}]}),
    );
}

#[test]
fn tag_or() {
    same(
        "!Or [!Condition A, !Condition B]",
        json!({"Fn::Or": [{"Condition": "A"}, {"Condition": "B"}]}),
    );
}

#[test]
fn tag_import_value() {
    same(
        "!ImportValue SharedVpcId",
        json!({"Fn::ImportValue": "SharedVpcId"}),
    );
    same(
        "!ImportValue {'Fn::Sub': '${Net}-VpcId'}",
        json!({"Fn::ImportValue": {"Fn::Sub": "${Net}-VpcId"}}),
    );
}

#[test]
fn tag_find_in_map() {
    same(
        "!FindInMap [RegionMap, !Ref 'AWS::Region', Ami]",
        json!({"Fn::FindInMap": ["RegionMap", {"Ref": "AWS::Region"}, "Ami"]}),
    );
}

#[test]
fn tag_select() {
    same(
        "!Select [0, !GetAZs '']",
        json!({"Fn::Select": [0, {"Fn::GetAZs": ""}]}),
    );
}

#[test]
fn tag_split() {
    same(
        "!Split [',', !Ref List]",
        json!({"Fn::Split": [",", {"Ref": "List"}]}),
    );
}

#[test]
fn tag_base64() {
    same("!Base64 abc", json!({"Fn::Base64": "abc"}));
}

#[test]
fn tag_cidr() {
    same(
        "!Cidr [10.0.0.0/16, 4, 8]",
        json!({"Fn::Cidr": ["10.0.0.0/16", 4, 8]}),
    );
}

#[test]
fn tag_getazs() {
    same("!GetAZs ''", json!({"Fn::GetAZs": ""}));
    same(
        "!GetAZs {Ref: 'AWS::Region'}",
        json!({"Fn::GetAZs": {"Ref": "AWS::Region"}}),
    );
}

#[test]
fn tag_transform() {
    same(
        "!Transform {Name: AWS::Include, Parameters: {Location: s3://b/k}}",
        json!({"Fn::Transform": {"Name": "AWS::Include", "Parameters": {"Location": "s3://b/k"}}}),
    );
}

#[test]
fn tag_length() {
    same("!Length [a, b]", json!({"Fn::Length": ["a", "b"]}));
}

#[test]
fn tag_to_json_string() {
    same(
        "!ToJsonString {a: 1}",
        json!({"Fn::ToJsonString": {"a": 1}}),
    );
}

#[test]
fn tag_get_stack_output() {
    same(
        "!GetStackOutput {StackName: other, OutputName: Url}",
        json!({"Fn::GetStackOutput": {"StackName": "other", "OutputName": "Url"}}),
    );
}

#[test]
fn block_style_tag_arguments() {
    let yaml =
        "A: !Join\n  - ''\n  - - !Ref X\n    - b\nB: !If\n  - C\n  - 1\n  - !Ref AWS::NoValue\n";
    let v = yaml_to_json(yaml, file()).expect("parses");
    assert_eq!(
        v,
        json!({
            "A": {"Fn::Join": ["", [{"Ref": "X"}, "b"]]},
            "B": {"Fn::If": ["C", 1, {"Ref": "AWS::NoValue"}]}
        })
    );
}

#[test]
fn scalars_keys_and_aliases() {
    let yaml = "a: 1\nb: -2.5\nc: true\nd: ~\ne: '010'\n1: x\ntrue: y\nf: &anchor {k: !Ref Z}\ng: *anchor\n";
    let v = yaml_to_json(yaml, file()).expect("parses");
    assert_eq!(
        v,
        json!({"a": 1, "b": -2.5, "c": true, "d": null, "e": "010", "1": "x", "true": "y",
               "f": {"k": {"Ref": "Z"}}, "g": {"k": {"Ref": "Z"}}})
    );
    let keys: Vec<&String> = v.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["a", "b", "c", "d", "e", "1", "true", "f", "g"]);
}

fn err(yaml: &str) -> String {
    let e = parse_template(yaml, file()).expect_err("should fail");
    let s = e.to_string();
    assert!(!s.contains('\n'), "multi-line error: {s}");
    assert!(s.starts_with("template t.yaml: "), "{s}");
    s
}

#[test]
fn unknown_tag_names_tag_path_and_line() {
    let s = err("Resources:\n  R:\n    Type: A::B::C\n    Properties:\n      P: !Foo bar\n");
    assert_eq!(
        s,
        "template t.yaml: Resources.R.Properties.P: line 5 column 10: unknown YAML tag !Foo"
    );
}

#[test]
fn unknown_tag_inside_tag_argument() {
    let s = err("Outputs:\n  O:\n    Value: !Join ['', [!Refx A]]\n");
    assert!(s.contains("Outputs.O.Value.Fn::Join[1][0]"), "{s}");
    assert!(s.contains("!Refx"), "{s}");
}

#[test]
fn getatt_without_dot_is_an_error() {
    let s = err("Outputs:\n  O:\n    Value: !GetAtt Bucket\n");
    assert!(s.contains("Outputs.O.Value.Fn::GetAtt"), "{s}");
    assert!(s.contains("LogicalId.Attribute"), "{s}");
}

#[test]
fn invalid_yaml_has_line_and_column() {
    let s = err("Resources:\n  R:\n    Type: [a\n  X: 1\n");
    assert!(s.contains("invalid YAML"), "{s}");
    assert!(s.contains("line "), "{s}");
}

#[test]
fn top_level_must_be_a_mapping() {
    assert_eq!(
        err("- a\n- b\n"),
        "template t.yaml: (top level): expected a mapping, found a sequence"
    );
    assert!(err("just a string").contains("(top level)"));
    assert!(err("").contains("(top level): expected a mapping, found null"));
}

#[test]
fn multiple_documents_are_rejected() {
    let s = err("a: 1\n---\nb: 2\n");
    assert!(s.contains("invalid YAML"), "{s}");
    assert!(s.contains("more than one document"), "{s}");
}

#[test]
fn keys_colliding_after_stringification_are_rejected() {
    let s = err("Metadata:\n  1: a\n  '1': b\n");
    assert!(s.contains("Metadata.1: duplicate key"), "{s}");
}

#[test]
fn non_scalar_keys_are_rejected() {
    let s = err("Metadata:\n  ? [a]\n  : b\n");
    assert!(s.contains("Metadata: mapping keys must be scalars"), "{s}");
}

#[test]
fn find_tag_locates_whole_word() {
    assert_eq!(find_tag("a: !Foox\nb: !Foo y", "!Foo"), Some((2, 4)));
    assert_eq!(find_tag("nothing", "!Foo"), None);
}
