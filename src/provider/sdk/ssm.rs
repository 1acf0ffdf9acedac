//! `AWS::SSM::Parameter` through the Systems Manager Parameter Store API.
//!
//! Physical id and `Ref`: the parameter name, generated as CloudFormation does
//! (`CFN-{logicalId}-{RANDOM}`) when the template gives none. `Fn::GetAtt`: `Type` and
//! `Value`. Only `String` and `StringList` parameters are created, as in CloudFormation.
//! `Name` replaces the parameter; `Value`, `Type`, `Description`, `AllowedPattern`, `Tier`,
//! `DataType` and `Policies` are rewritten in place with PutParameter (Overwrite), `Tags` with
//! AddTagsToResource / RemoveTagsFromResource (PutParameter refuses tags with Overwrite).

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_ssm::error::SdkError;
use aws_sdk_ssm::types::{
    ParameterStringFilter, ParameterTier, ParameterType, ResourceTypeForTagging, Tag,
};
use aws_sdk_ssm::Client;
use aws_smithy_runtime_api::http::Response as HttpResponse;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use serde_json::{json, Map, Value};

use super::scaffold::{self, tags};
use crate::aws::{classify, ErrorKind};
use crate::provider::props::{changed, changed_properties, Props};
use crate::provider::{
    naming, schema, Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest,
    UpdateOutcome,
};

const PARAMETER: &str = "AWS::SSM::Parameter";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const PARAMETER_PROPERTIES: &[&str] = &[
    "AllowedPattern",
    "DataType",
    "Description",
    "Name",
    "Policies",
    "Tags",
    "Tier",
    "Type",
    "Value",
];
/// The prefix CloudFormation gives the parameters it names.
const GENERATED_PREFIX: &str = "CFN";
/// Properties PutParameter (Overwrite) rewrites.
const OVERWRITTEN: &[&str] = &[
    "Value",
    "Type",
    "Description",
    "AllowedPattern",
    "Tier",
    "DataType",
    "Policies",
];
/// Parameter Store's request rate is low; throttled calls are retried this many times.
const THROTTLE_ATTEMPTS: u32 = 6;

pub struct ParameterProvider;

type Sdk<E> = SdkError<E, HttpResponse>;

/// Where ssm's errors come from.
const SSM: scaffold::Service = scaffold::Service("ssm");

fn client(ctx: &ProviderContext<'_>) -> Client {
    scaffold::regional(ctx, Client::new)
}

/// Runs `call` again, with backoff, while Parameter Store throttles it.
async fn retry_throttled<T, E, F, Fut>(mut call: F) -> Result<T, Sdk<E>>
where
    E: ProvideErrorMetadata,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Sdk<E>>>,
{
    let mut delay = Duration::from_millis(500);
    let mut attempt = 1;
    loop {
        match call().await {
            Err(e) if attempt < THROTTLE_ATTEMPTS && classify(&e) == ErrorKind::Throttled => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(8));
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// The desired parameter, read from the template's properties.
struct Desired {
    value: String,
    kind: ParameterType,
    description: Option<String>,
    allowed_pattern: Option<String>,
    tier: Option<String>,
    data_type: Option<String>,
    policies: Option<String>,
}

fn desired(req: &ResourceRequest<'_>) -> Result<Desired, ProviderError> {
    let props = Props::new(req);
    let kind = props.required_str("Type")?;
    let kind = match kind.as_str() {
        "String" | "StringList" => ParameterType::from(kind.as_str()),
        "SecureString" => {
            return Err(ProviderError::failed(
                req,
                "property Type: CloudFormation does not create SecureString parameters (use String or StringList)",
            ))
        }
        other => return Err(ProviderError::failed(req, format!("property Type must be String or StringList, not {other}"))),
    };
    // A StringList may arrive as a list; Parameter Store keeps it comma-separated.
    let value = match props.get("Value") {
        Some(Value::Array(_)) => props.strings("Value")?.join(","),
        _ => props.required_str("Value")?,
    };
    Ok(Desired {
        value,
        kind,
        description: props.str("Description")?,
        allowed_pattern: props.str("AllowedPattern")?,
        tier: props.str("Tier")?,
        data_type: props.str("DataType")?,
        policies: props.json_document("Policies")?,
    })
}

/// `Tags`: CloudFormation declares a `{key: value}` map; a `[{Key, Value}]` list is accepted too.
fn tags(req: &ResourceRequest<'_>) -> Result<BTreeMap<String, String>, ProviderError> {
    let props = Props::new(req);
    match props.get("Tags") {
        None => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(_) | Value::Bool(_) => Ok((k.clone(), v.to_string())),
                _ => Err(ProviderError::failed(
                    req,
                    "property Tags must map keys to strings",
                )),
            })
            .collect(),
        Some(_) => Ok(props.tags()?.into_iter().collect()),
    }
}

