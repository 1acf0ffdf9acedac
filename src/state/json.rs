//! JSON text exactly as the TypeScript cdkd's `JSON.stringify` writes it.
//!
//! The two binaries must be able to take turns on one state file, and a state
//! file is the `JSON.stringify(state, null, 2)` of a JavaScript object. Three
//! details of that output differ from `serde_json`'s pretty printer, so the
//! text is produced here rather than by `serde_json::to_vec_pretty`:
//!
//! - Numbers are JavaScript doubles: `5.0` prints as `5`, `1e21` as `1e+21`,
//!   and an integer beyond 2^53 prints as the double it rounds to.
//! - Object keys that are array indices (`"0"`, `"42"`, up to 2^32 - 2) come
//!   first, in ascending numeric order, then every other key in insertion
//!   order: that is the order a JavaScript object enumerates its keys in.
//! - `-0` prints as `0`.
//!
//! Strings are escaped the way both agree on (`"`, `\`, control characters;
//! nothing else), so `serde_json`'s string escaper is reused.

use serde_json::{Map, Number, Value};

/// `JSON.stringify(value, null, 2)`.
pub(crate) fn to_js_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Some(0));
    out
}

/// `JSON.stringify(value)`.
pub(crate) fn to_js_compact(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, None);
    out
}

fn write_value(out: &mut String, value: &Value, depth: Option<usize>) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number(n)),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth.map(|d| d + 1));
                write_value(out, item, depth.map(|d| d + 1));
            }
            newline(out, depth);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (key, item)) in js_key_order(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth.map(|d| d + 1));
                write_string(out, key);
                out.push(':');
                if depth.is_some() {
                    out.push(' ');
                }
                write_value(out, item, depth.map(|d| d + 1));
            }
            newline(out, depth);
            out.push('}');
        }
    }
}

fn newline(out: &mut String, depth: Option<usize>) {
    if let Some(depth) = depth {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    // Serializing a `&str` cannot fail.
    match serde_json::to_string(s) {
        Ok(text) => out.push_str(&text),
        Err(_) => out.push_str("\"\""),
    }
}

/// The order JavaScript enumerates an object's own keys in: array-index keys
/// ascending, then the rest in insertion order.
fn js_key_order(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut indexed: Vec<(u32, &String, &Value)> = Vec::new();
    let mut named: Vec<(&String, &Value)> = Vec::new();
    for (key, value) in map {
        match array_index(key) {
            Some(i) => indexed.push((i, key, value)),
            None => named.push((key, value)),
        }
    }
    if indexed.is_empty() {
        return named;
    }
    indexed.sort_by_key(|(i, _, _)| *i);
    indexed
        .into_iter()
        .map(|(_, k, v)| (k, v))
        .chain(named)
        .collect()
}

/// A canonical decimal integer in `0..=2^32 - 2`, the range JavaScript treats
/// as array indices.
fn array_index(key: &str) -> Option<u32> {
    if key.is_empty() || key.len() > 10 || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if key.len() > 1 && key.starts_with('0') {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    if n <= u64::from(u32::MAX - 1) {
        Some(n as u32)
    } else {
        None
    }
}

const MAX_SAFE: u64 = 1 << 53;

/// A JSON number as JavaScript's `Number.prototype.toString` prints it.
pub(crate) fn js_number(n: &Number) -> String {
    if let Some(u) = n.as_u64() {
        if u <= MAX_SAFE {
            return u.to_string();
        }
        return js_double(u as f64);
    }
    if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= MAX_SAFE {
            return i.to_string();
        }
        return js_double(i as f64);
    }
    js_double(n.as_f64().unwrap_or(0.0))
}

/// ECMAScript Number::toString(x) for a finite double (radix 10).
pub(crate) fn js_double(x: f64) -> String {
    if !x.is_finite() {
        // JSON.stringify writes NaN and the infinities as null.
        return "null".to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    // Rust's `{:e}` prints the shortest digits that round-trip, as
    // JavaScript does: "1.2345e4", "1e-7".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exp + 1;
    let body = if k <= n && n <= 21 {
        let mut s = digits.clone();
        s.extend(std::iter::repeat_n('0', (n - k) as usize));
        s
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{}", "0".repeat((-n) as usize), digits)
    } else {
        let e = n - 1;
        let e_sign = if e < 0 { '-' } else { '+' };
        if k == 1 {
            format!("{digits}e{e_sign}{}", e.abs())
        } else {
            format!("{}.{}e{e_sign}{}", &digits[..1], &digits[1..], e.abs())
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn num(text: &str) -> String {
        let v: Value = serde_json::from_str(text).unwrap();
        to_js_compact(&v)
    }

    #[test]
    fn numbers_print_as_javascript_doubles() {
        assert_eq!(num("5"), "5");
        assert_eq!(num("5.0"), "5");
        assert_eq!(num("-5.25"), "-5.25");
        assert_eq!(num("-0.0"), "0");
        assert_eq!(num("1.5"), "1.5");
        assert_eq!(num("1710835200000"), "1710835200000");
        assert_eq!(num("1e21"), "1e+21");
        assert_eq!(num("1e20"), "100000000000000000000");
        assert_eq!(num("1.5e300"), "1.5e+300");
        assert_eq!(num("2e22"), "2e+22");
        assert_eq!(num("0.000001"), "0.000001");
        assert_eq!(num("0.0000001"), "1e-7");
        assert_eq!(num("1.5e-10"), "1.5e-10");
        assert_eq!(num("9007199254740993"), "9007199254740992");
        assert_eq!(num("-9007199254740993"), "-9007199254740992");
        assert_eq!(num("18446744073709551615"), "18446744073709552000");
        assert_eq!(num("0.1"), "0.1");
        assert_eq!(num("123.456"), "123.456");
    }

    #[test]
    fn index_keys_come_first_like_a_javascript_object() {
        let v: Value =
            serde_json::from_str(r#"{"b":1,"10":2,"2":3,"02":4,"a":5,"4294967295":6}"#).unwrap();
        assert_eq!(
            to_js_compact(&v),
            r#"{"2":3,"10":2,"b":1,"02":4,"a":5,"4294967295":6}"#
        );
    }

    #[test]
    fn pretty_matches_json_stringify_with_two_space_indent() {
        let v = json!({
            "a": [],
            "b": {},
            "c": [1, "x", {"d": null}],
            "e": "q\"\\\n\u{1}é\u{2028}/"
        });
        let expected = "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    \"x\",\n    {\n      \"d\": null\n    }\n  ],\n  \"e\": \"q\\\"\\\\\\n\\u0001é\u{2028}/\"\n}";
        assert_eq!(to_js_pretty(&v), expected);
        assert_eq!(to_js_pretty(&json!([])), "[]");
        assert_eq!(to_js_pretty(&json!("s")), "\"s\"");
    }

    #[test]
    fn compact_has_no_whitespace() {
        let v = json!({"owner": "me@host:1", "timestamp": 1, "list": [1, 2]});
        assert_eq!(
            to_js_compact(&v),
            r#"{"owner":"me@host:1","timestamp":1,"list":[1,2]}"#
        );
    }
}
