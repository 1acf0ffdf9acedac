//! `AWS::S3::Bucket`: physical id and `Ref` = the bucket name. `Fn::GetAtt`: `Arn`,
//! `DomainName`, `DualStackDomainName`, `RegionalDomainName`, `WebsiteURL`.
//!
//! Every sub-configuration updates in place through its own Put/Delete call; only the name
//! (and disabling Object Lock, which S3 cannot do) replaces the bucket. Delete empties the
//! bucket only when the template opted in (the CDK's `aws-cdk:auto-delete-objects` tag);
//! otherwise a bucket with objects fails with an actionable "not empty" error (see [`super::empty`]).

use async_trait::async_trait;
use aws_sdk_s3::types::{
    AccelerateConfiguration, BucketAccelerateStatus, BucketCannedAcl, BucketLocationConstraint,
    BucketLoggingStatus, BucketVersioningStatus, CreateBucketConfiguration,
    NotificationConfiguration, Tag, Tagging, VersioningConfiguration,
};
use serde_json::{Map, Value};

use super::super::iam::{aws_error, is_not_found, replacement_reason, with_retry, Sdk};
use super::json::{Conv, Obj};
use super::{convert, empty, read};
use crate::provider::naming;
use crate::provider::props::{changed, Props};
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const TYPE: &str = "AWS::S3::Bucket";

/// The properties this provider applies, in the order it applies them on create: versioning
/// before the configurations that require it (Object Lock, replication).
const APPLIED: &[&str] = &[
    "Tags",
    "OwnershipControls",
    "PublicAccessBlockConfiguration",
    "VersioningConfiguration",
    "BucketEncryption",
    "LifecycleConfiguration",
    "CorsConfiguration",
    "WebsiteConfiguration",
    "LoggingConfiguration",
    "AccelerateConfiguration",
    "ObjectLockConfiguration",
    "NotificationConfiguration",
    "MetricsConfigurations",
    "IntelligentTieringConfigurations",
    "InventoryConfigurations",
    "ReplicationConfiguration",
    "AccessControl",
];

/// Properties CreateBucket itself takes.
const AT_CREATE: &[&str] = &["BucketName", "AccessControl", "ObjectLockEnabled"];

pub struct BucketProvider;

fn check_supported(req: &ResourceRequest<'_>) -> Result<(), ProviderError> {
    for (name, value) in req.properties {
        if !value.is_null()
            && !APPLIED.contains(&name.as_str())
            && !AT_CREATE.contains(&name.as_str())
        {
            return Err(ProviderError::failed(
                req,
                format!("property {name} is not supported by cdkd's S3 bucket provider"),
            ));
        }
    }
    Ok(())
}

fn conv<T>(req: &ResourceRequest<'_>, r: Conv<T>) -> Result<T, ProviderError> {
    r.map_err(|message| ProviderError::failed(req, message))
}

/// The S3 website endpoint's host prefix: the older regions use a dash before the region.
fn website_host(region: &str) -> String {
    const DASH_REGIONS: &[&str] = &[
        "us-east-1",
        "us-west-1",
        "us-west-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-northeast-1",
        "eu-west-1",
        "sa-east-1",
        "us-gov-west-1",
    ];
    if DASH_REGIONS.contains(&region) {
        format!("s3-website-{region}")
    } else {
        format!("s3-website.{region}")
    }
}

pub fn attributes(partition: &str, region: &str, bucket: &str) -> Map<String, Value> {
    let suffix = if partition == "aws-cn" {
        "amazonaws.com.cn"
    } else {
        "amazonaws.com"
    };
    let mut a = Map::new();
    let mut put = |k: &str, v: String| {
        a.insert(k.into(), Value::String(v));
    };
    put("Arn", format!("arn:{partition}:s3:::{bucket}"));
    put("DomainName", format!("{bucket}.s3.{suffix}"));
    put(
        "DualStackDomainName",
        format!("{bucket}.s3.dualstack.{region}.{suffix}"),
    );
    put(
        "RegionalDomainName",
        format!("{bucket}.s3.{region}.{suffix}"),
    );
    put(
        "WebsiteURL",
        format!("http://{bucket}.{}.{suffix}", website_host(region)),
    );
    a
}

