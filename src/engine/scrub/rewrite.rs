//! Rewriting one stack record: every plaintext the run knows becomes its `{{resolve:...}}`
//! expression (or `***` for a NoEcho value), by value with the deploy's rules ([`Needles`]:
//! exact match at any length, the 4-character floor inside longer strings), across resource
//! properties, observedProperties, attributes, orphans and outputs. Physical ids are never
//! rewritten. An output the template no longer declares that held a secret is dropped, unless
//! another record reads it (then it is kept, redacted, and reported).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::redact::Needles;
use crate::state::StackState;

/// What a rewrite changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// String leaves rewritten (resources, orphans, outputs).
    pub leaves: usize,
    /// Undeclared outputs dropped because they held a secret.
    pub dropped_outputs: Vec<String>,
    /// Undeclared outputs that held a secret and are kept because another stack reads them.
    pub kept_read_outputs: Vec<String>,
}

impl Rewrite {
    pub fn found(&self) -> usize {
        self.leaves + self.dropped_outputs.len()
    }
}

/// Rewrites `state` in place. `declared` holds the template's output keys; `read_elsewhere`
/// the output keys another record reads.
pub fn rewrite(
    state: &mut StackState,
    needles: &Needles,
    declared: &BTreeSet<String>,
    read_elsewhere: &BTreeSet<String>,
) -> Rewrite {
    let mut out = Rewrite::default();
    if needles.is_empty() {
        return out;
    }
    for rec in state.resources.values_mut() {
        out.leaves += redact_map(needles, &mut rec.properties);
        if let Some(a) = rec.attributes.as_mut() {
            out.leaves += redact_map(needles, a);
        }
        if let Some(o) = rec.observed_properties.as_mut() {
            out.leaves += redact_map(needles, o);
        }
    }
    if let Some(orphans) = state.orphans.as_mut() {
        for orphan in orphans.iter_mut() {
            let rec = &mut orphan.state;
            out.leaves += redact_map(needles, &mut rec.properties);
            if let Some(a) = rec.attributes.as_mut() {
                out.leaves += redact_map(needles, a);
            }
            if let Some(o) = rec.observed_properties.as_mut() {
                out.leaves += redact_map(needles, o);
            }
        }
    }
    if let Some(outputs) = state.outputs.as_mut() {
        let keys: Vec<String> = outputs.keys().cloned().collect();
        for key in keys {
            let Some(v) = outputs.get_mut(&key) else {
                continue;
            };
            let n = redact_value(needles, v);
            if n == 0 {
                continue;
            }
            if declared.contains(&key) {
                out.leaves += n;
            } else if read_elsewhere.contains(&key) {
                out.leaves += n;
                out.kept_read_outputs.push(key);
            } else {
                outputs.remove(&key);
                out.dropped_outputs.push(key);
            }
        }
    }
    out
}

fn redact_map(needles: &Needles, map: &mut Map<String, Value>) -> usize {
    map.values_mut().map(|v| redact_value(needles, v)).sum()
}

/// Redacts every string leaf of `v`; returns how many changed.
fn redact_value(needles: &Needles, v: &mut Value) -> usize {
    match v {
        Value::String(s) => match needles.redact_str(s) {
            Some(r) if r != *s => {
                *s = r;
                1
            }
            _ => 0,
        },
        Value::Array(items) => items.iter_mut().map(|i| redact_value(needles, i)).sum(),
        Value::Object(map) => redact_map(needles, map),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ResourceState;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn plaintexts_become_expressions_and_undeclared_secret_outputs_are_dropped() {
        let mut n = Needles::default();
        n.add_secret("hunter22", Some("{{resolve:secretsmanager:s}}"));
        n.add_no_echo(&json!("noecho-value"));
        let mut state = StackState::new("S", "us-east-1");
        let mut rec = ResourceState::new(
            "hunter22-id".to_string(),
            "AWS::SSM::Parameter".to_string(),
            obj(json!({"Value": "hunter22", "Tags": [{"Key": "k", "Value": "x noecho-value"}]})),
        );
        rec.attributes = Some(obj(json!({"Echo": "pre-hunter22-post", "Plain": "ok"})));
        state.resources.insert("A".into(), rec);
        state.outputs = Some(obj(
            json!({"Kept": "hunter22", "Gone": "hunter22", "Read": "hunter22", "Fine": "x"}),
        ));
        let declared: BTreeSet<String> = ["Kept".to_string(), "Fine".to_string()].into();
        let read: BTreeSet<String> = ["Read".to_string()].into();
        let r = rewrite(&mut state, &n, &declared, &read);
        let a = &state.resources["A"];
        assert_eq!(a.properties["Value"], "{{resolve:secretsmanager:s}}");
        assert_eq!(a.properties["Tags"][0]["Value"], "***");
        assert_eq!(
            a.attributes.as_ref().unwrap()["Echo"],
            "pre-{{resolve:secretsmanager:s}}-post"
        );
        assert_eq!(a.physical_id.as_deref(), Some("hunter22-id"));
        let outputs = state.outputs.as_ref().unwrap();
        assert!(!outputs.contains_key("Gone"));
        assert_eq!(outputs["Read"], "{{resolve:secretsmanager:s}}");
        assert_eq!(r.dropped_outputs, vec!["Gone".to_string()]);
        assert_eq!(r.kept_read_outputs, vec!["Read".to_string()]);
        assert_eq!(r.leaves, 5);
        // A second pass finds nothing.
        let again = rewrite(&mut state, &n, &declared, &read);
        assert_eq!(again.found(), 0);
    }
}
