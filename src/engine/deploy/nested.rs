//! Nested stacks (`AWS::CloudFormation::Stack`): the parent's row deploys its child.
//!
//! The child's template is the nested template file in the cloud assembly (the row's
//! `aws:asset:path` metadata, else the asset manifest entry whose object key the resolved
//! `TemplateURL` ends with); nothing is fetched from S3. The row's resolved `Parameters` are
//! the child's parameter values. The child deploys through the same engine under its own lock
//! and state key `{parent}~{logicalId}`, its record carrying `parentStack` / `parentLogicalId` /
//! `parentRegion`. The parent's row records the synthesized cdkd-local ARN
//! `arn:cdkd-local:{region}:{account}:nested-stack/{parent}/{logicalId}` as its physical id
//! (what `cdkd import` writes too) and each child output as the attribute `Outputs.<Name>`,
//! which is what the parent's `Fn::GetAtt [Child, Outputs.X]` reads.
//!
//! A child is deployed only when its parent row changed (its template URL, which carries the
//! child template's hash, or its parameters), so a redeploy with no change touches nothing.
//! Deleting the row destroys the child: its resources dependents-first (grandchildren
//! recursively), then its state record.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::execute::Run;
use super::plan::{new_record, with_template_fields, Planned};
use super::report::Action;
use super::{DeployEnv, DeployError, DeployOptions, StackReport, StackTarget};
use crate::engine::policy::DeleteRules;
use crate::plan::{DependencyGraph, RecordNode};
use crate::provider::{ProviderContext, Registry, Route};
use crate::resolve::ParameterOverride;
use crate::state::backend::S3Backend;
use crate::state::{ProvisionedBy, ResourceState, StackState};
use crate::template::Resource;

/// The nested-stack resource type.
pub const STACK_TYPE: &str = "AWS::CloudFormation::Stack";

/// Whether rows of this type are nested stacks the engine deploys itself.
pub fn is_nested(resource_type: &str) -> bool {
    resource_type == STACK_TYPE
}

/// The state-record name of a nested child: `{parent}~{logicalId}`.
pub fn child_stack_name(parent: &str, logical_id: &str) -> String {
    crate::state::keys::nested_stack_name(parent, logical_id)
}

/// The physical id of a nested-stack row: a cdkd-local ARN, not an AWS stack ARN.
pub fn row_physical_id(region: &str, account: &str, parent: &str, logical_id: &str) -> String {
    format!("arn:cdkd-local:{region}:{account}:nested-stack/{parent}/{logical_id}")
}

/// What a parent's walk needs to deploy its children: the deploy's shared environment and
/// options, and the directory of the cloud assembly the parent's template came from.
#[derive(Clone)]
pub(super) struct Scope {
    pub env: DeployEnv,
    pub options: DeployOptions,
    pub assembly_dir: PathBuf,
    /// The top-level stack's `terminationProtection`, which its nested stacks share (as in
    /// CloudFormation): a deploy that would delete one of them is refused.
    pub termination_protection: bool,
}

impl Scope {
    pub fn new(env: &DeployEnv, options: &DeployOptions, target: &StackTarget<'_>) -> Self {
        Scope {
            env: env.clone(),
            // A child deploys inside its parent's walk: it never waits on other stacks.
            options: DeployOptions {
                producers: None,
                announce: None,
                heading: None,
                ..options.clone()
            },
            assembly_dir: target
                .template_file
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            termination_protection: target.termination_protection,
        }
    }

    /// How this deploy deletes resources (`--skip-final-snapshot`; a deploy never removes
    /// deletion protection).
    pub fn delete_rules(&self) -> DeleteRules {
        DeleteRules {
            skip_final_snapshot: self.options.skip_final_snapshot,
            remove_protection: false,
        }
    }
}

/// A child record's link to its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ParentLink {
    pub stack: String,
    pub logical_id: String,
    pub region: String,
}

