//! `AWS::SQS::Queue`: physical id and `Ref` are the queue URL; `Fn::GetAtt` offers `Arn`,
//! `QueueName` and `QueueUrl`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::QueueAttributeName;
use aws_sdk_sqs::Client;
use serde_json::{Map, Value};

use super::{client, is_not_found, queue_attributes, with_properties, QUEUE, SQS};
use crate::aws::error_code;
use crate::provider::props::{changed, changed_properties, Props};
use crate::provider::sdk::scaffold::attributes::{self, attr, property_value, Attribute, Kind};
use crate::provider::sdk::scaffold::tags;
use crate::provider::{
    naming, schema, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// How long a create waits out SQS's "deleted a queue of this name less than 60 s ago".
const DELETED_RECENTLY_WAIT: Duration = Duration::from_secs(75);

/// Queue attributes set by the CloudFormation property of the same name.
const QUEUE_ATTRIBUTES: &[Attribute] = &[
    attr("ContentBasedDeduplication", Kind::Bool, "false"),
    attr("DeduplicationScope", Kind::Str, "queue"),
    attr("DelaySeconds", Kind::Int, "0"),
    attr("FifoThroughputLimit", Kind::Str, "perQueue"),
    attr("KmsDataKeyReusePeriodSeconds", Kind::Int, "300"),
    attr("KmsMasterKeyId", Kind::Str, ""),
    attr("MaximumMessageSize", Kind::Int, "1048576"),
    attr("MessageRetentionPeriod", Kind::Int, "345600"),
    attr("ReceiveMessageWaitTimeSeconds", Kind::Int, "0"),
    attr(
        "RedriveAllowPolicy",
        Kind::Json,
        r#"{"redrivePermission":"allowAll"}"#,
    ),
    attr("RedrivePolicy", Kind::Json, ""),
    attr("SqsManagedSseEnabled", Kind::Bool, "true"),
    attr("VisibilityTimeout", Kind::Int, "30"),
];

/// The attributes only FIFO queues accept.
const FIFO_ONLY: &[&str] = &[
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
];

fn fifo_only(a: &Attribute) -> bool {
    FIFO_ONLY.contains(&a.name)
}

/// Every property a queue's provider sends: the attribute table, the name, FIFO and tags.
pub(super) fn properties() -> Vec<&'static str> {
    attributes::names(&[QUEUE_ATTRIBUTES], &["FifoQueue", "QueueName", "Tags"])
}

/// The queue name at the end of a queue URL.
fn queue_name_from_url(url: &str) -> &str {
    url.trim_end_matches('/').rsplit('/').next().unwrap_or(url)
}

fn is_fifo(props: &Props<'_>) -> Result<bool, ProviderError> {
    Ok(props.bool("FifoQueue")?.unwrap_or(false))
}
/// `Arn`, `QueueName` and `QueueUrl` for the queue at `url`.
async fn queue_provisioned(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    url: &str,
) -> Result<Provisioned, ProviderError> {
    let attrs = queue_attributes(client, req, url)
        .await?
        .ok_or_else(|| ProviderError::failed(req, format!("queue {url} does not exist")))?;
    let name = queue_name_from_url(url).to_owned();
    let arn = attrs
        .get(&QueueAttributeName::QueueArn)
        .cloned()
        .unwrap_or_else(|| {
            format!(
                "arn:{}:sqs:{}:{}:{}",
                ctx.partition, ctx.region, ctx.account_id, name
            )
        });
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), Value::String(arn));
    attributes.insert("QueueName".into(), Value::String(name));
    attributes.insert("QueueUrl".into(), Value::String(url.to_owned()));
    Ok(Provisioned {
        physical_id: url.to_owned(),
        attributes,
    })
}

pub(super) async fn create_queue(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let fifo = is_fifo(&props)?;
    let name = match props.str("QueueName")? {
        Some(name) => name,
        None => {
            let rules = if fifo {
                naming::SQS_FIFO_QUEUE
            } else {
                naming::SQS_QUEUE
            };
            naming::generate(ctx.stack_name, req.logical_id, rules)
        }
    };
    let mut attributes = HashMap::new();
    if fifo {
        attributes.insert(QueueAttributeName::FifoQueue, "true".to_owned());
    }
    for a in QUEUE_ATTRIBUTES {
        if let Some(v) = a.request_value(&props)? {
            attributes.insert(QueueAttributeName::from(a.name), v);
        }
    }
    let tags: HashMap<String, String> = props.tags()?.into_iter().collect();
    let client = client(ctx);

    let started = Instant::now();
    let mut delay = Duration::from_secs(1);
    let url = loop {
        let mut call = client
            .create_queue()
            .queue_name(&name)
            .set_attributes(Some(attributes.clone()));
        if !tags.is_empty() {
            call = call.set_tags(Some(tags.clone()));
        }
        match call.send().await {
            Ok(out) => {
                break out.queue_url.ok_or_else(|| {
                    ProviderError::failed(
                        req,
                        format!("SQS CreateQueue returned no URL for {name}"),
                    )
                })?
            }
            Err(e) => {
                let recently_deleted = e
                    .as_service_error()
                    .is_some_and(|s| s.is_queue_deleted_recently())
                    || error_code(&e).is_some_and(|c| c.contains("QueueDeletedRecently"));
                if recently_deleted && started.elapsed() + delay < DELETED_RECENTLY_WAIT {
                    tracing::debug!(
                        "{}: queue {name} was deleted recently; retrying in {delay:?}",
                        req.logical_id
                    );
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(10));
                    continue;
                }
                return Err(SQS.err(req, "CreateQueue", &name, &e));
            }
        }
    };
    queue_provisioned(ctx, &client, req, &url).await
}

