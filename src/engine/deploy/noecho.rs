//! Whether a NoEcho value moved behind an unchanged template (state-schema, "How a deploy
//! compares a masked value").
//!
//! The record holds `***` where a NoEcho parameter filled a property, so comparing with it
//! cannot see a new value. A resource the plan found unchanged whose record masks a position is
//! therefore read back from AWS, and each masked position compared with the value this deploy
//! would send: a difference makes it an update, shown and recorded with `***` on both sides. A
//! readback that cannot report the property (or fails) leaves it unchanged: there is nothing
//! to compare with. A create-only property is replaced on a readback only where the readback
//! right after its create proved AWS reports it exactly ([`record_exact_echo`], recorded in
//! `noEchoExactEchoLeaves`); elsewhere the provider is not known to report it exactly, so the
//! deploy warns and names the property instead.

use serde_json::{Map, Value};

use super::changes::{diff_properties, values_equal};
use super::lookup::{record_provider, Snapshot};
use super::plan::Plan;
use super::prepare::Prepared;
use super::DeployEnv;
use crate::plan::{ChangeKind, ChangeReason, PropertyDiff, ResourceChange};
use crate::provider::{ProviderContext, ResourceRequest};
use crate::redact::positions::get_at;
use crate::redact::MASK;
use crate::resolve::partition_for_region;
use crate::state::{PathSegment, StackState};
use crate::ui;

/// Whether `change` is an update a readback of a masked position found.
pub(super) fn readback_changed(change: &ResourceChange) -> bool {
    let mask = Some(Value::String(MASK.to_owned()));
    change
        .property_diffs
        .iter()
        .any(|d| d.old == mask && d.new == mask)
}

/// Reads back every unchanged resource whose record masks a NoEcho position and turns the
/// ones whose value moved into updates.
pub(super) async fn recheck(
    env: &DeployEnv,
    prepared: &Prepared,
    state: &StackState,
    plan: &mut Plan,
) {
    let resolution = &prepared.resolution;
    if resolution.no_echo.is_empty() {
        return;
    }
    let (stack, region) = (resolution.ctx.stack_name(), resolution.ctx.region());
    let partition = partition_for_region(region).name;
    let snapshot = Snapshot::from_records(&env.registry, state.resources.iter());
    let ctx = ProviderContext {
        clients: &env.clients,
        stack_name: stack,
        region,
        account_id: &env.account_id,
        partition,
        no_wait: true,
    };
    let mut moved: Vec<(String, Vec<PropertyDiff>)> = Vec::new();
    for (id, planned) in &plan.planned {
        if planned.change.kind != ChangeKind::NoChange || planned.deferred {
            continue;
        }
        let Some(rec) = state.resources.get(id) else {
            continue;
        };
        let record = Value::Object(rec.properties.clone());
        let masked: Vec<&Vec<PathSegment>> = rec
            .no_echo_leaves
            .iter()
            .flatten()
            .filter(|leaf| get_at(&record, leaf).and_then(Value::as_str) == Some(MASK))
            .collect();
        let (Some(physical_id), false) = (rec.physical_id.as_deref(), masked.is_empty()) else {
            continue;
        };
        let Ok((desired, _)) = resolution.properties_lenient(&snapshot, id) else {
            continue;
        };
        let Ok(secured) = resolution.secure(id, desired) else {
            continue;
        };
        let Some((_, provider)) = record_provider(&env.registry, rec) else {
            continue;
        };
        let req = ResourceRequest {
            logical_id: id,
            resource_type: &rec.resource_type,
            properties: &secured.sent,
            client_token: None,
        };
        let live = match provider.read(&ctx, &req, physical_id).await {
            Ok(Some(live)) => Value::Object(live),
            _ => continue,
        };
        let sent = Value::Object(secured.sent.clone());
        let mut diffs = Vec::new();
        for leaf in masked {
            let (Some(now), Some(want)) = (get_at(&live, leaf), get_at(&sent, leaf)) else {
                continue;
            };
            if values_equal(want, now) {
                continue;
            }
            let Some(PathSegment::Key(top)) = leaf.first() else {
                continue;
            };
            let exact = rec
                .no_echo_exact_echo_leaves
                .iter()
                .flatten()
                .any(|e| key_path(leaf).as_ref() == Some(e));
            if create_only(&rec.resource_type, top) && exact {
                ui::warn(format!(
                    "{stack}: {id} ({}): the value at its NoEcho position {top} changed since \
                     the last deploy; {top} cannot change in place, so the resource is replaced",
                    rec.resource_type
                ));
                diffs.push(PropertyDiff {
                    path: top.clone(),
                    old: Some(Value::String(MASK.to_owned())),
                    new: Some(Value::String(MASK.to_owned())),
                    requires_replacement: true,
                });
                continue;
            }
            if create_only(&rec.resource_type, top) {
                ui::warn(format!(
                    "{stack}: {id} ({}): the value at its NoEcho position {top} changed since \
                     the last deploy, but {top} cannot change in place and the provider is not \
                     known to report it exactly, so the resource is kept; replace it \
                     explicitly to apply the new value",
                    rec.resource_type
                ));
                continue;
            }
            diffs.push(PropertyDiff {
                path: top.clone(),
                old: Some(Value::String(MASK.to_owned())),
                new: Some(Value::String(MASK.to_owned())),
                requires_replacement: false,
            });
        }
        if !diffs.is_empty() {
            diffs.dedup_by(|a, b| a.path == b.path);
            moved.push((id.clone(), diffs));
        }
    }
    for (id, diffs) in moved {
        let replace = diffs.iter().any(|d| d.requires_replacement);
        let update = |c: &mut ResourceChange| {
            c.kind = if replace {
                ChangeKind::Replace
            } else {
                ChangeKind::Update
            };
            c.reasons.push(ChangeReason::PropertiesChanged);
            c.property_diffs.extend(diffs.iter().cloned());
        };
        if let Some(p) = plan.planned.get_mut(&id) {
            update(&mut p.change);
        }
        if let Some(c) = plan.changes.changes.iter_mut().find(|c| c.logical_id == id) {
            update(c);
        }
    }
}

