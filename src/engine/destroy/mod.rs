//! Destroying one stack from its state record alone (the app, when there is one, only picks
//! the stacks and their regions): under the stack lock, refuse what the spec refuses, delete
//! every resource dependents-first along the recorded graph, then remove the record.
//!
//! - refusals: a damaged record (its code, e.g. `STATE_RESOURCES_MALFORMED`), a record whose
//!   body names another region than its key while it still lists resources
//!   (`STATE_REGION_MISMATCH`), and a producer another stack still imports from
//!   (`StackHasActiveImportsError`, [`scan`]);
//! - the walk: recorded dependencies, references left in the recorded properties and the
//!   implicit delete edges ([`crate::plan::DELETE_RULES`]), independent branches in parallel
//!   through [`crate::engine::walk`]; each delete goes through the deploy's per-resource delete
//!   ([`crate::engine::deploy::delete_recorded`]); `DeletionPolicy: Retain` /
//!   `RetainExceptOnCreate` keep the resource (its record goes with the wholesale delete);
//! - state: [`book`] saves the trimmed record write-behind after every delete (no delete waits
//!   for S3); success removes the ledger, the journal and the record ([`cleanup`]) and the
//!   stack's exports-index entries; a partial destroy keeps the trimmed record, and a re-run
//!   continues from it.
//!
//! Round trips in sequence (docs/performance.md): the lock; the record and the journal, read
//! together; the walk; then the ledger and journal deletes together, the record's delete, the
//! exports index, the lock's release. The version purges of the ledger, the journal and the
//! lock run after the release, in the background (drained before the process exits).

mod book;
pub(crate) mod cleanup;
mod journal;
mod reresolve;
pub mod scan;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use indexmap::IndexMap;
use tokio::sync::watch;

pub use cleanup::CleanupError;
pub use scan::{Consumer, ScanError};

use crate::aws::Clients;
use crate::engine::deploy::{delete_recorded, is_nested, Action, Done, Producers, Settled};
use crate::engine::events;
use crate::engine::policy::DeleteRules;
use crate::engine::walk::{walk, WalkOptions};
use crate::error::Error;
use crate::plan::{DependencyGraph, Direction, RecordNode};
use crate::provider::{ProviderContext, Registry, Route};
use crate::resolve::partition_for_region;
use crate::state::backend::{BackendError, S3Backend};
use crate::state::exports::ExportIndexStore;
use crate::state::journal::JournalStore;
use crate::state::keys::nested_stack_name;
use crate::state::lock::HeldLock;
use crate::state::{Lenient, ResourceState, StateError};
use crate::ui;
use book::DestroyBook;

/// What every stack of one destroy shares.
pub struct DestroyEnv {
    pub clients: Arc<Clients>,
    pub backend: Arc<S3Backend>,
    pub registry: Arc<Registry>,
    pub exports: Arc<ExportIndexStore>,
    pub account_id: String,
    /// The records the strong-reference scans of this destroy have read ([`scan`]).
    pub record_imports: Arc<scan::RecordImports>,
}

/// The options of one destroy.
#[derive(Clone, Default)]
pub struct DestroyOptions {
    /// Deletes at once (at least 1).
    pub concurrency: usize,
    /// Flips to `true` on Ctrl-C: no new delete starts.
    pub cancel: Option<watch::Receiver<bool>>,
    /// Also delete the stack's deployment event store (`deployments/`), every version.
    pub purge_events: bool,
    /// `--skip-final-snapshot` / `--remove-protection`.
    pub rules: DeleteRules,
    /// Set when the stack starts before the stacks that depend on it are gone: it takes its
    /// lock and reads its record, then waits for them before the strong-reference scan and
    /// any delete (`Settled::Failed` names one that was kept; `Unchanged`: all gone).
    pub dependents: Option<Producers>,
    /// Called with the (final) report the moment the stack's record is deleted, before the
    /// exports index and the lock's release: the stacks it depends on can go on from there.
    pub gone: Option<Arc<dyn Fn(&DestroyReport) + Send + Sync>>,
    /// Print "Destroying {stack} ({region})" once the stack may begin (after the wait).
    pub heading: bool,
    /// The run's deployment-event log: `None` opens one per top-level stack; a nested
    /// child's destroy records into its parent's.
    pub events: Option<crate::state::events::EventLog>,
}

