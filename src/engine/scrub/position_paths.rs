//! The leaf arithmetic of the by-position pass: which leaves of a resolved value hold secret
//! material (where the stored form differs from the value sent), and where each of them sits
//! in a stored record.
//!
//! A record's `properties` were written from the value sent, so its lists pair with it by
//! index. `observedProperties` is what AWS returned, in AWS's order, so list elements are
//! paired there only by their identity field (`Name` / `Key`); an element without one is left
//! alone rather than guessed at (scrub spec, "Secrets inside a list"), and the by-value pass
//! still covers it.

use serde_json::Value;

use crate::redact::positions::get_at;
use crate::redact::MASK;
use crate::state::PathSegment;

/// Where a record's lists come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pairing {
    /// Written from the value sent: lists pair by index (by identity where elements have one).
    Sent,
    /// Read back from AWS: lists pair by identity only.
    Observed,
}

/// The identity of a list element: its `Name`, else its `Key` (a string either way).
fn identity(v: &Value) -> Option<(&'static str, &str)> {
    let m = v.as_object()?;
    for field in ["Name", "Key"] {
        if let Some(s) = m.get(field).and_then(Value::as_str) {
            return Some((field, s));
        }
    }
    None
}

/// The paths (in `sent`) of every string leaf whose stored form differs from the value sent,
/// with both forms: `(path, stored, sent)`.
pub fn differing_leaves(stored: &Value, sent: &Value) -> Vec<(Vec<PathSegment>, String, String)> {
    let mut out = Vec::new();
    walk_diff(stored, sent, &mut Vec::new(), &mut out);
    out
}

