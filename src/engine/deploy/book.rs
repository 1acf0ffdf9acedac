//! State writes during a deploy (state-schema, "State writes during deploy and destroy").
//!
//! The working record lives behind one async mutex, so record changes and saves are
//! serialized. After each resource operation the record is saved with If-Match on the ETag of
//! the previous write (If-None-Match on a stack's first write); a failed incremental save is a
//! warning, never a failure: the next deploy sees what was not recorded and retries it. The
//! final save is unconditional: it runs under the stack lock.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::Mutex;

use crate::state::backend::{BackendError, S3Backend, SaveCondition};
use crate::state::{ResourceState, StackState};
use crate::ui;

struct Inner {
    state: StackState,
    /// The ETag of the last write (or of the load); `None` while no record exists.
    etag: Option<String>,
    /// Loaded from the legacy key: the next save migrates it.
    from_legacy: bool,
    /// Whether this run changed the record.
    dirty: bool,
}

/// The stack's working state record and its writes.
pub(super) struct StateBook {
    backend: Arc<S3Backend>,
    stack: String,
    region: String,
    inner: Mutex<Inner>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl StateBook {
    pub fn new(
        backend: Arc<S3Backend>,
        stack: &str,
        region: &str,
        state: StackState,
        etag: Option<String>,
        from_legacy: bool,
    ) -> Self {
        StateBook {
            backend,
            stack: stack.to_owned(),
            region: region.to_owned(),
            inner: Mutex::new(Inner {
                state,
                etag,
                from_legacy,
                dirty: false,
            }),
        }
    }

    /// A copy of the working record.
    pub async fn state(&self) -> StackState {
        self.inner.lock().await.state.clone()
    }

    /// A copy of one resource's record.
    pub async fn record(&self, logical_id: &str) -> Option<ResourceState> {
        self.inner
            .lock()
            .await
            .state
            .resources
            .get(logical_id)
            .cloned()
    }

    /// Copies of the records of `ids` (those that exist).
    pub async fn records(&self, ids: &[String]) -> Vec<(String, ResourceState)> {
        let inner = self.inner.lock().await;
        ids.iter()
            .filter_map(|id| {
                inner
                    .state
                    .resources
                    .get(id)
                    .map(|r| (id.clone(), r.clone()))
            })
            .collect()
    }

    pub async fn is_dirty(&self) -> bool {
        self.inner.lock().await.dirty
    }

    /// Records (or, with `None`, drops) one resource and saves the record, guarded by the
    /// previous ETag. A failed save is warned about and does not fail the deploy.
    pub async fn put(&self, logical_id: &str, record: Option<ResourceState>) {
        let mut inner = self.inner.lock().await;
        match record {
            Some(r) => {
                inner.state.resources.insert(logical_id.to_owned(), r);
            }
            None => {
                inner.state.resources.shift_remove(logical_id);
            }
        }
        inner.dirty = true;
        if let Err(e) = self.save_locked(&mut inner, false).await {
            ui::warn(format!(
                "{}: could not save state after {logical_id}: {e}; the next deploy retries \
                 whatever this run could not record",
                self.stack
            ));
        }
    }

    /// Applies `change` to the record and saves it unconditionally (the end of a deploy).
    pub async fn finish(
        &self,
        change: impl FnOnce(&mut StackState),
    ) -> Result<StackState, BackendError> {
        let mut inner = self.inner.lock().await;
        change(&mut inner.state);
        inner.dirty = true;
        self.save_locked(&mut inner, true).await?;
        Ok(inner.state.clone())
    }

    async fn save_locked(
        &self,
        inner: &mut Inner,
        unconditional: bool,
    ) -> Result<(), BackendError> {
        inner.state.last_modified = Some(now_ms());
        let etag = inner.etag.clone();
        let condition = match (&etag, unconditional) {
            (_, true) => SaveCondition::Unconditional,
            (Some(etag), false) => SaveCondition::IfMatch(etag),
            (None, false) => SaveCondition::IfAbsent,
        };
        let new_etag = self
            .backend
            .save(
                &self.stack,
                &self.region,
                &inner.state,
                condition,
                inner.from_legacy,
            )
            .await?;
        inner.etag = Some(new_etag);
        inner.from_legacy = false;
        Ok(())
    }
}
