//! Reverting what a failed deploy did: the automatic rollback at the end of a failed deploy,
//! and the replay behind `cdkd rollback` (state and journal only, no synth).
//!
//! Operations are reverted newest first, one at a time (a resource completes after everything
//! it reads, so the reverse of completion order deletes readers before what they read):
//! - a CREATE is deleted (its record dropped); `DeletionPolicy: Retain` keeps the resource and
//!   drops the record, rotating the create-token ledger's nonce; a created nested-stack row
//!   destroys its child stack (resources, then the `{parent}~{id}` record);
//! - an UPDATE of a nested-stack row replays the child's `nested-pending-parent` segment
//!   against the child (`nested_pending`), then restores the row's record;
//! - a DELETE (only a nested child's pending segment has them) creates the resource again;
//! - an in-place UPDATE is sent back to the previous record's properties and that record
//!   restored;
//! - a replacement (an UPDATE to another physical resource, the old one still alive) deletes
//!   the new resource and restores the old record;
//! - a replacement whose old resource was deleted before the new one was created
//!   (`oldDeletedBeforeCreate`, `--replace`) deletes the new resource, then creates the old
//!   one again from its previous record (also for such a replacement that failed).
//!
//! Each step updates the state book (written behind, like a deploy's saves), so an interrupted
//! rollback leaves a record of what it undid, and the journal segment it replays stays until
//! the segment is fully reverted.

use crate::engine::policy::{keeps_on_create_rollback, DeleteRules, Deletion};
use crate::provider::{ProviderContext, Registry, ResourceRequest, UpdateOutcome};
use crate::state::journal::{FailedOperation, OpKind, Operation};
use crate::state::{Lenient, ResourceState, StackOrphanRecord};
use crate::ui;
use crate::ui::progress::Progress;

use std::sync::Arc;

use super::book::StateBook;
use super::delete::delete_recorded;
use super::execute::provider_message;
use super::lookup::record_provider;
use super::nested::{destroy_child, is_nested};
use crate::state::backend::S3Backend;
use crate::state::exports::ExportIndexStore;

/// What a revert did.
#[derive(Debug, Default, Clone)]
pub struct Reverted {
    /// Ids whose operation was reverted.
    pub reverted: Vec<String>,
    /// Ids whose created resource was deleted (their ledger entries are spent).
    pub deleted_creates: Vec<String>,
    /// Ids whose resource cdkd let go of while it still exists (retained or orphaned).
    pub released: Vec<String>,
    /// (logical id, why) of operations that could not be reverted.
    pub failures: Vec<(String, String)>,
}

impl Reverted {
    pub fn is_clean(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Reverts operations against one stack's state book.
pub(crate) struct Reverter<'a> {
    pub registry: &'a Registry,
    pub ctx: ProviderContext<'a>,
    pub book: &'a StateBook,
    /// Where nested children's records live: a created nested-stack row is reverted by
    /// destroying its child stack.
    pub backend: &'a Arc<S3Backend>,
    /// The exports index, when the caller has one: a destroyed child's exports leave it.
    pub exports: Option<&'a ExportIndexStore>,
    /// The deploy's progress sink (an automatic rollback): each step's line is prefixed with
    /// its stack and counted in the bar like the walk's; `None` (`cdkd rollback`) prints the
    /// lines as they are.
    pub progress: Option<&'a Progress>,
    /// How the resources a rollback deletes are deleted (`--skip-final-snapshot`).
    pub rules: DeleteRules,
    /// The run's deployment-event log: one `ROLLBACK_RESOURCE_*` event per step.
    pub events: Option<crate::state::events::EventLog>,
}

impl Reverter<'_> {
    /// Reverts `ops` newest first, skipping the logical ids in `skip`. Prints a line per
    /// operation.
    pub async fn revert(&self, ops: &[Operation], skip: &[String]) -> Reverted {
        let mut out = Reverted::default();
        if let Some(p) = self.progress {
            p.add_total(
                ops.iter()
                    .filter(|op| !skip.contains(&op.logical_id))
                    .count(),
            );
        }
        for op in ops.iter().rev() {
            if skip.contains(&op.logical_id) {
                continue;
            }
            let id = &op.logical_id;
            self.step_started(id);
            let result = self.revert_one(op, &mut out).await;
            let kind = crate::engine::events::journal_operation(op.kind);
            self.record_step(
                (kind, id.as_str(), op.resource_type.as_str()),
                result.as_ref().err(),
            );
            match result {
                Ok(what) => {
                    self.step_finished(id, format!("↩ {id} {} {what}", op.resource_type), false);
                    out.reverted.push(id.clone());
                }
                Err(why) => {
                    let line = format!("✗ {id} {} not rolled back: {why}", op.resource_type);
                    self.step_finished(id, line, true);
                    out.failures.push((id.clone(), why));
                }
            }
        }
        out
    }

