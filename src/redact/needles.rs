//! Redaction by value: the plaintexts a deploy must never write down (values resolved from
//! secret-bearing dynamic references, and the stack's NoEcho parameter values), searched for
//! in what is about to be stored or printed.
//!
//! This is the second line: values the template places are redacted by position first
//! ([`super::positions`]); this pass catches a plaintext that lands elsewhere (an attribute
//! AWS echoes, a string built around it). The rules (state-schema, "version: 11"; and
//! architecture-internals, "Secrets and NoEcho values in state"):
//!
//! - a string equal to a secret plaintext, at any length, is stored as the secret's
//!   `{{resolve:...}}` expression when one is known, else as `***`;
//! - a secret plaintext of [`MIN_NEEDLE_LENGTH`] or more characters inside a longer string is
//!   replaced in place by its expression, or the whole string is stored as `***`;
//! - a NoEcho value of [`MIN_NEEDLE_LENGTH`] or more characters equal to or inside a string
//!   makes the whole string `***`;
//! - a match lying wholly inside a complete `secretsmanager` / `ssm` / `ssm-secure` reference
//!   and shorter than it is left alone (rewriting it would mangle the reference); a plaintext
//!   that is, or contains, a whole reference is still replaced (scrub spec, "Fragments inside
//!   a complete reference").

use std::fmt;

use serde_json::Value;

/// What state stores in place of a value it must not hold.
pub const MASK: &str = crate::resolve::external::REDACTION_MASK;

/// The shortest plaintext searched for inside longer strings.
pub const MIN_NEEDLE_LENGTH: usize = 4;

/// The plaintexts to keep out of what cdkd writes and prints. `Debug` shows only counts.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Needles {
    /// (plaintext, the expression that stands for it, if known)
    secrets: Vec<(String, Option<String>)>,
    no_echo: Vec<String>,
}

impl fmt::Debug for Needles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Needles {{ secrets: <{} hidden>, no_echo: <{} hidden> }}",
            self.secrets.len(),
            self.no_echo.len()
        )
    }
}

