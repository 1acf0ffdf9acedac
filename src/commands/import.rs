//! `cdkd import <stack>`: adopt existing AWS resources into the stack's cdkd state by
//! mapping (`--resource`, `--resource-mapping`, `--resource-mapping-inline`), or, without one
//! (or with `--auto`), every resource found: by the CloudFormation stack of the same name, else
//! by the name the template gives it. `--dry-run` reports and writes nothing;
//! `--record-resource-mapping FILE` writes the mapping used. The engine is
//! `engine::deploy::import`. With `--migrate-from-cloudformation [CFN_STACK]`, the mapping comes
//! from that CloudFormation stack (by default the one of the same name), which is then retired
//! (`import::migrate_stack`).
//! Both read the templates as a deploy rewrites them for cdkd-owned asset storage.

use std::sync::Arc;

use super::{require_complete, Session};
use crate::aws::{ClientOptions, Clients};
use crate::cli::ImportArgs;
use crate::engine::deploy::import::{
    cloudformation_ids, import_stack, migrate_stack, parse_mapping, ImportOptions, ImportReport,
    ImportTarget, Imported, Skip,
};
use crate::engine::deploy::{DeployEnv, DeployError};
use crate::error::{Error, ExitStatus, Result};
use crate::resolve::{ExternalReader, NoExternalLookup, ParameterOverride};
use crate::state::exports::ExportIndexStore;
use crate::ui;

pub async fn run(session: &Session, args: &ImportArgs) -> Result<ExitStatus> {
    let migrating = args.migrate_from_cloudformation.is_some();
    if migrating
        && (!args.resources.is_empty()
            || args.resource_mapping.is_some()
            || args.resource_mapping_inline.is_some())
    {
        return Err(Error::Usage(
            "--migrate-from-cloudformation reads the mapping from the CloudFormation stack; \
             drop --resource, --resource-mapping and --resource-mapping-inline"
                .into(),
        ));
    }
    let file = match &args.resource_mapping {
        Some(path) => Some((
            std::fs::read_to_string(path).map_err(|source| Error::Io {
                context: format!("--resource-mapping {}", path.display()),
                source,
            })?,
            path.display().to_string(),
        )),
        None => None,
    };
    let mapping = if migrating {
        Default::default()
    } else {
        parse_mapping(
            &args.resources,
            file.as_ref().map(|(t, n)| (t.as_str(), n.as_str())),
            args.resource_mapping_inline.as_deref(),
        )
        .map_err(|e| Error::Usage(e.to_string()))?
    };
    let mut parameters = Vec::new();
    for p in &args.parameters {
        let Some(parsed) = ParameterOverride::parse(p) else {
            return Err(Error::Usage(format!(
                "--parameters {p}: expected KEY=VALUE or STACK:KEY=VALUE"
            )));
        };
        parameters.push(parsed);
    }

    let assembly = session.assembly().await?;
    require_complete(&assembly)?;
    let stack = assembly
        .stacks
        .iter()
        .find(|s| {
            s.stack_name == args.stack
                || s.display_name == args.stack
                || s.artifact_id == args.stack
        })
        .ok_or_else(|| {
            Error::Usage(format!(
                "no stack named '{}' in the app (cdkd list shows the stacks)",
                args.stack
            ))
        })?;
    let settings = &session.settings;
    let clients = Arc::new(
        Clients::load(&ClientOptions {
            region: settings.region.clone(),
            profile: settings.profile.clone(),
            role_arn: settings.role_arn.clone(),
        })
        .await,
    );
    let account_id = clients.account_id().await?;
    if let Some(pinned) = stack.environment.account.as_deref() {
        if pinned != account_id {
            return Err(Error::Usage(format!(
                "{}: the stack targets account {pinned}, but the credentials are for account \
                 {account_id}; nothing was imported",
                stack.stack_name
            )));
        }
    }
    let region = stack
        .environment
        .region
        .clone()
        .or_else(|| clients.default_region())
        .ok_or_else(|| {
            Error::Usage(format!(
                "{}: no region: the stack does not pin one and none is configured \
                 (--region, AWS_REGION or the profile)",
                stack.stack_name
            ))
        })?;
    let backend = Arc::new(session.state_backend().await?);
    let exports = Arc::new(ExportIndexStore::new(
        backend.client().clone(),
        backend.bucket(),
        backend.keys().clone(),
    ));
    let reader = Arc::new(ExternalReader::new(
        clients.clone(),
        backend.clone(),
        Some(exports.clone()),
    ));
    // In a region opted into cdkd-owned asset storage, the templates as a deploy rewrites
    // them (nested children too), so what is recorded matches what the next deploy compares.
    let (redirected, _redirected_templates) = crate::assets::redirect_for_reading(
        &clients,
        &backend,
        &account_id,
        vec![stack.clone()],
        crate::assets::PublishOptions::default(),
    )
    .await?;
    let template_file = redirected
        .into_iter()
        .next()
        .map(|s| s.template_file)
        .unwrap_or_else(|| stack.template_file.clone());
    let registry = Arc::new(crate::provider::routing::registry_for(&backend));
    let env = DeployEnv {
        clients,
        backend,
        registry,
        exports,
        external: Arc::new(NoExternalLookup),
        reader: Some(reader),
        account_id,
    };
    let target = ImportTarget {
        stack_name: &stack.stack_name,
        region: &region,
        template_file: &template_file,
    };
    if let Some(cfn_stack) = args.migration_source(&stack.stack_name) {
        let record = args.record_resource_mapping.as_deref();
        return migrate(&env, &target, cfn_stack, &parameters, args.force, record).await;
    }
    // Upstream's modes: no mapping finds everything, a mapping imports only what it names
    // unless --auto asks for the rest too.
    let auto = mapping.is_empty() || args.auto;
    let found = if auto {
        cloudformation_ids(
            &env.clients.cloudformation(Some(&region)),
            &stack.stack_name,
        )
        .await
    } else {
        Default::default()
    };
    if !found.is_empty() {
        ui::info(format!(
            "{}: {} physical id{} from the CloudFormation stack of the same name (to take it \
             over and retire it, use --migrate-from-cloudformation)",
            stack.stack_name,
            found.len(),
            if found.len() == 1 { "" } else { "s" }
        ));
    }
    let options = ImportOptions {
        mapping,
        parameters,
        force: args.force,
        auto,
        found,
        dry_run: args.dry_run,
        ..ImportOptions::default()
    };
    let record = args.record_resource_mapping.as_deref();
    let report = import_stack(&env, &target, &options, |report| match record {
        Some(path) => write_mapping(path, report).map_err(|e| DeployError::Other(Box::new(e))),
        None => Ok(()),
    })
    .await
    .map_err(|e| match e {
        DeployError::Other(e) => *e,
        other => Error::Usage(other.to_string()),
    })?;
    warn_refused(&stack.stack_name, &report.imported);
    summarize(&stack.stack_name, &region, &report, args.dry_run)
}

