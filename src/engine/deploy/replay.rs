//! `cdkd rollback <stack>`: replays the stack's rollback journal against its state record,
//! with no synth (the journal holds each operation's previous record).
//!
//! Under the stack lock, segments are replayed newest first; a segment that reverts cleanly
//! is popped (its ids superseded on the older one) and the journal rewritten, so a replay that
//! stops partway resumes where it stopped. State is written behind after each step and saved
//! at the end. When every segment is gone the journal is deleted with its noncurrent
//! versions; a stack left with no resources at all loses its ledger, then its state record.
//! A parent's op that updated a nested-stack row replays the child's `nested-pending-parent`
//! segment too, under the child's lock (see `nested_pending`).

use std::sync::Arc;

use super::book::StateBook;
use super::rollback::{Reverted, Reverter};
use super::tokens::Tokens;
use crate::aws::Clients;
use crate::engine::policy::DeleteRules;
use crate::provider::{ProviderContext, Registry};
use crate::resolve::partition_for_region;
use crate::state::backend::{BackendError, S3Backend};
use crate::state::events::{EventLog, RunCommand, RunResult};
use crate::state::journal::JournalStore;
use crate::state::ledger::LedgerStore;
use crate::state::StackState;
use crate::ui;

/// `cdkd rollback` options.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// `--orphan ID`: these resources are not rolled back but dropped from state.
    pub orphan: Vec<String>,
    /// Also send failed updates back to their previous properties.
    pub revert_failed: bool,
    /// `--skip-final-snapshot`: a reverted create under `Snapshot` is deleted without one.
    pub skip_final_snapshot: bool,
}

/// What a replay did.
#[derive(Debug, Default)]
pub struct ReplayReport {
    /// No journal: nothing to roll back.
    pub nothing_to_do: bool,
    pub reverted: usize,
    pub segments_replayed: usize,
    pub segments_left: usize,
    /// (logical id, why) of what could not be reverted.
    pub failures: Vec<(String, String)>,
}

/// Why a replay stopped before it began or could not finish its writes.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Lock(#[from] crate::state::LockError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Aws(#[from] crate::aws::AwsError),
    #[error(transparent)]
    Journal(#[from] crate::state::journal::JournalError),
    #[error("{0}")]
    Refused(String),
}

/// What a replay needs.
pub struct ReplayEnv {
    pub clients: Arc<Clients>,
    pub backend: Arc<S3Backend>,
    pub registry: Arc<Registry>,
    pub account_id: String,
}

/// Replays the journal of `stack` in `region` under its lock.
pub async fn replay_journal(
    env: &ReplayEnv,
    stack: &str,
    region: &str,
    options: ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    let lock = env.backend.lock(stack, region, "rollback").await?;
    let log = EventLog::start(
        env.backend.client().clone(),
        env.backend.bucket(),
        env.backend.keys().clone(),
        (stack, region),
        RunCommand::Rollback,
    );
    let result = replay_locked(env, stack, region, options, &log).await;
    match &result {
        // No journal: nothing ran, so there is no run to record.
        Ok(r) if r.nothing_to_do => log.discard().await,
        Ok(r) => {
            let first = r.failures.first().map(|(id, e)| format!("{id}: {e}"));
            let result = if r.failures.is_empty() {
                RunResult::Succeeded
            } else {
                RunResult::Failed
            };
            crate::engine::events::run_finished(&log, result, None, first.as_deref());
        }
        Err(e) => {
            crate::engine::events::run_finished(&log, RunResult::Failed, None, Some(&e.to_string()))
        }
    }
    lock.release_and_warn().await;
    result
}