/// `state` with the parent link set (a top-level stack's record is returned as it is).
pub(super) fn link(mut state: StackState, parent: Option<&ParentLink>) -> StackState {
    if let Some(p) = parent {
        state.parent_stack = Some(p.stack.clone());
        state.parent_logical_id = Some(p.logical_id.clone());
        state.parent_region = Some(p.region.clone());
    }
    state
}

/// Creates or updates the row `id`: deploys the child, then records the row with the
/// child's outputs as `Outputs.<Name>` attributes.
pub(super) async fn provision(
    run: &Run,
    id: &str,
    res: &Resource,
    planned: &Planned,
    desired: Map<String, Value>,
    stored: &Map<String, Value>,
    old: Option<ResourceState>,
) -> Result<Action, String> {
    let scope = &run.nested;
    let template_file = child_template(&scope.assembly_dir, id, res, &desired)?;
    let child = child_stack_name(&run.stack, id);
    let parameters = child_parameters(&child, &desired)?;
    // The row's tags (the parent's stack tags among them) are the child's stack tags.
    let stack_tags = super::stack_tags::from_tag_list(desired.get("Tags"));
    let parent = ParentLink {
        stack: run.stack.clone(),
        logical_id: id.to_owned(),
        region: run.region.clone(),
    };
    let mut options = scope.options.clone();
    options.parameters = parameters;
    options.secret_parameters = secret_parameters(&desired, stored);
    // The parent's approval covers its children: no second prompt in the middle of the walk.
    options.approval = None;
    crate::ui::info(format!("  {id}: deploying nested stack {child}"));
    let report = deploy_child(
        &scope.env,
        &child,
        &run.region,
        &template_file,
        &stack_tags,
        &options,
        parent,
        scope.termination_protection,
    )
    .await
    .map_err(|e| format!("nested stack {child}: {e}"))?;
    if !report.is_success() {
        return Err(failure_summary(&child, &report));
    }

    let physical_id = row_physical_id(&run.region, &run.account_id, &run.stack, id);
    let mut attributes = output_attributes(&report.outputs);
    bridge_masked_outputs(run, id, &child, &mut attributes);
    let previous = old.clone();
    let (record, action) = match old {
        Some(old) if old.resource_type == res.type_ => {
            let mut rec = with_template_fields(old, res, &planned.dependencies);
            rec.physical_id = Some(physical_id);
            rec.properties = desired;
            rec.attributes = Some(attributes);
            rec.observed_properties = None;
            rec.provisioned_by = Some(ProvisionedBy::Sdk);
            (rec, Action::Updated)
        }
        other => {
            let mut rec = new_record(
                res,
                Route::Sdk,
                &planned.dependencies,
                physical_id,
                desired,
                attributes,
            );
            rec.provisioned_by = Some(ProvisionedBy::Sdk);
            let action = match other {
                Some(replaced) => {
                    // A row whose type changed to a nested stack: the old resource goes after
                    // the walk, like any replacement's.
                    run.replaced
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((id.to_owned(), replaced));
                    Action::Replaced
                }
                None => Action::Created,
            };
            (rec, action)
        }
    };
    match (action, previous.as_ref()) {
        // Journaled so a rollback of this run destroys the child it created.
        (Action::Created, _) => run.oplog.completed(id, &res.type_, &record, None, true),
        // Journaled with the child's pending segment, which the rollback replays to revert
        // the child (nested_pending).
        (Action::Updated, Some(previous)) => {
            run.oplog
                .completed_nested(id, &res.type_, &record, previous, report.pending_segment)
        }
        _ => {}
    }
    run.book.put(id, Some(record)).await;
    Ok(action)
}

