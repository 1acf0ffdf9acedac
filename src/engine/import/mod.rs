//! `cdkd import`: adopting resources that already exist into a stack's cdkd state.
//!
//! Each mapped resource is read back through its provider (`read` proves it exists, `import`
//! reports the attributes a create would), and its record is written under the stack lock
//! with the properties today's template resolves to (prepared exactly as a deploy prepares
//! them: parameters, conditions, cross-stack reads, dynamic references, secret positions and
//! NoEcho masks), `provisionedBy` from the routing, and `observedProperties` from the read
//! unless the baseline must be refused (state-schema, "version: 10 adds
//! observedBaselineRefused"): `incomplete-resolution` when part of the properties did not
//! resolve, `unverifiable-parameter` when the resource reads a template parameter bound from
//! its Default (nothing proves the deployed value equals it). The readback is redacted by
//! value with the deploy's needles before it is stored.
//!
//! Resources are imported in deploy order, so a resource that references another imported
//! one resolves against it. A logical id the template does not declare, a record that
//! already exists (without `--force`) and a mapped resource that does not exist are errors
//! naming them, before anything is written.
//!
//! Without a mapping (or with `--auto` beside one), every other resource's physical id is
//! looked for (`auto`): one not found, of a type no provider serves or whose read fails is
//! reported and left out, as upstream cdkd does. That mode rebuilds the record from what it
//! imports, so over an existing record it needs `--force`. `--dry-run` computes the same and
//! writes nothing (no lock either, as a deploy's `--dry-run`).
//!
//! This module lives under `engine::deploy` (see `#[path]` there) so it reuses the deploy's
//! preparation, plan and record helpers without widening their visibility.

mod auto;
mod mapping;
mod migrate;
mod migrate_cfn;
mod migrate_retain;

use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use indexmap::IndexMap;
use serde_json::{Map, Value};

pub use auto::cloudformation_ids;
pub use mapping::{parse_mapping, MappingError};
pub use migrate::{migrate_stack, MigrateError, MigrateReport};

use super::lookup::Snapshot;
use super::nested::{self, ParentLink};
use super::plan::{new_record, plan};
use super::{prepare, DeployEnv, DeployError};
use crate::engine::baseline;
use crate::error::Error;
use crate::provider::{ProviderContext, ResourceRequest};
use crate::resolve::{partition_for_region, ParameterOverride, ResolveContext};
use crate::state::backend::{BackendError, SaveCondition};
use crate::state::StackState;
use crate::ui;

/// The stack to import into.
pub struct ImportTarget<'a> {
    pub stack_name: &'a str,
    pub region: &'a str,
    pub template_file: &'a Path,
}

/// What to import.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Logical id → physical id, in the order given.
    pub mapping: IndexMap<String, String>,
    pub parameters: Vec<ParameterOverride>,
    /// Overwrite records that already exist.
    pub force: bool,
    /// Nested-stack rows imported as their child stack (`{stack}~{row}`), row id → what to
    /// import into the child; the row itself records the cdkd-local ARN (migration).
    pub nested: IndexMap<String, ImportOptions>,
    /// Also record the stack's outputs and cross-stack reads, as a deploy's final save does
    /// (migration, where every resource is imported).
    pub record_outputs: bool,
    /// Look for the physical id of every resource `mapping` does not name (upstream cdkd's
    /// auto mode): in `found`, else from the name the template gives it. The record is
    /// rebuilt from what is imported.
    pub auto: bool,
    /// Physical ids read from the CloudFormation stack of the same name (auto mode).
    pub found: IndexMap<String, String>,
    /// Compute and report what would be imported; write nothing, take no lock.
    pub dry_run: bool,
}

/// A resource of the template that was not imported, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub logical_id: String,
    pub resource_type: String,
    pub reason: Skip,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Skip {
    /// Auto mode found no resource for it.
    NotFound,
    /// A mapping was given and does not name it (without `--auto`).
    OutOfScope,
    /// cdkd cannot import it this way (a nested stack, a type no provider serves).
    Unsupported(String),
    /// Looking for it or reading it failed (the message).
    Failed(String),
}

/// What an import did (or, under `--dry-run`, would do) to one stack.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportReport {
    pub imported: Vec<Imported>,
    pub skipped: Vec<Skipped>,
}

