//! `AWS::Lambda::Function`.
//!
//! Physical id and `Ref`: the function name (generated `{stack}-{logicalId}-{RANDOM}` when the
//! template gives none). `Fn::GetAtt`: `Arn`, `SnapStartResponse` and its `ApplyOn` and
//! `OptimizationStatus`.
//!
//! Updates happen in place except for `FunctionName`, `PackageType` and `TenancyConfig`:
//! `Code` and `Architectures` through UpdateFunctionCode, the configuration through
//! UpdateFunctionConfiguration (only the properties that changed; a removed one goes back to
//! the service default), then concurrency, code signing, recursion, runtime management and
//! tags through their own calls. Lambda refuses a change while another is being applied, so
//! each step waits for `LastUpdateStatus` to leave `InProgress` before the next.
//!
//! A new execution role can take a few seconds to become assumable by Lambda; CreateFunction
//! and UpdateFunctionConfiguration retry that error with bounded backoff.

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_lambda::types::{
    Architecture, LastUpdateStatus, PackageType, RecursiveLoop, State, UpdateRuntimeOn,
};
use aws_sdk_lambda::Client;
use serde_json::{json, Map, Value};

use super::code::{inline_file_name, CodeSpec};
use super::config::{
    apply_config, architectures, read_config, snap_start_response, tenancy_config, Config,
    CONFIG_PROPERTIES, KNOWN_PROPERTIES,
};
use super::{
    client, is_conflict_or_role_propagation, is_not_found, is_role_propagation,
    is_update_in_progress, replacing_changes, send_with_retry, tag_changes, tag_map, tags_value,
    Backoff, Obj, API, CONFLICT_BUDGET, IAM_PROPAGATION_BUDGET,
};
use crate::provider::props::{changed, changed_properties};
use crate::provider::{
    naming, Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const FUNCTION: &str = "AWS::Lambda::Function";

/// How long a function may stay `Pending` or `InProgress` (VPC functions take minutes).
const READY_BUDGET: Duration = Duration::from_secs(900);

/// The SDK provider for Lambda functions.
pub struct FunctionProvider;

/// Where a function is in its lifecycle, from any response that carries a configuration.
pub(super) struct Status {
    pub state: Option<State>,
    pub state_reason: Option<String>,
    pub last_update: Option<LastUpdateStatus>,
    pub last_update_reason: Option<String>,
}

macro_rules! status_of {
    ($out:expr) => {{
        let o = &$out;
        $crate::provider::sdk::lambda::function::Status {
            state: o.state().cloned(),
            state_reason: o.state_reason().map(str::to_owned),
            last_update: o.last_update_status().cloned(),
            last_update_reason: o.last_update_status_reason().map(str::to_owned),
        }
    }};
}
pub(super) use status_of;

impl Status {
    /// `Ok(true)` when settled, `Ok(false)` while a change is applying, `Err` when it failed.
    fn settled(&self) -> Result<bool, String> {
        if self.state == Some(State::Failed) {
            return Err(format!(
                "the function entered state Failed: {}",
                self.state_reason.as_deref().unwrap_or("no reason given")
            ));
        }
        if self.last_update == Some(LastUpdateStatus::Failed) {
            return Err(format!(
                "the last update failed: {}",
                self.last_update_reason
                    .as_deref()
                    .unwrap_or("no reason given")
            ));
        }
        Ok(self.state != Some(State::Pending)
            && self.last_update != Some(LastUpdateStatus::InProgress))
    }
}

/// Waits until the function has applied its last change (`State` not `Pending`,
/// `LastUpdateStatus` not `InProgress`), starting from what the last response said.
pub(super) async fn wait_settled(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
    qualifier: Option<&str>,
    first: Status,
) -> Result<(), ProviderError> {
    let fail = |m: String| ProviderError::failed(req, m);
    if first.settled().map_err(fail)? {
        return Ok(());
    }
    let mut backoff = Backoff::new(READY_BUDGET);
    loop {
        if !backoff.wait().await {
            return Err(ProviderError::Timeout {
                logical_id: req.logical_id.to_owned(),
                resource_type: req.resource_type.to_owned(),
                seconds: READY_BUDGET.as_secs(),
                detail: format!("function {name} did not finish applying its last change"),
            });
        }
        let out = client
            .get_function_configuration()
            .function_name(name)
            .set_qualifier(qualifier.map(str::to_owned))
            .send()
            .await
            .map_err(|e| API.err(req, "GetFunctionConfiguration", name, &e))?;
        if status_of!(out).settled().map_err(fail)? {
            return Ok(());
        }
    }
}

/// The properties the provider does not know, refused rather than silently dropped.
fn check_known(req: &ResourceRequest<'_>) -> Result<(), ProviderError> {
    let unknown: Vec<&str> = req
        .properties
        .keys()
        .map(String::as_str)
        .filter(|k| !CONFIG_PROPERTIES.contains(k) && !KNOWN_PROPERTIES.contains(k))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(ProviderError::failed(
            req,
            format!(
                "cdkd's Lambda function provider does not support {}",
                unknown.join(", ")
            ),
        ))
    }
}

