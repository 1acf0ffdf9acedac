//! A stack's deploy up to its plan, with nothing sent to AWS yet (`deploy_locked` calls it
//! once, or twice for a stack started before its producers finished: see producers.rs):
//! preparation (parameters, conditions, cross-stack reads), the attributes the records lack
//! read back, the plan and its NoEcho recheck; and whether that plan is the no-change answer.

use super::{
    nested, noecho, outputs, plan, prepare, unrecorded, DeployEnv, DeployError, DeployOptions,
    StackTarget,
};
use crate::engine::deploy::lookup::Snapshot;
use crate::resolve::ResolveContext;
use crate::state::StackState;

/// A stack's plan and what it was made from.
pub(super) struct Planning {
    pub prepared: prepare::Prepared,
    /// The record as loaded, completed with the attributes read back.
    pub state: StackState,
    pub plan: plan::Plan,
}

/// Prepares and plans `target` against `state` (the record as loaded under the lock).
pub(super) async fn plan_stack(
    env: &DeployEnv,
    target: &StackTarget<'_>,
    options: &DeployOptions,
    state: StackState,
) -> Result<Planning, DeployError> {
    let (stack, region) = (target.stack_name, target.region);
    let ctx = ResolveContext::new(stack, region, Some(env.account_id.clone()));
    let mut prepared = match &env.reader {
        Some(reader) => {
            prepare::prepare_prefetched(
                stack,
                target.template_file,
                target.stack_tags,
                ctx,
                &options.parameters,
                &options.secret_parameters,
                reader.clone(),
                &state,
                &env.registry,
            )
            .await?
        }
        None => prepare::prepare(
            stack,
            target.template_file,
            target.stack_tags,
            ctx,
            &options.parameters,
            &options.secret_parameters,
            env.external.clone(),
        )?,
    };
    // Attributes references read that the records lack are read back first (unrecorded.rs).
    if !options.no_aggressive_vpc_parallel {
        // Without the CDK's defensive route DependsOn edges (plan::defensive), as upstream.
        prepared.graph = crate::plan::DependencyGraph::from_template_relaxing(
            stack,
            &prepared.resolution.template,
            &prepared.scope,
            true,
        )
        .map_err(crate::Error::from)?;
    }
    let template = &prepared.resolution.template;
    let completed =
        unrecorded::complete_for_deploy(env, options, stack, region, template, state).await;
    prepared
        .resolution
        .redactor
        .seed_attributes(&completed.state);
    let mut plan = plan::plan_with(
        &prepared,
        &completed.state,
        &env.registry,
        options.force_stateful_recreation,
        &options.recreate,
    )?;
    unrecorded::keep(&mut plan, &completed);
    if target.termination_protection {
        nested::refuse_deletes(stack, &plan, &completed.state)?;
    }
    let state = completed.state;
    noecho::recheck(env, &prepared, &state, &mut plan).await;
    Ok(Planning {
        prepared,
        state,
        plan,
    })
}

/// The outputs to report when the plan changes nothing and the record already holds them
/// (and the reads it recorded); `None` when the deploy has to run. A journal left by a failed
/// attempt (`journal_left`) is settled by the full path even without changes.
pub(super) fn unchanged(
    env: &DeployEnv,
    options: &DeployOptions,
    planning: &Planning,
    journal_left: bool,
) -> Option<outputs::Outputs> {
    let Planning {
        prepared,
        state,
        plan,
    } = planning;
    if plan.has_resource_changes() || !plan.refreshed.is_empty() || journal_left {
        return None;
    }
    let snapshot = Snapshot::from_records(&env.registry, state.resources.iter());
    let mut outs = outputs::resolve_outputs(
        &prepared.resolution,
        &snapshot,
        &prepared.prune,
        &state.stack_name,
    );
    // No resource changes: an output that does not resolve keeps its stored value.
    outs.keep_failed(&prepared.resolution.template, state);
    let strict_refuses = options.strict_getatt && !outs.skipped.is_empty();
    let recorded = outs.recorded_in(state) && prepared.resolution.reads_recorded_in(state);
    (recorded && !strict_refuses).then_some(outs)
}
