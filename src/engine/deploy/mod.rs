//! Deploying one stack: under its lock, load state, plan each resource's change, provision
//! along the dependency graph, delete what left the template, then store outputs and exports.
//!
//! - [`prepare`]: parameters, conditions, pruning, the graph;
//! - [`plan`] (with [`changes`]): each resource's change, and the stateful-replacement guard;
//! - [`execute`]: creates, updates and replacements along the graph;
//! - [`delete`]: removed resources and replaced old ones, dependents first;
//! - [`book`]: the state writes; [`outputs`]: outputs and export aliases;
//! - [`report`]: the lines the user sees;
//! - [`nested`]: `AWS::CloudFormation::Stack` rows deploy (and delete) their child stack;
//! - [`tokens`] / [`adopt`]: the create-token ledger, and taking over an interrupted run's
//!   creates;
//! - [`oplog`], [`failure`], [`rollback`], [`replay`]: the rollback journal, the automatic
//!   rollback, and `cdkd rollback`.
//!
//! Secrets: dynamic references are substituted for the AWS call (`lookup::Resolution::secure`)
//! and every state write passes through the stack's `redact::RecordRedactor`.

mod adopt;
mod book;
mod capture;
mod changes;
mod delete;
mod dry_run;
mod execute;
mod failure;
mod kept_outputs;
mod lookup;
mod masked;
mod nested;
mod nested_pending;
mod noecho;
mod oplog;
mod outputs;
mod plan;
mod prepare;
pub(crate) mod preview;
mod producers;
mod propagate;
mod recreate;
mod replay;
mod report;
mod rollback;
mod route;
mod security;
pub mod stack_tags;
mod staged;
mod tokens;
pub(crate) mod unrecorded;
// `cdkd import` (src/engine/import/): a child of this module so it reuses the deploy's
// preparation and record helpers.
#[path = "../import/mod.rs"]
pub mod import;

use std::path::Path;
use std::sync::{Arc, Mutex};

use indexmap::IndexMap;
use serde_json::{Map, Value};
use tokio::sync::watch;

pub use changes::{diff_properties, is_stateful, optional_equal, values_equal};
pub(crate) use delete::{delete_recorded, masked_delete};
pub use dry_run::{dry_run, DryRun};
pub use failure::FailureSummary;
pub(crate) use lookup::record_provider;
pub(crate) use nested::is_nested;
pub use producers::{Producers, Settled};
pub use recreate::Recreate;
pub use replay::{replay_journal, ReplayEnv, ReplayError, ReplayOptions, ReplayReport};
pub use report::{observe, Action, Approve, ChainLink, CriticalChain, Done, Tally};

use crate::aws::Clients;
use crate::engine::walk::{walk, WalkOptions};
use crate::error::Error;
use crate::plan::Direction;
use crate::provider::{Registry, UnsupportedType};
use crate::resolve::{partition_for_region, ExternalLookup, ParameterOverride, ResolveError};
use crate::state::backend::{BackendError, S3Backend};
use crate::state::exports::ExportIndexStore;
use crate::state::lock::HeldLock;
use crate::state::StackState;
use crate::ui;
pub(crate) use book::StateBook;
use delete::Doomed;
use execute::Run;
use lookup::Snapshot;

/// A deploy refused or stopped before (or instead of) provisioning.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Unsupported(#[from] UnsupportedType),
    /// Refused before any resource changed (e.g. `STATEFUL_REPLACE_BLOCKED`).
    #[error("{0}; nothing was changed")]
    Refused(String),
    /// A stack it depends on (named) did not deploy; nothing was changed.
    #[error("skipped: the stack it depends on ({0}) did not deploy")]
    ProducerFailed(String),
    #[error(transparent)]
    Other(Box<Error>),
}

impl From<Error> for DeployError {
    fn from(e: Error) -> Self {
        DeployError::Other(Box::new(e))
    }
}

