//! AWS Lambda: functions, permissions, function URLs, versions, aliases and event source
//! mappings, each with its own provider.
//!
//! | type | physical id (= `Ref`) | `Fn::GetAtt` |
//! | --- | --- | --- |
//! | `AWS::Lambda::Function` | function name | `Arn`, `SnapStartResponse.ApplyOn`, `SnapStartResponse.OptimizationStatus` |
//! | `AWS::Lambda::Permission` | statement id | `Id` |
//! | `AWS::Lambda::Url` | function ARN (qualified when the URL is) | `FunctionArn`, `FunctionUrl` |
//! | `AWS::Lambda::Version` | version ARN | `FunctionArn`, `Version` |
//! | `AWS::Lambda::Alias` | alias ARN | `AliasArn` |
//! | `AWS::Lambda::EventSourceMapping` | mapping UUID | `Id`, `EventSourceMappingArn` |
//! | `AWS::Lambda::LayerVersion` | layer version ARN | `LayerVersionArn` |
//! | `AWS::Lambda::LayerVersionPermission` | `<LayerVersionArn>#<statement id>` | `Id` |
//!
//! Shared here: the client, error wrapping, bounded backoff, reading nested CloudFormation
//! objects, tag diffs and Lambda ARN parsing.

mod alias;
mod code;
mod config;
mod event_source_mapping;
mod function;
mod layer;
mod mapping_fields;
mod permission;
mod url;
mod version;

pub use alias::AliasProvider;
pub use event_source_mapping::EventSourceMappingProvider;
pub use function::FunctionProvider;
pub use layer::LayerProvider;
pub use permission::PermissionProvider;
pub use url::UrlProvider;
pub use version::VersionProvider;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use aws_sdk_lambda::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_lambda::Client;
use aws_smithy_runtime_api::http::Response as HttpResponse;
use serde_json::{Map, Value};

use super::is_not_found;
use crate::aws::error_code;
use crate::provider::sdk::scaffold::Service;
use crate::provider::{ProviderContext, ProviderError, ResourceRequest};

fn client(ctx: &ProviderContext<'_>) -> Client {
    ctx.clients.cached(Some(ctx.region), Client::new)
}

/// Every failed call's typed error (`scaffold::Service`).
pub(super) const API: Service = Service("lambda");

/// The service's message for a failed call, empty when it sent none.
fn error_message<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> &str {
    err.as_service_error()
        .and_then(|e| e.message())
        .unwrap_or("")
}

/// Lambda refuses a change while another one is still being applied
/// (`ResourceConflictException`: "An update is in progress").
fn is_update_in_progress<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> bool {
    matches!(
        error_code(err),
        Some("ResourceConflictException" | "ResourceInUseException")
    ) && !error_message(err).contains("already exist")
}

/// Whether a failure is IAM's eventual consistency: a role Lambda cannot assume yet, or one
/// whose freshly attached policies have not reached Lambda (a DLQ, VPC or event source the
/// role is "not permitted" to use).
fn is_role_propagation<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> bool {
    if error_code(err) != Some("InvalidParameterValueException") {
        return false;
    }
    let message = error_message(err).to_ascii_lowercase();
    message.contains("cannot be assumed by lambda")
        || message.contains("does not have permissions to call")
}

fn is_conflict_or_role_propagation<E: ProvideErrorMetadata>(
    err: &SdkError<E, HttpResponse>,
) -> bool {
    is_update_in_progress(err) || is_role_propagation(err)
}

/// Bounded exponential backoff: 0.5 s doubling to 8 s between tries, until `budget` is spent.
struct Backoff {
    deadline: Instant,
    next: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(500);
    const MAX: Duration = Duration::from_secs(8);

    fn new(budget: Duration) -> Self {
        Backoff {
            deadline: Instant::now() + budget,
            next: Self::FIRST,
        }
    }

    /// Sleeps before the next try; false (without sleeping) once the budget is spent.
    async fn wait(&mut self) -> bool {
        let now = Instant::now();
        if now >= self.deadline {
            return false;
        }
        let delay = self.next.min(self.deadline - now);
        tokio::time::sleep(delay).await;
        self.next = (self.next * 2).min(Self::MAX);
        true
    }
}

/// How long a call is retried while a new IAM role (or its policies) propagates to Lambda.
const IAM_PROPAGATION_BUDGET: Duration = Duration::from_secs(90);
/// How long a call is retried while Lambda finishes a previous change.
const CONFLICT_BUDGET: Duration = Duration::from_secs(300);

