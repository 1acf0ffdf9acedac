//! `cdkd deploy`: deploy the selected stacks (and, unless --exclusively, the stacks they
//! depend on) in dependency order, each against its own state record.
//!
//! Stacks run one after another in dependency order (--stack-concurrency is accepted; stacks do
//! not run concurrently yet). A stack whose dependency failed is skipped. Exit status 1 when any
//! stack was refused or any resource failed.

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::watch;

use super::{require_complete, select_stacks, Session};
use crate::aws::{ClientOptions, Clients};
use crate::cli::DeployArgs;
use crate::engine::deploy::{
    default_registry, deploy_stack, DeployEnv, DeployOptions, StackReport, StackTarget,
};
use crate::error::{Error, ExitStatus, Result};
use crate::resolve::{NoExternalLookup, ParameterOverride};
use crate::state::exports::ExportIndexStore;
use crate::ui;

pub async fn run(session: &Session, args: &DeployArgs) -> Result<ExitStatus> {
    let mut parameters = Vec::new();
    for p in &args.parameters {
        let Some(parsed) = ParameterOverride::parse(p) else {
            return Err(Error::Usage(format!(
                "--parameters {p}: expected KEY=VALUE or STACK:KEY=VALUE"
            )));
        };
        parameters.push(parsed);
    }
    let assembly = session.assembly().await?;
    require_complete(&assembly)?;
    let stacks = select_stacks(&assembly, &args.selection, !args.exclusively)?;
    if stacks.is_empty() {
        ui::info("The app has no stacks; nothing to deploy");
        return Ok(ExitStatus::Success);
    }

    let settings = &session.settings;
    let clients = Arc::new(
        Clients::load(&ClientOptions {
            region: settings.region.clone(),
            profile: settings.profile.clone(),
            role_arn: settings.role_arn.clone(),
        })
        .await,
    );
    let account_id = clients.account_id().await?;
    let backend = Arc::new(session.state_backend().await?);
    let exports = Arc::new(ExportIndexStore::new(
        backend.client().clone(),
        backend.bucket(),
        backend.keys().clone(),
    ));
    let env = DeployEnv {
        clients: clients.clone(),
        backend,
        registry: Arc::new(default_registry()),
        exports,
        external: Arc::new(NoExternalLookup),
        account_id: account_id.clone(),
    };
    let options = DeployOptions {
        concurrency: args.concurrency as usize,
        parameters,
        force_stateful_recreation: args.force_stateful_recreation,
        no_wait: args.no_wait,
        cancel: Some(cancel_on_ctrl_c()),
    };

    let mut failed_ids: Vec<&str> = Vec::new();
    let mut any_failure = false;
    let mut json = Map::new();
    for stack in &stacks {
        let name = stack.stack_name.as_str();
        if let Some(dep) = stack
            .dependencies
            .iter()
            .find(|d| failed_ids.contains(&d.as_str()))
        {
            ui::error(format!(
                "{name}: skipped: the stack it depends on ({dep}) did not deploy"
            ));
            failed_ids.push(&stack.artifact_id);
            any_failure = true;
            continue;
        }
        let outcome = deploy_one(&env, stack, &account_id, &options).await;
        match outcome {
            Ok(report) => {
                summarize(&report);
                if !report.is_success() {
                    any_failure = true;
                    failed_ids.push(&stack.artifact_id);
                }
                let mut entry = Map::new();
                entry.insert("outputs".into(), Value::Object(report.outputs));
                json.insert(name.to_owned(), Value::Object(entry));
            }
            Err(e) => {
                ui::error(format!("{name}: {e}"));
                any_failure = true;
                failed_ids.push(&stack.artifact_id);
            }
        }
    }
    if args.json {
        ui::output(serde_json::to_string_pretty(&Value::Object(json)).unwrap_or_default());
    }
    Ok(if any_failure {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

async fn deploy_one(
    env: &DeployEnv,
    stack: &crate::assembly::StackArtifact,
    account_id: &str,
    options: &DeployOptions,
) -> std::result::Result<StackReport, String> {
    if let Some(pinned) = stack.environment.account.as_deref() {
        if pinned != account_id {
            return Err(format!(
                "the stack targets account {pinned}, but the credentials are for account \
                 {account_id}; nothing was changed"
            ));
        }
    }
    let region = match stack
        .environment
        .region
        .clone()
        .or_else(|| env.clients.default_region())
    {
        Some(r) => r,
        None => {
            return Err(
                "no region: the stack does not pin one and none is configured (--region, \
                 AWS_REGION or the profile)"
                    .into(),
            )
        }
    };
    ui::info(format!("Deploying {} ({region})", stack.display_name));
    let target = StackTarget {
        stack_name: &stack.stack_name,
        region: &region,
        template_file: &stack.template_file,
    };
    deploy_stack(env, &target, options)
        .await
        .map_err(|e| e.to_string())
}

fn summarize(report: &StackReport) {
    let name = &report.stack_name;
    if !report.changed {
        ui::info(format!("{name}: no changes; nothing was written"));
        return;
    }
    if report.is_success() {
        ui::info(format!("{name}: deployed ({})", report.tally.describe()));
        if !report.outputs.is_empty() {
            ui::info("Outputs:");
            for (key, value) in &report.outputs {
                let shown = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                ui::info(format!("  {name}.{key} = {shown}"));
            }
        }
        return;
    }
    ui::error(format!(
        "{name}: deploy failed ({}); what was created is kept in state (automatic rollback is \
         not available in this build)",
        report.tally.describe()
    ));
    for (id, message) in &report.failures {
        ui::error(format!("  {id}: {message}"));
    }
    if !report.cancelled.is_empty() {
        ui::error(format!(
            "  interrupted before starting: {}",
            report.cancelled.join(", ")
        ));
    }
}

/// A flag that flips on the first Ctrl-C: the walk starts nothing new and lets what runs
/// finish, so every completed operation is recorded. A second Ctrl-C exits at once.
fn cancel_on_ctrl_c() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            ui::warn("interrupted: finishing the operations in flight, starting no more");
            let _ = tx.send(true);
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    rx
}
