//! The exports index body (`{prefix}/_index/{region}/exports.json`): reading it,
//! refusing a damaged one, and writing it the way `JSON.stringify(index, null, 2)`
//! lays it out.
//!
//! ```json
//! {
//!   "indexVersion": 1,
//!   "region": "us-east-1",
//!   "exports": {
//!     "BucketArn": {
//!       "value": "arn:aws:s3:::my-bucket",
//!       "producerStack": "Producer",
//!       "producerRegion": "us-east-1"
//!     }
//!   },
//!   "lastModified": 1234567890
//! }
//! ```
//!
//! `exports` maps an export name to the value the producer's `state.outputs`
//! holds under that name (any JSON value, verbatim) and the stack and region that
//! produced it. There is no per-entry timestamp; `lastModified` (Unix
//! milliseconds) is stamped on every write, and `region` is stamped from the
//! key. Unknown fields, at the top level and in an entry, are kept for the next
//! write.
//!
//! A body is usable when it is a JSON object with `indexVersion` 1 and an
//! `exports` map whose every entry is an object with a `value` and string
//! `producerStack` / `producerRegion`. Anything else is corrupt as a whole, and
//! the store rebuilds it from the state records: the index is derived, so
//! rebuilding is always safe, whereas keeping the readable half of a damaged
//! body would serve a partial view as if it were complete.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::state::json::to_js_pretty;
use crate::state::value::{quoted, ValueKind};

/// The only `indexVersion` this binary reads and writes.
pub const EXPORT_INDEX_VERSION: u64 = 1;

const F_INDEX_VERSION: &str = "indexVersion";
const F_REGION: &str = "region";
const F_EXPORTS: &str = "exports";
const F_LAST_MODIFIED: &str = "lastModified";
const F_VALUE: &str = "value";
const F_PRODUCER_STACK: &str = "producerStack";
const F_PRODUCER_REGION: &str = "producerRegion";

/// One export: its value and which stack, in which region, produced it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportEntry {
    /// The producer's `state.outputs` value under the export name, verbatim
    /// (a secret-bearing output is its `{{resolve:...}}` expression).
    pub value: Value,
    pub producer_stack: String,
    pub producer_region: String,
    /// Entry fields this binary does not know, kept for the next write.
    pub extra: Map<String, Value>,
}

impl ExportEntry {
    pub fn new(
        value: Value,
        producer_stack: impl Into<String>,
        producer_region: impl Into<String>,
    ) -> Self {
        ExportEntry {
            value,
            producer_stack: producer_stack.into(),
            producer_region: producer_region.into(),
            extra: Map::new(),
        }
    }

    /// Whether `stack` in `region` produced this entry.
    pub fn is_from(&self, stack: &str, region: &str) -> bool {
        self.producer_stack == stack && self.producer_region == region
    }

    fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert(F_VALUE.into(), self.value.clone());
        map.insert(F_PRODUCER_STACK.into(), self.producer_stack.clone().into());
        map.insert(
            F_PRODUCER_REGION.into(),
            self.producer_region.clone().into(),
        );
        for (k, v) in &self.extra {
            map.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Value::Object(map)
    }
}

/// One region's exports index.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExportIndex {
    /// Export name → entry.
    pub exports: IndexMap<String, ExportEntry>,
    /// `lastModified` as read (`None` for a new index or a non-integer value).
    pub last_modified: Option<u64>,
    /// Top-level fields this binary does not know, kept for the next write.
    pub extra: Map<String, Value>,
}

