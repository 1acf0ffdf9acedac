//! A nested child's `nested-pending-parent` journal segments (state-schema, "Rollback
//! journal").
//!
//! A child's successful deploy inside its parent's does not delete the child's journal: it
//! appends a segment holding the operations that deploy completed ([`after_child_success`]),
//! so that when the parent's deploy then fails, reverting the parent's UPDATE op of the row
//! replays that segment against the child ([`revert_child`]). The child's journals go when the
//! top-level stack's deploy succeeds ([`settle_descendants`]). A child's replacement keeps its
//! old resource (`oldDeletionDeferred`) so that rollback can swap it back; the top-level success,
//! or the child's destruction, deletes it ([`delete_olds`]). Every write of a child's journal
//! holds the child's lock.

use std::future::Future;
use std::pin::Pin;

use serde_json::{Map, Value};

use super::book::StateBook;
use super::delete::delete_recorded;
use super::execute::Run;
use super::nested::{child_stack_name, is_nested};
use super::report::{Action, Done};
use super::rollback::Reverter;
use super::tokens::Tokens;
use super::{failure, DeployEnv};
use crate::engine::policy::DeleteRules;
use crate::provider::{ProviderContext, Registry};
use crate::state::journal::{
    reason, Journal, JournalStore, OpKind, Operation, Segment, OLD_DELETION_DEFERRED,
    PREVIOUS_OUTPUTS,
};
use crate::state::ledger::LedgerStore;
use crate::state::{ResourceState, StackState};
use crate::ui;

/// What a nested child's successful deploy did beyond its op log.
pub(super) struct ChildOutcome<'a> {
    /// Its outputs before the deploy, as state stored them.
    pub previous_outputs: Map<String, Value>,
    /// The records of the resources it removed from the template.
    pub removed: Vec<(String, ResourceState)>,
    /// The ids of its replacements whose old resource it left alive.
    pub deferred_olds: Vec<String>,
    /// Every operation it finished.
    pub done: &'a [Done],
}

/// After a nested child's successful deploy (its final save done): settles the ledger, removes
/// the segments of earlier failed attempts (deleting the old resources of replacements they
/// kept alive, as a top-level success does) and appends this run's `nested-pending-parent`
/// segment. Returns its `writtenAt`, or `None` when it could not be written (warned: the
/// parent's rollback then cannot revert this child).
pub(super) async fn after_child_success(
    env: &DeployEnv,
    run: &Run,
    prior: Option<Journal>,
    final_state: &StackState,
    outcome: ChildOutcome<'_>,
) -> Option<u64> {
    let store = failure::journal_store(env);
    let settle = run.tokens.settle(final_state);
    let write = async {
        let segment = pending_segment(run, outcome);
        let written_at = segment.written_at;
        let mut journal = prior.unwrap_or_else(|| Journal::new(&run.stack, &run.region));
        let settled = journal.append_pending(segment);
        if !settled.is_empty() {
            let mut old = Journal::new(&run.stack, &run.region);
            old.segments = settled;
            failure::delete_superseded_olds(run, &run.book, &old, final_state).await;
        }
        match store.save(&journal).await {
            Ok(()) => Some(written_at),
            Err(e) => {
                ui::warn(format!(
                    "{}: could not write its rollback journal segment: {e}; if the parent's \
                     deploy fails, its rollback will not revert this nested stack",
                    run.stack
                ));
                None
            }
        }
    };
    let ((), written) = tokio::join!(settle, write);
    written
}

/// This run's operations as a `nested-pending-parent` segment: a replacement whose old
/// resource the deploy left alive for later is marked so ([`OLD_DELETION_DEFERRED`]), and each
/// removed resource that was deleted is a DELETE op with its record (a rollback creates it
/// again).
fn pending_segment(run: &Run, outcome: ChildOutcome<'_>) -> Segment {
    let ChildOutcome {
        previous_outputs,
        removed,
        deferred_olds,
        done,
    } = outcome;
    let acted = |id: &str, action: Action| {
        done.iter()
            .any(|d| d.logical_id == id && d.action == action)
    };
    let mut segment = run.oplog.segment(reason::NESTED_PENDING_PARENT);
    for op in segment.operations.iter_mut() {
        if op.is_replacement() && deferred_olds.contains(&op.logical_id) {
            op.extra
                .insert(OLD_DELETION_DEFERRED.into(), Value::Bool(true));
        }
    }
    for (id, record) in removed {
        // A removed nested row destroyed its child, which no rollback brings back.
        if is_nested(&record.resource_type) || !acted(&id, Action::Deleted) {
            continue;
        }
        segment.operations.push(Operation {
            kind: OpKind::Delete,
            logical_id: id,
            resource_type: record.resource_type.clone(),
            physical_id: record.physical_id.clone(),
            previous_resource_type: Some(record.resource_type.clone()),
            previous: Some(record),
            old_resource_retained: None,
            old_deleted_before_create: None,
            extra: Map::new(),
        });
    }
    segment
        .extra
        .insert(PREVIOUS_OUTPUTS.into(), Value::Object(previous_outputs));
    failure::redacted(run, &segment)
}

