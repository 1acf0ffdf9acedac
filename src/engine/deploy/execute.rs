//! Creating, updating and replacing resources along the dependency graph.
//!
//! Each resource runs as one task of the walk once everything it depends on has finished. The
//! task resolves its properties against the records as they are now (so a dependency created
//! or replaced a moment ago is read with its new id and attributes), decides the final change,
//! calls the provider, records the result and saves state. A replaced resource's old physical
//! resource is kept aside and deleted after the walk, unless `UpdateReplacePolicy` retains it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Map, Value};

use super::changes::{diff_properties, is_stateful, stateful_refusal};
use super::lookup::{referenced_ids, Resolution, Snapshot};
use super::plan::{new_record, retains_old, with_template_fields, Planned};
use super::report::{Action, Done};
use super::{book::StateBook, lookup::provisioned_by};
use crate::aws::Clients;
use crate::plan::ChangeKind;
use crate::provider::{Provider, ProviderContext, Registry, ResourceRequest, Route, UpdateOutcome};
use crate::resolve::ResolveErrorKind;
use crate::state::ResourceState;

/// Everything the tasks of one stack's deploy share.
pub(super) struct Run {
    pub clients: Arc<Clients>,
    pub registry: Arc<Registry>,
    pub resolution: Arc<Resolution>,
    pub book: StateBook,
    pub planned: HashMap<String, Planned>,
    pub stack: String,
    pub region: String,
    pub account_id: String,
    pub partition: String,
    pub no_wait: bool,
    pub force_stateful: bool,
    /// Old resources replaced in this run, deleted after the walk.
    pub replaced: Mutex<Vec<(String, ResourceState)>>,
    /// What nested-stack rows need to deploy their children.
    pub nested: super::nested::Scope,
    /// The create-token ledger: the token each create sends.
    pub tokens: super::tokens::Tokens,
    /// This run's completed and failed operations, for the rollback journal.
    pub oplog: super::oplog::OpLog,
    /// The observed-baseline reads started after each create and update (capture.rs).
    pub capture: super::capture::Captures,
}

impl Run {
    pub fn provider_context(&self) -> ProviderContext<'_> {
        ProviderContext {
            clients: &self.clients,
            stack_name: &self.stack,
            region: &self.region,
            account_id: &self.account_id,
            partition: &self.partition,
            no_wait: self.no_wait,
        }
    }

    /// `--replace`: a replacement whose name the old resource holds deletes the old one first.
    fn replace_first(&self) -> bool {
        self.nested.options.replace
    }

    /// `--strict-getatt`: an attribute the provider did not report fails the resource.
    pub fn strict_getatt(&self) -> bool {
        self.nested.options.strict_getatt
    }

    fn provider(&self, resource_type: &str, route: Route) -> Result<Arc<dyn Provider>, String> {
        self.registry
            .provider(resource_type, route)
            .ok_or_else(|| format!("no {} provider serves {resource_type}", route.as_str()))
    }
}

/// The final change of one resource, decided against the records as they are now.
enum Decision {
    Unchanged,
    Create,
    Update,
    Replace(String),
}