impl ExportIndex {
    /// Reads a stored body. `Err` carries why it is corrupt, naming kinds and
    /// export names (sanitized), never a value.
    pub fn parse(bytes: &[u8]) -> Result<ExportIndex, String> {
        let text = String::from_utf8_lossy(bytes);
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let mut root = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                return Err(format!(
                    "it parses to {}, not an object",
                    ValueKind::of(&other)
                ))
            }
            Err(_) => return Err("it is not valid JSON".into()),
        };
        match root.shift_remove(F_INDEX_VERSION) {
            Some(v) if v.as_f64() == Some(EXPORT_INDEX_VERSION as f64) => {}
            Some(v) => {
                return Err(format!(
                    "its '{F_INDEX_VERSION}' is {}, not {EXPORT_INDEX_VERSION}",
                    describe_version(&v)
                ))
            }
            None => return Err(format!("it has no '{F_INDEX_VERSION}'")),
        }
        let raw_exports = match root.shift_remove(F_EXPORTS) {
            Some(Value::Object(map)) => map,
            Some(other) => {
                return Err(format!(
                    "its '{F_EXPORTS}' is {}, not a map",
                    ValueKind::of(&other)
                ))
            }
            None => return Err(format!("it has no '{F_EXPORTS}' map")),
        };
        let mut exports = IndexMap::with_capacity(raw_exports.len());
        for (name, raw) in raw_exports {
            let entry = parse_entry(raw).map_err(|why| format!("entry {} {why}", quoted(&name)))?;
            exports.insert(name, entry);
        }
        root.shift_remove(F_REGION);
        let last_modified = root.shift_remove(F_LAST_MODIFIED).and_then(|v| v.as_u64());
        Ok(ExportIndex {
            exports,
            last_modified,
            extra: root,
        })
    }

    /// The body for the key of `region`, stamped with `now_ms`.
    pub fn to_json_bytes(&self, region: &str, now_ms: u64) -> Vec<u8> {
        let mut root = Map::new();
        root.insert(F_INDEX_VERSION.into(), EXPORT_INDEX_VERSION.into());
        root.insert(F_REGION.into(), region.into());
        let exports: Map<String, Value> = self
            .exports
            .iter()
            .map(|(name, entry)| (name.clone(), entry.to_value()))
            .collect();
        root.insert(F_EXPORTS.into(), Value::Object(exports));
        root.insert(F_LAST_MODIFIED.into(), now_ms.into());
        for (k, v) in &self.extra {
            root.entry(k.clone()).or_insert_with(|| v.clone());
        }
        to_js_pretty(&Value::Object(root)).into_bytes()
    }

    pub fn get(&self, export_name: &str) -> Option<&ExportEntry> {
        self.exports.get(export_name)
    }

    /// The export names `stack` in `region` produces here.
    pub fn names_from<'a>(
        &'a self,
        stack: &'a str,
        region: &'a str,
    ) -> impl Iterator<Item = &'a str> + 'a {
        self.exports
            .iter()
            .filter(move |(_, e)| e.is_from(stack, region))
            .map(|(n, _)| n.as_str())
    }

    /// Makes `stack`'s entries exactly `exports` (name → value): its other
    /// entries are dropped, an entry it keeps keeps its position. A name another
    /// producer holds is taken over (latest writer wins), and each takeover is
    /// returned as a warning naming both stacks.
    pub(crate) fn replace_stack(
        &mut self,
        stack: &str,
        region: &str,
        exports: &[(String, Value)],
    ) -> Vec<String> {
        self.exports.retain(|name, entry| {
            !entry.is_from(stack, region) || exports.iter().any(|(n, _)| n == name)
        });
        exports
            .iter()
            .filter_map(|(name, value)| {
                self.put(name, ExportEntry::new(value.clone(), stack, region))
            })
            .collect()
    }

    /// Drops every entry `stack` in `region` produced.
    pub(crate) fn remove_stack(&mut self, stack: &str, region: &str) {
        self.exports
            .retain(|_, entry| !entry.is_from(stack, region));
    }

    /// Sets one entry, keeping its unknown fields when the same producer
    /// rewrites it. Returns the takeover warning when another producer held it.
    pub(crate) fn put(&mut self, name: &str, mut entry: ExportEntry) -> Option<String> {
        match self.exports.get_mut(name) {
            Some(old) if old.is_from(&entry.producer_stack, &entry.producer_region) => {
                entry.extra = std::mem::take(&mut old.extra);
                *old = entry;
                None
            }
            Some(old) => {
                let warning = takeover_warning(name, old, &entry);
                *old = entry;
                Some(warning)
            }
            None => {
                self.exports.insert(name.to_string(), entry);
                None
            }
        }
    }
}

/// The warning for two producers of one export name.
pub(crate) fn takeover_warning(name: &str, earlier: &ExportEntry, later: &ExportEntry) -> String {
    format!(
        "Export {} is produced by two stacks: {} ({}) and {} ({}). The exports index keeps the latest writer, {}; CloudFormation would refuse the second producer, so rename one of the exports.",
        quoted(name),
        quoted(&earlier.producer_stack),
        quoted(&earlier.producer_region),
        quoted(&later.producer_stack),
        quoted(&later.producer_region),
        quoted(&later.producer_stack),
    )
}

fn parse_entry(raw: Value) -> Result<ExportEntry, String> {
    let mut map = match raw {
        Value::Object(map) => map,
        other => return Err(format!("is {}, not an object", ValueKind::of(&other))),
    };
    let value = map
        .shift_remove(F_VALUE)
        .ok_or_else(|| format!("has no '{F_VALUE}'"))?;
    let mut string = |field: &str| match map.shift_remove(field) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!(
            "has a '{field}' that is {}, not a string",
            ValueKind::of(&other)
        )),
        None => Err(format!("has no '{field}'")),
    };
    let producer_stack = string(F_PRODUCER_STACK)?;
    let producer_region = string(F_PRODUCER_REGION)?;
    Ok(ExportEntry {
        value,
        producer_stack,
        producer_region,
        extra: map,
    })
}

