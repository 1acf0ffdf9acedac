//! `cdkd events <stack>` and `cdkd events prune <stack>`: read and prune the deployment-event
//! store ([`crate::state::events`]), from the state bucket alone (no app, no lock: every run
//! has its own key and the index is last-writer-wins).
//!
//! The region is found from the `deployments/` keys, not from a state record, so a destroyed
//! stack's history is found too; `--stack-region` picks one when there are several.

use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use super::Session;
use crate::aws::AwsError;
use crate::cli::{EventsArgs, EventsCommand, EventsFormat, EventsPruneArgs};
use crate::error::{Error, ExitStatus, Result};
use crate::state::backend::S3Backend;
use crate::state::events_read::{PruneOptions, StoreAccess, StoredEvent};
use crate::ui;

pub async fn run(session: &Session, args: &EventsArgs) -> Result<ExitStatus> {
    if let Some(EventsCommand::Prune(prune_args)) = &args.command {
        return prune(session, prune_args).await;
    }
    let Some(stack) = args.stack.as_deref() else {
        return Err(Error::Usage("cdkd events: name the stack".into()));
    };
    let backend = session.state_backend().await?;
    let store = access(&backend);
    let region = history_region(&store, stack, args.stack_region.as_deref()).await?;
    let json = args.json || args.format == Some(EventsFormat::Json);
    if let Some(run_id) = &args.run {
        let events = store
            .read_run(stack, &region, run_id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| {
                Error::Usage(format!(
                    "no deployment-event stream for run {run_id} of stack {stack} ({region}); \
                     `cdkd events {stack}` lists the runs"
                ))
            })?;
        if json {
            ui::output(serde_json::to_string_pretty(&events).unwrap_or_default());
        } else {
            print_run(stack, &region, run_id, &events);
        }
        return Ok(ExitStatus::Success);
    }
    let runs = store.list_runs(stack, &region).await.map_err(store_error)?;
    if json {
        let body = json!({ "stackName": stack, "region": region, "runs": runs });
        ui::output(serde_json::to_string_pretty(&body).unwrap_or_default());
        return Ok(ExitStatus::Success);
    }
    ui::output(format!("Deployment runs for {stack} ({region})"));
    if runs.is_empty() {
        ui::output("  (no runs recorded)");
    }
    for run in &runs {
        let s = |k: &str| run.get(k).and_then(Value::as_str).filter(|v| !v.is_empty());
        ui::output(format!(
            "  {}  {}  {}  {} -> {}  cdkd {}  {} events",
            s("runId").unwrap_or("?"),
            s("command").unwrap_or("?"),
            s("result").unwrap_or("UNKNOWN"),
            s("startedAt").unwrap_or("?"),
            s("finishedAt").unwrap_or("?"),
            s("cdkdVersion").unwrap_or("?"),
            run.get("eventCount").and_then(Value::as_u64).unwrap_or(0),
        ));
    }
    Ok(ExitStatus::Success)
}

async fn prune(session: &Session, args: &EventsPruneArgs) -> Result<ExitStatus> {
    let older_than = args.older_than.as_deref().map(parse_duration).transpose()?;
    let backend = session.state_backend().await?;
    let store = access(&backend);
    let stack = &args.stack;
    let region = history_region(&store, stack, args.stack_region.as_deref()).await?;
    let scope = match (args.all, args.keep, &args.older_than) {
        (true, _, _) => "every run".to_owned(),
        (_, Some(n), Some(d)) => format!("the runs beyond the newest {n} that are older than {d}"),
        (_, Some(n), None) => format!("the runs beyond the newest {n}"),
        (_, None, Some(d)) => format!("the runs older than {d}"),
        (_, None, None) => format!(
            "the runs beyond the newest {}",
            crate::state::events::MAX_INDEX_RUNS
        ),
    };
    super::orphan_state::confirm(
        session,
        &format!("Delete {scope} of the deployment-event history of {stack} ({region})?"),
    )?;
    let options = PruneOptions {
        keep: args.keep,
        older_than,
        all: args.all,
    };
    let result = store
        .prune(stack, &region, &options, SystemTime::now())
        .await
        .map_err(store_error)?;
    if result.deleted.is_empty() {
        ui::info(format!(
            "No runs of {stack} ({region}) matched; {} kept",
            result.remaining.len()
        ));
    } else {
        ui::info(format!(
            "Pruned {} run(s) of {stack} ({region}); {} kept{}",
            result.deleted.len(),
            result.remaining.len(),
            if result.index_deleted {
                " (index removed)"
            } else {
                ""
            }
        ));
    }
    Ok(ExitStatus::Success)
}

