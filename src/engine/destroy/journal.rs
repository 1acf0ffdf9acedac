//! Resources only the rollback journal records (state-schema.md, "Rollback journal"): before a
//! destroy deletes the journal, it deletes, per its DeletionPolicy, any resource a failed CREATE
//! made that the state record does not name, so removing the journal does not strand it. The
//! same goes for the old resource of a nested child's replacement that its
//! `nested-pending-parent` segment kept alive for a parent's rollback (`oldDeletionDeferred`):
//! only the journal still names it once the child's record holds the new one.
//!
//! A journal that cannot be read is warned about and removed with the record: nothing else
//! could ever read it again, and refusing would leave the stack undestroyable.

use indexmap::IndexMap;
use serde_json::Value;

use crate::state::journal::{Journal, JournalStore, OpKind};
use crate::state::ResourceState;
use crate::ui;

/// One resource only the journal records.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Stray {
    pub logical_id: String,
    pub record: ResourceState,
    /// Why only the journal records it, for the line the destroy prints.
    pub why: &'static str,
}

const FAILED_CREATE: &str = "a failed create only the rollback journal recorded";
const DEFERRED_OLD: &str =
    "the old resource of a replacement only the rollback journal recorded, kept for a rollback";

/// The failed creates of `journal` that carry a physical id the record (`resources` as loaded,
/// before any delete) does not hold, each once, oldest first; `Retain` ones are left out (kept
/// in AWS).
pub(super) fn strays(journal: &Journal, resources: &IndexMap<String, ResourceState>) -> Vec<Stray> {
    let recorded: Vec<&str> = resources
        .values()
        .filter_map(|r| r.physical_id.as_deref())
        .collect();
    let mut out: Vec<Stray> = Vec::new();
    for op in journal
        .segments
        .iter()
        .flat_map(|s| s.failed_operations.iter())
    {
        let Some(pid) = op.physical_id.as_deref().filter(|p| !p.is_empty()) else {
            continue;
        };
        if op.kind != OpKind::Create
            || recorded.contains(&pid)
            || out
                .iter()
                .any(|s| s.record.physical_id.as_deref() == Some(pid))
        {
            continue;
        }
        if op.extra.get("deletionPolicy").and_then(Value::as_str) == Some("Retain") {
            ui::info(format!(
                "  ✓ {} {} kept in AWS (a failed create the journal records; DeletionPolicy \
                 Retain)",
                op.logical_id, op.resource_type
            ));
            continue;
        }
        let mut record = ResourceState::new(
            pid,
            op.resource_type.clone(),
            op.attempted_properties.clone().unwrap_or_default(),
        );
        // Its policy governs the delete (a final snapshot under Snapshot).
        record.deletion_policy = op
            .extra
            .get("deletionPolicy")
            .and_then(Value::as_str)
            .map(crate::state::ResourcePolicy::parse);
        out.push(Stray {
            logical_id: op.logical_id.clone(),
            record,
            why: FAILED_CREATE,
        });
    }
    for op in journal.deferred_olds() {
        let Some(old) = op.previous.as_ref() else {
            continue;
        };
        let Some(pid) = old.physical_id.as_deref().filter(|p| !p.is_empty()) else {
            continue;
        };
        if recorded.contains(&pid)
            || out
                .iter()
                .any(|s| s.record.physical_id.as_deref() == Some(pid))
        {
            continue;
        }
        out.push(Stray {
            logical_id: op.logical_id.clone(),
            record: old.clone(),
            why: DEFERRED_OLD,
        });
    }
    out
}

