//! Resource rows: the deploy's change set turned into what `cdkd diff` shows, with only the
//! sub-properties that actually differ (unchanged siblings left out), the propagated changes
//! named on the property that reads the moved resource, and the provisioning route.
//!
//! The comparison itself is the deploy's ([`crate::engine::deploy::values_equal`]): a key
//! only the record holds is a removal and shown as one.

use serde::Serialize;
use serde_json::Value;

use crate::engine::deploy::preview::Preview;
use crate::engine::deploy::{optional_equal, values_equal};
use crate::plan::{references, ChangeKind, ChangeReason, ResourceChange};
use crate::state::StackState;

/// One resource a deploy would touch.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDiff {
    pub logical_id: String,
    pub resource_type: String,
    /// `CREATE`, `UPDATE`, `REPLACE` or `DELETE`.
    pub change: ChangeKind,
    /// `sdk` or `cc-api`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<&'static str>,
    /// For a type change: the recorded type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_type: Option<String>,
    pub reasons: Vec<ChangeReason>,
    pub properties: Vec<PropertyChange>,
}

/// One changed leaf (or whole value) of a property.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PropertyChange {
    /// `PolicyDocument.Statement[0].Resource`.
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<Value>,
    pub requires_replacement: bool,
    pub replacement_propagated: bool,
    pub attribute_propagated: bool,
    /// The new value reads an attribute state does not record and AWS could not be asked
    /// for: shown as the template's expression, resolved by the deploy.
    #[serde(skip_serializing_if = "is_false")]
    pub known_after_deploy: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The rows of every resource the plan does not leave alone, in the plan's order.
pub(crate) fn resource_rows(pre: &Preview, state: &StackState) -> Vec<ResourceDiff> {
    pre.changes
        .changes
        .iter()
        .filter(|c| c.kind != ChangeKind::NoChange)
        .map(|c| row(pre, state, c))
        .collect()
}

fn row(pre: &Preview, state: &StackState, c: &ResourceChange) -> ResourceDiff {
    let mut properties = Vec::new();
    let mut old_type = None;
    for reason in &c.reasons {
        if let ChangeReason::TypeChanged { old, .. } = reason {
            old_type = Some(old.clone());
        }
    }
    if matches!(c.kind, ChangeKind::Update | ChangeKind::Replace) {
        for d in &c.property_diffs {
            let mut leaves = Vec::new();
            leaf_changes(&d.path, d.old.as_ref(), d.new.as_ref(), &mut leaves);
            // A possible change (plan.rs): its new side is still the template's expression.
            let unresolved = d.new.as_ref().is_some_and(|n| !references(n).is_empty());
            for (path, old, new) in leaves {
                properties.push(PropertyChange {
                    path,
                    old,
                    new,
                    requires_replacement: d.requires_replacement,
                    replacement_propagated: false,
                    attribute_propagated: false,
                    known_after_deploy: unresolved,
                });
            }
        }
        propagated(pre, state, c, &mut properties);
    }
    for p in &mut properties {
        p.old = p.old.as_ref().map(|v| pre.needles.redact_value(v));
        p.new = p.new.as_ref().map(|v| pre.needles.redact_value(v));
    }
    let kind = if c.kind == ChangeKind::Update && properties.iter().any(|p| p.requires_replacement)
    {
        ChangeKind::Replace
    } else {
        c.kind
    };
    ResourceDiff {
        logical_id: c.logical_id.clone(),
        resource_type: c.resource_type.clone(),
        change: kind,
        route: pre.routes.get(&c.logical_id).map(|r| r.as_str()),
        old_type,
        reasons: c.reasons.clone(),
        properties,
    }
}

