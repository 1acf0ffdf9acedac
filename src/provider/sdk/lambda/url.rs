//! `AWS::Lambda::Url`: a function URL.
//!
//! Physical id and `Ref`: the `FunctionArn` Lambda reports for the URL (qualified when the URL
//! belongs to an alias). `Fn::GetAtt`: `FunctionArn`, `FunctionUrl`. `AuthType`, `Cors` and
//! `InvokeMode` change in place; `TargetFunctionArn` and `Qualifier` replace the URL.

use async_trait::async_trait;
use aws_sdk_lambda::types::{Cors, FunctionUrlAuthType, InvokeMode};
use serde_json::{json, Map, Value};

use super::{
    client, is_not_found, put, replacing_changes, split_function_ref, unqualified, Obj, API,
};
use crate::provider::props::changed_properties;
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const URL: &str = "AWS::Lambda::Url";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const URL_PROPERTIES: &[&str] = &[
    "AuthType",
    "Cors",
    "InvokeMode",
    "Qualifier",
    "TargetFunctionArn",
];

/// The SDK provider for Lambda function URLs.
pub struct UrlProvider;

fn attributes(function_arn: &str, url: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("FunctionArn".into(), json!(function_arn));
    m.insert("FunctionUrl".into(), json!(url));
    m
}

fn cors(root: &Obj<'_>) -> Result<Option<Cors>, ProviderError> {
    let Some(c) = root.object("Cors")? else {
        return Ok(None);
    };
    Ok(Some(
        Cors::builder()
            .set_allow_credentials(c.bool("AllowCredentials")?)
            .set_allow_headers(c.strings("AllowHeaders")?)
            .set_allow_methods(c.strings("AllowMethods")?)
            .set_allow_origins(c.strings("AllowOrigins")?)
            .set_expose_headers(c.strings("ExposeHeaders")?)
            .set_max_age(c.i32("MaxAge")?)
            .build(),
    ))
}

fn cors_value(c: &Cors) -> Value {
    let mut m = Map::new();
    put(
        &mut m,
        "AllowCredentials",
        c.allow_credentials().map(Value::from),
    );
    for (key, list) in [
        ("AllowHeaders", c.allow_headers()),
        ("AllowMethods", c.allow_methods()),
        ("AllowOrigins", c.allow_origins()),
        ("ExposeHeaders", c.expose_headers()),
    ] {
        if !list.is_empty() {
            m.insert(key.into(), json!(list));
        }
    }
    put(&mut m, "MaxAge", c.max_age().map(Value::from));
    Value::Object(m)
}

/// The function (unqualified) and qualifier a recorded URL belongs to.
fn target(
    req: &ResourceRequest<'_>,
    physical_id: &str,
) -> Result<(String, Option<String>), ProviderError> {
    let (_, qualifier) = split_function_ref(physical_id);
    let qualifier = match qualifier {
        Some(q) => Some(q),
        None => Obj::root(req).str("Qualifier")?,
    };
    Ok((unqualified(physical_id), qualifier))
}

#[async_trait]
impl Provider for UrlProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[URL]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(URL_PROPERTIES.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let root = Obj::root(req);
        let function = root.required_str("TargetFunctionArn")?;
        let out = client(ctx)
            .create_function_url_config()
            .function_name(&function)
            .set_qualifier(root.str("Qualifier")?)
            .auth_type(FunctionUrlAuthType::from(
                root.required_str("AuthType")?.as_str(),
            ))
            .set_cors(cors(&root)?)
            .set_invoke_mode(
                root.str("InvokeMode")?
                    .map(|m| InvokeMode::from(m.as_str())),
            )
            .send()
            .await
            .map_err(|e| API.err(req, "CreateFunctionUrlConfig", &function, &e))?;
        Ok(Provisioned {
            physical_id: out.function_arn().to_owned(),
            attributes: attributes(out.function_arn(), out.function_url()),
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
        let replacing = replacing_changes(URL, &changes, &["TargetFunctionArn", "Qualifier"]);
        if !replacing.is_empty() {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: format!("{} cannot change in place", replacing.join(", ")),
            });
        }
        let root = Obj::root(req);
        let (function, qualifier) = target(req, physical_id)?;
        let client = client(ctx);
        let url = if changes.is_empty() {
            client
                .get_function_url_config()
                .function_name(&function)
                .set_qualifier(qualifier)
                .send()
                .await
                .map_err(|e| API.err(req, "GetFunctionUrlConfig", physical_id, &e))?
                .function_url()
                .to_owned()
        } else {
            // A Cors block taken out of the template clears the configuration.
            let cors = cors(&root)?.or_else(|| Some(Cors::builder().build()));
            client
                .update_function_url_config()
                .function_name(&function)
                .set_qualifier(qualifier)
                .auth_type(FunctionUrlAuthType::from(
                    root.required_str("AuthType")?.as_str(),
                ))
                .set_cors(cors)
                .invoke_mode(InvokeMode::from(
                    root.str("InvokeMode")?.as_deref().unwrap_or("BUFFERED"),
                ))
                .send()
                .await
                .map_err(|e| API.err(req, "UpdateFunctionUrlConfig", physical_id, &e))?
                .function_url()
                .to_owned()
        };
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: attributes(physical_id, &url),
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        let (function, qualifier) = target(req, physical_id)?;
        match client(ctx)
            .delete_function_url_config()
            .function_name(&function)
            .set_qualifier(qualifier)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(API.err(req, "DeleteFunctionUrlConfig", physical_id, &e)),
        }
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let (function, qualifier) = target(req, physical_id)?;
        let out = match client(ctx)
            .get_function_url_config()
            .function_name(&function)
            .set_qualifier(qualifier.clone())
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(API.err(req, "GetFunctionUrlConfig", physical_id, &e)),
        };
        let mut props = Map::new();
        props.insert(
            "TargetFunctionArn".into(),
            json!(unqualified(out.function_arn())),
        );
        put(&mut props, "Qualifier", qualifier.map(Value::String));
        props.insert("AuthType".into(), json!(out.auth_type().as_str()));
        put(&mut props, "Cors", out.cors().map(cors_value));
        put(
            &mut props,
            "InvokeMode",
            out.invoke_mode().map(|m| json!(m.as_str())),
        );
        props.insert("FunctionArn".into(), json!(out.function_arn()));
        props.insert("FunctionUrl".into(), json!(out.function_url()));
        Ok(Some(props))
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        let (function, qualifier) = target(req, physical_id)?;
        match client(ctx)
            .get_function_url_config()
            .function_name(&function)
            .set_qualifier(qualifier)
            .send()
            .await
        {
            Ok(out) => Ok(Provisioned {
                physical_id: physical_id.to_owned(),
                attributes: attributes(out.function_arn(), out.function_url()),
            }),
            Err(e) if is_not_found(&e) => Err(ProviderError::failed(
                req,
                format!("function URL of {physical_id} does not exist"),
            )),
            Err(e) => Err(API.err(req, "GetFunctionUrlConfig", physical_id, &e)),
        }
    }
}
