//! Stack-level tags on the stack's resources, as CloudFormation propagates them.
//!
//! A stack's tags (the manifest's `properties.tags`: what the stack's `tags` prop and
//! `Tags.of(stack).add` write) are not in the template for every resource: CloudFormation
//! itself copies them onto every resource that takes tags. cdkd has no CloudFormation, so the
//! deploy writes them into each resource's tag property before the plan (`prepare::build`);
//! the plan, the diff and the record then see them like any other property, and a changed
//! stack tag is an ordinary update of every tagged resource. A resource's own tag of the same
//! key wins. A nested stack's resources get the tags of its `AWS::CloudFormation::Stack` row
//! (which the parent's stack tags reached first), as CloudFormation passes them down.
//!
//! Which property carries tags, and in which shape, comes from `tag_properties.json`,
//! generated from the CloudFormation resource schemas by `scripts/gen-tag-properties`. A type
//! missing from it (no tags, a custom resource, a type newer than the table) is left alone, and
//! so is a tag property written as an intrinsic (an `Fn::If` of lists), which cannot be merged
//! without evaluating it.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::template::Template;

const TABLE: &str = include_str!("tag_properties.json");

/// How a type's tag property is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `[{"Key": k, "Value": v}, ...]`.
    List,
    /// `[{"Key": k, "Value": v, "PropagateAtLaunch": true}, ...]` (Auto Scaling groups: the
    /// stack's tags reach the group's instances too, as CloudFormation does it).
    Asg,
    /// `{k: v, ...}` (e.g. `AWS::SSM::Parameter` `Tags`, `AWS::Cognito::UserPool` `UserPoolTags`).
    Map,
}

fn table() -> &'static HashMap<String, (String, Shape)> {
    static CELL: OnceLock<HashMap<String, (String, Shape)>> = OnceLock::new();
    CELL.get_or_init(|| parse(TABLE).unwrap_or_default())
}

fn parse(text: &str) -> Option<HashMap<String, (String, Shape)>> {
    let root: Value = serde_json::from_str(text).ok()?;
    let types = root.get("types")?.as_object()?;
    let mut out = HashMap::with_capacity(types.len());
    for (type_name, row) in types {
        let (Some(property), Some(shape)) = (
            row.get(0).and_then(Value::as_str),
            row.get(1).and_then(Value::as_str),
        ) else {
            continue;
        };
        let shape = match shape {
            "list" => Shape::List,
            "asg" => Shape::Asg,
            "map" => Shape::Map,
            _ => continue,
        };
        out.insert(type_name.clone(), (property.to_owned(), shape));
    }
    Some(out)
}

/// The property carrying `type_name`'s tags and its shape; `None` for a type that takes none.
pub(crate) fn tag_property(type_name: &str) -> Option<(&'static str, Shape)> {
    table()
        .get(type_name)
        .map(|(property, shape)| (property.as_str(), *shape))
}

/// A stack artifact's manifest tags as (key, value) pairs, in manifest order. A value that is
/// not a string (the CDK writes none) is left out, and so is a key in the reserved `aws:`
/// namespace, which AWS refuses from a caller.
pub fn from_manifest(tags: &Map<String, Value>) -> Vec<(String, String)> {
    tags.iter()
        .filter(|(key, _)| !key.starts_with("aws:"))
        .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned())))
        .collect()
}

/// A nested stack row's resolved `Tags` (a list of `{Key, Value}`) as the child's stack tags.
pub(crate) fn from_tag_list(tags: Option<&Value>) -> Vec<(String, String)> {
    let Some(Value::Array(items)) = tags else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            let key = item.get("Key")?.as_str()?;
            let value = item.get("Value")?.as_str()?;
            (!key.starts_with("aws:")).then(|| (key.to_owned(), value.to_owned()))
        })
        .collect()
}

/// Writes `tags` into every resource of `template` whose type takes tags.
pub(crate) fn apply(template: &mut Template, tags: &[(String, String)]) {
    if tags.is_empty() {
        return;
    }
    for resource in template.resources.values_mut() {
        if let Some((property, shape)) = tag_property(&resource.type_) {
            apply_to(&mut resource.properties, property, shape, tags);
        }
    }
}

/// Merges `tags` into `properties[property]`: keys the resource already tags keep its value.
fn apply_to(
    properties: &mut Map<String, Value>,
    property: &str,
    shape: Shape,
    tags: &[(String, String)],
) {
    let slot = properties
        .entry(property.to_owned())
        .or_insert_with(|| match shape {
            Shape::Map => Value::Object(Map::new()),
            Shape::List | Shape::Asg => Value::Array(Vec::new()),
        });
    match (shape, slot) {
        (Shape::Map, Value::Object(map)) if !is_intrinsic(map) => {
            for (key, value) in tags {
                if !map.contains_key(key) {
                    map.insert(key.clone(), Value::String(value.clone()));
                }
            }
        }
        (Shape::List | Shape::Asg, Value::Array(items)) => {
            let own: Vec<&str> = items
                .iter()
                .filter_map(|item| item.get("Key").and_then(Value::as_str))
                .collect();
            let missing: Vec<&(String, String)> = tags
                .iter()
                .filter(|(key, _)| !own.contains(&key.as_str()))
                .collect();
            for (key, value) in missing {
                let mut item = Map::new();
                item.insert("Key".into(), Value::String(key.clone()));
                item.insert("Value".into(), Value::String(value.clone()));
                if shape == Shape::Asg {
                    item.insert("PropagateAtLaunch".into(), Value::Bool(true));
                }
                items.push(Value::Object(item));
            }
        }
        // An intrinsic or an unexpected value: left as written.
        _ => {}
    }
}

