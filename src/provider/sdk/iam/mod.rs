//! IAM: roles, inline policies (`AWS::IAM::Policy`), managed policies, instance profiles and
//! access keys.
//!
//! IAM is global, but the client is still built for the stack's region so that endpoint
//! overrides and FIPS/partition settings apply the same way as for every other service.
//!
//! The helpers at the bottom (error wrapping, bounded retry, replacement checks, document
//! decoding) are shared with the S3 providers.

mod access_key;
mod instance_profile;
mod managed_policy;
mod policy;
mod role;

pub use access_key::AccessKeyProvider;
pub use instance_profile::InstanceProfileProvider;
pub use managed_policy::ManagedPolicyProvider;
pub use policy::PolicyProvider;
pub use role::RoleProvider;

use std::future::Future;
use std::time::Duration;

use aws_sdk_iam::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::http::Response as HttpResponse;
use serde_json::{Map, Value};

use crate::aws::{classify, error_code, AwsError, ErrorKind};
use crate::provider::{props, schema, ProviderContext, ProviderError, ResourceRequest};

/// A failed SDK call as every AWS SDK for Rust client reports it.
pub(super) type Sdk<E> = SdkError<E, HttpResponse>;

pub(super) fn client(ctx: &ProviderContext<'_>) -> aws_sdk_iam::Client {
    ctx.clients
        .cached(Some(ctx.region), aws_sdk_iam::Client::new)
}

pub(super) use super::is_not_found;

/// One-line provider error naming the resource, the call, its target and AWS's message.
pub(super) fn aws_error<E>(
    req: &ResourceRequest<'_>,
    service: &'static str,
    operation: &'static str,
    target: impl Into<String>,
    err: &Sdk<E>,
) -> ProviderError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    ProviderError::aws(req, AwsError::call(service, operation, target, err))
}

const RETRY_ATTEMPTS: u32 = 9;
const RETRY_FIRST_DELAY: Duration = Duration::from_millis(200);
const RETRY_MAX_DELAY: Duration = Duration::from_secs(4);

/// Runs `op` again, with exponential backoff and a bounded number of attempts, while it fails
/// with a transient error: throttling, a concurrent modification of the same entity, or a
/// conflicting S3 operation still in progress.
pub(super) async fn with_retry<T, E, F, Fut>(op: F) -> Result<T, Sdk<E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Sdk<E>>>,
    E: ProvideErrorMetadata,
{
    with_retry_when(op, |_| false).await
}

