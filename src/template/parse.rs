//! Building the typed model from a JSON document, checking the structure
//! CloudFormation requires and reporting the template path of any problem.

use std::path::Path;

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::error::{TemplateError, TOP_LEVEL};
use super::model::{Output, Parameter, Resource, Template};

/// `parent.key`, or just `key` at the top.
pub(crate) fn child(parent: &str, key: &str) -> String {
    if parent.is_empty() || parent == TOP_LEVEL {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// `parent[index]`.
pub(crate) fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// Field accessor for one JSON object, producing path-qualified errors.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    file: &'a Path,
    path: &'a str,
}

impl<'a> Obj<'a> {
    fn new(v: &'a Value, file: &'a Path, path: &'a str, what: &str) -> Result<Self, TemplateError> {
        match v {
            Value::Object(map) => Ok(Obj { map, file, path }),
            other => Err(TemplateError::expected(file, path, what, other)),
        }
    }

    fn err(&self, key: &str, expected: &str, found: &Value) -> TemplateError {
        TemplateError::expected(self.file, &child(self.path, key), expected, found)
    }

    fn missing(&self, key: &str, expected: &str) -> TemplateError {
        TemplateError::invalid(
            self.file,
            &child(self.path, key),
            format!("required key is missing (expected {expected})"),
        )
    }

    fn any(&self, key: &str) -> Option<Value> {
        self.map.get(key).cloned()
    }

    fn string(&self, key: &str) -> Result<Option<String>, TemplateError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.err(key, "a string", other)),
        }
    }

    fn required_string(&self, key: &str) -> Result<String, TemplateError> {
        self.string(key)?
            .ok_or_else(|| self.missing(key, "a string"))
    }

    fn object(&self, key: &str) -> Result<Option<&'a Map<String, Value>>, TemplateError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(other) => Err(self.err(key, "an object", other)),
        }
    }

    /// A number, or a string holding one (CloudFormation accepts both).
    fn number(&self, key: &str) -> Result<Option<f64>, TemplateError> {
        let expected = "a number or a numeric string";
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.err(key, expected, &Value::Null)),
            Some(v @ Value::String(s)) => match s.trim().parse::<f64>() {
                Ok(n) if n.is_finite() => Ok(Some(n)),
                _ => Err(TemplateError::invalid(
                    self.file,
                    &child(self.path, key),
                    format!("expected {expected}, found the string {v}"),
                )),
            },
            Some(other) => Err(self.err(key, expected, other)),
        }
    }

    /// A boolean, or the string `true`/`false` in any case.
    fn boolean(&self, key: &str) -> Result<Option<bool>, TemplateError> {
        let expected = "true or false";
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v @ Value::String(s)) => {
                if s.eq_ignore_ascii_case("true") {
                    Ok(Some(true))
                } else if s.eq_ignore_ascii_case("false") {
                    Ok(Some(false))
                } else {
                    Err(TemplateError::invalid(
                        self.file,
                        &child(self.path, key),
                        format!("expected {expected}, found the string {v}"),
                    ))
                }
            }
            Some(other) => Err(self.err(key, expected, other)),
        }
    }
}

impl Template {
    /// Builds the typed model from a JSON document (as parsed from JSON, or
    /// from YAML by [`super::yaml_to_json`]). `source` is only used in errors.
    pub fn from_value(v: Value, source: &Path) -> Result<Template, TemplateError> {
        let top = match v {
            Value::Object(m) => m,
            other => {
                return Err(TemplateError::expected(
                    source,
                    TOP_LEVEL,
                    "an object",
                    &other,
                ))
            }
        };
        let mut t = Template {
            key_order: top.keys().cloned().collect(),
            ..Template::default()
        };
        for (key, value) in top {
            let path = key.as_str();
            match path {
                "AWSTemplateFormatVersion" => t.format_version = Some(string(value, source, path)?),
                "Description" => t.description = Some(string(value, source, path)?),
                "Transform" => match value {
                    Value::String(_) | Value::Array(_) => t.transform = Some(value),
                    other => {
                        return Err(TemplateError::expected(
                            source,
                            path,
                            "a string or a list",
                            &other,
                        ))
                    }
                },
                "Metadata" => t.metadata = Some(value),
                "Parameters" => t.parameters = entries(&value, source, path, Parameter::parse)?,
                "Mappings" => t.mappings = object(value, source, path)?,
                "Conditions" => t.conditions = object(value, source, path)?,
                "Rules" => t.rules = object(value, source, path)?,
                "Resources" => t.resources = entries(&value, source, path, Resource::parse)?,
                "Outputs" => t.outputs = entries(&value, source, path, Output::parse)?,
                _ => {
                    t.extra.insert(key, value);
                }
            }
        }
        Ok(t)
    }
}

