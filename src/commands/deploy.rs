//! `cdkd deploy`: deploy the selected stacks (and, unless --exclusively, the stacks they
//! depend on), each against its own state record.
//!
//! Stacks run in parallel up to `--stack-concurrency`: a stack starts once every selected
//! stack it depends on has started, and changes nothing before they have deployed (it plans
//! meanwhile: engine::deploy's producers.rs); a stack whose dependency failed (or was
//! skipped) is skipped. `--dry-run` prints each stack's plan with no lock and no write. Exit status: 1
//! when any stack was refused, failed or skipped; otherwise 2 when resources were left
//! unaddressed (unless `--allow-unaddressed`); otherwise 0.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::{require_complete, select_ordered_with, Session};
use crate::assembly::StackArtifact;
use crate::aws::{ClientOptions, Clients};
use crate::cli::{DeployArgs, RequireApproval};
use crate::engine::deploy::{
    deploy_stack, dry_run, Approve, DeployEnv, DeployError, DeployOptions, Producers, Settled,
    StackReport, StackTarget, Tally,
};
use crate::error::{Error, ExitStatus, Result};
use crate::resolve::{ExternalReader, NoExternalLookup, ParameterOverride};
use crate::state::exports::ExportIndexStore;
use crate::ui;
use crate::ui::deploy_report::{self, StackCounts};
use crate::ui::progress::{bar_suits_stderr, Progress};
use crate::ui::prompt::ApprovalGate;

/// How one stack ended.
enum StackOutcome {
    Deployed(Box<StackReport>, Duration),
    /// Refused or stopped before provisioning (the message names why).
    Failed(String),
    /// Not attempted: a stack it depends on did not deploy.
    Skipped,
    /// Not started: the deploy was interrupted.
    NotStarted,
}

impl StackOutcome {
    fn is_success(&self) -> bool {
        matches!(self, StackOutcome::Deployed(r, _) if r.is_success())
    }
}