/// [`with_retry`], also retrying the errors `also` accepts (eventual consistency: a principal
/// created a moment ago that IAM or S3 does not know yet).
pub(super) async fn with_retry_when<T, E, F, Fut>(
    mut op: F,
    also: impl Fn(&Sdk<E>) -> bool,
) -> Result<T, Sdk<E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Sdk<E>>>,
    E: ProvideErrorMetadata,
{
    let mut delay = RETRY_FIRST_DELAY;
    let mut attempt = 1;
    loop {
        match op().await {
            Err(err) if attempt < RETRY_ATTEMPTS && (is_transient(&err) || also(&err)) => {
                tracing::debug!(
                    "retrying in {delay:?} after {}",
                    error_code(&err).unwrap_or("a transient error")
                );
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(RETRY_MAX_DELAY);
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// A policy naming a principal that does not exist yet: IAM and S3 reject it as malformed
/// until the new principal has propagated.
pub(super) fn invalid_principal<E: ProvideErrorMetadata>(err: &Sdk<E>) -> bool {
    let code = error_code(err).unwrap_or_default();
    let message = match err {
        SdkError::ServiceError(e) => e.err().message().unwrap_or_default(),
        _ => "",
    };
    matches!(code, "MalformedPolicyDocument" | "MalformedPolicy")
        && message.to_ascii_lowercase().contains("invalid principal")
}

fn is_transient<E: ProvideErrorMetadata>(err: &Sdk<E>) -> bool {
    matches!(
        classify(err),
        ErrorKind::Throttled | ErrorKind::ServiceUnavailable
    ) || matches!(
        error_code(err),
        Some(
            "ConcurrentModification"
                | "ConcurrentModificationException"
                | "OperationAborted"
                | "ServiceFailure"
                | "InternalError"
        )
    )
}

/// The reason an update cannot be made in place: the first changed property the registry
/// schema marks create-only.
pub(super) fn replacement_reason(
    resource_type: &str,
    previous: &Map<String, Value>,
    desired: &Map<String, Value>,
) -> Option<String> {
    props::changed_properties(previous, desired)
        .into_iter()
        .find(|name| schema::is_create_only(resource_type, name))
        .map(|name| format!("{name} changed, and {resource_type} cannot change it in place"))
}

/// The same request carrying other (previous) properties, to read them with [`props::Props`].
pub(super) fn with_properties<'a>(
    req: &ResourceRequest<'a>,
    properties: &'a Map<String, Value>,
) -> ResourceRequest<'a> {
    ResourceRequest {
        properties,
        ..req.clone()
    }
}

/// A policy document as IAM returns it (URL-encoded JSON) turned back into JSON. A document
/// that is not JSON after decoding is returned as a string.
pub(super) fn decode_document(raw: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(raw) {
        return v;
    }
    let decoded = percent_decode(raw);
    serde_json::from_str(&decoded).unwrap_or(Value::String(decoded))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok());
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Tag changes: the keys to remove and the tags to set (new or with a new value).
pub(super) fn tag_changes(
    previous: &[(String, String)],
    desired: &[(String, String)],
) -> (Vec<String>, Vec<(String, String)>) {
    let remove = previous
        .iter()
        .filter(|(k, _)| !desired.iter().any(|(dk, _)| dk == k))
        .map(|(k, _)| k.clone())
        .collect();
    let set = desired
        .iter()
        .filter(|t| !previous.contains(t))
        .cloned()
        .collect();
    (remove, set)
}

/// The items of `to` that `from` lacks, in `to`'s order.
pub(super) fn missing_from<'a>(from: &[String], to: &'a [String]) -> Vec<&'a String> {
    let mut out: Vec<&String> = Vec::new();
    for item in to {
        if !from.contains(item) && !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// CloudFormation `Tags` from key/value pairs.
pub(super) fn tags_value(tags: impl IntoIterator<Item = (String, String)>) -> Value {
    Value::Array(
        tags.into_iter()
            .map(|(k, v)| serde_json::json!({"Key": k, "Value": v}))
            .collect(),
    )
}

/// A list of strings as a JSON array.
pub(super) fn strings_value<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> Value {
    Value::Array(
        items
            .into_iter()
            .map(|s| Value::String(s.as_ref().to_owned()))
            .collect(),
    )
}

/// An IAM timestamp as CloudFormation reports it (ISO 8601).
pub(super) fn timestamp(t: Option<&aws_smithy_types::DateTime>) -> Value {
    t.and_then(|t| t.fmt(aws_smithy_types::date_time::Format::DateTime).ok())
        .map(Value::String)
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_are_decoded() {
        let doc = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]});
        assert_eq!(decode_document(&doc.to_string()), doc);
        let encoded = "%7B%22Version%22%3A%222012-10-17%22%2C%22Statement%22%3A%5B%5D%7D";
        assert_eq!(
            decode_document(encoded),
            json!({"Version": "2012-10-17", "Statement": []})
        );
        assert_eq!(decode_document("100%"), json!("100%"));
    }

    #[test]
    fn tag_and_list_diffs() {
        let t = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let (remove, set) = tag_changes(&[t("a", "1"), t("b", "2")], &[t("b", "3"), t("c", "4")]);
        assert_eq!(remove, ["a"]);
        assert_eq!(set, [t("b", "3"), t("c", "4")]);
        let from = vec!["x".to_owned(), "y".to_owned()];
        let to = vec!["y".to_owned(), "z".to_owned(), "z".to_owned()];
        assert_eq!(missing_from(&from, &to), [&"z".to_owned()]);
    }

    #[test]
    fn create_only_changes_need_replacement() {
        let a = json!({"RoleName": "a", "Description": "x"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let b = json!({"RoleName": "b", "Description": "x"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let c = json!({"RoleName": "a", "Description": "y"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(
            replacement_reason("AWS::IAM::Role", &a, &b).is_some_and(|r| r.contains("RoleName"))
        );
        assert_eq!(replacement_reason("AWS::IAM::Role", &a, &c), None);
    }
}
