//! `cdkd state ...`: inspect and maintain state records without an app.

use serde_json::{json, Value};

use super::Session;
use crate::cli::{
    StateCommand, StateInfoArgs, StateListArgs, StateResourcesArgs, StateShowArgs, StateStackArgs,
};
use crate::error::{Error, ExitStatus, Result};
use crate::state::backend::{LoadedState, S3Backend};
use crate::state::StackRef;
use crate::ui;

pub async fn run(session: &Session, command: &StateCommand) -> Result<ExitStatus> {
    match command {
        StateCommand::Info(args) => info(session, args).await,
        StateCommand::List(args) => list(session, args).await,
        StateCommand::Resources(args) => resources(session, args).await,
        StateCommand::Show(args) => show(session, args).await,
        StateCommand::Orphan(args) => super::orphan_state::run(session, args).await,
        StateCommand::Destroy(args) => super::destroy::run_state(session, args).await,
        StateCommand::RefreshObserved(args) => super::drift::refresh_observed(session, args).await,
        StateCommand::Migrate(args) => super::state_migrate::run(session, args).await,
    }
}

async fn info(session: &Session, args: &StateInfoArgs) -> Result<ExitStatus> {
    let bucket = session.state_bucket().await?;
    let backend = session.state_backend().await?;
    let records = backend.list_records().await?;
    let asset_regions = opted_in_regions(&backend).await?;
    if args.json {
        ui::output(
            serde_json::to_string_pretty(&json!({
                "bucket": bucket.name,
                "bucketRegion": bucket.region,
                "prefix": session.settings.state_prefix,
                "records": records.len(),
                "assetStorageRegions": asset_regions,
            }))
            .unwrap_or_default(),
        );
    } else {
        ui::output(format!("State bucket:  {}", bucket.name));
        ui::output(format!("Bucket region: {}", bucket.region));
        ui::output(format!("State prefix:  {}", session.settings.state_prefix));
        ui::output(format!("Records:       {}", records.len()));
        let regions = if asset_regions.is_empty() {
            "(none)".to_owned()
        } else {
            asset_regions.join(", ")
        };
        ui::output(format!("Asset storage: {regions}"));
    }
    Ok(ExitStatus::Success)
}

/// Regions whose asset-storage marker (`cdkd-bootstrap/{region}.json`) exists.
async fn opted_in_regions(backend: &S3Backend) -> Result<Vec<String>> {
    Ok(backend
        .list_keys("cdkd-bootstrap/")
        .await?
        .iter()
        .filter_map(|k| k.strip_prefix("cdkd-bootstrap/")?.strip_suffix(".json"))
        .map(str::to_owned)
        .collect())
}

async fn list(session: &Session, args: &StateListArgs) -> Result<ExitStatus> {
    let backend = session.state_backend().await?;
    let records = backend.list_records().await?;
    if args.long {
        super::state_views::list_long(&backend, &records, args.json).await?;
        return Ok(ExitStatus::Success);
    }
    if args.tree {
        super::state_views::list_tree(&backend, &records, args.json).await?;
        return Ok(ExitStatus::Success);
    }
    if args.json {
        let list: Vec<Value> = records
            .iter()
            .map(|r| json!({"stackName": r.stack_name, "region": r.region, "legacy": r.region.is_none()}))
            .collect();
        ui::output(serde_json::to_string_pretty(&list).unwrap_or_default());
        return Ok(ExitStatus::Success);
    }
    if records.is_empty() {
        ui::info(format!(
            "No state records under s3://{}/{}/",
            backend.bucket(),
            backend.keys().prefix()
        ));
    }
    let width = records
        .iter()
        .map(|r| r.stack_name.len())
        .max()
        .unwrap_or(0);
    for r in &records {
        let region = r
            .region
            .as_deref()
            .unwrap_or("(legacy record, no region in its key)");
        ui::output(format!("{:<width$}  {region}", r.stack_name));
    }
    Ok(ExitStatus::Success)
}

/// The region of `stack`'s record: `--stack-region`, else the only region it has a record in.
pub(super) async fn stack_region(
    session: &Session,
    backend: &S3Backend,
    stack: &str,
    flag: Option<&str>,
) -> Result<String> {
    if let Some(region) = flag {
        return Ok(region.to_owned());
    }
    let records: Vec<StackRef> = backend
        .list_records()
        .await?
        .into_iter()
        .filter(|r| r.stack_name == stack)
        .collect();
    let regions: Vec<&str> = records.iter().filter_map(|r| r.region.as_deref()).collect();
    match regions.as_slice() {
        [only] => Ok((*only).to_owned()),
        [] if !records.is_empty() => session
            .clients()
            .await
            .default_region()
            .ok_or_else(|| Error::Usage(format!("stack {stack} has a legacy record; pass --stack-region or --region"))),
        [] => Err(Error::Usage(format!(
            "no state record for stack {stack} in s3://{}/{}/; `cdkd state list` shows the stacks that have one",
            backend.bucket(),
            backend.keys().prefix()
        ))),
        several => Err(Error::Usage(format!(
            "stack {stack} has records in several regions ({}); pass --stack-region",
            several.join(", ")
        ))),
    }
}

/// Loads a record for display: damage is repaired in memory and reported as warnings.
async fn load_for_display(
    session: &Session,
    args: &StateStackArgs,
) -> Result<(S3Backend, String, LoadedState)> {
    let backend = session.state_backend().await?;
    let region = stack_region(session, &backend, &args.stack, args.stack_region.as_deref()).await?;
    let loaded = backend
        .load_for_reading(&args.stack, &region)
        .await?
        .ok_or_else(|| {
            Error::Usage(format!(
                "no state record for stack {} in {region}",
                args.stack
            ))
        })?;
    for warning in &loaded.parsed.warnings {
        ui::warn(warning);
    }
    for defect in &loaded.parsed.defects {
        ui::warn(format!("shown without the damaged part: {defect}"));
    }
    Ok((backend, region, loaded))
}

