//! S3's answers turned back into CloudFormation `AWS::S3::Bucket` property shapes, for reads
//! (drift, import). Unset values are left out (see [`compact`]).

use aws_sdk_s3::types::{
    CorsRule, Destination, IntelligentTieringConfiguration, InventoryConfiguration, LifecycleRule,
    LoggingEnabled, MetricsConfiguration, MetricsFilter, NotificationConfigurationFilter,
    ObjectLockConfiguration, ReplicationRule, RoutingRule, ServerSideEncryptionRule, Tag,
};
use aws_smithy_types::date_time::Format;
use aws_smithy_types::DateTime;
use serde_json::{json, Map, Value};

use super::super::iam::{aws_error, Sdk};
use super::json::compact;
use super::not_configured;
use crate::provider::{ProviderError, ResourceRequest};

fn date(d: Option<&DateTime>) -> Value {
    d.and_then(|d| d.fmt(Format::DateTime).ok())
        .map(Value::String)
        .unwrap_or(Value::Null)
}

pub fn tags(tags: &[Tag]) -> Value {
    Value::Array(
        tags.iter()
            .map(|t| json!({"Key": t.key(), "Value": t.value()}))
            .collect(),
    )
}

pub fn encryption(rules: &[ServerSideEncryptionRule]) -> Value {
    compact(json!({
        "ServerSideEncryptionConfiguration": rules.iter().map(|r| {
            let default = r.apply_server_side_encryption_by_default();
            json!({
                "BucketKeyEnabled": r.bucket_key_enabled(),
                "ServerSideEncryptionByDefault": default.map(|d| json!({
                    "SSEAlgorithm": d.sse_algorithm().as_str(),
                    "KMSMasterKeyID": d.kms_master_key_id(),
                })),
            })
        }).collect::<Vec<_>>(),
    }))
}

#[allow(deprecated)] // rules written with the V1 top-level Prefix
pub fn lifecycle(rules: &[LifecycleRule], minimum_size: Option<&str>) -> Value {
    let rules: Vec<Value> = rules
        .iter()
        .map(|r| {
            let filter = r.filter();
            let and = filter.and_then(|f| f.and());
            let tags: Vec<&Tag> = match (and, filter.and_then(|f| f.tag())) {
                (Some(a), _) => a.tags().iter().collect(),
                (None, Some(t)) => vec![t],
                _ => Vec::new(),
            };
            let prefix = and
                .and_then(|a| a.prefix())
                .or(filter.and_then(|f| f.prefix()))
                .or(r.prefix())
                .filter(|p| !p.is_empty());
            let greater = and
                .and_then(|a| a.object_size_greater_than())
                .or(filter.and_then(|f| f.object_size_greater_than()));
            let less = and
                .and_then(|a| a.object_size_less_than())
                .or(filter.and_then(|f| f.object_size_less_than()));
            let expiration = r.expiration();
            json!({
                "Id": r.id(),
                "Status": r.status().as_str(),
                "Prefix": prefix,
                "TagFilters": tags.iter().map(|t| json!({"Key": t.key(), "Value": t.value()})).collect::<Vec<_>>(),
                "ObjectSizeGreaterThan": greater,
                "ObjectSizeLessThan": less,
                "ExpirationInDays": expiration.and_then(|e| e.days()),
                "ExpirationDate": date(expiration.and_then(|e| e.date())),
                "ExpiredObjectDeleteMarker": expiration.and_then(|e| e.expired_object_delete_marker()),
                "Transitions": r.transitions().iter().map(|t| json!({
                    "StorageClass": t.storage_class().map(|s| s.as_str()),
                    "TransitionInDays": t.days(),
                    "TransitionDate": date(t.date()),
                })).collect::<Vec<_>>(),
                "NoncurrentVersionTransitions": r.noncurrent_version_transitions().iter().map(|t| json!({
                    "StorageClass": t.storage_class().map(|s| s.as_str()),
                    "TransitionInDays": t.noncurrent_days(),
                    "NewerNoncurrentVersions": t.newer_noncurrent_versions(),
                })).collect::<Vec<_>>(),
                "NoncurrentVersionExpiration": r.noncurrent_version_expiration().map(|e| json!({
                    "NoncurrentDays": e.noncurrent_days(),
                    "NewerNoncurrentVersions": e.newer_noncurrent_versions(),
                })),
                "AbortIncompleteMultipartUpload": r.abort_incomplete_multipart_upload().map(|a| json!({
                    "DaysAfterInitiation": a.days_after_initiation(),
                })),
            })
        })
        .collect();
    compact(json!({"Rules": rules, "TransitionDefaultMinimumObjectSize": minimum_size}))
}