impl Needles {
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty() && self.no_echo.is_empty()
    }

    /// Adds a secret plaintext; `expression` is the `{{resolve:...}}` text it came from.
    /// An empty plaintext is ignored; a known one gains an expression it lacked. Two
    /// spellings of one value (e.g. with and without `:AWSCURRENT`) keep the shorter, then
    /// the lexically first, so the by-value fallback does not depend on which reference
    /// was fetched first.
    pub fn add_secret(&mut self, plaintext: &str, expression: Option<&str>) {
        if plaintext.is_empty() {
            return;
        }
        match self.secrets.iter_mut().find(|(p, _)| p == plaintext) {
            Some((_, e)) => match (e.as_deref(), expression) {
                (None, _) => *e = expression.map(str::to_owned),
                (Some(kept), Some(new)) if (new.len(), new) < (kept.len(), kept) => {
                    *e = Some(new.to_owned())
                }
                _ => {}
            },
            None => {
                self.secrets
                    .push((plaintext.to_owned(), expression.map(str::to_owned)));
                // Longest first, so a plaintext inside another is not replaced first.
                self.secrets.sort_by_key(|s| std::cmp::Reverse(s.0.len()));
            }
        }
    }

    /// Adds a NoEcho parameter value: a string as is, a number as its text, a list element
    /// by element and as its comma-joined form.
    pub fn add_no_echo(&mut self, value: &Value) {
        match value {
            Value::String(s) => self.push_no_echo(s),
            Value::Number(n) => self.push_no_echo(&n.to_string()),
            Value::Array(items) => {
                let texts: Vec<String> = items
                    .iter()
                    .filter_map(|v| match v {
                        Value::String(s) => Some(s.clone()),
                        Value::Number(n) => Some(n.to_string()),
                        _ => None,
                    })
                    .collect();
                for t in &texts {
                    self.push_no_echo(t);
                }
                self.push_no_echo(&texts.join(","));
            }
            _ => {}
        }
    }

    fn push_no_echo(&mut self, text: &str) {
        if !text.is_empty() && !self.no_echo.iter().any(|v| v == text) {
            self.no_echo.push(text.to_owned());
            self.no_echo.sort_by_key(|b| std::cmp::Reverse(b.len()));
        }
    }

    /// Adds everything `other` holds.
    pub fn merge(&mut self, other: &Needles) {
        for (p, e) in &other.secrets {
            self.add_secret(p, e.as_deref());
        }
        for v in &other.no_echo {
            self.push_no_echo(v);
        }
    }

    /// The NoEcho values (longest first).
    pub fn no_echo_values(&self) -> &[String] {
        &self.no_echo
    }

    /// A copy without the secrets shorter than [`MIN_NEEDLE_LENGTH`]: the widened match scrub
    /// runs across a whole record never uses those (scrub spec, "It never guesses").
    pub fn without_short_secrets(&self) -> Needles {
        let mut out = self.clone();
        out.secrets
            .retain(|(p, _)| p.chars().count() >= MIN_NEEDLE_LENGTH);
        out
    }

    /// The secret plaintexts with the expression that stands for each (longest first).
    pub fn secrets(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.secrets.iter().map(|(p, e)| (p.as_str(), e.as_deref()))
    }

    /// The secret plaintexts (longest first).
    pub fn secret_plaintexts(&self) -> impl Iterator<Item = &str> {
        self.secrets.iter().map(|(p, _)| p.as_str())
    }

    /// What state stores for string `s`; `None` when it may be stored as it is.
    pub fn redact_str(&self, s: &str) -> Option<String> {
        if self.is_empty() || s.is_empty() {
            return None;
        }
        if let Some((_, expr)) = self.secrets.iter().find(|(p, _)| p == s) {
            return Some(expr.clone().unwrap_or_else(|| MASK.to_owned()));
        }
        if self
            .no_echo
            .iter()
            .any(|v| v.chars().count() >= MIN_NEEDLE_LENGTH && v == s)
        {
            return Some(MASK.to_owned());
        }
        let mut text = s.to_owned();
        let mut changed = false;
        for (plain, expr) in &self.secrets {
            if plain.chars().count() < MIN_NEEDLE_LENGTH || !text.contains(plain.as_str()) {
                continue;
            }
            let hits = unprotected_matches(&text, plain);
            if hits.is_empty() {
                continue;
            }
            let Some(e) = expr else {
                return Some(MASK.to_owned());
            };
            let mut out = String::with_capacity(text.len());
            let mut last = 0;
            for start in hits {
                out.push_str(&text[last..start]);
                out.push_str(e);
                last = start + plain.len();
            }
            out.push_str(&text[last..]);
            text = out;
            changed = true;
        }
        if self.no_echo.iter().any(|v| {
            v.chars().count() >= MIN_NEEDLE_LENGTH && !unprotected_matches(&text, v).is_empty()
        }) {
            return Some(MASK.to_owned());
        }
        changed.then_some(text)
    }

    /// `value` with every string leaf redacted (map keys are left alone: redaction rewrites
    /// values only).
    pub fn redact_value(&self, value: &Value) -> Value {
        let mut v = value.clone();
        self.redact_in_place(&mut v);
        v
    }

    /// [`Self::redact_value`] in place; whether anything changed.
    pub fn redact_in_place(&self, value: &mut Value) -> bool {
        if self.is_empty() {
            return false;
        }
        match value {
            Value::String(s) => match self.redact_str(s) {
                Some(r) => {
                    *s = r;
                    true
                }
                None => false,
            },
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |acc, x| self.redact_in_place(x) | acc),
            Value::Object(m) => m
                .values_mut()
                .fold(false, |acc, x| self.redact_in_place(x) | acc),
            _ => false,
        }
    }

    /// A message for the terminal with every plaintext occurrence replaced by `***` (a
    /// plaintext shorter than [`MIN_NEEDLE_LENGTH`] only when it is the whole message).
    pub fn mask_text(&self, text: &str) -> String {
        let all = self
            .secrets
            .iter()
            .map(|(p, _)| p)
            .chain(self.no_echo.iter());
        let mut out = text.to_owned();
        for needle in all {
            if needle.chars().count() >= MIN_NEEDLE_LENGTH {
                out = out.replace(needle.as_str(), MASK);
            } else if out == *needle {
                out = MASK.to_owned();
            }
        }
        out
    }
}

/// The services whose references cdkd resolves: a match inside one of them is protected.
const PROTECTING_SERVICES: [&str; 3] = ["secretsmanager:", "ssm:", "ssm-secure:"];

/// The byte spans of the complete references in `text` (scrub spec, "Fragments inside a
/// complete reference"): an opener naming a service cdkd resolves, up to the first `}}`
/// after it. An opener with no later `}}` brackets nothing.
fn reference_spans(text: &str) -> Vec<(usize, usize)> {
    const OPENER: &str = crate::resolve::dynamic::DYNAMIC_REFERENCE_OPENER;
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find(OPENER).map(|i| i + from) {
        let Some(close) = text[open..].find("}}").map(|i| i + open + 2) else {
            break;
        };
        let service = &text[open + OPENER.len()..];
        if PROTECTING_SERVICES.iter().any(|p| service.starts_with(p)) {
            spans.push((open, close));
        }
        from = close;
    }
    spans
}

