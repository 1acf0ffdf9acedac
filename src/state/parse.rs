//! Reading `state.json`: bytes to an upgraded [`StackState`].
//!
//! The steps, in order:
//!
//! 1. Parse the JSON (a UTF-8 byte-order mark is skipped, invalid UTF-8 is
//!    replaced, as the TypeScript reader's text decoding does); the root must
//!    be an object.
//! 2. Check the schema version: 1..=11 is read (an absent field is read as the
//!    legacy version 1); anything else is refused with
//!    `Unsupported state schema version N. Upgrade cdkd.`
//! 3. Decide the region from the KEY. A body with no region belongs to its
//!    key's region; a body that names another value is read against the key's
//!    region anyway, with a warning that names the kind of value it held, and
//!    [`ParsedState::body_region`] remembers the disagreement so a destroy or
//!    rollback can refuse ([`ParsedState::ensure_deletable`]).
//! 4. Check every shape the spec refuses (see [`StateError`]); a strict read
//!    refuses the first, a lossy read (for read-only commands) repairs them
//!    and lists them in [`ParsedState::defects`].
//! 5. Upgrade the record in memory, version by version, to the current model.

use serde_json::{Map, Value};

use super::check::inspect;
use super::error::StateError;
use super::record::{StackState, STATE_SCHEMA_VERSION, STATE_SCHEMA_VERSION_LEGACY};
use super::value::{display_value, quoted, ValueKind};

/// A record read from the bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedState {
    /// The record, upgraded to the current model; its `region` is the key's.
    pub state: StackState,
    /// The schema version the stored body said.
    pub source_version: u32,
    /// How the body's own `region` compared with the key's.
    pub body_region: BodyRegion,
    /// Warnings for the caller to print (not printed here).
    pub warnings: Vec<String>,
    /// What a lossy read repaired (always empty after a strict read). A record
    /// with defects must never be saved.
    pub defects: Vec<StateError>,
    /// Read from the legacy `{prefix}/{stack}/state.json` key: the next save
    /// writes the region-scoped key and deletes the legacy one.
    pub from_legacy_key: bool,
}

/// The body's `region` field against the key's region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyRegion {
    /// The body names the key's region.
    Matches,
    /// The body names no region (or, on the legacy key, an empty one).
    Absent,
    /// The body names something else.
    Disagrees {
        kind: ValueKind,
        /// The stored value, sanitized, for `--verbose` output only.
        shown: String,
    },
}

impl ParsedState {
    /// Whether the body's region disagreed with its key's.
    pub fn region_disagreed(&self) -> bool {
        matches!(self.body_region, BodyRegion::Disagrees { .. })
    }

    /// For destroy and rollback: refuses a record whose body names another
    /// region than its key while it still lists resources, since deleting in
    /// the wrong region would read every not-found as already deleted. A
    /// record with no resources has nothing to strand and is allowed.
    pub fn ensure_deletable(&self) -> Result<(), StateError> {
        match &self.body_region {
            BodyRegion::Disagrees { kind, .. } if !self.state.resources.is_empty() => {
                Err(StateError::RegionMismatch {
                    stack: self.state.stack_name.clone(),
                    region: self.state.region.clone(),
                    body_kind: *kind,
                })
            }
            _ => Ok(()),
        }
    }

    /// Whether a lossy read had to repair anything.
    pub fn is_lossy(&self) -> bool {
        !self.defects.is_empty()
    }
}

/// Reads the record at `{prefix}/{stack_name}/{key_region}/state.json`,
/// refusing any malformed shape.
pub fn parse_state(
    bytes: &[u8],
    stack_name: &str,
    key_region: &str,
) -> Result<ParsedState, StateError> {
    read(
        bytes,
        stack_name,
        KeySource::Regional(key_region),
        Mode::Strict,
    )?
    .ok_or_else(|| unreachable_none(stack_name, key_region))
}

