//! Rewriting the references a stack record holds to the resources being orphaned.
//!
//! Once a resource leaves state, nothing can resolve `Ref` / `Fn::GetAtt` / an `Fn::Sub`
//! placeholder of it any more, so every such reference left in a surviving record (its
//! properties and attributes, and the stack outputs) is replaced by the value it stands for:
//! `Ref` by the value CloudFormation's `Ref` returns ([`refs::ref_value`] of its record, so
//! one segment of a composite id where that is what `Ref` gives), `Fn::GetAtt` by the value
//! its recorded attributes cache holds (the cache a deploy reads `Fn::GetAtt` from). A dependency on the orphan is dropped.
//! A reference with no value to put in its place (no physical id, an attribute the cache does
//! not hold, an unreadable row or cache) is reported as unresolvable and left as it was.
//!
//! Pure: works on JSON values, never calls AWS.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::provider::refs;
use crate::resolve::intrinsic;

/// One reference replaced (or a dependency dropped: `after` is `None`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rewrite {
    /// The logical id whose record held it (`<outputs>` for the stack outputs).
    pub owner: String,
    /// Where inside it, e.g. `properties.Value` or `dependencies`.
    pub path: String,
    pub before: Value,
    pub after: Option<Value>,
}

/// A reference to an orphan that has no value to put in its place.
#[derive(Debug, Clone, PartialEq)]
pub struct Unresolved {
    pub owner: String,
    pub path: String,
    /// The orphaned logical id it reads.
    pub target: String,
    /// `Ref`, or the attribute name.
    pub attribute: String,
    pub reason: String,
}

/// The orphaned rows, exactly as stored (a row may be damaged).
pub struct Orphans<'a> {
    pub rows: &'a IndexMap<String, Value>,
}

impl Orphans<'_> {
    fn contains(&self, id: &str) -> bool {
        self.rows.contains_key(id)
    }

    /// The value `Ref` of `id` stands for.
    fn reference(&self, id: &str) -> Result<Value, String> {
        let row = self.readable(id)?;
        let empty = Map::new();
        let object = |key: &str| match row.get(key) {
            Some(Value::Object(m)) => m,
            _ => &empty,
        };
        match (row.get("physicalId"), row.get("resourceType")) {
            (Some(Value::String(p)), Some(Value::String(t))) if !p.is_empty() => Ok(
                refs::ref_value(t, p, object("attributes"), object("properties")),
            ),
            _ => Err("its record has no physical id".into()),
        }
    }

    /// The value `Fn::GetAtt` of `id`.`attribute` stands for, from the attributes cache.
    fn attribute(&self, id: &str, attribute: &str) -> Result<Value, String> {
        let row = self.readable(id)?;
        match row.get("attributes") {
            Some(Value::Object(cache)) => cache
                .get(attribute)
                .cloned()
                .ok_or_else(|| format!("its record does not hold attribute {attribute}")),
            None => Err(format!(
                "its record holds no attributes, so not {attribute}"
            )),
            Some(_) => Err("its attributes cache is not a map and cannot be read".into()),
        }
    }

    fn readable(&self, id: &str) -> Result<&Map<String, Value>, String> {
        match self.rows.get(id) {
            Some(Value::Object(row)) if row.get("resourceType").is_some_and(Value::is_string) => {
                Ok(row)
            }
            _ => Err("its record cannot be read".into()),
        }
    }
}

/// What a pass found.
#[derive(Debug, Default)]
pub struct Findings {
    pub rewrites: Vec<Rewrite>,
    pub unresolved: Vec<Unresolved>,
}

