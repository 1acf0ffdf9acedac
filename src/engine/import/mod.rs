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
//! already exists (without `--force`) and a resource that does not exist are errors naming
//! them, before anything is written.
//!
//! This module lives under `engine::deploy` (see `#[path]` there) so it reuses the deploy's
//! preparation, plan and record helpers without widening their visibility.

mod mapping;

use std::collections::HashSet;
use std::path::Path;

use indexmap::IndexMap;
use serde_json::{Map, Value};

pub use mapping::{parse_mapping, MappingError};

use super::lookup::Snapshot;
use super::plan::{new_record, plan};
use super::{prepare, DeployEnv, DeployError};
use crate::error::Error;
use crate::provider::{ProviderContext, ResourceRequest};
use crate::resolve::{intrinsic, partition_for_region, ParameterOverride, ResolveContext};
use crate::state::backend::{BackendError, SaveCondition};
use crate::state::{BaselineRefusalReason, StackState};
use crate::template::Template;
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

/// Imports `options.mapping` into the stack's state under its lock.
pub async fn import_stack(
    env: &DeployEnv,
    target: &ImportTarget<'_>,
    options: &ImportOptions,
) -> Result<Vec<Imported>, DeployError> {
    let lock = env
        .backend
        .lock(target.stack_name, target.region, "import")
        .await
        .map_err(Error::from)?;
    let result = import_locked(env, target, options).await;
    lock.release_and_warn().await;
    result
}