/// A stack under `terminationProtection` (or a nested stack of one) keeps its nested stacks:
/// a plan that deletes or replaces a nested-stack row is refused before anything changes.
pub(super) fn refuse_deletes(
    stack: &str,
    plan: &super::plan::Plan,
    state: &StackState,
) -> Result<(), DeployError> {
    use crate::plan::ChangeKind;
    let doomed: Vec<String> = plan
        .changes
        .changes
        .iter()
        .filter(|c| matches!(c.kind, ChangeKind::Delete | ChangeKind::Replace))
        .filter(|c| {
            state
                .resources
                .get(&c.logical_id)
                .is_some_and(|r| is_nested(&r.resource_type))
        })
        .map(|c| child_stack_name(stack, &c.logical_id))
        .collect();
    if doomed.is_empty() {
        return Ok(());
    }
    Err(DeployError::Refused(format!(
        "STACK_TERMINATION_PROTECTION: stack {stack} has terminationProtection: true and this          deploy would delete its nested stack(s) {}; set terminationProtection: false on the          stack and deploy that first",
        doomed.join(", ")
    )))
}

/// Deletes the row `id` of the running deploy: destroys its child.
pub(super) async fn destroy_row(run: &Run, id: &str) -> (Route, Result<(), String>) {
    let ctx = run.provider_context();
    let result = destroy_child(
        &run.nested.env.backend,
        &run.registry,
        &ctx,
        run.nested.delete_rules(),
        &run.stack,
        id,
        &run.region,
    )
    .await;
    if result.is_ok() {
        let child = child_stack_name(&run.stack, id);
        let report = run
            .nested
            .env
            .exports
            .remove_stack(&run.region, &child)
            .await;
        let _ = report;
    }
    (Route::Sdk, result)
}

/// Deploys the child stack under its own lock.
fn deploy_child<'a>(
    env: &'a DeployEnv,
    child: &'a str,
    region: &'a str,
    template_file: &'a Path,
    stack_tags: &'a [(String, String)],
    options: &'a DeployOptions,
    parent: ParentLink,
    termination_protection: bool,
) -> Pin<Box<dyn Future<Output = Result<StackReport, DeployError>> + Send + 'a>> {
    Box::pin(async move {
        let lock = env
            .backend
            .lock(child, region, "deploy")
            .await
            .map_err(crate::Error::from)?;
        let target = StackTarget {
            stack_name: child,
            region,
            template_file,
            termination_protection,
            stack_tags,
        };
        let result = super::deploy_locked(env, &target, options, &lock, Some(&parent)).await;
        lock.release_and_warn().await;
        result
    })
}

/// Destroys the nested child `{parent}~{logical_id}`: under its lock, its resources in delete
/// order (nested grandchildren recursively; `DeletionPolicy: Retain` keeps the resource and
/// drops its record), each deletion saved at once, then its state record. A child with no
/// record is already gone. Shared with `cdkd destroy` of a parent.
pub(crate) fn destroy_child<'a>(
    backend: &'a Arc<S3Backend>,
    registry: &'a Registry,
    ctx: &'a ProviderContext<'a>,
    rules: DeleteRules,
    parent: &'a str,
    logical_id: &'a str,
    region: &'a str,
) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
    Box::pin(async move {
        let child = child_stack_name(parent, logical_id);
        let lock = backend
            .lock(&child, region, "destroy")
            .await
            .map_err(|e| format!("nested stack {child}: {e}"))?;
        let result = destroy_locked(backend, registry, ctx, rules, &child, region).await;
        lock.release_and_warn().await;
        result
    })
}

