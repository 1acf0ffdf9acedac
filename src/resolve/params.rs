//! Binding a template's Parameters: overrides, defaults, types, constraints.
//!
//! The value `Ref` gives a parameter follows CloudFormation: a string for
//! `String`, `Number` (validated as a number but passed on as written) and
//! the AWS-specific scalar types; a list of strings for `CommaDelimitedList`,
//! `List<Number>` and `List<AWS::...>`, split on commas with each member
//! trimmed. An `AWS::SSM::Parameter::Value<...>` parameter's value is an SSM
//! parameter *name*, read through [`ExternalLookup::ssm_parameter`]; when
//! that read fails the parameter stays unresolved and only a `Ref` to it is
//! an error, so the CDK's `BootstrapVersion` parameter (read only by the
//! Rules, which cdkd does not evaluate) never gets in the way.

use indexmap::IndexMap;
use serde_json::Value;

use super::error::{ResolveError, ResolveErrorKind};
use super::lookup::ExternalLookup;
use crate::template::{Parameter, Template};

/// One `--parameters [STACK:]KEY=VALUE` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterOverride {
    /// The stack it is for; `None` applies to every stack declaring `key`.
    pub stack: Option<String>,
    pub key: String,
    pub value: String,
}

impl ParameterOverride {
    /// Parses `KEY=VALUE` or `STACK:KEY=VALUE` (the value may hold `=` and
    /// `:`); `*:KEY=VALUE` is for every stack, as `KEY=VALUE`. `None` when
    /// there is no `=` or the key is empty.
    pub fn parse(text: &str) -> Option<Self> {
        let (left, value) = text.split_once('=')?;
        let (stack, key) = match left.split_once(':') {
            Some(("*", key)) => (None, key),
            Some((stack, key)) => (Some(stack.to_string()), key),
            None => (None, left),
        };
        if key.is_empty() || stack.as_deref() == Some("") {
            return None;
        }
        Some(ParameterOverride {
            stack,
            key: key.to_string(),
            value: value.to_string(),
        })
    }
}

/// What `Ref` to a parameter gives.
#[derive(Debug, Clone, PartialEq)]
pub enum ParameterValue {
    /// A string, or a list of strings for the list types.
    Resolved(Value),
    /// No value could be found (an SSM-typed parameter whose lookup failed);
    /// a `Ref` to it fails with this reason.
    Unresolved(String),
}

#[derive(Debug, Clone, PartialEq)]
struct Bound {
    value: ParameterValue,
    no_echo: bool,
}

/// A template's parameters with their values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BoundParameters {
    entries: IndexMap<String, Bound>,
}

impl BoundParameters {
    /// Adds (or replaces) a bound parameter.
    pub fn insert(&mut self, name: impl Into<String>, value: ParameterValue, no_echo: bool) {
        self.entries.insert(name.into(), Bound { value, no_echo });
    }

    pub fn get(&self, name: &str) -> Option<&ParameterValue> {
        self.entries.get(name).map(|b| &b.value)
    }

    /// Every parameter in template order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ParameterValue)> {
        self.entries.iter().map(|(k, b)| (k.as_str(), &b.value))
    }

    pub fn is_no_echo(&self, name: &str) -> bool {
        self.entries.get(name).is_some_and(|b| b.no_echo)
    }

    /// Names and values of the resolved `NoEcho` parameters, for redaction.
    pub fn no_echo_values(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries
            .iter()
            .filter_map(|(k, b)| match (&b.value, b.no_echo) {
                (ParameterValue::Resolved(v), true) => Some((k.as_str(), v)),
                _ => None,
            })
    }
}

/// How a parameter type is bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Number,
    NumberList,
    StringList,
    /// `AWS::SSM::Parameter::Value<...>`; `true` for a list inner type.
    Ssm(bool),
}

fn classify(type_: &str) -> Option<Kind> {
    let t = type_.trim();
    if let Some(inner) = t
        .strip_prefix("AWS::SSM::Parameter::Value<")
        .and_then(|r| r.strip_suffix('>'))
    {
        return match inner {
            "String" => Some(Kind::Ssm(false)),
            "List<String>" | "CommaDelimitedList" => Some(Kind::Ssm(true)),
            _ if inner.starts_with("List<AWS::") && inner.ends_with('>') => Some(Kind::Ssm(true)),
            _ if inner.starts_with("AWS::") => Some(Kind::Ssm(false)),
            _ => None,
        };
    }
    match t {
        "String" => Some(Kind::String),
        "Number" => Some(Kind::Number),
        "List<Number>" => Some(Kind::NumberList),
        "CommaDelimitedList" => Some(Kind::StringList),
        _ if t.starts_with("List<AWS::") && t.ends_with('>') => Some(Kind::StringList),
        _ if t.starts_with("AWS::") && !t.contains('<') => Some(Kind::String),
        _ => None,
    }
}