/// Like [`parse_state`], but for a command that never writes state: damaged
/// containers and rows are dropped or emptied instead of refused, and each
/// repair is listed in [`ParsedState::defects`] for the caller to warn about.
/// Invalid JSON, a non-object body and an unsupported version are still
/// refused.
pub fn parse_state_lossy(
    bytes: &[u8],
    stack_name: &str,
    key_region: &str,
) -> Result<ParsedState, StateError> {
    read(
        bytes,
        stack_name,
        KeySource::Regional(key_region),
        Mode::Lossy,
    )?
    .ok_or_else(|| unreachable_none(stack_name, key_region))
}

/// Reads the legacy record at `{prefix}/{stack_name}/state.json` for an
/// operation in `requested_region`. `Ok(None)` when the body names another
/// region: such a record belongs to that region, not this one. A body that
/// names no region (absent, or an empty value) is readable from any region
/// and is read as `requested_region`'s.
pub fn parse_legacy_state(
    bytes: &[u8],
    stack_name: &str,
    requested_region: &str,
) -> Result<Option<ParsedState>, StateError> {
    read(
        bytes,
        stack_name,
        KeySource::Legacy(requested_region),
        Mode::Strict,
    )
}

/// A region-scoped read never answers "another region's record"; this keeps
/// that impossible case an error rather than a panic.
fn unreachable_none(stack: &str, region: &str) -> StateError {
    StateError::Unreadable {
        stack: stack.into(),
        region: region.into(),
        detail: "no record was produced".into(),
    }
}

/// What a legacy record's body says about its region, for listing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LegacyRegion {
    /// No region (absent or empty): readable from any region.
    None,
    Region(String),
    /// Could not be read; `reason` names a kind, never body content.
    Unreadable {
        reason: String,
    },
}

/// Classifies a legacy record's region without reading the rest of it.
pub fn legacy_record_region(bytes: &[u8]) -> LegacyRegion {
    let root = match decode(bytes) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return LegacyRegion::Unreadable {
                reason: format!("it parses to {}", ValueKind::of(&other)),
            }
        }
        Err(_) => {
            return LegacyRegion::Unreadable {
                reason: "it is not valid JSON".into(),
            }
        }
    };
    match root.get("region") {
        None => LegacyRegion::None,
        Some(v) if !js_truthy(v) => LegacyRegion::None,
        Some(Value::String(s)) => LegacyRegion::Region(s.clone()),
        Some(v) => LegacyRegion::Unreadable {
            reason: format!("its 'region' field is {}, not a string", ValueKind::of(v)),
        },
    }
}

#[derive(Clone, Copy)]
enum KeySource<'a> {
    Regional(&'a str),
    Legacy(&'a str),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Strict,
    Lossy,
}

fn read(
    bytes: &[u8],
    stack: &str,
    source: KeySource<'_>,
    mode: Mode,
) -> Result<Option<ParsedState>, StateError> {
    let region = match source {
        KeySource::Regional(r) | KeySource::Legacy(r) => r,
    };
    let mut root = match decode(bytes) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Err(StateError::NotObject {
                stack: stack.into(),
                region: region.into(),
                kind: ValueKind::of(&other),
            })
        }
        Err(e) => {
            return Err(StateError::NotJson {
                stack: stack.into(),
                region: region.into(),
                detail: e.to_string(),
            })
        }
    };
    let source_version = read_version(&root, stack, region)?;

    let mut warnings = Vec::new();
    let body_region = match (source, root.get("region")) {
        (_, None) => BodyRegion::Absent,
        (_, Some(Value::String(s))) if s == region => BodyRegion::Matches,
        (KeySource::Legacy(_), Some(v)) if !js_truthy(v) => BodyRegion::Absent,
        // A legacy record naming another region is that region's record.
        (KeySource::Legacy(_), Some(_)) => return Ok(None),
        (KeySource::Regional(_), Some(v)) => {
            let kind = ValueKind::of(v);
            warnings.push(format!(
                "State record for stack {} was not written by cdkd: its body names a region ({kind}) that is not the region of its key ({}). Continuing against {}, the key's region; run with --verbose to see the recorded value.",
                quoted(stack),
                quoted(region),
                quoted(region),
            ));
            BodyRegion::Disagrees {
                kind,
                shown: display_value(v),
            }
        }
    };
    // The key is authoritative for both halves of the record's identity, and
    // every save stamps them from the key.
    root.insert("region".into(), Value::from(region));
    root.insert("stackName".into(), Value::from(stack));

    let mut defects = inspect(&mut root, stack, region, mode == Mode::Lossy);
    if mode == Mode::Strict && !defects.is_empty() {
        return Err(defects.swap_remove(0));
    }
    migrate(&mut root, source_version);
    let state: StackState =
        serde_json::from_value(Value::Object(root)).map_err(|e| StateError::Unreadable {
            stack: stack.into(),
            region: region.into(),
            detail: e.to_string(),
        })?;
    Ok(Some(ParsedState {
        state,
        source_version,
        body_region,
        warnings,
        defects,
        from_legacy_key: matches!(source, KeySource::Legacy(_)),
    }))
}

