//! Reading a nested property back in the shape the template wrote it, so a read right after
//! a create equals what was sent (a clean diff and drift baseline) while a real change still
//! shows.
//!
//! A service answers with more than the template set: defaults it filled in (a listener
//! action's `Order`, a forward action's `ForwardConfig` beside its `TargetGroupArn`), numbers
//! where CloudFormation's string-typed properties carry strings. [`shaped_like`] keeps of the
//! live value what the template asked about: object keys the template names, list items one
//! for one (a list of scalars that is the same set in the template's order), a scalar in the
//! template's spelling when it is the same value. [`as_asked`] does that for a whole read:
//! the properties the template sets, as it wrote them when AWS holds the same.

use serde_json::{Map, Value};

use crate::provider::ResourceRequest;

/// The live properties `live` of a resource, cut to those the request sets, each
/// [`shaped_like`] what it set: a read right after a create equals what was sent.
pub fn as_asked(req: &ResourceRequest<'_>, live: Map<String, Value>) -> Map<String, Value> {
    live.into_iter()
        .filter_map(|(k, v)| {
            let asked = req.properties.get(&k).filter(|a| !a.is_null())?;
            Some((k, shaped_like(v, Some(asked))))
        })
        .collect()
}

/// `live` cut to the shape of `asked` (what the template set at the same position): keys of
/// an object `asked` does not name are dropped (what the service defaulted), lists of the same
/// length are shaped item by item, and a scalar equal to `asked` in its string form is given
/// as `asked` spells it. Without `asked`, `live` is returned whole.
pub fn shaped_like(live: Value, asked: Option<&Value>) -> Value {
    let Some(asked) = asked else {
        return live;
    };
    match (live, asked) {
        (Value::Object(live), Value::Object(want)) => {
            let mut out = Map::new();
            for (k, v) in live {
                if let Some(w) = want.get(&k) {
                    out.insert(k, shaped_like(v, Some(w)));
                }
            }
            Value::Object(out)
        }
        (Value::Array(live), Value::Array(want)) if same_scalars(&live, want) => {
            Value::Array(want.clone())
        }
        (Value::Array(live), Value::Array(want)) if live.len() == want.len() => Value::Array(
            live.into_iter()
                .zip(want)
                .map(|(l, w)| shaped_like(l, Some(w)))
                .collect(),
        ),
        (live, want) if scalar_text(&live).is_some() && scalar_text(&live) == scalar_text(want) => {
            want.clone()
        }
        (live, _) => live,
    }
}

/// Whether two lists hold the same scalars, in any order (subnets, security groups: sets
/// AWS lists in its own order).
fn same_scalars(live: &[Value], want: &[Value]) -> bool {
    let texts = |l: &[Value]| -> Option<Vec<String>> {
        let mut t = l.iter().map(scalar_text).collect::<Option<Vec<_>>>()?;
        t.sort();
        Some(t)
    };
    live.len() == want.len() && texts(live).is_some() && texts(live) == texts(want)
}

/// A scalar as the string CloudFormation would accept for it.
fn scalar_text(v: &Value) -> Option<String> {
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
    fn defaults_the_service_added_are_dropped_and_scalars_keep_the_template_spelling() {
        let live = json!([{"Type": "forward", "Order": 1, "TargetGroupArn": "arn:tg",
            "ForwardConfig": {"TargetGroups": [{"TargetGroupArn": "arn:tg", "Weight": 1}]}}]);
        let asked = json!([{"Type": "forward", "TargetGroupArn": "arn:tg"}]);
        assert_eq!(shaped_like(live, Some(&asked)), asked);
        assert_eq!(
            shaped_like(json!({"Port": 80}), Some(&json!({"Port": "80"}))),
            json!({"Port": "80"})
        );
    }

    #[test]
    fn a_real_change_still_shows() {
        let asked = json!([{"Type": "forward", "TargetGroupArn": "arn:a"}]);
        let live = json!([{"Type": "forward", "TargetGroupArn": "arn:b"}]);
        assert_eq!(shaped_like(live.clone(), Some(&asked)), live);
        let two = json!([{"Type": "forward"}, {"Type": "redirect"}]);
        assert_eq!(shaped_like(two.clone(), Some(&asked)), two);
        assert_eq!(shaped_like(json!(3), None), json!(3));
    }

    #[test]
    fn sets_read_back_in_the_template_order() {
        let asked = json!({"Subnets": ["b", "a"]});
        assert_eq!(
            shaped_like(json!({"Subnets": ["a", "b"]}), Some(&asked)),
            asked
        );
        assert_eq!(
            shaped_like(json!({"Subnets": ["a", "c"]}), Some(&asked)),
            json!({"Subnets": ["a", "c"]})
        );
    }
}
