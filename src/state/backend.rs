//! The S3 state backend: load a record with its ETag, save it guarded by that ETag, list and
//! delete records.
//!
//! Loads return the ETag exactly as S3 sent it (quotes included) and saves send it back as
//! If-Match, so a write over a record that moved underneath is refused with "State has been
//! modified by another process" instead of silently losing the other writer's resources. A
//! legacy version-1 record (`{prefix}/{stack}/state.json`) is read when no region-scoped record
//! exists and migrated on the next save: the region-scoped key is written, then the legacy key
//! deleted.

use aws_sdk_s3::primitives::ByteStream;

use super::bucket::StateBucket;
use super::keys::{StackRef, StateKeys};
use super::lock::{default_owner, HeldLock, LockError, LockManager, DEFAULT_LOCK_TTL};
use super::parse::{parse_legacy_state, parse_state, parse_state_lossy, ParsedState};
use super::record::{serialize_state_for, StackState};
use super::StateError;
use crate::aws::{classify, AwsError, Clients, ErrorKind};

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("State has been modified by another process: the record for stack {stack} ({region}) changed since it was read; re-run the command")]
    Conflict { stack: String, region: String },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Aws(#[from] AwsError),
}

/// A record as loaded: the parsed state, the ETag to guard the next save, and where it was.
#[derive(Debug, Clone)]
pub struct LoadedState {
    pub parsed: ParsedState,
    pub etag: String,
    pub key: String,
}

/// One record as a listing reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedRecord {
    pub stack: StackRef,
    pub key: String,
    /// As the listing sent it, quotes included (the GetObject ETag of the same version);
    /// empty when the listing sent none.
    pub etag: String,
}

/// The guard a save writes under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaveCondition<'a> {
    /// Only over the version with this ETag (incremental saves).
    IfMatch(&'a str),
    /// Only when no record exists yet (a first save).
    IfAbsent,
    /// Whatever is there (the final save of a deploy, under the stack lock).
    Unconditional,
}

pub struct S3Backend {
    client: aws_sdk_s3::Client,
    bucket: String,
    keys: StateKeys,
}

impl S3Backend {
    /// A backend whose client targets the bucket's own region.
    pub fn connect(clients: &Clients, bucket: &StateBucket, keys: StateKeys) -> Self {
        S3Backend::new(clients.s3(Some(&bucket.region)), bucket.name.clone(), keys)
    }

    pub fn new(client: aws_sdk_s3::Client, bucket: String, keys: StateKeys) -> Self {
        S3Backend {
            client,
            bucket,
            keys,
        }
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Takes `stack`'s lock in this bucket for `operation` (cdkd's owner id, the default
    /// TTL), waiting out a live holder as the lock's retry policy says.
    pub async fn lock(
        &self,
        stack: &str,
        region: &str,
        operation: &str,
    ) -> Result<HeldLock, LockError> {
        LockManager::new(self.client().clone(), self.bucket(), self.keys().clone())
            .acquire_with_retry(
                stack,
                region,
                &default_owner(),
                Some(operation),
                DEFAULT_LOCK_TTL,
            )
            .await
    }

    pub fn keys(&self) -> &StateKeys {
        &self.keys
    }

    pub fn client(&self) -> &aws_sdk_s3::Client {
        &self.client
    }

    /// Reads an object's bytes and ETag; `None` when the key does not exist.
    pub async fn get_object(&self, key: &str) -> Result<Option<(Vec<u8>, String)>, AwsError> {
        let out = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if classify(&e) == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(AwsError::call("s3", "GetObject", self.describe(key), &e)),
        };
        let etag = out.e_tag().unwrap_or_default().to_owned();
        let body = out.body.collect().await.map_err(|e| {
            AwsError::Unexpected(format!("reading s3://{}/{key} failed: {e}", self.bucket))
        })?;
        Ok(Some((body.into_bytes().to_vec(), etag)))
    }

    /// Loads a stack's record for a command that may write it: every malformed shape is refused.
    pub async fn load(
        &self,
        stack: &str,
        region: &str,
    ) -> Result<Option<LoadedState>, BackendError> {
        self.load_with(stack, region, false).await
    }

    /// Loads a record for a command that only reads it: damage is repaired in memory and listed
    /// in `parsed.defects`; such a record must never be saved.
    pub async fn load_for_reading(
        &self,
        stack: &str,
        region: &str,
    ) -> Result<Option<LoadedState>, BackendError> {
        self.load_with(stack, region, true).await
    }

    async fn load_with(
        &self,
        stack: &str,
        region: &str,
        lossy: bool,
    ) -> Result<Option<LoadedState>, BackendError> {
        let key = self.keys.state(stack, region);
        if let Some((bytes, etag)) = self.get_object(&key).await? {
            let parsed = if lossy {
                parse_state_lossy(&bytes, stack, region)?
            } else {
                parse_state(&bytes, stack, region)?
            };
            return Ok(Some(LoadedState { parsed, etag, key }));
        }
        let legacy = self.keys.legacy_state(stack);
        let Some((bytes, etag)) = self.get_object(&legacy).await? else {
            return Ok(None);
        };
        Ok(
            parse_legacy_state(&bytes, stack, region)?.map(|parsed| LoadedState {
                parsed,
                etag,
                key: legacy,
            }),
        )
    }

