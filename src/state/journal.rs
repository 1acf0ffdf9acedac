//! The rollback journal (`rollback-journal.json` beside `state.json`; state-schema, "Rollback
//! journal").
//!
//! Written whenever a deploy ends without a completed rollback (a `--no-rollback` failure, a
//! Ctrl-C interruption) and before an automatic rollback, so a rollback that dies partway can be
//! resumed. One segment per failed attempt records the operations that attempt completed (with
//! each resource's previous record) and the ones that failed, so `cdkd rollback` can revert
//! them from state and journal alone, with no synth. The journal has its own `journalVersion`
//! and is not part of the state schema. Deleting it also purges its noncurrent versions (the
//! failed operations' attempted properties may hold what a write sent verbatim); the purge
//! fails soft with the spec's warning.

use aws_sdk_s3::primitives::ByteStream;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::keys::StateKeys;
use super::purge::{purge_noncurrent_versions, render_purge_warning, ReplicationProbe};
use super::ResourceState;
use crate::aws::{classify, AwsError, ErrorKind};
use crate::ui;

/// The newest journal format this binary reads and writes.
pub const JOURNAL_VERSION: u32 = 1;

/// The purge warning's parenthetical for the journal.
pub const JOURNAL_OBJECT_DESCRIPTION: &str = "the rollback journal, whose \
    `failedOperations[].attemptedProperties` records the properties of the failed write verbatim";

/// Why a segment was written.
pub mod reason {
    /// Written before an automatic rollback ran (a rollback that dies partway resumes from it).
    pub const AUTO_ROLLBACK: &str = "auto-rollback-started";
    /// An automatic rollback reverted every completed operation: only failed ones remain.
    pub const AUTO_ROLLBACK_CLEAN: &str = "auto-rollback-clean";
    /// A failed deploy run with `--no-rollback`.
    pub const NO_ROLLBACK: &str = "no-rollback-failure";
    /// A deploy interrupted by Ctrl-C.
    pub const INTERRUPTED: &str = "interrupted";
    /// A nested child's SUCCESSFUL deploy inside its parent's: kept until the top-level
    /// stack's deploy succeeds, so the parent's rollback can revert the child.
    pub const NESTED_PENDING_PARENT: &str = "nested-pending-parent";
}

/// On a parent's UPDATE op of a nested-stack row: the `writtenAt` of the
/// `nested-pending-parent` segment the child's deploy in that run appended (additive, no
/// journalVersion bump). Absent when the child wrote none (it had nothing to change).
pub const NESTED_CHILD_SEGMENT: &str = "nestedChildSegment";

/// On a replacement op of a `nested-pending-parent` segment: the child's deploy left the old
/// resource alive for the parent's rollback; the top-level stack's successful deploy deletes
/// it (additive).
pub const OLD_DELETION_DEFERRED: &str = "oldDeletionDeferred";

/// On a `nested-pending-parent` segment: the child's outputs before that deploy, as state
/// stored them, so reverting the segment restores them too (additive).
pub const PREVIOUS_OUTPUTS: &str = "previousOutputs";

/// What an operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum OpKind {
    Create,
    Update,
    Delete,
}

/// One completed operation and what it replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    /// `changeType` as upstream writes it (`kind` is what this binary wrote before).
    #[serde(rename = "changeType", alias = "kind")]
    pub kind: OpKind,
    pub logical_id: String,
    /// The template's type (after a Type change, the new resource's).
    pub resource_type: String,
    /// The resource the operation left recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_id: Option<String>,
    /// The record before the operation (`None` for a create of a new logical id);
    /// `previousState` as upstream writes it.
    #[serde(
        default,
        rename = "previousState",
        alias = "previous",
        skip_serializing_if = "Option::is_none"
    )]
    pub previous: Option<ResourceState>,
    /// The type before the operation (an UPDATE whose Type changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_resource_type: Option<String>,
    /// For an UPDATE: whether the deploy left the old physical resource alive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_resource_retained: Option<bool>,
    /// For an UPDATE: whether the old resource was deleted before the new one was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_deleted_before_create: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Operation {
    /// The child segment a nested-stack row's UPDATE op names ([`NESTED_CHILD_SEGMENT`]).
    pub fn nested_child_segment(&self) -> Option<u64> {
        self.extra.get(NESTED_CHILD_SEGMENT).and_then(Value::as_u64)
    }

    /// Whether a nested child's deploy left this replacement's old resource for its top-level
    /// stack's success to delete ([`OLD_DELETION_DEFERRED`]).
    pub fn old_deletion_deferred(&self) -> bool {
        self.extra
            .get(OLD_DELETION_DEFERRED)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// A replacement: an UPDATE whose resource is a different physical resource than before.
    pub fn is_replacement(&self) -> bool {
        self.kind == OpKind::Update
            && self
                .previous
                .as_ref()
                .is_some_and(|p| p.physical_id != self.physical_id)
    }
}

