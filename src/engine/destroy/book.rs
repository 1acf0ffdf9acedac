//! State writes during a destroy (state-schema.md, "State writes during deploy and destroy",
//! Destroy).
//!
//! Each deleted resource (a not-found counts) leaves the working record at once and the trimmed
//! record is saved write-behind, through the deploy's coalescing saver
//! ([`crate::engine::deploy::StateBook`]): one writer, each write guarded by the previous
//! write's ETag, the latest snapshot only, so a burst of deletes costs a write or two and no
//! delete waits for S3 before the resources it unblocks start. An interrupted or partly failed
//! destroy leaves a record of what still exists, give or take the deletes of the last write in
//! flight, which a re-run sends again and finds gone (a not-found is success). A failed
//! incremental save is a warning; the final write (the record's deletion, or the
//! preserve-write of a partial destroy) is authoritative.
//!
//! Every persisted snapshot clears `outputs` and drops `imports` / `outputReads`: a partly
//! destroyed stack has no meaningful outputs, and keeping them would advertise exports whose
//! resources are gone. The in-memory record keeps them (the strong-reference check already
//! read them before the first delete).

use std::sync::Arc;

use serde_json::Map;

use crate::engine::deploy::StateBook;
use crate::state::backend::{BackendError, S3Backend};
use crate::state::StackState;

/// The record of the stack being destroyed, and its writes.
pub(super) struct DestroyBook {
    book: StateBook,
}

/// What a destroy persists of `state`: the resources as they are, no outputs, no cross-stack
/// reads. (The saver stamps `lastModified`.)
pub(super) fn snapshot(state: &StackState) -> StackState {
    let mut s = state.clone();
    s.outputs = Some(Map::new());
    s.imports = None;
    s.output_reads = None;
    s
}

impl DestroyBook {
    pub fn new(
        backend: Arc<S3Backend>,
        state: StackState,
        etag: String,
        from_legacy: bool,
    ) -> Self {
        let (stack, region) = (state.stack_name.clone(), state.region.clone());
        let book = StateBook::new(backend, &stack, &region, state, Some(etag), from_legacy);
        book.set_shape(snapshot);
        DestroyBook { book }
    }

    /// Drops `logical_id`'s record and schedules the save; returns at once.
    pub async fn remove(&self, logical_id: &str) {
        self.book.put(logical_id, None).await;
    }

    /// The logical ids still recorded.
    pub async fn remaining(&self) -> Vec<String> {
        self.book.state().await.resources.keys().cloned().collect()
    }

    /// Whether the record still lives under the legacy key (nothing was saved yet).
    pub async fn is_legacy(&self) -> bool {
        self.book.still_legacy()
    }

    /// Stops the saver before the record is deleted (after the write in flight lands).
    pub async fn abandon(&self) {
        self.book.abandon().await;
    }

    /// The final write of a partial destroy: the trimmed record, unconditionally (the stack
    /// lock is held), after the write in flight.
    pub async fn preserve(&self) -> Result<(), BackendError> {
        self.book.finish(|_| {}).await.map(|_| ())
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