pub async fn run(session: &Session, args: &DeployArgs) -> Result<ExitStatus> {
    let began = Instant::now();
    args.timeouts.apply()?;
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
    let selected = select_ordered_with(
        &assembly,
        &args.selection,
        !args.exclusively,
        args.annotations.policy(),
    )?;
    let after = selected.after.clone();
    let stacks: Vec<StackArtifact> = selected.stacks.into_iter().cloned().collect();
    if stacks.is_empty() {
        ui::info("The app has no stacks; nothing to deploy");
        return Ok(ExitStatus::Success);
    }
    refuse_unknown_recreate_targets(&stacks, args)?;

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
    let exports = Arc::new(ExportIndexStore::new(
        backend.client().clone(),
        backend.bucket(),
        backend.keys().clone(),
    ));
    // Cross-stack reads (exports index, state scan, CloudFormation unless
    // --no-cfn-fallback) and dynamic references, fetched before each stack resolves.
    let reader = Arc::new(
        ExternalReader::new(clients.clone(), backend.clone(), Some(exports.clone()))
            .with_cfn_fallback(args.fallback.enabled()),
    );
    // Custom-resource handlers answer into the state bucket.
    let registry = Arc::new(
        crate::provider::routing::registry_for(&backend).with_allowances(args.escapes.allowances()),
    );
    let env = Arc::new(DeployEnv {
        clients: clients.clone(),
        backend,
        registry,
        exports,
        external: Arc::new(NoExternalLookup),
        reader: Some(reader),
        account_id: account_id.clone(),
    });
    let mut options = DeployOptions {
        concurrency: args.concurrency as usize,
        parameters,
        force_stateful_recreation: args.force_stateful_recreation,
        recreate: args.escapes.recreate(),
        no_aggressive_vpc_parallel: args.no_aggressive_vpc_parallel,
        no_wait: args.no_wait,
        cancel: Some(cancel_on_ctrl_c()),
        no_rollback: no_rollback(args, settings.rollback),
        replace: args.replace,
        strict_getatt: args.strict_getatt,
        skip_final_snapshot: args.skip_final_snapshot,
        no_capture_observed_state: args.no_capture_observed_state,
        ..DeployOptions::default()
    };

    if args.dry_run {
        // Planned against the templates a deploy would use (cdkd-owned asset storage).
        let (stacks, _redirected) = crate::assets::redirect_for_reading(
            &clients,
            &env.backend,
            &account_id,
            stacks,
            args.assets.options(),
        )
        .await?;
        let mut stacks = stacks;
        let _prefixed = prefix_names(args, settings, &mut stacks)?;
        return dry_run_all(&env, &stacks, &options).await;
    }
    // Every selected stack's file and container assets, published before any stack deploys
    // (and, in a region opted into cdkd-owned asset storage, templates rewritten to match).
    // --skip-assets: the templates as a deploy rewrites them, nothing uploaded.
    let (stacks, _redirected_templates) = if args.skip_assets {
        crate::assets::redirect_for_reading(
            &clients,
            &env.backend,
            &account_id,
            stacks,
            args.assets.options(),
        )
        .await?
    } else {
        crate::assets::publish_for_deploy(
            &clients,
            &env.backend,
            &account_id,
            stacks,
            args.assets.options(),
        )
        .await?
    };

    let mut stacks = stacks;
    let _prefixed = prefix_names(args, settings, &mut stacks)?;

    let progress = Arc::new(Progress::new(bar_suits_stderr()));
    options.progress = Some(progress.clone());
    let mut level = approval_level(args, settings.require_approval.as_deref());
    // A move between routes deletes a live resource: confirmed like any destructive change
    // (a prompt on a terminal, --yes elsewhere), as upstream asks before it.
    if level == RequireApproval::Never && !options.recreate.is_empty() {
        level = RequireApproval::Destructive;
    }
    if level != RequireApproval::Never {
        let gate: Arc<dyn Approve> = Arc::new(ApprovalGate::new(level, session_yes(session)));
        options.approval = Some(gate);
    }

    let outcomes = deploy_all(
        env,
        &stacks,
        &after,
        options,
        args.stack_concurrency as usize,
        &progress,
    )
    .await;
    progress.clear();

    let mut counts = StackCounts::default();
    let mut tally = Tally::default();
    let mut any_failure = false;
    let mut unaddressed = 0usize;
    let mut json = Map::new();
    let mut outputs_file = Map::new();
    for outcome in &outcomes {
        match outcome {
            StackOutcome::Deployed(report, _) => {
                add_tally(&mut tally, &report.tally);
                if !report.is_success() {
                    counts.failed += 1;
                    any_failure = true;
                } else if report.changed {
                    counts.deployed += 1;
                } else {
                    counts.unchanged += 1;
                }
                unaddressed += report.unaddressed.len();
                let mut entry = Map::new();
                entry.insert("outputs".into(), Value::Object(report.outputs.clone()));
                json.insert(report.stack_name.clone(), Value::Object(entry));
                outputs_file.insert(
                    report.stack_name.clone(),
                    Value::Object(report.outputs.clone()),
                );
            }
            StackOutcome::Failed(_) => {
                counts.failed += 1;
                any_failure = true;
            }
            StackOutcome::Skipped | StackOutcome::NotStarted => {
                counts.skipped += 1;
                any_failure = true;
            }
        }
    }
    deploy_report::print(&[deploy_report::closing(counts, &tally, began.elapsed())]);
    if let Some(path) = args
        .outputs_file
        .as_ref()
        .or(settings.outputs_file.as_ref())
    {
        write_outputs_file(path, &outputs_file)?;
    }
    if args.json {
        ui::output(serde_json::to_string_pretty(&Value::Object(json)).unwrap_or_default());
    }
    if any_failure {
        return Ok(ExitStatus::Failure);
    }
    if unaddressed > 0 && !args.allow_unaddressed {
        ui::error(format!(
            "{unaddressed} resource(s) were left unaddressed (see above); pass \
             --allow-unaddressed to accept that and exit 0"
        ));
        return Ok(ExitStatus::Partial);
    }
    Ok(ExitStatus::Success)
}

/// `--yes` / `-y`, the global answer to every confirmation.
fn session_yes(session: &Session) -> bool {
    session.settings.yes
}

fn add_tally(total: &mut Tally, t: &Tally) {
    total.created += t.created;
    total.updated += t.updated;
    total.replaced += t.replaced;
    total.deleted += t.deleted;
    total.unchanged += t.unchanged;
    total.failed += t.failed;
    total.skipped += t.skipped;
}