/// The start of every non-overlapping match of `needle` in `text` except one lying wholly
/// inside a complete reference and shorter than it (rewriting there would produce a
/// reference no service can resolve); a needle that is or contains a whole reference is
/// still matched.
fn unprotected_matches(text: &str, needle: &str) -> Vec<usize> {
    let spans = reference_spans(text);
    text.match_indices(needle)
        .map(|(i, _)| i)
        .filter(|&i| {
            let end = i + needle.len();
            !spans
                .iter()
                .any(|&(a, b)| a <= i && end <= b && needle.len() < b - a)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const EXPR: &str = "{{resolve:secretsmanager:db:SecretString:password}}";

    fn needles() -> Needles {
        let mut n = Needles::default();
        n.add_secret("s3cr3t-pass", Some(EXPR));
        n.add_secret("nokey-secret", None);
        n.add_no_echo(&json!("hunter22"));
        n.add_no_echo(&json!("abc"));
        n
    }

    #[test]
    fn two_spellings_keep_the_same_expression_whatever_the_order() {
        let short = "{{resolve:secretsmanager:s:SecretString:k}}";
        let long = "{{resolve:secretsmanager:s:SecretString:k:AWSCURRENT}}";
        for order in [[short, long], [long, short]] {
            let mut n = Needles::default();
            for e in order {
                n.add_secret("plain-value", Some(e));
            }
            assert_eq!(n.redact_str("plain-value").as_deref(), Some(short));
        }
    }

    #[test]
    fn a_whole_secret_becomes_its_expression_or_the_mask() {
        let n = needles();
        assert_eq!(n.redact_str("s3cr3t-pass").as_deref(), Some(EXPR));
        assert_eq!(n.redact_str("nokey-secret").as_deref(), Some(MASK));
        assert_eq!(n.redact_str("public"), None);
    }

    #[test]
    fn an_embedded_secret_is_replaced_in_place_by_its_expression() {
        let n = needles();
        assert_eq!(
            n.redact_str("postgres://u:s3cr3t-pass@h/db").as_deref(),
            Some(format!("postgres://u:{EXPR}@h/db").as_str())
        );
        assert_eq!(n.redact_str("x-nokey-secret-y").as_deref(), Some(MASK));
    }

    #[test]
    fn no_echo_values_mask_the_whole_string_from_four_characters() {
        let n = needles();
        assert_eq!(n.redact_str("hunter22").as_deref(), Some(MASK));
        assert_eq!(n.redact_str("pre-hunter22-post").as_deref(), Some(MASK));
        // Shorter values are redacted only at the positions the template names.
        assert_eq!(n.redact_str("abc"), None);
        assert_eq!(n.redact_str("xabcx"), None);
    }

    #[test]
    fn expressions_are_never_rewritten() {
        let mut n = Needles::default();
        n.add_secret("secretsmanager", None);
        assert_eq!(n.redact_str(EXPR), None);
    }

    #[test]
    fn a_fragment_inside_a_complete_reference_is_left_alone() {
        let mut n = Needles::default();
        n.add_secret("appdb", Some("{{resolve:ssm:/app/dbname}}"));
        let stored = "jdbc://appdb:{{resolve:secretsmanager:appdb/creds:SecretString:password}}@h";
        assert_eq!(
            n.redact_str(stored).as_deref(),
            Some(
                "jdbc://{{resolve:ssm:/app/dbname}}:\
                 {{resolve:secretsmanager:appdb/creds:SecretString:password}}@h"
            )
        );
        // Another service's braces protect nothing; a stray opener with no closer neither.
        assert_eq!(
            n.redact_str("{{resolve:appdb}}").as_deref(),
            Some("{{resolve:{{resolve:ssm:/app/dbname}}}}")
        );
        assert_eq!(
            n.redact_str("{{resolve:ssm:x appdb").as_deref(),
            Some("{{resolve:ssm:x {{resolve:ssm:/app/dbname}}")
        );
        // A secret that contains a whole reference plus text is still replaced.
        let mut n = Needles::default();
        n.add_secret(
            "pw-{{resolve:ssm:/a}}",
            Some("{{resolve:secretsmanager:s}}"),
        );
        assert_eq!(
            n.redact_str("x pw-{{resolve:ssm:/a}} y").as_deref(),
            Some("x {{resolve:secretsmanager:s}} y")
        );
    }

    #[test]
    fn short_secrets_leave_the_widened_match() {
        let mut n = Needles::default();
        n.add_secret("abc", Some("{{resolve:ssm-secure:/s}}"));
        n.add_secret("abcdef", Some("{{resolve:ssm-secure:/t}}"));
        assert_eq!(
            n.redact_str("abc").as_deref(),
            Some("{{resolve:ssm-secure:/s}}")
        );
        assert_eq!(n.redact_str("xabcx"), None);
        let wide = n.without_short_secrets();
        assert_eq!(wide.redact_str("abc"), None);
        assert_eq!(wide.secrets().count(), 1);
    }

    #[test]
    fn values_are_redacted_at_every_depth_keys_kept() {
        let n = needles();
        let v = json!({"a": ["s3cr3t-pass", {"hunter22": "x hunter22"}], "n": 1});
        assert_eq!(
            n.redact_value(&v),
            json!({"a": [EXPR, {"hunter22": MASK}], "n": 1})
        );
    }

    #[test]
    fn terminal_text_is_masked_and_debug_hides_values() {
        let n = needles();
        assert_eq!(
            n.mask_text("bad value s3cr3t-pass and hunter22"),
            "bad value *** and ***"
        );
        assert_eq!(n.mask_text("abc"), "***");
        assert!(!format!("{n:?}").contains("hunter22"));
    }

    #[test]
    fn list_no_echo_values_count_element_by_element() {
        let mut n = Needles::default();
        n.add_no_echo(&json!(["alpha1", "beta22"]));
        assert_eq!(n.redact_str("beta22").as_deref(), Some(MASK));
        assert_eq!(n.redact_str("alpha1,beta22").as_deref(), Some(MASK));
    }
}
