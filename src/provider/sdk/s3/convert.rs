//! CloudFormation `AWS::S3::Bucket` sub-configurations turned into S3 SDK request shapes.
//! Every function takes the property's JSON object and fails with a message naming the path.

use aws_sdk_s3::types::{
    AbortIncompleteMultipartUpload, AccelerateConfiguration, AccessControlTranslation,
    BucketAccelerateStatus, BucketLifecycleConfiguration, BucketLoggingStatus,
    BucketVersioningStatus, Condition, CorsConfiguration, CorsRule, DefaultRetention,
    DeleteMarkerReplication, DeleteMarkerReplicationStatus, Destination, EncryptionConfiguration,
    ErrorDocument, Event, EventBridgeConfiguration, ExpirationStatus, FilterRule, FilterRuleName,
    IndexDocument, IntelligentTieringAccessTier, IntelligentTieringAndOperator,
    IntelligentTieringConfiguration, IntelligentTieringFilter, IntelligentTieringStatus,
    InventoryConfiguration, InventoryDestination, InventoryFilter, InventoryFormat,
    InventoryFrequency, InventoryIncludedObjectVersions, InventoryOptionalField,
    InventoryS3BucketDestination, InventorySchedule, LambdaFunctionConfiguration,
    LifecycleExpiration, LifecycleRule, LifecycleRuleAndOperator, LifecycleRuleFilter,
    LoggingEnabled, Metrics, MetricsAndOperator, MetricsConfiguration, MetricsFilter,
    MetricsStatus, NoncurrentVersionExpiration, NoncurrentVersionTransition,
    NotificationConfiguration, NotificationConfigurationFilter, ObjectLockConfiguration,
    ObjectLockEnabled, ObjectLockRetentionMode, ObjectLockRule, ObjectOwnership, OwnerOverride,
    OwnershipControls, OwnershipControlsRule, PartitionDateSource, PartitionedPrefix, Protocol,
    PublicAccessBlockConfiguration, QueueConfiguration, Redirect, RedirectAllRequestsTo,
    ReplicaModifications, ReplicaModificationsStatus, ReplicationConfiguration, ReplicationRule,
    ReplicationRuleAndOperator, ReplicationRuleFilter, ReplicationRuleStatus, ReplicationTime,
    ReplicationTimeStatus, ReplicationTimeValue, RoutingRule, S3KeyFilter, ServerSideEncryption,
    ServerSideEncryptionByDefault, ServerSideEncryptionConfiguration, ServerSideEncryptionRule,
    SimplePrefix, SourceSelectionCriteria, SseKmsEncryptedObjects, SseKmsEncryptedObjectsStatus,
    StorageClass, Tag, TargetObjectKeyFormat, Tiering, TopicConfiguration, Transition,
    TransitionDefaultMinimumObjectSize, TransitionStorageClass, VersioningConfiguration,
};
use aws_smithy_types::date_time::Format;
use aws_smithy_types::DateTime;

use super::json::{Conv, Obj};

fn built<T, E: std::fmt::Display>(o: &Obj<'_>, r: Result<T, E>) -> Conv<T> {
    r.map_err(|e| format!("property {} is incomplete: {e}", o.path()))
}

fn s3_tag(o: &Obj<'_>, (k, v): (String, String)) -> Conv<Tag> {
    built(o, Tag::builder().key(k).value(v).build())
}

fn s3_tags(o: &Obj<'_>, tags: Vec<(String, String)>) -> Conv<Vec<Tag>> {
    tags.into_iter().map(|t| s3_tag(o, t)).collect()
}

/// An ISO 8601 date or timestamp (`2030-01-01` or `2030-01-01T00:00:00.000Z`).
fn timestamp(o: &Obj<'_>, key: &str) -> Conv<Option<DateTime>> {
    let Some(s) = o.str(key)? else {
        return Ok(None);
    };
    let full = if s.len() == 10 {
        format!("{s}T00:00:00Z")
    } else {
        s
    };
    DateTime::from_str(&full, Format::DateTime)
        .map(Some)
        .map_err(|_| o.err(key, "an ISO 8601 timestamp"))
}

