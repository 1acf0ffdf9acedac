//! Masked-property fingerprints: what moves them and what never does.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::*;
use crate::resolve::ParameterValue;
use crate::state::{Lenient, ResourceState};

const TEMPLATE: &str = r##"{
  "Parameters": {
    "Env": {"Type": "String", "Default": "dev"},
    "Pin": {"Type": "String", "NoEcho": true}
  },
  "Conditions": {"IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]},
                 "PinSet": {"Fn::Not": [{"Fn::Equals": [{"Ref": "Pin"}, ""]}]}},
  "Mappings": {"Sizes": {"dev": {"N": "1"}}},
  "Resources": {
    "Bucket": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "b"}},
    "Dirty": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": {"Ref": "Pin"}}},
    "Custom": {"Type": "Custom::Thing", "Properties": {"ServiceToken": "arn"}},
    "Host": {"Type": "AWS::EC2::Instance", "Properties": {
      "UserData": {"Fn::Base64": {"Fn::Sub": [
        "#!/bin/sh\necho {{resolve:secretsmanager:s}} ${Env} ${Bucket} ${Dirty} ${Pin} ${Custom.Out} ${Size}",
        {"Size": {"Fn::FindInMap": ["Sizes", "dev", "N"]}}]}},
      "Other": {"Fn::If": ["IsProd", "big", "small"]},
      "Secretive": {"Fn::If": ["PinSet", {"Ref": "Env"}, "x"]}
    }}
  }
}"##;

struct World {
    template: Template,
    env: String,
    pin: String,
    bucket_id: String,
    dirty_id: String,
    custom_out: String,
    is_prod: bool,
}

impl World {
    fn new() -> Self {
        World {
            template: crate::template::parse_template(TEMPLATE, Path::new("t.json")).unwrap(),
            env: "dev".into(),
            pin: "1234".into(),
            bucket_id: "b".into(),
            dirty_id: "1234".into(),
            custom_out: "out".into(),
            is_prod: false,
        }
    }

    fn prints(&self, keys: &[&str]) -> MaskedFingerprints {
        let env = ParameterValue::Resolved(json!(self.env));
        let pin = ParameterValue::Resolved(json!(self.pin));
        let secret_params = |n: &str| n == "Pin";
        let param = |n: &str| match n {
            "Env" => Some(&env),
            "Pin" => Some(&pin),
            _ => None,
        };
        let verdict = |c: &str| match c {
            "IsProd" => Some(self.is_prod),
            "PinSet" => Some(true),
            _ => None,
        };
        let mut resolve = |v: &Value| -> Option<Value> {
            match v.get("Ref").and_then(Value::as_str) {
                Some("Env") => Some(json!(self.env)),
                Some("Pin") => Some(json!(self.pin)),
                Some("Bucket") => Some(json!(self.bucket_id)),
                Some("Dirty") => Some(json!(self.dirty_id)),
                _ => v.get("Fn::GetAtt").map(|_| json!(self.custom_out)),
            }
        };
        let known = vec![self.pin.clone(), "the-secret".to_owned()];
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        let mut inputs = Inputs {
            template: &self.template,
            secret_params: &secret_params,
            param: &param,
            verdict: &verdict,
            resolve: &mut resolve,
            known_secrets: &known,
        };
        fingerprints("Host", &keys, &mut inputs)
    }
}

fn record_with(prints: &MaskedFingerprints) -> ResourceState {
    let mut props = Map::new();
    props.insert("UserData".into(), json!("***"));
    let mut rec = ResourceState::new("i-1".to_string(), "AWS::EC2::Instance".to_string(), props);
    rec.masked_property_fingerprints = Some(Lenient::Valid(prints.text.clone()));
    rec.masked_property_input_fingerprints = Some(Lenient::Valid(prints.inputs.clone()));
    rec
}

fn changed(before: &MaskedFingerprints, after: &MaskedFingerprints) -> Vec<String> {
    masked_changes("AWS::EC2::Instance", &record_with(before), after, &[])
        .into_iter()
        .map(|d| d.path)
        .collect()
}

#[test]
fn the_fields_have_the_documented_shape_and_bind_the_input_hash_to_the_text_hash() {
    let p = World::new().prints(&["UserData"]);
    let text = &p.text["UserData"];
    assert!(text.starts_with("sha256:") && text.len() == "sha256:".len() + 64);
    let inputs = &p.inputs["UserData"];
    assert!(inputs.starts_with("inputs-sha256:"));
    assert!(inputs.ends_with(&format!("+{text}")));
}

#[test]
fn a_public_input_that_moves_is_a_change_a_secret_one_never_is() {
    let w = World::new();
    let before = w.prints(&["UserData"]);
    assert!(changed(&before, &w.prints(&["UserData"])).is_empty());

    let mut env = World::new();
    env.env = "test".into();
    assert_eq!(changed(&before, &env.prints(&["UserData"])), ["UserData"]);

    let mut replaced = World::new();
    replaced.bucket_id = "b-2".into();
    assert_eq!(
        changed(&before, &replaced.prints(&["UserData"])),
        ["UserData"]
    );

    // A NoEcho parameter, a resource built from one, a custom resource's attribute: never
    // hashed, so a new value of any of them moves nothing (the hash would be an oracle).
    let mut pin = World::new();
    pin.pin = "9999".into();
    pin.dirty_id = "9999".into();
    pin.custom_out = "other".into();
    assert!(changed(&before, &pin.prints(&["UserData"])).is_empty());
}

