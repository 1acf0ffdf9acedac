//! The intrinsic resolver: turns template values into the values cdkd sends
//! to AWS.
//!
//! Everything here is pure. What only the engine knows comes in through
//! traits: physical ids and attributes through [`ResourceLookup`], other
//! stacks' exports and outputs, availability zones and SSM parameters
//! through [`ExternalLookup`] (whose methods default to "not available
//! here"). The order of work for one stack is:
//!
//! 1. [`bind_parameters`]: overrides and defaults, typed and validated;
//! 2. [`Resolver::evaluate_conditions`]: every condition once, cycles refused;
//! 3. [`prune`]: condition-false resources leave the template, condition-false
//!    outputs are reported as skipped;
//! 4. [`Resolver::resolve_properties`] / [`Resolver::resolve_output`] per
//!    resource and output, as their dependencies become known.
//!
//! `AWS::NoValue` removes the map key or list element it stands in;
//! `Rules` are never evaluated. Errors ([`ResolveError`]) name the stack and
//! the template path of the failing value; an `Fn::Sub` placeholder naming
//! nothing is kept as written and reported in [`Resolver::warnings`].

mod cidr;
mod conditions;
mod context;
pub mod dynamic;
mod error;
pub mod external;
mod functions;
mod lookup;
mod params;
mod prefetch;
mod sub;

use serde_json::{Map, Value};

pub use cidr::cidr;
pub use conditions::{prune, ConditionVerdicts, PruneReport};
pub use context::{partition_for_region, Partition, ResolveContext, AWS_PARTITION};
pub use dynamic::{substitute_dynamic_references, DynamicLookup, DynamicReference, SecretsMap};
pub use error::{LookupError, ResolveError, ResolveErrorKind, ResolveWarning};
pub use external::ExternalReader;
pub use lookup::{
    ExternalLookup, NoExternalLookup, NoResources, ResourceLookup, StackOutputRequest,
};
pub use params::{bind_parameters, BoundParameters, ParameterOverride, ParameterValue};
pub use prefetch::{prefetch, PrefetchedLookup, PrefetchedStack};

use crate::template::Template;

/// How deep the resolver follows nested values (and condition references)
/// before refusing. serde_json refuses documents nested deeper than this
/// when parsing, so a parsed template never reaches it; the limit keeps a
/// hand-built value from overflowing the stack.
pub const MAX_DEPTH: usize = 128;

type R<T> = Result<T, ResolveError>;

/// A resolved output.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedOutput {
    pub value: Value,
    /// `Export.Name`, resolved.
    pub export_name: Option<String>,
}

/// Resolves values of one stack's template.
pub struct Resolver<'a> {
    template: &'a Template,
    ctx: &'a ResolveContext,
    params: &'a BoundParameters,
    resources: &'a dyn ResourceLookup,
    external: &'a dyn ExternalLookup,
    verdicts: ConditionVerdicts,
    /// Conditions being evaluated, innermost last (cycle detection).
    evaluating: Vec<String>,
    /// Non-zero while evaluating a condition: resources are off limits.
    in_condition: usize,
    path: String,
    depth: usize,
    warnings: Vec<ResolveWarning>,
}

impl<'a> Resolver<'a> {
    pub fn new(
        template: &'a Template,
        ctx: &'a ResolveContext,
        params: &'a BoundParameters,
        resources: &'a dyn ResourceLookup,
        external: &'a dyn ExternalLookup,
    ) -> Self {
        Resolver {
            template,
            ctx,
            params,
            resources,
            external,
            verdicts: ConditionVerdicts::new(),
            evaluating: Vec::new(),
            in_condition: 0,
            path: String::new(),
            depth: 0,
            warnings: Vec::new(),
        }
    }

    /// Seeds condition verdicts computed earlier (conditions not listed are
    /// still evaluated on first use).
    pub fn with_conditions(mut self, verdicts: &ConditionVerdicts) -> Self {
        self.verdicts
            .extend(verdicts.iter().map(|(k, v)| (k.clone(), *v)));
        self
    }

    pub fn context(&self) -> &ResolveContext {
        self.ctx
    }

    /// Warnings collected so far.
    pub fn warnings(&self) -> &[ResolveWarning] {
        &self.warnings
    }