/// What every stack of one `cdkd deploy` shares.
#[derive(Clone)]
pub struct DeployEnv {
    pub clients: Arc<Clients>,
    pub backend: Arc<S3Backend>,
    pub registry: Arc<Registry>,
    pub exports: Arc<ExportIndexStore>,
    pub external: Arc<dyn ExternalLookup + Send + Sync>,
    /// Cross-stack reads and dynamic references, fetched before each stack resolves; `None`
    /// answers from `external` alone and leaves dynamic references unsubstituted.
    pub reader: Option<Arc<crate::resolve::ExternalReader>>,
    pub account_id: String,
}

/// The options of one deploy.
#[derive(Clone, Default)]
pub struct DeployOptions {
    /// Resource operations at once (at least 1).
    pub concurrency: usize,
    pub parameters: Vec<ParameterOverride>,
    pub force_stateful_recreation: bool,
    /// `--recreate-via-cc-api` / `--recreate-via-sdk-provider` (recreate.rs).
    pub recreate: Recreate,
    /// Keep the CDK's defensive VPC route `DependsOn` edges (`plan::defensive`), which a
    /// deploy otherwise drops.
    pub no_aggressive_vpc_parallel: bool,
    pub no_wait: bool,
    /// Flips to `true` on Ctrl-C: no new operation starts.
    pub cancel: Option<watch::Receiver<bool>>,
    /// `--no-rollback`: a failed deploy keeps what it did (state and rollback journal).
    pub no_rollback: bool,
    /// Where resource events go (lines and a progress bar); `None` prints plain lines.
    pub progress: Option<Arc<crate::ui::progress::Progress>>,
    /// Asked after the plan, before any change (`--require-approval`).
    pub approval: Option<Arc<dyn Approve>>,
    /// `--replace`: a replacement whose new resource cannot be created beside the old one
    /// deletes the old one first.
    pub replace: bool,
    /// `--strict-getatt`: an attribute the provider did not report fails the resource.
    pub strict_getatt: bool,
    /// `--skip-final-snapshot`: deletes under a `Snapshot` policy take no final snapshot.
    pub skip_final_snapshot: bool,
    /// Set when the stack starts before the stacks it depends on have finished
    /// (producers.rs): it plans, then waits for them before changing anything.
    pub producers: Option<Producers>,
    /// Called with the stack's outcome before its lock is released.
    pub announce: Option<Announce>,
    /// Printed once the stack may change things (a speculatively started stack prints its
    /// "Deploying ..." line only once the stacks it depends on have deployed).
    pub heading: Option<String>,
    /// A nested child's parameters its parent filled from a secret: the name, and `None`
    /// for a NoEcho source (treated as a NoEcho parameter) or the `{{resolve:...}}`
    /// expression the parent's row stores (stored in its place, by position).
    pub secret_parameters: Vec<(String, Option<String>)>,
    /// The run's deployment-event log: `None` opens one per top-level stack; a nested
    /// child's deploy records into its parent's (as upstream's does).
    pub events: Option<crate::state::events::EventLog>,
    /// `--no-capture-observed-state`: no resource is read back after its create / update
    /// for the drift baseline (capture.rs).
    pub no_capture_observed_state: bool,
}

/// The stack to deploy.
pub struct StackTarget<'a> {
    pub stack_name: &'a str,
    pub region: &'a str,
    pub template_file: &'a Path,
    /// The manifest's `terminationProtection` (a nested stack has its top-level stack's): a
    /// deploy that would delete a nested stack of it is refused.
    pub termination_protection: bool,
    /// The stack's tags (stack_tags.rs), written into every resource that takes tags.
    pub stack_tags: &'a [(String, String)],
}

