//! The by-position pass (scrub spec, "What gets redacted inside a record"): the template is
//! re-resolved the way a deploy resolves it (parameter defaults, conditions, dynamic references
//! fetched), and every leaf that holds secret material goes back into the record in the form a
//! deploy stores: a secret position as its own `{{resolve:...}}` expression (so two spellings
//! of one secret each keep theirs, and a secret interpolated by `Fn::Sub` / `Fn::Join` keeps
//! the text around it), a NoEcho position as `***` whatever it holds, listed in
//! `noEchoLeaves`. This covers resource properties, the observed baseline, attributes named
//! like a masked property, and the declared outputs with their export aliases.
//!
//! What the pass learns at a position also feeds the value pass: the run-wide needles
//! (secrets of 4 characters or more), and a per-record set (shorter secrets, and the NoEcho
//! plaintext a record held at a masked position) applied to that record only.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::nested::Handed;
use super::position_paths::{mask_no_echo_leaves, restore_secret_leaves, Pairing};
use crate::provider::{is_skipped_type, refs};
use crate::redact::{mask_leaves, with_expressions, Needles, NoEchoScope};
use crate::resolve::dynamic::{
    collect_references, DynamicLookup, DynamicReference, DYNAMIC_REFERENCE_OPENER,
};
use crate::resolve::{
    bind_parameters, prune, ConditionVerdicts, ExternalReader, NoResources, PrefetchedLookup,
    ResolveContext, ResolveError, Resolver, ResourceLookup, SecretsMap,
};
use crate::state::{PathSegment, ResourceState, StackState};
use crate::template::Template;

/// The nested-stack resource type (its `Parameters` are what it hands its child).
const NESTED_STACK_TYPE: &str = "AWS::CloudFormation::Stack";

/// What the pass did and learned.
#[derive(Debug, Default)]
pub struct Positioned {
    /// Leaves rewritten (by position, and by the per-record value match).
    pub leaves: usize,
    /// Output keys today's template can name: every declared output, and each `Export.Name`
    /// this run resolved fully.
    pub named_outputs: BTreeSet<String>,
    /// Whether every `Export.Name` of the template resolved here.
    pub all_exports_resolved: bool,
    /// The resolved export names.
    pub export_names: Vec<String>,
    /// Secrets learned at positions (for the run-wide value match).
    pub needles: Needles,
    /// Properties whose scan stopped at a reference it could not resolve: findings.
    pub abandoned: Vec<String>,
    /// Properties that could not be resolved and carry a reference: not counted.
    pub not_examined: Vec<String>,
    /// The `${Name}` warnings of references scrub cannot bind.
    pub warnings: Vec<String>,
    /// Nested-stack row → its `Parameters` resolved, references kept (what it hands its child).
    pub nested_params: BTreeMap<String, Value>,
    /// The parameters counted NoEcho here (declared, or handed down from a NoEcho source).
    pub no_echo_params: BTreeSet<String>,
}

/// The resolution inputs of one stack.
pub struct PositionInput<'a> {
    pub reader: Arc<ExternalReader>,
    pub stack: &'a str,
    pub region: &'a str,
    pub account_id: Option<String>,
    pub template: &'a Value,
    /// What a nested child's parent passes it (empty for a top-level stack).
    pub handed: &'a Handed,
}

/// A record's resources as `Ref` / `Fn::GetAtt` read them.
struct RecordLookup {
    entries: HashMap<String, (Value, Map<String, Value>)>,
}

impl RecordLookup {
    fn new(state: &StackState) -> Self {
        let entries = state
            .resources
            .iter()
            .filter_map(|(id, rec)| {
                let ref_value = refs::of_record(rec)?;
                let attributes = rec.attributes.clone().unwrap_or_default();
                Some((id.clone(), (ref_value, attributes)))
            })
            .collect();
        RecordLookup { entries }
    }
}

impl ResourceLookup for RecordLookup {
    fn ref_value(&self, logical_id: &str) -> Option<Value> {
        self.entries.get(logical_id).map(|e| e.0.clone())
    }
    fn get_att(&self, logical_id: &str, attribute: &str) -> Option<Value> {
        self.entries.get(logical_id)?.1.get(attribute).cloned()
    }
}

