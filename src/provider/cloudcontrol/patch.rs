//! The RFC 6902 patch an UpdateResource sends.
//!
//! Cloud Control applies a patch read-modify-write, and its read handlers never return
//! write-only properties, so a write-only property missing from the patch would be dropped from
//! the resource on every update. Write-only properties are therefore removed from the previous
//! side before diffing: every one present in the desired state goes out as an `add`.

use serde_json::{Map, Value};

use crate::provider::schema::TypeSchema;

/// Drops nulls recursively: CloudFormation treats a null property as absent, and Cloud Control
/// refuses explicit nulls in a desired state.
pub fn strip_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|v| !v.is_null())
                .map(strip_nulls)
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The minimal patch from `previous` to `desired`, with write-only properties re-sent.
pub fn update_patch(
    previous: &Map<String, Value>,
    desired: &Map<String, Value>,
    schema: Option<&TypeSchema>,
) -> json_patch::Patch {
    let mut before = strip_nulls(&Value::Object(previous.clone()));
    if let (Some(schema), Value::Object(map)) = (schema, &mut before) {
        for path in &schema.write_only {
            remove_path(map, path.segments());
        }
    }
    let after = strip_nulls(&Value::Object(desired.clone()));
    json_patch::diff(&before, &after)
}

/// Removes the value at a schema path (`*` matches every list element); whether it removed
/// anything. An object left empty by the removal goes too: Cloud Control's read of a property
/// whose every part is write-only (a Lambda function's `Code`) has no such key at all, and a
/// patch that `add`s below a key the resource lacks is refused.
fn remove_path(map: &mut Map<String, Value>, segments: &[String]) -> bool {
    let Some((first, rest)) = segments.split_first() else {
        return false;
    };
    if rest.is_empty() {
        return map.remove(first).is_some();
    }
    let removed = match map.get_mut(first) {
        Some(Value::Object(child)) => remove_path(child, rest),
        Some(Value::Array(items)) if rest.first().map(String::as_str) == Some("*") => {
            let mut any = false;
            for item in items {
                if let Value::Object(child) = item {
                    any |= remove_path(child, &rest[1..]);
                }
            }
            any
        }
        _ => false,
    };
    if removed
        && map
            .get(first)
            .is_some_and(|v| v.as_object().is_some_and(Map::is_empty))
    {
        map.remove(first);
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn the_patch_applied_to_the_old_document_gives_the_new_one() {
        let cases = [
            (
                json!({"A": 1, "B": [1, 2]}),
                json!({"A": 2, "B": [1, 2, 3], "C": {"x": "y"}}),
            ),
            (json!({"A": {"B": {"C": 1}}}), json!({"A": {"B": {}}})),
            (json!({"Tags": [{"Key": "a", "Value": "1"}]}), json!({})),
            (json!({}), json!({"N": null, "M": 5})),
        ];
        for (old, new) in cases {
            let patch = update_patch(&obj(old.clone()), &obj(new.clone()), None);
            let mut doc = strip_nulls(&old);
            json_patch::patch(&mut doc, &patch).expect("applies");
            assert_eq!(doc, strip_nulls(&new));
        }
    }

    #[test]
    fn unchanged_documents_give_an_empty_patch() {
        let p = update_patch(
            &obj(json!({"A": [1, {"b": 2}]})),
            &obj(json!({"A": [1, {"b": 2}]})),
            None,
        );
        assert!(p.0.is_empty());
    }

    #[test]
    fn write_only_properties_are_always_sent() {
        let schema = crate::provider::schema::schema_for("AWS::Lambda::Function").expect("schema");
        let code = json!({"S3Bucket": "b", "S3Key": "k"});
        let previous = obj(json!({"Code": code, "Handler": "index.handler"}));
        let desired = obj(json!({"Code": code, "Handler": "index.main"}));
        let patch = update_patch(&previous, &desired, Some(schema));
        let ops = serde_json::to_value(&patch).expect("json");
        let text = ops.to_string();
        assert!(text.contains("/Handler"), "{text}");
        assert!(
            text.contains("S3Bucket") && text.contains("S3Key"),
            "write-only Code parts re-sent: {text}"
        );
    }

    #[test]
    fn a_property_whose_every_part_is_write_only_is_added_whole() {
        let schema = crate::provider::schema::schema_for("AWS::Lambda::Function").expect("schema");
        let code = json!({"ZipFile": "def handler(e, c): pass"});
        let previous = obj(json!({"Code": code, "Description": "a"}));
        let desired = obj(json!({"Code": code, "Description": "b"}));
        let patch = update_patch(&previous, &desired, Some(schema));
        // What Cloud Control holds: no Code at all.
        let mut held = json!({"Description": "a"});
        json_patch::patch(&mut held, &patch).expect("applies to the model Cloud Control reads");
        assert_eq!(held, json!({"Code": code, "Description": "b"}));
    }
}
