//! Nested stacks (scrub spec, "Nested stacks"). A child's template consumes a secret through a
//! parameter, so the child alone does not say which values are secrets: they are learned from
//! the PARENT's row (`Properties.Parameters`, as the parent's by-position pass resolved it, else
//! as the parent's record stores it). The child (`{parent}~{logicalId}`) is scrubbed after its
//! parent with its parameters bound to those values, `{{resolve:...}}` expressions kept, so its
//! by-position pass places them as a deploy does; a parameter the row fills from a NoEcho source
//! of the parent counts as NoEcho in the child. The secrets a parameter carries (the plaintexts
//! of its references, NoEcho values passed) are looked for only in the records of the child
//! resources that read that parameter.
//!
//! After each child, the parent's row attribute `Outputs.<Name>` (the parent's mirror of the
//! child's output) is rewritten, under the parent's lock, to the child's scrubbed output when
//! it is EXACTLY what that output resolves to in this run; one that holds a plaintext this run
//! recorded but matches no output is a finding. `--dry-run` reports either as a finding.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use serde_json::{Map, Value};

use super::report::StackOutcome;
use super::{scrub_stack, ScrubEnv, ScrubOptions, ScrubTarget};
use crate::redact::{Needles, NoEchoScope};
use crate::resolve::dynamic::{collect_references, DynamicReference};
use crate::resolve::external::{holds_mask, holds_reference};
use crate::resolve::ConditionVerdicts;
use crate::state::backend::SaveCondition;
use crate::state::keys::nested_stack_name;
use crate::state::{purge_noncurrent_versions, StackState};

const STACK_TYPE: &str = "AWS::CloudFormation::Stack";

type Boxed<'a> = Pin<Box<dyn Future<Output = StackOutcome> + 'a>>;

/// Scrubs every nested child of `target` (whose record, as scrubbed, is `parent`).
pub async fn scrub_children(
    env: &ScrubEnv,
    target: &ScrubTarget<'_>,
    options: ScrubOptions,
    parent: &StackState,
    outcome: &mut StackOutcome,
) {
    let Some(resources) = target.template.get("Resources").and_then(Value::as_object) else {
        return;
    };
    let (stack, region) = (target.stack_name, target.region);
    for (id, res) in resources {
        if res.get("Type").and_then(Value::as_str) != Some(STACK_TYPE) {
            continue;
        }
        let child = nested_stack_name(stack, id);
        let file = match child_template_file(env, stack, region, id, res) {
            Ok(f) => f,
            Err(e) => {
                let mut o = StackOutcome::new(&child, region);
                o.fail(e);
                outcome.across.children.push(o);
                continue;
            }
        };
        let template: Value = match std::fs::read_to_string(&file)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(t) => t,
            Err(e) => {
                let mut o = StackOutcome::new(&child, region);
                o.fail(format!(
                    "the nested template {} could not be read ({e}); the child was not examined",
                    file.display()
                ));
                outcome.across.children.push(o);
                continue;
            }
        };
        let row_params = res
            .get("Properties")
            .and_then(|p| p.get("Parameters"))
            .cloned()
            .unwrap_or(Value::Null);
        let stored_params = parent
            .resources
            .get(id)
            .and_then(|r| r.properties.get("Parameters"))
            .cloned()
            .unwrap_or(Value::Null);
        let resolved_params = outcome.across.nested_params.get(id).cloned();
        let handed = handed_down(
            env,
            target.template,
            &outcome.across.no_echo_params,
            &template,
            &row_params,
            resolved_params.as_ref(),
            &stored_params,
            region,
        )
        .await;
        env.run.remember_child(&child, region, file, handed);
        let child_target = ScrubTarget {
            stack_name: &child,
            region,
            template: &template,
        };
        let fut: Boxed<'_> = Box::pin(scrub_stack(env, &child_target, options));
        let child_outcome = fut.await;
        parent_output_attributes(env, target, options, id, &child_outcome, outcome).await;
        outcome.across.children.push(child_outcome);
    }
}

/// The child's template: the row's `aws:asset:path`, beside the parent's template.
fn child_template_file(
    env: &ScrubEnv,
    stack: &str,
    region: &str,
    id: &str,
    res: &Value,
) -> Result<PathBuf, String> {
    let path = res
        .get("Metadata")
        .and_then(|m| m.get("aws:asset:path"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            format!(
                "the nested stack row {id} has no aws:asset:path metadata, so its template is \
                 not in reach; the child was not examined"
            )
        })?;
    let dir = env
        .run
        .template_file(stack, region)
        .and_then(|f| f.parent().map(PathBuf::from))
        .ok_or_else(|| format!("the template of {stack} is not in the cloud assembly"))?;
    Ok(dir.join(path))
}

