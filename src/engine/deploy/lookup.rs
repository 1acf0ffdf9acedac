//! What the resolver reads about this stack's resources: a snapshot of physical ids and
//! attributes, taken from the state record (and, during the walk, from what this run has
//! recorded so far), and the synchronous resolution calls built over it.
//!
//! The resolver is synchronous and not `Send`, so it is built where it is used, over an owned
//! snapshot, and dropped before the next await.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::plan::references;
use crate::provider::{refs, schema, Provider, Registry, Route};
use crate::redact::positions::get_at_mut;
use crate::redact::{
    comparable, mask_leaves, with_expressions, MaskedFingerprints, Needles, NoEchoScope,
    RecordRedactor, RecordedReads, StoredProperties,
};
use crate::resolve::dynamic::{DynamicLookup, DynamicReference};
use crate::resolve::{
    BoundParameters, ConditionVerdicts, ExternalLookup, ParameterValue, PrefetchedLookup,
    ResolveContext, ResolveError, ResolvedOutput, Resolver, ResourceLookup, SecretsMap,
};
use crate::state::{
    Lenient, PathSegment, ProvisionedBy, ResourceState, StackState, StateImportEntry,
    StateOutputReadEntry,
};
use crate::template::Template;

/// One resource as references see it.
#[derive(Debug, Clone)]
pub(super) struct Known {
    /// `None` while it is only known after the deploy (the plan's view of a resource this run
    /// creates or replaces).
    pub ref_value: Option<Value>,
    pub attributes: Map<String, Value>,
}

/// Physical ids and attributes by logical id.
#[derive(Debug, Clone, Default)]
pub(super) struct Snapshot {
    entries: HashMap<String, Known>,
}

impl Snapshot {
    /// The snapshot of `records` (every record that has a physical id). `Ref` values come
    /// from [`refs::of_record`], whichever provider serves a record (`_registry` stays for
    /// the callers' convenience).
    pub fn from_records<'a>(
        _registry: &Registry,
        records: impl IntoIterator<Item = (&'a String, &'a ResourceState)>,
    ) -> Self {
        let entries = records
            .into_iter()
            .filter_map(|(id, rec)| Some((id.clone(), known(rec)?)))
            .collect();
        Snapshot { entries }
    }

    /// What references see of `logical_id` now.
    pub fn get(&self, logical_id: &str) -> Option<&Known> {
        self.entries.get(logical_id)
    }

    /// Replaces what references see of `logical_id` (the plan's prediction of a resource
    /// this run changes).
    pub fn set(&mut self, logical_id: &str, known: Known) {
        self.entries.insert(logical_id.to_owned(), known);
    }
}

impl ResourceLookup for Snapshot {
    fn ref_value(&self, logical_id: &str) -> Option<Value> {
        self.entries.get(logical_id)?.ref_value.clone()
    }

    fn get_att(&self, logical_id: &str, attribute: &str) -> Option<Value> {
        self.entries
            .get(logical_id)?
            .attributes
            .get(attribute)
            .cloned()
    }
}

/// How a record is served: its recorded `provisionedBy: cc-api` pins Cloud Control; otherwise
/// the SDK provider when cdkd has one, else Cloud Control for a type the schemas know.
pub(crate) fn record_provider(
    registry: &Registry,
    rec: &ResourceState,
) -> Option<(Route, Arc<dyn Provider>)> {
    let t = rec.resource_type.as_str();
    let route = if rec.is_pinned_to_cloud_control() {
        Route::CloudControl
    } else if registry.provider(t, Route::Sdk).is_some() {
        Route::Sdk
    } else if schema::schema_for(t).is_some() {
        Route::CloudControl
    } else {
        return None;
    };
    registry.provider(t, route).map(|p| (route, p))
}

pub(super) fn provisioned_by(route: Route) -> ProvisionedBy {
    match route {
        Route::Sdk => ProvisionedBy::Sdk,
        Route::CloudControl => ProvisionedBy::CcApi,
    }
}

fn known(rec: &ResourceState) -> Option<Known> {
    Some(Known {
        ref_value: Some(refs::of_record(rec)?),
        attributes: rec.attributes.clone().unwrap_or_default(),
    })
}

