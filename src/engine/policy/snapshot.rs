//! `DeletionPolicy: Snapshot` (and `UpdateReplacePolicy: Snapshot`): the final snapshot
//! CloudFormation takes before it deletes a resource, taken here through the service's own API
//! and waited for until it is usable, so the delete that follows cannot lose the data.
//!
//! [`SNAPSHOT_TYPES`] is the one place that knows which types CloudFormation snapshots and how:
//! every type is snapshotted by a separate call before the ordinary delete (Cloud Control's
//! DeleteResource has no final-snapshot parameter, and the same two steps work on every route).
//! CloudFormation falls back to a plain delete for `Snapshot` on any other type, and so does
//! cdkd. Neptune and DocumentDB clusters are served by the RDS API, as in AWS.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use crate::aws::AwsError;
use crate::provider::ProviderContext;
use crate::state::ResourceState;
use crate::ui;

/// How one type's final snapshot is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// RDS CreateDBSnapshot, waited to `available`. A cluster member (`DBClusterIdentifier`
    /// set) gets none: its cluster's snapshot holds its data, as in CloudFormation.
    RdsInstance,
    /// RDS CreateDBClusterSnapshot, waited to `available` (RDS, Neptune, DocumentDB).
    RdsCluster,
    /// ElastiCache CreateSnapshot of the cache cluster, waited to `available`.
    CacheCluster,
    /// ElastiCache CreateSnapshot of the replication group (of its primary cluster when
    /// cluster mode is disabled, which is what AWS accepts), waited to `available`.
    ReplicationGroup,
    /// Redshift CreateClusterSnapshot, waited to `available`.
    RedshiftCluster,
    /// EC2 CreateSnapshot of the volume (tagged with the volume id), waited to `completed`.
    Ec2Volume,
}

/// Every type CloudFormation takes a final snapshot of, and how cdkd takes it.
pub const SNAPSHOT_TYPES: &[(&str, Mechanism)] = &[
    ("AWS::RDS::DBInstance", Mechanism::RdsInstance),
    ("AWS::RDS::DBCluster", Mechanism::RdsCluster),
    ("AWS::Neptune::DBCluster", Mechanism::RdsCluster),
    ("AWS::DocDB::DBCluster", Mechanism::RdsCluster),
    ("AWS::ElastiCache::CacheCluster", Mechanism::CacheCluster),
    (
        "AWS::ElastiCache::ReplicationGroup",
        Mechanism::ReplicationGroup,
    ),
    ("AWS::Redshift::Cluster", Mechanism::RedshiftCluster),
    ("AWS::EC2::Volume", Mechanism::Ec2Volume),
];

/// The tag an EBS volume's final snapshot carries, naming the volume.
pub const VOLUME_TAG: &str = "cdkd:final-snapshot-of";

/// How long a final snapshot may take before the delete is given up (the resource is kept).
const WAIT_LIMIT: Duration = Duration::from_secs(2 * 60 * 60);

/// How a type's final snapshot is taken; `None` for a type CloudFormation does not snapshot.
pub fn mechanism(resource_type: &str) -> Option<Mechanism> {
    SNAPSHOT_TYPES
        .iter()
        .find(|(t, _)| *t == resource_type)
        .map(|(_, m)| *m)
}

/// What a final-snapshot step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// The snapshot exists and is complete: its identifier.
    Snapshot(String),
    /// Nothing to snapshot: the resource is already gone (the delete will say so too), or it
    /// is a cluster member whose cluster's snapshot covers it.
    NotNeeded(&'static str),
}

