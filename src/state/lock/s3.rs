//! The S3 side of the lock: reads, conditional writes and deletes of the lock
//! object, and the purge of its noncurrent versions after a delete.

use std::sync::Arc;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;

use crate::aws::{AwsError, ErrorKind};
use crate::state::purge::{
    purge_noncurrent_versions, render_purge_warning, PurgeOutcome, ReplicationProbe,
    LOCK_OBJECT_DESCRIPTION,
};

/// The object kind the replication probe reports the lock under.
const LOCK_OBJECT_KIND: &str = "lock";

/// The S3 side, shared by the manager, its held locks and their renewals.
#[derive(Clone)]
pub(super) struct Ctx {
    pub(super) client: Client,
    pub(super) bucket: String,
    pub(super) probe: Arc<ReplicationProbe>,
}

pub(super) enum Cond<'a> {
    IfNoneMatch,
    IfMatch(&'a str),
}

impl Ctx {
    fn target(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }

    /// The body and ETag of `key`, or `None` when there is no object.
    pub(super) async fn get(&self, key: &str) -> Result<Option<(Vec<u8>, String)>, AwsError> {
        let out = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => out,
            Err(err) => {
                let err = AwsError::call("s3", "GetObject", self.target(key), &err);
                return match err.kind() {
                    ErrorKind::NotFound => Ok(None),
                    _ => Err(err),
                };
            }
        };
        let etag = out.e_tag().unwrap_or_default().to_owned();
        let bytes = out.body.collect().await.map_err(|e| {
            AwsError::Unexpected(format!(
                "reading {} failed: {}",
                self.target(key),
                one_line(&e.to_string())
            ))
        })?;
        Ok(Some((bytes.into_bytes().to_vec(), etag)))
    }

    /// Writes `body`; returns the ETag S3 answered with (if any).
    pub(super) async fn put(
        &self,
        key: &str,
        body: &[u8],
        cond: Cond<'_>,
    ) -> Result<Option<String>, AwsError> {
        let mut req = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type("application/json")
            .body(ByteStream::from(body.to_vec()));
        req = match cond {
            Cond::IfNoneMatch => req.if_none_match("*"),
            Cond::IfMatch(etag) => req.if_match(etag),
        };
        match req.send().await {
            Ok(out) => Ok(out.e_tag().map(str::to_owned)),
            Err(err) => Err(AwsError::call("s3", "PutObject", self.target(key), &err)),
        }
    }

    pub(super) async fn delete(&self, key: &str, if_match: Option<&str>) -> Result<(), AwsError> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .set_if_match(if_match.map(str::to_owned))
            .send()
            .await
            .map(|_| ())
            .map_err(|err| AwsError::call("s3", "DeleteObject", self.target(key), &err))
    }

    /// The ETag of the object at `key` when its body is `body` (for an
    /// endpoint whose PutObject answer carried no ETag).
    pub(super) async fn etag_if_body(
        &self,
        key: &str,
        body: &[u8],
    ) -> Result<Option<String>, AwsError> {
        Ok(self
            .get(key)
            .await?
            .filter(|(stored, etag)| stored == body && !etag.is_empty())
            .map(|(_, etag)| etag))
    }

    /// Purge after a reap (takeover, force-unlock): failures warn.
    pub(super) async fn purge_loud(&self, key: &str) {
        for text in self.purge(key).await {
            tracing::warn!("{text}");
        }
    }

    /// Purge after a release: failures go to debug.
    pub(super) async fn purge_quiet(&self, key: &str) {
        for text in self.purge(key).await {
            tracing::debug!("{text}");
        }
    }

    /// Purges `key`'s noncurrent versions; returns what is worth reporting
    /// (the purge failure, the replication notice).
    async fn purge(&self, key: &str) -> Vec<String> {
        let outcome = purge_noncurrent_versions(&self.client, &self.bucket, key).await;
        log_purge(&outcome);
        let outcomes = std::slice::from_ref(&outcome);
        let mut notices = Vec::new();
        notices.extend(render_purge_warning(
            &self.bucket,
            LOCK_OBJECT_DESCRIPTION,
            outcomes,
        ));
        notices.extend(
            self.probe
                .after_purge(
                    &self.client,
                    &self.bucket,
                    LOCK_OBJECT_KIND,
                    LOCK_OBJECT_DESCRIPTION,
                    outcomes,
                )
                .await,
        );
        notices
    }
}

fn log_purge(outcome: &PurgeOutcome) {
    tracing::debug!(
        "purged {} noncurrent version(s) and {} noncurrent delete marker(s) of {}{}",
        outcome.versions_deleted,
        outcome.markers_deleted,
        outcome.key,
        outcome
            .failure_description()
            .map(|f| format!("; failed: {f}"))
            .unwrap_or_default()
    );
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