/// Creates, updates or replaces `id` as its plan and its resolved properties say.
pub(super) async fn provision(run: Arc<Run>, id: String) -> Result<Done, (Done, String)> {
    let started = Instant::now();
    let planned = run.planned[&id].clone();
    let resource_type = planned.change.resource_type.clone();
    let done = Done::new(&id, &resource_type, planned.route);
    if planned.change.kind == ChangeKind::NoChange && !planned.deferred {
        return Ok(done.with(Action::Unchanged, started));
    }
    let fail = |done: Done, message: String| Err((done.with(Action::Failed, started), message));
    let res = run.resolution.template.resources[&id].clone();

    // Resolve against the records of what it references, as they are now.
    let targets = referenced_ids(&res.properties);
    let (desired, snapshot) = match resolve_reading(&run, &id, &targets).await {
        Ok(d) => d,
        Err(message) => return fail(done, message),
    };
    // Dynamic references substituted for AWS; secret and NoEcho positions kept for state.
    let mut secured = match run.resolution.secure_fetched(&id, desired).await {
        Ok(s) => s,
        Err(e) => return fail(done, run.resolution.redactor.mask_text(&e.to_string())),
    };
    secured.fingerprints = run
        .resolution
        .masked_fingerprints(&snapshot, &id, &secured.masked_keys);
    let desired = secured.sent.clone();

    let record = run.book.record(&id).await;
    let before = record.clone();
    let attempted =
        super::oplog::journal_safe(&Value::Object(res.properties.clone())).then(|| desired.clone());
    let decision = match &record {
        None => Decision::Create,
        Some(r) if r.resource_type != resource_type => Decision::Replace("its Type changed".into()),
        Some(_) if planned.change.kind == ChangeKind::Replace && !planned.deferred => {
            Decision::Replace(replace_reason(&planned))
        }
        Some(r) => {
            let compared = secured.comparable(&r.properties);
            let mut diffs = diff_properties(&resource_type, &compared, &r.properties, &[]);
            let masked =
                super::masked::masked_changes(&resource_type, r, &secured.fingerprints, &diffs);
            diffs.extend(masked);
            match diffs.iter().find(|d| d.requires_replacement) {
                Some(d) => Decision::Replace(format!("create-only property {} changed", d.path)),
                None if diffs.is_empty() && !super::noecho::readback_changed(&planned.change) => {
                    Decision::Unchanged
                }
                None => Decision::Update,
            }
        }
    };

    let attributes = run.resolution.redactor.no_echo_attributes();
    let decision = match decision {
        // Two masks say nothing about the values under them: a reader of a NoEcho value the
        // handler returned again in this run is sent it.
        Decision::Unchanged if record.is_some() && attributes.reads_answered(&res.properties) => {
            Decision::Update
        }
        other => other,
    };
    if !matches!(decision, Decision::Unchanged) {
        if let Some((target, attribute)) = attributes.masked_reads(&res.properties).first() {
            return fail(done, masked_read_refusal(&id, target, attribute));
        }
    }

    run.resolution.remember(&id, &secured);
    let fresh = matches!(decision, Decision::Create | Decision::Replace(_));
    let outcome = match (decision, record) {
        (Decision::Unchanged, _) => return Ok(done.with(Action::Unchanged, started)),
        (_, old) if super::nested::is_nested(&resource_type) => {
            super::nested::provision(&run, &id, &res, &planned, desired, &secured.stored, old).await
        }
        (Decision::Create, _) => create(&run, &id, &res, &planned, desired, None)
            .await
            .map(|_| Action::Created),
        (Decision::Update, Some(old)) => update(&run, &id, &res, &planned, desired, old).await,
        (Decision::Replace(why), Some(old)) => {
            replace(&run, &id, &res, &planned, desired, old, &why).await
        }
        (_, None) => Err("internal: no record to update".to_owned()),
    };
    match outcome {
        Ok(action) => {
            let created = matches!(
                action,
                Action::Created | Action::Replaced | Action::ReplacedRetained
            );
            if fresh && created {
                super::noecho::record_exact_echo(&run, &id, &resource_type, &secured).await;
            }
            Ok(done.with(action, started))
        }
        Err(message) => {
            let message = run.resolution.redactor.mask_text(&message);
            run.oplog
                .failed(&id, &resource_type, before, attempted, &message);
            fail(done, message)
        }
    }
}

/// The refusal of a write that would send `***`: `id` reads `target`'s NoEcho attribute, whose
/// value state holds only masked and which `target` did not produce again in this deploy.
fn masked_read_refusal(id: &str, target: &str, attribute: &str) -> String {
    format!(
        "{id} reads {target}.{attribute}, which {target} declared NoEcho: state holds only \
         '***' for it and {target} did not produce it again in this deploy, so {id} is refused \
         rather than sending '***' to AWS; change {target} in the same deploy (for a custom \
         resource, change one of {target}'s properties, a nonce or version property is the \
         usual way, so its handler runs again)"
    )
}

