//! Which changed dependencies move a value a resource reads (architecture-internals,
//! "Replacement propagation to dependents" and "In-place attribute propagation to dependents").
//!
//! A dependency that is created or replaced moves everything read from it (a new physical id).
//! One updated in place keeps its physical id, so it moves only an attribute that can move with
//! the update: one naming a property that changed, a derived attribute of the type (a launch
//! template's version numbers), a nested stack's `Outputs.<Key>`, or anything of a custom
//! resource (its handler answers again). A plain `Ref` to any other updated resource moves
//! nothing. Both the deploy's plan and `cdkd diff` decide promotion here.
//!
//! Promotion is transitive because the plan resolves each resource against [`predict`]ed
//! values of what it reads: a resource this run creates or replaces is seen with the new
//! values of its own properties as its same-named attributes (`TopicName`, `QueueName`) and
//! everything else (its `Ref`, its `Arn`) unknown; one updated in place with the attributes
//! that can move replaced by their new values, or unknown. A reader whose create-only property
//! then resolves to a new value is a replacement, whatever its depth, and is predicted the same
//! way for its own readers; one whose value is unknown gets the replacement as a ceiling the
//! walk lowers once the value is known.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::lookup::{Known, Snapshot};
use super::plan::Planned;
use crate::plan::{references, ChangeKind, ChangeReason, ResourceChange};

/// Attributes that change whenever the resource is updated.
const DERIVED_ATTRIBUTES: &[(&str, &str)] = &[
    ("AWS::EC2::LaunchTemplate", "LatestVersionNumber"),
    ("AWS::EC2::LaunchTemplate", "DefaultVersionNumber"),
];