/// Takes the final snapshot of the resource `rec` records and waits until it is complete. An
/// error means no usable snapshot exists: the caller must not delete.
pub async fn take(
    ctx: &ProviderContext<'_>,
    mechanism: Mechanism,
    logical_id: &str,
    rec: &ResourceState,
    physical_id: &str,
) -> Result<Taken, String> {
    let name = snapshot_name(physical_id, unix_now());
    let region = Some(ctx.region);
    let taken = match mechanism {
        Mechanism::RdsInstance => {
            let member = rec
                .properties
                .get("DBClusterIdentifier")
                .and_then(|v| v.as_str())
                .is_some_and(|s| !s.is_empty());
            if member {
                return Ok(Taken::NotNeeded(
                    "a cluster member: its cluster's snapshot holds its data",
                ));
            }
            rds_instance(&ctx.clients.rds(region), physical_id, &name).await
        }
        Mechanism::RdsCluster => rds_cluster(&ctx.clients.rds(region), physical_id, &name).await,
        Mechanism::CacheCluster => {
            let client = ctx.clients.elasticache(region);
            cache_snapshot(&client, Source::Cluster(physical_id.to_owned()), &name).await
        }
        Mechanism::ReplicationGroup => {
            let client = ctx.clients.elasticache(region);
            match group_source(&client, physical_id).await? {
                Some(source) => cache_snapshot(&client, source, &name).await,
                None => Ok(Taken::NotNeeded("already deleted")),
            }
        }
        Mechanism::RedshiftCluster => {
            redshift(&ctx.clients.redshift(region), physical_id, &name).await
        }
        Mechanism::Ec2Volume => volume(&ctx.clients.ec2(region), physical_id).await,
    };
    let taken = taken.map_err(|e| {
        format!(
            "the final snapshot DeletionPolicy: Snapshot asks for could not be taken ({e}); the \
             resource was not deleted: fix the cause and re-run, or pass --skip-final-snapshot \
             to delete {logical_id} without one"
        )
    })?;
    if let Taken::Snapshot(id) = &taken {
        ui::info(format!(
            "  {logical_id}: final snapshot {id} of {physical_id} is complete"
        ));
    }
    Ok(taken)
}

