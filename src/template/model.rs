//! Typed view of a CloudFormation template.
//!
//! Only the structure CloudFormation itself checks is typed (sections,
//! resource/parameter/output attributes); property values and intrinsic
//! functions stay as [`serde_json::Value`]. Every map keeps the key order of
//! the source document, and [`Template::to_value`] reproduces the document it
//! was parsed from (unknown keys included).

use std::path::Path;

use indexmap::IndexMap;
use serde_json::{Map, Value};

/// Top-level section names, in the order CloudFormation documents them.
pub(crate) const SECTIONS: [&str; 10] = [
    "AWSTemplateFormatVersion",
    "Description",
    "Transform",
    "Metadata",
    "Parameters",
    "Rules",
    "Mappings",
    "Conditions",
    "Resources",
    "Outputs",
];

/// A parsed CloudFormation template.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Template {
    /// `AWSTemplateFormatVersion`.
    pub format_version: Option<String>,
    pub description: Option<String>,
    /// `Transform`: a macro name or a list of them.
    pub transform: Option<Value>,
    pub metadata: Option<Value>,
    pub parameters: IndexMap<String, Parameter>,
    pub mappings: Map<String, Value>,
    pub conditions: Map<String, Value>,
    pub rules: Map<String, Value>,
    pub resources: IndexMap<String, Resource>,
    pub outputs: IndexMap<String, Output>,
    /// Top-level keys that are not standard sections, kept verbatim.
    pub extra: Map<String, Value>,
    /// Top-level keys in the order they appeared in the source. Used by
    /// [`Template::to_value`]; sections not listed here are emitted after the
    /// listed ones in the standard order (and only when non-empty).
    pub key_order: Vec<String>,
}

/// An entry of the `Parameters` section.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parameter {
    /// `Type`, e.g. `String` or `AWS::SSM::Parameter::Value<String>`.
    pub type_: String,
    pub default: Option<Value>,
    /// `NoEcho`; CloudFormation accepts `true` as well as the string `"true"`.
    pub no_echo: bool,
    pub allowed_values: Option<Vec<Value>>,
    pub allowed_pattern: Option<String>,
    pub min_length: Option<f64>,
    pub max_length: Option<f64>,
    pub min_value: Option<f64>,
    pub max_value: Option<f64>,
    pub description: Option<String>,
    pub constraint_description: Option<String>,
    /// The parameter exactly as written.
    pub raw: Value,
}

/// An entry of the `Resources` section.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resource {
    /// `Type`, e.g. `AWS::S3::Bucket` or `Custom::Foo`.
    pub type_: String,
    /// `Properties` (empty when absent).
    pub properties: Map<String, Value>,
    /// `DependsOn`, normalised to a list.
    pub depends_on: Vec<String>,
    pub condition: Option<String>,
    pub deletion_policy: Option<String>,
    pub update_replace_policy: Option<String>,
    pub metadata: Option<Value>,
    pub update_policy: Option<Value>,
    pub creation_policy: Option<Value>,
    pub version: Option<Value>,
    /// The resource exactly as written.
    pub raw: Value,
}

/// An entry of the `Outputs` section.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Output {
    pub value: Value,
    pub description: Option<String>,
    /// `Export.Name`.
    pub export_name: Option<Value>,
    pub condition: Option<String>,
    /// The output exactly as written.
    pub raw: Value,
}

impl Resource {
    /// The construct path the CDK records in `Metadata["aws:cdk:path"]`.
    pub fn cdk_path(&self) -> Option<&str> {
        self.metadata.as_ref()?.get("aws:cdk:path")?.as_str()
    }

