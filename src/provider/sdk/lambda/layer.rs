//! `AWS::Lambda::LayerVersion` and `AWS::Lambda::LayerVersionPermission`.
//!
//! A layer version is immutable: physical id, `Ref` and `Fn::GetAtt LayerVersionArn` are its
//! ARN (`arn:...:layer:name:3`), every property is create-only (a change publishes a new
//! version and deletes the old one), and delete is DeleteLayerVersion of that one version.
//! `Content` comes from S3 like a function's code; a template without `LayerName` gets one
//! generated as for a function.
//!
//! A permission is one statement of a version's policy (AddLayerVersionPermission), also
//! create-only. Its physical id and `Ref` are `<LayerVersionArn>#<statement id>`, the
//! identifier Cloud Control records, so the version and the statement are both in it.

use async_trait::async_trait;
use aws_sdk_lambda::types::{Architecture, LayerVersionContentInput, Runtime};
use aws_sdk_lambda::Client;
use serde_json::{json, Map, Value};

use super::{client, nonempty, Obj, API};
use crate::provider::naming;
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const LAYER_VERSION: &str = "AWS::Lambda::LayerVersion";
const LAYER_PERMISSION: &str = "AWS::Lambda::LayerVersionPermission";

/// The top-level CloudFormation properties this provider sends, per type (any other routes
/// the resource through Cloud Control).
const VERSION_PROPERTIES: &[&str] = &[
    "CompatibleArchitectures",
    "CompatibleRuntimes",
    "Content",
    "Description",
    "LayerName",
    "LicenseInfo",
];
const PERMISSION_PROPERTIES: &[&str] =
    &["Action", "LayerVersionArn", "OrganizationId", "Principal"];

/// A statement id has at most 100 characters of letters, digits, `-` and `_`.
const STATEMENT_ID: naming::NameRules = naming::NameRules {
    max_len: 100,
    lowercase: false,
    extra_chars: "-_",
    suffix: "",
};

/// The SDK provider for Lambda layer versions and their permissions.
pub struct LayerProvider;

/// A layer version ARN split into the layer (its ARN without the version) and the version.
fn split_version_arn(arn: &str) -> Option<(&str, i64)> {
    let (layer, version) = arn.rsplit_once(':')?;
    let number = version.parse().ok()?;
    layer.contains(":layer:").then_some((layer, number))
}

fn bad_arn(req: &ResourceRequest<'_>, arn: &str) -> ProviderError {
    ProviderError::failed(
        req,
        format!("{arn} is not a layer version ARN (arn:...:layer:NAME:VERSION); check the record"),
    )
}

/// A permission's physical id split into its layer version ARN and statement id.
fn split_permission_id(id: &str) -> Option<(&str, &str)> {
    id.rsplit_once('#')
        .filter(|(arn, sid)| !sid.is_empty() && split_version_arn(arn).is_some())
}

fn version_attributes(arn: &str) -> Provisioned {
    provisioned(arn, &[("LayerVersionArn", json!(arn))])
}

async fn publish(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let root = Obj::root(req);
    let content = root
        .object("Content")?
        .ok_or_else(|| ProviderError::missing(req, "Content"))?;
    let name = match root.str("LayerName")? {
        Some(n) => n,
        None => naming::generate(ctx.stack_name, req.logical_id, naming::LAMBDA_FUNCTION),
    };
    let input = LayerVersionContentInput::builder()
        .s3_bucket(content.required_str("S3Bucket")?)
        .s3_key(content.required_str("S3Key")?)
        .set_s3_object_version(content.str("S3ObjectVersion")?)
        .build();
    let runtimes = root.strings("CompatibleRuntimes")?.unwrap_or_default();
    let architectures = root.strings("CompatibleArchitectures")?.unwrap_or_default();
    let out = client
        .publish_layer_version()
        .layer_name(&name)
        .content(input)
        .set_description(root.str("Description")?)
        .set_license_info(root.str("LicenseInfo")?)
        .set_compatible_runtimes(
            (!runtimes.is_empty())
                .then(|| runtimes.iter().map(|r| Runtime::from(r.as_str())).collect()),
        )
        .set_compatible_architectures((!architectures.is_empty()).then(|| {
            architectures
                .iter()
                .map(|a| Architecture::from(a.as_str()))
                .collect()
        }))
        .send()
        .await
        .map_err(|e| API.err(req, "PublishLayerVersion", &name, &e))?;
    let arn = API.required(req, out.layer_version_arn(), "layer version ARN")?;
    Ok(version_attributes(arn))
}