impl Parameter {
    pub(crate) fn parse(v: &Value, file: &Path, path: &str) -> Result<Self, TemplateError> {
        let o = Obj::new(v, file, path, "an object")?;
        let allowed_values = match o.map.get("AllowedValues") {
            None => None,
            Some(Value::Array(items)) => Some(items.clone()),
            Some(other) => return Err(o.err("AllowedValues", "a list", other)),
        };
        Ok(Parameter {
            type_: o.required_string("Type")?,
            default: o.any("Default"),
            no_echo: o.boolean("NoEcho")?.unwrap_or(false),
            allowed_values,
            allowed_pattern: o.string("AllowedPattern")?,
            min_length: o.number("MinLength")?,
            max_length: o.number("MaxLength")?,
            min_value: o.number("MinValue")?,
            max_value: o.number("MaxValue")?,
            description: o.string("Description")?,
            constraint_description: o.string("ConstraintDescription")?,
            raw: v.clone(),
        })
    }
}

impl Resource {
    pub(crate) fn parse(v: &Value, file: &Path, path: &str) -> Result<Self, TemplateError> {
        let o = Obj::new(v, file, path, "an object")?;
        let type_ = o.required_string("Type")?;
        if type_.trim().is_empty() {
            return Err(TemplateError::invalid(
                file,
                &child(path, "Type"),
                "expected a resource type, found an empty string",
            ));
        }
        let depends_on = match o.map.get("DependsOn") {
            None => Vec::new(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => {
                let base = child(path, "DependsOn");
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => out.push(s.clone()),
                        other => {
                            return Err(TemplateError::expected(
                                file,
                                &index(&base, i),
                                "a string (a logical ID)",
                                other,
                            ))
                        }
                    }
                }
                out
            }
            Some(other) => return Err(o.err("DependsOn", "a string or a list of strings", other)),
        };
        Ok(Resource {
            type_,
            properties: o.object("Properties")?.cloned().unwrap_or_default(),
            depends_on,
            condition: o.string("Condition")?,
            deletion_policy: o.string("DeletionPolicy")?,
            update_replace_policy: o.string("UpdateReplacePolicy")?,
            metadata: o.any("Metadata"),
            update_policy: o.any("UpdatePolicy"),
            creation_policy: o.any("CreationPolicy"),
            version: o.any("Version"),
            raw: v.clone(),
        })
    }
}

impl Output {
    pub(crate) fn parse(v: &Value, file: &Path, path: &str) -> Result<Self, TemplateError> {
        let o = Obj::new(v, file, path, "an object")?;
        let value = o
            .any("Value")
            .ok_or_else(|| o.missing("Value", "a value"))?;
        let export_name = match o.object("Export")? {
            None => None,
            Some(export) => {
                let export_path = child(path, "Export");
                let name = export.get("Name").cloned().ok_or_else(|| {
                    TemplateError::invalid(
                        file,
                        &child(&export_path, "Name"),
                        "required key is missing (Export needs a Name)",
                    )
                })?;
                Some(name)
            }
        };
        Ok(Output {
            value,
            description: o.string("Description")?,
            export_name,
            condition: o.string("Condition")?,
            raw: v.clone(),
        })
    }
}

fn string(v: Value, file: &Path, path: &str) -> Result<String, TemplateError> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(TemplateError::expected(file, path, "a string", &other)),
    }
}

fn object(v: Value, file: &Path, path: &str) -> Result<Map<String, Value>, TemplateError> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(TemplateError::expected(file, path, "an object", &other)),
    }
}

/// Parses every entry of an object-valued section with `parse`.
fn entries<T>(
    v: &Value,
    file: &Path,
    path: &str,
    parse: fn(&Value, &Path, &str) -> Result<T, TemplateError>,
) -> Result<IndexMap<String, T>, TemplateError> {
    let Value::Object(m) = v else {
        return Err(TemplateError::expected(file, path, "an object", v));
    };
    let mut out = IndexMap::with_capacity(m.len());
    for (name, entry) in m {
        out.insert(name.clone(), parse(entry, file, &child(path, name))?);
    }
    Ok(out)
}
