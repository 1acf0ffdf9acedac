//! Attributes a custom resource's handler (or a nested stack, for an output its child stores
//! masked) declared NoEcho, and the positions that read them (state-schema, "NoEcho
//! custom-resource responses").
//!
//! A handler that answers `NoEcho: true` has every string value of its `Data` stored as `***`
//! (the record names them in `noEchoAttributeNames`), while `Fn::GetAtt` keeps resolving to
//! the real value for the rest of the run, since a dependent must be created with it. So a
//! reader's stored properties hold `***` at every position the template fills from such an
//! attribute (a string that embeds it is `***` whole), and a later deploy, whose record holds
//! only the mask, compares `***` with `***` and refuses to send it ([`NoEchoAttributes::masked_reads`]).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::needles::MASK;
use super::positions::paired_leaves;
use crate::plan::references;
use crate::state::{PathSegment, StackState};

/// Per logical id, the attributes declared NoEcho; and which handlers answered NoEcho in this
/// run (their working records hold the real values).
#[derive(Debug, Default, Clone)]
pub struct NoEchoAttributes {
    names: HashMap<String, Vec<String>>,
    answered: HashSet<String>,
    /// Handlers that answered without NoEcho in this run: their record drops the field.
    cleared: HashSet<String>,
}

impl NoEchoAttributes {
    /// What an earlier run recorded: each record's `noEchoAttributeNames`, or, for a custom
    /// resource recorded before the field existed, the attributes it holds as `***`.
    pub fn from_state(state: &StackState) -> Self {
        let mut out = NoEchoAttributes::default();
        for (id, rec) in &state.resources {
            let names = match &rec.no_echo_attribute_names {
                Some(n) => n.clone(),
                None if crate::provider::custom::is_custom_type(&rec.resource_type) => rec
                    .attributes
                    .iter()
                    .flatten()
                    .filter(|(_, v)| v.as_str() == Some(MASK))
                    .map(|(k, _)| k.clone())
                    .collect(),
                None => Vec::new(),
            };
            if !names.is_empty() {
                out.names.insert(id.clone(), names);
            }
        }
        out
    }

    /// `logical_id`'s handler answered in this run with `data`: NoEcho or not.
    pub fn answered(&mut self, logical_id: &str, data: Option<&Map<String, Value>>) {
        let names = data.map(|data| {
            data.iter()
                .filter(|(_, v)| v.is_string())
                .map(|(k, _)| k.clone())
                .collect()
        });
        self.declared(logical_id, names.unwrap_or_default());
    }

    /// `logical_id` produced its attributes in this run, `names` of them NoEcho (none: the
    /// record drops the field).
    pub fn declared(&mut self, logical_id: &str, mut names: Vec<String>) {
        if names.is_empty() {
            if self.names.remove(logical_id).is_some() {
                self.cleared.insert(logical_id.to_owned());
            }
            self.answered.remove(logical_id);
            return;
        }
        names.sort();
        names.dedup();
        self.names.insert(logical_id.to_owned(), names);
        self.answered.insert(logical_id.to_owned());
        self.cleared.remove(logical_id);
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The NoEcho attribute names of `logical_id`.
    pub fn names(&self, logical_id: &str) -> Option<&[String]> {
        self.names.get(logical_id).map(Vec::as_slice)
    }

    /// Whether `logical_id`'s handler answered NoEcho in this run.
    pub fn answered_this_run(&self, logical_id: &str) -> bool {
        self.answered.contains(logical_id)
    }

    fn is_no_echo(&self, target: &str, attribute: &str) -> bool {
        self.names
            .get(target)
            .is_some_and(|n| n.iter().any(|a| a == attribute))
    }

    /// The NoEcho attributes (target, attribute) `template` reads, in order, without repeats.
    pub fn reads(&self, template: &Map<String, Value>) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        if self.names.is_empty() {
            return out;
        }
        for r in references(&Value::Object(template.clone())) {
            let Some(attribute) = r.attribute else {
                continue;
            };
            let pair = (r.target, attribute);
            if self.is_no_echo(&pair.0, &pair.1) && !out.contains(&pair) {
                out.push(pair);
            }
        }
        out
    }

    /// The NoEcho attributes `template` reads whose plaintext this run does not hold: the
    /// record it was resolved from holds only `***` there.
    pub fn masked_reads(&self, template: &Map<String, Value>) -> Vec<(String, String)> {
        self.reads(template)
            .into_iter()
            .filter(|(t, _)| !self.answered.contains(t))
            .collect()
    }

    /// Whether `template` reads a NoEcho attribute a handler returned in this run (a reader
    /// that must not take the no-change skip: two masks say nothing about the values).
    pub fn reads_answered(&self, template: &Map<String, Value>) -> bool {
        self.reads(template)
            .iter()
            .any(|(t, _)| self.answered.contains(t))
    }