pub fn versioning(o: &Obj<'_>) -> Conv<VersioningConfiguration> {
    Ok(VersioningConfiguration::builder()
        .status(BucketVersioningStatus::from(o.req_str("Status")?.as_str()))
        .build())
}

pub fn encryption(o: &Obj<'_>) -> Conv<ServerSideEncryptionConfiguration> {
    let mut rules = Vec::new();
    for r in o.objs("ServerSideEncryptionConfiguration")? {
        let default = match r.obj("ServerSideEncryptionByDefault")? {
            Some(d) => Some(built(
                &d,
                ServerSideEncryptionByDefault::builder()
                    .sse_algorithm(ServerSideEncryption::from(
                        d.req_str("SSEAlgorithm")?.as_str(),
                    ))
                    .set_kms_master_key_id(d.str("KMSMasterKeyID")?)
                    .build(),
            )?),
            None => None,
        };
        rules.push(
            ServerSideEncryptionRule::builder()
                .set_apply_server_side_encryption_by_default(default)
                .set_bucket_key_enabled(r.bool("BucketKeyEnabled")?)
                .build(),
        );
    }
    built(
        o,
        ServerSideEncryptionConfiguration::builder()
            .set_rules(Some(rules))
            .build(),
    )
}

pub fn public_access_block(o: &Obj<'_>) -> Conv<PublicAccessBlockConfiguration> {
    Ok(PublicAccessBlockConfiguration::builder()
        .block_public_acls(o.bool("BlockPublicAcls")?.unwrap_or(false))
        .ignore_public_acls(o.bool("IgnorePublicAcls")?.unwrap_or(false))
        .block_public_policy(o.bool("BlockPublicPolicy")?.unwrap_or(false))
        .restrict_public_buckets(o.bool("RestrictPublicBuckets")?.unwrap_or(false))
        .build())
}

fn lifecycle_filter(r: &Obj<'_>) -> Conv<LifecycleRuleFilter> {
    let prefix = r.str("Prefix")?;
    let tags = r.tag_list("TagFilters")?;
    let greater = r.i64("ObjectSizeGreaterThan")?;
    let less = r.i64("ObjectSizeLessThan")?;
    let criteria = usize::from(prefix.is_some())
        + tags.len()
        + usize::from(greater.is_some())
        + usize::from(less.is_some());
    let filter = LifecycleRuleFilter::builder();
    Ok(match criteria {
        0 => filter.prefix("").build(),
        1 if prefix.is_some() => filter.set_prefix(prefix).build(),
        1 if !tags.is_empty() => {
            let tag = tags.into_iter().next().map(|t| s3_tag(r, t)).transpose()?;
            filter.set_tag(tag).build()
        }
        1 => filter
            .set_object_size_greater_than(greater)
            .set_object_size_less_than(less)
            .build(),
        _ => filter
            .and(
                LifecycleRuleAndOperator::builder()
                    .set_prefix(prefix)
                    .set_tags(Some(s3_tags(r, tags)?).filter(|t| !t.is_empty()))
                    .set_object_size_greater_than(greater)
                    .set_object_size_less_than(less)
                    .build(),
            )
            .build(),
    })
}

fn transition(t: &Obj<'_>) -> Conv<Transition> {
    Ok(Transition::builder()
        .storage_class(TransitionStorageClass::from(
            t.req_str("StorageClass")?.as_str(),
        ))
        .set_days(t.i32("TransitionInDays")?)
        .set_date(timestamp(t, "TransitionDate")?)
        .build())
}

fn noncurrent_transition(t: &Obj<'_>) -> Conv<NoncurrentVersionTransition> {
    Ok(NoncurrentVersionTransition::builder()
        .storage_class(TransitionStorageClass::from(
            t.req_str("StorageClass")?.as_str(),
        ))
        .set_noncurrent_days(t.i32("TransitionInDays")?)
        .set_newer_noncurrent_versions(t.i32("NewerNoncurrentVersions")?)
        .build())
}

