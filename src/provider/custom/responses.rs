//! The response path of a custom resource: a placeholder object in the state bucket, the
//! presigned PUT URL the handler answers to, polling for its answer, and the cleanup.
//!
//! The placeholder `custom-resource-responses/{requestId}.json` (at the bucket's root, outside
//! the state prefix, where the spec and upstream cdkd put it) is written (empty)
//! before the handler is invoked, and the URL is signed by a client aimed at the bucket's own
//! region, so a handler in any region can answer. The object ends up holding the handler's
//! full cfn-response, Data included, so cleanup deletes it AND purges the key's noncurrent
//! versions (the bucket is versioned); a purge failure warns and never fails the operation.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;

use crate::aws::{classify, error_code, AwsError, ErrorKind};
use crate::state::keys::custom_resource_response_key;
use crate::state::purge::{purge_noncurrent_versions, render_purge_warning, ReplicationProbe};
use crate::ui;

/// The warning's parenthetical for this kind of object.
pub const RESPONSE_OBJECT_DESCRIPTION: &str =
    "a custom-resource response object, which holds the handler's full cfn-response, Data included";
const RESPONSE_OBJECT_KIND: &str = "custom-resource-response";
/// SigV4 presigned URLs live at most a week.
const MAX_URL_LIFETIME: Duration = Duration::from_secs(7 * 24 * 3600);

fn process_default_cell() -> &'static Mutex<Option<ResponseBucket>> {
    static CELL: OnceLock<Mutex<Option<ResponseBucket>>> = OnceLock::new();
    CELL.get_or_init(|| Mutex::new(None))
}

/// Makes `bucket` the answer path of every custom-resource provider built without one (the
/// commands that only hold `routing::default_registry()`: destroy, rollback). A cdkd process
/// works against one state bucket; the session registers it when it connects.
pub fn set_process_default(bucket: ResponseBucket) {
    *process_default_cell()
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = Some(bucket);
}

/// The bucket [`set_process_default`] registered, if any.
pub fn process_default() -> Option<ResponseBucket> {
    process_default_cell()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// Where handlers answer: the state bucket, through a client aimed at its region.
#[derive(Clone, Debug)]
pub struct ResponseBucket {
    client: aws_sdk_s3::Client,
    bucket: String,
}

/// How to wait for an answer.
#[derive(Debug, Clone, Copy)]
pub struct Polling {
    pub first: Duration,
    pub max: Duration,
    pub timeout: Duration,
}

impl ResponseBucket {
    /// `client` must target the bucket's own region (the state backend's client does).
    pub fn new(client: aws_sdk_s3::Client, bucket: impl Into<String>) -> Self {
        ResponseBucket {
            client,
            bucket: bucket.into(),
        }
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// `custom-resource-responses/{requestId}.json`, whatever the state prefix.
    pub fn key(&self, request_id: &str) -> String {
        custom_resource_response_key(request_id)
    }

    /// Writes the empty placeholder and returns the presigned PUT URL for it, valid for
    /// `lifetime` (capped at SigV4's week).
    pub async fn prepare(&self, key: &str, lifetime: Duration) -> Result<String, AwsError> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(ByteStream::from_static(b""))
            .send()
            .await
            .map_err(|e| AwsError::call("s3", "PutObject", self.s3_url(key), &e))?;
        let config = PresigningConfig::expires_in(lifetime.min(MAX_URL_LIFETIME)).map_err(|e| {
            AwsError::Unexpected(format!("presigning a PUT to {}: {e}", self.s3_url(key)))
        })?;
        let presigned = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .presigned(config)
            .await
            .map_err(|e| AwsError::call("s3", "presign PutObject", self.s3_url(key), &e))?;
        Ok(presigned.uri().to_owned())
    }

    /// The handler's answer once the placeholder holds one; `None` when `polling.timeout`
    /// passes first. Polls from `polling.first`, doubling up to `polling.max`.
    pub async fn wait(&self, key: &str, polling: Polling) -> Result<Option<Vec<u8>>, AwsError> {
        let deadline = Instant::now() + polling.timeout;
        let mut interval = polling.first;
        loop {
            if let Some(body) = self.read(key).await? {
                return Ok(Some(body));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(interval.min(deadline - now)).await;
            interval = (interval * 2).min(polling.max);
        }
    }

    /// The object's body when it is not the empty placeholder.
    pub async fn read(&self, key: &str) -> Result<Option<Vec<u8>>, AwsError> {
        match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => {
                let body = out.body.collect().await.map_err(|e| {
                    AwsError::Unexpected(format!("reading {}: {e}", self.s3_url(key)))
                })?;
                let bytes = body.into_bytes();
                Ok((!bytes.is_empty()).then(|| bytes.to_vec()))
            }
            // Not there (yet, or any more): keep waiting.
            Err(e)
                if classify(&e) == ErrorKind::NotFound
                    && error_code(&e) != Some("NoSuchBucket") =>
            {
                Ok(None)
            }
            Err(e) => Err(AwsError::call("s3", "GetObject", self.s3_url(key), &e)),
        }
    }

    /// Deletes the object and purges its noncurrent versions; failures warn and never fail.
    pub async fn remove(&self, key: &str) {
        if let Err(e) = self
            .client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            ui::warn(format!(
                "could not delete {}: {}; cdkd gc collects stranded custom-resource responses",
                self.s3_url(key),
                AwsError::call("s3", "DeleteObject", key, &e)
            ));
        }
        let outcome = purge_noncurrent_versions(&self.client, &self.bucket, key).await;
        tracing::debug!(
            "purged {} noncurrent version(s) and {} marker(s) of {}",
            outcome.versions_deleted,
            outcome.markers_deleted,
            outcome.key
        );
        let outcomes = std::slice::from_ref(&outcome);
        if let Some(text) =
            render_purge_warning(&self.bucket, RESPONSE_OBJECT_DESCRIPTION, outcomes)
        {
            ui::warn(text);
        }
        if let Some(text) = ReplicationProbe::shared()
            .after_purge(
                &self.client,
                &self.bucket,
                RESPONSE_OBJECT_KIND,
                RESPONSE_OBJECT_DESCRIPTION,
                outcomes,
            )
            .await
        {
            ui::warn(text);
        }
    }

    pub fn s3_url(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }
}