/// The dependencies (logical id, their change) whose change moves a value `properties` read.
pub(super) fn moved(
    properties: &Map<String, Value>,
    planned: &HashMap<String, Planned>,
) -> Vec<(String, ChangeKind)> {
    let mut out: Vec<(String, ChangeKind)> = Vec::new();
    for r in references(&Value::Object(properties.clone())) {
        let Some(p) = planned.get(&r.target) else {
            continue;
        };
        let kind = p.change.kind;
        let moves = match kind {
            ChangeKind::NoChange | ChangeKind::Delete => false,
            ChangeKind::Create | ChangeKind::Replace => true,
            ChangeKind::Update => {
                let changed = changed_keys(&p.change, &p.unresolved);
                attribute_moves(&p.change.resource_type, r.attribute.as_deref(), &changed)
            }
        };
        if moves && !out.iter().any(|(t, _)| *t == r.target) {
            out.push((r.target, kind));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The dependencies in `moved` that `value` reads.
pub(super) fn moved_read(value: &Value, moved: &[(String, ChangeKind)]) -> Vec<String> {
    let mut out: Vec<String> = references(value)
        .into_iter()
        .map(|r| r.target)
        .filter(|t| moved.iter().any(|(m, _)| m == t))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether the plan knows the resource is new after this run (created, or replaced for a
/// reason of its own), so everything read from it that was not predicted moves; a replacement
/// that is only a ceiling (propagated from what it reads) may still be lowered by the walk.
pub(super) fn surely_new(p: &Planned) -> bool {
    match p.change.kind {
        ChangeKind::Create => true,
        ChangeKind::Replace => p.change.reasons.iter().any(|r| {
            matches!(
                r,
                ChangeReason::ImmutableProperty { .. }
                    | ChangeReason::TypeChanged { .. }
                    | ChangeReason::Requested { .. }
            )
        }),
        _ => false,
    }
}

/// The top-level properties an update changes: those with a new value and those whose new
/// value is only known after the deploy.
fn changed_keys<'a>(change: &'a ResourceChange, unresolved: &'a [String]) -> Vec<&'a str> {
    change
        .property_diffs
        .iter()
        .map(|d| d.path.as_str())
        .chain(unresolved.iter().map(String::as_str))
        .collect()
}

/// Records in `snapshot` what readers of `id` will see once this run has made `change` to
/// it: `desired` is its resolved properties (as far as they resolve), `unresolved` the
/// top-level properties whose new value is not known yet. A value `predictable` refuses (a
/// secret, a NoEcho value, a dynamic reference still to substitute) is left unknown.
///
/// A created or replaced resource has a new physical id: its `Ref` and every attribute are
/// unknown, except an attribute named like a property it sets, which is that property's new
/// value (CloudFormation's `Fn::GetAtt` of a name property returns the name). An update keeps
/// the physical id: an attribute that can move with it ([`attribute_moves`]) is the new value
/// of the property it names, or unknown; a custom resource's `Ref` and attributes are all
/// unknown (its handler answers again). An unchanged resource stays as recorded.
pub(super) fn predict(
    snapshot: &mut Snapshot,
    id: &str,
    change: &ResourceChange,
    desired: &Map<String, Value>,
    unresolved: &[String],
    predictable: &dyn Fn(&Value) -> bool,
) {
    let named = |key: &str| {
        desired
            .get(key)
            .filter(|v| matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_)))
            .filter(|v| predictable(v))
            .filter(|_| !unresolved.iter().any(|u| u == key))
    };
    match change.kind {
        ChangeKind::NoChange | ChangeKind::Delete => {}
        ChangeKind::Create | ChangeKind::Replace => {
            let attributes = desired
                .keys()
                .filter_map(|k| Some((k.clone(), named(k)?.clone())))
                .collect();
            let known = Known {
                ref_value: None,
                attributes,
            };
            snapshot.set(id, known);
        }
        ChangeKind::Update => {
            let Some(mut known) = snapshot.get(id).cloned() else {
                return;
            };
            let rtype = change.resource_type.as_str();
            if is_custom(rtype) {
                known.ref_value = None;
                known.attributes.clear();
            } else {
                let changed = changed_keys(change, unresolved);
                known
                    .attributes
                    .retain(|name, _| !attribute_moves(rtype, Some(name), &changed));
                for d in &change.property_diffs {
                    if let Some(v) = named(&d.path) {
                        known.attributes.insert(d.path.clone(), v.clone());
                    }
                }
            }
            snapshot.set(id, known);
        }
    }
}

fn is_custom(resource_type: &str) -> bool {
    resource_type.starts_with("Custom::") || resource_type == "AWS::CloudFormation::CustomResource"
}

/// Whether reading `attribute` (`None`: a `Ref`) of a resource of `resource_type` updated in
/// place, with `changed` top-level properties, can see a new value.
pub(super) fn attribute_moves(
    resource_type: &str,
    attribute: Option<&str>,
    changed: &[&str],
) -> bool {
    if is_custom(resource_type) {
        return true;
    }
    let Some(attribute) = attribute else {
        return false;
    };
    if resource_type == "AWS::CloudFormation::Stack" && attribute.starts_with("Outputs.") {
        return true;
    }
    if DERIVED_ATTRIBUTES
        .iter()
        .any(|(t, a)| *t == resource_type && *a == attribute)
    {
        return true;
    }
    let head = attribute.split('.').next().unwrap_or(attribute);
    changed.iter().any(|p| *p == attribute || *p == head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_in_place_update_moves_only_attributes_that_can_move() {
        let q = "AWS::SQS::Queue";
        assert!(!attribute_moves(q, None, &["VisibilityTimeout"]));
        assert!(!attribute_moves(q, Some("Arn"), &["VisibilityTimeout"]));
        assert!(attribute_moves(
            "AWS::SSM::Parameter",
            Some("Value"),
            &["Value"]
        ));
        assert!(attribute_moves(
            "AWS::RDS::DBInstance",
            Some("Endpoint.Address"),
            &["Endpoint"]
        ));
        assert!(attribute_moves(
            "AWS::EC2::LaunchTemplate",
            Some("LatestVersionNumber"),
            &["LaunchTemplateData"]
        ));
        assert!(attribute_moves(
            "AWS::CloudFormation::Stack",
            Some("Outputs.Url"),
            &[]
        ));
        assert!(attribute_moves("Custom::Thing", None, &[]));
    }
}
