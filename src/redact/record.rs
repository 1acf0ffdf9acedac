//! The last step before a stack record is written: what a deploy learned about its secrets,
//! applied to a copy of the working record.
//!
//! The deploy keeps plaintext in memory (a dependent resolved in the same run needs the real
//! value); every write of the record goes through [`RecordRedactor::for_storage`], so no write
//! path can forget it:
//!
//! - a resource this run sent is stored with the properties' stored form (secret positions as
//!   their `{{resolve:...}}` expression, NoEcho positions as `***`) and its `noEchoLeaves`;
//! - every other string in properties, attributes, observed properties and outputs is searched
//!   for the run's plaintexts ([`Needles`]); physical ids are never rewritten;
//! - a custom resource's attributes its handler declared NoEcho are stored as `***` and
//!   named in `noEchoAttributeNames` ([`NoEchoAttributes`]);
//! - the cross-stack reads this run recorded are unioned into `imports` / `outputReads`
//!   (cross-stack-references, "A FAILED consumer deploy used to leave the same hole"): a
//!   union never drops an entry, and the final success save, which sets the lists to exactly
//!   this run's reads first, is a union with itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::attributes::NoEchoAttributes;
use super::needles::Needles;
use super::positions::{get_at, get_at_mut, short_literals};
use crate::state::{Lenient, PathSegment, StackState, StateImportEntry, StateOutputReadEntry};

/// The cross-stack reads a stack's resolution recorded.
pub trait RecordedReads: Send + Sync {
    fn imports(&self) -> Vec<StateImportEntry>;
    fn output_reads(&self) -> Vec<StateOutputReadEntry>;
}

/// One resource's properties as sent and as stored.
#[derive(Clone, PartialEq)]
pub struct StoredProperties {
    /// What was sent to AWS (the working record holds this).
    pub sent: Map<String, Value>,
    /// What state stores.
    pub stored: Map<String, Value>,
    /// `noEchoLeaves`; `None` leaves the field as the record has it.
    pub no_echo_leaves: Option<Vec<Vec<PathSegment>>>,
    /// `maskedPropertyFingerprints` / `maskedPropertyInputFingerprints` of what was sent;
    /// `None` leaves the fields as the record has them.
    pub masked: Option<MaskedFingerprints>,
}

/// One resource's masked-property fingerprints, keyed by top-level property: the hash of its
/// template text, and of that text with its non-secret inputs (`engine::deploy::masked`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MaskedFingerprints {
    pub text: IndexMap<String, String>,
    pub inputs: IndexMap<String, String>,
}

impl std::fmt::Debug for StoredProperties {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredProperties")
            .field("stored", &self.stored)
            .field("no_echo_leaves", &self.no_echo_leaves)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Inner {
    needles: Needles,
    resources: HashMap<String, StoredProperties>,
    reads: Option<Arc<dyn RecordedReads>>,
    /// Per resource, the short literals its template spells ([`short_literals`]).
    literals: HashMap<String, Vec<(Vec<PathSegment>, String)>>,
    /// The attributes custom resources declared NoEcho.
    attributes: NoEchoAttributes,
    /// Per resource created in this run, the NoEcho positions AWS reported exactly.
    exact_echo: HashMap<String, Vec<Vec<String>>>,
}

/// What one stack's deploy must keep out of its record, and the reads it must add to it.
#[derive(Default)]
pub struct RecordRedactor {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for RecordRedactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordRedactor { .. }")
    }
}

impl RecordRedactor {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds plaintexts to search for.
    pub fn add_needles(&self, needles: &Needles) {
        self.lock().needles.merge(needles);
    }

    /// A copy of the plaintexts known so far.
    pub fn needles(&self) -> Needles {
        self.lock().needles.clone()
    }

    /// Where the run's cross-stack reads come from.
    pub fn set_reads(&self, reads: Arc<dyn RecordedReads>) {
        self.lock().reads = Some(reads);
    }

    /// Records how `logical_id`'s properties are stored; applied while the working record
    /// still holds exactly `stored.sent`.
    pub fn record_properties(&self, logical_id: &str, stored: StoredProperties) {
        self.lock().resources.insert(logical_id.to_owned(), stored);
    }

    /// Records the short literals `logical_id`'s template properties spell: a record value
    /// equal to one at its position is stored as spelled, not matched by value.
    pub fn record_literals(&self, logical_id: &str, template: &Map<String, Value>) {
        let found = short_literals(template);
        if !found.is_empty() {
            self.lock().literals.insert(logical_id.to_owned(), found);
        }
    }

