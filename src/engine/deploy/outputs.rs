//! Outputs after provisioning: each template output resolved against the final records
//! (condition-false outputs skipped), stored under its name, and every `Export.Name` added as
//! an alias key of the same value. `exportNames` lists those aliases: the only keys another
//! stack's `Fn::ImportValue` may bind to.

use serde_json::{Map, Value};

use super::lookup::{Resolution, Snapshot};
use crate::resolve::PruneReport;
use crate::state::StackState;
use crate::ui;

/// A stack's resolved outputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Outputs {
    /// `state.outputs`: outputs by name, plus the export aliases.
    pub stored: Map<String, Value>,
    /// `state.exportNames`.
    pub export_names: Vec<String>,
    /// The outputs by name only (what `--json` prints).
    pub by_name: Map<String, Value>,
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
        stored == self.stored && names_match
    }
}

pub(super) fn resolve_outputs(
    resolution: &Resolution,
    snapshot: &Snapshot,
    prune: &PruneReport,
    stack: &str,
) -> Outputs {
    let mut out = Outputs::default();
    let mut aliases: Vec<(String, String, Value)> = Vec::new();
    for name in resolution.template.outputs.keys() {
        if prune.is_output_skipped(name) {
            continue;
        }
        match resolution.output(snapshot, name) {
            Ok(None) => {}
            Ok(Some(resolved)) => {
                if let Some(export) = resolved.export_name {
                    aliases.push((name.clone(), export, resolved.value.clone()));
                }
                out.by_name.insert(name.clone(), resolved.value);
            }
            Err(e) => ui::warn(format!("output {name} skipped: {e}")),
        }
    }
    out.stored = out.by_name.clone();
    for (name, export, value) in aliases {
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
            out.stored.insert(export.clone(), value);
            out.export_names.push(export);
        }
    }
    out
}