impl ImportReport {
    /// The mapping the import used: logical id → the physical id recorded, in the format
    /// `--resource-mapping` reads (nested-stack rows, recorded by a cdkd-local ARN, left out).
    pub fn mapping(&self) -> Map<String, Value> {
        self.imported
            .iter()
            .filter(|i| !nested::is_nested(&i.resource_type))
            .map(|i| (i.logical_id.clone(), Value::String(i.physical_id.clone())))
            .collect()
    }
}

/// One imported resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub logical_id: String,
    pub resource_type: String,
    pub physical_id: String,
    /// `Some(reason)` when the observed baseline was refused.
    pub baseline_refused: Option<String>,
}

/// Imports into the stack's state under its lock: `options.mapping`, and in auto mode every
/// other resource found. `before_write` sees the report before anything is written (and
/// under `--dry-run`, where nothing is); nothing is written when nothing was imported.
pub async fn import_stack(
    env: &DeployEnv,
    target: &ImportTarget<'_>,
    options: &ImportOptions,
    before_write: impl FnOnce(&ImportReport) -> Result<(), DeployError>,
) -> Result<ImportReport, DeployError> {
    if options.dry_run {
        let computed = compute(env, target, options, None).await?;
        let report = computed.report();
        before_write(&report)?;
        return Ok(report);
    }
    let lock = env
        .backend
        .lock(target.stack_name, target.region, "import")
        .await
        .map_err(Error::from)?;
    let result = import_locked(env, target, options, before_write).await;
    lock.release_and_warn().await;
    result
}

async fn import_locked(
    env: &DeployEnv,
    target: &ImportTarget<'_>,
    options: &ImportOptions,
    before_write: impl FnOnce(&ImportReport) -> Result<(), DeployError>,
) -> Result<ImportReport, DeployError> {
    let computed = compute(env, target, options, None).await?;
    let report = computed.report();
    before_write(&report)?;
    if report.imported.is_empty() {
        return Ok(report);
    }
    for c in computed.flatten() {
        c.save(env).await?;
    }
    Ok(report)
}

/// One stack's import, read and resolved but not yet written, with its nested children's.
pub(super) struct Computed {
    pub stack: String,
    pub region: String,
    /// The record to write, already redacted for storage.
    pub state: StackState,
    etag: Option<String>,
    from_legacy: bool,
    pub imported: Vec<Imported>,
    pub skipped: Vec<Skipped>,
    /// The stack's outputs by name (what the parent's row records as `Outputs.<Name>`).
    outputs: Map<String, Value>,
    pub children: Vec<Computed>,
}

impl Computed {
    /// This stack's part of the report.
    pub fn report(&self) -> ImportReport {
        ImportReport {
            imported: self.imported.clone(),
            skipped: self.skipped.clone(),
        }
    }

    /// This stack, then its children depth-first: the order the records are written in.
    pub fn flatten(mut self) -> Vec<Computed> {
        let children = std::mem::take(&mut self.children);
        let mut out = vec![self];
        for c in children {
            out.extend(c.flatten());
        }
        out
    }

    /// Writes the record (If-Match on the loaded ETag, If-None-Match when there was none).
    pub async fn save(&self, env: &DeployEnv) -> Result<(), DeployError> {
        let condition = match &self.etag {
            Some(e) => SaveCondition::IfMatch(e),
            None => SaveCondition::IfAbsent,
        };
        // Before the state write, the rollback journal learns what was adopted
        // (importedResources), so a later `cdkd rollback` leaves it alone.
        let journals = crate::state::journal::JournalStore::new(
            env.backend.client().clone(),
            env.backend.bucket(),
            env.backend.keys().clone(),
        );
        let adopted: Vec<_> = self
            .imported
            .iter()
            .map(|i| crate::state::journal::ImportedResource {
                logical_id: i.logical_id.clone(),
                physical_id: i.physical_id.clone(),
                resource_type: i.resource_type.clone(),
            })
            .collect();
        let warnings = journals
            .mark_imported(&self.stack, &self.region, &adopted)
            .await
            .map_err(|e| {
                DeployError::Refused(format!("{}: {e}; nothing was imported", self.stack))
            })?;
        for w in warnings {
            ui::warn(w);
        }
        env.backend
            .save(
                &self.stack,
                &self.region,
                &self.state,
                condition,
                self.from_legacy,
            )
            .await
            .map_err(|e| match e {
                BackendError::State(e) => DeployError::Refused(format!("{}: {e}", e.code())),
                other => Error::from(other).into(),
            })?;
        if self.state.outputs.is_some() {
            env.exports
                .update_stack(&self.region, &self.stack, &self.state)
                .await;
        }
        Ok(())
    }
}

