//! `cdkd publish-assets`: publish the selected stacks' file and container assets to the
//! destinations their asset manifests name, without deploying anything.

use super::{require_complete, select_stacks, Session};
use crate::cli::PublishAssetsArgs;
use crate::error::{ExitStatus, Result};
use crate::ui;

pub async fn run(session: &Session, args: &PublishAssetsArgs) -> Result<ExitStatus> {
    let assembly = session.assembly().await?;
    require_complete(&assembly)?;
    let stacks = select_stacks(&assembly, &args.selection, false)?;
    if stacks.is_empty() {
        ui::info("The app has no stacks; nothing to publish");
        return Ok(ExitStatus::Success);
    }
    let clients = session.clients().await;
    let account_id = clients.account_id().await?;
    let backend = session.state_backend().await?;
    let report = crate::assets::publish(
        clients,
        &backend,
        &account_id,
        &stacks,
        args.assets.options(),
    )
    .await?;
    ui::info(summary(&report));
    Ok(ExitStatus::Success)
}

/// `Assets: 1 uploaded, 2 already present, 0 images pushed`.
pub fn summary(report: &crate::assets::PublishReport) -> String {
    if report.is_empty() {
        return "Assets: nothing to publish".to_owned();
    }
    format!(
        "Assets: {} uploaded, {} already present, {} image(s) pushed",
        report.uploaded, report.already_present, report.images_pushed
    )
}