async fn resources(session: &Session, args: &StateResourcesArgs) -> Result<ExitStatus> {
    let (_, _, loaded) = load_for_display(session, &args.stack).await?;
    let state = &loaded.parsed.state;
    if args.long {
        for line in super::state_views::resources_long(state) {
            ui::output(line);
        }
        return Ok(ExitStatus::Success);
    }
    let args = &args.stack;
    if args.json {
        let list: Vec<Value> = state
            .resources
            .iter()
            .map(|(id, r)| {
                json!({
                    "logicalId": id,
                    "resourceType": r.resource_type,
                    "physicalId": r.physical_id,
                    "provisionedBy": r.provisioned_by.as_ref().map(|p| p.as_str().to_owned()),
                })
            })
            .collect();
        ui::output(serde_json::to_string_pretty(&list).unwrap_or_default());
        return Ok(ExitStatus::Success);
    }
    for line in resource_table(state) {
        ui::output(line);
    }
    Ok(ExitStatus::Success)
}

fn resource_table(state: &crate::state::StackState) -> Vec<String> {
    let id_w = state.resources.keys().map(String::len).max().unwrap_or(0);
    let type_w = state
        .resources
        .values()
        .map(|r| r.resource_type.len())
        .max()
        .unwrap_or(0);
    state
        .resources
        .iter()
        .map(|(id, r)| {
            let route = r
                .provisioned_by
                .as_ref()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default();
            format!(
                "{id:<id_w$}  {:<type_w$}  {}  {route}",
                r.resource_type,
                r.physical_id.as_deref().unwrap_or("-")
            )
            .trim_end()
            .to_owned()
        })
        .collect()
}

async fn show(session: &Session, show_args: &StateShowArgs) -> Result<ExitStatus> {
    let args = &show_args.stack;
    if show_args.show_nested {
        return show_nested(session, args).await;
    }
    if args.json {
        // The stored bytes, exactly: what a repair by hand starts from.
        let backend = session.state_backend().await?;
        let region =
            stack_region(session, &backend, &args.stack, args.stack_region.as_deref()).await?;
        let mut stored = backend
            .get_object(&backend.keys().state(&args.stack, &region))
            .await?;
        if stored.is_none() {
            stored = backend
                .get_object(&backend.keys().legacy_state(&args.stack))
                .await?;
        }
        let (bytes, _) = stored.ok_or_else(|| {
            Error::Usage(format!(
                "no state record for stack {} in {region}",
                args.stack
            ))
        })?;
        let text = String::from_utf8_lossy(&bytes);
        ui::output(text.trim_end());
        return Ok(ExitStatus::Success);
    }
    let (backend, region, loaded) = load_for_display(session, args).await?;
    show_text(
        &backend,
        &region,
        &loaded.key,
        &loaded.parsed.source_version,
        &loaded.parsed.state,
    );
    Ok(ExitStatus::Success)
}

/// `state show --show-nested`: the record, then each nested child's (recursively), each
/// block as `state show` prints one; with --json, one `{state, children}` tree.
async fn show_nested(session: &Session, args: &StateStackArgs) -> Result<ExitStatus> {
    let (backend, region, loaded) = load_for_display(session, args).await?;
    let state = loaded.parsed.state;
    if args.json {
        let tree = super::state_views::show_tree_json(&backend, state, &region).await;
        ui::output(serde_json::to_string_pretty(&tree).unwrap_or_default());
        return Ok(ExitStatus::Success);
    }
    show_text(
        &backend,
        &region,
        &loaded.key,
        &loaded.parsed.source_version,
        &state,
    );
    let mut pending = super::state_views::nested_children(&backend, &state, &region).await;
    while !pending.is_empty() {
        let (id, name, record) = pending.remove(0);
        ui::output("");
        match record {
            Some(child) => {
                let key = backend.keys().state(&name, &region);
                let version = child.version.to_string();
                show_text(&backend, &region, &key, &version, &child);
                let mut deeper =
                    super::state_views::nested_children(&backend, &child, &region).await;
                deeper.append(&mut pending);
                pending = deeper;
            }
            None => ui::output(format!(
                "Stack:         {name} (nested row {id}: no state record)"
            )),
        }
    }
    Ok(ExitStatus::Success)
}

fn show_text(
    backend: &S3Backend,
    region: &str,
    key: &str,
    source_version: &dyn std::fmt::Display,
    state: &crate::state::StackState,
) {
    ui::output(format!("Stack:         {}", state.stack_name));
    ui::output(format!("Region:        {region}"));
    ui::output(format!("State bucket:  {}", backend.bucket()));
    ui::output(format!("Object key:    {key}"));
    ui::output(format!(
        "Schema:        {source_version} (read as {})",
        state.version
    ));
    if let Some(parent) = &state.parent_stack {
        ui::output(format!("Parent stack:  {parent}"));
    }
    ui::output(format!("Resources ({}):", state.resources.len()));
    for line in resource_table(state) {
        ui::output(format!("  {line}"));
    }
    let outputs = state.outputs.as_ref().filter(|o| !o.is_empty());
    if let Some(outputs) = outputs {
        ui::output(format!("Outputs ({}):", outputs.len()));
        for (key, value) in outputs {
            let shown = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            ui::output(format!("  {key} = {shown}"));
        }
    }
    if let Some(imports) = state.imports.as_ref().filter(|i| !i.is_empty()) {
        ui::output(format!(
            "Imports ({}): {}",
            imports.len(),
            serde_json::to_string(imports).unwrap_or_default()
        ));
    }
}