fn attributes(arn: &str, snap: (String, String)) -> Map<String, Value> {
    let (apply_on, status) = snap;
    let mut m = Map::new();
    m.insert("Arn".into(), json!(arn));
    m.insert(
        "SnapStartResponse".into(),
        json!({"ApplyOn": apply_on, "OptimizationStatus": status}),
    );
    m.insert("SnapStartResponse.ApplyOn".into(), json!(apply_on));
    m.insert("SnapStartResponse.OptimizationStatus".into(), json!(status));
    m
}

/// The calls besides Create/UpdateFunction*: concurrency, code signing, recursion, runtime
/// management. `names` are the properties to apply (all of them on create).
async fn apply_extras(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
    names: &[&str],
    creating: bool,
) -> Result<(), ProviderError> {
    let root = Obj::root(req);
    for &property in names {
        match property {
            "ReservedConcurrentExecutions" => match root.i32(property)? {
                Some(n) => {
                    let b = client
                        .put_function_concurrency()
                        .function_name(name)
                        .reserved_concurrent_executions(n);
                    send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress)
                        .map_err(|e| API.err(req, "PutFunctionConcurrency", name, &e))?;
                }
                None if !creating => {
                    let b = client.delete_function_concurrency().function_name(name);
                    send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress)
                        .map_err(|e| API.err(req, "DeleteFunctionConcurrency", name, &e))?;
                }
                None => {}
            },
            "CodeSigningConfigArn" if !creating => match root.str(property)? {
                Some(arn) => {
                    let b = client
                        .put_function_code_signing_config()
                        .function_name(name)
                        .code_signing_config_arn(arn);
                    send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress)
                        .map_err(|e| API.err(req, "PutFunctionCodeSigningConfig", name, &e))?;
                }
                None => {
                    let b = client
                        .delete_function_code_signing_config()
                        .function_name(name);
                    send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress)
                        .map_err(|e| API.err(req, "DeleteFunctionCodeSigningConfig", name, &e))?;
                }
            },
            "RecursiveLoop" => {
                let value = root.str(property)?;
                if value.is_none() && creating {
                    continue;
                }
                let mode = value.unwrap_or_else(|| "Terminate".to_owned());
                let b = client
                    .put_function_recursion_config()
                    .function_name(name)
                    .recursive_loop(RecursiveLoop::from(mode.as_str()));
                send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress)
                    .map_err(|e| API.err(req, "PutFunctionRecursionConfig", name, &e))?;
            }
            "RuntimeManagementConfig" => {
                let config = root.object(property)?;
                if config.is_none() && creating {
                    continue;
                }
                let (on, version) = match &config {
                    Some(c) => (
                        c.str("UpdateRuntimeOn")?
                            .unwrap_or_else(|| "Auto".to_owned()),
                        c.str("RuntimeVersionArn")?,
                    ),
                    None => ("Auto".to_owned(), None),
                };
                let b = client
                    .put_runtime_management_config()
                    .function_name(name)
                    .update_runtime_on(UpdateRuntimeOn::from(on.as_str()))
                    .set_runtime_version_arn(version);
                send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress)
                    .map_err(|e| API.err(req, "PutRuntimeManagementConfig", name, &e))?;
            }
            _ => {}
        }
    }
    Ok(())
}

