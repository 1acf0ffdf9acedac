//! The CloudFormation custom-resource protocol as data: the request envelope a handler receives
//! and the cfn-response it PUTs back, with no AWS calls, so every rule here is unit-tested.
//!
//! Faithful to CloudFormation where handlers can tell the difference: every scalar in
//! `ResourceProperties` / `OldResourceProperties` arrives as a string (CloudFormation sends
//! `"5"` and `"true"`, never `5` or `true`), `ServiceToken` stays among the properties, the
//! StackId is a stack ARN that stays the same for the stack's life, and a response longer than
//! 4096 bytes is refused as CloudFormation refuses it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// What CloudFormation writes in place of a NoEcho value.
pub const MASK: &str = "***";
/// CloudFormation's limit on a cfn-response body.
pub const MAX_RESPONSE_BYTES: usize = 4096;

/// The three request types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestType {
    Create,
    Update,
    Delete,
}

impl RequestType {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestType::Create => "Create",
            RequestType::Update => "Update",
            RequestType::Delete => "Delete",
        }
    }
}

/// One request to a handler.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub request_type: RequestType,
    pub service_token: &'a str,
    pub response_url: &'a str,
    pub stack_id: &'a str,
    pub request_id: &'a str,
    pub resource_type: &'a str,
    pub logical_id: &'a str,
    /// Absent on Create.
    pub physical_id: Option<&'a str>,
    pub properties: &'a Map<String, Value>,
    /// Update only.
    pub old_properties: Option<&'a Map<String, Value>>,
}

impl Request<'_> {
    /// The JSON envelope, as CloudFormation sends it.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("RequestType".into(), json!(self.request_type.as_str()));
        out.insert("ServiceToken".into(), json!(self.service_token));
        out.insert("ResponseURL".into(), json!(self.response_url));
        out.insert("StackId".into(), json!(self.stack_id));
        out.insert("RequestId".into(), json!(self.request_id));
        out.insert("ResourceType".into(), json!(self.resource_type));
        out.insert("LogicalResourceId".into(), json!(self.logical_id));
        if let Some(id) = self.physical_id {
            out.insert("PhysicalResourceId".into(), json!(id));
        }
        out.insert(
            "ResourceProperties".into(),
            stringify_scalars(&Value::Object(self.properties.clone())),
        );
        if let Some(old) = self.old_properties {
            out.insert(
                "OldResourceProperties".into(),
                stringify_scalars(&Value::Object(old.clone())),
            );
        }
        Value::Object(out)
    }
}

