//! `cdkd state orphan`: drop a stack's record, or some of its resources, leaving AWS untouched.
//!
//! Works without an app and on damaged records (it is the remedy their errors point at): a whole
//! record is deleted without being parsed; single resources (`--resource`) go through
//! `engine::orphan`, which cuts them out as stored, refuses damage only in what survives, and
//! rewrites the surviving references to them.

use std::io::IsTerminal;

use super::orphan::{into_error, report};
use super::state::stack_region;
use super::Session;
use crate::cli::StateOrphanArgs;
use crate::engine::destroy::cleanup::delete_record_with_sidecars;
use crate::engine::orphan::{orphan_resources, OrphanRequest};
use crate::error::{Error, ExitStatus, Result};
use crate::state::exports::ExportIndexStore;
use crate::state::lock::{default_owner, LockManager, DEFAULT_LOCK_TTL};
use crate::ui;

pub async fn run(session: &Session, args: &StateOrphanArgs) -> Result<ExitStatus> {
    if !args.resources.is_empty() && args.stacks.len() > 1 {
        return Err(Error::Usage(
            "--resource names resources of one stack: give one stack with it".into(),
        ));
    }
    let backend = session.state_backend().await?;
    super::each_stack(&args.stacks, |stack| {
        orphan_one(session, &backend, args, stack)
    })
    .await
}

async fn orphan_one(
    session: &Session,
    backend: &crate::state::backend::S3Backend,
    args: &StateOrphanArgs,
    stack: &str,
) -> Result<ExitStatus> {
    let region = stack_region(session, backend, stack, args.stack_region.as_deref()).await?;
    if !args.resources.is_empty() {
        // Single resources: the same scoped refusals and reference rewrite as `cdkd orphan`.
        let outcome = orphan_resources(
            backend,
            &OrphanRequest {
                stack,
                region: &region,
                logical_ids: &args.resources,
                force: args.force,
                dry_run: args.dry_run,
            },
        )
        .await
        .map_err(into_error)?;
        report(stack, &region, &args.resources, &outcome);
        return Ok(ExitStatus::Success);
    }
    let regional_key = backend.keys().state(stack, &region);
    let legacy_key = backend.keys().legacy_state(stack);
    let (key, _found) = match backend.get_object(&regional_key).await? {
        Some(found) => (regional_key, found),
        None => match backend.get_object(&legacy_key).await? {
            Some(found) => (legacy_key, found),
            None => {
                return Err(Error::Usage(format!(
                    "no state record for stack {stack} in {region}"
                )))
            }
        },
    };

    confirm(session, &format!("Drop the whole state record of {stack} ({region})? Its resources stay in AWS, unmanaged."))?;

    let locks = LockManager::new(
        backend.client().clone(),
        backend.bucket(),
        backend.keys().clone(),
    );
    let lock = locks
        .acquire_with_retry(
            stack,
            &region,
            &default_owner(),
            Some("state-orphan"),
            DEFAULT_LOCK_TTL,
        )
        .await?;
    let outcome = async {
        // The ledger and the journal go with the record, before it (state-schema).
        let legacy = (key != backend.keys().state(stack, &region)).then_some(key.as_str());
        delete_record_with_sidecars(backend, stack, &region, legacy)
            .await
            .map_err(|f| {
                Error::Usage(format!(
                    "{stack} ({region}): {} could not be deleted ({}); the state record was kept: re-run `cdkd state orphan {stack}` to finish",
                    f.what, f.detail
                ))
            })?;
        let index = ExportIndexStore::new(
            backend.client().clone(),
            backend.bucket(),
            backend.keys().clone(),
        );
        index.remove_stack(&region, stack).await;
        ui::info(format!(
            "Dropped the state record of {stack} ({region}); its resources were left in AWS"
        ));
        Ok::<_, Error>(())
    }
    .await;
    lock.release_and_warn().await;
    outcome?;
    Ok(ExitStatus::Success)
}

/// Asks on a terminal unless `skip` (`--force`) or `--yes`; off a terminal it proceeds, so a
/// script runs as it did before the question was added (upstream asks, and its `--force`
/// skips the question, as here).
pub(super) fn confirm_on_terminal(session: &Session, skip: bool, question: &str) -> Result<()> {
    if skip || session.settings.yes || !std::io::stdin().is_terminal() {
        return Ok(());
    }
    confirm(session, question)
}

/// Asks on a terminal; without one, `--yes` is required.
pub(super) fn confirm(session: &Session, question: &str) -> Result<()> {
    if session.settings.yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(Error::Usage(format!(
            "{question} Refusing without confirmation: pass --yes"
        )));
    }
    eprint!("{question} [y/N] ");
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| Error::io("reading the confirmation", e))?;
    if matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        Ok(())
    } else {
        Err(Error::Usage("cancelled; nothing was changed".into()))
    }
}
