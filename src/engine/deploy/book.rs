//! State writes during a deploy (state-schema, "State writes during deploy and destroy"), done
//! write-behind so that no S3 round trip sits between a resource and its dependents.
//!
//! The working record lives in memory. [`StateBook::put`] changes it and wakes one background
//! saver task, then returns at once: the resource's dependents start the moment the provider
//! answered. The saver writes the LATEST snapshot with If-Match on the ETag of the previous
//! write (If-None-Match on a stack's first write), and loops while puts arrived during its
//! write, so a burst of puts costs one or two writes, never one per resource in series. Saves
//! never overlap (one writer), so the ETag chain is never forked by our own writes.
//!
//! Why this keeps the spec's guarantee ("every finished operation recorded, an interrupted run
//! resumable"): every finished operation is written by the saver within about one S3 round
//! trip of finishing, and what an abrupt kill can lose is only the last snapshot in flight.
//! Those operations are recoverable by the next run, which is what "resumable" asks for:
//! - a create whose record was lost is re-sent with the same create token and generated name
//!   (the create-token ledger, written once before the walk) and takes over the resource the
//!   killed run made instead of making a second one (`tokens.rs`);
//! - an update whose record was lost is re-planned as an update and re-sent (idempotent);
//! - a delete whose record drop was lost is re-sent and answers not-found, which is success.
//!
//! A failed incremental save is a warning, never a failure: the next deploy sees what was not
//! recorded and retries it. [`StateBook::checkpoint`] drains the saver and saves again when the
//! last write failed (the save before an automatic rollback); [`StateBook::finish`] closes the
//! saver, waits only for the write in flight (the final write holds every change, so the
//! saver's pending one would be a wasted round trip) and writes unconditionally (the final
//! save, under the stack lock); [`StateBook::abandon`] closes it and waits for the write in
//! flight with no write of its own (a record about to be deleted: a late write would
//! resurrect it).
//!
//! Destroy keeps its record through the same book ([`StateBook::set_shape`] gives it the
//! destroy's stored form), so its deletes never wait for S3 either.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::{watch, Mutex, Notify};
use tokio::task::JoinHandle;

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
    /// Bumped by every change; the saver writes until it has written this one.
    seq: u64,
    /// The change the last successful write contained.
    saved_ok: u64,
    /// After the final save no background write may follow.
    closed: bool,
    /// Incremental save failures so far (the first is a warning, the rest debug).
    failures: u32,
}

struct Shared {
    backend: Arc<S3Backend>,
    stack: String,
    region: String,
    inner: StdMutex<Inner>,
    /// Serializes writes: the saver, a checkpoint and the final save never overlap.
    io: Mutex<()>,
    wake: Notify,
    /// The change the saver last attempted (written or failed).
    attempted: watch::Sender<u64>,
    /// Applied to every snapshot before it is written (secrets out, reads unioned in).
    redactor: std::sync::OnceLock<Arc<crate::redact::RecordRedactor>>,
    /// Applied after the redactor: the form a caller stores (destroy's: no outputs).
    shape: std::sync::OnceLock<fn(&StackState) -> StackState>,
}

/// The stack's working state record and its writes.
pub(crate) struct StateBook {
    shared: Arc<Shared>,
    saver: StdMutex<Option<JoinHandle<()>>>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes the latest snapshot if it is newer than what was attempted. Returns whether a
    /// write was attempted.
    async fn save_latest(&self, unconditional: bool) -> Result<bool, BackendError> {
        let _io = self.io.lock().await;
        let (snapshot, seq, etag, from_legacy) = {
            let mut inner = self.lock();
            if inner.closed && !unconditional {
                return Ok(false);
            }
            if !unconditional && *self.attempted.borrow() >= inner.seq {
                return Ok(false);
            }
            inner.state.last_modified = Some(now_ms());
            (
                self.stored_form(&inner.state),
                inner.seq,
                inner.etag.clone(),
                inner.from_legacy,
            )
        };
        let condition = match (&etag, unconditional) {
            (_, true) => SaveCondition::Unconditional,
            (Some(etag), false) => SaveCondition::IfMatch(etag),
            (None, false) => SaveCondition::IfAbsent,
        };
        let result = self
            .backend
            .save(&self.stack, &self.region, &snapshot, condition, from_legacy)
            .await;
        let mut inner = self.lock();
        self.attempted.send_modify(|a| *a = (*a).max(seq));
        match result {
            Ok(new_etag) => {
                inner.etag = Some(new_etag);
                inner.from_legacy = false;
                inner.saved_ok = inner.saved_ok.max(seq);
                Ok(true)
            }
            Err(e) => {
                inner.failures += 1;
                Err(e)
            }
        }
    }

