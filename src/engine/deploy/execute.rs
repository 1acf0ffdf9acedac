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
    let records = run.book.records(&targets).await;
    let snapshot = Snapshot::from_records(&run.registry, records.iter().map(|(k, v)| (k, v)));
    let desired = match run.resolution.properties(&snapshot, &id) {
        Ok(d) => d,
        Err(e) => return fail(done, e.to_string()),
    };
    // Dynamic references substituted for AWS; secret and NoEcho positions kept for state.
    let secured = match run.resolution.secure_fetched(&id, desired).await {
        Ok(s) => s,
        Err(e) => return fail(done, run.resolution.redactor.mask_text(&e.to_string())),
    };
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
            let diffs = diff_properties(&resource_type, &compared, &r.properties, &[]);
            match diffs.iter().find(|d| d.requires_replacement) {
                Some(d) => Decision::Replace(format!("create-only property {} changed", d.path)),
                None if diffs.is_empty() && !super::noecho::readback_changed(&planned.change) => {
                    Decision::Unchanged
                }
                None => Decision::Update,
            }
        }
    };

    run.resolution.remember(&id, &secured);
    let outcome = match (decision, record) {
        (Decision::Unchanged, _) => return Ok(done.with(Action::Unchanged, started)),
        (_, old) if super::nested::is_nested(&resource_type) => {
            super::nested::provision(&run, &id, &res, &planned, desired, old).await
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
        Ok(action) => Ok(done.with(action, started)),
        Err(message) => {
            let message = run.resolution.redactor.mask_text(&message);
            run.oplog
                .failed(&id, &resource_type, before, attempted, &message);
            fail(done, message)
        }
    }
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
    create_replacing(run, id, res, planned, desired, old, old).await
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
) -> Result<(), String> {
    let provider = run.provider(&res.type_, planned.route)?;
    let ctx = run.provider_context();
    if let Some(refusal) = run.tokens.refusal(id, &res.type_).await {
        return Err(refusal);
    }
    let replacing = previous.and_then(|o| o.physical_id.as_deref());
    let token = run.tokens.token_for(id, replacing).await;
    let req = ResourceRequest {
        logical_id: id,
        resource_type: &res.type_,
        properties: &desired,
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
                return Err(provider_message(&e, id, &res.type_));
            }
        };
    let rec = new_record(
        res,
        planned.route,
        &planned.dependencies,
        made.physical_id,
        desired,
        made.attributes,
    );
    if let Some(old) = old {
        run.replaced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((id.to_owned(), old.clone()));
    }
    run.oplog.completed(id, &res.type_, &rec, previous, true);
    run.book.put(id, Some(rec)).await;
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
    let req = ResourceRequest {
        logical_id: id,
        resource_type: &res.type_,
        properties: &desired,
        client_token: None,
    };
    match provider
        .update(&ctx, &req, &physical_id, &old.properties)
        .await
        .map_err(|e| provider_message(&e, id, &res.type_))?
    {
        UpdateOutcome::Updated(made) => {
            let mut rec = with_template_fields(old.clone(), res, &planned.dependencies);
            if !made.physical_id.is_empty() {
                rec.physical_id = Some(made.physical_id);
            }
            let mut attributes = old.attributes.clone().unwrap_or_default();
            attributes.extend(made.attributes);
            rec.attributes = Some(attributes);
            rec.properties = desired;
            rec.observed_properties = None;
            rec.provisioned_by = Some(provisioned_by(planned.route));
            run.oplog.completed(id, &res.type_, &rec, Some(&old), true);
            run.book.put(id, Some(rec)).await;
            Ok(Action::Updated)
        }
        UpdateOutcome::NeedsReplacement { reason } => {
            replace(run, id, res, planned, desired, old, &reason).await
        }
    }
}

/// Creates the new resource first; the old one is deleted after the walk (or retained).
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
    let keep_aside = (!retain).then_some(&old);
    create_replacing(run, id, res, planned, desired, keep_aside, Some(&old)).await?;
    if retain {
        run.tokens.release(id).await;
    }
    Ok(if retain {
        Action::ReplacedRetained
    } else {
        Action::Replaced
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