    /// The step's `ROLLBACK_RESOURCE_*` event (the reason masked like the line: the replay
    /// sends resolved values, and AWS can quote one back).
    fn record_step(
        &self,
        what: (crate::state::events::Operation, &str, &str),
        error: Option<&String>,
    ) {
        let masked = error.map(|e| self.book.mask_text(e));
        let stack = self.ctx.stack_name;
        crate::engine::events::rollback_step(self.events.as_ref(), stack, what, masked.as_deref());
    }

    /// One more step of this rollback runs (counted in the bar, shown in flight).
    fn step_started(&self, id: &str) {
        if let Some(p) = self.progress {
            p.started(self.ctx.stack_name, id);
        }
    }

    /// The line of a step [`Self::step_started`] began (`↩ Id Type deleted`, `✗ ...`):
    /// through the progress sink, else printed indented.
    fn step_finished(&self, id: &str, line: String, failed: bool) {
        match self.progress {
            Some(p) => p.step_finished(self.ctx.stack_name, id, Some(&line), failed),
            None => ui::info(format!("  {line}")),
        }
    }

    /// `cdkd rollback --orphan ID` (upstream's flag, as `cdk rollback --orphan`): the named
    /// resources' operations are not reverted; each is dropped from state as it is now (left in
    /// AWS, kept among the record's orphans). Returns the ids dropped.
    pub async fn orphan_named(&self, ops: &[Operation], ids: &[String]) -> Vec<String> {
        let mut dropped = Vec::new();
        for id in ids {
            let Some(op) = ops.iter().find(|op| &op.logical_id == id) else {
                continue;
            };
            let stored = self
                .book
                .for_storage(&self.book.state().await)
                .resources
                .shift_remove(id);
            self.book.put(id, None).await;
            if let Some(rec) = stored.filter(|r| r.physical_id.is_some()) {
                self.book.change(|state| record_orphan(state, id, rec));
            }
            ui::info(format!(
                "  - {id} {} orphaned (--orphan: not rolled back, dropped from state, left in AWS \
                 as it is)",
                op.resource_type
            ));
            dropped.push(id.clone());
        }
        dropped
    }

    /// `--revert-failed`: sends failed updates back to their previous properties.
    pub async fn revert_failed(&self, failed: &[FailedOperation]) -> Reverted {
        let mut out = Reverted::default();
        for f in failed.iter().rev() {
            let Some(previous) = f.previous.as_ref() else {
                continue; // a failed create recorded nothing: nothing to revert
            };
            if f.attempted_properties.is_none() || f.old_deleted_before_create() {
                // AWS provably did not apply it; or its old resource is gone, which
                // `recreate_deleted_first` handles.
                continue;
            }
            if let Some(p) = self.progress {
                p.add_total(1);
            }
            self.step_started(&f.logical_id);
            let result = self.restore_in_place(&f.logical_id, previous).await;
            let what = (
                crate::state::events::Operation::Update,
                f.logical_id.as_str(),
                f.resource_type.as_str(),
            );
            self.record_step(what, result.as_ref().err());
            match result {
                Ok(()) => {
                    let line = format!(
                        "↩ {} {} failed update reverted",
                        f.logical_id, f.resource_type
                    );
                    self.step_finished(&f.logical_id, line, false);
                    out.reverted.push(f.logical_id.clone());
                }
                Err(why) => {
                    if let Some(p) = self.progress {
                        // Counted and taken out of the in-flight list; no line, as before.
                        p.step_finished(self.ctx.stack_name, &f.logical_id, None, true);
                    }
                    out.failures.push((f.logical_id.clone(), why));
                }
            }
        }
        out
    }