const EXTRAS: &[&str] = &[
    "ReservedConcurrentExecutions",
    "CodeSigningConfigArn",
    "RecursiveLoop",
    "RuntimeManagementConfig",
];

impl FunctionProvider {
    async fn get_attributes(
        &self,
        client: &Client,
        req: &ResourceRequest<'_>,
        name: &str,
    ) -> Result<Option<(String, Map<String, Value>)>, ProviderError> {
        match client.get_function().function_name(name).send().await {
            Ok(out) => {
                let Some(c) = out.configuration() else {
                    return Ok(None);
                };
                let arn = c.function_arn().unwrap_or_default().to_owned();
                let attrs = attributes(&arn, snap_start_response(c));
                Ok(Some((arn, attrs)))
            }
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(API.err(req, "GetFunction", name, &e)),
        }
    }

    async fn create_inner(
        &self,
        ctx: &ProviderContext<'_>,
        client: &Client,
        req: &ResourceRequest<'_>,
        name: &str,
    ) -> Result<Provisioned, ProviderError> {
        let root = Obj::root(req);
        let config = Config::from_props(&root)?;
        let runtime = root.str("Runtime")?;
        let code = CodeSpec::from_props(&root, runtime.as_deref())?;
        let tags = tag_map(req)?;
        let b = client
            .create_function()
            .function_name(name)
            .code(code.function_code())
            .set_package_type(
                root.str("PackageType")?
                    .map(|p| PackageType::from(p.as_str())),
            )
            .set_architectures(architectures(&root)?)
            .set_code_signing_config_arn(root.str("CodeSigningConfigArn")?)
            .set_tenancy_config(tenancy_config(&root)?)
            .set_tags((!tags.is_empty()).then_some(tags));
        let b = apply_config!(b, config);
        let out = send_with_retry!(b, IAM_PROPAGATION_BUDGET, is_role_propagation)
            .map_err(|e| API.err(req, "CreateFunction", name, &e))?;
        let arn = out.function_arn().unwrap_or_default().to_owned();
        let snap = (
            out.snap_start()
                .and_then(|s| s.apply_on())
                .map_or("None", |a| a.as_str())
                .to_owned(),
            out.snap_start()
                .and_then(|s| s.optimization_status())
                .map_or("Off", |o| o.as_str())
                .to_owned(),
        );
        let finish = async {
            apply_extras(client, req, name, EXTRAS, true).await?;
            if !ctx.no_wait {
                wait_settled(client, req, name, None, status_of!(out)).await?;
            }
            Ok::<(), ProviderError>(())
        };
        if let Err(e) = finish.await {
            // Leave nothing half-made behind: the engine records no resource for a failed create.
            let _ = client.delete_function().function_name(name).send().await;
            return Err(e);
        }
        Ok(Provisioned {
            physical_id: name.to_owned(),
            attributes: attributes(&arn, snap),
        })
    }
}

