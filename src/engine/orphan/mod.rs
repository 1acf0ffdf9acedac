//! Orphaning resources: removing them from a stack's state while they stay in AWS, and
//! rewriting every reference the surviving record holds to them (`rewrite`).
//!
//! Shared by `cdkd orphan` (construct paths, through `paths`) and `cdkd state orphan
//! --resource` (logical ids, no app). Under the stack lock (none for `--dry-run`, which writes
//! nothing): the stored record is read as JSON, the orphaned rows are cut out as stored (a
//! damaged row may be orphaned: that is one of the ways out of its refusal), and what remains
//! must read strictly, so a damaged record is refused only for what would survive the save.
//! A reference that cannot be resolved is refused unless `force`, which keeps it as it was.
//! Before the save the create-token ledger's nonce is rotated and the orphans' sent entries
//! dropped, so the stack's next create of the same logical id makes a new resource. The save
//! stamps version 11, drops the output-resolution record (`skippedOutputs`), and is guarded
//! by the ETag read; when it rewrote an output, the exports index is updated after it.
//!
//! The app's template is not changed: a resource it still declares is created anew by the next
//! deploy (and its readers pointed at the new one); remove it from the app, or import it back.

pub mod paths;
pub mod rewrite;

use indexmap::IndexMap;
use serde_json::Value;

use crate::aws::AwsError;
use crate::state::backend::{BackendError, S3Backend, SaveCondition};
use crate::state::exports::ExportIndexStore;
use crate::state::ledger::{LedgerStore, LoadedLedger};
use crate::state::{parse_legacy_state, parse_state, parse_state_lossy, LockError, StateError};
use rewrite::{Findings, Orphans};
pub use rewrite::{Rewrite, Unresolved};

/// What to orphan.
pub struct OrphanRequest<'a> {
    pub stack: &'a str,
    pub region: &'a str,
    pub logical_ids: &'a [String],
    /// Proceed past unresolvable references, keeping them as they are.
    pub force: bool,
    /// Report only; take no lock and write nothing.
    pub dry_run: bool,
}

