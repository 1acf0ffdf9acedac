//! `cdkd import <stack>`: adopt existing AWS resources into the stack's cdkd state by
//! mapping (`--resource`, `--resource-mapping`, `--resource-mapping-inline`). The engine is
//! `engine::deploy::import`. `--migrate-from-cloudformation` is not in this build yet.

use std::sync::Arc;

use super::{require_complete, Session};
use crate::aws::{ClientOptions, Clients};
use crate::cli::ImportArgs;
use crate::engine::deploy::import::{import_stack, parse_mapping, ImportOptions, ImportTarget};
use crate::engine::deploy::{DeployEnv, DeployError};
use crate::error::{Error, ExitStatus, Result};
use crate::resolve::{ExternalReader, NoExternalLookup, ParameterOverride};
use crate::state::exports::ExportIndexStore;
use crate::ui;

pub async fn run(session: &Session, args: &ImportArgs) -> Result<ExitStatus> {
    if args.migrate_from_cloudformation {
        return Err(Error::NotImplemented {
            command: "import --migrate-from-cloudformation",
        });
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
    let mapping = parse_mapping(
        &args.resources,
        file.as_ref().map(|(t, n)| (t.as_str(), n.as_str())),
        args.resource_mapping_inline.as_deref(),
    )
    .map_err(|e| Error::Usage(e.to_string()))?;
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
        template_file: &stack.template_file,
    };
    let options = ImportOptions {
        mapping,
        parameters,
        force: args.force,
    };
    let imported = import_stack(&env, &target, &options)
        .await
        .map_err(|e| match e {
            DeployError::Other(e) => *e,
            other => Error::Usage(other.to_string()),
        })?;
    for i in &imported {
        if let Some(reason) = &i.baseline_refused {
            ui::warn(format!(
                "{}: {}: no observed baseline was recorded ({reason})",
                stack.stack_name, i.logical_id
            ));
        }
    }
    ui::info(format!(
        "{} ({region}): {} resource{} imported",
        stack.stack_name,
        imported.len(),
        if imported.len() == 1 { "" } else { "s" }
    ));
    Ok(ExitStatus::Success)
}
