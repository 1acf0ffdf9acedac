//! State writes during a destroy (state-schema.md, "State writes during deploy and destroy",
//! Destroy).
//!
//! Each deleted resource (a not-found counts) leaves the working record at once and the trimmed
//! record is saved, serialized behind one mutex and guarded by the previous write's ETag, so an
//! interrupted or partly failed destroy leaves a record of exactly what still exists and a
//! re-run replays no delete. A failed incremental save is a warning; the final write (the
//! record's deletion, or the preserve-write of a partial destroy) is authoritative.
//!
//! Every persisted snapshot clears `outputs` and drops `imports` / `outputReads`: a partly
//! destroyed stack has no meaningful outputs, and keeping them would advertise exports whose
//! resources are gone. The in-memory record keeps them (the strong-reference check already
//! read them before the first delete).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Map;
use tokio::sync::Mutex;

use crate::state::backend::{BackendError, S3Backend, SaveCondition};
use crate::state::StackState;
use crate::ui;

struct Inner {
    state: StackState,
    etag: String,
    from_legacy: bool,
}

/// The record of the stack being destroyed, and its writes.
pub(super) struct DestroyBook {
    backend: Arc<S3Backend>,
    stack: String,
    region: String,
    inner: Mutex<Inner>,
}

/// What a destroy persists of `state`: the resources as they are, no outputs, no cross-stack
/// reads.
pub(super) fn snapshot(state: &StackState) -> StackState {
    let mut s = state.clone();
    s.outputs = Some(Map::new());
    s.imports = None;
    s.output_reads = None;
    s.last_modified = Some(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
    );
    s
}

impl DestroyBook {
    pub fn new(
        backend: Arc<S3Backend>,
        state: StackState,
        etag: String,
        from_legacy: bool,
    ) -> Self {
        DestroyBook {
            backend,
            stack: state.stack_name.clone(),
            region: state.region.clone(),
            inner: Mutex::new(Inner {
                state,
                etag,
                from_legacy,
            }),
        }
    }

    /// Drops `logical_id`'s record and saves the trimmed record; a failed save is a warning.
    pub async fn remove(&self, logical_id: &str) {
        let mut inner = self.inner.lock().await;
        inner.state.resources.shift_remove(logical_id);
        let etag = inner.etag.clone();
        match self.save(&mut inner, SaveCondition::IfMatch(&etag)).await {
            Ok(()) => {}
            Err(e) => ui::warn(format!(
                "{}: could not save state after deleting {logical_id}: {e}; the final write \
                 records the outcome",
                self.stack
            )),
        }
    }

    /// The logical ids still recorded.
    pub async fn remaining(&self) -> Vec<String> {
        self.inner
            .lock()
            .await
            .state
            .resources
            .keys()
            .cloned()
            .collect()
    }

    /// Whether the record still lives under the legacy key (nothing was saved yet).
    pub async fn is_legacy(&self) -> bool {
        self.inner.lock().await.from_legacy
    }

    /// The final write of a partial destroy: the trimmed record, unconditionally (the stack
    /// lock is held).
    pub async fn preserve(&self) -> Result<(), BackendError> {
        let mut inner = self.inner.lock().await;
        self.save(&mut inner, SaveCondition::Unconditional).await
    }

    async fn save(
        &self,
        inner: &mut Inner,
        condition: SaveCondition<'_>,
    ) -> Result<(), BackendError> {
        let snap = snapshot(&inner.state);
        let etag = self
            .backend
            .save(
                &self.stack,
                &self.region,
                &snap,
                condition,
                inner.from_legacy,
            )
            .await?;
        inner.etag = etag;
        inner.from_legacy = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{StateImportEntry, StateOutputReadEntry};
    use serde_json::json;

    #[test]
    fn snapshots_clear_outputs_and_cross_stack_reads() {
        let mut s = StackState::new("P", "us-east-1");
        let mut outputs = Map::new();
        outputs.insert("Url".into(), json!("https://x"));
        s.outputs = Some(outputs.clone());
        s.imports = Some(vec![StateImportEntry {
            source_stack: "Q".into(),
            source_region: "us-east-1".into(),
            export_name: "E".into(),
            extra: Map::new(),
        }]);
        s.output_reads = Some(crate::state::Lenient::Valid(vec![StateOutputReadEntry {
            source_stack: "Q".into(),
            source_region: "us-east-1".into(),
            output_name: "O".into(),
            extra: Map::new(),
        }]));
        let snap = snapshot(&s);
        assert_eq!(snap.outputs, Some(Map::new()));
        assert!(snap.imports.is_none());
        assert!(snap.output_reads.is_none());
        // The in-memory record is not touched.
        assert_eq!(s.outputs, Some(outputs));
        assert!(s.imports.is_some());
    }
}
