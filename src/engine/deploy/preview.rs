//! The deploy's own preparation and change computation for one stack, read-only, for
//! `cdkd diff`: the same parameter binding, condition evaluation, pruning, per-resource change
//! rules and outputs bag as a deploy, against a record the caller loaded. No lock is taken and
//! nothing is written. The preparation is the deploy's prefetching one
//! ([`prepare::prepare_prefetched`]) over a reader that withholds secrets
//! ([`ExternalReader::withholding_secrets`]): public dynamic references and SSM-typed
//! parameters resolve to the values a deploy would send, secret-bearing references stay the
//! expression state stores, and no secret is fetched.
//!
//! This module only exposes what the deploy computes; it holds no comparison rule of its own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{Map, Value};

pub(crate) use super::changes::replaces;
use super::lookup::{record_provider, Snapshot};
use super::{outputs, plan, prepare, DeployError};
use crate::plan::ChangeSet;
use crate::provider::{Registry, Route};
use crate::redact::Needles;
use crate::resolve::{ExternalReader, ParameterOverride, ResolveContext};
use crate::state::StackState;
use crate::template::Template;

/// What a deploy of one stack would do, as the deploy computes it.
pub(crate) struct Preview {
    pub changes: ChangeSet,
    /// The provisioning route of each planned resource, and of each removed one (from its
    /// record).
    pub routes: HashMap<String, Route>,
    /// The deploy's refusals of this plan (`STATEFUL_REPLACE_BLOCKED`, ...).
    pub refusals: Vec<String>,
    /// The template after pruning (condition-false resources removed).
    pub template: Arc<Template>,
    /// Outputs skipped because their Condition is false.
    pub condition_skipped_outputs: Vec<String>,
    /// `state.outputs` as the deploy would store it now (names and export aliases), resolved
    /// against the record.
    pub outputs: Map<String, Value>,
    /// Outputs that did not resolve → digest of their inputs (`skippedOutputs`).
    pub failed_outputs: IndexMap<String, String>,
    /// Values that must never be shown (NoEcho values and any secret the deploy learned).
    pub needles: Needles,
    /// Every nested stack row in scope, with its child template and parameters.
    pub nested: Vec<NestedChild>,
}

/// A nested stack row of the template.
pub(crate) struct NestedChild {
    pub logical_id: String,
    /// The child's stack name, `{parent}~{logicalId}`.
    pub stack_name: String,
    /// The child's template in the cloud assembly, or why it cannot be found.
    pub template_file: Result<PathBuf, String>,
    /// The row's resolved Parameters as the child's parameter values.
    pub parameters: Result<Vec<ParameterOverride>, String>,
    /// The row's resolved `Tags`, the child's stack tags (stack_tags.rs).
    pub stack_tags: Vec<(String, String)>,
    /// The row's parameters the parent fills from a secret (`nested::secret_parameters`):
    /// the child masks them as its deploy would.
    pub secret_parameters: Vec<(String, Option<String>)>,
}

/// Computes `stack`'s plan and outputs against `state`. `reader` must withhold secrets
/// ([`ExternalReader::withholding_secrets`]); `None` reads nothing from outside (every
/// outside value stays unknown and is not compared).
#[allow(clippy::too_many_arguments)] // the deploy's own inputs, passed through unchanged
pub(crate) async fn preview(
    stack: &str,
    region: &str,
    account_id: &str,
    template_file: &Path,
    stack_tags: &[(String, String)],
    overrides: &[ParameterOverride],
    secret_parameters: &[(String, Option<String>)],
    reader: Option<Arc<ExternalReader>>,
    state: &StackState,
    registry: &Registry,
) -> Result<Preview, DeployError> {
    let ctx = ResolveContext::new(stack, region, Some(account_id.to_owned()));
    let prepared = prepare::prepare_for_preview(
        stack,
        template_file,
        stack_tags,
        ctx,
        overrides,
        secret_parameters,
        reader,
        state,
        registry,
    )
    .await?;
    prepared.resolution.redactor.seed_attributes(state);
    let mut refusals = Vec::new();
    let plan = match plan::plan(&prepared, state, registry, false) {
        Ok(plan) => plan,
        // The refusal is the deploy's answer; the diff still shows what the plan holds.
        Err(DeployError::Refused(why)) => {
            refusals.push(why);
            plan::plan(&prepared, state, registry, true)?
        }
        Err(e) => return Err(e),
    };
    let mut routes: HashMap<String, Route> = plan
        .planned
        .iter()
        .map(|(id, p)| (id.clone(), p.route))
        .collect();
    for id in &plan.removed {
        if let Some((route, _)) = state
            .resources
            .get(id)
            .and_then(|rec| record_provider(registry, rec))
        {
            routes.insert(id.clone(), route);
        }
    }

    let resolution = &prepared.resolution;
    let snapshot = Snapshot::from_records(registry, state.resources.iter());
    let mut outs = outputs::resolve_outputs(resolution, &snapshot, &prepared.prune, stack);
    // The deploy's no-change merge (kept_outputs.rs), previewed.
    if !plan.has_resource_changes() {
        outs.keep_failed(&resolution.template, state);
    }

    let assembly_dir = template_file.parent().unwrap_or(Path::new("."));
    let mut nested = Vec::new();
    for id in &prepared.scope {
        let res = &resolution.template.resources[id];
        if !super::nested::is_nested(&res.type_) {
            continue;
        }
        let child = super::nested::child_stack_name(stack, id);
        let desired = resolution
            .properties_lenient(&snapshot, id)
            .map(|(d, _)| d)
            .map_err(|e| e.to_string());
        let (template_file, parameters, secret_parameters, stack_tags) = match desired {
            Ok(d) => {
                // As the deploy hands them over: substituted, with the row's secret-fed
                // parameters named so the child masks them (never shown in its diff).
                let (sent, secret) = match resolution.secure(id, d.clone()) {
                    Ok(s) => {
                        let secret = super::nested::secret_parameters(&s.sent, &s.stored);
                        (s.sent, secret)
                    }
                    Err(_) => (d, Vec::new()),
                };
                (
                    super::nested::child_template(assembly_dir, id, res, &sent),
                    super::nested::child_parameters(&child, &sent),
                    secret,
                    super::stack_tags::from_tag_list(sent.get("Tags")),
                )
            }
            Err(e) => (Err(e.clone()), Err(e), Vec::new(), Vec::new()),
        };
        nested.push(NestedChild {
            logical_id: id.clone(),
            stack_name: child,
            template_file,
            parameters,
            secret_parameters,
            stack_tags,
        });
    }

    Ok(Preview {
        changes: plan.changes,
        routes,
        refusals,
        template: resolution.template.clone(),
        condition_skipped_outputs: prepared.prune.skipped_outputs.clone(),
        outputs: outs.stored,
        failed_outputs: outs.skipped,
        needles: resolution.redactor.needles(),
        nested,
    })
}
