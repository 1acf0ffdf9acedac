//! Giving the lock back: the `If-Match` delete, the 412 and 403 / 501 paths
//! that re-read ownership first, the double-release tombstone, and
//! `force-unlock`. The release's version purge runs after the delete, in the
//! background (`state::deferred`, drained before the process exits).

use super::held::Entry;
use super::s3::Ctx;
use super::{describe_holder, LockError, LockManager, ReleaseOutcome};
use crate::aws::ErrorKind;
use crate::state::record::LockInfo;

impl LockManager {
    /// Releases the lock this process took for `stack` / `region` (see
    /// [`HeldLock::release`]); [`ReleaseOutcome::NotHeld`] when it took none.
    ///
    /// [`HeldLock::release`]: super::HeldLock::release
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
}

pub(super) async fn release_entry(ctx: &Ctx, entry: &Entry) -> Result<ReleaseOutcome, LockError> {
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
            purge_later(ctx, key);
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
                            purge_later(ctx, key);
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
                    purge_later(ctx, key);
                    Ok(ReleaseOutcome::Released)
                }
                Ok(current) => Ok(not_ours(entry, current)),
            }
        }
        _ => Err(LockError::aws(stack, region, "release", refused)),
    }
}

/// The release's purge of the lock key's noncurrent versions, in the background
/// ([`crate::state::deferred`]): it follows the DELETE, as it must, but nothing after the
/// release waits for it.
fn purge_later(ctx: &Ctx, key: &str) {
    let (ctx, key) = (ctx.clone(), key.to_owned());
    crate::state::deferred::spawn(async move { ctx.purge_quiet(&key).await });
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
