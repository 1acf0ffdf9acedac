//! CloudFormation-sourced values are data, not references.
//!
//! A value read through the CloudFormation fallbacks (`ListExports` for
//! `Fn::ImportValue`, `DescribeStacks` for `Fn::GetStackOutput`) never passed
//! through cdkd's redaction, so a `{{resolve:...}}` in it is a literal the
//! producer chose to publish (cross-stack-references, "reresolve"). The
//! dynamic-reference post-pass must leave it alone, wherever the value ended
//! up (inside an `Fn::Join`, split out by `Fn::Split`).
//!
//! [`Literals`] holds the protected texts: each such value whole and each
//! `{{resolve:...}}` token in it. Before the post-pass every occurrence is
//! swapped for a placeholder the post-pass cannot read as a reference; after
//! it the placeholders are swapped back, in the value and in the
//! expressions the secrets map persists. A template's own reference spelled
//! exactly like a protected token is left literal too (they cannot be told
//! apart once resolved).

use serde_json::Value;

use crate::resolve::dynamic::{SecretPosition, SecretsMap, DYNAMIC_REFERENCE_OPENER};

/// Opens and closes a placeholder; U+0000 never appears in a template
/// string a CDK app synthesizes, and the post-pass looks for `{{resolve:`.
const MARK: char = '\u{0}';

/// The texts to keep literal, longest first.
#[derive(Debug, Default, Clone)]
pub(crate) struct Literals {
    texts: Vec<String>,
}

impl Literals {
    /// Adds every string leaf of `value` that holds a `{{resolve:` opener,
    /// whole and token by token.
    pub(crate) fn add_value(&mut self, value: &Value) {
        match value {
            Value::String(s) if s.contains(DYNAMIC_REFERENCE_OPENER) => {
                self.push(s);
                let mut rest = s.as_str();
                while let Some(open) = rest.find(DYNAMIC_REFERENCE_OPENER) {
                    let after = &rest[open..];
                    match after.find("}}") {
                        Some(close) => {
                            self.push(&after[..close + 2]);
                            rest = &after[close + 2..];
                        }
                        None => break,
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|x| self.add_value(x)),
            Value::Object(m) => m.values().for_each(|x| self.add_value(x)),
            _ => {}
        }
    }

    fn push(&mut self, text: &str) {
        if !text.is_empty() && !self.texts.iter().any(|t| t == text) {
            self.texts.push(text.to_string());
            self.texts.sort_by_key(|t| std::cmp::Reverse(t.len()));
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Whether `text` is a protected text (a reference the prefetch need not
    /// fetch).
    pub(crate) fn contains(&self, text: &str) -> bool {
        self.texts.iter().any(|t| t == text)
    }

    /// `value` with every protected occurrence swapped for a placeholder.
    pub(crate) fn hide(&self, value: &Value) -> Value {
        map_strings(value, &|s| {
            if !s.contains(DYNAMIC_REFERENCE_OPENER) {
                return s.to_string();
            }
            let mut out = s.to_string();
            for (i, t) in self.texts.iter().enumerate() {
                if out.contains(t.as_str()) {
                    out = out.replace(t.as_str(), &placeholder(i));
                }
            }
            out
        })
    }

    /// Undoes [`Self::hide`] in `value`.
    pub(crate) fn restore(&self, value: &Value) -> Value {
        map_strings(value, &|s| self.restore_str(s))
    }

    /// Undoes [`Self::hide`] in the persisted expressions of `secrets`.
    pub(crate) fn restore_secrets(&self, secrets: SecretsMap) -> SecretsMap {
        let mut out = SecretsMap::default();
        for (path, pos) in secrets.positions() {
            out.insert_position(
                path.to_string(),
                SecretPosition {
                    expression: self.restore_str(&pos.expression),
                    references: pos.references.clone(),
                },
            );
        }
        for p in secrets.plaintexts() {
            out.insert_plaintext(p.to_string());
        }
        out
    }

    fn restore_str(&self, s: &str) -> String {
        if !s.contains(MARK) {
            return s.to_string();
        }
        let mut out = s.to_string();
        for (i, t) in self.texts.iter().enumerate() {
            out = out.replace(&placeholder(i), t);
        }
        out
    }
}

fn placeholder(i: usize) -> String {
    format!("{MARK}cdkd-literal-{i}{MARK}")
}

fn map_strings(v: &Value, f: &dyn Fn(&str) -> String) -> Value {
    match v {
        Value::String(s) => Value::String(f(s)),
        Value::Array(items) => Value::Array(items.iter().map(|x| map_strings(x, f)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), map_strings(x, f)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn hides_whole_values_and_tokens_and_restores_them() {
        let mut l = Literals::default();
        l.add_value(&json!("a {{resolve:ssm:/x}} b {{resolve:bogus}}"));
        l.add_value(&json!(["{{resolve:ssm:/y"]));
        l.add_value(&json!("no reference"));
        assert!(l.contains("{{resolve:ssm:/x}}"));
        assert!(l.contains("{{resolve:bogus}}"));
        assert!(!l.contains("no reference"));
        let v = json!({
            "Joined": "pre-a {{resolve:ssm:/x}} b {{resolve:bogus}}-post",
            "Split": ["{{resolve:ssm:/x}}", "{{resolve:ssm:/own}}"],
            "Unclosed": "{{resolve:ssm:/y"
        });
        let hidden = l.hide(&v);
        let text = hidden.to_string();
        assert!(!text.contains("{{resolve:ssm:/x}}"), "{text}");
        assert!(!text.contains("{{resolve:ssm:/y"), "{text}");
        assert!(text.contains("{{resolve:ssm:/own}}"), "{text}");
        assert_eq!(l.restore(&hidden), v);
    }

    #[test]
    fn restores_expressions_in_the_secrets_map() {
        let mut l = Literals::default();
        l.add_value(&json!("{{resolve:ssm:/cfn}}"));
        let hidden = l.hide(&json!("{{resolve:ssm:/cfn}}:{{resolve:secretsmanager:s}}"));
        let Value::String(h) = hidden else { panic!() };
        let mut m = SecretsMap::default();
        m.insert_position(
            "P",
            SecretPosition {
                expression: h,
                references: vec!["{{resolve:secretsmanager:s}}".into()],
            },
        );
        m.insert_plaintext("pw");
        let m = l.restore_secrets(m);
        assert_eq!(
            m.get("P").unwrap().expression,
            "{{resolve:ssm:/cfn}}:{{resolve:secretsmanager:s}}"
        );
        assert_eq!(m.plaintexts().collect::<Vec<_>>(), vec!["pw"]);
    }
}
