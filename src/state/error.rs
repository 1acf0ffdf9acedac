//! Errors from reading a state record.
//!
//! Each message is one line that names the stack and region (the key's) and
//! says what to do. Identifiers come from S3 keys and record bodies, which
//! anyone able to write the bucket controls, so they are sanitized before they
//! are printed, and a suggested command carries a hole (`'<stack>'`) instead of
//! a name that would not paste safely. A value read from a body is never
//! printed here: only its kind ("a string", "null").
//!
//! Codes: the spec names one code for every malformed-record refusal,
//! `STATE_RESOURCES_MALFORMED`, whichever container is damaged; the variant
//! says which. The other codes are this binary's own.

use std::fmt;

use super::value::{quoted, shell_word, ValueKind};

/// The code every malformed-record refusal carries.
pub const STATE_RESOURCES_MALFORMED: &str = "STATE_RESOURCES_MALFORMED";
/// The body is not JSON.
pub const STATE_NOT_JSON: &str = "STATE_NOT_JSON";
/// The body is JSON but not an object.
pub const STATE_NOT_OBJECT: &str = "STATE_NOT_OBJECT";
/// The record's schema version is newer than this binary (or not a version).
pub const STATE_SCHEMA_UNSUPPORTED: &str = "STATE_SCHEMA_UNSUPPORTED";
/// A delete was refused because the body's region disagrees with its key's.
pub const STATE_REGION_MISMATCH: &str = "STATE_REGION_MISMATCH";

/// Why one row of `resources` (or the `state` of an orphans row) cannot be
/// read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowProblem {
    /// The row is not an object (null, a string, a list, ...).
    NotObject(ValueKind),
    /// The row carries no string `resourceType`.
    NoResourceType,
    /// A known field holds the wrong kind of value.
    Field {
        field: &'static str,
        expected: &'static str,
        found: Option<ValueKind>,
    },
}

impl fmt::Display for RowProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowProblem::NotObject(kind) => write!(f, "is {kind}, not a record"),
            RowProblem::NoResourceType => f.write_str("has no string resourceType"),
            RowProblem::Field {
                field,
                expected,
                found: Some(kind),
            } => write!(f, "has a '{field}' that is {kind}, not {expected}"),
            RowProblem::Field {
                field, expected, ..
            } => write!(f, "has no '{field}' ({expected} expected)"),
        }
    }
}

/// One unreadable `resources` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRow {
    pub logical_id: String,
    pub problem: RowProblem,
}

/// One unusable `orphans` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadOrphan {
    /// Position in the list.
    pub index: usize,
    /// The row's `logicalId`, when it has a string one.
    pub logical_id: Option<String>,
    pub problem: OrphanProblem,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrphanProblem {
    NotObject(ValueKind),
    NoLogicalId,
    /// `state` is absent or not an object.
    NoState(Option<ValueKind>),
    /// `state` has no non-empty string `physicalId`.
    NoPhysicalId,
    /// `state` is not a readable resource record.
    State(RowProblem),
    /// Another row names the same `logicalId`.
    Duplicate,
}

impl fmt::Display for OrphanProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OrphanProblem::NotObject(kind) => write!(f, "is {kind}, not a record"),
            OrphanProblem::NoLogicalId => f.write_str("has no string logicalId"),
            OrphanProblem::NoState(Some(kind)) => write!(f, "has a 'state' that is {kind}"),
            OrphanProblem::NoState(None) => f.write_str("has no 'state'"),
            OrphanProblem::NoPhysicalId => f.write_str("has no non-empty physicalId"),
            OrphanProblem::State(p) => write!(f, "has a 'state' that {p}"),
            OrphanProblem::Duplicate => f.write_str("shares its logicalId with another row"),
        }
    }
}