fn lifecycle_rule(r: &Obj<'_>) -> Conv<LifecycleRule> {
    let date = timestamp(r, "ExpirationDate")?;
    let days = r.i32("ExpirationInDays")?;
    let marker = r.bool("ExpiredObjectDeleteMarker")?;
    let expiration = (date.is_some() || days.is_some() || marker.is_some()).then(|| {
        LifecycleExpiration::builder()
            .set_date(date)
            .set_days(days)
            .set_expired_object_delete_marker(marker)
            .build()
    });
    let mut transitions = Vec::new();
    if let Some(t) = r.obj("Transition")? {
        transitions.push(transition(&t)?);
    }
    for t in r.objs("Transitions")? {
        transitions.push(transition(&t)?);
    }
    let mut noncurrent_transitions = Vec::new();
    if let Some(t) = r.obj("NoncurrentVersionTransition")? {
        noncurrent_transitions.push(noncurrent_transition(&t)?);
    }
    for t in r.objs("NoncurrentVersionTransitions")? {
        noncurrent_transitions.push(noncurrent_transition(&t)?);
    }
    let noncurrent_expiration = match r.obj("NoncurrentVersionExpiration")? {
        Some(e) => Some(
            NoncurrentVersionExpiration::builder()
                .set_noncurrent_days(e.i32("NoncurrentDays")?)
                .set_newer_noncurrent_versions(e.i32("NewerNoncurrentVersions")?)
                .build(),
        ),
        None => r.i32("NoncurrentVersionExpirationInDays")?.map(|d| {
            NoncurrentVersionExpiration::builder()
                .noncurrent_days(d)
                .build()
        }),
    };
    let abort = match r.obj("AbortIncompleteMultipartUpload")? {
        Some(a) => Some(
            AbortIncompleteMultipartUpload::builder()
                .set_days_after_initiation(a.i32("DaysAfterInitiation")?)
                .build(),
        ),
        None => None,
    };
    built(
        r,
        LifecycleRule::builder()
            .set_id(r.str("Id")?)
            .status(ExpirationStatus::from(r.req_str("Status")?.as_str()))
            .filter(lifecycle_filter(r)?)
            .set_expiration(expiration)
            .set_transitions(Some(transitions).filter(|t| !t.is_empty()))
            .set_noncurrent_version_transitions(
                Some(noncurrent_transitions).filter(|t| !t.is_empty()),
            )
            .set_noncurrent_version_expiration(noncurrent_expiration)
            .set_abort_incomplete_multipart_upload(abort)
            .build(),
    )
}

/// The lifecycle rules and the optional `TransitionDefaultMinimumObjectSize`.
pub fn lifecycle(
    o: &Obj<'_>,
) -> Conv<(
    BucketLifecycleConfiguration,
    Option<TransitionDefaultMinimumObjectSize>,
)> {
    let rules = o
        .objs("Rules")?
        .iter()
        .map(lifecycle_rule)
        .collect::<Conv<Vec<_>>>()?;
    let config = built(
        o,
        BucketLifecycleConfiguration::builder()
            .set_rules(Some(rules))
            .build(),
    )?;
    let minimum = o
        .str("TransitionDefaultMinimumObjectSize")?
        .map(|s| TransitionDefaultMinimumObjectSize::from(s.as_str()));
    Ok((config, minimum))
}

pub fn cors(o: &Obj<'_>) -> Conv<CorsConfiguration> {
    let mut rules = Vec::new();
    for r in o.objs("CorsRules")? {
        let list = |k: &str| -> Conv<Option<Vec<String>>> {
            Ok(Some(r.strings(k)?).filter(|v| !v.is_empty()))
        };
        rules.push(built(
            &r,
            CorsRule::builder()
                .set_id(r.str("Id")?)
                .set_allowed_headers(list("AllowedHeaders")?)
                .set_allowed_methods(Some(r.strings("AllowedMethods")?))
                .set_allowed_origins(Some(r.strings("AllowedOrigins")?))
                .set_expose_headers(list("ExposedHeaders")?)
                .set_max_age_seconds(r.i32("MaxAge")?)
                .build(),
        )?);
    }
    built(
        o,
        CorsConfiguration::builder()
            .set_cors_rules(Some(rules))
            .build(),
    )
}

