//! Finding the references one template value makes to other template entities.
//!
//! CloudFormation derives a resource's dependencies from the intrinsic
//! functions in its properties: `Ref`, `Fn::GetAtt` and the placeholders of
//! `Fn::Sub`, wherever they are nested (inside `Fn::If` branches,
//! `Fn::Join` lists, plain maps and lists). This module only reads values;
//! deciding which names are resources in scope is the graph builder's job.
//!
//! An intrinsic is an object with exactly one key; an object with more keys
//! is plain data and every value in it is searched. Names of pseudo
//! parameters (`AWS::Region`, ...) are never returned.

use serde_json::{Map, Value};

/// How a value names another entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RefVia {
    /// `{"Ref": "X"}`.
    Ref,
    /// `{"Fn::GetAtt": ["X", "Attr"]}` or `{"Fn::GetAtt": "X.Attr"}`.
    GetAtt,
    /// A `${X}` or `${X.Attr}` placeholder of `Fn::Sub`.
    Sub,
}

/// One reference found in a value. The target may be a resource, a parameter
/// or anything else the template names; the caller decides.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    /// The logical id (or parameter name) named.
    pub target: String,
    /// The attribute read (`Fn::GetAtt`, `${X.Attr}`); `None` for a plain
    /// `Ref`/`${X}`, and for a `Fn::GetAtt` whose attribute is itself an
    /// intrinsic.
    pub attribute: Option<String>,
    pub via: RefVia,
}

/// Every reference in `value`, in document order (duplicates kept).
pub fn references(value: &Value) -> Vec<Reference> {
    let mut out = Vec::new();
    collect(value, &mut out, 0);
    out
}

/// Nesting deeper than this is not searched (templates are far shallower;
/// the limit only keeps hostile input from exhausting the stack).
const MAX_DEPTH: usize = 256;

fn collect(value: &Value, out: &mut Vec<Reference>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Array(items) => items.iter().for_each(|v| collect(v, out, depth + 1)),
        Value::Object(map) if map.len() == 1 => {
            let (key, arg) = map.iter().next().expect("one entry");
            intrinsic(key, arg, out, depth);
        }
        Value::Object(map) => map.values().for_each(|v| collect(v, out, depth + 1)),
        _ => {}
    }
}

fn intrinsic(key: &str, arg: &Value, out: &mut Vec<Reference>, depth: usize) {
    match (key, arg) {
        ("Ref", Value::String(name)) => push(out, name, None, RefVia::Ref),
        ("Fn::GetAtt", Value::String(dotted)) => {
            // The short string form: `Resource.Attr` (the attribute may hold
            // further dots, e.g. `Stack.Outputs.Name`).
            let (target, attr) = match dotted.split_once('.') {
                Some((t, a)) => (t, Some(a.to_string())),
                None => (dotted.as_str(), None),
            };
            push(out, target, attr, RefVia::GetAtt);
        }
        ("Fn::GetAtt", Value::Array(items)) => match items.first() {
            Some(Value::String(target)) => {
                let rest = &items[1..];
                let attr = attribute_name(rest);
                push(out, target, attr, RefVia::GetAtt);
                rest.iter().for_each(|v| collect(v, out, depth + 1));
            }
            _ => items.iter().for_each(|v| collect(v, out, depth + 1)),
        },
        ("Fn::Sub", Value::String(text)) => sub_placeholders(text, None, out),
        ("Fn::Sub", Value::Array(items)) => match (items.first(), items.get(1)) {
            (Some(Value::String(text)), vars) => {
                let vars = vars.and_then(Value::as_object);
                sub_placeholders(text, vars, out);
                items[1..].iter().for_each(|v| collect(v, out, depth + 1));
            }
            _ => items.iter().for_each(|v| collect(v, out, depth + 1)),
        },
        // `{"Condition": "Name"}` names a condition, never a resource.
        ("Condition", Value::String(_)) => {}
        // Every other function (and any non-intrinsic single-key map): search
        // its argument.
        _ => collect(arg, out, depth + 1),
    }
}

/// The attribute of a list-form `Fn::GetAtt` when it is literal text.
fn attribute_name(rest: &[Value]) -> Option<String> {
    let parts: Option<Vec<&str>> = rest.iter().map(Value::as_str).collect();
    match parts {
        Some(parts) if !parts.is_empty() => Some(parts.join(".")),
        _ => None,
    }
}

fn push(out: &mut Vec<Reference>, target: &str, attribute: Option<String>, via: RefVia) {
    if target.is_empty() || is_pseudo(target) {
        return;
    }
    out.push(Reference {
        target: target.to_string(),
        attribute,
        via,
    });
}

/// `AWS::Region`, `AWS::NoValue`, ...: pseudo parameters, never logical ids
/// (which are alphanumeric).
pub fn is_pseudo(name: &str) -> bool {
    name.starts_with("AWS::")
}

/// The names in the `${...}` placeholders of a `Fn::Sub` string.
///
/// `${!Literal}` is an escape and names nothing; a placeholder whose whole
/// name is a key of the variables map names that variable, not a resource.
pub fn sub_placeholders(text: &str, vars: Option<&Map<String, Value>>, out: &mut Vec<Reference>) {
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return;
        };
        let name = after[..end].trim();
        rest = &after[end + 1..];
        if name.starts_with('!') || vars.is_some_and(|v| v.contains_key(name)) {
            continue;
        }
        match name.split_once('.') {
            Some((target, attr)) => push(out, target, Some(attr.to_string()), RefVia::Sub),
            None => push(out, name, None, RefVia::Sub),
        }
    }
}
