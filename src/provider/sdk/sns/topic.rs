//! `AWS::SNS::Topic`: physical id and `Ref` are the topic ARN; `Fn::GetAtt` offers `TopicArn`
//! and `TopicName`. `TopicName` and `FifoTopic` replace the topic; everything else (attributes,
//! delivery status logging, the data protection policy, inline subscriptions, tags) changes in
//! place.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use aws_sdk_sns::types::Tag;
use aws_sdk_sns::Client;
use serde_json::{json, Map, Value};

use super::{client, client_for_arn, is_not_found, with_properties, SNS, TOPIC};
use crate::provider::props::{changed, changed_properties, Props};
use crate::provider::sdk::scaffold::attributes::{self, attr, property_value, Attribute, Kind};
use crate::provider::sdk::scaffold::tags;
use crate::provider::{
    naming, schema, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// Topic attributes set by the CloudFormation property of the same name.
const TOPIC_ATTRIBUTES: &[Attribute] = &[
    attr("DisplayName", Kind::Str, ""),
    attr("KmsMasterKeyId", Kind::Str, ""),
    attr("SignatureVersion", Kind::Str, "1"),
    attr("TracingConfig", Kind::Str, "PassThrough"),
];

/// Attributes only FIFO topics accept.
const FIFO_ATTRIBUTES: &[Attribute] = &[
    attr("ContentBasedDeduplication", Kind::Bool, "false"),
    attr("ArchivePolicy", Kind::Json, "{}"),
    attr("FifoThroughputScope", Kind::Str, "Topic"),
];

/// Every property the topic provider sends: the attribute tables and what it handles itself.
pub(super) fn properties() -> Vec<&'static str> {
    attributes::names(
        &[TOPIC_ATTRIBUTES, FIFO_ATTRIBUTES],
        &[
            "DataProtectionPolicy",
            "DeliveryStatusLogging",
            "FifoTopic",
            "Subscription",
            "Tags",
            "TopicName",
        ],
    )
}

/// The topic name at the end of a topic ARN.
fn topic_name(arn: &str) -> &str {
    arn.rsplit(':').next().unwrap_or(arn)
}

fn is_fifo(props: &Props<'_>) -> Result<bool, ProviderError> {
    Ok(props.bool("FifoTopic")?.unwrap_or(false))
}

/// The attribute-name prefix SNS uses for a `DeliveryStatusLogging` protocol.
fn logging_prefix(protocol: &str) -> Option<&'static str> {
    match protocol.to_ascii_lowercase().as_str() {
        "http/s" | "http" | "https" => Some("HTTP"),
        "sqs" => Some("SQS"),
        "lambda" => Some("Lambda"),
        "firehose" => Some("Firehose"),
        "application" => Some("Application"),
        _ => None,
    }
}

/// `DeliveryStatusLogging` as the topic attributes it stands for.
fn logging_attributes(
    req: &ResourceRequest<'_>,
    props: &Props<'_>,
) -> Result<BTreeMap<String, String>, ProviderError> {
    let mut out = BTreeMap::new();
    for entry in props
        .list("DeliveryStatusLogging")?
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let protocol = entry
            .get("Protocol")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let prefix = logging_prefix(protocol).ok_or_else(|| {
            ProviderError::failed(req, format!("DeliveryStatusLogging protocol {protocol:?} is not one of http/s, sqs, lambda, firehose, application"))
        })?;
        for field in [
            "SuccessFeedbackRoleArn",
            "SuccessFeedbackSampleRate",
            "FailureFeedbackRoleArn",
        ] {
            let value = match entry.get(field) {
                None | Some(Value::Null) => continue,
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            out.insert(format!("{prefix}{field}"), value);
        }
    }
    Ok(out)
}

/// Inline `Subscription` entries as (protocol, endpoint) pairs.
fn inline_subscriptions(props: &Props<'_>) -> Result<BTreeSet<(String, String)>, ProviderError> {
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    Ok(props
        .list("Subscription")?
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|s| (text(s.get("Protocol")), text(s.get("Endpoint"))))
        .collect())
}

