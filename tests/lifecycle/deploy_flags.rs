//! `cdkd deploy` flags end to end through the binary against the emulator: `--replace` (the
//! delete-first fallback of a replacement whose name the old resource holds, its journal entry
//! and its rollback), `--strict-getatt` (an output that does not resolve, an attribute the
//! provider did not report), and the automatic rollback of a newly created nested stack.
//!
//! Faults are scoped to `AWS::Scheduler::ScheduleGroup`, a type only this file creates.

use crate::support;

use serde_json::{json, Value};
use support::app::App;
use support::http::http;
use support::{cdkd, s3_client, sdk_config, unique_name};

const REGION: &str = "us-east-1";
/// The type whose creates these tests make fail (no other test file creates one).
const FAILING_TYPE: &str = "AWS::Scheduler::ScheduleGroup";

fn add_fault(fault: Value) {
    let (status, body) = http("POST", "/_cloudcontrol/faults", &[], &fault.to_string());
    assert_eq!(status, 200, "{body}");
}

fn fail_next_group_create(why: &str) {
    add_fault(
        json!({"fail_create": {"TypeName": FAILING_TYPE, "ErrorCode": "InvalidRequest",
        "StatusMessage": why, "count": 1}}),
    );
}

fn key(stack: &str, file: &str) -> String {
    format!("cdkd/{stack}/{REGION}/{file}")
}

/// An object of the state bucket as JSON, `None` when it is absent.
async fn object(bucket: &str, key: &str) -> Option<Value> {
    let out = s3_client()
        .await
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .ok()?;
    let bytes = out.body.collect().await.ok()?.into_bytes();
    serde_json::from_slice(&bytes).ok()
}

async fn put_object(bucket: &str, key: &str, value: &Value) {
    s3_client()
        .await
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(value.to_string().into_bytes().into())
        .send()
        .await
        .expect("put object");
}

/// The Cloud Control model of `type_name` named `identifier`, `None` when it does not exist.
async fn cc_model(type_name: &str, identifier: &str) -> Option<Value> {
    let cc = aws_sdk_cloudcontrol::Client::new(&sdk_config().await);
    let out = cc
        .get_resource()
        .type_name(type_name)
        .identifier(identifier)
        .send()
        .await
        .ok()?;
    let props = out.resource_description()?.properties()?;
    serde_json::from_str(props).ok()
}

fn document(name: &str, document_type: &str) -> Value {
    json!({"Type": "AWS::SSM::Document", "Properties": {
        "Name": name,
        "DocumentType": document_type,
        "Content": {"schemaVersion": "2.2", "description": "cdkd deploy_flags",
            "mainSteps": []}
    }})
}

fn run_cdkd(app: &App, args: &[&str]) -> (i32, String) {
    let out = cdkd()
        .current_dir(app.dir.path())
        .args(args)
        .args(["--state-bucket", &app.bucket])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("--- cdkd {args:?}\n{stderr}");
    (out.status.code().unwrap_or(-1), stderr)
}