impl Findings {
    /// Rewrites every reference to an orphan inside `value` (at `path` of `owner`).
    pub fn rewrite_value(
        &mut self,
        orphans: &Orphans<'_>,
        owner: &str,
        path: &str,
        value: &mut Value,
    ) {
        if let Some(replacement) = self.replacement(orphans, owner, path, value) {
            *value = replacement;
            return;
        }
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    self.rewrite_value(orphans, owner, &format!("{path}[{i}]"), item);
                }
            }
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    let sub = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    self.rewrite_value(orphans, owner, &sub, v);
                }
            }
            _ => {}
        }
    }

    /// Drops the orphans from a dependency list.
    pub fn drop_dependencies(
        &mut self,
        orphans: &Orphans<'_>,
        owner: &str,
        deps: &mut Vec<String>,
    ) {
        deps.retain(|d| {
            if orphans.contains(d) {
                self.rewrites.push(Rewrite {
                    owner: owner.to_owned(),
                    path: "dependencies".into(),
                    before: Value::String(d.clone()),
                    after: None,
                });
                false
            } else {
                true
            }
        });
    }

    /// The value replacing `value` when it is itself a reference to an orphan.
    fn replacement(
        &mut self,
        orphans: &Orphans<'_>,
        owner: &str,
        path: &str,
        value: &Value,
    ) -> Option<Value> {
        let (name, arg) = intrinsic(value)?;
        let resolved = match (name, arg) {
            ("Ref", Value::String(target)) if orphans.contains(target) => {
                Some((target.clone(), "Ref".to_owned(), orphans.reference(target)))
            }
            ("Fn::GetAtt", arg) => {
                let (target, attribute) = get_att_parts(arg)?;
                if !orphans.contains(&target) {
                    return None;
                }
                let got = match &attribute {
                    Some(a) => orphans.attribute(&target, a),
                    None => Err("the attribute name is not a literal".into()),
                };
                Some((target, attribute.unwrap_or_else(|| "?".into()), got))
            }
            ("Fn::Sub", arg) => return self.substitute(orphans, owner, path, arg),
            _ => None,
        }?;
        let (target, attribute, got) = resolved;
        match got {
            Ok(v) => {
                self.rewrites.push(Rewrite {
                    owner: owner.to_owned(),
                    path: path.to_owned(),
                    before: value.clone(),
                    after: Some(v.clone()),
                });
                Some(v)
            }
            Err(reason) => {
                self.unresolved.push(Unresolved {
                    owner: owner.to_owned(),
                    path: path.to_owned(),
                    target,
                    attribute,
                    reason,
                });
                None
            }
        }
    }

    /// `Fn::Sub` with `${Orphan}` / `${Orphan.Attr}` placeholders filled in. Placeholders the
    /// variables map defines, and those of other resources, stay. A text left with no
    /// placeholder at all becomes a plain string.
    fn substitute(
        &mut self,
        orphans: &Orphans<'_>,
        owner: &str,
        path: &str,
        arg: &Value,
    ) -> Option<Value> {
        let (text, vars) = match arg {
            Value::String(t) => (t.as_str(), None),
            Value::Array(items) if items.len() == 2 => (items[0].as_str()?, items[1].as_object()),
            _ => return None,
        };
        let mut out = String::with_capacity(text.len());
        let mut changed = false;
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                out.push_str(&rest[start..]);
                rest = "";
                break;
            };
            let name = &after[..end];
            let whole = &rest[start..start + 2 + end + 1];
            rest = &after[end + 1..];
            let defined = vars.is_some_and(|v| v.contains_key(name));
            let (target, attribute) = match name.split_once('.') {
                Some((t, a)) => (t, Some(a)),
                None => (name, None),
            };
            if name.starts_with('!') || defined || !orphans.contains(target) {
                out.push_str(whole);
                continue;
            }
            let got = match attribute {
                Some(a) => orphans.attribute(target, a),
                None => orphans.reference(target),
            }
            .and_then(|v| match v {
                Value::String(s) if !s.contains("${") => Ok(s),
                Value::String(_) => Err("its value holds `${`, which Fn::Sub would read".into()),
                Value::Number(n) => Ok(n.to_string()),
                Value::Bool(b) => Ok(b.to_string()),
                _ => Err("its value is not a string".into()),
            });
            match got {
                Ok(s) => {
                    out.push_str(&s);
                    changed = true;
                }
                Err(reason) => {
                    self.unresolved.push(Unresolved {
                        owner: owner.to_owned(),
                        path: path.to_owned(),
                        target: target.to_owned(),
                        attribute: attribute.unwrap_or("Ref").to_owned(),
                        reason,
                    });
                    out.push_str(whole);
                }
            }
        }
        out.push_str(rest);
        if !changed {
            return None;
        }
        let before = Value::Object(Map::from_iter([("Fn::Sub".to_owned(), arg.clone())]));
        let plain = !out.contains("${") && vars.is_none_or(Map::is_empty);
        let after = if plain {
            Value::String(out)
        } else {
            let new_arg = match vars {
                Some(v) => Value::Array(vec![Value::String(out), Value::Object(v.clone())]),
                None => Value::String(out),
            };
            Value::Object(Map::from_iter([("Fn::Sub".to_owned(), new_arg)]))
        };
        self.rewrites.push(Rewrite {
            owner: owner.to_owned(),
            path: path.to_owned(),
            before,
            after: Some(after.clone()),
        });
        Some(after)
    }
}