/// A custom resource's attributes as the rest of this run reads them: the real Data of a
/// NoEcho answer (state stores `***`; see `redact::attributes`).
fn custom_attributes(
    run: &Run,
    id: &str,
    resource_type: &str,
    attributes: &mut Map<String, Value>,
) {
    if !crate::provider::custom::is_custom_type(resource_type) {
        return;
    }
    let data = crate::provider::custom::unmasked_data(&run.stack, id);
    if let Some(data) = &data {
        for (k, v) in data {
            attributes.insert(k.clone(), v.clone());
        }
    }
    run.resolution.redactor.custom_answered(id, data.as_ref());
}

/// Declares the credentials among a provider's answer (`Provider::secret_attributes`) NoEcho
/// for this run: the record stores `***` for them, and for every position of a reader they
/// fill, while this run's readers are sent the value. An answer without them (an update) keeps
/// what the record declared.
fn secret_attributes(
    run: &Run,
    id: &str,
    provider: &dyn crate::provider::Provider,
    resource_type: &str,
    attributes: &Map<String, Value>,
) {
    let (names, plaintexts): (Vec<String>, Vec<Value>) = provider
        .secret_attributes(resource_type)
        .iter()
        .filter_map(|name| Some(((*name).to_owned(), attributes.get(*name)?.clone())))
        .unzip();
    if !names.is_empty() {
        run.resolution
            .redactor
            .declare_no_echo(id, names, &plaintexts);
    }
}

/// The resolved properties of `id` against the records of `targets` as they are now. A
/// `Fn::GetAtt` of an attribute the resource's provider did not report is read from AWS (the
/// resource read back, the attribute added to its record) and the resolution retried; with
/// `--strict-getatt` it fails the resource instead.
async fn resolve_reading(
    run: &Run,
    id: &str,
    targets: &[String],
) -> Result<(Map<String, Value>, Snapshot), String> {
    let mut read: Vec<(String, String)> = Vec::new();
    loop {
        let records = run.book.records(targets).await;
        let snapshot = Snapshot::from_records(&run.registry, records.iter().map(|(k, v)| (k, v)));
        let e = match run.resolution.properties(&snapshot, id) {
            Ok(d) => return Ok((d, snapshot)),
            Err(e) => e,
        };
        let ResolveErrorKind::AttributeUnavailable {
            resource,
            attribute,
        } = &e.kind
        else {
            return Err(e.to_string());
        };
        let Some(record) = records
            .into_iter()
            .find(|(k, r)| k == resource && r.physical_id.is_some())
            .map(|(_, r)| r)
        else {
            return Err(e.to_string());
        };
        if run.strict_getatt() {
            return Err(format!(
                "{e}: the provider of {resource} did not report {attribute}, and \
                 --strict-getatt fails the resource instead of reading it from AWS"
            ));
        }
        let key = (resource.clone(), attribute.clone());
        if read.contains(&key) {
            return Err(format!(
                "{e}: neither its provider reported it nor reading {resource} back found it"
            ));
        }
        read_attribute(run, resource, record, attribute).await?;
        read.push(key);
    }
}

/// Reads `resource` back and, when AWS reports `attribute` (as an attribute, else as a
/// property at that dotted path), records it among the record's attributes.
async fn read_attribute(
    run: &Run,
    resource: &str,
    mut record: ResourceState,
    attribute: &str,
) -> Result<(), String> {
    let ctx = run.provider_context();
    let Some(value) = read_back(&run.registry, &ctx, resource, &record, attribute).await else {
        return Ok(());
    };
    crate::ui::info(format!(
        "  {resource}: {attribute} was not reported by its provider; read it from AWS"
    ));
    let mut attributes = record.attributes.take().unwrap_or_default();
    attributes.insert(attribute.to_owned(), value);
    record.attributes = Some(attributes);
    run.book.put(resource, Some(record)).await;
    Ok(())
}

