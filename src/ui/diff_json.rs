//! `cdkd diff --json` for machines. Names and values are escaped, never stripped: a consumer
//! matching on a name must see exactly the name, so control, bidi and other invisible
//! characters are written as `\uXXXX` escapes (the payload parses back to the same values, and
//! nothing in it can drive a terminal it is printed to).

use serde::Serialize;

use crate::engine::diff::StackDiff;
use crate::redact::fold::is_invisible;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Payload<'a> {
    has_changes: bool,
    blocked: bool,
    stacks: &'a [StackDiff],
}

/// The pretty-printed payload for `diffs`.
pub fn render_json(diffs: &[StackDiff]) -> String {
    let payload = Payload {
        has_changes: diffs.iter().any(StackDiff::has_changes),
        blocked: diffs.iter().any(StackDiff::is_blocked),
        stacks: diffs,
    };
    let text = serde_json::to_string_pretty(&payload)
        .unwrap_or_else(|e| format!("{{\"error\": \"the diff could not be serialized: {e}\"}}"));
    escape_invisible(&text)
}

/// JSON text with every remaining invisible or control character escaped. serde_json already
/// escapes C0 controls; this covers DEL, C1 controls and the invisible format characters, which
/// may only occur inside strings, where `\uXXXX` (a surrogate pair above U+FFFF) is equivalent.
pub fn escape_invisible(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if (c.is_control() && c != '\n' && c != ' ' && c != '\t' && c != '\r') || is_invisible(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{:04x}", u));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_text_parses_back_to_the_same_value() {
        let value = serde_json::json!({"name": "a\u{202E}b\u{7f}c\u{E0001}d\u{200B}"});
        let text = escape_invisible(&serde_json::to_string(&value).unwrap());
        assert!(text.is_ascii(), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }
}