/// Deploys `stacks` (in dependency order), up to `limit` at once. A stack whose
/// dependencies (`deps[i]`: positions in `stacks`, manifest dependencies and the cross-stack
/// references the templates imply) have all deployed starts as before; one whose
/// dependencies have all started starts at once too, speculatively (engine::deploy's
/// producers.rs): it locks, reads and plans, then waits for them before changing anything,
/// so a chain of unchanged stacks costs one stack's fixed calls. (Starting only once every
/// dependency has started keeps a waiting stack from holding a slot its producer needs.)
/// Outcomes come back in `stacks` order; each stack's summary is printed as it finishes.
async fn deploy_all(
    env: Arc<DeployEnv>,
    stacks: &[StackArtifact],
    deps: &[Vec<usize>],
    options: DeployOptions,
    limit: usize,
    progress: &Progress,
) -> Vec<StackOutcome> {
    let mut outcomes: Vec<Option<StackOutcome>> = stacks.iter().map(|_| None).collect();
    let mut started = vec![false; stacks.len()];
    // The answer each speculatively started stack waits for, until it is sent.
    let mut waiting: Vec<Option<watch::Sender<Option<Settled>>>> =
        stacks.iter().map(|_| None).collect();
    let mut running: JoinSet<(usize, StackOutcome)> = JoinSet::new();
    let cancelled = || options.cancel.as_ref().is_some_and(|c| *c.borrow());
    // Each stack's outcome as announced before its lock's release: reported and acted on
    // at once, so the stacks waiting on it go on while it releases.
    let (early_tx, mut early_rx) = tokio::sync::mpsc::unbounded_channel::<(usize, StackOutcome)>();

    loop {
        for i in 0..stacks.len() {
            if started[i] || outcomes[i].is_some() {
                continue;
            }
            if let Some(d) = failed_dependency(&deps[i], &outcomes) {
                ui::error(format!(
                    "{}: skipped: the stack it depends on ({}) did not deploy",
                    stacks[i].stack_name, stacks[d].stack_name
                ));
                outcomes[i] = Some(StackOutcome::Skipped);
                continue;
            }
            let all_done = deps[i].iter().all(|&d| outcomes[d].is_some());
            let all_started = deps[i].iter().all(|&d| started[d] || outcomes[d].is_some());
            if !all_started {
                continue;
            }
            if cancelled() {
                ui::error(format!(
                    "{}: not started: the deploy was interrupted",
                    stacks[i].stack_name
                ));
                outcomes[i] = Some(StackOutcome::NotStarted);
                continue;
            }
            if running.len() >= limit.max(1) {
                continue;
            }
            started[i] = true;
            let mut options = options.clone();
            let t0 = Instant::now();
            let tx = early_tx.clone();
            options.announce = Some(Arc::new(
                move |result: &Result<StackReport, DeployError>| {
                    let _ = tx.send((i, outcome_of(result, t0)));
                },
            ));
            if !all_done {
                let (tx, producers) = Producers::channel();
                options.producers = Some(producers);
                waiting[i] = Some(tx);
            }
            let (env, stack) = (env.clone(), stacks[i].clone());
            running.spawn(async move {
                let outcome = match deploy_one(&env, &stack, &options).await {
                    Ok(report) => StackOutcome::Deployed(Box::new(report), t0.elapsed()),
                    Err(OneError::ProducerFailed) => StackOutcome::Skipped,
                    Err(OneError::Failed(e)) => StackOutcome::Failed(e),
                };
                (i, outcome)
            });
        }
        let (i, outcome) = tokio::select! {
            joined = running.join_next() => match joined {
                Some(Ok(joined)) => joined,
                Some(Err(e)) => {
                    // A panicking stack task is a bug; its stack is reported as failed below.
                    tracing::error!("a stack deployment task panicked: {e}");
                    continue;
                }
                None => break,
            },
            Some(announced) = early_rx.recv() => announced,
        };
        // The joined outcome of a stack that announced is the one already reported.
        if outcomes[i].is_none() {
            progress.clear();
            report_outcome(stacks, &deps[i], &outcomes, i, &outcome);
            outcomes[i] = Some(outcome);
            answer_waiting(stacks, deps, &outcomes, &mut waiting);
        }
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| StackOutcome::Failed("did not finish".into())))
        .collect()
}

/// A stack's outcome from its deploy's result.
fn outcome_of(result: &Result<StackReport, DeployError>, t0: Instant) -> StackOutcome {
    match result {
        Ok(report) => StackOutcome::Deployed(Box::new(report.clone()), t0.elapsed()),
        Err(DeployError::ProducerFailed(_)) => StackOutcome::Skipped,
        Err(e) => StackOutcome::Failed(e.to_string()),
    }
}

/// The first of `deps` that ended without deploying.
fn failed_dependency(deps: &[usize], outcomes: &[Option<StackOutcome>]) -> Option<usize> {
    deps.iter()
        .copied()
        .find(|&d| outcomes[d].as_ref().is_some_and(|o| !o.is_success()))
}