fn sns_tags(tags: Vec<(String, String)>) -> Vec<Tag> {
    tags.into_iter()
        .filter_map(|(k, v)| Tag::builder().key(k).value(v).build().ok())
        .collect()
}

fn provisioned(arn: &str) -> Provisioned {
    let mut attributes = Map::new();
    attributes.insert("TopicArn".into(), Value::String(arn.to_owned()));
    attributes.insert(
        "TopicName".into(),
        Value::String(topic_name(arn).to_owned()),
    );
    Provisioned {
        physical_id: arn.to_owned(),
        attributes,
    }
}

async fn subscribe(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    protocol: &str,
    endpoint: &str,
) -> Result<(), ProviderError> {
    client
        .subscribe()
        .topic_arn(arn)
        .protocol(protocol)
        .endpoint(endpoint)
        .return_subscription_arn(true)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| SNS.err(req, "Subscribe", arn, &e))
}

/// The topic's subscriptions: (protocol, endpoint, subscription ARN).
async fn list_subscriptions(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Vec<(String, String, String)>, ProviderError> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = client
            .list_subscriptions_by_topic()
            .topic_arn(arn)
            .set_next_token(token.clone())
            .send()
            .await
            .map_err(|e| SNS.err(req, "ListSubscriptionsByTopic", arn, &e))?;
        for s in page.subscriptions() {
            out.push((
                s.protocol().unwrap_or_default().to_owned(),
                s.endpoint().unwrap_or_default().to_owned(),
                s.subscription_arn().unwrap_or_default().to_owned(),
            ));
        }
        match page.next_token {
            Some(next) if !next.is_empty() && token.as_deref() != Some(next.as_str()) => {
                token = Some(next)
            }
            _ => return Ok(out),
        }
    }
}

async fn set_attribute(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    name: &str,
    value: &str,
) -> Result<(), ProviderError> {
    client
        .set_topic_attributes()
        .topic_arn(arn)
        .attribute_name(name)
        .attribute_value(value)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| SNS.err(req, "SetTopicAttributes", arn, &e))
}