/// One operation that failed mid-deploy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedOperation {
    #[serde(rename = "changeType", alias = "kind")]
    pub kind: OpKind,
    pub logical_id: String,
    pub resource_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_id: Option<String>,
    /// The record before the attempt (`previousState`).
    #[serde(
        default,
        rename = "previousState",
        alias = "previous",
        skip_serializing_if = "Option::is_none"
    )]
    pub previous: Option<ResourceState>,
    /// What the failed write sent; absent when AWS provably did not apply it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempted_properties: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The key a failed UPDATE whose old resource was deleted before the new one was created
/// (`--replace`) carries, among its additive fields.
pub const OLD_DELETED_BEFORE_CREATE: &str = "oldDeletedBeforeCreate";

impl FailedOperation {
    /// Whether the deploy deleted the old resource this failed UPDATE names before it tried to
    /// create the new one (so the old one is gone).
    pub fn old_deleted_before_create(&self) -> bool {
        self.extra
            .get(OLD_DELETED_BEFORE_CREATE)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

/// One failed attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Segment {
    pub reason: String,
    /// Epoch milliseconds: upstream's `timestamp` (`writtenAt` is what this binary wrote
    /// before). It also names the segment (a nested-stack row's `nestedChildSegment`).
    #[serde(rename = "timestamp", alias = "writtenAt")]
    pub written_at: u64,
    #[serde(default)]
    pub operations: Vec<Operation>,
    #[serde(default)]
    pub failed_operations: Vec<FailedOperation>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded_logical_ids: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The journal's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Journal {
    pub journal_version: u32,
    pub stack_name: String,
    pub region: String,
    /// Oldest first.
    #[serde(default)]
    pub segments: Vec<Segment>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Journal {
    pub fn new(stack: &str, region: &str) -> Self {
        Journal {
            journal_version: JOURNAL_VERSION,
            stack_name: stack.to_owned(),
            region: region.to_owned(),
            segments: Vec::new(),
            extra: Map::new(),
        }
    }

    /// The replacements whose old resource a nested child's `nested-pending-parent` segments
    /// kept alive for a parent's rollback ([`OLD_DELETION_DEFERRED`]): only the journal names
    /// those old resources.
    pub fn deferred_olds(&self) -> Vec<&Operation> {
        self.segments
            .iter()
            .filter(|s| s.reason == reason::NESTED_PENDING_PARENT)
            .flat_map(|s| s.operations.iter())
            .filter(|o| o.is_replacement() && o.old_deletion_deferred())
            .collect()
    }

    /// Removes the newest segment, leaving the ids of its completed operations on the nearest
    /// older segment (`supersededLogicalIds`).
    pub fn pop_segment(&mut self) -> Option<Segment> {
        let last = self.segments.len().checked_sub(1)?;
        self.remove_segment(last)
    }

    /// Removes the segment at `index` (oldest first), leaving the ids of its completed
    /// operations on the nearest older segment, as [`Journal::pop_segment`] does.
    pub fn remove_segment(&mut self, index: usize) -> Option<Segment> {
        if index >= self.segments.len() {
            return None;
        }
        let removed = self.segments.remove(index);
        if let Some(older) = index.checked_sub(1).and_then(|i| self.segments.get_mut(i)) {
            for op in &removed.operations {
                if !older.superseded_logical_ids.contains(&op.logical_id) {
                    older.superseded_logical_ids.push(op.logical_id.clone());
                }
            }
        }
        Some(removed)
    }

    /// The index of the `nested-pending-parent` segment written at `written_at` (the one a
    /// parent's row op names), or `None` when there is none (already replayed). A newer
    /// segment that still holds completed operations must be reverted first: that is an
    /// error naming it.
    pub fn pending_parent_segment(&self, written_at: u64) -> Result<Option<usize>, String> {
        let Some(index) = self
            .segments
            .iter()
            .rposition(|s| s.reason == reason::NESTED_PENDING_PARENT && s.written_at == written_at)
        else {
            return Ok(None);
        };
        match self.segments[index + 1..]
            .iter()
            .find(|s| !s.operations.is_empty())
        {
            Some(newer) => Err(format!(
                "its journal holds a newer segment ({}, {} operation(s)) that must be reverted \
                 first; run `cdkd rollback {}` and then this rollback again",
                newer.reason,
                newer.operations.len(),
                self.stack_name
            )),
            None => Ok(Some(index)),
        }
    }

    /// A nested child's successful deploy: the segments of earlier failed attempts are
    /// settled (removed; the deploy superseded them) and `segment` is appended after the
    /// pending ones, which stay for the parent's rollback. Returns the settled segments.
    pub fn append_pending(&mut self, segment: Segment) -> Vec<Segment> {
        let mut settled = Vec::new();
        let mut i = self.segments.len();
        while i > 0 {
            i -= 1;
            if self.segments[i].reason != reason::NESTED_PENDING_PARENT {
                if let Some(s) = self.remove_segment(i) {
                    settled.push(s);
                }
            }
        }
        self.segments.push(segment);
        settled
    }
}

/// A resource `cdkd import` adopted while a segment held an op of its logical id
/// (`importedResources`, additive, no journalVersion bump). Kept in the segment's `extra`, so
/// every writer of segments carries it without knowing it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportedResource {
    pub logical_id: String,
    pub physical_id: String,
    pub resource_type: String,
}

const IMPORTED_RESOURCES: &str = "importedResources";

/// A segment's `initialDeploy` (upstream requires it on every segment it writes).
pub const INITIAL_DEPLOY: &str = "initialDeploy";

impl Segment {
    /// Stamps what upstream's segments carry beside the operations: whether the failed
    /// deploy was the stack's first, the cdkd version, and the deployment-event run that
    /// wrote it (so `cdkd events` can tie the failure to its later rollback).
    pub fn stamp(&mut self, initial_deploy: bool, run_id: Option<&str>) {
        self.extra
            .insert(INITIAL_DEPLOY.into(), initial_deploy.into());
        self.extra
            .insert("cdkdVersion".into(), env!("CARGO_PKG_VERSION").into());
        if let Some(id) = run_id {
            self.extra.insert("runId".into(), id.into());
        }
    }

