//! `cdkd deploy --resource-timeout / --resource-warn-after` end to end through the binary
//! against the emulator (upstream cdkd's per-resource deadline): a Cloud Control create the
//! emulator keeps IN_PROGRESS, and a custom resource whose handler never answers; the same
//! deadline on `cdkd destroy`.
//!
//! The Cloud Control fault is scoped to `AWS::Glue::Database`, a type only this module creates.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::app::App;
use support::http::http;
use support::{s3_client, unique_name};

/// The type whose create the emulator keeps in progress (no other test module creates one).
const STUCK_TYPE: &str = "AWS::Glue::Database";

fn add_fault(fault: Value) {
    let (status, body) = http("POST", "/_cloudcontrol/faults", &[], &fault.to_string());
    assert_eq!(status, 200, "{body}");
}

fn database(name: &str) -> Value {
    json!({"Type": STUCK_TYPE, "Properties": {
        "CatalogId": {"Ref": "AWS::AccountId"},
        "DatabaseName": name,
        "DatabaseInput": {"Name": name}
    }})
}

/// Keys of the state bucket that hold a custom-resource response placeholder.
async fn placeholders(bucket: &str) -> Vec<String> {
    let out = s3_client()
        .await
        .list_objects_v2()
        .bucket(bucket)
        .prefix("custom-resource-responses/")
        .send()
        .await
        .expect("list");
    out.contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_cloud_control_create_past_resource_timeout_fails_after_one_still_waiting_warning() {
    let app = App::new("cdkd-timeouts");
    let stack = unique_name("timeout-cc");
    let name = stack.to_lowercase().replace('-', "_");
    let template = json!({"Resources": {"Db": database(&name)}});
    app.write_stacks(&[(&stack, &template, &[])]);
    // The create answers IN_PROGRESS for far longer than any deadline here.
    add_fault(json!({"polls": {"polls": 100000, "TypeName": STUCK_TYPE,
        "Operation": "CREATE", "count": 1}}));

    let started = Instant::now();
    let (code, _, stderr) =
        app.deploy(&["--resource-timeout", "4s", "--resource-warn-after", "1s"]);
    let took = started.elapsed();
    assert_eq!(code, 1, "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("Db (AWS::Glue::Database) has been creating for"))
        .collect();
    assert_eq!(warnings.len(), 1, "one still-waiting line: {stderr}");
    assert!(warnings[0].contains("still waiting"), "{stderr}");
    assert!(
        stderr.contains("CREATE in us-east-1 exceeded --resource-timeout 4s"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--resource-timeout AWS::Glue::Database=<duration>"),
        "the remedy names the per-type form: {stderr}"
    );
    // Ended by the deadline, not by Cloud Control's own 30-minute poll limit.
    assert!(took < Duration::from_secs(40), "took {took:?}");
    assert!(took >= Duration::from_secs(4), "took {took:?}");
    // The abandoned create is not in state (the deploy failed and rolled back).
    let out = support::cdkd()
        .args([
            "state",
            "show",
            &stack,
            "--json",
            "--state-bucket",
            &app.bucket,
        ])
        .output()
        .expect("runs");
    if out.status.success() {
        let shown: Value = serde_json::from_slice(&out.stdout).expect("json");
        let state = shown.get("state").unwrap_or(&shown);
        assert!(state["resources"].get("Db").is_none(), "{shown}");
    }

    // A timeout below the 5m warning default lowers the warning, and says so.
    let stack2 = unique_name("timeout-lowered");
    let name2 = stack2.to_lowercase().replace('-', "_");
    app.write_stacks(&[(
        &stack2,
        &json!({"Resources": {"Db": database(&name2)}}),
        &[],
    )]);
    add_fault(json!({"polls": {"polls": 100000, "TypeName": STUCK_TYPE,
        "Operation": "CREATE", "count": 1}}));
    let (code, _, stderr) = app.deploy(&["--resource-timeout", "4s"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("--resource-warn-after defaulted to 2s"),
        "{stderr}"
    );
    assert!(stderr.contains("has been creating for 2s"), "{stderr}");

    // A reversed pair is a usage error before anything runs.
    let (code, _, stderr) =
        app.deploy(&["--resource-timeout", "5s", "--resource-warn-after", "10s"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("--resource-warn-after 10s must be less than --resource-timeout 5s"),
        "{stderr}"
    );
    let (code, _, stderr) = app.deploy(&["--resource-timeout", "AWS::S3=5s"]);
    assert_eq!(code, 1, "a malformed type is a usage error: {stderr}");
    assert!(stderr.contains("AWS::Service::Resource"), "{stderr}");
}

#[tokio::test]
async fn a_custom_resource_keeps_its_response_timeout_unless_its_own_type_is_named() {
    let app = App::new("cdkd-timeouts-cr");
    let stack = unique_name("timeout-cr");
    // A handler topic nobody listens on: the request is delivered and never answered.
    let template = json!({"Resources": {
        "Handler": {"Type": "AWS::SNS::Topic", "Properties": {}},
        "Never": {"Type": "Custom::Never", "Properties": {
            "ServiceToken": {"Ref": "Handler"}}}
    }});
    app.write_stacks(&[(&stack, &template, &[])]);

    // The global timeout does not cut a custom resource short: its handler has the whole
    // response timeout (6 s here), and that is what ends it.
    let started = Instant::now();
    let (code, _, stderr) = app.deploy_env(
        &["--resource-timeout", "2s", "--resource-warn-after", "1s"],
        &[("CDKD_CUSTOM_RESOURCE_TIMEOUT", "6")],
    );
    let took = started.elapsed();
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("Never (Custom::Never) has been creating for 1s: still waiting"),
        "{stderr}"
    );
    assert!(stderr.contains("CDKD_CUSTOM_RESOURCE_TIMEOUT"), "{stderr}");
    assert!(!stderr.contains("exceeded --resource-timeout"), "{stderr}");
    assert!(took >= Duration::from_secs(6), "took {took:?}");

    // Named by type, the deadline ends the wait, and the response placeholder is removed.
    let started = Instant::now();
    let (code, _, stderr) = app.deploy_env(
        &["--resource-timeout", "Custom::Never=2s"],
        &[("CDKD_CUSTOM_RESOURCE_TIMEOUT", "120")],
    );
    let took = started.elapsed();
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("CREATE in us-east-1 exceeded --resource-timeout 2s"),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = placeholders(&app.bucket).await;
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "placeholders left: {left:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The same deadline on `cdkd destroy` (upstream's destroy flags): a Cloud Control delete the
/// emulator keeps IN_PROGRESS ends at `--resource-timeout`, the record keeping the resource
/// (the abandoned delete is still in progress in AWS, which refuses another until it ends).
#[tokio::test]
async fn a_cloud_control_delete_past_resource_timeout_fails_and_keeps_the_record() {
    let app = App::new("cdkd-timeouts-del");
    let stack = unique_name("timeout-del");
    let name = stack.to_lowercase().replace('-', "_");
    app.write_stacks(&[(&stack, &json!({"Resources": {"Db": database(&name)}}), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    add_fault(json!({"polls": {"polls": 100000, "TypeName": STUCK_TYPE,
        "Operation": "DELETE", "count": 1}}));

    let destroy = |extra: &[&str]| {
        let dir = app.dir.path();
        let out = support::cdkd()
            .current_dir(dir)
            .args(["destroy", "--all", "--force"])
            .args(["--app", dir.to_str().expect("utf-8 path")])
            .args(["--state-bucket", &app.bucket])
            .args(extra)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        eprintln!("--- cdkd destroy {extra:?}\n{stderr}");
        (out.status.code().unwrap_or(-1), stderr)
    };
    let started = Instant::now();
    let (code, stderr) = destroy(&["--resource-timeout", "3s", "--resource-warn-after", "1s"]);
    let took = started.elapsed();
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("DELETE in us-east-1 exceeded --resource-timeout 3s"),
        "{stderr}"
    );
    assert!(stderr.contains("has been deleting for"), "{stderr}");
    assert!(took < Duration::from_secs(40), "took {took:?}");
    assert!(
        app.record(&stack)["resources"].get("Db").is_some(),
        "the record keeps what was not deleted"
    );
}
