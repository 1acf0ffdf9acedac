//! Cross-stack reads (scrub spec, "A cross-stack read that cannot be resolved" and "Which
//! exports count as secret-bearing"). Before the main pass, every `Fn::ImportValue` /
//! `Fn::GetStackOutput` the template reads (the `Fn::If` branch the default parameters select
//! only; not in an output the conditions suppress or the record does not hold) is resolved:
//!
//! - the read's secrets (the producer stores a `{{resolve:...}}` expression, re-resolved by
//!   the reader) become needles, so the consumer's plaintext copy is rewritten too;
//! - a read that cannot be resolved refuses the stack (exit 2): with no needle, scrub would
//!   call a record clean that may still hold the plaintext;
//! - a producer whose outputs map cannot be read fails the run (exit 2) without refusing the
//!   stack; a cross-account read of a redacted value is a finding (`--fail` exits 1);
//! - a producer the app's templates say declares the export from a `{{resolve:...}}` (or
//!   re-exports one from further up a chain) but whose record still stores the plaintext
//!   refuses the stack, naming every stack of the chain head first.
//!
//! [`cross_region_prepass`]: a complete `{{resolve:...}}` reference whose ARN names another
//! region and cannot be resolved refuses the stack with SCRUB_CROSS_REGION_SECRET_UNRESOLVED
//! (an assembled one is left to the resolver, and reported as an abandoned scan).
//!
//! [`redact_read_names`] rewrites a plaintext inside `imports[].exportName` /
//! `outputReads[].outputName`.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::conditions::Conditions;
use super::report::StackOutcome;
use super::{ScrubEnv, ScrubTarget};
use crate::redact::Needles;
use crate::resolve::external::{holds_mask, holds_reference, DynamicCache};
use crate::resolve::StackOutputRequest;
use crate::state::Lenient;
use crate::state::StackState;

/// One cross-stack read in the template.
#[derive(Debug, Clone, PartialEq)]
enum Read {
    Import(String),
    Output(StackOutputRequest),
    /// A read whose name is built by an intrinsic scrub cannot evaluate here.
    Opaque(String),
}

/// Where a read sits (`resource Db`, `output Url`) and what it reads.
type Located = (String, Read);

/// Learns the needles of `target`'s cross-stack reads; refusals and findings go to `outcome`.
pub async fn learn_reads(
    env: &ScrubEnv,
    target: &ScrubTarget<'_>,
    record: &StackState,
    needles: &mut Needles,
    outcome: &mut StackOutcome,
) {
    let reads = template_reads(target.template, target.stack_name, target.region, record);
    if reads.is_empty() {
        return;
    }
    let cache = DynamicCache::new();
    for (place, read) in reads {
        let (value, secrets, producer, key) = match &read {
            Read::Opaque(what) => {
                outcome.findings.push(format!(
                    "the cross-stack read in {place} ({what}) could NOT be verified: its name is \
                     built by an intrinsic scrub cannot evaluate, so a plaintext it delivered \
                     cannot be looked for"
                ));
                continue;
            }
            Read::Import(name) => {
                let (mut results, _) = env
                    .reader
                    .import_values(
                        target.stack_name,
                        target.region,
                        std::slice::from_ref(name),
                        &cache,
                    )
                    .await;
                match results.shift_remove(name) {
                    Some(Ok(v)) => (v.value, v.secrets, v.producer, name.clone()),
                    Some(Err(e)) => {
                        failed_read(
                            &place,
                            &format!("Fn::ImportValue '{name}'"),
                            &e.to_string(),
                            outcome,
                        );
                        continue;
                    }
                    None => continue,
                }
            }
            Read::Output(req) => {
                let (r, _) = env
                    .reader
                    .stack_output(target.region, req, true, &cache)
                    .await;
                match r {
                    Ok(v) => {
                        let producer = (v.source == crate::resolve::external::OutputSource::State)
                            .then(|| (req.stack_name.clone(), v.producer_region.clone()));
                        (v.value, v.secrets, producer, req.output_name.clone())
                    }
                    Err(e) => {
                        let what =
                            format!("Fn::GetStackOutput {}.{}", req.stack_name, req.output_name);
                        failed_read(&place, &what, &e.to_string(), outcome);
                        continue;
                    }
                }
            }
        };
        add_read_secrets(&value, &secrets, needles);
        let Some((p_stack, p_region)) = producer else {
            continue; // CloudFormation-sourced: outside cdkd state, not classifiable.
        };
        let mut chain = Vec::new();
        let mut seen = BTreeSet::new();
        let bearing = secret_bearing(env, &p_stack, &p_region, &key, true, &mut seen, &mut chain);
        if !bearing {
            continue;
        }
        let stored = match producer_value(env, &p_stack, &p_region, &key).await {
            Ok(v) => v,
            Err(e) => {
                outcome.fail(format!(
                    "the producer {p_stack} ({p_region}) of the read in {place} could not be \
                     read ({e}), so scrub cannot tell whether it still holds the plaintext this \
                     stack reads"
                ));
                continue;
            }
        };
        match stored {
            Some(v) if holds_reference(&v) || holds_mask(&v) => {
                // A dry run's producer WOULD store the expression: the read answered plaintext.
                if let (Value::String(plain), Value::String(expr)) = (&value, &v) {
                    if plain != expr && holds_reference(&v) {
                        needles.add_secret(plain, Some(expr));
                    }
                }
            }
            _ => {
                chain.reverse();
                chain.push(p_stack.clone());
                chain.dedup();
                let source = if chain.len() > 1 {
                    format!(
                        "re-exports a value {} declares from a {{{{resolve:...}}}} reference",
                        chain[0]
                    )
                } else {
                    "declares it from a {{resolve:...}} reference".to_owned()
                };
                outcome.refuse(format!(
                    "the read in {place} of '{key}' from {p_stack} ({p_region}): the producer \
                     {source}, but its record still stores the plaintext, so there is no \
                     expression to write here; scrub {} first (in that order), then re-run",
                    chain.join(", ")
                ));
            }
        }
    }
}

