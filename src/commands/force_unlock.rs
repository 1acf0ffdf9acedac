//! `cdkd force-unlock`: remove a stack's lock whoever holds it, for after a crashed run.
//!
//! The region is the record's; a run killed before its first state save leaves a lock and no
//! record, so then it is the region of the stack's only lock, else the usual chain
//! (`--region`, the profile, the environment).

use super::state::stack_region;
use super::Session;
use crate::cli::ForceUnlockArgs;
use crate::error::{Error, ExitStatus, Result};
use crate::state::backend::S3Backend;
use crate::state::keys::LOCK_FILE;
use crate::state::lock::LockManager;
use crate::ui;

pub async fn run(session: &Session, args: &ForceUnlockArgs) -> Result<ExitStatus> {
    let backend = session.state_backend().await?;
    let region = match &args.stack_region {
        Some(region) => region.clone(),
        None => match stack_region(session, &backend, &args.stack, None).await {
            Ok(region) => region,
            Err(e) if !has_record(&backend, &args.stack).await? => {
                lock_region(session, &backend, &args.stack)
                    .await?
                    .ok_or(e)?
            }
            Err(e) => return Err(e),
        },
    };
    let locks = LockManager::new(
        backend.client().clone(),
        backend.bucket(),
        backend.keys().clone(),
    );
    if let Ok(Some(current)) = locks.read(&args.stack, &region).await {
        ui::info(format!(
            "Removing the lock held by {}",
            crate::state::lock::describe_holder(&current.info)
        ));
    }
    if locks.force_unlock(&args.stack, &region).await? {
        ui::info(format!("Unlocked stack {} ({region})", args.stack));
    } else {
        ui::info(format!("Stack {} ({region}) was not locked", args.stack));
    }
    Ok(ExitStatus::Success)
}

async fn has_record(backend: &S3Backend, stack: &str) -> Result<bool> {
    Ok(backend
        .list_records()
        .await?
        .iter()
        .any(|r| r.stack_name == stack))
}

/// The region of `stack`'s only region-scoped lock; with none, the default region.
async fn lock_region(
    session: &Session,
    backend: &S3Backend,
    stack: &str,
) -> Result<Option<String>> {
    let folder = format!("{}{stack}/", backend.keys().list_prefix());
    let regions: Vec<String> = backend
        .list_keys(&folder)
        .await?
        .iter()
        .filter_map(|k| {
            k.strip_prefix(&folder)?
                .strip_suffix(&format!("/{LOCK_FILE}"))
        })
        .filter(|r| !r.is_empty() && !r.contains('/'))
        .map(str::to_owned)
        .collect();
    match regions.as_slice() {
        [only] => Ok(Some(only.clone())),
        [] => Ok(session.clients().await.default_region()),
        several => Err(Error::Usage(format!(
            "stack {stack} has locks in several regions ({}) and no state record; pass --stack-region",
            several.join(", ")
        ))),
    }
}
