//! `cdkd local invoke`: functions of the LambdaLocal fixture (fixtures/apps/lambda-local) run
//! on this machine by cdkd's own Lambda runtime (src/lambda_runtime/), their results on
//! stdout, their logs on stderr; a function error or timeout exits 1.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support;

fn assembly() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/apps/lambda-local/cdk.out")
        .display()
        .to_string()
}

/// `cdkd local invoke TARGET --app <the fixture> EXTRA..` with `stdin`: (code, stdout, stderr).
fn invoke(target: &str, extra: &[&str], stdin: &str) -> (i32, String, String) {
    let out = support::cdkd()
        .args(["local", "invoke", target, "--app", &assembly()])
        .args(extra)
        .write_stdin(stdin)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn result(stdout: &str) -> Value {
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("a JSON result on stdout ({e}): {stdout}"))
}

#[test]
fn a_node_function_returns_its_result_and_logs_with_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let event = dir.path().join("event.json");
    std::fs::write(&event, r#"{"hello": "world"}"#).unwrap();
    let (code, stdout, stderr) = invoke(
        "LambdaLocal/Echo",
        &["--event", event.to_str().unwrap()],
        "",
    );
    assert_eq!(code, 0, "{stderr}");
    let got = result(&stdout);
    assert_eq!(got["event"], json!({"hello": "world"}));
    assert_eq!(got["greeting"], "hello");
    assert_eq!(got["memory"], "128");
    assert_eq!(got["region"], "us-east-1");
    assert_eq!(got["remainingPositive"], true);
    assert!(
        got["functionName"].as_str().is_some_and(|n| !n.is_empty()),
        "{got}"
    );
    // The queue URL is a Ref to a resource that is not deployed: left out, with a warning.
    assert_eq!(got["queueUrl"], Value::Null);
    assert!(stderr.contains("QUEUE_URL"), "{stderr}");
    assert!(
        stderr.contains(r#"echo got {"hello":"world"}"#),
        "stdout of the handler in the logs: {stderr}"
    );
    assert!(stderr.contains("to stderr"), "{stderr}");
    let request_id = got["requestId"].as_str().unwrap();
    assert!(
        stderr.contains(&format!("START RequestId: {request_id}")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("REPORT RequestId: {request_id}")),
        "{stderr}"
    );
}

#[test]
fn callback_style_esm_and_inline_node_handlers_and_the_event_from_stdin() {
    let (code, stdout, stderr) = invoke("LambdaLocal/Callback", &["--event", "-"], r#"{"n": 21}"#);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(result(&stdout), json!({"style": "callback", "n": 42}));

    let (code, stdout, stderr) = invoke("LambdaLocal/Esm", &["--event-stdin"], r#"{"x": 1}"#);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        result(&stdout),
        json!({"module": "esm", "echoed": {"x": 1}})
    );

    // By logical id, without the stack.
    let template: Value = serde_json::from_str(
        &std::fs::read_to_string(PathBuf::from(assembly()).join("LambdaLocal.template.json"))
            .unwrap(),
    )
    .unwrap();
    let inline_id = template["Resources"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, r)| r["Metadata"]["aws:cdk:path"] == "LambdaLocal/Inline/Resource")
        .map(|(id, _)| id.clone())
        .unwrap();
    let (code, stdout, stderr) = invoke(&inline_id, &[], "");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(result(&stdout), json!({"inline": true, "got": {}}));
}

#[test]
fn a_python_function_returns_its_result_and_logs() {
    let (code, stdout, stderr) =
        invoke("LambdaLocal/Python", &["--event", "-"], r#"{"k": [1, 2]}"#);
    assert_eq!(code, 0, "{stderr}");
    let got = result(&stdout);
    assert_eq!(got["event"], json!({"k": [1, 2]}));
    assert_eq!(got["greeting"], "hola");
    assert_eq!(got["remainingPositive"], true);
    assert!(stderr.contains("python got {'k': [1, 2]}"), "{stderr}");
    assert!(stderr.contains("python stderr"), "{stderr}");
    // python3.12 on whatever Python 3 this machine has: said, not hidden.
    assert!(stderr.contains("python3"), "{stderr}");
}

#[test]
fn a_handler_that_throws_exits_1_with_its_error() {
    let (code, stdout, stderr) = invoke("LambdaLocal/Throws", &[], "");
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let error = result(&stdout);
    assert_eq!(error["errorType"], "TypeError");
    assert_eq!(error["errorMessage"], "the handler broke on purpose");
    assert!(stderr.contains("about to throw"), "{stderr}");
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert!(
        last.contains("failed")
            && last.contains("TypeError")
            && last.contains("the handler broke on purpose"),
        "one line naming the error: {stderr}"
    );
}

#[test]
fn a_handler_past_its_timeout_is_stopped_and_reported() {
    let started = Instant::now();
    let (code, stdout, stderr) = invoke("LambdaLocal/Sleeps", &[], "");
    let took = started.elapsed();
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    // The handler sleeps 30 s; its timeout is 1 s.
    assert!(
        took < Duration::from_secs(20),
        "stopped at the timeout, took {took:?}"
    );
    assert!(stderr.contains("sleeping past the timeout"), "{stderr}");
    assert!(
        stderr.contains("Task timed out after 1.00 seconds"),
        "{stderr}"
    );
    assert!(stderr.contains("timed out"), "{stderr}");
    assert_eq!(result(&stdout)["errorType"], "Sandbox.Timedout");
}

#[test]
fn an_unknown_target_names_the_functions_there_are() {
    let (code, _, stderr) = invoke("LambdaLocal/Nope", &[], "");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("LambdaLocal/Nope") && stderr.contains("LambdaLocal/Echo"),
        "{stderr}"
    );
}

#[test]
fn from_state_resolves_the_environment_from_the_deployed_stack() {
    let bucket = support::unique_name("cdkd-local");
    let out = support::cdkd()
        .args(["bootstrap", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Before a deploy: no record to resolve from, said in one line.
    let (code, _, stderr) = invoke(
        "LambdaLocal/Echo",
        &["--from-state", "--state-bucket", &bucket],
        "",
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("no state record for stack LambdaLocal"),
        "{stderr}"
    );

    let out = support::cdkd()
        .args([
            "deploy",
            "LambdaLocal",
            "--app",
            &assembly(),
            "--state-bucket",
            &bucket,
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = support::cdkd()
        .args([
            "state",
            "show",
            "LambdaLocal",
            "--json",
            "--state-bucket",
            &bucket,
        ])
        .output()
        .expect("runs");
    let state: Value = serde_json::from_slice(&out.stdout).expect("state json");
    let resources = state["resources"].as_object().unwrap();
    let (queue_url, echo_name) = (
        resources
            .iter()
            .find(|(_, r)| r["resourceType"] == "AWS::SQS::Queue")
            .unwrap()
            .1["physicalId"]
            .clone(),
        resources
            .iter()
            .find(|(id, r)| id.starts_with("Echo") && r["resourceType"] == "AWS::Lambda::Function")
            .unwrap()
            .1["physicalId"]
            .clone(),
    );

    let (code, stdout, stderr) = invoke(
        "LambdaLocal/Echo",
        &["--from-state", "--state-bucket", &bucket],
        "",
    );
    assert_eq!(code, 0, "{stderr}");
    let got = result(&stdout);
    assert_eq!(
        got["queueUrl"], queue_url,
        "QUEUE_URL is the deployed queue's Ref: {got}"
    );
    assert_eq!(
        got["functionName"], echo_name,
        "the deployed function's name: {got}"
    );
    assert!(
        !stderr.contains("QUEUE_URL"),
        "nothing left unresolved: {stderr}"
    );

    let out = support::cdkd()
        .args([
            "destroy",
            "LambdaLocal",
            "--yes",
            "--app",
            &assembly(),
            "--state-bucket",
            &bucket,
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
