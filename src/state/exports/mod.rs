//! The exports index: a per-region view, derived from the state records, of
//! which stack publishes which `Fn::ImportValue` export name, so a lookup costs
//! one GET of `{prefix}/_index/{region}/exports.json` instead of a scan of every
//! record in the bucket.
//!
//! The index is a performance hint, never the authority: `state.json` is. So
//! nothing here ever fails a command. A write that loses every optimistic-lock
//! race, or that S3 refuses, is a warning, and the index catches up on the next
//! write or the next rebuild. A missing or corrupt index is rebuilt from the
//! records (the only rebuild triggers; there is no periodic one).
//!
//! - [`importable_output_keys`]: which `outputs` keys a record publishes
//!   (schema v9's `exportNames` rule).
//! - [`ExportIndex`] / [`ExportEntry`]: the body and its JSON shape.
//! - [`ExportIndexStore`]: lookups, per-stack updates and removals under
//!   If-Match / If-None-Match with bounded retries, and the rebuild.

mod index;
mod rebuild;
mod store;

pub use index::{ExportEntry, ExportIndex, EXPORT_INDEX_VERSION};
pub use store::{
    ExportIndexStore, IndexPeek, IndexWriteReport, IndexWriteStatus, DEFAULT_RETRY_BASE_DELAY,
    MAX_WRITE_RETRIES,
};

use serde_json::Value;

use super::record::StackState;
use super::value::{quoted, Lenient, ValueKind};

/// The `outputs` keys an `Fn::ImportValue` may bind to, in the bag's order.
///
/// - `exportNames` absent (a pre-v9 record): every output key.
/// - `exportNames: []`: none.
/// - `exportNames` not a list (a string, number, object, `null`): none — an
///   unreadable set is never read as an unknown one, which would republish
///   every plain output name.
/// - Elements that are not strings are dropped (never coerced to a key); names
///   the bag does not hold are skipped.
/// - No `outputs` at all: none.
pub fn importable_output_keys(state: &StackState) -> Vec<&str> {
    state.importable_output_keys()
}

/// The `(export name, value)` pairs `state` publishes, and, when its export set
/// cannot be read, why (for a warning: contributing nothing must not be silent).
pub(crate) fn published_exports(state: &StackState) -> (Vec<(String, Value)>, Option<String>) {
    let problem = match &state.export_names {
        Some(Lenient::Malformed(raw)) => Some(format!(
            "its 'exportNames' is {}, not a list",
            ValueKind::of(raw)
        )),
        Some(Lenient::Valid(items)) if !items.is_empty() && !items.iter().any(Value::is_string) => {
            Some("its 'exportNames' holds no string names".to_string())
        }
        _ => None,
    };
    let Some(outputs) = &state.outputs else {
        return (Vec::new(), problem);
    };
    let exports = importable_output_keys(state)
        .into_iter()
        .filter_map(|k| outputs.get(k).map(|v| (k.to_string(), v.clone())))
        .collect();
    (exports, problem)
}

/// The warning for a record whose export set is unreadable.
pub(crate) fn unreadable_export_set_warning(stack: &str, region: &str, why: &str) -> String {
    format!(
        "Stack {} ({}) publishes no exports: {why}, which reads as an empty export set. Redeploy the stack to rewrite it.",
        quoted(stack),
        quoted(region),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    fn record(outputs: Option<Value>, export_names: Option<Value>) -> StackState {
        let mut body = json!({
            "version": 11, "stackName": "S", "region": "us-east-1", "resources": {}
        });
        if let Some(o) = outputs {
            body["outputs"] = o;
        }
        if let Some(e) = export_names {
            body["exportNames"] = e;
        }
        crate::state::parse_state(&serde_json::to_vec(&body).unwrap(), "S", "us-east-1")
            .unwrap()
            .state
    }

    fn bag() -> Option<Value> {
        Some(json!({"VpcId": "vpc-1", "Shared": "s", "0": "zero"}))
    }

    #[test]
    fn absent_export_names_publish_every_output_key() {
        let s = record(bag(), None);
        let mut keys = importable_output_keys(&s);
        keys.sort();
        assert_eq!(keys, vec!["0", "Shared", "VpcId"]);
        assert_eq!(published_exports(&s).1, None);
    }

    #[test]
    fn an_empty_list_publishes_nothing_silently() {
        let s = record(bag(), Some(json!([])));
        assert!(importable_output_keys(&s).is_empty());
        assert_eq!(published_exports(&s), (vec![], None));
    }

    #[test]
    fn a_non_list_publishes_nothing_and_says_so() {
        for (raw, kind) in [
            (json!("Shared"), "a string"),
            (json!(7), "a number"),
            (json!({"Shared": true}), "an object"),
            (json!(null), "null"),
            (json!(true), "a boolean"),
        ] {
            let s = record(bag(), Some(raw));
            assert!(importable_output_keys(&s).is_empty(), "{kind}");
            let (exports, problem) = published_exports(&s);
            assert!(exports.is_empty());
            assert_eq!(
                problem.as_deref(),
                Some(format!("its 'exportNames' is {kind}, not a list").as_str())
            );
        }
    }

    #[test]
    fn non_string_elements_are_dropped_never_coerced() {
        // [0] against a bag holding "0" must not publish "0".
        let s = record(bag(), Some(json!([0])));
        assert!(importable_output_keys(&s).is_empty());
        assert!(published_exports(&s).1.is_some());
        let s = record(bag(), Some(json!([0, "Shared", null, "Missing"])));
        assert_eq!(importable_output_keys(&s), vec!["Shared"]);
        assert_eq!(
            published_exports(&s),
            (vec![("Shared".to_string(), json!("s"))], None)
        );
    }

    #[test]
    fn no_outputs_publishes_nothing() {
        let s = record(None, None);
        assert!(importable_output_keys(&s).is_empty());
        let s = record(Some(Value::Object(Map::new())), Some(json!(["X"])));
        assert!(importable_output_keys(&s).is_empty());
    }
}
