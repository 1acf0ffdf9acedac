//! Conditions: `Fn::Equals`, `Fn::And`, `Fn::Or`, `Fn::Not`, `Condition`
//! references, the evaluation of a template's Conditions section, and
//! pruning condition-false resources and outputs.

use indexmap::IndexMap;
use serde_json::Value;

use super::error::{type_name, ResolveErrorKind, ResolveWarning};
use super::{Resolver, R};
use crate::template::Template;

/// Every condition of a template with its verdict, in template order.
pub type ConditionVerdicts = IndexMap<String, bool>;

impl Resolver<'_> {
    /// Evaluates every condition of the template (each once; conditions may
    /// refer to each other, a cycle is an error).
    pub fn evaluate_conditions(&mut self) -> R<ConditionVerdicts> {
        let template = self.template;
        let mut out = ConditionVerdicts::new();
        for name in template.conditions.keys() {
            let verdict = self.condition(name)?;
            out.insert(name.clone(), verdict);
        }
        Ok(out)
    }

    /// The verdict of condition `name`, evaluated on first use.
    pub fn condition(&mut self, name: &str) -> R<bool> {
        if let Some(v) = self.verdicts.get(name) {
            return Ok(*v);
        }
        let Some(definition) = self.template.conditions.get(name) else {
            return self.fail(ResolveErrorKind::UnknownCondition(name.to_string()));
        };
        if let Some(pos) = self.evaluating.iter().position(|n| n == name) {
            let mut cycle = self.evaluating[pos..].to_vec();
            cycle.push(name.to_string());
            return self.fail(ResolveErrorKind::ConditionCycle(cycle.join(" -> ")));
        }
        if self.depth >= super::MAX_DEPTH {
            return self.fail(ResolveErrorKind::TooDeep(super::MAX_DEPTH));
        }
        let saved_path = std::mem::replace(&mut self.path, format!("Conditions.{name}"));
        let saved_depth = self.depth;
        self.evaluating.push(name.to_string());
        self.in_condition += 1;
        self.depth += 1;
        let r = self.condition_operand(definition);
        self.in_condition -= 1;
        self.evaluating.pop();
        self.depth = saved_depth;
        self.path = saved_path;
        let verdict = r?;
        self.verdicts.insert(name.to_string(), verdict);
        Ok(verdict)
    }

    /// A condition operand: `{"Condition": name}` or anything that
    /// resolves to a boolean (`"true"` / `"false"` strings included).
    fn condition_operand(&mut self, v: &Value) -> R<bool> {
        if let Some(m) = v.as_object() {
            if let (1, Some(Value::String(name))) = (m.len(), m.get("Condition")) {
                let mark = self.enter("Condition");
                let r = self.condition(name);
                self.leave(mark);
                return r;
            }
        }
        match self.eval_required(v, "a condition")? {
            Value::Bool(b) => Ok(b),
            Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
            Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
            other => self.fail(ResolveErrorKind::NotBoolean(type_name(&other))),
        }
    }

    pub(super) fn equals(&mut self, arg: &Value) -> R<Value> {
        const F: &str = "Fn::Equals";
        let items = match arg.as_array() {
            Some(items) if items.len() == 2 => items,
            _ => {
                return self.fail(ResolveErrorKind::InvalidArguments {
                    function: F,
                    message: format!("expected a list of 2, got {}", type_name(arg)),
                })
            }
        };
        let mut sides = Vec::with_capacity(2);
        for (i, item) in items.iter().enumerate() {
            let mark = self.enter_index(i);
            sides.push(self.eval_required(item, F)?);
            self.leave(mark);
        }
        Ok(Value::Bool(loosely_equal(&sides[0], &sides[1])))
    }

    /// `Fn::And` (`all`) or `Fn::Or`. Every operand is evaluated.
    pub(super) fn and_or(&mut self, arg: &Value, all: bool) -> R<Value> {
        let function = if all { "Fn::And" } else { "Fn::Or" };
        let items = match arg.as_array() {
            Some(items) if !items.is_empty() => items,
            _ => {
                return self.fail(ResolveErrorKind::InvalidArguments {
                    function,
                    message: format!("expected a list of conditions, got {}", type_name(arg)),
                })
            }
        };
        let mut verdicts = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let mark = self.enter_index(i);
            verdicts.push(self.condition_operand(item)?);
            self.leave(mark);
        }
        Ok(Value::Bool(if all {
            verdicts.iter().all(|v| *v)
        } else {
            verdicts.iter().any(|v| *v)
        }))
    }

    pub(super) fn not(&mut self, arg: &Value) -> R<Value> {
        match arg.as_array().map(Vec::as_slice) {
            Some([operand]) => {
                let mark = self.enter_index(0);
                let v = self.condition_operand(operand)?;
                self.leave(mark);
                Ok(Value::Bool(!v))
            }
            _ => self.fail(ResolveErrorKind::InvalidArguments {
                function: "Fn::Not",
                message: format!("expected a list of 1 condition, got {}", type_name(arg)),
            }),
        }
    }
}

/// `Fn::Equals` comparison: scalars compare by their text (a `Number`
/// parameter's `"5"` equals a literal `5`), lists element by element.
fn loosely_equal(a: &Value, b: &Value) -> bool {
    fn text(v: &Value) -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| loosely_equal(p, q))
        }
        _ => match (text(a), text(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
    }
}

/// What [`prune`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PruneReport {
    /// Resources removed because their Condition is false.
    pub removed_resources: Vec<String>,
    /// Outputs whose Condition is false: CloudFormation never creates them,
    /// so they are neither resolved nor stored. They stay in the template.
    pub skipped_outputs: Vec<String>,
    /// Resources and outputs naming a condition with no verdict (kept).
    pub warnings: Vec<ResolveWarning>,
}

impl PruneReport {
    pub fn is_output_skipped(&self, name: &str) -> bool {
        self.skipped_outputs.iter().any(|o| o == name)
    }
}

/// Removes every resource whose Condition is false from `template` and
/// lists condition-false outputs as skipped. A resource or output naming a
/// condition that has no verdict is kept, with a warning.
pub fn prune(template: &mut Template, verdicts: &ConditionVerdicts, stack: &str) -> PruneReport {
    let mut report = PruneReport::default();
    let mut warn = |path: String, cond: &str, what: &str| {
        report.warnings.push(ResolveWarning {
            stack: stack.to_string(),
            path,
            message: format!(
                "Condition '{cond}' is not a known condition; the {what} is kept as if it were true"
            ),
        });
    };
    let mut removed = Vec::new();
    for (id, resource) in &template.resources {
        if let Some(cond) = &resource.condition {
            match verdicts.get(cond) {
                Some(false) => removed.push(id.clone()),
                Some(true) => {}
                None => warn(format!("Resources.{id}.Condition"), cond, "resource"),
            }
        }
    }
    let mut skipped = Vec::new();
    for (name, output) in &template.outputs {
        if let Some(cond) = &output.condition {
            match verdicts.get(cond) {
                Some(false) => skipped.push(name.clone()),
                Some(true) => {}
                None => warn(format!("Outputs.{name}.Condition"), cond, "output"),
            }
        }
    }
    for id in &removed {
        template.resources.shift_remove(id);
    }
    report.removed_resources = removed;
    report.skipped_outputs = skipped;
    report
}