/// `attribute` of the recorded resource `resource` as AWS reports it now: from the
/// provider's read-back of its attributes, else the property at that dotted path. `None`
/// when neither has it (or the record cannot be read back).
pub(super) async fn read_back(
    registry: &Registry,
    ctx: &ProviderContext<'_>,
    resource: &str,
    record: &ResourceState,
    attribute: &str,
) -> Option<Value> {
    let physical_id = record.physical_id.clone()?;
    let (_, provider) = super::lookup::record_provider(registry, record)?;
    let req = ResourceRequest {
        logical_id: resource,
        resource_type: &record.resource_type,
        properties: &record.properties,
        client_token: None,
    };
    let mut found = match provider.import(ctx, &req, &physical_id).await {
        Ok(made) => made.attributes.get(attribute).cloned(),
        Err(e) => {
            tracing::debug!("reading {resource} back for {attribute}: {e}");
            None
        }
    };
    if found.is_none() {
        if let Ok(Some(props)) = provider.read(ctx, &req, &physical_id).await {
            let mut at = Some(Value::Object(props));
            for part in attribute.split('.') {
                at = at.and_then(|v| v.get(part).cloned());
            }
            found = at;
        }
    }
    found
}

fn replace_reason(planned: &Planned) -> String {
    planned
        .change
        .property_diffs
        .iter()
        .find(|d| d.requires_replacement)
        .map(|d| format!("create-only property {} changed", d.path))
        .unwrap_or_else(|| "a replacement was planned".into())
}

/// Creates the resource and records it. `old` is the record it replaces, if any.
async fn create(
    run: &Run,
    id: &str,
    res: &crate::template::Resource,
    planned: &Planned,
    desired: Map<String, Value>,
    old: Option<&ResourceState>,
) -> Result<(), String> {
    create_replacing(run, id, res, planned, desired, old, old)
        .await
        .map_err(|f| f.message)
}

/// A create that failed: its message, and whether the service answered that the resource
/// already exists (for a replacement, usually a name the old resource still holds).
struct CreateFailed {
    message: String,
    taken: bool,
}

/// [`create`], where `previous` is the record the new resource replaces (also when the old
/// resource is retained rather than kept aside for deletion).
async fn create_replacing(
    run: &Run,
    id: &str,
    res: &crate::template::Resource,
    planned: &Planned,
    desired: Map<String, Value>,
    old: Option<&ResourceState>,
    previous: Option<&ResourceState>,
) -> Result<(), CreateFailed> {
    let plain = |message: String| CreateFailed {
        message,
        taken: false,
    };
    let provider = run.provider(&res.type_, planned.route).map_err(plain)?;
    let ctx = run.provider_context();
    if let Some(refusal) = run.tokens.refusal(id, &res.type_).await {
        return Err(plain(refusal));
    }
    let replacing = previous.and_then(|o| o.physical_id.as_deref());
    let token = run.tokens.token_for(id, replacing).await;
    let sent = sent_properties(run, planned.route, &res.type_, &desired);
    let req = ResourceRequest {
        logical_id: id,
        resource_type: &res.type_,
        properties: &sent,
        client_token: token.as_ref().map(|t| t.value.as_str()),
    };
    let made =
        match super::adopt::create_or_adopt(run, &*provider, &ctx, &req, token.as_ref(), previous)
            .await
        {
            Ok(made) => made,
            Err(e) => {
                // A refused create made nothing; a timed-out one may have: keep its token.
                if !matches!(e, crate::provider::ProviderError::Timeout { .. }) {
                    run.tokens.spend(id).await;
                }
                return Err(CreateFailed {
                    message: provider_message(&e, id, &res.type_),
                    taken: super::adopt::is_already_exists(&e),
                });
            }
        };
    let mut attributes = made.attributes;
    custom_attributes(run, id, &res.type_, &mut attributes);
    secret_attributes(run, id, &*provider, &res.type_, &attributes);
    let physical_id = made.physical_id.clone();
    let rec = new_record(
        res,
        planned.route,
        &planned.dependencies,
        made.physical_id,
        desired,
        attributes,
    );
    if let Some(old) = old {
        run.replaced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((id.to_owned(), old.clone()));
    }
    run.oplog.completed(id, &res.type_, &rec, previous, true);
    run.book.put(id, Some(rec)).await;
    super::capture::start(run, id, &res.type_, planned.route, &physical_id, &sent);
    Ok(())
}

