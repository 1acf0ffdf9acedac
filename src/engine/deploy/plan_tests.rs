use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::engine::deploy::prepare::{prepare, Prepared};
use crate::provider::cloudcontrol::CloudControlProvider;
use crate::resolve::{NoExternalLookup, ParameterOverride, ResolveContext};

fn prepared(template: Value, overrides: &[ParameterOverride]) -> (tempfile::TempDir, Prepared) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("S.template.json");
    std::fs::write(&file, template.to_string()).unwrap();
    let ctx = ResolveContext::new("S", "us-east-1", Some("123456789012".into()));
    let p = prepare(
        "S",
        &file,
        &[],
        ctx,
        overrides,
        &[],
        Arc::new(NoExternalLookup),
    )
    .unwrap();
    (dir, p)
}

fn registry() -> Registry {
    Registry::new().with_cloud_control(Arc::new(CloudControlProvider::new()))
}

fn record(id: &str, type_: &str, props: Value, attrs: Value) -> ResourceState {
    let mut r = ResourceState::new(id, type_, props.as_object().unwrap().clone());
    r.attributes = Some(attrs.as_object().unwrap().clone());
    r.dependencies = Some(vec![]);
    r
}

fn template() -> Value {
    json!({
        "Parameters": {"Timeout": {"Type": "Number", "Default": "30"}},
        "Conditions": {"Off": {"Fn::Equals": ["1", "2"]}},
        "Resources": {
            "A": {"Type": "AWS::SQS::Queue",
                  "Properties": {"QueueName": "a", "VisibilityTimeout": {"Ref": "Timeout"}}},
            "B": {"Type": "AWS::SSM::Parameter",
                  "Properties": {"Type": "String", "Value": {"Fn::GetAtt": ["A", "Arn"]}}},
            "C": {"Type": "AWS::SQS::Queue"},
            "Off": {"Type": "AWS::SQS::Queue", "Condition": "Off"},
            "Bucket": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "x"}},
            "Meta": {"Type": "AWS::CDK::Metadata"}
        }
    })
}

fn state(bucket_name: &str, timeout: &str) -> StackState {
    let mut s = StackState::new("S", "us-east-1");
    let r = &mut s.resources;
    r.insert(
        "A".into(),
        record(
            "https://q/a",
            "AWS::SQS::Queue",
            json!({"QueueName": "a", "VisibilityTimeout": timeout}),
            json!({"Arn": "arn:a"}),
        ),
    );
    let mut b = record(
        "p-1",
        "AWS::SSM::Parameter",
        json!({"Type": "String", "Value": "arn:a"}),
        json!({}),
    );
    b.dependencies = Some(vec!["A".into()]);
    r.insert("B".into(), b);
    r.insert(
        "Bucket".into(),
        record(
            "b",
            "AWS::S3::Bucket",
            json!({"BucketName": bucket_name}),
            json!({}),
        ),
    );
    r.insert(
        "Gone".into(),
        record("g", "AWS::SQS::Queue", json!({}), json!({})),
    );
    s
}

fn kind(plan: &Plan, id: &str) -> (ChangeKind, bool) {
    let p = &plan.planned[id];
    (p.change.kind, p.deferred)
}

#[test]
fn every_kind_of_change() {
    let (_d, p) = prepared(template(), &[]);
    let plan = super::plan(&p, &state("x", "60"), &registry(), false).unwrap();
    assert_eq!(kind(&plan, "A"), (ChangeKind::Update, false));
    // B reads A's Arn, which an in-place update of VisibilityTimeout does not move.
    assert_eq!(kind(&plan, "B"), (ChangeKind::NoChange, false));
    assert_eq!(kind(&plan, "C"), (ChangeKind::Create, false));
    assert_eq!(kind(&plan, "Bucket"), (ChangeKind::NoChange, false));
    assert!(!plan.planned.contains_key("Off") && !plan.planned.contains_key("Meta"));
    assert_eq!(plan.removed, vec!["Gone".to_string()]);
    assert_eq!(plan.planned["B"].dependencies, vec!["A".to_string()]);
    assert_eq!(plan.planned["A"].route, Route::CloudControl);
    assert_eq!(plan.describe(), "1 to create, 1 to update, 1 to delete");
    // A replaced dependency moves everything read from it: decided again in the walk.
    let mut t = template();
    t["Resources"]["A"]["Properties"]["QueueName"] = json!("a2");
    let (_d, p) = prepared(t, &[]);
    let plan = super::plan(&p, &state("x", "30"), &registry(), false).unwrap();
    assert_eq!(kind(&plan, "A"), (ChangeKind::Replace, false));
    assert_eq!(kind(&plan, "B"), (ChangeKind::Update, true));
}