/// Prints how stack `i` ended (its summary, its error, or why it was skipped).
fn report_outcome(
    stacks: &[StackArtifact],
    deps: &[usize],
    outcomes: &[Option<StackOutcome>],
    i: usize,
    outcome: &StackOutcome,
) {
    match outcome {
        StackOutcome::Deployed(report, elapsed) => {
            deploy_report::print(&deploy_report::stack_summary(report, *elapsed))
        }
        StackOutcome::Failed(e) => ui::error(format!("{}: {e}", stacks[i].stack_name)),
        StackOutcome::Skipped => {
            if let Some(d) = failed_dependency(deps, outcomes) {
                ui::error(format!(
                    "{}: skipped: the stack it depends on ({}) did not deploy",
                    stacks[i].stack_name, stacks[d].stack_name
                ));
            }
        }
        StackOutcome::NotStarted => {}
    }
}

/// Tells each speculatively started stack whose dependencies have all ended how they
/// ended (a sender dropped unanswered reads as a failure: a panicked task).
fn answer_waiting(
    stacks: &[StackArtifact],
    deps: &[Vec<usize>],
    outcomes: &[Option<StackOutcome>],
    waiting: &mut [Option<watch::Sender<Option<Settled>>>],
) {
    for (i, slot) in waiting.iter_mut().enumerate() {
        if slot.is_none() || !deps[i].iter().all(|&d| outcomes[d].is_some()) {
            continue;
        }
        let mut settled = Settled::Unchanged;
        for &d in &deps[i] {
            match &outcomes[d] {
                Some(StackOutcome::Deployed(report, _)) if report.is_success() => {
                    if report.changed {
                        settled = Settled::Changed;
                    }
                }
                _ => {
                    settled = Settled::Failed(stacks[d].stack_name.clone());
                    break;
                }
            }
        }
        if let Some(tx) = slot.take() {
            tx.send_replace(Some(settled));
        }
    }
}

/// Why one stack's deploy did not happen.
enum OneError {
    /// A stack it depends on did not deploy (it changed nothing).
    ProducerFailed,
    Failed(String),
}

/// The region a stack deploys to, or why it cannot deploy.
fn stack_region(env: &DeployEnv, stack: &StackArtifact) -> std::result::Result<String, String> {
    if let Some(pinned) = stack.environment.account.as_deref() {
        if pinned != env.account_id {
            return Err(format!(
                "the stack targets account {pinned}, but the credentials are for account {}; \
                 nothing was changed",
                env.account_id
            ));
        }
    }
    stack
        .environment
        .region
        .clone()
        .or_else(|| env.clients.default_region())
        .ok_or_else(|| {
            "no region: the stack does not pin one and none is configured (--region, \
             AWS_REGION or the profile)"
                .into()
        })
}

async fn deploy_one(
    env: &DeployEnv,
    stack: &StackArtifact,
    options: &DeployOptions,
) -> std::result::Result<StackReport, OneError> {
    let region = stack_region(env, stack).map_err(OneError::Failed)?;
    let heading = format!("Deploying {} ({region})", stack.display_name);
    // A stack started before its dependencies deployed says so once they have.
    let mut options = options.clone();
    if options.producers.is_some() {
        options.heading = Some(heading);
    } else {
        ui::info(heading);
    }
    let options = &options;
    let stack_tags = crate::engine::deploy::stack_tags::from_manifest(&stack.tags);
    let target = StackTarget {
        stack_name: &stack.stack_name,
        region: &region,
        template_file: &stack.template_file,
        termination_protection: stack.termination_protection,
        stack_tags: &stack_tags,
    };
    deploy_stack(env, &target, options)
        .await
        .map_err(|e| match e {
            DeployError::ProducerFailed(_) => OneError::ProducerFailed,
            e => OneError::Failed(e.to_string()),
        })
}