fn is_intrinsic(map: &Map<String, Value>) -> bool {
    map.len() == 1
        && map
            .keys()
            .next()
            .is_some_and(|k| k == "Ref" || k.starts_with("Fn::"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tags() -> Vec<(String, String)> {
        vec![
            ("Team".into(), "blue".into()),
            ("CostCenter".into(), "cc-1".into()),
        ]
    }

    fn template(resources: Value) -> Template {
        let text = json!({ "Resources": resources }).to_string();
        crate::template::parse_template(&text, std::path::Path::new("t.json"))
            .expect("valid template")
    }

    #[test]
    fn the_generated_table_knows_the_shapes() {
        assert_eq!(tag_property("AWS::SQS::Queue"), Some(("Tags", Shape::List)));
        assert_eq!(
            tag_property("AWS::SSM::Parameter"),
            Some(("Tags", Shape::Map))
        );
        assert_eq!(
            tag_property("AWS::Cognito::UserPool"),
            Some(("UserPoolTags", Shape::Map))
        );
        assert_eq!(
            tag_property("AWS::AutoScaling::AutoScalingGroup"),
            Some(("Tags", Shape::Asg))
        );
        assert_eq!(tag_property("AWS::SQS::QueuePolicy"), None);
        assert_eq!(tag_property("Custom::Thing"), None);
        assert!(table().len() > 1000, "{} types", table().len());
    }

    #[test]
    fn every_shape_gets_the_stack_tags_and_own_tags_win() {
        let mut t = template(json!({
            "Q": {"Type": "AWS::SQS::Queue", "Properties": {
                "Tags": [{"Key": "Team", "Value": "own"}]}},
            "P": {"Type": "AWS::SSM::Parameter", "Properties": {"Type": "String", "Value": "v"}},
            "G": {"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": {"MaxSize": "1"}},
            "Pol": {"Type": "AWS::SQS::QueuePolicy", "Properties": {"Queues": []}},
            "C": {"Type": "Custom::X", "Properties": {"ServiceToken": "t"}},
        }));
        apply(&mut t, &tags());
        let props = |id: &str| Value::Object(t.resources[id].properties.clone());
        assert_eq!(
            props("Q")["Tags"],
            json!([{"Key": "Team", "Value": "own"}, {"Key": "CostCenter", "Value": "cc-1"}])
        );
        assert_eq!(
            props("P")["Tags"],
            json!({"Team": "blue", "CostCenter": "cc-1"})
        );
        assert_eq!(
            props("G")["Tags"],
            json!([
                {"Key": "Team", "Value": "blue", "PropagateAtLaunch": true},
                {"Key": "CostCenter", "Value": "cc-1", "PropagateAtLaunch": true}
            ])
        );
        assert_eq!(props("Pol"), json!({"Queues": []}));
        assert_eq!(props("C"), json!({"ServiceToken": "t"}));
    }

    #[test]
    fn intrinsic_tag_properties_and_no_tags_are_left_alone() {
        let raw = json!({
            "Q": {"Type": "AWS::SQS::Queue", "Properties": {
                "Tags": {"Fn::If": ["C", [{"Key": "a", "Value": "b"}], []]}}},
            "P": {"Type": "AWS::SSM::Parameter", "Properties": {"Tags": {"Ref": "X"}}},
        });
        let mut t = template(raw.clone());
        apply(&mut t, &tags());
        assert_eq!(
            t.resources["Q"].properties["Tags"],
            raw["Q"]["Properties"]["Tags"]
        );
        assert_eq!(t.resources["P"].properties["Tags"], json!({"Ref": "X"}));
        let mut t = template(json!({"Q": {"Type": "AWS::SQS::Queue"}}));
        apply(&mut t, &[]);
        assert!(t.resources["Q"].properties.is_empty());
    }

    #[test]
    fn manifest_and_row_tags_are_read_as_strings() {
        let manifest = json!({"Team": "blue", "aws:cdk:x": "no", "N": 5});
        assert_eq!(
            from_manifest(manifest.as_object().expect("object")),
            vec![("Team".to_owned(), "blue".to_owned())]
        );
        let row = json!([{"Key": "A", "Value": "1"}, {"Key": {"Ref": "X"}, "Value": "2"}]);
        assert_eq!(
            from_tag_list(Some(&row)),
            vec![("A".to_owned(), "1".to_owned())]
        );
        assert!(from_tag_list(None).is_empty());
    }
}