pub(super) async fn create(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let fifo = is_fifo(&props)?;
    let name = match props.str("TopicName")? {
        Some(name) => name,
        None => {
            let rules = if fifo {
                naming::SNS_FIFO_TOPIC
            } else {
                naming::SNS_TOPIC
            };
            naming::generate(ctx.stack_name, req.logical_id, rules)
        }
    };
    let mut attributes: HashMap<String, String> = HashMap::new();
    if fifo {
        attributes.insert("FifoTopic".into(), "true".into());
    }
    let extra = if fifo { FIFO_ATTRIBUTES } else { &[] };
    for a in TOPIC_ATTRIBUTES.iter().chain(extra) {
        if let Some(v) = a.request_value(&props)? {
            attributes.insert(a.name.into(), v);
        }
    }
    attributes.extend(logging_attributes(req, &props)?);

    let client = client(ctx, None);
    let tags = sns_tags(props.tags()?);
    let out = client
        .create_topic()
        .name(&name)
        .set_attributes(Some(attributes))
        .set_tags((!tags.is_empty()).then_some(tags))
        .set_data_protection_policy(props.json_document("DataProtectionPolicy")?)
        .send()
        .await
        .map_err(|e| SNS.err(req, "CreateTopic", &name, &e))?;
    let arn = out.topic_arn.ok_or_else(|| {
        ProviderError::failed(req, format!("SNS CreateTopic returned no ARN for {name}"))
    })?;
    for (protocol, endpoint) in inline_subscriptions(&props)? {
        subscribe(&client, req, &arn, &protocol, &endpoint).await?;
    }
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
    let prev = Props::new(&prev_req);

    if is_fifo(&prev)? != is_fifo(&props)? {
        return Ok(UpdateOutcome::NeedsReplacement {
            reason: "FifoTopic changed: a topic's type is fixed at creation".into(),
        });
    }
    for name in changed_properties(previous, req.properties) {
        if name != "FifoTopic" && schema::is_create_only(TOPIC, &name) {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: format!("{name} changed and cannot be updated in place"),
            });
        }
    }

    let client = client_for_arn(ctx, arn);
    let extra = if is_fifo(&props)? {
        FIFO_ATTRIBUTES
    } else {
        &[]
    };
    for a in TOPIC_ATTRIBUTES.iter().chain(extra) {
        if changed(previous, req.properties, a.name) {
            let value = a
                .request_value(&props)?
                .unwrap_or_else(|| a.default.to_owned());
            set_attribute(&client, req, arn, a.name, &value).await?;
        }
    }
    if changed(previous, req.properties, "DeliveryStatusLogging") {
        let old = logging_attributes(&prev_req, &prev)?;
        let new = logging_attributes(req, &props)?;
        for name in old.keys().filter(|k| !new.contains_key(*k)) {
            set_attribute(&client, req, arn, name, "").await?;
        }
        for (name, value) in new.iter().filter(|(k, v)| old.get(*k) != Some(*v)) {
            set_attribute(&client, req, arn, name, value).await?;
        }
    }
    if changed(previous, req.properties, "DataProtectionPolicy") {
        let policy = props
            .json_document("DataProtectionPolicy")?
            .unwrap_or_default();
        client
            .put_data_protection_policy()
            .resource_arn(arn)
            .data_protection_policy(policy)
            .send()
            .await
            .map_err(|e| SNS.err(req, "PutDataProtectionPolicy", arn, &e))?;
    }
    if changed(previous, req.properties, "Subscription") {
        let old = inline_subscriptions(&prev)?;
        let new = inline_subscriptions(&props)?;
        let removed: Vec<&(String, String)> = old.difference(&new).collect();
        if !removed.is_empty() {
            for (protocol, endpoint, sub_arn) in list_subscriptions(&client, req, arn).await? {
                if removed
                    .iter()
                    .any(|(p, e)| *p == protocol && *e == endpoint)
                    && sub_arn.starts_with("arn:")
                {
                    match client.unsubscribe().subscription_arn(&sub_arn).send().await {
                        Ok(_) => {}
                        Err(e) if is_not_found(&e) => {}
                        Err(e) => return Err(SNS.err(req, "Unsubscribe", &sub_arn, &e)),
                    }
                }
            }
        }
        for (protocol, endpoint) in new.difference(&old) {
            subscribe(&client, req, arn, protocol, endpoint).await?;
        }
    }
    if changed(previous, req.properties, "Tags") {
        let tags::TagChanges { set, remove } = tags::list_changes(&prev.tags()?, &props.tags()?);
        if !remove.is_empty() {
            client
                .untag_resource()
                .resource_arn(arn)
                .set_tag_keys(Some(remove))
                .send()
                .await
                .map_err(|e| SNS.err(req, "UntagResource", arn, &e))?;
        }
        if !set.is_empty() {
            client
                .tag_resource()
                .resource_arn(arn)
                .set_tags(Some(sns_tags(set.into_iter().collect())))
                .send()
                .await
                .map_err(|e| SNS.err(req, "TagResource", arn, &e))?;
        }
    }
    Ok(UpdateOutcome::Updated(provisioned(arn)))
}

pub(super) async fn delete(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<(), ProviderError> {
    match client_for_arn(ctx, arn)
        .delete_topic()
        .topic_arn(arn)
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(SNS.err(req, "DeleteTopic", arn, &e)),
    }
}

