//! The deploy-time observed baseline (state-schema, "version: 3 adds observedProperties"):
//! after each create and in-place update the resource is read back through its provider, and
//! what AWS reported becomes its `observedProperties`, the baseline `cdkd drift` compares.
//!
//! The reads are spawned the moment the provider answers and run beside the rest of the walk:
//! no dependent waits on them. They are drained once, after the walk, into the working record
//! (so the final save writes them): a read that fails, or finds nothing, leaves the baseline
//! absent (drift then compares against `properties`) and never fails the deploy. A record that
//! changed physical id since its read is not given the stale readback.
//!
//! The readback holds plaintext wherever AWS returns a secret the deploy sent; it is stored in
//! the record's stored spelling at those positions and with every needle of the run replaced
//! ([`crate::engine::baseline::redact`]), and the book's storage pass redacts it once more.
//!
//! `--no-capture-observed-state` turns the capture off (upstream's flag). Custom resources
//! and nested-stack rows are not read back (there is nothing in AWS to read).

use std::sync::Mutex;

use serde_json::{Map, Value};
use tokio::task::JoinHandle;

use super::execute::Run;
use crate::provider::{ProviderContext, ResourceRequest, Route};
use crate::state::{BaselineRefusalReason, ResourceState};

type Read = (String, String, Option<Map<String, Value>>);

/// The capture reads of one stack's deploy.
#[derive(Default)]
pub(super) struct Captures {
    enabled: bool,
    tasks: Mutex<Vec<JoinHandle<Read>>>,
}

impl Captures {
    pub fn new(enabled: bool) -> Self {
        Captures {
            enabled,
            tasks: Mutex::new(Vec::new()),
        }
    }
}

/// Whether a resource of this type can be read back at all.
fn readable(resource_type: &str) -> bool {
    !crate::provider::custom::is_custom_type(resource_type)
        && !super::nested::is_nested(resource_type)
}

/// Whether the record keeps a refusal an in-place update does not clear (state-schema: an
/// `unverifiable-parameter` marker, and a marker with no reason on a resource whose template
/// reads a declared parameter, which is read fail closed as one).
pub(super) fn keeps_refusal(
    old: &ResourceState,
    template_properties: &Map<String, Value>,
    declared_parameters: &std::collections::HashSet<String>,
) -> Option<BaselineRefusalReason> {
    if !old.baseline_refused() {
        return None;
    }
    match &old.observed_baseline_refusal_reason {
        Some(BaselineRefusalReason::UnverifiableParameter) => {
            Some(BaselineRefusalReason::UnverifiableParameter)
        }
        None if crate::engine::baseline::reads_any(template_properties, declared_parameters) => {
            Some(BaselineRefusalReason::UnverifiableParameter)
        }
        _ => None,
    }
}

/// Starts reading `id` back (physical id `physical_id`, sent `properties`), unless the
/// capture is off or the type has nothing to read.
pub(super) fn start(
    run: &Run,
    id: &str,
    resource_type: &str,
    route: Route,
    physical_id: &str,
    properties: &Map<String, Value>,
) {
    if !run.capture.enabled || !readable(resource_type) {
        return;
    }
    let Some(provider) = run.registry.provider(resource_type, route) else {
        return;
    };
    let clients = run.clients.clone();
    let (stack, region) = (run.stack.clone(), run.region.clone());
    let (account, partition) = (run.account_id.clone(), run.partition.clone());
    let (id, resource_type) = (id.to_owned(), resource_type.to_owned());
    let (physical_id, properties) = (physical_id.to_owned(), properties.clone());
    let task = tokio::spawn(async move {
        let ctx = ProviderContext {
            clients: &clients,
            stack_name: &stack,
            region: &region,
            account_id: &account,
            partition: &partition,
            no_wait: true,
        };
        let req = ResourceRequest {
            logical_id: &id,
            resource_type: &resource_type,
            properties: &properties,
            client_token: None,
        };
        let observed = match provider.read(&ctx, &req, &physical_id).await {
            Ok(found) => found,
            Err(e) => {
                tracing::debug!("observed baseline of {id} not captured: {e}");
                None
            }
        };
        (id, physical_id, observed)
    });
    run.capture
        .tasks
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(task);
}

/// Waits for every capture read and records each readback as its resource's baseline.
pub(super) async fn drain(run: &Run) {
    let tasks = std::mem::take(&mut *run.capture.tasks.lock().unwrap_or_else(|p| p.into_inner()));
    if tasks.is_empty() {
        return;
    }
    let mut reads = Vec::with_capacity(tasks.len());
    for task in tasks {
        match task.await {
            Ok(read) => reads.push(read),
            Err(e) => tracing::debug!("an observed-baseline read did not finish: {e}"),
        }
    }
    // The records as they will be stored: their secret positions spelled as state spells them.
    let stored = run.book.for_storage(&run.book.state().await);
    let needles = run.resolution.redactor.needles();
    for (id, physical_id, observed) in reads {
        let Some(observed) = observed else { continue };
        let Some(mut rec) = run.book.record(&id).await else {
            continue;
        };
        if rec.physical_id.as_deref() != Some(physical_id.as_str()) || rec.baseline_refused() {
            continue;
        }
        let spelled = stored
            .resources
            .get(&id)
            .map(|r| &r.properties)
            .unwrap_or(&rec.properties);
        rec.observed_properties =
            Some(crate::engine::baseline::redact(spelled, observed, &needles));
        run.book.put(&id, Some(rec)).await;
    }
}