    /// Starts from the NoEcho attributes `state` (the record the deploy loaded) names.
    pub fn seed_attributes(&self, state: &StackState) {
        self.lock().attributes = NoEchoAttributes::from_state(state);
    }

    /// Custom resource `logical_id`'s handler answered in this run: `data` is its real Data
    /// when the answer was NoEcho (its string values become plaintexts to search for), `None`
    /// when it was not.
    pub fn custom_answered(&self, logical_id: &str, data: Option<&Map<String, Value>>) {
        let mut inner = self.lock();
        inner.attributes.answered(logical_id, data);
        if let Some(data) = data {
            let mut needles = Needles::default();
            for v in data.values().filter(|v| v.is_string()) {
                needles.add_no_echo(v);
            }
            inner.needles.merge(&needles);
        }
    }

    /// Records `noEchoExactEchoLeaves` for `logical_id` (created in this run).
    pub fn record_exact_echo(&self, logical_id: &str, leaves: Vec<Vec<String>>) {
        self.lock().exact_echo.insert(logical_id.to_owned(), leaves);
    }

    /// `logical_id` (a nested-stack row) produced its attributes in this run, `names` of them
    /// NoEcho; `plaintexts` are the values this run holds for them.
    pub fn declare_no_echo(&self, logical_id: &str, names: Vec<String>, plaintexts: &[Value]) {
        let mut inner = self.lock();
        inner.attributes.declared(logical_id, names);
        let mut needles = Needles::default();
        for v in plaintexts {
            needles.add_no_echo(v);
        }
        inner.needles.merge(&needles);
    }

    /// A copy of what is known of NoEcho attributes.
    pub fn no_echo_attributes(&self) -> NoEchoAttributes {
        self.lock().attributes.clone()
    }

    /// `text` with every known plaintext masked (for the terminal).
    pub fn mask_text(&self, text: &str) -> String {
        self.lock().needles.mask_text(text)
    }

    /// The record as it may be written.
    pub fn for_storage(&self, state: &StackState) -> StackState {
        let inner = self.lock();
        let mut out = state.clone();
        if let Some(reads) = &inner.reads {
            union_reads(&mut out, reads.as_ref());
        }
        let needles = &inner.needles;
        for (id, rec) in out.resources.iter_mut() {
            if let Some(exact) = inner.exact_echo.get(id) {
                rec.no_echo_exact_echo_leaves = Some(exact.clone());
            }
            if let Some(sp) = inner.resources.get(id) {
                if rec.properties == sp.sent {
                    rec.properties = sp.stored.clone();
                    if sp.no_echo_leaves.is_some() {
                        rec.no_echo_leaves = sp.no_echo_leaves.clone();
                    }
                    if let Some(m) = &sp.masked {
                        let field = |f: &IndexMap<String, String>| {
                            (!f.is_empty()).then(|| Lenient::Valid(f.clone()))
                        };
                        rec.masked_property_fingerprints = field(&m.text);
                        rec.masked_property_input_fingerprints = field(&m.inputs);
                    }
                }
            }
            if needles.is_empty() {
                continue;
            }
            let literals = inner.literals.get(id).map(Vec::as_slice).unwrap_or(&[]);
            redact_properties(needles, &mut rec.properties, literals);
            if let Some(a) = rec.attributes.as_mut() {
                redact_map(needles, a);
            }
            if let Some(o) = rec.observed_properties.as_mut() {
                redact_map(needles, o);
            }
        }
        if let Some(outputs) = out.outputs.as_mut() {
            redact_map(needles, outputs);
        }
        inner.attributes.apply(&mut out);
        out
    }
}

/// [`redact_map`] except where the record holds a short literal the template spells at that
/// position: a whole-value match there is a coincidence with a short secret, not a plaintext
/// a reference produced (a reference's own position is redacted by position).
fn redact_properties(
    needles: &Needles,
    map: &mut Map<String, Value>,
    literals: &[(Vec<PathSegment>, String)],
) {
    if literals.is_empty() {
        return redact_map(needles, map);
    }
    let before = Value::Object(std::mem::take(map));
    let mut after = before.clone();
    needles.redact_in_place(&mut after);
    for (leaf, literal) in literals {
        if get_at(&before, leaf).and_then(Value::as_str) != Some(literal.as_str()) {
            continue;
        }
        if let Some(slot) = get_at_mut(&mut after, leaf) {
            *slot = Value::String(literal.clone());
        }
    }
    if let Value::Object(m) = after {
        *map = m;
    }
}

