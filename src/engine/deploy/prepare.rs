//! One stack's template made ready to plan: parameters bound, conditions evaluated,
//! condition-false resources pruned, the dependency graph built.
//!
//! A deploy prepares through [`prepare_prefetched`]: everything the stack reads from outside
//! (SSM-typed parameters, `Fn::ImportValue`, `Fn::GetStackOutput`, dynamic references) is
//! fetched up front, concurrently, by the resolver's prefetch, since the resolver itself is
//! synchronous. The stack's NoEcho values are handed to the redactor here, before anything is
//! resolved, printed or stored.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::lookup::{Resolution, Snapshot};
use super::DeployError;
use crate::plan::DependencyGraph;
use crate::provider::{is_skipped_type, Registry};
use crate::redact::{Needles, RecordRedactor};
use crate::resolve::{
    bind_parameters, prune, ExternalLookup, ExternalReader, NoExternalLookup, NoResources,
    ParameterOverride, ParameterValue, PrefetchedLookup, PruneReport, ResolveContext, Resolver,
};
use crate::state::StackState;
use crate::template::{parse_template_file, Template};
use crate::ui;
use serde_json::Value;

/// A stack ready to plan.
pub(super) struct Prepared {
    pub resolution: Arc<Resolution>,
    pub prune: PruneReport,
    /// The resources cdkd provisions, in template order (condition-false ones and
    /// non-resources such as `AWS::CDK::Metadata` left out).
    pub scope: Vec<String>,
    pub graph: DependencyGraph,
}

/// Prepares a stack whose outside reads are answered by `external` alone (no dynamic
/// reference is substituted).
pub(super) fn prepare(
    stack: &str,
    template_file: &Path,
    stack_tags: &[(String, String)],
    ctx: ResolveContext,
    overrides: &[ParameterOverride],
    secret_parameters: &[(String, Option<String>)],
    external: Arc<dyn ExternalLookup + Send + Sync>,
) -> Result<Prepared, DeployError> {
    let template = parse_template_file(template_file).map_err(crate::Error::from)?;
    build(
        stack,
        template,
        stack_tags,
        ctx,
        overrides,
        secret_parameters,
        external,
        None,
    )
}

/// Prepares a stack for a deploy: fetches what it reads from outside first, through
/// `reader` (`state` supplies the physical ids and attributes references need meanwhile).
#[allow(clippy::too_many_arguments)] // the deploy's own inputs, passed through unchanged
pub(super) async fn prepare_prefetched(
    stack: &str,
    template_file: &Path,
    stack_tags: &[(String, String)],
    ctx: ResolveContext,
    overrides: &[ParameterOverride],
    secret_parameters: &[(String, Option<String>)],
    reader: Arc<ExternalReader>,
    state: &StackState,
    registry: &Registry,
) -> Result<Prepared, DeployError> {
    let template = parse_template_file(template_file).map_err(crate::Error::from)?;
    let lookup = Arc::new(PrefetchedLookup::new(reader, ctx.clone()));
    lookup.prefetch_parameters(&template, overrides).await;
    let prepared = build(
        stack,
        template,
        stack_tags,
        ctx,
        overrides,
        secret_parameters,
        lookup.clone(),
        Some(lookup.clone()),
    )?;
    let snapshot = Snapshot::from_records(registry, state.resources.iter());
    let r = &prepared.resolution;
    r.redactor.set_reads(lookup.clone());
    lookup
        .prefetch_template(&r.template, &r.params, &r.verdicts, &snapshot)
        .await;
    for w in lookup.warnings() {
        ui::warn(r.redactor.mask_text(&w));
    }
    Ok(prepared)
}

/// Prepares a stack for a read-only preview (`cdkd diff`, `deploy --dry-run`): the deploy's
/// own prefetching preparation when there is a reader, which must withhold secrets (checked:
/// a reader that would fetch one is not used), else the plain one with nothing read from
/// outside.
#[allow(clippy::too_many_arguments)] // the deploy's own inputs, passed through unchanged
pub(super) async fn prepare_for_preview(
    stack: &str,
    template_file: &Path,
    stack_tags: &[(String, String)],
    ctx: ResolveContext,
    overrides: &[ParameterOverride],
    secret_parameters: &[(String, Option<String>)],
    reader: Option<Arc<ExternalReader>>,
    state: &StackState,
    registry: &Registry,
) -> Result<Prepared, DeployError> {
    match reader.filter(|r| r.withholds_secrets()) {
        Some(reader) => {
            prepare_prefetched(
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
            .await
        }
        None => prepare(
            stack,
            template_file,
            stack_tags,
            ctx,
            overrides,
            secret_parameters,
            Arc::new(NoExternalLookup),
        ),
    }
}

#[allow(clippy::too_many_arguments)] // the deploy's own inputs, passed through unchanged
fn build(
    stack: &str,
    mut template: Template,
    stack_tags: &[(String, String)],
    ctx: ResolveContext,
    overrides: &[ParameterOverride],
    secret_parameters: &[(String, Option<String>)],
    external: Arc<dyn ExternalLookup + Send + Sync>,
    prefetched: Option<Arc<PrefetchedLookup>>,
) -> Result<Prepared, DeployError> {
    // Before anything reads the template: the plan, the diff and the record see the tags.
    super::stack_tags::apply(&mut template, stack_tags);
    let mut params = bind_parameters(&template, overrides, stack, external.as_ref())?;
    // A nested child's parameter its parent filled from a NoEcho source is a NoEcho
    // parameter whatever the child template declares (state-schema, "What else changes").
    let mut no_echo: HashSet<String> = template
        .parameters
        .iter()
        .filter(|(_, p)| p.no_echo)
        .map(|(name, _)| name.clone())
        .collect();
    let mut secret_expressions = Vec::new();
    let mut needles = Needles::default();
    for (name, expression) in secret_parameters {
        let Some(value) = params.get(name).cloned() else {
            continue;
        };
        match expression {
            None => {
                params.insert(name.clone(), value, true);
                no_echo.insert(name.clone());
            }
            Some(expression) => {
                if let ParameterValue::Resolved(Value::String(plain)) = &value {
                    needles.add_secret(plain, Some(expression.as_str()));
                    secret_expressions.push((name.clone(), expression.clone()));
                }
            }
        }
    }
    let redactor = Arc::new(RecordRedactor::default());
    for (_, value) in params.no_echo_values() {
        needles.add_no_echo(value);
    }
    redactor.add_needles(&needles);
    let verdicts = {
        let mut resolver = Resolver::new(&template, &ctx, &params, &NoResources, external.as_ref());
        let verdicts = resolver.evaluate_conditions()?;
        for w in resolver.take_warnings() {
            ui::warn(w.to_string());
        }
        verdicts
    };
    let report = prune(&mut template, &verdicts, stack);
    for w in &report.warnings {
        ui::warn(w.to_string());
    }
    for (id, res) in &template.resources {
        redactor.record_literals(id, &res.properties);
    }
    let scope: Vec<String> = template
        .resources
        .iter()
        .filter(|(_, r)| !is_skipped_type(&r.type_))
        .map(|(id, _)| id.clone())
        .collect();
    let graph =
        DependencyGraph::from_template(stack, &template, &scope).map_err(crate::Error::from)?;
    Ok(Prepared {
        resolution: Arc::new(Resolution {
            template: Arc::new(template),
            ctx,
            params,
            verdicts,
            external,
            prefetched,
            no_echo,
            secret_parameters: secret_expressions,
            redactor,
        }),
        prune: report,
        scope,
        graph,
    })
}