/// A destroy refused, or stopped before it could finish its bookkeeping.
#[derive(Debug, thiserror::Error)]
pub enum DestroyError {
    /// A record cdkd refuses to delete from (malformed, or its body's region disagrees).
    #[error("{}: {}; nothing was deleted", .0.code(), .0)]
    State(StateError),
    /// The strong-reference scan found consumers.
    #[error("StackHasActiveImportsError: cannot destroy stack {stack} ({region}): {}; destroy those stacks first, or deploy them without these Fn::ImportValue references (Fn::GetStackOutput reads do not block a destroy); nothing was deleted", consumers.iter().map(|c| c.to_string()).collect::<Vec<_>>().join("; "))]
    ActiveImports {
        stack: String,
        region: String,
        consumers: Vec<Consumer>,
    },
    /// A stack that depends on it was not destroyed; nothing was deleted.
    #[error("skipped: {dependent} depends on it and was not destroyed")]
    DependentKept { dependent: String },
    #[error(transparent)]
    Scan(#[from] ScanError),
    #[error(transparent)]
    Cleanup(#[from] CleanupError),
    #[error(transparent)]
    Other(Box<Error>),
}

impl From<Error> for DestroyError {
    fn from(e: Error) -> Self {
        DestroyError::Other(Box::new(e))
    }
}

/// What a stack's destroy did.
#[derive(Debug, Clone, Default)]
pub struct DestroyReport {
    pub stack_name: String,
    pub region: String,
    /// There was no record: nothing was done.
    pub no_state: bool,
    /// Deleted (or found already gone), in completion order.
    pub deleted: Vec<String>,
    /// Kept in AWS by their DeletionPolicy.
    pub retained: Vec<String>,
    /// (logical id, error) of each failed delete.
    pub failures: Vec<(String, String)>,
    /// Not attempted because a resource that must go first failed.
    pub skipped: Vec<String>,
    /// Not started because the destroy was interrupted.
    pub cancelled: Vec<String>,
    /// After a partial destroy: what the kept record still lists.
    pub remaining: Vec<String>,
    /// `--purge-events` deleted the stack's deployment-event store.
    pub purged_events: bool,
}

impl DestroyReport {
    pub fn is_success(&self) -> bool {
        self.failures.is_empty() && self.skipped.is_empty() && self.cancelled.is_empty()
    }
}

/// The stack to destroy.
pub struct DestroyTarget<'a> {
    pub stack_name: &'a str,
    pub region: &'a str,
    /// The app's template of the stack (`cdkd destroy`; `None` for `cdkd state destroy`):
    /// a custom resource's masked properties are re-resolved from it for its Delete
    /// ([`reresolve`]).
    pub template_file: Option<&'a std::path::Path>,
}

/// Destroys one stack under its lock.
pub async fn destroy_stack(
    env: &DestroyEnv,
    target: &DestroyTarget<'_>,
    options: &DestroyOptions,
) -> Result<DestroyReport, DestroyError> {
    let mut with_log;
    let (options, own_log) = match &options.events {
        Some(_) => (options, None),
        None => {
            let log = crate::state::events::EventLog::start(
                env.backend.client().clone(),
                env.backend.bucket(),
                env.backend.keys().clone(),
                (target.stack_name, target.region),
                crate::state::events::RunCommand::Destroy,
            );
            with_log = options.clone();
            with_log.events = Some(log.clone());
            (&with_log, Some(log))
        }
    };
    let lock = match env
        .backend
        .lock(target.stack_name, target.region, "destroy")
        .await
    {
        Ok(lock) => lock,
        Err(e) => {
            let result = Err(DestroyError::from(Error::from(e)));
            if let Some(log) = &own_log {
                events::destroy_ended(log, &result);
            }
            return result;
        }
    };
    let result = destroy_locked(env, target, options, &lock).await;
    if let Some(log) = &own_log {
        let purged = matches!(&result, Ok(r) if r.purged_events);
        if purged {
            // `--purge-events` emptied the store after a clean destroy: nothing to add.
            log.discard().await;
        } else if !matches!(&result, Ok(r) if r.no_state) {
            events::destroy_ended(log, &result);
        } else {
            log.discard().await;
        }
    }
    lock.release_and_warn().await;
    result
}

/// Everything the delete tasks of one stack share.
struct Run {
    clients: Arc<Clients>,
    backend: Arc<S3Backend>,
    exports: Arc<ExportIndexStore>,
    record_imports: Arc<scan::RecordImports>,
    registry: Arc<Registry>,
    records: IndexMap<String, ResourceState>,
    book: DestroyBook,
    stack: String,
    region: String,
    account_id: String,
    partition: String,
    options: DestroyOptions,
    /// Today's template of the stack, when the command has the app.
    template: Option<crate::template::Template>,
}

async fn destroy_locked(
    env: &DestroyEnv,
    target: &DestroyTarget<'_>,
    options: &DestroyOptions,
    lock: &HeldLock,
) -> Result<DestroyReport, DestroyError> {
    let (stack, region) = (target.stack_name, target.region);
    let is_child = crate::state::keys::split_nested_stack_name(stack).is_some();
    let mut report = DestroyReport {
        stack_name: stack.to_owned(),
        region: region.to_owned(),
        ..DestroyReport::default()
    };
    let journal_store = JournalStore::new(
        env.backend.client().clone(),
        env.backend.bucket(),
        env.backend.keys().clone(),
    );
    // The journal (its strays are deleted after the walk) is read beside the record.
    let (loaded, prior_journal) = tokio::join!(
        env.backend.load(stack, region),
        journal::load(&journal_store, stack, region)
    );
    // Started before the stacks that depend on it were gone: nothing happens before they are.
    if let Some(dependents) = &options.dependents {
        if let Settled::Failed(dependent) = dependents.settled().await {
            return Err(DestroyError::DependentKept { dependent });
        }
    }
    if options.heading {
        ui::info(format!("Destroying {stack} ({region})"));
    }
    let loaded = loaded.map_err(|e| match e {
        BackendError::State(e) => DestroyError::State(e),
        other => Error::from(other).into(),
    })?;
    let Some(loaded) = loaded else {
        report.no_state = true;
        return Ok(report);
    };
    for w in &loaded.parsed.warnings {
        ui::warn(w);
    }
    loaded
        .parsed
        .ensure_deletable()
        .map_err(DestroyError::State)?;
    let state = loaded.parsed.state;
    // `exportNames: []` (what a deploy of a stack without exports writes): no entry of this
    // stack can be in the exports index. Without it (an older record), or with names (a
    // record a partial destroy trimmed keeps them, its outputs cleared), the index is updated.
    let exports_nothing =
        matches!(&state.export_names, Some(Lenient::Valid(names)) if names.is_empty());

    // The strong-reference check reads the outputs as loaded, before any delete.
    if state.outputs.as_ref().is_some_and(|o| !o.is_empty()) {
        let consumers =
            scan::active_consumers(&env.backend, &env.record_imports, stack, region).await?;
        if !consumers.is_empty() {
            return Err(DestroyError::ActiveImports {
                stack: stack.to_owned(),
                region: region.to_owned(),
                consumers,
            });
        }
    }

    let from_legacy = loaded.parsed.from_legacy_key;
    let legacy_key = from_legacy.then(|| loaded.key.clone());
    let records = state.resources.clone();
    let graph = DependencyGraph::from_records(
        stack,
        records.iter().map(|(id, r)| RecordNode {
            logical_id: id,
            resource_type: &r.resource_type,
            physical_id: r.physical_id.as_deref(),
            properties: Some(&r.properties),
            dependencies: r.dependencies.as_deref().unwrap_or(&[]),
        }),
    )
    .map_err(Error::from)?;
    let run = Arc::new(Run {
        clients: env.clients.clone(),
        backend: env.backend.clone(),
        exports: env.exports.clone(),
        record_imports: env.record_imports.clone(),
        registry: env.registry.clone(),
        records,
        book: DestroyBook::new(env.backend.clone(), state, loaded.etag, from_legacy),
        stack: stack.to_owned(),
        region: region.to_owned(),
        account_id: env.account_id.clone(),
        partition: partition_for_region(region).name.to_owned(),
        options: options.clone(),
        template: target.template_file.and_then(|f| {
            crate::template::parse_template_file(f)
                .map_err(|e| ui::warn(format!("{stack}: {e}; destroying from the record alone")))
                .ok()
        }),
    });
    if !run.records.is_empty() {
        ui::info(format!(
            "{stack} ({region}): deleting {} resource(s)",
            run.records.len()
        ));
    }
    let task_run = run.clone();
    // For the trace (the benchmark's critical path): each resource's recorded dependencies.
    let graph_deps: std::collections::HashMap<String, Vec<String>> = run
        .records
        .keys()
        .map(|id| {
            let deps = graph.dependencies_of(id).into_iter().map(str::to_owned);
            (id.clone(), deps.collect())
        })
        .collect();
    crate::aws::trace::walk_mark(stack, "start");
    let outcome = walk(
        graph.ready_tracker(Direction::Delete),
        WalkOptions {
            concurrency: options.concurrency.max(1),
            cancel: options.cancel.clone(),
            events: None,
        },
        move |id| {
            let run = task_run.clone();
            let deps: Vec<String> = graph_deps.get(&id).cloned().unwrap_or_default();
            async move {
                let log = run.options.events.as_ref();
                let rec = run.records.get(&id);
                // A retained resource is kept without an AWS call: no RESOURCE_STARTED.
                let op = rec
                    .filter(|r| !r.retains_on_delete())
                    .map(|_| crate::state::events::Operation::Delete);
                if let Some(r) = rec {
                    let sdk = run
                        .registry
                        .provider(&r.resource_type, Route::Sdk)
                        .is_some();
                    let route = if r.is_pinned_to_cloud_control() || !sdk {
                        Route::CloudControl
                    } else {
                        Route::Sdk
                    };
                    events::started(
                        log,
                        &run.stack,
                        op,
                        (id.as_str(), r.resource_type.as_str(), route),
                    );
                }
                let result =
                    crate::aws::trace::scoped(&run.stack, &id, destroy_one(&run, &id)).await;
                let physical = rec.and_then(|r| r.physical_id.as_deref());
                events::finished(log, &run.stack, op, &result, physical, &|t| t.to_owned());
                let done = match &result {
                    Ok(done) => {
                        ui::info(done.line(None));
                        done
                    }
                    Err((done, e)) => {
                        ui::info(done.line(Some(e)));
                        done
                    }
                };
                crate::aws::trace::resource(&run.stack, done, &deps);
                result
            }
        },
    )
    .await;
    crate::aws::trace::walk_mark(stack, "end");
    for (id, done) in outcome.completed {
        match done.action {
            Action::Retained => report.retained.push(id),
            _ => report.deleted.push(id),
        }
    }
    for (id, (_, message)) in outcome.failed {
        report.failures.push((id, message));
    }
    for id in &outcome.skipped {
        ui::info(format!(
            "  - {id} skipped: a resource that must be deleted before it failed"
        ));
    }
    report.skipped = outcome.skipped;
    report.cancelled = outcome.cancelled;

    if lock.is_lost() {
        report.failures.push((
            "(state)".into(),
            format!(
                "the lock of {stack} ({region}) was lost during the destroy; the final state \
                 write was skipped (the per-resource saves stand)"
            ),
        ));
        run.book.abandon().await;
        report.remaining = run.book.remaining().await;
        return Ok(report);
    }
    if report.is_success() {
        delete_strays(&run, prior_journal, &mut report).await;
    }
    if report.is_success() {
        // No incremental write may land after the record's delete: the saver stops after the
        // write in flight, meanwhile the ledger and the journal (other keys) are deleted.
        let (sidecars, ()) = tokio::join!(
            cleanup::remove_sidecars(&env.backend, stack, region),
            run.book.abandon()
        );
        sidecars?;
        let legacy = match legacy_key {
            Some(k) if run.book.is_legacy().await => Some(k),
            _ => None,
        };
        cleanup::remove_state(&env.backend, stack, region, legacy.as_deref()).await?;
        if let Some(gone) = &options.gone {
            gone(&report);
        }
        // The exports index after the record (and beside the event-store purge). A stack
        // whose record exports nothing has no entry to remove (as a deploy that publishes
        // none skips it), unless this run's copy of the index shows one.
        let events = async {
            // A nested child's events are in its top-level stack's run: nothing of its own
            // to purge while that run is being written.
            if options.purge_events && !is_child {
                if let Some(log) = &options.events {
                    log.discard().await;
                }
                cleanup::purge_events(&env.backend, stack, region).await;
                true
            } else {
                false
            }
        };
        let index = async {
            if !exports_nothing || env.exports.cached_holds(region, stack) == Some(true) {
                env.exports.remove_stack(region, stack).await;
            }
        };
        let (purged, ()) = tokio::join!(events, index);
        report.purged_events = purged;
        return Ok(report);
    }
    if let Err(e) = run.book.preserve().await {
        report.failures.push((
            "(state)".into(),
            format!("the final state write failed: {e}; the per-resource saves stand"),
        ));
    }
    report.remaining = run.book.remaining().await;
    Ok(report)
}

impl Run {
    fn provider_context(&self) -> ProviderContext<'_> {
        ProviderContext {
            clients: &self.clients,
            stack_name: &self.stack,
            region: &self.region,
            account_id: &self.account_id,
            partition: &self.partition,
            no_wait: false,
        }
    }
}