fn redact_map(needles: &Needles, map: &mut Map<String, Value>) {
    for v in map.values_mut() {
        needles.redact_in_place(v);
    }
}

fn union_reads(state: &mut StackState, reads: &dyn RecordedReads) {
    let imports = reads.imports();
    if !imports.is_empty() {
        let list = state.imports.get_or_insert_with(Vec::new);
        for entry in imports {
            if !list.contains(&entry) {
                list.push(entry);
            }
        }
    }
    let output_reads = reads.output_reads();
    if !output_reads.is_empty() {
        let mut list = state.output_read_entries();
        for entry in output_reads {
            if !list.contains(&entry) {
                list.push(entry);
            }
        }
        state.output_reads = Some(Lenient::Valid(list));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ResourceState;
    use serde_json::json;

    struct Reads;
    impl RecordedReads for Reads {
        fn imports(&self) -> Vec<StateImportEntry> {
            vec![StateImportEntry {
                source_stack: "P".into(),
                source_region: "us-east-1".into(),
                export_name: "X".into(),
                extra: Map::new(),
            }]
        }
        fn output_reads(&self) -> Vec<StateOutputReadEntry> {
            Vec::new()
        }
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn sent_properties_are_stored_in_their_stored_form_and_plaintexts_searched() {
        let r = RecordRedactor::default();
        let mut n = Needles::default();
        n.add_secret("topsecret", Some("{{resolve:ssm-secure:/s}}"));
        r.add_needles(&n);
        let sent = obj(json!({"Value": "topsecret", "Name": "n"}));
        r.record_properties(
            "A",
            StoredProperties {
                sent: sent.clone(),
                stored: obj(json!({"Value": "{{resolve:ssm-secure:/s}}", "Name": "n"})),
                no_echo_leaves: Some(vec![]),
                masked: None,
            },
        );
        r.set_reads(Arc::new(Reads));
        let mut state = StackState::new("S", "us-east-1");
        let mut rec = ResourceState::new("topsecret-id".to_string(), "T".to_string(), sent);
        rec.attributes = Some(obj(json!({"Echo": "topsecret"})));
        state.resources.insert("A".into(), rec);
        state.outputs = Some(obj(json!({"Out": "x topsecret y"})));

        let stored = r.for_storage(&state);
        let a = &stored.resources["A"];
        assert_eq!(a.properties["Value"], "{{resolve:ssm-secure:/s}}");
        assert_eq!(
            a.attributes.as_ref().unwrap()["Echo"],
            "{{resolve:ssm-secure:/s}}"
        );
        assert_eq!(a.physical_id.as_deref(), Some("topsecret-id"));
        assert_eq!(a.no_echo_leaves, Some(vec![]));
        assert_eq!(
            stored.outputs.as_ref().unwrap()["Out"],
            "x {{resolve:ssm-secure:/s}} y"
        );
        assert_eq!(stored.imports.as_ref().unwrap().len(), 1);
        // The working record is untouched; a second pass adds no duplicate import.
        assert_eq!(state.resources["A"].properties["Value"], "topsecret");
        assert_eq!(r.for_storage(&stored).imports.unwrap().len(), 1);
    }

    #[test]
    fn a_short_literal_the_template_spells_is_kept_its_reference_position_redacted() {
        let r = RecordRedactor::default();
        let mut n = Needles::default();
        n.add_secret("abc", Some("{{resolve:secretsmanager:s}}"));
        r.add_needles(&n);
        let sent = obj(json!({"Value": "abc", "Tags": ["abc", "x"]}));
        r.record_properties(
            "Lit",
            StoredProperties {
                sent: sent.clone(),
                stored: sent.clone(),
                no_echo_leaves: None,
                masked: None,
            },
        );
        r.record_literals(
            "Lit",
            &obj(json!({"Value": "abc", "Tags": [{"Ref": "P"}, "x"]})),
        );
        let mut state = StackState::new("S", "us-east-1");
        state.resources.insert(
            "Lit".into(),
            ResourceState::new("p".to_string(), "T".to_string(), sent),
        );
        let stored = r.for_storage(&state);
        let props = &stored.resources["Lit"].properties;
        assert_eq!(props["Value"], "abc");
        // A position the template does not spell as that literal is still redacted.
        assert_eq!(props["Tags"][0], "{{resolve:secretsmanager:s}}");
    }
}