#[async_trait]
impl Provider for FunctionProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[FUNCTION]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(
            CONFIG_PROPERTIES
                .iter()
                .chain(KNOWN_PROPERTIES)
                .copied()
                .collect(),
        )
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        check_known(req)?;
        let name = match Obj::root(req).str("FunctionName")? {
            Some(n) => n,
            None => naming::generate(ctx.stack_name, req.logical_id, naming::LAMBDA_FUNCTION),
        };
        let client = client(ctx);
        self.create_inner(ctx, &client, req, &name).await
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        let name = physical_id;
        let changes = changed_properties(previous, req.properties);
        check_known(req)?;
        let replacing = replacing_changes(FUNCTION, &changes, &[]);
        if !replacing.is_empty() {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: format!("{} cannot change in place", replacing.join(", ")),
            });
        }
        let client = client(ctx);
        let root = Obj::root(req);
        let has = |n: &str| changes.iter().any(|c| c == n);

        // A new runtime family renames inline source (index.js / index.py): re-upload it.
        let runtime = root.str("Runtime")?;
        let inline_renamed = has("Runtime")
            && root
                .object("Code")?
                .is_some_and(|c| c.get("ZipFile").is_some())
            && {
                let old = previous.get("Runtime").and_then(Value::as_str);
                inline_file_name(old) != inline_file_name(runtime.as_deref())
            };
        if has("Code") || has("Architectures") || inline_renamed {
            let code = CodeSpec::from_props(&root, runtime.as_deref())?;
            let arch = if has("Architectures") {
                Some(architectures(&root)?.unwrap_or_else(|| vec![Architecture::X8664]))
            } else {
                None
            };
            let b = code
                .apply(client.update_function_code().function_name(name))
                .set_architectures(arch);
            let out = send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress)
                .map_err(|e| API.err(req, "UpdateFunctionCode", name, &e))?;
            wait_settled(&client, req, name, None, status_of!(out)).await?;
        }

        let config_changes: Vec<String> = changes
            .iter()
            .filter(|c| CONFIG_PROPERTIES.contains(&c.as_str()))
            .cloned()
            .collect();
        if !config_changes.is_empty() {
            let config = Config::changes(&root, &config_changes, name)?;
            let b = apply_config!(
                client.update_function_configuration().function_name(name),
                config
            );
            let out = send_with_retry!(b, IAM_PROPAGATION_BUDGET, is_conflict_or_role_propagation)
                .map_err(|e| API.err(req, "UpdateFunctionConfiguration", name, &e))?;
            if !ctx.no_wait {
                wait_settled(&client, req, name, None, status_of!(out)).await?;
            }
        }

        let extras: Vec<&str> = EXTRAS.iter().copied().filter(|e| has(e)).collect();
        apply_extras(&client, req, name, &extras, false).await?;

        let Some((arn, attrs)) = self.get_attributes(&client, req, name).await? else {
            return Err(ProviderError::failed(
                req,
                format!("function {name} no longer exists"),
            ));
        };
        if changed(previous, req.properties, "Tags") {
            let current = client
                .list_tags()
                .resource(&arn)
                .send()
                .await
                .map_err(|e| API.err(req, "ListTags", &arn, &e))?
                .tags
                .unwrap_or_default();
            let (set, remove) = tag_changes(&current, &tag_map(req)?);
            if !remove.is_empty() {
                client
                    .untag_resource()
                    .resource(&arn)
                    .set_tag_keys(Some(remove))
                    .send()
                    .await
                    .map_err(|e| API.err(req, "UntagResource", &arn, &e))?;
            }
            if !set.is_empty() {
                client
                    .tag_resource()
                    .resource(&arn)
                    .set_tags(Some(set))
                    .send()
                    .await
                    .map_err(|e| API.err(req, "TagResource", &arn, &e))?;
            }
        }
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: name.to_owned(),
            attributes: attrs,
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        let client = client(ctx);
        let b = client.delete_function().function_name(physical_id);
        match send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress) {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(API.err(req, "DeleteFunction", physical_id, &e)),
        }
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let client = client(ctx);
        let out = match client
            .get_function()
            .function_name(physical_id)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(API.err(req, "GetFunction", physical_id, &e)),
        };
        let Some(config) = out.configuration() else {
            return Ok(None);
        };
        let mut props = read_config(config);
        if let Some(tags) = out.tags().and_then(tags_value) {
            props.insert("Tags".into(), tags);
        }
        if let Some(n) = out
            .concurrency()
            .and_then(|c| c.reserved_concurrent_executions())
        {
            props.insert("ReservedConcurrentExecutions".into(), json!(n));
        }
        Ok(Some(props))
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        let client = client(ctx);
        match self.get_attributes(&client, req, physical_id).await? {
            Some((_, attributes)) => Ok(Provisioned {
                physical_id: physical_id.to_owned(),
                attributes,
            }),
            None => Err(ProviderError::failed(
                req,
                format!("function {physical_id} does not exist"),
            )),
        }
    }
}