/// Sends a request, retrying with bounded backoff while `retryable` says the failure is
/// transient (eventual consistency, an update still in progress).
macro_rules! send_with_retry {
    ($builder:expr, $budget:expr, $retryable:expr) => {{
        let builder = $builder;
        let mut backoff = $crate::provider::sdk::lambda::Backoff::new($budget);
        loop {
            match builder.clone().send().await {
                Err(e) if ($retryable)(&e) && backoff.wait().await => continue,
                other => break other,
            }
        }
    }};
}
use send_with_retry;

/// A nested CloudFormation object, read with errors that name the resource and the path.
#[derive(Clone)]
struct Obj<'a> {
    req: &'a ResourceRequest<'a>,
    /// Where the object sits (`VpcConfig`, `DestinationConfig.OnFailure`), for messages.
    path: String,
    map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    fn root(req: &'a ResourceRequest<'a>) -> Self {
        Obj {
            req,
            path: String::new(),
            map: req.properties,
        }
    }

    fn name(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn wrong(&self, key: &str, expected: &str) -> ProviderError {
        ProviderError::failed(
            self.req,
            format!("property {} must be {expected}", self.name(key)),
        )
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn str(&self, key: &str) -> Result<Option<String>, ProviderError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => scalar_string(v)
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a string")),
        }
    }

    fn required_str(&self, key: &str) -> Result<String, ProviderError> {
        self.str(key)?
            .ok_or_else(|| ProviderError::missing(self.req, &self.name(key)))
    }

    fn i32(&self, key: &str) -> Result<Option<i32>, ProviderError> {
        let parsed = match self.get(key) {
            None => return Ok(None),
            Some(Value::Number(n)) => n.as_i64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            Some(_) => None,
        };
        parsed
            .and_then(|n| i32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| self.wrong(key, "an integer"))
    }

    fn f64(&self, key: &str) -> Result<Option<f64>, ProviderError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a number")),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| self.wrong(key, "a number")),
            Some(_) => Err(self.wrong(key, "a number")),
        }
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, ProviderError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(_) => Err(self.wrong(key, "a boolean")),
        }
    }

    /// A list of strings; `None` when absent (an empty list stays distinguishable).
    fn strings(&self, key: &str) -> Result<Option<Vec<String>>, ProviderError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| scalar_string(v).ok_or_else(|| self.wrong(key, "a list of strings")))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(self.wrong(key, "a list of strings")),
        }
    }

    fn object(&self, key: &str) -> Result<Option<Obj<'a>>, ProviderError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(self.child(key, map))),
            Some(_) => Err(self.wrong(key, "an object")),
        }
    }

    /// A list of objects (empty when absent).
    fn objects(&self, key: &str) -> Result<Vec<Obj<'a>>, ProviderError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::Object(map) => Ok(self.child(key, map)),
                    _ => Err(self.wrong(key, "a list of objects")),
                })
                .collect(),
            Some(_) => Err(self.wrong(key, "a list of objects")),
        }
    }

    /// A JSON document given as an object or as serialized text, serialized.
    fn json_text(&self, key: &str) -> Result<Option<String>, ProviderError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v @ (Value::Object(_) | Value::Array(_))) => Ok(Some(v.to_string())),
            Some(_) => Err(self.wrong(key, "a JSON document")),
        }
    }

    /// A string-to-string map (environment variables); scalar values are stringified.
    fn string_map(&self, key: &str) -> Result<Option<HashMap<String, String>>, ProviderError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| match v {
                    Value::Null => Ok((k.clone(), String::new())),
                    other => scalar_string(other)
                        .map(|s| (k.clone(), s))
                        .ok_or_else(|| self.wrong(key, "a map of strings")),
                })
                .collect::<Result<HashMap<_, _>, _>>()
                .map(Some),
            Some(_) => Err(self.wrong(key, "a map of strings")),
        }
    }

    fn child(&self, key: &str, map: &'a Map<String, Value>) -> Obj<'a> {
        Obj {
            req: self.req,
            path: self.name(key),
            map,
        }
    }
}

/// Strings, numbers and booleans as CloudFormation passes them to string-typed fields.
fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The template's `Tags` as a map.
fn tag_map(req: &ResourceRequest<'_>) -> Result<HashMap<String, String>, ProviderError> {
    Ok(crate::provider::props::Props::new(req)
        .tags()?
        .into_iter()
        .collect())
}

