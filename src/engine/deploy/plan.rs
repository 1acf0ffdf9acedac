//! The change of each resource, computed before anything is touched.
//!
//! Resources are visited in deploy order, so when one is reached every resource it references
//! already has its verdict. A resource whose references are all unchanged is resolved against
//! the physical ids and attributes in state and compared with its record: that verdict is
//! final. A resource that references something created, updated or replaced in this run gets a
//! tentative verdict (its literal changes, or an update "propagated" from the dependency) and is
//! decided again inside the walk, once the dependency is done and its new id and attributes are
//! known; nothing is sent to AWS when its resolved properties turn out unchanged. A property
//! reading an attribute the record of an existing resource lacks, which the read-back before
//! planning could not find either (`unrecorded.rs`), is a possible change decided there too,
//! never skipped as unchanged.
//!
//! A replacement of a stateful type without `--force-stateful-recreation` is refused here,
//! before any resource changes.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::changes::{
    diff_properties, has_dynamic_reference, is_stateful, replaces, stateful_refusal,
};
use super::lookup::{provisioned_by, referenced_ids, Resolution, Snapshot};
use super::prepare::Prepared;
use super::DeployError;
use crate::plan::{ChangeKind, ChangeReason, ChangeSet, PropertyDiff, ResourceChange};
use crate::provider::{is_skipped_type, Registry, Route};
use crate::state::{ResourcePolicy, ResourceState, StackState};
use crate::template::Resource;

/// The plan for one resource of the template.
#[derive(Debug, Clone)]
pub(super) struct Planned {
    pub change: ResourceChange,
    pub route: Route,
    /// Decided again inside the walk, once what it references is done.
    pub deferred: bool,
    /// The logical ids it depends on (references and `DependsOn`), recorded in state.
    pub dependencies: Vec<String>,
    /// Top-level properties whose new value the plan cannot know: they read a value this run
    /// moves that cannot be predicted, or an attribute nothing recorded.
    pub unresolved: Vec<String>,
}

/// What a deploy of one stack will do.
pub(super) struct Plan {
    pub changes: ChangeSet,
    pub planned: HashMap<String, Planned>,
    /// Recorded resources no longer in the template (or whose Condition is now false).
    pub removed: Vec<String>,
    /// Unchanged resources whose record fields move (policies, construct path, dependencies):
    /// rewritten in state without an AWS call.
    pub refreshed: Vec<(String, ResourceState)>,
    /// One line per changing resource whose route is not its type's usual one, saying why
    /// (`route::choose`).
    pub route_notes: Vec<String>,
}

impl Plan {
    /// Whether any resource is created, updated, replaced or deleted.
    pub fn has_resource_changes(&self) -> bool {
        self.changes.has_changes()
    }

    /// `1 to create, 2 to update, 1 to re-check`: resources whose only reason to change is
    /// a dependency that changes are counted as "to re-check", since the walk decides them.
    pub fn describe(&self) -> String {
        let recheck = self
            .planned
            .values()
            .filter(|p| {
                p.deferred
                    && p.change.kind == ChangeKind::Update
                    && p.change.property_diffs.is_empty()
            })
            .count();
        let c = self.changes.counts();
        let parts = [
            (c.create, "to create"),
            (c.update.saturating_sub(recheck), "to update"),
            (c.replace, "to replace"),
            (c.delete, "to delete"),
            (recheck, "to re-check once their dependencies are done"),
        ];
        let text: Vec<String> = parts
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
        if text.is_empty() {
            "no resource changes (outputs or state records to update)".to_owned()
        } else {
            text.join(", ")
        }
    }
}

pub(super) fn plan(
    prepared: &Prepared,
    state: &StackState,
    registry: &Registry,
    force_stateful: bool,
) -> Result<Plan, DeployError> {
    plan_with(
        prepared,
        state,
        registry,
        force_stateful,
        &super::recreate::Recreate::default(),
    )
}