    fn stored_form(&self, state: &StackState) -> StackState {
        let redacted = match self.redactor.get() {
            Some(r) => r.for_storage(state),
            None => state.clone(),
        };
        match self.shape.get() {
            Some(shape) => shape(&redacted),
            None => redacted,
        }
    }

    fn warn_failed(&self, e: &BackendError) {
        let first = self.lock().failures <= 1;
        let text = format!(
            "{}: could not save state: {e}; the final write records the outcome, and the next \
             run retries whatever this one could not record",
            self.stack
        );
        if first {
            ui::warn(text);
        } else {
            tracing::debug!("{text}");
        }
    }

    /// The saver: woken by each put, writes until the latest change is written.
    async fn run_saver(self: Arc<Self>) {
        loop {
            self.wake.notified().await;
            loop {
                match self.save_latest(false).await {
                    Ok(true) => continue,
                    Ok(false) => break,
                    Err(e) => {
                        self.warn_failed(&e);
                        break;
                    }
                }
            }
            if self.lock().closed {
                return;
            }
        }
    }
}

impl StateBook {
    /// A book over `state` (loaded with `etag`), with its saver task running.
    pub fn new(
        backend: Arc<S3Backend>,
        stack: &str,
        region: &str,
        state: StackState,
        etag: Option<String>,
        from_legacy: bool,
    ) -> Self {
        let (attempted, _) = watch::channel(0);
        let shared = Arc::new(Shared {
            backend,
            stack: stack.to_owned(),
            region: region.to_owned(),
            inner: StdMutex::new(Inner {
                state,
                etag,
                from_legacy,
                dirty: false,
                seq: 0,
                saved_ok: 0,
                closed: false,
                failures: 0,
            }),
            io: Mutex::new(()),
            wake: Notify::new(),
            attempted,
            redactor: std::sync::OnceLock::new(),
            shape: std::sync::OnceLock::new(),
        });
        let saver = tokio::spawn(shared.clone().run_saver());
        StateBook {
            shared,
            saver: StdMutex::new(Some(saver)),
        }
    }

    /// Sets what every write passes through (once, before the first change).
    pub fn set_redactor(&self, redactor: Arc<crate::redact::RecordRedactor>) {
        let _ = self.shared.redactor.set(redactor);
    }

    /// `text` with every secret the redactor knows masked (as is, when there is none): for
    /// messages bound for a durable sink such as the deployment-event store.
    pub fn mask_text(&self, text: &str) -> String {
        match self.shared.redactor.get() {
            Some(r) => r.mask_text(text),
            None => text.to_owned(),
        }
    }

    /// Sets the form every write stores (once, before the first change).
    pub fn set_shape(&self, shape: fn(&StackState) -> StackState) {
        let _ = self.shared.shape.set(shape);
    }

    /// The working record as the next write would store it.
    pub fn for_storage(&self, state: &StackState) -> StackState {
        self.shared.stored_form(state)
    }

    /// Whether the record still lives under the legacy key (no write has migrated it).
    pub fn still_legacy(&self) -> bool {
        self.shared.lock().from_legacy
    }

    /// A copy of the working record.
    pub async fn state(&self) -> StackState {
        self.shared.lock().state.clone()
    }

