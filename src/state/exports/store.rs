//! [`ExportIndexStore`]: reading, maintaining and rebuilding the exports index
//! in the state bucket.
//!
//! Every write is optimistic: GET the index and its ETag, change it, PUT it
//! with `If-Match: <etag>` (or `If-None-Match: *` when there is no index yet).
//! A 412 (or 409, or a 404 because the object vanished) means another writer
//! got there first: re-read and re-apply, up to [`MAX_WRITE_RETRIES`] retries
//! with jittered exponential backoff. Past that, or on any other failure, the
//! store warns (`tracing::warn!`) and returns: the canonical `state.json` is
//! unaffected and the index self-heals later.
//!
//! A missing or corrupt index is rebuilt by whichever operation finds it (a
//! lookup, an update, a removal): every state record of the region is read, an
//! unreadable one contributes nothing and is named in a warning, and the
//! result is written. A rebuild that cannot list or read the bucket writes
//! nothing, so a partial view is never published as a complete one.
//!
//! The store reads the index of a region once and keeps it for its lifetime
//! (so K lookups cost one GET); its own writes refresh that copy. Share one
//! store across a run so a producer deployed earlier in the run is seen by its
//! consumers.
//!
//! The client must already target the bucket's region (the caller resolves it
//! with GetBucketLocation, as for the state backend).

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_s3::primitives::ByteStream;
use indexmap::IndexMap;
use serde_json::Value;

use super::index::{ExportEntry, ExportIndex};
use super::{published_exports, unreadable_export_set_warning};
use crate::aws::{classify, error_code, AwsError, ErrorKind};
use crate::state::keys::StateKeys;
use crate::state::record::StackState;
use crate::state::value::quoted;

/// Retries after the first attempt when another writer wins the race.
pub const MAX_WRITE_RETRIES: u32 = 5;
/// The first retry waits a random time up to this; each later retry doubles the bound.
pub const DEFAULT_RETRY_BASE_DELAY: Duration = Duration::from_millis(100);
type PutError = aws_sdk_s3::error::SdkError<aws_sdk_s3::operation::put_object::PutObjectError>;

/// How a write to the index ended. None of them is an error for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexWriteStatus {
    /// Written on this attempt (1 = no conflict).
    Written { attempt: u32 },
    /// The index already said this (or, for a lookup, was readable): no write.
    Unchanged,
    /// Every attempt lost to a concurrent writer; the index was left as it was.
    RetriesExhausted,
    /// S3 refused or failed for another reason (denied, unreachable, ...), or a
    /// rebuild could not read the bucket; nothing was written.
    Failed,
}

/// What a write did, and the warnings it logged (each also sent to
/// `tracing::warn!`).
#[derive(Debug, Clone, PartialEq)]
pub struct IndexWriteReport {
    pub status: IndexWriteStatus,
    /// Whether the index was missing or corrupt (or a rebuild was asked for)
    /// and was derived from the state records.
    pub rebuilt: bool,
    pub warnings: Vec<String>,
}

impl IndexWriteReport {
    pub fn is_written(&self) -> bool {
        matches!(self.status, IndexWriteStatus::Written { .. })
    }
}

/// Reads and maintains `{prefix}/_index/{region}/exports.json`.
pub struct ExportIndexStore {
    pub(super) client: aws_sdk_s3::Client,
    pub(super) bucket: String,
    pub(super) keys: StateKeys,
    retry_base_delay: Duration,
    cache: Mutex<HashMap<String, Arc<ExportIndex>>>,
    /// Reads a valid index as stored and never writes (no rebuild, no write-through).
    read_only: bool,
}

/// The stored index as one GET found it.
enum Stored {
    Absent,
    Corrupt {
        etag: Option<String>,
        why: String,
    },
    Valid {
        index: ExportIndex,
        etag: Option<String>,
    },
}

/// The PUT's precondition.
enum Guard {
    IfMatch(String),
    IfAbsent,
    /// S3 sent no ETag; nothing to guard with.
    None,
}

/// What a write does to the index.
enum Change<'a> {
    /// Only repair a missing or corrupt index (a lookup).
    Ensure,
    /// Derive from the state records whatever is stored.
    Rebuild,
    Replace {
        stack: &'a str,
        exports: Vec<(String, Value)>,
    },
    Remove {
        stack: &'a str,
    },
    Patch {
        name: &'a str,
        entry: ExportEntry,
    },
    /// Set the value of entries `stack` already owns (scrub): no name added or removed,
    /// and a missing or corrupt index is left alone.
    Converge {
        stack: &'a str,
        values: Vec<(String, Value)>,
    },
}