    pub fn take_warnings(&mut self) -> Vec<ResolveWarning> {
        std::mem::take(&mut self.warnings)
    }

    /// The resolved `Properties` of resource `logical_id`; keys whose value
    /// is `AWS::NoValue` are left out.
    pub fn resolve_properties(&mut self, logical_id: &str) -> R<Map<String, Value>> {
        self.reset(format!("Resources.{logical_id}"));
        let Some(resource) = self.template.resources.get(logical_id) else {
            return self.fail(ResolveErrorKind::UnknownLogicalId {
                function: "Resources",
                name: logical_id.to_string(),
            });
        };
        let mark = self.enter("Properties");
        let mut out = Map::new();
        for (key, value) in &resource.properties {
            let m = self.enter(key);
            if let Some(v) = self.eval(value)? {
                out.insert(key.clone(), v);
            }
            self.leave(m);
        }
        self.leave(mark);
        Ok(out)
    }

    /// Output `name` resolved, or `None` when its Condition is false (a
    /// Condition naming no known condition is ignored with a warning).
    pub fn resolve_output(&mut self, name: &str) -> R<Option<ResolvedOutput>> {
        self.reset(format!("Outputs.{name}"));
        let Some(output) = self.template.outputs.get(name) else {
            return self.fail(ResolveErrorKind::UnknownLogicalId {
                function: "Outputs",
                name: name.to_string(),
            });
        };
        if let Some(cond) = &output.condition {
            if self.template.conditions.contains_key(cond) || self.verdicts.contains_key(cond) {
                let verdict = self.condition(cond)?;
                self.reset(format!("Outputs.{name}"));
                if !verdict {
                    return Ok(None);
                }
            } else {
                self.warn(format!(
                    "Condition '{cond}' is not defined in the Conditions section; the output is kept"
                ));
            }
        }
        let mark = self.enter("Value");
        let value = match self.eval(&output.value)? {
            Some(v) => v,
            None => return self.fail(ResolveErrorKind::NoValue("an output value")),
        };
        self.leave(mark);
        let export_name = match &output.export_name {
            Some(raw) => {
                let m = self.enter("Export.Name");
                let s = self.eval_text(raw, "Export.Name")?;
                self.leave(m);
                Some(s)
            }
            None => None,
        };
        Ok(Some(ResolvedOutput { value, export_name }))
    }

    /// Resolves any value; `path` names it in errors (e.g.
    /// `Resources.Fn.Properties.Environment`). `None` is `AWS::NoValue`.
    pub fn resolve_value(&mut self, value: &Value, path: &str) -> R<Option<Value>> {
        self.reset(path.to_string());
        self.eval(value)
    }

    fn reset(&mut self, path: String) {
        self.path = path;
        self.depth = 0;
    }

    fn fail<T>(&self, kind: ResolveErrorKind) -> R<T> {
        Err(self.error(kind))
    }

    fn error(&self, kind: ResolveErrorKind) -> ResolveError {
        ResolveError {
            stack: self.ctx.stack_name().to_string(),
            path: self.path.clone(),
            kind,
        }
    }

    fn warn(&mut self, message: String) {
        self.warnings.push(ResolveWarning {
            stack: self.ctx.stack_name().to_string(),
            path: self.path.clone(),
            message,
        });
    }

    /// Appends `.segment` to the path; returns the mark to [`leave`] with.
    fn enter(&mut self, segment: &str) -> usize {
        let mark = self.path.len();
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(segment);
        mark
    }

    /// Appends `[index]` to the path.
    fn enter_index(&mut self, index: usize) -> usize {
        let mark = self.path.len();
        self.path.push_str(&format!("[{index}]"));
        mark
    }

    fn leave(&mut self, mark: usize) {
        self.path.truncate(mark);
    }

    /// Resolves `v`; `None` is `AWS::NoValue`.
    fn eval(&mut self, v: &Value) -> R<Option<Value>> {
        if self.depth >= MAX_DEPTH {
            return self.fail(ResolveErrorKind::TooDeep(MAX_DEPTH));
        }
        self.depth += 1;
        let r = self.eval_inner(v);
        self.depth -= 1;
        r
    }

