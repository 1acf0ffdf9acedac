//! The stack lock: `{prefix}/{stack}/{region}/lock.json` in the state bucket,
//! written and deleted with conditional requests.
//!
//! - Acquire: PutObject with `If-None-Match: *`. On a 412 the lock is read;
//!   when it is expired by its own `expiresAt` (a value that is not a finite
//!   number counts as expired) it is reaped with a DeleteObject conditional on
//!   the ETag just read -- never unconditionally, so two reapers cannot both
//!   win -- and the PUT is tried once more.
//! - Renewal: while held, a background task re-writes `expiresAt` every
//!   min(2 min, TTL/4) with `If-Match` on the ETag this process last wrote. A
//!   412 is checked once by reading the object back: a body byte-for-byte
//!   equal to one this process wrote is a renewal whose response was lost and
//!   is adopted; anything else means the lock was lost.
//! - Release: DeleteObject `If-Match` the held ETag. A 412 leaves the lock
//!   (someone else's); a 403 or 501 (the condition was not evaluated) falls
//!   back to an unconditional delete only after a re-read shows the body is
//!   still ours; every other failure is returned, and callers only warn.
//!   A second release is a no-op.
//! - `force-unlock`: an unconditional delete.
//!
//! Every delete of the lock also purges the key's noncurrent versions
//! ([`super::purge`]); a purge failure is logged at debug on release and at
//! warn on the two reap paths (expired-lock takeover, force-unlock).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::keys::StateKeys;
use super::purge::{
    purge_noncurrent_versions, render_purge_warning, ReplicationProbe, LOCK_OBJECT_DESCRIPTION,
};
use super::record::LockInfo;
use crate::aws::{AwsError, ErrorKind};

/// How long a lock lives without a renewal.
pub const DEFAULT_LOCK_TTL: Duration = Duration::from_secs(30 * 60);
/// The longest gap between two renewals.
pub const MAX_RENEW_INTERVAL: Duration = Duration::from_secs(2 * 60);
/// Retries of `acquire_with_retry` after the first attempt.
pub const DEFAULT_MAX_RETRIES: u32 = 3;
/// The wait between two attempts of `acquire_with_retry`.
pub const DEFAULT_RETRY_DELAY: Duration = Duration::from_secs(2);
/// Free re-acquires when the lock vanished between the PUT and the read.
pub const RELEASED_LOCK_REACQUIRE_LIMIT: u32 = 3;
/// The object kind the replication probe reports the lock under.
const LOCK_OBJECT_KIND: &str = "lock";
/// Bodies kept for the lost-response check (written, response not seen).
const UNCONFIRMED_LIMIT: usize = 16;

/// The renewal interval for `ttl`: min(2 minutes, TTL/4).
pub fn renew_interval_for(ttl: Duration) -> Duration {
    (ttl / 4)
        .min(MAX_RENEW_INTERVAL)
        .max(Duration::from_millis(1))
}

/// `user@host:pid`, the owner string cdkd writes.
pub fn default_owner() -> String {
    let user = ["USER", "USERNAME", "LOGNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "unknown".to_owned());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| {
            ["HOSTNAME", "COMPUTERNAME"]
                .iter()
                .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        })
        .unwrap_or_else(|| "unknown".to_owned());
    format!("{user}@{host}:{}", std::process::id())
}

/// Retry and renewal timing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockConfig {
    /// Retries of `acquire_with_retry` after the first attempt.
    pub max_retries: u32,
    /// The wait between two attempts.
    pub retry_delay: Duration,
    /// The renewal interval; `None` = [`renew_interval_for`] the TTL.
    pub renew_interval: Option<Duration>,
}

impl Default for LockConfig {
    fn default() -> Self {
        LockConfig {
            max_retries: DEFAULT_MAX_RETRIES,
            retry_delay: DEFAULT_RETRY_DELAY,
            renew_interval: None,
        }
    }
}

