//! `AWS::SQS::Queue`: physical id and `Ref` are the queue URL; `Fn::GetAtt` offers `Arn`,
//! `QueueName` and `QueueUrl`.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::QueueAttributeName;
use aws_sdk_sqs::Client;
use serde_json::{Map, Value};

use super::{
    aws_error, client, is_not_found, property_value, queue_attributes, with_properties, Kind, QUEUE,
};
use crate::aws::error_code;
use crate::provider::props::{changed, changed_properties, Props};
use crate::provider::{
    naming, schema, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// How long a create waits out SQS's "deleted a queue of this name less than 60 s ago".
const DELETED_RECENTLY_WAIT: Duration = Duration::from_secs(75);

struct QueueAttribute {
    name: &'static str,
    kind: Kind,
    /// The value that restores the service default when the property is removed.
    default: &'static str,
    /// Only FIFO queues accept it.
    fifo_only: bool,
}

const fn attr(
    name: &'static str,
    kind: Kind,
    default: &'static str,
    fifo_only: bool,
) -> QueueAttribute {
    QueueAttribute {
        name,
        kind,
        default,
        fifo_only,
    }
}

const QUEUE_ATTRIBUTES: &[QueueAttribute] = &[
    attr("ContentBasedDeduplication", Kind::Bool, "false", true),
    attr("DeduplicationScope", Kind::Str, "queue", true),
    attr("DelaySeconds", Kind::Int, "0", false),
    attr("FifoThroughputLimit", Kind::Str, "perQueue", true),
    attr("KmsDataKeyReusePeriodSeconds", Kind::Int, "300", false),
    attr("KmsMasterKeyId", Kind::Str, "", false),
    attr("MaximumMessageSize", Kind::Int, "1048576", false),
    attr("MessageRetentionPeriod", Kind::Int, "345600", false),
    attr("ReceiveMessageWaitTimeSeconds", Kind::Int, "0", false),
    attr(
        "RedriveAllowPolicy",
        Kind::Json,
        r#"{"redrivePermission":"allowAll"}"#,
        false,
    ),
    attr("RedrivePolicy", Kind::Json, "", false),
    attr("SqsManagedSseEnabled", Kind::Bool, "true", false),
    attr("VisibilityTimeout", Kind::Int, "30", false),
];

/// The attribute value a property asks for, in the string form SQS takes.
fn attribute_value(props: &Props<'_>, a: &QueueAttribute) -> Result<Option<String>, ProviderError> {
    Ok(match a.kind {
        Kind::Int => props.i64(a.name)?.map(|n| n.to_string()),
        Kind::Bool => props.bool(a.name)?.map(|b| b.to_string()),
        Kind::Str => props.str(a.name)?,
        Kind::Json => props.json_document(a.name)?,
    })
}

/// The queue name at the end of a queue URL.
fn queue_name_from_url(url: &str) -> &str {
    url.trim_end_matches('/').rsplit('/').next().unwrap_or(url)
}

fn tag_map(tags: Vec<(String, String)>) -> HashMap<String, String> {
    tags.into_iter().collect()
}

/// Tags to set and tag keys to remove to go from `previous` to `desired`.
fn tag_changes(
    previous: &[(String, String)],
    desired: &[(String, String)],
) -> (HashMap<String, String>, Vec<String>) {
    let old: BTreeMap<&str, &str> = previous
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let new: BTreeMap<&str, &str> = desired
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let set = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(*v))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let remove = old
        .keys()
        .filter(|k| !new.contains_key(*k))
        .map(|k| k.to_string())
        .collect();
    (set, remove)
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
        if let Some(v) = attribute_value(&props, a)? {
            attributes.insert(QueueAttributeName::from(a.name), v);
        }
    }
    let tags = tag_map(props.tags()?);
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
                return Err(aws_error(req, "CreateQueue", &name, &e));
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
        let value = match attribute_value(&props, a)? {
            Some(v) => v,
            None if a.fifo_only && !fifo => continue,
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
            .map_err(|e| aws_error(req, "SetQueueAttributes", url, &e))?;
    }

    if changed(previous, req.properties, "Tags") {
        let (set, remove) = tag_changes(&prev.tags()?, &props.tags()?);
        if !remove.is_empty() {
            client
                .untag_queue()
                .queue_url(url)
                .set_tag_keys(Some(remove))
                .send()
                .await
                .map_err(|e| aws_error(req, "UntagQueue", url, &e))?;
        }
        if !set.is_empty() {
            client
                .tag_queue()
                .queue_url(url)
                .set_tags(Some(set))
                .send()
                .await
                .map_err(|e| aws_error(req, "TagQueue", url, &e))?;
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
        Err(e) => Err(aws_error(req, "DeleteQueue", url, &e)),
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
        if a.fifo_only && !fifo {
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
        Err(e) => return Err(aws_error(req, "ListQueueTags", url, &e)),
    };
    if !tags.is_empty() {
        let sorted: BTreeMap<String, String> = tags.into_iter().collect();
        let list = sorted
            .into_iter()
            .map(|(k, v)| serde_json::json!({"Key": k, "Value": v}))
            .collect();
        props.insert("Tags".into(), Value::Array(list));
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
            .map_err(|e| aws_error(req, "GetQueueUrl", id, &e))?
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

    #[test]
    fn tag_changes_set_new_and_changed_and_remove_dropped() {
        let t = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let (set, remove) =
            tag_changes(&t(&[("a", "1"), ("b", "2")]), &t(&[("b", "3"), ("c", "4")]));
        assert_eq!(set.len(), 2);
        assert_eq!(set.get("b").map(String::as_str), Some("3"));
        assert_eq!(set.get("c").map(String::as_str), Some("4"));
        assert_eq!(remove, ["a"]);
    }

    #[test]
    fn attribute_values_read_back_as_properties() {
        assert_eq!(property_value(Kind::Int, "30"), Value::from(30));
        assert_eq!(property_value(Kind::Bool, "true"), Value::Bool(true));
        assert_eq!(
            property_value(Kind::Json, r#"{"maxReceiveCount":3}"#),
            serde_json::json!({"maxReceiveCount": 3})
        );
    }
}
