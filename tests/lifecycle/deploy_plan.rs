//! The deploy's plan end to end through the binary against the emulator: a property whose
//! new expression reads an attribute the state record does not hold is updated (not planned
//! as "no change"), `cdkd diff` reports it before the deploy, and an expression that did not
//! change plans no change even when its attribute is missing from the record; one AWS cannot
//! be asked for is shown as a change known after deploy. A rename that forces replacement
//! three hops deep (the `propagate` fixtures) replaces all three, deleting each old resource
//! only after its readers moved, and with a stateful type on the third hop is refused before
//! anything changes.

use crate::support;

use serde_json::{json, Value};
use support::app::App;
use support::{cdkd, s3_client, sdk_config, unique_name};

const REGION: &str = "us-east-1";

fn state_key(stack: &str) -> String {
    format!("cdkd/{stack}/{REGION}/state.json")
}

async fn object(bucket: &str, key: &str) -> Value {
    let out = s3_client()
        .await
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .expect("get object");
    let bytes = out.body.collect().await.expect("body").into_bytes();
    serde_json::from_slice(&bytes).expect("json")
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

/// Drops `attribute` from `resource`'s record, as a record whose provider did not report it
/// (or another writer's) holds it; returns the value it had.
async fn forget_attribute(app: &App, stack: &str, resource: &str, attribute: &str) -> String {
    let key = state_key(stack);
    let mut state = object(&app.bucket, &key).await;
    let attributes = state["resources"][resource]["attributes"]
        .as_object_mut()
        .expect("attributes");
    let value = attributes
        .remove(attribute)
        .and_then(|v| v.as_str().map(str::to_owned))
        .expect("recorded attribute");
    put_object(&app.bucket, &key, &state).await;
    value
}

/// `cdkd diff --fail`: (exit code, stdout, stderr).
fn diff(app: &App) -> (i32, String, String) {
    diff_with(app, &[])
}

/// `cdkd diff --fail ARGS..`: (exit code, stdout, stderr).
fn diff_with(app: &App, extra: &[&str]) -> (i32, String, String) {
    let dir = app.dir.path();
    let out = cdkd()
        .current_dir(dir)
        .arg("diff")
        .args(["--app", dir.to_str().expect("utf-8 path")])
        .args(["--state-bucket", &app.bucket, "--fail"])
        .args(extra)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("--- cdkd diff\n{stdout}\n{stderr}");
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

/// The parameter's (value, version).
async fn parameter(name: &str) -> (String, i64) {
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    let out = ssm
        .get_parameter()
        .name(name)
        .send()
        .await
        .expect("parameter");
    let p = out.parameter().expect("parameter");
    (p.value().unwrap_or_default().to_owned(), p.version())
}

fn template(stack: &str, param: &str, value: Value) -> Value {
    json!({"Resources": {
        "Queue": {"Type": "AWS::SQS::Queue",
            "Properties": {"QueueName": format!("{stack}-q")}},
        "Param": {"Type": "AWS::SSM::Parameter",
            "Properties": {"Name": param, "Type": "String", "Value": value}}
    }})
}

#[tokio::test]
async fn a_property_changed_to_read_an_unrecorded_attribute_is_updated() {
    let app = App::new("cdkd-plan");
    let stack = unique_name("plan-unrecorded");
    let param = format!("/{stack}/queue");

    // v1: the parameter holds the queue's Ref (its URL).
    let v1 = template(&stack, &param, json!({"Ref": "Queue"}));
    app.write_stacks(&[(&stack, &v1, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let (url, _) = parameter(&param).await;
    assert!(url.contains("://"), "{url}");

    // The queue's record loses its Arn, as if its provider had not reported it.
    let arn = forget_attribute(&app, &stack, "Queue", "Arn").await;

    // v2: the parameter reads the Arn instead. The diff reports the change, with the value
    // read back from AWS.
    let v2 = template(&stack, &param, json!({"Fn::GetAtt": ["Queue", "Arn"]}));
    app.write_stacks(&[(&stack, &v2, &[])]);
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("Param"), "{stdout}");
    assert!(stdout.contains("Value"), "{stdout}");
    assert!(stdout.contains(&arn), "{stdout}");

    // The deploy updates the parameter (not "no change").
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("Arn was not recorded"), "{stderr}");
    let (value, version) = parameter(&param).await;
    assert_eq!(value, arn);
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["Queue"]["attributes"]["Arn"],
        arn.as_str()
    );
    assert_eq!(
        record["resources"]["Param"]["properties"]["Value"],
        arn.as_str()
    );

    // Nothing left to change: the diff is clean.
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(code, 0, "a phantom change:\n{stdout}\n{stderr}");

    // The same expression whose attribute the record lacks again: still no change, for the
    // diff and for the deploy (nothing is sent to SSM), and the attribute is stored again.
    forget_attribute(&app, &stack, "Queue", "Arn").await;
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(code, 0, "a phantom change:\n{stdout}\n{stderr}");
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("updated"), "{stderr}");
    assert_eq!(parameter(&param).await, (arn.clone(), version));
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["Queue"]["attributes"]["Arn"],
        arn.as_str()
    );
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}

