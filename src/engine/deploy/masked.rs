//! Fingerprints of the properties state can only store as `***` (`maskedPropertyFingerprints`,
//! `maskedPropertyInputFingerprints`; state-schema, "maskedPropertyFingerprints").
//!
//! An `Fn::Base64` over a secret reference decodes straight back to the secret, so its
//! position is stored as `***`, and `***` says nothing about what was sent. For each top-level
//! property holding such a position the record keeps a hash of the property's template text
//! (an edit around the reference, or a retarget of it) and a hash of that text together with
//! the non-secret inputs it read, as they resolved (a parameter's value, a resource's physical
//! id or attribute, a cross-stack value, a condition's verdict, a mapping). A secret never
//! enters either hash: an input is left out by where it comes from (a NoEcho or secret-fed
//! parameter, a resource whose definition reads a secret, a custom resource's attribute), never
//! by comparing values. A property whose text spells a known secret or NoEcho value as a
//! literal gets no hash at all. A changed hash makes the property a change, shown and sent;
//! a rotated secret behind an unchanged template changes neither.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::plan::PropertyDiff;
use crate::redact::{MaskedFingerprints, MASK};
use crate::resolve::dynamic::DYNAMIC_REFERENCE_OPENER;
use crate::resolve::{intrinsic, ParameterValue, SecretsMap};
use crate::state::ResourceState;
use crate::template::Template;

const TEXT_PREFIX: &str = "sha256:";
const INPUTS_PREFIX: &str = "inputs-sha256:";

/// The top-level properties holding a position stored as `***` by an encoding.
pub(super) fn masked_keys(secrets: &SecretsMap) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for (path, position) in secrets.positions() {
        if position.expression != MASK {
            continue;
        }
        let key = path.split(['.', '[']).next().unwrap_or(path).to_owned();
        if !key.is_empty() && !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// What the input hash may read, besides the template.
pub(super) struct Inputs<'a> {
    pub template: &'a Template,
    /// NoEcho parameters and those a parent fed a secret: never an input.
    pub secret_params: &'a dyn Fn(&str) -> bool,
    pub param: &'a dyn Fn(&str) -> Option<&'a ParameterValue>,
    pub verdict: &'a dyn Fn(&str) -> Option<bool>,
    /// Resolves one input expression (`Ref`, `Fn::GetAtt`, `Fn::ImportValue`, ...).
    pub resolve: &'a mut dyn FnMut(&Value) -> Option<Value>,
    /// Plaintexts the text must not spell (secrets and NoEcho values this run knows).
    pub known_secrets: &'a [String],
}

/// The fingerprints of `keys` of `logical_id`'s template properties.
pub(super) fn fingerprints(
    logical_id: &str,
    keys: &[String],
    inputs: &mut Inputs<'_>,
) -> MaskedFingerprints {
    let mut out = MaskedFingerprints::default();
    let Some(res) = inputs.template.resources.get(logical_id) else {
        return out;
    };
    for key in keys {
        let Some(value) = res.properties.get(key) else {
            continue;
        };
        let text = canonical(value);
        if inputs
            .known_secrets
            .iter()
            .any(|s| !s.is_empty() && text.contains(s.as_str()))
        {
            continue;
        }
        let text_hash = format!("{TEXT_PREFIX}{}", sha256_hex(&text));
        let mut read = BTreeMap::new();
        let mut walker = Walker {
            inputs,
            clean: HashMap::new(),
            read: &mut read,
        };
        walker.walk(value);
        let with_inputs = canonical(&Value::Array(vec![
            value.clone(),
            Value::Object(read.into_iter().collect()),
        ]));
        out.inputs.insert(
            key.clone(),
            format!("{INPUTS_PREFIX}{}+{text_hash}", sha256_hex(&with_inputs)),
        );
        out.text.insert(key.clone(), text_hash);
    }
    out
}