    /// JSON form of this resource: `raw` with any field that was changed
    /// since parsing written over it (key order preserved).
    pub fn to_value(&self) -> Value {
        let orig = Resource::parse(&self.raw, Path::new(""), "").ok();
        let o = orig.as_ref();
        let mut m = self.raw.as_object().cloned().unwrap_or_default();
        let props_value = if self.properties.is_empty() && !m.contains_key("Properties") {
            None
        } else {
            Some(Value::Object(self.properties.clone()))
        };
        let depends = if self.depends_on.is_empty() {
            None
        } else {
            Some(strings(&self.depends_on))
        };
        let same = |f: &dyn Fn(&Resource) -> bool| o.is_some_and(f);
        overlay(
            &mut m,
            "Type",
            same(&|r| r.type_ == self.type_),
            Some(Value::String(self.type_.clone())),
        );
        overlay(
            &mut m,
            "Properties",
            same(&|r| r.properties == self.properties),
            props_value,
        );
        overlay(
            &mut m,
            "DependsOn",
            same(&|r| r.depends_on == self.depends_on),
            depends,
        );
        overlay(
            &mut m,
            "Condition",
            same(&|r| r.condition == self.condition),
            opt_str(&self.condition),
        );
        overlay(
            &mut m,
            "DeletionPolicy",
            same(&|r| r.deletion_policy == self.deletion_policy),
            opt_str(&self.deletion_policy),
        );
        overlay(
            &mut m,
            "UpdateReplacePolicy",
            same(&|r| r.update_replace_policy == self.update_replace_policy),
            opt_str(&self.update_replace_policy),
        );
        overlay(
            &mut m,
            "Metadata",
            same(&|r| r.metadata == self.metadata),
            self.metadata.clone(),
        );
        overlay(
            &mut m,
            "UpdatePolicy",
            same(&|r| r.update_policy == self.update_policy),
            self.update_policy.clone(),
        );
        overlay(
            &mut m,
            "CreationPolicy",
            same(&|r| r.creation_policy == self.creation_policy),
            self.creation_policy.clone(),
        );
        overlay(
            &mut m,
            "Version",
            same(&|r| r.version == self.version),
            self.version.clone(),
        );
        Value::Object(m)
    }
}

impl Parameter {
    /// JSON form of this parameter: `raw` with changed fields written over it.
    pub fn to_value(&self) -> Value {
        let orig = Parameter::parse(&self.raw, Path::new(""), "").ok();
        let o = orig.as_ref();
        let mut m = self.raw.as_object().cloned().unwrap_or_default();
        let same = |f: &dyn Fn(&Parameter) -> bool| o.is_some_and(f);
        let num = |n: Option<f64>| n.and_then(serde_json::Number::from_f64).map(Value::Number);
        overlay(
            &mut m,
            "Type",
            same(&|p| p.type_ == self.type_),
            Some(Value::String(self.type_.clone())),
        );
        overlay(
            &mut m,
            "Default",
            same(&|p| p.default == self.default),
            self.default.clone(),
        );
        overlay(
            &mut m,
            "NoEcho",
            same(&|p| p.no_echo == self.no_echo),
            self.no_echo.then_some(Value::Bool(true)),
        );
        overlay(
            &mut m,
            "AllowedValues",
            same(&|p| p.allowed_values == self.allowed_values),
            self.allowed_values.clone().map(Value::Array),
        );
        overlay(
            &mut m,
            "AllowedPattern",
            same(&|p| p.allowed_pattern == self.allowed_pattern),
            opt_str(&self.allowed_pattern),
        );
        overlay(
            &mut m,
            "MinLength",
            same(&|p| p.min_length == self.min_length),
            num(self.min_length),
        );
        overlay(
            &mut m,
            "MaxLength",
            same(&|p| p.max_length == self.max_length),
            num(self.max_length),
        );
        overlay(
            &mut m,
            "MinValue",
            same(&|p| p.min_value == self.min_value),
            num(self.min_value),
        );
        overlay(
            &mut m,
            "MaxValue",
            same(&|p| p.max_value == self.max_value),
            num(self.max_value),
        );
        overlay(
            &mut m,
            "Description",
            same(&|p| p.description == self.description),
            opt_str(&self.description),
        );
        overlay(
            &mut m,
            "ConstraintDescription",
            same(&|p| p.constraint_description == self.constraint_description),
            opt_str(&self.constraint_description),
        );
        Value::Object(m)
    }
}

