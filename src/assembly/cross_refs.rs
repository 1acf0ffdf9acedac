//! Stack dependencies the templates imply and the manifest does not carry.
//!
//! A consumer that reads a producer of the same app through `Fn::ImportValue` of a name the
//! producer exports, or through `Fn::GetStackOutput` of the producer's stack name, has to be
//! deployed after it, and destroyed before it, even when the app never called
//! `addDependency` (so the manifest has no edge). An import is a strong edge: the export must
//! exist, so a deploy of the consumer also brings the producer in (unless `--exclusively`).
//! An output read is weak: it only orders stacks that are both selected.
//!
//! Names are evaluated statically: literals, and `Fn::Sub` / `Fn::Join` / `Ref` over the
//! pseudo parameters a stack knows before deploying (its name; its region, account and
//! partition when the environment pins them). Two environment-agnostic stacks deploy to the
//! same default account and region, so a pseudo parameter they leave unknown compares equal
//! between them and with nothing else. Anything else (a parameter, a resource attribute, a
//! cross-account read through `RoleArn`) gives no edge: an edge is inferred only when the
//! templates prove it.

use serde_json::{Map, Value};

use super::environment::Environment;
use super::manifest::StackArtifact;
use crate::resolve::partition_for_region;

/// A consumer-to-producer edge between two stacks of the assembly (indices into its stacks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inferred {
    pub consumer: usize,
    pub producer: usize,
    /// `Fn::ImportValue` (the producer must be deployed); `false` for `Fn::GetStackOutput`.
    pub strong: bool,
}

/// What one template publishes and reads, with its names evaluated.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Facts {
    /// `Outputs.*.Export.Name` that evaluate statically.
    pub exports: Vec<String>,
    /// `Fn::ImportValue` names that evaluate statically.
    pub imports: Vec<String>,
    /// Same-account `Fn::GetStackOutput` reads: the producer's stack name and, when the
    /// read names one, its region.
    pub reads: Vec<(String, Option<String>)>,
}

/// The values of the pseudo parameters one stack knows before it is deployed.
#[derive(Debug, Clone)]
pub struct Pseudo<'a> {
    pub stack_name: &'a str,
    pub environment: &'a Environment,
}

impl Pseudo<'_> {
    /// `None` for a pseudo parameter that has no value before deploying (`AWS::StackId`,
    /// `AWS::NoValue`) or none at all. An environment-agnostic stack's region or account is
    /// the placeholder `${AWS::Region}` / `${AWS::AccountId}`: equal between such stacks,
    /// never equal to a real value.
    fn value(&self, name: &str) -> Option<String> {
        let region = self.environment.region.as_deref();
        match name {
            "AWS::StackName" => Some(self.stack_name.to_owned()),
            "AWS::Region" => Some(region.map_or_else(|| placeholder(name), str::to_owned)),
            "AWS::AccountId" => Some(
                self.environment
                    .account
                    .clone()
                    .unwrap_or_else(|| placeholder(name)),
            ),
            "AWS::Partition" => Some(region.map_or_else(
                || placeholder(name),
                |r| partition_for_region(r).name.to_owned(),
            )),
            "AWS::URLSuffix" => Some(region.map_or_else(
                || placeholder(name),
                |r| partition_for_region(r).url_suffix.to_owned(),
            )),
            _ => None,
        }
    }
}

fn placeholder(name: &str) -> String {
    format!("${{{name}}}")
}

/// Evaluates a name (an export name, an imported name, a stack name) without deploying
/// anything; `None` when it depends on something only a deploy knows.
pub fn static_text(v: &Value, pseudo: &Pseudo<'_>) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(m) if m.len() == 1 => {
            let (function, arg) = m.iter().next()?;
            match function.as_str() {
                "Ref" => pseudo.value(arg.as_str()?),
                "Fn::Sub" => sub(arg, pseudo),
                "Fn::Join" => join(arg, pseudo),
                _ => None,
            }
        }
        _ => None,
    }
}

fn join(arg: &Value, pseudo: &Pseudo<'_>) -> Option<String> {
    let [delimiter, Value::Array(parts)] = arg.as_array()?.as_slice() else {
        return None;
    };
    let delimiter = delimiter.as_str()?;
    let parts: Option<Vec<String>> = parts.iter().map(|p| static_text(p, pseudo)).collect();
    Some(parts?.join(delimiter))
}

