//! Typed access to nested CloudFormation property objects (`LifecycleConfiguration.Rules[0]`),
//! with errors that name the path, and the reverse: compact JSON for reads.

use serde_json::{Map, Value};

/// A conversion result; the error is a message naming the offending path.
pub type Conv<T> = Result<T, String>;

/// One JSON object of the template and where it sits.
#[derive(Debug, Clone)]
pub struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

impl<'a> Obj<'a> {
    pub fn new(value: &'a Value, path: impl Into<String>) -> Conv<Obj<'a>> {
        let path = path.into();
        match value {
            Value::Object(map) => Ok(Obj { map, path }),
            _ => Err(format!("property {path} must be an object")),
        }
    }

    /// The object itself.
    pub fn map(&self) -> &'a Map<String, Value> {
        self.map
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn err(&self, key: &str, expected: &str) -> String {
        format!("property {}.{key} must be {expected}", self.path)
    }

    pub fn str(&self, key: &str) -> Conv<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(_) => Err(self.err(key, "a string")),
        }
    }

    pub fn req_str(&self, key: &str) -> Conv<String> {
        self.str(key)?
            .ok_or_else(|| format!("property {}.{key} is required", self.path))
    }

    pub fn i64(&self, key: &str) -> Conv<Option<i64>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.err(key, "an integer")),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| self.err(key, "an integer")),
            Some(_) => Err(self.err(key, "an integer")),
        }
    }

    pub fn i32(&self, key: &str) -> Conv<Option<i32>> {
        self.i64(key)?
            .map(|n| i32::try_from(n).map_err(|_| self.err(key, "a 32-bit integer")))
            .transpose()
    }

    pub fn bool(&self, key: &str) -> Conv<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(_) => Err(self.err(key, "a boolean")),
        }
    }

    pub fn obj(&self, key: &str) -> Conv<Option<Obj<'a>>> {
        self.get(key)
            .map(|v| Obj::new(v, format!("{}.{key}", self.path)))
            .transpose()
    }

    /// A list of objects; a missing list is empty.
    pub fn objs(&self, key: &str) -> Conv<Vec<Obj<'a>>> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| Obj::new(v, format!("{}.{key}[{i}]", self.path)))
                .collect(),
            Some(_) => Err(self.err(key, "a list")),
        }
    }

    /// A list of strings; a missing list is empty.
    pub fn strings(&self, key: &str) -> Conv<Vec<String>> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(n) => Ok(n.to_string()),
                    _ => Err(self.err(key, "a list of strings")),
                })
                .collect(),
            Some(_) => Err(self.err(key, "a list of strings")),
        }
    }

    /// `[{Key, Value}]` pairs (`TagFilters`).
    pub fn tag_list(&self, key: &str) -> Conv<Vec<(String, String)>> {
        self.objs(key)?
            .iter()
            .map(|t| Ok((t.req_str("Key")?, t.str("Value")?.unwrap_or_default())))
            .collect()
    }

    /// One `{Key, Value}` object (`TagFilter`).
    pub fn tag(&self, key: &str) -> Conv<Option<(String, String)>> {
        self.obj(key)?
            .map(|t| Ok((t.req_str("Key")?, t.str("Value")?.unwrap_or_default())))
            .transpose()
    }
}

/// Removes nulls, empty objects and empty lists, recursively: reads report only what is set.
pub fn compact(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, compact(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(compact).collect()),
        other => other,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_name_the_offending_value() {
        let v = json!({"Rules": [{"Status": "Enabled", "ExpirationInDays": "x"}]});
        let o = Obj::new(&v, "LifecycleConfiguration").expect("object");
        let rules = o.objs("Rules").expect("list");
        assert_eq!(rules[0].str("Status").expect("ok"), Some("Enabled".into()));
        let err = rules[0].i32("ExpirationInDays").expect_err("not a number");
        assert_eq!(
            err,
            "property LifecycleConfiguration.Rules[0].ExpirationInDays must be an integer"
        );
        assert!(rules[0].req_str("Id").is_err());
    }

    #[test]
    fn compact_drops_unset_values() {
        let v = json!({"A": null, "B": [], "C": {"D": null}, "E": 0, "F": [{"G": null, "H": "x"}]});
        assert_eq!(compact(v), json!({"E": 0, "F": [{"H": "x"}]}));
    }
}