/// [`plan`], with the resources `recreate` names moved to their other route: replaced,
/// through that route, whatever their properties say.
pub(super) fn plan_with(
    prepared: &Prepared,
    state: &StackState,
    registry: &Registry,
    force_stateful: bool,
    recreate: &super::recreate::Recreate,
) -> Result<Plan, DeployError> {
    super::recreate::check(recreate, &prepared.resolution.template, state, registry)?;
    let resolution: &Resolution = &prepared.resolution;
    let template = &resolution.template;
    // What references read: the records, and for each resource already planned the plan's
    // prediction of it after this run (propagate::predict), so a change reaches every depth.
    let mut snapshot = Snapshot::from_records(registry, state.resources.iter());
    let needles = resolution.redactor.needles();
    let predictable = |v: &Value| !has_dynamic_reference(v) && needles.redact_value(v) == *v;
    let mut planned: HashMap<String, Planned> = HashMap::new();
    let mut refused = Vec::new();
    let mut refreshed = Vec::new();
    let mut route_notes = Vec::new();

    for id in prepared.graph.deploy_order() {
        let res = &template.resources[id];
        let rec = state.resources.get(id);
        let same_type = rec.is_some_and(|r| r.resource_type == res.type_);
        let requested = recreate.target(id).filter(|_| same_type);
        let chosen = super::route::choose(registry, id, res, rec, &resolution.verdicts);
        // A named move goes through its route even where the usual choice would refuse (an
        // SDK record whose template gained a property only Cloud Control sends).
        let choice = match (requested, chosen) {
            (Some((route, _)), Err(_)) => super::route::Choice { route, note: None },
            (_, chosen) => chosen?,
        };
        let route = requested.map_or(choice.route, |(route, _)| route);
        let dependencies: Vec<String> = prepared
            .graph
            .dependencies_of(id)
            .into_iter()
            .map(str::to_owned)
            .collect();
        let moved: Vec<(String, ChangeKind)> = super::propagate::moved(&res.properties, &planned);
        // Whatever reads a resource the walk decides again is decided again after it.
        let reads_rechecked = referenced_ids(&res.properties)
            .iter()
            .any(|t| planned.get(t).is_some_and(|p| p.deferred));

        let mut change = ResourceChange::new(id, &res.type_, ChangeKind::NoChange);
        let mut deferred = false;
        let mut unresolved: Vec<String> = Vec::new();
        let mut predicted_from = Map::new();
        match rec {
            None => {
                change.kind = ChangeKind::Create;
                change.reasons.push(ChangeReason::New);
                if let Ok((d, _)) = resolution.properties_lenient(&snapshot, id) {
                    predicted_from = d;
                }
            }
            Some(r) if !same_type => {
                change.kind = ChangeKind::Replace;
                change.reasons.push(ChangeReason::TypeChanged {
                    old: r.resource_type.clone(),
                    new: res.type_.clone(),
                });
                if is_stateful(&r.resource_type) && !force_stateful && !retains_old(res, r) {
                    refused.push(stateful_refusal(id, &r.resource_type, "its Type changed"));
                }
                if let Ok((d, _)) = resolution.properties_lenient(&snapshot, id) {
                    predicted_from = d;
                }
            }
            Some(r) => {
                let (desired, unknown) = resolution.properties_lenient(&snapshot, id)?;
                predicted_from = desired.clone();
                let desired = resolution.comparable(id, desired, &r.properties);
                change.property_diffs =
                    diff_properties(&res.type_, &desired, &r.properties, &unknown);
                let masked = resolution.masked_today(&snapshot, id, &predicted_from, r);
                let masked_moved =
                    super::masked::masked_changes(&res.type_, r, &masked, &change.property_diffs);
                change.property_diffs.extend(masked_moved);
                // Values that read what this run moves and cannot be predicted: known once
                // the walk has done the dependency.
                let (reads_moved, rest): (Vec<String>, Vec<String>) =
                    unknown.into_iter().partition(|key| {
                        res.properties
                            .get(key)
                            .is_some_and(|v| !super::propagate::moved_read(v, &moved).is_empty())
                    });
                let possible = possible_changes(res, r, &rest, state);
                unresolved = reads_moved.clone();
                unresolved.extend(possible.iter().map(|d| d.path.clone()));
                deferred = !moved.is_empty() || !possible.is_empty() || reads_rechecked;
                let ceiling = reads_moved
                    .iter()
                    .find(|key| replaces(&res.type_, key, None, None));
                if let Some(d) = change
                    .property_diffs
                    .iter()
                    .find(|d| d.requires_replacement)
                {
                    change.kind = ChangeKind::Replace;
                    change.reasons.push(ChangeReason::ImmutableProperty {
                        path: d.path.clone(),
                    });
                    if is_stateful(&res.type_) && !force_stateful && !retains_old(res, r) {
                        let why = format!("create-only property {} changed", d.path);
                        refused.push(stateful_refusal(id, &res.type_, &why));
                    }
                } else if let Some(key) = ceiling {
                    // A ceiling the walk lowers when the resolved value turns out unchanged;
                    // a value read from a resource that is surely new does move.
                    change.kind = ChangeKind::Replace;
                    let new_source = res.properties.get(key).and_then(|v| {
                        super::propagate::moved_read(v, &moved)
                            .into_iter()
                            .find(|from| {
                                planned.get(from).is_some_and(super::propagate::surely_new)
                            })
                    });
                    if let Some(from) = new_source {
                        if is_stateful(&res.type_) && !force_stateful && !retains_old(res, r) {
                            let why = format!(
                                "create-only property {key} reads {from}, which this deploy \
                                 creates or replaces"
                            );
                            refused.push(stateful_refusal(id, &res.type_, &why));
                        }
                    }
                } else if !change.property_diffs.is_empty() || !possible.is_empty() {
                    change.kind = ChangeKind::Update;
                    change.reasons.push(ChangeReason::PropertiesChanged);
                } else if !reads_moved.is_empty() {
                    change.kind = ChangeKind::Update;
                }
                change.property_diffs.extend(possible);
                if change.kind != ChangeKind::NoChange {
                    // Named only where a changed or unknown value reads the dependency.
                    let touched: Vec<&str> = change
                        .property_diffs
                        .iter()
                        .map(|d| d.path.as_str())
                        .chain(unresolved.iter().map(String::as_str))
                        .collect();
                    let reads = |from: &str| {
                        touched.iter().any(|k| {
                            res.properties.get(*k).is_some_and(|v| {
                                super::propagate::moved_read(v, &moved)
                                    .iter()
                                    .any(|m| m == from)
                            })
                        })
                    };
                    for (from, kind) in moved.iter().filter(|(from, _)| reads(from)) {
                        change.reasons.push(match kind {
                            ChangeKind::Create | ChangeKind::Replace => {
                                ChangeReason::ReplacementPropagated { from: from.clone() }
                            }
                            _ => ChangeReason::AttributePropagated {
                                from: from.clone(),
                                attribute: "*".into(),
                            },
                        });
                    }
                } else {
                    let mut refreshed_record = refresh(r, res, &dependencies);
                    if let Some(filled) = super::masked::filled_in(&refreshed_record, &masked) {
                        refreshed_record = filled;
                    }
                    if refreshed_record != *r {
                        refreshed.push((id.to_owned(), refreshed_record));
                    }
                }
            }
        }
        if let (Some((_, flag)), Some(r)) = (requested, rec) {
            change.kind = ChangeKind::Replace;
            change
                .reasons
                .push(ChangeReason::Requested { flag: flag.into() });
            deferred = false;
            if is_stateful(&res.type_) && !force_stateful && !retains_old(res, r) {
                let why = format!("{flag} {id}");
                refused.push(stateful_refusal(id, &res.type_, &why));
            }
        }
        super::propagate::predict(
            &mut snapshot,
            id,
            &change,
            &predicted_from,
            &unresolved,
            &predictable,
        );
        if let Some((to, flag)) = requested {
            let through = match to {
                Route::Sdk => "its SDK provider",
                Route::CloudControl => "Cloud Control",
            };
            route_notes.push(format!(
                "{id} ({}): {flag}: deleted, then created again through {through}",
                res.type_
            ));
        } else if change.kind != ChangeKind::NoChange {
            route_notes.extend(choice.note);
        }
        planned.insert(
            id.to_owned(),
            Planned {
                change,
                route,
                deferred,
                dependencies,
                unresolved,
            },
        );
    }
    if !refused.is_empty() {
        return Err(DeployError::Refused(refused.join("; ")));
    }

    let mut changes = ChangeSet::new(&template_stack(prepared));
    for id in &prepared.scope {
        if let Some(p) = planned.get(id) {
            changes.changes.push(p.change.clone());
        }
    }
    let removed: Vec<String> = state
        .resources
        .iter()
        .filter(|(id, r)| !planned.contains_key(*id) && !is_skipped_type(&r.resource_type))
        .map(|(id, _)| id.clone())
        .collect();
    for id in &removed {
        let mut change =
            ResourceChange::new(id, &state.resources[id].resource_type, ChangeKind::Delete);
        change.reasons.push(ChangeReason::Removed);
        changes.changes.push(change);
    }
    changes.security = super::security::gather(resolution, state, &snapshot, &changes);
    Ok(Plan {
        changes,
        planned,
        removed,
        refreshed,
        route_notes,
    })
}

