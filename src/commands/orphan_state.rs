//! `cdkd state orphan`: drop a stack's record, or some of its resources, leaving AWS untouched.
//!
//! Works without an app and on damaged records (it is the remedy their errors point at): a whole
//! record is deleted without being parsed, and single rows are cut out of the stored JSON.

use std::io::IsTerminal;

use super::state::stack_region;
use super::Session;
use crate::cli::StateOrphanArgs;
use crate::error::{Error, ExitStatus, Result};
use crate::state::edit::remove_resources;
use crate::state::exports::ExportIndexStore;
use crate::state::lock::{default_owner, LockManager, DEFAULT_LOCK_TTL};
use crate::ui;

pub async fn run(session: &Session, args: &StateOrphanArgs) -> Result<ExitStatus> {
    let backend = session.state_backend().await?;
    let stack = args.stack.as_str();
    let region = stack_region(session, &backend, stack, args.stack_region.as_deref()).await?;
    let regional_key = backend.keys().state(stack, &region);
    let legacy_key = backend.keys().legacy_state(stack);
    let (key, (bytes, etag)) = match backend.get_object(&regional_key).await? {
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

    if args.resources.is_empty() {
        confirm(session, &format!("Drop the whole state record of {stack} ({region})? Its resources stay in AWS, unmanaged."))?;
    }

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
        if args.resources.is_empty() {
            backend.delete_object(&key).await?;
            let index = ExportIndexStore::new(
                backend.client().clone(),
                backend.bucket(),
                backend.keys().clone(),
            );
            index.remove_stack(&region, stack).await;
            ui::info(format!(
                "Dropped the state record of {stack} ({region}); its resources were left in AWS"
            ));
        } else {
            let body = remove_resources(&bytes, stack, &region, &args.resources)?;
            backend
                .put_if_match((stack, &region), &key, body, &etag)
                .await?;
            ui::info(format!(
                "Dropped {} from the state of {stack} ({region}); left in AWS",
                args.resources.join(", ")
            ));
        }
        Ok::<_, Error>(())
    }
    .await;
    lock.release_and_warn().await;
    outcome?;
    Ok(ExitStatus::Success)
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
