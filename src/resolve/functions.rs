//! The intrinsic functions (all but `Fn::Sub`, in sub.rs, and the
//! condition functions, in conditions.rs).

use serde_json::Value;

use super::error::{type_name, ResolveErrorKind};
use super::lookup::StackOutputRequest;
use super::params::ParameterValue;
use super::{intrinsic, Resolver, R};

impl Resolver<'_> {
    /// Runs intrinsic `name` on `arg`. The path already ends in `name`.
    pub(super) fn call(&mut self, name: &str, arg: &Value) -> R<Option<Value>> {
        match name {
            "Ref" => self.ref_(arg),
            "Fn::If" => self.if_(arg),
            _ => self.call_value(name, arg).map(Some),
        }
    }

    /// The functions that always give a value. Each arm is one call, which
    /// keeps this frame (on the recursion path) small.
    fn call_value(&mut self, name: &str, arg: &Value) -> R<Value> {
        match name {
            "Fn::GetAtt" => self.get_att(arg),
            "Fn::Join" => self.join(arg),
            "Fn::Sub" => self.sub(arg),
            "Fn::Select" => self.select(arg),
            "Fn::Split" => self.split(arg),
            "Fn::Equals" => self.equals(arg),
            "Fn::And" => self.and_or(arg, true),
            "Fn::Or" => self.and_or(arg, false),
            "Fn::Not" => self.not(arg),
            "Fn::FindInMap" => self.find_in_map(arg),
            "Fn::Base64" => self.base64_fn(arg),
            "Fn::Cidr" => self.cidr_fn(arg),
            "Fn::GetAZs" => self.get_azs(arg),
            "Fn::Length" => self.length(arg),
            "Fn::ToJsonString" => self.json_string_fn(arg),
            "Fn::ImportValue" => self.import_value(arg),
            "Fn::GetStackOutput" => self.get_stack_output(arg),
            other => self.fail(ResolveErrorKind::UnsupportedFunction(other.to_string())),
        }
    }

    /// Text holding a dynamic reference is encoded by the post-pass, once the reference is
    /// substituted: the resolver only marks it ([`super::dynamic::base64_pending`]).
    fn base64_fn(&mut self, arg: &Value) -> R<Value> {
        let text = self.eval_text(arg, "Fn::Base64")?;
        if super::dynamic::contains_dynamic_reference(&text) {
            return Ok(super::dynamic::base64_pending(text));
        }
        Ok(Value::String(base64(text.as_bytes())))
    }

    fn length(&mut self, arg: &Value) -> R<Value> {
        let items = self.eval_list(arg, "Fn::Length")?;
        Ok(Value::from(items.len()))
    }

    fn json_string_fn(&mut self, arg: &Value) -> R<Value> {
        let v = self.eval_required(arg, "Fn::ToJsonString")?;
        Ok(Value::String(v.to_string()))
    }

    fn import_value(&mut self, arg: &Value) -> R<Value> {
        let export = self.eval_text(arg, "Fn::ImportValue")?;
        match self.external.import_value(&export) {
            Ok(v) => Ok(v),
            Err(error) => self.fail(ResolveErrorKind::Lookup {
                function: "Fn::ImportValue",
                error,
            }),
        }
    }

    fn bad_args<T>(&self, function: &'static str, message: impl Into<String>) -> R<T> {
        self.fail(ResolveErrorKind::InvalidArguments {
            function,
            message: message.into(),
        })
    }

    /// The elements of an argument list of exactly `n` (or `n..=max`) items.
    fn args<'v>(
        &self,
        arg: &'v Value,
        function: &'static str,
        n: usize,
        max: usize,
    ) -> R<&'v [Value]> {
        match arg.as_array() {
            Some(items) if (n..=max).contains(&items.len()) => Ok(items),
            _ => {
                let want = if n == max {
                    format!("a list of {n}")
                } else {
                    format!("a list of {n} to {max}")
                };
                self.bad_args(function, format!("expected {want}, got {}", type_name(arg)))
            }
        }
    }

    fn ref_(&mut self, arg: &Value) -> R<Option<Value>> {
        let Some(name) = arg.as_str() else {
            return self.fail(ResolveErrorKind::WrongType {
                function: "Ref",
                expected: "a logical id string",
                got: type_name(arg),
            });
        };
        if name.starts_with("AWS::") {
            return self.ctx.pseudo(name).map_err(|k| self.error(k));
        }
        if let Some(r) = self.parameter(name) {
            return r.map(Some);
        }
        if self.template.resources.contains_key(name) {
            return self.resource_ref(name).map(Some);
        }
        self.fail(ResolveErrorKind::UnknownLogicalId {
            function: "Ref",
            name: name.to_string(),
        })
    }

    /// The value of parameter `name`, or `None` when there is no such
    /// parameter.
    pub(super) fn parameter(&self, name: &str) -> Option<R<Value>> {
        match self.params.get(name) {
            Some(ParameterValue::Resolved(v)) => Some(Ok(v.clone())),
            Some(ParameterValue::Unresolved(reason)) => {
                Some(self.fail(ResolveErrorKind::ParameterUnresolved {
                    name: name.to_string(),
                    reason: reason.clone(),
                }))
            }
            None if self.template.parameters.contains_key(name) => {
                Some(self.fail(ResolveErrorKind::ParameterUnresolved {
                    name: name.to_string(),
                    reason: "the template's parameters were not bound".into(),
                }))
            }
            None => None,
        }
    }

    /// `Ref` to a resource the template declares.
    pub(super) fn resource_ref(&self, name: &str) -> R<Value> {
        if self.in_condition > 0 {
            return self.fail(ResolveErrorKind::ResourceInCondition(name.to_string()));
        }
        match self.resources.ref_value(name) {
            Some(v) => Ok(v),
            None => self.fail(ResolveErrorKind::ResourceUnavailable(name.to_string())),
        }
    }

    /// `Fn::GetAtt` of a resource; `attribute` is everything after the
    /// first dot.
    pub(super) fn resource_att(&self, resource: &str, attribute: &str) -> R<Value> {
        if !self.template.resources.contains_key(resource) {
            return self.fail(ResolveErrorKind::UnknownLogicalId {
                function: "Fn::GetAtt",
                name: resource.to_string(),
            });
        }
        if self.in_condition > 0 {
            return self.fail(ResolveErrorKind::ResourceInCondition(resource.to_string()));
        }
        match self.resources.get_att(resource, attribute) {
            Some(v) => Ok(v),
            None => self.fail(ResolveErrorKind::AttributeUnavailable {
                resource: resource.to_string(),
                attribute: attribute.to_string(),
            }),
        }
    }

    fn get_att(&mut self, arg: &Value) -> R<Value> {
        const F: &str = "Fn::GetAtt";
        let (resource, attribute) = match arg {
            Value::String(s) => match s.split_once('.') {
                Some((r, a)) if !r.is_empty() && !a.is_empty() => (r.to_string(), a.to_string()),
                _ => return self.bad_args(F, "expected 'LogicalId.Attribute'"),
            },
            Value::Array(items) if items.len() == 2 => {
                let Some(r) = items[0].as_str() else {
                    return self.bad_args(F, "the logical id must be a string");
                };
                let mark = self.enter_index(1);
                let a = self.eval_text(&items[1], F)?;
                self.leave(mark);
                (r.to_string(), a)
            }
            _ => {
                return self.bad_args(
                    F,
                    "expected [LogicalId, Attribute] or 'LogicalId.Attribute'",
                )
            }
        };
        self.resource_att(&resource, &attribute)
    }

    fn join(&mut self, arg: &Value) -> R<Value> {
        const F: &str = "Fn::Join";
        let items = self.args(arg, F, 2, 2)?;
        let mark = self.enter_index(0);
        let delimiter = self.eval_text(&items[0], F)?;
        self.leave(mark);
        let mark = self.enter_index(1);
        let mut parts = Vec::new();
        match &items[1] {
            Value::Array(list) => {
                for (i, element) in list.iter().enumerate() {
                    let m = self.enter_index(i);
                    if intrinsic(element).is_some() {
                        if let Some(v) = self.eval(element)? {
                            parts.push(self.coerce_text(&v, F)?);
                        }
                    } else {
                        parts.push(self.eval_text(element, F)?);
                    }
                    self.leave(m);
                }
            }
            other => {
                for v in self.eval_list(other, F)? {
                    parts.push(self.coerce_text(&v, F)?);
                }
            }
        }
        self.leave(mark);
        Ok(Value::String(parts.join(&delimiter)))
    }

    /// An integer argument: a literal number, a numeric string or an
    /// intrinsic giving either.
    pub(super) fn eval_integer(&mut self, raw: &Value, function: &'static str) -> R<i64> {
        let v = if intrinsic(raw).is_some() {
            self.eval_required(raw, function)?
        } else {
            raw.clone()
        };
        let n = match &v {
            Value::Number(n) => n.as_i64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                    .map(|f| f as i64)
            }),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        };
        match n {
            Some(n) => Ok(n),
            None => self.fail(ResolveErrorKind::WrongType {
                function,
                expected: "an integer",
                got: type_name(&v),
            }),
        }
    }

    fn select(&mut self, arg: &Value) -> R<Value> {
        const F: &str = "Fn::Select";
        let items = self.args(arg, F, 2, 2)?;
        let mark = self.enter_index(0);
        let index = self.eval_integer(&items[0], F)?;
        self.leave(mark);
        let mark = self.enter_index(1);
        let list = self.eval_list(&items[1], F)?;
        self.leave(mark);
        match usize::try_from(index).ok().and_then(|i| list.get(i)) {
            Some(v) => Ok(v.clone()),
            None => self.fail(ResolveErrorKind::IndexOutOfRange {
                index,
                len: list.len(),
            }),
        }
    }

    fn split(&mut self, arg: &Value) -> R<Value> {
        const F: &str = "Fn::Split";
        let items = self.args(arg, F, 2, 2)?;
        let mark = self.enter_index(0);
        let delimiter = self.eval_text(&items[0], F)?;
        if delimiter.is_empty() {
            return self.bad_args(F, "the delimiter is empty");
        }
        self.leave(mark);
        let mark = self.enter_index(1);
        let source = match self.eval_required(&items[1], F)? {
            Value::String(s) => s,
            other => {
                return self.fail(ResolveErrorKind::WrongType {
                    function: F,
                    expected: "a string to split",
                    got: type_name(&other),
                })
            }
        };
        self.leave(mark);
        Ok(Value::Array(
            source
                .split(delimiter.as_str())
                .map(|s| Value::String(s.to_string()))
                .collect(),
        ))
    }

    fn if_(&mut self, arg: &Value) -> R<Option<Value>> {
        const F: &str = "Fn::If";
        let items = self.args(arg, F, 3, 3)?;
        let Some(name) = items[0].as_str() else {
            return self.bad_args(F, "the first element must be a condition name");
        };
        let verdict = self.condition(name)?;
        let branch = if verdict { 1 } else { 2 };
        let mark = self.enter_index(branch);
        let r = self.eval(&items[branch]);
        self.leave(mark);
        r
    }

    fn find_in_map(&mut self, arg: &Value) -> R<Value> {
        const F: &str = "Fn::FindInMap";
        let items = self.args(arg, F, 3, 4)?;
        let mut keys = Vec::with_capacity(3);
        for (i, raw) in items.iter().take(3).enumerate() {
            let mark = self.enter_index(i);
            keys.push(self.eval_text(raw, F)?);
            self.leave(mark);
        }
        let default = match items.get(3) {
            None => None,
            Some(Value::Object(m)) if m.len() == 1 && m.contains_key("DefaultValue") => {
                m.get("DefaultValue")
            }
            Some(_) => {
                return self.bad_args(F, "the fourth element must be {\"DefaultValue\": ...}")
            }
        };
        let (map, k1, k2) = (&keys[0], &keys[1], &keys[2]);
        let miss = match self.template.mappings.get(map) {
            None => format!("mapping '{map}' is not defined"),
            Some(m) => match m.get(k1) {
                None => format!("mapping '{map}' has no key '{k1}'"),
                Some(inner) => match inner.get(k2) {
                    Some(v) => return Ok(v.clone()),
                    None => format!("mapping '{map}.{k1}' has no key '{k2}'"),
                },
            },
        };
        match default {
            Some(d) => {
                let mark = self.enter_index(3);
                let m = self.enter("DefaultValue");
                let v = self.eval_required(d, F)?;
                self.leave(m);
                self.leave(mark);
                Ok(v)
            }
            None => self.fail(ResolveErrorKind::MappingMiss(miss)),
        }
    }

    fn cidr_fn(&mut self, arg: &Value) -> R<Value> {
        const F: &str = "Fn::Cidr";
        let items = self.args(arg, F, 3, 3)?;
        let mark = self.enter_index(0);
        let block = self.eval_text(&items[0], F)?;
        self.leave(mark);
        let mark = self.enter_index(1);
        let count = self.eval_integer(&items[1], F)?;
        self.leave(mark);
        let mark = self.enter_index(2);
        let bits = self.eval_integer(&items[2], F)?;
        self.leave(mark);
        match super::cidr::cidr(&block, count, bits) {
            Ok(list) => Ok(Value::Array(list.into_iter().map(Value::String).collect())),
            Err(message) => self.fail(ResolveErrorKind::Cidr(message)),
        }
    }

    fn get_azs(&mut self, arg: &Value) -> R<Value> {
        let region = self.eval_text(arg, "Fn::GetAZs")?;
        let region = if region.trim().is_empty() {
            self.ctx.region().to_string()
        } else {
            region.trim().to_ascii_lowercase()
        };
        match self.external.availability_zones(&region) {
            Ok(zones) => Ok(Value::Array(zones.into_iter().map(Value::String).collect())),
            Err(error) => self.fail(ResolveErrorKind::Lookup {
                function: "Fn::GetAZs",
                error,
            }),
        }
    }

    fn get_stack_output(&mut self, arg: &Value) -> R<Value> {
        const F: &str = "Fn::GetStackOutput";
        let Some(m) = arg.as_object() else {
            return self.bad_args(F, format!("expected an object, got {}", type_name(arg)));
        };
        let mut fields: [Option<String>; 4] = Default::default();
        const KEYS: [&str; 4] = ["StackName", "OutputName", "Region", "RoleArn"];
        for (k, v) in m {
            let Some(slot) = KEYS.iter().position(|x| x == k) else {
                return self.bad_args(F, format!("unknown key '{k}'"));
            };
            let mark = self.enter(k);
            fields[slot] = Some(self.eval_text(v, F)?);
            self.leave(mark);
        }
        let [stack, output, region, role] = fields;
        let (Some(stack_name), Some(output_name)) = (stack, output) else {
            return self.bad_args(F, "StackName and OutputName are required");
        };
        let request = StackOutputRequest {
            stack_name,
            output_name,
            region,
            role_arn: role,
        };
        match self.external.stack_output(&request) {
            Ok(v) => Ok(v),
            Err(error) => self.fail(ResolveErrorKind::Lookup { function: F, error }),
        }
    }
}

/// Standard base64 with padding (the SDK's encoder, already linked).
pub(crate) fn base64(bytes: &[u8]) -> String {
    aws_smithy_types::base64::encode(bytes)
}
