//! `cdkd destroy` (stacks picked from the app) and `cdkd state destroy` (one stack by name, no
//! app): confirm, then destroy each stack from its state record, dependents before the stacks
//! they depend on.
//!
//! A stack whose manifest sets `terminationProtection: true` is refused (exit 1), before any
//! confirmation, lock or delete, unless `--remove-protection`; the stacks it depends on are then
//! kept too. Stacks are destroyed in parallel, each once the stacks that depend on it are gone. `cdkd state destroy` has no manifest and the record keeps no such flag, so it cannot
//! refuse on it (its `--remove-protection` turns off resource-level protection only).
//!
//! Exit status: 0 when every stack is gone (or had no record), 2 when a destroy deleted part of
//! a stack and kept the trimmed record (a re-run finishes it), 1 when a stack was refused or
//! could not be started.

use std::sync::Arc;

use tokio::sync::watch;

use super::orphan_state::confirm;
use super::state::stack_region;
use super::{select_ordered, Session};
use crate::aws::{ClientOptions, Clients};
use crate::cli::{DestroyArgs, StateDestroyArgs};
use crate::engine::deploy::default_registry;
use crate::engine::deploy::{Producers, Settled};
use crate::engine::destroy::{
    destroy_stack, DestroyEnv, DestroyError, DestroyOptions, DestroyReport, DestroyTarget,
};
use crate::engine::policy::DeleteRules;
use crate::error::{Error, ExitStatus, Result};
use crate::state::exports::ExportIndexStore;
use crate::ui;

/// One stack to destroy, with the positions (in selection order) of the selected stacks it
/// needs: its manifest dependencies and the producers of what it imports.
struct Planned {
    name: String,
    region: String,
    position: usize,
    needs: Vec<usize>,
    /// Every selected stack it comes after (`needs` and the weak `Fn::GetStackOutput` reads):
    /// it is destroyed before them.
    after: Vec<usize>,
    termination_protection: bool,
    /// The app's template of the stack.
    template_file: std::path::PathBuf,
}

pub async fn run(session: &Session, args: &DestroyArgs) -> Result<ExitStatus> {
    args.timeouts.apply()?;
    let assembly = session.assembly().await?;
    let selected = select_ordered(&assembly, &args.selection, false)?;
    let stacks = &selected.stacks;
    if stacks.is_empty() {
        ui::info("The app has no stacks; nothing to destroy");
        return Ok(ExitStatus::Success);
    }
    let clients = Arc::new(load_clients(session).await);
    let mut planned = Vec::new();
    for (position, stack) in stacks.iter().enumerate() {
        let region = stack
            .environment
            .region
            .clone()
            .or_else(|| clients.default_region())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{}: no region: the stack does not pin one and none is configured \
                     (--region, AWS_REGION or the profile)",
                    stack.display_name
                ))
            })?;
        planned.push(Planned {
            name: stack.stack_name.clone(),
            region,
            position,
            needs: selected.needs[position].clone(),
            after: selected.after[position].clone(),
            termination_protection: stack.termination_protection,
            template_file: stack.template_file.clone(),
        });
    }
    // Dependents first (consumers before the stacks they read): the selection comes
    // dependencies-first.
    planned.reverse();
    let mut status = ExitStatus::Success;
    let mut unfinished: Vec<&Planned> = Vec::new();
    for stack in planned.iter().filter(|p| p.termination_protection) {
        if args.remove_protection {
            ui::warn(format!(
                "{}: terminationProtection: true, destroyed anyway (--remove-protection)",
                stack.name
            ));
        } else {
            ui::error(termination_refusal(&stack.name));
            status = ExitStatus::Failure;
            unfinished.push(stack);
        }
    }
    let names: Vec<String> = planned
        .iter()
        .filter(|p| !unfinished.iter().any(|u| u.name == p.name))
        .map(|p| format!("{} ({})", p.name, p.region))
        .collect();
    if names.is_empty() {
        return Ok(status);
    }
    if !args.force {
        confirm(
            session,
            &format!(
                "Destroy {}? Every resource recorded in their state is deleted.",
                names.join(", ")
            ),
        )?;
    }
    let env = connect(session, clients).await?;
    let account = env.account_id.clone();
    for stack in stacks {
        if let Some(pinned) = stack.environment.account.as_deref() {
            if pinned != account {
                return Err(Error::Usage(format!(
                    "{}: the stack targets account {pinned}, but the credentials are for \
                     account {account}; nothing was deleted",
                    stack.display_name
                )));
            }
        }
    }
    let options = DestroyOptions {
        concurrency: args.concurrency as usize,
        cancel: Some(cancel_on_ctrl_c()),
        purge_events: args.purge_events,
        rules: DeleteRules {
            skip_final_snapshot: args.skip_final_snapshot,
            remove_protection: args.remove_protection,
        },
        ..DestroyOptions::default()
    };

    let refused: Vec<String> = unfinished.iter().map(|u| u.name.clone()).collect();
    let status = worst(status, destroy_all(env, planned, &refused, options).await);
    Ok(status)
}