/// What a parent's row hands its child (scrub spec, "How a child's secrets are learned").
#[derive(Debug, Clone, Default)]
pub struct Handed {
    /// Child parameter → the value the row passes, `{{resolve:...}}` expressions kept (the
    /// child's by-position pass binds its parameters to these, as a deploy does).
    pub values: BTreeMap<String, Value>,
    /// Child parameters the row fills from a NoEcho source of the parent: they count as
    /// NoEcho in the child.
    pub no_echo: BTreeSet<String>,
    /// Child parameter → the secrets it carries: looked for only in the records of the
    /// child resources that read the parameter.
    pub scoped: BTreeMap<String, Needles>,
}

impl Handed {
    /// The `{{resolve:...}}` texts the parent passes.
    pub fn references(&self) -> BTreeSet<String> {
        let mut refs = Vec::new();
        for v in self.values.values() {
            collect_references(v, &mut refs);
        }
        refs.into_iter().map(|r| r.text).collect()
    }

    /// Whether any parameter carries a secret.
    pub fn carries_secret(&self) -> bool {
        self.scoped.values().any(|n| !n.is_empty())
    }
}

/// What the parent's row hands the child: per child parameter, the value passed (the row as
/// the parent's by-position pass resolved it, else the parent's record) and its secrets.
#[allow(clippy::too_many_arguments)]
async fn handed_down(
    env: &ScrubEnv,
    parent_template: &Value,
    parent_inherited_no_echo: &BTreeSet<String>,
    child_template: &Value,
    row_params: &Value,
    resolved_params: Option<&Value>,
    stored_params: &Value,
    region: &str,
) -> Handed {
    let mut handed = Handed::default();
    let empty = Map::new();
    let parent_params = parent_template.get("Parameters").and_then(Value::as_object);
    let parent_no_echo: HashSet<String> = parent_params
        .unwrap_or(&empty)
        .iter()
        .filter(|(_, p)| is_no_echo(p))
        .map(|(n, _)| n.clone())
        .chain(parent_inherited_no_echo.iter().cloned())
        .collect();
    let child_params = child_template.get("Parameters").and_then(Value::as_object);
    let verdicts = ConditionVerdicts::new();
    for (name, declared) in child_params.unwrap_or(&empty) {
        let row = row_params.get(name);
        let stored = stored_params.get(name);
        let value = resolved_params
            .and_then(|r| r.get(name))
            .or(stored.filter(|v| !holds_mask(v)))
            .cloned();
        let mut needles = Needles::default();
        if let Some(v) = &value {
            let mut refs: Vec<DynamicReference> = Vec::new();
            collect_references(v, &mut refs);
            for r in refs {
                if let Ok(fetched) = env.reader.fetch_dynamic(&r.fetch_key(region)).await {
                    if let Ok((plain, true)) = r.value_from(&fetched) {
                        needles.add_secret(&plain, Some(&r.text));
                    }
                }
            }
        }
        // A row filling the parameter from a NoEcho parameter of the parent (either branch of
        // an Fn::If: scrub cannot tell which one the deploy took).
        let scope = NoEchoScope {
            params: &parent_no_echo,
            verdicts: &verdicts,
        };
        let from_no_echo = row.is_some_and(|r| scope.reads(r).is_some());
        if from_no_echo {
            handed.no_echo.insert(name.clone());
            for (pname, p) in parent_params.unwrap_or(&empty) {
                if is_no_echo(p) && row.is_some_and(|r| reads_parameter(r, pname)) {
                    if let Some(d) = p.get("Default") {
                        needles.add_no_echo(d);
                    }
                }
            }
        }
        if is_no_echo(declared) || from_no_echo {
            for passed in [value.as_ref(), stored].into_iter().flatten() {
                if !holds_reference(passed) && !holds_mask(passed) {
                    needles.add_no_echo(passed);
                }
            }
        }
        if let Some(v) = value {
            handed.values.insert(name.clone(), v);
        }
        if !needles.is_empty() {
            handed.scoped.insert(name.clone(), needles);
        }
    }
    handed
}

fn is_no_echo(p: &Value) -> bool {
    match p.get("NoEcho") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    }
}