/// The object of a sub-configuration property, when it is set.
fn object<'a>(req: &ResourceRequest<'a>, name: &str) -> Result<Option<Obj<'a>>, ProviderError> {
    req.properties
        .get(name)
        .filter(|v| !v.is_null())
        .map(|v| conv(req, Obj::new(v, name)))
        .transpose()
}

/// The items of a list-of-configurations property.
fn items<'a>(req: &ResourceRequest<'a>, name: &str) -> Result<Vec<Obj<'a>>, ProviderError> {
    let Some(value) = req.properties.get(name).filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let Value::Array(list) = value else {
        return Err(ProviderError::failed(
            req,
            format!("property {name} must be a list"),
        ));
    };
    list.iter()
        .enumerate()
        .map(|(i, v)| conv(req, Obj::new(v, format!("{name}[{i}]"))))
        .collect()
}

/// `Ok(())` for success, a provider error naming the call otherwise.
fn done<T, E>(
    req: &ResourceRequest<'_>,
    op: &'static str,
    bucket: &str,
    r: Result<T, Sdk<E>>,
) -> Result<(), ProviderError>
where
    E: aws_sdk_s3::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    r.map(drop)
        .map_err(|e| aws_error(req, "s3", op, bucket, &e))
}

impl BucketProvider {
    /// Moves one property to its value in `req` (`None`: removed), given its `previous` value.
    async fn apply(
        &self,
        s3: &aws_sdk_s3::Client,
        req: &ResourceRequest<'_>,
        bucket: &str,
        property: &str,
        previous: &ResourceRequest<'_>,
    ) -> Result<(), ProviderError> {
        let value = || object(req, property);
        match property {
            "Tags" => {
                let tags = Props::new(req).tags()?;
                if tags.is_empty() {
                    let r = with_retry(|| s3.delete_bucket_tagging().bucket(bucket).send()).await;
                    return done(req, "DeleteBucketTagging", bucket, r);
                }
                let set = tags
                    .into_iter()
                    .map(|(k, v)| Tag::builder().key(k).value(v).build())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| ProviderError::failed(req, format!("invalid Tags: {e}")))?;
                let tagging = Tagging::builder()
                    .set_tag_set(Some(set))
                    .build()
                    .map_err(|e| ProviderError::failed(req, format!("invalid Tags: {e}")))?;
                let r = with_retry(|| {
                    s3.put_bucket_tagging()
                        .bucket(bucket)
                        .tagging(tagging.clone())
                        .send()
                })
                .await;
                done(req, "PutBucketTagging", bucket, r)
            }
            "VersioningConfiguration" => {
                let config = match value()? {
                    Some(o) => conv(req, convert::versioning(&o))?,
                    None => VersioningConfiguration::builder()
                        .status(BucketVersioningStatus::Suspended)
                        .build(),
                };
                let r = with_retry(|| {
                    s3.put_bucket_versioning()
                        .bucket(bucket)
                        .versioning_configuration(config.clone())
                        .send()
                })
                .await;
                done(req, "PutBucketVersioning", bucket, r)
            }
            "OwnershipControls" => match value()? {
                Some(o) => {
                    let c = conv(req, convert::ownership_controls(&o))?;
                    let r = with_retry(|| {
                        s3.put_bucket_ownership_controls()
                            .bucket(bucket)
                            .ownership_controls(c.clone())
                            .send()
                    })
                    .await;
                    done(req, "PutBucketOwnershipControls", bucket, r)
                }
                None => {
                    let r =
                        with_retry(|| s3.delete_bucket_ownership_controls().bucket(bucket).send())
                            .await;
                    done(req, "DeleteBucketOwnershipControls", bucket, r)
                }
            },
            "PublicAccessBlockConfiguration" => match value()? {
                Some(o) => {
                    let c = conv(req, convert::public_access_block(&o))?;
                    let r = with_retry(|| {
                        s3.put_public_access_block()
                            .bucket(bucket)
                            .public_access_block_configuration(c.clone())
                            .send()
                    })
                    .await;
                    done(req, "PutPublicAccessBlock", bucket, r)
                }
                None => {
                    let r =
                        with_retry(|| s3.delete_public_access_block().bucket(bucket).send()).await;
                    done(req, "DeletePublicAccessBlock", bucket, r)
                }
            },
            "BucketEncryption" => match value()? {
                Some(o) => {
                    let c = conv(req, convert::encryption(&o))?;
                    let r = with_retry(|| {
                        s3.put_bucket_encryption()
                            .bucket(bucket)
                            .server_side_encryption_configuration(c.clone())
                            .send()
                    })
                    .await;
                    done(req, "PutBucketEncryption", bucket, r)
                }
                None => {
                    let r =
                        with_retry(|| s3.delete_bucket_encryption().bucket(bucket).send()).await;
                    done(req, "DeleteBucketEncryption", bucket, r)
                }
            },
            "LifecycleConfiguration" => match value()? {
                Some(o) => {
                    let (c, minimum) = conv(req, convert::lifecycle(&o))?;
                    let r = with_retry(|| {
                        s3.put_bucket_lifecycle_configuration()
                            .bucket(bucket)
                            .lifecycle_configuration(c.clone())
                            .set_transition_default_minimum_object_size(minimum.clone())
                            .send()
                    })
                    .await;
                    done(req, "PutBucketLifecycleConfiguration", bucket, r)
                }
                None => {
                    let r = with_retry(|| s3.delete_bucket_lifecycle().bucket(bucket).send()).await;
                    done(req, "DeleteBucketLifecycle", bucket, r)
                }
            },
            "CorsConfiguration" => match value()? {
                Some(o) => {
                    let c = conv(req, convert::cors(&o))?;
                    let r = with_retry(|| {
                        s3.put_bucket_cors()
                            .bucket(bucket)
                            .cors_configuration(c.clone())
                            .send()
                    })
                    .await;
                    done(req, "PutBucketCors", bucket, r)
                }
                None => {
                    let r = with_retry(|| s3.delete_bucket_cors().bucket(bucket).send()).await;
                    done(req, "DeleteBucketCors", bucket, r)
                }
            },
            "WebsiteConfiguration" => match value()? {
                Some(o) => {
                    let c = conv(req, convert::website(&o))?;
                    let r = with_retry(|| {
                        s3.put_bucket_website()
                            .bucket(bucket)
                            .website_configuration(c.clone())
                            .send()
                    })
                    .await;
                    done(req, "PutBucketWebsite", bucket, r)
                }
                None => {
                    let r = with_retry(|| s3.delete_bucket_website().bucket(bucket).send()).await;
                    done(req, "DeleteBucketWebsite", bucket, r)
                }
            },
            "LoggingConfiguration" => {
                let status = match value()? {
                    Some(o) => conv(req, convert::logging(&o, bucket))?,
                    None => BucketLoggingStatus::builder().build(),
                };
                let r = with_retry(|| {
                    s3.put_bucket_logging()
                        .bucket(bucket)
                        .bucket_logging_status(status.clone())
                        .send()
                })
                .await;
                done(req, "PutBucketLogging", bucket, r)
            }
            "AccelerateConfiguration" => {
                let config = match value()? {
                    Some(o) => conv(req, convert::accelerate(&o))?,
                    None => AccelerateConfiguration::builder()
                        .status(BucketAccelerateStatus::Suspended)
                        .build(),
                };
                let r = with_retry(|| {
                    s3.put_bucket_accelerate_configuration()
                        .bucket(bucket)
                        .accelerate_configuration(config.clone())
                        .send()
                })
                .await;
                done(req, "PutBucketAccelerateConfiguration", bucket, r)
            }
            "ObjectLockConfiguration" | "ObjectLockEnabled" => {
                let lock = object(req, "ObjectLockConfiguration")?;
                let enabled =
                    Props::new(req).bool("ObjectLockEnabled")?.unwrap_or(false) || lock.is_some();
                let was = object(previous, "ObjectLockConfiguration")?.is_some()
                    || Props::new(previous)
                        .bool("ObjectLockEnabled")?
                        .unwrap_or(false);
                if !enabled && !was {
                    return Ok(());
                }
                let config = conv(req, convert::object_lock(lock.as_ref()))?;
                let r = with_retry(|| {
                    s3.put_object_lock_configuration()
                        .bucket(bucket)
                        .object_lock_configuration(config.clone())
                        .send()
                })
                .await;
                done(req, "PutObjectLockConfiguration", bucket, r)
            }
            "NotificationConfiguration" => {
                let config = match value()? {
                    Some(o) => conv(req, convert::notification(&o))?,
                    None => NotificationConfiguration::builder().build(),
                };
                let r = with_retry(|| {
                    s3.put_bucket_notification_configuration()
                        .bucket(bucket)
                        .notification_configuration(config.clone())
                        .send()
                })
                .await;
                done(req, "PutBucketNotificationConfiguration", bucket, r)
            }
            "MetricsConfigurations"
            | "IntelligentTieringConfigurations"
            | "InventoryConfigurations" => {
                self.apply_by_id(s3, req, bucket, property, previous).await
            }
            "ReplicationConfiguration" => match value()? {
                Some(o) => {
                    let c = conv(req, convert::replication(&o))?;
                    let r = with_retry(|| {
                        s3.put_bucket_replication()
                            .bucket(bucket)
                            .replication_configuration(c.clone())
                            .send()
                    })
                    .await;
                    done(req, "PutBucketReplication", bucket, r)
                }
                None => {
                    let r =
                        with_retry(|| s3.delete_bucket_replication().bucket(bucket).send()).await;
                    done(req, "DeleteBucketReplication", bucket, r)
                }
            },
            "AccessControl" => {
                let acl = Props::new(req)
                    .str("AccessControl")?
                    .unwrap_or_else(|| "Private".into());
                let acl = BucketCannedAcl::from(canned_acl(&acl));
                let r =
                    with_retry(|| s3.put_bucket_acl().bucket(bucket).acl(acl.clone()).send()).await;
                done(req, "PutBucketAcl", bucket, r)
            }
            _ => Ok(()),
        }
    }

    /// Metrics, Intelligent-Tiering and inventory configurations: put every desired one,
    /// delete the ids no longer declared.
    async fn apply_by_id(
        &self,
        s3: &aws_sdk_s3::Client,
        req: &ResourceRequest<'_>,
        bucket: &str,
        property: &str,
        previous: &ResourceRequest<'_>,
    ) -> Result<(), ProviderError> {
        let desired = items(req, property)?;
        let before = items(previous, property)?;
        let mut desired_ids = Vec::new();
        for item in &desired {
            let id = conv(req, item.req_str("Id"))?;
            let unchanged = before.iter().any(|b| b.map() == item.map());
            desired_ids.push(id.clone());
            if unchanged {
                continue;
            }
            let r = match property {
                "MetricsConfigurations" => {
                    let c = conv(req, convert::metrics(item))?;
                    let r = with_retry(|| {
                        s3.put_bucket_metrics_configuration()
                            .bucket(bucket)
                            .id(&id)
                            .metrics_configuration(c.clone())
                            .send()
                    })
                    .await;
                    done(req, "PutBucketMetricsConfiguration", bucket, r)
                }
                "IntelligentTieringConfigurations" => {
                    let c = conv(req, convert::intelligent_tiering(item))?;
                    let r = with_retry(|| {
                        s3.put_bucket_intelligent_tiering_configuration()
                            .bucket(bucket)
                            .id(&id)
                            .intelligent_tiering_configuration(c.clone())
                            .send()
                    })
                    .await;
                    done(req, "PutBucketIntelligentTieringConfiguration", bucket, r)
                }
                _ => {
                    let c = conv(req, convert::inventory(item))?;
                    let r = with_retry(|| {
                        s3.put_bucket_inventory_configuration()
                            .bucket(bucket)
                            .id(&id)
                            .inventory_configuration(c.clone())
                            .send()
                    })
                    .await;
                    done(req, "PutBucketInventoryConfiguration", bucket, r)
                }
            };
            r?;
        }
        for old in &before {
            let Ok(id) = old.req_str("Id") else { continue };
            if desired_ids.contains(&id) {
                continue;
            }
            let r = match property {
                "MetricsConfigurations" => {
                    let r = with_retry(|| {
                        s3.delete_bucket_metrics_configuration()
                            .bucket(bucket)
                            .id(&id)
                            .send()
                    })
                    .await;
                    done(req, "DeleteBucketMetricsConfiguration", bucket, r)
                }
                "IntelligentTieringConfigurations" => {
                    let r = with_retry(|| {
                        s3.delete_bucket_intelligent_tiering_configuration()
                            .bucket(bucket)
                            .id(&id)
                            .send()
                    })
                    .await;
                    done(
                        req,
                        "DeleteBucketIntelligentTieringConfiguration",
                        bucket,
                        r,
                    )
                }
                _ => {
                    let r = with_retry(|| {
                        s3.delete_bucket_inventory_configuration()
                            .bucket(bucket)
                            .id(&id)
                            .send()
                    })
                    .await;
                    done(req, "DeleteBucketInventoryConfiguration", bucket, r)
                }
            };
            r?;
        }
        Ok(())
    }

    async fn delete_bucket(
        &self,
        s3: &aws_sdk_s3::Client,
        req: &ResourceRequest<'_>,
        bucket: &str,
    ) -> Result<(), ProviderError> {
        let mut emptied = false;
        loop {
            match with_retry(|| s3.delete_bucket().bucket(bucket).send()).await {
                Err(e) if is_not_found(&e) => return Ok(()),
                Err(e) if crate::aws::error_code(&e) == Some("BucketNotEmpty") => {
                    if emptied || !empty::opted_in(req.properties) {
                        return Err(empty::not_empty_error(req, bucket));
                    }
                    let removed = empty::empty_bucket(s3, req, bucket).await?;
                    tracing::info!("emptied bucket {bucket} ({removed} object versions)");
                    emptied = true;
                }
                Err(e) => return Err(aws_error(req, "s3", "DeleteBucket", bucket, &e)),
                Ok(_) => return Ok(()),
            }
        }
    }

    async fn exists(
        &self,
        s3: &aws_sdk_s3::Client,
        req: &ResourceRequest<'_>,
        bucket: &str,
    ) -> Result<bool, ProviderError> {
        match s3.head_bucket().bucket(bucket).send().await {
            Ok(_) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(aws_error(req, "s3", "HeadBucket", bucket, &e)),
        }
    }
}

