//! A best-effort reading of a template for the cross-stack passes (scrub spec, "Which Fn::If
//! branch scrub selects"): conditions evaluated against the parameters' defaults (scrub takes
//! no `--parameters`), a condition it cannot evaluate reading as false, and names built from
//! literals, defaults and the stack's pseudo parameters. Anything else is "cannot tell".

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::{Map, Value};

/// One template's conditions and literal names.
pub struct Conditions<'t> {
    conditions: Map<String, Value>,
    defaults: HashMap<String, String>,
    stack: &'t str,
    region: &'t str,
    memo: RefCell<HashMap<String, bool>>,
}

impl<'t> Conditions<'t> {
    pub fn new(template: &Value, stack: &'t str, region: &'t str) -> Self {
        let conditions = template
            .get("Conditions")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let defaults = template
            .get("Parameters")
            .and_then(Value::as_object)
            .map(|p| {
                p.iter()
                    .filter_map(|(k, v)| Some((k.clone(), scalar(v.get("Default")?)?)))
                    .collect()
            })
            .unwrap_or_default();
        Conditions {
            conditions,
            defaults,
            stack,
            region,
            memo: RefCell::new(HashMap::new()),
        }
    }

    /// Whether a resource's or output's `Condition` holds (none: it does).
    pub fn holds(&self, condition: Option<&Value>) -> bool {
        match condition {
            None => true,
            Some(Value::String(name)) => self.condition(name, 0),
            Some(_) => false,
        }
    }

    /// The branch an `Fn::If` argument `[cond, then, else]` selects.
    pub fn branch<'v>(&self, arg: &'v Value) -> Option<&'v Value> {
        let items = arg.as_array()?;
        let [Value::String(c), then, other] = items.as_slice() else {
            return None;
        };
        Some(if self.condition(c, 0) { then } else { other })
    }

    /// `value` with every `Fn::If` replaced by its selected branch.
    pub fn select(&self, value: &Value) -> Value {
        match value {
            Value::Array(items) => Value::Array(items.iter().map(|i| self.select(i)).collect()),
            Value::Object(m) if m.len() == 1 && m.contains_key("Fn::If") => {
                match self.branch(&m["Fn::If"]) {
                    Some(b) => self.select(b),
                    None => Value::Null,
                }
            }
            Value::Object(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), self.select(v))).collect())
            }
            other => other.clone(),
        }
    }

    /// A name as a string when it is a literal, a `Ref` to a parameter with a default or a
    /// pseudo parameter, an `Fn::Sub` over those, or an `Fn::Join` of such parts.
    pub fn literal(&self, value: &Value) -> Option<String> {
        match value {
            Value::String(s) => Some(s.clone()),
            Value::Object(m) if m.len() == 1 => {
                let (k, arg) = m.iter().next()?;
                match k.as_str() {
                    "Ref" => self.reference(arg.as_str()?),
                    "Fn::Sub" => match arg {
                        Value::String(s) => self.sub(s),
                        _ => None,
                    },
                    "Fn::Join" => {
                        let [Value::String(sep), Value::Array(parts)] = arg.as_array()?.as_slice()
                        else {
                            return None;
                        };
                        let parts: Option<Vec<String>> =
                            parts.iter().map(|p| self.literal(p)).collect();
                        Some(parts?.join(sep))
                    }
                    "Fn::If" => self.literal(self.branch(arg)?),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn reference(&self, name: &str) -> Option<String> {
        match name {
            "AWS::StackName" => Some(self.stack.to_owned()),
            "AWS::Region" => Some(self.region.to_owned()),
            _ => self.defaults.get(name).cloned(),
        }
    }

    fn sub(&self, text: &str) -> Option<String> {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            if let Some(escaped) = after.strip_prefix('!') {
                out.push_str("${");
                rest = escaped;
                continue;
            }
            let end = after.find('}')?;
            out.push_str(&self.reference(&after[..end])?);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Some(out)
    }

    fn condition(&self, name: &str, depth: usize) -> bool {
        if let Some(v) = self.memo.borrow().get(name) {
            return *v;
        }
        let v = match self.conditions.get(name) {
            Some(def) if depth < 32 => self.eval(def, depth + 1),
            _ => false,
        };
        self.memo.borrow_mut().insert(name.to_owned(), v);
        v
    }

    fn eval(&self, def: &Value, depth: usize) -> bool {
        let Some((k, arg)) = def
            .as_object()
            .filter(|m| m.len() == 1)
            .and_then(|m| m.iter().next())
        else {
            return false;
        };
        let items = arg.as_array().map(Vec::as_slice).unwrap_or_default();
        match k.as_str() {
            "Condition" => arg.as_str().is_some_and(|c| self.condition(c, depth)),
            "Fn::Not" => matches!(items, [one] if !self.eval(one, depth)),
            "Fn::And" => !items.is_empty() && items.iter().all(|i| self.eval(i, depth)),
            "Fn::Or" => items.iter().any(|i| self.eval(i, depth)),
            "Fn::Equals" => match items {
                [a, b] => match (self.literal(a), self.literal(b)) {
                    (Some(a), Some(b)) => a == b,
                    _ => false,
                },
                _ => false,
            },
            _ => false,
        }
    }
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conditions_read_defaults_and_unknowns_read_false() {
        let t = json!({
            "Parameters": {"Env": {"Type": "String", "Default": "prod"}, "X": {"Type": "String"}},
            "Conditions": {
                "IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]},
                "NotProd": {"Fn::Not": [{"Condition": "IsProd"}]},
                "Unknown": {"Fn::Equals": [{"Ref": "X"}, "a"]}
            }
        });
        let c = Conditions::new(&t, "S", "eu-west-1");
        assert!(c.holds(Some(&json!("IsProd"))));
        assert!(!c.holds(Some(&json!("NotProd"))));
        assert!(!c.holds(Some(&json!("Unknown"))));
        assert_eq!(
            c.literal(&json!({"Fn::Sub": "${AWS::StackName}-${Env}-${!Lit}"})),
            Some("S-prod-${Lit}".into())
        );
        assert_eq!(c.literal(&json!({"Fn::Sub": "${X}"})), None);
        assert_eq!(
            c.select(&json!({"a": {"Fn::If": ["NotProd", 1, 2]}})),
            json!({"a": 2})
        );
    }
}
