//! Small value helpers shared by the record types, the reader and the errors:
//! [`Lenient`] for fields whose malformed shape the spec reads as absent or
//! empty, [`ValueKind`] for naming what a damaged field holds without printing
//! it, and display helpers for identifiers that come out of a state body or an
//! S3 key (anyone able to write the bucket chooses them).

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A field that is read leniently: when the stored value has the expected
/// shape it is [`Lenient::Valid`]; otherwise the raw value is kept as
/// [`Lenient::Malformed`] and written back unchanged, so a record is never
/// "repaired" by being saved.
///
/// Used only where the spec says a malformed value reads as absent or empty
/// (`exportNames`, `conditionVerdicts`, the masked-property fingerprints, ...);
/// each owner's accessor decides what a malformed value means.
#[derive(Debug, Clone, PartialEq)]
pub enum Lenient<T> {
    Valid(T),
    Malformed(Value),
}

impl<T> Lenient<T> {
    /// The value when it has the expected shape.
    pub fn valid(&self) -> Option<&T> {
        match self {
            Lenient::Valid(v) => Some(v),
            Lenient::Malformed(_) => None,
        }
    }

    pub fn valid_mut(&mut self) -> Option<&mut T> {
        match self {
            Lenient::Valid(v) => Some(v),
            Lenient::Malformed(_) => None,
        }
    }

    pub fn is_malformed(&self) -> bool {
        matches!(self, Lenient::Malformed(_))
    }
}

impl<T> From<T> for Lenient<T> {
    fn from(value: T) -> Self {
        Lenient::Valid(value)
    }
}

impl<T: Serialize> Serialize for Lenient<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Lenient::Valid(v) => v.serialize(serializer),
            Lenient::Malformed(raw) => raw.serialize(serializer),
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(deserializer)?;
        Ok(match T::deserialize(&raw) {
            Ok(v) => Lenient::Valid(v),
            Err(_) => Lenient::Malformed(raw),
        })
    }
}

/// `deserialize_with` for an optional lenient field: a present `null` is a
/// malformed value to keep, not an absent field.
pub(crate) fn present<'de, D, T>(deserializer: D) -> Result<Option<Lenient<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Lenient::deserialize(deserializer).map(Some)
}

/// What kind of JSON value a field holds, named the way a message names it
/// ("a string", "null", "an array"). A bounded token: safe to print where the
/// value itself is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    Null,
    Boolean,
    Number,
    String,
    Array,
    Object,
}

impl ValueKind {
    pub fn of(value: &Value) -> ValueKind {
        match value {
            Value::Null => ValueKind::Null,
            Value::Bool(_) => ValueKind::Boolean,
            Value::Number(_) => ValueKind::Number,
            Value::String(_) => ValueKind::String,
            Value::Array(_) => ValueKind::Array,
            Value::Object(_) => ValueKind::Object,
        }
    }
}

impl fmt::Display for ValueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ValueKind::Null => "null",
            ValueKind::Boolean => "a boolean",
            ValueKind::Number => "a number",
            ValueKind::String => "a string",
            ValueKind::Array => "an array",
            ValueKind::Object => "an object",
        })
    }
}

/// Longest identifier rendered in a message, in characters.
const IDENT_CAP: usize = 160;

/// An untrusted identifier made safe to print on one line: printable ASCII is
/// kept, anything else is escaped, and the result is capped.
pub fn display_ident(raw: &str) -> String {
    let mut out = String::new();
    for (count, c) in raw.chars().enumerate() {
        if count == IDENT_CAP {
            out.push_str("...");
            break;
        }
        if (' '..='~').contains(&c) {
            out.push(c);
        } else {
            out.extend(c.escape_unicode());
        }
    }
    out
}

/// The identifier in single quotes, for prose ("stack 'MyStack'").
pub fn quoted(raw: &str) -> String {
    format!("'{}'", display_ident(raw))
}

/// The identifier as one shell word a user can paste, or the hole `placeholder`
/// (e.g. `'<stack>'`) when it would not survive display unchanged or would not
/// be inert in a shell.
pub fn shell_word(raw: &str, placeholder: &str) -> String {
    let inert = !raw.is_empty()
        && raw.chars().count() <= IDENT_CAP
        && raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.~:@+=,/".contains(c));
    if inert {
        format!("'{raw}'")
    } else {
        format!("'{placeholder}'")
    }
}

/// A short, sanitized rendering of a raw JSON value, for `--verbose` lines and
/// for the unsupported-version message.
pub fn display_value(value: &Value) -> String {
    match value {
        Value::String(s) => display_ident(s),
        other => display_ident(&super::json::to_js_compact(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lenient_keeps_a_malformed_value_verbatim() {
        let ok: Lenient<Vec<String>> = serde_json::from_value(json!(["a"])).unwrap();
        assert_eq!(ok.valid(), Some(&vec!["a".to_string()]));
        let bad: Lenient<Vec<String>> = serde_json::from_value(json!(["a", 0])).unwrap();
        assert!(bad.is_malformed());
        assert_eq!(serde_json::to_value(&bad).unwrap(), json!(["a", 0]));
    }

    #[test]
    fn kinds_read_as_a_message_names_them() {
        assert_eq!(ValueKind::of(&json!("x")).to_string(), "a string");
        assert_eq!(ValueKind::of(&json!([])).to_string(), "an array");
        assert_eq!(ValueKind::of(&json!({})).to_string(), "an object");
        assert_eq!(ValueKind::of(&json!(null)).to_string(), "null");
        assert_eq!(ValueKind::of(&json!(1)).to_string(), "a number");
        assert_eq!(ValueKind::of(&json!(true)).to_string(), "a boolean");
    }

    #[test]
    fn identifiers_are_sanitized_and_shell_words_fall_back_to_holes() {
        assert_eq!(display_ident("a\nb\u{1b}c"), "a\\u{a}b\\u{1b}c");
        assert_eq!(display_ident(&"x".repeat(200)).len(), IDENT_CAP + 3);
        assert_eq!(shell_word("Parent~Child", "<stack>"), "'Parent~Child'");
        assert_eq!(shell_word("a'; rm -rf /", "<stack>"), "'<stack>'");
        assert_eq!(shell_word("", "<region>"), "'<region>'");
    }
}