async fn attributes(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<HashMap<String, String>>, ProviderError> {
    match client.get_topic_attributes().topic_arn(arn).send().await {
        Ok(out) => Ok(Some(out.attributes.unwrap_or_default())),
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => Err(SNS.err(req, "GetTopicAttributes", arn, &e)),
    }
}

pub(super) async fn read(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let client = client_for_arn(ctx, arn);
    let Some(attrs) = attributes(&client, req, arn).await? else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert(
        "TopicName".into(),
        Value::String(topic_name(arn).to_owned()),
    );
    let fifo = attrs
        .get("FifoTopic")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if fifo {
        props.insert("FifoTopic".into(), Value::Bool(true));
    }
    let extra = if fifo { FIFO_ATTRIBUTES } else { &[] };
    for a in TOPIC_ATTRIBUTES.iter().chain(extra) {
        if let Some(raw) = attrs.get(a.name).filter(|v| !v.is_empty()) {
            props.insert(a.name.into(), property_value(a.kind, raw));
        }
    }

    let mut logging: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
    for (protocol, prefix) in [
        ("http/s", "HTTP"),
        ("sqs", "SQS"),
        ("lambda", "Lambda"),
        ("firehose", "Firehose"),
        ("application", "Application"),
    ] {
        for field in [
            "SuccessFeedbackRoleArn",
            "SuccessFeedbackSampleRate",
            "FailureFeedbackRoleArn",
        ] {
            if let Some(v) = attrs
                .get(&format!("{prefix}{field}"))
                .filter(|v| !v.is_empty())
            {
                let entry = logging.entry(protocol).or_insert_with(|| {
                    let mut m = Map::new();
                    m.insert("Protocol".into(), Value::String(protocol.to_owned()));
                    m
                });
                entry.insert(field.into(), Value::String(v.clone()));
            }
        }
    }
    if !logging.is_empty() {
        props.insert(
            "DeliveryStatusLogging".into(),
            Value::Array(logging.into_values().map(Value::Object).collect()),
        );
    }

    let subscriptions: Vec<Value> = list_subscriptions(&client, req, arn)
        .await?
        .into_iter()
        .map(|(protocol, endpoint, _)| json!({"Endpoint": endpoint, "Protocol": protocol}))
        .collect();
    if !subscriptions.is_empty() {
        props.insert("Subscription".into(), Value::Array(subscriptions));
    }

    let tags = client
        .list_tags_for_resource()
        .resource_arn(arn)
        .send()
        .await
        .map_err(|e| SNS.err(req, "ListTagsForResource", arn, &e))?;
    let tags: Vec<(String, String)> = tags
        .tags()
        .iter()
        .map(|t| (t.key().to_owned(), t.value().to_owned()))
        .collect();
    if let Some(list) = tags::value(tags.iter().map(|(k, v)| (k, v))) {
        props.insert("Tags".into(), list);
    }
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
            format!("topic {arn} does not exist"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_logging_attributes() {
        assert_eq!(
            topic_name("arn:aws:sns:us-east-1:123456789012:orders.fifo"),
            "orders.fifo"
        );
        let props = json!({"DeliveryStatusLogging": [
            {"Protocol": "sqs", "SuccessFeedbackRoleArn": "arn:r", "SuccessFeedbackSampleRate": 50},
            {"Protocol": "http/s", "FailureFeedbackRoleArn": "arn:f"}
        ]});
        let props = props.as_object().cloned().unwrap_or_default();
        let req = ResourceRequest {
            logical_id: "T",
            resource_type: TOPIC,
            properties: &props,
            client_token: None,
        };
        let attrs = logging_attributes(&req, &Props::new(&req)).expect("valid");
        assert_eq!(
            attrs.get("SQSSuccessFeedbackRoleArn").map(String::as_str),
            Some("arn:r")
        );
        assert_eq!(
            attrs
                .get("SQSSuccessFeedbackSampleRate")
                .map(String::as_str),
            Some("50")
        );
        assert_eq!(
            attrs.get("HTTPFailureFeedbackRoleArn").map(String::as_str),
            Some("arn:f")
        );
        assert_eq!(attrs.len(), 3);
    }
}