/// `<physicalId>-final-<unix seconds>`, spelled as snapshot identifiers must be: ASCII letters,
/// digits and single hyphens, starting with a letter, lowercase, at most 255 characters.
pub fn snapshot_name(physical_id: &str, unix_seconds: u64) -> String {
    let suffix = format!("-final-{unix_seconds}");
    let mut base = String::new();
    for c in physical_id.chars() {
        let c = if c.is_ascii_alphanumeric() {
            c.to_ascii_lowercase()
        } else {
            '-'
        };
        if c == '-' && (base.is_empty() || base.ends_with('-')) {
            continue;
        }
        base.push(c);
    }
    if !base.starts_with(|c: char| c.is_ascii_alphabetic()) {
        base.insert_str(0, "cdkd-");
    }
    base.truncate(255 - suffix.len());
    while base.ends_with('-') {
        base.pop();
    }
    base + &suffix
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Error codes with which these services say the resource is not there.
const GONE_CODES: &[&str] = &[
    "DBInstanceNotFound",
    "DBInstanceNotFoundFault",
    "DBClusterNotFoundFault",
    "CacheClusterNotFound",
    "CacheClusterNotFoundFault",
    "ReplicationGroupNotFoundFault",
    "ClusterNotFound",
    "ClusterNotFoundFault",
    "InvalidVolume.NotFound",
];

fn is_gone<E: ProvideErrorMetadata, R>(
    err: &aws_smithy_runtime_api::client::result::SdkError<E, R>,
) -> bool {
    err.as_service_error()
        .and_then(|e| e.code())
        .is_some_and(|code| GONE_CODES.contains(&code))
}

/// Polls `status` until it reports `done` (returns), a failure state (errors) or the limit.
async fn wait_until<F, Fut>(what: &str, done: &str, mut status: F) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<String>, String>>,
{
    let started = Instant::now();
    let mut interval = Duration::from_millis(500);
    loop {
        match status().await?.as_deref() {
            Some(s) if s.eq_ignore_ascii_case(done) => return Ok(()),
            Some(s) if ["failed", "error", "deleted", "deleting"].contains(&s) => {
                return Err(format!("{what} is {s}"));
            }
            _ => {}
        }
        if started.elapsed() > WAIT_LIMIT {
            return Err(format!(
                "{what} was not {done} after {} minutes",
                WAIT_LIMIT.as_secs() / 60
            ));
        }
        tokio::time::sleep(interval).await;
        interval = (interval * 2).min(Duration::from_secs(15));
    }
}

async fn rds_instance(
    client: &aws_sdk_rds::Client,
    instance: &str,
    name: &str,
) -> Result<Taken, String> {
    let created = client
        .create_db_snapshot()
        .db_instance_identifier(instance)
        .db_snapshot_identifier(name)
        .send()
        .await;
    match created {
        Err(e) if is_gone(&e) => return Ok(Taken::NotNeeded("already deleted")),
        Err(e) => return Err(AwsError::call("rds", "CreateDBSnapshot", instance, &e).to_string()),
        Ok(_) => {}
    }
    wait_until(
        &format!("DB snapshot {name}"),
        "available",
        move || async move {
            let out = client
                .describe_db_snapshots()
                .db_snapshot_identifier(name)
                .send()
                .await
                .map_err(|e| AwsError::call("rds", "DescribeDBSnapshots", name, &e).to_string())?;
            Ok(out
                .db_snapshots()
                .first()
                .and_then(|s| s.status())
                .map(str::to_owned))
        },
    )
    .await?;
    Ok(Taken::Snapshot(name.to_owned()))
}

async fn rds_cluster(
    client: &aws_sdk_rds::Client,
    cluster: &str,
    name: &str,
) -> Result<Taken, String> {
    let created = client
        .create_db_cluster_snapshot()
        .db_cluster_identifier(cluster)
        .db_cluster_snapshot_identifier(name)
        .send()
        .await;
    match created {
        Err(e) if is_gone(&e) => return Ok(Taken::NotNeeded("already deleted")),
        Err(e) => {
            return Err(AwsError::call("rds", "CreateDBClusterSnapshot", cluster, &e).to_string())
        }
        Ok(_) => {}
    }
    wait_until(
        &format!("DB cluster snapshot {name}"),
        "available",
        move || async move {
            let out = client
                .describe_db_cluster_snapshots()
                .db_cluster_snapshot_identifier(name)
                .send()
                .await
                .map_err(|e| {
                    AwsError::call("rds", "DescribeDBClusterSnapshots", name, &e).to_string()
                })?;
            Ok(out
                .db_cluster_snapshots()
                .first()
                .and_then(|s| s.status())
                .map(str::to_owned))
        },
    )
    .await?;
    Ok(Taken::Snapshot(name.to_owned()))
}

/// What an ElastiCache snapshot is taken of.
enum Source {
    Cluster(String),
    Group(String),
}

/// A replication group's snapshot source: the group itself in cluster mode, else its primary
/// cache cluster (AWS refuses the group form there). `None` when the group is gone.
async fn group_source(
    client: &aws_sdk_elasticache::Client,
    group: &str,
) -> Result<Option<Source>, String> {
    let out = match client
        .describe_replication_groups()
        .replication_group_id(group)
        .send()
        .await
    {
        Err(e) if is_gone(&e) => return Ok(None),
        Err(e) => {
            return Err(
                AwsError::call("elasticache", "DescribeReplicationGroups", group, &e).to_string(),
            )
        }
        Ok(out) => out,
    };
    let Some(found) = out.replication_groups().first() else {
        return Ok(None);
    };
    if found.cluster_enabled() == Some(true) {
        return Ok(Some(Source::Group(group.to_owned())));
    }
    let primary = found
        .node_groups()
        .iter()
        .flat_map(|g| g.node_group_members())
        .find(|m| m.current_role() == Some("primary"))
        .and_then(|m| m.cache_cluster_id())
        .or_else(|| found.member_clusters().first().map(String::as_str));
    Ok(Some(match primary {
        Some(cluster) => Source::Cluster(cluster.to_owned()),
        None => Source::Group(group.to_owned()),
    }))
}

async fn cache_snapshot(
    client: &aws_sdk_elasticache::Client,
    source: Source,
    name: &str,
) -> Result<Taken, String> {
    let mut call = client.create_snapshot().snapshot_name(name);
    let target = match &source {
        Source::Cluster(id) => {
            call = call.cache_cluster_id(id);
            id.clone()
        }
        Source::Group(id) => {
            call = call.replication_group_id(id);
            id.clone()
        }
    };
    match call.send().await {
        Err(e) if is_gone(&e) => return Ok(Taken::NotNeeded("already deleted")),
        Err(e) => {
            return Err(AwsError::call("elasticache", "CreateSnapshot", target, &e).to_string())
        }
        Ok(_) => {}
    }
    wait_until(
        &format!("ElastiCache snapshot {name}"),
        "available",
        move || async move {
            let out = client
                .describe_snapshots()
                .snapshot_name(name)
                .send()
                .await
                .map_err(|e| {
                    AwsError::call("elasticache", "DescribeSnapshots", name, &e).to_string()
                })?;
            Ok(out
                .snapshots()
                .first()
                .and_then(|s| s.snapshot_status())
                .map(str::to_owned))
        },
    )
    .await?;
    Ok(Taken::Snapshot(name.to_owned()))
}

async fn redshift(
    client: &aws_sdk_redshift::Client,
    cluster: &str,
    name: &str,
) -> Result<Taken, String> {
    let created = client
        .create_cluster_snapshot()
        .cluster_identifier(cluster)
        .snapshot_identifier(name)
        .send()
        .await;
    match created {
        Err(e) if is_gone(&e) => return Ok(Taken::NotNeeded("already deleted")),
        Err(e) => {
            return Err(
                AwsError::call("redshift", "CreateClusterSnapshot", cluster, &e).to_string(),
            )
        }
        Ok(_) => {}
    }
    wait_until(
        &format!("Redshift snapshot {name}"),
        "available",
        move || async move {
            let out = client
                .describe_cluster_snapshots()
                .snapshot_identifier(name)
                .send()
                .await
                .map_err(|e| {
                    AwsError::call("redshift", "DescribeClusterSnapshots", name, &e).to_string()
                })?;
            Ok(out
                .snapshots()
                .first()
                .and_then(|s| s.status())
                .map(str::to_owned))
        },
    )
    .await?;
    Ok(Taken::Snapshot(name.to_owned()))
}

/// An EBS volume's snapshot. A completed one an earlier attempt tagged for this volume is
/// reused (volume ids are never reused, so it holds this volume's data), so a re-run after a
/// failed delete does not take a second one.
async fn volume(client: &aws_sdk_ec2::Client, volume_id: &str) -> Result<Taken, String> {
    use aws_sdk_ec2::types::{Filter, ResourceType, SnapshotState, Tag, TagSpecification};
    let existing = client
        .describe_snapshots()
        .owner_ids("self")
        .filters(
            Filter::builder()
                .name(format!("tag:{VOLUME_TAG}"))
                .values(volume_id)
                .build(),
        )
        .send()
        .await
        .map_err(|e| AwsError::call("ec2", "DescribeSnapshots", volume_id, &e).to_string())?;
    let reusable = existing
        .snapshots()
        .iter()
        .find(|s| !matches!(s.state(), Some(SnapshotState::Error)))
        .and_then(|s| s.snapshot_id().map(str::to_owned));
    let snapshot_id = match reusable {
        Some(id) => id,
        None => {
            let created = client
                .create_snapshot()
                .volume_id(volume_id)
                .description(format!("cdkd final snapshot of {volume_id}"))
                .tag_specifications(
                    TagSpecification::builder()
                        .resource_type(ResourceType::Snapshot)
                        .tags(Tag::builder().key(VOLUME_TAG).value(volume_id).build())
                        .build(),
                )
                .send()
                .await;
            match created {
                Err(e) if is_gone(&e) => return Ok(Taken::NotNeeded("already deleted")),
                Err(e) => {
                    return Err(AwsError::call("ec2", "CreateSnapshot", volume_id, &e).to_string())
                }
                Ok(out) => out
                    .snapshot_id()
                    .map(str::to_owned)
                    .ok_or_else(|| "EC2 CreateSnapshot returned no snapshot id".to_owned())?,
            }
        }
    };
    let sid = snapshot_id.as_str();
    wait_until(
        &format!("EBS snapshot {sid}"),
        "completed",
        move || async move {
            let out = client
                .describe_snapshots()
                .snapshot_ids(sid)
                .send()
                .await
                .map_err(|e| AwsError::call("ec2", "DescribeSnapshots", sid, &e).to_string())?;
            Ok(out
                .snapshots()
                .first()
                .and_then(|s| s.state())
                .map(|s| s.as_str().to_owned()))
        },
    )
    .await?;
    Ok(Taken::Snapshot(snapshot_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_cloudformation_snapshots_is_in_the_table_once() {
        for t in [
            "AWS::RDS::DBInstance",
            "AWS::RDS::DBCluster",
            "AWS::Neptune::DBCluster",
            "AWS::DocDB::DBCluster",
            "AWS::ElastiCache::CacheCluster",
            "AWS::ElastiCache::ReplicationGroup",
            "AWS::Redshift::Cluster",
            "AWS::EC2::Volume",
        ] {
            assert_eq!(
                SNAPSHOT_TYPES.iter().filter(|(x, _)| *x == t).count(),
                1,
                "{t}"
            );
        }
        assert_eq!(SNAPSHOT_TYPES.len(), 8);
        assert_eq!(mechanism("AWS::S3::Bucket"), None);
        assert_eq!(
            mechanism("AWS::DocDB::DBCluster"),
            Some(Mechanism::RdsCluster)
        );
    }

    #[test]
    fn snapshot_names_follow_the_identifier_rules() {
        assert_eq!(snapshot_name("mydb", 17), "mydb-final-17");
        assert_eq!(snapshot_name("Stack-My_DB--x", 5), "stack-my-db-x-final-5");
        assert_eq!(snapshot_name("1abc", 5), "cdkd-1abc-final-5");
        assert_eq!(snapshot_name("--", 5), "cdkd-final-5");
        let long = "a".repeat(400);
        let name = snapshot_name(&long, 1_764_000_000);
        assert_eq!(name.len(), 255);
        assert!(name.ends_with("-final-1764000000"));
    }
}