    /// The resources `cdkd import` marked on this segment (a malformed entry is skipped).
    pub fn imported_resources(&self) -> Vec<ImportedResource> {
        self.extra
            .get(IMPORTED_RESOURCES)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|v| serde_json::from_value(v.clone()).ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The logical ids whose ops a rollback of this segment must not run: the superseded ones
    /// and the ones `cdkd import` adopted since.
    pub fn skipped_logical_ids(&self) -> Vec<String> {
        let mut ids = self.superseded_logical_ids.clone();
        for r in self.imported_resources() {
            if !ids.contains(&r.logical_id) {
                ids.push(r.logical_id);
            }
        }
        ids
    }

    fn holds_op_of(&self, logical_id: &str) -> bool {
        self.operations.iter().any(|o| o.logical_id == logical_id)
            || self
                .failed_operations
                .iter()
                .any(|o| o.logical_id == logical_id)
    }
}

impl Journal {
    /// `cdkd import` adopting `resource`: marks it on every segment holding an op of its
    /// logical id and supersedes the id on the newest segment. Returns the physical ids other
    /// than the imported one that those ops recorded (the rollback will not touch them), or
    /// `None` when no segment holds an op of the id (nothing changed).
    pub fn mark_imported(&mut self, resource: &ImportedResource) -> Option<Vec<String>> {
        let id = resource.logical_id.as_str();
        let mut marked = false;
        let mut others = Vec::new();
        for seg in self.segments.iter_mut().filter(|s| s.holds_op_of(id)) {
            marked = true;
            let recorded = seg
                .operations
                .iter()
                .filter(|o| o.logical_id == id)
                .filter_map(|o| o.physical_id.clone())
                .chain(
                    seg.failed_operations
                        .iter()
                        .filter(|o| o.logical_id == id)
                        .filter_map(|o| o.physical_id.clone()),
                );
            for p in recorded {
                if p != resource.physical_id && !others.contains(&p) {
                    others.push(p);
                }
            }
            let entry = serde_json::to_value(resource).unwrap_or(Value::Null);
            let list = seg
                .extra
                .entry(IMPORTED_RESOURCES)
                .or_insert_with(|| Value::Array(Vec::new()));
            if !list.is_array() {
                *list = Value::Array(Vec::new());
            }
            if let Value::Array(items) = list {
                items.retain(|v| v.get("logicalId").and_then(Value::as_str) != Some(id));
                items.push(entry);
            }
        }
        if !marked {
            return None;
        }
        if let Some(newest) = self.segments.last_mut() {
            if !newest.superseded_logical_ids.iter().any(|s| s == id) {
                newest.superseded_logical_ids.push(id.to_owned());
            }
        }
        Some(others)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("the rollback journal {key} cannot be read: {reason}; inspect or delete it by hand")]
    Unreadable { key: String, reason: String },
    #[error(transparent)]
    Aws(#[from] AwsError),
}

/// Parses a stored journal.
pub fn parse_journal(key: &str, bytes: &[u8]) -> Result<Journal, JournalError> {
    let unreadable = |reason: String| JournalError::Unreadable {
        key: key.to_owned(),
        reason,
    };
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| unreadable(format!("not JSON: {e}")))?;
    match value.get("journalVersion").and_then(Value::as_u64) {
        Some(v) if v > u64::from(JOURNAL_VERSION) => {
            return Err(unreadable(format!(
                "written by a newer cdkd (journalVersion {v})"
            )))
        }
        Some(0) => return Err(unreadable("invalid journalVersion 0".into())),
        Some(_) => {}
        None => return Err(unreadable("no numeric journalVersion".into())),
    }
    serde_json::from_value(value).map_err(|e| unreadable(e.to_string()))
}

/// Reads, writes and deletes one bucket's journals.
#[derive(Clone)]
pub struct JournalStore {
    client: aws_sdk_s3::Client,
    bucket: String,
    keys: StateKeys,
}

impl JournalStore {
    pub fn new(client: aws_sdk_s3::Client, bucket: &str, keys: StateKeys) -> Self {
        JournalStore {
            client,
            bucket: bucket.to_owned(),
            keys,
        }
    }