fn sdk_tags(
    req: &ResourceRequest<'_>,
    tags: &BTreeMap<String, String>,
) -> Result<Vec<Tag>, ProviderError> {
    tags.iter()
        .map(|(k, v)| {
            Tag::builder()
                .key(k)
                .value(v)
                .build()
                .map_err(|e| ProviderError::failed(req, format!("property Tags: {e}")))
        })
        .collect()
}

fn attributes(d: &Desired) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("Type".into(), json!(d.kind.as_str()));
    m.insert("Value".into(), json!(d.value));
    m
}

/// PutParameter with every desired field: a new parameter, or (`overwrite`) a new version.
async fn put(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
    d: &Desired,
    overwrite: bool,
    tags: Vec<Tag>,
) -> Result<(), ProviderError> {
    // On overwrite an absent description or pattern must be cleared, not kept.
    let clear = |v: &Option<String>| {
        if overwrite {
            Some(v.clone().unwrap_or_default())
        } else {
            v.clone()
        }
    };
    let call = client
        .put_parameter()
        .name(name)
        .value(&d.value)
        .r#type(d.kind.clone())
        .set_description(clear(&d.description))
        .set_allowed_pattern(clear(&d.allowed_pattern))
        .set_tier(d.tier.as_deref().map(ParameterTier::from))
        .set_data_type(d.data_type.clone())
        .set_policies(d.policies.clone())
        .overwrite(overwrite)
        .set_tags((!tags.is_empty()).then_some(tags));
    retry_throttled(|| call.clone().send())
        .await
        .map_err(|e| SSM.err(req, "PutParameter", name, &e))?;
    Ok(())
}

