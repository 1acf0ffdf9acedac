//! The by-value pass over one stack record, after the by-position pass ([`super::position`]):
//! every plaintext the run knows becomes its `{{resolve:...}}` expression (or `***` for a
//! NoEcho value) with the deploy's [`Needles`] rules (exact match, the 4-character floor inside
//! longer strings, a fragment inside a complete reference left alone), across resource
//! properties, observedProperties, attributes, orphans and outputs. Secrets shorter than 4
//! characters never take part here: they are repaired only where a position names them.
//! Physical ids and map keys are never rewritten.
//!
//! Output keys today's template cannot name (scrub spec, "A key the template can no longer
//! name"): one a pass rewrote is kept (it now carries the reference); one whose value no pass
//! rewrote is dropped, when the run recorded a secret at all, unless no string of it can be a
//! plaintext, its name holds a secret, it may be a live export alias this run could not
//! reproduce, or another stack reads it (or who reads it could not be verified).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::keys::{display_key, key_findings};
use crate::redact::{Needles, MASK};
use crate::resolve::dynamic::{split_references, Segment};
use crate::state::StackState;

/// What a rewrite changed and found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// String leaves rewritten (both passes).
    pub leaves: usize,
    /// Undeclared output keys dropped (as printed: a name that may carry a secret withheld).
    pub dropped_outputs: Vec<String>,
    /// Undeclared output keys kept because another stack reads them, or because who reads
    /// them could not be verified.
    pub kept_read_outputs: Vec<String>,
    /// Undeclared output keys kept because they may be a live export alias.
    pub kept_alias_outputs: Vec<String>,
    /// Output keys that render a secret (scrub cannot rewrite a key).
    pub key_findings: Vec<String>,
}

impl Rewrite {
    /// Plaintext rewritten or removed.
    pub fn found(&self) -> usize {
        self.leaves + self.dropped_outputs.len()
    }

    /// What keeps the stack from being called clean besides rewrites.
    pub fn unresolved_findings(&self) -> usize {
        self.key_findings.len() + self.kept_read_outputs.len() + self.kept_alias_outputs.len()
    }
}

/// What decides an undeclared output key's fate.
#[derive(Debug)]
pub struct OutputRules<'a> {
    /// Keys today's template can name (declared outputs, fully resolved export aliases).
    pub named: &'a BTreeSet<String>,
    /// Keys another record reads.
    pub read_elsewhere: &'a BTreeSet<String>,
    /// Who reads the keys could not be established: keep every candidate.
    pub readers_unverified: bool,
    /// Whether this run recorded at least one secret for the stack.
    pub run_has_secret: bool,
    /// Every export name of today's template resolved here.
    pub all_exports_resolved: bool,
    /// The resolved export names.
    pub export_names: &'a [String],
}

/// Rewrites `state` in place with `needles` (the run-wide set; short secrets are removed
/// here) and applies the output key rules.
pub fn rewrite(state: &mut StackState, needles: &Needles, rules: &OutputRules<'_>) -> Rewrite {
    let mut out = Rewrite::default();
    let wide = needles.without_short_secrets();
    if !wide.is_empty() {
        for rec in state.resources.values_mut() {
            out.leaves += redact_map(&wide, &mut rec.properties);
            if let Some(a) = rec.attributes.as_mut() {
                out.leaves += redact_map(&wide, a);
            }
            if let Some(o) = rec.observed_properties.as_mut() {
                out.leaves += redact_map(&wide, o);
            }
        }
        if let Some(orphans) = state.orphans.as_mut() {
            for orphan in orphans.iter_mut() {
                let rec = &mut orphan.state;
                out.leaves += redact_map(&wide, &mut rec.properties);
                if let Some(a) = rec.attributes.as_mut() {
                    out.leaves += redact_map(&wide, a);
                }
                if let Some(o) = rec.observed_properties.as_mut() {
                    out.leaves += redact_map(&wide, o);
                }
            }
        }
    }
    let alias_proven = alias_set_proven(state, rules);
    let listed: Option<Vec<String>> = state
        .export_names()
        .map(|n| n.into_iter().map(str::to_owned).collect());
    let Some(outputs) = state.outputs.as_mut() else {
        return out;
    };
    out.key_findings = key_findings(outputs.keys(), needles);
    let keys: Vec<String> = outputs.keys().cloned().collect();
    for key in keys {
        let Some(v) = outputs.get_mut(&key) else {
            continue;
        };
        let n = redact_value(&wide, v);
        out.leaves += n;
        // Rewritten now or by an earlier run: it carries the reference and is kept.
        if rules.named.contains(&key)
            || n > 0
            || !rules.run_has_secret
            || !may_be_plaintext(v)
            || carries_reference(v)
        {
            continue;
        }
        if super::keys::holds_secret(&key, needles) {
            continue;
        }
        let shown = display_key(&key, needles);
        let maybe_alias = match &listed {
            Some(names) => names.contains(&key),
            None => true,
        };
        if maybe_alias && !alias_proven {
            out.kept_alias_outputs.push(shown);
            continue;
        }
        if rules.readers_unverified || rules.read_elsewhere.contains(&key) {
            out.kept_read_outputs.push(shown);
            continue;
        }
        outputs.remove(&key);
        out.dropped_outputs.push(shown);
    }
    out
}