/// The properties whose recorded fingerprint no longer matches today's: a change, though
/// both sides store `***`. A record without a fingerprint is compared as before; an input
/// fingerprint counts only while it is bound to the recorded text fingerprint.
pub(super) fn masked_changes(
    resource_type: &str,
    record: &ResourceState,
    today: &MaskedFingerprints,
    already: &[PropertyDiff],
) -> Vec<PropertyDiff> {
    let Some(old_text) = record.masked_property_fingerprints() else {
        return Vec::new();
    };
    let old_inputs = record.masked_property_input_fingerprints();
    let mut out = Vec::new();
    for (key, text) in &today.text {
        let Some(old) = old_text.get(key) else {
            continue;
        };
        if already.iter().any(|d| &d.path == key) {
            continue;
        }
        let moved = old != text
            || old_inputs
                .and_then(|m| m.get(key))
                .filter(|bound| bound.ends_with(&format!("+{old}")))
                .zip(today.inputs.get(key))
                .is_some_and(|(before, now)| before != now);
        if moved {
            let masked = record.properties.get(key).cloned();
            out.push(PropertyDiff {
                path: key.clone(),
                old: masked.clone(),
                new: masked.clone(),
                requires_replacement: super::changes::replaces(
                    resource_type,
                    key,
                    masked.as_ref(),
                    masked.as_ref(),
                ),
            });
        }
    }
    out
}

/// `record` with the fingerprints it lacks filled in from `today` (the first deploy under a
/// cdkd that knows the fields, or one that knows the input field over a record an older one
/// wrote): a text hash where the record has none, an input hash where the recorded text hash
/// equals today's and no input hash is bound to it. Nothing is sent for such a fill-in, and
/// a hash the record already holds is never replaced here (a moved one is a change).
pub(super) fn filled_in(
    record: &ResourceState,
    today: &MaskedFingerprints,
) -> Option<ResourceState> {
    if today.text.is_empty() {
        return None;
    }
    let mut text = record
        .masked_property_fingerprints()
        .cloned()
        .unwrap_or_default();
    let mut inputs = record
        .masked_property_input_fingerprints()
        .cloned()
        .unwrap_or_default();
    let mut moved = false;
    for (key, hash) in &today.text {
        match text.get(key) {
            None => {
                text.insert(key.clone(), hash.clone());
                if let Some(i) = today.inputs.get(key) {
                    inputs.insert(key.clone(), i.clone());
                }
                moved = true;
            }
            Some(old) if old == hash => {
                let bound = inputs
                    .get(key)
                    .is_some_and(|i| i.ends_with(&format!("+{old}")));
                if !bound {
                    if let Some(i) = today.inputs.get(key) {
                        inputs.insert(key.clone(), i.clone());
                        moved = true;
                    }
                }
            }
            Some(_) => {}
        }
    }
    if !moved {
        return None;
    }
    let mut out = record.clone();
    out.masked_property_fingerprints = Some(crate::state::Lenient::Valid(text));
    out.masked_property_input_fingerprints =
        (!inputs.is_empty()).then(|| crate::state::Lenient::Valid(inputs));
    Some(out)
}

struct Walker<'i, 'a> {
    inputs: &'i mut Inputs<'a>,
    /// Resource → whether its definition reads no secret (memo; `false` while in progress).
    clean: HashMap<String, bool>,
    read: &'i mut BTreeMap<String, Value>,
}

impl Walker<'_, '_> {
    fn walk(&mut self, v: &Value) {
        if let Some((name, arg)) = intrinsic(v) {
            return self.call(v, name, arg);
        }
        match v {
            Value::Array(items) => items.iter().for_each(|x| self.walk(x)),
            Value::Object(m) => m.values().for_each(|x| self.walk(x)),
            _ => {}
        }
    }