/// What a stack's deploy did.
#[derive(Debug, Clone, Default)]
pub struct StackReport {
    pub stack_name: String,
    pub region: String,
    pub tally: Tally,
    /// False when nothing changed and nothing was written.
    pub changed: bool,
    /// The stack's outputs by name (unchanged ones on a failed deploy).
    pub outputs: Map<String, Value>,
    /// (logical id, error) of each failed operation.
    pub failures: Vec<(String, String)>,
    /// Resources not attempted because something they depend on failed.
    pub skipped: Vec<String>,
    /// Resources not started because the deploy was interrupted.
    pub cancelled: Vec<String>,
    /// Every finished operation with its start and end, in completion order.
    pub resources: Vec<Done>,
    /// The chain of resources that bounded the provisioning's wall time.
    pub critical_path: CriticalChain,
    /// (logical id, why) of resources the deploy could not address and left as they are
    /// (kept in state or in AWS): exit 2 unless `--allow-unaddressed`.
    pub unaddressed: Vec<(String, String)>,
    /// How a failed deploy was closed (rolled back, or kept with a journal).
    pub rollback: Option<FailureSummary>,
    /// A nested child's successful deploy: the `writtenAt` of the `nested-pending-parent`
    /// segment it appended to its journal, which the parent's row op names.
    pub pending_segment: Option<u64>,
}

impl StackReport {
    pub fn is_success(&self) -> bool {
        self.failures.is_empty() && self.skipped.is_empty() && self.cancelled.is_empty()
    }
}

/// Every SDK provider, with Cloud Control for every other type the schemas know.
pub use crate::provider::routing::default_registry;

/// Deploys one stack under its lock.
pub async fn deploy_stack(
    env: &DeployEnv,
    target: &StackTarget<'_>,
    options: &DeployOptions,
) -> Result<StackReport, DeployError> {
    let mut with_log;
    let (options, own_log) = match &options.events {
        Some(_) => (options, None),
        None => {
            let log = crate::state::events::EventLog::start(
                env.backend.client().clone(),
                env.backend.bucket(),
                env.backend.keys().clone(),
                (target.stack_name, target.region),
                crate::state::events::RunCommand::Deploy,
            );
            with_log = options.clone();
            with_log.events = Some(log.clone());
            (&with_log, Some(log))
        }
    };
    let lock = match env
        .backend
        .lock(target.stack_name, target.region, "deploy")
        .await
    {
        Ok(lock) => lock,
        Err(e) => {
            let result = Err(DeployError::from(Error::from(e)));
            if let Some(log) = &own_log {
                crate::engine::events::deploy_ended(log, &result);
            }
            return result;
        }
    };
    let result = deploy_locked(env, target, options, &lock, None).await;
    if let Some(log) = &own_log {
        crate::engine::events::deploy_ended(log, &result);
    }
    // The stacks waiting on this one need its record and exports, not its lock's release.
    if let Some(announce) = &options.announce {
        announce(&result);
    }
    lock.release_and_warn().await;
    result
}

/// Told how a stack ended the moment its work is done, before its lock's release (the
/// release is its last step, but nothing another stack needs waits on it).
pub type Announce = Arc<dyn Fn(&Result<StackReport, DeployError>) + Send + Sync>;

