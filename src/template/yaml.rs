//! YAML templates: parse with `serde_norway` and convert to the JSON form,
//! expanding CloudFormation's short-form tags (`!Ref`, `!GetAtt`, `!Sub`, ...)
//! into their long forms (`{"Ref": ..}`, `{"Fn::GetAtt": [..]}`, ...), so the
//! rest of the crate only ever sees one representation.

use std::path::Path;

use serde_json::{Map, Number as JsonNumber, Value};
use serde_norway::value::TaggedValue;
use serde_norway::Value as Yaml;

use super::error::{one_line, TemplateError, TOP_LEVEL};
use super::parse::{child, index};

/// Tags that map to `{"Fn::<Name>": <argument>}`.
const FN_TAGS: [&str; 18] = [
    "Base64",
    "Cidr",
    "FindInMap",
    "GetAZs",
    "GetStackOutput",
    "If",
    "ImportValue",
    "Join",
    "Select",
    "Split",
    "Sub",
    "Transform",
    "And",
    "Equals",
    "Not",
    "Or",
    "Length",
    "ToJsonString",
];

/// Parses a YAML template into JSON with short-form tags expanded.
/// The top level must be a mapping; multi-document streams are rejected.
pub fn yaml_to_json(text: &str, source: &Path) -> Result<Value, TemplateError> {
    // The library is not expected to panic on any input, but a template
    // loader must never take the process down, so contain it anyway.
    let parsed = std::panic::catch_unwind(|| serde_norway::from_str::<Yaml>(text));
    let doc = match parsed {
        Ok(Ok(doc)) => doc,
        Ok(Err(e)) => return Err(TemplateError::yaml(source, &e)),
        Err(_) => {
            return Err(TemplateError::Yaml {
                file: source.to_path_buf(),
                line: None,
                column: None,
                message: "the YAML parser failed on this input".to_string(),
            })
        }
    };
    if !matches!(doc, Yaml::Mapping(_)) {
        return Err(TemplateError::invalid(
            source,
            TOP_LEVEL,
            format!("expected a mapping, found {}", describe_yaml(&doc)),
        ));
    }
    Converter { text, file: source }.convert(doc, "")
}

struct Converter<'a> {
    text: &'a str,
    file: &'a Path,
}

impl Converter<'_> {
    fn convert(&self, y: Yaml, path: &str) -> Result<Value, TemplateError> {
        Ok(match y {
            Yaml::Null => Value::Null,
            Yaml::Bool(b) => Value::Bool(b),
            Yaml::Number(n) => self.number(&n, path)?,
            Yaml::String(s) => Value::String(s),
            Yaml::Sequence(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    out.push(self.convert(item, &index(path, i))?);
                }
                Value::Array(out)
            }
            Yaml::Mapping(m) => {
                let mut out = Map::with_capacity(m.len());
                for (k, v) in m {
                    let key = self.key(k, path)?;
                    let p = child(path, &key);
                    let v = self.convert(v, &p)?;
                    if out.insert(key.clone(), v).is_some() {
                        return Err(self.invalid(&p, format!("duplicate key {key:?}")));
                    }
                }
                Value::Object(out)
            }
            Yaml::Tagged(t) => self.tagged(*t, path)?,
        })
    }

    fn tagged(&self, t: TaggedValue, path: &str) -> Result<Value, TemplateError> {
        let tag = t.tag.to_string();
        let name = tag.strip_prefix('!').unwrap_or(&tag);
        let (long, arg) = match name {
            "Ref" | "Condition" => {
                let long = name.to_string();
                let arg = self.convert(t.value, &child(path, &long))?;
                (long, arg)
            }
            "GetAtt" => {
                let long = "Fn::GetAtt".to_string();
                let p = child(path, &long);
                let arg = match t.value {
                    Yaml::String(s) => match s.split_once('.') {
                        Some((res, attr)) if !res.is_empty() && !attr.is_empty() => {
                            Value::Array(vec![
                                Value::String(res.into()),
                                Value::String(attr.into()),
                            ])
                        }
                        _ => {
                            return Err(self.invalid(
                                &p,
                                format!("!GetAtt expects LogicalId.Attribute, found {s:?}"),
                            ))
                        }
                    },
                    seq @ Yaml::Sequence(_) => self.convert(seq, &p)?,
                    other => {
                        return Err(self.invalid(
                            &p,
                            format!(
                                "!GetAtt expects LogicalId.Attribute or a list, found {}",
                                describe_yaml(&other)
                            ),
                        ))
                    }
                };
                (long, arg)
            }
            _ if FN_TAGS.contains(&name) => {
                let long = format!("Fn::{name}");
                let arg = self.convert(t.value, &child(path, &long))?;
                (long, arg)
            }
            _ => {
                let (line, column) = find_tag(self.text, &tag).unzip();
                return Err(TemplateError::UnknownTag {
                    file: self.file.to_path_buf(),
                    path: one_line(display_path(path)),
                    tag: one_line(name),
                    line,
                    column,
                });
            }
        };
        let mut m = Map::with_capacity(1);
        m.insert(long, arg);
        Ok(Value::Object(m))
    }

    fn key(&self, k: Yaml, path: &str) -> Result<String, TemplateError> {
        match k {
            Yaml::String(s) => Ok(s),
            Yaml::Number(n) => Ok(n.to_string()),
            Yaml::Bool(b) => Ok(b.to_string()),
            Yaml::Null => Ok("null".to_string()),
            other => Err(self.invalid(
                path,
                format!(
                    "mapping keys must be scalars, found {}",
                    describe_yaml(&other)
                ),
            )),
        }
    }

    fn number(&self, n: &serde_norway::Number, path: &str) -> Result<Value, TemplateError> {
        let json = if let Some(i) = n.as_i64() {
            Some(JsonNumber::from(i))
        } else if let Some(u) = n.as_u64() {
            Some(JsonNumber::from(u))
        } else {
            n.as_f64().and_then(JsonNumber::from_f64)
        };
        json.map(Value::Number)
            .ok_or_else(|| self.invalid(path, format!("expected a finite number, found {n}")))
    }

    fn invalid(&self, path: &str, message: String) -> TemplateError {
        TemplateError::invalid(self.file, display_path(path), message)
    }
}

fn display_path(path: &str) -> &str {
    if path.is_empty() {
        TOP_LEVEL
    } else {
        path
    }
}

fn describe_yaml(y: &Yaml) -> String {
    match y {
        Yaml::Null => "null".into(),
        Yaml::Bool(_) => "a boolean".into(),
        Yaml::Number(_) => "a number".into(),
        Yaml::String(_) => "a string".into(),
        Yaml::Sequence(_) => "a sequence".into(),
        Yaml::Mapping(_) => "a mapping".into(),
        Yaml::Tagged(t) => format!("a value tagged {}", t.tag),
    }
}

/// 1-based line and column of the first occurrence of `tag` (e.g. `!Foo`)
/// as a whole word in `text`; best effort, for error messages only.
fn find_tag(text: &str, tag: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(rel) = text.get(from..)?.find(tag) {
        let at = from + rel;
        let end = at + tag.len();
        let boundary = text[end..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == ':' || c == '_' || c == '-' || c == '.'));
        if boundary {
            let before = &text[..at];
            let line = before.matches('\n').count() + 1;
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            let column = text[line_start..at].chars().count() + 1;
            return Some((line, column));
        }
        from = end;
    }
    None
}

#[cfg(test)]
#[path = "yaml_tests.rs"]
mod tests;
