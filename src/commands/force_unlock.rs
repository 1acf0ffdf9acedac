//! `cdkd force-unlock`: remove a stack's lock whoever holds it, for after a crashed run.

use super::state::stack_region;
use super::Session;
use crate::cli::ForceUnlockArgs;
use crate::error::{ExitStatus, Result};
use crate::state::lock::LockManager;
use crate::ui;

pub async fn run(session: &Session, args: &ForceUnlockArgs) -> Result<ExitStatus> {
    let backend = session.state_backend().await?;
    let region = match &args.stack_region {
        Some(region) => region.clone(),
        None => stack_region(session, &backend, &args.stack, None).await?,
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