async fn deploy_locked(
    env: &DeployEnv,
    target: &StackTarget<'_>,
    options: &DeployOptions,
    lock: &HeldLock,
    parent: Option<&nested::ParentLink>,
) -> Result<StackReport, DeployError> {
    let (stack, region) = (target.stack_name, target.region);
    let ledger_store = crate::state::ledger::LedgerStore::new(
        env.backend.client().clone(),
        env.backend.bucket(),
        env.backend.keys().clone(),
    );
    let journal_store = failure::journal_store(env);
    // The journal and the ledger are read beside the record, not after it.
    let (loaded, ledger, prior_journal) = tokio::join!(
        env.backend.load(stack, region),
        ledger_store.load(stack, region),
        journal_store.load(stack, region)
    );
    let prior_journal = prior_journal.map_err(|e| DeployError::Refused(e.to_string()))?;
    let loaded = loaded.map_err(|e| match e {
        // A damaged record is refused with its code (STATE_RESOURCES_MALFORMED, ...).
        BackendError::State(e) => DeployError::Refused(format!("{}: {e}", e.code())),
        other => Error::from(other).into(),
    })?;
    let (state, etag, from_legacy) = match loaded {
        Some(l) => {
            for w in &l.parsed.warnings {
                ui::warn(w);
            }
            (l.parsed.state, Some(l.etag), l.parsed.from_legacy_key)
        }
        None => (StackState::new(stack, region), None, false),
    };
    let state = nested::link(state, parent);
    let mut report = StackReport {
        stack_name: stack.to_owned(),
        region: region.to_owned(),
        ..StackReport::default()
    };
    let retry_state = options.producers.as_ref().map(|_| state.clone());
    // Boxed: the preparation's future is large, and a nested stack's deploy (and its
    // rollback) nests this one several levels deep on a worker thread's stack.
    let first = Box::pin(staged::plan_stack(env, target, options, state)).await;
    // Started before the stacks it depends on finished (producers.rs): the first plan stands
    // only when they all changed nothing and it changes nothing either; otherwise (a plan
    // with changes, or one that failed, say on an export a producer is about to create) it
    // is made again now that their outputs are final. Nothing was sent to AWS before this.
    let planning = match (&options.producers, retry_state) {
        (Some(producers), Some(state)) => {
            let settled = producers.settled().await;
            if let Settled::Failed(name) = settled {
                return Err(DeployError::ProducerFailed(name));
            }
            if let Some(heading) = &options.heading {
                ui::info(heading);
            }
            let journal_left = prior_journal.is_some();
            match first {
                Ok(p)
                    if settled == Settled::Unchanged
                        && staged::unchanged(env, options, &p, journal_left).is_some() =>
                {
                    p
                }
                _ => Box::pin(staged::plan_stack(env, target, options, state)).await?,
            }
        }
        _ => first?,
    };
    if let Some(outs) = staged::unchanged(env, options, &planning, prior_journal.is_some()) {
        capture::refresh_unchanged(env, options, &planning, etag.as_deref(), from_legacy).await;
        remember_plaintext(env, stack, region, &outs);
        report.tally.unchanged = planning.plan.planned.len();
        report.outputs = outs.by_name;
        return Ok(report);
    }
    let staged::Planning {
        prepared,
        state,
        plan,
    } = planning;
    report.changed = true;
    ui::info(format!("{stack} ({region}): {}", plan.describe()));
    for note in &plan.route_notes {
        ui::info(note);
    }
    if let Some(gate) = &options.approval {
        gate.approve(stack, &plan.changes)
            .map_err(DeployError::Refused)?;
    }
    if let Some(p) = &options.progress {
        p.add_total(plan.planned.len());
    }

    let previous_outputs = state.outputs.clone().unwrap_or_default();
    // No resource changes: an output that does not resolve keeps its stored value.
    let no_resource_change = !plan.has_resource_changes();
    let published_before = publishes(&state);
    // A nested child's pending journal segment carries them, for the parent's rollback.
    let outputs_before = previous_outputs.clone();
    let record_exists = etag.is_some();
    let first_deploy = state.resources.is_empty();
    let tokens =
        tokens::Tokens::from_loaded(ledger_store, stack, region, ledger, &state, record_exists);
    let creates = tokens::planned_creates(&plan.planned, &state);
    let book = StateBook::new(env.backend.clone(), stack, region, state, etag, from_legacy);
    book.set_redactor(prepared.resolution.redactor.clone());
    for (id, rec) in plan.refreshed {
        book.put(&id, Some(rec)).await;
    }
    let run = Arc::new(Run {
        clients: env.clients.clone(),
        registry: env.registry.clone(),
        resolution: prepared.resolution.clone(),
        book,
        planned: plan.planned,
        stack: stack.to_owned(),
        region: region.to_owned(),
        account_id: env.account_id.clone(),
        partition: partition_for_region(region).name.to_owned(),
        no_wait: options.no_wait,
        force_stateful: options.force_stateful_recreation,
        replaced: Mutex::new(Vec::new()),
        nested: nested::Scope::new(env, options, target),
        tokens,
        oplog: oplog::OpLog::default(),
        capture: capture::Captures::new(!options.no_capture_observed_state),
    });
    // One ledger write for every create this run will send, before any is sent.
    run.tokens.prepare(&creates, record_exists).await;
    capture::refresh_missing(&run).await;
    let walk_options = || WalkOptions {
        concurrency: options.concurrency.max(1),
        cancel: options.cancel.clone(),
        events: None,
    };

    let tracker = prepared.graph.ready_tracker(Direction::Deploy);
    let task_run = run.clone();
    let progress = options.progress.clone();
    let events = options.events.clone();
    crate::aws::trace::walk_mark(&run.stack, "start");
    let outcome = walk(tracker, walk_options(), move |id| {
        let run = task_run.clone();
        let progress = progress.clone();
        let events = events.clone();
        async move {
            let planned = run.planned.get(&id);
            let deps = planned.map(|p| p.dependencies.clone()).unwrap_or_default();
            let op = planned.and_then(|p| crate::engine::events::planned_operation(p.change.kind));
            if let Some(p) = planned {
                let what = (id.as_str(), p.change.resource_type.as_str(), p.route);
                crate::engine::events::started(events.as_ref(), &run.stack, op, what);
            }
            let stack = run.stack.clone();
            let operation = execute::provision(run.clone(), id.clone());
            let result = observe(&stack, &id, &deps, progress.as_deref(), operation).await;
            if events.is_some() {
                let physical = match &result {
                    Ok(_) => run.book.record(&id).await.and_then(|r| r.physical_id),
                    Err(_) => None,
                };
                let mask = |t: &str| run.resolution.redactor.mask_text(t);
                crate::engine::events::finished(
                    events.as_ref(),
                    &stack,
                    op,
                    &result,
                    physical.as_deref(),
                    &mask,
                );
            }
            result
        }
    })
    .await;
    crate::aws::trace::walk_mark(&run.stack, "end");
    let mut deploy_ok = outcome.is_success();
    absorb(&mut report, outcome);
    if deploy_ok && options.strict_getatt {
        // --strict-getatt: an output that does not resolve fails the deploy (and rolls it
        // back) instead of being skipped.
        let current = run.book.state().await;
        let snapshot = Snapshot::from_records(&env.registry, current.resources.iter());
        if let Some((name, message)) =
            outputs::strict_failure(&prepared.resolution, &snapshot, &prepared.prune)
        {
            report.failures.push((format!("Outputs.{name}"), message));
            deploy_ok = false;
        }
    }
    report.critical_path = CriticalChain::of(&prepared.graph, &report.resources);
    match &options.progress {
        Some(p) => p.not_run(
            stack,
            &report.skipped,
            "skipped: a resource it depends on failed",
        ),
        None => {
            for id in &report.skipped {
                ui::info(format!("  - {id} skipped: a resource it depends on failed"));
            }
        }
    }

    // The delete half: removed resources only after a clean walk; the old resources of
    // replacements whenever nothing that reads them failed or was skipped.
    let mut doomed: IndexMap<String, Doomed> = IndexMap::new();
    if deploy_ok {
        let current = run.book.state().await;
        for id in &plan.removed {
            if let Some(record) = current.resources.get(id) {
                if let Some(why) = delete::masked_delete(id, record) {
                    ui::warn(format!("{stack}: {why}"));
                    report.unaddressed.push((id.clone(), why));
                    continue;
                }
                let record = record.clone();
                doomed.insert(
                    id.clone(),
                    Doomed {
                        record,
                        removed: true,
                    },
                );
            }
        }
    } else if !plan.removed.is_empty() {
        ui::warn(format!(
            "{stack}: {} removed resource(s) not deleted because the deploy had failures; \
             they stay in state and the next deploy deletes them",
            plan.removed.len()
        ));
    }
    let replaced = std::mem::take(&mut *run.replaced.lock().unwrap_or_else(|p| p.into_inner()));
    // A nested child keeps the old resources of its replacements until its top-level stack's
    // deploy succeeds, so the parent's rollback can swap them back (nested_pending).
    let deferred_olds: Vec<String> = match parent {
        Some(_) => replaced.iter().map(|(id, _)| id.clone()).collect(),
        None => Vec::new(),
    };
    // After a failure the old resources stay: a rollback swaps them back, and the journal
    // names them (a later successful deploy deletes them).
    for (id, record) in replaced
        .into_iter()
        .filter(|_| deploy_ok && parent.is_none())
    {
        if let Some(why) = delete::masked_delete(&id, &record) {
            ui::warn(format!(
                "{stack}: the old {} of {id} is no longer tracked and is left in AWS: {why}",
                record.resource_type
            ));
            report.unaddressed.push((id.clone(), why));
            continue;
        }
        let readers_failed = prepared
            .graph
            .transitive_dependents_of(&id)
            .iter()
            .any(|d| !report.succeeded(d));
        if readers_failed {
            ui::warn(format!(
                "{stack}: the old {} of {id} ({}) was left in AWS because a resource that reads \
                 it did not finish; it is no longer in state: delete it by hand",
                record.resource_type,
                record.physical_id.as_deref().unwrap_or("no physical id")
            ));
            report.unaddressed.push((
                id.clone(),
                format!(
                    "the old {} was left in AWS, untracked",
                    record.resource_type
                ),
            ));
        } else {
            doomed.insert(
                id,
                Doomed {
                    record,
                    removed: false,
                },
            );
        }
    }
    // A nested child journals the removed resources it deletes (nested_pending).
    let removed_records: Vec<(String, crate::state::ResourceState)> = doomed
        .iter()
        .filter(|(_, d)| d.removed && parent.is_some())
        .map(|(id, d)| (id.clone(), d.record.clone()))
        .collect();
    if !doomed.is_empty() {
        let outcome = delete::delete_all(
            run.clone(),
            doomed,
            walk_options(),
            options.progress.clone(),
        )
        .await
        .map_err(Error::from)?;
        absorb(&mut report, outcome);
    }

    // The baselines read back beside the walk go into the record before its final save.
    capture::drain(&run).await;
    if !deploy_ok {
        let interrupted =
            !report.cancelled.is_empty() || options.cancel.as_ref().is_some_and(|c| *c.borrow());
        let mode = if interrupted {
            failure::Mode::Interrupted
        } else if options.no_rollback {
            failure::Mode::Keep
        } else {
            failure::Mode::Rollback
        };
        let summary =
            failure::after_failure(env, &run, prior_journal.clone(), mode, first_deploy).await;
        let record_deleted = summary.record_deleted;
        report.rollback = Some(summary);
        if record_deleted {
            return Ok(report);
        }
    }
    let stored = finish(
        env,
        &run,
        &prepared,
        lock,
        &mut report,
        previous_outputs,
        no_resource_change,
    )
    .await;
    if report.is_success() {
        let final_state = run.book.state().await;
        // The exports index and the ledger / journal settlement touch different objects:
        // they overlap instead of adding their round trips one after the other.
        let exports = async {
            if let Some(stored) = &stored {
                if index_untouched(env, region, stack, published_before, stored) {
                    return;
                }
                env.exports.update_stack(region, stack, stored).await;
            }
        };
        // A nested child appends a pending segment instead of deleting its journal; a
        // top-level stack then deletes its nested descendants' journals.
        let settle = async {
            if parent.is_some() {
                return nested_pending::after_child_success(
                    env,
                    &run,
                    prior_journal,
                    &final_state,
                    nested_pending::ChildOutcome {
                        previous_outputs: outputs_before,
                        removed: removed_records,
                        deferred_olds,
                        done: &report.resources,
                    },
                )
                .await;
            }
            failure::after_success(env, &run, prior_journal, &final_state).await;
            let has_nested = final_state
                .resources
                .values()
                .any(|r| nested::is_nested(&r.resource_type));
            if has_nested {
                nested_pending::settle_descendants(env, stack, region, run.nested.delete_rules())
                    .await;
            }
            None
        };
        let ((), pending) = tokio::join!(exports, settle);
        report.pending_segment = pending;
    }
    Ok(report)
}