pub fn website(o: &Obj<'_>) -> Conv<aws_sdk_s3::types::WebsiteConfiguration> {
    let index = match o.str("IndexDocument")? {
        Some(s) => Some(built(o, IndexDocument::builder().suffix(s).build())?),
        None => None,
    };
    let error = match o.str("ErrorDocument")? {
        Some(k) => Some(built(o, ErrorDocument::builder().key(k).build())?),
        None => None,
    };
    let redirect_all = match o.obj("RedirectAllRequestsTo")? {
        Some(r) => Some(built(
            &r,
            RedirectAllRequestsTo::builder()
                .host_name(r.req_str("HostName")?)
                .set_protocol(r.str("Protocol")?.map(|p| Protocol::from(p.as_str())))
                .build(),
        )?),
        None => None,
    };
    let mut routing = Vec::new();
    for rule in o.objs("RoutingRules")? {
        let redirect = match rule.obj("RedirectRule")? {
            Some(r) => Some(
                Redirect::builder()
                    .set_host_name(r.str("HostName")?)
                    .set_http_redirect_code(r.str("HttpRedirectCode")?)
                    .set_protocol(r.str("Protocol")?.map(|p| Protocol::from(p.as_str())))
                    .set_replace_key_prefix_with(r.str("ReplaceKeyPrefixWith")?)
                    .set_replace_key_with(r.str("ReplaceKeyWith")?)
                    .build(),
            ),
            None => None,
        };
        let condition = match rule.obj("RoutingRuleCondition")? {
            Some(c) => Some(
                Condition::builder()
                    .set_http_error_code_returned_equals(c.str("HttpErrorCodeReturnedEquals")?)
                    .set_key_prefix_equals(c.str("KeyPrefixEquals")?)
                    .build(),
            ),
            None => None,
        };
        routing.push(
            RoutingRule::builder()
                .set_redirect(redirect)
                .set_condition(condition)
                .build(),
        );
    }
    Ok(aws_sdk_s3::types::WebsiteConfiguration::builder()
        .set_index_document(index)
        .set_error_document(error)
        .set_redirect_all_requests_to(redirect_all)
        .set_routing_rules(Some(routing).filter(|r| !r.is_empty()))
        .build())
}

pub fn ownership_controls(o: &Obj<'_>) -> Conv<OwnershipControls> {
    let mut rules = Vec::new();
    for r in o.objs("Rules")? {
        rules.push(built(
            &r,
            OwnershipControlsRule::builder()
                .object_ownership(ObjectOwnership::from(
                    r.req_str("ObjectOwnership")?.as_str(),
                ))
                .build(),
        )?);
    }
    built(
        o,
        OwnershipControls::builder().set_rules(Some(rules)).build(),
    )
}

/// The object ownership the first ownership rule names (CreateBucket takes it as a header).
pub fn object_ownership(o: &Obj<'_>) -> Conv<Option<ObjectOwnership>> {
    Ok(o.objs("Rules")?
        .first()
        .map(|r| r.str("ObjectOwnership"))
        .transpose()?
        .flatten()
        .map(|s| ObjectOwnership::from(s.as_str())))
}

/// Server access logging; without `DestinationBucketName` the bucket logs to itself.
pub fn logging(o: &Obj<'_>, bucket: &str) -> Conv<BucketLoggingStatus> {
    let format = match o.obj("TargetObjectKeyFormat")? {
        Some(f) => {
            let partitioned = match f.obj("PartitionedPrefix")? {
                Some(p) => Some(
                    PartitionedPrefix::builder()
                        .set_partition_date_source(
                            p.str("PartitionDateSource")?
                                .map(|s| PartitionDateSource::from(s.as_str())),
                        )
                        .build(),
                ),
                None => None,
            };
            let simple = f
                .has("SimplePrefix")
                .then(|| SimplePrefix::builder().build());
            Some(
                TargetObjectKeyFormat::builder()
                    .set_partitioned_prefix(partitioned)
                    .set_simple_prefix(simple)
                    .build(),
            )
        }
        None => None,
    };
    let enabled = built(
        o,
        LoggingEnabled::builder()
            .target_bucket(
                o.str("DestinationBucketName")?
                    .unwrap_or_else(|| bucket.to_owned()),
            )
            .target_prefix(o.str("LogFilePrefix")?.unwrap_or_default())
            .set_target_object_key_format(format)
            .build(),
    )?;
    Ok(BucketLoggingStatus::builder()
        .logging_enabled(enabled)
        .build())
}