/// Destroys `planned` (dependents first): independent stacks in parallel, bounded by the
/// shared limit on AWS calls in flight (crate::aws::gate), not by a stack count. A stack
/// starts once every selected stack that depends on it has started: it takes its lock and
/// reads its record meanwhile, and deletes nothing before they are gone (each announces the
/// moment its record is deleted, before its exports-index update and lock release). A stack
/// a dependent of which was refused or not fully destroyed is kept (reported, exit 2).
/// `refused` names the stacks refused before any destroy started.
async fn destroy_all(
    env: DestroyEnv,
    planned: Vec<Planned>,
    refused: &[String],
    options: DestroyOptions,
) -> ExitStatus {
    let env = Arc::new(env);
    let n = planned.len();
    // For each stack, the stacks (indexes into `planned`) that need it (a kept one keeps it),
    // and all those that come after it (it waits for them to end, whatever the outcome).
    let dependents = dependents_of(&planned, |p| &p.needs);
    let readers = dependents_of(&planned, |p| &p.after);
    // None: not done yet; Some(true): gone; Some(false): refused, kept or partly destroyed.
    let mut done: Vec<Option<bool>> = planned
        .iter()
        .map(|p| refused.contains(&p.name).then_some(false))
        .collect();
    // Record deleted (announced before the stack's task ends, with its report).
    let mut gone = vec![false; n];
    let mut started = vec![false; n];
    let mut waiting: Vec<Option<watch::Sender<Option<Settled>>>> = (0..n).map(|_| None).collect();
    let (gone_tx, mut gone_rx) = tokio::sync::mpsc::unbounded_channel::<(usize, DestroyReport)>();
    let mut status = ExitStatus::Success;
    let mut running = tokio::task::JoinSet::new();
    loop {
        let mut changed = true;
        while changed {
            changed = false;
            for j in 0..n {
                if started[j] || done[j].is_some() {
                    continue;
                }
                if let Some(&k) = dependents[j].iter().find(|&&k| done[k] == Some(false)) {
                    ui::error(format!(
                        "{}: skipped: {} depends on it and was not destroyed",
                        planned[j].name, planned[k].name
                    ));
                    status = worst(status, ExitStatus::Partial);
                    done[j] = Some(false);
                    changed = true;
                }
            }
        }
        for j in 0..n {
            if started[j] || done[j].is_some() {
                continue;
            }
            if !readers[j].iter().all(|&k| started[k] || done[k].is_some()) {
                continue;
            }
            started[j] = true;
            let mut options = options.clone();
            options.heading = true;
            let tx = gone_tx.clone();
            options.gone = Some(Arc::new(move |report: &DestroyReport| {
                let _ = tx.send((j, report.clone()));
            }));
            if !readers[j].iter().all(|&k| done[k].is_some()) {
                let (tx, handle) = Producers::channel();
                options.dependents = Some(handle);
                waiting[j] = Some(tx);
            }
            let env = env.clone();
            let (name, region) = (planned[j].name.clone(), planned[j].region.clone());
            let template_file = planned[j].template_file.clone();
            running.spawn(async move {
                let target = DestroyTarget {
                    stack_name: &name,
                    region: &region,
                    template_file: Some(&template_file),
                };
                (j, destroy_stack(&env, &target, &options).await)
            });
        }
        let (j, outcome) = tokio::select! {
            joined = running.join_next() => match joined {
                Some(Ok((j, result))) => {
                    if done[j].is_some() {
                        continue; // announced when its record went
                    }
                    (j, stack_status(&planned[j].name, result))
                }
                Some(Err(e)) => {
                    // A panicking stack task is a bug; the command fails.
                    tracing::error!("a stack's destroy task panicked: {e}");
                    status = worst(status, ExitStatus::Failure);
                    continue;
                }
                None => break,
            },
            Some((j, report)) = gone_rx.recv() => {
                gone[j] = true;
                (j, summarize(&report))
            }
        };
        done[j] = Some(outcome == ExitStatus::Success);
        status = worst(status, outcome);
        answer(
            &planned,
            (&dependents, &readers),
            &done,
            &gone,
            &mut waiting,
        );
    }
    status
}

