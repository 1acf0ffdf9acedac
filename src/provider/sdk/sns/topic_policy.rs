//! `AWS::SNS::TopicPolicy`: sets the `Policy` attribute of every listed topic. It has no
//! identity in SNS, so the physical id (`Ref`, `Fn::GetAtt Id`) is a generated name. Both
//! properties change in place; a topic dropped from `Topics`, or the whole policy on delete,
//! goes back to SNS's default topic policy (SNS has no "no policy").

use aws_sdk_sns::Client;
use serde_json::{json, Map, Value};

use super::{arn_account, client_for_arn, is_not_found, with_properties, SNS};
use crate::provider::props::Props;
use crate::provider::sdk::scaffold::attributes::{property_value, Kind};
use crate::provider::{
    naming, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// The policy SNS gives a new topic: the owning account may do everything.
fn default_policy(ctx: &ProviderContext<'_>, topic_arn: &str) -> String {
    let account = arn_account(topic_arn).unwrap_or(ctx.account_id);
    json!({
        "Version": "2008-10-17",
        "Id": "__default_policy_ID",
        "Statement": [{
            "Sid": "__default_statement_ID",
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": [
                "SNS:GetTopicAttributes",
                "SNS:SetTopicAttributes",
                "SNS:AddPermission",
                "SNS:RemovePermission",
                "SNS:DeleteTopic",
                "SNS:Subscribe",
                "SNS:ListSubscriptionsByTopic",
                "SNS:Publish"
            ],
            "Resource": topic_arn,
            "Condition": {"StringEquals": {"AWS:SourceOwner": account}}
        }]
    })
    .to_string()
}

fn topics(req: &ResourceRequest<'_>, props: &Props<'_>) -> Result<Vec<String>, ProviderError> {
    let topics = props.strings("Topics")?;
    if topics.is_empty() {
        return Err(ProviderError::missing(req, "Topics"));
    }
    Ok(topics)
}

fn provisioned(id: &str) -> Provisioned {
    let mut attributes = Map::new();
    attributes.insert("Id".into(), Value::String(id.to_owned()));
    Provisioned {
        physical_id: id.to_owned(),
        attributes,
    }
}

async fn set_policy(
    client: &Client,
    req: &ResourceRequest<'_>,
    topic: &str,
    policy: &str,
) -> Result<(), ProviderError> {
    client
        .set_topic_attributes()
        .topic_arn(topic)
        .attribute_name("Policy")
        .attribute_value(policy)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| SNS.err(req, "SetTopicAttributes", topic, &e))
}

/// Puts the default policy back; a topic that is gone needs nothing.
async fn reset_policy(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    topic: &str,
) -> Result<(), ProviderError> {
    let result = client_for_arn(ctx, topic)
        .set_topic_attributes()
        .topic_arn(topic)
        .attribute_name("Policy")
        .attribute_value(default_policy(ctx, topic))
        .send()
        .await;
    match result {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(SNS.err(req, "SetTopicAttributes", topic, &e)),
    }
}

fn policy_document(req: &ResourceRequest<'_>, props: &Props<'_>) -> Result<String, ProviderError> {
    props
        .json_document("PolicyDocument")?
        .ok_or_else(|| ProviderError::missing(req, "PolicyDocument"))
}

pub(super) async fn create(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let policy = policy_document(req, &props)?;
    for topic in topics(req, &props)? {
        set_policy(&client_for_arn(ctx, &topic), req, &topic, &policy).await?;
    }
    Ok(provisioned(&naming::generate(
        ctx.stack_name,
        req.logical_id,
        naming::SNS_TOPIC,
    )))
}

pub(super) async fn update(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    let props = Props::new(req);
    let prev_req = with_properties(req, previous);
    let old_topics = Props::new(&prev_req).strings("Topics")?;
    let policy = policy_document(req, &props)?;
    let new_topics = topics(req, &props)?;
    for topic in old_topics.iter().filter(|t| !new_topics.contains(t)) {
        reset_policy(ctx, req, topic).await?;
    }
    for topic in &new_topics {
        set_policy(&client_for_arn(ctx, topic), req, topic, &policy).await?;
    }
    Ok(UpdateOutcome::Updated(provisioned(id)))
}

pub(super) async fn delete(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
) -> Result<(), ProviderError> {
    for topic in Props::new(req).strings("Topics")? {
        reset_policy(ctx, req, &topic).await?;
    }
    Ok(())
}

/// The policy as the listed topics carry it; `None` when none of them exists.
pub(super) async fn read(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let mut document = None;
    let mut existing = Vec::new();
    for topic in Props::new(req).strings("Topics")? {
        let attrs = match client_for_arn(ctx, &topic)
            .get_topic_attributes()
            .topic_arn(&topic)
            .send()
            .await
        {
            Ok(out) => out.attributes.unwrap_or_default(),
            Err(e) if is_not_found(&e) => continue,
            Err(e) => return Err(SNS.err(req, "GetTopicAttributes", &topic, &e)),
        };
        if document.is_none() {
            document = attrs.get("Policy").map(|p| property_value(Kind::Json, p));
        }
        existing.push(Value::String(topic));
    }
    let Some(document) = document else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("PolicyDocument".into(), document);
    props.insert("Topics".into(), Value::Array(existing));
    Ok(Some(props))
}

pub(super) async fn import(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Provisioned, ProviderError> {
    match read(ctx, req).await? {
        Some(_) => Ok(provisioned(id)),
        None => Err(ProviderError::failed(
            req,
            "none of the listed topics exists",
        )),
    }
}