pub fn accelerate(o: &Obj<'_>) -> Conv<AccelerateConfiguration> {
    Ok(AccelerateConfiguration::builder()
        .status(BucketAccelerateStatus::from(
            o.req_str("AccelerationStatus")?.as_str(),
        ))
        .build())
}

/// Object Lock: always `Enabled`, with the default retention rule when one is given.
pub fn object_lock(o: Option<&Obj<'_>>) -> Conv<ObjectLockConfiguration> {
    let rule = match o.map(|o| o.obj("Rule")).transpose()?.flatten() {
        Some(rule) => match rule.obj("DefaultRetention")? {
            Some(d) => Some(
                ObjectLockRule::builder()
                    .default_retention(
                        DefaultRetention::builder()
                            .set_mode(
                                d.str("Mode")?
                                    .map(|m| ObjectLockRetentionMode::from(m.as_str())),
                            )
                            .set_days(d.i32("Days")?)
                            .set_years(d.i32("Years")?)
                            .build(),
                    )
                    .build(),
            ),
            None => None,
        },
        None => None,
    };
    Ok(ObjectLockConfiguration::builder()
        .object_lock_enabled(ObjectLockEnabled::Enabled)
        .set_rule(rule)
        .build())
}

fn notification_filter(c: &Obj<'_>) -> Conv<Option<NotificationConfigurationFilter>> {
    let Some(filter) = c.obj("Filter")? else {
        return Ok(None);
    };
    let Some(key) = filter.obj("S3Key")? else {
        return Ok(None);
    };
    let mut rules = Vec::new();
    for r in key.objs("Rules")? {
        rules.push(
            FilterRule::builder()
                .name(FilterRuleName::from(
                    r.req_str("Name")?.to_ascii_lowercase().as_str(),
                ))
                .value(r.req_str("Value")?)
                .build(),
        );
    }
    Ok(Some(
        NotificationConfigurationFilter::builder()
            .key(S3KeyFilter::builder().set_filter_rules(Some(rules)).build())
            .build(),
    ))
}

pub fn notification(o: &Obj<'_>) -> Conv<NotificationConfiguration> {
    let mut queues = Vec::new();
    for c in o.objs("QueueConfigurations")? {
        queues.push(built(
            &c,
            QueueConfiguration::builder()
                .queue_arn(c.req_str("Queue")?)
                .events(Event::from(c.req_str("Event")?.as_str()))
                .set_filter(notification_filter(&c)?)
                .build(),
        )?);
    }
    let mut topics = Vec::new();
    for c in o.objs("TopicConfigurations")? {
        topics.push(built(
            &c,
            TopicConfiguration::builder()
                .topic_arn(c.req_str("Topic")?)
                .events(Event::from(c.req_str("Event")?.as_str()))
                .set_filter(notification_filter(&c)?)
                .build(),
        )?);
    }
    let mut functions = Vec::new();
    for c in o.objs("LambdaConfigurations")? {
        functions.push(built(
            &c,
            LambdaFunctionConfiguration::builder()
                .lambda_function_arn(c.req_str("Function")?)
                .events(Event::from(c.req_str("Event")?.as_str()))
                .set_filter(notification_filter(&c)?)
                .build(),
        )?);
    }
    let event_bridge = match o.obj("EventBridgeConfiguration")? {
        Some(e) if e.bool("EventBridgeEnabled")?.unwrap_or(true) => {
            Some(EventBridgeConfiguration::builder().build())
        }
        _ => None,
    };
    Ok(NotificationConfiguration::builder()
        .set_queue_configurations(Some(queues))
        .set_topic_configurations(Some(topics))
        .set_lambda_function_configurations(Some(functions))
        .set_event_bridge_configuration(event_bridge)
        .build())
}