    /// Failed replacements whose old resource `--replace` deleted before the new one could be
    /// created: each old resource is re-created from its previous record (unless state records
    /// the id again, i.e. an earlier rollback already did).
    pub async fn recreate_deleted_first(&self, failed: &[FailedOperation]) -> Reverted {
        let mut out = Reverted::default();
        for f in failed.iter().rev() {
            let Some(previous) = f.previous.as_ref() else {
                continue;
            };
            if !f.old_deleted_before_create() || self.book.record(&f.logical_id).await.is_some() {
                continue;
            }
            let id = &f.logical_id;
            if let Some(p) = self.progress {
                p.add_total(1);
            }
            self.step_started(id);
            let result = self.recreate(id, previous).await;
            let what = (
                crate::state::events::Operation::Update,
                id.as_str(),
                previous.resource_type.as_str(),
            );
            self.record_step(what, result.as_ref().err());
            match result {
                Ok(()) => {
                    let line = format!(
                        "↩ {id} {} re-created as it was (--replace had deleted it before its \
                         replacement failed)",
                        previous.resource_type
                    );
                    self.step_finished(id, line, false);
                    out.reverted.push(id.clone());
                }
                Err(why) => {
                    let line = format!("✗ {id} {} not re-created: {why}", previous.resource_type);
                    self.step_finished(id, line, true);
                    out.failures.push((id.clone(), why));
                }
            }
        }
        out
    }

    /// Creates the resource `previous` records again and restores that record with the new
    /// physical id and attributes.
    async fn recreate(&self, id: &str, previous: &ResourceState) -> Result<(), String> {
        if holds_mask(&previous.properties) {
            return Err(
                "its previous properties hold a masked secret or NoEcho value, which a \
                 rollback cannot send; re-deploy the previous version of the app instead"
                    .into(),
            );
        }
        let Some((_, provider)) = record_provider(self.registry, previous) else {
            return Err(format!("no provider serves {}", previous.resource_type));
        };
        let req = ResourceRequest {
            logical_id: id,
            resource_type: &previous.resource_type,
            properties: &previous.properties,
            client_token: None,
        };
        let made = crate::provider::deadline::create(provider.as_ref(), &self.ctx, &req)
            .await
            .map_err(|e| provider_message(&e, id, &previous.resource_type))?;
        let mut rec = previous.clone();
        rec.physical_id = Some(made.physical_id);
        let mut attributes = previous.attributes.clone().unwrap_or_default();
        attributes.extend(made.attributes);
        rec.attributes = Some(attributes);
        self.book.put(id, Some(rec)).await;
        Ok(())
    }

