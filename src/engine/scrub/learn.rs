//! Learning the plaintexts a scrub run must look for (scrub spec, "what it covers"): every
//! secret-bearing dynamic reference the template or the record itself writes (a record's
//! own `{{resolve:...}}` expressions cover rollback orphans whose logical id left the
//! template), and the stack's NoEcho parameter values (their defaults: scrub takes no
//! `--parameters`).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::redact::Needles;
use crate::resolve::dynamic::{collect_references, DynamicReference};
use crate::resolve::ExternalReader;

/// What a stack's scrub knows: the needles, and the references it could not resolve.
#[derive(Debug, Default)]
pub struct Learned {
    pub needles: Needles,
    /// `{{resolve:...}}` texts whose value could not be fetched (an abandoned scan).
    pub unresolved: Vec<String>,
}

/// Learns the secrets of `template` (raw JSON) and of the stored `record` (raw JSON). A
/// record's expression in `scoped` (one a nested child's parent passes, which the child's
/// template does not write itself) is left to the consumers of that parameter.
pub async fn learn(
    reader: &ExternalReader,
    region: &str,
    template: &Value,
    record: &Value,
    scoped: &BTreeSet<String>,
) -> Learned {
    let mut learned = Learned::default();
    let mut refs: Vec<DynamicReference> = Vec::new();
    collect_references(template, &mut refs);
    let own: BTreeSet<String> = refs.iter().map(|r| r.text.clone()).collect();
    let mut stored: Vec<DynamicReference> = Vec::new();
    collect_references(record, &mut stored);
    refs.extend(
        stored
            .into_iter()
            .filter(|r| own.contains(&r.text) || !scoped.contains(&r.text)),
    );
    let mut seen: Vec<String> = Vec::new();
    for r in refs {
        if seen.contains(&r.text) {
            continue;
        }
        seen.push(r.text.clone());
        let key = r.fetch_key(region);
        match reader.fetch_dynamic(&key).await {
            Ok(fetched) => match r.value_from(&fetched) {
                Ok((value, true)) => learned.needles.add_secret(&value, Some(&r.text)),
                Ok((_, false)) => {}
                Err(_) => learned.unresolved.push(r.text.clone()),
            },
            Err(_) => {
                if r.is_secret_by_kind() {
                    learned.unresolved.push(r.text.clone());
                }
            }
        }
    }
    add_no_echo_defaults(template, &mut learned.needles);
    learned
}

/// Adds the default of every `NoEcho` parameter.
fn add_no_echo_defaults(template: &Value, needles: &mut Needles) {
    let Some(params) = template.get("Parameters").and_then(Value::as_object) else {
        return;
    };
    for p in params.values() {
        let no_echo = match p.get("NoEcho") {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
            _ => false,
        };
        if !no_echo {
            continue;
        }
        if let Some(default) = p.get("Default") {
            if p.get("Type").and_then(Value::as_str) == Some("CommaDelimitedList") {
                if let Some(s) = default.as_str() {
                    let items: Vec<Value> =
                        s.split(',').map(|i| Value::String(i.to_owned())).collect();
                    needles.add_no_echo(&Value::Array(items));
                }
            }
            needles.add_no_echo(default);
        }
    }
}