async fn destroy_locked(
    backend: &Arc<S3Backend>,
    registry: &Registry,
    ctx: &ProviderContext<'_>,
    rules: DeleteRules,
    child: &str,
    region: &str,
) -> Result<(), String> {
    let loaded = backend
        .load(child, region)
        .await
        .map_err(|e| format!("nested stack {child}: {e}"))?;
    let Some(loaded) = loaded else {
        return Ok(());
    };
    let state = loaded.parsed.state;
    let graph = DependencyGraph::from_records(
        child,
        state.resources.iter().map(|(id, r)| RecordNode {
            logical_id: id,
            resource_type: &r.resource_type,
            physical_id: r.physical_id.as_deref(),
            properties: Some(&r.properties),
            dependencies: r.dependencies.as_deref().unwrap_or(&[]),
        }),
    )
    .map_err(|e| format!("nested stack {child}: {e}"))?;
    let order: Vec<String> = graph
        .delete_order()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let book = super::book::StateBook::new(
        backend.clone(),
        child,
        region,
        state.clone(),
        Some(loaded.etag),
        loaded.parsed.from_legacy_key,
    );
    let mut failures = Vec::new();
    for id in order {
        let Some(rec) = state.resources.get(&id) else {
            continue;
        };
        // A resource whose dependent failed to delete stays, like the walk's skip.
        if failures.iter().any(|(f, _): &(String, String)| {
            graph.transitive_dependents_of(&id).contains(&f.as_str())
        }) {
            failures.push((
                id.clone(),
                "skipped: a resource that depends on it was not deleted".into(),
            ));
            continue;
        }
        let result = if rec.retains_on_delete() {
            Ok(())
        } else if is_nested(&rec.resource_type) {
            destroy_child(backend, registry, ctx, rules, child, &id, region).await
        } else {
            super::delete_recorded(registry, ctx, &rules.on_delete(), &id, rec)
                .await
                .1
        };
        match result {
            Ok(()) => book.put(&id, None).await,
            Err(e) => failures.push((id.clone(), e)),
        }
    }
    // Every deletion is written before the record is deleted (or kept, on a failure): a
    // write still in flight would race the delete and fail on the missing key.
    book.close().await;
    if !failures.is_empty() {
        let list: Vec<String> = failures
            .iter()
            .map(|(id, e)| format!("{id}: {e}"))
            .collect();
        return Err(format!(
            "nested stack {child}: {} resource(s) not deleted ({}); its state keeps them and \
             the next run retries",
            failures.len(),
            list.join("; ")
        ));
    }
    // The ledger goes before the record (state-schema: a ledger that cannot be deleted keeps
    // the record).
    crate::state::ledger::LedgerStore::new(
        backend.client().clone(),
        backend.bucket(),
        backend.keys().clone(),
    )
    .delete(child, region)
    .await
    .map_err(|e| format!("nested stack {child}: its resources are deleted but its create-token ledger could not be, so its state record was kept: {e}"))?;
    backend
        .delete_state(child, region)
        .await
        .map_err(|e| format!("nested stack {child}: its resources are deleted but its state record could not be: {e}"))?;
    // Its journal (pending segments of a parent's deploy included) must not outlive it, nor
    // the old resources of replacements those segments kept alive for a rollback.
    let journals = crate::state::journal::JournalStore::new(
        backend.client().clone(),
        backend.bucket(),
        backend.keys().clone(),
    );
    if let Ok(Some(journal)) = journals.load(child, region).await {
        let ctx = ProviderContext {
            stack_name: child,
            ..*ctx
        };
        super::nested_pending::delete_olds(registry, &ctx, rules, &journal, &[]).await;
    }
    if let Err(e) = journals.delete(child, region).await {
        crate::ui::warn(format!(
            "nested stack {child}: destroyed, but its rollback journal could not be deleted: {e}"
        ));
    }
    Ok(())
}

/// The child's template file in the cloud assembly.
pub(super) fn child_template(
    assembly_dir: &Path,
    id: &str,
    res: &Resource,
    desired: &Map<String, Value>,
) -> Result<PathBuf, String> {
    let from_metadata = res
        .metadata
        .as_ref()
        .and_then(|m| m.get("aws:asset:path"))
        .and_then(Value::as_str);
    if let Some(path) = from_metadata {
        let file = assembly_dir.join(path);
        return if file.is_file() {
            Ok(file)
        } else {
            Err(format!(
                "the nested stack's template {} (its aws:asset:path metadata) is not in the \
                 cloud assembly; synthesize the app again",
                file.display()
            ))
        };
    }
    let url = desired.get("TemplateURL").and_then(Value::as_str);
    if let Some(file) = url.and_then(|u| template_from_asset_manifests(assembly_dir, u)) {
        return Ok(file);
    }
    Err(format!(
        "{id}: cdkd deploys a nested stack from its template in the cloud assembly, and this \
         row has no aws:asset:path metadata and its TemplateURL ({}) names no file asset of \
         the assembly",
        url.unwrap_or("absent")
    ))
}

