//! The drift comparison rules (pure): what `cdkd drift` reports for one resource, given its
//! baseline and what AWS reports now.
//!
//! - Only keys the baseline holds are compared, at every depth: a key AWS reports that the
//!   baseline does not hold (an AWS default the template never set, a field a newer API
//!   added) is never drift.
//! - A top-level key the template never declared whose captured value was empty (`[]`, `{}`,
//!   `null`) is skipped: a sibling resource or AWS itself fills such keys after the capture
//!   (ECS capacity-provider associations, standalone lifecycle hooks), and comparing them was
//!   permanent phantom drift that `--revert` then destructively "fixed" (upstream #1498).
//! - A baseline position holding `***` or a `{{resolve:...}}` reference stands for a secret:
//!   it is reported in its own group, neither side printed, and is not drift.
//! - Scalars compare by their text (`"30"` equals `30`), as the deploy's comparator does; a
//!   list of `{Key, Value}` tags compares in any order.
//! - A resource AWS no longer has is drift.

use serde_json::{Map, Value};

use super::is_secret_spelling;

/// One property whose value in AWS differs from the baseline.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PropertyDrift {
    /// Dotted path (`Tags`, `Config.Timeout`, `Rules[0]`).
    pub path: String,
    /// The baseline's value (absent: `null`).
    pub expected: Value,
    /// AWS's value now (absent: `null`).
    pub actual: Value,
}

/// What the comparison of one resource found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Comparison {
    pub drifted: Vec<PropertyDrift>,
    /// Secret positions (paths) whose value cannot be compared in the clear.
    pub masked: Vec<String>,
}

impl Comparison {
    pub fn is_clean(&self) -> bool {
        self.drifted.is_empty()
    }
}