/// The logical ids `value` names through `Ref`, `Fn::GetAtt` and `Fn::Sub`.
pub(super) fn referenced_ids(value: &Map<String, Value>) -> Vec<String> {
    let mut ids: Vec<String> = references(&Value::Object(value.clone()))
        .into_iter()
        .map(|r| r.target)
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Everything resolution needs besides the resource snapshot; shared by the plan, the walk
/// and the outputs.
pub(super) struct Resolution {
    pub template: Arc<Template>,
    pub ctx: ResolveContext,
    pub params: BoundParameters,
    pub verdicts: ConditionVerdicts,
    pub external: Arc<dyn ExternalLookup + Send + Sync>,
    /// The deploy's prefetched view of the outside world: dynamic references are
    /// substituted through it. `None` leaves them as written (nothing fetched).
    pub prefetched: Option<Arc<PrefetchedLookup>>,
    /// The template's NoEcho parameter names (a nested child's: with those its parent
    /// filled from a NoEcho source).
    pub no_echo: HashSet<String>,
    /// A nested child's parameters its parent filled from a secret reference, with the
    /// expression stored wherever the template places their value.
    pub secret_parameters: Vec<(String, String)>,
    /// What the state writes must keep out of the record (shared with the state book).
    pub redactor: Arc<RecordRedactor>,
}

/// A resource's properties ready to send and to store.
#[derive(Clone)]
pub(super) struct Secured {
    /// Dynamic references substituted: what AWS receives.
    pub sent: Map<String, Value>,
    /// What state stores: secret positions as their expression, NoEcho positions as `***`.
    pub stored: Map<String, Value>,
    /// The NoEcho positions (`noEchoLeaves`).
    pub no_echo_leaves: Vec<Vec<PathSegment>>,
    /// The top-level properties stored as `***` by an encoding of a secret.
    pub masked_keys: Vec<String>,
    /// Their fingerprints, once [`Resolution::masked_fingerprints`] computed them.
    pub fingerprints: MaskedFingerprints,
}

impl Secured {
    /// The side to compare with a stored record's properties.
    pub fn comparable(&self, record: &Map<String, Value>) -> Map<String, Value> {
        comparable(&self.stored, &self.sent, &self.no_echo_leaves, record)
    }
}

impl Resolution {
    fn resolver<'a>(&'a self, snapshot: &'a Snapshot) -> Resolver<'a> {
        Resolver::new(
            &self.template,
            &self.ctx,
            &self.params,
            snapshot,
            self.external.as_ref(),
        )
        .with_conditions(&self.verdicts)
    }

    /// The resolved properties of `logical_id`.
    pub fn properties(
        &self,
        snapshot: &Snapshot,
        logical_id: &str,
    ) -> Result<Map<String, Value>, ResolveError> {
        let mut resolver = self.resolver(snapshot);
        let resolved = resolver.resolve_properties(logical_id);
        for w in resolver.take_warnings() {
            crate::ui::warn(w.to_string());
        }
        resolved
    }

    /// The resolved properties of `logical_id`, property by property: a property whose value
    /// is not known yet (a resource not created, an attribute not recorded) is listed in the
    /// second half instead of failing the whole resource. Template mistakes still fail.
    pub fn properties_lenient(
        &self,
        snapshot: &Snapshot,
        logical_id: &str,
    ) -> Result<(Map<String, Value>, Vec<String>), ResolveError> {
        let Some(resource) = self.template.resources.get(logical_id) else {
            return Ok((Map::new(), Vec::new()));
        };
        let mut resolver = self.resolver(snapshot);
        let mut out = Map::new();
        let mut unknown = Vec::new();
        for (key, value) in &resource.properties {
            let path = format!("Resources.{logical_id}.Properties.{key}");
            match resolver.resolve_value(value, &path) {
                Ok(Some(v)) => {
                    out.insert(key.clone(), v);
                }
                Ok(None) => {}
                Err(e) if e.is_unavailable() => unknown.push(key.clone()),
                Err(e) => return Err(e),
            }
        }
        Ok((out, unknown))
    }

    /// Output `name`, or `None` when its Condition is false.
    pub fn output(
        &self,
        snapshot: &Snapshot,
        name: &str,
    ) -> Result<Option<ResolvedOutput>, ResolveError> {
        self.resolver(snapshot).resolve_output(name)
    }

    /// The NoEcho scope of this stack's template.
    pub fn no_echo_scope(&self) -> NoEchoScope<'_> {
        NoEchoScope {
            params: &self.no_echo,
            verdicts: &self.verdicts,
        }
    }

    /// `value` (resolved at `path`) with its dynamic references substituted, and the secret
    /// positions; without a prefetched lookup, `value` as it is. The plaintexts found are
    /// added to the redactor before anything can print or store them.
    pub fn substitute(
        &self,
        value: &Value,
        path: &str,
    ) -> Result<(Value, SecretsMap), ResolveError> {
        let Some(p) = &self.prefetched else {
            let value = crate::resolve::dynamic::encode_pending_as_written(value);
            return Ok((value, SecretsMap::default()));
        };
        let (out, secrets) = p.substitute(value, path)?;
        self.learn(p, &secrets);
        Ok((out, secrets))
    }

    /// Adds the plaintexts behind `secrets` (paired with their expressions where one whole
    /// reference stands for them) and every cross-stack secret to the redactor.
    fn learn(&self, p: &PrefetchedLookup, secrets: &SecretsMap) {
        let mut needles = Needles::default();
        for (_, position) in secrets.positions() {
            for text in &position.references {
                let Ok(r) = DynamicReference::parse(text) else {
                    continue;
                };
                let key = r.fetch_key(self.ctx.region());
                if let Ok((plain, true)) = p
                    .fetched(&key)
                    .map_err(drop)
                    .and_then(|f| r.value_from(&f).map_err(drop))
                {
                    needles.add_secret(&plain, Some(text));
                }
            }
        }
        for plain in secrets.plaintexts() {
            needles.add_secret(plain, None);
        }
        for plain in p.cross_stack_secrets().plaintexts() {
            needles.add_secret(plain, None);
        }
        if !needles.is_empty() {
            self.redactor.add_needles(&needles);
        }
    }

    /// `desired` (a resource's resolved properties) made ready to send and store.
    pub fn secure(
        &self,
        logical_id: &str,
        desired: Map<String, Value>,
    ) -> Result<Secured, ResolveError> {
        let path = format!("Resources.{logical_id}.Properties");
        let (sent, secrets) = self
            .substitute(&Value::Object(desired), "")
            .map_err(|mut e| {
                e.path = if e.path.is_empty() {
                    path.clone()
                } else {
                    format!("{path}.{}", e.path)
                };
                e
            })?;
        let mut stored = with_expressions(&sent, &secrets);
        let masked_keys = super::masked::masked_keys(&secrets);
        let sent = match sent {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let no_echo_leaves = match self.template.resources.get(logical_id) {
            Some(res) => self.no_echo_scope().property_leaves(&res.properties, &sent),
            None => Vec::new(),
        };
        mask_leaves(&mut stored, &no_echo_leaves);
        if let Some(res) = self.template.resources.get(logical_id) {
            // A position filled from a custom resource's NoEcho attribute: `***`, whole.
            let read = self
                .redactor
                .no_echo_attributes()
                .leaves(&res.properties, &sent);
            mask_leaves(&mut stored, &read);
            self.store_secret_parameters(&res.properties, &sent, &mut stored);
        }
        let stored = match stored {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Ok(Secured {
            sent,
            stored,
            no_echo_leaves,
            masked_keys,
            fingerprints: MaskedFingerprints::default(),
        })
    }

    /// The fingerprints of `keys` of `logical_id`, reading its inputs from `snapshot`.
    pub fn masked_fingerprints(
        &self,
        snapshot: &Snapshot,
        logical_id: &str,
        keys: &[String],
    ) -> MaskedFingerprints {
        if keys.is_empty() {
            return MaskedFingerprints::default();
        }
        let needles = self.redactor.needles();
        let known: Vec<String> = needles
            .no_echo_values()
            .iter()
            .cloned()
            .chain(needles.secret_plaintexts().map(str::to_owned))
            .collect();
        let secret_params = |name: &str| {
            self.no_echo.contains(name) || self.secret_parameters.iter().any(|(n, _)| n == name)
        };
        let param = |name: &str| self.params.get(name);
        let verdict = |name: &str| self.verdicts.get(name).copied();
        let mut resolver = self.resolver(snapshot);
        let mut resolve = |expr: &Value| resolver.resolve_value(expr, "fingerprint").ok().flatten();
        let mut inputs = super::masked::Inputs {
            template: &self.template,
            secret_params: &secret_params,
            param: &param,
            verdict: &verdict,
            resolve: &mut resolve,
            known_secrets: &known,
        };
        super::masked::fingerprints(logical_id, keys, &mut inputs)
    }

    /// Today's masked-property fingerprints of `logical_id` for the plan's comparison with
    /// `record`; computed only when the record could hold a mask (empty otherwise).
    pub fn masked_today(
        &self,
        snapshot: &Snapshot,
        logical_id: &str,
        desired: &Map<String, Value>,
        record: &ResourceState,
    ) -> MaskedFingerprints {
        let could_hold = record.masked_property_fingerprints().is_some()
            || record
                .properties
                .values()
                .any(crate::resolve::external::holds_mask);
        if !could_hold {
            return MaskedFingerprints::default();
        }
        let Ok(secured) = self.secure(logical_id, desired.clone()) else {
            return MaskedFingerprints::default();
        };
        self.masked_fingerprints(snapshot, logical_id, &secured.masked_keys)
    }

    /// Each position `template` fills from a parameter the parent filled from a secret
    /// reference stores that reference's expression in place of the plaintext.
    fn store_secret_parameters(
        &self,
        template: &Map<String, Value>,
        sent: &Map<String, Value>,
        stored: &mut Value,
    ) {
        for (name, expression) in &self.secret_parameters {
            let Some(ParameterValue::Resolved(Value::String(plain))) = self.params.get(name) else {
                continue;
            };
            if plain.is_empty() {
                continue;
            }
            let one: HashSet<String> = [name.clone()].into();
            let scope = NoEchoScope {
                params: &one,
                verdicts: &self.verdicts,
            };
            for leaf in scope.property_leaves(template, sent) {
                if let Some(Value::String(s)) = get_at_mut(stored, &leaf) {
                    if s.contains(plain.as_str()) {
                        *s = s.replace(plain.as_str(), expression);
                    }
                }
            }
        }
    }

    /// [`Self::secure`] after fetching any dynamic reference the prefetch could not see
    /// (one assembled from a resource created in this run).
    pub async fn secure_fetched(
        &self,
        logical_id: &str,
        desired: Map<String, Value>,
    ) -> Result<Secured, ResolveError> {
        if let Some(p) = &self.prefetched {
            p.prefetch_dynamic(&Value::Object(desired.clone())).await;
        }
        self.secure(logical_id, desired)
    }

    /// Records how `logical_id` is stored once `secured.sent` is in its working record.
    pub fn remember(&self, logical_id: &str, secured: &Secured) {
        let leaves = (!self.no_echo.is_empty()).then(|| secured.no_echo_leaves.clone());
        self.redactor.record_properties(
            logical_id,
            StoredProperties {
                sent: secured.sent.clone(),
                stored: secured.stored.clone(),
                no_echo_leaves: leaves,
                masked: Some(secured.fingerprints.clone()),
            },
        );
    }

    /// The side of the plan's comparison with `record`: `desired` as state would store it
    /// (a value that cannot be substituted yet is compared as resolved).
    pub fn comparable(
        &self,
        logical_id: &str,
        desired: Map<String, Value>,
        record: &Map<String, Value>,
    ) -> Map<String, Value> {
        match self.secure(logical_id, desired.clone()) {
            Ok(secured) => secured.comparable(record),
            Err(_) => desired,
        }
    }

    /// Whether `state` already lists exactly the cross-stack reads this resolution recorded.
    pub fn reads_recorded_in(&self, state: &StackState) -> bool {
        let Some(p) = &self.prefetched else {
            return true;
        };
        let same = |a: &[StateImportEntry], b: &[StateImportEntry]| {
            a.len() == b.len() && a.iter().all(|x| b.contains(x))
        };
        let reads = p.recorded_output_reads();
        let stored_reads = state.output_read_entries();
        same(
            &p.recorded_imports(),
            state.imports.as_deref().unwrap_or_default(),
        ) && reads.len() == stored_reads.len()
            && reads.iter().all(|x| stored_reads.contains(x))
    }

    /// The final success save: `imports` / `outputReads` become exactly this run's reads
    /// (lists the record never had stay absent while there is nothing to list).
    pub fn set_reads(&self, state: &mut StackState) {
        let Some(p) = &self.prefetched else {
            return;
        };
        let imports = p.recorded_imports();
        if !imports.is_empty() || state.imports.is_some() {
            state.imports = Some(imports);
        }
        let reads = p.recorded_output_reads();
        if !reads.is_empty() || state.output_reads.is_some() {
            state.output_reads = Some(Lenient::Valid(reads));
        }
    }
}

impl RecordedReads for PrefetchedLookup {
    fn imports(&self) -> Vec<StateImportEntry> {
        self.recorded_imports()
    }
    fn output_reads(&self) -> Vec<StateOutputReadEntry> {
        self.recorded_output_reads()
    }
}