#[test]
fn a_condition_counts_only_when_it_reads_no_secret() {
    let w = World::new();
    let before = w.prints(&["Other", "Secretive"]);
    let mut prod = World::new();
    prod.is_prod = true;
    assert_eq!(
        changed_keys(&before, &prod.prints(&["Other", "Secretive"])),
        ["Other"]
    );
}

fn changed_keys(before: &MaskedFingerprints, after: &MaskedFingerprints) -> Vec<String> {
    let mut rec = record_with(before);
    rec.properties.insert("Other".into(), json!("***"));
    rec.properties.insert("Secretive".into(), json!("***"));
    masked_changes("AWS::EC2::Instance", &rec, after, &[])
        .into_iter()
        .map(|d| d.path)
        .collect()
}

#[test]
fn a_text_edit_is_a_change_and_an_unbound_input_hash_is_compared_as_text() {
    let w = World::new();
    let before = w.prints(&["UserData"]);
    let mut edited = World::new();
    let host = edited.template.resources.get_mut("Host").unwrap();
    host.properties.insert(
        "UserData".into(),
        json!({"Fn::Base64": "echo {{resolve:secretsmanager:other}}"}),
    );
    assert_eq!(
        changed(&before, &edited.prints(&["UserData"])),
        ["UserData"]
    );

    // A record whose input hash belongs to another text hash (an older writer's): text only.
    let mut rec = record_with(&before);
    rec.masked_property_input_fingerprints = Some(Lenient::Valid(
        [(
            "UserData".to_owned(),
            "inputs-sha256:00+sha256:11".to_owned(),
        )]
        .into_iter()
        .collect(),
    ));
    let mut env = World::new();
    env.env = "test".into();
    assert!(masked_changes("AWS::EC2::Instance", &rec, &env.prints(&["UserData"]), &[]).is_empty());
    // No fingerprint recorded (an older cdkd's record): compared as before.
    let mut bare = record_with(&before);
    bare.masked_property_fingerprints = None;
    assert!(masked_changes(
        "AWS::EC2::Instance",
        &bare,
        &edited.prints(&["UserData"]),
        &[]
    )
    .is_empty());
}

#[test]
fn a_property_spelling_a_known_secret_gets_no_hash() {
    let mut w = World::new();
    let host = w.template.resources.get_mut("Host").unwrap();
    host.properties.insert(
        "UserData".into(),
        json!({"Fn::Base64": "pw=the-secret {{resolve:secretsmanager:s}}"}),
    );
    let p = w.prints(&["UserData"]);
    assert!(p.text.is_empty() && p.inputs.is_empty());
}

#[test]
fn masked_keys_are_the_top_level_properties_of_mask_positions() {
    let mut secrets = SecretsMap::default();
    let pos = |e: &str| crate::resolve::dynamic::SecretPosition {
        expression: e.into(),
        references: vec!["{{resolve:secretsmanager:s}}".into()],
    };
    secrets.insert_position("LaunchTemplateData.UserData", pos("***"));
    secrets.insert_position("Tags[0].Value", pos("{{resolve:secretsmanager:s}}"));
    secrets.insert_position("UserData", pos("***"));
    assert_eq!(masked_keys(&secrets), ["LaunchTemplateData", "UserData"]);
}

#[test]
fn a_record_without_fingerprints_gets_them_filled_in_and_a_held_one_is_never_replaced() {
    let today = World::new().prints(&["UserData"]);
    let mut bare = record_with(&today);
    bare.masked_property_fingerprints = None;
    bare.masked_property_input_fingerprints = None;
    let filled = filled_in(&bare, &today).expect("filled in");
    assert_eq!(filled.masked_property_fingerprints(), Some(&today.text));
    assert_eq!(
        filled.masked_property_input_fingerprints(),
        Some(&today.inputs)
    );
    assert!(filled_in(&filled, &today).is_none(), "nothing left to fill");

    // Text recorded, no input hash bound to it (an older writer): the input hash is filled.
    let mut text_only = record_with(&today);
    text_only.masked_property_input_fingerprints = None;
    let filled = filled_in(&text_only, &today).expect("input filled");
    assert_eq!(
        filled.masked_property_input_fingerprints(),
        Some(&today.inputs)
    );

    // A recorded text hash that moved is a change, not a fill-in.
    let mut edited = World::new();
    edited
        .template
        .resources
        .get_mut("Host")
        .unwrap()
        .properties
        .insert(
            "UserData".into(),
            json!({"Fn::Base64": "other {{resolve:secretsmanager:s}}"}),
        );
    assert!(filled_in(&record_with(&today), &edited.prints(&["UserData"])).is_none());
}