async fn replay_locked(
    env: &ReplayEnv,
    stack: &str,
    region: &str,
    options: ReplayOptions,
    log: &EventLog,
) -> Result<ReplayReport, ReplayError> {
    let (client, bucket, keys) = (
        env.backend.client().clone(),
        env.backend.bucket(),
        env.backend.keys().clone(),
    );
    let journals = JournalStore::new(client.clone(), bucket, keys.clone());
    let ledgers = LedgerStore::new(client, bucket, keys);
    let (journal, loaded, ledger) = tokio::join!(
        journals.load(stack, region),
        env.backend.load(stack, region),
        ledgers.load(stack, region)
    );
    let Some(mut journal) = journal? else {
        return Ok(ReplayReport {
            nothing_to_do: true,
            ..ReplayReport::default()
        });
    };
    let loaded = loaded.map_err(|e| match e {
        BackendError::State(e) => ReplayError::Refused(format!("{}: {e}", e.code())),
        other => ReplayError::from(other),
    })?;
    let (state, etag, from_legacy) = match loaded {
        Some(l) => (l.parsed.state, Some(l.etag), l.parsed.from_legacy_key),
        None => (StackState::new(stack, region), None, false),
    };
    let record_exists = etag.is_some();
    let tokens = Tokens::from_loaded(ledgers, stack, region, ledger, &state, record_exists);
    let book = StateBook::new(env.backend.clone(), stack, region, state, etag, from_legacy);
    let partition = partition_for_region(region).name;
    let reverter = Reverter {
        registry: &env.registry,
        ctx: ProviderContext {
            clients: &env.clients,
            stack_name: stack,
            region,
            account_id: &env.account_id,
            partition,
            no_wait: false,
        },
        book: &book,
        backend: &env.backend,
        exports: None,
        progress: None,
        rules: DeleteRules {
            skip_final_snapshot: options.skip_final_snapshot,
            remove_protection: false,
        },
        events: Some(log.clone()),
    };
    crate::engine::events::rollback_phase(Some(log), stack, false);

    let mut report = ReplayReport::default();
    while let Some(segment) = journal.segments.last().cloned() {
        ui::info(format!(
            "{stack}: replaying a journal segment ({}, {} operation(s))",
            segment.reason,
            segment.operations.len()
        ));
        // Ops of a logical id `cdkd import` adopted since (importedResources) are not run.
        let imported: Vec<String> = segment
            .imported_resources()
            .into_iter()
            .map(|r| r.logical_id)
            .collect();
        let failed_ops: Vec<_> = segment
            .failed_operations
            .iter()
            .filter(|f| !imported.contains(&f.logical_id))
            .cloned()
            .collect();
        let mut skip = segment.skipped_logical_ids();
        let orphaned = reverter
            .orphan_named(&segment.operations, &options.orphan)
            .await;
        skip.extend(orphaned.iter().cloned());
        let failed_ops: Vec<_> = failed_ops
            .into_iter()
            .filter(|f| !orphaned.contains(&f.logical_id))
            .collect();
        let mut done: Reverted = reverter.revert(&segment.operations, &skip).await;
        done.released.extend(orphaned);
        let recreated = reverter.recreate_deleted_first(&failed_ops).await;
        done.reverted.extend(recreated.reverted);
        done.failures.extend(recreated.failures);
        if options.revert_failed {
            let failed = reverter.revert_failed(&failed_ops).await;
            done.reverted.extend(failed.reverted);
            done.failures.extend(failed.failures);
        }
        tokens.forget(&done.deleted_creates).await;
        for id in &done.released {
            tokens.release(id).await;
        }
        report.reverted += done.reverted.len();
        if !done.is_clean() {
            report.failures = done.failures;
            break;
        }
        journal.pop_segment();
        report.segments_replayed += 1;
        if !journal.segments.is_empty() {
            journals.save(&journal).await?;
        }
    }
    report.segments_left = journal.segments.len();
    crate::engine::events::rollback_phase(Some(log), stack, true);

    let now = book.state().await;
    if report.segments_left == 0 && now.resources.is_empty() {
        // Nothing is left of the stack: ledger first, then the record, then the journal.
        book.close().await;
        tokens
            .delete()
            .await
            .map_err(|e| ReplayError::Refused(format!("{stack}: {e}; the state record is kept")))?;
        if book.has_stored_record() {
            env.backend.delete_state(stack, region).await?;
        }
        journals.delete(stack, region).await?;
        return Ok(report);
    }
    let saved = book.finish(|_| {}).await?;
    tokens.settle(&saved).await;
    if report.segments_left == 0 {
        journals.delete(stack, region).await?;
    } else if report.segments_replayed > 0 {
        journals.save(&journal).await?;
    }
    Ok(report)
}