pub(super) async fn update_queue(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    url: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    let props = Props::new(req);
    let prev_req = with_properties(req, previous);
    let prev = Props::new(&prev_req);

    if is_fifo(&prev)? != is_fifo(&props)? {
        return Ok(UpdateOutcome::NeedsReplacement {
            reason: "FifoQueue changed: a queue's type is fixed at creation".into(),
        });
    }
    // FifoQueue is compared as a boolean above (absent and false are the same queue type).
    for name in changed_properties(previous, req.properties) {
        if name != "FifoQueue" && schema::is_create_only(QUEUE, &name) {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: format!("{name} changed and cannot be updated in place"),
            });
        }
    }

    let fifo = is_fifo(&props)?;
    let mut attributes = HashMap::new();
    for a in QUEUE_ATTRIBUTES {
        if !changed(previous, req.properties, a.name) {
            continue;
        }
        let value = match a.request_value(&props)? {
            Some(v) => v,
            None if fifo_only(a) && !fifo => continue,
            // Encryption with SQS-owned keys is the default only when no KMS key is asked for.
            None if a.name == "SqsManagedSseEnabled" && props.get("KmsMasterKeyId").is_some() => {
                continue
            }
            None => a.default.to_owned(),
        };
        attributes.insert(QueueAttributeName::from(a.name), value);
    }
    let client = client(ctx);
    if !attributes.is_empty() {
        client
            .set_queue_attributes()
            .queue_url(url)
            .set_attributes(Some(attributes))
            .send()
            .await
            .map_err(|e| SQS.err(req, "SetQueueAttributes", url, &e))?;
    }

    if changed(previous, req.properties, "Tags") {
        let tags::TagChanges { set, remove } = tags::list_changes(&prev.tags()?, &props.tags()?);
        if !remove.is_empty() {
            client
                .untag_queue()
                .queue_url(url)
                .set_tag_keys(Some(remove))
                .send()
                .await
                .map_err(|e| SQS.err(req, "UntagQueue", url, &e))?;
        }
        if !set.is_empty() {
            client
                .tag_queue()
                .queue_url(url)
                .set_tags(Some(set.into_iter().collect()))
                .send()
                .await
                .map_err(|e| SQS.err(req, "TagQueue", url, &e))?;
        }
    }
    Ok(UpdateOutcome::Updated(
        queue_provisioned(ctx, &client, req, url).await?,
    ))
}

pub(super) async fn delete_queue(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    url: &str,
) -> Result<(), ProviderError> {
    match client(ctx).delete_queue().queue_url(url).send().await {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(SQS.err(req, "DeleteQueue", url, &e)),
    }
}

pub(super) async fn read_queue(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    url: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let client = client(ctx);
    let Some(attrs) = queue_attributes(&client, req, url).await? else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert(
        "QueueName".into(),
        Value::String(queue_name_from_url(url).to_owned()),
    );
    let fifo = attrs
        .get(&QueueAttributeName::FifoQueue)
        .is_some_and(|v| v == "true");
    if fifo {
        props.insert("FifoQueue".into(), Value::Bool(true));
    }
    for a in QUEUE_ATTRIBUTES {
        if fifo_only(a) && !fifo {
            continue;
        }
        if let Some(raw) = attrs
            .get(&QueueAttributeName::from(a.name))
            .filter(|v| !v.is_empty())
        {
            props.insert(a.name.into(), property_value(a.kind, raw));
        }
    }
    let tags = match client.list_queue_tags().queue_url(url).send().await {
        Ok(out) => out.tags.unwrap_or_default(),
        Err(e) if is_not_found(&e) => return Ok(None),
        Err(e) => return Err(SQS.err(req, "ListQueueTags", url, &e)),
    };
    if let Some(list) = tags::value(&tags) {
        props.insert("Tags".into(), list);
    }
    Ok(Some(props))
}

/// Imports by URL, or by queue name (looked up with GetQueueUrl).
pub(super) async fn import_queue(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Provisioned, ProviderError> {
    let client = client(ctx);
    let url = if id.contains("://") {
        id.to_owned()
    } else {
        client
            .get_queue_url()
            .queue_name(id)
            .send()
            .await
            .map_err(|e| SQS.err(req, "GetQueueUrl", id, &e))?
            .queue_url
            .ok_or_else(|| {
                ProviderError::failed(req, format!("SQS GetQueueUrl returned no URL for {id}"))
            })?
    };
    queue_provisioned(ctx, &client, req, &url).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_name_comes_from_the_url() {
        assert_eq!(
            queue_name_from_url("https://sqs.us-east-1.amazonaws.com/123456789012/q1"),
            "q1"
        );
        assert_eq!(
            queue_name_from_url("http://127.0.0.1:5000/123456789012/q.fifo/"),
            "q.fifo"
        );
    }
}
