//! CloudWatch Logs: `AWS::Logs::LogGroup`.
//!
//! The physical id and `Ref` are the log group name; `Fn::GetAtt Arn` is the ARN in
//! CloudFormation's form, ending in `:*`. Retention, the KMS key, tags, the data protection,
//! field index and resource policies, deletion protection and bearer-token authentication all
//! change in place; a new name or log class replaces the group (CloudWatch Logs cannot rename a
//! group or change its class).

mod read;
mod settings;

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use aws_sdk_cloudwatchlogs::types::{LogGroup, LogGroupClass};
use aws_sdk_cloudwatchlogs::Client;
use serde_json::{Map, Value};

use super::{is_not_found, with_properties};
use crate::provider::props::{changed, changed_properties, Props};
use crate::provider::sdk::scaffold::Service;
use crate::provider::{
    naming, schema, Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest,
    UpdateOutcome,
};

const LOG_GROUP: &str = "AWS::Logs::LogGroup";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const LOG_GROUP_PROPERTIES: &[&str] = &[
    "BearerTokenAuthenticationEnabled",
    "DataProtectionPolicy",
    "DeletionProtectionEnabled",
    "FieldIndexPolicies",
    "KmsKeyId",
    "LogGroupClass",
    "LogGroupName",
    "ResourcePolicyDocument",
    "RetentionInDays",
    "Tags",
];

/// The class a group gets when the template names none.
const DEFAULT_CLASS: &str = "STANDARD";

/// The SDK provider for CloudWatch Logs log groups.
pub struct LogsProvider;

fn client(ctx: &ProviderContext<'_>) -> Client {
    ctx.clients.cached(Some(ctx.region), Client::new)
}

/// Every failed call's typed error (`scaffold::Service`).
pub(super) const API: Service = Service("logs");

fn log_class(props: &Props<'_>) -> Result<String, ProviderError> {
    Ok(props
        .str("LogGroupClass")?
        .unwrap_or_else(|| DEFAULT_CLASS.to_owned())
        .to_ascii_uppercase())
}

/// The ARN without the `:*` CloudFormation appends (what the tagging and policy APIs take).
fn bare_arn(arn: &str) -> &str {
    arn.strip_suffix(":*").unwrap_or(arn)
}

/// The first policy document of `FieldIndexPolicies` (a log group has one index policy).
fn index_policy(props: &Props<'_>) -> Result<Option<String>, ProviderError> {
    Ok(props
        .list("FieldIndexPolicies")?
        .and_then(|l| l.first())
        .map(|p| match p {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }))
}

/// The group named `name`, found among those sharing its prefix.
async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<Option<LogGroup>, ProviderError> {
    let mut token: Option<String> = None;
    loop {
        let out = match client
            .describe_log_groups()
            .log_group_name_prefix(name)
            .set_next_token(token.clone())
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(API.err(req, "DescribeLogGroups", name, &e)),
        };
        if let Some(group) = out
            .log_groups
            .unwrap_or_default()
            .into_iter()
            .find(|g| g.log_group_name() == Some(name))
        {
            return Ok(Some(group));
        }
        match out.next_token {
            Some(next) if !next.is_empty() && token.as_deref() != Some(next.as_str()) => {
                token = Some(next)
            }
            _ => return Ok(None),
        }
    }
}

/// The `Arn` attribute, `arn:…:log-group:NAME:*`.
fn cfn_arn(ctx: &ProviderContext<'_>, name: &str, group: &LogGroup) -> String {
    match group.arn() {
        Some(arn) if arn.ends_with(":*") => arn.to_owned(),
        Some(arn) => format!("{arn}:*"),
        None => format!(
            "arn:{}:logs:{}:{}:log-group:{}:*",
            ctx.partition, ctx.region, ctx.account_id, name
        ),
    }
}

async fn provisioned(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<Provisioned, ProviderError> {
    let group = describe(client, req, name)
        .await?
        .ok_or_else(|| ProviderError::failed(req, format!("log group {name} does not exist")))?;
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), Value::String(cfn_arn(ctx, name, &group)));
    Ok(Provisioned {
        physical_id: name.to_owned(),
        attributes,
    })
}

async fn create(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let name = match props.str("LogGroupName")? {
        Some(name) => name,
        None => naming::generate(ctx.stack_name, req.logical_id, naming::LOG_GROUP),
    };
    let tags: HashMap<String, String> = props.tags()?.into_iter().collect();
    let client = client(ctx);
    let mut call = client
        .create_log_group()
        .log_group_name(&name)
        .set_kms_key_id(props.str("KmsKeyId")?);
    if !tags.is_empty() {
        call = call.set_tags(Some(tags));
    }
    if let Some(class) = props.str("LogGroupClass")? {
        call = call.log_group_class(LogGroupClass::from(class.to_ascii_uppercase().as_str()));
    }
    if let Some(on) = props.bool("DeletionProtectionEnabled")? {
        call = call.deletion_protection_enabled(on);
    }
    call.send()
        .await
        .map_err(|e| API.err(req, "CreateLogGroup", &name, &e))?;

    if let Some(days) = props.i64("RetentionInDays")? {
        settings::put_retention(&client, req, &name, Some(days)).await?;
    }
    if let Some(doc) = props.json_document("DataProtectionPolicy")? {
        settings::put_data_protection(&client, req, &name, Some(doc)).await?;
    }
    if let Some(doc) = index_policy(&props)? {
        settings::put_index(&client, req, &name, Some(doc)).await?;
    }
    if let Some(true) = props.bool("BearerTokenAuthenticationEnabled")? {
        settings::put_bearer_token(&client, req, &name, true).await?;
    }
    let provisioned = provisioned(ctx, &client, req, &name).await?;
    if let Some(doc) = props.json_document("ResourcePolicyDocument")? {
        let arn = provisioned
            .attributes
            .get("Arn")
            .and_then(Value::as_str)
            .unwrap_or_default();
        settings::put_resource_policy(&client, req, bare_arn(arn), Some(doc)).await?;
    }
    Ok(provisioned)
}

