//! `cdkd orphan` and `cdkd state orphan --resource` end to end against the emulator: the
//! orphaned resource stays in AWS and leaves state, the surviving records' references to it
//! are rewritten to their values, and once the app stops declaring it a diff and a deploy see
//! nothing to do. An app that still declares it gets a NEW resource on the next deploy (the
//! ledger's nonce was rotated). A reference with no value is refused without --force, and a
//! damaged record is refused only for the rows that would survive. `cdkd orphan --force` goes
//! past such a reference by construct path too.

use crate::support;

use serde_json::{json, Value};
use support::app::App;
use support::{cdkd, s3_client, sdk_config, unique_name};

const REGION: &str = "us-east-1";

fn stack_name(tag: &str) -> String {
    format!("Orphan{tag}{}", unique_name("s").replace('-', "x"))
}

/// Queue (with its construct path) and two parameters that read it.
fn template(stack: &str) -> Value {
    json!({"Resources": {
        "QueueA1B2": {"Type": "AWS::SQS::Queue",
            "Metadata": {"aws:cdk:path": format!("{stack}/Queue/Resource")}},
        "ParamUrl": {"Type": "AWS::SSM::Parameter",
            "Metadata": {"aws:cdk:path": format!("{stack}/ParamUrl/Resource")},
            "Properties": {"Name": format!("/{stack}/url"), "Type": "String",
                "Value": {"Ref": "QueueA1B2"}}},
        "ParamName": {"Type": "AWS::SSM::Parameter",
            "Metadata": {"aws:cdk:path": format!("{stack}/ParamName/Resource")},
            "Properties": {"Name": format!("/{stack}/name"), "Type": "String",
                "Value": {"Fn::Sub": "name=${QueueA1B2.QueueName}"}}}
    }})
}

/// `cdkd <args> --app DIR --state-bucket B`: (exit code, stderr).
fn run(app: &App, args: &[&str], envs: &[(&str, &str)]) -> (i32, String) {
    let dir = app.dir.path();
    let out = cdkd()
        .current_dir(dir)
        .env("CDKD_PROGRESS", "plain")
        .envs(envs.iter().copied())
        .args(args)
        .args(["--app", dir.to_str().expect("utf-8 path")])
        .args(["--state-bucket", &app.bucket])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("--- cdkd {args:?}\n{stderr}");
    (out.status.code().unwrap_or(-1), stderr)
}

async fn queue_exists(url: &str) -> bool {
    let sqs = aws_sdk_sqs::Client::new(&sdk_config().await);
    sqs.get_queue_attributes()
        .queue_url(url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .is_ok()
}

async fn delete_queue(url: &str) {
    let sqs = aws_sdk_sqs::Client::new(&sdk_config().await);
    let _ = sqs.delete_queue().queue_url(url).send().await;
}

/// The mutating AWS calls a run's trace recorded (state-bucket reads and sidecars aside).
fn mutating_calls(trace: &std::path::Path, bucket: &str) -> Vec<String> {
    std::fs::read_to_string(trace)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "call")
        .filter_map(|e| e["op"].as_str().map(str::to_owned))
        .filter(|op| {
            if op.contains(&format!(" /{bucket}/")) {
                return false; // state bookkeeping, not a resource
            }
            match op.split_once(' ') {
                Some((method, _)) => !matches!(method, "GET" | "HEAD"),
                None => {
                    let action = op.rsplit('.').next().unwrap_or(op);
                    !["Get", "Describe", "List", "Head", "Lookup", "Query", "Scan"]
                        .iter()
                        .any(|p| action.starts_with(p))
                }
            }
        })
        .collect()
}

/// The stack's create-token ledger, when it has one.
async fn ledger(app: &App, stack: &str) -> Option<Value> {
    let out = s3_client()
        .await
        .get_object()
        .bucket(&app.bucket)
        .key(format!("cdkd/{stack}/{REGION}/create-tokens.json"))
        .send()
        .await
        .ok()?;
    let bytes = out.body.collect().await.ok()?.into_bytes();
    serde_json::from_slice(&bytes).ok()
}

async fn put_state(app: &App, stack: &str, body: &Value) {
    s3_client()
        .await
        .put_object()
        .bucket(&app.bucket)
        .key(format!("cdkd/{stack}/{REGION}/state.json"))
        .body(body.to_string().into_bytes().into())
        .send()
        .await
        .expect("put state");
}

