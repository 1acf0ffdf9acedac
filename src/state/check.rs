//! The shape checks behind a strict read: every malformed container, row and
//! field the spec refuses, found in one pass over the raw body, and (for a
//! lossy read) repaired by emptying or dropping the damaged part.
//!
//! A `resources` row is readable when it is an object with a string
//! `resourceType` and its known fields have their documented shapes; a row
//! with no `physicalId` is readable. An `orphans` row is usable when it is an
//! object with a string `logicalId`, a readable `state` carrying a non-empty
//! string `physicalId`, and no other row shares its `logicalId`. Fields the
//! spec reads forgivingly (`exportNames`, `outputReads`, `skippedOutputs`,
//! `conditionVerdicts`, the masked-property fingerprints) are not checked.

use serde_json::{Map, Value};

use super::error::{BadOrphan, BadRow, OrphanProblem, RowProblem, StateError};
use super::value::ValueKind;

/// The JSON shape a known field must have.
#[derive(Clone, Copy)]
enum Shape {
    String,
    Bool,
    Object,
    StringList,
    /// `noEchoLeaves`: lists of object keys and list indices.
    LeafPaths,
    /// `noEchoExactEchoLeaves`: lists of strings.
    StringPaths,
    /// A non-negative integer (Unix milliseconds).
    Millis,
}

