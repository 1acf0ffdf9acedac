//! `cdkd deploy --dry-run`: the plan of one stack, computed exactly as a deploy computes it
//! (the same state load, parameter binding, conditions, pruning and change rules), with no
//! lock taken, nothing written and no AWS call that changes anything.
//!
//! Cross-stack reads go through the deploy's plain lookup, not the prefetching reader: that
//! reader may write the exports index through, which a dry run must not.

use super::{plan, prepare, DeployEnv, DeployError, DeployOptions, StackTarget};
use crate::error::Error;
use crate::plan::ChangeSet;
use crate::resolve::ResolveContext;
use crate::state::backend::BackendError;
use crate::state::StackState;
use crate::ui;

/// What a deploy of one stack would do.
#[derive(Debug, Clone)]
pub struct DryRun {
    pub stack_name: String,
    pub region: String,
    /// `1 to create, 2 to update` (see the deploy's plan summary).
    pub describe: String,
    pub changes: ChangeSet,
}

/// Plans `target` against its state without the lock.
pub async fn dry_run(
    env: &DeployEnv,
    target: &StackTarget<'_>,
    options: &DeployOptions,
) -> Result<DryRun, DeployError> {
    let (stack, region) = (target.stack_name, target.region);
    let loaded = env.backend.load(stack, region).await.map_err(|e| match e {
        BackendError::State(e) => DeployError::Refused(format!("{}: {e}", e.code())),
        other => Error::from(other).into(),
    })?;
    let state = match loaded {
        Some(l) => {
            for w in &l.parsed.warnings {
                ui::warn(w);
            }
            l.parsed.state
        }
        None => StackState::new(stack, region),
    };
    let ctx = ResolveContext::new(stack, region, Some(env.account_id.clone()));
    let prepared = prepare::prepare(
        stack,
        target.template_file,
        ctx,
        &options.parameters,
        &options.secret_parameters,
        env.external.clone(),
    )?;
    let template = &prepared.resolution.template;
    let completed =
        super::unrecorded::complete_for_deploy(env, options, stack, region, template, state).await;
    prepared
        .resolution
        .redactor
        .seed_attributes(&completed.state);
    let plan = plan::plan(
        &prepared,
        &completed.state,
        &env.registry,
        options.force_stateful_recreation,
    )?;
    if target.termination_protection {
        super::nested::refuse_deletes(stack, &plan, &completed.state)?;
    }
    let describe = if plan.has_resource_changes() {
        plan.describe()
    } else {
        "no resource changes".to_owned()
    };
    Ok(DryRun {
        stack_name: stack.to_owned(),
        region: region.to_owned(),
        describe,
        changes: plan.changes,
    })
}
