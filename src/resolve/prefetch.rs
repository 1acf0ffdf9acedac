//! Fetching what a stack reads from outside before its template is resolved.
//!
//! The resolver's lookups are synchronous, so the engine fetches first:
//! once per stack, [`prefetch`] (or the steps it runs, for an engine that
//! binds parameters itself) finds every `Fn::ImportValue` name,
//! `Fn::GetStackOutput` request, `Fn::GetAZs` region, SSM-typed parameter and
//! dynamic reference the stack can reach, fetches them concurrently, and
//! returns a [`PrefetchedLookup`] that answers [`ExternalLookup`] and
//! [`DynamicLookup`] from its caches. Condition-false resources, outputs and
//! `Fn::If` branches are not fetched. An argument that needs a resource not
//! created yet cannot be known here; [`PrefetchedLookup::fetch_imports`],
//! [`PrefetchedLookup::fetch_stack_output`] and
//! [`PrefetchedLookup::prefetch_dynamic`] top the caches up later.
//!
//! What the resolver then reads is recorded: strong imports (cdkd-sourced
//! `Fn::ImportValue`, for `state.imports`) and same-account cdkd
//! `Fn::GetStackOutput` reads (for `state.outputReads`). A fetch failure is
//! not a prefetch error: it is kept and reported where the value is used.

mod literal;
mod scan;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use indexmap::{IndexMap, IndexSet};
use serde_json::Value;

use super::dynamic::{
    collect_references, substitute_dynamic_references, DynamicLookup, DynamicReference, FetchKey,
    Fetched, SecretPosition, SecretsMap,
};
use super::external::{
    join_all, BoxFuture, DynamicCache, ExternalReader, ImportSource, ImportedValue, OutputSource,
    StackOutputValue,
};
use super::{
    bind_parameters, BoundParameters, ConditionVerdicts, ExternalLookup, LookupError, NoResources,
    ParameterOverride, ResolveContext, ResolveError, Resolver, ResourceLookup, StackOutputRequest,
};
use crate::state::{StateImportEntry, StateOutputReadEntry};
use crate::template::Template;
use literal::Literals;
#[cfg(test)]
use scan::Wanted;
use scan::{dynamic_references, Scan};

/// `(stack, output, region, role)` exactly as the resolver passes them.
type OutputKey = (String, String, Option<String>, Option<String>);

fn output_key(r: &StackOutputRequest) -> OutputKey {
    (
        r.stack_name.clone(),
        r.output_name.clone(),
        r.region.clone(),
        r.role_arn.clone(),
    )
}

/// One stack's view of the outside world, fetched ahead of resolution.
pub struct PrefetchedLookup {
    reader: Arc<ExternalReader>,
    ctx: ResolveContext,
    dynamic: DynamicCache,
    imports: Mutex<HashMap<String, Result<ImportedValue, LookupError>>>,
    outputs: Mutex<HashMap<OutputKey, Result<StackOutputValue, LookupError>>>,
    /// Region → its zones (`None` until fetched or supplied).
    azs: Mutex<IndexMap<String, Option<Result<Vec<String>, LookupError>>>>,
    recorded_imports: Mutex<Vec<StateImportEntry>>,
    recorded_reads: Mutex<Vec<StateOutputReadEntry>>,
    /// (expression, plaintext leaf) pairs, and every plaintext.
    cross_stack_secrets: Mutex<(Vec<(String, String)>, SecretsMap)>,
    warnings: Mutex<Vec<String>>,
}

/// A prefetched stack: the lookup and what [`prefetch`] bound on the way.
pub struct PrefetchedStack {
    pub lookup: PrefetchedLookup,
    pub params: BoundParameters,
    pub verdicts: ConditionVerdicts,
}

