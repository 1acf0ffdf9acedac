use std::path::Path;

use indexmap::IndexMap;
use serde_json::{json, Map, Value};

use super::*;

fn template(v: Value) -> Template {
    Template::from_value(v, Path::new("t.json")).expect("template")
}

fn map(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

struct Case {
    template: Template,
    desired: Map<String, Value>,
    failed: IndexMap<String, String>,
    stored: Option<Map<String, Value>>,
    skipped: Option<IndexMap<String, String>>,
    changed: Vec<String>,
    needles: Needles,
}

impl Case {
    fn new(t: Value, desired: Value, stored: Option<Value>) -> Case {
        Case {
            template: template(t),
            desired: map(desired),
            failed: IndexMap::new(),
            stored: stored.map(map),
            skipped: None,
            changed: Vec::new(),
            needles: Needles::default(),
        }
    }

    fn run(&self) -> (Vec<OutputDiff>, Vec<String>) {
        compare(&OutputsInput {
            stack: "S",
            desired: &self.desired,
            failed: &self.failed,
            stored: self.stored.as_ref(),
            recorded_skipped: self.skipped.as_ref(),
            changed_resources: &self.changed,
            template: &self.template,
            condition_skipped: &[],
            needles: &self.needles,
        })
    }
}

fn outputs_template() -> Value {
    json!({
        "Resources": {"Q": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {
            "Url": {"Value": {"Ref": "Q"}, "Export": {"Name": "UrlExport"}},
            "Mode": {"Value": "a"}
        }
    })
}

#[test]
fn equal_bags_have_no_rows_and_each_key_is_compared() {
    let bag = json!({"Url": "u", "UrlExport": "u", "Mode": "a"});
    let (rows, notes) = Case::new(outputs_template(), bag.clone(), Some(bag)).run();
    assert!(rows.is_empty() && notes.is_empty());

    let (rows, _) = Case::new(
        outputs_template(),
        json!({"Url": "u", "UrlExport": "u", "Mode": "b", "New": 1}),
        Some(json!({"Url": "u", "Mode": "a", "Gone": "x"})),
    )
    .run();
    let summary: Vec<(&str, OutputChange, bool)> = rows
        .iter()
        .map(|r| (r.key.as_str(), r.change, r.export))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("UrlExport", OutputChange::Add, true),
            ("Mode", OutputChange::Update, false),
            ("New", OutputChange::Add, true),
            ("Gone", OutputChange::Remove, true),
        ]
    );
    assert_eq!(rows[1].old, Some(json!("a")));
    assert_eq!(rows[3].old, Some(json!("x")));
}

#[test]
fn a_failed_output_with_a_resource_change_suppresses_the_section() {
    let mut case = Case::new(
        outputs_template(),
        json!({"Mode": "b"}),
        Some(json!({"Mode": "a"})),
    );
    case.failed.insert("Url".into(), "sha256:x".into());
    case.changed = vec!["Q".into()];
    let (rows, notes) = case.run();
    assert!(rows.is_empty());
    assert_eq!(notes.len(), 1, "{notes:?}");
}

#[test]
fn a_failed_output_without_a_resource_change_keeps_its_stored_value() {
    let mut case = Case::new(
        outputs_template(),
        json!({"Mode": "a"}),
        Some(json!({"Mode": "a", "Url": "u"})),
    );
    case.failed.insert("Url".into(), "sha256:x".into());
    let (rows, notes) = case.run();
    assert!(rows.is_empty(), "{rows:?}");
    assert_eq!(notes.len(), 1);
}

#[test]
fn an_output_the_last_deploy_skipped_the_same_way_is_absent() {
    let mut case = Case::new(
        outputs_template(),
        json!({"Mode": "a"}),
        Some(json!({"Mode": "a"})),
    );
    case.failed.insert("Url".into(), "sha256:x".into());
    case.skipped = Some(case.failed.clone());
    let (rows, notes) = case.run();
    assert!(rows.is_empty() && notes.is_empty(), "{rows:?} {notes:?}");
}

#[test]
fn legacy_secret_plaintext_is_withheld() {
    let t = json!({
        "Resources": {},
        "Outputs": {"Pw": {"Value": "{{resolve:secretsmanager:s:SecretString:pw}}"}, "Mode": {"Value": "b"}}
    });
    let (rows, _) = Case::new(
        t.clone(),
        json!({"Pw": "{{resolve:secretsmanager:s:SecretString:pw}}", "Mode": "b"}),
        Some(json!({"Pw": "hunter22", "Mode": "a"})),
    )
    .run();
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter().all(|r| r.old.is_none() && r.old_withheld),
        "{rows:?}"
    );
    let printed = serde_json::to_string(&rows).unwrap();
    assert!(!printed.contains("hunter22"));

    // A stored key the template no longer names, in a stack that reads a secret.
    let (rows, _) = Case::new(
        t,
        json!({"Pw": "{{resolve:secretsmanager:s:SecretString:pw}}", "Mode": "b"}),
        Some(json!({"Pw": "{{resolve:secretsmanager:s:SecretString:pw}}", "Mode": "b", "Old": "plain"})),
    )
    .run();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].change, OutputChange::Remove);
    assert!(rows[0].old_withheld && rows[0].old.is_none());
}

#[test]
fn no_echo_values_are_masked() {
    let mut case = Case::new(
        outputs_template(),
        json!({"Mode": "s3cr3t-value"}),
        Some(json!({"Mode": "a"})),
    );
    case.needles.add_no_echo(&json!("s3cr3t-value"));
    let (rows, _) = case.run();
    let printed = serde_json::to_string(&rows).unwrap();
    assert!(!printed.contains("s3cr3t-value"), "{printed}");
}

#[test]
fn a_failed_output_without_a_resource_change_keeps_its_export_alias_too() {
    let mut case = Case::new(
        outputs_template(),
        json!({"Mode": "a"}),
        Some(json!({"Mode": "a", "Url": "u", "UrlExport": "u"})),
    );
    case.failed.insert("Url".into(), "sha256:x".into());
    let (rows, _) = case.run();
    assert!(rows.is_empty(), "{rows:?}");
}

#[test]
fn a_withheld_value_is_absent_from_the_json_too() {
    let t = json!({
        "Resources": {"Q": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"Pw": {"Value": "{{resolve:secretsmanager:db}}"}}
    });
    let case = Case::new(
        t,
        json!({"Pw": "{{resolve:secretsmanager:db}}"}),
        Some(json!({"Pw": "legacy-plaintext", "Gone": "also-plain"})),
    );
    let (rows, _) = case.run();
    assert_eq!(rows.len(), 2, "{rows:?}");
    let diff = crate::engine::diff::StackDiff {
        stack_name: "S".into(),
        outputs: rows,
        ..Default::default()
    };
    let text = crate::ui::diff_json::render_json(&[diff]);
    assert!(
        !text.contains("legacy-plaintext") && !text.contains("also-plain"),
        "{text}"
    );
    assert!(text.contains("\"oldWithheld\": true"), "{text}");
}
