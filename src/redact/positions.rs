//! Redaction by position: where the template itself puts a secret.
//!
//! - A value resolved from a secret-bearing dynamic reference is stored as the reference's
//!   expression at the position the resolver recorded ([`SecretsMap`]), so state says what
//!   the template says and a redeploy compares equal.
//! - A value a `NoEcho` parameter fills is stored as `***` at every position the template
//!   fills from the parameter (a `Ref`, an `Fn::Sub` variable, any intrinsic reading it),
//!   whatever the value's type or length; the positions are listed in `noEchoLeaves`.
//!
//! The resolved value mirrors its template value's structure except where an intrinsic
//! stands, so the two are walked side by side.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::needles::{MASK, MIN_NEEDLE_LENGTH};
use crate::resolve::{intrinsic, ConditionVerdicts, SecretsMap};
use crate::state::PathSegment;

/// `sent` (a resolved value, dynamic references substituted) with each position `secrets`
/// names replaced by the expression to persist. Paths are spelled as the substitution pass
/// spells them relative to `sent` (`Key.Sub[0]`).
pub fn with_expressions(sent: &Value, secrets: &SecretsMap) -> Value {
    let mut out = sent.clone();
    if secrets.positions().next().is_some() {
        replace_positions(&mut out, String::new(), secrets);
    }
    out
}

fn replace_positions(v: &mut Value, path: String, secrets: &SecretsMap) {
    match v {
        Value::String(s) => {
            if let Some(p) = secrets.get(&path) {
                *s = p.expression.clone();
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter_mut().enumerate() {
                replace_positions(x, format!("{path}[{i}]"), secrets);
            }
        }
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                replace_positions(x, p, secrets);
            }
        }
        _ => {}
    }
}

/// What the template reads: the NoEcho parameter names, and the condition verdicts that
/// pick an `Fn::If` branch.
pub struct NoEchoScope<'a> {
    pub params: &'a HashSet<String>,
    pub verdicts: &'a ConditionVerdicts,
}

impl NoEchoScope<'_> {
    /// The first NoEcho parameter `template` reads (at any depth; an `Fn::If` only through
    /// the branch its condition selects, both when the verdict is not known).
    pub fn reads(&self, template: &Value) -> Option<String> {
        if self.params.is_empty() {
            return None;
        }
        match template {
            Value::Object(m) => {
                if let Some((name, arg)) = intrinsic(template) {
                    return self.reads_call(name, arg);
                }
                m.values().find_map(|x| self.reads(x))
            }
            Value::Array(items) => items.iter().find_map(|x| self.reads(x)),
            _ => None,
        }
    }

    fn reads_call(&self, name: &str, arg: &Value) -> Option<String> {
        match name {
            "Ref" => arg
                .as_str()
                .filter(|p| self.params.contains(*p))
                .map(str::to_owned),
            "Fn::Sub" => {
                let (text, vars) = match arg {
                    Value::String(s) => (s.as_str(), None),
                    Value::Array(items) => match items.first() {
                        Some(Value::String(s)) => (s.as_str(), items.get(1)),
                        _ => return self.reads(arg),
                    },
                    _ => return self.reads(arg),
                };
                let bound = vars.and_then(Value::as_object);
                if let Some(hit) = vars.and_then(|v| self.reads(v)) {
                    return Some(hit);
                }
                sub_names(text)
                    .into_iter()
                    .filter(|n| !bound.is_some_and(|b| b.contains_key(*n)))
                    .find(|n| self.params.contains(*n))
                    .map(str::to_owned)
            }
            "Fn::If" => match arg.as_array().map(Vec::as_slice) {
                Some([Value::String(cond), yes, no]) => match self.verdicts.get(cond).copied() {
                    Some(true) => self.reads(yes),
                    Some(false) => self.reads(no),
                    None => self.reads(yes).or_else(|| self.reads(no)),
                },
                _ => self.reads(arg),
            },
            _ => self.reads(arg),
        }
    }

    /// The positions in `resolved` (the value of `template` after resolution) that a NoEcho
    /// parameter fills: every scalar leaf under an intrinsic that reads one.
    pub fn leaves(&self, template: &Value, resolved: &Value) -> Vec<Vec<PathSegment>> {
        let mut out = Vec::new();
        if !self.params.is_empty() {
            self.walk(template, resolved, &mut Vec::new(), &mut out);
        }
        out
    }

    /// [`Self::leaves`] of a property bag.
    pub fn property_leaves(
        &self,
        template: &Map<String, Value>,
        resolved: &Map<String, Value>,
    ) -> Vec<Vec<PathSegment>> {
        let mut out = Vec::new();
        if self.params.is_empty() {
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

    fn walk(
        &self,
        template: &Value,
        resolved: &Value,
        path: &mut Vec<PathSegment>,
        out: &mut Vec<Vec<PathSegment>>,
    ) {
        paired_leaves(template, resolved, path, out, &|t| self.reads(t).is_some());
    }
}

/// Walks a template value beside its resolved form and collects the resolved scalar leaves
/// that `reads` says come from a secret source: every leaf under an intrinsic that reads one,
/// and every leaf of a list whose elements cannot be paired (AWS::NoValue dropped some) when
/// any element reads one. Shared by NoEcho parameters and NoEcho custom-resource attributes.
pub(super) fn paired_leaves(
    template: &Value,
    resolved: &Value,
    path: &mut Vec<PathSegment>,
    out: &mut Vec<Vec<PathSegment>>,
    reads: &dyn Fn(&Value) -> bool,
) {
    if intrinsic(template).is_some() {
        if reads(template) {
            scalar_leaves(resolved, path, out);
        }
        return;
    }
    match (template, resolved) {
        (Value::Object(t), Value::Object(r)) => {
            for (k, tv) in t {
                if let Some(rv) = r.get(k) {
                    path.push(PathSegment::Key(k.clone()));
                    paired_leaves(tv, rv, path, out, reads);
                    path.pop();
                }
            }
        }
        (Value::Array(t), Value::Array(r)) if t.len() == r.len() => {
            for (i, (tv, rv)) in t.iter().zip(r).enumerate() {
                path.push(PathSegment::Index(i as u64));
                paired_leaves(tv, rv, path, out, reads);
                path.pop();
            }
        }
        (Value::Array(_), Value::Array(_)) if reads(template) => {
            scalar_leaves(resolved, path, out);
        }
        _ => {}
    }
}

/// The `${Name}` / `${Name.Attr}` names of an `Fn::Sub` string (`${!Literal}` skipped).
fn sub_names(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("${") {
        let after = &rest[open + 2..];
        let Some(close) = after.find('}') else { break };
        let name = after[..close].trim();
        if !name.starts_with('!') {
            names.push(name);
        }
        rest = &after[close + 1..];
    }
    names
}

pub(super) fn scalar_leaves(
    v: &Value,
    path: &mut Vec<PathSegment>,
    out: &mut Vec<Vec<PathSegment>>,
) {
    match v {
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                path.push(PathSegment::Index(i as u64));
                scalar_leaves(x, path, out);
                path.pop();
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                path.push(PathSegment::Key(k.clone()));
                scalar_leaves(x, path, out);
                path.pop();
            }
        }
        Value::Null => {}
        _ => out.push(path.clone()),
    }
}