#[test]
fn nothing_changes_when_the_record_matches() {
    let mut t = template();
    t["Resources"]["C"]["DeletionPolicy"] = json!("Retain");
    let (_d, p) = prepared(t, &[]);
    let mut s = state("x", "30");
    s.resources.shift_remove("Gone");
    s.resources.insert(
        "C".into(),
        record("https://q/c", "AWS::SQS::Queue", json!({}), json!({})),
    );
    let plan = super::plan(&p, &s, &registry(), false).unwrap();
    assert!(!plan.has_resource_changes(), "{:?}", plan.changes);
    // Unchanged records whose template fields moved are refreshed without an AWS call.
    assert_eq!(
        plan.refreshed
            .iter()
            .map(|(id, _)| id.as_str())
            .collect::<Vec<_>>(),
        vec!["C"]
    );
    // A parameter override is a change like any other.
    let (_d, p) = prepared(
        template(),
        &[ParameterOverride::parse("Timeout=45").unwrap()],
    );
    let plan = super::plan(&p, &s, &registry(), false).unwrap();
    assert_eq!(kind(&plan, "A"), (ChangeKind::Update, false));
}

#[test]
fn a_stateful_replacement_is_refused_without_the_flag() {
    let (_d, p) = prepared(template(), &[]);
    let err = super::plan(&p, &state("y", "30"), &registry(), false)
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(
        text.contains("STATEFUL_REPLACE_BLOCKED") && text.contains("Bucket"),
        "{text}"
    );
    let plan = super::plan(&p, &state("y", "30"), &registry(), true).unwrap();
    assert_eq!(kind(&plan, "Bucket"), (ChangeKind::Replace, false));
    // Under UpdateReplacePolicy: Retain the old bucket stays, so no flag is needed.
    let mut t = template();
    t["Resources"]["Bucket"]["UpdateReplacePolicy"] = json!("Retain");
    let (_d, p) = prepared(t, &[]);
    assert!(plan_ok(&p, &state("y", "30")));
}

fn plan_ok(p: &Prepared, s: &StackState) -> bool {
    super::plan(p, s, &registry(), false).is_ok()
}

#[test]
fn a_type_change_replaces() {
    let mut t = template();
    t["Resources"]["C"] = json!({"Type": "AWS::SNS::Topic"});
    let (_d, p) = prepared(t, &[]);
    let mut s = state("x", "30");
    s.resources.insert(
        "C".into(),
        record("https://q/c", "AWS::SQS::Queue", json!({}), json!({})),
    );
    let plan = super::plan(&p, &s, &registry(), false).unwrap();
    assert_eq!(kind(&plan, "C"), (ChangeKind::Replace, false));
}

/// `state` whose queue A was recorded without its Arn (a record another writer made).
fn state_without_arn() -> StackState {
    let mut s = state("x", "30");
    s.resources.shift_remove("Gone");
    if let Some(a) = s.resources.get_mut("A") {
        a.attributes = Some(serde_json::Map::new());
    }
    s
}