/// Whether every `Export.Name` of today's template resolved to a key the record holds and
/// lists as an export, so an undeclared listed key cannot be a live alias.
fn alias_set_proven(state: &StackState, rules: &OutputRules<'_>) -> bool {
    if !rules.all_exports_resolved {
        return false;
    }
    let Some(listed) = state.export_names() else {
        return rules.export_names.is_empty();
    };
    let outputs = state.outputs.as_ref();
    rules.export_names.iter().all(|e| {
        listed.contains(&e.as_str()) && outputs.is_some_and(|o| o.contains_key(e.as_str()))
    })
}

/// Whether any string of `v` can be a plaintext: one that is not only whole references
/// (or the mask).
fn may_be_plaintext(v: &Value) -> bool {
    match v {
        Value::String(s) => {
            if s == MASK {
                return false;
            }
            match split_references(s) {
                Ok(segments) => segments.iter().any(|seg| match seg {
                    Segment::Text(t) => !t.is_empty(),
                    Segment::Reference(_) => false,
                }),
                Err(_) => true,
            }
        }
        Value::Array(items) => items.iter().any(may_be_plaintext),
        Value::Object(m) => m.values().any(may_be_plaintext),
        _ => false,
    }
}

/// Whether a string of `v` holds a complete `{{resolve:...}}` reference.
fn carries_reference(v: &Value) -> bool {
    match v {
        Value::String(s) => split_references(s)
            .map(|segs| segs.iter().any(|x| matches!(x, Segment::Reference(_))))
            .unwrap_or(false),
        Value::Array(items) => items.iter().any(carries_reference),
        Value::Object(m) => m.values().any(carries_reference),
        _ => false,
    }
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
    fn plaintexts_become_expressions_and_unnameable_outputs_follow_the_rules() {
        let mut n = Needles::default();
        n.add_secret("hunter22", Some("{{resolve:secretsmanager:s}}"));
        n.add_secret("abc", Some("{{resolve:secretsmanager:short}}"));
        n.add_no_echo(&json!("noecho-value"));
        let mut state = StackState::new("S", "us-east-1");
        let mut rec = ResourceState::new(
            "hunter22-id".to_string(),
            "AWS::SSM::Parameter".to_string(),
            obj(json!({"Value": "hunter22", "Short": "abc",
                "Tags": [{"Key": "k", "Value": "x noecho-value"}]})),
        );
        rec.attributes = Some(obj(json!({"Echo": "pre-hunter22-post", "Plain": "ok"})));
        state.resources.insert("A".into(), rec);
        state.outputs = Some(obj(json!({
            "Kept": "hunter22", "Rewritten": "pre-hunter22", "Gone": "unknown-old-secret",
            "Read": "other", "Ref": "{{resolve:ssm:/x}}", "Fine": "x"})));
        state.set_export_names(Vec::new());
        let named: BTreeSet<String> = ["Kept".to_string(), "Fine".to_string()].into();
        let read: BTreeSet<String> = ["Read".to_string()].into();
        let rules = OutputRules {
            named: &named,
            read_elsewhere: &read,
            run_has_secret: true,
            readers_unverified: false,
            all_exports_resolved: true,
            export_names: &[],
        };
        let r = rewrite(&mut state, &n, &rules);
        let a = &state.resources["A"];
        assert_eq!(a.properties["Value"], "{{resolve:secretsmanager:s}}");
        assert_eq!(
            a.properties["Short"], "abc",
            "short secrets only by position"
        );
        assert_eq!(a.properties["Tags"][0]["Value"], "***");
        assert_eq!(
            a.attributes.as_ref().unwrap()["Echo"],
            "pre-{{resolve:secretsmanager:s}}-post"
        );
        assert_eq!(a.physical_id.as_deref(), Some("hunter22-id"));
        let outputs = state.outputs.as_ref().unwrap();
        assert_eq!(outputs["Rewritten"], "pre-{{resolve:secretsmanager:s}}");
        assert!(!outputs.contains_key("Gone"));
        assert!(outputs.contains_key("Ref"));
        assert_eq!(outputs["Read"], "other");
        assert_eq!(r.dropped_outputs, vec!["Gone".to_string()]);
        assert_eq!(r.kept_read_outputs, vec!["Read".to_string()]);
        assert_eq!(r.leaves, 5);
        let again = rewrite(&mut state, &n, &rules);
        assert_eq!(again.found(), 0);
    }

    #[test]
    fn a_listed_alias_the_run_cannot_reproduce_is_kept() {
        let n = {
            let mut n = Needles::default();
            n.add_secret("hunter22", None);
            n
        };
        let mut state = StackState::new("S", "us-east-1");
        state.outputs = Some(obj(json!({"Alias": "value"})));
        state.set_export_names(vec!["Alias".to_string()]);
        let named = BTreeSet::new();
        let read = BTreeSet::new();
        let rules = OutputRules {
            named: &named,
            read_elsewhere: &read,
            run_has_secret: true,
            readers_unverified: false,
            all_exports_resolved: false,
            export_names: &[],
        };
        let r = rewrite(&mut state, &n, &rules);
        assert_eq!(r.kept_alias_outputs, vec!["Alias".to_string()]);
        assert!(state.outputs.as_ref().unwrap().contains_key("Alias"));
    }
}