    fn call(&mut self, whole: &Value, name: &str, arg: &Value) {
        match name {
            "Ref" => {
                if let Some(target) = arg.as_str() {
                    self.read_ref(target);
                }
            }
            "Fn::GetAtt" => {
                if let Some((target, attribute)) = get_att_target(arg) {
                    self.read_att(&target, &attribute);
                }
            }
            "Fn::Sub" => {
                let (text, vars) = match arg {
                    Value::String(s) => (s.as_str(), None),
                    Value::Array(a) => match (a.first().and_then(Value::as_str), a.get(1)) {
                        (Some(s), vars) => (s, vars.and_then(Value::as_object)),
                        _ => return,
                    },
                    _ => return,
                };
                if let Some(vars) = vars {
                    vars.values().for_each(|x| self.walk(x));
                }
                for variable in sub_variables(text) {
                    if vars.is_some_and(|m| m.contains_key(&variable)) {
                        continue;
                    }
                    match variable.split_once('.') {
                        Some((target, attribute)) if !self.is_parameter(&variable) => {
                            self.read_att(target, attribute)
                        }
                        _ => self.read_ref(&variable),
                    }
                }
            }
            "Fn::If" => {
                let Some([condition, yes, no]) = arg
                    .as_array()
                    .map(Vec::as_slice)
                    .and_then(|a| <&[Value; 3]>::try_from(a).ok())
                else {
                    return;
                };
                let Some(condition) = condition.as_str() else {
                    return;
                };
                // A condition over a secret is kept whole: neither its verdict nor a branch.
                if !self.condition_clean(condition, &mut Vec::new()) {
                    return;
                }
                match (self.inputs.verdict)(condition) {
                    Some(verdict) => {
                        self.read
                            .insert(format!("Condition:{condition}"), Value::Bool(verdict));
                        self.walk(if verdict { yes } else { no });
                    }
                    None => {
                        self.walk(yes);
                        self.walk(no);
                    }
                }
            }
            "Fn::FindInMap" => {
                if let Some(map) = arg.get(0).and_then(Value::as_str) {
                    if let Some(mapping) = self.inputs.template.mappings.get(map) {
                        if !holds_reference(mapping) {
                            self.read.insert(format!("Mapping:{map}"), mapping.clone());
                        }
                    }
                }
                if let Some(args) = arg.as_array() {
                    args.iter().skip(1).for_each(|x| self.walk(x));
                }
            }
            "Fn::ImportValue" | "Fn::GetStackOutput" => {
                // A cross-stack value is public: it enters the hash as it resolved.
                if let Some(value) = (self.inputs.resolve)(whole) {
                    if !holds_secret_text(&value) {
                        self.read
                            .insert(format!("{name}:{}", canonical(arg)), value);
                    }
                }
            }
            _ => self.walk(arg),
        }
    }

    fn is_parameter(&self, name: &str) -> bool {
        self.inputs.template.parameters.contains_key(name)
    }

    fn read_ref(&mut self, target: &str) {
        if target == "AWS::NoValue" {
            return;
        }
        let readable = if target.starts_with("AWS::") {
            true
        } else if self.is_parameter(target) {
            !(self.inputs.secret_params)(target)
                && match (self.inputs.param)(target) {
                    Some(ParameterValue::Resolved(v)) => !holds_secret_text(v),
                    _ => false,
                }
        } else {
            self.resource_clean(target)
        };
        if !readable {
            return;
        }
        let expr = single("Ref", Value::String(target.to_owned()));
        if let Some(value) = (self.inputs.resolve)(&expr) {
            if !holds_secret_text(&value) {
                self.read.insert(format!("Ref:{target}"), value);
            }
        }
    }

    fn read_att(&mut self, target: &str, attribute: &str) {
        let Some(res) = self.inputs.template.resources.get(target) else {
            return;
        };
        if is_custom(&res.type_) || is_nested(&res.type_) || !self.resource_clean(target) {
            return;
        }
        let expr = single(
            "Fn::GetAtt",
            Value::Array(vec![target.into(), attribute.into()]),
        );
        if let Some(value) = (self.inputs.resolve)(&expr) {
            if !holds_secret_text(&value) {
                self.read
                    .insert(format!("GetAtt:{target}.{attribute}"), value);
            }
        }
    }