async fn list_tags(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<BTreeMap<String, String>, ProviderError> {
    let call = client
        .list_tags_for_resource()
        .resource_type(ResourceTypeForTagging::Parameter)
        .resource_id(name);
    let out = retry_throttled(|| call.clone().send())
        .await
        .map_err(|e| SSM.err(req, "ListTagsForResource", name, &e))?;
    Ok(out
        .tag_list()
        .iter()
        .filter(|t| !t.key().starts_with("aws:"))
        .map(|t| (t.key().to_owned(), t.value().to_owned()))
        .collect())
}

async fn update_tags(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> Result<(), ProviderError> {
    let tags::TagChanges {
        set,
        remove: removed,
    } = tags::changes(old, new);
    if !removed.is_empty() {
        let call = client
            .remove_tags_from_resource()
            .resource_type(ResourceTypeForTagging::Parameter)
            .resource_id(name)
            .set_tag_keys(Some(removed));
        retry_throttled(|| call.clone().send())
            .await
            .map_err(|e| SSM.err(req, "RemoveTagsFromResource", name, &e))?;
    }
    if !set.is_empty() {
        let call = client
            .add_tags_to_resource()
            .resource_type(ResourceTypeForTagging::Parameter)
            .resource_id(name)
            .set_tags(Some(sdk_tags(req, &set)?));
        retry_throttled(|| call.clone().send())
            .await
            .map_err(|e| SSM.err(req, "AddTagsToResource", name, &e))?;
    }
    Ok(())
}

/// GetParameter: (type, value), `None` when the parameter does not exist.
async fn get(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<Option<(String, String, Option<String>)>, ProviderError> {
    let call = client.get_parameter().name(name);
    match retry_throttled(|| call.clone().send()).await {
        Ok(out) => Ok(out.parameter.map(|p| {
            (
                p.r#type()
                    .map(|t| t.as_str().to_owned())
                    .unwrap_or_default(),
                p.value().unwrap_or_default().to_owned(),
                p.data_type().map(str::to_owned),
            )
        })),
        Err(e) if classify(&e) == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SSM.err(req, "GetParameter", name, &e)),
    }
}

#[async_trait]
impl Provider for ParameterProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[PARAMETER]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(PARAMETER_PROPERTIES.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let client = client(ctx);
        let d = desired(req)?;
        let name = match Props::new(req).str("Name")? {
            Some(n) => n,
            None => naming::generate(GENERATED_PREFIX, req.logical_id, naming::SSM_PARAMETER),
        };
        let tags = sdk_tags(req, &tags(req)?)?;
        put(&client, req, &name, &d, false, tags).await?;
        Ok(Provisioned {
            physical_id: name,
            attributes: attributes(&d),
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
        if let Some(p) = changes
            .iter()
            .find(|p| *p == "Name" || schema::is_create_only(PARAMETER, p))
        {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: format!("{p} cannot be changed on an existing parameter"),
            });
        }
        let client = client(ctx);
        let d = desired(req)?;
        if OVERWRITTEN
            .iter()
            .any(|p| changed(previous, req.properties, p))
        {
            put(&client, req, physical_id, &d, true, Vec::new()).await?;
        }
        if changed(previous, req.properties, "Tags") {
            let prev_req = ResourceRequest {
                properties: previous,
                ..req.clone()
            };
            update_tags(&client, req, physical_id, &tags(&prev_req)?, &tags(req)?).await?;
        }
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: attributes(&d),
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        let client = client(ctx);
        let call = client.delete_parameter().name(physical_id);
        match retry_throttled(|| call.clone().send()).await {
            Ok(_) => Ok(()),
            Err(e) if classify(&e) == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(SSM.err(req, "DeleteParameter", physical_id, &e)),
        }
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let client = client(ctx);
        let Some((kind, value, data_type)) = get(&client, req, physical_id).await? else {
            return Ok(None);
        };
        let mut out = Map::new();
        out.insert("Name".into(), json!(physical_id));
        out.insert("Type".into(), json!(kind));
        out.insert("Value".into(), json!(value));
        if let Some(dt) = data_type {
            out.insert("DataType".into(), json!(dt));
        }
        let filter = ParameterStringFilter::builder()
            .key("Name")
            .option("Equals")
            .values(physical_id)
            .build()
            .map_err(|e| ProviderError::failed(req, e.to_string()))?;
        let call = client.describe_parameters().parameter_filters(filter);
        let described = retry_throttled(|| call.clone().send())
            .await
            .map_err(|e| SSM.err(req, "DescribeParameters", physical_id, &e))?;
        if let Some(meta) = described
            .parameters()
            .iter()
            .find(|p| p.name() == Some(physical_id))
        {
            if let Some(desc) = meta.description().filter(|d| !d.is_empty()) {
                out.insert("Description".into(), json!(desc));
            }
            if let Some(pattern) = meta.allowed_pattern().filter(|p| !p.is_empty()) {
                out.insert("AllowedPattern".into(), json!(pattern));
            }
            if let Some(tier) = meta.tier() {
                out.insert("Tier".into(), json!(tier.as_str()));
            }
            let policies: Vec<Value> = meta
                .policies()
                .iter()
                .filter_map(|p| p.policy_text())
                .map(|text| serde_json::from_str(text).unwrap_or_else(|_| json!(text)))
                .collect();
            if !policies.is_empty() {
                out.insert("Policies".into(), json!(Value::Array(policies).to_string()));
            }
        }
        let tags = list_tags(&client, req, physical_id).await?;
        if !tags.is_empty() {
            out.insert("Tags".into(), json!(tags));
        }
        Ok(Some(out))
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        match get(&client(ctx), req, physical_id).await? {
            Some((kind, value, _)) => {
                let mut attributes = Map::new();
                attributes.insert("Type".into(), json!(kind));
                attributes.insert("Value".into(), json!(value));
                Ok(Provisioned {
                    physical_id: physical_id.to_owned(),
                    attributes,
                })
            }
            None => Err(ProviderError::failed(
                req,
                format!("parameter {physical_id} does not exist"),
            )),
        }
    }
}