/// Whether `value` reads parameter `name` (`Ref`, or `${name}` in an `Fn::Sub`).
fn reads_parameter(value: &Value, name: &str) -> bool {
    match value {
        Value::Object(m) => m.iter().any(|(k, v)| {
            (k == "Ref" && v.as_str() == Some(name))
                || (k == "Fn::Sub"
                    && sub_text(v).is_some_and(|s| s.contains(&format!("${{{name}}}"))))
                || reads_parameter(v, name)
        }),
        Value::Array(items) => items.iter().any(|i| reads_parameter(i, name)),
        _ => false,
    }
}

fn sub_text(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => Some(s),
        Value::Array(items) => items.first()?.as_str(),
        _ => None,
    }
}

/// Rewrites the parent row's `Outputs.<Name>` attributes that hold exactly what the child's
/// output resolves to; reports one that holds a recorded plaintext and matches nothing.
async fn parent_output_attributes(
    env: &ScrubEnv,
    target: &ScrubTarget<'_>,
    options: ScrubOptions,
    id: &str,
    child: &StackOutcome,
    outcome: &mut StackOutcome,
) {
    let Some(child_state) = child.across.scrubbed.as_ref() else {
        return;
    };
    let needles = &child.across.needles;
    if needles.is_empty() {
        return;
    }
    let child_outputs = child_state.outputs.clone().unwrap_or_default();
    let (stack, region) = (target.stack_name, target.region);
    // A dry run wrote nothing: judge the record its own pass WOULD store, or every attribute
    // that pass already rewrites would be counted twice.
    let loaded = if options.dry_run {
        None
    } else {
        match env.backend.load_for_reading(stack, region).await {
            Ok(Some(l)) => Some(l),
            Ok(None) => return,
            Err(e) => {
                outcome.fail(format!(
                    "re-reading the record for its nested-stack output attributes failed: {e}"
                ));
                return;
            }
        }
    };
    let mut state = match (&loaded, &outcome.across.scrubbed) {
        (Some(l), _) => l.parsed.state.clone(),
        (None, Some(s)) => s.clone(),
        (None, None) => return,
    };
    let Some(attrs) = state
        .resources
        .get_mut(id)
        .and_then(|r| r.attributes.as_mut())
    else {
        return;
    };
    let (mut rewritten, mut unmatched) = (Vec::new(), Vec::new());
    for (key, value) in attrs.iter_mut() {
        let Some(name) = key.strip_prefix("Outputs.") else {
            continue;
        };
        let Value::String(text) = value else {
            continue;
        };
        let Some(redacted) = needles.redact_str(text) else {
            continue;
        };
        match child_outputs.get(name) {
            Some(Value::String(out)) if *out == redacted => {
                *value = Value::String(redacted);
                rewritten.push(key.clone());
            }
            _ => unmatched.push(key.clone()),
        }
    }
    if !unmatched.is_empty() {
        outcome.findings.push(format!(
            "{} nested-stack output attribute(s) of row {id} ({}) hold a plaintext this run \
             recorded but match no output of the child exactly, so they were left as they \
             are; deploying the child rewrites them",
            unmatched.len(),
            unmatched.join(", ")
        ));
    }
    if rewritten.is_empty() {
        return;
    }
    let Some(loaded) = loaded else {
        outcome.findings.push(format!(
            "would scrub {} nested-stack output attribute(s) of row {id} (--dry-run wrote \
             nothing)",
            rewritten.len()
        ));
        return;
    };
    if loaded.parsed.from_legacy_key || !loaded.parsed.defects.is_empty() {
        return;
    }
    match env
        .backend
        .save(
            stack,
            region,
            &state,
            SaveCondition::IfMatch(&loaded.etag),
            false,
        )
        .await
    {
        Ok(_) => outcome.across.nested_outputs_scrubbed += rewritten.len(),
        Err(e) => {
            outcome.fail(format!(
                "saving the scrubbed nested-stack output attributes of row {id} failed: {e}"
            ));
        }
    }
    let key = env.backend.keys().state(stack, region);
    let purged = purge_noncurrent_versions(env.backend.client(), env.backend.bucket(), &key).await;
    outcome.versions_purged += purged.versions_deleted;
    if let Some(f) = purged.failure_description() {
        outcome.fail(format!(
            "purging the earlier versions of {f} failed: they may still hold plaintext; delete \
             them by hand"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_row_reads_a_parameter_through_ref_or_sub() {
        let p = json!({"A": {"Ref": "Pw"}, "B": {"Fn::Sub": "x-${Other}"}});
        assert!(reads_parameter(&p, "Pw"));
        assert!(reads_parameter(&p, "Other"));
        assert!(!reads_parameter(&p, "Nope"));
    }
}