    /// Whether `id`'s definition reads no secret, NoEcho or cross-stack value, no undeclared
    /// name, no mapping holding a reference and no custom resource's attribute, directly or
    /// through another resource.
    fn resource_clean(&mut self, id: &str) -> bool {
        if let Some(known) = self.clean.get(id) {
            return *known;
        }
        let Some(res) = self.inputs.template.resources.get(id) else {
            return false;
        };
        self.clean.insert(id.to_owned(), false);
        let props = Value::Object(res.properties.clone());
        let verdict = self.definition_clean(&props);
        self.clean.insert(id.to_owned(), verdict);
        verdict
    }

    fn definition_clean(&mut self, v: &Value) -> bool {
        if let Some((name, arg)) = intrinsic(v) {
            return match name {
                "Ref" => arg.as_str().is_some_and(|t| self.name_clean(t)),
                "Fn::GetAtt" => get_att_target(arg).is_some_and(|(t, _)| {
                    self.inputs
                        .template
                        .resources
                        .get(&t)
                        .is_some_and(|r| !is_custom(&r.type_) && !is_nested(&r.type_))
                        && self.resource_clean(&t)
                }),
                "Fn::ImportValue" | "Fn::GetStackOutput" => false,
                "Fn::FindInMap" => {
                    let mapping_clean = arg
                        .get(0)
                        .and_then(Value::as_str)
                        .and_then(|m| self.inputs.template.mappings.get(m))
                        .is_some_and(|m| !holds_reference(m));
                    mapping_clean && self.definition_clean(arg)
                }
                "Fn::Sub" => {
                    let text = match arg {
                        Value::String(s) => s.as_str(),
                        Value::Array(a) => a.first().and_then(Value::as_str).unwrap_or(""),
                        _ => "",
                    };
                    let vars = arg.get(1).and_then(Value::as_object);
                    !text.contains(DYNAMIC_REFERENCE_OPENER)
                        && vars.is_none_or(|m| m.values().all(|x| self.definition_clean(x)))
                        && sub_variables(text).iter().all(|var| {
                            vars.is_some_and(|m| m.contains_key(var))
                                || match var.split_once('.') {
                                    Some((t, _)) if !self.is_parameter(var) => {
                                        self.inputs.template.resources.get(t).is_some_and(|r| {
                                            !is_custom(&r.type_) && !is_nested(&r.type_)
                                        }) && self.resource_clean(t)
                                    }
                                    _ => self.name_clean(var),
                                }
                        })
                }
                "Fn::If" => {
                    let condition_clean = arg
                        .get(0)
                        .and_then(Value::as_str)
                        .is_some_and(|c| self.condition_clean(c, &mut Vec::new()));
                    condition_clean
                        && arg
                            .as_array()
                            .is_some_and(|a| a.iter().skip(1).all(|x| self.definition_clean(x)))
                }
                _ => self.definition_clean(arg),
            };
        }
        match v {
            Value::String(s) => !s.contains(DYNAMIC_REFERENCE_OPENER),
            Value::Array(items) => items.iter().all(|x| self.definition_clean(x)),
            Value::Object(m) => m.values().all(|x| self.definition_clean(x)),
            _ => true,
        }
    }

    /// A name a definition reads through `Ref` / `${...}`.
    fn name_clean(&mut self, name: &str) -> bool {
        if name.starts_with("AWS::") {
            true
        } else if self.is_parameter(name) {
            !(self.inputs.secret_params)(name)
                && !matches!((self.inputs.param)(name), Some(ParameterValue::Resolved(v)) if holds_secret_text(v))
        } else {
            self.resource_clean(name)
        }
    }

    /// Whether condition `name` (and every condition it names) reads only clean parameters.
    fn condition_clean(&mut self, name: &str, seen: &mut Vec<String>) -> bool {
        if seen.iter().any(|s| s == name) {
            return false;
        }
        seen.push(name.to_owned());
        let Some(definition) = self.inputs.template.conditions.get(name).cloned() else {
            return false;
        };
        self.condition_value_clean(&definition, seen)
    }