/// The layer version as CloudFormation names its properties; `None` when it is gone.
/// GetLayerVersion by layer and number (not GetLayerVersionByArn, which the emulator cannot
/// answer: the same call on real AWS).
async fn read_version(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let (layer, number) = split_version_arn(arn).ok_or_else(|| bad_arn(req, arn))?;
    let found = API.unless_gone(
        client
            .get_layer_version()
            .layer_name(layer)
            .version_number(number)
            .send()
            .await,
        req,
        "GetLayerVersion",
        arn,
    )?;
    let Some(out) = found else {
        return Ok(None);
    };
    let mut props = Map::new();
    let name = layer.rsplit(':').next().unwrap_or(layer);
    // A template may name the layer by its ARN; it reads back as written.
    let named = Obj::root(req)
        .str("LayerName")?
        .filter(|n| n == layer)
        .unwrap_or_else(|| name.to_owned());
    props.insert("LayerName".into(), json!(named));
    if let Some(d) = nonempty(out.description()) {
        props.insert("Description".into(), json!(d));
    }
    if let Some(l) = nonempty(out.license_info()) {
        props.insert("LicenseInfo".into(), json!(l));
    }
    let runtimes: Vec<&str> = out
        .compatible_runtimes()
        .iter()
        .map(|r| r.as_str())
        .collect();
    if !runtimes.is_empty() {
        props.insert("CompatibleRuntimes".into(), json!(runtimes));
    }
    let archs: Vec<&str> = out
        .compatible_architectures()
        .iter()
        .map(|a| a.as_str())
        .collect();
    if !archs.is_empty() {
        props.insert("CompatibleArchitectures".into(), json!(archs));
    }
    // `Content` is write-only: what was sent is what the record keeps.
    if let Some(content) = req.properties.get("Content") {
        props.insert("Content".into(), content.clone());
    }
    Ok(Some(props))
}

async fn grant(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let root = Obj::root(req);
    let arn = root.required_str("LayerVersionArn")?;
    let (layer, number) = split_version_arn(&arn).ok_or_else(|| bad_arn(req, &arn))?;
    let sid = naming::generate(ctx.stack_name, req.logical_id, STATEMENT_ID);
    client
        .add_layer_version_permission()
        .layer_name(layer)
        .version_number(number)
        .statement_id(&sid)
        .action(root.required_str("Action")?)
        .principal(root.required_str("Principal")?)
        .set_organization_id(root.str("OrganizationId")?)
        .send()
        .await
        .map_err(|e| API.err(req, "AddLayerVersionPermission", &arn, &e))?;
    let id = format!("{arn}#{sid}");
    Ok(provisioned(&id, &[("Id", json!(id))]))
}

/// The statement `sid` of the version's policy; `None` when the version, its policy or the
/// statement is gone.
async fn statement(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    sid: &str,
) -> Result<Option<Value>, ProviderError> {
    let (layer, number) = split_version_arn(arn).ok_or_else(|| bad_arn(req, arn))?;
    let found = API.unless_gone(
        client
            .get_layer_version_policy()
            .layer_name(layer)
            .version_number(number)
            .send()
            .await,
        req,
        "GetLayerVersionPolicy",
        arn,
    )?;
    let policy: Value = match found.as_ref().and_then(|o| o.policy()) {
        Some(text) => serde_json::from_str(text).map_err(|e| {
            ProviderError::failed(req, format!("the policy of {arn} is not JSON: {e}"))
        })?,
        None => return Ok(None),
    };
    Ok(policy["Statement"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["Sid"] == sid))
        .cloned())
}

/// A statement's principal as the template gave it: Lambda writes an account id as that
/// account's root ARN.
fn principal_of(statement: &Value, asked: Option<&str>) -> Option<String> {
    let raw = match &statement["Principal"] {
        Value::String(s) => s.clone(),
        other => other["AWS"].as_str()?.to_owned(),
    };
    match asked {
        Some(a) if raw == a || raw.ends_with(&format!(":{a}:root")) => Some(a.to_owned()),
        _ => Some(raw),
    }
}