    /// Writes `state` as the record of `stack` in `region`, stamping version 11 and the key's
    /// stack and region. Returns the new ETag. A record read from the legacy key is migrated:
    /// the region-scoped key is written unconditionally, then the legacy key deleted.
    pub async fn save(
        &self,
        stack: &str,
        region: &str,
        state: &StackState,
        condition: SaveCondition<'_>,
        from_legacy_key: bool,
    ) -> Result<String, BackendError> {
        let key = self.keys.state(stack, region);
        let body = serialize_state_for(state, stack, region);
        let mut put = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(&key)
            .content_type("application/json")
            .body(ByteStream::from(body));
        if !from_legacy_key {
            put = match condition {
                SaveCondition::IfMatch(etag) => put.if_match(etag),
                SaveCondition::IfAbsent => put.if_none_match("*"),
                SaveCondition::Unconditional => put,
            };
        }
        let out = match put.send().await {
            Ok(out) => out,
            Err(e) if classify(&e) == ErrorKind::PreconditionFailed => {
                return Err(BackendError::Conflict {
                    stack: stack.to_owned(),
                    region: region.to_owned(),
                })
            }
            Err(e) => return Err(AwsError::call("s3", "PutObject", self.describe(&key), &e).into()),
        };
        if from_legacy_key {
            let legacy = self.keys.legacy_state(stack);
            self.delete_object(&legacy).await?;
        }
        Ok(out.e_tag().unwrap_or_default().to_owned())
    }

    /// Writes raw bytes over the object with `etag` (a surgical edit of a stored record).
    pub async fn put_if_match(
        &self,
        (stack, region): (&str, &str),
        key: &str,
        body: Vec<u8>,
        etag: &str,
    ) -> Result<String, BackendError> {
        let put = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type("application/json")
            .if_match(etag)
            .body(ByteStream::from(body));
        match put.send().await {
            Ok(out) => Ok(out.e_tag().unwrap_or_default().to_owned()),
            Err(e) if classify(&e) == ErrorKind::PreconditionFailed => {
                Err(BackendError::Conflict {
                    stack: stack.to_owned(),
                    region: region.to_owned(),
                })
            }
            Err(e) => Err(AwsError::call("s3", "PutObject", self.describe(key), &e).into()),
        }
    }

    /// Deletes a stack's record (not its lock or other sidecars).
    pub async fn delete_state(&self, stack: &str, region: &str) -> Result<(), AwsError> {
        self.delete_object(&self.keys.state(stack, region)).await
    }

    pub async fn delete_object(&self, key: &str) -> Result<(), AwsError> {
        match self
            .client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if classify(&e) == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(AwsError::call("s3", "DeleteObject", self.describe(key), &e)),
        }
    }

    /// Every record under the prefix: region-scoped ones with their region, legacy ones without.
    pub async fn list_records(&self) -> Result<Vec<StackRef>, AwsError> {
        let mut refs: Vec<StackRef> = self
            .list_record_objects()
            .await?
            .into_iter()
            .map(|r| r.stack)
            .collect();
        refs.dedup();
        Ok(refs)
    }

    /// [`Self::list_records`] with each record's key and the ETag the listing reports (one
    /// per record, in the same order): what lets a reader tell an unchanged record from the
    /// copy it read before without reading it again.
    pub async fn list_record_objects(&self) -> Result<Vec<ListedRecord>, AwsError> {
        let mut refs = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(self.keys.list_prefix())
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| {
                AwsError::call(
                    "s3",
                    "ListObjectsV2",
                    self.describe(&self.keys.list_prefix()),
                    &e,
                )
            })?;
            for object in page.contents() {
                let Some(key) = object.key() else { continue };
                if let Some(stack) = self.keys.parse_state_key(key) {
                    refs.push(ListedRecord {
                        stack,
                        key: key.to_owned(),
                        etag: object.e_tag().unwrap_or_default().to_owned(),
                    });
                }
            }
        }
        refs.sort_by(|a, b| a.stack.cmp(&b.stack));
        refs.dedup_by(|a, b| a.stack == b.stack);
        Ok(refs)
    }

    /// Every key under `prefix`, all pages.
    pub async fn list_keys(&self, prefix: &str) -> Result<Vec<String>, AwsError> {
        let mut keys = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(prefix)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page =
                page.map_err(|e| AwsError::call("s3", "ListObjectsV2", self.describe(prefix), &e))?;
            keys.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_owned)),
            );
        }
        Ok(keys)
    }

    /// The regions a stack has region-scoped records in.
    pub async fn regions_of(&self, stack: &str) -> Result<Vec<String>, AwsError> {
        Ok(self
            .list_records()
            .await?
            .into_iter()
            .filter(|r| r.stack_name == stack)
            .filter_map(|r| r.region)
            .collect())
    }

    fn describe(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }
}