#[tokio::test]
async fn an_attribute_aws_cannot_be_asked_for_is_a_change_known_after_deploy() {
    // The SSM provider does not report a parameter's Arn, and reading the parameter back
    // does not find it: the diff cannot resolve the new value, and reports a possible change.
    let app = App::new("cdkd-plan");
    let stack = unique_name("plan-unknown");
    let source = format!("/{stack}/source");
    let reader = format!("/{stack}/reader");
    let stack_template = |value: Value| {
        json!({"Resources": {
            "Source": {"Type": "AWS::SSM::Parameter",
                "Properties": {"Name": source, "Type": "String", "Value": "v"}},
            "Reader": {"Type": "AWS::SSM::Parameter",
                "Properties": {"Name": reader, "Type": "String", "Value": value}}
        }})
    };
    let v1 = stack_template(json!({"Ref": "Source"}));
    app.write_stacks(&[(&stack, &v1, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let record = app.record(&stack);
    assert!(record["resources"]["Source"]["attributes"]
        .get("Arn")
        .is_none());

    let v2 = stack_template(json!({"Fn::GetAtt": ["Source", "Arn"]}));
    app.write_stacks(&[(&stack, &v2, &[])]);
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("Reader"), "{stdout}");
    assert!(stdout.contains("[known after deploy]"), "{stdout}");
    assert!(stdout.contains("Fn::GetAtt"), "{stdout}");
    // v1 again: nothing changed.
    app.write_stacks(&[(&stack, &v1, &[])]);
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}

/// Writes the `propagate` fixture assembly `name` into the app's directory, its resource
/// names made unique with `token`.
fn write_propagate_fixture(app: &App, name: &str, token: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/apps")
        .join(name)
        .join("cdk.out");
    for entry in std::fs::read_dir(dir).expect("read fixture") {
        let entry = entry.expect("entry");
        let text = std::fs::read_to_string(entry.path()).expect("fixture file");
        std::fs::write(
            app.dir.path().join(entry.file_name()),
            text.replace("cdkd-propagate", token),
        )
        .expect("write fixture file");
    }
}

/// The `cdkd diff --json` rows of `stack`: logical id → change.
fn diff_rows(app: &App, stack: &str) -> (i32, Vec<(String, String)>) {
    let (code, stdout, _) = diff_with(app, &["--json", stack]);
    let shown: Value = serde_json::from_str(&stdout).expect("diff json");
    let rows = shown["stacks"][0]["resources"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (s("logicalId"), s("change"))
        })
        .collect();
    (code, rows)
}

const TOPIC: &str = "TopicBFC7AF6E";
const QUEUE: &str = "Queue4A7E3555";
const TAIL: &str = "Tail77A3F68A";
const TABLE: &str = "TableCD117FA1";

fn physical_id(record: &Value, id: &str) -> String {
    record["resources"][id]["physicalId"]
        .as_str()
        .unwrap_or_else(|| panic!("{id} has a physical id: {record}"))
        .to_owned()
}

async fn queue_exists(name: &str) -> bool {
    let sqs = aws_sdk_sqs::Client::new(&sdk_config().await);
    sqs.get_queue_url().queue_name(name).send().await.is_ok()
}

#[tokio::test]
async fn a_replacement_three_hops_deep_replaces_all_three_and_deletes_the_olds_last() {
    let app = App::new("cdkd-plan");
    let token = unique_name("prop");
    write_propagate_fixture(&app, "propagate", &token);
    let (code, _, stderr) = app.deploy(&["PropagateChain"]);
    assert_eq!(code, 0, "{stderr}");
    let before = app.record("PropagateChain");
    assert!(queue_exists(&format!("{token}-a-q1-q2")).await);
    assert_eq!(diff_with(&app, &["PropagateChain"]).0, 0);

    // v2 renames the topic: the diff shows all three replaced, as does the dry run.
    write_propagate_fixture(&app, "propagate-v2", &token);
    let (code, rows) = diff_rows(&app, "PropagateChain");
    assert_eq!(code, 1);
    let replaced = |id: &str| rows.contains(&(id.to_owned(), "REPLACE".to_owned()));
    assert!(
        replaced(TOPIC) && replaced(QUEUE) && replaced(TAIL),
        "{rows:?}"
    );
    let (code, _, stderr) = app.deploy(&["PropagateChain", "--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("3 to replace"), "{stderr}");

    let trace = tempfile::NamedTempFile::new().expect("trace file");
    let trace_path = trace.path().to_str().expect("utf-8 path");
    let (code, _, stderr) = app.deploy_env(&["PropagateChain"], &[("CDKD_TRACE_FILE", trace_path)]);
    assert_eq!(code, 0, "{stderr}");
    let after = app.record("PropagateChain");
    for id in [TOPIC, QUEUE, TAIL] {
        assert_ne!(
            physical_id(&before, id),
            physical_id(&after, id),
            "{id} replaced"
        );
    }
    assert!(physical_id(&after, TAIL).ends_with(&format!("{token}-b-q1-q2")));
    assert_eq!(
        after["outputs"]["TailName"],
        format!("{token}-b-q1-q2").as_str()
    );
    // The old ones are gone from AWS.
    for old in ["a-q1", "a-q1-q2"] {
        assert!(!queue_exists(&format!("{token}-{old}")).await, "{old}");
    }
    let sns = aws_sdk_sns::Client::new(&sdk_config().await);
    let old_topic = physical_id(&before, TOPIC);
    assert!(sns
        .get_topic_attributes()
        .topic_arn(&old_topic)
        .send()
        .await
        .is_err());
    // Each old resource is deleted only after what read it moved: the old queue after the new
    // tail exists, the old topic after the new queue exists.
    let calls: Vec<Value> = std::fs::read_to_string(trace.path())
        .expect("trace")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "call")
        .collect();
    let at = |id: &str, op: &str, field: &str| {
        calls
            .iter()
            .find(|e| e["id"] == id && e["op"].as_str().is_some_and(|o| o.ends_with(op)))
            .and_then(|e| e[field].as_f64())
            .unwrap_or_else(|| panic!("no {op} call for {id}: {calls:?}"))
    };
    assert!(at(QUEUE, "DeleteQueue", "startMs") >= at(TAIL, "CreateQueue", "endMs"));
    assert!(at(TOPIC, "DeleteTopic", "startMs") >= at(QUEUE, "CreateQueue", "endMs"));
    assert!(at(TAIL, "DeleteQueue", "startMs") >= at(TAIL, "CreateQueue", "endMs"));

    // Nothing left to change.
    let (code, stdout, stderr) = diff_with(&app, &["PropagateChain"]);
    assert_eq!(code, 0, "a phantom change:\n{stdout}\n{stderr}");
}

#[tokio::test]
async fn a_stateful_replacement_three_hops_deep_is_refused_before_any_change() {
    let app = App::new("cdkd-plan");
    let token = unique_name("prop");
    write_propagate_fixture(&app, "propagate", &token);
    let (code, _, stderr) = app.deploy(&["PropagateStateful"]);
    assert_eq!(code, 0, "{stderr}");
    let before = app.record("PropagateStateful");
    let old_table = format!("{token}-s-a-q1-t");
    assert_eq!(physical_id(&before, TABLE), old_table);

    write_propagate_fixture(&app, "propagate-v2", &token);
    // The diff shows the table replaced and the refusal the deploy would hit (exit 3).
    let (code, rows) = diff_rows(&app, "PropagateStateful");
    assert_eq!(code, 3, "{rows:?}");
    assert!(
        rows.contains(&(TABLE.to_owned(), "REPLACE".to_owned())),
        "{rows:?}"
    );

    let (code, _, stderr) = app.deploy(&["PropagateStateful"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("STATEFUL_REPLACE_BLOCKED") && stderr.contains(TABLE),
        "{stderr}"
    );
    // Nothing changed: the same record, no new topic or queue, the old ones still there.
    let unchanged = app.record("PropagateStateful");
    for id in [TOPIC, QUEUE, TABLE] {
        assert_eq!(
            physical_id(&before, id),
            physical_id(&unchanged, id),
            "{id}"
        );
    }
    assert!(!queue_exists(&format!("{token}-s-b-q1")).await);
    assert!(queue_exists(&format!("{token}-s-a-q1")).await);
    let dynamodb = aws_sdk_dynamodb::Client::new(&sdk_config().await);
    let table_exists = |name: String| {
        let dynamodb = dynamodb.clone();
        async move {
            dynamodb
                .describe_table()
                .table_name(name)
                .send()
                .await
                .is_ok()
        }
    };
    assert!(table_exists(old_table.clone()).await);

    // With the flag it goes through, and the old table is deleted after the new one exists.
    let (code, _, stderr) = app.deploy(&["PropagateStateful", "--force-stateful-recreation"]);
    assert_eq!(code, 0, "{stderr}");
    let after = app.record("PropagateStateful");
    assert_eq!(physical_id(&after, TABLE), format!("{token}-s-b-q1-t"));
    assert!(table_exists(format!("{token}-s-b-q1-t")).await);
    assert!(!table_exists(old_table).await);
    assert!(!queue_exists(&format!("{token}-s-a-q1")).await);
    let (code, stdout, stderr) = diff_with(&app, &["PropagateStateful"]);
    assert_eq!(code, 0, "a phantom change:\n{stdout}\n{stderr}");
}

/// A NoEcho value under a create-only property AWS reports exactly (an IAM role's Path): the
/// create reads it back once and records the position in `noEchoExactEchoLeaves`, so a new
/// value behind the same template replaces the role instead of only warning.
#[tokio::test]
async fn a_no_echo_create_only_value_aws_reports_exactly_is_replaced_when_it_changes() {
    let app = App::new("cdkd-exact-echo");
    let stack = format!("Exact{}", unique_name("echo").replace('-', "x"));
    let template = json!({
        "Parameters": {"TeamPath": {"Type": "String", "NoEcho": true}},
        "Resources": {
            "Role": {"Type": "AWS::IAM::Role", "Properties": {
                "Path": {"Ref": "TeamPath"},
                "AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": [{
                    "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"},
                    "Action": "sts:AssumeRole"}]}}}
        }
    });
    app.write_stacks(&[(&stack, &template, &[])]);
    let first = format!("/{}/", unique_name("teamone"));
    let (code, _, stderr) = app.deploy(&["--parameters", &format!("TeamPath={first}")]);
    assert_eq!(code, 0, "{stderr}");
    let record = app.record(&stack);
    let role = &record["resources"]["Role"];
    assert_eq!(role["properties"]["Path"], json!("***"));
    assert_eq!(role["noEchoLeaves"], json!([["Path"]]));
    assert_eq!(role["noEchoExactEchoLeaves"], json!([["Path"]]));
    let old_id = role["physicalId"].clone();

    // The same value: nothing to do.
    let (code, _, stderr) = app.deploy(&["--parameters", &format!("TeamPath={first}")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.to_lowercase().contains("no changes"), "{stderr}");

    // A new value: read back, found different, replaced.
    let second = format!("/{}/", unique_name("teamtwo"));
    let (code, stdout, stderr) = app.deploy(&["--parameters", &format!("TeamPath={second}")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains(&second) && !stderr.contains(&second));
    let record = app.record(&stack);
    let role = &record["resources"]["Role"];
    assert_ne!(role["physicalId"], old_id, "replaced: {stderr}");
    assert_eq!(role["properties"]["Path"], json!("***"));
    let iam = aws_sdk_iam::Client::new(&sdk_config().await);
    let name = role["physicalId"].as_str().expect("role name");
    let got = iam
        .get_role()
        .role_name(name)
        .send()
        .await
        .expect("GetRole");
    assert_eq!(got.role.map(|r| r.path).unwrap_or_default(), second);
    for (key, body) in app.every_object_version().await {
        assert!(!body.contains(&first) && !body.contains(&second), "{key}");
    }
}

#[tokio::test]
async fn a_property_or_key_removed_from_the_template_is_a_change_that_reaches_aws() {
    // The record holds what cdkd sent, so a property (or a nested key) only the record still
    // holds is a removal the user made: the diff shows it, the deploy unsets it in AWS, and
    // the diff afterwards is clean.
    let app = App::new("cdkd-plan");
    let stack = unique_name("plan-removed");
    let queue_name = format!("{stack}-q");
    let bucket_template = |lifecycle: bool, tags: Value| {
        let mut bucket = json!({"Type": "AWS::S3::Bucket", "Properties": {"Tags": tags}});
        if lifecycle {
            bucket["Properties"]["LifecycleConfiguration"] = json!({"Rules": [
                {"Id": "expire", "Status": "Enabled", "ExpirationInDays": 30}
            ]});
        }
        json!({"Resources": {
            "Bucket": bucket,
            "Queue": {"Type": "AWS::SQS::Queue",
                "Properties": {"QueueName": queue_name, "DelaySeconds": 5}}
        }})
    };
    let v1 = bucket_template(
        true,
        json!([{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]),
    );
    app.write_stacks(&[(&stack, &v1, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let bucket = app.record(&stack)["resources"]["Bucket"]["physicalId"]
        .as_str()
        .expect("bucket name")
        .to_owned();
    let s3 = s3_client().await;
    let rules = s3
        .get_bucket_lifecycle_configuration()
        .bucket(&bucket)
        .send()
        .await
        .expect("lifecycle after v1");
    assert_eq!(rules.rules().len(), 1);

    // v2: the lifecycle configuration and the queue's DelaySeconds are gone, a tag too.
    let mut v2 = bucket_template(false, json!([{"Key": "a", "Value": "1"}]));
    v2["Resources"]["Queue"]["Properties"]
        .as_object_mut()
        .expect("queue properties")
        .remove("DelaySeconds");
    app.write_stacks(&[(&stack, &v2, &[])]);
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(code, 1, "removals are changes:\n{stdout}\n{stderr}");
    assert!(stdout.contains("LifecycleConfiguration"), "{stdout}");
    assert!(stdout.contains("DelaySeconds"), "{stdout}");

    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !stderr.contains("no changes"),
        "the removal deploy changed nothing:\n{stderr}"
    );
    let gone = s3
        .get_bucket_lifecycle_configuration()
        .bucket(&bucket)
        .send()
        .await;
    assert!(
        gone.is_err(),
        "the lifecycle configuration is still on {bucket}: {gone:?}"
    );
    let tags = s3
        .get_bucket_tagging()
        .bucket(&bucket)
        .send()
        .await
        .expect("tags");
    let keys: Vec<&str> = tags.tag_set().iter().map(|t| t.key()).collect();
    assert!(!keys.contains(&"b"), "tag b survived: {keys:?}");
    let sqs = aws_sdk_sqs::Client::new(&sdk_config().await);
    let url = sqs
        .get_queue_url()
        .queue_name(&queue_name)
        .send()
        .await
        .expect("queue url");
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(url.queue_url().unwrap_or_default())
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::DelaySeconds)
        .send()
        .await
        .expect("queue attributes");
    let delay = attrs
        .attributes()
        .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::DelaySeconds))
        .cloned();
    assert_eq!(
        delay.as_deref(),
        Some("0"),
        "DelaySeconds back to its default"
    );
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(
        code, 0,
        "a phantom change after the removal:\n{stdout}\n{stderr}"
    );
}
