//! The end of a deploy, as far as the rollback journal and the create-token ledger go.
//!
//! On failure ([`after_failure`]): the state is saved (the save before a rollback), this
//! attempt's segment is appended to the journal, and then
//! - with `--no-rollback`, or after Ctrl-C, nothing more: state keeps what was done, the
//!   journal lets `cdkd rollback` revert it later;
//! - otherwise the automatic rollback reverts this run's operations. A clean one settles the
//!   segment to its failed operations only (`auto-rollback-clean`); one that left something
//!   unreverted keeps the full segment, so `cdkd rollback` can finish the job. A rolled-back
//!   FIRST deploy leaves nothing: the ledger, then the state record, then the journal go.
//!
//! On success ([`after_success`]): the old resources of replacements an earlier failed attempt
//! journaled and that state no longer records are deleted, then the journal (with its
//! noncurrent versions), and the ledger is settled.

use super::book::StateBook;
use super::execute::Run;
use super::rollback::Reverter;
use super::DeployEnv;
use crate::state::journal::{reason, Journal, JournalStore, Segment};
use crate::state::StackState;
use crate::ui;

/// How a failed deploy is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Roll back automatically.
    Rollback,
    /// `--no-rollback`.
    Keep,
    /// Ctrl-C.
    Interrupted,
}

/// What happened after a failure.
#[derive(Debug, Clone, Default)]
pub struct FailureSummary {
    /// One line for the user.
    pub line: String,
    /// The rollback ran and reverted everything.
    pub rolled_back_cleanly: bool,
    /// The stack's state record was deleted (a rolled-back first deploy).
    pub record_deleted: bool,
    /// (logical id, why) of operations the rollback could not revert.
    pub rollback_failures: Vec<(String, String)>,
}

pub(super) fn journal_store(env: &DeployEnv) -> JournalStore {
    JournalStore::new(
        env.backend.client().clone(),
        env.backend.bucket(),
        env.backend.keys().clone(),
    )
}

/// Closes a failed or interrupted deploy. `prior` is the journal as loaded before the deploy;
/// `first_deploy` whether the stack had no resources before it.
pub(super) async fn after_failure(
    env: &DeployEnv,
    run: &Run,
    prior: Option<Journal>,
    mode: Mode,
    first_deploy: bool,
) -> FailureSummary {
    let (stack, region) = (run.stack.as_str(), run.region.as_str());
    if let Err(e) = run.book.checkpoint().await {
        ui::warn(format!(
            "{stack}: the state save before the rollback failed: {e}"
        ));
    }
    let store = journal_store(env);
    run.tokens.write_pending().await;
    let mut segment = run.oplog.segment(match mode {
        Mode::Rollback => reason::AUTO_ROLLBACK,
        Mode::Keep => reason::NO_ROLLBACK,
        Mode::Interrupted => reason::INTERRUPTED,
    });
    let run_id = run
        .nested
        .options
        .events
        .as_ref()
        .map(|l| l.run_id().to_owned());
    segment.stamp(first_deploy, run_id.as_deref());
    let stored_segment = redacted(run, &segment);
    let wrote_segment = !segment.operations.is_empty() || !segment.failed_operations.is_empty();
    let mut journal = prior.unwrap_or_else(|| Journal::new(stack, region));
    let mut journal_ok = false;
    if wrote_segment {
        journal.segments.push(stored_segment);
        match store.save(&journal).await {
            Ok(()) => journal_ok = true,
            Err(e) => ui::warn(format!(
                "{stack}: could not write the rollback journal: {e}; what this deploy did is \
                 in state"
            )),
        }
    }
    let rollback_hint = format!("run `cdkd rollback {stack}` to revert it");
    match mode {
        Mode::Keep | Mode::Interrupted => {
            let what = if mode == Mode::Keep {
                "--no-rollback: what this deploy did is kept in state"
            } else {
                "interrupted: what finished is kept in state"
            };
            let line = if journal_ok && !segment.operations.is_empty() {
                format!("{what}; {rollback_hint}")
            } else {
                what.to_owned()
            };
            return FailureSummary {
                line,
                ..FailureSummary::default()
            };
        }
        Mode::Rollback => {}
    }

    ui::info(format!("{stack}: rolling back this deploy's changes"));
    let reverter = Reverter {
        registry: &run.registry,
        ctx: run.provider_context(),
        book: &run.book,
        backend: &env.backend,
        exports: Some(env.exports.as_ref()),
        progress: run.nested.options.progress.as_deref(),
        rules: run.nested.delete_rules(),
        events: run.nested.options.events.clone(),
    };
    let events = run.nested.options.events.as_ref();
    crate::engine::events::rollback_phase(events, stack, false);
    let mut reverted = reverter.revert(&segment.operations, &[]).await;
    // A replacement `--replace` deleted the old resource of before its create failed: the
    // old one is created again.
    let recreated = reverter
        .recreate_deleted_first(&segment.failed_operations)
        .await;
    crate::engine::events::rollback_phase(events, stack, true);
    reverted.reverted.extend(recreated.reverted);
    reverted.failures.extend(recreated.failures);
    run.tokens.forget(&reverted.deleted_creates).await;
    for id in &reverted.released {
        run.tokens.release(id).await;
    }
    if !reverted.is_clean() {
        return FailureSummary {
            line: format!(
                "the automatic rollback left {} operation(s) unreverted; {rollback_hint}",
                reverted.failures.len()
            ),
            rollback_failures: reverted.failures,
            ..FailureSummary::default()
        };
    }

    // A resource the rollback kept (`orphans`) keeps the record: it is the only trace of it.
    let now = run.book.state().await;
    let empty_now =
        now.resources.is_empty() && now.orphans.as_ref().is_none_or(|rows| rows.is_empty());
    if first_deploy && empty_now {
        // Nothing this stack ever had is left: remove its objects, ledger first.
        run.book.close().await;
        let removed = remove_stack_objects(env, run, &store).await;
        return FailureSummary {
            line: if removed {
                "rolled back: every resource this deploy created was deleted".into()
            } else {
                "rolled back: every resource this deploy created was deleted (its state \
                 objects could not all be removed)"
                    .into()
            },
            rolled_back_cleanly: true,
            record_deleted: removed,
            rollback_failures: Vec::new(),
        };
    }
    if journal_ok {
        if let Some(last) = journal.segments.last_mut() {
            *last = Segment {
                reason: reason::AUTO_ROLLBACK_CLEAN.into(),
                operations: Vec::new(),
                ..last.clone()
            };
        }
        if let Err(e) = store.save(&journal).await {
            ui::warn(format!(
                "{stack}: could not settle the rollback journal: {e}"
            ));
        }
    }
    FailureSummary {
        line: "rolled back: this deploy's changes were reverted".into(),
        rolled_back_cleanly: true,
        ..FailureSummary::default()
    }
}

