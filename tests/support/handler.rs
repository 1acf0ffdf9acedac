//! Playing a custom resource's handler by hand, for the tests whose point is cdkd's side of
//! the exchange under answers a real handler would rarely give (FAILED with a reason, NoEcho
//! Data, a new physical id on Update, no answer at all). The emulator runs a Node.js / Python
//! function's code (scripts/lambda-invocations.md), so these tests deploy a handler that runs
//! and returns without answering (`pass`); the emulator records each invocation
//! (GET /_lambda/invocations) and a test reads the envelope and PUTs the cfn-response to its
//! presigned ResponseURL. Tests of the ordinary round trip use a handler that answers by
//! itself instead (provider_custom's ANSWERING_HANDLER, the CDK's own handlers in
//! lifecycle::custom_resources).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::http::http;

/// The invocations the emulator recorded for `function`, oldest first.
pub fn invocations(function: &str) -> Vec<Value> {
    let (status, body) = http(
        "GET",
        &format!("/_lambda/invocations?function={function}"),
        &[],
        "",
    );
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect("a JSON array")
}

/// PUTs `response` to the envelope's ResponseURL, as a handler's cfn-response does.
pub fn respond(envelope: &Value, response: &Value) {
    let url = envelope["ResponseURL"].as_str().expect("ResponseURL");
    let endpoint = std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL");
    let rest = url
        .strip_prefix(endpoint.trim_end_matches('/'))
        .unwrap_or_else(|| panic!("{url} is not on the emulator {endpoint}"));
    assert!(rest.contains("X-Amz-Signature="), "a presigned URL: {url}");
    let body = response.to_string();
    let (status, text) = http("PUT", rest, &[("Content-Type", "")], &body);
    assert_eq!(status, 200, "PUT to the ResponseURL: {text}");
}

/// A cfn-response answering `envelope`.
pub fn success(envelope: &Value, physical_id: &str, data: Value) -> Value {
    json!({
        "Status": "SUCCESS",
        "PhysicalResourceId": physical_id,
        "StackId": envelope["StackId"],
        "RequestId": envelope["RequestId"],
        "LogicalResourceId": envelope["LogicalResourceId"],
        "Data": data,
    })
}

/// Plays the handler in a thread: waits for invocation number `index` of `function`, answers
/// it with `answer` (nothing when it returns `None`) and hands back the envelope.
pub fn play(
    function: &str,
    index: usize,
    answer: impl Fn(&Value) -> Option<Value> + Send + 'static,
) -> std::thread::JoinHandle<Value> {
    let function = function.to_owned();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let all = invocations(&function);
            if let Some(inv) = all.get(index) {
                let envelope = inv["payload"].clone();
                if let Some(response) = answer(&envelope) {
                    respond(&envelope, &response);
                }
                return envelope;
            }
            assert!(
                Instant::now() < deadline,
                "no invocation {index} of {function}"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    })
}