fn describe_version(v: &Value) -> String {
    match v {
        Value::Number(n) => n.to_string(),
        other => ValueKind::of(other).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn round_trips_the_documented_shape_and_keeps_unknown_fields() {
        let stored = json!({
            "indexVersion": 1,
            "region": "us-east-1",
            "exports": {
                "BucketArn": {
                    "value": "arn:aws:s3:::my-bucket",
                    "producerStack": "Producer",
                    "producerRegion": "us-east-1",
                    "note": "kept"
                },
                "List": {"value": ["a", 1], "producerStack": "P2", "producerRegion": "us-east-1"}
            },
            "lastModified": 1234567890,
            "future": true
        });
        let index = ExportIndex::parse(&body(stored)).unwrap();
        assert_eq!(index.last_modified, Some(1234567890));
        let e = index.get("BucketArn").unwrap();
        assert!(e.is_from("Producer", "us-east-1"));
        assert_eq!(e.value, json!("arn:aws:s3:::my-bucket"));
        let text = String::from_utf8(index.to_json_bytes("us-east-1", 42)).unwrap();
        assert!(text.starts_with("{\n  \"indexVersion\": 1,\n  \"region\": \"us-east-1\",\n  \"exports\": {\n    \"BucketArn\": {\n      \"value\": \"arn:aws:s3:::my-bucket\",\n      \"producerStack\": \"Producer\",\n      \"producerRegion\": \"us-east-1\",\n      \"note\": \"kept\"\n    },"));
        assert!(text.ends_with("\"lastModified\": 42,\n  \"future\": true\n}"));
        assert_eq!(
            ExportIndex::parse(text.as_bytes()).unwrap().exports,
            index.exports
        );
    }

    #[test]
    fn damaged_bodies_are_corrupt_and_say_why_without_values() {
        let entry = |e: Value| json!({"indexVersion": 1, "exports": {"X": e}});
        let cases = [
            (b"not json".to_vec(), "not valid JSON"),
            (body(json!([1])), "an array, not an object"),
            (body(json!({"exports": {}})), "no 'indexVersion'"),
            (
                body(json!({"indexVersion": 2, "exports": {}})),
                "is 2, not 1",
            ),
            (
                body(json!({"indexVersion": "1", "exports": {}})),
                "a string",
            ),
            (body(json!({"indexVersion": 1})), "no 'exports'"),
            (
                body(json!({"indexVersion": 1, "exports": "abc"})),
                "a string, not a map",
            ),
            (body(entry(json!("secret"))), "entry 'X' is a string"),
            (
                body(entry(json!({"producerStack": "P", "producerRegion": "r"}))),
                "no 'value'",
            ),
            (
                body(entry(
                    json!({"value": 1, "producerStack": 5, "producerRegion": "r"}),
                )),
                "'producerStack' that is a number",
            ),
            (
                body(entry(json!({"value": 1, "producerStack": "P"}))),
                "no 'producerRegion'",
            ),
        ];
        for (bytes, why) in cases {
            let err = ExportIndex::parse(&bytes).unwrap_err();
            assert!(err.contains(why), "{err} should mention {why}");
            assert!(!err.contains("secret"));
        }
        // A UTF-8 byte-order mark is skipped, as for state records.
        let mut bom = "\u{feff}".as_bytes().to_vec();
        bom.extend(body(json!({"indexVersion": 1, "exports": {}})));
        assert!(ExportIndex::parse(&bom).is_ok());
    }

    #[test]
    fn replacing_a_stack_keeps_others_and_warns_on_takeover() {
        let mut index = ExportIndex::default();
        assert!(index
            .put("A", ExportEntry::new(json!(1), "S1", "r"))
            .is_none());
        assert!(index
            .put("B", ExportEntry::new(json!(2), "S1", "r"))
            .is_none());
        assert!(index
            .put("C", ExportEntry::new(json!(3), "S2", "r"))
            .is_none());
        let warnings = index.replace_stack(
            "S1",
            "r",
            &[("B".into(), json!(20)), ("C".into(), json!(30))],
        );
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("'S2'") && warnings[0].contains("'S1'"));
        assert!(index.get("A").is_none());
        assert_eq!(index.get("B").unwrap().value, json!(20));
        assert!(index.get("C").unwrap().is_from("S1", "r"));
        // Same name, same stack, other region: a different producer.
        assert!(index
            .put("B", ExportEntry::new(json!(0), "S1", "r2"))
            .is_some());
        index.remove_stack("S1", "r");
        assert_eq!(index.exports.keys().collect::<Vec<_>>(), vec!["B"]);
        assert_eq!(index.names_from("S1", "r2").collect::<Vec<_>>(), vec!["B"]);
    }
}