    fn condition_value_clean(&mut self, v: &Value, seen: &mut Vec<String>) -> bool {
        if let Some((name, arg)) = intrinsic(v) {
            return match name {
                "Ref" => arg.as_str().is_some_and(|t| {
                    t.starts_with("AWS::") || (self.is_parameter(t) && self.name_clean(t))
                }),
                "Condition" => arg.as_str().is_some_and(|c| self.condition_clean(c, seen)),
                "Fn::FindInMap" => {
                    arg.get(0)
                        .and_then(Value::as_str)
                        .and_then(|m| self.inputs.template.mappings.get(m))
                        .is_some_and(|m| !holds_reference(m))
                        && self.condition_value_clean(arg, seen)
                }
                "Fn::GetAtt" | "Fn::ImportValue" | "Fn::GetStackOutput" => false,
                _ => self.condition_value_clean(arg, seen),
            };
        }
        match v {
            Value::Object(m) if m.len() == 1 && m.contains_key("Condition") => m
                .get("Condition")
                .and_then(Value::as_str)
                .is_some_and(|c| self.condition_clean(c, seen)),
            Value::String(s) => !s.contains(DYNAMIC_REFERENCE_OPENER),
            Value::Array(items) => items.iter().all(|x| self.condition_value_clean(x, seen)),
            Value::Object(m) => m.values().all(|x| self.condition_value_clean(x, seen)),
            _ => true,
        }
    }
}

fn single(key: &str, arg: Value) -> Value {
    let mut m = Map::new();
    m.insert(key.to_owned(), arg);
    Value::Object(m)
}

/// `Fn::GetAtt`'s target and attribute, both literal (`[R, A]` or `"R.A"`).
fn get_att_target(arg: &Value) -> Option<(String, String)> {
    match arg {
        Value::String(s) => s.split_once('.').map(|(t, a)| (t.to_owned(), a.to_owned())),
        Value::Array(a) => Some((
            a.first()?.as_str()?.to_owned(),
            a.get(1)?.as_str()?.to_owned(),
        )),
        _ => None,
    }
}

/// The `${Name}` / `${Res.Attr}` variables of an `Fn::Sub` string (`${!...}` is literal).
fn sub_variables(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("${") {
        let after = &rest[open + 2..];
        let Some(close) = after.find('}') else {
            break;
        };
        let name = after[..close].trim();
        if !name.starts_with('!') && !name.is_empty() {
            out.push(name.to_owned());
        }
        rest = &after[close + 1..];
    }
    out
}

fn is_custom(resource_type: &str) -> bool {
    resource_type == "AWS::CloudFormation::CustomResource" || resource_type.starts_with("Custom::")
}

fn is_nested(resource_type: &str) -> bool {
    resource_type == "AWS::CloudFormation::Stack"
}

/// Whether a value holds a dynamic reference anywhere.
fn holds_reference(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains(DYNAMIC_REFERENCE_OPENER),
        Value::Array(items) => items.iter().any(holds_reference),
        Value::Object(m) => m.values().any(holds_reference),
        _ => false,
    }
}

/// A resolved input that carries a reference or a mask is never hashed.
fn holds_secret_text(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains(DYNAMIC_REFERENCE_OPENER) || s.contains(MASK),
        Value::Array(items) => items.iter().any(holds_secret_text),
        Value::Object(m) => m.values().any(holds_secret_text),
        _ => false,
    }
}

/// JSON with object keys sorted at every level: the same value hashes the same whatever
/// order a synthesizer wrote its keys in.
fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let ordered: BTreeMap<&String, Value> =
                    m.iter().map(|(k, x)| (k, sorted(x))).collect();
                Value::Object(ordered.into_iter().map(|(k, x)| (k.clone(), x)).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
#[path = "masked_tests.rs"]
mod tests;
