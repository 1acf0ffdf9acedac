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
//!
//! Layout: `acquire` takes the lock (and reaps an expired one), `renewal`
//! keeps it alive, `release` gives it back (and force-unlocks), `held` is
//! what a holder keeps, `s3` makes the S3 calls and purges, `message` words
//! the errors and the holder.

mod acquire;
mod held;
mod message;
mod release;
mod renewal;
mod s3;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_s3::Client;

use super::keys::StateKeys;
use super::purge::ReplicationProbe;
use super::record::LockInfo;
use held::Entry;
use s3::Ctx;

pub use held::HeldLock;
pub use message::{describe_holder, iso8601_ms, now_ms, LockError};

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
