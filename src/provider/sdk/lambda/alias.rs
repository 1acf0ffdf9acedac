//! `AWS::Lambda::Alias`.
//!
//! Physical id, `Ref` and `Fn::GetAtt AliasArn`: the alias ARN. `FunctionVersion`,
//! `Description` and `RoutingConfig` change in place (UpdateAlias), and so does
//! `ProvisionedConcurrencyConfig` (Put/DeleteProvisionedConcurrencyConfig); `Name` and
//! `FunctionName` replace the alias.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_lambda::types::AliasRoutingConfiguration;
use serde_json::{json, Map, Value};

use super::{
    client, is_not_found, is_update_in_progress, nonempty, put, replacing_changes, send_with_retry,
    split_function_ref, unqualified, Obj, API, CONFLICT_BUDGET,
};
use crate::provider::props::{changed, changed_properties};
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const ALIAS: &str = "AWS::Lambda::Alias";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const ALIAS_PROPERTIES: &[&str] = &[
    "Description",
    "FunctionName",
    "FunctionVersion",
    "Name",
    "ProvisionedConcurrencyConfig",
    "RoutingConfig",
];

/// The SDK provider for Lambda aliases.
pub struct AliasProvider;

fn attributes(arn: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("AliasArn".into(), json!(arn));
    m
}

/// `RoutingConfig.AdditionalVersionWeights` as the API's version → weight map.
fn routing(root: &Obj<'_>) -> Result<Option<AliasRoutingConfiguration>, ProviderError> {
    let Some(config) = root.object("RoutingConfig")? else {
        return Ok(None);
    };
    let mut weights = HashMap::new();
    for w in config.objects("AdditionalVersionWeights")? {
        let version = w.required_str("FunctionVersion")?;
        let weight = w.f64("FunctionWeight")?.ok_or_else(|| {
            ProviderError::missing(
                root.req,
                "RoutingConfig.AdditionalVersionWeights.FunctionWeight",
            )
        })?;
        weights.insert(version, weight);
    }
    Ok(Some(
        AliasRoutingConfiguration::builder()
            .set_additional_version_weights(Some(weights))
            .build(),
    ))
}

/// The function (unqualified ARN) and alias name of an alias ARN.
fn target(physical_id: &str) -> (String, String) {
    let (_, name) = split_function_ref(physical_id);
    (unqualified(physical_id), name.unwrap_or_default())
}

async fn set_provisioned_concurrency(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    function: &str,
    alias: &str,
    creating: bool,
) -> Result<(), ProviderError> {
    let client = client(ctx);
    match Obj::root(req).object("ProvisionedConcurrencyConfig")? {
        Some(pc) => {
            let n = pc.i32("ProvisionedConcurrentExecutions")?.ok_or_else(|| {
                ProviderError::missing(
                    req,
                    "ProvisionedConcurrencyConfig.ProvisionedConcurrentExecutions",
                )
            })?;
            let b = client
                .put_provisioned_concurrency_config()
                .function_name(function)
                .qualifier(alias)
                .provisioned_concurrent_executions(n);
            send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress)
                .map_err(|e| API.err(req, "PutProvisionedConcurrencyConfig", alias, &e))?;
        }
        None if !creating => {
            match client
                .delete_provisioned_concurrency_config()
                .function_name(function)
                .qualifier(alias)
                .send()
                .await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => {
                    return Err(API.err(req, "DeleteProvisionedConcurrencyConfig", alias, &e))
                }
            }
        }
        None => {}
    }
    Ok(())
}

