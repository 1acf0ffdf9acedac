//! A lock this process holds: the [`Entry`] its handle, the manager's table and
//! the renewal task share, and the [`HeldLock`] handle itself.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::release::release_entry;
use super::s3::Ctx;
use super::{LockError, ReleaseOutcome};
use crate::state::record::LockInfo;

/// One lock this process took, shared by its [`HeldLock`], the manager's
/// table (for a release by stack and region) and the renewal task.
pub(super) struct Entry {
    pub(super) stack: String,
    pub(super) region: String,
    pub(super) key: String,
    pub(super) ttl: Duration,
    pub(super) state: Mutex<EntryState>,
    pub(super) stop: watch::Sender<bool>,
    pub(super) task: Mutex<Option<JoinHandle<()>>>,
}

pub(super) struct EntryState {
    /// The tombstone: set by the first release, never cleared.
    pub(super) released: bool,
    /// The ETag of the object this process last wrote (or adopted).
    pub(super) etag: String,
    /// That object's body.
    pub(super) body: Vec<u8>,
    pub(super) info: LockInfo,
    /// Renewal bodies sent whose success was not seen (the response was lost
    /// or the request failed after S3 may have applied it).
    pub(super) unconfirmed: Vec<Vec<u8>>,
    pub(super) lost: bool,
    pub(super) lapse_warned: bool,
}

impl Entry {
    pub(super) fn state(&self) -> MutexGuard<'_, EntryState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn is_own_body(&self, bytes: &[u8]) -> bool {
        let st = self.state();
        st.body == bytes || st.unconfirmed.iter().any(|b| b == bytes)
    }
}

/// A lock this process holds. Renewed in the background until released or
/// dropped; dropping it stops the renewal but does not delete the lock (it
/// lapses at its expiry, or [`LockManager::release`] still releases it).
///
/// [`LockManager::release`]: super::LockManager::release
#[must_use = "dropping a HeldLock stops its renewal"]
pub struct HeldLock {
    pub(super) ctx: Arc<Ctx>,
    pub(super) entry: Arc<Entry>,
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
