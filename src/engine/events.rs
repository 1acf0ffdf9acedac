//! What the engine tells the deployment-event store ([`crate::state::events`]): the resource
//! events of a walk (deploy, destroy, the deploy's deletes), the rollback steps, and each
//! run's `RUN_STARTED` / `RUN_FINISHED` bracket.
//!
//! Kept out of the walk's code paths on purpose: every hook is a synchronous buffer push on
//! an optional log, so a run without a log (a dry run, a unit test) is unchanged, and a run
//! with one never waits on S3. Error text is passed through the stack's redactor before it is
//! recorded: the store is a durable sink, and an AWS error can quote a property value back.

use std::time::Duration;

use crate::engine::deploy::{Action, DeployError, Done, StackReport};
use crate::engine::destroy::{DestroyError, DestroyReport};
use crate::plan::ChangeKind;
use crate::provider::Route;
use crate::state::events::{Counts, Event, EventLog, EventType, Operation, RunResult};
use crate::state::journal::OpKind;

/// The error `name` our events carry (we have no exception classes to name).
pub const ERROR_NAME: &str = "Error";

/// The operation a planned change sends, `None` for no change.
pub fn planned_operation(kind: ChangeKind) -> Option<Operation> {
    match kind {
        ChangeKind::Create => Some(Operation::Create),
        ChangeKind::Update | ChangeKind::Replace => Some(Operation::Update),
        ChangeKind::Delete => Some(Operation::Delete),
        ChangeKind::NoChange => None,
    }
}

/// A journaled operation's kind, as the rollback events name what they revert.
pub fn journal_operation(kind: OpKind) -> Operation {
    match kind {
        OpKind::Create => Operation::Create,
        OpKind::Update => Operation::Update,
        OpKind::Delete => Operation::Delete,
    }
}

fn done_operation(action: Action, planned: Option<Operation>) -> Option<Operation> {
    match action {
        Action::Created => Some(Operation::Create),
        Action::Updated | Action::Replaced | Action::ReplacedRetained => Some(Operation::Update),
        Action::Deleted | Action::Retained | Action::OldDeleted => Some(Operation::Delete),
        Action::Failed | Action::Unchanged => planned,
    }
}

/// `RESOURCE_STARTED` for an operation the plan says will change something.
pub fn started(
    log: Option<&EventLog>,
    stack: &str,
    planned: Option<Operation>,
    (id, resource_type, route): (&str, &str, Route),
) {
    if let (Some(log), Some(op)) = (log, planned) {
        log.record(
            Event::new(EventType::ResourceStarted, stack)
                .resource(op, id, resource_type)
                .provisioned_by(route.as_str()),
        );
    }
}

/// How one resource operation ended: `RESOURCE_SUCCEEDED` / `_FAILED` / `_RETAINED`. A
/// resource the plan could not predict (decided inside the walk) gets its `RESOURCE_STARTED`
/// here, once it is known to have done something; a no-change verdict records nothing.
pub fn finished(
    log: Option<&EventLog>,
    stack: &str,
    planned: Option<Operation>,
    result: &Result<Done, (Done, String)>,
    physical_id: Option<&str>,
    mask: &dyn Fn(&str) -> String,
) {
    let Some(log) = log else { return };
    let (done, error) = match result {
        Ok(done) => (done, None),
        Err((done, e)) => (done, Some(e.as_str())),
    };
    if planned.is_none() && !done.did_work() {
        return;
    }
    let Some(op) = done_operation(done.action, planned) else {
        return;
    };
    let (id, ty, route) = (
        done.logical_id.as_str(),
        done.resource_type.as_str(),
        done.route.as_str(),
    );
    if done.action == Action::Retained {
        log.record(
            Event::new(EventType::ResourceRetained, stack)
                .resource(op, id, ty)
                .provisioned_by(route),
        );
        return;
    }
    if planned.is_none() {
        started(Some(log), stack, Some(op), (id, ty, done.route));
    }
    let event = match error {
        None => Event::new(EventType::ResourceSucceeded, stack)
            .resource(op, id, ty)
            .provisioned_by(route)
            .physical_id(physical_id)
            .duration(done.elapsed),
        Some(e) => Event::new(EventType::ResourceFailed, stack)
            .resource(op, id, ty)
            .provisioned_by(route)
            .duration(done.elapsed)
            .error(ERROR_NAME, &mask(e)),
    };
    log.record(event);
}