pub fn cors(rules: &[CorsRule]) -> Value {
    compact(json!({
        "CorsRules": rules.iter().map(|r| json!({
            "Id": r.id(),
            "AllowedHeaders": r.allowed_headers(),
            "AllowedMethods": r.allowed_methods(),
            "AllowedOrigins": r.allowed_origins(),
            "ExposedHeaders": r.expose_headers(),
            "MaxAge": r.max_age_seconds(),
        })).collect::<Vec<_>>(),
    }))
}

pub fn website(
    index: Option<&str>,
    error: Option<&str>,
    redirect_all: Option<(&str, Option<&str>)>,
    routing: &[RoutingRule],
) -> Value {
    compact(json!({
        "IndexDocument": index,
        "ErrorDocument": error,
        "RedirectAllRequestsTo": redirect_all.map(|(host, protocol)| json!({"HostName": host, "Protocol": protocol})),
        "RoutingRules": routing.iter().map(|r| json!({
            "RedirectRule": r.redirect().map(|d| json!({
                "HostName": d.host_name(),
                "HttpRedirectCode": d.http_redirect_code(),
                "Protocol": d.protocol().map(|p| p.as_str()),
                "ReplaceKeyPrefixWith": d.replace_key_prefix_with(),
                "ReplaceKeyWith": d.replace_key_with(),
            })),
            "RoutingRuleCondition": r.condition().map(|c| json!({
                "HttpErrorCodeReturnedEquals": c.http_error_code_returned_equals(),
                "KeyPrefixEquals": c.key_prefix_equals(),
            })),
        })).collect::<Vec<_>>(),
    }))
}

pub fn logging(l: &LoggingEnabled) -> Value {
    let format = l.target_object_key_format().map(|f| {
        let mut m = serde_json::Map::new();
        if f.simple_prefix().is_some() {
            m.insert("SimplePrefix".into(), json!({}));
        }
        if let Some(p) = f.partitioned_prefix() {
            m.insert(
                "PartitionedPrefix".into(),
                compact(
                    json!({"PartitionDateSource": p.partition_date_source().map(|s| s.as_str())}),
                ),
            );
        }
        Value::Object(m)
    });
    let mut v = compact(json!({
        "DestinationBucketName": l.target_bucket(),
        "LogFilePrefix": Some(l.target_prefix()).filter(|p| !p.is_empty()),
    }));
    if let (Some(format), Value::Object(m)) = (format, &mut v) {
        m.insert("TargetObjectKeyFormat".into(), format);
    }
    v
}

pub fn object_lock(c: &ObjectLockConfiguration) -> Value {
    let retention = c.rule().and_then(|r| r.default_retention());
    compact(json!({
        "ObjectLockEnabled": c.object_lock_enabled().map(|e| e.as_str()),
        "Rule": retention.map(|d| json!({"DefaultRetention": {
            "Mode": d.mode().map(|m| m.as_str()),
            // A retention period is Days or Years, never zero: a 0 is the unset one.
            "Days": d.days().filter(|n| *n > 0),
            "Years": d.years().filter(|n| *n > 0),
        }})),
    }))
}

fn notification_filter(f: Option<&NotificationConfigurationFilter>) -> Value {
    let rules: Vec<Value> = f
        .and_then(|f| f.key())
        .map(|k| k.filter_rules())
        .unwrap_or_default()
        .iter()
        .map(|r| json!({"Name": r.name().map(|n| n.as_str()), "Value": r.value()}))
        .collect();
    if rules.is_empty() {
        Value::Null
    } else {
        json!({"S3Key": {"Rules": rules}})
    }
}

/// One CloudFormation configuration per event, as templates declare them.
pub fn notification(
    n: &aws_sdk_s3::operation::get_bucket_notification_configuration::GetBucketNotificationConfigurationOutput,
) -> Value {
    let mut queues = Vec::new();
    for c in n.queue_configurations() {
        for e in c.events() {
            queues.push(json!({"Event": e.as_str(), "Queue": c.queue_arn(), "Filter": notification_filter(c.filter())}));
        }
    }
    let mut topics = Vec::new();
    for c in n.topic_configurations() {
        for e in c.events() {
            topics.push(json!({"Event": e.as_str(), "Topic": c.topic_arn(), "Filter": notification_filter(c.filter())}));
        }
    }
    let mut functions = Vec::new();
    for c in n.lambda_function_configurations() {
        for e in c.events() {
            functions.push(json!({"Event": e.as_str(), "Function": c.lambda_function_arn(), "Filter": notification_filter(c.filter())}));
        }
    }
    compact(json!({
        "QueueConfigurations": queues,
        "TopicConfigurations": topics,
        "LambdaConfigurations": functions,
        "EventBridgeConfiguration": n.event_bridge_configuration().map(|_| json!({"EventBridgeEnabled": true})),
    }))
}

