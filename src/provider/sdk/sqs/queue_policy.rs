//! `AWS::SQS::QueuePolicy`: the `Policy` attribute of every listed queue. It has no identity in
//! SQS, so the physical id (`Ref`, `Fn::GetAtt Id`) is a generated name; both properties change
//! in place.

use aws_sdk_sqs::types::QueueAttributeName;
use aws_sdk_sqs::Client;
use serde_json::{Map, Value};

use super::{client, is_not_found, queue_attributes, with_properties, SQS};
use crate::provider::props::Props;
use crate::provider::sdk::scaffold::attributes::{property_value, Kind};
use crate::provider::{
    naming, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

fn policy_queues(
    req: &ResourceRequest<'_>,
    props: &Props<'_>,
) -> Result<Vec<String>, ProviderError> {
    let queues = props.strings("Queues")?;
    if queues.is_empty() {
        return Err(ProviderError::missing(req, "Queues"));
    }
    Ok(queues)
}

async fn set_policy(
    client: &Client,
    req: &ResourceRequest<'_>,
    url: &str,
    policy: &str,
) -> Result<(), ProviderError> {
    client
        .set_queue_attributes()
        .queue_url(url)
        .attributes(QueueAttributeName::Policy, policy)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| SQS.err(req, "SetQueueAttributes", url, &e))
}

/// Removes the policy from a queue; a queue that is gone has none.
async fn clear_policy(
    client: &Client,
    req: &ResourceRequest<'_>,
    url: &str,
) -> Result<(), ProviderError> {
    match client
        .set_queue_attributes()
        .queue_url(url)
        .attributes(QueueAttributeName::Policy, "")
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(SQS.err(req, "SetQueueAttributes", url, &e)),
    }
}

pub(super) fn policy_provisioned(id: &str) -> Provisioned {
    let mut attributes = Map::new();
    attributes.insert("Id".into(), Value::String(id.to_owned()));
    Provisioned {
        physical_id: id.to_owned(),
        attributes,
    }
}

pub(super) async fn create_policy(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let policy = props
        .json_document("PolicyDocument")?
        .ok_or_else(|| ProviderError::missing(req, "PolicyDocument"))?;
    let queues = policy_queues(req, &props)?;
    let client = client(ctx);
    for url in &queues {
        set_policy(&client, req, url, &policy).await?;
    }
    Ok(policy_provisioned(&naming::generate(
        ctx.stack_name,
        req.logical_id,
        naming::SQS_QUEUE,
    )))
}

pub(super) async fn update_policy(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    let props = Props::new(req);
    let prev_req = with_properties(req, previous);
    let old_queues = Props::new(&prev_req).strings("Queues")?;
    let policy = props
        .json_document("PolicyDocument")?
        .ok_or_else(|| ProviderError::missing(req, "PolicyDocument"))?;
    let queues = policy_queues(req, &props)?;
    let client = client(ctx);
    for url in old_queues.iter().filter(|q| !queues.contains(q)) {
        clear_policy(&client, req, url).await?;
    }
    for url in &queues {
        set_policy(&client, req, url, &policy).await?;
    }
    Ok(UpdateOutcome::Updated(policy_provisioned(id)))
}

pub(super) async fn delete_policy(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
) -> Result<(), ProviderError> {
    let queues = Props::new(req).strings("Queues")?;
    let client = client(ctx);
    for url in &queues {
        clear_policy(&client, req, url).await?;
    }
    Ok(())
}

/// The policy as the listed queues carry it; `None` when no listed queue has one.
pub(super) async fn read_policy(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let queues = Props::new(req).strings("Queues")?;
    let client = client(ctx);
    let mut document = None;
    let mut with_policy = Vec::new();
    for url in queues {
        let Some(attrs) = queue_attributes(&client, req, &url).await? else {
            continue;
        };
        if let Some(policy) = attrs
            .get(&QueueAttributeName::Policy)
            .filter(|p| !p.is_empty())
        {
            if document.is_none() {
                document = Some(property_value(Kind::Json, policy));
            }
            with_policy.push(Value::String(url));
        }
    }
    let Some(document) = document else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("PolicyDocument".into(), document);
    props.insert("Queues".into(), Value::Array(with_policy));
    Ok(Some(props))
}
