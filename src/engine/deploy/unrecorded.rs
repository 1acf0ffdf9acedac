//! Attributes a reference reads that the referenced resource's record does not hold.
//!
//! A deploy records every attribute it resolves (what the provider reported, or what the walk
//! read back for a `Fn::GetAtt` the provider did not report), so the next plan resolves the
//! same expression against state alone. A record another writer made (an import, an older
//! tool, a hand repair) can lack one. Resolved against state alone, a property reading it
//! cannot be compared: skipping it misses an update when its expression changed, and counting
//! it as changed is a phantom change when it did not. So before planning, the deploy and
//! `cdkd diff` read each such attribute back from AWS (read-only) and plan against the records
//! completed with it; one that cannot be read stays unknown, and the plan counts the property
//! as a possible change that the walk decides.

use std::collections::BTreeSet;

use serde_json::Value;

use super::plan::Plan;
use crate::plan::{references, ChangeKind};
use crate::provider::{ProviderContext, Registry};
use crate::resolve::external::{join_all, BoxFuture};
use crate::state::StackState;
use crate::template::Template;

/// Records completed with what was read back.
pub(crate) struct Completed {
    pub state: StackState,
    /// The (logical id, attribute) pairs read back and added to the records.
    pub read: Vec<(String, String)>,
}

/// Whether `target` is recorded with a physical id but without `attribute`.
pub(super) fn lacks(state: &StackState, target: &str, attribute: &str) -> bool {
    state.resources.get(target).is_some_and(|rec| {
        rec.physical_id.is_some()
            && !rec
                .attributes
                .as_ref()
                .is_some_and(|a| a.contains_key(attribute))
    })
}

/// Whether `value` reads an attribute the record of an existing resource lacks.
pub(super) fn reads_unrecorded(value: &Value, state: &StackState) -> bool {
    references(value).iter().any(|r| {
        r.attribute
            .as_deref()
            .is_some_and(|a| lacks(state, &r.target, a))
    })
}

/// Every (logical id, attribute) the template's resources read that `state` lacks.
pub(super) fn wanted(template: &Template, state: &StackState) -> Vec<(String, String)> {
    let mut out = BTreeSet::new();
    for res in template.resources.values() {
        for r in references(&Value::Object(res.properties.clone())) {
            let Some(attribute) = r.attribute else {
                continue;
            };
            if lacks(state, &r.target, &attribute) {
                out.insert((r.target, attribute));
            }
        }
    }
    out.into_iter().collect()
}

/// `state` with every attribute [`wanted`] names that reading its resource back found (the
/// resources read concurrently).
pub(crate) async fn complete(
    registry: &Registry,
    ctx: &ProviderContext<'_>,
    template: &Template,
    mut state: StackState,
) -> Completed {
    let mut by_resource: Vec<(String, Vec<String>)> = Vec::new();
    for (id, attribute) in wanted(template, &state) {
        match by_resource.last_mut() {
            Some((last, attrs)) if *last == id => attrs.push(attribute),
            _ => by_resource.push((id, vec![attribute])),
        }
    }
    let reads: Vec<BoxFuture<'_, Vec<(String, String, Value)>>> = by_resource
        .into_iter()
        .filter_map(|(id, attributes)| {
            let rec = state.resources.get(&id)?.clone();
            let read: BoxFuture<'_, _> = Box::pin(async move {
                let mut found = Vec::new();
                for attribute in attributes {
                    let value =
                        super::execute::read_back(registry, ctx, &id, &rec, &attribute).await;
                    if let Some(value) = value {
                        found.push((id.clone(), attribute, value));
                    }
                }
                found
            });
            Some(read)
        })
        .collect();
    let mut read = Vec::new();
    for (id, attribute, value) in join_all(reads).await.into_iter().flatten() {
        if let Some(rec) = state.resources.get_mut(&id) {
            rec.attributes
                .get_or_insert_with(Default::default)
                .insert(attribute.clone(), value);
            read.push((id, attribute));
        }
    }
    Completed { state, read }
}

/// [`complete`] for a deploy (and `--dry-run`) of `stack`: nothing is read under
/// `--strict-getatt`, where the walk fails a resource reading an unreported attribute
/// instead. Each attribute read back is announced.
pub(super) async fn complete_for_deploy(
    env: &super::DeployEnv,
    options: &super::DeployOptions,
    stack: &str,
    region: &str,
    template: &Template,
    state: StackState,
) -> Completed {
    if options.strict_getatt {
        return Completed {
            state,
            read: Vec::new(),
        };
    }
    let ctx = ProviderContext {
        clients: &env.clients,
        stack_name: stack,
        region,
        account_id: &env.account_id,
        partition: crate::resolve::partition_for_region(region).name,
        no_wait: options.no_wait,
    };
    let completed = complete(&env.registry, &ctx, template, state).await;
    for (id, attribute) in &completed.read {
        crate::ui::info(format!(
            "  {id}: {attribute} was not recorded in state; read it from AWS"
        ));
    }
    completed
}

/// Stores the completed records of unchanged resources (their attributes were read back), so
/// the next plan resolves without reading them again.
pub(super) fn keep(plan: &mut Plan, completed: &Completed) {
    let mut ids: Vec<&String> = completed.read.iter().map(|(id, _)| id).collect();
    ids.dedup();
    for id in ids {
        let unchanged = plan
            .planned
            .get(id)
            .is_some_and(|p| p.change.kind == ChangeKind::NoChange && !p.deferred);
        if !unchanged || plan.refreshed.iter().any(|(r, _)| r == id) {
            continue;
        }
        if let Some(rec) = completed.state.resources.get(id) {
            plan.refreshed.push((id.clone(), rec.clone()));
        }
    }
}

/// [`complete`] for `cdkd diff`: the stack's template read from `template_file` (a template
/// that does not parse leaves `state` as it is; the preview reports the error).
pub(crate) async fn complete_for_preview(
    registry: &Registry,
    clients: &crate::aws::Clients,
    stack: &str,
    region: &str,
    account_id: &str,
    template_file: &std::path::Path,
    state: StackState,
) -> StackState {
    let Ok(template) = crate::template::parse_template_file(template_file) else {
        return state;
    };
    let ctx = ProviderContext {
        clients,
        stack_name: stack,
        region,
        account_id,
        partition: crate::resolve::partition_for_region(region).name,
        no_wait: false,
    };
    complete(registry, &ctx, &template, state).await.state
}