/// The stored index as one plain GET found it (no rebuild, no write).
#[derive(Debug, Clone, PartialEq)]
pub enum IndexPeek {
    Absent,
    /// Why the body is unusable.
    Corrupt(String),
    Valid(ExportIndex),
}

impl ExportIndexStore {
    /// `client` must target the bucket's own region.
    pub fn new(client: aws_sdk_s3::Client, bucket: impl Into<String>, keys: StateKeys) -> Self {
        ExportIndexStore {
            client,
            bucket: bucket.into(),
            keys,
            retry_base_delay: DEFAULT_RETRY_BASE_DELAY,
            cache: Mutex::new(HashMap::new()),
            read_only: false,
        }
    }

    /// A store for a command that writes nothing (`cdkd diff`): lookups read the index as
    /// stored (a missing or corrupt one holds nothing: the caller scans the records), and
    /// every write is a no-op reported as unchanged.
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// Sets the first retry's delay (tests use a few milliseconds).
    pub fn with_retry_base_delay(mut self, delay: Duration) -> Self {
        self.retry_base_delay = delay;
        self
    }

    /// The entry for `export_name` in `region`'s index, naming the stack and
    /// region that produced it. `None` when the index does not hold it, or
    /// cannot be read (warned): the caller falls back to scanning the state
    /// records. A missing or corrupt index is rebuilt first.
    pub async fn lookup(&self, region: &str, export_name: &str) -> Option<ExportEntry> {
        self.index(region).await?.get(export_name).cloned()
    }

    /// `region`'s whole index: the copy this store holds, or one GET (and a
    /// rebuild when missing or corrupt). `None` when it cannot be read.
    pub async fn index(&self, region: &str) -> Option<Arc<ExportIndex>> {
        if let Some(index) = self.cached(region) {
            return Some(index);
        }
        self.apply(region, Change::Ensure).await;
        self.cached(region)
    }

    /// Whether the index of `region` this store holds (read or written this run) has an
    /// entry `stack` produced; `None` when the store holds no copy of it.
    pub fn cached_holds(&self, region: &str, stack: &str) -> Option<bool> {
        let index = self.cached(region)?;
        Some(index.exports.values().any(|e| e.producer_stack == stack))
    }

    /// Makes `stack`'s entries in `region` exactly the exports `state`
    /// publishes (see [`super::importable_output_keys`]). A name another stack
    /// holds is taken over, with a warning naming both.
    pub async fn update_stack(
        &self,
        region: &str,
        stack: &str,
        state: &StackState,
    ) -> IndexWriteReport {
        let (exports, problem) = published_exports(state);
        let mut report = self.apply(region, Change::Replace { stack, exports }).await;
        if let Some(why) = problem {
            let warning = unreadable_export_set_warning(stack, region, &why);
            tracing::warn!("{warning}");
            report.warnings.insert(0, warning);
        }
        report
    }

    /// Drops every entry `stack` produced in `region`.
    pub async fn remove_stack(&self, region: &str, stack: &str) -> IndexWriteReport {
        self.apply(region, Change::Remove { stack }).await
    }

    /// Writes one entry (the resolver's write-through after a scan found an
    /// export the index missed).
    pub async fn patch_entry(
        &self,
        region: &str,
        export_name: &str,
        entry: ExportEntry,
    ) -> IndexWriteReport {
        self.apply(
            region,
            Change::Patch {
                name: export_name,
                entry,
            },
        )
        .await
    }

    /// Derives `region`'s index from its state records and writes it, whatever
    /// is stored. (Lookups and updates rebuild on their own when the index is
    /// missing or corrupt.)
    pub async fn rebuild(&self, region: &str) -> IndexWriteReport {
        self.apply(region, Change::Rebuild).await
    }

    /// Reads `region`'s index as stored: never rebuilds, never writes (scrub's audit).
    pub async fn peek(&self, region: &str) -> Result<IndexPeek, AwsError> {
        Ok(match self.read(&self.keys.export_index(region)).await? {
            Stored::Absent => IndexPeek::Absent,
            Stored::Corrupt { why, .. } => IndexPeek::Corrupt(why),
            Stored::Valid { index, .. } => IndexPeek::Valid(index),
        })
    }