pub fn metrics(o: &Obj<'_>) -> Conv<MetricsConfiguration> {
    let prefix = o.str("Prefix")?;
    let access_point = o.str("AccessPointArn")?;
    let tags = s3_tags(o, o.tag_list("TagFilters")?)?;
    let criteria = usize::from(prefix.is_some()) + usize::from(access_point.is_some()) + tags.len();
    let filter = match criteria {
        0 => None,
        1 => prefix
            .map(MetricsFilter::Prefix)
            .or(access_point.map(MetricsFilter::AccessPointArn))
            .or(tags.into_iter().next().map(MetricsFilter::Tag)),
        _ => Some(MetricsFilter::And(
            MetricsAndOperator::builder()
                .set_prefix(prefix)
                .set_access_point_arn(access_point)
                .set_tags(Some(tags).filter(|t| !t.is_empty()))
                .build(),
        )),
    };
    built(
        o,
        MetricsConfiguration::builder()
            .id(o.req_str("Id")?)
            .set_filter(filter)
            .build(),
    )
}

pub fn intelligent_tiering(o: &Obj<'_>) -> Conv<IntelligentTieringConfiguration> {
    let prefix = o.str("Prefix")?;
    let tags = s3_tags(o, o.tag_list("TagFilters")?)?;
    let filter = match (prefix, tags.len()) {
        (None, 0) => None,
        (prefix, 0) => Some(
            IntelligentTieringFilter::builder()
                .set_prefix(prefix)
                .build(),
        ),
        (None, 1) => Some(
            IntelligentTieringFilter::builder()
                .set_tag(tags.into_iter().next())
                .build(),
        ),
        (prefix, _) => Some(
            IntelligentTieringFilter::builder()
                .and(
                    IntelligentTieringAndOperator::builder()
                        .set_prefix(prefix)
                        .set_tags(Some(tags))
                        .build(),
                )
                .build(),
        ),
    };
    let mut tierings = Vec::new();
    for t in o.objs("Tierings")? {
        tierings.push(built(
            &t,
            Tiering::builder()
                .days(
                    t.i32("Days")?
                        .ok_or_else(|| format!("property {}.Days is required", t.path()))?,
                )
                .access_tier(IntelligentTieringAccessTier::from(
                    t.req_str("AccessTier")?.as_str(),
                ))
                .build(),
        )?);
    }
    built(
        o,
        IntelligentTieringConfiguration::builder()
            .id(o.req_str("Id")?)
            .status(IntelligentTieringStatus::from(
                o.req_str("Status")?.as_str(),
            ))
            .set_filter(filter)
            .set_tierings(Some(tierings))
            .build(),
    )
}

pub fn inventory(o: &Obj<'_>) -> Conv<InventoryConfiguration> {
    let d = o
        .obj("Destination")?
        .ok_or_else(|| format!("property {}.Destination is required", o.path()))?;
    let bucket = built(
        &d,
        InventoryS3BucketDestination::builder()
            .bucket(d.req_str("BucketArn")?)
            .format(InventoryFormat::from(d.req_str("Format")?.as_str()))
            .set_account_id(d.str("BucketAccountId")?)
            .set_prefix(d.str("Prefix")?)
            .build(),
    )?;
    let filter = match o.str("Prefix")? {
        Some(p) => Some(built(o, InventoryFilter::builder().prefix(p).build())?),
        None => None,
    };
    let fields: Vec<InventoryOptionalField> = o
        .strings("OptionalFields")?
        .iter()
        .map(|f| InventoryOptionalField::from(f.as_str()))
        .collect();
    let schedule = built(
        o,
        InventorySchedule::builder()
            .frequency(InventoryFrequency::from(
                o.req_str("ScheduleFrequency")?.as_str(),
            ))
            .build(),
    )?;
    built(
        o,
        InventoryConfiguration::builder()
            .id(o.req_str("Id")?)
            .is_enabled(o.bool("Enabled")?.unwrap_or(false))
            .destination(
                InventoryDestination::builder()
                    .s3_bucket_destination(bucket)
                    .build(),
            )
            .set_filter(filter)
            .included_object_versions(InventoryIncludedObjectVersions::from(
                o.req_str("IncludedObjectVersions")?.as_str(),
            ))
            .set_optional_fields(Some(fields).filter(|f| !f.is_empty()))
            .schedule(schedule)
            .build(),
    )
}