/// `RESOURCE_SKIPPED`: a resource the run could not address and left as it is.
pub fn skipped(log: Option<&EventLog>, stack: &str, id: &str, reason: &str) {
    if let Some(log) = log {
        log.record(
            Event::new(EventType::ResourceSkipped, stack)
                .target(Operation::Delete, id)
                .reason(reason),
        );
    }
}

/// `ROLLBACK_STARTED` / `ROLLBACK_FINISHED`.
pub fn rollback_phase(log: Option<&EventLog>, stack: &str, finished: bool) {
    if let Some(log) = log {
        let t = if finished {
            EventType::RollbackFinished
        } else {
            EventType::RollbackStarted
        };
        log.record(Event::new(t, stack));
    }
}

/// One rollback step: what it reverted, and why it could not when it failed (masked).
pub fn rollback_step(
    log: Option<&EventLog>,
    stack: &str,
    (op, id, resource_type): (Operation, &str, &str),
    error: Option<&str>,
) {
    if let Some(log) = log {
        let event = match error {
            None => Event::new(EventType::RollbackResourceSucceeded, stack).resource(
                op,
                id,
                resource_type,
            ),
            Some(e) => Event::new(EventType::RollbackResourceFailed, stack)
                .resource(op, id, resource_type)
                .error(ERROR_NAME, e),
        };
        log.record(event);
    }
}

/// Ends a run: `RUN_FINISHED` with its result, its counts when it got as far as running, and
/// its first error; written behind.
pub fn run_finished(
    log: &EventLog,
    result: RunResult,
    counts: Option<Counts>,
    error: Option<&str>,
) {
    let mut event = Event::new(EventType::RunFinished, log.stack())
        .result(result)
        .duration(round_ms(log.elapsed()));
    if let Some(c) = counts {
        event = event.counts(c);
    }
    if let Some(e) = error {
        event = event.error(ERROR_NAME, e);
    }
    log.finish(event);
}

/// A top-level deploy's end: its unaddressed resources as `RESOURCE_SKIPPED`, then
/// `RUN_FINISHED`, `FAILED` for anything but a clean run (a run that left a resource it could
/// not address exits 2, and the record says what the exit code says, as upstream's).
pub fn deploy_ended(log: &EventLog, result: &Result<StackReport, DeployError>) {
    let report = match result {
        Ok(r) => r,
        Err(e) => return run_finished(log, RunResult::Failed, None, Some(&e.to_string())),
    };
    for (id, why) in &report.unaddressed {
        skipped(Some(log), &report.stack_name, id, why);
    }
    let t = &report.tally;
    let counts = Counts {
        created: t.created,
        updated: t.updated + t.replaced,
        deleted: t.deleted,
        failed: t.failed,
        skipped: report.unaddressed.len(),
    };
    let first_failure = report
        .failures
        .first()
        .map(|(id, e)| format!("{id}: {e}"))
        .or_else(|| report.skipped.first().map(|id| format!("{id}: skipped")))
        .or_else(|| {
            report
                .cancelled
                .first()
                .map(|id| format!("{id}: interrupted"))
        });
    let result = if report.is_success() && report.unaddressed.is_empty() {
        RunResult::Succeeded
    } else {
        RunResult::Failed
    };
    run_finished(log, result, Some(counts), first_failure.as_deref());
}

fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis() as u64)
}

/// A top-level destroy's end: `RUN_FINISHED` with what was deleted, `FAILED` unless every
/// resource went (a partial destroy keeps its history for the retry, as upstream's).
pub fn destroy_ended(log: &EventLog, result: &Result<DestroyReport, DestroyError>) {
    let report = match result {
        Ok(r) => r,
        Err(e) => return run_finished(log, RunResult::Failed, None, Some(&e.to_string())),
    };
    let counts = Counts {
        deleted: report.deleted.len(),
        failed: report.failures.len(),
        skipped: report.skipped.len(),
        ..Counts::default()
    };
    let first = report.failures.first().map(|(id, e)| format!("{id}: {e}"));
    let result = if report.is_success() {
        RunResult::Succeeded
    } else {
        RunResult::Failed
    };
    run_finished(log, result, Some(counts), first.as_deref());
}