/// For each stack, the stacks (indexes into `planned`) whose `edges` name its position.
fn dependents_of(planned: &[Planned], edges: fn(&Planned) -> &Vec<usize>) -> Vec<Vec<usize>> {
    let n = planned.len();
    planned
        .iter()
        .map(|p| {
            (0..n)
                .filter(|&k| edges(&planned[k]).contains(&p.position))
                .collect()
        })
        .collect()
}

/// Prints how one stack's destroy ended; returns its exit status.
fn stack_status(name: &str, result: Result<DestroyReport, DestroyError>) -> ExitStatus {
    match result {
        Ok(report) => summarize(&report),
        Err(e @ DestroyError::DependentKept { .. }) => {
            ui::error(format!("{name}: {e}"));
            ExitStatus::Partial
        }
        Err(e) => {
            ui::error(format!("{name}: {e}"));
            ExitStatus::Failure
        }
    }
}

/// Tells each waiting stack, once every stack that comes after it has ended (one that needs
/// it: is gone or kept), whether it may go (`Unchanged`) or must stay (`Failed` naming a
/// stack that needs it and was kept).
fn answer(
    planned: &[Planned],
    (dependents, readers): (&[Vec<usize>], &[Vec<usize>]),
    done: &[Option<bool>],
    gone: &[bool],
    waiting: &mut [Option<watch::Sender<Option<Settled>>>],
) {
    for (j, slot) in waiting.iter_mut().enumerate() {
        if slot.is_none() {
            continue;
        }
        let kept = dependents[j]
            .iter()
            .find(|&&k| !gone[k] && done[k] == Some(false));
        let settled = match kept {
            Some(&k) => Settled::Failed(planned[k].name.clone()),
            None if readers[j].iter().all(|&k| gone[k] || done[k].is_some()) => Settled::Unchanged,
            None => continue,
        };
        if let Some(tx) = slot.take() {
            tx.send_replace(Some(settled));
        }
    }
}

/// `cdkd state destroy <stack>`: the same destroy, from the state record alone.
pub async fn run_state(session: &Session, args: &StateDestroyArgs) -> Result<ExitStatus> {
    args.timeouts.apply()?;
    let clients = Arc::new(load_clients(session).await);
    let env = connect(session, clients).await?;
    super::each_stack(&args.stacks, |stack| {
        state_destroy_one(session, &env, args, stack)
    })
    .await
}

async fn state_destroy_one(
    session: &Session,
    env: &DestroyEnv,
    args: &StateDestroyArgs,
    stack: &str,
) -> Result<ExitStatus> {
    let region = stack_region(session, &env.backend, stack, args.stack_region.as_deref()).await?;
    if !args.force {
        confirm(
            session,
            &format!("Destroy {stack} ({region})? Every resource its state records is deleted."),
        )?;
    }
    let options = DestroyOptions {
        concurrency: crate::cli::DEFAULT_CONCURRENCY as usize,
        cancel: Some(cancel_on_ctrl_c()),
        purge_events: false,
        rules: DeleteRules {
            skip_final_snapshot: args.skip_final_snapshot,
            remove_protection: args.remove_protection,
        },
        ..DestroyOptions::default()
    };
    let target = DestroyTarget {
        stack_name: stack,
        region: &region,
        template_file: None,
    };
    Ok(destroy_one(env, &target, &options).await)
}