/// The source file of the assembly's file asset whose object key `url` ends with.
fn template_from_asset_manifests(assembly_dir: &Path, url: &str) -> Option<PathBuf> {
    let key = url.rsplit('/').next()?;
    let entries = std::fs::read_dir(assembly_dir).ok()?;
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.to_string_lossy().ends_with(".assets.json") {
            continue;
        }
        let Ok(manifest) = crate::assembly::assets::AssetManifest::load(&path) else {
            continue;
        };
        let Ok(assets) = manifest.file_assets(&path) else {
            continue;
        };
        for asset in assets {
            if asset.destinations.iter().any(|d| d.object_key == key) && asset.source_path.is_file()
            {
                return Some(asset.source_path);
            }
        }
    }
    None
}

/// The row's resolved `Parameters` as the child's parameter values (lists joined with
/// commas, as CloudFormation passes them).
pub(super) fn child_parameters(
    child: &str,
    desired: &Map<String, Value>,
) -> Result<Vec<ParameterOverride>, String> {
    let Some(params) = desired.get("Parameters") else {
        return Ok(Vec::new());
    };
    let Some(params) = params.as_object() else {
        return Err("Parameters must be an object of parameter names to values".into());
    };
    params
        .iter()
        .map(|(key, value)| {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Array(items) => items
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(","),
                Value::Null | Value::Object(_) => {
                    return Err(format!(
                        "Parameters.{key}: a nested stack parameter must be a string, number or \
                         list"
                    ))
                }
            };
            Ok(ParameterOverride {
                stack: Some(child.to_owned()),
                key: key.clone(),
                value: text,
            })
        })
        .collect()
}

/// The row's parameters whose stored form differs from what is sent: a secret the child must
/// keep out of its record too. A stored value holding `***` came from a NoEcho source (a
/// NoEcho parameter, an attribute declared NoEcho); any other is the `{{resolve:...}}`
/// expression of a secret reference, which the child stores in the value's place.
pub(super) fn secret_parameters(
    sent: &Map<String, Value>,
    stored: &Map<String, Value>,
) -> Vec<(String, Option<String>)> {
    let (Some(Value::Object(sent)), Some(Value::Object(stored))) =
        (sent.get("Parameters"), stored.get("Parameters"))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, value) in sent {
        let Some(kept) = stored.get(key) else {
            continue;
        };
        if kept == value {
            continue;
        }
        let expression = match kept {
            Value::String(s) if !crate::resolve::external::holds_mask(kept) => Some(s.clone()),
            _ => None,
        };
        out.push((key.clone(), expression));
    }
    out.sort();
    out
}

/// The row's `Outputs.<Name>` attributes as the rest of this run reads them: an output the
/// child stores masked (a NoEcho value) is bridged from the plaintext the child's deploy kept
/// in memory, and declared NoEcho on the row, so the parent stores `***` for it too and a later
/// run that would have to send it refuses.
fn bridge_masked_outputs(run: &Run, id: &str, child: &str, attributes: &mut Map<String, Value>) {
    let reader = run.nested.env.reader.as_ref();
    let mut names = Vec::new();
    let mut plaintexts = Vec::new();
    for (key, value) in attributes.iter_mut() {
        if !crate::resolve::external::holds_mask(value) {
            continue;
        }
        names.push(key.clone());
        let output = key.strip_prefix("Outputs.").unwrap_or(key);
        let plain = reader.and_then(|r| r.run_output(child, &run.region, output));
        if let Some(plain) = plain.filter(|p| !crate::resolve::external::holds_mask(p)) {
            plaintexts.push(plain.clone());
            *value = plain;
        }
    }
    run.resolution
        .redactor
        .declare_no_echo(id, names, &plaintexts);
}

/// `Outputs.<Name>` attributes from the child's outputs.
fn output_attributes(outputs: &Map<String, Value>) -> Map<String, Value> {
    outputs
        .iter()
        .map(|(k, v)| (format!("Outputs.{k}"), v.clone()))
        .collect()
}