async fn update(
    run: &Run,
    id: &str,
    res: &crate::template::Resource,
    planned: &Planned,
    desired: Map<String, Value>,
    old: ResourceState,
) -> Result<Action, String> {
    let Some(physical_id) = old.physical_id.clone() else {
        return Err("its state record has no physicalId; repair the record".into());
    };
    let provider = run.provider(&res.type_, planned.route)?;
    let ctx = run.provider_context();
    let sent = sent_properties(run, planned.route, &res.type_, &desired);
    let previous = sent_properties(run, planned.route, &res.type_, &old.properties);
    let req = ResourceRequest {
        logical_id: id,
        resource_type: &res.type_,
        properties: &sent,
        client_token: None,
    };
    match crate::provider::deadline::update(&*provider, &ctx, &req, &physical_id, &previous)
        .await
        .map_err(|e| provider_message(&e, id, &res.type_))?
    {
        UpdateOutcome::Updated(made) => {
            let mut rec = with_template_fields(old.clone(), res, &planned.dependencies);
            if !made.physical_id.is_empty() {
                rec.physical_id = Some(made.physical_id);
            }
            let needles = run.resolution.redactor.needles();
            let plain = |v: &Value| needles.redact_value(v) == *v;
            let mut attributes = moved_attributes_dropped(&res.type_, &old, &desired, &plain);
            secret_attributes(run, id, &*provider, &res.type_, &made.attributes);
            attributes.extend(made.attributes);
            custom_attributes(run, id, &res.type_, &mut attributes);
            rec.attributes = Some(attributes);
            rec.properties = desired;
            // The old baseline described the resource before this update: the capture
            // records the new one, unless a refusal an update does not clear stands.
            rec.observed_properties = None;
            let declared = run.resolution.template.parameters.keys().cloned().collect();
            let kept = super::capture::keeps_refusal(&old, &res.properties, &declared);
            rec.observed_baseline_refused = kept.as_ref().map(|_| true);
            rec.observed_baseline_refusal_reason = kept.clone();
            rec.provisioned_by = Some(provisioned_by(planned.route));
            let physical_id = rec.physical_id.clone().unwrap_or_default();
            run.oplog.completed(id, &res.type_, &rec, Some(&old), true);
            run.book.put(id, Some(rec)).await;
            if kept.is_none() {
                super::capture::start(run, id, &res.type_, planned.route, &physical_id, &sent);
            }
            Ok(Action::Updated)
        }
        UpdateOutcome::NeedsReplacement { reason } => {
            replace(run, id, res, planned, desired, old, &reason).await
        }
    }
}

/// The recorded attributes of `old` that still hold after its update to `desired`: one that
/// can move with the update ([`super::propagate::attribute_moves`]) and that the provider does
/// not report again is dropped (a reader then reads it back from AWS), except one named like a
/// property, which is that property's new value (unless `plain` refuses it: a secret or
/// NoEcho value never goes into a record).
fn moved_attributes_dropped(
    resource_type: &str,
    old: &ResourceState,
    desired: &Map<String, Value>,
    plain: &dyn Fn(&Value) -> bool,
) -> Map<String, Value> {
    let changed: Vec<String> = diff_properties(resource_type, desired, &old.properties, &[])
        .into_iter()
        .map(|d| d.path)
        .collect();
    let changed: Vec<&str> = changed.iter().map(String::as_str).collect();
    let mut attributes = old.attributes.clone().unwrap_or_default();
    attributes
        .retain(|name, _| !super::propagate::attribute_moves(resource_type, Some(name), &changed));
    for key in &changed {
        let named = old
            .attributes
            .as_ref()
            .is_some_and(|a| a.contains_key(*key));
        match desired.get(*key) {
            Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_)))
                if named && plain(v) =>
            {
                attributes.insert((*key).to_owned(), v.clone());
            }
            _ => {}
        }
    }
    attributes
}

