//! Whole-template parsing, round trips and structural errors.

use super::*;
use serde_json::{json, Value};

const YAML: &str = r#"
AWSTemplateFormatVersion: "2010-09-09"
Description: Demo stack
Transform: AWS::Serverless-2016-10-31
Metadata:
  Owner: team
Parameters:
  Env:
    Type: String
    Default: dev
    AllowedValues: [dev, prod]
    NoEcho: "True"
    MinLength: "1"
    MaxLength: 10
  BootstrapVersion:
    Type: AWS::SSM::Parameter::Value<String>
    Default: /cdk-bootstrap/hnb659fds/version
Mappings:
  RegionMap:
    us-east-1: {Ami: ami-1}
Conditions:
  IsProd: !Equals [!Ref Env, prod]
Resources:
  Bucket:
    Type: AWS::S3::Bucket
    Properties:
      BucketName: !Sub "${Env}-bucket"
      Tags:
        - Key: env
          Value: !Ref Env
    DeletionPolicy: Retain
    UpdateReplacePolicy: Retain
    Metadata:
      aws:cdk:path: Demo/Bucket/Resource
  Topic:
    Type: AWS::SNS::Topic
    DependsOn: Bucket
    Condition: IsProd
  Queue:
    Type: AWS::SQS::Queue
    DependsOn: [Bucket, Topic]
    Properties: {}
Outputs:
  BucketArn:
    Value: !GetAtt Bucket.Arn
    Description: The bucket
    Export:
      Name: !Sub "${AWS::StackName}-BucketArn"
    Condition: IsProd
Hooks:
  Custom: 1
"#;

