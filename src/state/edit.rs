//! Surgical edits of a stored record that must work even when the record is damaged.
//!
//! `cdkd state orphan --resource` is the remedy the malformed-record errors point at, so it
//! cannot require a record that parses cleanly. It edits the stored JSON in place: only the named
//! rows leave `resources`; every other byte of meaning (version, unknown fields, even a damaged
//! row elsewhere) is kept as stored rather than laundered into a healthy-looking record.

use serde_json::Value;

use super::json::to_js_pretty;
use super::value::ValueKind;

#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("State file for stack {stack} ({region}) is not a JSON object, so no resource can be dropped from it; `cdkd state orphan {stack}` drops the whole record")]
    NotAnObject { stack: String, region: String },
    #[error("State for stack {stack} ({region}) has a 'resources' value that is {kind}, not a map, so no single resource can be dropped; `cdkd state orphan {stack}` drops the whole record")]
    ResourcesNotAMap {
        stack: String,
        region: String,
        kind: String,
    },
    #[error("State for stack {stack} ({region}) has no resource {logical_id}; `cdkd state resources {stack}` lists them")]
    NoSuchResource {
        stack: String,
        region: String,
        logical_id: String,
    },
}

/// Removes `logical_ids` from the record's `resources` map and returns the new body, laid out as
/// the TypeScript cdkd writes records.
pub fn remove_resources(
    bytes: &[u8],
    stack: &str,
    region: &str,
    logical_ids: &[String],
) -> Result<Vec<u8>, EditError> {
    let mut root: Value = serde_json::from_slice(bytes).map_err(|_| EditError::NotAnObject {
        stack: stack.to_owned(),
        region: region.to_owned(),
    })?;
    let Some(object) = root.as_object_mut() else {
        return Err(EditError::NotAnObject {
            stack: stack.to_owned(),
            region: region.to_owned(),
        });
    };
    let resources = match object.get_mut("resources") {
        Some(Value::Object(map)) => map,
        other => {
            return Err(EditError::ResourcesNotAMap {
                stack: stack.to_owned(),
                region: region.to_owned(),
                kind: other.map_or_else(|| "absent".to_owned(), |v| ValueKind::of(v).to_string()),
            })
        }
    };
    for id in logical_ids {
        if resources.shift_remove(id).is_none() {
            return Err(EditError::NoSuchResource {
                stack: stack.to_owned(),
                region: region.to_owned(),
                logical_id: id.clone(),
            });
        }
    }
    Ok(to_js_pretty(&root).into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_the_named_rows_and_keeps_damage_elsewhere() {
        let body = br#"{"version":7,"stackName":"S","resources":{"A":{"resourceType":"T","properties":{}},"B":"damaged","C":{"resourceType":"T","properties":[]}},"weird":1}"#;
        let out = remove_resources(body, "S", "r", &["B".into()]).expect("edits");
        let v: Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(v["version"], 7, "not re-stamped");
        assert_eq!(v["weird"], 1);
        assert!(v["resources"].get("B").is_none());
        assert_eq!(
            v["resources"]["C"]["properties"],
            serde_json::json!([]),
            "other damage kept as stored"
        );
        assert!(std::str::from_utf8(&out)
            .expect("utf8")
            .contains("\n  \"resources\": {"));
    }

    #[test]
    fn refuses_what_it_cannot_edit() {
        assert!(matches!(
            remove_resources(b"[1]", "S", "r", &[]),
            Err(EditError::NotAnObject { .. })
        ));
        assert!(matches!(
            remove_resources(b"{\"resources\":[]}", "S", "r", &["A".into()]),
            Err(EditError::ResourcesNotAMap { .. })
        ));
        assert!(matches!(
            remove_resources(b"{\"resources\":{}}", "S", "r", &["A".into()]),
            Err(EditError::NoSuchResource { .. })
        ));
    }
}