fn access(backend: &S3Backend) -> StoreAccess<'_> {
    StoreAccess {
        client: backend.client(),
        bucket: backend.bucket(),
        keys: backend.keys(),
    }
}

fn store_error(message: String) -> Error {
    Error::Aws(AwsError::Unexpected(message))
}

/// `--stack-region`, else the one region with history; none or several is an error that says
/// what to do.
async fn history_region(
    store: &StoreAccess<'_>,
    stack: &str,
    explicit: Option<&str>,
) -> Result<String> {
    if let Some(r) = explicit {
        return Ok(r.to_owned());
    }
    let regions = store.regions(stack).await.map_err(store_error)?;
    match regions.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err(Error::Usage(format!(
            "no deployment-event history for stack {stack} under s3://{}/{}; runs are \
             recorded by cdkd deploy, destroy and rollback",
            store.bucket,
            store.keys.list_prefix()
        ))),
        several => Err(Error::Usage(format!(
            "stack {stack} has deployment-event history in several regions ({}); pass \
             --stack-region",
            several.join(", ")
        ))),
    }
}

/// `90s`, `30m`, `24h` (and `2d`).
pub(super) fn parse_duration(text: &str) -> Result<Duration> {
    let bad = || {
        Error::Usage(format!(
            "--older-than {text}: expected a number and a unit, s, m, h or d (e.g. 24h)"
        ))
    };
    let t = text.trim();
    let unit = t.chars().last().ok_or_else(bad)?;
    let n: u64 = t[..t.len() - unit.len_utf8()].parse().map_err(|_| bad())?;
    let secs = match unit {
        's' => n,
        'm' => n * 60,
        'h' => n * 3600,
        'd' => n * 86_400,
        _ => return Err(bad()),
    };
    Ok(Duration::from_secs(secs))
}

/// One run's events, one line each, the error or reason beneath.
fn print_run(stack: &str, region: &str, run_id: &str, events: &[StoredEvent]) {
    ui::output(format!("Events for run {run_id} ({stack}, {region})"));
    if events.is_empty() {
        ui::output("  (no events)");
    }
    for e in events {
        let s = |k: &str| e.get(k).and_then(Value::as_str).filter(|v| !v.is_empty());
        let mut parts: Vec<String> = vec![
            s("timestamp").unwrap_or("?").to_owned(),
            s("eventType").unwrap_or("?").to_owned(),
        ];
        if let Some(id) = s("logicalId") {
            parts.push(match s("resourceType") {
                Some(t) => format!("{id} ({t})"),
                None => id.to_owned(),
            });
        }
        for k in ["operation", "command", "region"] {
            parts.extend(s(k).map(str::to_owned));
        }
        if let Some(p) = s("provisionedBy") {
            parts.push(format!("[{p}]"));
        }
        if let Some(v) = s("cdkdVersion") {
            parts.push(format!("cdkd {v}"));
        }
        parts.extend(s("result").map(str::to_owned));
        if let Some(ms) = e.get("durationMs").and_then(Value::as_u64) {
            parts.push(format!("{ms}ms"));
        }
        if let Some(c) = e.get("counts") {
            let n = |k: &str| c.get(k).and_then(Value::as_u64).unwrap_or(0);
            let mut t = format!("+{}/~{}/-{}", n("created"), n("updated"), n("deleted"));
            if n("failed") > 0 {
                t.push_str(&format!(" !{}", n("failed")));
            }
            if n("skipped") > 0 {
                t.push_str(&format!(" ⚠{}", n("skipped")));
            }
            parts.push(t);
        }
        ui::output(format!("  {}", parts.join("  ")));
        if let Some(r) = s("reason") {
            ui::output(format!("      {r}"));
        }
        if let Some(err) = e.get("error") {
            let f = |k: &str| err.get(k).and_then(Value::as_str).unwrap_or("");
            let code = match f("awsErrorCode") {
                "" => String::new(),
                c => format!(" ({c})"),
            };
            ui::output(format!("      {}{code}: {}", f("name"), f("message")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("24h").unwrap(), Duration::from_secs(86_400));
        assert_eq!(parse_duration("2d").unwrap(), Duration::from_secs(172_800));
        for bad in ["", "h", "5", "5w", "-1h", "1.5h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