async fn read_permission(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let (arn, sid) = split_permission_id(id).ok_or_else(|| bad_arn(req, id))?;
    let Some(found) = statement(client, req, arn, sid).await? else {
        return Ok(None);
    };
    let root = Obj::root(req);
    let mut props = Map::new();
    props.insert("LayerVersionArn".into(), json!(arn));
    if let Some(action) = found["Action"].as_str() {
        props.insert("Action".into(), json!(action));
    }
    if let Some(p) = principal_of(&found, root.str("Principal")?.as_deref()) {
        props.insert("Principal".into(), json!(p));
    }
    if let Some(org) = found["Condition"]["StringEquals"]["aws:PrincipalOrgID"].as_str() {
        props.insert("OrganizationId".into(), json!(org));
    }
    Ok(Some(props))
}

#[async_trait]
impl Provider for LayerProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[LAYER_VERSION, LAYER_PERMISSION]
    }

    fn supported_properties(&self, resource_type: &str) -> Option<Vec<&'static str>> {
        match resource_type {
            LAYER_VERSION => Some(VERSION_PROPERTIES.to_vec()),
            LAYER_PERMISSION => Some(PERMISSION_PROPERTIES.to_vec()),
            _ => None,
        }
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let c = client(ctx);
        match req.resource_type {
            LAYER_VERSION => publish(ctx, &c, req).await,
            _ => grant(ctx, &c, req).await,
        }
    }

    async fn update(
        &self,
        _ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        // Every property of both types is create-only (the schema says so): any change
        // is a replacement, and no change leaves the resource as it is.
        if let Some(replace) = create_only_change(req, previous, &[]) {
            return Ok(replace);
        }
        Ok(UpdateOutcome::Updated(match req.resource_type {
            LAYER_VERSION => version_attributes(physical_id),
            _ => provisioned(physical_id, &[("Id", json!(physical_id))]),
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        let c = client(ctx);
        if req.resource_type == LAYER_VERSION {
            let (layer, number) =
                split_version_arn(physical_id).ok_or_else(|| bad_arn(req, physical_id))?;
            let sent = c
                .delete_layer_version()
                .layer_name(layer)
                .version_number(number)
                .send()
                .await;
            return API
                .unless_gone(sent, req, "DeleteLayerVersion", physical_id)
                .map(|_| ());
        }
        let (arn, sid) =
            split_permission_id(physical_id).ok_or_else(|| bad_arn(req, physical_id))?;
        let (layer, number) = split_version_arn(arn).ok_or_else(|| bad_arn(req, arn))?;
        let sent = c
            .remove_layer_version_permission()
            .layer_name(layer)
            .version_number(number)
            .statement_id(sid)
            .send()
            .await;
        API.unless_gone(sent, req, "RemoveLayerVersionPermission", physical_id)
            .map(|_| ())
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let c = client(ctx);
        match req.resource_type {
            LAYER_VERSION => read_version(&c, req, physical_id).await,
            _ => read_permission(&c, req, physical_id).await,
        }
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        match self.read(ctx, req, physical_id).await? {
            Some(_) if req.resource_type == LAYER_VERSION => Ok(version_attributes(physical_id)),
            Some(_) => Ok(provisioned(physical_id, &[("Id", json!(physical_id))])),
            None => Err(ProviderError::failed(
                req,
                format!("{physical_id} does not exist in Lambda; check the id"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_split_into_layer_version_and_statement() {
        let arn = "arn:aws:lambda:us-east-1:123456789012:layer:deps:3";
        assert_eq!(
            split_version_arn(arn),
            Some(("arn:aws:lambda:us-east-1:123456789012:layer:deps", 3))
        );
        assert_eq!(
            split_version_arn("arn:aws:lambda:us-east-1:1:function:f:3"),
            None
        );
        assert_eq!(split_version_arn("deps"), None);
        assert_eq!(split_permission_id(&format!("{arn}#s1")), Some((arn, "s1")));
        assert_eq!(split_permission_id(&format!("{arn}#")), None);
    }

    #[test]
    fn an_account_principal_reads_back_as_the_template_wrote_it() {
        let s = json!({"Principal": {"AWS": "arn:aws:iam::210987654321:root"}});
        assert_eq!(
            principal_of(&s, Some("210987654321")).as_deref(),
            Some("210987654321")
        );
        assert_eq!(
            principal_of(&json!({"Principal": "*"}), Some("*")).as_deref(),
            Some("*")
        );
    }
}