/// One value resolved from the template, before its references are substituted.
struct Pending {
    /// `Resources.X.Properties.Y` / `Outputs.O`.
    label: String,
    resource: Option<(String, String)>,
    output: Option<String>,
    template_value: Value,
    resolved: Result<Option<Value>, ResolveError>,
    export_name: Option<String>,
}

/// Runs the pass over `state` in place. `Err` is a template scrub cannot resolve at all
/// (the resolver's own refusal): the stack is refused.
pub async fn position_pass(
    input: &PositionInput<'_>,
    state: &mut StackState,
) -> Result<Positioned, String> {
    let mut out = Positioned {
        all_exports_resolved: true,
        ..Positioned::default()
    };
    let mut template = Template::from_value(input.template.clone(), Path::new("template"))
        .map_err(|e| e.to_string())?;
    let declared: HashSet<String> = template
        .parameters
        .keys()
        .chain(template.resources.keys())
        .cloned()
        .collect();
    let no_echo: HashSet<String> = template
        .parameters
        .iter()
        .filter(|(n, p)| p.no_echo || input.handed.no_echo.contains(*n))
        .map(|(n, _)| n.clone())
        .collect();
    out.no_echo_params = no_echo.iter().cloned().collect();
    // A nested child's parameters take what its parent's row passes, as a deploy binds them;
    // the value may still be a `{{resolve:...}}` expression, so the constraints (which a
    // deploy checked against the plaintext) are not re-checked here.
    for (name, value) in &input.handed.values {
        if let Some(p) = template.parameters.get_mut(name) {
            p.default = Some(value.clone());
            p.no_echo = no_echo.contains(name);
            p.allowed_values = None;
            p.allowed_pattern = None;
            p.min_length = None;
            p.max_length = None;
            p.min_value = None;
            p.max_value = None;
        }
    }
    // scrub takes no --parameters: any other parameter with no Default stays unbound.
    template.parameters.retain(|_, p| p.default.is_some());
    // A secret only the parent passes is looked for in the records that read it, not run-wide.
    let mut own_refs: Vec<DynamicReference> = Vec::new();
    collect_references(input.template, &mut own_refs);
    let scoped_refs: HashSet<String> = input
        .handed
        .references()
        .into_iter()
        .filter(|t| !own_refs.iter().any(|r| &r.text == t))
        .collect();
    let ctx = ResolveContext::new(input.stack, input.region, input.account_id.clone());
    let lookup = PrefetchedLookup::new(input.reader.clone(), ctx.clone());
    lookup.prefetch_parameters(&template, &[]).await;
    let params =
        bind_parameters(&template, &[], input.stack, &lookup).map_err(|e| e.to_string())?;
    let verdicts = Resolver::new(&template, &ctx, &params, &NoResources, &lookup)
        .evaluate_conditions()
        .map_err(|e| e.to_string())?;
    let report = prune(&mut template, &verdicts, input.stack);
    let records = RecordLookup::new(state);
    lookup
        .prefetch_template(&template, &params, &verdicts, &records)
        .await;
    for name in template.outputs.keys() {
        out.named_outputs.insert(name.clone());
    }

    // Resolve (synchronously: the resolver is not Send).
    let mut pending: Vec<Pending> = Vec::new();
    {
        let mut resolver =
            Resolver::new(&template, &ctx, &params, &records, &lookup).with_conditions(&verdicts);
        for (id, res) in &template.resources {
            if is_skipped_type(&res.type_) || !state.resources.contains_key(id) {
                continue;
            }
            for (key, value) in &res.properties {
                let label = format!("Resources.{id}.Properties.{key}");
                let resolved = resolver.resolve_value(value, &label);
                if res.type_ == NESTED_STACK_TYPE && key == "Parameters" {
                    if let Ok(Some(v)) = &resolved {
                        out.nested_params.insert(id.clone(), v.clone());
                    }
                }
                pending.push(Pending {
                    resolved,
                    label,
                    resource: Some((id.clone(), key.clone())),
                    output: None,
                    template_value: value.clone(),
                    export_name: None,
                });
            }
        }
        for (name, output) in &template.outputs {
            if report.is_output_skipped(name) {
                continue;
            }
            let r = resolver.resolve_output(name);
            let export_name = match &r {
                Ok(Some(o)) => o.export_name.clone(),
                _ => None,
            };
            if output.export_name.is_some() {
                match &export_name {
                    Some(e) if !e.contains("${") && !e.contains(DYNAMIC_REFERENCE_OPENER) => {
                        out.export_names.push(e.clone());
                    }
                    _ => out.all_exports_resolved = false,
                }
            }
            pending.push(Pending {
                label: format!("Outputs.{name}"),
                resource: None,
                output: Some(name.clone()),
                template_value: output.value.clone(),
                resolved: r.map(|o| o.map(|o| o.value)),
                export_name,
            });
        }
        for w in resolver.take_warnings() {
            out.warnings.push(w.to_string());
        }
    }
    for e in &out.export_names {
        out.named_outputs.insert(e.clone());
    }
    for p in &pending {
        if let Ok(Some(v)) = &p.resolved {
            lookup.prefetch_dynamic(v).await;
        }
    }

    let scope = NoEchoScope {
        params: &no_echo,
        verdicts: &verdicts,
    };
    let mut per_resource: HashMap<String, Secured> = HashMap::new();
    // The parent-passed secrets of each parameter go to the records of its readers.
    if !input.handed.scoped.is_empty() {
        let any_branch = ConditionVerdicts::new();
        for (id, res) in &template.resources {
            if !state.resources.contains_key(id) {
                continue;
            }
            let props = Value::Object(res.properties.clone());
            for (param, needles) in &input.handed.scoped {
                let one: HashSet<String> = std::iter::once(param.clone()).collect();
                let reads = NoEchoScope {
                    params: &one,
                    verdicts: &any_branch,
                };
                if reads.reads(&props).is_some() {
                    per_resource
                        .entry(id.clone())
                        .or_default()
                        .scoped
                        .merge(needles);
                }
            }
        }
    }
    for p in pending {
        let value = match p.resolved {
            Ok(Some(v)) => v,
            Ok(None) => continue,
            Err(e) => {
                if carries_reference(&p.template_value) {
                    out.not_examined.push(format!(
                        "{}: not examined, it does not resolve here ({e})",
                        p.label
                    ));
                }
                continue;
            }
        };
        let (sent, secrets) = match lookup.substitute(&value, "") {
            Ok(x) => x,
            Err(e) => {
                classify_abandoned(&p.label, &value, &declared, &e, &mut out);
                continue;
            }
        };
        let mut scoped = Needles::default();
        learn_positions(
            &lookup,
            input.region,
            &secrets,
            &scoped_refs,
            &mut out.needles,
            &mut scoped,
        );
        let mut stored = with_expressions(&sent, &secrets);
        let leaves = scope.leaves(&p.template_value, &sent);
        mask_leaves(&mut stored, &leaves);
        if let Some((id, key)) = p.resource {
            let s = per_resource.entry(id).or_default();
            let prefix = |l: Vec<PathSegment>| {
                let mut full = vec![PathSegment::Key(key.clone())];
                full.extend(l);
                full
            };
            s.no_echo_leaves.extend(leaves.into_iter().map(prefix));
            s.scoped.merge(&scoped);
            s.sent.insert(key.clone(), sent);
            s.stored.insert(key, stored);
        } else if let Some(name) = p.output {
            let keys: Vec<String> = std::iter::once(name)
                .chain(p.export_name.filter(|e| out.export_names.contains(e)))
                .collect();
            if let Some(outputs) = state.outputs.as_mut() {
                for k in keys {
                    let Some(slot) = outputs.get_mut(&k) else {
                        continue;
                    };
                    let mut wrapped = Value::Array(vec![slot.take()]);
                    let (s_sent, s_stored) = (
                        Value::Array(vec![sent.clone()]),
                        Value::Array(vec![stored.clone()]),
                    );
                    out.leaves +=
                        restore_secret_leaves(&s_stored, &s_sent, &mut wrapped, Pairing::Sent);
                    let wrapped_leaves: Vec<Vec<PathSegment>> = leaves
                        .iter()
                        .map(|l| {
                            let mut full = vec![PathSegment::Index(0)];
                            full.extend(l.iter().cloned());
                            full
                        })
                        .collect();
                    let (n, _) =
                        mask_no_echo_leaves(&s_sent, &mut wrapped, &wrapped_leaves, Pairing::Sent);
                    out.leaves += n;
                    if let Value::Array(mut items) = wrapped {
                        *slot = items.pop().unwrap_or(Value::Null);
                    }
                }
            }
        }
    }

    let position_needles = out.needles.clone();
    for (id, secured) in per_resource {
        if let Some(rec) = state.resources.get_mut(&id) {
            out.leaves += repair_record(rec, &secured, &position_needles, &no_echo);
        }
    }
    Ok(out)
}