#[async_trait]
impl Provider for AliasProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[ALIAS]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(ALIAS_PROPERTIES.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let root = Obj::root(req);
        let function = root.required_str("FunctionName")?;
        let name = root.required_str("Name")?;
        let client = client(ctx);
        let b = client
            .create_alias()
            .function_name(&function)
            .name(&name)
            .function_version(root.required_str("FunctionVersion")?)
            .set_description(root.str("Description")?)
            .set_routing_config(routing(&root)?);
        let out = send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress)
            .map_err(|e| API.err(req, "CreateAlias", &format!("{function}:{name}"), &e))?;
        let arn = out.alias_arn().unwrap_or_default().to_owned();
        if let Err(e) = set_provisioned_concurrency(ctx, req, &unqualified(&arn), &name, true).await
        {
            let _ = client
                .delete_alias()
                .function_name(&function)
                .name(&name)
                .send()
                .await;
            return Err(e);
        }
        Ok(Provisioned {
            physical_id: arn.clone(),
            attributes: attributes(&arn),
        })
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        let changes = changed_properties(previous, req.properties);
        let replacing = replacing_changes(ALIAS, &changes, &["Name", "FunctionName"]);
        if !replacing.is_empty() {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: format!("{} cannot change in place", replacing.join(", ")),
            });
        }
        let root = Obj::root(req);
        let (function, name) = target(physical_id);
        let alias_changes = ["FunctionVersion", "Description", "RoutingConfig"];
        if alias_changes
            .iter()
            .any(|p| changed(previous, req.properties, p))
        {
            // A routing config taken out of the template sends all traffic to FunctionVersion.
            let routing = routing(&root)?.or_else(|| {
                Some(
                    AliasRoutingConfiguration::builder()
                        .set_additional_version_weights(Some(HashMap::new()))
                        .build(),
                )
            });
            let client = client(ctx);
            let b = client
                .update_alias()
                .function_name(&function)
                .name(&name)
                .function_version(root.required_str("FunctionVersion")?)
                .description(root.str("Description")?.unwrap_or_default())
                .set_routing_config(routing);
            send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress)
                .map_err(|e| API.err(req, "UpdateAlias", physical_id, &e))?;
        }
        if changed(previous, req.properties, "ProvisionedConcurrencyConfig") {
            set_provisioned_concurrency(ctx, req, &function, &name, false).await?;
        }
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: attributes(physical_id),
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        let (function, name) = target(physical_id);
        if name.is_empty() {
            return Err(ProviderError::failed(
                req,
                format!("{physical_id} is not an alias ARN"),
            ));
        }
        let client = client(ctx);
        let b = client.delete_alias().function_name(&function).name(&name);
        match send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress) {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(API.err(req, "DeleteAlias", physical_id, &e)),
        }
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let (function, name) = target(physical_id);
        let out = match client(ctx)
            .get_alias()
            .function_name(&function)
            .name(&name)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(API.err(req, "GetAlias", physical_id, &e)),
        };
        let mut props = Map::new();
        let function_prop = Obj::root(req).str("FunctionName")?.unwrap_or(function);
        props.insert("FunctionName".into(), json!(function_prop));
        props.insert("Name".into(), json!(out.name().unwrap_or(&name)));
        put(
            &mut props,
            "FunctionVersion",
            out.function_version().map(|v| json!(v)),
        );
        put(
            &mut props,
            "Description",
            nonempty(out.description()).map(Value::String),
        );
        if let Some(weights) = out
            .routing_config()
            .and_then(|r| r.additional_version_weights())
            .filter(|w| !w.is_empty())
        {
            let mut list: Vec<(&String, &f64)> = weights.iter().collect();
            list.sort_by(|a, b| a.0.cmp(b.0));
            let items: Vec<Value> = list
                .into_iter()
                .map(|(v, w)| json!({"FunctionVersion": v, "FunctionWeight": w}))
                .collect();
            props.insert(
                "RoutingConfig".into(),
                json!({ "AdditionalVersionWeights": items }),
            );
        }
        props.insert(
            "AliasArn".into(),
            json!(out.alias_arn().unwrap_or(physical_id)),
        );
        Ok(Some(props))
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        match self.read(ctx, req, physical_id).await? {
            Some(_) => Ok(Provisioned {
                physical_id: physical_id.to_owned(),
                attributes: attributes(physical_id),
            }),
            None => Err(ProviderError::failed(
                req,
                format!("alias {physical_id} does not exist"),
            )),
        }
    }
}
