//! `AWS::Lambda::Version`: a published, immutable snapshot of a function.
//!
//! Physical id and `Ref`: the version ARN (`arn:...:function:name:3`). `Fn::GetAtt`:
//! `FunctionArn` (the same ARN) and `Version` (`3`). A version cannot change: every property
//! is create-only, so a change replaces it (a new version is published, the old one deleted).
//! Deleting removes that one version (DeleteFunction with the qualified ARN).

use async_trait::async_trait;
use aws_sdk_lambda::types::UpdateRuntimeOn;
use serde_json::{json, Map, Value};

use super::function::{status_of, wait_settled};
use super::{
    client, is_not_found, is_update_in_progress, nonempty, put, send_with_retry,
    split_function_ref, unqualified, Obj, API, CONFLICT_BUDGET,
};
use crate::provider::props::changed_properties;
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const VERSION: &str = "AWS::Lambda::Version";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const VERSION_PROPERTIES: &[&str] = &[
    "CodeSha256",
    "Description",
    "FunctionName",
    "ProvisionedConcurrencyConfig",
    "RuntimePolicy",
];

/// The SDK provider for Lambda versions.
pub struct VersionProvider;

fn attributes(arn: &str, version: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("FunctionArn".into(), json!(arn));
    m.insert("Version".into(), json!(version));
    m
}

/// The version number at the end of a version ARN.
fn version_of(arn: &str) -> String {
    split_function_ref(arn).1.unwrap_or_default()
}

#[async_trait]
impl Provider for VersionProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[VERSION]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(VERSION_PROPERTIES.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let root = Obj::root(req);
        let function = root.required_str("FunctionName")?;
        let client = client(ctx);
        // PublishVersion waits for no one: a function still applying a change refuses it.
        let b = client
            .publish_version()
            .function_name(&function)
            .set_code_sha256(root.str("CodeSha256")?)
            .set_description(root.str("Description")?);
        let out = send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress)
            .map_err(|e| API.err(req, "PublishVersion", &function, &e))?;
        let arn = out.function_arn().unwrap_or_default().to_owned();
        let version = out
            .version()
            .map(str::to_owned)
            .unwrap_or_else(|| version_of(&arn));
        let name = unqualified(&arn);

        let finish = async {
            if let Some(pc) = root.object("ProvisionedConcurrencyConfig")? {
                let n = pc.i32("ProvisionedConcurrentExecutions")?.ok_or_else(|| {
                    ProviderError::missing(
                        req,
                        "ProvisionedConcurrencyConfig.ProvisionedConcurrentExecutions",
                    )
                })?;
                client
                    .put_provisioned_concurrency_config()
                    .function_name(&name)
                    .qualifier(&version)
                    .provisioned_concurrent_executions(n)
                    .send()
                    .await
                    .map_err(|e| API.err(req, "PutProvisionedConcurrencyConfig", &arn, &e))?;
            }
            if let Some(policy) = root.object("RuntimePolicy")? {
                let on = policy.required_str("UpdateRuntimeOn")?;
                client
                    .put_runtime_management_config()
                    .function_name(&name)
                    .qualifier(&version)
                    .update_runtime_on(UpdateRuntimeOn::from(on.as_str()))
                    .set_runtime_version_arn(policy.str("RuntimeVersionArn")?)
                    .send()
                    .await
                    .map_err(|e| API.err(req, "PutRuntimeManagementConfig", &arn, &e))?;
            }
            if !ctx.no_wait {
                wait_settled(&client, req, &name, Some(&version), status_of!(out)).await?;
            }
            Ok::<(), ProviderError>(())
        };
        if let Err(e) = finish.await {
            let _ = client.delete_function().function_name(&arn).send().await;
            return Err(e);
        }
        Ok(Provisioned {
            physical_id: arn.clone(),
            attributes: attributes(&arn, &version),
        })
    }

    async fn update(
        &self,
        _ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        let changes = changed_properties(previous, req.properties);
        if !changes.is_empty() {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: format!(
                    "{} cannot change in place (a published version is immutable)",
                    changes.join(", ")
                ),
            });
        }
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: attributes(physical_id, &version_of(physical_id)),
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        if split_function_ref(physical_id).1.is_none() {
            // Never let a malformed id delete the whole function.
            return Err(ProviderError::failed(
                req,
                format!("{physical_id} is not a version ARN"),
            ));
        }
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
        let version = version_of(physical_id);
        let out = match client(ctx)
            .get_function_configuration()
            .function_name(unqualified(physical_id))
            .qualifier(&version)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(API.err(req, "GetFunctionConfiguration", physical_id, &e)),
        };
        let mut props = Map::new();
        let function = Obj::root(req)
            .str("FunctionName")?
            .unwrap_or_else(|| unqualified(physical_id));
        props.insert("FunctionName".into(), json!(function));
        put(
            &mut props,
            "Description",
            nonempty(out.description()).map(Value::String),
        );
        put(
            &mut props,
            "CodeSha256",
            nonempty(out.code_sha256()).map(Value::String),
        );
        props.insert("Version".into(), json!(out.version().unwrap_or(&version)));
        props.insert("FunctionArn".into(), json!(physical_id));
        Ok(Some(props))
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        match self.read(ctx, req, physical_id).await? {
            Some(props) => {
                let version = props
                    .get("Version")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| version_of(physical_id));
                Ok(Provisioned {
                    physical_id: physical_id.to_owned(),
                    attributes: attributes(physical_id, &version),
                })
            }
            None => Err(ProviderError::failed(
                req,
                format!("version {physical_id} does not exist"),
            )),
        }
    }
}
