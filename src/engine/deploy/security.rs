//! The two sides of each changing resource the security analysis reads
//! (`crate::plan::security`): the record's properties (what cdkd sent last) and what this
//! deploy sends. A top-level property whose value is not known before the walk (it reads a
//! resource this run creates) is taken from the template as written, which the analysis shows
//! as `${Logical.Attr}`, as `cdk diff` does. Values that must never be shown are masked first.

use serde_json::{Map, Value};

use super::lookup::{Resolution, Snapshot};
use crate::plan::security::{analyze, is_scrutinized, SecurityChanges, Sides};
use crate::plan::{ChangeKind, ChangeSet};
use crate::state::StackState;

/// The security changes of `changes`.
pub(super) fn gather(
    resolution: &Resolution,
    state: &StackState,
    snapshot: &Snapshot,
    changes: &ChangeSet,
) -> SecurityChanges {
    let needles = resolution.redactor.needles();
    let mut sides: Vec<(
        String,
        String,
        Option<Map<String, Value>>,
        Option<Map<String, Value>>,
    )> = Vec::new();
    for change in changes
        .changes
        .iter()
        .filter(|c| c.kind != ChangeKind::NoChange)
    {
        let id = change.logical_id.as_str();
        let old = (change.kind != ChangeKind::Create)
            .then(|| state.resources.get(id))
            .flatten()
            .filter(|r| is_scrutinized(&r.resource_type));
        if let Some(rec) = old {
            sides.push((
                id.to_owned(),
                rec.resource_type.clone(),
                Some(rec.properties.clone()),
                None,
            ));
        }
        let Some(res) = resolution.template.resources.get(id) else {
            continue;
        };
        if change.kind == ChangeKind::Delete || !is_scrutinized(&res.type_) {
            continue;
        }
        let mut new = match resolution.properties_lenient(snapshot, id) {
            Ok((desired, unknown)) => {
                let mut desired = desired;
                for key in unknown {
                    if let Some(v) = res.properties.get(&key) {
                        desired.insert(key, v.clone());
                    }
                }
                desired
            }
            Err(_) => res.properties.clone(),
        };
        if let Value::Object(masked) =
            needles.redact_value(&Value::Object(std::mem::take(&mut new)))
        {
            new = masked;
        }
        sides.push((id.to_owned(), res.type_.clone(), None, Some(new)));
    }
    analyze(sides.iter().map(|(id, t, old, new)| Sides {
        logical_id: id,
        resource_type: t,
        old: old.as_ref(),
        new: new.as_ref(),
    }))
}