    /// Sets the value of each named entry `stack` owns in `region` to the given value
    /// (`cdkd scrub`'s convergence onto the scrubbed `state.outputs`). Membership never
    /// changes: a name the index does not hold, or holds for another producer, is skipped,
    /// and a missing or corrupt index is not rebuilt.
    pub async fn converge_stack(
        &self,
        region: &str,
        stack: &str,
        values: Vec<(String, Value)>,
    ) -> IndexWriteReport {
        self.apply(region, Change::Converge { stack, values }).await
    }

    /// Forgets the copy of `region`'s index this store holds.
    pub fn invalidate(&self, region: &str) {
        self.cache_lock().remove(region);
    }

    fn cache_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<ExportIndex>>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cached(&self, region: &str) -> Option<Arc<ExportIndex>> {
        self.cache_lock().get(region).cloned()
    }

    fn remember(&self, region: &str, index: ExportIndex) {
        self.cache_lock()
            .insert(region.to_string(), Arc::new(index));
    }

    pub(super) fn target(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }

    /// The read-modify-write loop every operation goes through.
    async fn apply(&self, region: &str, change: Change<'_>) -> IndexWriteReport {
        let key = self.keys.export_index(region);
        if self.read_only {
            if matches!(change, Change::Ensure) {
                if let Ok(Stored::Valid { index, .. }) = self.read(&key).await {
                    self.remember(region, index);
                }
            }
            return IndexWriteReport {
                status: IndexWriteStatus::Unchanged,
                rebuilt: false,
                warnings: Vec::new(),
            };
        }
        let mut sticky: Vec<String> = Vec::new();
        let mut derived: Option<IndexMap<String, ExportEntry>> = None;
        let mut rebuilt = false;
        let mut last: Option<ExportIndex> = None;
        let mut attempt_warnings = Vec::new();
        let mut status = IndexWriteStatus::RetriesExhausted;

        for attempt in 1..=MAX_WRITE_RETRIES + 1 {
            if attempt > 1 {
                tokio::time::sleep(self.backoff(attempt - 1)).await;
            }
            attempt_warnings.clear();
            let stored = match self.read(&key).await {
                Ok(stored) => stored,
                Err(e) => {
                    sticky.push(format!(
                        "Exports index for {} could not be read ({e}); the state records are unaffected, and Fn::ImportValue falls back to scanning them.",
                        quoted(region)
                    ));
                    status = IndexWriteStatus::Failed;
                    break;
                }
            };
            let (mut index, guard, readable) = match stored {
                Stored::Valid { index, etag } => {
                    if matches!(change, Change::Ensure) {
                        last = Some(index);
                        status = IndexWriteStatus::Unchanged;
                        break;
                    }
                    (index, guard_for(etag), true)
                }
                Stored::Absent | Stored::Corrupt { .. }
                    if matches!(change, Change::Converge { .. }) =>
                {
                    status = IndexWriteStatus::Unchanged;
                    break;
                }
                Stored::Absent => (ExportIndex::default(), Guard::IfAbsent, false),
                Stored::Corrupt { etag, why } => {
                    let notice = format!(
                        "Exports index {} is corrupt ({why}); rebuilding it from the state records.",
                        self.target(&key)
                    );
                    if !sticky.contains(&notice) {
                        sticky.push(notice);
                    }
                    (ExportIndex::default(), guard_for(etag), false)
                }
            };
            if !readable || matches!(change, Change::Rebuild) {
                if derived.is_none() {
                    match self.derive(region).await {
                        Ok((exports, warnings)) => {
                            sticky.extend(warnings);
                            derived = Some(exports);
                        }
                        Err(e) => {
                            sticky.push(format!(
                                "Exports index for {} was not rebuilt: {e}. Fn::ImportValue falls back to scanning the state records.",
                                quoted(region)
                            ));
                            status = IndexWriteStatus::Failed;
                            break;
                        }
                    }
                }
                index.exports = derived.clone().unwrap_or_default();
                rebuilt = true;
            }
            let before = readable.then(|| index.exports.clone());
            match &change {
                Change::Ensure | Change::Rebuild => {}
                Change::Replace { stack, exports } => {
                    attempt_warnings = index.replace_stack(stack, region, exports);
                }
                Change::Remove { stack } => index.remove_stack(stack, region),
                Change::Patch { name, entry } => {
                    attempt_warnings.extend(index.put(name, entry.clone()));
                }
                Change::Converge { stack, values } => {
                    for (name, value) in values {
                        if let Some(e) = index.exports.get_mut(name) {
                            if e.is_from(stack, region) {
                                e.value = value.clone();
                            }
                        }
                    }
                }
            }
            if before.as_ref() == Some(&index.exports) && !matches!(change, Change::Rebuild) {
                last = Some(index);
                status = IndexWriteStatus::Unchanged;
                break;
            }
            let result = self.put(&key, region, &index, &guard).await;
            last = Some(index);
            match result {
                Ok(()) => {
                    status = IndexWriteStatus::Written { attempt };
                    break;
                }
                Err(e) if is_lost_race(&e, &guard) => continue,
                Err(e) => {
                    sticky.push(format!(
                        "Exports index for {} was not updated ({}); the state records are unaffected and the index catches up on a later write.",
                        quoted(region),
                        AwsError::call("s3", "PutObject", self.target(&key), &e)
                    ));
                    status = IndexWriteStatus::Failed;
                    break;
                }
            }
        }
        if status == IndexWriteStatus::RetriesExhausted {
            sticky.push(format!(
                "Exports index {} was not updated: another writer changed it on each of {} attempts. The state records are unaffected and the index catches up on a later write.",
                self.target(&key),
                MAX_WRITE_RETRIES + 1
            ));
        }
        // The copy kept for lookups reflects this change even when the write
        // did not land: it is what the state records say.
        match last {
            Some(index) => self.remember(region, index),
            None => self.invalidate(region),
        }
        let mut warnings = sticky;
        warnings.extend(attempt_warnings);
        for warning in &warnings {
            tracing::warn!("{warning}");
        }
        IndexWriteReport {
            status,
            rebuilt,
            warnings,
        }
    }