/// Compares `live` (AWS now) with `baseline`; `declared` is the record's `properties` (what
/// the template set), for the empty-undeclared-key carve-out.
pub fn compare(
    baseline: &Map<String, Value>,
    declared: &Map<String, Value>,
    live: &Map<String, Value>,
) -> Comparison {
    let mut out = Comparison::default();
    for (key, expected) in baseline {
        if !declared.contains_key(key) && is_empty(expected) {
            continue;
        }
        diff_at(key.clone(), expected, live.get(key), &mut out);
    }
    out
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

fn diff_at(path: String, expected: &Value, actual: Option<&Value>, out: &mut Comparison) {
    if is_secret_spelling(expected) {
        out.masked.push(path);
        return;
    }
    match (expected, actual) {
        (Value::Object(e), Some(Value::Object(a))) => {
            for (k, ev) in e {
                diff_at(format!("{path}.{k}"), ev, a.get(k), out);
            }
        }
        (Value::Array(e), Some(Value::Array(a))) if e.len() == a.len() => {
            if is_tag_list(e) && is_tag_list(a) {
                if !equal(&Value::Array(sorted_tags(e)), &Value::Array(sorted_tags(a))) {
                    push(out, path, expected, actual);
                }
                return;
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                diff_at(format!("{path}[{i}]"), ev, Some(av), out);
            }
        }
        (Value::Null, None) => {}
        (e, Some(a)) if equal(e, a) => {}
        _ => push(out, path, expected, actual),
    }
}

fn push(out: &mut Comparison, path: String, expected: &Value, actual: Option<&Value>) {
    out.drifted.push(PropertyDrift {
        path,
        expected: expected.clone(),
        actual: actual.cloned().unwrap_or(Value::Null),
    });
}

/// Deep equality with scalars compared by text, objects by the keys the expected side holds
/// plus any non-null extra on the actual side, tag lists in any order.
fn equal(e: &Value, a: &Value) -> bool {
    match (e, a) {
        (Value::Null, Value::Null) => true,
        (Value::Object(x), Value::Object(y)) => {
            x.iter().all(|(k, v)| {
                y.get(k).is_some_and(|w| equal(v, w)) || (v.is_null() && !y.contains_key(k))
            }) && y.iter().all(|(k, w)| x.contains_key(k) || w.is_null())
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return false;
            }
            if is_tag_list(x) && is_tag_list(y) {
                let (sx, sy) = (sorted_tags(x), sorted_tags(y));
                return sx.iter().zip(&sy).all(|(p, q)| equal(p, q));
            }
            x.iter().zip(y).all(|(p, q)| equal(p, q))
        }
        _ => match (scalar_text(e), scalar_text(a)) {
            (Some(p), Some(q)) => p == q,
            _ => false,
        },
    }
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn is_tag_list(items: &[Value]) -> bool {
    !items.is_empty()
        && items.iter().all(|t| {
            t.as_object()
                .is_some_and(|m| m.contains_key("Key") && m.contains_key("Value") && m.len() == 2)
        })
}

fn sorted_tags(items: &[Value]) -> Vec<Value> {
    let mut v = items.to_vec();
    v.sort_by_key(|t| {
        t.get("Key")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn paths(c: &Comparison) -> Vec<&str> {
        c.drifted.iter().map(|d| d.path.as_str()).collect()
    }

    #[test]
    fn keys_aws_adds_are_not_drift() {
        let baseline = map(json!({"VisibilityTimeout": 30, "Config": {"A": 1}}));
        let live = map(json!({
            "VisibilityTimeout": "30",
            "MessageRetentionPeriod": 345600,
            "Config": {"A": 1, "DefaultedByAws": true}
        }));
        assert!(compare(&baseline, &baseline, &live).is_clean());
    }

    #[test]
    fn a_changed_nested_value_is_named_by_its_path() {
        let baseline = map(json!({"Config": {"Timeout": 3, "Mode": "a"}, "Name": "n"}));
        let live = map(json!({"Config": {"Timeout": 9, "Mode": "a"}, "Name": "n"}));
        let c = compare(&baseline, &baseline, &live);
        assert_eq!(paths(&c), ["Config.Timeout"]);
        assert_eq!(c.drifted[0].expected, json!(3));
        assert_eq!(c.drifted[0].actual, json!(9));
    }

    #[test]
    fn a_key_aws_dropped_is_drift() {
        let baseline = map(json!({"Description": "d", "Name": "n"}));
        let live = map(json!({"Name": "n"}));
        let c = compare(&baseline, &baseline, &live);
        assert_eq!(paths(&c), ["Description"]);
        assert_eq!(c.drifted[0].actual, Value::Null);
    }

    #[test]
    fn an_undeclared_empty_captured_key_is_skipped_but_a_valued_one_compared() {
        // Captured right after the create: the sibling fills CapacityProviders later.
        let declared = map(json!({"ClusterName": "c"}));
        let baseline = map(json!({
            "ClusterName": "c",
            "CapacityProviders": [],
            "Settings": {},
            "Gone": null,
            "Undeclared": "set-by-aws"
        }));
        let live = map(json!({
            "ClusterName": "c",
            "CapacityProviders": ["FARGATE"],
            "Settings": {"X": 1},
            "Gone": "now",
            "Undeclared": "changed"
        }));
        let c = compare(&baseline, &declared, &live);
        assert_eq!(paths(&c), ["Undeclared"]);
        // A DECLARED empty list is compared.
        let declared = map(json!({"ClusterName": "c", "CapacityProviders": []}));
        let c = compare(&baseline, &declared, &live);
        assert_eq!(paths(&c), ["CapacityProviders", "Undeclared"]);
    }

    #[test]
    fn secret_positions_are_their_own_group_and_not_drift() {
        let baseline = map(json!({
            "Password": "{{resolve:secretsmanager:s:SecretString:p}}",
            "Env": {"Token": "***"}
        }));
        let live = map(json!({"Password": "whatever", "Env": {"Token": "other"}}));
        let c = compare(&baseline, &baseline, &live);
        assert!(c.is_clean());
        assert_eq!(c.masked, ["Password", "Env.Token"]);
    }

    #[test]
    fn tags_compare_in_any_order_and_a_changed_tag_is_drift() {
        let baseline =
            map(json!({"Tags": [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]}));
        let live = map(json!({"Tags": [{"Key": "b", "Value": "2"}, {"Key": "a", "Value": "1"}]}));
        assert!(compare(&baseline, &baseline, &live).is_clean());
        let live = map(json!({"Tags": [{"Key": "b", "Value": "3"}, {"Key": "a", "Value": "1"}]}));
        assert_eq!(paths(&compare(&baseline, &baseline, &live)), ["Tags"]);
    }

    #[test]
    fn lists_compare_element_by_element_and_by_length() {
        let baseline = map(json!({"L": [{"A": 1}, {"A": 2}]}));
        let live = map(json!({"L": [{"A": 1, "Extra": 0}, {"A": 3}]}));
        assert_eq!(paths(&compare(&baseline, &baseline, &live)), ["L[1].A"]);
        let live = map(json!({"L": [{"A": 1}]}));
        assert_eq!(paths(&compare(&baseline, &baseline, &live)), ["L"]);
    }
}
