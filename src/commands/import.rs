//! `cdkd import <stack>`: adopt existing AWS resources into the stack's cdkd state by
//! mapping (`--resource`, `--resource-mapping`, `--resource-mapping-inline`). The engine is
//! `engine::deploy::import`. With `--migrate-from-cloudformation`, the mapping comes from the
//! CloudFormation stack of the same name, which is then retired (`import::migrate_stack`).
//! Both read the templates as a deploy rewrites them for cdkd-owned asset storage.

use std::sync::Arc;

use super::{require_complete, Session};
use crate::aws::{ClientOptions, Clients};
use crate::cli::ImportArgs;
use crate::engine::deploy::import::{
    import_stack, migrate_stack, parse_mapping, ImportOptions, ImportTarget, Imported,
};
use crate::engine::deploy::{DeployEnv, DeployError};
use crate::error::{Error, ExitStatus, Result};
use crate::resolve::{ExternalReader, NoExternalLookup, ParameterOverride};
use crate::state::exports::ExportIndexStore;
use crate::ui;

pub async fn run(session: &Session, args: &ImportArgs) -> Result<ExitStatus> {
    if args.migrate_from_cloudformation
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
    let mapping = if args.migrate_from_cloudformation {
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
    if args.migrate_from_cloudformation {
        return migrate(&env, &target, &parameters, args.force).await;
    }
    let options = ImportOptions {
        mapping,
        parameters,
        force: args.force,
        ..ImportOptions::default()
    };
    let imported = import_stack(&env, &target, &options)
        .await
        .map_err(|e| match e {
            DeployError::Other(e) => *e,
            other => Error::Usage(other.to_string()),
        })?;
    warn_refused(&stack.stack_name, &imported);
    ui::info(format!(
        "{} ({region}): {} resource{} imported",
        stack.stack_name,
        imported.len(),
        if imported.len() == 1 { "" } else { "s" }
    ));
    Ok(ExitStatus::Success)
}

/// `--migrate-from-cloudformation`: the engine's migration, reported per stack.
async fn migrate(
    env: &DeployEnv,
    target: &ImportTarget<'_>,
    parameters: &[ParameterOverride],
    force: bool,
) -> Result<ExitStatus> {
    let report = migrate_stack(env, target, parameters, force)
        .await
        .map_err(|e| Error::Usage(e.to_string()))?;
    for (stack, imported) in &report.stacks {
        warn_refused(stack, imported);
    }
    ui::info(format!(
        "{}: the CloudFormation stack is deleted; every resource was kept and cdkd manages \
         it now",
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
