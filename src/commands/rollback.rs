//! `cdkd rollback <stack>`: revert what a failed or interrupted deploy left, from the stack's
//! rollback journal and state record alone (no synth), under the stack lock.

use std::sync::Arc;

use super::state::stack_region;
use super::Session;
use crate::aws::{ClientOptions, Clients};
use crate::cli::RollbackArgs;
use crate::engine::deploy::{default_registry, replay_journal, ReplayEnv, ReplayOptions};
use crate::error::{ExitStatus, Result};
use crate::ui;

pub async fn run(session: &Session, args: &RollbackArgs) -> Result<ExitStatus> {
    let settings = &session.settings;
    let backend = Arc::new(session.state_backend().await?);
    let region = stack_region(session, &backend, &args.stack, args.stack_region.as_deref()).await?;
    let clients = Arc::new(
        Clients::load(&ClientOptions {
            region: Some(region.clone()),
            profile: settings.profile.clone(),
            role_arn: settings.role_arn.clone(),
        })
        .await,
    );
    let account_id = clients.account_id().await?;
    let env = ReplayEnv {
        clients,
        backend,
        registry: Arc::new(default_registry()),
        account_id,
    };
    super::orphan_state::confirm_on_terminal(
        session,
        args.force,
        &format!("Roll back {} ({region}) from its journal?", args.stack),
    )?;
    let options = ReplayOptions {
        orphan: args.orphan.clone(),
        skip_final_snapshot: args.skip_final_snapshot,
        revert_failed: args.revert_failed,
    };
    let stack = args.stack.as_str();
    let report = match replay_journal(&env, stack, &region, options).await {
        Ok(r) => r,
        Err(e) => {
            ui::error(format!("{stack} ({region}): rollback failed: {e}"));
            return Ok(ExitStatus::Failure);
        }
    };
    if report.nothing_to_do {
        ui::info(format!(
            "{stack} ({region}): no rollback journal; nothing to roll back"
        ));
        return Ok(ExitStatus::Success);
    }
    if report.failures.is_empty() {
        ui::info(format!(
            "{stack} ({region}): rolled back ({} operation(s) reverted, {} journal segment(s) \
             replayed)",
            report.reverted, report.segments_replayed
        ));
        return Ok(ExitStatus::Success);
    }
    ui::error(format!(
        "{stack} ({region}): rollback incomplete: {} operation(s) could not be reverted; the \
         journal keeps {} segment(s), so `cdkd rollback {stack}` can be run again",
        report.failures.len(),
        report.segments_left
    ));
    for (id, why) in &report.failures {
        ui::error(format!("  {id}: {why}"));
    }
    Ok(ExitStatus::Failure)
}