fn tag_filters(tags: &[Tag]) -> Vec<Value> {
    tags.iter()
        .map(|t| json!({"Key": t.key(), "Value": t.value()}))
        .collect()
}

pub fn metrics(c: &MetricsConfiguration) -> Value {
    let (prefix, access_point, tags) = match c.filter() {
        Some(MetricsFilter::Prefix(p)) => (Some(p.as_str()), None, Vec::new()),
        Some(MetricsFilter::AccessPointArn(a)) => (None, Some(a.as_str()), Vec::new()),
        Some(MetricsFilter::Tag(t)) => (None, None, tag_filters(std::slice::from_ref(t))),
        Some(MetricsFilter::And(a)) => (a.prefix(), a.access_point_arn(), tag_filters(a.tags())),
        _ => (None, None, Vec::new()),
    };
    compact(
        json!({"Id": c.id(), "Prefix": prefix, "AccessPointArn": access_point, "TagFilters": tags}),
    )
}

pub fn intelligent_tiering(c: &IntelligentTieringConfiguration) -> Value {
    let f = c.filter();
    let and = f.and_then(|f| f.and());
    let tags = match (and, f.and_then(|f| f.tag())) {
        (Some(a), _) => tag_filters(a.tags()),
        (None, Some(t)) => tag_filters(std::slice::from_ref(t)),
        _ => Vec::new(),
    };
    compact(json!({
        "Id": c.id(),
        "Status": c.status().as_str(),
        "Prefix": and.and_then(|a| a.prefix()).or(f.and_then(|f| f.prefix())),
        "TagFilters": tags,
        "Tierings": c.tierings().iter().map(|t| json!({"AccessTier": t.access_tier().as_str(), "Days": t.days()})).collect::<Vec<_>>(),
    }))
}

pub fn inventory(c: &InventoryConfiguration) -> Value {
    let d = c.destination().and_then(|d| d.s3_bucket_destination());
    compact(json!({
        "Id": c.id(),
        "Enabled": c.is_enabled(),
        "Destination": d.map(|d| json!({
            "BucketArn": d.bucket(),
            "Format": d.format().as_str(),
            "BucketAccountId": d.account_id(),
            "Prefix": d.prefix(),
        })),
        "Prefix": c.filter().map(|f| f.prefix()),
        "IncludedObjectVersions": c.included_object_versions().as_str(),
        "OptionalFields": c.optional_fields().iter().map(|f| f.as_str()).collect::<Vec<_>>(),
        "ScheduleFrequency": c.schedule().map(|s| s.frequency().as_str()),
    }))
}

fn replication_destination(d: Option<&Destination>) -> Value {
    let Some(d) = d else { return Value::Null };
    json!({
        "Bucket": d.bucket(),
        "Account": d.account(),
        "StorageClass": d.storage_class().map(|s| s.as_str()),
        "AccessControlTranslation": d.access_control_translation().map(|t| json!({"Owner": t.owner().as_str()})),
        "EncryptionConfiguration": d.encryption_configuration().map(|e| json!({"ReplicaKmsKeyID": e.replica_kms_key_id()})),
        "Metrics": d.metrics().map(|m| json!({
            "Status": m.status().as_str(),
            "EventThreshold": m.event_threshold().map(|t| json!({"Minutes": t.minutes()})),
        })),
        "ReplicationTime": d.replication_time().map(|t| json!({
            "Status": t.status().as_str(),
            "Time": t.time().map(|v| json!({"Minutes": v.minutes()})),
        })),
    })
}