fn replication_filter(f: &Obj<'_>) -> Conv<ReplicationRuleFilter> {
    if let Some(and) = f.obj("And")? {
        return Ok(ReplicationRuleFilter::builder()
            .and(
                ReplicationRuleAndOperator::builder()
                    .set_prefix(and.str("Prefix")?)
                    .set_tags(Some(s3_tags(&and, and.tag_list("TagFilters")?)?))
                    .build(),
            )
            .build());
    }
    if let Some(tag) = f.tag("TagFilter")? {
        return Ok(ReplicationRuleFilter::builder()
            .tag(s3_tag(f, tag)?)
            .build());
    }
    Ok(ReplicationRuleFilter::builder()
        .prefix(f.str("Prefix")?.unwrap_or_default())
        .build())
}

fn replication_destination(d: &Obj<'_>) -> Conv<Destination> {
    let translation = match d.obj("AccessControlTranslation")? {
        Some(t) => Some(built(
            &t,
            AccessControlTranslation::builder()
                .owner(OwnerOverride::from(t.req_str("Owner")?.as_str()))
                .build(),
        )?),
        None => None,
    };
    let encryption = match d.obj("EncryptionConfiguration")? {
        Some(e) => Some(
            EncryptionConfiguration::builder()
                .set_replica_kms_key_id(e.str("ReplicaKmsKeyID")?)
                .build(),
        ),
        None => None,
    };
    let minutes = |o: Option<Obj<'_>>| -> Conv<Option<ReplicationTimeValue>> {
        o.map(|v| {
            Ok(ReplicationTimeValue::builder()
                .set_minutes(v.i32("Minutes")?)
                .build())
        })
        .transpose()
    };
    let metrics = match d.obj("Metrics")? {
        Some(m) => Some(built(
            &m,
            Metrics::builder()
                .status(MetricsStatus::from(m.req_str("Status")?.as_str()))
                .set_event_threshold(minutes(m.obj("EventThreshold")?)?)
                .build(),
        )?),
        None => None,
    };
    let time = match d.obj("ReplicationTime")? {
        Some(t) => Some(built(
            &t,
            ReplicationTime::builder()
                .status(ReplicationTimeStatus::from(t.req_str("Status")?.as_str()))
                .set_time(minutes(t.obj("Time")?)?)
                .build(),
        )?),
        None => None,
    };
    built(
        d,
        Destination::builder()
            .bucket(d.req_str("Bucket")?)
            .set_account(d.str("Account")?)
            .set_storage_class(
                d.str("StorageClass")?
                    .map(|s| StorageClass::from(s.as_str())),
            )
            .set_access_control_translation(translation)
            .set_encryption_configuration(encryption)
            .set_metrics(metrics)
            .set_replication_time(time)
            .build(),
    )
}