/// Deletes what only the rollback journal records (a failed CREATE's resource), before the
/// journal goes with the record; a failed delete makes the destroy partial.
async fn delete_strays(
    run: &Run,
    journal: Option<crate::state::journal::Journal>,
    report: &mut DestroyReport,
) {
    let Some(found) = journal else {
        return;
    };
    for stray in journal::strays(&found, &run.records) {
        let started = Instant::now();
        let ctx = run.provider_context();
        let (id, rec) = (&stray.logical_id, &stray.record);
        let how = run.options.rules.on_delete();
        let (route, result) = delete_recorded(&run.registry, &ctx, &how, id, rec).await;
        let done = Done::new(id, &rec.resource_type, route);
        match result {
            Ok(()) => {
                ui::info(format!(
                    "{} ({})",
                    done.with(Action::Deleted, started).line(None),
                    stray.why
                ));
                report.deleted.push(id.clone());
            }
            Err(e) => {
                ui::info(done.with(Action::Failed, started).line(Some(&e)));
                report.failures.push((
                    id.clone(),
                    format!(
                        "{e} (a failed create only the rollback journal records; the journal \
                         is kept so a re-run retries it)"
                    ),
                ));
            }
        }
    }
}

/// Deletes one resource (or keeps it, as its DeletionPolicy says) and drops its record.
async fn destroy_one(run: &Run, id: &str) -> Result<Done, (Done, String)> {
    let started = Instant::now();
    let Some(rec) = run.records.get(id) else {
        let done = Done::new(id, "?", Route::CloudControl);
        return Err((
            done.with(Action::Failed, started),
            "not in the record".into(),
        ));
    };
    if rec.retains_on_delete() {
        let route = if rec.is_pinned_to_cloud_control()
            || run
                .registry
                .provider(&rec.resource_type, Route::Sdk)
                .is_none()
        {
            Route::CloudControl
        } else {
            Route::Sdk
        };
        // Kept in every intermediate snapshot; the wholesale record delete drops it.
        return Ok(Done::new(id, &rec.resource_type, route).with(Action::Retained, started));
    }
    let ctx = run.provider_context();
    let how = run.options.rules.on_delete();
    let (route, result) = if is_nested(&rec.resource_type) {
        (Route::Sdk, destroy_nested(run, id).await)
    } else {
        let unmasked = unmasked_for_delete(run, id, rec);
        delete_recorded(
            &run.registry,
            &ctx,
            &how,
            id,
            unmasked.as_ref().unwrap_or(rec),
        )
        .await
    };
    let done = Done::new(id, &rec.resource_type, route);
    match result {
        Ok(()) => {
            run.book.remove(id).await;
            Ok(done.with(Action::Deleted, started))
        }
        Err(message) => Err((done.with(Action::Failed, started), message)),
    }
}