/// `--dry-run`: every stack's plan, one after another; nothing is locked or written.
async fn dry_run_all(
    env: &DeployEnv,
    stacks: &[StackArtifact],
    options: &DeployOptions,
) -> Result<ExitStatus> {
    let mut any_failure = false;
    for stack in stacks {
        let planned = match stack_region(env, stack) {
            Ok(region) => {
                let stack_tags = crate::engine::deploy::stack_tags::from_manifest(&stack.tags);
                let target = StackTarget {
                    stack_name: &stack.stack_name,
                    region: &region,
                    template_file: &stack.template_file,
                    termination_protection: stack.termination_protection,
                    stack_tags: &stack_tags,
                };
                dry_run(env, &target, options)
                    .await
                    .map_err(|e| e.to_string())
            }
            Err(e) => Err(e),
        };
        match planned {
            Ok(plan) => deploy_report::print(&deploy_report::dry_run(
                &plan.stack_name,
                &plan.region,
                &plan.describe,
                &plan.changes,
            )),
            Err(e) => {
                ui::error(format!("{}: {e}", stack.stack_name));
                any_failure = true;
            }
        }
    }
    ui::info("Dry run: nothing was locked, written or changed.");
    Ok(if any_failure {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Writes `{"Stack": {"OutputKey": "value"}}` like `cdk deploy --outputs-file`.
/// `--no-rollback` / `--rollback`, else cdk.json "rollback" (false means no rollback).
fn no_rollback(args: &DeployArgs, from_cdk_json: Option<bool>) -> bool {
    if args.no_rollback || args.rollback {
        return args.no_rollback;
    }
    from_cdk_json == Some(false)
}

/// `--require-approval`, else cdk.json "requireApproval", else never (upstream cdkd never
/// asks).
fn approval_level(args: &DeployArgs, from_cdk_json: Option<&str>) -> RequireApproval {
    if let Some(level) = args.require_approval {
        return level;
    }
    from_cdk_json
        .and_then(crate::config::approval_level)
        .unwrap_or(RequireApproval::Never)
}

fn write_outputs_file(path: &std::path::Path, outputs: &Map<String, Value>) -> Result<()> {
    let text = serde_json::to_string_pretty(&Value::Object(outputs.clone())).unwrap_or_default();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            context: format!(
                "--outputs-file {}: cannot create its directory",
                path.display()
            ),
            source,
        })?;
    }
    std::fs::write(path, text + "\n").map_err(|source| Error::Io {
        context: format!(
            "--outputs-file {}: cannot write the outputs",
            path.display()
        ),
        source,
    })
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

/// `--recreate-via-*` names a logical id: one that no selected stack's template holds is a
/// typo (or a construct path), refused before anything runs.
fn refuse_unknown_recreate_targets(stacks: &[StackArtifact], args: &DeployArgs) -> Result<()> {
    let named: Vec<&String> = args
        .escapes
        .recreate_via_cc_api
        .iter()
        .chain(&args.escapes.recreate_via_sdk_provider)
        .collect();
    if named.is_empty() {
        return Ok(());
    }
    let mut known = std::collections::BTreeSet::new();
    for stack in stacks {
        let text = std::fs::read_to_string(&stack.template_file).map_err(|e| Error::Io {
            context: format!("reading {}", stack.template_file.display()),
            source: e,
        })?;
        if let Ok(Value::Object(t)) = serde_json::from_str::<Value>(&text) {
            if let Some(Value::Object(resources)) = t.get("Resources") {
                known.extend(resources.keys().cloned());
            }
        }
    }
    let unknown: Vec<&str> = named
        .iter()
        .filter(|id| !known.contains(id.as_str()))
        .map(|id| id.as_str())
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "--recreate-via-cc-api / --recreate-via-sdk-provider: no selected stack's template has \
         a resource with logical id {}; name the template's logical id (cdkd synth shows them), \
         not a construct path",
        unknown.join(", ")
    )))
}

/// `--prefix-user-supplied-names` (else `CDKD_PREFIX_USER_SUPPLIED_NAMES=true`, else cdk.json
/// `context.cdkd.prefixUserSuppliedNames: true`, as upstream resolves it): the stacks pointed
/// at templates whose pattern-B names carry the stack name (`assembly::prefix_names`); keep
/// the guard while they are read.
fn prefix_names(
    args: &DeployArgs,
    settings: &crate::config::Settings,
    stacks: &mut [StackArtifact],
) -> Result<crate::assembly::prefix_names::PrefixedTemplates> {
    let wanted = args.prefix_user_supplied_names
        || std::env::var(crate::env::CDKD_PREFIX_USER_SUPPLIED_NAMES).is_ok_and(|v| v == "true")
        || settings
            .context
            .get("cdkd")
            .and_then(|c| c.get("prefixUserSuppliedNames"))
            == Some(&Value::Bool(true));
    if !wanted {
        return Ok(Default::default());
    }
    crate::assembly::prefix_names::rewrite(stacks)
}
