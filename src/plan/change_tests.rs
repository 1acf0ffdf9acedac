//! Change-set helpers.

use serde_json::json;

use super::*;

#[test]
fn counts_and_has_changes() {
    let mut cs = ChangeSet::new("S");
    assert!(!cs.has_changes());
    cs.changes.push(ResourceChange::new(
        "A",
        "AWS::S3::Bucket",
        ChangeKind::NoChange,
    ));
    assert!(!cs.has_changes());
    for (id, kind) in [
        ("B", ChangeKind::Create),
        ("C", ChangeKind::Update),
        ("D", ChangeKind::Replace),
        ("E", ChangeKind::Delete),
        ("F", ChangeKind::Create),
    ] {
        cs.changes.push(ResourceChange::new(id, "T", kind));
    }
    assert!(cs.has_changes());
    let c = cs.counts();
    assert_eq!(
        c,
        ChangeCounts {
            create: 2,
            update: 1,
            replace: 1,
            delete: 1,
            no_change: 1
        }
    );
    assert_eq!(c.changed(), 5);
    let created: Vec<&str> = cs
        .of_kind(ChangeKind::Create)
        .map(|c| c.logical_id.as_str())
        .collect();
    assert_eq!(created, vec!["B", "F"]);
    assert_eq!(cs.get("D").map(|c| c.kind), Some(ChangeKind::Replace));
    assert!(cs.get("Z").is_none());
}

#[test]
fn replacement_and_serialised_shape() {
    let mut rc = ResourceChange::new("T", "AWS::ECS::TaskDefinition", ChangeKind::Replace);
    rc.reasons.push(ChangeReason::ImmutableProperty {
        path: "Family".into(),
    });
    rc.property_diffs.push(PropertyDiff {
        path: "Family".into(),
        old: Some(json!("a")),
        new: Some(json!("b")),
        requires_replacement: true,
    });
    assert!(rc.requires_replacement());
    let v = serde_json::to_value(&rc).unwrap();
    assert_eq!(v["kind"], json!("REPLACE"));
    assert_eq!(v["logicalId"], json!("T"));
    assert_eq!(
        v["reasons"][0],
        json!({"reason": "immutableProperty", "path": "Family"})
    );
    assert_eq!(v["propertyDiffs"][0]["requiresReplacement"], json!(true));
    let back: ResourceChange = serde_json::from_value(v).unwrap();
    assert_eq!(back, rc);
}