#[tokio::test]
async fn orphan_by_construct_path_leaves_the_queue_and_rewrites_its_readers() {
    let app = App::new("cdkd-orphan");
    let stack = stack_name("Path");
    app.write_stacks(&[(&stack, &template(&stack), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let before = app.record(&stack);
    let queue = &before["resources"]["QueueA1B2"];
    let url = queue["physicalId"].as_str().expect("url").to_owned();
    let name = queue["attributes"]["QueueName"]
        .as_str()
        .expect("name")
        .to_owned();
    assert_eq!(
        before["resources"]["ParamUrl"]["dependencies"],
        json!(["QueueA1B2"])
    );

    // A path that names nothing is refused by name.
    let (code, stderr) = run(&app, &["orphan", &format!("{stack}/Nope")], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&format!("'{stack}/Nope'")), "{stderr}");

    // --dry-run reports the rewrites and writes nothing.
    let (code, stderr) = run(
        &app,
        &["orphan", &format!("{stack}/Queue"), "--dry-run"],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("ParamUrl.dependencies"), "{stderr}");
    assert_eq!(app.record(&stack), before, "a dry run changes nothing");

    let ledger_before = ledger(&app, &stack).await;
    let (code, stderr) = run(&app, &["orphan", &format!("{stack}/Queue")], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("Orphaned QueueA1B2"), "{stderr}");
    let before = ledger_before.expect("a deploy that creates writes the ledger");
    let rotated = ledger(&app, &stack).await.expect("ledger kept");
    assert_ne!(rotated["nonce"], before["nonce"], "the nonce is rotated");
    assert!(rotated["sent"].get("QueueA1B2").is_none(), "{rotated}");
    let after = app.record(&stack);
    assert_eq!(after["version"], 11);
    assert!(after["resources"].get("QueueA1B2").is_none(), "{after}");
    for p in ["ParamUrl", "ParamName"] {
        assert_eq!(after["resources"][p]["dependencies"], json!([]), "{p}");
    }
    assert_eq!(
        after["resources"]["ParamUrl"]["properties"]["Value"],
        url.as_str()
    );
    assert_eq!(
        after["resources"]["ParamName"]["properties"]["Value"],
        format!("name={name}")
    );
    assert!(queue_exists(&url).await, "the queue stays in AWS");
    // The app still declares the queue: the diff plans it as a new resource.
    let (code, stderr) = run(&app, &["diff", "--fail"], &[]);
    assert_eq!(code, 1, "the app still declares the queue: {stderr}");

    // The app stops declaring it, its readers holding the values: nothing to do.
    let mut literal = template(&stack);
    let resources = literal["Resources"].as_object_mut().expect("resources");
    resources.shift_remove("QueueA1B2");
    resources["ParamUrl"]["Properties"]["Value"] = json!(url);
    resources["ParamName"]["Properties"]["Value"] = json!(format!("name={name}"));
    app.write_stacks(&[(&stack, &literal, &[])]);
    let (code, stderr) = run(&app, &["diff", "--fail"], &[]);
    assert_eq!(code, 0, "{stderr}");
    let trace = app.dir.path().join("trace.jsonl");
    let (code, _, stderr) =
        app.deploy_env(&[], &[("CDKD_TRACE_FILE", trace.to_str().expect("utf-8"))]);
    assert_eq!(code, 0, "{stderr}");
    let writes = mutating_calls(&trace, &app.bucket);
    assert!(writes.is_empty(), "the deploy sent {writes:?}");
    assert!(queue_exists(&url).await, "still there after the deploy");

    // Declared again, the queue is created anew: the orphan is not taken back.
    app.write_stacks(&[(&stack, &template(&stack), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let again = app.record(&stack);
    let new_url = again["resources"]["QueueA1B2"]["physicalId"]
        .as_str()
        .expect("new queue")
        .to_owned();
    assert_ne!(new_url, url, "a new queue, not the orphan");
    assert_eq!(
        again["resources"]["ParamUrl"]["properties"]["Value"],
        new_url.as_str()
    );
    assert!(queue_exists(&url).await, "the orphan is untouched");

    let (code, stderr) = run(&app, &["destroy", "--all", "--force"], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        queue_exists(&url).await,
        "destroy does not reach the orphan"
    );
    delete_queue(&url).await;
}

#[tokio::test]
async fn state_orphan_refuses_an_unresolvable_reference_unless_forced() {
    let app = App::new("cdkd-sorphan");
    let stack = stack_name("State");
    app.write_stacks(&[(&stack, &template(&stack), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");

    // A record holding references of its own (as a record another writer left, or one a
    // forced orphan kept): one the queue's record can answer, one it cannot.
    let mut seeded = app.record(&stack);
    let arn = seeded["resources"]["QueueA1B2"]["attributes"]["Arn"]
        .as_str()
        .expect("arn")
        .to_owned();
    let url = seeded["resources"]["QueueA1B2"]["physicalId"]
        .as_str()
        .expect("url")
        .to_owned();
    let props = &mut seeded["resources"]["ParamName"]["properties"];
    props["Value"] = json!({"Fn::GetAtt": ["QueueA1B2", "NotRecorded"]});
    props["Description"] = json!({"Fn::Sub": "arn ${QueueA1B2.Arn}"});
    seeded["outputs"] = json!({"QueueUrl": {"Ref": "QueueA1B2"}});
    put_state(&app, &stack, &seeded).await;
    let stored = app.record(&stack);

    let orphan = |extra: &[&str]| {
        let mut args = vec!["state", "orphan", stack.as_str(), "--resource", "QueueA1B2"];
        args.extend_from_slice(extra);
        let out = cdkd()
            .args(&args)
            .args(["--state-bucket", &app.bucket])
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        eprintln!("--- cdkd {args:?}\n{stderr}");
        (out.status.code().unwrap_or(-1), stderr)
    };

    let (code, stderr) = orphan(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("ParamName.properties.Value reads QueueA1B2.NotRecorded"),
        "{stderr}"
    );
    assert!(stderr.contains("--force"), "{stderr}");
    assert_eq!(app.record(&stack), stored, "a refusal writes nothing");

    let (code, stderr) = orphan(&["--force", "--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(app.record(&stack), stored, "a dry run writes nothing");

    let (code, stderr) = orphan(&["--force"]);
    assert_eq!(code, 0, "{stderr}");
    let after = app.record(&stack);
    assert_eq!(after["version"], 11);
    assert!(after["resources"].get("QueueA1B2").is_none());
    let props = &after["resources"]["ParamName"]["properties"];
    assert_eq!(
        props["Value"],
        json!({"Fn::GetAtt": ["QueueA1B2", "NotRecorded"]}),
        "kept as it was"
    );
    assert_eq!(props["Description"], format!("arn {arn}"));
    assert_eq!(after["outputs"]["QueueUrl"], url.as_str());
    assert!(queue_exists(&url).await, "the queue stays in AWS");

    let (code, stderr) = run(&app, &["destroy", "--all", "--force"], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(queue_exists(&url).await);
    delete_queue(&url).await;
}

#[tokio::test]
async fn a_damaged_record_is_refused_only_for_what_would_survive() {
    let app = App::new("cdkd-dorphan");
    let stack = stack_name("Damaged");
    let record = json!({
        "version": 9, "stackName": stack, "region": REGION,
        "resources": {
            "A": {"resourceType": "AWS::SQS::Queue", "physicalId": "https://q/a",
                  "properties": {}, "attributes": {"Arn": "arn:a"}},
            "B": {"resourceType": "AWS::SSM::Parameter", "physicalId": "/b",
                  "properties": "oops"},
            "C": {"resourceType": "AWS::SSM::Parameter", "physicalId": "/c",
                  "properties": {"Value": {"Fn::GetAtt": ["A", "Arn"]}},
                  "dependencies": ["A"]}
        },
        "outputs": {}
    });
    put_state(&app, &stack, &record).await;
    let orphan = |ids: &[&str]| {
        let mut args = vec!["state", "orphan", stack.as_str()];
        for id in ids {
            args.extend(["--resource", id]);
        }
        let out = cdkd()
            .args(&args)
            .args(["--state-bucket", &app.bucket])
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        eprintln!("--- cdkd {args:?}\n{stderr}");
        (out.status.code().unwrap_or(-1), stderr)
    };

    // B would survive with its damage: refused, naming B and the ways out.
    let (code, stderr) = orphan(&["A"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("'B'") || stderr.contains("B ("), "{stderr}");
    assert!(
        stderr.contains(&format!("cdkd state orphan {stack}")),
        "{stderr}"
    );
    assert_eq!(
        app.record(&stack)["resources"]["A"]["physicalId"],
        "https://q/a"
    );

    // Orphaning the damaged row too leaves a healthy record, with C rewritten.
    let (code, stderr) = orphan(&["A", "B"]);
    assert_eq!(code, 0, "{stderr}");
    let after = app.record(&stack);
    assert_eq!(after["version"], 11);
    let rows = after["resources"].as_object().expect("resources");
    assert_eq!(rows.keys().collect::<Vec<_>>(), vec!["C"]);
    assert_eq!(rows["C"]["properties"]["Value"], "arn:a");
    assert_eq!(rows["C"]["dependencies"], json!([]));
}

/// Upstream's `cdkd orphan --force`: by construct path, a reference the orphan's record
/// cannot answer is refused without it and kept as it is with it.
#[tokio::test]
async fn orphan_by_construct_path_goes_past_an_unresolvable_reference_only_with_force() {
    let app = App::new("cdkd-forphan");
    let stack = stack_name("Force");
    app.write_stacks(&[(&stack, &template(&stack), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let mut seeded = app.record(&stack);
    let url = seeded["resources"]["QueueA1B2"]["physicalId"]
        .as_str()
        .expect("url")
        .to_owned();
    seeded["resources"]["ParamName"]["properties"]["Value"] =
        json!({"Fn::GetAtt": ["QueueA1B2", "NotRecorded"]});
    put_state(&app, &stack, &seeded).await;
    let stored = app.record(&stack);
    let path = format!("{stack}/Queue");

    let (code, stderr) = run(&app, &["orphan", &path], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("QueueA1B2.NotRecorded") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(app.record(&stack), stored, "a refusal writes nothing");

    let (code, stderr) = run(&app, &["orphan", &path, "--force"], &[]);
    assert_eq!(code, 0, "{stderr}");
    let after = app.record(&stack);
    assert!(after["resources"].get("QueueA1B2").is_none(), "{after}");
    assert_eq!(
        after["resources"]["ParamName"]["properties"]["Value"],
        json!({"Fn::GetAtt": ["QueueA1B2", "NotRecorded"]}),
        "kept as it was"
    );
    assert_eq!(
        after["resources"]["ParamUrl"]["properties"]["Value"],
        url.as_str()
    );
    assert!(queue_exists(&url).await, "the queue stays in AWS");
    delete_queue(&url).await;
}
