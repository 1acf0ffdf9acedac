//! What the emulator recorded of the Lambda invocations a test caused. The emulator runs a
//! Node.js / Python function's code with cdkd's local runtime (scripts/lambda-invocations.md),
//! so every custom-resource test deploys a real handler that answers by itself (the CDK's own
//! handlers in lifecycle::custom_resources, small Python ones elsewhere); the record of each
//! invocation (GET /_lambda/invocations) is how a test sees the envelope cdkd sent.

use serde_json::Value;

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