#[test]
fn a_read_of_an_unrecorded_attribute_is_a_possible_change_decided_in_the_walk() {
    let (_d, p) = prepared(template(), &[]);
    let s = state_without_arn();
    let plan = super::plan(&p, &s, &registry(), false).unwrap();
    // B's Value cannot be resolved from state: planned as an update the walk decides, with
    // the template's expression as the new value, never skipped as "no change".
    assert_eq!(kind(&plan, "B"), (ChangeKind::Update, true));
    let diffs = &plan.planned["B"].change.property_diffs;
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    assert_eq!(diffs[0].path, "Value");
    assert_eq!(diffs[0].old, Some(json!("arn:a")));
    assert_eq!(diffs[0].new, Some(json!({"Fn::GetAtt": ["A", "Arn"]})));
    assert!(!diffs[0].requires_replacement);
    assert_eq!(plan.describe(), "1 to create, 1 to update");
    // Its readers are decided in the walk too (B's Value may move).
    assert!(super::super::unrecorded::reads_unrecorded(
        &json!({"Fn::Sub": "${A.Arn}/x"}),
        &s
    ));
    assert!(!super::super::unrecorded::reads_unrecorded(
        &json!({"Ref": "A"}),
        &s
    ));
}

#[test]
fn an_unchanged_expression_whose_attribute_is_read_back_plans_no_change() {
    let (_d, p) = prepared(template(), &[]);
    let mut s = state_without_arn();
    // What the pre-plan read-back finds: the attribute as AWS reports it.
    assert_eq!(
        super::super::unrecorded::wanted(&p.resolution.template, &s),
        vec![("A".to_string(), "Arn".to_string())]
    );
    s.resources
        .get_mut("A")
        .and_then(|a| a.attributes.as_mut())
        .unwrap()
        .insert("Arn".into(), json!("arn:a"));
    let mut plan = super::plan(&p, &s, &registry(), false).unwrap();
    assert_eq!(kind(&plan, "B"), (ChangeKind::NoChange, false));
    assert!(super::super::unrecorded::wanted(&p.resolution.template, &s).is_empty());
    // The completed record of the unchanged queue is stored, so the next plan reads nothing.
    let completed = super::super::unrecorded::Completed {
        state: s.clone(),
        read: vec![("A".into(), "Arn".into())],
    };
    super::super::unrecorded::keep(&mut plan, &completed);
    let kept: Vec<&str> = plan.refreshed.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(kept, vec!["A"]);
    // A changed expression is compared with the value read back: a real change.
    let mut t = template();
    t["Resources"]["B"]["Properties"]["Value"] = json!({"Fn::Sub": "${A.Arn}-2"});
    let (_d, p) = prepared(t, &[]);
    let plan = super::plan(&p, &s, &registry(), false).unwrap();
    assert_eq!(kind(&plan, "B"), (ChangeKind::Update, false));
    assert_eq!(
        plan.planned["B"].change.property_diffs[0].new,
        Some(json!("arn:a-2"))
    );
}

/// Topic → Queue (name from the topic's) → Tail (name from the queue's), Table (name from
/// the queue's, a stateful type) and Param (value from the tail's URL).
fn chain_template(topic_name: &str) -> Value {
    let join = |id: &str, attr: &str, suffix: &str| json!({"Fn::Join": ["", [{"Fn::GetAtt": [id, attr]}, suffix]]});
    json!({"Resources": {
        "Topic": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": topic_name}},
        "Queue": {"Type": "AWS::SQS::Queue",
                  "Properties": {"QueueName": join("Topic", "TopicName", "-q1")}},
        "Tail": {"Type": "AWS::SQS::Queue",
                 "Properties": {"QueueName": join("Queue", "QueueName", "-q2")}},
        "Table": {"Type": "AWS::DynamoDB::Table",
                  "Properties": {"TableName": join("Queue", "QueueName", "-t")}},
        "Param": {"Type": "AWS::SSM::Parameter",
                  "Properties": {"Type": "String", "Value": {"Ref": "Tail"}}}
    }})
}

