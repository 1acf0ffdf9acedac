//! Reading an object nested in a property (a listener's `DefaultActions[0].RedirectConfig`)
//! into a request builder: typed fields with CloudFormation's coercions, each error naming
//! the property path, and a refusal of any key the provider does not send, so a nested
//! setting is never dropped in silence (top-level ones route through Cloud Control instead).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::provider::{ProviderError, ResourceRequest};

/// One nested object of a request's properties, at `path` (`DefaultActions[0]`).
pub struct Obj<'a> {
    req: &'a ResourceRequest<'a>,
    path: String,
    map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    /// The object at `path`, refused unless `v` is an object whose keys are all in `known`.
    pub fn new(
        req: &'a ResourceRequest<'a>,
        path: impl Into<String>,
        v: &'a Value,
        known: &[&str],
    ) -> Result<Self, ProviderError> {
        let path = path.into();
        let Value::Object(map) = v else {
            return Err(ProviderError::failed(
                req,
                format!("property {path} must be an object"),
            ));
        };
        if let Some(k) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(ProviderError::failed(
                req,
                format!(
                    "property {path}.{k} is not one cdkd's SDK provider sends (it would be \
                     dropped); remove it from the template"
                ),
            ));
        }
        Ok(Obj { req, path, map })
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn wrong(&self, key: &str, expected: &str) -> ProviderError {
        ProviderError::failed(
            self.req,
            format!("property {}.{key} must be {expected}", self.path),
        )
    }

    /// The path of a field, for nested objects' errors.
    pub fn at(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    pub fn str(&self, key: &str) -> Result<Option<String>, ProviderError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(_) => Err(self.wrong(key, "a string")),
        }
    }

    pub fn i64(&self, key: &str) -> Result<Option<i64>, ProviderError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "an integer")),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| self.wrong(key, "an integer")),
            Some(_) => Err(self.wrong(key, "an integer")),
        }
    }

    pub fn i32(&self, key: &str) -> Result<Option<i32>, ProviderError> {
        self.i64(key)?
            .map(|n| i32::try_from(n).map_err(|_| self.wrong(key, "a 32-bit integer")))
            .transpose()
    }

    pub fn bool(&self, key: &str) -> Result<Option<bool>, ProviderError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(_) => Err(self.wrong(key, "a boolean")),
        }
    }

    /// A list of strings; `None` when absent.
    pub fn strings(&self, key: &str) -> Result<Option<Vec<String>>, ProviderError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let Value::Array(items) = v else {
            return Err(self.wrong(key, "a list of strings"));
        };
        items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(self.wrong(key, "a list of strings")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// A string-to-string map; `None` when absent.
    pub fn string_map(&self, key: &str) -> Result<Option<HashMap<String, String>>, ProviderError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let Value::Object(m) = v else {
            return Err(self.wrong(key, "a map of strings"));
        };
        m.iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(self.wrong(key, "a map of strings")),
            })
            .collect::<Result<HashMap<_, _>, _>>()
            .map(Some)
    }

    /// A nested object whose keys are all in `known`; `None` when absent.
    pub fn object(&self, key: &str, known: &[&str]) -> Result<Option<Obj<'a>>, ProviderError> {
        self.get(key)
            .map(|v| Obj::new(self.req, self.at(key), v, known))
            .transpose()
    }

    /// The items of a nested list of objects whose keys are all in `known`.
    pub fn objects(&self, key: &str, known: &[&str]) -> Result<Vec<Obj<'a>>, ProviderError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| Obj::new(self.req, format!("{}[{i}]", self.at(key)), v, known))
                .collect(),
            Some(_) => Err(self.wrong(key, "a list")),
        }
    }
}

/// The objects of a top-level list property, each refused unless its keys are all in `known`.
pub fn list_of<'a>(
    req: &'a ResourceRequest<'a>,
    name: &str,
    known: &[&str],
) -> Result<Vec<Obj<'a>>, ProviderError> {
    match req.properties.get(name).filter(|v| !v.is_null()) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| Obj::new(req, format!("{name}[{i}]"), v, known))
            .collect(),
        Some(_) => Err(ProviderError::failed(
            req,
            format!("property {name} must be a list"),
        )),
    }
}

/// Builds an object of CloudFormation fields from the ones a service returned, leaving out
/// what it did not.
#[derive(Default)]
pub struct Fields(Map<String, Value>);

impl Fields {
    pub fn new() -> Self {
        Fields::default()
    }

    /// Adds `key` when `value` is there.
    pub fn put(mut self, key: &str, value: Option<impl Into<Value>>) -> Self {
        if let Some(v) = value {
            self.0.insert(key.to_owned(), v.into());
        }
        self
    }

    /// Adds `key` when `value` is a non-empty list.
    pub fn list(mut self, key: &str, value: Vec<Value>) -> Self {
        if !value.is_empty() {
            self.0.insert(key.to_owned(), Value::Array(value));
        }
        self
    }

    pub fn value(self) -> Value {
        Value::Object(self.0)
    }

    pub fn map(self) -> Map<String, Value> {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_key_the_provider_does_not_send_is_refused_by_path() {
        let props = json!({"A": [{"Type": "x", "Extra": 1}]})
            .as_object()
            .cloned()
            .expect("object");
        let req = ResourceRequest {
            logical_id: "L",
            resource_type: "AWS::X::Y",
            properties: &props,
            client_token: None,
        };
        let err = list_of(&req, "A", &["Type"])
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains("property A[0].Extra is not one"), "{err}");
        let ok = list_of(&req, "A", &["Type", "Extra"]).expect("known");
        assert_eq!(ok[0].str("Type").expect("str"), Some("x".into()));
        assert_eq!(ok[0].i32("Extra").expect("int"), Some(1));
        assert_eq!(ok[0].str("Missing").expect("absent"), None);
    }

    #[test]
    fn fields_leave_out_what_is_missing() {
        let v = Fields::new()
            .put("A", Some("x"))
            .put("B", None::<String>)
            .list("C", vec![])
            .value();
        assert_eq!(v, json!({"A": "x"}));
    }
}