fn replication_rule(r: &Obj<'_>) -> Conv<ReplicationRule> {
    let destination = r
        .obj("Destination")?
        .ok_or_else(|| format!("property {}.Destination is required", r.path()))?;
    let mut rule = ReplicationRule::builder()
        .set_id(r.str("Id")?)
        .set_priority(r.i32("Priority")?)
        .status(ReplicationRuleStatus::from(r.req_str("Status")?.as_str()))
        .destination(replication_destination(&destination)?);
    // A legacy rule names a Prefix; the current schema uses a Filter and requires
    // DeleteMarkerReplication, which CloudFormation defaults to Disabled.
    match (r.obj("Filter")?, r.str("Prefix")?) {
        #[allow(deprecated)] // S3 still accepts the V1 rule shape CloudFormation templates use
        (None, Some(prefix)) => rule = rule.prefix(prefix),
        (filter, _) => {
            let filter = match filter {
                Some(f) => replication_filter(&f)?,
                None => ReplicationRuleFilter::builder().prefix("").build(),
            };
            let status = match r.obj("DeleteMarkerReplication")? {
                Some(d) => d.str("Status")?.unwrap_or_else(|| "Disabled".into()),
                None => "Disabled".into(),
            };
            rule = rule.filter(filter).delete_marker_replication(
                DeleteMarkerReplication::builder()
                    .status(DeleteMarkerReplicationStatus::from(status.as_str()))
                    .build(),
            );
        }
    }
    if let Some(c) = r.obj("SourceSelectionCriteria")? {
        let sse = match c.obj("SseKmsEncryptedObjects")? {
            Some(s) => Some(built(
                &s,
                SseKmsEncryptedObjects::builder()
                    .status(SseKmsEncryptedObjectsStatus::from(
                        s.req_str("Status")?.as_str(),
                    ))
                    .build(),
            )?),
            None => None,
        };
        let replicas = match c.obj("ReplicaModifications")? {
            Some(m) => Some(built(
                &m,
                ReplicaModifications::builder()
                    .status(ReplicaModificationsStatus::from(
                        m.req_str("Status")?.as_str(),
                    ))
                    .build(),
            )?),
            None => None,
        };
        rule = rule.source_selection_criteria(
            SourceSelectionCriteria::builder()
                .set_sse_kms_encrypted_objects(sse)
                .set_replica_modifications(replicas)
                .build(),
        );
    }
    built(r, rule.build())
}

pub fn replication(o: &Obj<'_>) -> Conv<ReplicationConfiguration> {
    let rules = o
        .objs("Rules")?
        .iter()
        .map(replication_rule)
        .collect::<Conv<Vec<_>>>()?;
    built(
        o,
        ReplicationConfiguration::builder()
            .role(o.req_str("Role")?)
            .set_rules(Some(rules))
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lifecycle_rules_map_every_shape() {
        let v = json!({"Rules": [
            {"Id": "a", "Status": "Enabled", "ExpirationInDays": 30, "Prefix": "logs/",
             "Transitions": [{"StorageClass": "GLACIER", "TransitionInDays": 10}],
             "NoncurrentVersionExpiration": {"NoncurrentDays": 5},
             "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
            {"Status": "Enabled", "TagFilters": [{"Key": "k", "Value": "v"}], "ObjectSizeGreaterThan": "100",
             "ExpirationDate": "2030-01-01"}
        ], "TransitionDefaultMinimumObjectSize": "varies_by_storage_class"});
        let (config, min) =
            lifecycle(&Obj::new(&v, "LifecycleConfiguration").expect("object")).expect("converts");
        assert_eq!(config.rules().len(), 2);
        let a = &config.rules()[0];
        assert_eq!(a.filter().and_then(|f| f.prefix()), Some("logs/"));
        assert_eq!(a.expiration().and_then(|e| e.days()), Some(30));
        assert_eq!(a.transitions()[0].days(), Some(10));
        let b = &config.rules()[1];
        let and = b.filter().and_then(|f| f.and()).expect("and filter");
        assert_eq!(and.tags().len(), 1);
        assert_eq!(and.object_size_greater_than(), Some(100));
        assert!(b.expiration().and_then(|e| e.date()).is_some());
        assert!(min.is_some());
        let bad = json!({"Rules": [{"ExpirationInDays": 1}]});
        let err = lifecycle(&Obj::new(&bad, "LifecycleConfiguration").expect("object"))
            .expect_err("no status");
        assert!(err.contains("Rules[0].Status"), "{err}");
    }

    #[test]
    fn replication_defaults_delete_marker_replication_with_filters() {
        let v = json!({"Role": "arn:aws:iam::123456789012:role/r", "Rules": [
            {"Status": "Enabled", "Destination": {"Bucket": "arn:aws:s3:::dest"}, "Filter": {"Prefix": "x"}, "Priority": 1}
        ]});
        let config = replication(&Obj::new(&v, "ReplicationConfiguration").expect("object"))
            .expect("converts");
        let rule = &config.rules()[0];
        assert_eq!(
            rule.delete_marker_replication().and_then(|d| d.status()),
            Some(&DeleteMarkerReplicationStatus::Disabled)
        );
    }
}