/// One resource's properties as sent and as a deploy stores them.
#[derive(Default)]
struct Secured {
    sent: Map<String, Value>,
    stored: Map<String, Value>,
    no_echo_leaves: Vec<Vec<PathSegment>>,
    /// Secrets only this record is searched for (what a parent passes a parameter it reads).
    scoped: Needles,
}

/// Puts `secured`'s stored form back into `rec` (properties, observed baseline, attributes
/// named like a masked property), then matches by value inside this record only what the
/// positions taught: secrets at any length, the NoEcho plaintext the record held.
fn repair_record(
    rec: &mut ResourceState,
    secured: &Secured,
    learned: &Needles,
    no_echo: &HashSet<String>,
) -> usize {
    let sent = Value::Object(secured.sent.clone());
    let stored = Value::Object(secured.stored.clone());
    let leaves = &secured.no_echo_leaves;
    let mut changed = 0;
    let mut local = learned.clone();
    local.merge(&secured.scoped);
    let mut props = Value::Object(std::mem::take(&mut rec.properties));
    let original_props = props.clone();
    changed += restore_secret_leaves(&stored, &sent, &mut props, Pairing::Sent);
    let (n, held) = mask_no_echo_leaves(&sent, &mut props, leaves, Pairing::Sent);
    changed += n;
    for h in &held {
        local.add_no_echo(h);
    }
    if let Value::Object(m) = props {
        rec.properties = m;
    }
    if let Some(obs) = rec.observed_properties.as_mut() {
        let mut v = Value::Object(std::mem::take(obs));
        changed += restore_secret_leaves(&stored, &sent, &mut v, Pairing::Observed);
        let (n, held) = mask_no_echo_leaves(&sent, &mut v, leaves, Pairing::Observed);
        changed += n;
        for h in &held {
            local.add_no_echo(h);
        }
        if let Value::Object(m) = v {
            *obs = m;
        }
    }
    // An attribute named like a whole masked property, holding its value, is masked at any
    // length and declared NoEcho, so a reader through Fn::GetAtt is positioned too.
    if let Some(attrs) = rec.attributes.as_mut() {
        for leaf in leaves {
            let [PathSegment::Key(k)] = leaf.as_slice() else {
                continue;
            };
            let values = [sent.get(k), original_props.get(k)];
            let Some(attr) = attrs.get_mut(k) else {
                continue;
            };
            let holds = values.iter().flatten().any(|v| match (v, &*attr) {
                (Value::String(a), Value::String(b)) => a == b && b != crate::redact::MASK,
                _ => false,
            });
            if holds {
                *attr = Value::String(crate::redact::MASK.to_owned());
                changed += 1;
                let names = rec.no_echo_attribute_names.get_or_insert_with(Vec::new);
                if !names.contains(k) {
                    names.push(k.clone());
                }
            }
        }
    }
    if !leaves.is_empty() || (!no_echo.is_empty() && rec.no_echo_leaves.is_none()) {
        let list = rec.no_echo_leaves.get_or_insert_with(Vec::new);
        for l in leaves {
            if !list.contains(l) {
                list.push(l.clone());
            }
        }
    }
    // The per-record value match: what this record's positions taught, at any length.
    for v in rec.properties.values_mut() {
        changed += usize::from(local.redact_in_place(v));
    }
    for bag in [rec.observed_properties.as_mut(), rec.attributes.as_mut()]
        .into_iter()
        .flatten()
    {
        for v in bag.values_mut() {
            changed += usize::from(local.redact_in_place(v));
        }
    }
    changed
}