/// `[Target, Attr]` or `"Target.Attr"`; the attribute is `None` when it is not a literal.
fn get_att_parts(arg: &Value) -> Option<(String, Option<String>)> {
    match arg {
        Value::Array(items) if items.len() == 2 => {
            let target = items[0].as_str()?.to_owned();
            Some((target, items[1].as_str().map(str::to_owned)))
        }
        Value::String(s) => {
            let (t, a) = s.split_once('.')?;
            Some((t.to_owned(), Some(a.to_owned())))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn orphans() -> IndexMap<String, Value> {
        IndexMap::from_iter([
            (
                "Q".to_owned(),
                json!({"resourceType": "AWS::SQS::Queue", "physicalId": "https://q/1",
                       "attributes": {"Arn": "arn:q", "QueueName": "q1"}}),
            ),
            ("Bad".to_owned(), json!("damaged")),
            (
                "NoCache".to_owned(),
                json!({"resourceType": "T", "physicalId": "p", "attributes": null}),
            ),
        ])
    }

    fn run(mut v: Value) -> (Value, Findings) {
        let rows = orphans();
        let o = Orphans { rows: &rows };
        let mut f = Findings::default();
        f.rewrite_value(&o, "B", "properties", &mut v);
        (v, f)
    }

    #[test]
    fn ref_get_att_and_sub_become_literals() {
        let (v, f) = run(json!({
            "Url": {"Ref": "Q"},
            "Arn": {"Fn::GetAtt": ["Q", "Arn"]},
            "Name": {"Fn::GetAtt": "Q.QueueName"},
            "Text": {"Fn::Sub": "${Q}|${Q.Arn}|${Other}|${!Q}"},
            "Plain": {"Fn::Sub": ["x-${Q.QueueName}", {}]},
            "Kept": {"Ref": "Other"},
            "List": [{"Ref": "Q"}]
        }));
        assert_eq!(v["Url"], "https://q/1");
        assert_eq!(v["Arn"], "arn:q");
        assert_eq!(v["Name"], "q1");
        assert_eq!(
            v["Text"],
            json!({"Fn::Sub": "https://q/1|arn:q|${Other}|${!Q}"})
        );
        assert_eq!(v["Plain"], "x-q1");
        assert_eq!(v["Kept"], json!({"Ref": "Other"}));
        assert_eq!(v["List"][0], "https://q/1");
        assert!(f.unresolved.is_empty(), "{:?}", f.unresolved);
        assert_eq!(f.rewrites.len(), 6);
        assert!(f.rewrites.iter().any(|r| r.path == "properties.List[0]"));
    }

    #[test]
    fn ref_of_a_composite_orphan_is_what_cloudformation_returns() {
        let rows = IndexMap::from_iter([(
            "Res".to_owned(),
            json!({"resourceType": "AWS::ApiGateway::Resource", "physicalId": "api1|res1",
                   "properties": {"RestApiId": "api1"}, "attributes": {"ResourceId": "res1"}}),
        )]);
        let o = Orphans { rows: &rows };
        let mut f = Findings::default();
        let mut v = json!({"ResourceId": {"Ref": "Res"}, "S": {"Fn::Sub": "/${Res}"}});
        f.rewrite_value(&o, "M", "properties", &mut v);
        assert_eq!(v, json!({"ResourceId": "res1", "S": "/res1"}));
    }

    #[test]
    fn what_has_no_value_is_reported_and_left_alone() {
        let (v, f) = run(json!({
            "A": {"Fn::GetAtt": ["Q", "Missing"]},
            "B": {"Ref": "Bad"},
            "C": {"Fn::GetAtt": ["NoCache", "Arn"]},
            "D": {"Fn::Sub": ["${Q.Missing}", {"Q": "shadow"}]},
            "E": {"Fn::Sub": ["${Q}", {"Q": "shadow"}]}
        }));
        assert_eq!(v["A"], json!({"Fn::GetAtt": ["Q", "Missing"]}));
        assert_eq!(v["B"], json!({"Ref": "Bad"}));
        assert_eq!(
            v["E"],
            json!({"Fn::Sub": ["${Q}", {"Q": "shadow"}]}),
            "a variable shadows"
        );
        let seen: Vec<(&str, &str)> = f
            .unresolved
            .iter()
            .map(|u| (u.path.as_str(), u.attribute.as_str()))
            .collect();
        assert_eq!(
            seen,
            vec![
                ("properties.A", "Missing"),
                ("properties.B", "Ref"),
                ("properties.C", "Arn"),
                ("properties.D", "Missing"),
            ]
        );
        assert!(f.unresolved[2].reason.contains("not a map"));
    }

    #[test]
    fn dependencies_on_orphans_are_dropped() {
        let rows = orphans();
        let o = Orphans { rows: &rows };
        let mut f = Findings::default();
        let mut deps = vec!["Q".to_owned(), "Other".to_owned()];
        f.drop_dependencies(&o, "B", &mut deps);
        assert_eq!(deps, vec!["Other".to_owned()]);
        assert_eq!(f.rewrites[0].after, None);
    }
}