#[allow(deprecated)] // rules written with the V1 top-level Prefix
pub fn replication(role: &str, rules: &[ReplicationRule]) -> Value {
    let rules: Vec<Value> = rules
        .iter()
        .map(|r| {
            let filter = r.filter().map(|f| match (f.and(), f.tag()) {
                (Some(a), _) => json!({"And": {"Prefix": a.prefix(), "TagFilters": tag_filters(a.tags())}}),
                (None, Some(t)) => json!({"TagFilter": {"Key": t.key(), "Value": t.value()}}),
                _ => json!({"Prefix": f.prefix()}),
            });
            let criteria = r.source_selection_criteria();
            json!({
                "Id": r.id(),
                "Priority": r.priority(),
                "Prefix": r.prefix(),
                "Filter": filter,
                "Status": r.status().as_str(),
                "Destination": replication_destination(r.destination()),
                "DeleteMarkerReplication": r.delete_marker_replication().map(|d| json!({"Status": d.status().map(|s| s.as_str())})),
                "SourceSelectionCriteria": criteria.map(|c| json!({
                    "SseKmsEncryptedObjects": c.sse_kms_encrypted_objects().map(|s| json!({"Status": s.status().as_str()})),
                    "ReplicaModifications": c.replica_modifications().map(|m| json!({"Status": m.status().as_str()})),
                })),
            })
        })
        .collect();
    compact(json!({"Role": role, "Rules": rules}))
}

/// A Get call's answer: `None` when the configuration is not set.
fn answer<T, E>(
    req: &ResourceRequest<'_>,
    op: &'static str,
    bucket: &str,
    r: Result<T, Sdk<E>>,
) -> Result<Option<T>, ProviderError>
where
    E: aws_sdk_s3::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if not_configured(&e) => Ok(None),
        Err(e) if unreadable_success(&e) => {
            // Some S3-compatible stores (and moto) answer a few of these calls with a 200
            // whose body the SDK cannot parse. Leave that one configuration out of the read
            // rather than failing the whole read.
            tracing::warn!(
                "{} ({}): s3 {op} on {bucket} answered 200 with a body the SDK cannot read; \
                 leaving it out of the read",
                req.logical_id,
                req.resource_type
            );
            Ok(None)
        }
        Err(e) => Err(aws_error(req, "s3", op, bucket, &e)),
    }
}

/// A successful status with a body that did not deserialize.
fn unreadable_success<E: aws_sdk_s3::error::ProvideErrorMetadata>(err: &Sdk<E>) -> bool {
    let status = err.raw_response().map(|r| r.status().as_u16());
    status == Some(200) && crate::aws::error_code(err).is_none()
}