fn sub(arg: &Value, pseudo: &Pseudo<'_>) -> Option<String> {
    let (text, vars) = match arg {
        Value::String(s) => (s.as_str(), None),
        Value::Array(items) => match items.as_slice() {
            [Value::String(s)] => (s.as_str(), None),
            [Value::String(s), Value::Object(vars)] => (s.as_str(), Some(vars)),
            _ => return None,
        },
        _ => return None,
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Some(out);
        };
        let name = &after[..end];
        if let Some(literal) = name.strip_prefix('!') {
            out.push_str("${");
            out.push_str(literal);
            out.push('}');
        } else {
            out.push_str(&sub_variable(name, vars, pseudo)?);
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

fn sub_variable(
    name: &str,
    vars: Option<&Map<String, Value>>,
    pseudo: &Pseudo<'_>,
) -> Option<String> {
    if let Some(v) = vars.and_then(|vars| vars.get(name)) {
        return static_text(v, pseudo);
    }
    if name.starts_with("AWS::") {
        return pseudo.value(name);
    }
    // A parameter, a resource's Ref or attribute: known only when deploying.
    None
}

/// Collects what `template` (a whole template document) exports and reads.
pub fn facts(template: &Value, pseudo: &Pseudo<'_>) -> Facts {
    let mut facts = Facts::default();
    if let Some(outputs) = template.get("Outputs").and_then(Value::as_object) {
        for output in outputs.values() {
            if let Some(name) = output.pointer("/Export/Name") {
                if let Some(name) = static_text(name, pseudo).filter(|n| !n.is_empty()) {
                    facts.exports.push(name);
                }
            }
        }
    }
    walk(template, pseudo, &mut facts);
    facts
}

fn walk(node: &Value, pseudo: &Pseudo<'_>, facts: &mut Facts) {
    match node {
        Value::Array(items) => items.iter().for_each(|i| walk(i, pseudo, facts)),
        Value::Object(m) => {
            if let Some(arg) = m.get("Fn::ImportValue") {
                if let Some(name) = static_text(arg, pseudo) {
                    facts.imports.push(name);
                }
            }
            if let Some(arg) = m.get("Fn::GetStackOutput") {
                if let Some(read) = output_read(arg, pseudo) {
                    facts.reads.push(read);
                }
            }
            m.values().for_each(|v| walk(v, pseudo, facts));
        }
        _ => {}
    }
}

/// `{StackName, OutputName, Region?, RoleArn?}`; a read through `RoleArn` is another
/// account's stack, never one of this app's deploy.
fn output_read(arg: &Value, pseudo: &Pseudo<'_>) -> Option<(String, Option<String>)> {
    let arg = arg.as_object()?;
    if arg.contains_key("RoleArn") {
        return None;
    }
    let stack = static_text(arg.get("StackName")?, pseudo)?;
    let region = match arg.get("Region") {
        None => None,
        Some(r) => Some(static_text(r, pseudo)?),
    };
    Some((stack, region))
}

/// Whether two environments may be the same account and region (an unknown half may be
/// anything the run's credentials say).
fn may_share(a: &Environment, b: &Environment) -> bool {
    let same = |x: &Option<String>, y: &Option<String>| match (x, y) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    };
    same(&a.account, &b.account) && same(&a.region, &b.region)
}

/// Every inferred edge among `stacks`, given each stack's [`Facts`] (same order). An import
/// matches every other stack in a compatible environment exporting that name; an output
/// read matches every other stack of that name deployed to the region it reads from.
pub fn infer(stacks: &[StackArtifact], facts: &[Facts]) -> Vec<Inferred> {
    let mut edges: Vec<Inferred> = Vec::new();
    let mut add = |e: Inferred| {
        if e.consumer == e.producer {
            return;
        }
        if let Some(existing) = edges
            .iter_mut()
            .find(|x| x.consumer == e.consumer && x.producer == e.producer)
        {
            existing.strong |= e.strong;
        } else {
            edges.push(e);
        }
    };
    for (consumer, f) in facts.iter().enumerate() {
        let env = &stacks[consumer].environment;
        for name in &f.imports {
            for (producer, p) in facts.iter().enumerate() {
                if p.exports.contains(name) && may_share(env, &stacks[producer].environment) {
                    add(Inferred {
                        consumer,
                        producer,
                        strong: true,
                    });
                }
            }
        }
        for (stack_name, region) in &f.reads {
            let target = Environment {
                account: env.account.clone(),
                region: region.clone().or_else(|| env.region.clone()),
            };
            for (producer, s) in stacks.iter().enumerate() {
                if s.stack_name == *stack_name && may_share(&target, &s.environment) {
                    add(Inferred {
                        consumer,
                        producer,
                        strong: false,
                    });
                }
            }
        }
    }
    edges
}

/// Reads every stack's template and infers the edges. A template that cannot be read or
/// parsed contributes nothing here; the command that uses it reports the error.
pub fn infer_from_templates(stacks: &[StackArtifact]) -> Vec<Inferred> {
    let facts: Vec<Facts> = stacks
        .iter()
        .map(|s| {
            let pseudo = Pseudo {
                stack_name: &s.stack_name,
                environment: &s.environment,
            };
            read_template(&s.template_file)
                .map(|t| facts(&t, &pseudo))
                .unwrap_or_default()
        })
        .collect();
    infer(stacks, &facts)
}

fn read_template(path: &std::path::Path) -> Option<Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| tracing::debug!("{}: not read for stack order: {e}", path.display()))
        .ok()?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text)
            .map_err(|e| tracing::debug!("{}: not read for stack order: {e}", path.display()))
            .ok()
    } else {
        crate::template::yaml_to_json(text, path)
            .map_err(|e| tracing::debug!("{}: not read for stack order: {e}", path.display()))
            .ok()
    }
}

#[cfg(test)]
#[path = "cross_refs_tests.rs"]
mod tests;