/// The chain as deployed with the topic named `t-a`.
fn chain_state() -> StackState {
    let mut s = StackState::new("S", "us-east-1");
    let r = &mut s.resources;
    let topic = "arn:aws:sns:us-east-1:123456789012:t-a";
    r.insert(
        "Topic".into(),
        record(
            topic,
            "AWS::SNS::Topic",
            json!({"TopicName": "t-a"}),
            json!({"TopicName": "t-a", "TopicArn": topic}),
        ),
    );
    for (id, name, dep) in [("Queue", "t-a-q1", "Topic"), ("Tail", "t-a-q1-q2", "Queue")] {
        let mut q = record(
            &format!("https://q/{name}"),
            "AWS::SQS::Queue",
            json!({"QueueName": name}),
            json!({"QueueName": name, "Arn": format!("arn:{name}")}),
        );
        q.dependencies = Some(vec![dep.into()]);
        r.insert(id.into(), q);
    }
    let mut t = record(
        "t-a-q1-t",
        "AWS::DynamoDB::Table",
        json!({"TableName": "t-a-q1-t"}),
        json!({"Arn": "arn:table"}),
    );
    t.dependencies = Some(vec!["Queue".into()]);
    r.insert("Table".into(), t);
    let mut p = record(
        "p-1",
        "AWS::SSM::Parameter",
        json!({"Type": "String", "Value": "https://q/t-a-q1-q2"}),
        json!({}),
    );
    p.dependencies = Some(vec!["Tail".into()]);
    r.insert("Param".into(), p);
    s
}

#[test]
fn a_deployed_chain_plans_no_change() {
    let (_d, p) = prepared(chain_template("t-a"), &[]);
    let plan = super::plan(&p, &chain_state(), &registry(), false).unwrap();
    assert!(!plan.has_resource_changes(), "{:?}", plan.changes);
    for id in ["Topic", "Queue", "Tail", "Table", "Param"] {
        assert_eq!(kind(&plan, id), (ChangeKind::NoChange, false), "{id}");
    }
}

#[test]
fn a_replacement_propagates_to_every_depth_and_the_stateful_guard_applies_there() {
    let (_d, p) = prepared(chain_template("t-b"), &[]);
    // The table three hops down is replaced too (its name moves): refused before any change.
    let err = super::plan(&p, &chain_state(), &registry(), false)
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(
        text.contains("STATEFUL_REPLACE_BLOCKED: Table (AWS::DynamoDB::Table)")
            && text.contains("create-only property TableName changed"),
        "{text}"
    );
    let plan = super::plan(&p, &chain_state(), &registry(), true).unwrap();
    assert_eq!(kind(&plan, "Topic"), (ChangeKind::Replace, false));
    // The names the plan predicts: each resolved against the new name of what it reads.
    for (id, old, new) in [
        ("Queue", "t-a-q1", "t-b-q1"),
        ("Tail", "t-a-q1-q2", "t-b-q1-q2"),
        ("Table", "t-a-q1-t", "t-b-q1-t"),
    ] {
        assert_eq!(kind(&plan, id), (ChangeKind::Replace, true), "{id}");
        let d = &plan.planned[id].change.property_diffs;
        assert_eq!(d.len(), 1, "{id}: {d:?}");
        assert_eq!(
            (d[0].old.clone(), d[0].new.clone()),
            (Some(json!(old)), Some(json!(new)))
        );
        assert!(d[0].requires_replacement, "{id}");
    }
    let queue = &plan.planned["Queue"].change.reasons;
    assert!(
        queue.contains(&ChangeReason::ReplacementPropagated {
            from: "Topic".into()
        }),
        "{queue:?}"
    );
    // The parameter reads the tail's URL, known only once the new tail exists: an update the
    // walk decides.
    assert_eq!(kind(&plan, "Param"), (ChangeKind::Update, true));
    assert_eq!(plan.planned["Param"].unresolved, vec!["Value".to_string()]);
    assert_eq!(
        plan.describe(),
        "4 to replace, 1 to re-check once their dependencies are done"
    );
    // Under UpdateReplacePolicy: Retain the old table stays: no flag needed.
    let mut t = chain_template("t-b");
    t["Resources"]["Table"]["UpdateReplacePolicy"] = json!("Retain");
    let (_d, p) = prepared(t, &[]);
    assert!(plan_ok(&p, &chain_state()));
}