    /// Exponential backoff with full jitter before retry `retry` (1-based): a
    /// random wait up to the base delay times 2^(retry-1), so writers that lost
    /// the same race spread out instead of colliding again.
    fn backoff(&self, retry: u32) -> Duration {
        let ceiling = self
            .retry_base_delay
            .saturating_mul(1u32 << (retry - 1).min(16));
        let span = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        let jitter = RandomState::new().hash_one(now_nanos()) % span.saturating_add(1);
        Duration::from_nanos(jitter)
    }

    async fn read(&self, key: &str) -> Result<Stored, AwsError> {
        let out = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e)
                if classify(&e) == ErrorKind::NotFound
                    && error_code(&e) != Some("NoSuchBucket") =>
            {
                return Ok(Stored::Absent)
            }
            Err(e) => return Err(AwsError::call("s3", "GetObject", self.target(key), &e)),
        };
        let etag = out.e_tag().filter(|e| !e.is_empty()).map(str::to_owned);
        let bytes = out.body.collect().await.map_err(|e| {
            AwsError::Unexpected(format!("reading {} failed: {e}", self.target(key)))
        })?;
        Ok(match ExportIndex::parse(&bytes.into_bytes()) {
            Ok(index) => Stored::Valid { index, etag },
            Err(why) => Stored::Corrupt { etag, why },
        })
    }

    async fn put(
        &self,
        key: &str,
        region: &str,
        index: &ExportIndex,
        guard: &Guard,
    ) -> Result<(), PutError> {
        let mut request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type("application/json")
            .body(ByteStream::from(index.to_json_bytes(region, now_millis())));
        request = match guard {
            Guard::IfMatch(etag) => request.if_match(etag),
            Guard::IfAbsent => request.if_none_match("*"),
            Guard::None => request,
        };
        request.send().await.map(|_| ())
    }
}

fn guard_for(etag: Option<String>) -> Guard {
    etag.map_or(Guard::None, Guard::IfMatch)
}

/// Whether a failed PUT means another writer moved the index first.
fn is_lost_race(err: &PutError, guard: &Guard) -> bool {
    match classify(err) {
        ErrorKind::PreconditionFailed | ErrorKind::Conflict => true,
        // The object was deleted between the GET and the PUT.
        ErrorKind::NotFound => {
            matches!(guard, Guard::IfMatch(_)) && error_code(err) != Some("NoSuchBucket")
        }
        _ => false,
    }
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn now_millis() -> u64 {
    u64::try_from(now_nanos() / 1_000_000).unwrap_or(u64::MAX)
}