fn walk_diff(
    stored: &Value,
    sent: &Value,
    path: &mut Vec<PathSegment>,
    out: &mut Vec<(Vec<PathSegment>, String, String)>,
) {
    match (stored, sent) {
        (Value::String(a), Value::String(b)) if a != b => {
            out.push((path.clone(), a.clone(), b.clone()));
        }
        (Value::Object(a), Value::Object(b)) => {
            for (k, av) in a {
                if let Some(bv) = b.get(k) {
                    path.push(PathSegment::Key(k.clone()));
                    walk_diff(av, bv, path, out);
                    path.pop();
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (av, bv)) in a.iter().zip(b).enumerate() {
                path.push(PathSegment::Index(i as u64));
                walk_diff(av, bv, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// `path` (spelled against `sent`) translated to the same leaf of `record`: list elements
/// with an identity field are found by it; others by index under [`Pairing::Sent`] only.
/// `None` when the record has no such leaf.
pub fn locate(
    sent: &Value,
    record: &Value,
    path: &[PathSegment],
    pairing: Pairing,
) -> Option<Vec<PathSegment>> {
    let mut out = Vec::with_capacity(path.len());
    let (mut s, mut r) = (sent, record);
    for seg in path {
        match seg {
            PathSegment::Key(k) => {
                s = s.as_object()?.get(k)?;
                r = r.as_object()?.get(k)?;
                out.push(seg.clone());
            }
            PathSegment::Index(i) => {
                let idx = usize::try_from(*i).ok()?;
                let s_items = s.as_array()?;
                let r_items = r.as_array()?;
                let element = s_items.get(idx)?;
                let found = match identity(element) {
                    Some(id) => {
                        let mut hits = r_items
                            .iter()
                            .enumerate()
                            .filter(|(_, x)| identity(x) == Some(id));
                        let first = hits.next()?;
                        // Two elements with one identity: which one is meant is a guess.
                        if hits.next().is_some() {
                            return None;
                        }
                        first.0
                    }
                    None if pairing == Pairing::Sent && s_items.len() == r_items.len() => idx,
                    None => return None,
                };
                s = element;
                r = r_items.get(found)?;
                out.push(PathSegment::Index(found as u64));
            }
        }
    }
    Some(out)
}

fn get_mut<'a>(v: &'a mut Value, path: &[PathSegment]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |cur, seg| match seg {
        PathSegment::Key(k) => cur.as_object_mut()?.get_mut(k),
        PathSegment::Index(i) => cur.as_array_mut()?.get_mut(usize::try_from(*i).ok()?),
    })
}

/// Puts each secret leaf's stored form back into `record` where the record holds exactly the
/// value sent there (a reference the record holds, even another one, is never rewritten: an
/// edited but undeployed reference must reach AWS on the next deploy). Returns how many
/// leaves changed.
pub fn restore_secret_leaves(
    stored: &Value,
    sent: &Value,
    record: &mut Value,
    pairing: Pairing,
) -> usize {
    let mut changed = 0;
    for (path, stored_leaf, sent_leaf) in differing_leaves(stored, sent) {
        let Some(at) = locate(sent, record, &path, pairing) else {
            continue;
        };
        if let Some(slot) = get_mut(record, &at) {
            if slot.as_str() == Some(sent_leaf.as_str()) {
                *slot = Value::String(stored_leaf);
                changed += 1;
            }
        }
    }
    changed
}

/// Masks each NoEcho leaf (paths spelled against `sent`) in `record`, whatever it holds
/// there; returns how many changed and the plaintexts the record held (for the same-record
/// value match).
pub fn mask_no_echo_leaves(
    sent: &Value,
    record: &mut Value,
    leaves: &[Vec<PathSegment>],
    pairing: Pairing,
) -> (usize, Vec<Value>) {
    let mut changed = 0;
    let mut held = Vec::new();
    for leaf in leaves {
        let Some(at) = locate(sent, record, leaf, pairing) else {
            continue;
        };
        let Some(slot) = get_mut(record, &at) else {
            continue;
        };
        match slot {
            Value::Null | Value::Array(_) | Value::Object(_) => continue,
            Value::String(s) if s == MASK => continue,
            other => {
                held.push(other.clone());
                *other = Value::String(MASK.to_owned());
                changed += 1;
            }
        }
    }
    (changed, held)
}

/// The value of `record` at `path`, if it is a string.
pub fn string_at<'a>(record: &'a Value, path: &[PathSegment]) -> Option<&'a str> {
    get_at(record, path).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const EXPR: &str = "{{resolve:secretsmanager:s:SecretString:pw}}";

    #[test]
    fn an_interpolated_secret_is_put_back_where_the_record_holds_the_value_sent() {
        let sent = json!({"Url": "postgres://u:pw1@h", "Other": "x"});
        let stored = json!({"Url": format!("postgres://u:{EXPR}@h"), "Other": "x"});
        let mut record = json!({"Url": "postgres://u:pw1@h", "Other": "x"});
        assert_eq!(
            restore_secret_leaves(&stored, &sent, &mut record, Pairing::Sent),
            1
        );
        assert_eq!(record["Url"], json!(format!("postgres://u:{EXPR}@h")));
        // A record holding another reference is left alone.
        let mut edited =
            json!({"Url": "{{resolve:secretsmanager:s:SecretString:pw::AWSPREVIOUS}}"});
        assert_eq!(
            restore_secret_leaves(&stored, &sent, &mut edited, Pairing::Sent),
            0
        );
    }

    #[test]
    fn list_elements_pair_by_name_or_key_and_observed_lists_never_by_index() {
        let sent = json!({"Env": [{"Name": "A", "Value": "a"}, {"Name": "PW", "Value": "pw1"}],
            "Plain": ["x", "pw1"]});
        let stored = json!({"Env": [{"Name": "A", "Value": "a"}, {"Name": "PW", "Value": EXPR}],
            "Plain": ["x", EXPR]});
        let mut observed = json!({"Env": [{"Name": "PW", "Value": "pw1"}, {"Name": "A", "Value": "a"},
            {"Name": "Z", "Value": "z"}], "Plain": ["x", "pw1"]});
        assert_eq!(
            restore_secret_leaves(&stored, &sent, &mut observed, Pairing::Observed),
            1
        );
        assert_eq!(observed["Env"][0]["Value"], json!(EXPR));
        assert_eq!(
            observed["Plain"][1],
            json!("pw1"),
            "no identity: left alone"
        );
        let mut props = json!({"Env": [{"Key": "x"}], "Plain": ["x", "pw1"]});
        assert_eq!(
            restore_secret_leaves(&stored, &sent, &mut props, Pairing::Sent),
            1
        );
        assert_eq!(props["Plain"][1], json!(EXPR));
    }

    #[test]
    fn no_echo_leaves_are_masked_whatever_they_hold() {
        let sent = json!({"P": "new", "N": 5, "L": ["a"]});
        let mut record = json!({"P": "old-value", "N": 5, "L": ["***"]});
        let leaves = vec![
            vec![PathSegment::Key("P".into())],
            vec![PathSegment::Key("N".into())],
            vec![PathSegment::Key("L".into()), PathSegment::Index(0)],
        ];
        let (n, held) = mask_no_echo_leaves(&sent, &mut record, &leaves, Pairing::Sent);
        assert_eq!(n, 2);
        assert_eq!(held, vec![json!("old-value"), json!(5)]);
        assert_eq!(record, json!({"P": "***", "N": "***", "L": ["***"]}));
    }
}