/// Numbers and booleans as strings, at any depth, the way CloudFormation hands properties to
/// a custom resource.
pub fn stringify_scalars(value: &Value) -> Value {
    match value {
        Value::Bool(b) => Value::String(b.to_string()),
        Value::Number(n) => Value::String(n.to_string()),
        Value::Array(items) => Value::Array(items.iter().map(stringify_scalars).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), stringify_scalars(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The stack ARN handlers see as StackId: stable for a stack name, region and account, so the
/// Delete a handler receives names the stack its Create named.
pub fn stack_id(partition: &str, region: &str, account: &str, stack: &str) -> String {
    let digest = Sha256::digest(format!("{partition}/{region}/{account}/{stack}").as_bytes());
    format!(
        "arn:{partition}:cloudformation:{region}:{account}:stack/{stack}/{}",
        uuid_shape(&digest, false)
    )
}

/// A fresh request id (a random UUID).
pub fn new_request_id(seed: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut hasher = Sha256::new();
    hasher.update(nanos.to_le_bytes());
    hasher.update(std::process::id().to_le_bytes());
    hasher.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    hasher.update(seed.as_bytes());
    uuid_shape(&hasher.finalize(), true)
}

/// 16 bytes of `digest` as `8-4-4-4-12` lower-case hex (marked version 4 when `v4`).
fn uuid_shape(digest: &[u8], v4: bool) -> String {
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    if v4 {
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
    }
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The handler's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Success,
    Failed,
}

/// A cfn-response, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: Status,
    pub reason: Option<String>,
    pub physical_id: Option<String>,
    pub data: Map<String, Value>,
    pub no_echo: bool,
}

/// Why a response body is not a usable cfn-response.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResponseError {
    #[error("the handler's response is {0} bytes; CloudFormation accepts at most 4096")]
    TooLong(usize),
    #[error("the handler's response is not a JSON object: {0}")]
    NotJson(String),
    #[error("the handler's response has Status {0}; expected SUCCESS or FAILED")]
    BadStatus(String),
    #[error("the handler's response answers request {got}, not {expected}")]
    WrongRequest { expected: String, got: String },
    #[error("the handler's response Data is not a JSON object")]
    BadData,
}

/// Parses a cfn-response body answering `request_id`.
pub fn parse_response(body: &[u8], request_id: &str) -> Result<Response, ResponseError> {
    if body.len() > MAX_RESPONSE_BYTES {
        return Err(ResponseError::TooLong(body.len()));
    }
    let value: Value =
        serde_json::from_slice(body).map_err(|e| ResponseError::NotJson(e.to_string()))?;
    let Value::Object(obj) = value else {
        return Err(ResponseError::NotJson(
            "a JSON value other than an object".into(),
        ));
    };
    let status = match obj.get("Status").and_then(Value::as_str) {
        Some("SUCCESS") => Status::Success,
        Some("FAILED") => Status::Failed,
        other => {
            return Err(ResponseError::BadStatus(
                other.map_or_else(|| "(none)".to_owned(), str::to_owned),
            ))
        }
    };
    if let Some(got) = obj.get("RequestId").and_then(Value::as_str) {
        if got != request_id {
            return Err(ResponseError::WrongRequest {
                expected: request_id.to_owned(),
                got: got.to_owned(),
            });
        }
    }
    let data = match obj.get("Data") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(ResponseError::BadData),
    };
    let text = |k: &str| {
        obj.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let no_echo = match obj.get("NoEcho") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    };
    Ok(Response {
        status,
        reason: text("Reason"),
        physical_id: text("PhysicalResourceId"),
        data,
        no_echo,
    })
}

