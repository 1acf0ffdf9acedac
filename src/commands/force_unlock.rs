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
    super::each_stack(&args.stacks, |stack| {
        unlock(session, &backend, stack, args.stack_region.as_deref())
    })
    .await
}

async fn unlock(
    session: &Session,
    backend: &S3Backend,
    stack: &str,
    stack_region_flag: Option<&str>,
) -> Result<ExitStatus> {
    let region = match stack_region_flag {
        Some(region) => region.to_owned(),
        None => match stack_region(session, backend, stack, None).await {
            Ok(region) => region,
            Err(e) if !has_record(backend, stack).await? => {
                lock_region(session, backend, stack).await?.ok_or(e)?
            }
            Err(e) => return Err(e),
        },
    };
    let locks = LockManager::new(
        backend.client().clone(),
        backend.bucket(),
        backend.keys().clone(),
    );
    if let Ok(Some(current)) = locks.read(stack, &region).await {
        ui::info(format!(
            "Removing the lock held by {}",
            crate::state::lock::describe_holder(&current.info)
        ));
    }
    if locks.force_unlock(stack, &region).await? {
        ui::info(format!("Unlocked stack {stack} ({region})"));
    } else {
        ui::info(format!("Stack {stack} ({region}) was not locked"));
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