    pub fn key(&self, stack: &str, region: &str) -> String {
        self.keys.rollback_journal(stack, region)
    }

    pub async fn load(&self, stack: &str, region: &str) -> Result<Option<Journal>, JournalError> {
        let key = self.key(stack, region);
        let out = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(&key)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if classify(&e) == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(AwsError::call("s3", "GetObject", self.describe(&key), &e).into()),
        };
        let body = out.body.collect().await.map_err(|e| {
            AwsError::Unexpected(format!("reading {} failed: {e}", self.describe(&key)))
        })?;
        parse_journal(&key, &body.into_bytes()).map(Some)
    }

    pub async fn save(&self, journal: &Journal) -> Result<(), JournalError> {
        let key = self.key(&journal.stack_name, &journal.region);
        let body = serde_json::to_vec_pretty(journal)
            .map_err(|e| AwsError::Unexpected(format!("serializing the journal failed: {e}")))?;
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(&key)
            .content_type("application/json")
            .body(ByteStream::from(body))
            .send()
            .await
            .map_err(|e| AwsError::call("s3", "PutObject", self.describe(&key), &e))?;
        Ok(())
    }

    /// Deletes the journal and purges its noncurrent versions; a failed purge is a warning.
    pub async fn delete(&self, stack: &str, region: &str) -> Result<(), JournalError> {
        let key = self.key(stack, region);
        match self
            .client
            .delete_object()
            .bucket(&self.bucket)
            .key(&key)
            .send()
            .await
        {
            Ok(_) => {}
            Err(e) if classify(&e) == ErrorKind::NotFound => {}
            Err(e) => {
                return Err(AwsError::call("s3", "DeleteObject", self.describe(&key), &e).into())
            }
        }
        let outcome = purge_noncurrent_versions(&self.client, &self.bucket, &key).await;
        let outcomes = [outcome];
        if let Some(w) = render_purge_warning(&self.bucket, JOURNAL_OBJECT_DESCRIPTION, &outcomes) {
            ui::warn(w);
        }
        if let Some(w) = ReplicationProbe::shared()
            .after_purge(
                &self.client,
                &self.bucket,
                "rollback-journal",
                JOURNAL_OBJECT_DESCRIPTION,
                &outcomes,
            )
            .await
        {
            ui::warn(w);
        }
        Ok(())
    }

