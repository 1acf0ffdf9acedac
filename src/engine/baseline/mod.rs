//! Observed baselines (`observedProperties`): what AWS reported for a resource right after
//! cdkd last wrote it, the baseline `cdkd drift` compares against (state-schema, "version: 3
//! adds observedProperties" and "version: 10 adds observedBaselineRefused").
//!
//! One place decides, for every writer (import, deploy, `state refresh-observed`, `drift
//! --accept`), whether a readback may be recorded and in what form:
//! - [`refusal`]: the import's two refusal classes (a property that did not resolve; a
//!   template parameter bound from its Default, which nothing proves equal to the deployed
//!   value);
//! - [`record`]: writes the readback into a record, or the refusal marker instead;
//! - [`redact`]: keeps secrets out of a readback, by value (the run's needles) and by
//!   position (where the record itself holds `***` or a `{{resolve:...}}` expression, the
//!   readback holds the value behind it, so the record's spelling is stored there).

pub mod compare;

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::redact::{Needles, MASK};
use crate::resolve::{intrinsic, ParameterOverride};
use crate::state::{BaselineRefusalReason, ResourceState};
use crate::template::Template;

/// Template parameters bound from their Default: no override names them for this stack.
pub fn parameters_bound_from_default(
    template: &Template,
    overrides: &[ParameterOverride],
    stack: &str,
) -> HashSet<String> {
    template
        .parameters
        .keys()
        .filter(|name| {
            !overrides
                .iter()
                .any(|o| o.key == **name && o.stack.as_deref().is_none_or(|s| s == stack))
        })
        .cloned()
        .collect()
}

/// Whether `properties` read any of `params` through `Ref` or an `Fn::Sub` placeholder.
pub fn reads_any(properties: &Map<String, Value>, params: &HashSet<String>) -> bool {
    fn walk(v: &Value, params: &HashSet<String>) -> bool {
        match intrinsic(v) {
            Some(("Ref", Value::String(name))) => params.contains(name),
            Some(("Fn::Sub", arg)) => {
                let text = match arg {
                    Value::String(s) => Some(s.as_str()),
                    Value::Array(items) => items.first().and_then(Value::as_str),
                    _ => None,
                };
                let in_text =
                    text.is_some_and(|t| params.iter().any(|p| t.contains(&format!("${{{p}}}"))));
                in_text
                    || match arg {
                        Value::Array(items) => items.iter().skip(1).any(|x| walk(x, params)),
                        _ => false,
                    }
            }
            Some((_, arg)) => walk(arg, params),
            None => match v {
                Value::Array(items) => items.iter().any(|x| walk(x, params)),
                Value::Object(m) => m.values().any(|x| walk(x, params)),
                _ => false,
            },
        }
    }
    properties.values().any(|v| walk(v, params))
}

/// Why an import declines to record a baseline for a resource, if it does: some properties
/// did not resolve (`unknown`), or its template properties read a parameter bound from its
/// Default.
pub fn refusal(
    unknown: &[String],
    template_properties: &Map<String, Value>,
    default_bound: &HashSet<String>,
) -> Option<BaselineRefusalReason> {
    if !unknown.is_empty() {
        Some(BaselineRefusalReason::IncompleteResolution)
    } else if reads_any(template_properties, default_bound) {
        Some(BaselineRefusalReason::UnverifiableParameter)
    } else {
        None
    }
}

/// Records the refusal marker (and drops any baseline), or the redacted readback `observed`
/// as the record's baseline.
pub fn record(
    rec: &mut ResourceState,
    refusal: Option<BaselineRefusalReason>,
    observed: Map<String, Value>,
    needles: &Needles,
) {
    match refusal {
        Some(reason) => {
            rec.observed_baseline_refused = Some(true);
            rec.observed_baseline_refusal_reason = Some(reason);
            rec.observed_properties = None;
        }
        None => rec.observed_properties = Some(redact(&rec.properties, observed, needles)),
    }
}

/// `observed` as it may be stored beside `properties`: every plaintext `needles` knows
/// replaced, and at every position where `properties` holds `***` or a `{{resolve:...}}`
/// reference, the record's spelling instead of whatever AWS reported there.
pub fn redact(
    properties: &Map<String, Value>,
    observed: Map<String, Value>,
    needles: &Needles,
) -> Map<String, Value> {
    let mut out = Value::Object(observed);
    by_position(&Value::Object(properties.clone()), &mut out);
    needles.redact_in_place(&mut out);
    match out {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Whether a recorded value stands for a secret (a mask, or a dynamic reference whose
/// resolved value AWS holds).
pub fn is_secret_spelling(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s == MASK || s.contains("{{resolve:"))
}

fn by_position(recorded: &Value, observed: &mut Value) {
    if is_secret_spelling(recorded) {
        *observed = recorded.clone();
        return;
    }
    match (recorded, observed) {
        (Value::Object(r), Value::Object(o)) => {
            for (k, rv) in r {
                if let Some(ov) = o.get_mut(k) {
                    by_position(rv, ov);
                }
            }
        }
        (Value::Array(r), Value::Array(o)) => {
            for (rv, ov) in r.iter().zip(o.iter_mut()) {
                by_position(rv, ov);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_readback_keeps_the_records_spelling_at_secret_positions() {
        let properties = map(json!({
            "Password": "{{resolve:secretsmanager:db:SecretString:pw}}",
            "Env": {"Token": "***", "Plain": "x"},
            "List": ["***", "y"]
        }));
        let observed = map(json!({
            "Password": "hunter22",
            "Env": {"Token": "t0ken-value", "Plain": "x", "Extra": "z"},
            "List": ["s3cret", "y"],
            "Other": 1
        }));
        let got = redact(&properties, observed, &Needles::default());
        assert_eq!(
            Value::Object(got),
            json!({
                "Password": "{{resolve:secretsmanager:db:SecretString:pw}}",
                "Env": {"Token": "***", "Plain": "x", "Extra": "z"},
                "List": ["***", "y"],
                "Other": 1
            })
        );
    }

    #[test]
    fn a_readback_loses_every_plaintext_the_needles_know() {
        let mut needles = Needles::default();
        needles.add_secret("correct-horse", Some("{{resolve:ssm-secure:p}}"));
        let got = redact(
            &Map::new(),
            map(json!({"Copied": "correct-horse", "Url": "x://correct-horse@h"})),
            &needles,
        );
        let text = serde_json::to_string(&got).unwrap_or_default();
        assert!(!text.contains("correct-horse"), "{text}");
    }

    #[test]
    fn a_refusal_drops_the_baseline_and_names_its_reason() {
        let mut rec = ResourceState::new("p", "AWS::SQS::Queue", Map::new());
        rec.observed_properties = Some(Map::new());
        record(
            &mut rec,
            Some(BaselineRefusalReason::IncompleteResolution),
            map(json!({"A": 1})),
            &Needles::default(),
        );
        assert!(rec.baseline_refused());
        assert_eq!(rec.observed_properties, None);
        let params: HashSet<String> = ["P".to_string()].into();
        assert_eq!(
            refusal(&[], &map(json!({"X": {"Fn::Sub": "a-${P}"}})), &params),
            Some(BaselineRefusalReason::UnverifiableParameter)
        );
        assert_eq!(refusal(&[], &map(json!({"X": "lit"})), &params), None);
    }
}
