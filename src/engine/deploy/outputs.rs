//! Outputs after provisioning: each template output resolved against the final records
//! (condition-false outputs skipped), stored under its name, and every `Export.Name` added as
//! an alias key of the same value. `exportNames` lists those aliases: the only keys another
//! stack's `Fn::ImportValue` may bind to.
//!
//! Values are stored as state stores them: a secret dynamic reference as its expression (never
//! fetched here, so an unreadable secret does not skip the output or its export), a
//! NoEcho value as `***` (also what the terminal shows). An alias is not published when its
//! name equals another output's name, or when the name carries a resolved secret or one of
//! the stack's NoEcho values, also once invisible characters are removed and compatibility
//! characters folded (cross-stack-references, "Export names share one namespace with output
//! names"): a name is a KEY in state and in the exports index, where no redaction reaches.
//! An output that fails to resolve is skipped and recorded in `skippedOutputs` with a digest
//! of the template inputs its resolution reads.

use indexmap::IndexMap;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::lookup::{Resolution, Snapshot};
use crate::redact::fold::{self, Hit};
use crate::redact::kept::KeptReferences;
use crate::redact::{mask_leaves, with_expressions, Needles, MASK, MIN_NEEDLE_LENGTH};
use crate::resolve::{PruneReport, SecretsMap};
use crate::state::{Lenient, StackState};
use crate::template::Template;
use crate::ui;

/// A stack's resolved outputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Outputs {
    /// `state.outputs`: outputs by name, plus the export aliases.
    pub stored: Map<String, Value>,
    /// `state.exportNames`.
    pub export_names: Vec<String>,
    /// The outputs by name only (what `--json` and the `Outputs:` block print).
    pub by_name: Map<String, Value>,
    /// `state.skippedOutputs`: outputs that did not resolve → digest of their inputs.
    pub skipped: IndexMap<String, String>,
    /// This run's plaintext of each stored key (outputs and export aliases), kept in memory
    /// only: a consumer deployed later in the same run reads a `***` output through it.
    pub plain: Map<String, Value>,
}

impl Outputs {
    /// Whether `state` already records exactly these outputs and exports.
    pub fn recorded_in(&self, state: &StackState) -> bool {
        let stored = state.outputs.clone().unwrap_or_default();
        let names_match = match state.export_names() {
            Some(names) => {
                names
                    == self
                        .export_names
                        .iter()
                        .map(String::as_str)
                        .collect::<Vec<_>>()
            }
            None => self.export_names.is_empty(),
        };
        let skipped_match = match state.skipped_outputs() {
            Some(s) => *s == self.skipped,
            None => self.skipped.is_empty(),
        };
        stored == self.stored && names_match && skipped_match
    }

    /// Writes these outputs into `state` (`skippedOutputs` omitted when nothing was skipped).
    pub fn apply(&self, state: &mut StackState) {
        state.outputs = Some(self.stored.clone());
        state.set_export_names(self.export_names.clone());
        state.skipped_outputs =
            (!self.skipped.is_empty()).then(|| Lenient::Valid(self.skipped.clone()));
    }
}

