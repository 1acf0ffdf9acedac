//! Output KEYS that render a secret (scrub spec, "A state key that renders a secret"). A key
//! is a name in state and in the exports index where no value redaction reaches, so scrub
//! cannot rewrite it: it reports it, and the stack is not called clean.
//!
//! A key counts when it renders a secret, not only when it holds one literally: invisible
//! characters (controls, bidi marks, zero-width joiners, combining marks) are removed and
//! compatibility characters folded by NFKC ([`fold`]). How a key is named in the report:
//! a literal hit prints the key with the secret masked; a hit only once invisible characters
//! are removed prints that cleaned form, masked; a hit only through folding withholds the
//! name, since the printed text would keep the name's own characters.

use crate::redact::fold::{self, is_invisible};
use crate::redact::{Needles, MASK, MIN_NEEDLE_LENGTH};

/// The values a key must not render: secret plaintexts and NoEcho values, 4 characters or
/// more (a shorter one would match unrelated names).
fn values(needles: &Needles) -> Vec<&str> {
    needles
        .secret_plaintexts()
        .chain(needles.no_echo_values().iter().map(String::as_str))
        .filter(|v| v.chars().count() >= MIN_NEEDLE_LENGTH)
        .collect()
}

/// `key` with invisible characters, controls and combining marks removed.
fn visible(key: &str) -> String {
    key.chars()
        .filter(|c| !is_invisible(*c) && !c.is_control())
        .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
        .collect()
}

/// Whether `key` renders any secret the run knows.
pub fn holds_secret(key: &str, needles: &Needles) -> bool {
    values(needles).iter().any(|v| fold::find(key, v).is_some())
}

/// One line per key that renders a secret.
pub fn key_findings<'a>(keys: impl Iterator<Item = &'a String>, needles: &Needles) -> Vec<String> {
    let vals = values(needles);
    let mut out = Vec::new();
    for key in keys {
        let mut literal = false;
        let mut cleaned = false;
        let mut folded = false;
        for v in &vals {
            if key.contains(v) {
                literal = true;
            } else if visible(key).contains(v) {
                cleaned = true;
            } else if fold::find(key, v).is_some() {
                folded = true;
            }
        }
        let shown = if folded && !literal && !cleaned {
            None
        } else if literal || cleaned {
            Some(mask(&visible(key), &vals))
        } else {
            continue;
        };
        out.push(match shown {
            Some(name) if printable(&name) => format!(
                "output key {name} renders a secret; a key cannot be rewritten: rotate the \
                 secret and change the Export.Name"
            ),
            _ => "an output key (name withheld) renders a secret once read as displayed \
                  (invisible or compatibility characters); a key cannot be rewritten: rotate \
                  the secret and change the Export.Name"
                .to_string(),
        });
    }
    out
}

fn mask(text: &str, vals: &[&str]) -> String {
    let mut out = text.to_owned();
    for v in vals {
        out = out.replace(v, MASK);
    }
    out
}

fn printable(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_graphic() || c == ' ')
}

/// How an output key is named on a drop / keep line: masked where it holds a secret, and
/// withheld outright when it carries a character an output's logical id cannot (it may be an
/// export alias spelling something unseen).
pub fn display_key(key: &str, needles: &Needles) -> String {
    if !key.chars().all(|c| c.is_ascii_alphanumeric()) {
        return "(a name withheld)".to_string();
    }
    mask(key, &values(needles))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needles() -> Needles {
        let mut n = Needles::default();
        n.add_secret("hunter22", None);
        n.add_secret("abc", None);
        n
    }

    #[test]
    fn keys_are_named_masked_cleaned_or_withheld() {
        let n = needles();
        let keys: Vec<String> = vec![
            "Exp-hunter22".into(),
            "Exp-h\u{200B}unter22".into(),
            "Exp-ｈｕｎｔｅｒ２２".into(),
            "Exp-abc".into(),
            "Plain".into(),
        ];
        let f = key_findings(keys.iter(), &n);
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(f[0].contains("output key Exp-*** renders"));
        assert!(f[1].contains("output key Exp-*** renders"));
        assert!(f[2].contains("name withheld"));
        assert!(f.iter().all(|l| !l.contains("hunter22")));
        assert!(holds_secret("x-ｈｕｎｔｅｒ２２", &n));
        assert_eq!(display_key("Old", &n), "Old");
        assert_eq!(display_key("Oldhunter22", &n), "Old***");
        assert_eq!(display_key("my-export", &n), "(a name withheld)");
    }
}
