//! `cdkd deploy --dry-run`: the plan of one stack, computed exactly as a deploy computes it
//! (the same state load, parameter binding, conditions, pruning and change rules), with no
//! lock taken, nothing written and no AWS call that changes anything.
//!
//! Outside values resolve as the diff resolves them (`prepare::prepare_for_preview`): through
//! a reader of the deploy's clients and state bucket with no exports index (the deploy's may
//! write the index through, which a dry run must not) that withholds secrets, so public
//! dynamic references compare as their values and secret-bearing ones as their expressions.

use std::sync::Arc;

use super::{plan, prepare, DeployEnv, DeployError, DeployOptions, StackTarget};
use crate::error::Error;
use crate::plan::ChangeSet;
use crate::resolve::{ExternalReader, ResolveContext};
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
    let reader = env.reader.as_ref().map(|r| {
        Arc::new(
            ExternalReader::new(env.clients.clone(), env.backend.clone(), None)
                .with_cfn_fallback(r.cfn_fallback())
                .withholding_secrets(),
        )
    });
    let mut prepared = match reader {
        Some(reader) => {
            prepare::prepare_for_preview(
                stack,
                target.template_file,
                target.stack_tags,
                ctx,
                &options.parameters,
                &options.secret_parameters,
                Some(reader),
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
        super::unrecorded::complete_for_deploy(env, options, stack, region, template, state).await;
    prepared
        .resolution
        .redactor
        .seed_attributes(&completed.state);
    let plan = plan::plan_with(
        &prepared,
        &completed.state,
        &env.registry,
        options.force_stateful_recreation,
        &options.recreate,
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