/// Binds every parameter of `template` for stack `stack`: an override for
/// this stack wins over one for every stack, which wins over `Default`.
/// Fails on the first parameter with no value, a bad type or a broken
/// constraint, and on a `stack:`-qualified override this template lacks.
pub fn bind_parameters(
    template: &Template,
    overrides: &[ParameterOverride],
    stack: &str,
    external: &dyn ExternalLookup,
) -> Result<BoundParameters, ResolveError> {
    let err = |name: &str, kind| ResolveError {
        stack: stack.to_string(),
        path: format!("Parameters.{name}"),
        kind,
    };
    let mut chosen: IndexMap<&str, &str> = IndexMap::new();
    for o in overrides.iter().filter(|o| o.stack.is_none()) {
        chosen.insert(&o.key, &o.value);
    }
    for o in overrides
        .iter()
        .filter(|o| o.stack.as_deref() == Some(stack))
    {
        if !template.parameters.contains_key(&o.key) {
            return Err(err(
                &o.key,
                ResolveErrorKind::UnknownParameterOverride(o.key.clone()),
            ));
        }
        chosen.insert(&o.key, &o.value);
    }

    let mut bound = BoundParameters::default();
    for (name, param) in &template.parameters {
        let kind = classify(&param.type_)
            .ok_or_else(|| err(name, ResolveErrorKind::ParameterType(param.type_.clone())))?;
        let supplied = match chosen.get(name.as_str()) {
            Some(v) => v.to_string(),
            None => match &param.default {
                Some(d) => scalar_text(d),
                None => {
                    return Err(err(
                        name,
                        ResolveErrorKind::ParameterMissing {
                            stack: stack.to_string(),
                            name: name.clone(),
                        },
                    ))
                }
            },
        };
        let list = matches!(kind, Kind::StringList | Kind::NumberList);
        let members: Vec<String> = if list {
            split_list(&supplied)
        } else {
            vec![supplied.clone()]
        };
        validate(param, kind, &members).map_err(|k| err(name, k))?;
        let value = match kind {
            Kind::Ssm(is_list) => match external.ssm_parameter(supplied.trim()) {
                Ok(text) if is_list => ParameterValue::Resolved(strings(split_list(&text))),
                Ok(text) => ParameterValue::Resolved(Value::String(text)),
                Err(e) => ParameterValue::Unresolved(format!(
                    "its SSM parameter '{}' could not be read: {e}",
                    supplied.trim()
                )),
            },
            _ if list => ParameterValue::Resolved(strings(members)),
            _ => ParameterValue::Resolved(Value::String(supplied)),
        };
        bound.insert(name.clone(), value, param.no_echo);
    }
    Ok(bound)
}

fn strings(items: Vec<String>) -> Value {
    Value::Array(items.into_iter().map(Value::String).collect())
}

/// A list parameter's members: split on commas, each trimmed.
fn split_list(text: &str) -> Vec<String> {
    text.split(',').map(|s| s.trim().to_string()).collect()
}

/// The text form of a `Default` (or an `AllowedValues` entry). Lists are
/// joined with commas so list types can split them again.
fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(scalar_text).collect::<Vec<_>>().join(","),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Checks the type and the constraints of `members` (one entry for scalar
/// types, each list member for list types).
fn validate(param: &Parameter, kind: Kind, members: &[String]) -> Result<(), ResolveErrorKind> {
    let shown = |v: &str| {
        if param.no_echo {
            "the value (NoEcho, not shown)".to_string()
        } else {
            format!("'{v}'")
        }
    };
    let fail = |rule: &'static str, message: String| {
        let hint = match &param.constraint_description {
            Some(d) if !d.trim().is_empty() => format!(" ({})", d.trim()),
            _ => String::new(),
        };
        Err(ResolveErrorKind::ParameterConstraint {
            rule,
            message: format!("{message}{hint}"),
        })
    };
    let numeric = matches!(kind, Kind::Number | Kind::NumberList);
    let pattern = match &param.allowed_pattern {
        Some(p) => match regex::Regex::new(&format!("^(?:{p})$")) {
            Ok(re) => Some(re),
            Err(e) => {
                let first = e.to_string();
                let first = first.lines().last().unwrap_or("").trim().to_string();
                return fail(
                    "AllowedPattern",
                    format!("'{p}' is not a usable regular expression: {first}"),
                );
            }
        },
        None => None,
    };
    for m in members {
        let number = if numeric {
            match m.trim().parse::<f64>() {
                Ok(n) if n.is_finite() => Some(n),
                _ => return fail("Type", format!("{} is not a number", shown(m))),
            }
        } else {
            None
        };
        if let Some(allowed) = &param.allowed_values {
            let ok = allowed.iter().any(|a| {
                let text = scalar_text(a);
                text == *m
                    || number.is_some_and(|n| text.trim().parse::<f64>().is_ok_and(|x| x == n))
            });
            if !ok {
                let list: Vec<String> = allowed.iter().map(scalar_text).collect();
                return fail(
                    "AllowedValues",
                    format!("{} is not one of [{}]", shown(m), list.join(", ")),
                );
            }
        }
        if let Some(re) = &pattern {
            if !re.is_match(m) {
                let p = param.allowed_pattern.as_deref().unwrap_or("");
                return fail(
                    "AllowedPattern",
                    format!("{} does not match '{p}'", shown(m)),
                );
            }
        }
        let len = m.chars().count() as f64;
        if let Some(min) = param.min_length.filter(|min| len < *min) {
            return fail(
                "MinLength",
                format!("{} is {len} characters long, shorter than {min}", shown(m)),
            );
        }
        if let Some(max) = param.max_length.filter(|max| len > *max) {
            return fail(
                "MaxLength",
                format!("{} is {len} characters long, longer than {max}", shown(m)),
            );
        }
        if let Some(n) = number {
            if let Some(min) = param.min_value.filter(|min| n < *min) {
                return fail("MinValue", format!("{} is less than {min}", shown(m)));
            }
            if let Some(max) = param.max_value.filter(|max| n > *max) {
                return fail("MaxValue", format!("{} is greater than {max}", shown(m)));
            }
        }
    }
    Ok(())
}