    /// `cdkd import`, before its state write: marks each adopted resource on the stack's
    /// journal (when one exists and holds an op of its id) and saves it. Returns one warning
    /// per op that recorded another resource than the one adopted: the rollback leaves it.
    pub async fn mark_imported(
        &self,
        stack: &str,
        region: &str,
        resources: &[ImportedResource],
    ) -> Result<Vec<String>, JournalError> {
        let Some(mut journal) = self.load(stack, region).await? else {
            return Ok(Vec::new());
        };
        let mut changed = false;
        let mut warnings = Vec::new();
        for r in resources {
            if let Some(others) = journal.mark_imported(r) {
                changed = true;
                for other in others {
                    warnings.push(format!(
                        "{stack}: the rollback journal recorded {other} for {} ({}), not the \
                         imported {}; cdkd rollback will not touch it, so delete it by hand if \
                         it is not wanted",
                        r.logical_id, r.resource_type, r.physical_id
                    ));
                }
            }
        }
        if changed {
            self.save(&journal).await?;
        }
        Ok(warnings)
    }

    /// The nested descendants of `stack` (children, grandchildren, ...) that have a journal
    /// in `region`: one listing of `{prefix}/{stack}~`.
    pub async fn descendants(&self, stack: &str, region: &str) -> Result<Vec<String>, AwsError> {
        let prefix = descendants_prefix(&self.keys, stack);
        let mut names = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(&prefix)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page
                .map_err(|e| AwsError::call("s3", "ListObjectsV2", self.describe(&prefix), &e))?;
            for object in page.contents() {
                if let Some(name) = object
                    .key()
                    .and_then(|k| descendant_journal(&self.keys, stack, region, k))
                {
                    names.push(name);
                }
            }
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn describe(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }
}

/// `{prefix}/{stack}~`: every object of the nested descendants of `stack` (a stack name
/// never holds the separator, so nothing else shares it).
fn descendants_prefix(keys: &StateKeys, stack: &str) -> String {
    format!(
        "{}{stack}{}",
        keys.list_prefix(),
        crate::state::keys::NESTED_STACK_SEPARATOR
    )
}

/// The descendant of `stack` whose journal in `region` the listed `key` is, if it is one.
fn descendant_journal(keys: &StateKeys, stack: &str, region: &str, key: &str) -> Option<String> {
    let rest = key.strip_prefix(&keys.list_prefix())?;
    let mut parts = rest.split('/');
    let (name, key_region, file) = (parts.next()?, parts.next()?, parts.next()?);
    let is_descendant = name
        .strip_prefix(stack)
        .is_some_and(|r| r.starts_with(crate::state::keys::NESTED_STACK_SEPARATOR) && r.len() > 1);
    (parts.next().is_none()
        && is_descendant
        && key_region == region
        && file == crate::state::keys::ROLLBACK_JOURNAL_FILE)
        .then(|| name.to_owned())
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