/// Adds the plaintext behind each secret position, paired with its reference: to `needles`
/// (run-wide), or to `scoped` (this record only) for a reference in `scoped_refs`.
fn learn_positions(
    lookup: &PrefetchedLookup,
    region: &str,
    secrets: &SecretsMap,
    scoped_refs: &HashSet<String>,
    needles: &mut Needles,
    scoped: &mut Needles,
) {
    let (mut scoped_plain, mut own_plain) = (HashSet::new(), HashSet::new());
    for (_, position) in secrets.positions() {
        for text in &position.references {
            let Ok(r) = DynamicReference::parse(text) else {
                continue;
            };
            let key = r.fetch_key(region);
            if let Ok(fetched) = lookup.fetched(&key) {
                if let Ok((plain, true)) = r.value_from(&fetched) {
                    if scoped_refs.contains(text) {
                        scoped.add_secret(&plain, Some(text));
                        scoped_plain.insert(plain);
                    } else {
                        needles.add_secret(&plain, Some(text));
                        own_plain.insert(plain);
                    }
                }
            }
        }
    }
    for plain in secrets.plaintexts() {
        if scoped_plain.contains(plain) && !own_plain.contains(plain) {
            continue;
        }
        needles.add_secret(plain, None);
    }
}

/// Whether a template value holds a `{{resolve:` anywhere.
fn carries_reference(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains(DYNAMIC_REFERENCE_OPENER),
        Value::Array(items) => items.iter().any(carries_reference),
        Value::Object(m) => m.values().any(carries_reference),
        _ => false,
    }
}