/// The strings shorter than [`MIN_NEEDLE_LENGTH`] a resource's template properties spell as
/// plain literals, with their positions.
///
/// Such a value is public text, not a plaintext a reference produced; at its position it is
/// exempt from the whole-value match by value, which would otherwise store it as a short
/// secret's expression and make the next diff read it as changed. Nothing under an intrinsic
/// or inside a dynamic reference is listed, nor anything in a list with an intrinsic element
/// (an `AWS::NoValue` could shift the positions after it).
pub fn short_literals(template: &Map<String, Value>) -> Vec<(Vec<PathSegment>, String)> {
    let mut out = Vec::new();
    for (k, t) in template {
        let mut path = vec![PathSegment::Key(k.clone())];
        literal_walk(t, &mut path, &mut out);
    }
    out
}

fn literal_walk(
    template: &Value,
    path: &mut Vec<PathSegment>,
    out: &mut Vec<(Vec<PathSegment>, String)>,
) {
    if intrinsic(template).is_some() {
        return;
    }
    match template {
        Value::String(t) => {
            let dynamic = t.contains(crate::resolve::dynamic::DYNAMIC_REFERENCE_OPENER);
            if !t.is_empty() && !dynamic && t.chars().count() < MIN_NEEDLE_LENGTH {
                out.push((path.clone(), t.clone()));
            }
        }
        Value::Object(t) => {
            for (k, tv) in t {
                path.push(PathSegment::Key(k.clone()));
                literal_walk(tv, path, out);
                path.pop();
            }
        }
        Value::Array(t) if t.iter().all(|x| intrinsic(x).is_none()) => {
            for (i, tv) in t.iter().enumerate() {
                path.push(PathSegment::Index(i as u64));
                literal_walk(tv, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The value at `path` in `v`.
pub fn get_at<'a>(v: &'a Value, path: &[PathSegment]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, seg| match seg {
        PathSegment::Key(k) => cur.as_object()?.get(k),
        PathSegment::Index(i) => cur.as_array()?.get(usize::try_from(*i).ok()?),
    })
}

pub fn get_at_mut<'a>(v: &'a mut Value, path: &[PathSegment]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |cur, seg| match seg {
        PathSegment::Key(k) => cur.as_object_mut()?.get_mut(k),
        PathSegment::Index(i) => cur.as_array_mut()?.get_mut(usize::try_from(*i).ok()?),
    })
}

/// Stores `***` at each of `leaves` in `v` (positions that do not exist are skipped).
pub fn mask_leaves(v: &mut Value, leaves: &[Vec<PathSegment>]) {
    for leaf in leaves {
        if let Some(x) = get_at_mut(v, leaf) {
            *x = Value::String(MASK.to_owned());
        }
    }
}

/// The side of a comparison with a stored record: `stored` (the form state would store) with
/// each NoEcho leaf the record does NOT hold as `***` put back to the value sent, so a record
/// an older cdkd wrote in the clear compares with the value it holds instead of reading as
/// changed.
pub fn comparable(
    stored: &Map<String, Value>,
    sent: &Map<String, Value>,
    leaves: &[Vec<PathSegment>],
    record: &Map<String, Value>,
) -> Map<String, Value> {
    let mut out = Value::Object(stored.clone());
    let (sent, record) = (Value::Object(sent.clone()), Value::Object(record.clone()));
    for leaf in leaves {
        let masked_in_record = get_at(&record, leaf).and_then(Value::as_str) == Some(MASK);
        if masked_in_record {
            continue;
        }
        if let (Some(slot), Some(v)) = (get_at_mut(&mut out, leaf), get_at(&sent, leaf)) {
            *slot = v.clone();
        }
    }
    match out {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
#[path = "positions_tests.rs"]
mod tests;