/// The upgrade refresh (state-schema, "v2 → v3 upgrade is automatic"): every resource this
/// deploy leaves unchanged whose record has no baseline (an older writer's, or one deployed
/// with the capture off) and no refusal is read back beside the walk, drained with the rest.
pub(super) async fn refresh_missing(run: &Run) {
    if !run.capture.enabled {
        return;
    }
    let state = run.book.state().await;
    let mut started = 0;
    for (id, rec) in &state.resources {
        if rec.observed_properties.is_some()
            || rec.baseline_refused()
            || !readable(&rec.resource_type)
        {
            continue;
        }
        let changing = run
            .planned
            .get(id)
            .is_some_and(|p| p.change.kind != crate::plan::ChangeKind::NoChange || p.deferred);
        let (Some(physical_id), Some((route, _))) = (
            rec.physical_id.as_deref(),
            super::lookup::record_provider(&run.registry, rec),
        ) else {
            continue;
        };
        if changing {
            continue;
        }
        start(
            run,
            id,
            &rec.resource_type,
            route,
            physical_id,
            &rec.properties,
        );
        started += 1;
    }
    if started > 0 {
        crate::ui::info(format!(
            "  {}: reading {started} resource(s) recorded without a drift baseline back from AWS \
             (beside the deploy)",
            run.stack
        ));
    }
}

/// [`refresh_missing`] on a deploy that changes nothing (no walk, no book): the records
/// without a baseline are read back and, when any read answered, the record is saved with
/// If-Match on the ETag it was loaded with (state-schema: a NO_CHANGE deploy still persists
/// the refreshed baseline). A failed save is a warning: the next deploy tries again.
pub(super) async fn refresh_unchanged(
    env: &super::DeployEnv,
    options: &super::DeployOptions,
    planning: &super::staged::Planning,
    etag: Option<&str>,
    from_legacy: bool,
) {
    let Some(etag) = etag else { return };
    if options.no_capture_observed_state {
        return;
    }
    let state = &planning.state;
    let (stack, region) = (state.stack_name.clone(), state.region.clone());
    let partition = crate::resolve::partition_for_region(&region).name;
    let mut tasks = tokio::task::JoinSet::new();
    for (id, rec) in &state.resources {
        if rec.observed_properties.is_some()
            || rec.baseline_refused()
            || !readable(&rec.resource_type)
        {
            continue;
        }
        let (Some(physical_id), Some((_, provider))) = (
            rec.physical_id.clone(),
            super::lookup::record_provider(&env.registry, rec),
        ) else {
            continue;
        };
        let (clients, account) = (env.clients.clone(), env.account_id.clone());
        let (stack, region, id, rec) = (stack.clone(), region.clone(), id.clone(), rec.clone());
        tasks.spawn(async move {
            let ctx = ProviderContext {
                clients: &clients,
                stack_name: &stack,
                region: &region,
                account_id: &account,
                partition,
                no_wait: true,
            };
            let req = ResourceRequest {
                logical_id: &id,
                resource_type: &rec.resource_type,
                properties: &rec.properties,
                client_token: None,
            };
            let read = provider.read(&ctx, &req, &physical_id).await;
            (id, read.ok().flatten())
        });
    }
    let needles = planning.prepared.resolution.redactor.needles();
    let mut out = state.clone();
    let mut refreshed = 0;
    while let Some(joined) = tasks.join_next().await {
        let Ok((id, Some(observed))) = joined else {
            continue;
        };
        if let Some(rec) = out.resources.get_mut(&id) {
            rec.observed_properties = Some(crate::engine::baseline::redact(
                &rec.properties,
                observed,
                &needles,
            ));
            refreshed += 1;
        }
    }
    if refreshed == 0 {
        return;
    }
    let stored = planning.prepared.resolution.redactor.for_storage(&out);
    let saved = env
        .backend
        .save(
            &stack,
            &region,
            &stored,
            crate::state::backend::SaveCondition::IfMatch(etag),
            from_legacy,
        )
        .await;
    match saved {
        Ok(_) => crate::ui::info(format!(
            "  {stack}: recorded the drift baseline of {refreshed} resource(s) that had none"
        )),
        Err(e) => crate::ui::warn(format!(
            "{stack}: the drift baselines read back were not saved ({e}); the next deploy \
             reads them again"
        )),
    }
}
