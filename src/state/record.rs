//! The stack record (`state.json`, `StackState`) and the lock body
//! (`lock.json`, `LockInfo`), with the JSON field names the TypeScript cdkd
//! uses, and the writer that produces the exact text it writes.
//!
//! Reading goes through [`super::parse_state`], which checks the shapes the
//! spec refuses before anything here is deserialized.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::json::{to_js_compact, to_js_pretty};
use super::resource::ResourceState;
use super::value::Lenient;

/// The schema version every write stamps.
pub const STATE_SCHEMA_VERSION: u32 = 11;

/// The legacy, region-less layout (`{prefix}/{stack}/state.json`).
pub const STATE_SCHEMA_VERSION_LEGACY: u32 = 1;

/// One stack's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StackState {
    /// After a read, always [`STATE_SCHEMA_VERSION`] (the record is upgraded
    /// in memory); [`super::ParsedState::source_version`] keeps what the file
    /// said. Every write stamps the current version.
    pub version: u32,
    pub stack_name: String,
    /// After a read, always the region of the key it was read from.
    pub region: String,
    /// Logical id → resource record.
    pub resources: IndexMap<String, ResourceState>,
    /// Output name (and export alias) → resolved value, of any JSON type.
    /// Absent is an ordinary record and is written back absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Map<String, Value>>,
    /// v4+: `Fn::ImportValue` references (strong: they block the producer's
    /// destroy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imports: Option<Vec<StateImportEntry>>,
    /// v8+: `Fn::GetStackOutput` references (informational). A malformed list
    /// reads as its well-formed entries.
    #[serde(
        default,
        deserialize_with = "super::value::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_reads: Option<Lenient<Vec<StateOutputReadEntry>>>,
    /// v9+: which `outputs` keys are export aliases. Absent = not known (every
    /// key importable); `[]` = exports nothing; malformed = exports nothing.
    #[serde(
        default,
        deserialize_with = "super::value::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub export_names: Option<Lenient<Vec<Value>>>,
    /// Outputs the last deploy skipped → digest of their template inputs (no
    /// bump). Malformed reads as no record.
    #[serde(
        default,
        deserialize_with = "super::value::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub skipped_outputs: Option<Lenient<IndexMap<String, String>>>,
    /// Resources a rollback retained and moved out of `resources` (no bump).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orphans: Option<Vec<StackOrphanRecord>>,
    /// Deployed verdicts of secret-fed conditions (no bump). Malformed reads
    /// as no record.
    #[serde(
        default,
        deserialize_with = "super::value::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub condition_verdicts: Option<Lenient<IndexMap<String, ConditionVerdict>>>,
    /// v6+: set on a nested child's record only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_stack: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_logical_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_region: Option<String>,
    /// Unix milliseconds of the last write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<u64>,
    /// Fields this binary does not know, kept for the next write.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl StackState {
    /// An empty record for a stack that has none yet.
    pub fn new(stack_name: impl Into<String>, region: impl Into<String>) -> Self {
        StackState {
            version: STATE_SCHEMA_VERSION,
            stack_name: stack_name.into(),
            region: region.into(),
            resources: IndexMap::new(),
            outputs: None,
            imports: None,
            output_reads: None,
            export_names: None,
            skipped_outputs: None,
            orphans: None,
            condition_verdicts: None,
            parent_stack: None,
            parent_logical_id: None,
            parent_region: None,
            last_modified: None,
            extra: Map::new(),
        }
    }

    /// Whether this is a nested-stack child's record.
    pub fn is_nested_child(&self) -> bool {
        self.parent_stack.is_some()
    }

    /// The recorded export set: `None` when not known (absent: a pre-v9
    /// record), otherwise the string elements. A value that is not a list
    /// reads as an empty set, never as an unknown one, and non-string elements
    /// are dropped.
    pub fn export_names(&self) -> Option<Vec<&str>> {
        let field = self.export_names.as_ref()?;
        Some(match field {
            Lenient::Valid(items) => items.iter().filter_map(Value::as_str).collect(),
            Lenient::Malformed(_) => Vec::new(),
        })
    }

    /// Sets the export set the deploy resolved (`[]` included).
    pub fn set_export_names(&mut self, names: impl IntoIterator<Item = String>) {
        self.export_names = Some(Lenient::Valid(
            names.into_iter().map(Value::String).collect(),
        ));
    }

    /// Whether an export set can be read off this record: outputs present, and
    /// `exportNames` absent, empty, or holding at least one string.
    pub fn has_readable_export_set(&self) -> bool {
        if self.outputs.is_none() {
            return false;
        }
        match &self.export_names {
            None => true,
            Some(Lenient::Valid(items)) => items.is_empty() || items.iter().any(Value::is_string),
            Some(Lenient::Malformed(_)) => false,
        }
    }

    /// The `outputs` keys an `Fn::ImportValue` may bind to: every key when the
    /// export set is not known, otherwise the recorded names the bag holds.
    pub fn importable_output_keys(&self) -> Vec<&str> {
        if !self.has_readable_export_set() {
            return Vec::new();
        }
        let Some(outputs) = &self.outputs else {
            return Vec::new();
        };
        match self.export_names() {
            None => outputs.keys().map(String::as_str).collect(),
            Some(names) => names
                .into_iter()
                .filter(|n| outputs.contains_key(*n))
                .collect(),
        }
    }

    /// The well-formed `outputReads` entries (a damaged entry is skipped).
    pub fn output_read_entries(&self) -> Vec<StateOutputReadEntry> {
        match &self.output_reads {
            None => Vec::new(),
            Some(Lenient::Valid(entries)) => entries.clone(),
            Some(Lenient::Malformed(Value::Array(items))) => items
                .iter()
                .filter_map(|v| StateOutputReadEntry::deserialize(v).ok())
                .collect(),
            Some(Lenient::Malformed(_)) => Vec::new(),
        }
    }

    /// The skipped-output record, or `None` when absent or malformed.
    pub fn skipped_outputs(&self) -> Option<&IndexMap<String, String>> {
        self.skipped_outputs.as_ref().and_then(Lenient::valid)
    }

    /// The condition-verdict record, or `None` when absent or malformed.
    pub fn condition_verdicts(&self) -> Option<&IndexMap<String, ConditionVerdict>> {
        self.condition_verdicts.as_ref().and_then(Lenient::valid)
    }
}