/// CloudFormation's `AccessControl` names (`PublicRead`) as S3 canned ACLs (`public-read`).
fn canned_acl(name: &str) -> &'static str {
    match name {
        "PublicRead" => "public-read",
        "PublicReadWrite" => "public-read-write",
        "AuthenticatedRead" => "authenticated-read",
        "LogDeliveryWrite" => "log-delivery-write",
        "BucketOwnerRead" => "bucket-owner-read",
        "BucketOwnerFullControl" => "bucket-owner-full-control",
        "AwsExecRead" => "aws-exec-read",
        _ => "private",
    }
}

#[async_trait]
impl Provider for BucketProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[TYPE]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        // `AccessControl` is in both lists.
        let at_create = AT_CREATE.iter().filter(|p| !APPLIED.contains(p));
        Some(APPLIED.iter().chain(at_create).copied().collect())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        check_supported(req)?;
        let p = Props::new(req);
        let bucket = match p.str("BucketName")? {
            Some(n) => n,
            None => naming::generate(ctx.stack_name, req.logical_id, naming::S3_BUCKET),
        };
        let s3 = ctx.clients.s3(Some(ctx.region));
        // In us-east-1 S3 answers CreateBucket for a bucket the caller already owns with a
        // plain 200; CloudFormation refuses to adopt it, and so does cdkd.
        if p.str("BucketName")?.is_some() && self.exists(&s3, req, &bucket).await? {
            return Err(ProviderError::failed(
                req,
                format!("bucket {bucket} already exists"),
            ));
        }
        let location = (ctx.region != "us-east-1").then(|| {
            CreateBucketConfiguration::builder()
                .location_constraint(BucketLocationConstraint::from(ctx.region))
                .build()
        });
        let ownership = match object(req, "OwnershipControls")? {
            Some(o) => conv(req, convert::object_ownership(&o))?,
            None => None,
        };
        let acl = p
            .str("AccessControl")?
            .map(|a| BucketCannedAcl::from(canned_acl(&a)));
        let lock = p.bool("ObjectLockEnabled")?.unwrap_or(false)
            || object(req, "ObjectLockConfiguration")?.is_some();
        let call = s3
            .create_bucket()
            .bucket(&bucket)
            .set_create_bucket_configuration(location)
            .set_object_ownership(ownership)
            .set_acl(acl)
            .set_object_lock_enabled_for_bucket(lock.then_some(true));
        let created = with_retry(|| call.clone().send()).await;
        done(req, "CreateBucket", &bucket, created)?;

        let empty = Map::new();
        let none = ResourceRequest {
            properties: &empty,
            ..req.clone()
        };
        for property in APPLIED.iter().copied().filter(|p| {
            *p != "AccessControl" && req.properties.get(*p).is_some_and(|v| !v.is_null())
        }) {
            if let Err(err) = self.apply(&s3, req, &bucket, property, &none).await {
                // Nothing recorded the bucket yet: remove it rather than leak it.
                if let Err(cleanup) = self.delete_bucket(&s3, req, &bucket).await {
                    tracing::warn!(
                        "could not remove the partly configured bucket {bucket}: {cleanup}"
                    );
                }
                return Err(err);
            }
        }
        Ok(Provisioned {
            attributes: attributes(ctx.partition, ctx.region, &bucket),
            physical_id: bucket,
        })
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        if let Some(reason) = replacement_reason(TYPE, previous, req.properties) {
            return Ok(UpdateOutcome::NeedsReplacement { reason });
        }
        let prev_req = ResourceRequest {
            properties: previous,
            ..req.clone()
        };
        let was_locked = Props::new(&prev_req)
            .bool("ObjectLockEnabled")?
            .unwrap_or(false);
        let locked = Props::new(req).bool("ObjectLockEnabled")?.unwrap_or(false);
        if was_locked && !locked {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: "ObjectLockEnabled changed to false, and S3 cannot disable Object Lock"
                    .into(),
            });
        }
        check_supported(req)?;
        let s3 = ctx.clients.s3(Some(ctx.region));
        let bucket = physical_id;
        let changes: Vec<&str> = APPLIED
            .iter()
            .copied()
            .chain(["ObjectLockEnabled"])
            .filter(|p| changed(previous, req.properties, p))
            .collect();
        // Suspending versioning waits until replication and Object Lock no longer need it.
        let suspends = object(req, "VersioningConfiguration")?
            .map(|o| o.str("Status"))
            .transpose()
            .map_err(|m| ProviderError::failed(req, m))?
            .flatten()
            .is_none_or(|s| s != "Enabled");
        let (late, early): (Vec<&str>, Vec<&str>) = changes
            .into_iter()
            .partition(|p| *p == "VersioningConfiguration" && suspends);
        for property in early.into_iter().chain(late) {
            self.apply(&s3, req, bucket, property, &prev_req).await?;
        }
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: bucket.to_owned(),
            attributes: attributes(ctx.partition, ctx.region, bucket),
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        self.delete_bucket(&ctx.clients.s3(Some(ctx.region)), req, physical_id)
            .await
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let s3 = ctx.clients.s3(Some(ctx.region));
        let bucket = physical_id;
        if !self.exists(&s3, req, bucket).await? {
            return Ok(None);
        }
        let mut props = Map::new();
        props.insert("BucketName".into(), Value::String(bucket.to_owned()));
        read::configurations(&s3, req, bucket, &mut props).await?;
        props.extend(attributes(ctx.partition, ctx.region, bucket));
        Ok(Some(props))
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        let s3 = ctx.clients.s3(Some(ctx.region));
        if !self.exists(&s3, req, physical_id).await? {
            return Err(ProviderError::failed(
                req,
                format!("bucket {physical_id} does not exist"),
            ));
        }
        Ok(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: attributes(ctx.partition, ctx.region, physical_id),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_follow_cloudformation() {
        let a = attributes("aws", "eu-central-1", "b");
        assert_eq!(a["Arn"], "arn:aws:s3:::b");
        assert_eq!(a["DomainName"], "b.s3.amazonaws.com");
        assert_eq!(a["RegionalDomainName"], "b.s3.eu-central-1.amazonaws.com");
        assert_eq!(
            a["DualStackDomainName"],
            "b.s3.dualstack.eu-central-1.amazonaws.com"
        );
        assert_eq!(
            a["WebsiteURL"],
            "http://b.s3-website.eu-central-1.amazonaws.com"
        );
        assert_eq!(
            attributes("aws", "us-east-1", "b")["WebsiteURL"],
            "http://b.s3-website-us-east-1.amazonaws.com"
        );
    }

    #[test]
    fn canned_acls() {
        assert_eq!(canned_acl("PublicRead"), "public-read");
        assert_eq!(canned_acl("Private"), "private");
    }
}