/// Creates the new resource first; the old one is deleted after the walk (or retained). When
/// the new one cannot be created beside the old one because the old one holds its name,
/// `--replace` deletes the old one first ([`delete_first`]).
async fn replace(
    run: &Run,
    id: &str,
    res: &crate::template::Resource,
    planned: &Planned,
    desired: Map<String, Value>,
    old: ResourceState,
    why: &str,
) -> Result<Action, String> {
    let retain = retains_old(res, &old);
    if is_stateful(&old.resource_type) && !run.force_stateful && !retain {
        return Err(stateful_refusal(id, &old.resource_type, why));
    }
    // A move between routes deletes first, as upstream's flags do: the new resource usually
    // takes the old one's name.
    if let Some(flag) = recreate_flag(planned) {
        delete_first(
            run,
            id,
            res,
            planned,
            desired,
            &old,
            retain,
            flag,
            Some(flag),
        )
        .await?;
        return Ok(Action::Replaced);
    }
    let keep_aside = (!retain).then_some(&old);
    let first = create_replacing(
        run,
        id,
        res,
        planned,
        desired.clone(),
        keep_aside,
        Some(&old),
    )
    .await;
    match first {
        Ok(()) => {}
        Err(f) if f.taken && holds_same_name(&res.type_, &desired, &old) => {
            delete_first(
                run, id, res, planned, desired, &old, retain, &f.message, None,
            )
            .await?;
            return Ok(Action::Replaced);
        }
        Err(f) => return Err(f.message),
    }
    if retain {
        run.tokens.release(id).await;
    }
    Ok(if retain {
        Action::ReplacedRetained
    } else {
        Action::Replaced
    })
}

/// Whether the old resource holds the name the new one asks for: its physical id, or a
/// create-only / identifying string property, equals the desired value.
fn holds_same_name(resource_type: &str, desired: &Map<String, Value>, old: &ResourceState) -> bool {
    let Some(schema) = crate::provider::schema::schema_for(resource_type) else {
        // An unknown type: the service said the name is taken, and the old one is the
        // likeliest holder.
        return true;
    };
    let identifying = schema.primary_identifier.iter().map(String::as_str).chain(
        schema
            .create_only
            .iter()
            .filter(|p| p.is_top_level())
            .map(|p| p.top_level()),
    );
    identifying.into_iter().any(|key| {
        let Some(Value::String(want)) = desired.get(key) else {
            return false;
        };
        old.physical_id.as_deref() == Some(want.as_str())
            || old.properties.get(key).and_then(Value::as_str) == Some(want.as_str())
    })
}

/// The `--replace` fallback of a replacement whose new resource collided with the old one's
/// name: the old resource is deleted (its record dropped, since it is gone), then the new one
/// is created. The journal records the replacement with `oldDeletedBeforeCreate`, so a
/// rollback deletes the new one before it re-creates the old one. Without `--replace`, or
/// when `UpdateReplacePolicy: Retain` keeps the old resource, it fails saying why.
#[allow(clippy::too_many_arguments)]
async fn delete_first(
    run: &Run,
    id: &str,
    res: &crate::template::Resource,
    planned: &Planned,
    desired: Map<String, Value>,
    old: &ResourceState,
    retain: bool,
    collision: &str,
    recreating: Option<&str>,
) -> Result<(), String> {
    let pid = old.physical_id.as_deref().unwrap_or("no physical id");
    let what = &old.resource_type;
    if let Some(flag) = recreating {
        if retain {
            return Err(format!(
                "{flag}: UpdateReplacePolicy: Retain keeps the old {what} ({pid}), so it is not \
                 deleted and created again; remove the policy or the flag"
            ));
        }
    } else if !run.replace_first() {
        return Err(format!(
            "{collision} — the replacement cannot be created beside the old {what} ({pid}), \
             which holds its name; pass --replace to delete the old one first and create it \
             again, or give the resource a new name"
        ));
    }
    if retain && recreating.is_none() {
        return Err(format!(
            "{collision} — UpdateReplacePolicy: Retain keeps the old {what} ({pid}), which holds \
             the new one's name, so --replace does not delete it first; give the resource a new \
             name, or remove the policy"
        ));
    }
    let flag = recreating.unwrap_or("--replace");
    crate::ui::info(format!(
        "  {id} {what}: {flag}: deleting the old resource {pid} first (it holds the new \
         one's name)"
    ));
    run.oplog.deleted_first(id);
    let ctx = run.provider_context();
    let how = run.nested.delete_rules().on_replace();
    let (_, deleted) = super::delete::delete_recorded(&run.registry, &ctx, &how, id, old).await;
    if let Err(e) = deleted {
        return Err(format!(
            "{collision} — --replace could not delete the old {what} ({pid}) first: {e}"
        ));
    }
    // The old resource is gone: state must not name it any more.
    run.book.put(id, None).await;
    create_replacing(run, id, res, planned, desired, None, Some(old))
        .await
        .map_err(|f| {
            format!(
                "the old {what} ({pid}) was deleted ({flag}) but the new one could not be \
                 created: {}",
                f.message
            )
        })
}