/// A state record that cannot be read or acted on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StateError {
    #[error("State file for stack {} ({}) is not valid JSON ({detail}); restore an earlier object version of it or repair it by hand", quoted(.stack), quoted(.region))]
    NotJson {
        stack: String,
        region: String,
        detail: String,
    },

    #[error("State file for stack {} ({}) parses to {kind}, not a JSON object, so it cannot be read as a state record; restore an earlier object version of it", quoted(.stack), quoted(.region))]
    NotObject {
        stack: String,
        region: String,
        kind: ValueKind,
    },

    /// The spec's wording, exactly.
    #[error("Unsupported state schema version {shown}. Upgrade cdkd.")]
    UnsupportedVersion {
        stack: String,
        region: String,
        /// The stored value, sanitized.
        shown: String,
    },

    #[error("State for stack {} ({}) has no readable 'resources' map ({}); cdkd refuses to act on it, since an unreadable map cannot be told from an empty stack. {}", quoted(.stack), quoted(.region), found_text(.found), remedy(.stack, .region, true))]
    ResourcesMalformed {
        stack: String,
        region: String,
        /// `None` when the field is absent.
        found: Option<ValueKind>,
    },

    #[error("State for stack {} ({}) holds resource records cdkd cannot read: {}; cdkd refuses rather than re-create or lose them. {}", quoted(.stack), quoted(.region), list_rows(.rows), remedy(.stack, .region, false))]
    ResourceRecordsMalformed {
        stack: String,
        region: String,
        rows: Vec<BadRow>,
    },

    #[error("State for stack {} ({}) holds a 'properties' map that is not an object for {}; a deploy would read every declared property as missing and update or replace those resources, so cdkd refuses. {}", quoted(.stack), quoted(.region), list_kinds(.rows), remedy(.stack, .region, false))]
    PropertiesMalformed {
        stack: String,
        region: String,
        /// Logical id and what the field holds (`None`: absent).
        rows: Vec<(String, Option<ValueKind>)>,
    },

    #[error("State for stack {} ({}) has an 'outputs' value that is {kind}, not a map; cdkd refuses rather than read outputs out of it or save over it. {}", quoted(.stack), quoted(.region), remedy(.stack, .region, true))]
    OutputsMalformed {
        stack: String,
        region: String,
        kind: ValueKind,
    },

    #[error("State for stack {} ({}) has an 'orphans' value that is {kind}, not a list; cdkd refuses rather than lose the record of resources a rollback left in AWS. {}", quoted(.stack), quoted(.region), remedy(.stack, .region, false))]
    OrphansMalformed {
        stack: String,
        region: String,
        kind: ValueKind,
    },

    #[error("State for stack {} ({}) holds orphans records cdkd cannot use: {}; each records a resource an earlier rollback left in AWS, so repair the row (keep one record per logical id) rather than deleting it. {}", quoted(.stack), quoted(.region), list_orphans(.rows), remedy(.stack, .region, false))]
    OrphanRecordsMalformed {
        stack: String,
        region: String,
        rows: Vec<BadOrphan>,
    },

    #[error("State for stack {} ({}) has a '{field}' that is {}, not {expected}. {}", quoted(.stack), quoted(.region), found_text(.found), remedy(.stack, .region, false))]
    FieldMalformed {
        stack: String,
        region: String,
        field: &'static str,
        expected: &'static str,
        found: Option<ValueKind>,
    },

    #[error("State for stack {} ({}) could not be read: {detail}. {}", quoted(.stack), quoted(.region), remedy(.stack, .region, false))]
    Unreadable {
        stack: String,
        region: String,
        detail: String,
    },

    #[error("Refusing to delete the resources of stack {} in {}: its state record names a region of its own ({body_kind}) that is not its key's, and cdkd cannot tell which is right. Destroy against the region the resources really are in, or correct the record's region field to match its key; `cdkd state orphan {} --stack-region {}` drops the record and leaves the resources standing", quoted(.stack), quoted(.region), shell_word(.stack, "<stack>"), shell_word(.region, "<region>"))]
    RegionMismatch {
        stack: String,
        region: String,
        body_kind: ValueKind,
    },
}

impl StateError {
    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            StateError::NotJson { .. } => STATE_NOT_JSON,
            StateError::NotObject { .. } => STATE_NOT_OBJECT,
            StateError::UnsupportedVersion { .. } => STATE_SCHEMA_UNSUPPORTED,
            StateError::RegionMismatch { .. } => STATE_REGION_MISMATCH,
            StateError::ResourcesMalformed { .. }
            | StateError::ResourceRecordsMalformed { .. }
            | StateError::PropertiesMalformed { .. }
            | StateError::OutputsMalformed { .. }
            | StateError::OrphansMalformed { .. }
            | StateError::OrphanRecordsMalformed { .. }
            | StateError::FieldMalformed { .. }
            | StateError::Unreadable { .. } => STATE_RESOURCES_MALFORMED,
        }
    }

    /// Whether this is a malformed-record refusal (`STATE_RESOURCES_MALFORMED`).
    pub fn is_malformed_record(&self) -> bool {
        self.code() == STATE_RESOURCES_MALFORMED
    }

    /// The stack (from the key) the error is about.
    pub fn stack(&self) -> &str {
        match self {
            StateError::NotJson { stack, .. }
            | StateError::NotObject { stack, .. }
            | StateError::UnsupportedVersion { stack, .. }
            | StateError::ResourcesMalformed { stack, .. }
            | StateError::ResourceRecordsMalformed { stack, .. }
            | StateError::PropertiesMalformed { stack, .. }
            | StateError::OutputsMalformed { stack, .. }
            | StateError::OrphansMalformed { stack, .. }
            | StateError::OrphanRecordsMalformed { stack, .. }
            | StateError::FieldMalformed { stack, .. }
            | StateError::Unreadable { stack, .. }
            | StateError::RegionMismatch { stack, .. } => stack,
        }
    }
}

