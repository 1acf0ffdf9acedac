//! `AWS::SNS::Subscription`: physical id and `Ref` are the subscription ARN, as is
//! `Fn::GetAtt Arn`. `TopicArn`, `Protocol` and `Endpoint` (and a `Region` that moves the
//! subscription to another region) replace it; the delivery attributes (`FilterPolicy`,
//! `RawMessageDelivery`, ...) change in place through SetSubscriptionAttributes.

use std::collections::HashMap;

use aws_sdk_sns::Client;
use serde_json::{Map, Value};

use super::{arn_region, client, client_for_arn, is_not_found, with_properties, SNS, SUBSCRIPTION};
use crate::provider::props::{changed, changed_properties, Props};
use crate::provider::sdk::scaffold::attributes::{self, attr, property_value, Attribute, Kind};
use crate::provider::{
    schema, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// Subscription attributes set by the CloudFormation property of the same name, in the order
/// they are applied (the filter scope before the filter policy it governs).
const SUBSCRIPTION_ATTRIBUTES: &[Attribute] = &[
    attr("DeliveryPolicy", Kind::Json, ""),
    attr("FilterPolicyScope", Kind::Str, "MessageAttributes"),
    // An empty JSON object is how SNS takes a filter policy off.
    attr("FilterPolicy", Kind::Json, "{}"),
    attr("RawMessageDelivery", Kind::Bool, "false"),
    attr("RedrivePolicy", Kind::Json, ""),
    attr("ReplayPolicy", Kind::Json, ""),
    attr("SubscriptionRoleArn", Kind::Str, ""),
];

/// Every property the subscription provider sends: the attribute table and its identity.
pub(super) fn properties() -> Vec<&'static str> {
    attributes::names(
        &[SUBSCRIPTION_ATTRIBUTES],
        &["Endpoint", "Protocol", "Region", "TopicArn"],
    )
}

/// The region the subscription lives in: `Region`, else the topic's.
fn region(ctx: &ProviderContext<'_>, props: &Props<'_>) -> Result<String, ProviderError> {
    if let Some(region) = props.str("Region")? {
        return Ok(region);
    }
    let topic = props.str("TopicArn")?;
    Ok(topic
        .as_deref()
        .and_then(arn_region)
        .unwrap_or(ctx.region)
        .to_owned())
}

fn provisioned(arn: &str) -> Provisioned {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), Value::String(arn.to_owned()));
    Provisioned {
        physical_id: arn.to_owned(),
        attributes,
    }
}

pub(super) async fn create(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let topic = props.required_str("TopicArn")?;
    let protocol = props.required_str("Protocol")?;
    let mut attributes: HashMap<String, String> = HashMap::new();
    for a in SUBSCRIPTION_ATTRIBUTES {
        if let Some(v) = a.request_value(&props)? {
            attributes.insert(a.name.into(), v);
        }
    }
    let region = region(ctx, &props)?;
    let out = client(ctx, Some(&region))
        .subscribe()
        .topic_arn(&topic)
        .protocol(&protocol)
        .set_endpoint(props.str("Endpoint")?)
        .set_attributes((!attributes.is_empty()).then_some(attributes))
        .return_subscription_arn(true)
        .send()
        .await
        .map_err(|e| SNS.err(req, "Subscribe", &topic, &e))?;
    let arn = out
        .subscription_arn
        .filter(|a| a.starts_with("arn:"))
        .ok_or_else(|| {
            ProviderError::failed(
                req,
                format!("SNS Subscribe returned no subscription ARN for {topic}"),
            )
        })?;
    Ok(provisioned(&arn))
}

pub(super) async fn update(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    arn: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    let props = Props::new(req);
    let prev_req = with_properties(req, previous);
    for name in changed_properties(previous, req.properties) {
        if schema::is_create_only(SUBSCRIPTION, &name) {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: format!("{name} changed and cannot be updated in place"),
            });
        }
    }
    if region(ctx, &Props::new(&prev_req))? != region(ctx, &props)? {
        return Ok(UpdateOutcome::NeedsReplacement {
            reason: "Region changed: the subscription moves to another region".into(),
        });
    }

    let client = client_for_arn(ctx, arn);
    for a in SUBSCRIPTION_ATTRIBUTES {
        if !changed(previous, req.properties, a.name) {
            continue;
        }
        let value = a
            .request_value(&props)?
            .unwrap_or_else(|| a.default.to_owned());
        client
            .set_subscription_attributes()
            .subscription_arn(arn)
            .attribute_name(a.name)
            .attribute_value(value)
            .send()
            .await
            .map_err(|e| SNS.err(req, "SetSubscriptionAttributes", arn, &e))?;
    }
    Ok(UpdateOutcome::Updated(provisioned(arn)))
}

pub(super) async fn delete(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<(), ProviderError> {
    if !arn.starts_with("arn:") {
        // A subscription that never got an ARN (still pending confirmation) has nothing to delete.
        return Ok(());
    }
    match client_for_arn(ctx, arn)
        .unsubscribe()
        .subscription_arn(arn)
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(SNS.err(req, "Unsubscribe", arn, &e)),
    }
}

async fn attributes(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<HashMap<String, String>>, ProviderError> {
    match client
        .get_subscription_attributes()
        .subscription_arn(arn)
        .send()
        .await
    {
        Ok(out) => Ok(Some(out.attributes.unwrap_or_default())),
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => Err(SNS.err(req, "GetSubscriptionAttributes", arn, &e)),
    }
}

pub(super) async fn read(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(attrs) = attributes(&client_for_arn(ctx, arn), req, arn).await? else {
        return Ok(None);
    };
    let mut props = Map::new();
    for name in ["TopicArn", "Protocol", "Endpoint"] {
        if let Some(v) = attrs.get(name).filter(|v| !v.is_empty()) {
            props.insert(name.into(), Value::String(v.clone()));
        }
    }
    for a in SUBSCRIPTION_ATTRIBUTES {
        if let Some(raw) = attrs.get(a.name).filter(|v| !v.is_empty()) {
            props.insert(a.name.into(), property_value(a.kind, raw));
        }
    }
    // Region is write-only in the registry schema: a read never reports it.
    Ok(Some(props))
}

pub(super) async fn import(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Provisioned, ProviderError> {
    match attributes(&client_for_arn(ctx, arn), req, arn).await? {
        Some(_) => Ok(provisioned(arn)),
        None => Err(ProviderError::failed(
            req,
            format!("subscription {arn} does not exist"),
        )),
    }
}
