use super::*;

const YAML: &str = r#"AWSTemplateFormatVersion: '2010-09-09'
Parameters:
  Env:
    Type: String
    Default: dev
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Sub '${AWS::StackName}-${Env}-queue'
  Topic:
    Type: AWS::SNS::Topic
    DeletionPolicy: Delete
    Properties:
      DisplayName: !Join ['-', [!Ref Env, !GetAtt Queue.QueueName]]
  Child:
    Type: AWS::CloudFormation::Stack
    Properties:
      TemplateURL: !Sub 'https://s3.amazonaws.com/bucket/${Env}.yaml'
      Parameters:
        Arn: !GetAtt [Queue, Arn]
        Zone: !Select [0, !GetAZs '']
Outputs:
  Url:
    Value: !Ref Queue
    Condition: IsProd
Conditions:
  IsProd: !Equals [!Ref Env, prod]
"#;

fn is_stack(t: &str) -> bool {
    t == "AWS::CloudFormation::Stack"
}

#[test]
fn yaml_short_tags_survive_a_round_trip_and_the_injection() {
    let mut t = SourceTemplate::parse(YAML).unwrap();
    assert_eq!(t.format(), SourceFormat::Yaml);
    let changed = t.retain_all(is_stack);
    assert_eq!(changed, vec!["Queue", "Topic"]);
    assert!(t.set_template_url("Child", "https://s3.us-east-1.amazonaws.com/b/k.yaml"));
    let text = t.render().unwrap();
    for tag in [
        "!Sub \"${AWS::StackName}-${Env}-queue\"",
        "AWSTemplateFormatVersion: \"2010-09-09\"",
        "!Join",
        "!Ref Env",
        "!GetAtt Queue.QueueName",
        "!GetAtt",
        "!Select",
        "!GetAZs",
        "!Equals",
    ] {
        assert!(text.contains(tag), "{tag} lost in:\n{text}");
    }
    assert!(!text.contains("Fn::"), "long forms appeared:\n{text}");
    assert!(!text.trim_start().starts_with('{'), "YAML became JSON");
    // What was written reads back as the same document, and means the same template.
    let again = SourceTemplate::parse(&text).unwrap();
    assert_eq!(again, t);
    let before = crate::template::yaml_to_json(YAML, std::path::Path::new("t.yaml")).unwrap();
    let after = crate::template::yaml_to_json(&text, std::path::Path::new("t.yaml")).unwrap();
    assert_eq!(after["Resources"]["Queue"]["DeletionPolicy"], "Retain");
    assert_eq!(after["Resources"]["Topic"]["DeletionPolicy"], "Retain");
    assert!(after["Resources"]["Child"].get("DeletionPolicy").is_none());
    assert_eq!(
        after["Resources"]["Child"]["Properties"]["TemplateURL"],
        "https://s3.us-east-1.amazonaws.com/b/k.yaml"
    );
    assert_eq!(
        after["Resources"]["Topic"]["Properties"],
        before["Resources"]["Topic"]["Properties"]
    );
    assert_eq!(after["Outputs"], before["Outputs"]);
    assert_eq!(after["Conditions"], before["Conditions"]);
    assert_eq!(after["AWSTemplateFormatVersion"], "2010-09-09");
}

#[test]
fn an_unchanged_yaml_template_round_trips_to_the_same_document() {
    let t = SourceTemplate::parse(YAML).unwrap();
    let again = SourceTemplate::parse(&t.render().unwrap()).unwrap();
    assert_eq!(again, t);
}

#[test]
fn json_stays_json_in_key_order() {
    let text = r#"{"Resources": {"B": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": {"Fn::Sub": "${AWS::StackName}-b"}}},
        "A": {"Type": "AWS::CloudFormation::Stack", "Properties": {"TemplateURL": {"Fn::Join": ["", ["https://", "x"]]}}},
        "Q": {"Type": "AWS::SQS::Queue", "DeletionPolicy": "Retain"}},
        "Outputs": {"O": {"Value": {"Ref": "B"}}}}"#;
    let mut t = SourceTemplate::parse(text).unwrap();
    assert_eq!(t.format(), SourceFormat::Json);
    assert_eq!(
        t.resources(),
        vec![
            ("B".to_string(), Some("AWS::S3::Bucket".to_string())),
            (
                "A".to_string(),
                Some("AWS::CloudFormation::Stack".to_string())
            ),
            ("Q".to_string(), Some("AWS::SQS::Queue".to_string())),
        ]
    );
    // Q already retains: only B changes.
    assert_eq!(t.retain_all(is_stack), vec!["B"]);
    assert!(t.set_template_url("A", "https://s3.us-east-1.amazonaws.com/b/k.json"));
    assert!(!t.set_template_url("Missing", "u"));
    let out = t.render().unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).expect("still JSON");
    let keys: Vec<&String> = v["Resources"].as_object().unwrap().keys().collect();
    assert_eq!(keys, vec!["B", "A", "Q"]);
    assert_eq!(v["Resources"]["B"]["DeletionPolicy"], "Retain");
    assert_eq!(
        v["Resources"]["B"]["Properties"]["BucketName"]["Fn::Sub"],
        "${AWS::StackName}-b"
    );
    assert!(v["Resources"]["A"].get("DeletionPolicy").is_none());
    assert_eq!(
        v["Resources"]["A"]["Properties"]["TemplateURL"],
        "https://s3.us-east-1.amazonaws.com/b/k.json"
    );
    assert_eq!(v["Outputs"]["O"]["Value"]["Ref"], "B");
}

#[test]
fn formats_name_their_upload() {
    assert_eq!(SourceFormat::Json.extension(), "json");
    assert_eq!(SourceFormat::Yaml.extension(), "yaml");
    assert_eq!(SourceFormat::Yaml.content_type(), "application/x-yaml");
}

#[test]
fn bad_documents_are_refused() {
    assert!(matches!(
        SourceTemplate::parse("[1, 2]"),
        Err(CodecError::NotAMapping)
    ));
    assert!(matches!(
        SourceTemplate::parse("{\"a\": "),
        Err(CodecError::Json(_))
    ));
    assert!(matches!(
        SourceTemplate::parse("a: [b"),
        Err(CodecError::Yaml(_))
    ));
}

#[test]
fn json_over_a_limit_is_written_compact() {
    let t = SourceTemplate::parse(r#"{"Resources": {"A": {"Type": "AWS::SQS::Queue"}}}"#).unwrap();
    let pretty = t.render_within(10_000).unwrap();
    assert!(pretty.contains('\n'));
    let compact = t.render_within(10).unwrap();
    assert_eq!(compact, r#"{"Resources":{"A":{"Type":"AWS::SQS::Queue"}}}"#);
}