/// Refuses the stack when a complete reference to a secret in another region cannot be read.
pub async fn cross_region_prepass(
    env: &ScrubEnv,
    target: &ScrubTarget<'_>,
    outcome: &mut StackOutcome,
) {
    let mut refs = Vec::new();
    crate::resolve::dynamic::collect_references(target.template, &mut refs);
    let mut seen = BTreeSet::new();
    for r in refs {
        let Some(region) = r.arn_region().map(str::to_owned) else {
            continue;
        };
        if region == target.region || !seen.insert(r.text.clone()) {
            continue;
        }
        let failure = match env.reader.fetch_dynamic(&r.fetch_key(target.region)).await {
            Ok(fetched) => r.value_from(&fetched).err(),
            Err(e) => Some(e.to_string()),
        };
        if let Some(why) = failure {
            outcome.refuse(format!(
                "SCRUB_CROSS_REGION_SECRET_UNRESOLVED: {} names a secret in {region} that \
                 could not be read ({why}), so its plaintext cannot be looked for; restore it or \
                 grant the read, then re-run (nothing was written)",
                r.text
            ));
        }
    }
}

/// Sorts a failed read: unreadable producer (exit 2, stack not refused), cross-account by
/// design (finding), anything else (refusal).
fn failed_read(place: &str, what: &str, error: &str, outcome: &mut StackOutcome) {
    if error.contains("is malformed, so output") {
        outcome.fail(format!(
            "the cross-stack read in {place} ({what}) could NOT be verified: {error}. Repair \
             that record and scrub it first; the rest of this stack was scrubbed"
        ));
    } else if error.contains("redacted secret reference in account")
        || error.contains("cannot be read across accounts")
    {
        outcome.findings.push(format!(
            "1 cross-stack read(s) in {place} could NOT be verified ({what}): cdkd declines a \
             cross-account secret by design; export a non-secret value such as the secret's \
             ARN, or reference it from within its own account"
        ));
    } else {
        outcome.refuse(format!(
            "a cross-stack read cannot be resolved: {place} reads {what}: {error}. Without it \
             scrub cannot learn the plaintext it delivered; deploy or scrub the producer, then \
             re-run (nothing was written)"
        ));
    }
}

/// The read's plaintexts as needles: the whole value stands for the producer's expression.
fn add_read_secrets(value: &Value, secrets: &crate::resolve::SecretsMap, needles: &mut Needles) {
    let plains: Vec<&str> = secrets.plaintexts().collect();
    let positions: Vec<_> = secrets.positions().map(|(_, p)| p).collect();
    if let (Value::String(s), [pos]) = (value, positions.as_slice()) {
        needles.add_secret(s, Some(&pos.expression));
        if let ([plain], [reference]) = (plains.as_slice(), pos.references.as_slice()) {
            needles.add_secret(plain, Some(reference));
        }
    }
    for p in plains {
        needles.add_secret(p, None);
    }
}