/// Everything for one stack: SSM-typed parameters, then binding and
/// conditions, then the template's cross-stack reads, availability-zone
/// regions (see [`PrefetchedLookup::wanted_availability_zone_regions`]) and
/// dynamic references. `resources` supplies what is already known of this
/// stack's resources (e.g. from state); [`NoResources`] defers them all.
pub async fn prefetch(
    reader: Arc<ExternalReader>,
    template: &Template,
    overrides: &[ParameterOverride],
    ctx: &ResolveContext,
    resources: &(dyn ResourceLookup + Sync),
) -> Result<PrefetchedStack, ResolveError> {
    let lookup = PrefetchedLookup::new(reader, ctx.clone());
    lookup.prefetch_parameters(template, overrides).await;
    let params = bind_parameters(template, overrides, ctx.stack_name(), &lookup)?;
    let verdicts = Resolver::new(template, ctx, &params, &NoResources, &Silent(&lookup))
        .evaluate_conditions()?;
    lookup
        .prefetch_template(template, &params, &verdicts, resources)
        .await;
    Ok(PrefetchedStack {
        lookup,
        params,
        verdicts,
    })
}

impl PrefetchedLookup {
    pub fn new(reader: Arc<ExternalReader>, ctx: ResolveContext) -> Self {
        let dynamic = match reader.withholds_secrets() {
            true => DynamicCache::withholding(),
            false => DynamicCache::new(),
        };
        PrefetchedLookup {
            reader,
            ctx,
            dynamic,
            imports: Mutex::default(),
            outputs: Mutex::default(),
            azs: Mutex::default(),
            recorded_imports: Mutex::default(),
            recorded_reads: Mutex::default(),
            cross_stack_secrets: Mutex::default(),
            warnings: Mutex::default(),
        }
    }

    pub fn context(&self) -> &ResolveContext {
        &self.ctx
    }

    /// Fetches the SSM parameters named by `AWS::SSM::Parameter::Value<...>`
    /// parameters (override for this stack, then for every stack, then
    /// Default), before [`bind_parameters`] reads them.
    pub async fn prefetch_parameters(&self, template: &Template, overrides: &[ParameterOverride]) {
        let stack = self.ctx.stack_name();
        let mut keys = Vec::new();
        for (name, p) in &template.parameters {
            if !p.type_.trim().starts_with("AWS::SSM::Parameter::Value<") {
                continue;
            }
            let chosen = overrides
                .iter()
                .rev()
                .find(|o| o.key == *name && o.stack.as_deref() == Some(stack))
                .or_else(|| {
                    overrides
                        .iter()
                        .rev()
                        .find(|o| o.key == *name && o.stack.is_none())
                })
                .map(|o| o.value.clone())
                .or_else(|| {
                    p.default
                        .as_ref()
                        .and_then(|d| d.as_str().map(String::from))
                });
            if let Some(n) = chosen {
                keys.push(self.parameter_key(n.trim()));
            }
        }
        self.dynamic.ensure(&self.reader, keys).await;
    }

    /// Scans a bound template (condition-false resources, outputs and
    /// `Fn::If` branches skipped) and fetches its cross-stack reads, then
    /// the dynamic references of whatever then resolves (literal ones where
    /// a value does not resolve yet).
    pub async fn prefetch_template(
        &self,
        template: &Template,
        params: &BoundParameters,
        verdicts: &ConditionVerdicts,
        resources: &(dyn ResourceLookup + Sync),
    ) {
        let silent = Silent(self);
        let wanted = {
            let mut resolver = Resolver::new(template, &self.ctx, params, resources, &silent)
                .with_conditions(verdicts);
            let mut scan = Scan::new(&mut resolver, verdicts, self.ctx.region());
            scan.template(template, verdicts);
            scan.wanted
        };
        {
            let mut azs = lock(&self.azs);
            for r in wanted.az_regions {
                azs.entry(r).or_insert(None);
            }
        }
        let names: Vec<String> = wanted.imports.into_iter().collect();
        let requests: Vec<(StackOutputRequest, bool)> = wanted.outputs.into_values().collect();
        let mut futures: Vec<BoxFuture<'_, ()>> = vec![
            Box::pin(self.fetch_imports(&names)),
            Box::pin(self.fetch_availability_zones()),
        ];
        for (req, literal) in &requests {
            futures.push(Box::pin(self.fetch_stack_output(req, *literal)));
        }
        join_all(futures).await;