/// Tags to set and tag keys to remove to go from `current` to `desired`. Keys under the
/// reserved `aws:` prefix are never touched.
fn tag_changes(
    current: &HashMap<String, String>,
    desired: &HashMap<String, String>,
) -> (HashMap<String, String>, Vec<String>) {
    let set: HashMap<String, String> = desired
        .iter()
        .filter(|(k, v)| current.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut remove: Vec<String> = current
        .keys()
        .filter(|k| !desired.contains_key(*k) && !k.starts_with("aws:"))
        .cloned()
        .collect();
    remove.sort();
    (set, remove)
}

/// Tags as CloudFormation lists them: `[{Key, Value}]` sorted by key, reserved ones left out.
fn tags_value(tags: &HashMap<String, String>) -> Option<Value> {
    let sorted: BTreeMap<&String, &String> = tags
        .iter()
        .filter(|(k, _)| !k.starts_with("aws:"))
        .collect();
    if sorted.is_empty() {
        return None;
    }
    Some(Value::Array(
        sorted
            .into_iter()
            .map(|(k, v)| serde_json::json!({"Key": k, "Value": v}))
            .collect(),
    ))
}

/// A Lambda function reference split into the bare function name and its qualifier
/// (version or alias): accepts a name, `name:qualifier`, a partial ARN
/// (`123456789012:function:name[:q]`) or a full ARN.
fn split_function_ref(reference: &str) -> (String, Option<String>) {
    let rest = match reference.find(":function:") {
        Some(i) => &reference[i + ":function:".len()..],
        None => reference,
    };
    match rest.split_once(':') {
        Some((name, qualifier)) if !qualifier.is_empty() => {
            (name.to_owned(), Some(qualifier.to_owned()))
        }
        _ => (rest.trim_end_matches(':').to_owned(), None),
    }
}

/// The function part of an ARN or reference with its qualifier dropped, keeping the ARN form
/// when given one (`arn:...:function:f:alias` → `arn:...:function:f`).
fn unqualified(reference: &str) -> String {
    match reference.find(":function:") {
        Some(i) => {
            let head = &reference[..i + ":function:".len()];
            let (name, _) = split_function_ref(reference);
            format!("{head}{name}")
        }
        None => split_function_ref(reference).0,
    }
}

/// Nonempty optional text (AWS returns `""` for unset strings in places).
fn nonempty(s: Option<&str>) -> Option<String> {
    s.filter(|s| !s.is_empty()).map(str::to_owned)
}

/// Inserts `value` under `key` when present.
fn put(out: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        out.insert(key.to_owned(), v);
    }
}

/// The create-only properties among `names` (per the registry schema), plus `extra` ones
/// the service cannot change in place.
fn replacing_changes(resource_type: &str, names: &[String], extra: &[&str]) -> Vec<String> {
    names
        .iter()
        .filter(|n| {
            crate::provider::schema::is_create_only(resource_type, n) || extra.contains(&n.as_str())
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_references_split() {
        assert_eq!(split_function_ref("f"), ("f".into(), None));
        assert_eq!(
            split_function_ref("f:live"),
            ("f".into(), Some("live".into()))
        );
        let arn = "arn:aws:lambda:us-east-1:123456789012:function:f";
        assert_eq!(split_function_ref(arn), ("f".into(), None));
        assert_eq!(
            split_function_ref(&format!("{arn}:3")),
            ("f".into(), Some("3".into()))
        );
        assert_eq!(
            split_function_ref("123456789012:function:f:live"),
            ("f".into(), Some("live".into()))
        );
        assert_eq!(unqualified(&format!("{arn}:live")), arn);
        assert_eq!(unqualified("f:1"), "f");
    }

    #[test]
    fn tag_changes_leave_reserved_tags() {
        let current: HashMap<String, String> = [("a", "1"), ("b", "2"), ("aws:x", "y")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let desired: HashMap<String, String> = [("a", "1"), ("c", "3")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let (set, remove) = tag_changes(&current, &desired);
        assert_eq!(set.len(), 1);
        assert_eq!(set.get("c").map(String::as_str), Some("3"));
        assert_eq!(remove, ["b"]);
        let listed = tags_value(&current).expect("tags");
        assert_eq!(listed.as_array().map(Vec::len), Some(2));
    }
}