fn template_stack(prepared: &Prepared) -> String {
    prepared.graph.stack().to_owned()
}

/// The properties of `res` that could not be resolved because they read an attribute the
/// record of an existing resource lacks (one its provider did not report and nothing read
/// back): counted as possible changes, shown with the template's expression as their new
/// value and decided in the walk, which reads the attribute back and sends nothing when the
/// resolved value equals the record. A create-only key's replacement is a ceiling, as for a
/// propagated change (`replaces` with no values).
fn possible_changes(
    res: &Resource,
    rec: &ResourceState,
    unknown: &[String],
    state: &StackState,
) -> Vec<PropertyDiff> {
    unknown
        .iter()
        .filter_map(|key| {
            let value = res.properties.get(key)?;
            if !super::unrecorded::reads_unrecorded(value, state) {
                return None;
            }
            Some(PropertyDiff {
                path: key.clone(),
                old: rec.properties.get(key).cloned(),
                new: Some(value.clone()),
                requires_replacement: replaces(&res.type_, key, None, None),
            })
        })
        .collect()
}

/// Whether the template's `UpdateReplacePolicy` (else the record's) keeps the old resource.
pub(super) fn retains_old(res: &Resource, rec: &ResourceState) -> bool {
    match &res.update_replace_policy {
        Some(p) => ResourcePolicy::parse(p).retains(),
        None => rec
            .update_replace_policy
            .as_ref()
            .is_some_and(ResourcePolicy::retains),
    }
}

