//! The no-change merge of outputs (state-schema, `skippedOutputs` "Lifecycle"): a deploy that
//! changes no resource and cannot resolve an output this time keeps the value the record
//! holds for it, and the key of its literal `Export.Name` alias, instead of dropping both (a
//! consumer's `Fn::ImportValue` would stop resolving over nothing that changed). `skippedOutputs`
//! still records this pass's failure.
//!
//! Two merges are not safe, and then the previous outputs are kept whole: a failed output with
//! a stored value whose `Export.Name` is an intrinsic (which alias key it owns is unknown), and
//! a merge that would put the record's first secret reference beside a kept value (the
//! outputs diff reads a bag with a secret expression as one the last write redacted whole).
//! The diff previews the same merge ([`super::preview`]), so the two agree.

use serde_json::{Map, Value};

use super::outputs::Outputs;
use crate::resolve::dynamic::contains_dynamic_reference;
use crate::state::StackState;
use crate::template::Template;

impl Outputs {
    /// Applies the no-change merge against `state`'s stored outputs.
    pub(super) fn keep_failed(&mut self, template: &Template, state: &StackState) {
        let Some(previous) = state.outputs.as_ref() else {
            return;
        };
        let kept: Vec<String> = self
            .skipped
            .keys()
            .filter(|name| previous.contains_key(*name))
            .cloned()
            .collect();
        if kept.is_empty() {
            return;
        }
        let previous_exports: Option<Vec<String>> = state
            .export_names()
            .map(|names| names.into_iter().map(str::to_owned).collect());
        // A record without `exportNames` (before it existed) exports every key.
        let was_exported = |key: &str| {
            previous_exports
                .as_ref()
                .is_none_or(|names| names.iter().any(|n| n == key))
        };
        let mut merged = self.clone();
        for name in &kept {
            let value = previous[name].clone();
            merged.by_name.insert(name.clone(), value.clone());
            merged.stored.insert(name.clone(), value);
            match template
                .outputs
                .get(name)
                .and_then(|o| o.export_name.as_ref())
            {
                None => {}
                Some(Value::String(export)) => {
                    if merged.export_names.contains(export) || !was_exported(export) {
                        continue;
                    }
                    if export != name {
                        let Some(alias) = previous.get(export) else {
                            continue;
                        };
                        merged.stored.insert(export.clone(), alias.clone());
                    }
                    merged.export_names.push(export.clone());
                }
                Some(_) => return self.keep_previous(template, previous, previous_exports),
            }
        }
        let holds_reference = |bag: &Map<String, Value>| bag.values().any(holds_dynamic_reference);
        if holds_reference(&merged.stored) && !holds_reference(previous) {
            return self.keep_previous(template, previous, previous_exports);
        }
        // The record's order, so an unchanged set reads as recorded.
        if let Some(order) = &previous_exports {
            merged
                .export_names
                .sort_by_key(|n| order.iter().position(|p| p == n).unwrap_or(usize::MAX));
        }
        *self = merged;
    }

    /// The previous outputs and export set, whole, beside this pass's `skippedOutputs`.
    fn keep_previous(
        &mut self,
        template: &Template,
        previous: &Map<String, Value>,
        previous_exports: Option<Vec<String>>,
    ) {
        self.stored = previous.clone();
        self.by_name = previous
            .iter()
            .filter(|(k, _)| template.outputs.contains_key(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        self.export_names = previous_exports.unwrap_or_else(|| previous.keys().cloned().collect());
        self.plain.retain(|k, _| previous.contains_key(k));
    }
}

fn holds_dynamic_reference(value: &Value) -> bool {
    match value {
        Value::String(s) => contains_dynamic_reference(s),
        Value::Array(items) => items.iter().any(holds_dynamic_reference),
        Value::Object(m) => m.values().any(holds_dynamic_reference),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;
    use serde_json::json;
    use std::path::Path;

    fn template(outputs: Value) -> Template {
        Template::from_value(
            json!({"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}, "Outputs": outputs}),
            Path::new("t.json"),
        )
        .unwrap()
    }

    fn state(outputs: Value, exports: &[&str]) -> StackState {
        let mut s = StackState::new("S", "us-east-1");
        s.outputs = outputs.as_object().cloned();
        s.set_export_names(exports.iter().map(|e| e.to_string()));
        s
    }

    fn failed(resolved: Value, skipped: &[&str]) -> Outputs {
        let by_name = resolved.as_object().cloned().unwrap();
        Outputs {
            stored: by_name.clone(),
            export_names: Vec::new(),
            by_name: by_name.clone(),
            skipped: skipped
                .iter()
                .map(|s| (s.to_string(), "sha256:x".to_owned()))
                .collect::<IndexMap<_, _>>(),
            plain: by_name,
        }
    }

    #[test]
    fn a_failed_output_keeps_its_value_and_its_export_alias() {
        let t = template(json!({
            "A": {"Value": "a"},
            "B": {"Value": {"Fn::GetAtt": ["Q", "Nope"]}, "Export": {"Name": "shared-b"}}
        }));
        let s = state(
            json!({"A": "a", "B": "b-old", "shared-b": "b-old"}),
            &["shared-b"],
        );
        let mut outs = failed(json!({"A": "a"}), &["B"]);
        outs.keep_failed(&t, &s);
        assert_eq!(outs.stored, s.outputs.clone().unwrap());
        assert_eq!(outs.export_names, vec!["shared-b".to_owned()]);
        assert_eq!(outs.by_name.get("B"), Some(&json!("b-old")));
        assert!(outs.skipped.contains_key("B"), "this pass's record stays");
        assert!(outs.recorded_in(&{
            let mut s = s.clone();
            outs.apply(&mut s);
            s
        }));
    }

    #[test]
    fn an_intrinsic_export_name_keeps_the_previous_outputs_whole() {
        let t = template(json!({
            "A": {"Value": "a-new"},
            "B": {"Value": {"Fn::GetAtt": ["Q", "Nope"]}, "Export": {"Name": {"Fn::Sub": "x-${AWS::Region}"}}}
        }));
        let s = state(
            json!({"A": "a", "B": "b", "x-us-east-1": "b"}),
            &["x-us-east-1"],
        );
        let mut outs = failed(json!({"A": "a-new"}), &["B"]);
        outs.keep_failed(&t, &s);
        assert_eq!(outs.stored, s.outputs.clone().unwrap());
        assert_eq!(outs.export_names, vec!["x-us-east-1".to_owned()]);
    }

    #[test]
    fn a_first_secret_reference_beside_a_kept_value_keeps_the_previous_outputs_whole() {
        let t = template(json!({
            "A": {"Value": "{{resolve:secretsmanager:s}}"},
            "B": {"Value": {"Fn::GetAtt": ["Q", "Nope"]}}
        }));
        let s = state(json!({"A": "plain", "B": "b"}), &[]);
        let mut outs = failed(json!({"A": "{{resolve:secretsmanager:s}}"}), &["B"]);
        outs.keep_failed(&t, &s);
        assert_eq!(outs.stored, s.outputs.clone().unwrap());
    }

    #[test]
    fn nothing_is_kept_for_an_output_the_record_lacks() {
        let t = template(json!({"B": {"Value": {"Fn::GetAtt": ["Q", "Nope"]}}}));
        let s = state(json!({}), &[]);
        let mut outs = failed(json!({}), &["B"]);
        let before = outs.clone();
        outs.keep_failed(&t, &s);
        assert_eq!(outs, before);
    }
}