fn decode(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    serde_json::from_str(text)
}

/// JavaScript truthiness, for the legacy region gate.
fn js_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn read_version(root: &Map<String, Value>, stack: &str, region: &str) -> Result<u32, StateError> {
    let Some(raw) = root.get("version") else {
        // An unversioned body predates the version field: the legacy layout.
        return Ok(STATE_SCHEMA_VERSION_LEGACY);
    };
    if let Some(f) = raw.as_f64() {
        if f.fract() == 0.0 && (1.0..=f64::from(STATE_SCHEMA_VERSION)).contains(&f) {
            return Ok(f as u32);
        }
    }
    Err(StateError::UnsupportedVersion {
        stack: stack.into(),
        region: region.into(),
        shown: display_value(raw),
    })
}

/// Upgrades the body from `from` to the current version, one step at a time.
///
/// Every bump since v2 only ADDED optional fields, and the spec defines each
/// one's absence as the behaviour before it existed, so no step invents a
/// value: inventing one would change what the record means (most sharply
/// `exportNames`, where absent and `[]` mean different things).
fn migrate(root: &mut Map<String, Value>, from: u32) {
    for version in from..STATE_SCHEMA_VERSION {
        match version {
            // v1 -> v2: the region moved into the key. The region was taken
            // from the key (or, for the legacy key, the requested region)
            // before this runs; the next save writes the region-scoped key.
            1 => {}
            // v2 -> v3: observedProperties. Absent: no baseline; drift
            // compares against properties.
            2 => {}
            // v3 -> v4: imports. Absent: no consumer known, destroy proceeds.
            3 => {}
            // v4 -> v5: deletionPolicy / updateReplacePolicy. Absent: no
            // attribute recorded (not "Delete"), so nothing to retain on.
            4 => {}
            // v5 -> v6: parentStack / parentLogicalId / parentRegion. Absent:
            // a top-level stack.
            5 => {}
            // v6 -> v7: provisionedBy. Absent: not pinned (SDK legacy
            // default; routing decides afresh).
            6 => {}
            // v7 -> v8: outputReads. Absent: no Fn::GetStackOutput consumer
            // known.
            7 => {}
            // v8 -> v9: exportNames. Absent: the export set is NOT KNOWN and
            // every outputs key stays importable until the next deploy.
            8 => {}
            // v9 -> v10: observedBaselineRefused. Absent: not refused.
            9 => {}
            // v10 -> v11: noEchoLeaves / noEchoAttributeNames. Absent: not
            // known; only a deploy positions the masks.
            10 => {}
            _ => {}
        }
    }
    root.insert("version".into(), Value::from(STATE_SCHEMA_VERSION));
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