type ComputeFuture<'a> = Pin<Box<dyn Future<Output = Result<Computed, DeployError>> + Send + 'a>>;

/// Reads and resolves everything the import writes (nested children recursively, each
/// under the lock its caller holds), writing nothing.
pub(super) fn compute<'a>(
    env: &'a DeployEnv,
    target: &'a ImportTarget<'a>,
    options: &'a ImportOptions,
    parent: Option<&'a ParentLink>,
) -> ComputeFuture<'a> {
    Box::pin(compute_inner(env, target, options, parent))
}

async fn compute_inner(
    env: &DeployEnv,
    target: &ImportTarget<'_>,
    options: &ImportOptions,
    parent: Option<&ParentLink>,
) -> Result<Computed, DeployError> {
    let (stack, region) = (target.stack_name, target.region);
    let loaded = env.backend.load(stack, region).await.map_err(|e| match e {
        BackendError::State(e) => DeployError::Refused(format!("{}: {e}", e.code())),
        other => Error::from(other).into(),
    })?;
    let (state, etag, from_legacy) = match loaded {
        Some(l) => (l.parsed.state, Some(l.etag), l.parsed.from_legacy_key),
        None => (StackState::new(stack, region), None, false),
    };
    if options.auto && !options.force && !state.resources.is_empty() {
        return Err(DeployError::Refused(format!(
            "{stack}: state already exists; an import without a mapping (or with --auto) \
             rebuilds the record from what it finds, dropping every other resource of it: pass \
             --force to confirm, or name the resources to add with --resource (a merge)"
        )));
    }
    let mut state = nested::link(state, parent);
    let reader = env
        .reader
        .clone()
        .ok_or_else(|| DeployError::Refused("import needs the external reader".into()))?;
    let ctx = ResolveContext::new(stack, region, Some(env.account_id.clone()));
    // No stack tags: an import records the resources as they are; the next deploy adds them.
    let prepared = prepare::prepare_prefetched(
        stack,
        target.template_file,
        &[],
        ctx,
        &options.parameters,
        &[],
        reader,
        &state,
        &env.registry,
    )
    .await?;
    let resolution = prepared.resolution.clone();
    let template = resolution.template.clone();

    for id in options.nested.keys() {
        let is_row = template
            .resources
            .get(id)
            .is_some_and(|r| nested::is_nested(&r.type_));
        if !is_row || !prepared.scope.iter().any(|s| s == id) {
            return Err(DeployError::Refused(format!(
                "{stack}: '{id}' is not a nested stack of the template (or its Condition is \
                 false)"
            )));
        }
        if state.resources.contains_key(id) && !options.force {
            return Err(DeployError::Refused(format!(
                "{stack}: '{id}' is already in state; pass --force to import it again"
            )));
        }
    }
    // Every mapped id must be a resource cdkd provisions in today's template.
    for (id, physical) in &options.mapping {
        if !prepared.scope.iter().any(|s| s == id) {
            return Err(DeployError::Refused(format!(
                "{stack}: '{id}' is not a resource of the template (or its Condition is \
                 false); check the logical id in --resource {id}={physical}"
            )));
        }
        if physical.trim().is_empty() {
            return Err(DeployError::Refused(format!(
                "{stack}: the physical id for '{id}' is empty"
            )));
        }
        if state.resources.contains_key(id) && !options.force {
            return Err(DeployError::Refused(format!(
                "{stack}: '{id}' is already in state; pass --force to import it again"
            )));
        }
    }
    // Routes and dependencies exactly as a first deploy would record them.
    let fresh = StackState::new(stack, region);
    let planned = plan(&prepared, &fresh, &env.registry, false)?.planned;
    let default_bound =
        baseline::parameters_bound_from_default(&template, &options.parameters, stack);

    let partition = partition_for_region(region).name.to_string();
    let pctx = ProviderContext {
        clients: &env.clients,
        stack_name: stack,
        region,
        account_id: &env.account_id,
        partition: &partition,
        no_wait: false,
    };
    let place = auto::Place {
        clients: &env.clients,
        region,
        account: &env.account_id,
        partition: &partition,
    };
    let verb = if options.dry_run {
        "would import"
    } else {
        "imported"
    };
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    let mut children = Vec::new();
    let mut order: Vec<String> = Vec::new();
    for id in prepared.graph.deploy_order() {
        if !prepared.scope.iter().any(|s| s == id) {
            continue;
        }
        if options.auto || options.mapping.contains_key(id) || options.nested.contains_key(id) {
            order.push(id.to_owned());
        } else {
            skipped.push(Skipped {
                logical_id: id.to_owned(),
                resource_type: template.resources[id].type_.clone(),
                reason: Skip::OutOfScope,
            });
        }
    }
    for id in order {
        let res = &template.resources[&id];
        let explicit = options.mapping.contains_key(&id) || options.nested.contains_key(&id);
        let skip = |reason: Skip| Skipped {
            logical_id: id.clone(),
            resource_type: res.type_.clone(),
            reason,
        };
        if !explicit && nested::is_nested(&res.type_) {
            skipped.push(skip(Skip::Unsupported(
                "a nested stack: --migrate-from-cloudformation takes nested stacks over".into(),
            )));
            continue;
        }
        let Some(p) = planned.get(&id) else {
            return Err(DeployError::Refused(format!(
                "{stack}: '{id}' ({}) cannot be planned",
                res.type_
            )));
        };
        if let Some(child_options) = options.nested.get(&id) {
            let snapshot = Snapshot::from_records(&env.registry, state.resources.iter());
            let desired = resolution.properties(&snapshot, &id)?;
            let secured = resolution.secure_fetched(&id, desired).await?;
            let child = import_child(env, target, &id, res, &secured.sent, child_options).await?;
            let physical_id = nested::row_physical_id(region, &env.account_id, stack, &id);
            let attributes = child
                .outputs
                .iter()
                .map(|(k, v)| (format!("Outputs.{k}"), v.clone()))
                .collect();
            let mut rec = new_record(
                res,
                p.route,
                &p.dependencies,
                physical_id.clone(),
                secured.stored.clone(),
                attributes,
            );
            rec.provisioned_by = Some(crate::state::ProvisionedBy::Sdk);
            ui::info(format!(
                "{stack}: {verb} {id} ({}) as nested stack {}",
                res.type_, child.stack
            ));
            out.push(Imported {
                logical_id: id.clone(),
                resource_type: res.type_.clone(),
                physical_id,
                baseline_refused: None,
            });
            children.push(child);
            state.resources.insert(id, rec);
            continue;
        }
        let Some(provider) = env.registry.provider(&res.type_, p.route) else {
            let why = format!("no {} provider serves {}", p.route.as_str(), res.type_);
            if explicit {
                return Err(DeployError::Refused(format!("{stack}: {why} ('{id}')")));
            }
            skipped.push(skip(Skip::Unsupported(why)));
            continue;
        };
        let snapshot = Snapshot::from_records(&env.registry, state.resources.iter());
        let (desired, unknown) = resolution.properties_lenient(&snapshot, &id)?;
        let secured = resolution.secure_fetched(&id, desired).await?;
        let req = ResourceRequest {
            logical_id: &id,
            resource_type: &res.type_,
            properties: &secured.sent,
            client_token: None,
        };
        let mask = |e: &dyn std::fmt::Display| resolution.redactor.mask_text(&e.to_string());
        let physical = match options.mapping.get(&id) {
            Some(given) => given.trim().to_string(),
            None => match options.found.get(&id) {
                Some(found) => found.clone(),
                None => match auto::by_name(&place, &res.type_, &secured.sent).await {
                    Ok(Some(named)) => named,
                    Ok(None) => {
                        skipped.push(skip(Skip::NotFound));
                        continue;
                    }
                    Err(e) => {
                        skipped.push(skip(Skip::Failed(mask(&e))));
                        continue;
                    }
                },
            },
        };
        let observed = match provider.read(&pctx, &req, &physical).await {
            Ok(Some(observed)) => observed,
            Ok(None) if explicit => {
                return Err(DeployError::Refused(format!(
                    "{stack}: '{id}' ({}) with physical id '{physical}' does not exist; \
                     check the id (a composite id joins its parts with '|')",
                    res.type_
                )))
            }
            Ok(None) => {
                skipped.push(skip(Skip::NotFound));
                continue;
            }
            Err(e) if explicit => return Err(DeployError::Refused(mask(&e))),
            Err(e) => {
                skipped.push(skip(Skip::Failed(mask(&e))));
                continue;
            }
        };
        let made = match provider.import(&pctx, &req, &physical).await {
            Ok(made) => made,
            Err(e) if explicit => return Err(DeployError::Refused(mask(&e))),
            Err(e) => {
                skipped.push(skip(Skip::Failed(mask(&e))));
                continue;
            }
        };
        let physical_id = if made.physical_id.is_empty() {
            physical.clone()
        } else {
            made.physical_id.clone()
        };
        let mut attributes = made.attributes.clone();
        // A re-import at the same physical id keeps what the record already knew.
        if let Some(old) = state.resources.get(&id) {
            if old.physical_id.as_deref() == Some(physical_id.as_str()) {
                for (k, v) in old.attributes.clone().unwrap_or_default() {
                    attributes.entry(k).or_insert(v);
                }
            }
        }
        let mut rec = new_record(
            res,
            p.route,
            &p.dependencies,
            physical_id.clone(),
            secured.stored.clone(),
            attributes,
        );
        if !secured.no_echo_leaves.is_empty() {
            rec.no_echo_leaves = Some(secured.no_echo_leaves.clone());
        }
        let refusal = baseline::refusal(&unknown, &res.properties, &default_bound);
        baseline::record(
            &mut rec,
            refusal.clone(),
            observed,
            &resolution.redactor.needles(),
        );
        if !unknown.is_empty() {
            ui::warn(format!(
                "{stack}: '{id}': {} did not resolve ({}); they are left out of the record \
                 and the next deploy sets them",
                if unknown.len() == 1 {
                    "a property"
                } else {
                    "properties"
                },
                unknown.join(", ")
            ));
        }
        ui::info(format!(
            "{stack}: {verb} {id} ({}) as {physical_id}",
            res.type_
        ));
        out.push(Imported {
            logical_id: id.clone(),
            resource_type: res.type_.clone(),
            physical_id,
            baseline_refused: refusal.map(|r| r.as_str().to_string()),
        });
        state.resources.insert(id, rec);
    }
    if options.auto {
        // The record is rebuilt from what this import found (upstream's whole-stack mode).
        state
            .resources
            .retain(|id, _| out.iter().any(|i: &Imported| &i.logical_id == id));
    }
    let mut outputs = Map::new();
    if options.record_outputs {
        let snapshot = Snapshot::from_records(&env.registry, state.resources.iter());
        let outs = super::outputs::resolve_outputs(&resolution, &snapshot, &prepared.prune, stack);
        outs.apply(&mut state);
        resolution.set_reads(&mut state);
        outputs = outs.by_name;
    }
    let mut stored = state;
    // One more pass of the needles over the whole record, as the deploy's book does.
    let mut as_value = serde_json::to_value(&stored.resources).map_err(|e| {
        DeployError::Refused(format!("{stack}: the state record does not serialize: {e}"))
    })?;
    resolution.redactor.needles().redact_in_place(&mut as_value);
    stored.resources = serde_json::from_value(as_value).map_err(|e| {
        DeployError::Refused(format!("{stack}: the state record does not serialize: {e}"))
    })?;
    Ok(Computed {
        stack: stack.to_owned(),
        region: region.to_owned(),
        state: stored,
        etag,
        from_legacy,
        imported: out,
        skipped,
        outputs,
        children,
    })
}

/// Computes the import of the nested row `id`'s child `{stack}~{id}` from its template in
/// the cloud assembly, with the row's resolved `Parameters` as its parameter values.
async fn import_child(
    env: &DeployEnv,
    target: &ImportTarget<'_>,
    id: &str,
    res: &crate::template::Resource,
    desired: &Map<String, Value>,
    child_options: &ImportOptions,
) -> Result<Computed, DeployError> {
    let stack = target.stack_name;
    let assembly_dir = target.template_file.parent().unwrap_or(Path::new("."));
    let template_file = nested::child_template(assembly_dir, id, res, desired)
        .map_err(|e| DeployError::Refused(format!("{stack}: {e}")))?;
    let child = nested::child_stack_name(stack, id);
    let mut options = child_options.clone();
    options.parameters = nested::child_parameters(&child, desired)
        .map_err(|e| DeployError::Refused(format!("{stack}: '{id}': {e}")))?;
    let link = ParentLink {
        stack: stack.to_owned(),
        logical_id: id.to_owned(),
        region: target.region.to_owned(),
    };
    let child_target = ImportTarget {
        stack_name: &child,
        region: target.region,
        template_file: &template_file,
    };
    compute(env, &child_target, &options, Some(&link)).await
}
