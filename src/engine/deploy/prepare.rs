//! One stack's template made ready to plan: parameters bound, conditions evaluated,
//! condition-false resources pruned, the dependency graph built.

use std::path::Path;
use std::sync::Arc;

use super::lookup::Resolution;
use super::DeployError;
use crate::plan::DependencyGraph;
use crate::provider::is_skipped_type;
use crate::resolve::{
    bind_parameters, prune, ExternalLookup, NoResources, ParameterOverride, PruneReport,
    ResolveContext, Resolver,
};
use crate::template::parse_template_file;
use crate::ui;

/// A stack ready to plan.
pub(super) struct Prepared {
    pub resolution: Arc<Resolution>,
    pub prune: PruneReport,
    /// The resources cdkd provisions, in template order (condition-false ones and
    /// non-resources such as `AWS::CDK::Metadata` left out).
    pub scope: Vec<String>,
    pub graph: DependencyGraph,
}

pub(super) fn prepare(
    stack: &str,
    template_file: &Path,
    ctx: ResolveContext,
    overrides: &[ParameterOverride],
    external: Arc<dyn ExternalLookup + Send + Sync>,
) -> Result<Prepared, DeployError> {
    let mut template = parse_template_file(template_file).map_err(crate::Error::from)?;
    let params = bind_parameters(&template, overrides, stack, external.as_ref())?;
    if template.parameters.values().any(|p| p.no_echo) {
        ui::warn(format!(
            "{stack}: this build does not mask NoEcho parameter values in state yet; \
             values that reach resource properties or outputs are stored as resolved"
        ));
    }
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
        }),
        prune: report,
        scope,
        graph,
    })
}