/// The property lines of a change propagated from a moved dependency: each top-level property
/// that reads it and did not itself change, shown as the recorded value against the template's
/// reference (the value the deploy re-resolves once the dependency is done).
fn propagated(
    pre: &Preview,
    state: &StackState,
    c: &ResourceChange,
    out: &mut Vec<PropertyChange>,
) {
    let Some(res) = pre.template.resources.get(&c.logical_id) else {
        return;
    };
    let record = state.resources.get(&c.logical_id);
    for reason in &c.reasons {
        let (from, replacement) = match reason {
            ChangeReason::ReplacementPropagated { from } => (from, true),
            ChangeReason::AttributePropagated { from, .. } => (from, false),
            _ => continue,
        };
        for (key, value) in &res.properties {
            let reads = references(value).iter().any(|r| &r.target == from);
            let shown = out.iter().any(|p| {
                p.path == *key
                    || p.path.starts_with(&format!("{key}."))
                    || p.path.starts_with(&format!("{key}["))
            });
            if !reads || shown {
                continue;
            }
            let old = record.and_then(|r| r.properties.get(key));
            let requires_replacement = replacement
                && crate::engine::deploy::preview::replaces(&c.resource_type, key, None, None);
            // Only the leaves that read the moved dependency.
            let mut leaves = Vec::new();
            leaf_changes(key, old, Some(value), &mut leaves);
            leaves.retain(|(_, _, new)| {
                new.as_ref()
                    .is_some_and(|n| references(n).iter().any(|r| &r.target == from))
            });
            if leaves.is_empty() {
                leaves.push((key.clone(), old.cloned(), Some(value.clone())));
            }
            for (path, old, new) in leaves {
                out.push(PropertyChange {
                    path,
                    old,
                    new,
                    requires_replacement,
                    replacement_propagated: replacement,
                    attribute_propagated: !replacement,
                    // The new side is the template's reference: its value exists once the
                    // dependency is done.
                    known_after_deploy: true,
                });
            }
        }
    }
}

/// The leaves of `new` that differ from `old`, with their paths under `path`. A key only `old`
/// holds is a removal (`new` is `None`); lists of the same length are compared item by item,
/// others whole.
pub fn leaf_changes(
    path: &str,
    old: Option<&Value>,
    new: Option<&Value>,
    out: &mut Vec<(String, Option<Value>, Option<Value>)>,
) {
    match (old, new) {
        (Some(Value::Object(o)), Some(Value::Object(n))) => {
            for (k, nv) in n {
                let ov = o.get(k);
                if optional_equal(Some(nv), ov) {
                    continue;
                }
                leaf_changes(&format!("{path}.{k}"), ov, Some(nv), out);
            }
            for (k, ov) in o {
                if !n.contains_key(k) && !ov.is_null() {
                    leaf_changes(&format!("{path}.{k}"), Some(ov), None, out);
                }
            }
        }
        (Some(Value::Array(o)), Some(Value::Array(n))) if o.len() == n.len() => {
            for (i, (ov, nv)) in o.iter().zip(n).enumerate() {
                if values_equal(nv, ov) {
                    continue;
                }
                leaf_changes(&format!("{path}[{i}]"), Some(ov), Some(nv), out);
            }
        }
        _ => out.push((
            path.to_owned(),
            old.filter(|v| !v.is_null()).cloned(),
            new.filter(|v| !v.is_null()).cloned(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn leaves(old: Value, new: Value) -> Vec<(String, Option<Value>, Option<Value>)> {
        let mut out = Vec::new();
        leaf_changes("P", Some(&old), Some(&new), &mut out);
        out
    }

    #[test]
    fn a_key_only_the_record_holds_is_shown_removed() {
        let out = leaves(
            json!({"Variables": {"A": "1", "B": "2"}}),
            json!({"Variables": {"A": "1"}}),
        );
        assert_eq!(
            out,
            vec![("P.Variables.B".to_owned(), Some(json!("2")), None)]
        );
    }

    #[test]
    fn only_changed_leaves_are_shown() {
        let out = leaves(
            json!({"Statement": [{"Action": "a", "Resource": "r1"}], "Version": "2012"}),
            json!({"Statement": [{"Action": "a", "Resource": "r2"}], "Version": "2012"}),
        );
        assert_eq!(
            out,
            vec![(
                "P.Statement[0].Resource".to_owned(),
                Some(json!("r1")),
                Some(json!("r2"))
            )]
        );
    }

    #[test]
    fn null_keys_are_absent_and_lists_of_other_length_are_whole() {
        assert!(leaves(json!({"A": 1, "Default": null}), json!({"A": "1"})).is_empty());
        let out = leaves(json!({"L": [1]}), json!({"L": [1, 2]}));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, "P.L");
        let out = leaves(json!({}), json!({"New": "x"}));
        assert_eq!(out, vec![("P.New".to_owned(), None, Some(json!("x")))]);
    }

    #[test]
    fn scalars_change_whole() {
        let out = leaves(json!(60), json!(120));
        assert_eq!(
            out,
            vec![("P".to_owned(), Some(json!(60)), Some(json!(120)))]
        );
    }
}