    /// A copy of one resource's record.
    pub async fn record(&self, logical_id: &str) -> Option<ResourceState> {
        self.shared.lock().state.resources.get(logical_id).cloned()
    }

    /// Copies of the records of `ids` (those that exist).
    pub async fn records(&self, ids: &[String]) -> Vec<(String, ResourceState)> {
        let inner = self.shared.lock();
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
        self.shared.lock().dirty
    }

    /// Whether a record for the stack exists in the bucket (loaded or written by this run).
    pub fn has_stored_record(&self) -> bool {
        self.shared.lock().etag.is_some()
    }

    /// Records (or, with `None`, drops) one resource and schedules a save. Returns at once:
    /// the write happens behind, guarded by the previous ETag; a failed save is warned about
    /// and does not fail the deploy.
    pub async fn put(&self, logical_id: &str, record: Option<ResourceState>) {
        self.change(|state| match record {
            Some(r) => {
                state.resources.insert(logical_id.to_owned(), r);
            }
            None => {
                state.resources.shift_remove(logical_id);
            }
        });
    }

    /// Applies `change` to the working record and schedules a save.
    pub fn change(&self, change: impl FnOnce(&mut StackState)) {
        {
            let mut inner = self.shared.lock();
            change(&mut inner.state);
            inner.dirty = true;
            inner.seq += 1;
        }
        self.shared.wake.notify_one();
    }

    /// Waits until every change made so far has been written (or its write has failed).
    pub async fn flush(&self) {
        let target = self.shared.lock().seq;
        let mut rx = self.shared.attempted.subscribe();
        let saver_alive = self
            .saver
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|h| !h.is_finished());
        if !saver_alive {
            if let Err(e) = self.shared.save_latest(false).await {
                self.shared.warn_failed(&e);
            }
            return;
        }
        self.shared.wake.notify_one();
        let _ = rx.wait_for(|a| *a >= target).await;
    }

    /// The save before an automatic rollback: drains the saver and, when the latest change
    /// is not stored (its write failed), tries once more, guarded by the ETag.
    pub async fn checkpoint(&self) -> Result<(), BackendError> {
        self.flush().await;
        let (seq, ok) = {
            let inner = self.shared.lock();
            (inner.seq, inner.saved_ok)
        };
        if ok >= seq {
            return Ok(());
        }
        let _ = self.shared.attempted.send_modify(|a| *a = (*a).min(ok));
        self.shared.save_latest(false).await.map(|_| ())
    }

    /// Applies `change` to the record, drains and stops the saver, and saves unconditionally
    /// (the end of a deploy, under the stack lock).
    pub async fn finish(
        &self,
        change: impl FnOnce(&mut StackState),
    ) -> Result<StackState, BackendError> {
        {
            let mut inner = self.shared.lock();
            change(&mut inner.state);
            inner.dirty = true;
            inner.seq += 1;
            inner.closed = true;
        }
        // Closed: the saver starts no write; `save_latest` waits for the one in flight (the
        // io lock), so the final write lands last. Stopped only after, never mid-write.
        let saved = self.shared.save_latest(true).await;
        self.stop_saver();
        saved?;
        Ok(self.shared.lock().state.clone())
    }

    /// Closes the saver with no write of its own, once the write in flight (if any) has
    /// landed: the record is about to be deleted, and a write after the delete would bring
    /// it back.
    pub async fn abandon(&self) {
        self.shared.lock().closed = true;
        drop(self.shared.io.lock().await);
        self.stop_saver();
    }

    /// Drains and stops the saver without a final write (a record that is about to be
    /// deleted, or a run that ends without one).
    pub async fn close(&self) {
        self.flush().await;
        self.shared.lock().closed = true;
        self.stop_saver();
    }

    fn stop_saver(&self) {
        if let Some(handle) = self.saver.lock().unwrap_or_else(|p| p.into_inner()).take() {
            handle.abort();
        }
    }
}

impl Drop for StateBook {
    fn drop(&mut self) {
        self.stop_saver();
    }
}