/// Every sub-configuration the bucket has, as CloudFormation properties, into `props`.
pub async fn configurations(
    s3: &aws_sdk_s3::Client,
    req: &ResourceRequest<'_>,
    bucket: &str,
    props: &mut Map<String, Value>,
) -> Result<(), ProviderError> {
    let mut set = |k: &str, v: Value| {
        if !v.is_null() && v != Value::Object(Map::new()) {
            props.insert(k.into(), v);
        }
    };
    if let Some(out) = answer(
        req,
        "GetBucketTagging",
        bucket,
        s3.get_bucket_tagging().bucket(bucket).send().await,
    )? {
        if !out.tag_set().is_empty() {
            set("Tags", tags(out.tag_set()));
        }
    }
    if let Some(out) = answer(
        req,
        "GetBucketVersioning",
        bucket,
        s3.get_bucket_versioning().bucket(bucket).send().await,
    )? {
        if let Some(status) = out.status() {
            set(
                "VersioningConfiguration",
                serde_json::json!({"Status": status.as_str()}),
            );
        }
    }
    if let Some(out) = answer(
        req,
        "GetBucketEncryption",
        bucket,
        s3.get_bucket_encryption().bucket(bucket).send().await,
    )? {
        if let Some(c) = out.server_side_encryption_configuration() {
            set("BucketEncryption", encryption(c.rules()));
        }
    }
    if let Some(out) = answer(
        req,
        "GetPublicAccessBlock",
        bucket,
        s3.get_public_access_block().bucket(bucket).send().await,
    )? {
        if let Some(c) = out.public_access_block_configuration() {
            set(
                "PublicAccessBlockConfiguration",
                serde_json::json!({
                    "BlockPublicAcls": c.block_public_acls().unwrap_or(false),
                    "IgnorePublicAcls": c.ignore_public_acls().unwrap_or(false),
                    "BlockPublicPolicy": c.block_public_policy().unwrap_or(false),
                    "RestrictPublicBuckets": c.restrict_public_buckets().unwrap_or(false),
                }),
            );
        }
    }
    if let Some(out) = answer(
        req,
        "GetBucketOwnershipControls",
        bucket,
        s3.get_bucket_ownership_controls()
            .bucket(bucket)
            .send()
            .await,
    )? {
        if let Some(c) = out.ownership_controls() {
            let rules: Vec<Value> = c
                .rules()
                .iter()
                .map(|r| serde_json::json!({"ObjectOwnership": r.object_ownership().as_str()}))
                .collect();
            set("OwnershipControls", serde_json::json!({"Rules": rules}));
        }
    }
    if let Some(out) = answer(
        req,
        "GetBucketLifecycleConfiguration",
        bucket,
        s3.get_bucket_lifecycle_configuration()
            .bucket(bucket)
            .send()
            .await,
    )? {
        if !out.rules().is_empty() {
            let minimum = out
                .transition_default_minimum_object_size()
                .map(|m| m.as_str());
            set("LifecycleConfiguration", lifecycle(out.rules(), minimum));
        }
    }
    if let Some(out) = answer(
        req,
        "GetBucketCors",
        bucket,
        s3.get_bucket_cors().bucket(bucket).send().await,
    )? {
        if !out.cors_rules().is_empty() {
            set("CorsConfiguration", cors(out.cors_rules()));
        }
    }
    if let Some(out) = answer(
        req,
        "GetBucketWebsite",
        bucket,
        s3.get_bucket_website().bucket(bucket).send().await,
    )? {
        let redirect = out
            .redirect_all_requests_to()
            .map(|r| (r.host_name(), r.protocol().map(|p| p.as_str())));
        set(
            "WebsiteConfiguration",
            website(
                out.index_document().map(|d| d.suffix()),
                out.error_document().map(|d| d.key()),
                redirect,
                out.routing_rules(),
            ),
        );
    }
    if let Some(out) = answer(
        req,
        "GetBucketLogging",
        bucket,
        s3.get_bucket_logging().bucket(bucket).send().await,
    )? {
        if let Some(l) = out.logging_enabled() {
            set("LoggingConfiguration", logging(l));
        }
    }
    if let Some(out) = answer(
        req,
        "GetBucketAccelerateConfiguration",
        bucket,
        s3.get_bucket_accelerate_configuration()
            .bucket(bucket)
            .send()
            .await,
    )? {
        if let Some(status) = out.status() {
            set(
                "AccelerateConfiguration",
                serde_json::json!({"AccelerationStatus": status.as_str()}),
            );
        }
    }
    if let Some(out) = answer(
        req,
        "GetObjectLockConfiguration",
        bucket,
        s3.get_object_lock_configuration()
            .bucket(bucket)
            .send()
            .await,
    )? {
        if let Some(c) = out.object_lock_configuration() {
            set("ObjectLockEnabled", Value::Bool(true));
            set("ObjectLockConfiguration", object_lock(c));
        }
    }
    if let Some(out) = answer(
        req,
        "GetBucketNotificationConfiguration",
        bucket,
        s3.get_bucket_notification_configuration()
            .bucket(bucket)
            .send()
            .await,
    )? {
        set("NotificationConfiguration", notification(&out));
    }
    if let Some(out) = answer(
        req,
        "ListBucketMetricsConfigurations",
        bucket,
        s3.list_bucket_metrics_configurations()
            .bucket(bucket)
            .send()
            .await,
    )? {
        let list: Vec<Value> = out
            .metrics_configuration_list()
            .iter()
            .map(metrics)
            .collect();
        if !list.is_empty() {
            set("MetricsConfigurations", Value::Array(list));
        }
    }
    if let Some(out) = answer(
        req,
        "ListBucketIntelligentTieringConfigurations",
        bucket,
        s3.list_bucket_intelligent_tiering_configurations()
            .bucket(bucket)
            .send()
            .await,
    )? {
        let list: Vec<Value> = out
            .intelligent_tiering_configuration_list()
            .iter()
            .map(intelligent_tiering)
            .collect();
        if !list.is_empty() {
            set("IntelligentTieringConfigurations", Value::Array(list));
        }
    }
    if let Some(out) = answer(
        req,
        "ListBucketInventoryConfigurations",
        bucket,
        s3.list_bucket_inventory_configurations()
            .bucket(bucket)
            .send()
            .await,
    )? {
        let list: Vec<Value> = out
            .inventory_configuration_list()
            .iter()
            .map(inventory)
            .collect();
        if !list.is_empty() {
            set("InventoryConfigurations", Value::Array(list));
        }
    }
    if let Some(out) = answer(
        req,
        "GetBucketReplication",
        bucket,
        s3.get_bucket_replication().bucket(bucket).send().await,
    )? {
        if let Some(c) = out.replication_configuration() {
            set("ReplicationConfiguration", replication(c.role(), c.rules()));
        }
    }
    Ok(())
}
