//! The template scan behind [`super::PrefetchedLookup::prefetch_template`]:
//! which cross-stack reads and dynamic references a bound template reaches.

use indexmap::{IndexMap, IndexSet};
use serde_json::Value;

use super::{output_key, OutputKey};
use crate::resolve::dynamic::{collect_references, DynamicReference};
use crate::resolve::{
    intrinsic, BoundParameters, ConditionVerdicts, ParameterValue, Resolver, StackOutputRequest,
};
use crate::template::Template;

#[derive(Default)]
pub(super) struct Wanted {
    pub(super) imports: IndexSet<String>,
    /// Keyed so a request is fetched once; the flag says RoleArn was literal.
    pub(super) outputs: IndexMap<OutputKey, (StackOutputRequest, bool)>,
    pub(super) az_regions: IndexSet<String>,
}

/// Walks a template for the arguments of the cross-stack intrinsics.
pub(super) struct Scan<'r, 'a> {
    resolver: &'r mut Resolver<'a>,
    verdicts: &'r ConditionVerdicts,
    region: &'r str,
    pub(super) wanted: Wanted,
}

impl<'r, 'a> Scan<'r, 'a> {
    pub(super) fn new(
        resolver: &'r mut Resolver<'a>,
        verdicts: &'r ConditionVerdicts,
        region: &'r str,
    ) -> Self {
        Scan {
            resolver,
            verdicts,
            region,
            wanted: Wanted::default(),
        }
    }

    pub(super) fn template(&mut self, template: &Template, verdicts: &ConditionVerdicts) {
        let live = |c: &Option<String>| c.as_ref().is_none_or(|c| verdicts.get(c) != Some(&false));
        for (id, r) in &template.resources {
            if live(&r.condition) {
                let path = format!("Resources.{id}.Properties");
                for v in r.properties.values() {
                    self.walk(v, &path);
                }
            }
        }
        for (name, o) in &template.outputs {
            if live(&o.condition) {
                let path = format!("Outputs.{name}");
                self.walk(&o.value, &path);
                if let Some(e) = &o.export_name {
                    self.walk(e, &path);
                }
            }
        }
    }

    fn text(&mut self, arg: &Value, path: &str) -> Option<String> {
        match self.resolver.resolve_value(arg, path) {
            Ok(Some(Value::String(s))) => Some(s),
            Ok(Some(Value::Number(n))) => Some(n.to_string()),
            _ => None,
        }
    }

    fn walk(&mut self, v: &Value, path: &str) {
        match v {
            Value::Array(items) => items.iter().for_each(|x| self.walk(x, path)),
            Value::Object(m) => match intrinsic(v) {
                Some(("Fn::If", Value::Array(items))) if items.len() == 3 => {
                    match items[0].as_str().and_then(|c| self.verdicts.get(c)) {
                        Some(true) => self.walk(&items[1], path),
                        Some(false) => self.walk(&items[2], path),
                        None => items[1..].iter().for_each(|x| self.walk(x, path)),
                    }
                }
                Some(("Fn::ImportValue", arg)) => {
                    self.walk(arg, path);
                    if let Some(name) = self.text(arg, path) {
                        self.wanted.imports.insert(name);
                    }
                }
                Some(("Fn::GetAZs", arg)) => {
                    self.walk(arg, path);
                    if let Some(r) = self.text(arg, path) {
                        let r = r.trim().to_ascii_lowercase();
                        let r = if r.is_empty() {
                            self.region.to_string()
                        } else {
                            r
                        };
                        self.wanted.az_regions.insert(r);
                    }
                }
                Some(("Fn::GetStackOutput", Value::Object(fields))) => {
                    fields.values().for_each(|x| self.walk(x, path));
                    self.stack_output(fields, path);
                }
                _ => m.values().for_each(|x| self.walk(x, path)),
            },
            _ => {}
        }
    }

    fn stack_output(&mut self, fields: &serde_json::Map<String, Value>, path: &str) {
        let mut get = |k: &str| fields.get(k).and_then(|v| self.text(v, path));
        let (Some(stack_name), Some(output_name)) = (get("StackName"), get("OutputName")) else {
            return;
        };
        let region = get("Region");
        let role_arn = get("RoleArn");
        if fields.contains_key("RoleArn") && role_arn.is_none() {
            return;
        }
        let literal = fields.get("RoleArn").is_none_or(Value::is_string);
        let req = StackOutputRequest {
            stack_name,
            output_name,
            region,
            role_arn,
        };
        self.wanted.outputs.insert(output_key(&req), (req, literal));
    }
}

/// The dynamic references a stack's resolved properties, outputs and
/// parameters hold; a value that does not resolve yet contributes its
/// literal references.
pub(super) fn dynamic_references(
    resolver: &mut Resolver<'_>,
    template: &Template,
    params: &BoundParameters,
    verdicts: &ConditionVerdicts,
) -> Vec<DynamicReference> {
    let live = |c: &Option<String>| c.as_ref().is_none_or(|c| verdicts.get(c) != Some(&false));
    let mut refs = Vec::new();
    for (id, r) in &template.resources {
        if !live(&r.condition) {
            continue;
        }
        match resolver.resolve_properties(id) {
            Ok(props) => collect_references(&Value::Object(props), &mut refs),
            Err(_) => r
                .properties
                .values()
                .for_each(|v| collect_references(v, &mut refs)),
        }
    }
    for (name, o) in &template.outputs {
        if !live(&o.condition) {
            continue;
        }
        match resolver.resolve_output(name) {
            Ok(Some(out)) => collect_references(&out.value, &mut refs),
            Ok(None) => {}
            Err(_) => collect_references(&o.value, &mut refs),
        }
    }
    for (_, v) in params.iter() {
        if let ParameterValue::Resolved(v) = v {
            collect_references(v, &mut refs);
        }
    }
    refs
}
