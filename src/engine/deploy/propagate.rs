//! Which changed dependencies move a value a resource reads (architecture-internals,
//! "Replacement propagation to dependents" and "In-place attribute propagation to dependents").
//!
//! A dependency that is created or replaced moves everything read from it (a new physical id).
//! One updated in place keeps its physical id, so it moves only an attribute that can move with
//! the update: one naming a property that changed, a derived attribute of the type (a launch
//! template's version numbers), a nested stack's `Outputs.<Key>`, or anything of a custom
//! resource (its handler answers again). A plain `Ref` to any other updated resource moves
//! nothing. Both the deploy's plan and `cdkd diff` decide promotion here.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::plan::Planned;
use crate::plan::{references, ChangeKind};

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
                let changed: Vec<&str> = p
                    .change
                    .property_diffs
                    .iter()
                    .map(|d| d.path.as_str())
                    .collect();
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

/// Whether reading `attribute` (`None`: a `Ref`) of a resource of `resource_type` updated in
/// place, with `changed` top-level properties, can see a new value.
pub(super) fn attribute_moves(
    resource_type: &str,
    attribute: Option<&str>,
    changed: &[&str],
) -> bool {
    let custom = resource_type.starts_with("Custom::")
        || resource_type == "AWS::CloudFormation::CustomResource";
    if custom {
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