/// Adds a walk's outcome to the report.
fn absorb(
    report: &mut StackReport,
    outcome: crate::engine::walk::WalkOutcome<Done, (Done, String)>,
) {
    for (_, done) in outcome.completed {
        report.tally.add(done.action);
        report.resources.push(done);
    }
    for (id, (done, message)) in outcome.failed {
        report.tally.add(done.action);
        report.resources.push(done);
        report.failures.push((id, message));
    }
    report.tally.skipped += outcome.skipped.len();
    report.skipped.extend(outcome.skipped);
    report.cancelled.extend(outcome.cancelled);
}

impl StackReport {
    fn succeeded(&self, id: &str) -> bool {
        !self.failures.iter().any(|(f, _)| f == id)
            && !self.skipped.iter().any(|s| s == id)
            && !self.cancelled.iter().any(|c| c == id)
    }
}

/// The final save: outputs after a clean deploy, the records alone otherwise. Returns the
/// stored record after a clean save, for the exports index.
async fn finish(
    env: &DeployEnv,
    run: &Run,
    prepared: &prepare::Prepared,
    lock: &HeldLock,
    report: &mut StackReport,
    previous_outputs: Map<String, Value>,
    no_resource_change: bool,
) -> Option<StackState> {
    let (stack, region) = (run.stack.as_str(), run.region.as_str());
    if lock.is_lost() {
        report.failures.push((
            "(state)".into(),
            format!(
                "the lock of {stack} ({region}) was lost during the deploy; the final state \
                 save was skipped (the per-resource saves stand)"
            ),
        ));
        return None;
    }
    let order = |s: &mut StackState| {
        let position = |id: &str| {
            prepared
                .scope
                .iter()
                .position(|x| x == id)
                .unwrap_or(usize::MAX)
        };
        s.resources
            .sort_by(|a, _, b, _| position(a).cmp(&position(b)));
    };
    if report.is_success() {
        let current = run.book.state().await;
        let snapshot = Snapshot::from_records(&env.registry, current.resources.iter());
        let mut outs =
            outputs::resolve_outputs(&prepared.resolution, &snapshot, &prepared.prune, stack);
        if no_resource_change {
            outs.keep_failed(&prepared.resolution.template, &current);
        }
        let saved = run
            .book
            .finish(|s| {
                outs.apply(s);
                prepared.resolution.set_reads(s);
                order(s);
            })
            .await;
        match saved {
            Ok(state) => {
                remember_plaintext(env, stack, region, &outs);
                report.outputs = outs.by_name;
                // The exports index is updated by the caller, beside the ledger settlement.
                Some(run.book.for_storage(&state))
            }
            Err(e) => {
                report.failures.push((
                    "(state)".into(),
                    format!("the final state save failed: {e}"),
                ));
                None
            }
        }
    } else {
        let names = &prepared.resolution.template.outputs;
        report.outputs = previous_outputs
            .into_iter()
            .filter(|(k, _)| names.contains_key(k))
            .collect();
        if run.book.is_dirty().await {
            if let Err(e) = run.book.finish(order).await {
                report.failures.push((
                    "(state)".into(),
                    format!("the final state save failed: {e}"),
                ));
            }
        }
        None
    }
}

/// Whether `state` publishes an export (or its export set is unreadable: treated as one).
fn publishes(state: &StackState) -> bool {
    let (exports, problem) = crate::state::exports::published_exports(state);
    !exports.is_empty() || problem.is_some()
}

/// A stack that published no export before this deploy and publishes none after it has no
/// entry to change in the exports index, unless the copy of the index this run holds shows
/// one (a stale entry, which the update then removes): its read-modify-write is skipped,
/// a round trip or, on a bucket without an index, a rebuild.
fn index_untouched(
    env: &DeployEnv,
    region: &str,
    stack: &str,
    published_before: bool,
    stored: &StackState,
) -> bool {
    !published_before && !publishes(stored) && env.exports.cached_holds(region, stack) != Some(true)
}

/// Hands this run's plaintext outputs to the cross-stack reader, so a consumer deployed later
/// in the same run can read an output the producer stores as `***` (cross-stack-references).
fn remember_plaintext(env: &DeployEnv, stack: &str, region: &str, outs: &outputs::Outputs) {
    if let Some(reader) = &env.reader {
        reader.remember_run_outputs(stack, region, outs.plain.iter());
    }
}