/// What a run did (or, under `dry_run`, would do).
#[derive(Debug, Default)]
pub struct OrphanOutcome {
    pub rewrites: Vec<Rewrite>,
    pub unresolved: Vec<Unresolved>,
    /// The record was saved.
    pub written: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum OrphanError {
    #[error("no state record for stack {stack} in {region}; `cdkd state list` shows the stacks that have one")]
    NoRecord { stack: String, region: String },
    #[error("State for stack {stack} ({region}) has no resource {logical_id}; `cdkd state resources {stack}` lists them")]
    NoSuchResource {
        stack: String,
        region: String,
        logical_id: String,
    },
    #[error("{source} Nothing was orphaned. Other ways out: drop the whole record, leaving every AWS resource standing, with `cdkd state orphan {stack} --stack-region {region}`; or orphan the damaged resource too, with `cdkd state orphan {stack} --stack-region {region} --resource <logicalId>`")]
    Damaged {
        source: StateError,
        stack: String,
        region: String,
    },
    #[error("{stack} ({region}): {count} reference(s) to the orphaned resources cannot be resolved: {list}; nothing was orphaned. Re-run with --force to orphan anyway, keeping those references as they are")]
    Unresolvable {
        stack: String,
        region: String,
        count: usize,
        list: String,
    },
    #[error("{stack} ({region}): the create-token ledger cannot be read ({reason}), so its nonce cannot be rotated before the orphan; nothing was orphaned. Inspect or delete create-tokens.json beside the state record")]
    LedgerUnreadable {
        stack: String,
        region: String,
        reason: String,
    },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Aws(#[from] AwsError),
}

/// Orphans `request.logical_ids` from the stack's record, under its lock unless dry-run.
pub async fn orphan_resources(
    backend: &S3Backend,
    request: &OrphanRequest<'_>,
) -> Result<OrphanOutcome, OrphanError> {
    if request.dry_run {
        return orphan_locked(backend, request).await;
    }
    let lock = backend
        .lock(request.stack, request.region, "orphan")
        .await?;
    let result = orphan_locked(backend, request).await;
    lock.release_and_warn().await;
    result
}

async fn orphan_locked(
    backend: &S3Backend,
    request: &OrphanRequest<'_>,
) -> Result<OrphanOutcome, OrphanError> {
    let (stack, region) = (request.stack, request.region);
    let regional = backend.keys().state(stack, region);
    let legacy_key = backend.keys().legacy_state(stack);
    let (bytes, etag, legacy) = match backend.get_object(&regional).await? {
        Some((b, e)) => (b, e, false),
        None => match backend.get_object(&legacy_key).await? {
            Some((b, e)) => (b, e, true),
            None => {
                return Err(OrphanError::NoRecord {
                    stack: stack.into(),
                    region: region.into(),
                })
            }
        },
    };
    // Invalid JSON, a non-object body and an unsupported version are refused as a read would.
    parse_state_lossy(&bytes, stack, region)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut root: Value = serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(&text))
        .map_err(|e| StateError::NotJson {
            stack: stack.into(),
            region: region.into(),
            detail: e.to_string(),
        })?;

    // Cut the orphaned rows out as stored.
    let mut orphaned: IndexMap<String, Value> = IndexMap::new();
    let damaged = |source: StateError| OrphanError::Damaged {
        source,
        stack: stack.into(),
        region: region.into(),
    };
    match root.get_mut("resources") {
        Some(Value::Object(rows)) => {
            for id in request.logical_ids {
                if orphaned.contains_key(id) {
                    continue;
                }
                let row = rows
                    .shift_remove(id)
                    .ok_or_else(|| OrphanError::NoSuchResource {
                        stack: stack.into(),
                        region: region.into(),
                        logical_id: id.clone(),
                    })?;
                orphaned.insert(id.clone(), row);
            }
        }
        other => {
            return Err(damaged(StateError::ResourcesMalformed {
                stack: stack.into(),
                region: region.into(),
                found: other.as_deref().map(crate::state::ValueKind::of),
            }))
        }
    }

    // What survives must read strictly: damage there is refused, scoped to it.
    let rest = serde_json::to_vec(&root).map_err(|e| StateError::NotJson {
        stack: stack.into(),
        region: region.into(),
        detail: e.to_string(),
    })?;
    let parsed = if legacy {
        parse_legacy_state(&rest, stack, region)
            .map_err(damaged)?
            .ok_or_else(|| OrphanError::NoRecord {
                stack: stack.into(),
                region: region.into(),
            })?
    } else {
        parse_state(&rest, stack, region).map_err(damaged)?
    };
    for w in &parsed.warnings {
        crate::ui::warn(w);
    }
    let mut state = parsed.state;

    let orphans = Orphans { rows: &orphaned };
    let mut findings = Findings::default();
    for (id, rec) in state.resources.iter_mut() {
        let mut props = Value::Object(std::mem::take(&mut rec.properties));
        findings.rewrite_value(&orphans, id, "properties", &mut props);
        if let Value::Object(m) = props {
            rec.properties = m;
        }
        if let Some(attrs) = rec.attributes.take() {
            let mut v = Value::Object(attrs);
            findings.rewrite_value(&orphans, id, "attributes", &mut v);
            if let Value::Object(m) = v {
                rec.attributes = Some(m);
            }
        }
        if let Some(deps) = rec.dependencies.as_mut() {
            findings.drop_dependencies(&orphans, id, deps);
        }
    }
    if let Some(outputs) = state.outputs.take() {
        let mut v = Value::Object(outputs);
        findings.rewrite_value(&orphans, "<outputs>", "outputs", &mut v);
        if let Value::Object(m) = v {
            state.outputs = Some(m);
        }
    }
    let outcome = OrphanOutcome {
        rewrites: findings.rewrites,
        unresolved: findings.unresolved,
        written: false,
    };
    if !outcome.unresolved.is_empty() && !request.force {
        return Err(OrphanError::Unresolvable {
            stack: stack.into(),
            region: region.into(),
            count: outcome.unresolved.len(),
            list: describe_unresolved(&outcome.unresolved),
        });
    }
    if request.dry_run {
        return Ok(outcome);
    }

    rotate_ledger(backend, stack, region, request.logical_ids).await?;
    state.skipped_outputs = None;
    state.last_modified = Some(now_ms());
    backend
        .save(stack, region, &state, SaveCondition::IfMatch(&etag), legacy)
        .await?;
    // A rewritten output may be what an export names: the exports index follows the save,
    // as after a deploy (its own failures are warned, not the orphan's).
    if outcome.rewrites.iter().any(|r| r.owner == "<outputs>") {
        ExportIndexStore::new(
            backend.client().clone(),
            backend.bucket(),
            backend.keys().clone(),
        )
        .update_stack(region, stack, &state)
        .await;
    }
    Ok(OrphanOutcome {
        written: true,
        ..outcome
    })
}

/// `B.properties.Value -> A.Arn (why)`, joined.
pub fn describe_unresolved(list: &[Unresolved]) -> String {
    list.iter()
        .map(|u| {
            let what = if u.attribute == "Ref" {
                format!("Ref {}", u.target)
            } else {
                format!("{}.{}", u.target, u.attribute)
            };
            format!("{}.{} reads {what} ({})", u.owner, u.path, u.reason)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A new nonce and no sent entry for the orphans, so a later create makes a new resource.
async fn rotate_ledger(
    backend: &S3Backend,
    stack: &str,
    region: &str,
    ids: &[String],
) -> Result<(), OrphanError> {
    let store = LedgerStore::new(
        backend.client().clone(),
        backend.bucket(),
        backend.keys().clone(),
    );
    let ledger_err = |e: crate::state::ledger::LedgerError| match e {
        crate::state::ledger::LedgerError::Aws(a) => OrphanError::Aws(a),
    };
    match store.load(stack, region).await.map_err(ledger_err)? {
        LoadedLedger::Missing => Ok(()),
        LoadedLedger::Unreadable(reason) => Err(OrphanError::LedgerUnreadable {
            stack: stack.into(),
            region: region.into(),
            reason,
        }),
        LoadedLedger::Found(mut ledger) => {
            ledger.rotate();
            for id in ids {
                ledger.sent.remove(id);
            }
            store.save(stack, region, &ledger).await.map_err(ledger_err)
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