fn found_text(found: &Option<ValueKind>) -> String {
    match found {
        Some(kind) => kind.to_string(),
        None => "absent".to_string(),
    }
}

/// The way out, for the end of a message: inspect and repair, and, when the
/// whole record is what cannot be read, drop it leaving AWS untouched.
fn remedy(stack: &str, region: &str, offer_orphan: bool) -> String {
    let s = shell_word(stack, "<stack>");
    let r = shell_word(region, "<region>");
    let hole = if s.contains('<') || r.contains('<') {
        " (fill the holes from `cdkd state list --json`)"
    } else {
        ""
    };
    if offer_orphan {
        format!(
            "Inspect it with `cdkd state show {s} --stack-region {r} --json` and repair it, or drop the record and leave every AWS resource standing with `cdkd state orphan {s} --stack-region {r}`{hole}"
        )
    } else {
        format!(
            "Inspect it with `cdkd state show {s} --stack-region {r} --json` and repair it{hole}"
        )
    }
}

/// At most this many items are named in one message.
const LIST_CAP: usize = 10;

fn capped<T>(items: &[T], render: impl Fn(&T) -> String) -> String {
    let mut parts: Vec<String> = items.iter().take(LIST_CAP).map(render).collect();
    if items.len() > LIST_CAP {
        parts.push(format!("and {} more", items.len() - LIST_CAP));
    }
    parts.join("; ")
}

fn list_rows(rows: &[BadRow]) -> String {
    capped(rows, |r| format!("{} {}", quoted(&r.logical_id), r.problem))
}

fn list_kinds(rows: &[(String, Option<ValueKind>)]) -> String {
    capped(rows, |(id, kind)| {
        format!("{} ({})", quoted(id), found_text(kind))
    })
}

fn list_orphans(rows: &[BadOrphan]) -> String {
    capped(rows, |r| match &r.logical_id {
        Some(id) => format!("row {} ({}) {}", r.index, quoted(id), r.problem),
        None => format!("row {} {}", r.index, r.problem),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_and_name_the_stack() {
        let errors = [
            StateError::ResourcesMalformed {
                stack: "MyStack".into(),
                region: "us-east-1".into(),
                found: Some(ValueKind::String),
            },
            StateError::ResourceRecordsMalformed {
                stack: "MyStack".into(),
                region: "us-east-1".into(),
                rows: vec![BadRow {
                    logical_id: "Bad\nRow".into(),
                    problem: RowProblem::NoResourceType,
                }],
            },
            StateError::RegionMismatch {
                stack: "a'b".into(),
                region: "us-east-1".into(),
                body_kind: ValueKind::Number,
            },
        ];
        for e in &errors {
            let text = e.to_string();
            assert!(!text.contains('\n'), "{text}");
            assert!(text.contains("MyStack") || text.contains("a'b"), "{text}");
        }
        assert!(errors[0]
            .to_string()
            .contains("cdkd state orphan 'MyStack' --stack-region 'us-east-1'"));
        assert!(errors[1]
            .to_string()
            .contains("'Bad\\u{a}Row' has no string resourceType"));
        assert!(errors[2]
            .to_string()
            .contains("cdkd state orphan '<stack>'"));
        assert_eq!(errors[0].code(), STATE_RESOURCES_MALFORMED);
        assert_eq!(errors[2].code(), STATE_REGION_MISMATCH);
    }

    #[test]
    fn unsupported_version_uses_the_spec_wording() {
        let e = StateError::UnsupportedVersion {
            stack: "S".into(),
            region: "r".into(),
            shown: "12".into(),
        };
        assert_eq!(
            e.to_string(),
            "Unsupported state schema version 12. Upgrade cdkd."
        );
        assert_eq!(e.code(), STATE_SCHEMA_UNSUPPORTED);
    }

    #[test]
    fn long_lists_are_capped() {
        let rows: Vec<BadRow> = (0..15)
            .map(|i| BadRow {
                logical_id: format!("R{i}"),
                problem: RowProblem::NotObject(ValueKind::Null),
            })
            .collect();
        let e = StateError::ResourceRecordsMalformed {
            stack: "S".into(),
            region: "r".into(),
            rows,
        };
        assert!(e.to_string().contains("and 5 more"));
    }
}