/// After a top-level stack's successful deploy: deletes the rollback journals of its nested
/// descendants (children, grandchildren, ...), each under that stack's lock, so no
/// `nested-pending-parent` segment outlives the deploy; first the old resources their
/// replacements left alive for a rollback are deleted. Failures are warnings.
pub(super) async fn settle_descendants(
    env: &DeployEnv,
    stack: &str,
    region: &str,
    rules: DeleteRules,
) {
    let store = failure::journal_store(env);
    let names = match store.descendants(stack, region).await {
        Ok(names) => names,
        Err(e) => {
            ui::warn(format!(
                "{stack}: could not list its nested stacks' rollback journals: {e}; they are \
                 deleted by the next successful deploy"
            ));
            return;
        }
    };
    for child in names {
        let lock = match env.backend.lock(&child, region, "deploy").await {
            Ok(lock) => lock,
            Err(e) => {
                ui::warn(format!(
                    "{child}: its rollback journal was not deleted after {stack}'s successful \
                     deploy: {e}"
                ));
                continue;
            }
        };
        let deletable = delete_deferred_olds(env, &store, &child, region, rules).await;
        if !deletable {
            lock.release_and_warn().await;
            continue;
        }
        if let Err(e) = store.delete(&child, region).await {
            ui::warn(format!(
                "{child}: could not delete its rollback journal after {stack}'s successful \
                 deploy: {e}"
            ));
        }
        lock.release_and_warn().await;
    }
}

/// Deletes the old resources the pending segments of `child`'s journal left alive (unless its
/// record names them again). Returns whether the journal may be deleted (it was read).
async fn delete_deferred_olds(
    env: &DeployEnv,
    store: &JournalStore,
    child: &str,
    region: &str,
    rules: DeleteRules,
) -> bool {
    let journal = match store.load(child, region).await {
        Ok(Some(journal)) => journal,
        Ok(None) => return true,
        Err(e) => {
            ui::warn(format!("{child}: its rollback journal was kept: {e}"));
            return false;
        }
    };
    if journal.deferred_olds().is_empty() {
        return true;
    }
    let recorded: Vec<String> = match env.backend.load(child, region).await {
        Ok(loaded) => loaded
            .map(|l| l.parsed.state.resources)
            .unwrap_or_default()
            .values()
            .filter_map(|r| r.physical_id.clone())
            .collect(),
        Err(e) => {
            ui::warn(format!(
                "{child}: its rollback journal was kept (the old resources of its replacements \
                 are still to be deleted): {e}"
            ));
            return false;
        }
    };
    let ctx = ProviderContext {
        clients: &env.clients,
        stack_name: child,
        region,
        account_id: &env.account_id,
        partition: crate::resolve::partition_for_region(region).name,
        no_wait: false,
    };
    delete_olds(&env.registry, &ctx, rules, &journal, &recorded).await;
    true
}

/// Deletes the old resources whose deletion the pending segments of `journal` deferred, unless
/// `recorded` (the stack's physical ids) names them again. A failure is a warning.
pub(super) async fn delete_olds(
    registry: &Registry,
    ctx: &ProviderContext<'_>,
    rules: DeleteRules,
    journal: &Journal,
    recorded: &[String],
) {
    let child = journal.stack_name.as_str();
    for op in journal.deferred_olds() {
        let Some(old) = op.previous.as_ref() else {
            continue;
        };
        let Some(pid) = old.physical_id.as_deref() else {
            continue;
        };
        if recorded.iter().any(|r| r == pid) {
            continue;
        }
        let (_, result) =
            delete_recorded(registry, ctx, &rules.on_replace(), &op.logical_id, old).await;
        match result {
            Ok(()) => ui::info(format!(
                "  ✓ {child} {} {} old resource {pid} deleted",
                op.logical_id, old.resource_type
            )),
            Err(e) => ui::warn(format!(
                "{child}: the old {} of {} ({pid}) could not be deleted: {e}; delete it by hand",
                old.resource_type, op.logical_id
            )),
        }
    }
}

