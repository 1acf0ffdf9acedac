//! The delete half of a deploy: resources gone from the template, and the old resources of
//! replacements, deleted dependents-first along the graph of their records.
//!
//! `DeletionPolicy: Retain` / `RetainExceptOnCreate` drops a removed resource's record without
//! an AWS call. A removed resource's record leaves state once its delete succeeds; the old
//! resource of a replacement has no record of its own (the logical id now records the new one).

use std::sync::Arc;
use std::time::Instant;

use indexmap::IndexMap;

use super::execute::{provider_message, Run};
use super::lookup::record_provider;
use super::report::{observe, Action, Done};
use crate::engine::policy::Deletion;
use crate::engine::walk::{walk, WalkOptions, WalkOutcome};
use crate::plan::{DependencyGraph, Direction, RecordNode};
use crate::provider::{ProviderContext, Registry, ResourceRequest, Route};
use crate::state::ResourceState;
use crate::ui::progress::Progress;

/// A resource to delete.
pub(super) struct Doomed {
    pub record: ResourceState,
    /// Gone from the template: its record is dropped once deleted. `false` for the old
    /// resource of a replacement.
    pub removed: bool,
}

pub(super) type DeleteOutcome = WalkOutcome<Done, (Done, String)>;

/// Deletes `doomed` (logical id → what to delete) in delete order, `options.concurrency` at a
/// time, reporting each resource to `progress` like a create (or printing its line when there
/// is no sink), so the lines never tear the status bar and the bar counts the deletes.
pub(super) async fn delete_all(
    run: Arc<Run>,
    doomed: IndexMap<String, Doomed>,
    options: WalkOptions,
    progress: Option<Arc<Progress>>,
) -> Result<DeleteOutcome, crate::plan::PlanError> {
    let graph = DependencyGraph::from_records(
        &run.stack,
        doomed.iter().map(|(id, d)| RecordNode {
            logical_id: id,
            resource_type: &d.record.resource_type,
            physical_id: d.record.physical_id.as_deref(),
            properties: Some(&d.record.properties),
            dependencies: d.record.dependencies.as_deref().unwrap_or(&[]),
        }),
    )?;
    if let Some(p) = &progress {
        p.add_total(doomed.len());
    }
    let doomed = Arc::new(doomed);
    let tracker = graph.ready_tracker(Direction::Delete);
    Ok(walk(tracker, options, move |id| {
        let run = run.clone();
        let doomed = doomed.clone();
        let progress = progress.clone();
        async move {
            let doomed = &doomed[&id];
            let rec = &doomed.record;
            let events = run.nested.options.events.as_ref();
            // A retained record is dropped without an AWS call: no RESOURCE_STARTED for it.
            let op = (!(doomed.removed && rec.retains_on_delete()))
                .then_some(crate::state::events::Operation::Delete);
            let route = record_provider(&run.registry, rec)
                .map(|(r, _)| r)
                .unwrap_or(Route::CloudControl);
            let what = (id.as_str(), rec.resource_type.as_str(), route);
            crate::engine::events::started(events, &run.stack, op, what);
            let operation = delete_one(&run, &id, doomed);
            let result = observe(&run.stack, &id, &[], progress.as_deref(), operation).await;
            let mask = |t: &str| run.resolution.redactor.mask_text(t);
            let physical = rec.physical_id.as_deref();
            crate::engine::events::finished(events, &run.stack, op, &result, physical, &mask);
            result
        }
    })
    .await)
}

async fn delete_one(run: &Run, id: &str, doomed: &Doomed) -> Result<Done, (Done, String)> {
    let started = Instant::now();
    let rec = &doomed.record;
    if doomed.removed && rec.retains_on_delete() {
        let route = record_provider(&run.registry, rec)
            .map(|(r, _)| r)
            .unwrap_or(Route::CloudControl);
        run.book.put(id, None).await;
        run.tokens.release(id).await;
        return Ok(Done::new(id, &rec.resource_type, route).with(Action::Retained, started));
    }
    let ctx = run.provider_context();
    let rules = run.nested.delete_rules();
    let how = if doomed.removed {
        rules.on_delete()
    } else {
        rules.on_replace()
    };
    let (route, result) = if super::nested::is_nested(&rec.resource_type) {
        super::nested::destroy_row(run, id).await
    } else {
        delete_recorded(&run.registry, &ctx, &how, id, rec).await
    };
    let done = Done::new(id, &rec.resource_type, route);
    match result {
        Ok(()) if doomed.removed => {
            run.book.put(id, None).await;
            Ok(done.with(Action::Deleted, started))
        }
        Ok(()) => Ok(done.with(Action::OldDeleted, started)),
        Err(message) => Err((done.with(Action::Failed, started), message)),
    }
}

/// Why the delete of `rec` cannot be sent from its record: a custom resource whose recorded
/// properties hold `***` (a NoEcho value filled them; the handler would receive the mask).
/// The delete is skipped and the record kept (state-schema, "What else changes").
pub(crate) fn masked_delete(id: &str, rec: &ResourceState) -> Option<String> {
    let custom = crate::provider::custom::is_custom_type(&rec.resource_type);
    let masked =
        crate::resolve::external::holds_mask(&serde_json::Value::Object(rec.properties.clone()));
    (custom && masked).then(|| {
        format!(
            "{id}: its Delete is not sent: the record holds '***' where a NoEcho value filled \
             its properties, and its handler would receive '***' instead of the value; the \
             record is kept. Delete what its handler manages by hand, then drop the record \
             with cdkd state orphan"
        )
    })
}

/// Deletes the AWS resource a record names, through the provider that serves it (its recorded
/// `provisionedBy` first), and says which route it took. The one per-resource delete of both
/// the delete half of a deploy and `cdkd destroy`, so a type-specific delete rule added here
/// applies to both: `how` says which policy governs it, and its steps (the protection flip,
/// the final snapshot, [`crate::engine::policy`]) run first; a final snapshot that cannot be
/// taken fails the delete. A record with no physical id has nothing in AWS to address and
/// succeeds; a resource already gone is success (every provider treats not-found so).
pub(crate) async fn delete_recorded(
    registry: &Registry,
    ctx: &ProviderContext<'_>,
    how: &Deletion,
    id: &str,
    rec: &ResourceState,
) -> (Route, Result<(), String>) {
    let found = record_provider(registry, rec);
    let route = found
        .as_ref()
        .map(|(r, _)| *r)
        .unwrap_or(Route::CloudControl);
    let Some(physical_id) = rec.physical_id.as_deref() else {
        return (route, Ok(()));
    };
    if let Some(why) = masked_delete(id, rec) {
        return (route, Err(why));
    }
    let Some((_, provider)) = found else {
        let message = format!(
            "no provider can delete type {}: cdkd has no SDK provider for it and the Cloud \
             Control API does not list it",
            rec.resource_type
        );
        return (route, Err(message));
    };
    if let Err(e) = how
        .before_delete(provider.as_ref(), ctx, id, rec, physical_id)
        .await
    {
        return (route, Err(e));
    }
    let req = ResourceRequest {
        logical_id: id,
        resource_type: &rec.resource_type,
        properties: &rec.properties,
        client_token: None,
    };
    let result = crate::provider::deadline::delete(provider.as_ref(), ctx, &req, physical_id)
        .await
        .map_err(|e| provider_message(&e, id, &rec.resource_type));
    (route, result)
}
