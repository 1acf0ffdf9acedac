//! Taking the lock: the PUT with `If-None-Match: *`, the retries, and the
//! conditional reap of an expired lock.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::held::{Entry, EntryState, HeldLock};
use super::renewal::renew_loop;
use super::s3::Cond;
use super::{
    describe_holder, now_ms, renew_interval_for, LockError, LockManager,
    RELEASED_LOCK_REACQUIRE_LIMIT,
};
use crate::aws::{AwsError, ErrorKind};
use crate::state::record::LockInfo;

impl LockManager {
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
                    // The release's purge asks whether replication covers the key; asked
                    // now, in the background, the answer is there by then instead of costing
                    // a round trip after the release.
                    self.ctx
                        .probe
                        .prefetch(self.ctx.client.clone(), &self.ctx.bucket);
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
}

fn is_contention(e: &AwsError) -> bool {
    matches!(
        e.kind(),
        ErrorKind::PreconditionFailed | ErrorKind::Conflict
    )
}