async fn load_clients(session: &Session) -> Clients {
    let settings = &session.settings;
    Clients::load(&ClientOptions {
        region: settings.region.clone(),
        profile: settings.profile.clone(),
        role_arn: settings.role_arn.clone(),
    })
    .await
}

async fn connect(session: &Session, clients: Arc<Clients>) -> Result<DestroyEnv> {
    // Two independent round trips (STS, the bucket's region) overlap instead of queuing.
    let (account_id, backend) = tokio::join!(clients.account_id(), session.state_backend());
    let (account_id, backend) = (account_id?, Arc::new(backend?));
    let exports = Arc::new(ExportIndexStore::new(
        backend.client().clone(),
        backend.bucket(),
        backend.keys().clone(),
    ));
    Ok(DestroyEnv {
        clients,
        backend,
        registry: Arc::new(default_registry()),
        exports,
        account_id,
        record_imports: Default::default(),
    })
}

/// Destroys one stack and prints its outcome; returns its exit status.
async fn destroy_one(
    env: &DestroyEnv,
    target: &DestroyTarget<'_>,
    options: &DestroyOptions,
) -> ExitStatus {
    let (name, region) = (target.stack_name, target.region);
    ui::info(format!("Destroying {name} ({region})"));
    stack_status(name, destroy_stack(env, target, options).await)
}

fn summarize(report: &DestroyReport) -> ExitStatus {
    let (name, region) = (&report.stack_name, &report.region);
    if report.no_state {
        ui::info(format!(
            "{name}: no state record in {region}; nothing to destroy"
        ));
        return ExitStatus::Success;
    }
    let mut counts = vec![format!("{} deleted", report.deleted.len())];
    if !report.retained.is_empty() {
        counts.push(format!(
            "{} retained by DeletionPolicy ({})",
            report.retained.len(),
            report.retained.join(", ")
        ));
    }
    if report.is_success() {
        ui::info(format!("{name}: destroyed ({})", counts.join(", ")));
        return ExitStatus::Success;
    }
    counts.push(format!("{} failed", report.failures.len()));
    if !report.skipped.is_empty() {
        counts.push(format!("{} skipped", report.skipped.len()));
    }
    if !report.cancelled.is_empty() {
        counts.push(format!("{} not started", report.cancelled.len()));
    }
    ui::error(format!(
        "{name}: destroy incomplete ({}); the state record keeps the {} resource(s) still \
         recorded: fix the cause and re-run the destroy to finish",
        counts.join(", "),
        report.remaining.len()
    ));
    for (id, message) in &report.failures {
        ui::error(format!("  {id}: {message}"));
    }
    ExitStatus::Partial
}

/// The refusal of a protected stack's destroy.
fn termination_refusal(stack: &str) -> String {
    format!(
        "{stack}: STACK_TERMINATION_PROTECTION: the stack has terminationProtection: true and \
         cannot be destroyed; nothing was deleted. Pass --remove-protection to destroy it \
         anyway, or set terminationProtection: false in the app and deploy it first"
    )
}

/// The more severe of two statuses: a failure outranks a partial destroy.
fn worst(a: ExitStatus, b: ExitStatus) -> ExitStatus {
    let rank = |s: ExitStatus| match s {
        ExitStatus::Success => 0,
        ExitStatus::Partial => 1,
        ExitStatus::Failure | ExitStatus::Blocked => 2,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// Flips on the first Ctrl-C: no new delete starts and those in flight finish and are
/// recorded. A second Ctrl-C exits at once.
fn cancel_on_ctrl_c() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            ui::warn("interrupted: finishing the deletes in flight, starting no more");
            let _ = tx.send(true);
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_outranks_a_partial_destroy() {
        assert_eq!(
            worst(ExitStatus::Success, ExitStatus::Partial),
            ExitStatus::Partial
        );
        assert_eq!(
            worst(ExitStatus::Partial, ExitStatus::Failure),
            ExitStatus::Failure
        );
        assert_eq!(
            worst(ExitStatus::Failure, ExitStatus::Partial),
            ExitStatus::Failure
        );
    }
}