fn json_doc() -> Value {
    json!({
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": "Demo stack",
        "Transform": "AWS::Serverless-2016-10-31",
        "Metadata": {"Owner": "team"},
        "Parameters": {
            "Env": {"Type": "String", "Default": "dev", "AllowedValues": ["dev", "prod"],
                    "NoEcho": "True", "MinLength": "1", "MaxLength": 10},
            "BootstrapVersion": {"Type": "AWS::SSM::Parameter::Value<String>",
                                 "Default": "/cdk-bootstrap/hnb659fds/version"}
        },
        "Mappings": {"RegionMap": {"us-east-1": {"Ami": "ami-1"}}},
        "Conditions": {"IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]}},
        "Resources": {
            "Bucket": {
                "Type": "AWS::S3::Bucket",
                "Properties": {
                    "BucketName": {"Fn::Sub": "${Env}-bucket"},
                    "Tags": [{"Key": "env", "Value": {"Ref": "Env"}}]
                },
                "DeletionPolicy": "Retain",
                "UpdateReplacePolicy": "Retain",
                "Metadata": {"aws:cdk:path": "Demo/Bucket/Resource"}
            },
            "Topic": {"Type": "AWS::SNS::Topic", "DependsOn": "Bucket", "Condition": "IsProd"},
            "Queue": {"Type": "AWS::SQS::Queue", "DependsOn": ["Bucket", "Topic"], "Properties": {}}
        },
        "Outputs": {
            "BucketArn": {
                "Value": {"Fn::GetAtt": ["Bucket", "Arn"]},
                "Description": "The bucket",
                "Export": {"Name": {"Fn::Sub": "${AWS::StackName}-BucketArn"}},
                "Condition": "IsProd"
            }
        },
        "Hooks": {"Custom": 1}
    })
}

#[test]
fn yaml_and_json_templates_give_equal_models() {
    let from_yaml = parse_template(YAML, Path::new("demo.yaml")).expect("yaml");
    let text = serde_json::to_string_pretty(&json_doc()).expect("serialize");
    let from_json = parse_template(&text, Path::new("demo.json")).expect("json");
    assert_eq!(from_yaml, from_json);
    assert_eq!(from_yaml.to_value(), json_doc());
}

#[test]
fn typed_fields() {
    let t = parse_template(YAML, Path::new("demo.yaml")).expect("yaml");
    assert_eq!(t.format_version.as_deref(), Some("2010-09-09"));
    assert_eq!(t.description.as_deref(), Some("Demo stack"));
    assert_eq!(t.transform, Some(json!("AWS::Serverless-2016-10-31")));
    let env = &t.parameters["Env"];
    assert_eq!(env.type_, "String");
    assert!(env.no_echo);
    assert_eq!(env.min_length, Some(1.0));
    assert_eq!(env.max_length, Some(10.0));
    assert_eq!(env.allowed_values, Some(vec![json!("dev"), json!("prod")]));
    assert!(!t.parameters["BootstrapVersion"].no_echo);
    let names: Vec<&str> = t.resources.keys().map(String::as_str).collect();
    assert_eq!(names, ["Bucket", "Topic", "Queue"]);
    let bucket = &t.resources["Bucket"];
    assert_eq!(bucket.type_, "AWS::S3::Bucket");
    assert_eq!(bucket.cdk_path(), Some("Demo/Bucket/Resource"));
    assert_eq!(bucket.deletion_policy.as_deref(), Some("Retain"));
    assert_eq!(t.resources["Topic"].depends_on, ["Bucket"]);
    assert_eq!(t.resources["Topic"].condition.as_deref(), Some("IsProd"));
    assert!(t.resources["Topic"].properties.is_empty());
    assert_eq!(t.resources["Queue"].depends_on, ["Bucket", "Topic"]);
    let out = &t.outputs["BucketArn"];
    assert_eq!(out.value, json!({"Fn::GetAtt": ["Bucket", "Arn"]}));
    assert_eq!(
        out.export_name,
        Some(json!({"Fn::Sub": "${AWS::StackName}-BucketArn"}))
    );
    assert_eq!(t.extra["Hooks"], json!({"Custom": 1}));
    assert_eq!(t.mappings["RegionMap"]["us-east-1"]["Ami"], "ami-1");
}

#[test]
fn round_trip_preserves_document_and_order() {
    let docs = [
        json_doc(),
        json!({}),
        json!({"Resources": {}}),
        json!({"Outputs": {"O": {"Value": 1}}, "Zzz": [1], "Resources": {"A": {"Type": "X", "Foo": 1}}}),
        json!({"Parameters": {"P": {"Type": "Number", "MinValue": 1.5, "NoEcho": false}}}),
    ];
    for doc in docs {
        let t = Template::from_value(doc.clone(), Path::new("x.json")).expect("valid");
        let back = t.to_value();
        assert_eq!(back, doc);
        assert_eq!(back.to_string(), doc.to_string(), "key order");
    }
}

#[test]
fn to_value_reflects_edits() {
    let mut t = Template::from_value(json_doc(), Path::new("x.json")).expect("valid");
    let topic = t.resources.get_mut("Topic").expect("topic");
    topic.depends_on.push("Queue".into());
    topic.properties.insert("TopicName".into(), json!("t"));
    t.parameters.get_mut("Env").expect("env").no_echo = false;
    t.outputs.get_mut("BucketArn").expect("out").export_name = None;
    t.description = None;
    t.resources.insert(
        "New".into(),
        Resource {
            type_: "AWS::SQS::Queue".into(),
            ..Resource::default()
        },
    );
    let v = t.to_value();
    assert_eq!(
        v["Resources"]["Topic"],
        json!({"Type": "AWS::SNS::Topic", "DependsOn": ["Bucket", "Queue"], "Condition": "IsProd",
               "Properties": {"TopicName": "t"}})
    );
    assert_eq!(v["Resources"]["New"], json!({"Type": "AWS::SQS::Queue"}));
    assert!(v["Parameters"]["Env"].get("NoEcho").is_none());
    assert!(v["Outputs"]["BucketArn"].get("Export").is_none());
    assert!(v.get("Description").is_none());
    let fresh = Template {
        resources: t.resources.clone(),
        ..Template::default()
    };
    assert_eq!(fresh.to_value().as_object().map(|m| m.len()), Some(1));
}

#[test]
fn resources_may_be_missing_or_empty() {
    let t = parse_template("{}", Path::new("e.json")).expect("empty object");
    assert!(t.resources.is_empty());
    let t = parse_template("Description: nothing\n", Path::new("e.yaml")).expect("no resources");
    assert!(t.resources.is_empty());
}

#[test]
fn parameter_lenient_scalars() {
    let doc = json!({"Parameters": {"P": {"Type": "Number", "NoEcho": true, "MinValue": " 2 ", "MaxValue": 3}}});
    let t = Template::from_value(doc, Path::new("p.json")).expect("valid");
    let p = &t.parameters["P"];
    assert!(p.no_echo);
    assert_eq!((p.min_value, p.max_value), (Some(2.0), Some(3.0)));
}

/// The one-line error for `doc`, checked to name the file and `path`.
fn structural(doc: Value, path: &str) -> String {
    let e = Template::from_value(doc, Path::new("cdk.out/S.template.json")).expect_err("invalid");
    let s = e.to_string();
    assert!(!s.contains('\n'), "{s}");
    assert!(
        s.starts_with(&format!("template cdk.out/S.template.json: {path}: ")),
        "{s}"
    );
    s
}

#[test]
fn structural_errors() {
    let s = structural(json!({"Resources": []}), "Resources");
    assert!(s.ends_with("expected an object, found a list"), "{s}");
    let s = structural(
        json!({"Resources": {"B": {"Properties": {}}}}),
        "Resources.B.Type",
    );
    assert!(s.contains("missing"), "{s}");
    assert_eq!(
        structural(json!({"Resources": {"MyBucket": {"Type": 3}}}), "Resources.MyBucket.Type"),
        "template cdk.out/S.template.json: Resources.MyBucket.Type: expected a string, found a number"
    );
    structural(
        json!({"Resources": {"B": {"Type": ""}}}),
        "Resources.B.Type",
    );
    structural(
        json!({"Resources": {"B": "AWS::S3::Bucket"}}),
        "Resources.B",
    );
    let s = structural(
        json!({"Resources": {"B": {"Type": "T", "Properties": [1]}}}),
        "Resources.B.Properties",
    );
    assert!(s.ends_with("expected an object, found a list"), "{s}");
    let s = structural(
        json!({"Outputs": {"O": {"Description": "d"}}}),
        "Outputs.O.Value",
    );
    assert!(s.contains("missing"), "{s}");
    let s = structural(
        json!({"Outputs": {"O": {"Value": 1, "Export": {}}}}),
        "Outputs.O.Export.Name",
    );
    assert!(s.contains("missing"), "{s}");
    structural(
        json!({"Outputs": {"O": {"Value": 1, "Export": "n"}}}),
        "Outputs.O.Export",
    );
    let s = structural(
        json!({"Resources": {"B": {"Type": "T", "DependsOn": 5}}}),
        "Resources.B.DependsOn",
    );
    assert!(
        s.ends_with("expected a string or a list of strings, found a number"),
        "{s}"
    );
    structural(
        json!({"Resources": {"B": {"Type": "T", "DependsOn": ["A", {}]}}}),
        "Resources.B.DependsOn[1]",
    );
    let s = structural(
        json!({"Parameters": {"P": {"Default": "x"}}}),
        "Parameters.P.Type",
    );
    assert!(s.contains("missing"), "{s}");
    structural(
        json!({"Parameters": {"P": {"Type": "String", "NoEcho": "maybe"}}}),
        "Parameters.P.NoEcho",
    );
    structural(
        json!({"Parameters": {"P": {"Type": "String", "MaxLength": "ten"}}}),
        "Parameters.P.MaxLength",
    );
    structural(
        json!({"Parameters": {"P": {"Type": "String", "AllowedValues": "a"}}}),
        "Parameters.P.AllowedValues",
    );
    structural(
        json!({"Resources": {"B": {"Type": "T", "Condition": ["x"]}}}),
        "Resources.B.Condition",
    );
    structural(json!({"Transform": 1}), "Transform");
    structural(json!({"Mappings": null}), "Mappings");
    structural(
        json!({"AWSTemplateFormatVersion": 2010}),
        "AWSTemplateFormatVersion",
    );
    let s = structural(json!([1, 2]), "(top level)");
    assert!(s.ends_with("expected an object, found a list"), "{s}");
}

#[test]
fn structural_errors_from_yaml_name_the_yaml_file() {
    let e = parse_template("Resources:\n  B:\n    Type: !Ref X\n", Path::new("x.yaml"))
        .expect_err("bad");
    assert_eq!(
        e.to_string(),
        "template x.yaml: Resources.B.Type: expected a string, found an object"
    );
}

#[test]
fn invalid_json_reports_line_and_column() {
    let e = parse_template(
        "{\n  \"Resources\": {\n    \"A\": ,\n  }\n}",
        Path::new("bad.json"),
    )
    .expect_err("bad json");
    let s = e.to_string();
    assert!(
        s.starts_with("template bad.json: line 3 column 10: invalid JSON: expected value"),
        "{s}"
    );
    assert!(!s.contains(" at line"), "{s}");
    assert!(!s.contains('\n'), "{s}");
}

#[test]
fn io_error_names_the_file() {
    let e = parse_template_file(Path::new("/nonexistent/dir/Stack.template.json")).expect_err("io");
    let s = e.to_string();
    assert!(
        s.starts_with("template /nonexistent/dir/Stack.template.json: cannot read file: "),
        "{s}"
    );
    assert!(!s.contains('\n'), "{s}");
}

#[test]
fn reads_files() {
    let dir = std::env::temp_dir().join(format!("cdkd-template-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join("S.template.yaml");
    std::fs::write(
        &path,
        "\u{feff}Resources:\n  Q:\n    Type: AWS::SQS::Queue\n",
    )
    .expect("write");
    let t = parse_template_file(&path).expect("parses");
    assert_eq!(t.resources["Q"].type_, "AWS::SQS::Queue");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn garbage_never_panics() {
    let full_yaml = YAML.to_string();
    let full_json = serde_json::to_string_pretty(&json_doc()).expect("serialize");
    let mut inputs: Vec<String> = [
        "",
        " ",
        "{",
        "}",
        "[",
        "]",
        "{]",
        "null",
        "true",
        "1",
        "\"s\"",
        "[]",
        "{}",
        "---",
        "...",
        "--- \n--- \n",
        "a:",
        "a: b: c",
        ":",
        "? ",
        "!",
        "!!",
        "!Ref",
        "!Ref [",
        "a: !",
        "a: !!binary x",
        "a: *nope",
        "a: &x [*x]",
        "Resources: !GetAtt",
        "Resources:\n  R: !Ref X",
        "Resources:\n - 1",
        "\t\tResources:",
        "{\"Resources\": {\"R\": {\"Type\": null}}}",
        "{\"a\":1}{}",
        "{\"a\": 1e999}",
        "a: .inf",
        "a: 123456789012345678901234567890",
        "\u{feff}",
        "\u{0}",
        "a: \"\\x\"",
        "%YAML 1.2\n",
        "a: !<!Ref> x",
        "Outputs:\n  O:\n    Export: {}",
        "Parameters: {P: {Type: [1]}}",
        "a: {b: [c, {d: !Sub [x, {y: !If [c, !Ref z]}]}]}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    inputs.push("[".repeat(10_000));
    inputs.push("a: ".to_string() + &"[".repeat(10_000));
    inputs.push("{\"a\":".repeat(5_000));
    inputs.push("a:\n".to_string() + &"  - !Ref x\n".repeat(1000));
    for cut in (0..full_yaml.len()).step_by(37) {
        inputs.extend(full_yaml.get(..cut).map(str::to_string));
    }
    for cut in (0..full_json.len()).step_by(53) {
        inputs.extend(full_json.get(..cut).map(str::to_string));
    }
    for input in &inputs {
        match parse_template(input, Path::new("fuzz")) {
            Ok(t) => {
                let _ = t.to_value();
            }
            Err(e) => {
                let s = e.to_string();
                assert!(!s.contains('\n'), "multi-line error for {input:?}: {s}");
                assert!(s.starts_with("template fuzz: "), "{s}");
            }
        }
    }
    assert!(inputs.len() > 40);
}