/// The segment as the journal stores it: every secret plaintext and NoEcho value this run
/// resolved is replaced as state replaces it; when that cannot be done, attempted properties
/// are left out.
pub(super) fn redacted(run: &Run, segment: &Segment) -> Segment {
    let needles = run.resolution.redactor.needles();
    if needles.is_empty() {
        return segment.clone();
    }
    let value = match serde_json::to_value(segment) {
        Ok(v) => needles.redact_value(&v),
        Err(_) => return without_attempts(segment),
    };
    serde_json::from_value(value).unwrap_or_else(|_| without_attempts(segment))
}

fn without_attempts(segment: &Segment) -> Segment {
    let mut s = segment.clone();
    for f in &mut s.failed_operations {
        f.attempted_properties = None;
    }
    s
}

/// Deletes the ledger, the state record and the journal of a stack left empty.
async fn remove_stack_objects(env: &DeployEnv, run: &Run, store: &JournalStore) -> bool {
    let (stack, region) = (run.stack.as_str(), run.region.as_str());
    if let Err(e) = run.tokens.delete().await {
        ui::warn(format!("{stack}: {e}; the (empty) state record is kept"));
        return false;
    }
    if run.book.has_stored_record() {
        if let Err(e) = env.backend.delete_state(stack, region).await {
            ui::warn(format!(
                "{stack}: could not delete the empty state record: {e}"
            ));
            return false;
        }
    }
    if let Err(e) = store.delete(stack, region).await {
        ui::warn(format!(
            "{stack}: could not delete the rollback journal: {e}"
        ));
    }
    true
}

/// After a successful deploy's final save: old resources an earlier failed attempt left
/// alive are deleted, the journal goes, and the ledger is settled.
pub(super) async fn after_success(
    env: &DeployEnv,
    run: &Run,
    prior: Option<Journal>,
    final_state: &StackState,
) {
    let store = journal_store(env);
    let settle = run.tokens.settle(final_state);
    let cleanup = async {
        let Some(journal) = prior else { return };
        delete_superseded_olds(run, &run.book, &journal, final_state).await;
        if let Err(e) = store.delete(&run.stack, &run.region).await {
            ui::warn(format!(
                "{}: could not delete the rollback journal after a successful deploy: {e}",
                run.stack
            ));
        }
    };
    tokio::join!(settle, cleanup);
}

/// The old resources of journaled replacements that state no longer records and that no
/// policy retains: a failed attempt kept them alive for its rollback, and the deploy that
/// just succeeded superseded them.
pub(super) async fn delete_superseded_olds(
    run: &Run,
    _book: &StateBook,
    journal: &Journal,
    now: &StackState,
) {
    let recorded: Vec<&str> = now
        .resources
        .values()
        .filter_map(|r| r.physical_id.as_deref())
        .collect();
    let ctx = run.provider_context();
    for segment in &journal.segments {
        for op in segment.operations.iter().filter(|o| o.is_replacement()) {
            let Some(old) = op.previous.as_ref() else {
                continue;
            };
            let Some(pid) = old.physical_id.as_deref() else {
                continue;
            };
            if recorded.contains(&pid)
                || old
                    .update_replace_policy
                    .as_ref()
                    .is_some_and(|p| p.retains())
                || op.old_resource_retained == Some(false)
            {
                continue;
            }
            let how = run.nested.delete_rules().on_replace();
            let (_, result) =
                super::delete::delete_recorded(&run.registry, &ctx, &how, &op.logical_id, old)
                    .await;
            match result {
                Ok(()) => ui::info(format!(
                    "  ✓ {} {} old resource {pid} deleted (left by an earlier failed deploy)",
                    op.logical_id, old.resource_type
                )),
                Err(e) => ui::warn(format!(
                    "{}: the old {} of {} ({pid}), left by an earlier failed deploy, could not \
                     be deleted: {e}; delete it by hand",
                    run.stack, old.resource_type, op.logical_id
                )),
            }
        }
    }
}
