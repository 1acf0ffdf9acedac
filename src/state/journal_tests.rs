//! Tests of the rollback journal (journal.rs).

use super::*;

fn op(id: &str, kind: OpKind) -> Operation {
    Operation {
        kind,
        logical_id: id.into(),
        resource_type: "AWS::SQS::Queue".into(),
        physical_id: Some(format!("{id}-new")),
        previous: None,
        previous_resource_type: None,
        old_resource_retained: None,
        old_deleted_before_create: None,
        extra: Map::new(),
    }
}

#[test]
fn journal_round_trips_with_spec_field_names() {
    let mut j = Journal::new("S", "us-east-1");
    j.segments.push(Segment {
        reason: reason::NO_ROLLBACK.into(),
        written_at: 1,
        operations: vec![op("Q", OpKind::Create)],
        failed_operations: vec![FailedOperation {
            kind: OpKind::Create,
            logical_id: "P".into(),
            resource_type: "AWS::SSM::Parameter".into(),
            physical_id: None,
            previous: None,
            attempted_properties: Some(Map::new()),
            error: Some("boom".into()),
            extra: Map::new(),
        }],
        superseded_logical_ids: Vec::new(),
        extra: Map::new(),
    });
    let text = serde_json::to_string(&j).unwrap();
    for field in [
        "\"journalVersion\":1",
        "\"segments\"",
        "\"operations\"",
        "\"failedOperations\"",
        "\"attemptedProperties\"",
        "\"reason\":\"no-rollback-failure\"",
        "\"changeType\":\"CREATE\"",
        "\"timestamp\":1",
    ] {
        assert!(text.contains(field), "{field} in {text}");
    }
    assert_eq!(parse_journal("k", text.as_bytes()).unwrap(), j);
}

