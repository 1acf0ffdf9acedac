//! `cdkd drift [STACKS..]` and `cdkd state refresh-observed [STACKS..]`: state-driven (no app),
//! on the records the state bucket holds.
//!
//! Exit codes as upstream cdkd's: 0 nothing drifted, 1 drift (a property changed, or a
//! resource AWS no longer has), 2 nothing drifted but some resource could not be compared (its
//! read failed, or its baseline was refused at import). `--accept` and `--revert` act on the
//! drift found (`--dry-run` prints what they would do and writes nothing); a revert that left
//! some resources as they are exits 2.

use std::sync::Arc;

use serde_json::{json, Value};

use super::state::stack_region;
use super::Session;
use crate::aws::{ClientOptions, Clients};
use crate::cli::{DriftArgs, StateRefreshObservedArgs};
use crate::engine::deploy::default_registry;
use crate::engine::drift::write::{self, WriteReport};
use crate::engine::drift::{check_stack, DriftEnv, NotCompared, Outcome, StackDrift};
use crate::error::{Error, ExitStatus, Result};
use crate::state::backend::S3Backend;
use crate::ui;

/// The stacks (name, region) a drift command acts on: the named ones, every record with
/// `--all`, or the only record the bucket holds.
async fn targets(
    session: &Session,
    backend: &S3Backend,
    stacks: &[String],
    all: bool,
    flag: Option<&str>,
) -> Result<Vec<(String, String)>> {
    if !stacks.is_empty() {
        let mut out = Vec::new();
        for stack in stacks {
            out.push((
                stack.clone(),
                stack_region(session, backend, stack, flag).await?,
            ));
        }
        return Ok(out);
    }
    let records: Vec<(String, String)> = backend
        .list_records()
        .await?
        .into_iter()
        .filter_map(|r| Some((r.stack_name, r.region?)))
        .filter(|(_, region)| flag.is_none_or(|f| f == region.as_str()))
        .collect();
    match records.len() {
        0 => Err(Error::Usage(format!(
            "no state records in s3://{}; deploy a stack first",
            backend.bucket()
        ))),
        1 => Ok(records),
        _ if all => Ok(records),
        _ => Err(Error::Usage(format!(
            "the state bucket holds several stacks ({}): name the stacks to check, or pass --all",
            records
                .iter()
                .map(|(s, r)| format!("{s} ({r})"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

async fn drift_env(session: &Session, concurrency: usize) -> Result<DriftEnv> {
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
    Ok(DriftEnv {
        clients,
        registry: Arc::new(default_registry()),
        account_id,
        concurrency: concurrency.max(1),
    })
}

pub async fn run(session: &Session, args: &DriftArgs) -> Result<ExitStatus> {
    let backend = session.state_backend().await?;
    let stacks = targets(
        session,
        &backend,
        &args.selection.stacks,
        args.selection.all,
        args.stack_region.as_deref(),
    )
    .await?;
    let env = drift_env(session, args.concurrency as usize).await?;
    let mut reports = Vec::new();
    for (stack, region) in &stacks {
        let loaded = backend
            .load_for_reading(stack, region)
            .await
            .map_err(Error::from)?
            .ok_or_else(|| {
                Error::Usage(format!(
                    "no state record for stack {stack} in {region}; `cdkd state list` shows the \
                     stacks that have one"
                ))
            })?;
        reports.push(check_stack(&env, &loaded.parsed.state, None).await);
    }
    if args.json && !(args.accept || args.revert) {
        ui::output(serde_json::to_string_pretty(&json_report(&reports)).unwrap_or_default());
    } else {
        for r in &reports {
            print_human(r);
        }
    }
    let drifted = reports.iter().any(StackDrift::has_drift);
    if !args.accept && !args.revert {
        return Ok(if drifted {
            ExitStatus::Failure
        } else if reports.iter().any(StackDrift::has_uncompared) {
            ExitStatus::Partial
        } else {
            ExitStatus::Success
        });
    }
    let verb = if args.accept { "accept" } else { "revert" };
    if !drifted {
        ui::info(format!("No drift detected: nothing to {verb}"));
        return Ok(ExitStatus::Success);
    }
    if args.dry_run {
        for r in reports.iter().filter(|r| r.has_drift()) {
            print_plan(r, args.accept);
        }
        ui::info("--dry-run: nothing was changed");
        return Ok(ExitStatus::Success);
    }
    super::orphan_state::confirm_on_terminal(
        session,
        false,
        &if args.accept {
            "Record AWS's current values as the baseline (state <- AWS)?".to_owned()
        } else {
            "Send the recorded values back to AWS (AWS <- state)?".to_owned()
        },
    )?;
    let mut worst = ExitStatus::Success;
    for r in reports.iter().filter(|r| r.has_drift()) {
        let result = if args.accept {
            write::accept(&env, &backend, &r.stack, &r.region).await
        } else {
            write::revert(&env, &backend, &r.stack, &r.region).await
        };
        let report = result.map_err(Error::from)?;
        print_written(
            &r.stack,
            &r.region,
            if args.accept { "accepted" } else { "reverted" },
            &report,
        );
        if !report.failed.is_empty() {
            worst = ExitStatus::Partial;
        }
    }
    Ok(worst)
}

/// `cdkd state refresh-observed [STACKS..]`.
pub async fn refresh_observed(
    session: &Session,
    args: &StateRefreshObservedArgs,
) -> Result<ExitStatus> {
    let backend = session.state_backend().await?;
    let stacks = targets(
        session,
        &backend,
        &args.stacks,
        args.all,
        args.stack_region.as_deref(),
    )
    .await?;
    let env = drift_env(session, args.concurrency as usize).await?;
    let mut worst = ExitStatus::Success;
    for (stack, region) in &stacks {
        let report = write::refresh_observed(&env, &backend, stack, region)
            .await
            .map_err(Error::from)?;
        print_written(stack, region, "refreshed", &report);
        if !report.failed.is_empty() {
            worst = ExitStatus::Partial;
        }
    }
    Ok(worst)
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn print_human(r: &StackDrift) {
    let drifted: Vec<_> = r.resources.iter().filter(|x| x.has_drift()).collect();
    let compared = r
        .resources
        .iter()
        .filter(|x| {
            matches!(
                x.outcome,
                Outcome::Clean | Outcome::Drifted(_) | Outcome::Deleted
            )
        })
        .count();
    if drifted.is_empty() {
        ui::output(format!(
            "{} ({}): no drift detected ({compared} resource(s) checked)",
            r.stack, r.region
        ));
    } else {
        ui::output(format!(
            "{} ({}): drift detected on {} resource(s)",
            r.stack,
            r.region,
            drifted.len()
        ));
    }
    for x in &r.resources {
        match &x.outcome {
            Outcome::Drifted(changes) => {
                ui::output(format!("  ~ {} ({})", x.logical_id, x.resource_type));
                for c in changes {
                    ui::output(format!("    - {}: {}", c.path, text(&c.expected)));
                    ui::output(format!("    + {}: {}", c.path, text(&c.actual)));
                }
            }
            Outcome::Deleted => ui::output(format!(
                "  x {} ({}): deleted outside cdkd (AWS no longer has it)",
                x.logical_id, x.resource_type
            )),
            Outcome::NotCompared(NotCompared::BaselineRefused) => ui::output(format!(
                "  ! {} ({}): not compared: its baseline was refused at import \
                 (baselineRefused); deploy a change to it to record one",
                x.logical_id, x.resource_type
            )),
            Outcome::NotCompared(NotCompared::ReadFailed(e)) => ui::output(format!(
                "  ! {} ({}): not compared: reading it failed: {e}",
                x.logical_id, x.resource_type
            )),
            Outcome::Clean | Outcome::Skipped(_) => {}
        }
        if !x.masked.is_empty() {
            ui::output(format!(
                "  * {} ({}): secret position(s) not compared in the clear: {}",
                x.logical_id,
                x.resource_type,
                x.masked.join(", ")
            ));
        }
    }
}

fn json_report(reports: &[StackDrift]) -> Value {
    Value::Array(
        reports
            .iter()
            .map(|r| {
                let mut drifted = Vec::new();
                let (mut clean, mut not_compared, mut skipped, mut masked) =
                    (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                for x in &r.resources {
                    let who = json!({"logicalId": x.logical_id, "type": x.resource_type});
                    match &x.outcome {
                        Outcome::Drifted(changes) => drifted.push(json!({
                            "logicalId": x.logical_id,
                            "type": x.resource_type,
                            "deleted": false,
                            "changes": changes.iter().map(|c| json!({
                                "path": c.path,
                                "stateValue": c.expected,
                                "awsValue": c.actual,
                            })).collect::<Vec<_>>(),
                        })),
                        Outcome::Deleted => drifted.push(json!({
                            "logicalId": x.logical_id,
                            "type": x.resource_type,
                            "deleted": true,
                            "changes": [],
                        })),
                        Outcome::Clean => clean.push(who.clone()),
                        Outcome::NotCompared(cause) => {
                            let (cause, detail) = match cause {
                                NotCompared::BaselineRefused => ("baselineRefused", None),
                                NotCompared::ReadFailed(e) => ("readFailed", Some(e.clone())),
                            };
                            not_compared.push(json!({
                                "logicalId": x.logical_id,
                                "type": x.resource_type,
                                "cause": cause,
                                "detail": detail,
                            }));
                        }
                        Outcome::Skipped(_) => skipped.push(who.clone()),
                    }
                    if !x.masked.is_empty() {
                        masked.push(json!({
                            "logicalId": x.logical_id,
                            "type": x.resource_type,
                            "paths": x.masked,
                        }));
                    }
                }
                json!({
                    "stack": r.stack,
                    "region": r.region,
                    "drifted": drifted,
                    "clean": clean,
                    "notCompared": not_compared,
                    "skipped": skipped,
                    "masked": masked,
                })
            })
            .collect(),
    )
}

fn print_plan(r: &StackDrift, accept: bool) {
    for x in r.resources.iter().filter(|x| x.has_drift()) {
        match (&x.outcome, accept) {
            (Outcome::Drifted(changes), true) => {
                for c in changes {
                    ui::output(format!(
                        "  would accept {}.{}: {} (state <- AWS)",
                        x.logical_id,
                        c.path,
                        text(&c.actual)
                    ));
                }
            }
            (Outcome::Drifted(changes), false) => {
                for c in changes {
                    ui::output(format!(
                        "  would revert {}.{}: {} (AWS <- state)",
                        x.logical_id,
                        c.path,
                        text(&c.expected)
                    ));
                }
            }
            _ => ui::output(format!(
                "  {}: deleted outside cdkd; nothing to {}",
                x.logical_id,
                if accept { "accept" } else { "revert" }
            )),
        }
    }
}

fn print_written(stack: &str, region: &str, verb: &str, report: &WriteReport) {
    for id in &report.done {
        ui::info(format!("  {id}: {verb}"));
    }
    for (id, why) in &report.left {
        ui::info(format!("  {id}: left as it is: {why}"));
    }
    for (id, e) in &report.failed {
        ui::error(format!("  {id}: not {verb}: {e}"));
    }
    ui::info(format!(
        "{stack} ({region}): {} {verb}, {} left, {} failed",
        report.done.len(),
        report.left.len(),
        report.failed.len()
    ));
}