/// The value `stack` stores under `key`: this run's scrubbed outputs when it scrubbed the
/// stack, else its record. `Ok(None)`: no such key.
async fn producer_value(
    env: &ScrubEnv,
    stack: &str,
    region: &str,
    key: &str,
) -> Result<Option<Value>, String> {
    if let Some(outputs) = env.run.scrubbed_outputs(stack, region) {
        return Ok(outputs.and_then(|o| o.get(key).cloned()));
    }
    let loaded = env
        .backend
        .load_for_reading(stack, region)
        .await
        .map_err(|e| e.to_string())?;
    Ok(loaded.and_then(|l| l.parsed.state.outputs.and_then(|o| o.get(key).cloned())))
}

/// Whether the app's templates say `stack`'s output `key` carries a secret: declared from a
/// `{{resolve:...}}`, or re-exported from a stack further up that does. `chain` collects the
/// stacks above. `root`: an intrinsic Export.Name widens the check to every output.
fn secret_bearing(
    env: &ScrubEnv,
    stack: &str,
    region: &str,
    key: &str,
    root: bool,
    seen: &mut BTreeSet<(String, String)>,
    chain: &mut Vec<String>,
) -> bool {
    if !seen.insert((stack.to_owned(), key.to_owned())) {
        return false;
    }
    let Some(app) = env.run.app_stack(stack, region) else {
        return false;
    };
    let conds = Conditions::new(&app.template, stack, region);
    let Some(outputs) = app.template.get("Outputs").and_then(Value::as_object) else {
        return false;
    };
    let mut opaque_name = false;
    let mut matching: Vec<&Value> = Vec::new();
    for (name, out) in outputs {
        let export = out.get("Export").and_then(|e| e.get("Name"));
        let export = export.map(|n| conds.literal(n));
        if matches!(export, Some(None)) {
            opaque_name = true;
        }
        if name == key || matches!(&export, Some(Some(n)) if n == key) {
            matching.extend(out.get("Value"));
        }
    }
    if matching.is_empty() && opaque_name && root {
        matching = outputs.values().filter_map(|o| o.get("Value")).collect();
    }
    for value in matching {
        let value = conds.select(value);
        if carries_reference(&value) {
            return true;
        }
        let mut upstream = Vec::new();
        collect_reads(&value, &conds, "", &mut upstream);
        for (_, read) in upstream {
            let (p_stack, p_key) = match read {
                Read::Import(name) => match exporter(env, region, &name) {
                    Some(s) => (s, name),
                    None => continue,
                },
                Read::Output(req) if req.role_arn.is_none() => {
                    (req.stack_name.clone(), req.output_name.clone())
                }
                _ => continue,
            };
            if secret_bearing(env, &p_stack, region, &p_key, false, seen, chain) {
                chain.push(p_stack);
                return true;
            }
        }
    }
    false
}

/// The app stack in `region` whose template declares the literal Export.Name `name`.
fn exporter(env: &ScrubEnv, region: &str, name: &str) -> Option<String> {
    env.run.app_stacks().iter().find_map(|s| {
        if s.region != region {
            return None;
        }
        let conds = Conditions::new(&s.template, &s.stack_name, region);
        let outputs = s.template.get("Outputs")?.as_object()?;
        outputs
            .values()
            .filter_map(|o| o.get("Export")?.get("Name"))
            .any(|n| conds.literal(n).as_deref() == Some(name))
            .then(|| s.stack_name.clone())
    })
}

/// Whether any string in `value` holds a `{{resolve:` opener (also split across an
/// `Fn::Join` / `Fn::Sub` part).
fn carries_reference(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains("{{resolve:"),
        Value::Array(items) => {
            items.iter().any(carries_reference)
                || items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<String>()
                    .contains("{{resolve:")
        }
        Value::Object(m) => m.values().any(carries_reference),
        _ => false,
    }
}

/// Every read of the template, skipping suppressed resources and outputs and, for an output,
/// one the record does not hold (what the deploy really wrote disarms the refusal).
fn template_reads(
    template: &Value,
    stack: &str,
    region: &str,
    record: &StackState,
) -> Vec<Located> {
    let conds = Conditions::new(template, stack, region);
    let mut out = Vec::new();
    let empty = Map::new();
    let resources = template
        .get("Resources")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (id, res) in resources {
        if !conds.holds(res.get("Condition")) {
            continue;
        }
        if let Some(props) = res.get("Properties") {
            collect_reads(props, &conds, &format!("resource {id}"), &mut out);
        }
    }
    let outputs = template
        .get("Outputs")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let stored = record.outputs.as_ref();
    for (name, o) in outputs {
        if !conds.holds(o.get("Condition")) {
            continue;
        }
        if !stored.is_some_and(|s| s.contains_key(name)) {
            continue;
        }
        if let Some(v) = o.get("Value") {
            collect_reads(v, &conds, &format!("output {name}"), &mut out);
        }
    }
    out
}

