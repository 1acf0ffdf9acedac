//! Secret references a stack output keeps as written.
//!
//! An output whose value is (or embeds) a `secretsmanager` / `ssm-secure` reference is stored,
//! and exported, as the unresolved expression (cross-stack-references, "reresolve"): that is
//! what keeps the plaintext out of state and the exports index, and a consumer re-resolves
//! the expression in the producer's region. So the output pass never fetches such a reference:
//! one it cannot read (a secret this stack creates, a secret not readable by the deployer)
//! would otherwise skip the output, and with it the export a consumer imports. Public `ssm`
//! references are still substituted (a String parameter is public config and is stored
//! resolved); an `ssm` reference to a SecureString is redacted by position as before.

use serde_json::Value;

use crate::resolve::dynamic::{split_references, Segment, DYNAMIC_REFERENCE_OPENER};

/// Opens and closes a placeholder; U+0000 never appears in a synthesized template string,
/// and the substitution pass looks for `{{resolve:`.
const MARK: char = '\u{0}';

/// The secret references hidden from a substitution pass, to put back after it.
#[derive(Debug, Default)]
pub struct KeptReferences {
    texts: Vec<String>,
}

impl KeptReferences {
    /// `value` with every secret-by-kind reference in its string leaves swapped for a
    /// placeholder. A string whose references do not parse is left as it is (the
    /// substitution pass reports it).
    pub fn hide(value: &Value) -> (Value, KeptReferences) {
        let mut kept = KeptReferences::default();
        let out = kept.hide_value(value);
        (out, kept)
    }

    /// Whether anything was hidden.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    fn hide_value(&mut self, value: &Value) -> Value {
        match value {
            Value::String(s) if s.contains(DYNAMIC_REFERENCE_OPENER) => {
                Value::String(self.hide_str(s))
            }
            Value::Array(items) => Value::Array(items.iter().map(|x| self.hide_value(x)).collect()),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| (k.clone(), self.hide_value(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn hide_str(&mut self, s: &str) -> String {
        let Ok(segments) = split_references(s) else {
            return s.to_owned();
        };
        let mut out = String::with_capacity(s.len());
        for seg in segments {
            match seg {
                Segment::Text(t) => out.push_str(t),
                Segment::Reference(r) if r.is_secret_by_kind() => {
                    let index = match self.texts.iter().position(|t| *t == r.text) {
                        Some(i) => i,
                        None => {
                            self.texts.push(r.text.clone());
                            self.texts.len() - 1
                        }
                    };
                    out.push(MARK);
                    out.push_str(&index.to_string());
                    out.push(MARK);
                }
                Segment::Reference(r) => out.push_str(&r.text),
            }
        }
        out
    }

    /// Undoes [`Self::hide`] in `value`.
    pub fn restore(&self, value: &Value) -> Value {
        if self.texts.is_empty() {
            return value.clone();
        }
        match value {
            Value::String(s) if s.contains(MARK) => Value::String(self.restore_str(s)),
            Value::Array(items) => Value::Array(items.iter().map(|x| self.restore(x)).collect()),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| (k.clone(), self.restore(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn restore_str(&self, s: &str) -> String {
        let mut out = s.to_owned();
        for (i, t) in self.texts.iter().enumerate() {
            out = out.replace(&format!("{MARK}{i}{MARK}"), t);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_references_are_hidden_and_restored_public_ones_left_for_substitution() {
        let v = json!({
            "A": "{{resolve:secretsmanager:s:SecretString:k}}",
            "B": ["pw={{resolve:ssm-secure:/p}};cfg={{resolve:ssm:/c}}"],
            "C": 3
        });
        let (hidden, kept) = KeptReferences::hide(&v);
        assert!(!kept.is_empty());
        let text = hidden.to_string();
        assert!(!text.contains("secretsmanager") && !text.contains("ssm-secure"));
        assert!(text.contains("{{resolve:ssm:/c}}"), "{text}");
        assert_eq!(kept.restore(&hidden), v);
    }

    #[test]
    fn a_value_without_secret_references_is_unchanged() {
        let v = json!(["plain", "{{resolve:ssm:/c}}", "{{resolve:bad"]);
        let (hidden, kept) = KeptReferences::hide(&v);
        assert!(kept.is_empty());
        assert_eq!(hidden, v);
    }
}