async fn update(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    name: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    let props = Props::new(req);
    let prev_req = with_properties(req, previous);
    let prev = Props::new(&prev_req);

    for p in changed_properties(previous, req.properties) {
        if schema::is_create_only(LOG_GROUP, &p) {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: format!("{p} changed and cannot be updated in place"),
            });
        }
    }
    if log_class(&prev)? != log_class(&props)? {
        return Ok(UpdateOutcome::NeedsReplacement {
            reason: "LogGroupClass changed: CloudWatch Logs cannot change a log group's class"
                .into(),
        });
    }

    let client = client(ctx);
    let current = provisioned(ctx, &client, req, name).await?;
    let arn = current
        .attributes
        .get("Arn")
        .and_then(Value::as_str)
        .map(bare_arn)
        .unwrap_or_default()
        .to_owned();
    let differs = |p: &str| changed(previous, req.properties, p);

    if differs("RetentionInDays") {
        settings::put_retention(&client, req, name, props.i64("RetentionInDays")?).await?;
    }
    if differs("KmsKeyId") {
        match props.str("KmsKeyId")? {
            Some(key) => client
                .associate_kms_key()
                .log_group_name(name)
                .kms_key_id(key)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| API.err(req, "AssociateKmsKey", name, &e))?,
            None => client
                .disassociate_kms_key()
                .log_group_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| API.err(req, "DisassociateKmsKey", name, &e))?,
        }
    }
    if differs("DataProtectionPolicy") {
        settings::put_data_protection(
            &client,
            req,
            name,
            props.json_document("DataProtectionPolicy")?,
        )
        .await?;
    }
    if differs("FieldIndexPolicies") {
        settings::put_index(&client, req, name, index_policy(&props)?).await?;
    }
    if differs("ResourcePolicyDocument") {
        settings::put_resource_policy(
            &client,
            req,
            &arn,
            props.json_document("ResourcePolicyDocument")?,
        )
        .await?;
    }
    if differs("DeletionProtectionEnabled") {
        settings::put_deletion_protection(
            &client,
            req,
            name,
            props.bool("DeletionProtectionEnabled")?.unwrap_or(false),
        )
        .await?;
    }
    if differs("BearerTokenAuthenticationEnabled") {
        settings::put_bearer_token(
            &client,
            req,
            name,
            props
                .bool("BearerTokenAuthenticationEnabled")?
                .unwrap_or(false),
        )
        .await?;
    }
    if differs("Tags") {
        let old: BTreeMap<String, String> = prev.tags()?.into_iter().collect();
        let new: BTreeMap<String, String> = props.tags()?.into_iter().collect();
        let remove: Vec<String> = old
            .keys()
            .filter(|k| !new.contains_key(*k))
            .cloned()
            .collect();
        let set: HashMap<String, String> = new
            .iter()
            .filter(|(k, v)| old.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !remove.is_empty() {
            client
                .untag_resource()
                .resource_arn(&arn)
                .set_tag_keys(Some(remove))
                .send()
                .await
                .map_err(|e| API.err(req, "UntagResource", &arn, &e))?;
        }
        if !set.is_empty() {
            client
                .tag_resource()
                .resource_arn(&arn)
                .set_tags(Some(set))
                .send()
                .await
                .map_err(|e| API.err(req, "TagResource", &arn, &e))?;
        }
    }
    Ok(UpdateOutcome::Updated(current))
}

async fn delete(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<(), ProviderError> {
    match client(ctx)
        .delete_log_group()
        .log_group_name(name)
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(API.err(req, "DeleteLogGroup", name, &e)),
    }
}

#[async_trait]
impl Provider for LogsProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[LOG_GROUP]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(LOG_GROUP_PROPERTIES.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        create(ctx, req).await
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        update(ctx, req, physical_id, previous).await
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        delete(ctx, req, physical_id).await
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        read::read(ctx, req, physical_id).await
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        provisioned(ctx, &client(ctx), req, physical_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arns_with_and_without_the_stream_wildcard() {
        let group = LogGroup::builder()
            .arn("arn:aws:logs:us-east-1:1:log-group:g")
            .build();
        assert_eq!(
            bare_arn("arn:aws:logs:us-east-1:1:log-group:g:*"),
            "arn:aws:logs:us-east-1:1:log-group:g"
        );
        assert_eq!(
            bare_arn("arn:aws:logs:us-east-1:1:log-group:g"),
            "arn:aws:logs:us-east-1:1:log-group:g"
        );
        let arn = group.arn().map(|a| format!("{a}:*"));
        assert_eq!(
            arn.as_deref(),
            Some("arn:aws:logs:us-east-1:1:log-group:g:*")
        );
    }
}