pub(super) fn resolve_outputs(
    resolution: &Resolution,
    snapshot: &Snapshot,
    prune: &PruneReport,
    stack: &str,
) -> Outputs {
    let mut out = Outputs::default();
    let mut aliases: Vec<(String, String)> = Vec::new();
    let redactor = &resolution.redactor;
    let no_echo_attributes = redactor.no_echo_attributes();
    for (name, output) in &resolution.template.outputs {
        if prune.is_output_skipped(name) {
            continue;
        }
        let resolved = resolution.output(snapshot, name).and_then(|r| match r {
            None => Ok(None),
            Some(r) => {
                let (sent, secrets) = substitute_output(resolution, &r.value)?;
                Ok(Some((r, sent, secrets)))
            }
        });
        match resolved {
            Ok(None) => {}
            Ok(Some((r, sent, secrets))) => {
                let mut stored = with_expressions(&sent, &secrets);
                let leaves = resolution.no_echo_scope().leaves(&output.value, &sent);
                mask_leaves(&mut stored, &leaves);
                let read = no_echo_attributes.value_leaves(&output.value, &sent);
                mask_leaves(&mut stored, &read);
                if let Some(export) = r.export_name {
                    aliases.push((name.clone(), export));
                }
                out.plain.insert(name.clone(), sent);
                out.by_name.insert(name.clone(), stored);
            }
            Err(e) => {
                ui::warn(redactor.mask_text(&format!("output {name} skipped: {e}")));
                out.skipped.insert(
                    name.clone(),
                    skipped_digest(&resolution.template, name, &resolution.no_echo),
                );
            }
        }
    }
    let needles = redactor.needles();
    for v in out.by_name.values_mut() {
        needles.redact_in_place(v);
    }
    out.stored = out.by_name.clone();
    for (name, export) in aliases {
        let Some(export) = checked_export_name(resolution, &needles, stack, &name, &export) else {
            continue;
        };
        if export == name {
            out.export_names.push(export);
        } else if out.by_name.contains_key(&export) {
            ui::warn(format!(
                "{stack}: output {name} exports the name {export}, which is also the name of \
                 another output; the export alias is not stored"
            ));
        } else if out.export_names.contains(&export) {
            ui::warn(format!(
                "{stack}: output {name} exports the name {export}, which another output of \
                 this stack already exports; the second alias is not stored"
            ));
        } else {
            let value = out.by_name.get(&name).cloned().unwrap_or(Value::Null);
            out.stored.insert(export.clone(), value);
            if let Some(plain) = out.plain.get(&name).cloned() {
                out.plain.insert(export.clone(), plain);
            }
            out.export_names.push(export);
        }
    }
    out
}

/// `--strict-getatt`: the first output that does not resolve against `snapshot`, as (name,
/// message); the deploy then fails instead of skipping the output (state-schema,
/// skippedOutputs). `None` when every output resolves.
pub(super) fn strict_failure(
    resolution: &Resolution,
    snapshot: &Snapshot,
    prune: &PruneReport,
) -> Option<(String, String)> {
    for name in resolution.template.outputs.keys() {
        if prune.is_output_skipped(name) {
            continue;
        }
        let resolved = resolution.output(snapshot, name).and_then(|r| match r {
            None => Ok(()),
            Some(r) => substitute_output(resolution, &r.value).map(|_| ()),
        });
        if let Err(e) = resolved {
            let message = format!(
                "output {name} could not be resolved ({e}); --strict-getatt fails the deploy \
                 instead of skipping the output"
            );
            return Some((name.clone(), resolution.redactor.mask_text(&message)));
        }
    }
    None
}

/// An output's value with its public dynamic references substituted; a secret reference is
/// kept as written, never fetched ([`KeptReferences`]), so the output and its export store
/// the expression even when the secret cannot be read.
fn substitute_output(
    resolution: &Resolution,
    value: &Value,
) -> Result<(Value, SecretsMap), crate::resolve::ResolveError> {
    let (hidden, kept) = KeptReferences::hide(value);
    let (sent, secrets) = resolution.substitute(&hidden, "")?;
    Ok((kept.restore(&sent), secrets))
}