    async fn revert_one(&self, op: &Operation, out: &mut Reverted) -> Result<&'static str, String> {
        let id = op.logical_id.as_str();
        let current = self.book.record(id).await;
        match (op.kind, op.previous.as_ref()) {
            // A removed resource a nested child's deploy deleted (its pending segment): created
            // again from its record, unless state records the id again.
            (OpKind::Delete, Some(previous)) if current.is_none() => {
                self.recreate(id, previous).await?;
                Ok("re-created from its previous record (the deploy had deleted it)")
            }
            (OpKind::Delete, Some(_)) => Ok("already recorded again"),
            (OpKind::Delete, None) => Err("a deleted resource cannot be brought back".into()),
            // A nested-stack row the deploy updated: the child's pending segment is replayed.
            (OpKind::Update, Some(previous))
                if is_nested(&op.resource_type) && is_nested(&previous.resource_type) =>
            {
                super::nested_pending::revert_child(self, id, op, previous).await
            }
            (_, None) => {
                // A create: the resource it made is the one the op names.
                let mut target = match current {
                    Some(c) if c.physical_id == op.physical_id => c,
                    Some(c) if op.physical_id.is_none() => c,
                    _ => ResourceState {
                        physical_id: op.physical_id.clone(),
                        resource_type: op.resource_type.clone(),
                        ..ResourceState::default()
                    },
                };
                if target.resource_type.is_empty() {
                    target.resource_type = op.resource_type.clone();
                }
                // Only Retain keeps a create its rollback undoes (RetainExceptOnCreate does not);
                // the kept resource moves to `orphans`, so a later deploy can find it.
                if keeps_on_create_rollback(&target) {
                    // The row is stored as state stores the record (secrets and NoEcho values
                    // masked): later saves redact `resources`, not `orphans`.
                    let stored = self
                        .book
                        .for_storage(&self.book.state().await)
                        .resources
                        .shift_remove(id)
                        .filter(|r| r.physical_id == target.physical_id)
                        .unwrap_or(target);
                    self.book.put(id, None).await;
                    if stored.physical_id.is_some() {
                        self.book.change(|state| record_orphan(state, id, stored));
                    }
                    out.released.push(id.to_owned());
                    return Ok(
                        "retained in AWS (DeletionPolicy: Retain), moved to the record's orphans",
                    );
                }
                if is_nested(&target.resource_type) {
                    self.destroy_child(id).await?;
                    self.book.put(id, None).await;
                    out.deleted_creates.push(id.to_owned());
                    return Ok("deleted (its nested stack destroyed)");
                }
                let how = self.rules.on_delete();
                let (_, result) =
                    delete_recorded(self.registry, &self.ctx, &how, id, &target).await;
                result?;
                self.book.put(id, None).await;
                out.deleted_creates.push(id.to_owned());
                Ok("deleted")
            }
            (OpKind::Update, Some(previous)) if op.old_deleted_before_create == Some(true) => {
                // The old resource was deleted before the new one was created (`--replace`):
                // the new one goes first, so the name they share is free for the old one.
                let new_alive = current
                    .as_ref()
                    .filter(|c| c.physical_id == op.physical_id && c.physical_id.is_some());
                if let Some(new) = new_alive {
                    let how = Deletion::PLAIN;
                    let (_, result) =
                        delete_recorded(self.registry, &self.ctx, &how, id, new).await;
                    result?;
                    self.book.put(id, None).await;
                }
                self.recreate(id, previous).await?;
                Ok(
                    "re-created as it was (it had been deleted before its replacement was \
                    created; the new one deleted first)",
                )
            }
            (OpKind::Update, Some(previous)) if op.is_replacement() => {
                let new_alive = current
                    .as_ref()
                    .filter(|c| c.physical_id == op.physical_id && c.physical_id.is_some());
                if op.old_resource_retained == Some(false) {
                    return Err(format!(
                        "the old resource {} was deleted during the deploy; re-deploy the \
                         previous version of the app to restore it",
                        previous.physical_id.as_deref().unwrap_or("?")
                    ));
                }
                if let Some(new) = new_alive {
                    let how = Deletion::PLAIN;
                    let (_, result) =
                        delete_recorded(self.registry, &self.ctx, &how, id, new).await;
                    result?;
                }
                self.book.put(id, Some(previous.clone())).await;
                Ok("swapped back to the old resource (the new one deleted)")
            }
            (_, Some(previous)) => {
                self.restore_in_place(id, previous).await?;
                Ok("restored to its previous properties")
            }
        }
    }

    /// Destroys the nested child `{stack}~{id}` of a created row: its resources, then its
    /// state record (and its exports, when the exports index is at hand).
    async fn destroy_child(&self, id: &str) -> Result<(), String> {
        let (stack, region) = (self.ctx.stack_name, self.ctx.region);
        destroy_child(
            self.backend,
            self.registry,
            &self.ctx,
            self.rules,
            stack,
            id,
            region,
        )
        .await?;
        if let Some(exports) = self.exports {
            let child = super::nested::child_stack_name(stack, id);
            let _ = exports.remove_stack(region, &child).await;
        }
        Ok(())
    }

    /// Sends `previous.properties` to the resource `previous` names and restores the record.
    async fn restore_in_place(&self, id: &str, previous: &ResourceState) -> Result<(), String> {
        let Some(physical_id) = previous.physical_id.as_deref() else {
            return Err("its previous record has no physicalId".into());
        };
        let current = self.book.record(id).await;
        let from = current
            .as_ref()
            .filter(|c| c.physical_id == previous.physical_id)
            .map(|c| c.properties.clone())
            .unwrap_or_default();
        if from == previous.properties {
            self.book.put(id, Some(previous.clone())).await;
            return Ok(());
        }
        let Some((_, provider)) = record_provider(self.registry, previous) else {
            return Err(format!("no provider serves {}", previous.resource_type));
        };
        let properties = if holds_mask(&previous.properties) {
            self.unmasked_from_aws(id, previous, physical_id, provider.as_ref())
                .await?
        } else {
            previous.properties.clone()
        };
        let req = ResourceRequest {
            logical_id: id,
            resource_type: &previous.resource_type,
            properties: &properties,
            client_token: None,
        };
        match crate::provider::deadline::update(
            provider.as_ref(),
            &self.ctx,
            &req,
            physical_id,
            &from,
        )
        .await
        .map_err(|e| provider_message(&e, id, &previous.resource_type))?
        {
            UpdateOutcome::Updated(_) => {
                self.book.put(id, Some(previous.clone())).await;
                Ok(())
            }
            UpdateOutcome::NeedsReplacement { reason } => Err(format!(
                "its previous properties cannot be restored in place ({reason})"
            )),
        }
    }
}

