//! What a deploy did, in the rollback journal's terms: every completed operation with the
//! record it replaced, and every failed one with the record before it. Kept in memory and
//! written to the journal only when the deploy ends without completing (a failure, an
//! interruption) — never on the path of a deploy that succeeds.

use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::state::journal::{
    FailedOperation, OpKind, Operation, Segment, NESTED_CHILD_SEGMENT, OLD_DELETED_BEFORE_CREATE,
};
use crate::state::ResourceState;

#[derive(Default)]
pub(crate) struct OpLog {
    done: Mutex<Vec<Operation>>,
    failed: Mutex<Vec<FailedOperation>>,
    /// Ids whose old resource `--replace` deleted before creating the new one.
    deleted_first: Mutex<Vec<String>>,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Whether properties may be written to the journal verbatim: a `{{resolve:...}}` dynamic
/// reference in the template's own text means a resolved secret may sit in them.
pub(crate) fn journal_safe(template_properties: &Value) -> bool {
    !template_properties.to_string().contains("{{resolve:")
}

impl OpLog {
    /// `--replace` deleted the old resource of `logical_id` before creating the new one: its
    /// operation (completed or failed) records `oldDeletedBeforeCreate`.
    pub fn deleted_first(&self, logical_id: &str) {
        self.deleted_first
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(logical_id.to_owned());
    }

    fn was_deleted_first(&self, logical_id: &str) -> bool {
        self.deleted_first
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|id| id == logical_id)
    }

    /// A create (`previous` = `None`) or an update / replacement of `previous`.
    pub fn completed(
        &self,
        logical_id: &str,
        resource_type: &str,
        now: &ResourceState,
        previous: Option<&ResourceState>,
        old_alive: bool,
    ) {
        let op = self.operation(logical_id, resource_type, now, previous, old_alive);
        self.done.lock().unwrap_or_else(|p| p.into_inner()).push(op);
    }

    /// An update of a nested-stack row whose child's deploy appended the
    /// `nested-pending-parent` segment written at `child_segment` (if it wrote one).
    pub fn completed_nested(
        &self,
        logical_id: &str,
        resource_type: &str,
        now: &ResourceState,
        previous: &ResourceState,
        child_segment: Option<u64>,
    ) {
        let mut op = self.operation(logical_id, resource_type, now, Some(previous), true);
        if let Some(at) = child_segment {
            op.extra
                .insert(NESTED_CHILD_SEGMENT.into(), Value::from(at));
        }
        self.done.lock().unwrap_or_else(|p| p.into_inner()).push(op);
    }

    fn operation(
        &self,
        logical_id: &str,
        resource_type: &str,
        now: &ResourceState,
        previous: Option<&ResourceState>,
        old_alive: bool,
    ) -> Operation {
        let deleted_first = previous.is_some() && self.was_deleted_first(logical_id);
        let old_alive = old_alive && !deleted_first;
        Operation {
            kind: if previous.is_some() {
                OpKind::Update
            } else {
                OpKind::Create
            },
            logical_id: logical_id.to_owned(),
            resource_type: resource_type.to_owned(),
            physical_id: now.physical_id.clone(),
            previous: previous.cloned(),
            previous_resource_type: previous.map(|p| p.resource_type.clone()),
            old_resource_retained: previous.map(|_| old_alive),
            old_deleted_before_create: previous.map(|_| deleted_first),
            extra: Map::new(),
        }
    }

    /// A failed create (`previous` = `None`) or update; `attempted` is what the write sent,
    /// `None` when nothing was sent or it must not be written.
    pub fn failed(
        &self,
        logical_id: &str,
        resource_type: &str,
        previous: Option<ResourceState>,
        attempted: Option<Map<String, Value>>,
        error: &str,
    ) {
        let mut extra = Map::new();
        if previous.is_some() && self.was_deleted_first(logical_id) {
            extra.insert(OLD_DELETED_BEFORE_CREATE.into(), Value::Bool(true));
        }
        let op = FailedOperation {
            kind: if previous.is_some() {
                OpKind::Update
            } else {
                OpKind::Create
            },
            logical_id: logical_id.to_owned(),
            resource_type: resource_type.to_owned(),
            physical_id: previous.as_ref().and_then(|p| p.physical_id.clone()),
            previous,
            attempted_properties: attempted,
            error: Some(error.to_owned()),
            extra,
        };
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(op);
    }

    pub fn operations(&self) -> Vec<Operation> {
        self.done.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn failures(&self) -> Vec<FailedOperation> {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// This attempt as a journal segment.
    pub fn segment(&self, reason: &str) -> Segment {
        Segment {
            reason: reason.to_owned(),
            written_at: now_ms(),
            operations: self.operations(),
            failed_operations: self.failures(),
            superseded_logical_ids: Vec::new(),
            extra: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(pid: &str) -> ResourceState {
        ResourceState {
            physical_id: Some(pid.into()),
            resource_type: "AWS::SSM::Document".into(),
            ..ResourceState::default()
        }
    }

    #[test]
    fn a_delete_first_replacement_is_journaled_as_such() {
        let log = OpLog::default();
        log.completed("Plain", "T", &record("b"), Some(&record("a")), true);
        log.deleted_first("Doc");
        log.completed("Doc", "T", &record("d"), Some(&record("d")), true);
        log.deleted_first("Failed");
        log.failed("Failed", "T", Some(record("f")), None, "boom");
        let ops = log.operations();
        assert_eq!(ops[0].old_deleted_before_create, Some(false));
        assert_eq!(ops[0].old_resource_retained, Some(true));
        assert_eq!(ops[1].old_deleted_before_create, Some(true));
        assert_eq!(ops[1].old_resource_retained, Some(false));
        assert!(log.failures()[0].old_deleted_before_create());
    }
}
