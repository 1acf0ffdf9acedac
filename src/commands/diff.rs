//! `cdkd diff`: what a deploy of the selected stacks would change, against their state records,
//! without a lock and without touching anything.
//!
//! The diff goes to stdout (human text, or `--json`); warnings to stderr. Exit status: 3 when a
//! blocking refusal applies (a damaged record, a replacement the deploy refuses), else with
//! `--fail` 1 when anything would change, else 0. A stack that cannot be diffed at all (no
//! region, a template error) is an error: exit 1.

use std::io::IsTerminal;
use std::sync::Arc;

use super::{require_complete, select_stacks, Session};
use crate::assembly::StackArtifact;
use crate::aws::{ClientOptions, Clients};
use crate::cli::DiffArgs;
use crate::engine::diff::{diff_stack, DiffEnv, DiffTarget, StackDiff};
use crate::error::{Error, ExitStatus, Result};
use crate::resolve::{ExternalReader, ParameterOverride};
use crate::state::exports::ExportIndexStore;
use crate::ui;

pub async fn run(session: &Session, args: &DiffArgs) -> Result<ExitStatus> {
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
    let stacks = select_stacks(&assembly, &args.selection, false)?;
    if stacks.is_empty() {
        ui::info("The app has no stacks; nothing to diff");
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
    // Two independent round trips (STS, the bucket's region) overlap instead of queuing.
    let (account_id, backend) = tokio::join!(clients.account_id(), session.state_backend());
    let (account_id, backend) = (account_id?, Arc::new(backend?));
    // The exports index read as stored, as the deploy reads it (one GET instead of a scan of
    // every record per stack), never written: no rebuild, no write-through.
    let index = Arc::new(
        ExportIndexStore::new(
            backend.client().clone(),
            backend.bucket(),
            backend.keys().clone(),
        )
        .read_only(),
    );
    // Public dynamic references resolve as the deploy resolves them; no secret is fetched.
    let reader = Arc::new(
        ExternalReader::new(clients.clone(), backend.clone(), Some(index))
            .with_cfn_fallback(args.fallback.enabled())
            .withholding_secrets(),
    );
    let env = DiffEnv {
        backend: backend.clone(),
        registry: Arc::new(crate::provider::routing::registry_for(&backend)),
        reader: Some(reader),
        account_id: account_id.clone(),
        clients: Some(clients.clone()),
        recursive: args.recursive,
    };

    // In a region opted into cdkd-owned asset storage: the templates as a deploy rewrites them.
    let stacks: Vec<StackArtifact> = stacks.into_iter().cloned().collect();
    let (stacks, _redirected) = crate::assets::redirect_for_reading(
        &clients,
        &backend,
        &account_id,
        stacks,
        args.assets.options(),
    )
    .await?;

    // Every stack at once (a diff writes nothing, so no stack waits for another); the
    // output keeps the selection's order. Each stack's own calls are bounded by the shared
    // per-service limit on calls in flight (crate::aws::gate), not by a stack count.
    let env = Arc::new(env);
    let parameters = Arc::new(parameters);
    let mut tasks = tokio::task::JoinSet::new();
    for (i, stack) in stacks.iter().enumerate() {
        let region = stack_region(&clients, &account_id, stack);
        let (env, parameters, stack) = (env.clone(), parameters.clone(), stack.clone());
        tasks.spawn(async move {
            let diffed = match region {
                Ok(region) => {
                    let stack_tags = crate::engine::deploy::stack_tags::from_manifest(&stack.tags);
                    let target = DiffTarget {
                        stack_name: &stack.stack_name,
                        region: &region,
                        template_file: &stack.template_file,
                        stack_tags: &stack_tags,
                    };
                    diff_stack(&env, &target, &parameters)
                        .await
                        .map_err(|e| e.to_string())
                }
                Err(e) => Err(e),
            };
            (i, diffed)
        });
    }
    let mut results: Vec<Option<std::result::Result<StackDiff, String>>> =
        stacks.iter().map(|_| None).collect();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((i, diffed)) => results[i] = Some(diffed),
            Err(e) => tracing::error!("a stack's diff task panicked: {e}"),
        }
    }
    let mut diffs: Vec<StackDiff> = Vec::new();
    let mut failed = false;
    for (stack, result) in stacks.iter().zip(results) {
        match result {
            Some(Ok(d)) => diffs.push(d),
            Some(Err(e)) => {
                ui::error(format!("{}: {e}", stack.display_name));
                failed = true;
            }
            None => {
                ui::error(format!("{}: the diff did not finish", stack.display_name));
                failed = true;
            }
        }
    }

    if args.json {
        ui::output(ui::diff_json::render_json(&diffs));
    } else if !diffs.is_empty() && args.security_only {
        let text = ui::diff::render_security(&diffs, colour_on_stdout());
        ui::output(text.trim_end());
    } else if !diffs.is_empty() {
        let text = ui::diff::render(&diffs, colour_on_stdout());
        ui::output(text.trim_end());
    }
    // --security-only: only a broadening counts as a difference (the CDK's meaning).
    let changed = if args.security_only {
        diffs.iter().any(StackDiff::broadens)
    } else {
        diffs.iter().any(StackDiff::has_changes)
    };
    Ok(if diffs.iter().any(StackDiff::is_blocked) {
        ExitStatus::Blocked
    } else if failed || (args.fail && changed) {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Colour only when stdout is a terminal and NO_COLOR is not set.
fn colour_on_stdout() -> bool {
    std::env::var_os(crate::env::NO_COLOR).is_none() && std::io::stdout().is_terminal()
}

/// The region a stack is diffed in (as the deploy would pick it), or why there is none.
fn stack_region(
    clients: &Clients,
    account_id: &str,
    stack: &StackArtifact,
) -> std::result::Result<String, String> {
    if let Some(pinned) = stack.environment.account.as_deref() {
        if pinned != account_id {
            return Err(format!(
                "the stack targets account {pinned}, but the credentials are for account \
                 {account_id}"
            ));
        }
    }
    stack
        .environment
        .region
        .clone()
        .or_else(|| clients.default_region())
        .ok_or_else(|| {
            "no region: the stack does not pin one and none is configured (--region, \
             AWS_REGION or the profile)"
                .into()
        })
}