/// The stack's journal, or `None` (absent, or unreadable: warned about).
pub(super) async fn load(store: &JournalStore, stack: &str, region: &str) -> Option<Journal> {
    match store.load(stack, region).await {
        Ok(j) => j,
        Err(e) => {
            ui::warn(format!(
                "{stack}: the rollback journal {} could not be read ({e}); resources only it \
                 records, if any, are not deleted, and it is removed with the record",
                store.key(stack, region)
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::journal::{
        reason, FailedOperation, Operation, Segment, OLD_DELETION_DEFERRED,
    };
    use serde_json::{json, Map};

    fn failed(kind: OpKind, id: &str, pid: Option<&str>, policy: Option<&str>) -> FailedOperation {
        let mut extra = Map::new();
        if let Some(p) = policy {
            extra.insert("deletionPolicy".into(), json!(p));
        }
        FailedOperation {
            kind,
            logical_id: id.into(),
            resource_type: "AWS::SQS::Queue".into(),
            physical_id: pid.map(str::to_owned),
            previous: None,
            attempted_properties: None,
            error: None,
            extra,
        }
    }

    #[test]
    fn only_failed_creates_the_record_does_not_hold_are_strays() {
        let mut resources = IndexMap::new();
        resources.insert(
            "Known".into(),
            ResourceState::new("q-known", "AWS::SQS::Queue", Map::new()),
        );
        let mut journal = Journal::new("S", "us-east-1");
        journal.segments.push(Segment {
            reason: crate::state::journal::reason::NO_ROLLBACK.into(),
            written_at: 1,
            operations: vec![],
            failed_operations: vec![
                failed(OpKind::Create, "Stray", Some("q-stray"), None),
                failed(OpKind::Create, "Again", Some("q-stray"), None),
                failed(OpKind::Create, "Known", Some("q-known"), None),
                failed(OpKind::Create, "NoId", None, None),
                failed(OpKind::Update, "Upd", Some("q-upd"), None),
                failed(OpKind::Create, "Kept", Some("q-kept"), Some("Retain")),
                failed(
                    OpKind::Create,
                    "Roc",
                    Some("q-roc"),
                    Some("RetainExceptOnCreate"),
                ),
            ],
            superseded_logical_ids: vec![],
            extra: Map::new(),
        });
        let ids: Vec<(String, Option<String>)> = strays(&journal, &resources)
            .into_iter()
            .map(|s| (s.logical_id, s.record.physical_id))
            .collect();
        assert_eq!(
            ids,
            [
                ("Stray".to_owned(), Some("q-stray".to_owned())),
                ("Roc".to_owned(), Some("q-roc".to_owned())),
            ]
        );
    }

    fn replacement(id: &str, old: &str, new: &str, deferred: bool) -> Operation {
        let mut extra = Map::new();
        if deferred {
            extra.insert(OLD_DELETION_DEFERRED.into(), json!(true));
        }
        Operation {
            kind: OpKind::Update,
            logical_id: id.into(),
            resource_type: "AWS::SSM::Parameter".into(),
            physical_id: Some(new.into()),
            previous: Some(ResourceState::new(old, "AWS::SSM::Parameter", Map::new())),
            previous_resource_type: None,
            old_resource_retained: Some(true),
            old_deleted_before_create: None,
            extra,
        }
    }

    #[test]
    fn a_nested_childs_deferred_old_is_a_stray_unless_the_record_holds_it() {
        let mut resources = IndexMap::new();
        resources.insert(
            "Back".into(),
            ResourceState::new("/p/back-old", "AWS::SSM::Parameter", Map::new()),
        );
        let mut journal = Journal::new("P~Child", "us-east-1");
        journal.segments.push(Segment {
            reason: reason::NESTED_PENDING_PARENT.into(),
            written_at: 1,
            operations: vec![
                replacement("Renamed", "/p/old", "/p/new", true),
                replacement("NotDeferred", "/p/x-old", "/p/x-new", false),
                // A rollback already swapped it back: the record holds the old one.
                replacement("Back", "/p/back-old", "/p/back-new", true),
            ],
            failed_operations: vec![],
            superseded_logical_ids: vec![],
            extra: Map::new(),
        });
        // The same op in a segment of another reason is not a deferred old.
        journal.segments.push(Segment {
            reason: crate::state::journal::reason::NO_ROLLBACK.into(),
            written_at: 2,
            operations: vec![replacement("Other", "/p/o-old", "/p/o-new", true)],
            failed_operations: vec![],
            superseded_logical_ids: vec![],
            extra: Map::new(),
        });
        let found = strays(&journal, &resources);
        let ids: Vec<(&str, Option<&str>, &str)> = found
            .iter()
            .map(|s| {
                (
                    s.logical_id.as_str(),
                    s.record.physical_id.as_deref(),
                    s.why,
                )
            })
            .collect();
        assert_eq!(ids, [("Renamed", Some("/p/old"), DEFERRED_OLD)]);
    }
}