impl Shape {
    fn accepts(self, v: &Value) -> bool {
        let string_list = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
        match self {
            Shape::String => v.is_string(),
            Shape::Bool => v.is_boolean(),
            Shape::Object => v.is_object(),
            Shape::StringList => string_list(v),
            Shape::StringPaths => v.as_array().is_some_and(|a| a.iter().all(string_list)),
            Shape::LeafPaths => v.as_array().is_some_and(|paths| {
                paths.iter().all(|p| {
                    p.as_array().is_some_and(|segs| {
                        segs.iter().all(|s| s.is_string() || s.as_u64().is_some())
                    })
                })
            }),
            Shape::Millis => v.as_u64().is_some(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Shape::String => "a string",
            Shape::Bool => "a boolean",
            Shape::Object => "an object",
            Shape::StringList => "a list of strings",
            Shape::LeafPaths => "a list of property paths",
            Shape::StringPaths => "a list of lists of strings",
            Shape::Millis => "a non-negative integer",
        }
    }
}

/// Optional resource fields with a fixed shape. (`properties` and
/// `resourceType` are checked apart; the masked-property fingerprints read as
/// absent when malformed, so they are not checked.)
const RESOURCE_FIELDS: &[(&str, Shape)] = &[
    ("physicalId", Shape::String),
    ("observedProperties", Shape::Object),
    ("attributes", Shape::Object),
    ("dependencies", Shape::StringList),
    ("metadata", Shape::Object),
    ("constructPath", Shape::String),
    ("deletionPolicy", Shape::String),
    ("updateReplacePolicy", Shape::String),
    ("provisionedBy", Shape::String),
    ("observedBaselineRefused", Shape::Bool),
    ("observedBaselineRefusalReason", Shape::String),
    ("noEchoLeaves", Shape::LeafPaths),
    ("noEchoAttributeNames", Shape::StringList),
    ("noEchoExactEchoLeaves", Shape::StringPaths),
    ("acceptedCreateOnlyDrops", Shape::StringList),
];

/// Optional stack fields with a fixed shape. (`exportNames`, `outputReads`,
/// `skippedOutputs` and `conditionVerdicts` read forgivingly instead.)
const STACK_FIELDS: &[(&str, Shape)] = &[
    ("parentStack", Shape::String),
    ("parentLogicalId", Shape::String),
    ("parentRegion", Shape::String),
    ("lastModified", Shape::Millis),
];

/// A readable row, or why not. `Ok(Some(..))` is a readable row whose
/// `properties` is not an object (`None` inside: absent).
fn check_resource_row(row: &Value) -> Result<Option<Option<ValueKind>>, RowProblem> {
    let Value::Object(map) = row else {
        return Err(RowProblem::NotObject(ValueKind::of(row)));
    };
    if !map.get("resourceType").is_some_and(Value::is_string) {
        return Err(RowProblem::NoResourceType);
    }
    for (field, shape) in RESOURCE_FIELDS {
        if let Some(v) = map.get(*field) {
            if !shape.accepts(v) {
                return Err(RowProblem::Field {
                    field,
                    expected: shape.name(),
                    found: Some(ValueKind::of(v)),
                });
            }
        }
    }
    Ok(match map.get("properties") {
        Some(Value::Object(_)) => None,
        other => Some(other.map(ValueKind::of)),
    })
}

fn check_orphan_row(row: &Value) -> Result<String, (Option<String>, OrphanProblem)> {
    let Value::Object(map) = row else {
        return Err((None, OrphanProblem::NotObject(ValueKind::of(row))));
    };
    let Some(Value::String(id)) = map.get("logicalId") else {
        return Err((None, OrphanProblem::NoLogicalId));
    };
    let fail = |p| Err((Some(id.clone()), p));
    let state = match map.get("state") {
        Some(s @ Value::Object(_)) => s,
        other => return fail(OrphanProblem::NoState(other.map(ValueKind::of))),
    };
    match check_resource_row(state) {
        Err(p) => return fail(OrphanProblem::State(p)),
        Ok(Some(found)) => {
            return fail(OrphanProblem::State(RowProblem::Field {
                field: "properties",
                expected: "an object",
                found,
            }))
        }
        Ok(None) => {}
    }
    match state.get("physicalId") {
        Some(Value::String(p)) if !p.is_empty() => Ok(id.clone()),
        _ => fail(OrphanProblem::NoPhysicalId),
    }
}

/// Every refused shape in `root`, in the order a strict read reports them.
/// With `repair`, each damaged part is also emptied or dropped.
pub(super) fn inspect(
    root: &mut Map<String, Value>,
    stack: &str,
    region: &str,
    repair: bool,
) -> Vec<StateError> {
    let mut errors = Vec::new();
    let (s, r) = (stack.to_string(), region.to_string());

    // resources: the container, then its rows, then their properties maps.
    match root.get_mut("resources") {
        Some(Value::Object(rows)) => {
            let mut bad_rows = Vec::new();
            let mut bad_props = Vec::new();
            for (id, row) in rows.iter() {
                match check_resource_row(row) {
                    Err(problem) => bad_rows.push(BadRow {
                        logical_id: id.clone(),
                        problem,
                    }),
                    Ok(Some(found)) => bad_props.push((id.clone(), found)),
                    Ok(None) => {}
                }
            }
            if repair {
                for bad in &bad_rows {
                    rows.shift_remove(&bad.logical_id);
                }
                for (id, _) in &bad_props {
                    if let Some(Value::Object(row)) = rows.get_mut(id) {
                        row.insert("properties".into(), Value::Object(Map::new()));
                    }
                }
            }
            if !bad_rows.is_empty() {
                errors.push(StateError::ResourceRecordsMalformed {
                    stack: s.clone(),
                    region: r.clone(),
                    rows: bad_rows,
                });
            }
            if !bad_props.is_empty() {
                errors.push(StateError::PropertiesMalformed {
                    stack: s.clone(),
                    region: r.clone(),
                    rows: bad_props,
                });
            }
        }
        other => {
            errors.push(StateError::ResourcesMalformed {
                stack: s.clone(),
                region: r.clone(),
                found: other.as_deref().map(ValueKind::of),
            });
            if repair {
                root.insert("resources".into(), Value::Object(Map::new()));
            }
        }
    }

    // outputs: absent is an ordinary record.
    if let Some(v) = root.get("outputs") {
        if !v.is_object() {
            errors.push(StateError::OutputsMalformed {
                stack: s.clone(),
                region: r.clone(),
                kind: ValueKind::of(v),
            });
            if repair {
                root.insert("outputs".into(), Value::Object(Map::new()));
            }
        }
    }

    // orphans: absent is an ordinary record; rows must be usable and unique.
    match root.get_mut("orphans") {
        None => {}
        Some(Value::Array(rows)) => {
            let mut bad = Vec::new();
            let mut ids: Vec<Option<String>> = Vec::with_capacity(rows.len());
            for (index, row) in rows.iter().enumerate() {
                match check_orphan_row(row) {
                    Ok(id) => ids.push(Some(id)),
                    Err((logical_id, problem)) => {
                        ids.push(None);
                        bad.push(BadOrphan {
                            index,
                            logical_id,
                            problem,
                        });
                    }
                }
            }
            for (index, id) in ids.iter().enumerate() {
                let Some(id) = id else { continue };
                if ids
                    .iter()
                    .filter(|other| other.as_ref() == Some(id))
                    .count()
                    > 1
                {
                    bad.push(BadOrphan {
                        index,
                        logical_id: Some(id.clone()),
                        problem: OrphanProblem::Duplicate,
                    });
                }
            }
            if !bad.is_empty() {
                bad.sort_by_key(|b| b.index);
                if repair {
                    let mut index = 0;
                    rows.retain(|_| {
                        let keep = !bad.iter().any(|b| b.index == index);
                        index += 1;
                        keep
                    });
                }
                errors.push(StateError::OrphanRecordsMalformed {
                    stack: s.clone(),
                    region: r.clone(),
                    rows: bad,
                });
            }
        }
        Some(other) => {
            errors.push(StateError::OrphansMalformed {
                stack: s.clone(),
                region: r.clone(),
                kind: ValueKind::of(other),
            });
            if repair {
                root.shift_remove("orphans");
            }
        }
    }

    // imports: strong references, so a damaged list is refused rather than
    // read as "no consumers" (which would let a producer's destroy through).
    if let Some(v) = root.get("imports") {
        let entry_ok = |e: &Value| {
            ["sourceStack", "sourceRegion", "exportName"]
                .iter()
                .all(|f| e.get(*f).is_some_and(Value::is_string))
        };
        if !v.as_array().is_some_and(|a| a.iter().all(entry_ok)) {
            errors.push(StateError::FieldMalformed {
                stack: s.clone(),
                region: r.clone(),
                field: "imports",
                expected: "a list of {sourceStack, sourceRegion, exportName} entries",
                found: Some(ValueKind::of(v)),
            });
            if repair {
                root.shift_remove("imports");
            }
        }
    }

    for (field, shape) in STACK_FIELDS {
        if let Some(v) = root.get(*field) {
            if !shape.accepts(v) {
                errors.push(StateError::FieldMalformed {
                    stack: s.clone(),
                    region: r.clone(),
                    field,
                    expected: shape.name(),
                    found: Some(ValueKind::of(v)),
                });
                if repair {
                    root.shift_remove(*field);
                }
            }
        }
    }
    errors
}