/// A position as `noEchoExactEchoLeaves` spells it: object keys only (a value inside a list
/// is never trusted, a provider may reorder it).
fn key_path(leaf: &[PathSegment]) -> Option<Vec<String>> {
    leaf.iter()
        .map(|s| match s {
            PathSegment::Key(k) => Some(k.clone()),
            PathSegment::Index(_) => None,
        })
        .collect()
}

/// After a resource is created (or replaced on a create-only change), reads it back once,
/// handed its masked record, and records in `noEchoExactEchoLeaves` each NoEcho position AWS
/// reports exactly: a whole string under a create-only property, reached through object keys.
/// A readback that fails or cannot report the property records nothing.
pub(super) async fn record_exact_echo(
    run: &super::execute::Run,
    id: &str,
    resource_type: &str,
    secured: &super::lookup::Secured,
) {
    let sent = Value::Object(secured.sent.clone());
    let eligible: Vec<(&Vec<PathSegment>, Vec<String>)> = secured
        .no_echo_leaves
        .iter()
        .filter_map(|leaf| Some((leaf, key_path(leaf)?)))
        .filter(|(leaf, keys)| {
            get_at(&sent, leaf).is_some_and(Value::is_string)
                && keys
                    .first()
                    .is_some_and(|top| create_only(resource_type, top))
        })
        .collect();
    if eligible.is_empty() {
        return;
    }
    let Some(rec) = run.book.record(id).await else {
        return;
    };
    let (Some(physical_id), Some((_, provider))) = (
        rec.physical_id.as_deref(),
        record_provider(&run.registry, &rec),
    ) else {
        return;
    };
    let req = ResourceRequest {
        logical_id: id,
        resource_type,
        properties: &secured.stored,
        client_token: None,
    };
    let ctx = run.provider_context();
    let live = match provider.read(&ctx, &req, physical_id).await {
        Ok(Some(live)) => Value::Object(live),
        _ => return,
    };
    let exact: Vec<Vec<String>> = eligible
        .into_iter()
        .filter(
            |(leaf, _)| match (get_at(&live, leaf), get_at(&sent, leaf)) {
                (Some(Value::String(a)), Some(Value::String(b))) => a == b,
                _ => false,
            },
        )
        .map(|(_, keys)| keys)
        .collect();
    if !exact.is_empty() {
        run.resolution.redactor.record_exact_echo(id, exact);
    }
}

/// Whether top-level property `key` of `resource_type` is create-only.
fn create_only(resource_type: &str, key: &str) -> bool {
    let mut new = Map::new();
    new.insert(key.to_owned(), Value::String("a".into()));
    let mut old = Map::new();
    old.insert(key.to_owned(), Value::String("b".into()));
    diff_properties(resource_type, &new, &old, &[])
        .iter()
        .any(|d| d.requires_replacement)
}