/// A failed lock operation, as one line naming the stack, region and remedy.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock (`holder` is the last read of it;
    /// `None` when none could be read).
    #[error("{}", held_message(.stack, .region, .holder.as_ref()))]
    Held {
        stack: String,
        region: String,
        holder: Option<LockInfo>,
    },
    /// An S3 call of the lock failed.
    #[error("Could not {action} the lock of stack {stack} ({region}): {source}")]
    Aws {
        stack: String,
        region: String,
        action: &'static str,
        source: AwsError,
    },
    /// An expired lock could not be removed with its conditional delete.
    #[error(
        "Stack {stack} ({region}) has an expired lock from {owner} that could not be removed: \
         {source}; clear it with `cdkd force-unlock {stack}`"
    )]
    Reap {
        stack: String,
        region: String,
        owner: String,
        source: AwsError,
    },
    /// The conditional release was not evaluated and ownership could not be
    /// re-checked, so nothing was deleted.
    #[error(
        "Did not release the lock of stack {stack} ({region}): the conditional delete was \
         refused ({refused}) and re-reading the lock to confirm it is still ours failed \
         ({source}); it lapses at its expiry, or run `cdkd force-unlock {stack}`"
    )]
    ReleaseUnverified {
        stack: String,
        region: String,
        refused: String,
        source: AwsError,
    },
}

impl LockError {
    fn aws(stack: &str, region: &str, action: &'static str, source: AwsError) -> Self {
        LockError::Aws {
            stack: stack.to_owned(),
            region: region.to_owned(),
            action,
            source,
        }
    }
}

fn held_message(stack: &str, region: &str, holder: Option<&LockInfo>) -> String {
    match holder {
        Some(h) => format!(
            "Stack {stack} ({region}) is locked by {}; wait for it, or run `cdkd force-unlock \
             {stack}` if that process is gone",
            describe_holder(h)
        ),
        None => format!(
            "Could not acquire the lock of stack {stack} ({region}): another process holds or \
             is taking it, and no lock could be read; retry, or run `cdkd force-unlock {stack}` \
             if this persists"
        ),
    }
}

/// `owner (operation) until <ISO time>`.
pub fn describe_holder(info: &LockInfo) -> String {
    let owner = if info.owner.is_empty() {
        "an unknown owner"
    } else {
        info.owner.as_str()
    };
    let operation = info
        .operation
        .as_deref()
        .map(|op| format!(" ({op})"))
        .unwrap_or_default();
    let until = match info.expires_at {
        Some(ms) => format!("until {}", iso8601_ms(ms)),
        None => "with no valid expiry".to_owned(),
    };
    format!("{owner}{operation} {until}")
}

/// What a release did.
#[derive(Debug, Clone, PartialEq)]
pub enum ReleaseOutcome {
    /// The lock was deleted.
    Released,
    /// This lock was already released (or a release is under way): nothing done.
    AlreadyReleased,
    /// This process holds no lock for that stack and region: nothing done.
    NotHeld,
    /// The lock object was already gone.
    Gone,
    /// The lock present is somebody else's and was left in place (warned).
    NotOurs { holder: Option<LockInfo> },
}

/// One read of the lock.
#[derive(Debug, Clone, PartialEq)]
pub struct LockSnapshot {
    pub info: LockInfo,
    /// As S3 returned it, quotes included.
    pub etag: String,
}

/// The S3 side, shared by the manager, its held locks and their renewals.
struct Ctx {
    client: Client,
    bucket: String,
    probe: Arc<ReplicationProbe>,
}

enum Cond<'a> {
    IfNoneMatch,
    IfMatch(&'a str),
}

impl Ctx {
    fn target(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }

    /// The body and ETag of `key`, or `None` when there is no object.
    async fn get(&self, key: &str) -> Result<Option<(Vec<u8>, String)>, AwsError> {
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
    async fn put(
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

    async fn delete(&self, key: &str, if_match: Option<&str>) -> Result<(), AwsError> {
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
    async fn etag_if_body(&self, key: &str, body: &[u8]) -> Result<Option<String>, AwsError> {
        Ok(self
            .get(key)
            .await?
            .filter(|(stored, etag)| stored == body && !etag.is_empty())
            .map(|(_, etag)| etag))
    }

    /// Purge after a reap (takeover, force-unlock): failures warn.
    async fn purge_loud(&self, key: &str) {
        for text in self.purge(key).await {
            tracing::warn!("{text}");
        }
    }

    /// Purge after a release: failures go to debug.
    async fn purge_quiet(&self, key: &str) {
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

fn log_purge(outcome: &super::purge::PurgeOutcome) {
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

/// One lock this process took, shared by its [`HeldLock`], the manager's
/// table (for a release by stack and region) and the renewal task.
struct Entry {
    stack: String,
    region: String,
    key: String,
    ttl: Duration,
    state: Mutex<EntryState>,
    stop: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
}

struct EntryState {
    /// The tombstone: set by the first release, never cleared.
    released: bool,
    /// The ETag of the object this process last wrote (or adopted).
    etag: String,
    /// That object's body.
    body: Vec<u8>,
    info: LockInfo,
    /// Renewal bodies sent whose success was not seen (the response was lost
    /// or the request failed after S3 may have applied it).
    unconfirmed: Vec<Vec<u8>>,
    lost: bool,
    lapse_warned: bool,
}

impl Entry {
    fn state(&self) -> MutexGuard<'_, EntryState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn is_own_body(&self, bytes: &[u8]) -> bool {
        let st = self.state();
        st.body == bytes || st.unconfirmed.iter().any(|b| b == bytes)
    }
}

/// Takes, renews and releases stack locks in one state bucket.
#[derive(Clone)]
pub struct LockManager {
    ctx: Arc<Ctx>,
    keys: StateKeys,
    config: LockConfig,
    held: Arc<Mutex<HashMap<String, Arc<Entry>>>>,
}

impl LockManager {
    /// `client` must already target the bucket's region.
    pub fn new(client: Client, bucket: impl Into<String>, keys: StateKeys) -> Self {
        LockManager {
            ctx: Arc::new(Ctx {
                client,
                bucket: bucket.into(),
                probe: ReplicationProbe::shared(),
            }),
            keys,
            config: LockConfig::default(),
            held: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    pub fn with_config(mut self, config: LockConfig) -> Self {
        self.config = config;
        self
    }

    /// Uses `probe` instead of the process-wide replication probe.
    pub fn with_replication_probe(mut self, probe: Arc<ReplicationProbe>) -> Self {
        self.ctx = Arc::new(Ctx {
            client: self.ctx.client.clone(),
            bucket: self.ctx.bucket.clone(),
            probe,
        });
        self
    }

    pub fn bucket(&self) -> &str {
        &self.ctx.bucket
    }

    pub fn keys(&self) -> &StateKeys {
        &self.keys
    }

    pub fn config(&self) -> &LockConfig {
        &self.config
    }

    /// One attempt: the PUT, and (after an expired lock was reaped) one more.
    /// Fails with [`LockError::Held`] naming the holder when another process
    /// holds the lock.
    pub async fn acquire(
        &self,
        stack: &str,
        region: &str,
        owner: &str,
        operation: Option<&str>,
        ttl: Duration,
    ) -> Result<HeldLock, LockError> {
        if let Some(held) = self
            .try_acquire(stack, region, owner, operation, ttl)
            .await?
        {
            return Ok(held);
        }
        let holder = self.read(stack, region).await?.map(|s| s.info);
        Err(LockError::Held {
            stack: stack.to_owned(),
            region: region.to_owned(),
            holder,
        })
    }

    /// [`Self::acquire`] with `max_retries` retries `retry_delay` apart; a lock
    /// that vanished between the PUT and the read is re-tried at once, up to
    /// [`RELEASED_LOCK_REACQUIRE_LIMIT`] times, without spending a retry. The
    /// error names the holder read after the last failed attempt.
    pub async fn acquire_with_retry(
        &self,
        stack: &str,
        region: &str,
        owner: &str,
        operation: Option<&str>,
        ttl: Duration,
    ) -> Result<HeldLock, LockError> {
        let max_retries = self.config.max_retries;
        let mut holder: Option<LockInfo> = None;
        let mut released_reacquires = 0;
        let mut attempt = 0;
        while attempt <= max_retries {
            if let Some(held) = self
                .try_acquire(stack, region, owner, operation, ttl)
                .await?
            {
                return Ok(held);
            }
            holder = self.read(stack, region).await?.map(|s| s.info);
            if holder.is_none() && released_reacquires < RELEASED_LOCK_REACQUIRE_LIMIT {
                released_reacquires += 1;
                continue;
            }
            if attempt < max_retries {
                let who = match &holder {
                    Some(h) => format!("locked by {}", describe_holder(h)),
                    None => "locked, but no lock could be read".to_owned(),
                };
                tracing::info!(
                    "Stack {stack} ({region}) is {who}; retrying in {:?} ({}/{max_retries})",
                    self.config.retry_delay,
                    attempt + 1
                );
                tokio::time::sleep(self.config.retry_delay).await;
            }
            attempt += 1;
        }
        Err(LockError::Held {
            stack: stack.to_owned(),
            region: region.to_owned(),
            holder,
        })
    }

    /// `Ok(None)`: someone else held the lock at the PUT.
    async fn try_acquire(
        &self,
        stack: &str,
        region: &str,
        owner: &str,
        operation: Option<&str>,
        ttl: Duration,
    ) -> Result<Option<HeldLock>, LockError> {
        let key = self.keys.lock(stack, region);
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let mut reaped = false;
        loop {
            let now = now_ms();
            let mut info = LockInfo::new(owner, now, now.saturating_add(ttl_ms));
            info.operation = operation.map(str::to_owned);
            let body = info.to_json_bytes();
            match self.ctx.put(&key, &body, Cond::IfNoneMatch).await {
                Ok(etag) => {
                    let etag = match etag.filter(|e| !e.is_empty()) {
                        Some(etag) => Some(etag),
                        None => self
                            .ctx
                            .etag_if_body(&key, &body)
                            .await
                            .map_err(|e| LockError::aws(stack, region, "acquire", e))?,
                    };
                    let Some(etag) = etag else {
                        return Ok(None);
                    };
                    return Ok(Some(self.hold(stack, region, key, ttl, etag, body, info)));
                }
                Err(e) if is_contention(&e) => {}
                Err(e) => return Err(LockError::aws(stack, region, "acquire", e)),
            }
            if reaped {
                return Ok(None);
            }
            let current = self
                .ctx
                .get(&key)
                .await
                .map_err(|e| LockError::aws(stack, region, "read", e))?;
            // Gone since the PUT: the caller's retry re-tries.
            let Some((bytes, etag)) = current else {
                return Ok(None);
            };
            // A body that is not an object reads as no lock and is never
            // reaped here (only force-unlock clears it).
            let Some(previous) = LockInfo::parse(&bytes) else {
                return Ok(None);
            };
            if !previous.is_expired(now_ms()) {
                return Ok(None);
            }
            // No unconditional fallback: the condition is what makes two
            // concurrent reapers safe.
            match self.ctx.delete(&key, Some(&etag)).await {
                Ok(()) => {
                    tracing::warn!(
                        "Took over the expired lock of stack {stack} ({region}) held by {}; if \
                         that process is still running, two writers are now operating on this \
                         stack",
                        describe_holder(&previous)
                    );
                    self.ctx.purge_loud(&key).await;
                }
                Err(e) if is_contention(&e) => return Ok(None),
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(LockError::Reap {
                        stack: stack.to_owned(),
                        region: region.to_owned(),
                        owner: if previous.owner.is_empty() {
                            "an unknown owner".to_owned()
                        } else {
                            previous.owner.clone()
                        },
                        source: e,
                    })
                }
            }
            reaped = true;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn hold(
        &self,
        stack: &str,
        region: &str,
        key: String,
        ttl: Duration,
        etag: String,
        body: Vec<u8>,
        info: LockInfo,
    ) -> HeldLock {
        let (stop, stop_rx) = watch::channel(false);
        let entry = Arc::new(Entry {
            stack: stack.to_owned(),
            region: region.to_owned(),
            key: key.clone(),
            ttl,
            state: Mutex::new(EntryState {
                released: false,
                etag,
                body,
                info,
                unconfirmed: Vec::new(),
                lost: false,
                lapse_warned: false,
            }),
            stop,
            task: Mutex::new(None),
        });
        let interval = self
            .config
            .renew_interval
            .unwrap_or_else(|| renew_interval_for(ttl))
            .max(Duration::from_millis(1));
        let task = tokio::spawn(renew_loop(
            self.ctx.clone(),
            entry.clone(),
            stop_rx,
            interval,
        ));
        *entry.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, entry.clone());
        HeldLock {
            ctx: self.ctx.clone(),
            entry,
        }
    }

    /// Releases the lock this process took for `stack` / `region` (see
    /// [`HeldLock::release`]); [`ReleaseOutcome::NotHeld`] when it took none.
    pub async fn release(&self, stack: &str, region: &str) -> Result<ReleaseOutcome, LockError> {
        let key = self.keys.lock(stack, region);
        let entry = self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        match entry {
            Some(entry) => release_entry(&self.ctx, &entry).await,
            None => Ok(ReleaseOutcome::NotHeld),
        }
    }

    /// [`Self::release`], logging a failure as a warning: a failed release
    /// never fails the command.
    pub async fn release_and_warn(&self, stack: &str, region: &str) {
        if let Err(e) = self.release(stack, region).await {
            tracing::warn!("{e}");
        }
    }

    /// Deletes the lock whoever holds it, then purges the key's noncurrent
    /// versions. Returns whether a lock object was there.
    pub async fn force_unlock(&self, stack: &str, region: &str) -> Result<bool, LockError> {
        let key = self.keys.lock(stack, region);
        // A read that fails (e.g. denied) still lets the delete try.
        if let Ok(None) = self.ctx.get(&key).await {
            return Ok(false);
        }
        self.ctx
            .delete(&key, None)
            .await
            .map_err(|e| LockError::aws(stack, region, "force-unlock", e))?;
        self.ctx.purge_loud(&key).await;
        Ok(true)
    }

    /// The current lock, or `None` when there is none (or its body is not a
    /// JSON object, which reads as no lock).
    pub async fn read(&self, stack: &str, region: &str) -> Result<Option<LockSnapshot>, LockError> {
        let key = self.keys.lock(stack, region);
        let current = self
            .ctx
            .get(&key)
            .await
            .map_err(|e| LockError::aws(stack, region, "read", e))?;
        Ok(current.and_then(|(bytes, etag)| {
            LockInfo::parse(&bytes).map(|info| LockSnapshot { info, etag })
        }))
    }
}

/// A lock this process holds. Renewed in the background until released or
/// dropped; dropping it stops the renewal but does not delete the lock (it
/// lapses at its expiry, or [`LockManager::release`] still releases it).
#[must_use = "dropping a HeldLock stops its renewal"]
pub struct HeldLock {
    ctx: Arc<Ctx>,
    entry: Arc<Entry>,
}

impl std::fmt::Debug for HeldLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldLock")
            .field("key", &self.entry.key)
            .field("etag", &self.etag())
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl HeldLock {
    pub fn stack(&self) -> &str {
        &self.entry.stack
    }

    pub fn region(&self) -> &str {
        &self.entry.region
    }

    pub fn key(&self) -> &str {
        &self.entry.key
    }

    /// The body last written (or adopted).
    pub fn info(&self) -> LockInfo {
        self.entry.state().info.clone()
    }

    /// The ETag last written (or adopted), quotes included.
    pub fn etag(&self) -> String {
        self.entry.state().etag.clone()
    }

    /// True once a renewal found the lock taken over or removed.
    pub fn is_lost(&self) -> bool {
        self.entry.state().lost
    }

    /// Deletes the lock if it is still this process's. A 412 leaves it in
    /// place (warned, [`ReleaseOutcome::NotOurs`]); a 403 / 501 re-reads it
    /// and deletes unconditionally only if the body is still ours; any other
    /// failure is returned. A second call is a no-op.
    pub async fn release(&self) -> Result<ReleaseOutcome, LockError> {
        release_entry(&self.ctx, &self.entry).await
    }

    /// [`Self::release`], logging a failure as a warning.
    pub async fn release_and_warn(&self) {
        if let Err(e) = self.release().await {
            tracing::warn!("{e}");
        }
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        self.entry.stop.send_replace(true);
    }
}

async fn release_entry(ctx: &Ctx, entry: &Entry) -> Result<ReleaseOutcome, LockError> {
    {
        let mut st = entry.state();
        if st.released {
            return Ok(ReleaseOutcome::AlreadyReleased);
        }
        st.released = true;
    }
    // Stop the renewal and let an in-flight one finish, so the ETag below is
    // the last one written.
    entry.stop.send_replace(true);
    let task = entry.task.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(task) = task {
        let _ = task.await;
    }
    let (stack, region, key) = (&entry.stack, &entry.region, &entry.key);
    let etag = entry.state().etag.clone();

    let refused = match ctx.delete(key, Some(&etag)).await {
        Ok(()) => {
            ctx.purge_quiet(key).await;
            return Ok(ReleaseOutcome::Released);
        }
        Err(e) => e,
    };
    match refused.kind() {
        ErrorKind::NotFound => {
            tracing::debug!("the lock of stack {stack} ({region}) was already gone at release");
            Ok(ReleaseOutcome::Gone)
        }
        ErrorKind::PreconditionFailed => {
            // A renewal S3 applied but whose answer was lost leaves the held
            // ETag one version behind: that object is still ours.
            match ctx.get(key).await {
                Ok(Some((bytes, current))) if entry.is_own_body(&bytes) => {
                    match ctx.delete(key, Some(&current)).await {
                        Ok(()) => {
                            ctx.purge_quiet(key).await;
                            Ok(ReleaseOutcome::Released)
                        }
                        Err(e) if e.kind() == ErrorKind::NotFound => Ok(ReleaseOutcome::Gone),
                        Err(e) if e.kind() == ErrorKind::PreconditionFailed => {
                            Ok(not_ours(entry, ctx.get(key).await.ok().flatten()))
                        }
                        Err(e) => Err(LockError::aws(stack, region, "release", e)),
                    }
                }
                Ok(current) => Ok(not_ours(entry, current)),
                Err(_) => Ok(not_ours(entry, None)),
            }
        }
        ErrorKind::AccessDenied | ErrorKind::NotImplemented => {
            // The condition was not evaluated. Re-check ownership by hand; a
            // read that fails refuses.
            match ctx.get(key).await {
                Err(source) => Err(LockError::ReleaseUnverified {
                    stack: stack.clone(),
                    region: region.clone(),
                    refused: refused.to_string(),
                    source,
                }),
                Ok(None) => Ok(ReleaseOutcome::Gone),
                Ok(Some((bytes, _))) if entry.is_own_body(&bytes) => {
                    ctx.delete(key, None)
                        .await
                        .map_err(|e| LockError::aws(stack, region, "release", e))?;
                    ctx.purge_quiet(key).await;
                    Ok(ReleaseOutcome::Released)
                }
                Ok(current) => Ok(not_ours(entry, current)),
            }
        }
        _ => Err(LockError::aws(stack, region, "release", refused)),
    }
}

fn not_ours(entry: &Entry, current: Option<(Vec<u8>, String)>) -> ReleaseOutcome {
    let holder = current.and_then(|(bytes, _)| LockInfo::parse(&bytes));
    let who = match &holder {
        Some(h) => format!("it is now held by {}", describe_holder(h)),
        None => "it was replaced by another process".to_owned(),
    };
    tracing::warn!(
        "Left the lock of stack {} ({}) in place: {who}, so it is no longer this process's",
        entry.stack,
        entry.region
    );
    ReleaseOutcome::NotOurs { holder }
}

async fn renew_loop(
    ctx: Arc<Ctx>,
    entry: Arc<Entry>,
    mut stop: watch::Receiver<bool>,
    interval: Duration,
) {
    loop {
        tokio::select! {
            biased;
            _ = stop.wait_for(|stopped| *stopped) => return,
            _ = tokio::time::sleep(interval) => {}
        }
        if *stop.borrow() || !renew_once(&ctx, &entry).await {
            return;
        }
    }
}

/// One renewal; false when renewing should stop (released or lost).
async fn renew_once(ctx: &Ctx, entry: &Entry) -> bool {
    let ttl_ms = u64::try_from(entry.ttl.as_millis()).unwrap_or(u64::MAX);
    let (etag, info, body) = {
        let mut st = entry.state();
        if st.released || st.lost {
            return false;
        }
        let mut info = st.info.clone();
        info.expires_at = Some(now_ms().saturating_add(ttl_ms));
        let body = info.to_json_bytes();
        if st.unconfirmed.len() >= UNCONFIRMED_LIMIT {
            st.unconfirmed.remove(0);
        }
        st.unconfirmed.push(body.clone());
        (st.etag.clone(), info, body)
    };
    let result = ctx.put(&entry.key, &body, Cond::IfMatch(&etag)).await;
    let failure = match result {
        Ok(Some(new_etag)) if !new_etag.is_empty() => {
            let mut st = entry.state();
            st.etag = new_etag;
            st.body = body;
            st.info = info;
            st.unconfirmed.clear();
            st.lapse_warned = false;
            return true;
        }
        // No ETag in the answer: find it by reading back, as after a 412.
        Ok(_) => None,
        Err(e) if e.kind() == ErrorKind::PreconditionFailed => None,
        Err(e) => Some(e),
    };
    if let Some(e) = failure {
        warn_if_lapsed(entry, &e.to_string());
        return true;
    }
    // One read decides: our own write (answer lost) or somebody else's lock.
    match ctx.get(&entry.key).await {
        Ok(Some((bytes, current))) if entry.is_own_body(&bytes) => {
            let mut st = entry.state();
            if let Some(adopted) = LockInfo::parse(&bytes) {
                st.info = adopted;
            }
            st.etag = current;
            st.body = bytes;
            st.unconfirmed.clear();
            st.lapse_warned = false;
            tracing::debug!(
                "adopted the renewal of the lock of stack {} ({}) whose answer was lost",
                entry.stack,
                entry.region
            );
            true
        }
        Ok(current) => {
            let holder = current.and_then(|(bytes, _)| LockInfo::parse(&bytes));
            let already = {
                let mut st = entry.state();
                std::mem::replace(&mut st.lost, true)
            };
            if !already {
                let what = match &holder {
                    Some(h) => format!("it is now held by {}", describe_holder(h)),
                    None => "it was removed (cdkd force-unlock?)".to_owned(),
                };
                tracing::warn!(
                    "Lost the lock of stack {} ({}) while this process still runs: {what}; \
                     another process may now be writing this stack's state",
                    entry.stack,
                    entry.region
                );
            }
            false
        }
        Err(e) => {
            warn_if_lapsed(entry, &e.to_string());
            true
        }
    }
}

/// Warns once when renewals keep failing past the lock's deadline.
fn warn_if_lapsed(entry: &Entry, error: &str) {
    tracing::debug!(
        "renewing the lock of stack {} ({}) failed (retrying next tick): {error}",
        entry.stack,
        entry.region
    );
    let deadline = {
        let mut st = entry.state();
        let lapsed = st.info.is_expired(now_ms());
        if !lapsed || st.lapse_warned {
            return;
        }
        st.lapse_warned = true;
        st.info.expires_at
    };
    tracing::warn!(
        "Could not renew the lock of stack {} ({}) and it expired at {}: another cdkd process \
         may take it over while this one still runs (last error: {error})",
        entry.stack,
        entry.region,
        deadline.map_or_else(|| "an unknown time".to_owned(), iso8601_ms)
    );
}

fn is_contention(e: &AwsError) -> bool {
    matches!(
        e.kind(),
        ErrorKind::PreconditionFailed | ErrorKind::Conflict
    )
}

/// Unix milliseconds now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// `new Date(ms).toISOString()`: `2024-03-19T08:00:00.000Z`.
pub fn iso8601_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let millis = ms % 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_match_javascript() {
        assert_eq!(iso8601_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601_ms(1_710_835_200_000), "2024-03-19T08:00:00.000Z");
        assert_eq!(iso8601_ms(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601_ms(4_102_444_799_999), "2099-12-31T23:59:59.999Z");
    }

    #[test]
    fn renewal_interval_is_a_quarter_of_the_ttl_at_most_two_minutes() {
        assert_eq!(renew_interval_for(DEFAULT_LOCK_TTL), MAX_RENEW_INTERVAL);
        assert_eq!(
            renew_interval_for(Duration::from_secs(4)),
            Duration::from_secs(1)
        );
        assert!(renew_interval_for(Duration::ZERO) > Duration::ZERO);
    }

    #[test]
    fn held_errors_name_the_holder_and_the_remedy() {
        let mut info = LockInfo::new("alice@host:1", 0, 1_710_837_000_000);
        info.operation = Some("deploy".into());
        let e = LockError::Held {
            stack: "MyStack".into(),
            region: "us-east-1".into(),
            holder: Some(info),
        };
        assert_eq!(
            e.to_string(),
            "Stack MyStack (us-east-1) is locked by alice@host:1 (deploy) until \
             2024-03-19T08:30:00.000Z; wait for it, or run `cdkd force-unlock MyStack` if that \
             process is gone"
        );
        let none = LockError::Held {
            stack: "S".into(),
            region: "r".into(),
            holder: None,
        };
        assert!(none.to_string().contains("no lock could be read"));
        assert!(!none.to_string().contains('\n'));
    }

    #[test]
    fn the_default_owner_is_user_at_host_and_pid() {
        let owner = default_owner();
        assert!(owner.contains('@'));
        assert!(owner.ends_with(&format!(":{}", std::process::id())));
    }
}