    /// The positions in `resolved` (the resolved `template` property bag) filled from a
    /// NoEcho attribute: every scalar leaf under an intrinsic that reads one.
    pub fn leaves(
        &self,
        template: &Map<String, Value>,
        resolved: &Map<String, Value>,
    ) -> Vec<Vec<PathSegment>> {
        let mut out = Vec::new();
        if self.names.is_empty() {
            return out;
        }
        for (k, t) in template {
            if let Some(r) = resolved.get(k) {
                let mut path = vec![PathSegment::Key(k.clone())];
                self.walk(t, r, &mut path, &mut out);
            }
        }
        out
    }

    /// [`Self::leaves`] of one value (an output's), its positions relative to it.
    pub fn value_leaves(&self, template: &Value, resolved: &Value) -> Vec<Vec<PathSegment>> {
        let mut out = Vec::new();
        if !self.names.is_empty() {
            self.walk(template, resolved, &mut Vec::new(), &mut out);
        }
        out
    }

    fn walk(
        &self,
        template: &Value,
        resolved: &Value,
        path: &mut Vec<PathSegment>,
        out: &mut Vec<Vec<PathSegment>>,
    ) {
        let reads = |t: &Value| {
            let mut m = Map::new();
            m.insert(String::new(), t.clone());
            !self.reads(&m).is_empty()
        };
        paired_leaves(template, resolved, path, out, &reads);
    }

    /// Applies what the run learned to a record about to be written: each declared
    /// attribute's string value stored as `***`, `noEchoAttributeNames` set (or dropped for a
    /// handler that answered without NoEcho).
    pub fn apply(&self, state: &mut StackState) {
        for (id, rec) in state.resources.iter_mut() {
            if let Some(names) = self.names.get(id) {
                if let Some(attrs) = rec.attributes.as_mut() {
                    for name in names {
                        if let Some(v @ Value::String(_)) = attrs.get_mut(name) {
                            *v = Value::String(MASK.to_owned());
                        }
                    }
                }
                rec.no_echo_attribute_names = Some(names.clone());
            } else if self.cleared.contains(id) {
                rec.no_echo_attribute_names = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ResourceState;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn positions_reading_a_no_echo_attribute_are_found_and_refused_when_masked() {
        let mut a = NoEchoAttributes::default();
        a.answered("Cr", Some(&obj(json!({"Token": "t0k", "N": 3}))));
        let template = obj(json!({
            "Value": {"Fn::GetAtt": ["Cr", "Token"]},
            "Url": {"Fn::Sub": "pw=${Cr.Token}"},
            "Other": {"Fn::GetAtt": ["Cr", "N"]},
            "Plain": "x"
        }));
        let resolved = obj(json!({"Value": "t0k", "Url": "pw=t0k", "Other": 3, "Plain": "x"}));
        let leaves = a.leaves(&template, &resolved);
        assert_eq!(leaves.len(), 2, "{leaves:?}");
        for key in ["Value", "Url"] {
            assert!(
                leaves.contains(&vec![PathSegment::Key(key.into())]),
                "{leaves:?}"
            );
        }
        assert!(a.reads_answered(&template));
        assert!(a.masked_reads(&template).is_empty());

        // A later run knows the names from the record only: the read is masked.
        let mut state = StackState::new("S", "us-east-1");
        let mut rec = ResourceState::new("cr-1", "Custom::Thing", Map::new());
        rec.attributes = Some(obj(json!({"Token": "t0k", "N": 3})));
        state.resources.insert("Cr".into(), rec);
        a.apply(&mut state);
        let cr = &state.resources["Cr"];
        assert_eq!(cr.attributes.as_ref().unwrap()["Token"], MASK);
        assert_eq!(cr.attributes.as_ref().unwrap()["N"], 3);
        assert_eq!(cr.no_echo_attribute_names, Some(vec!["Token".to_owned()]));
        let later = NoEchoAttributes::from_state(&state);
        assert_eq!(
            later.masked_reads(&template),
            vec![("Cr".to_owned(), "Token".to_owned())]
        );
    }

    #[test]
    fn a_plain_answer_drops_the_names() {
        let mut a = NoEchoAttributes::default();
        a.answered("Cr", Some(&obj(json!({"Token": "x"}))));
        a.answered("Cr", None);
        let mut state = StackState::new("S", "us-east-1");
        let mut rec = ResourceState::new("cr-1", "Custom::Thing", Map::new());
        rec.no_echo_attribute_names = Some(vec!["Token".into()]);
        state.resources.insert("Cr".into(), rec);
        a.apply(&mut state);
        assert!(state.resources["Cr"].no_echo_attribute_names.is_none());
        assert!(a.is_empty());
    }
}
