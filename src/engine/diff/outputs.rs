//! The outputs half of the diff: the bag a deploy would store (`state.outputs`: outputs by
//! name plus export aliases) compared key by key with the stored one, which is the predicate the
//! deploy gates its outputs write on (architecture-internals, "The Outputs diff").
//!
//! Rules kept here:
//! - an output the last deploy skipped (its `skippedOutputs` digest unchanged, the key still
//!   absent from state, nothing it references changing) is previewed as absent;
//! - any other output that does not resolve: with a resource change pending the Outputs
//!   section reports no delta (the output usually reads a resource not created yet), with a
//!   warning when a difference survives; with no resource change the deploy's no-change merge
//!   is previewed (the failed output keeps its stored value);
//! - a stored value that may be legacy secret plaintext is withheld: record-wide when an
//!   output the template declares as a secret dynamic reference is stored as anything but a
//!   reference, per key for a stored key the template no longer names while the template still
//!   holds a secret reference.

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::plan::references;
use crate::redact::Needles;
use crate::template::Template;

/// What happens to one key of the outputs bag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OutputChange {
    Add,
    Remove,
    Update,
}

/// One key of the outputs bag that a deploy would change.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputDiff {
    pub key: String,
    /// The key is an `Export.Name` alias rather than an output name.
    pub export: bool,
    pub change: OutputChange,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<Value>,
    /// The stored value is not shown: it may be secret plaintext an older cdkd stored.
    pub old_withheld: bool,
}

/// What the comparison reads.
pub struct OutputsInput<'a> {
    pub stack: &'a str,
    /// The bag a deploy would store now.
    pub desired: &'a Map<String, Value>,
    /// Outputs that did not resolve → digest of their inputs.
    pub failed: &'a IndexMap<String, String>,
    pub stored: Option<&'a Map<String, Value>>,
    pub recorded_skipped: Option<&'a IndexMap<String, String>>,
    pub changed_resources: &'a [String],
    pub template: &'a Template,
    pub condition_skipped: &'a [String],
    pub needles: &'a Needles,
}

/// The output rows and the notes (warnings) about what was not compared.
pub fn compare(input: &OutputsInput<'_>) -> (Vec<OutputDiff>, Vec<String>) {
    let empty = Map::new();
    let stored = input.stored.unwrap_or(&empty);
    let mut notes = Vec::new();

    // Failed outputs the last deploy skipped the same way are absent on both sides.
    let untrusted: Vec<&String> = input
        .failed
        .iter()
        .filter(|(name, digest)| {
            let recorded = input
                .recorded_skipped
                .and_then(|s| s.get(*name))
                .is_some_and(|d| d == *digest);
            let reads_changed = input.template.outputs.get(*name).is_some_and(|o| {
                references(&o.value)
                    .iter()
                    .any(|r| input.changed_resources.contains(&r.target))
            });
            !(recorded && !stored.contains_key(*name) && !reads_changed)
        })
        .map(|(name, _)| name)
        .collect();

    let mut desired = input.desired.clone();
    if !untrusted.is_empty() {
        let names: Vec<&str> = untrusted.iter().map(|s| s.as_str()).collect();
        if !input.changed_resources.is_empty() {
            let rows = rows(input, &desired, stored);
            if rows.iter().any(|r| !untrusted.contains(&&r.key)) {
                notes.push(format!(
                    "{}: the Outputs section is not compared: output(s) {} cannot be resolved \
                     before the resources this deploy changes exist",
                    input.stack,
                    names.join(", ")
                ));
            }
            return (Vec::new(), notes);
        }
        // The deploy's no-change merge: a failed output keeps its stored value.
        for name in &untrusted {
            if let Some(v) = stored.get(*name) {
                desired.insert((*name).clone(), v.clone());
                // Its literal export alias is kept beside it (kept_outputs.rs).
                let alias = input
                    .template
                    .outputs
                    .get(*name)
                    .and_then(|o| o.export_name.as_ref());
                if let Some(Value::String(alias)) = alias {
                    if let Some(v) = stored.get(alias) {
                        desired.insert(alias.clone(), v.clone());
                    }
                }
            }
        }
        notes.push(format!(
            "{}: output(s) {} could not be resolved here and are compared at their stored values",
            input.stack,
            names.join(", ")
        ));
    }
    (rows(input, &desired, stored), notes)
}