/// The reads inside `value`, through the `Fn::If` branch `conds` selects.
fn collect_reads(value: &Value, conds: &Conditions, place: &str, out: &mut Vec<Located>) {
    match value {
        Value::Array(items) => items
            .iter()
            .for_each(|i| collect_reads(i, conds, place, out)),
        Value::Object(m) if m.len() == 1 => {
            let (k, arg) = m.iter().next().expect("one entry");
            match k.as_str() {
                "Fn::If" => {
                    if let Some(branch) = conds.branch(arg) {
                        collect_reads(branch, conds, place, out);
                    }
                }
                "Fn::ImportValue" => {
                    let read = match conds.literal(arg) {
                        Some(name) => Read::Import(name),
                        None => Read::Opaque("Fn::ImportValue".into()),
                    };
                    out.push((place.to_owned(), read));
                }
                "Fn::GetStackOutput" => {
                    let field = |f: &str| arg.get(f).map(|v| conds.literal(v));
                    let read = match (
                        field("StackName"),
                        field("OutputName"),
                        field("Region"),
                        field("RoleArn"),
                    ) {
                        (Some(Some(s)), Some(Some(o)), r, a)
                            if !matches!(r, Some(None)) && !matches!(a, Some(None)) =>
                        {
                            Read::Output(StackOutputRequest {
                                stack_name: s,
                                output_name: o,
                                region: r.flatten(),
                                role_arn: a.flatten(),
                            })
                        }
                        _ => Read::Opaque("Fn::GetStackOutput".into()),
                    };
                    out.push((place.to_owned(), read));
                }
                _ => collect_reads(arg, conds, place, out),
            }
        }
        Value::Object(m) => m.values().for_each(|v| collect_reads(v, conds, place, out)),
        _ => {}
    }
}

/// Rewrites a plaintext inside the consumer's recorded read names; returns how many changed.
pub fn redact_read_names(state: &mut StackState, needles: &Needles) -> usize {
    if needles.is_empty() {
        return 0;
    }
    let mut n = 0;
    let mut fix = |s: &mut String| {
        if let Some(r) = needles.redact_str(s) {
            if r != *s {
                *s = r;
                n += 1;
            }
        }
    };
    for e in state.imports.iter_mut().flatten() {
        fix(&mut e.export_name);
    }
    if let Some(Lenient::Valid(reads)) = state.output_reads.as_mut() {
        for e in reads.iter_mut() {
            fix(&mut e.output_name);
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_follow_the_selected_branch_and_skip_suppressed_outputs() {
        let t = json!({
            "Parameters": {"Env": {"Type": "String", "Default": "prod"}},
            "Conditions": {"IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]}},
            "Resources": {"A": {"Type": "X", "Properties": {
                "V": {"Fn::If": ["IsProd", {"Fn::ImportValue": "ProdPw"}, {"Fn::ImportValue": "DevPw"}]},
                "W": {"Fn::GetStackOutput": {"StackName": "P", "OutputName": "O"}},
                "Z": {"Fn::ImportValue": {"Fn::Sub": "${Env}-Pw"}}
            }}},
            "Outputs": {
                "Gone": {"Value": {"Fn::ImportValue": "Gone"}},
                "Kept": {"Value": {"Fn::ImportValue": "Kept"}}
            }
        });
        let mut record = StackState::new("S", "us-east-1");
        record.outputs = Some(json!({"Kept": "x"}).as_object().cloned().unwrap());
        let reads: Vec<Read> = template_reads(&t, "S", "us-east-1", &record)
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        assert_eq!(
            reads,
            vec![
                Read::Import("ProdPw".into()),
                Read::Output(StackOutputRequest {
                    stack_name: "P".into(),
                    output_name: "O".into(),
                    region: None,
                    role_arn: None
                }),
                Read::Import("prod-Pw".into()),
                Read::Import("Kept".into()),
            ]
        );
    }

    #[test]
    fn read_names_holding_a_plaintext_are_rewritten() {
        let mut n = Needles::default();
        n.add_secret("hunter22", Some("{{resolve:ssm-secure:p}}"));
        let mut s: StackState = serde_json::from_value(json!({
            "version": 11, "stackName": "S", "region": "r", "resources": {},
            "imports": [{"sourceStack": "P", "sourceRegion": "r", "exportName": "x-hunter22"}]
        }))
        .unwrap();
        assert_eq!(redact_read_names(&mut s, &n), 1);
        assert_eq!(
            s.imports.unwrap()[0].export_name,
            "x-{{resolve:ssm-secure:p}}"
        );
    }
}