    fn eval_inner(&mut self, v: &Value) -> R<Option<Value>> {
        match v {
            Value::Object(m) => match intrinsic(v) {
                Some((name, arg)) => self.eval_call(name, arg),
                None => self.eval_map(m).map(|m| Some(Value::Object(m))),
            },
            Value::Array(items) => self.eval_items(items).map(|x| Some(Value::Array(x))),
            other => Ok(Some(other.clone())),
        }
    }

    fn eval_call(&mut self, name: &str, arg: &Value) -> R<Option<Value>> {
        let mark = self.enter(name);
        let r = self.call(name, arg);
        self.leave(mark);
        r
    }

    /// Resolves map values, dropping `AWS::NoValue` ones.
    fn eval_map(&mut self, m: &Map<String, Value>) -> R<Map<String, Value>> {
        let mut out = Map::new();
        for (k, x) in m {
            let mark = self.enter(k);
            let r = self.eval(x);
            self.leave(mark);
            if let Some(x) = r? {
                out.insert(k.clone(), x);
            }
        }
        Ok(out)
    }

    /// Resolves list elements, dropping `AWS::NoValue` ones.
    fn eval_items(&mut self, items: &[Value]) -> R<Vec<Value>> {
        let mut out = Vec::with_capacity(items.len());
        for (i, x) in items.iter().enumerate() {
            let mark = self.enter_index(i);
            let r = self.eval(x);
            self.leave(mark);
            if let Some(x) = r? {
                out.push(x);
            }
        }
        Ok(out)
    }

    /// Resolves `v`, refusing `AWS::NoValue` (`what` names the slot).
    fn eval_required(&mut self, v: &Value, what: &'static str) -> R<Value> {
        match self.eval(v)? {
            Some(x) => Ok(x),
            None => self.fail(ResolveErrorKind::NoValue(what)),
        }
    }

    /// A string argument: a literal string, or an intrinsic giving a string
    /// (a number or boolean an intrinsic gives is written out as text). A
    /// literal of any other type is refused, as CloudFormation does.
    fn eval_text(&mut self, raw: &Value, function: &'static str) -> R<String> {
        match raw {
            Value::String(s) => Ok(s.clone()),
            _ if intrinsic(raw).is_some() => {
                let v = self.eval_required(raw, function)?;
                self.coerce_text(&v, function)
            }
            other => self.fail(ResolveErrorKind::WrongType {
                function,
                expected: "a string",
                got: error::type_name(other),
            }),
        }
    }

    /// Text of a value an intrinsic produced.
    fn coerce_text(&self, v: &Value, function: &'static str) -> R<String> {
        match v {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            other => self.fail(ResolveErrorKind::WrongType {
                function,
                expected: "a string",
                got: error::type_name(other),
            }),
        }
    }

    /// A list argument: a literal list (elements resolved, `AWS::NoValue`
    /// ones dropped) or an intrinsic giving a list.
    fn eval_list(&mut self, raw: &Value, function: &'static str) -> R<Vec<Value>> {
        match raw {
            Value::Array(items) => self.eval_items(items),
            _ => match self.eval_required(raw, function)? {
                Value::Array(items) => Ok(items),
                other => self.fail(ResolveErrorKind::WrongType {
                    function,
                    expected: "a list",
                    got: error::type_name(&other),
                }),
            },
        }
    }
}

/// `Some((name, argument))` when `v` is an intrinsic function call: an
/// object with the single key `Ref` or `Fn::...`.
pub fn intrinsic(v: &Value) -> Option<(&str, &Value)> {
    let m = v.as_object()?;
    if m.len() != 1 {
        return None;
    }
    let (k, arg) = m.iter().next()?;
    (k == "Ref" || k.starts_with("Fn::")).then_some((k.as_str(), arg))
}

#[cfg(test)]
mod cidr_tests;
#[cfg(test)]
mod conditions_tests;
#[cfg(test)]
mod dynamic_tests;
#[cfg(test)]
mod fixtures_tests;
#[cfg(test)]
mod functions_tests;
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod params_tests;
#[cfg(test)]
mod sub_tests;
#[cfg(test)]
mod test_support;