fn rows(
    input: &OutputsInput<'_>,
    desired: &Map<String, Value>,
    stored: &Map<String, Value>,
) -> Vec<OutputDiff> {
    let declared = declared_keys(input.template);
    let suspect_record = legacy_secret_record(input.template, input.condition_skipped, stored);
    let template_has_secret = template_holds_secret_reference(input.template);
    let exonerated = stored.values().any(is_plain_ssm_expression);
    let is_export = |k: &str| !input.template.outputs.contains_key(k);
    let mut out = Vec::new();
    for (key, new) in desired {
        match stored.get(key) {
            Some(old) if old == new => {}
            old => out.push(OutputDiff {
                key: key.clone(),
                export: is_export(key),
                change: if old.is_some() {
                    OutputChange::Update
                } else {
                    OutputChange::Add
                },
                old: old.cloned(),
                new: Some(new.clone()),
                old_withheld: false,
            }),
        }
    }
    for (key, old) in stored {
        if desired.contains_key(key) {
            continue;
        }
        let withheld_key = !declared.contains(key) && template_has_secret && !exonerated;
        out.push(OutputDiff {
            key: key.clone(),
            export: is_export(key),
            change: OutputChange::Remove,
            old: Some(old.clone()),
            new: None,
            old_withheld: withheld_key,
        });
    }
    for row in &mut out {
        if suspect_record || row.old_withheld {
            row.old_withheld = row.old.is_some();
            row.old = None;
        }
        row.old = row.old.as_ref().map(|v| input.needles.redact_value(v));
        row.new = row.new.as_ref().map(|v| input.needles.redact_value(v));
    }
    out
}

/// Every output name and every literal `Export.Name` the template declares.
fn declared_keys(template: &Template) -> Vec<String> {
    let mut keys: Vec<String> = template.outputs.keys().cloned().collect();
    for o in template.outputs.values() {
        if let Some(Value::String(name)) = &o.export_name {
            keys.push(name.clone());
        }
    }
    keys
}

/// Whether `value` holds a secret-bearing dynamic reference.
fn holds_secret_reference(value: &Value) -> bool {
    match value {
        Value::String(s) => {
            s.contains("{{resolve:secretsmanager:") || s.contains("{{resolve:ssm-secure:")
        }
        Value::Array(items) => items.iter().any(holds_secret_reference),
        Value::Object(m) => m.values().any(holds_secret_reference),
        _ => false,
    }
}

/// Whether `value` is exactly one dynamic reference (`{{resolve:...}}`, nothing around it).
fn is_whole_reference(value: &Value) -> bool {
    value.as_str().is_some_and(|s| {
        s.starts_with("{{resolve:") && s.ends_with("}}") && s.matches("{{resolve:").count() == 1
    })
}

pub(super) fn is_plain_ssm_expression(value: &Value) -> bool {
    is_whole_reference(value)
        && value
            .as_str()
            .is_some_and(|s| s.starts_with("{{resolve:ssm:"))
}

/// A record written before secret redaction: an output the template declares as a secret
/// reference (condition-skipped ones included) is stored as something other than a reference.
fn legacy_secret_record(
    template: &Template,
    _condition_skipped: &[String],
    stored: &Map<String, Value>,
) -> bool {
    template.outputs.iter().any(|(name, o)| {
        holds_secret_reference(&o.value)
            && stored
                .get(name)
                .is_some_and(|v| !is_whole_reference(v) && !holds_secret_reference(v))
    })
}

pub(super) fn template_holds_secret_reference(template: &Template) -> bool {
    template
        .outputs
        .values()
        .any(|o| holds_secret_reference(&o.value))
        || template
            .resources
            .values()
            .any(|r| r.properties.values().any(holds_secret_reference))
}

#[cfg(test)]
#[path = "outputs_tests.rs"]
mod tests;
