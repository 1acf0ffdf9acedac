//! Reading a log group back as CloudFormation properties.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{bare_arn, cfn_arn, client, describe, is_not_found, API};
use crate::provider::props::Props;
use crate::provider::{ProviderContext, ProviderError, ResourceRequest};

/// The group's properties. The policies (data protection, field index, resource) are read only
/// when the template declares them: each is a call of its own.
pub(super) async fn read(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let client = client(ctx);
    let Some(group) = describe(&client, req, name).await? else {
        return Ok(None);
    };
    let arn = cfn_arn(ctx, name, &group);
    let mut props = Map::new();
    props.insert("LogGroupName".into(), Value::String(name.to_owned()));
    if let Some(days) = group.retention_in_days() {
        props.insert("RetentionInDays".into(), Value::from(days));
    }
    if let Some(key) = group.kms_key_id() {
        props.insert("KmsKeyId".into(), Value::String(key.to_owned()));
    }
    if let Some(class) = group.log_group_class() {
        props.insert(
            "LogGroupClass".into(),
            Value::String(class.as_str().to_owned()),
        );
    }
    if let Some(on) = group.deletion_protection_enabled() {
        props.insert("DeletionProtectionEnabled".into(), Value::Bool(on));
    }
    if let Some(on) = group.bearer_token_authentication_enabled() {
        props.insert("BearerTokenAuthenticationEnabled".into(), Value::Bool(on));
    }
    let tags = match client
        .list_tags_for_resource()
        .resource_arn(bare_arn(&arn))
        .send()
        .await
    {
        Ok(out) => out.tags.unwrap_or_default(),
        Err(e) if is_not_found(&e) => return Ok(None),
        Err(e) => return Err(API.err(req, "ListTagsForResource", bare_arn(&arn), &e)),
    };
    if !tags.is_empty() {
        let sorted: BTreeMap<String, String> = tags.into_iter().collect();
        let list = sorted
            .into_iter()
            .map(|(k, v)| serde_json::json!({"Key": k, "Value": v}))
            .collect();
        props.insert("Tags".into(), Value::Array(list));
    }

    let declared = Props::new(req);
    let parse =
        |doc: &str| serde_json::from_str(doc).unwrap_or_else(|_| Value::String(doc.to_owned()));
    if declared.get("DataProtectionPolicy").is_some() {
        match client
            .get_data_protection_policy()
            .log_group_identifier(name)
            .send()
            .await
        {
            Ok(out) => {
                if let Some(doc) = out.policy_document().filter(|d| !d.is_empty()) {
                    props.insert("DataProtectionPolicy".into(), parse(doc));
                }
            }
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(API.err(req, "GetDataProtectionPolicy", name, &e)),
        }
    }
    if declared.get("FieldIndexPolicies").is_some() {
        match client
            .describe_index_policies()
            .log_group_identifiers(name)
            .send()
            .await
        {
            Ok(out) => {
                let docs: Vec<Value> = out
                    .index_policies()
                    .iter()
                    .filter_map(|p| p.policy_document())
                    .map(parse)
                    .collect();
                if !docs.is_empty() {
                    props.insert("FieldIndexPolicies".into(), Value::Array(docs));
                }
            }
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(API.err(req, "DescribeIndexPolicies", name, &e)),
        }
    }
    if declared.get("ResourcePolicyDocument").is_some() {
        match client
            .describe_resource_policies()
            .resource_arn(bare_arn(&arn))
            .send()
            .await
        {
            Ok(out) => {
                if let Some(doc) = out
                    .resource_policies()
                    .iter()
                    .find_map(|p| p.policy_document())
                {
                    props.insert("ResourcePolicyDocument".into(), parse(doc));
                }
            }
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(API.err(req, "DescribeResourcePolicies", name, &e)),
        }
    }
    Ok(Some(props))
}