/// A substitution that failed: an abandoned scan (a finding), unless the reference keeps a
/// `${Name}` placeholder naming a declared parameter or resource scrub cannot bind (a
/// warning only: scrub spec, "A scan abandoned part-way").
fn classify_abandoned(
    label: &str,
    resolved: &Value,
    declared: &HashSet<String>,
    error: &ResolveError,
    out: &mut Positioned,
) {
    let mut texts = Vec::new();
    string_leaves(resolved, &mut texts);
    let bound_later = texts
        .iter()
        .flat_map(|t| placeholders(t))
        .any(|name| declared.contains(name.split('.').next().unwrap_or(name)));
    if bound_later {
        out.warnings.push(format!(
            "{label}: a reference keeps a placeholder scrub cannot bind (scrub takes no \
             --parameters), so it was not looked up"
        ));
    } else {
        out.abandoned.push(format!(
            "{label}: ABANDONED: the scan stopped at a reference it could not resolve ({}); a \
             plaintext behind it cannot be looked for. Restore the parameter or secret (or fix \
             the placeholder) and re-run",
            error.kind
        ));
    }
}

fn string_leaves<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|x| string_leaves(x, out)),
        Value::Object(m) => m.values().for_each(|x| string_leaves(x, out)),
        _ => {}
    }
}

/// The `${Name}` placeholders inside the references of `text`.
fn placeholders(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(DYNAMIC_REFERENCE_OPENER) {
        let after = &rest[open..];
        let end = after.find("}}").map_or(after.len(), |i| i + 2);
        let mut inner = &after[..end];
        while let Some(p) = inner.find("${") {
            let tail = &inner[p + 2..];
            let Some(close) = tail.find('}') else { break };
            names.push(&tail[..close]);
            inner = &tail[close + 1..];
        }
        rest = &after[end..];
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_read_inside_references_only() {
        assert_eq!(
            placeholders("x ${A} {{resolve:secretsmanager:${Typo}-db:SecretString:pw}}"),
            vec!["Typo"]
        );
        assert!(placeholders("no reference ${A}").is_empty());
    }
}
