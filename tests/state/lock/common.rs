//! Helpers shared by the stack-lock test modules of the `state` binary (`state_lock`,
//! `state_lock_faults`): buckets, a fast lock configuration, and direct reads, writes and
//! version counts of the objects under test.
#![allow(dead_code)] // each module uses a different subset

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
use aws_sdk_s3::Client;
use cdkd::state::lock::{LockConfig, LockManager};
use cdkd::state::StateKeys;

use crate::support::{s3_client, unique_name};

pub const REGION: &str = "us-east-1";

pub async fn new_bucket(versioned: bool) -> (Client, String) {
    let client = s3_client().await;
    let bucket = unique_name("cdkd-lock");
    client
        .create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("create bucket");
    if versioned {
        client
            .put_bucket_versioning()
            .bucket(&bucket)
            .versioning_configuration(
                VersioningConfiguration::builder()
                    .status(BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await
            .expect("versioning");
    }
    (client, bucket)
}

/// Short retries and renewals, so nothing in this file waits for seconds.
pub fn fast() -> LockConfig {
    LockConfig {
        max_retries: 3,
        retry_delay: Duration::from_millis(50),
        renew_interval: None,
    }
}

pub async fn manager(bucket: &str) -> LockManager {
    LockManager::new(s3_client().await, bucket, StateKeys::default()).with_config(fast())
}

pub fn lock_key(stack: &str) -> String {
    StateKeys::default().lock(stack, REGION)
}

pub async fn put(client: &Client, bucket: &str, key: &str, body: &[u8]) -> String {
    client
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(body.to_vec()))
        .send()
        .await
        .expect("put")
        .e_tag()
        .expect("etag")
        .to_owned()
}

pub async fn get(client: &Client, bucket: &str, key: &str) -> Option<(Vec<u8>, String)> {
    let out = client
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .ok()?;
    let etag = out.e_tag().unwrap_or_default().to_owned();
    let body = out
        .body
        .collect()
        .await
        .expect("body")
        .into_bytes()
        .to_vec();
    Some((body, etag))
}

/// (noncurrent bodies, noncurrent delete markers, current entries) of exactly `key`, once the
/// background purges a release started (`cdkd::state::deferred`) have finished, as they have
/// by the time a cdkd process exits.
pub async fn version_counts(client: &Client, bucket: &str, key: &str) -> (usize, usize, usize) {
    cdkd::state::deferred::drain().await;
    let out = client
        .list_object_versions()
        .bucket(bucket)
        .prefix(key)
        .send()
        .await
        .expect("list versions");
    let versions: Vec<_> = out
        .versions()
        .iter()
        .filter(|v| v.key() == Some(key))
        .collect();
    let markers: Vec<_> = out
        .delete_markers()
        .iter()
        .filter(|m| m.key() == Some(key))
        .collect();
    let current = versions
        .iter()
        .filter(|v| v.is_latest() == Some(true))
        .count()
        + markers
            .iter()
            .filter(|m| m.is_latest() == Some(true))
            .count();
    (
        versions
            .iter()
            .filter(|v| v.is_latest() == Some(false))
            .count(),
        markers
            .iter()
            .filter(|m| m.is_latest() == Some(false))
            .count(),
        current,
    )
}