/// Reports what was left out and how the import ended: a failed lookup or read makes it
/// partial (exit 2); nothing imported is a failure, except under `--dry-run`.
fn summarize(
    stack: &str,
    region: &str,
    report: &ImportReport,
    dry_run: bool,
) -> Result<ExitStatus> {
    let mut out_of_scope = 0;
    let mut failed = false;
    for s in &report.skipped {
        let (id, t) = (&s.logical_id, &s.resource_type);
        match &s.reason {
            Skip::OutOfScope => out_of_scope += 1,
            Skip::NotFound => ui::warn(format!(
                "{stack}: {id} ({t}): not found (neither a CloudFormation stack of the same name \
                 nor a name the template gives it led to an existing resource); pass --resource \
                 {id}=PHYSICAL_ID to adopt it"
            )),
            Skip::Unsupported(why) => ui::warn(format!("{stack}: {id} ({t}): not imported: {why}")),
            Skip::Failed(why) => {
                failed = true;
                ui::warn(format!("{stack}: {id} ({t}): not imported: {why}"))
            }
        }
    }
    if out_of_scope > 0 {
        ui::info(format!(
            "{stack}: {out_of_scope} resource{} not in the mapping left out (--auto looks for \
             them too)",
            if out_of_scope == 1 { "" } else { "s" }
        ));
    }
    let n = report.imported.len();
    let plural = if n == 1 { "" } else { "s" };
    if dry_run {
        ui::info(format!(
            "{stack} ({region}): {n} resource{plural} would be imported; --dry-run: nothing \
             was written"
        ));
        return Ok(ExitStatus::Success);
    }
    if n == 0 {
        return Err(Error::Usage(format!(
            "{stack} ({region}): nothing was imported and no state was written; name the \
             resources with --resource LogicalId=physicalId or --resource-mapping FILE"
        )));
    }
    ui::info(format!("{stack} ({region}): {n} resource{plural} imported"));
    Ok(if failed {
        ExitStatus::Partial
    } else {
        ExitStatus::Success
    })
}

/// `--record-resource-mapping`: the mapping used, as `--resource-mapping` reads it.
fn write_mapping(path: &std::path::Path, report: &ImportReport) -> Result<()> {
    let mapping = report.mapping();
    let mut text = serde_json::to_string_pretty(&mapping).map_err(|e| {
        Error::Usage(format!(
            "--record-resource-mapping: the mapping does not serialize: {e}"
        ))
    })?;
    text.push('\n');
    std::fs::write(path, text).map_err(|source| Error::Io {
        context: format!("--record-resource-mapping {}", path.display()),
        source,
    })?;
    ui::info(format!(
        "wrote the mapping used ({} resource{}) to {}",
        mapping.len(),
        if mapping.len() == 1 { "" } else { "s" },
        path.display()
    ));
    Ok(())
}

/// `--migrate-from-cloudformation`: the engine's migration, reported per stack.
async fn migrate(
    env: &DeployEnv,
    target: &ImportTarget<'_>,
    cfn_stack: &str,
    parameters: &[ParameterOverride],
    force: bool,
    record: Option<&std::path::Path>,
) -> Result<ExitStatus> {
    let report = migrate_stack(env, target, cfn_stack, parameters, force)
        .await
        .map_err(|e| Error::Usage(e.to_string()))?;
    for (stack, imported) in &report.stacks {
        warn_refused(stack, imported);
    }
    if let (Some(path), Some((_, root))) = (record, report.stacks.first()) {
        let used = ImportReport {
            imported: root.clone(),
            skipped: Vec::new(),
        };
        write_mapping(path, &used)?;
    }
    ui::info(format!(
        "{}: the CloudFormation stack {cfn_stack} is deleted; every resource was kept and \
         cdkd manages it now",
        target.stack_name
    ));
    Ok(ExitStatus::Success)
}

fn warn_refused(stack: &str, imported: &[Imported]) {
    for i in imported {
        if let Some(reason) = &i.baseline_refused {
            ui::warn(format!(
                "{stack}: {}: no observed baseline was recorded ({reason})",
                i.logical_id
            ));
        }
    }
}