fn failure_summary(child: &str, report: &StackReport) -> String {
    let mut parts: Vec<String> = report
        .failures
        .iter()
        .map(|(id, e)| format!("{id}: {e}"))
        .collect();
    if !report.skipped.is_empty() {
        parts.push(format!("skipped: {}", report.skipped.join(", ")));
    }
    if !report.cancelled.is_empty() {
        parts.push(format!("interrupted: {}", report.cancelled.join(", ")));
    }
    format!(
        "nested stack {child} did not deploy cleanly ({}); its state keeps what was done and \
         the next deploy retries it",
        parts.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_and_ids() {
        assert_eq!(child_stack_name("Parent", "Child"), "Parent~Child");
        assert_eq!(
            row_physical_id("us-east-1", "123456789012", "Parent", "Child"),
            "arn:cdkd-local:us-east-1:123456789012:nested-stack/Parent/Child"
        );
    }

    #[test]
    fn parameters_stored_differently_from_what_is_sent_are_secret() {
        let sent = json!({"Parameters": {"A": "plain", "P": "pw", "S": "x-s3cr3t", "L": ["a"]}});
        let stored = json!({"Parameters": {
            "A": "plain", "P": "***", "S": "x-{{resolve:ssm-secure:/s}}", "L": ["***"]
        }});
        let got = secret_parameters(sent.as_object().unwrap(), stored.as_object().unwrap());
        assert_eq!(
            got,
            vec![
                ("L".to_owned(), None),
                ("P".to_owned(), None),
                (
                    "S".to_owned(),
                    Some("x-{{resolve:ssm-secure:/s}}".to_owned())
                ),
            ]
        );
    }

    #[test]
    fn parameters_become_child_overrides() {
        let desired =
            json!({"TemplateURL": "u", "Parameters": {"A": "x", "N": 3, "L": ["a", "b"]}});
        let got = child_parameters("P~C", desired.as_object().unwrap()).unwrap();
        let pairs: Vec<(&str, &str)> = got
            .iter()
            .map(|p| (p.key.as_str(), p.value.as_str()))
            .collect();
        assert_eq!(pairs, vec![("A", "x"), ("N", "3"), ("L", "a,b")]);
        assert!(got.iter().all(|p| p.stack.as_deref() == Some("P~C")));
        let bad = json!({"Parameters": {"A": {"x": 1}}});
        assert!(child_parameters("P~C", bad.as_object().unwrap()).is_err());
    }

    #[test]
    fn outputs_become_attributes() {
        let outs = json!({"Arn": "arn:x", "List": ["a"]});
        let attrs = output_attributes(outs.as_object().unwrap());
        assert_eq!(attrs["Outputs.Arn"], json!("arn:x"));
        assert_eq!(attrs["Outputs.List"], json!(["a"]));
    }

    #[test]
    fn the_fixture_child_template_is_found_both_ways() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/apps/nested/cdk.out");
        let with_meta = Resource {
            type_: STACK_TYPE.into(),
            metadata: Some(
                json!({"aws:asset:path": "ParentStackChild31ECC004.nested.template.json"}),
            ),
            ..Resource::default()
        };
        let found = child_template(&dir, "C", &with_meta, &Map::new()).unwrap();
        assert!(found.ends_with("ParentStackChild31ECC004.nested.template.json"));
        let bare = Resource {
            type_: STACK_TYPE.into(),
            ..Resource::default()
        };
        let desired = json!({"TemplateURL": "https://s3.us-east-1.amazonaws.com/b/41bdeb5ceecaeb5a694712f72ba80dee989bac0dab174583714f90caaea02dc6.json"});
        let found = child_template(&dir, "C", &bare, desired.as_object().unwrap()).unwrap();
        assert!(found.ends_with("ParentStackChild31ECC004.nested.template.json"));
        let missing = json!({"TemplateURL": "https://x/none.json"});
        assert!(child_template(&dir, "C", &bare, missing.as_object().unwrap()).is_err());
    }
}