impl Output {
    /// JSON form of this output: `raw` with changed fields written over it.
    pub fn to_value(&self) -> Value {
        let orig = Output::parse(&self.raw, Path::new(""), "").ok();
        let o = orig.as_ref();
        let mut m = self.raw.as_object().cloned().unwrap_or_default();
        let same = |f: &dyn Fn(&Output) -> bool| o.is_some_and(f);
        overlay(
            &mut m,
            "Value",
            same(&|x| x.value == self.value),
            Some(self.value.clone()),
        );
        overlay(
            &mut m,
            "Description",
            same(&|x| x.description == self.description),
            opt_str(&self.description),
        );
        if !same(&|x| x.export_name == self.export_name) {
            match &self.export_name {
                Some(name) => {
                    let mut export = m
                        .get("Export")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    export.insert("Name".to_string(), name.clone());
                    m.insert("Export".to_string(), Value::Object(export));
                }
                None => {
                    m.shift_remove("Export");
                }
            }
        }
        overlay(
            &mut m,
            "Condition",
            same(&|x| x.condition == self.condition),
            opt_str(&self.condition),
        );
        Value::Object(m)
    }
}

impl Template {
    /// The JSON document for this template. For a template fresh from
    /// [`Template::from_value`] this equals the input document.
    pub fn to_value(&self) -> Value {
        let mut out = Map::new();
        for key in &self.key_order {
            if let Some(v) = self.section(key, true) {
                out.insert(key.clone(), v);
            } else if let Some(v) = self.extra.get(key) {
                out.insert(key.clone(), v.clone());
            }
        }
        for key in SECTIONS {
            if !out.contains_key(key) {
                if let Some(v) = self.section(key, false) {
                    out.insert(key.to_string(), v);
                }
            }
        }
        for (k, v) in &self.extra {
            if !out.contains_key(k) {
                out.insert(k.clone(), v.clone());
            }
        }
        Value::Object(out)
    }

    /// The value of a standard section, or `None` if `key` is not one or the
    /// section is absent. Map sections are emitted when non-empty, or when
    /// `listed` (they appeared in the source, possibly as `{}`).
    fn section(&self, key: &str, listed: bool) -> Option<Value> {
        fn map_of<T>(m: &IndexMap<String, T>, f: impl Fn(&T) -> Value) -> Value {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), f(v))).collect())
        }
        let keep = |empty: bool| listed || !empty;
        match key {
            "AWSTemplateFormatVersion" => opt_str(&self.format_version),
            "Description" => opt_str(&self.description),
            "Transform" => self.transform.clone(),
            "Metadata" => self.metadata.clone(),
            "Parameters" => keep(self.parameters.is_empty())
                .then(|| map_of(&self.parameters, Parameter::to_value)),
            "Rules" => keep(self.rules.is_empty()).then(|| Value::Object(self.rules.clone())),
            "Mappings" => {
                keep(self.mappings.is_empty()).then(|| Value::Object(self.mappings.clone()))
            }
            "Conditions" => {
                keep(self.conditions.is_empty()).then(|| Value::Object(self.conditions.clone()))
            }
            "Resources" => {
                keep(self.resources.is_empty()).then(|| map_of(&self.resources, Resource::to_value))
            }
            "Outputs" => {
                keep(self.outputs.is_empty()).then(|| map_of(&self.outputs, Output::to_value))
            }
            _ => None,
        }
    }
}

/// Writes `new` under `key` (in place if the key exists) or removes the key,
/// unless the field is `unchanged`, in which case the raw entry is kept as is.
fn overlay(m: &mut Map<String, Value>, key: &str, unchanged: bool, new: Option<Value>) {
    if unchanged {
        return;
    }
    match new {
        Some(v) => {
            m.insert(key.to_string(), v);
        }
        None => {
            m.shift_remove(key);
        }
    }
}

fn opt_str(s: &Option<String>) -> Option<Value> {
    s.as_ref().map(|s| Value::String(s.clone()))
}

fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().map(|s| Value::String(s.clone())).collect())
}