async fn import_locked(
    env: &DeployEnv,
    target: &ImportTarget<'_>,
    options: &ImportOptions,
) -> Result<Vec<Imported>, DeployError> {
    let (stack, region) = (target.stack_name, target.region);
    let loaded = env.backend.load(stack, region).await.map_err(|e| match e {
        BackendError::State(e) => DeployError::Refused(format!("{}: {e}", e.code())),
        other => Error::from(other).into(),
    })?;
    let (mut state, etag, from_legacy) = match loaded {
        Some(l) => (l.parsed.state, Some(l.etag), l.parsed.from_legacy_key),
        None => (StackState::new(stack, region), None, false),
    };
    let reader = env
        .reader
        .clone()
        .ok_or_else(|| DeployError::Refused("import needs the external reader".into()))?;
    let ctx = ResolveContext::new(stack, region, Some(env.account_id.clone()));
    let prepared = prepare::prepare_prefetched(
        stack,
        target.template_file,
        ctx,
        &options.parameters,
        reader,
        &state,
        &env.registry,
    )
    .await?;
    let resolution = prepared.resolution.clone();
    let template = resolution.template.clone();

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
    let default_bound = parameters_bound_from_default(&template, &options.parameters, stack);

    let partition = partition_for_region(region).name.to_string();
    let pctx = ProviderContext {
        clients: &env.clients,
        stack_name: stack,
        region,
        account_id: &env.account_id,
        partition: &partition,
        no_wait: false,
    };
    let mut out = Vec::new();
    let order: Vec<String> = prepared
        .graph
        .deploy_order()
        .into_iter()
        .filter(|id| options.mapping.contains_key(*id))
        .map(str::to_owned)
        .collect();
    for id in order {
        let physical = options.mapping[&id].trim().to_string();
        let res = &template.resources[&id];
        let Some(p) = planned.get(&id) else {
            return Err(DeployError::Refused(format!(
                "{stack}: '{id}' ({}) cannot be planned",
                res.type_
            )));
        };
        let provider = env.registry.provider(&res.type_, p.route).ok_or_else(|| {
            DeployError::Refused(format!(
                "{stack}: no {} provider serves {} ('{id}')",
                p.route.as_str(),
                res.type_
            ))
        })?;
        let snapshot = Snapshot::from_records(&env.registry, state.resources.iter());
        let (desired, unknown) = resolution.properties_lenient(&snapshot, &id)?;
        let secured = resolution.secure_fetched(&id, desired).await?;
        let req = ResourceRequest {
            logical_id: &id,
            resource_type: &res.type_,
            properties: &secured.sent,
            client_token: None,
        };
        let observed = provider
            .read(&pctx, &req, &physical)
            .await
            .map_err(|e| DeployError::Refused(resolution.redactor.mask_text(&e.to_string())))?
            .ok_or_else(|| {
                DeployError::Refused(format!(
                    "{stack}: '{id}' ({}) with physical id '{physical}' does not exist; \
                     check the id (a composite id joins its parts with '|')",
                    res.type_
                ))
            })?;
        let made = provider
            .import(&pctx, &req, &physical)
            .await
            .map_err(|e| DeployError::Refused(resolution.redactor.mask_text(&e.to_string())))?;
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
        let refusal = if !unknown.is_empty() {
            Some(BaselineRefusalReason::IncompleteResolution)
        } else if reads_any(&res.properties, &default_bound) {
            Some(BaselineRefusalReason::UnverifiableParameter)
        } else {
            None
        };
        match &refusal {
            Some(reason) => {
                rec.observed_baseline_refused = Some(true);
                rec.observed_baseline_refusal_reason = Some(reason.clone());
                rec.observed_properties = None;
            }
            None => {
                let mut observed = Value::Object(observed);
                resolution.redactor.needles().redact_in_place(&mut observed);
                rec.observed_properties = match observed {
                    Value::Object(m) => Some(m),
                    _ => None,
                };
            }
        }
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
            "{stack}: imported {id} ({}) as {physical_id}",
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
    let condition = match &etag {
        Some(e) => SaveCondition::IfMatch(e),
        None => SaveCondition::IfAbsent,
    };
    let mut stored = state;
    // One more pass of the needles over the whole record, as the deploy's book does.
    let mut as_value = serde_json::to_value(&stored.resources).map_err(|e| {
        DeployError::Refused(format!("{stack}: the state record does not serialize: {e}"))
    })?;
    resolution.redactor.needles().redact_in_place(&mut as_value);
    stored.resources = serde_json::from_value(as_value).map_err(|e| {
        DeployError::Refused(format!("{stack}: the state record does not serialize: {e}"))
    })?;
    env.backend
        .save(stack, region, &stored, condition, from_legacy)
        .await
        .map_err(|e| match e {
            BackendError::State(e) => DeployError::Refused(format!("{}: {e}", e.code())),
            other => Error::from(other).into(),
        })?;
    Ok(out)
}

/// Template parameters bound from their Default: no override names them for this stack.
fn parameters_bound_from_default(
    template: &Template,
    overrides: &[ParameterOverride],
    stack: &str,
) -> HashSet<String> {
    template
        .parameters
        .keys()
        .filter(|name| {
            !overrides
                .iter()
                .any(|o| o.key == **name && o.stack.as_deref().is_none_or(|s| s == stack))
        })
        .cloned()
        .collect()
}

/// Whether `properties` read any of `params` through `Ref` or an `Fn::Sub` placeholder.
fn reads_any(properties: &Map<String, Value>, params: &HashSet<String>) -> bool {
    fn walk(v: &Value, params: &HashSet<String>) -> bool {
        match intrinsic(v) {
            Some(("Ref", Value::String(name))) => params.contains(name),
            Some(("Fn::Sub", arg)) => {
                let text = match arg {
                    Value::String(s) => Some(s.as_str()),
                    Value::Array(items) => items.first().and_then(Value::as_str),
                    _ => None,
                };
                let in_text =
                    text.is_some_and(|t| params.iter().any(|p| t.contains(&format!("${{{p}}}"))));
                in_text
                    || match arg {
                        Value::Array(items) => items.iter().skip(1).any(|x| walk(x, params)),
                        _ => false,
                    }
            }
            Some((_, arg)) => walk(arg, params),
            None => match v {
                Value::Array(items) => items.iter().any(|x| walk(x, params)),
                Value::Object(m) => m.values().any(|x| walk(x, params)),
                _ => false,
            },
        }
    }
    properties.values().any(|v| walk(v, params))
}