/// The record fields a deploy writes from the template, applied to `base`.
pub(super) fn with_template_fields(
    mut base: ResourceState,
    res: &Resource,
    dependencies: &[String],
) -> ResourceState {
    base.dependencies = Some(dependencies.to_vec());
    base.construct_path = res.cdk_path().map(str::to_owned);
    base.deletion_policy = res.deletion_policy.as_deref().map(ResourcePolicy::parse);
    base.update_replace_policy = res
        .update_replace_policy
        .as_deref()
        .map(ResourcePolicy::parse);
    base
}

/// An unchanged resource's record with today's template fields; its recorded dependencies
/// are kept when they name the same set.
fn refresh(rec: &ResourceState, res: &Resource, dependencies: &[String]) -> ResourceState {
    let mut out = with_template_fields(rec.clone(), res, dependencies);
    let same_set = |a: &Option<Vec<String>>, b: &Option<Vec<String>>| {
        let set =
            |v: &Option<Vec<String>>| -> BTreeSet<String> { v.iter().flatten().cloned().collect() };
        set(a) == set(b)
    };
    if same_set(&out.dependencies, &rec.dependencies) {
        out.dependencies = rec.dependencies.clone();
    }
    out
}

/// A fresh record for a resource a provider just created.
pub(super) fn new_record(
    res: &Resource,
    route: Route,
    dependencies: &[String],
    physical_id: String,
    properties: serde_json::Map<String, serde_json::Value>,
    attributes: serde_json::Map<String, serde_json::Value>,
) -> ResourceState {
    let mut rec = ResourceState::new(physical_id, res.type_.clone(), properties);
    rec.attributes = Some(attributes);
    rec.provisioned_by = Some(provisioned_by(route));
    with_template_fields(rec, res, dependencies)
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