/// A custom resource's record with its masked properties re-resolved from today's template,
/// for its Delete only (the record itself is dropped after the delete, never written with the
/// value); `None` when nothing is masked or it cannot be re-resolved (then the delete is
/// skipped as unaddressed, and the warning says why).
fn unmasked_for_delete(run: &Run, id: &str, rec: &ResourceState) -> Option<ResourceState> {
    let template = run.template.as_ref()?;
    crate::engine::deploy::masked_delete(id, rec)?;
    match reresolve::reresolve(template, id, rec) {
        Ok(unmasked) => Some(unmasked),
        Err(why) => {
            ui::warn(format!(
                "{}: {id}: its masked properties cannot be re-resolved from the app's \
                 template ({why})",
                run.stack
            ));
            None
        }
    }
}

/// Destroys the nested child `{stack}~{id}` a parent's row stands for, as a stack of its own
/// (its lock, its refusals, its record, ledger and journal), before the row goes.
fn destroy_nested<'a>(
    run: &'a Run,
    id: &'a str,
) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
    Box::pin(async move {
        let child = nested_stack_name(&run.stack, id);
        let env = DestroyEnv {
            clients: run.clients.clone(),
            backend: run.backend.clone(),
            registry: run.registry.clone(),
            exports: run.exports.clone(),
            account_id: run.account_id.clone(),
            record_imports: run.record_imports.clone(),
        };
        let target = DestroyTarget {
            template_file: None,
            stack_name: &child,
            region: &run.region,
        };
        // A child goes inside its parent's walk: it waits on no other stack.
        let options = DestroyOptions {
            dependents: None,
            gone: None,
            heading: false,
            ..run.options.clone()
        };
        match destroy_stack(&env, &target, &options).await {
            Ok(report) if report.is_success() => Ok(()),
            Ok(report) => Err(format!(
                "nested stack {child}: destroy incomplete ({} failed, {} skipped); its record \
                 keeps {} resource(s): {}",
                report.failures.len(),
                report.skipped.len(),
                report.remaining.len(),
                report
                    .failures
                    .iter()
                    .map(|(id, e)| format!("{id}: {e}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
            Err(e) => Err(format!("nested stack {child}: {e}")),
        }
    })
}