/// The attributes state records for a response's Data: every string value masked when the
/// handler declared the response NoEcho (the spec's "every string value in that Data is stored
/// as ***"), the Data as sent otherwise.
pub fn recorded_attributes(response: &Response) -> Map<String, Value> {
    if !response.no_echo {
        return response.data.clone();
    }
    response
        .data
        .iter()
        .map(|(k, v)| {
            let v = if v.is_string() {
                Value::String(MASK.into())
            } else {
                v.clone()
            };
            (k.clone(), v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props() -> Map<String, Value> {
        json!({"ServiceToken": "arn:aws:lambda:us-east-1:1:function:f", "Count": 5, "On": true,
               "List": [1, "a", {"X": false}], "Nothing": null})
        .as_object()
        .cloned()
        .unwrap_or_default()
    }

    #[test]
    fn envelope_has_cloudformation_fields_and_string_scalars() {
        let p = props();
        let old = json!({"Count": 4}).as_object().cloned().unwrap_or_default();
        let req = Request {
            request_type: RequestType::Update,
            service_token: "arn:aws:lambda:us-east-1:1:function:f",
            response_url: "https://example/put",
            stack_id: "arn:aws:cloudformation:us-east-1:1:stack/S/x",
            request_id: "r-1",
            resource_type: "Custom::Thing",
            logical_id: "Thing",
            physical_id: Some("phys"),
            properties: &p,
            old_properties: Some(&old),
        };
        let v = req.to_json();
        assert_eq!(v["RequestType"], "Update");
        assert_eq!(v["ResponseURL"], "https://example/put");
        assert_eq!(v["LogicalResourceId"], "Thing");
        assert_eq!(v["PhysicalResourceId"], "phys");
        assert_eq!(v["ResourceType"], "Custom::Thing");
        assert_eq!(v["ResourceProperties"]["Count"], "5");
        assert_eq!(v["ResourceProperties"]["On"], "true");
        assert_eq!(
            v["ResourceProperties"]["List"],
            json!(["1", "a", {"X": "false"}])
        );
        assert_eq!(v["ResourceProperties"]["Nothing"], Value::Null);
        assert_eq!(
            v["ResourceProperties"]["ServiceToken"],
            "arn:aws:lambda:us-east-1:1:function:f"
        );
        assert_eq!(v["OldResourceProperties"]["Count"], "4");
    }

    #[test]
    fn create_envelope_has_no_physical_id_or_old_properties() {
        let p = props();
        let req = Request {
            request_type: RequestType::Create,
            service_token: "t",
            response_url: "u",
            stack_id: "s",
            request_id: "r",
            resource_type: "AWS::CloudFormation::CustomResource",
            logical_id: "L",
            physical_id: None,
            properties: &p,
            old_properties: None,
        };
        let v = req.to_json();
        assert!(v.get("PhysicalResourceId").is_none());
        assert!(v.get("OldResourceProperties").is_none());
    }

    #[test]
    fn stack_id_is_stable_and_request_ids_are_unique_uuids() {
        let a = stack_id("aws", "us-east-1", "123456789012", "S");
        assert_eq!(a, stack_id("aws", "us-east-1", "123456789012", "S"));
        assert!(a.starts_with("arn:aws:cloudformation:us-east-1:123456789012:stack/S/"));
        assert_ne!(a, stack_id("aws", "us-west-2", "123456789012", "S"));
        let r1 = new_request_id("L");
        let r2 = new_request_id("L");
        assert_ne!(r1, r2);
        assert_eq!(r1.len(), 36);
        assert_eq!(&r1[14..15], "4");
    }

    #[test]
    fn responses_parse_and_refuse_what_cloudformation_refuses() {
        let ok =
            br#"{"Status":"SUCCESS","PhysicalResourceId":"p1","RequestId":"r","Data":{"A":"1"}}"#;
        let r = parse_response(ok, "r").expect("parsed");
        assert_eq!(r.status, Status::Success);
        assert_eq!(r.physical_id.as_deref(), Some("p1"));
        assert_eq!(r.data["A"], "1");
        assert!(!r.no_echo);

        let failed = br#"{"Status":"FAILED","Reason":"boom","RequestId":"r"}"#;
        let r = parse_response(failed, "r").expect("parsed");
        assert_eq!(r.status, Status::Failed);
        assert_eq!(r.reason.as_deref(), Some("boom"));

        assert!(matches!(
            parse_response(br#"{"Status":"MAYBE"}"#, "r"),
            Err(ResponseError::BadStatus(_))
        ));
        assert!(matches!(
            parse_response(br#"{"Status":"SUCCESS","RequestId":"other"}"#, "r"),
            Err(ResponseError::WrongRequest { .. })
        ));
        assert!(matches!(
            parse_response(br#"{"Status":"SUCCESS","Data":[1]}"#, "r"),
            Err(ResponseError::BadData)
        ));
        assert!(matches!(
            parse_response(b"not json", "r"),
            Err(ResponseError::NotJson(_))
        ));
        let long = format!(
            r#"{{"Status":"SUCCESS","Data":{{"A":"{}"}}}}"#,
            "x".repeat(5000)
        );
        assert!(matches!(
            parse_response(long.as_bytes(), "r"),
            Err(ResponseError::TooLong(_))
        ));
    }

    #[test]
    fn no_echo_masks_every_string_in_data() {
        let body = br#"{"Status":"SUCCESS","NoEcho":true,"Data":{"Token":"s3cret","N":3}}"#;
        let r = parse_response(body, "r").expect("parsed");
        assert!(r.no_echo);
        let attrs = recorded_attributes(&r);
        assert_eq!(attrs["Token"], MASK);
        assert_eq!(attrs["N"], 3);
        assert_eq!(r.data["Token"], "s3cret");
    }
}