/// The export name of output `name` with its dynamic references substituted, or `None` (with
/// a warning that never shows a secret) when the name may not be published.
fn checked_export_name(
    resolution: &Resolution,
    needles: &Needles,
    stack: &str,
    name: &str,
    export: &str,
) -> Option<String> {
    let refuse = |shown: String, why: &str| {
        ui::warn(format!(
            "{stack}: output {name}: the export name {shown} {why}; the export is not \
             published (rename the export)"
        ));
        None
    };
    let (plain, secrets) = match resolution.substitute(&Value::String(export.to_owned()), "") {
        Ok((Value::String(s), secrets)) => (s, secrets),
        Ok(_) => return refuse(withheld(), "did not resolve to a string"),
        Err(_) => return refuse(withheld(), "holds a dynamic reference that did not resolve"),
    };
    // A needle set holding this name's own plaintexts too.
    let mut all = needles.clone();
    for p in secrets.plaintexts() {
        all.add_secret(p, None);
    }
    let secret_hits: Vec<(&str, Hit)> = all
        .secret_plaintexts()
        .filter_map(|p| {
            let hit = match fold::equals(&plain, p) {
                Some(h) => Some(h),
                None if p.chars().count() >= MIN_NEEDLE_LENGTH || !secrets.is_empty() => {
                    fold::find(&plain, p)
                }
                None => None,
            };
            hit.map(|h| (p, h))
        })
        .collect();
    if !secrets.is_empty() || !secret_hits.is_empty() {
        return refuse(shown(&plain, &secret_hits), "contains a resolved secret");
    }
    let declared = resolution
        .template
        .outputs
        .get(name)
        .and_then(|o| o.export_name.as_ref());
    if let Some(param) = declared.and_then(|t| resolution.no_echo_scope().reads(t)) {
        let hits: Vec<(&str, Hit)> = all
            .no_echo_values()
            .iter()
            .filter_map(|v| fold::find(&plain, v).map(|h| (v.as_str(), h)))
            .collect();
        return refuse(
            shown(&plain, &hits),
            &format!("reads the NoEcho parameter {param}"),
        );
    }
    let no_echo_hits: Vec<(&str, Hit)> = all
        .no_echo_values()
        .iter()
        .filter_map(|v| {
            let hit = match fold::equals(&plain, v) {
                Some(h) => Some(h),
                None if v.chars().count() >= MIN_NEEDLE_LENGTH => fold::find(&plain, v),
                None => None,
            };
            hit.map(|h| (v.as_str(), h))
        })
        .collect();
    if !no_echo_hits.is_empty() {
        return refuse(
            shown(&plain, &no_echo_hits),
            "contains the value of one of the stack's NoEcho parameters (possibly by \
             coincidence: a short value such as 'prod' matches many names)",
        );
    }
    Some(plain)
}

fn withheld() -> String {
    "(withheld)".to_owned()
}

/// The name with each plain hit masked; withheld when a hit is only found folded (masking
/// the folded spelling would still show it).
fn shown(name: &str, hits: &[(&str, Hit)]) -> String {
    if hits.is_empty() || hits.iter().any(|(_, h)| *h == Hit::Folded) {
        return withheld();
    }
    let mut out = name.to_owned();
    for (value, _) in hits {
        out = out.replace(value, MASK);
    }
    format!("'{out}'")
}

/// `sha256:` over what output `name`'s resolution reads from the template as handed in: the
/// output's own entry and every top-level section except Resources and the other outputs, a
/// NoEcho parameter's Default hashed as a constant.
pub(super) fn skipped_digest(
    template: &Template,
    name: &str,
    no_echo: &std::collections::HashSet<String>,
) -> String {
    let mut sections = Map::new();
    let mut put = |key: &str, v: Option<Value>| {
        if let Some(v) = v {
            sections.insert(key.to_owned(), v);
        }
    };
    put(
        "AWSTemplateFormatVersion",
        template.format_version.clone().map(Value::String),
    );
    put(
        "Description",
        template.description.clone().map(Value::String),
    );
    put("Transform", template.transform.clone());
    put("Metadata", template.metadata.clone());
    let params: Map<String, Value> = template
        .parameters
        .iter()
        .map(|(n, p)| {
            let mut raw = p.raw.clone();
            if no_echo.contains(n) {
                if let Some(m) = raw.as_object_mut() {
                    if m.contains_key("Default") {
                        m.insert("Default".into(), Value::String(MASK.into()));
                    }
                }
            }
            (n.clone(), raw)
        })
        .collect();
    put("Parameters", Some(Value::Object(params)));
    put("Mappings", Some(Value::Object(template.mappings.clone())));
    put(
        "Conditions",
        Some(Value::Object(template.conditions.clone())),
    );
    put("Rules", Some(Value::Object(template.rules.clone())));
    for (k, v) in &template.extra {
        sections.insert(k.clone(), v.clone());
    }
    let entry = template
        .outputs
        .get(name)
        .map(|o| o.raw.clone())
        .unwrap_or(Value::Null);
    let doc = serde_json::json!({"output": entry, "sections": sections});
    let digest = Sha256::digest(doc.to_string().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}