#[test]
fn popping_a_segment_supersedes_its_ids_on_the_older_one() {
    let mut j = Journal::new("S", "r");
    for (i, id) in ["A", "B"].iter().enumerate() {
        j.segments.push(Segment {
            reason: reason::AUTO_ROLLBACK.into(),
            written_at: i as u64,
            operations: vec![op(id, OpKind::Update)],
            failed_operations: Vec::new(),
            superseded_logical_ids: Vec::new(),
            extra: Map::new(),
        });
    }
    let popped = j.pop_segment().unwrap();
    assert_eq!(popped.operations[0].logical_id, "B");
    assert_eq!(j.segments[0].superseded_logical_ids, vec!["B".to_string()]);
    assert!(parse_journal("k", br#"{"journalVersion": 9}"#).is_err());
    assert!(parse_journal("k", br#"{"segments": []}"#).is_err());
}

#[test]
fn an_import_marks_every_segment_holding_the_id_and_supersedes_it_on_the_newest() {
    let mut j = Journal::new("S", "r");
    for (i, ids) in [vec!["Q", "P"], vec!["P"], vec!["R"]]
        .into_iter()
        .enumerate()
    {
        j.segments.push(Segment {
            reason: reason::NO_ROLLBACK.into(),
            written_at: i as u64,
            operations: ids.iter().map(|id| op(id, OpKind::Create)).collect(),
            failed_operations: Vec::new(),
            superseded_logical_ids: Vec::new(),
            extra: Map::new(),
        });
    }
    let imported = ImportedResource {
        logical_id: "Q".into(),
        physical_id: "Q-adopted".into(),
        resource_type: "AWS::SQS::Queue".into(),
    };
    assert_eq!(j.mark_imported(&imported), Some(vec!["Q-new".to_string()]));
    assert_eq!(j.segments[0].imported_resources(), vec![imported.clone()]);
    assert!(j.segments[1].imported_resources().is_empty());
    assert_eq!(j.segments[2].superseded_logical_ids, vec!["Q".to_string()]);
    assert!(j.segments[0]
        .skipped_logical_ids()
        .contains(&"Q".to_string()));
    let text = serde_json::to_string(&j).unwrap();
    assert!(
        text.contains("\"importedResources\":[{\"logicalId\":\"Q\""),
        "{text}"
    );
    assert_eq!(parse_journal("k", text.as_bytes()).unwrap(), j);
    let none = ImportedResource {
        logical_id: "Z".into(),
        ..imported
    };
    assert_eq!(j.mark_imported(&none), None);
}

fn segment(reason: &str, written_at: u64, ids: &[&str]) -> Segment {
    Segment {
        reason: reason.into(),
        written_at,
        operations: ids.iter().map(|id| op(id, OpKind::Update)).collect(),
        failed_operations: Vec::new(),
        superseded_logical_ids: Vec::new(),
        extra: Map::new(),
    }
}

#[test]
fn removing_a_middle_segment_supersedes_its_ids_on_the_one_before() {
    let mut j = Journal::new("P~C", "r");
    j.segments
        .push(segment(reason::NESTED_PENDING_PARENT, 1, &["A"]));
    j.segments.push(segment(reason::NO_ROLLBACK, 2, &["B"]));
    j.segments
        .push(segment(reason::NESTED_PENDING_PARENT, 3, &["C"]));
    assert_eq!(j.remove_segment(1).unwrap().written_at, 2);
    assert_eq!(j.segments[0].superseded_logical_ids, vec!["B".to_string()]);
    assert!(j.segments[1].superseded_logical_ids.is_empty());
    assert!(j.remove_segment(5).is_none());
    assert_eq!(j.remove_segment(0).unwrap().written_at, 1);
    assert_eq!(j.segments.len(), 1);
}

#[test]
fn a_child_success_settles_failed_segments_and_keeps_pending_ones() {
    let mut j = Journal::new("P~C", "r");
    j.segments
        .push(segment(reason::NESTED_PENDING_PARENT, 1, &["A"]));
    j.segments
        .push(segment(reason::AUTO_ROLLBACK_CLEAN, 2, &[]));
    j.segments.push(segment(reason::NO_ROLLBACK, 3, &["B"]));
    let settled = j.append_pending(segment(reason::NESTED_PENDING_PARENT, 4, &["C"]));
    let settled_at: Vec<u64> = settled.iter().map(|s| s.written_at).collect();
    assert_eq!(settled_at, vec![3, 2]);
    let kept: Vec<u64> = j.segments.iter().map(|s| s.written_at).collect();
    assert_eq!(kept, vec![1, 4]);
    assert!(j
        .segments
        .iter()
        .all(|s| s.reason == reason::NESTED_PENDING_PARENT));
}

#[test]
fn the_pending_segment_a_row_op_names_is_found_unless_newer_ops_wait() {
    let mut j = Journal::new("P~C", "r");
    j.segments
        .push(segment(reason::NESTED_PENDING_PARENT, 1, &["A"]));
    j.segments
        .push(segment(reason::NESTED_PENDING_PARENT, 2, &["A"]));
    assert_eq!(j.pending_parent_segment(2), Ok(Some(1)));
    assert_eq!(j.pending_parent_segment(9), Ok(None));
    // A failed-only segment on top does not block it.
    j.segments
        .push(segment(reason::AUTO_ROLLBACK_CLEAN, 3, &[]));
    assert_eq!(j.pending_parent_segment(2), Ok(Some(1)));
    // One with completed ops must be reverted first, and so must a newer pending one.
    assert!(j.pending_parent_segment(1).is_err());
    j.segments.push(segment(reason::NO_ROLLBACK, 4, &["B"]));
    let err = j.pending_parent_segment(2).unwrap_err();
    assert!(err.contains("cdkd rollback P~C"), "{err}");
    // A segment of another reason is never taken for one.
    assert_eq!(j.pending_parent_segment(4), Ok(None));
}

#[test]
fn a_row_op_names_its_child_segment() {
    let mut o = op("Row", OpKind::Update);
    assert_eq!(o.nested_child_segment(), None);
    o.extra
        .insert(NESTED_CHILD_SEGMENT.into(), Value::from(42u64));
    let text = serde_json::to_string(&o).unwrap();
    assert!(text.contains("\"nestedChildSegment\":42"), "{text}");
    let back: Operation = serde_json::from_str(&text).unwrap();
    assert_eq!(back.nested_child_segment(), Some(42));
}

#[test]
fn descendant_journals_are_read_from_listed_keys() {
    let keys = StateKeys::new("cdkd");
    let found = |key: &str| descendant_journal(&keys, "P", "us-east-1", key);
    assert_eq!(descendants_prefix(&keys, "P"), "cdkd/P~");
    assert_eq!(
        found("cdkd/P~C/us-east-1/rollback-journal.json").as_deref(),
        Some("P~C")
    );
    assert_eq!(
        found("cdkd/P~C~G/us-east-1/rollback-journal.json").as_deref(),
        Some("P~C~G")
    );
    assert_eq!(found("cdkd/P~C/us-east-1/state.json"), None);
    assert_eq!(found("cdkd/P~C/eu-west-1/rollback-journal.json"), None);
    assert_eq!(found("cdkd/PX~C/us-east-1/rollback-journal.json"), None);
    assert_eq!(found("cdkd/P/us-east-1/rollback-journal.json"), None);
    assert_eq!(found("cdkd/P~/us-east-1/rollback-journal.json"), None);
    assert_eq!(
        found("cdkd/P~C/us-east-1/deployments/rollback-journal.json"),
        None
    );
}

#[test]
fn a_replacement_is_an_update_of_another_physical_id() {
    let mut o = op("Q", OpKind::Update);
    assert!(!o.is_replacement());
    o.previous = Some(ResourceState {
        physical_id: Some("Q-old".into()),
        ..ResourceState::default()
    });
    assert!(o.is_replacement());
    o.previous = Some(ResourceState {
        physical_id: Some("Q-new".into()),
        ..ResourceState::default()
    });
    assert!(!o.is_replacement());
}

/// The journal upstream cdkd wrote after a `--no-rollback` failure (scripts/upstream-goldens)
/// reads as ours (an UPDATE with its previous record, a CREATE, a failed CREATE) and is written
/// back JSON-equal: every field, ours or not, survives.
#[test]
fn upstream_golden_journal_round_trips() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/upstream/rollback-journal.json");
    let bytes = std::fs::read(&path).expect("golden journal");
    let journal = parse_journal("golden", &bytes).expect("upstream's journal reads");
    let segment = &journal.segments[0];
    assert_eq!(segment.reason, reason::NO_ROLLBACK);
    assert!(segment.written_at > 0);
    let kinds: Vec<(OpKind, &str)> = segment
        .operations
        .iter()
        .map(|o| (o.kind, o.logical_id.as_str()))
        .collect();
    assert_eq!(
        kinds,
        vec![(OpKind::Update, "Queue"), (OpKind::Create, "Added")]
    );
    assert!(
        segment.operations[0].previous.is_some(),
        "previousState is the previous record"
    );
    assert_eq!(segment.failed_operations[0].logical_id, "Doc");
    assert!(segment.failed_operations[0].attempted_properties.is_some());
    let original: Value = serde_json::from_slice(&bytes).unwrap();
    let written: Value = serde_json::to_value(&journal).unwrap();
    assert_eq!(written, original);
}

/// A journal of a version this binary does not know is refused, never read (and so never
/// rewritten); nor is one without a valid version.
#[test]
fn journals_of_unknown_versions_are_refused() {
    for body in [
        r#"{"journalVersion":2,"stackName":"S","region":"r","segments":[]}"#,
        r#"{"journalVersion":0,"stackName":"S","region":"r","segments":[]}"#,
        r#"{"stackName":"S","region":"r","segments":[]}"#,
    ] {
        let e = parse_journal("k", body.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("cannot be read"), "{e}");
    }
}