impl Reverter<'_> {
    /// `previous.properties` with each masked position (`***`, or a `{{resolve:...}}`
    /// expression standing for a secret) filled with the value AWS holds there now, read back
    /// through the provider (state-schema, "What else changes": a rollback revert sends the
    /// value AWS holds at a masked position). The filled copy is sent only, never recorded;
    /// a position the readback cannot report refuses the revert.
    async fn unmasked_from_aws(
        &self,
        id: &str,
        previous: &ResourceState,
        physical_id: &str,
        provider: &dyn crate::provider::Provider,
    ) -> Result<serde_json::Map<String, serde_json::Value>, String> {
        let refusal = |why: &str| {
            format!(
                "its previous properties hold a masked secret or NoEcho value, which a rollback \
                 can send back only as AWS reports it, and {why}; re-deploy the previous version \
                 of the app instead"
            )
        };
        let req = ResourceRequest {
            logical_id: id,
            resource_type: &previous.resource_type,
            properties: &previous.properties,
            client_token: None,
        };
        let live = match provider.read(&self.ctx, &req, physical_id).await {
            Ok(Some(live)) => serde_json::Value::Object(live),
            Ok(None) => return Err(refusal("AWS no longer reports the resource")),
            Err(_) => return Err(refusal("reading it back from AWS failed")),
        };
        let mut out = serde_json::Value::Object(previous.properties.clone());
        let mut paths = Vec::new();
        masked_paths(&out, &mut Vec::new(), &mut paths);
        for path in paths {
            let now = crate::redact::positions::get_at(&live, &path)
                .filter(|v| !holds_mask(&v_map(v)))
                .cloned();
            let (Some(now), Some(slot)) =
                (now, crate::redact::positions::get_at_mut(&mut out, &path))
            else {
                return Err(refusal(
                    "AWS does not report the value at a masked position",
                ));
            };
            *slot = now;
        }
        match out {
            serde_json::Value::Object(m) => Ok(m),
            _ => Err(refusal("its record is not an object")),
        }
    }
}

/// `v` as the one-entry map [`holds_mask`] reads.
fn v_map(v: &serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert(String::new(), v.clone());
    m
}

/// The paths of the string leaves of `v` a record holds masked.
fn masked_paths(
    v: &serde_json::Value,
    at: &mut Vec<crate::state::PathSegment>,
    out: &mut Vec<Vec<crate::state::PathSegment>>,
) {
    use crate::state::PathSegment;
    match v {
        serde_json::Value::String(_) => {
            if holds_mask(&v_map(v)) {
                out.push(at.clone());
            }
        }
        serde_json::Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                at.push(PathSegment::Index(i as u64));
                masked_paths(x, at, out);
                at.pop();
            }
        }
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                at.push(PathSegment::Key(k.clone()));
                masked_paths(x, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// Records `rec` as a resource the rollback left in AWS: a row of `orphans`, replacing an
/// earlier row of the same logical id (the list holds one record per id).
fn record_orphan(state: &mut crate::state::StackState, id: &str, rec: ResourceState) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let row = StackOrphanRecord {
        logical_id: id.to_owned(),
        orphaned_at: Some(Lenient::Valid(now)),
        state: rec,
        extra: Default::default(),
    };
    let rows = state.orphans.get_or_insert_with(Vec::new);
    rows.retain(|r| r.logical_id != id);
    rows.push(row);
}

/// Whether stored properties hold a value state keeps masked (a `{{resolve:...}}` expression
/// standing for a secret, or `***` for a NoEcho value): sending them would write the mask.
fn holds_mask(properties: &serde_json::Map<String, serde_json::Value>) -> bool {
    fn walk(v: &serde_json::Value) -> bool {
        match v {
            serde_json::Value::String(s) => s.contains("{{resolve:") || s == "***",
            serde_json::Value::Array(a) => a.iter().any(walk),
            serde_json::Value::Object(o) => o.values().any(walk),
            _ => false,
        }
    }
    properties.values().any(walk)
}