        let refs = {
            let mut resolver = Resolver::new(template, &self.ctx, params, resources, &silent)
                .with_conditions(verdicts);
            dynamic_references(&mut resolver, template, params, verdicts)
        };
        self.fetch_references(&refs).await;
    }

    /// Fetches what `refs` read, except tokens a CloudFormation-sourced value
    /// carried (those stay literal).
    async fn fetch_references(&self, refs: &[DynamicReference]) {
        let literals = self.literals();
        let withhold = self.dynamic.withholds();
        let keys = refs
            .iter()
            .filter(|r| !literals.contains(&r.text))
            .filter(|r| !(withhold && r.is_secret_by_kind()))
            .map(|r| r.fetch_key(self.ctx.region()))
            .collect();
        self.dynamic.ensure(&self.reader, keys).await;
    }

    /// The texts of CloudFormation-sourced values read so far (see
    /// [`literal`]).
    fn literals(&self) -> Literals {
        let mut l = Literals::default();
        for v in lock(&self.imports).values().flatten() {
            if v.source == ImportSource::CloudFormation {
                l.add_value(&v.value);
            }
        }
        for v in lock(&self.outputs).values().flatten() {
            if v.source == OutputSource::CloudFormation {
                l.add_value(&v.value);
            }
        }
        l
    }

    /// Describes the availability zones of every `Fn::GetAZs` region the
    /// scan found whose zones are not known yet (the reader asks EC2 once
    /// per region for the whole deploy).
    pub async fn fetch_availability_zones(&self) {
        let regions = self.wanted_availability_zone_regions();
        let futures: Vec<BoxFuture<'_, (String, Result<Vec<String>, LookupError>)>> = regions
            .into_iter()
            .map(|r| {
                Box::pin(async move {
                    let zones = self.reader.availability_zones(&r).await;
                    (r, zones)
                }) as BoxFuture<'_, _>
            })
            .collect();
        for (region, zones) in join_all(futures).await {
            lock(&self.azs).insert(region, Some(zones));
        }
    }

    /// Fetches the given `Fn::ImportValue` names not fetched yet.
    pub async fn fetch_imports(&self, names: &[String]) {
        let todo: Vec<String> = {
            let have = lock(&self.imports);
            let todo: IndexSet<&String> = names.iter().filter(|n| !have.contains_key(*n)).collect();
            todo.into_iter().cloned().collect()
        };
        if todo.is_empty() {
            return;
        }
        let (results, warnings) = self
            .reader
            .import_values(
                self.ctx.stack_name(),
                self.ctx.region(),
                &todo,
                &self.dynamic,
            )
            .await;
        lock(&self.warnings).extend(warnings);
        lock(&self.imports).extend(results);
    }

    /// Fetches one `Fn::GetStackOutput` request (`role_arn_literal`: the
    /// template spelled `RoleArn` as a literal string).
    pub async fn fetch_stack_output(&self, request: &StackOutputRequest, role_arn_literal: bool) {
        let key = output_key(request);
        if lock(&self.outputs).contains_key(&key) {
            return;
        }
        let (r, warnings) = self
            .reader
            .stack_output(self.ctx.region(), request, role_arn_literal, &self.dynamic)
            .await;
        lock(&self.warnings).extend(warnings);
        lock(&self.outputs).insert(key, r);
    }

    /// Fetches the dynamic references in a resolved value (one assembled from
    /// values only known after resources were created).
    pub async fn prefetch_dynamic(&self, value: &Value) {
        let mut refs = Vec::new();
        collect_references(value, &mut refs);
        self.fetch_references(&refs).await;
    }

    /// Substitutes the dynamic references of a resolved value at `path` (see
    /// [`substitute_dynamic_references`]). A leaf equal to a secret another
    /// stack published (re-resolved from its expression) is recorded at its
    /// position with that expression, so this stack's state stores the same
    /// expression the producer's does. A `{{resolve:...}}` that came from a
    /// CloudFormation fallback is data and stays as it is.
    pub fn substitute(
        &self,
        value: &Value,
        path: &str,
    ) -> Result<(Value, SecretsMap), ResolveError> {
        let literals = self.literals();
        let (out, mut secrets) = if literals.is_empty() {
            substitute_dynamic_references(value, path, &self.ctx, self)?
        } else {
            let hidden = literals.hide(value);
            let (out, secrets) = substitute_dynamic_references(&hidden, path, &self.ctx, self)?;
            (literals.restore(&out), literals.restore_secrets(secrets))
        };
        let known = lock(&self.cross_stack_secrets).0.clone();
        if !known.is_empty() {
            mark_known(&out, path.to_string(), &known, &mut secrets);
        }
        Ok((out, secrets))
    }

    /// Imports the resolver read from cdkd stacks (for `state.imports`).
    pub fn recorded_imports(&self) -> Vec<StateImportEntry> {
        lock(&self.recorded_imports).clone()
    }

    /// Same-account cdkd `Fn::GetStackOutput` reads (for `state.outputReads`).
    pub fn recorded_output_reads(&self) -> Vec<StateOutputReadEntry> {
        lock(&self.recorded_reads).clone()
    }

    /// Plaintexts of secrets other stacks published that the resolver handed
    /// to this stack (for the redaction pass).
    pub fn cross_stack_secrets(&self) -> SecretsMap {
        lock(&self.cross_stack_secrets).1.clone()
    }

    /// Warnings from the fetches (fallbacks that failed, records skipped).
    pub fn warnings(&self) -> Vec<String> {
        lock(&self.warnings).clone()
    }

    /// `Fn::GetAZs` regions the template reads whose zones are not known;
    /// the engine supplies them with [`Self::set_availability_zones`].
    pub fn wanted_availability_zone_regions(&self) -> Vec<String> {
        lock(&self.azs)
            .iter()
            .filter(|(_, z)| z.is_none())
            .map(|(r, _)| r.clone())
            .collect()
    }

    pub fn set_availability_zones(&self, region: impl Into<String>, zones: Vec<String>) {
        lock(&self.azs).insert(region.into(), Some(Ok(zones)));
    }

    /// The dynamic-reference cache (for an engine that fetches on its own).
    pub fn dynamic_cache(&self) -> &DynamicCache {
        &self.dynamic
    }

    fn parameter_key(&self, name: &str) -> FetchKey {
        let region = name
            .strip_prefix("arn:")
            .and_then(|r| r.split(':').nth(2))
            .filter(|r| !r.is_empty())
            .unwrap_or(self.ctx.region());
        FetchKey::Parameter {
            region: region.to_string(),
            name: name.to_string(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ExternalLookup for PrefetchedLookup {
    fn import_value(&self, export_name: &str) -> Result<Value, LookupError> {
        self.import(export_name, true)
    }

    fn stack_output(&self, request: &StackOutputRequest) -> Result<Value, LookupError> {
        self.output(request, true)
    }

    fn availability_zones(&self, region: &str) -> Result<Vec<String>, LookupError> {
        match lock(&self.azs).get(region) {
            Some(Some(zones)) => zones.clone(),
            _ => Err(LookupError::NotAvailable(format!(
                "the availability zones of {region}"
            ))),
        }
    }

    fn ssm_parameter(&self, name: &str) -> Result<String, LookupError> {
        match self.dynamic.fetched(&self.parameter_key(name))? {
            Fetched::Parameter { value, .. } => Ok(value),
            Fetched::Secret { .. } => Err(LookupError::Failed("not a parameter".into())),
        }
    }
}

/// The same caches, read without recording anything: what the prefetch's
/// own best-effort resolution uses, so only the engine's resolution records
/// imports and output reads.
struct Silent<'a>(&'a PrefetchedLookup);

impl ExternalLookup for Silent<'_> {
    fn import_value(&self, export_name: &str) -> Result<Value, LookupError> {
        self.0.import(export_name, false)
    }
    fn stack_output(&self, request: &StackOutputRequest) -> Result<Value, LookupError> {
        self.0.output(request, false)
    }
    fn availability_zones(&self, region: &str) -> Result<Vec<String>, LookupError> {
        self.0.availability_zones(region)
    }
    fn ssm_parameter(&self, name: &str) -> Result<String, LookupError> {
        self.0.ssm_parameter(name)
    }
}

impl PrefetchedLookup {
    fn import(&self, export_name: &str, record: bool) -> Result<Value, LookupError> {
        let hit = lock(&self.imports).get(export_name).cloned();
        let imported = hit.ok_or_else(|| {
            LookupError::NotAvailable(format!(
                "export '{export_name}' (it was not fetched before resolution)"
            ))
        })??;
        if record {
            if let Some(entry) = imported.import_entry(export_name) {
                let mut rec = lock(&self.recorded_imports);
                if !rec.contains(&entry) {
                    rec.push(entry);
                }
            }
            self.remember_secrets(&imported.value, &imported.secrets);
        }
        Ok(imported.value)
    }

    fn output(&self, request: &StackOutputRequest, record: bool) -> Result<Value, LookupError> {
        let hit = lock(&self.outputs).get(&output_key(request)).cloned();
        let out = hit.ok_or_else(|| {
            LookupError::NotAvailable(format!(
                "output '{}' of stack '{}' (it was not fetched before resolution)",
                request.output_name, request.stack_name
            ))
        })??;
        if record {
            if let Some(entry) = out.output_read_entry(request) {
                let mut rec = lock(&self.recorded_reads);
                if !rec.contains(&entry) {
                    rec.push(entry);
                }
            }
            self.remember_secrets(&out.value, &out.secrets);
        }
        Ok(out.value)
    }
}

impl PrefetchedLookup {
    /// Keeps, for each secret-bearing leaf of a value another stack
    /// published, its expression and the plaintext leaf it resolved to.
    fn remember_secrets(&self, value: &Value, secrets: &SecretsMap) {
        if secrets.is_empty() {
            return;
        }
        let mut leaves = Vec::new();
        string_leaves(value, String::new(), &mut leaves);
        let mut known = lock(&self.cross_stack_secrets);
        for (path, leaf) in leaves {
            if let Some(pos) = secrets.get(&path) {
                let pair = (pos.expression.clone(), leaf);
                if !known.0.contains(&pair) {
                    known.0.push(pair);
                }
            }
        }
        for p in secrets.plaintexts() {
            known.1.insert_plaintext(p);
        }
    }
}

/// `(path, text)` of every string leaf, paths spelled as the post-pass
/// spells them.
fn string_leaves(v: &Value, path: String, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => out.push((path, s.clone())),
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                string_leaves(x, format!("{path}[{i}]"), out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                string_leaves(x, p, out);
            }
        }
        _ => {}
    }
}

impl DynamicLookup for PrefetchedLookup {
    fn fetched(&self, key: &FetchKey) -> Result<Fetched, LookupError> {
        self.dynamic.fetched(key)
    }

    fn withholds_secrets(&self) -> bool {
        self.dynamic.withholds()
    }
}

/// Records leaves equal to a known cross-stack plaintext whose expression
/// is known.
fn mark_known(v: &Value, path: String, known: &[(String, String)], out: &mut SecretsMap) {
    match v {
        Value::String(s) => {
            if let Some((expr, p)) = known.iter().find(|(e, p)| !e.is_empty() && p == s) {
                if out.get(&path).is_none() {
                    out.insert_position(
                        path,
                        SecretPosition {
                            expression: expr.clone(),
                            references: vec![expr.clone()],
                        },
                    );
                    out.insert_plaintext(p.clone());
                }
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                mark_known(x, format!("{path}[{i}]"), known, out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                mark_known(x, p, known, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
#[path = "prefetch_tests.rs"]
mod tests;