/// One `Fn::ImportValue` the stack resolved from another cdkd stack (v4+).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateImportEntry {
    pub source_stack: String,
    pub source_region: String,
    pub export_name: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One `Fn::GetStackOutput` the stack resolved from a cdkd record (v8+).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateOutputReadEntry {
    pub source_stack: String,
    pub source_region: String,
    pub output_name: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A resource a rollback left in AWS under `Retain` and moved out of
/// `resources`, so a later deploy can re-adopt it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StackOrphanRecord {
    pub logical_id: String,
    /// When the rollback dropped it (Unix milliseconds).
    #[serde(
        default,
        deserialize_with = "super::value::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub orphaned_at: Option<Lenient<u64>>,
    /// The resource record the rollback discarded, verbatim.
    pub state: ResourceState,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The deployed verdict of one secret-fed condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConditionVerdict {
    pub verdict: bool,
    pub fingerprint: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `state.json` text for `state`: version stamped to [`STATE_SCHEMA_VERSION`],
/// laid out as `JSON.stringify(state, null, 2)` lays it out.
pub fn serialize_state(state: &StackState) -> Vec<u8> {
    let mut value = state_value(state);
    if let Value::Object(map) = &mut value {
        map.insert("version".into(), Value::from(STATE_SCHEMA_VERSION));
    }
    to_js_pretty(&value).into_bytes()
}

/// Like [`serialize_state`], also stamping the stack name and region of the
/// key the body is written to (what every save does).
pub fn serialize_state_for(state: &StackState, stack_name: &str, region: &str) -> Vec<u8> {
    let mut value = state_value(state);
    if let Value::Object(map) = &mut value {
        map.insert("version".into(), Value::from(STATE_SCHEMA_VERSION));
        map.insert("stackName".into(), Value::from(stack_name));
        map.insert("region".into(), Value::from(region));
    }
    to_js_pretty(&value).into_bytes()
}

fn state_value(state: &StackState) -> Value {
    // Every map key is a string and every number an integer, so this cannot
    // fail.
    serde_json::to_value(state).expect("a StackState always converts to JSON")
}

/// The lock body (`lock.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockInfo {
    /// Who holds it, e.g. `user@host:12345`.
    pub owner: String,
    /// When it was acquired (Unix milliseconds).
    pub timestamp: u64,
    /// The deadline by which the holder must renew (Unix milliseconds).
    /// `None` when the stored value is not a finite number: such a lock
    /// counts as expired.
    pub expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl LockInfo {
    pub fn new(owner: impl Into<String>, timestamp: u64, expires_at: u64) -> Self {
        LockInfo {
            owner: owner.into(),
            timestamp,
            expires_at: Some(expires_at),
            operation: None,
            extra: Map::new(),
        }
    }

    /// Reads a lock body. `None` when it is not a JSON object, which reads as
    /// "no lock". Fields of the wrong type are read forgivingly: an owner that
    /// is not a string reads as empty, and an `expiresAt` that is not a finite
    /// number makes the lock expired.
    pub fn parse(bytes: &[u8]) -> Option<LockInfo> {
        let text = String::from_utf8_lossy(bytes);
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(text) else {
            return None;
        };
        let owner = match map.shift_remove("owner") {
            Some(Value::String(s)) => s,
            _ => String::new(),
        };
        let millis = |v: Option<Value>| -> Option<u64> {
            let f = v?.as_f64()?;
            f.is_finite().then_some(if f <= 0.0 { 0 } else { f as u64 })
        };
        let timestamp = millis(map.shift_remove("timestamp")).unwrap_or(0);
        let expires_at = millis(map.shift_remove("expiresAt"));
        let operation = match map.shift_remove("operation") {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        Some(LockInfo {
            owner,
            timestamp,
            expires_at,
            operation,
            extra: map,
        })
    }

    /// Expired once `now_ms` reaches `expiresAt`, or when that field is not a
    /// finite number.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at.is_none_or(|deadline| now_ms >= deadline)
    }

    /// The body as `JSON.stringify(lockInfo)` writes it (compact).
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let value = serde_json::to_value(self).expect("a LockInfo always converts to JSON");
        to_js_compact(&value).into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_new_record_serializes_like_the_typescript_writer() {
        let mut state = StackState::new("S", "us-east-1");
        state.resources.insert(
            "B".into(),
            ResourceState::new("b-1", "AWS::S3::Bucket", Map::new()),
        );
        state.outputs = Some(Map::new());
        state.set_export_names([]);
        state.last_modified = Some(1_710_835_200_000);
        let text = String::from_utf8(serialize_state(&state)).unwrap();
        assert_eq!(
            text,
            "{\n  \"version\": 11,\n  \"stackName\": \"S\",\n  \"region\": \"us-east-1\",\n  \"resources\": {\n    \"B\": {\n      \"physicalId\": \"b-1\",\n      \"resourceType\": \"AWS::S3::Bucket\",\n      \"properties\": {}\n    }\n  },\n  \"outputs\": {},\n  \"exportNames\": [],\n  \"lastModified\": 1710835200000\n}"
        );
    }

    #[test]
    fn serialize_for_stamps_the_keys_identity() {
        let mut state = StackState::new("Old", "eu-west-1");
        state.version = 3;
        let v: Value =
            serde_json::from_slice(&serialize_state_for(&state, "New", "us-east-1")).unwrap();
        assert_eq!(v["version"], 11);
        assert_eq!(v["stackName"], "New");
        assert_eq!(v["region"], "us-east-1");
    }

    #[test]
    fn export_set_rules() {
        let mut state = StackState::new("S", "r");
        state.outputs = Some(
            json!({"VpcId": "v", "Shared": "s", "0": "z"})
                .as_object()
                .unwrap()
                .clone(),
        );
        // Absent: every key.
        assert_eq!(state.importable_output_keys().len(), 3);
        // Known: only the named keys the bag holds.
        state.export_names = Some(Lenient::Valid(vec![json!("Shared"), json!("Gone")]));
        assert_eq!(state.importable_output_keys(), vec!["Shared"]);
        // Non-string elements are dropped, never coerced.
        state.export_names = Some(Lenient::Valid(vec![json!(0), json!("Shared")]));
        assert_eq!(state.importable_output_keys(), vec!["Shared"]);
        state.export_names = Some(Lenient::Valid(vec![json!(0)]));
        assert!(!state.has_readable_export_set());
        assert!(state.importable_output_keys().is_empty());
        // Not a list: exports nothing (never "unknown").
        state.export_names = Some(Lenient::Malformed(json!("Shared")));
        assert_eq!(state.export_names(), Some(vec![]));
        assert!(state.importable_output_keys().is_empty());
        // Empty: exports nothing, readable.
        state.export_names = Some(Lenient::Valid(vec![]));
        assert!(state.has_readable_export_set());
        assert!(state.importable_output_keys().is_empty());
    }

    #[test]
    fn lock_bodies() {
        let mut lock = LockInfo::new("goto@macbook:12345", 1_710_835_200_000, 1_710_837_000_000);
        lock.operation = Some("deploy".into());
        assert_eq!(
            String::from_utf8(lock.to_json_bytes()).unwrap(),
            r#"{"owner":"goto@macbook:12345","timestamp":1710835200000,"expiresAt":1710837000000,"operation":"deploy"}"#
        );
        assert_eq!(LockInfo::parse(&lock.to_json_bytes()), Some(lock.clone()));
        assert!(!lock.is_expired(1_710_836_000_000));
        assert!(lock.is_expired(1_710_837_000_000));
        let odd = LockInfo::parse(br#"{"owner":5,"timestamp":1,"expiresAt":"never"}"#).unwrap();
        assert!(odd.is_expired(0));
        assert_eq!(odd.owner, "");
        assert_eq!(LockInfo::parse(b"[1]"), None);
        assert_eq!(LockInfo::parse(b"\xff\x00garbage"), None);
    }
}