/// Reverts a parent's UPDATE op of the nested-stack row `id`: under the child's lock, replays
/// the child's `nested-pending-parent` segment the op names (its creates deleted, updates
/// restored, deletes re-created), restores the child's outputs, pops the segment and saves the
/// child's record; then restores the row's previous record. A segment already replayed (an
/// interrupted rollback run again) leaves only the row to restore.
pub(super) fn revert_child<'a, 'b: 'a>(
    parent: &'a Reverter<'b>,
    id: &'a str,
    op: &'a Operation,
    previous: &'a ResourceState,
) -> Pin<Box<dyn Future<Output = Result<&'static str, String>> + Send + 'a>> {
    Box::pin(async move {
        let (stack, region) = (parent.ctx.stack_name, parent.ctx.region);
        let child = child_stack_name(stack, id);
        let what = match op.nested_child_segment() {
            None => "restored (its nested stack recorded no changes to revert)",
            Some(at) => {
                let lock = parent
                    .backend
                    .lock(&child, region, "rollback")
                    .await
                    .map_err(|e| format!("nested stack {child}: {e}"))?;
                let result = replay_child(parent, &child, at).await;
                lock.release_and_warn().await;
                result.map_err(|e| format!("nested stack {child}: {e}"))?
            }
        };
        parent.book.put(id, Some(previous.clone())).await;
        Ok(what)
    })
}

async fn replay_child(
    parent: &Reverter<'_>,
    child: &str,
    written_at: u64,
) -> Result<&'static str, String> {
    const ALREADY: &str = "restored (its nested stack's changes were already reverted)";
    let region = parent.ctx.region;
    let backend = parent.backend;
    let (client, bucket, keys) = (backend.client().clone(), backend.bucket(), backend.keys());
    let journals = JournalStore::new(client.clone(), bucket, keys.clone());
    let ledgers = LedgerStore::new(client, bucket, keys.clone());
    let (journal, loaded, ledger) = tokio::join!(
        journals.load(child, region),
        backend.load(child, region),
        ledgers.load(child, region)
    );
    let Some(mut journal) = journal.map_err(|e| e.to_string())? else {
        return Ok(ALREADY);
    };
    let Some(index) = journal.pending_parent_segment(written_at)? else {
        return Ok(ALREADY);
    };
    let Some(loaded) = loaded.map_err(|e| e.to_string())? else {
        return Err(
            "its journal holds this deploy's changes but its state record is gone; inspect \
             it with `cdkd state list` and delete what is left by hand"
                .into(),
        );
    };
    let state = loaded.parsed.state;
    let tokens = Tokens::from_loaded(ledgers, child, region, ledger, &state, true);
    let book = StateBook::new(
        backend.clone(),
        child,
        region,
        state,
        Some(loaded.etag),
        loaded.parsed.from_legacy_key,
    );
    let reverter = Reverter {
        registry: parent.registry,
        ctx: ProviderContext {
            clients: parent.ctx.clients,
            stack_name: child,
            region,
            account_id: parent.ctx.account_id,
            partition: parent.ctx.partition,
            no_wait: parent.ctx.no_wait,
        },
        book: &book,
        backend: parent.backend,
        exports: parent.exports,
        progress: parent.progress,
        rules: parent.rules,
        events: parent.events.clone(),
    };
    let segment = journal.segments[index].clone();
    ui::info(format!(
        "  {child}: reverting its deploy ({} operation(s))",
        segment.operations.len()
    ));
    // The segments are replayed in the exact reverse of the parent's ops, so only the ids
    // `cdkd import` adopted since are skipped (not those a later segment superseded).
    let imported: Vec<String> = segment
        .imported_resources()
        .into_iter()
        .map(|r| r.logical_id)
        .collect();
    let done = reverter.revert(&segment.operations, &imported).await;
    tokens.forget(&done.deleted_creates).await;
    for id in &done.released {
        tokens.release(id).await;
    }
    if !done.is_clean() {
        let saved = book.finish(|_| {}).await;
        let list: Vec<String> = done
            .failures
            .iter()
            .map(|(id, why)| format!("{id}: {why}"))
            .collect();
        return Err(format!(
            "{} operation(s) not reverted ({}){}; its journal keeps the segment, so the \
             rollback can be run again",
            done.failures.len(),
            list.join("; "),
            saved
                .err()
                .map(|e| format!(" and its state save failed: {e}"))
                .unwrap_or_default()
        ));
    }
    if let Some(outputs) = segment
        .extra
        .get(PREVIOUS_OUTPUTS)
        .and_then(Value::as_object)
    {
        let outputs = outputs.clone();
        book.change(move |s| s.outputs = (!outputs.is_empty()).then_some(outputs));
    }
    let saved = book.finish(|_| {}).await.map_err(|e| {
        format!("its resources were reverted but its state record could not be saved: {e}")
    })?;
    tokens.settle(&saved).await;
    journal.remove_segment(index);
    let written = if journal.segments.is_empty() {
        journals.delete(child, region).await
    } else {
        journals.save(&journal).await
    };
    written.map_err(|e| {
        format!("its changes were reverted but its journal could not be updated: {e}")
    })?;
    if let Some(exports) = parent.exports {
        exports.update_stack(region, child, &saved).await;
    }
    Ok("restored (its nested stack's changes reverted)")
}
