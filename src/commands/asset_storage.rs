//! Reading a region's cdkd asset storage and the state bucket around it, for `gc` and
//! `bootstrap --destroy`: the bootstrap marker, key listings with their ages, and emptying a
//! versioned bucket.

use std::time::{Duration, SystemTime};

use aws_sdk_s3::types::{Delete, ObjectIdentifier};

use crate::assets::redirect::Marker;
use crate::aws::{classify, AwsError, ErrorKind};
use crate::error::{Error, Result};

/// How long ago `t` was; `None` when AWS gave no time (kept by every age guard). A time in
/// the future (clock skew) is now.
pub(super) fn age_of(t: Option<&aws_smithy_types::DateTime>) -> Option<Duration> {
    let when = SystemTime::try_from(*t?).ok()?;
    Some(
        SystemTime::now()
            .duration_since(when)
            .unwrap_or(Duration::ZERO),
    )
}

/// Every (key, size, age) under `prefix`; `None` when the bucket does not exist.
pub(super) type Listed = (String, i64, Option<Duration>);

/// Every (key, size, age) under `prefix`; `None` when the bucket does not exist.
pub(super) async fn list_keys(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    prefix: &str,
) -> Result<Option<Vec<Listed>>> {
    let mut out = Vec::new();
    let mut pages = s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix(prefix)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = match page {
            Ok(p) => p,
            Err(e) if classify(&e) == ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                let target = format!("s3://{bucket}/{prefix}");
                return Err(AwsError::call("s3", "ListObjectsV2", target, &e).into());
            }
        };
        for o in page.contents() {
            if let Some(k) = o.key() {
                out.push((
                    k.to_owned(),
                    o.size().unwrap_or(0),
                    age_of(o.last_modified()),
                ));
            }
        }
    }
    Ok(Some(out))
}

/// An object's body, ETag and content type; `None` when there is no such key (or bucket).
pub(super) struct Object {
    pub body: Vec<u8>,
    pub etag: Option<String>,
    pub content_type: Option<String>,
}

pub(super) async fn get_object(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
) -> Result<Option<Object>> {
    let out = match s3.get_object().bucket(bucket).key(key).send().await {
        Ok(out) => out,
        Err(e) if classify(&e) == ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            let target = format!("s3://{bucket}/{key}");
            return Err(AwsError::call("s3", "GetObject", target, &e).into());
        }
    };
    let etag = out.e_tag().map(str::to_owned);
    let content_type = out.content_type().map(str::to_owned);
    let body = out
        .body
        .collect()
        .await
        .map_err(|e| AwsError::Unexpected(format!("reading s3://{bucket}/{key} failed: {e}")))?
        .into_bytes()
        .to_vec();
    Ok(Some(Object {
        body,
        etag,
        content_type,
    }))
}

/// The region's bootstrap marker, `None` when the region has none.
pub(super) async fn read_marker(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
) -> Result<Option<Marker>> {
    let Some(object) = get_object(s3, bucket, key).await? else {
        return Ok(None);
    };
    Marker::parse(&object.body)
        .map(Some)
        .map_err(|why| Error::Usage(format!("s3://{bucket}/{key}: {why}; nothing was deleted")))
}

/// Deletes every version and delete marker in `bucket`, then the bucket; a bucket that does not
/// exist is already gone. Whether it existed.
pub(super) async fn empty_and_delete_bucket(s3: &aws_sdk_s3::Client, bucket: &str) -> Result<bool> {
    loop {
        let page = match s3.list_object_versions().bucket(bucket).send().await {
            Ok(p) => p,
            Err(e) if classify(&e) == ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(AwsError::call("s3", "ListObjectVersions", bucket, &e).into()),
        };
        let ids: Vec<ObjectIdentifier> = page
            .versions()
            .iter()
            .map(|v| (v.key(), v.version_id()))
            .chain(
                page.delete_markers()
                    .iter()
                    .map(|m| (m.key(), m.version_id())),
            )
            .filter_map(|(k, v)| {
                ObjectIdentifier::builder()
                    .key(k?)
                    .set_version_id(v.map(str::to_owned))
                    .build()
                    .ok()
            })
            .collect();
        if ids.is_empty() {
            break;
        }
        delete_batch(s3, bucket, ids).await?;
    }
    match s3.delete_bucket().bucket(bucket).send().await {
        Ok(_) => Ok(true),
        Err(e) if classify(&e) == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(AwsError::call("s3", "DeleteBucket", bucket, &e).into()),
    }
}

/// One DeleteObjects call (at most 1,000 ids); the first key S3 refused is the error, which
/// says to run the command again (what was deleted stays deleted).
pub(super) async fn delete_batch(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    ids: Vec<ObjectIdentifier>,
) -> Result<()> {
    let count = ids.len();
    let delete = Delete::builder()
        .set_objects(Some(ids))
        .quiet(true)
        .build()
        .map_err(|e| AwsError::Unexpected(format!("building DeleteObjects for {bucket}: {e}")))?;
    let out = s3
        .delete_objects()
        .bucket(bucket)
        .delete(delete)
        .send()
        .await
        .map_err(|e| AwsError::call("s3", "DeleteObjects", bucket, &e))?;
    match out.errors().first() {
        Some(err) => Err(Error::Partial(format!(
            "s3://{bucket}/{}: {} ({} of {count} in one batch not deleted); run the command again",
            err.key().unwrap_or_default(),
            err.message().unwrap_or("DeleteObjects failed"),
            out.errors().len(),
        ))),
        None => Ok(()),
    }
}
