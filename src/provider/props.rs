//! Reading resolved CloudFormation properties in providers: typed accessors that turn a wrong
//! shape into a [`ProviderError`] naming the resource and property, never a panic.

use serde_json::{Map, Value};

use super::{ProviderError, ResourceRequest};

/// Accessors over one request's properties.
pub struct Props<'a> {
    req: &'a ResourceRequest<'a>,
}

impl<'a> Props<'a> {
    pub fn new(req: &'a ResourceRequest<'a>) -> Self {
        Props { req }
    }

    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.req.properties.get(name).filter(|v| !v.is_null())
    }

    /// A string property; numbers and booleans are accepted in their string form, as
    /// CloudFormation does for string-typed properties.
    pub fn str(&self, name: &str) -> Result<Option<String>, ProviderError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(_) => Err(self.wrong(name, "a string")),
        }
    }

    pub fn required_str(&self, name: &str) -> Result<String, ProviderError> {
        self.str(name)?
            .ok_or_else(|| ProviderError::missing(self.req, name))
    }

    /// An integer property (CloudFormation also accepts numeric strings).
    pub fn i64(&self, name: &str) -> Result<Option<i64>, ProviderError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.wrong(name, "an integer")),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| self.wrong(name, "an integer")),
            Some(_) => Err(self.wrong(name, "an integer")),
        }
    }

    /// A boolean property (CloudFormation also accepts "true" / "false").
    pub fn bool(&self, name: &str) -> Result<Option<bool>, ProviderError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(_) => Err(self.wrong(name, "a boolean")),
        }
    }

    pub fn object(&self, name: &str) -> Result<Option<&'a Map<String, Value>>, ProviderError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.wrong(name, "an object")),
        }
    }

    pub fn list(&self, name: &str) -> Result<Option<&'a Vec<Value>>, ProviderError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(_) => Err(self.wrong(name, "a list")),
        }
    }

    /// A list of strings.
    pub fn strings(&self, name: &str) -> Result<Vec<String>, ProviderError> {
        let Some(items) = self.list(name)? else {
            return Ok(Vec::new());
        };
        items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(self.wrong(name, "a list of strings")),
            })
            .collect()
    }

    /// A JSON document property (policy documents): objects are serialized compactly, strings
    /// are passed through as already-serialized JSON.
    pub fn json_document(&self, name: &str) -> Result<Option<String>, ProviderError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v @ (Value::Object(_) | Value::Array(_))) => Ok(Some(v.to_string())),
            Some(_) => Err(self.wrong(name, "a JSON document")),
        }
    }

    /// CloudFormation `Tags`: a list of `{Key, Value}`.
    pub fn tags(&self) -> Result<Vec<(String, String)>, ProviderError> {
        self.tags_at("Tags")
    }

    /// A list of `{Key, Value}` under another name (Route 53's `HostedZoneTags`).
    pub fn tags_at(&self, name: &str) -> Result<Vec<(String, String)>, ProviderError> {
        let Some(items) = self.list(name)? else {
            return Ok(Vec::new());
        };
        items
            .iter()
            .map(|t| {
                let key = t.get("Key").and_then(Value::as_str);
                let value = t.get("Value").map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
                match (key, value) {
                    (Some(k), Some(v)) => Ok((k.to_owned(), v)),
                    _ => Err(self.wrong(name, "a list of {Key, Value}")),
                }
            })
            .collect()
    }

    /// The request these accessors read.
    pub fn request(&self) -> &'a ResourceRequest<'a> {
        self.req
    }

    /// A failure of this request's resource (a value out of the service's range).
    pub fn failed(&self, message: impl Into<String>) -> ProviderError {
        ProviderError::failed(self.req, message)
    }

    fn wrong(&self, name: &str, expected: &str) -> ProviderError {
        ProviderError::failed(self.req, format!("property {name} must be {expected}"))
    }
}

/// Whether a property changed between the previous and desired properties.
pub fn changed(previous: &Map<String, Value>, desired: &Map<String, Value>, name: &str) -> bool {
    let norm = |m: &Map<String, Value>| m.get(name).filter(|v| !v.is_null()).cloned();
    norm(previous) != norm(desired)
}

/// The names of the top-level properties that differ.
pub fn changed_properties(
    previous: &Map<String, Value>,
    desired: &Map<String, Value>,
) -> Vec<String> {
    let mut names: Vec<String> = previous.keys().chain(desired.keys()).cloned().collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|n| changed(previous, desired, n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(props: &Map<String, Value>) -> ResourceRequest<'_> {
        ResourceRequest {
            logical_id: "Q",
            resource_type: "AWS::SQS::Queue",
            properties: props,
            client_token: None,
        }
    }

    #[test]
    fn typed_access_with_cloudformation_coercions() {
        let m = json!({"A": "x", "N": "5", "B": "true", "L": ["a", 1], "Tags": [{"Key": "k", "Value": "v"}], "Null": null, "O": {"x": 1}})
            .as_object()
            .cloned()
            .expect("object");
        let r = req(&m);
        let p = Props::new(&r);
        assert_eq!(p.str("A").expect("ok"), Some("x".into()));
        assert_eq!(p.i64("N").expect("ok"), Some(5));
        assert_eq!(p.bool("B").expect("ok"), Some(true));
        assert_eq!(p.strings("L").expect("ok"), ["a", "1"]);
        assert_eq!(p.str("Null").expect("ok"), None);
        assert_eq!(p.json_document("O").expect("ok"), Some("{\"x\":1}".into()));
        assert_eq!(p.tags().expect("ok"), [("k".to_owned(), "v".to_owned())]);
        let err = p.i64("A").expect_err("not a number").to_string();
        assert_eq!(err, "Q (AWS::SQS::Queue): property A must be an integer");
        assert!(p.required_str("Missing").is_err());
    }

    #[test]
    fn change_detection_ignores_nulls() {
        let a = json!({"A": 1, "B": null})
            .as_object()
            .cloned()
            .expect("object");
        let b = json!({"A": 2}).as_object().cloned().expect("object");
        assert_eq!(changed_properties(&a, &b), ["A"]);
    }
}