#[test]
fn a_create_only_value_only_known_after_deploy_is_a_replacement_ceiling() {
    // The tail's name reads the queue's URL (unknown until the new queue exists): a ceiling
    // replacement, and the one under it reads the tail's name, unknown as well.
    let mut t = chain_template("t-b");
    t["Resources"]["Tail"]["Properties"]["QueueName"] = json!({"Ref": "Queue"});
    t["Resources"]["Table"]["Properties"]["TableName"] =
        json!({"Fn::GetAtt": ["Tail", "QueueName"]});
    let (_d, p) = prepared(t.clone(), &[]);
    let mut s = chain_state();
    s.resources["Tail"].properties["QueueName"] = json!("https://q/t-a-q1");
    s.resources["Table"].dependencies = Some(vec!["Tail".into()]);
    // The table reads a replacement the walk may still lower: not refused by the plan (the
    // walk refuses it if its name does move).
    let plan = super::plan(&p, &s, &registry(), false).unwrap();
    assert_eq!(kind(&plan, "Tail"), (ChangeKind::Replace, true));
    assert_eq!(
        plan.planned["Tail"].unresolved,
        vec!["QueueName".to_string()]
    );
    assert!(plan.planned["Tail"].change.property_diffs.is_empty());
    assert_eq!(kind(&plan, "Table"), (ChangeKind::Replace, true));
    // Read straight from the surely replaced queue, the table's name does move: refused.
    t["Resources"]["Table"]["Properties"]["TableName"] = json!({"Ref": "Queue"});
    let (_d, p) = prepared(t, &[]);
    let text = super::plan(&p, &s, &registry(), false)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        text.contains("Table (AWS::DynamoDB::Table)")
            && text.contains("create-only property TableName reads Queue"),
        "{text}"
    );
}

#[test]
fn an_in_place_update_propagates_to_every_depth() {
    let t = json!({"Resources": {
        "P1": {"Type": "AWS::SSM::Parameter", "Properties": {"Type": "String", "Value": "v2"}},
        "P2": {"Type": "AWS::SSM::Parameter",
               "Properties": {"Type": "String", "Value": {"Fn::GetAtt": ["P1", "Value"]}}},
        "P3": {"Type": "AWS::SSM::Parameter",
               "Properties": {"Type": "String", "Value": {"Fn::GetAtt": ["P2", "Value"]}}},
        "P4": {"Type": "AWS::SSM::Parameter",
               "Properties": {"Type": "String", "Value": {"Fn::GetAtt": ["P3", "Type"]}}}
    }});
    let (_d, p) = prepared(t, &[]);
    let mut s = StackState::new("S", "us-east-1");
    for (id, value) in [("P1", "v1"), ("P2", "v1"), ("P3", "v1"), ("P4", "String")] {
        s.resources.insert(
            id.into(),
            record(
                &format!("/{id}"),
                "AWS::SSM::Parameter",
                json!({"Type": "String", "Value": value}),
                json!({"Type": "String", "Value": value}),
            ),
        );
    }
    let plan = super::plan(&p, &s, &registry(), false).unwrap();
    assert_eq!(kind(&plan, "P1"), (ChangeKind::Update, false));
    for id in ["P2", "P3"] {
        assert_eq!(kind(&plan, id), (ChangeKind::Update, true), "{id}");
        let d = &plan.planned[id].change.property_diffs;
        assert_eq!(d[0].new, Some(json!("v2")), "{id}");
    }
    // P4 reads an attribute the update does not move: nothing to do (re-checked after P3,
    // which is decided in the walk).
    assert_eq!(kind(&plan, "P4"), (ChangeKind::NoChange, true));
    assert_eq!(plan.describe(), "3 to update");
}

#[test]
fn a_moved_dependency_whose_read_value_is_unchanged_plans_no_change() {
    // The topic is replaced (FifoTopic is create-only) but keeps its name; the queue reads
    // only the name, so its value does not move.
    let mut t = chain_template("t-a");
    t["Resources"]["Topic"]["Properties"]["FifoTopic"] = json!(true);
    let (_d, p) = prepared(t, &[]);
    let plan = super::plan(&p, &chain_state(), &registry(), false).unwrap();
    assert_eq!(kind(&plan, "Topic"), (ChangeKind::Replace, false));
    // Decided again in the walk (against the new topic's name), planned as no change.
    assert_eq!(kind(&plan, "Queue"), (ChangeKind::NoChange, true));
    assert_eq!(kind(&plan, "Tail"), (ChangeKind::NoChange, true));
    assert_eq!(plan.describe(), "1 to replace");
}