#[tokio::test]
async fn replace_deletes_the_old_resource_first_when_the_new_one_needs_its_name() {
    let app = App::new("cdkd-flags");
    let stack = unique_name("flags-replace");
    let name = format!("{stack}-doc");
    let v1 = json!({"Resources": {"Doc": document(&name, "Command")}});
    app.write_stacks(&[(&stack, &v1, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let model = cc_model("AWS::SSM::Document", &name)
        .await
        .expect("document");
    assert_eq!(model["DocumentType"], "Command");

    // DocumentType is create-only and the Name stays: the new document cannot be created
    // beside the old one. Without --replace the deploy fails naming the resource and the flag.
    let v2 = json!({"Resources": {"Doc": document(&name, "Automation")}});
    app.write_stacks(&[(&stack, &v2, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("Doc"), "{stderr}");
    assert!(stderr.contains("--replace"), "{stderr}");
    let model = cc_model("AWS::SSM::Document", &name)
        .await
        .expect("old kept");
    assert_eq!(model["DocumentType"], "Command");
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["Doc"]["properties"]["DocumentType"],
        "Command"
    );

    // With --replace the old document is deleted first and the new one created.
    let (code, _, stderr) = app.deploy(&["--replace"]);
    assert_eq!(code, 0, "{stderr}");
    let model = cc_model("AWS::SSM::Document", &name)
        .await
        .expect("new one");
    assert_eq!(model["DocumentType"], "Automation");
    let record = app.record(&stack);
    let doc = &record["resources"]["Doc"];
    assert_eq!(doc["physicalId"], name.as_str());
    assert_eq!(doc["properties"]["DocumentType"], "Automation");
    // A successful deploy leaves no journal.
    assert!(object(&app.bucket, &key(&stack, "rollback-journal.json"))
        .await
        .is_none());
}

#[tokio::test]
async fn a_delete_first_replacement_is_journaled_and_rolled_back_old_one_first() {
    let app = App::new("cdkd-flags");
    let stack = unique_name("flags-replace-rb");
    let name = format!("{stack}-doc");
    let v1 = json!({"Resources": {"Doc": document(&name, "Command")}});
    app.write_stacks(&[(&stack, &v1, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");

    // The replacement goes through with --replace, then a resource after it fails.
    let v2 = json!({"Resources": {
        "Doc": document(&name, "Automation"),
        "Group": {"Type": FAILING_TYPE, "Properties": {"Name": format!("{stack}-group")},
            "DependsOn": ["Doc"]}
    }});
    app.write_stacks(&[(&stack, &v2, &[])]);
    fail_next_group_create("injected by deploy_flags.rs (replace)");
    let (code, _, stderr) = app.deploy(&["--replace", "--no-rollback"]);
    assert_eq!(code, 1, "{stderr}");
    let journal = object(&app.bucket, &key(&stack, "rollback-journal.json"))
        .await
        .expect("journal");
    let ops = journal["segments"][0]["operations"]
        .as_array()
        .expect("operations");
    let doc_op = ops
        .iter()
        .find(|o| o["logicalId"] == "Doc")
        .expect("the replacement is journaled");
    assert_eq!(doc_op["changeType"], "UPDATE");
    assert_eq!(doc_op["oldDeletedBeforeCreate"], true);
    assert_eq!(doc_op["oldResourceRetained"], false);
    let model = cc_model("AWS::SSM::Document", &name)
        .await
        .expect("new one");
    assert_eq!(model["DocumentType"], "Automation");

    // `cdkd rollback` deletes the new document before it creates the old one again (they
    // share the name).
    let (code, stderr) = run_cdkd(&app, &["rollback", &stack, "--app", app_dir(&app)]);
    assert_eq!(code, 0, "{stderr}");
    let model = cc_model("AWS::SSM::Document", &name)
        .await
        .expect("old one");
    assert_eq!(model["DocumentType"], "Command");
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["Doc"]["properties"]["DocumentType"],
        "Command"
    );
    assert!(object(&app.bucket, &key(&stack, "rollback-journal.json"))
        .await
        .is_none());
}

#[tokio::test]
async fn replace_does_not_delete_an_old_resource_its_policy_retains() {
    let app = App::new("cdkd-flags");
    let stack = unique_name("flags-replace-keep");
    let name = format!("{stack}-doc");
    let retained = |document_type: &str| {
        let mut doc = document(&name, document_type);
        doc["UpdateReplacePolicy"] = json!("Retain");
        json!({"Resources": {"Doc": doc}})
    };
    app.write_stacks(&[(&stack, &retained("Command"), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");

    app.write_stacks(&[(&stack, &retained("Automation"), &[])]);
    let (code, _, stderr) = app.deploy(&["--replace"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("UpdateReplacePolicy: Retain"), "{stderr}");
    assert!(!stderr.contains("deleting the old resource"), "{stderr}");
    let model = cc_model("AWS::SSM::Document", &name)
        .await
        .expect("old kept");
    assert_eq!(model["DocumentType"], "Command");
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["Doc"]["properties"]["DocumentType"],
        "Command"
    );
}

#[tokio::test]
async fn a_failed_delete_first_replacement_rolls_back_by_creating_the_old_one_again() {
    // A type only this test creates, so its faults cannot reach another test.
    const GROUP: &str = "AWS::IoT::ThingGroup";
    let app = App::new("cdkd-flags");
    let stack = unique_name("flags-replace-fail");
    let name = format!("{stack}-things");
    let group = |parent: &str| {
        json!({"Resources": {"Things": {"Type": GROUP, "Properties": {
            "ThingGroupName": name, "ParentGroupName": parent}}}})
    };
    app.write_stacks(&[(&stack, &group("parent-a"), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");

    // ParentGroupName is create-only. The service answers both creates that the name is
    // taken: the first sends --replace down the delete-first path, the second fails it after
    // the old group was deleted.
    app.write_stacks(&[(&stack, &group("parent-b"), &[])]);
    add_fault(
        json!({"fail_create": {"TypeName": GROUP, "ErrorCode": "AlreadyExists",
        "StatusMessage": "injected by deploy_flags.rs (taken)", "count": 2}}),
    );
    let (code, _, stderr) = app.deploy(&["--replace"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("deleting the old resource"), "{stderr}");
    assert!(stderr.contains("re-created as it was"), "{stderr}");
    let model = cc_model(GROUP, &name).await.expect("the old group again");
    assert_eq!(model["ParentGroupName"], "parent-a");
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["Things"]["properties"]["ParentGroupName"],
        "parent-a"
    );
    // The settled journal keeps the failed replacement, marked.
    let journal = object(&app.bucket, &key(&stack, "rollback-journal.json"))
        .await
        .expect("journal");
    let failed = &journal["segments"][0]["failedOperations"][0];
    assert_eq!(failed["logicalId"], "Things");
    assert_eq!(failed["oldDeletedBeforeCreate"], true);
}

fn app_dir(app: &App) -> &str {
    app.dir.path().to_str().expect("utf-8 path")
}

#[tokio::test]
async fn strict_getatt_fails_an_output_the_default_skips() {
    let app = App::new("cdkd-flags");
    let stack = unique_name("flags-strict-out");
    let template = json!({
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue",
            "Properties": {"QueueName": format!("{stack}-q")}}},
        "Outputs": {
            "Good": {"Value": {"Ref": "Queue"}},
            "Bad": {"Value": {"Fn::GetAtt": ["Queue", "NoSuchAttribute"]}}
        }
    });
    app.write_stacks(&[(&stack, &template, &[])]);

    // Strict: the deploy fails naming the output, and its first deploy is rolled back.
    let (code, _, stderr) = app.deploy(&["--strict-getatt"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("Outputs.Bad"), "{stderr}");
    assert!(stderr.contains("--strict-getatt"), "{stderr}");
    assert!(object(&app.bucket, &key(&stack, "state.json"))
        .await
        .is_none());

    // Default: the output is skipped with a warning and recorded in skippedOutputs.
    let (code, stdout, stderr) = app.deploy(&["--json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("output Bad skipped"), "{stderr}");
    let record = app.record(&stack);
    assert!(record["outputs"]["Good"].is_string(), "{record}");
    assert!(record["outputs"].get("Bad").is_none(), "{record}");
    assert!(record["skippedOutputs"]["Bad"].is_string(), "{record}");
    assert!(stdout.contains("Good"), "{stdout}");

    // A redeploy of the unchanged stack under --strict-getatt still refuses the output.
    let (code, _, stderr) = app.deploy(&["--strict-getatt"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("Outputs.Bad"), "{stderr}");
}

#[tokio::test]
async fn strict_getatt_fails_a_resource_whose_attribute_the_provider_did_not_report() {
    let app = App::new("cdkd-flags");
    let stack = unique_name("flags-strict-att");
    let param = format!("/{stack}/arn");
    let queue = json!({"Type": "AWS::SQS::Queue",
        "Properties": {"QueueName": format!("{stack}-q")}});
    let v1 = json!({"Resources": {"Queue": queue}});
    app.write_stacks(&[(&stack, &v1, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");

    // The queue's record loses its Arn, as if its provider had not reported it.
    let state_key = key(&stack, "state.json");
    let mut state = object(&app.bucket, &state_key).await.expect("state");
    let arn = state["resources"]["Queue"]["attributes"]["Arn"]
        .as_str()
        .expect("recorded arn")
        .to_owned();
    state["resources"]["Queue"]["attributes"]
        .as_object_mut()
        .expect("attributes")
        .remove("Arn");
    put_object(&app.bucket, &state_key, &state).await;

    // A new parameter reads the attribute.
    let v2 = json!({"Resources": {
        "Queue": queue,
        "Param": {"Type": "AWS::SSM::Parameter", "Properties": {
            "Name": param, "Type": "String", "Value": {"Fn::GetAtt": ["Queue", "Arn"]}}}
    }});
    app.write_stacks(&[(&stack, &v2, &[])]);
    let (code, _, stderr) = app.deploy(&["--strict-getatt"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("Param"), "{stderr}");
    assert!(stderr.contains("Queue.Arn"), "{stderr}");
    assert!(stderr.contains("--strict-getatt"), "{stderr}");

    // Without the flag the attribute is read from AWS and the parameter created.
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    let value = ssm
        .get_parameter()
        .name(&param)
        .send()
        .await
        .expect("parameter")
        .parameter()
        .and_then(|p| p.value())
        .map(str::to_owned);
    assert_eq!(value.as_deref(), Some(arn.as_str()));
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["Queue"]["attributes"]["Arn"],
        arn.as_str()
    );
}

#[tokio::test]
async fn a_rolled_back_first_deploy_destroys_the_nested_child_it_created() {
    let app = App::new("cdkd-flags");
    let stack = unique_name("flags-nested");
    let child_queue = format!("{stack}-child-q");
    let child_file = "child.nested.template.json";
    let child = json!({"Resources": {"Queue": {"Type": "AWS::SQS::Queue",
        "Properties": {"QueueName": child_queue}}},
        "Outputs": {"QueueUrl": {"Value": {"Ref": "Queue"}}}});
    std::fs::write(
        app.dir.path().join(child_file),
        serde_json::to_string_pretty(&child).expect("json"),
    )
    .expect("child template");
    let parent = json!({"Resources": {
        "Child": {"Type": "AWS::CloudFormation::Stack",
            "Properties": {"TemplateURL": "https://example.invalid/child.json"},
            "Metadata": {"aws:asset:path": child_file}},
        "Group": {"Type": FAILING_TYPE, "Properties": {"Name": format!("{stack}-group")},
            "DependsOn": ["Child"]}
    }});
    app.write_stacks(&[(&stack, &parent, &[])]);
    fail_next_group_create("injected by deploy_flags.rs (nested)");
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("rolled back"), "{stderr}");

    // The child's queue is gone from the emulator, and so are both records.
    let sqs = aws_sdk_sqs::Client::new(&sdk_config().await);
    let queues = sqs
        .list_queues()
        .queue_name_prefix(&child_queue)
        .send()
        .await
        .expect("list queues");
    assert!(queues.queue_urls().is_empty(), "{:?}", queues.queue_urls());
    let child_stack = format!("{stack}~Child");
    assert!(object(&app.bucket, &key(&child_stack, "state.json"))
        .await
        .is_none());
    assert!(object(&app.bucket, &key(&stack, "state.json"))
        .await
        .is_none());
}