/// What the provider is sent: `desired` without the properties `--allow-unsupported-properties`
/// accepts as not sent (SDK route only). The record keeps them, as the template says, so the
/// next plan compares the same.
fn sent_properties(
    run: &Run,
    route: Route,
    resource_type: &str,
    desired: &Map<String, Value>,
) -> Map<String, Value> {
    if route != Route::Sdk {
        return desired.clone();
    }
    let names: Vec<&str> = desired.keys().map(String::as_str).collect();
    let dropped = run.registry.dropped_by_allowance(resource_type, &names);
    let mut sent = desired.clone();
    for property in &dropped {
        sent.remove(property);
    }
    sent
}

/// The `--recreate-via-*` flag that asked for this replacement, if one did.
fn recreate_flag(planned: &Planned) -> Option<&'static str> {
    planned.change.reasons.iter().find_map(|r| match r {
        crate::plan::ChangeReason::Requested { flag }
            if flag == super::recreate::TO_CLOUD_CONTROL =>
        {
            Some(super::recreate::TO_CLOUD_CONTROL)
        }
        crate::plan::ChangeReason::Requested { flag } if flag == super::recreate::TO_SDK => {
            Some(super::recreate::TO_SDK)
        }
        _ => None,
    })
}

/// A provider error without the `LogicalId (Type): ` prefix its message starts with (the
/// line it is printed on names both already).
pub(super) fn provider_message(
    e: &crate::provider::ProviderError,
    logical_id: &str,
    resource_type: &str,
) -> String {
    let text = e.to_string();
    let prefix = format!("{logical_id} ({resource_type}): ");
    text.strip_prefix(&prefix)
        .map(str::to_owned)
        .unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_update_drops_or_renews_the_attributes_it_moves() {
        let mut old = ResourceState::new(
            "/p",
            "AWS::RDS::DBInstance",
            json!({"Endpoint": {"Port": 1}, "Name": "a", "Secret": "s1", "Size": 1})
                .as_object()
                .cloned()
                .unwrap(),
        );
        old.attributes = Some(
            json!({"Endpoint.Port": 1, "Name": "a", "Secret": "s1", "Arn": "arn:x"})
                .as_object()
                .cloned()
                .unwrap(),
        );
        let desired = json!({"Endpoint": {"Port": 2}, "Name": "b", "Secret": "s2", "Size": 1});
        let plain = |v: &Value| v != &json!("s2");
        let kept = moved_attributes_dropped(
            "AWS::RDS::DBInstance",
            &old,
            desired.as_object().unwrap(),
            &plain,
        );
        // The attribute of a changed property is its new value; one under a changed property,
        // and a secret's, are dropped (read back when a reader needs them); the rest stay.
        assert_eq!(
            kept,
            *json!({"Name": "b", "Arn": "arn:x"}).as_object().unwrap()
        );
    }
}
