//! The drift commands that write: `--accept`, `--revert` and `cdkd state refresh-observed`.
//!
//! Each takes the stack lock, loads the record with its ETag, re-reads AWS under the lock (the
//! report the user saw may be stale by now), changes the record and saves it with If-Match on
//! that ETag, so a writer that slipped in between makes the save fail instead of being
//! overwritten. Every save drops `skippedOutputs` when it changed something (state-schema:
//! commands that rebuild state outside a deploy drop it). Nothing here holds a template, so
//! secrets are kept out by position ([`baseline::redact`]): wherever the record holds `***`
//! or a `{{resolve:...}}` reference, the baseline keeps that spelling.
//!
//! - accept: for every drifted property, the baseline takes AWS's value, and so does
//!   `properties` where the record declares that key (so outputs and references read what
//!   AWS has); a resource AWS no longer has is left as it is, with the remedy printed.
//! - revert: every drifted resource is sent its recorded values through its provider's
//!   update, dependencies first, at most `concurrency` at once; a secret position keeps
//!   AWS's value (cdkd never sends a mask or an unresolved reference); the reverted resources'
//!   baselines are then read again. A deleted resource cannot be reverted by an update.
//! - refresh-observed: every readable resource's baseline is read again; a refused one
//!   (`observedBaselineRefused`) is left refused.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::Semaphore;

use super::{check_stack, read_record, unreadable, DriftEnv, Outcome, StackDrift};
use crate::engine::baseline::{self, is_secret_spelling};
use crate::provider::{ProviderContext, ResourceRequest, UpdateOutcome};
use crate::redact::Needles;
use crate::resolve::partition_for_region;
use crate::state::backend::{BackendError, S3Backend, SaveCondition};
use crate::state::{LockError, ResourceState, StackState};

/// A drift command that could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum DriftError {
    #[error(
        "{stack} ({region}): no state record; `cdkd state list` shows the stacks that have one"
    )]
    NoRecord { stack: String, region: String },
    #[error("{stack} ({region}): the state record cannot be read: {source}")]
    Load {
        stack: String,
        region: String,
        #[source]
        source: BackendError,
    },
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("{stack} ({region}): the state record could not be saved ({source}); nothing was recorded, re-run the command")]
    Save {
        stack: String,
        region: String,
        #[source]
        source: BackendError,
    },
}

/// What one write command did to one stack.
#[derive(Debug, Clone, Default)]
pub struct WriteReport {
    /// Resources whose record changed (accepted, reverted, refreshed).
    pub done: Vec<String>,
    /// (logical id, why) of resources left as they are.
    pub left: Vec<(String, String)>,
    /// (logical id, error) of resources the command failed on.
    pub failed: Vec<(String, String)>,
}

/// The loaded record and the ETag its save must match.
struct Locked {
    state: StackState,
    etag: String,
    from_legacy: bool,
}

async fn load(backend: &S3Backend, stack: &str, region: &str) -> Result<Locked, DriftError> {
    match backend.load(stack, region).await {
        Ok(Some(l)) => Ok(Locked {
            state: l.parsed.state,
            etag: l.etag,
            from_legacy: l.parsed.from_legacy_key,
        }),
        Ok(None) => Err(DriftError::NoRecord {
            stack: stack.into(),
            region: region.into(),
        }),
        Err(source) => Err(DriftError::Load {
            stack: stack.into(),
            region: region.into(),
            source,
        }),
    }
}

async fn save(backend: &S3Backend, locked: &mut Locked) -> Result<(), DriftError> {
    locked.state.skipped_outputs = None;
    let (stack, region) = (locked.state.stack_name.clone(), locked.state.region.clone());
    backend
        .save(
            &stack,
            &region,
            &locked.state,
            SaveCondition::IfMatch(&locked.etag),
            locked.from_legacy,
        )
        .await
        .map(|_| ())
        .map_err(|source| DriftError::Save {
            stack,
            region,
            source,
        })
}

/// Runs `work` on the stack's record under its lock and saves the record when `work` says
/// it changed.
async fn under_lock<F, Fut>(
    backend: &S3Backend,
    stack: &str,
    region: &str,
    operation: &str,
    work: F,
) -> Result<WriteReport, DriftError>
where
    F: FnOnce(StackState) -> Fut,
    Fut: std::future::Future<Output = (StackState, WriteReport)>,
{
    let lock = backend.lock(stack, region, operation).await?;
    let result = async {
        let mut locked = load(backend, stack, region).await?;
        let (state, report) = work(locked.state.clone()).await;
        if !report.done.is_empty() {
            locked.state = state;
            save(backend, &mut locked).await?;
        }
        Ok(report)
    }
    .await;
    lock.release_and_warn().await;
    result
}

/// `state refresh-observed`: every readable resource's baseline read again.
pub async fn refresh_observed(
    env: &DriftEnv,
    backend: &S3Backend,
    stack: &str,
    region: &str,
) -> Result<WriteReport, DriftError> {
    under_lock(
        backend,
        stack,
        region,
        "state-refresh-observed",
        |mut state| async move {
            let mut report = WriteReport::default();
            let mut wanted = Vec::new();
            for (id, rec) in &state.resources {
                if let Some(why) = unreadable(&rec.resource_type) {
                    report.left.push((id.clone(), why.to_owned()));
                } else if rec.baseline_refused() {
                    report.left.push((id.clone(), refused_note(rec)));
                } else {
                    wanted.push(id.clone());
                }
            }
            let reads = read_all(env, &state, &wanted).await;
            for (id, read) in reads {
                let Some(rec) = state.resources.get_mut(&id) else {
                    continue;
                };
                match read {
                    Ok(Some(live)) => {
                        rec.observed_properties =
                            Some(baseline::redact(&rec.properties, live, &Needles::default()));
                        report.done.push(id);
                    }
                    Ok(None) => report.left.push((
                        id,
                        "AWS no longer has it: its baseline was kept (`cdkd drift` reports it)"
                            .into(),
                    )),
                    Err(e) => report.failed.push((id, e)),
                }
            }
            (state, report)
        },
    )
    .await
}

fn refused_note(rec: &ResourceState) -> String {
    let reason = rec
        .observed_baseline_refusal_reason
        .as_ref()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    format!(
        "its baseline was refused at import{reason}: it is not read back; deploy a change to \
         the resource to record one"
    )
}

/// Reads `ids` of `state` at once (bounded by the concurrency), in no particular order.
async fn read_all(
    env: &DriftEnv,
    state: &StackState,
    ids: &[String],
) -> Vec<(String, Result<Option<Map<String, Value>>, String>)> {
    let permits = Arc::new(Semaphore::new(env.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for id in ids {
        let Some(rec) = state.resources.get(id).cloned() else {
            continue;
        };
        let (env, id, permits) = (env.clone(), id.clone(), permits.clone());
        let (stack, region) = (state.stack_name.clone(), state.region.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.ok();
            let read = read_record(&env, &stack, &region, &id, &rec).await;
            (id, read)
        });
    }
    let mut out = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        if let Ok(r) = joined {
            out.push(r);
        }
    }
    out
}

/// `drift --accept`: state takes AWS's values for every drifted property.
pub async fn accept(
    env: &DriftEnv,
    backend: &S3Backend,
    stack: &str,
    region: &str,
) -> Result<WriteReport, DriftError> {
    under_lock(
        backend,
        stack,
        region,
        "drift-accept",
        |mut state| async move {
            let found = check_stack(env, &state, None).await;
            let report = accept_found(&mut state, &found);
            (state, report)
        },
    )
    .await
}

/// Applies what `found` reports to `state` (pure: the accept's record change).
pub fn accept_found(state: &mut StackState, found: &StackDrift) -> WriteReport {
    let mut report = WriteReport::default();
    for r in &found.resources {
        match &r.outcome {
            Outcome::Drifted(drifts) => {
                let (Some(rec), Some(live)) = (state.resources.get_mut(&r.logical_id), &r.live)
                else {
                    continue;
                };
                let keys: HashSet<&str> = drifts.iter().map(|d| top_level(&d.path)).collect();
                accept_keys(rec, live, &keys);
                report.done.push(r.logical_id.clone());
            }
            Outcome::Deleted => report.left.push((
                r.logical_id.clone(),
                format!(
                    "AWS no longer has it, so there is nothing to accept: `cdkd deploy` does not \
                     re-create a recorded resource; drop its record with `cdkd state orphan {} \
                     --resource {}` and deploy to create it again",
                    found.stack, r.logical_id
                ),
            )),
            _ => {}
        }
    }
    report
}

/// The top-level property a drift path is under (`Config.Timeout` and `Rules[0]` are under
/// `Config` and `Rules`).
fn top_level(path: &str) -> &str {
    let end = path.find(['.', '[']).unwrap_or(path.len());
    &path[..end]
}

fn accept_keys(rec: &mut ResourceState, live: &Map<String, Value>, keys: &HashSet<&str>) {
    let taken: Map<String, Value> = live
        .iter()
        .filter(|(k, _)| keys.contains(k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let none = Needles::default();
    // Secret positions keep the record's spelling (the mask, the reference).
    let spelled_observed = baseline::redact(rec.drift_baseline(), taken.clone(), &none);
    let spelled_properties = baseline::redact(&rec.properties, taken, &none);
    let mut observed = rec.drift_baseline().clone();
    for key in keys {
        match spelled_observed.get(*key) {
            Some(v) => observed.insert((*key).to_owned(), v.clone()),
            None => observed.remove(*key),
        };
        if rec.properties.contains_key(*key) {
            match spelled_properties.get(*key) {
                Some(v) => rec.properties.insert((*key).to_owned(), v.clone()),
                None => rec.properties.remove(*key),
            };
        }
    }
    rec.observed_properties = Some(observed);
}

/// `drift --revert`: AWS takes the recorded values of every drifted resource.
pub async fn revert(
    env: &DriftEnv,
    backend: &S3Backend,
    stack: &str,
    region: &str,
) -> Result<WriteReport, DriftError> {
    under_lock(
        backend,
        stack,
        region,
        "drift-revert",
        |mut state| async move {
            let found = check_stack(env, &state, None).await;
            let mut report = WriteReport::default();
            let mut plans: HashMap<String, (Map<String, Value>, Map<String, Value>)> =
                HashMap::new();
            for r in &found.resources {
                match &r.outcome {
                    Outcome::Drifted(drifts) => {
                        let (Some(rec), Some(live)) = (state.resources.get(&r.logical_id), &r.live)
                        else {
                            continue;
                        };
                        let keys: HashSet<&str> =
                            drifts.iter().map(|d| top_level(&d.path)).collect();
                        match revert_bags(rec, live, &keys) {
                            Ok(bags) => {
                                plans.insert(r.logical_id.clone(), bags);
                            }
                            Err(why) => report.failed.push((r.logical_id.clone(), why)),
                        }
                    }
                    Outcome::Deleted => report.failed.push((
                        r.logical_id.clone(),
                        format!(
                        "AWS no longer has it, and an update cannot re-create it: drop its record \
                         with `cdkd state orphan {stack} --resource {}` and deploy to create it \
                         again",
                        r.logical_id
                    ),
                    )),
                    _ => {}
                }
            }
            for level in levels(&state, &plans) {
                let results = update_level(env, &state, &level, &plans).await;
                for (id, result) in results {
                    match result {
                        Ok(()) => report.done.push(id),
                        Err(e) => report.failed.push((id, e)),
                    }
                }
            }
            // The reverted resources' baselines, read again.
            let reads = read_all(env, &state, &report.done).await;
            for (id, read) in reads {
                if let (Some(rec), Ok(Some(live))) = (state.resources.get_mut(&id), read) {
                    rec.observed_properties =
                        Some(baseline::redact(&rec.properties, live, &Needles::default()));
                }
            }
            (state, report)
        },
    )
    .await
}

/// What a revert sends for one resource: (desired, previous). `desired` is the recorded
/// properties, plus the baseline's value of each drifted key the template did not declare;
/// `previous` is the same with AWS's values at the drifted keys, so the provider changes
/// exactly those. A secret position takes AWS's value on both sides; one AWS does not report
/// refuses the resource (cdkd would have to send the mask).
pub fn revert_bags(
    rec: &ResourceState,
    live: &Map<String, Value>,
    keys: &HashSet<&str>,
) -> Result<(Map<String, Value>, Map<String, Value>), String> {
    let mut desired = rec.properties.clone();
    for key in keys {
        if !desired.contains_key(*key) {
            if let Some(v) = rec.drift_baseline().get(*key) {
                desired.insert((*key).to_owned(), v.clone());
            }
        }
    }
    let mut desired = Value::Object(desired);
    let live_value = Value::Object(live.clone());
    if !with_live_secrets(&mut desired, Some(&live_value)) {
        return Err(
            "a secret position (*** or a {{resolve:...}} reference) has no value in AWS to keep, \
             and cdkd never sends the mask: deploy the app to restore it"
                .into(),
        );
    }
    let Value::Object(desired) = desired else {
        return Err("internal: the recorded properties are not an object".into());
    };
    let mut previous = desired.clone();
    for key in keys {
        match live.get(*key) {
            Some(v) => previous.insert((*key).to_owned(), v.clone()),
            None => previous.remove(*key),
        };
    }
    Ok((desired, previous))
}

/// Replaces every secret spelling in `v` by AWS's value at the same position; false when AWS
/// has none there.
fn with_live_secrets(v: &mut Value, live: Option<&Value>) -> bool {
    if is_secret_spelling(v) {
        return match live {
            Some(l) if !l.is_null() => {
                *v = l.clone();
                true
            }
            _ => false,
        };
    }
    match v {
        Value::Object(m) => m
            .iter_mut()
            .all(|(k, x)| with_live_secrets(x, live.and_then(|l| l.get(k)))),
        Value::Array(items) => items
            .iter_mut()
            .enumerate()
            .all(|(i, x)| with_live_secrets(x, live.and_then(|l| l.get(i)))),
        _ => true,
    }
}

/// The resources of `plans` in dependency order, as levels: a level's resources depend only
/// on resources of earlier levels (through the recorded `dependencies`, transitively).
fn levels<T>(state: &StackState, plans: &HashMap<String, T>) -> Vec<Vec<String>> {
    fn depth(
        id: &str,
        state: &StackState,
        memo: &mut HashMap<String, usize>,
        seen: &mut HashSet<String>,
    ) -> usize {
        if let Some(d) = memo.get(id) {
            return *d;
        }
        if !seen.insert(id.to_owned()) {
            return 0; // a cycle in a damaged record: no order to keep
        }
        let deps = state
            .resources
            .get(id)
            .and_then(|r| r.dependencies.clone())
            .unwrap_or_default();
        let d = deps
            .iter()
            .filter(|x| state.resources.contains_key(*x))
            .map(|x| depth(x, state, memo, seen) + 1)
            .max()
            .unwrap_or(0);
        memo.insert(id.to_owned(), d);
        d
    }
    let mut memo = HashMap::new();
    let mut by_depth: Vec<Vec<String>> = Vec::new();
    for id in state.resources.keys().filter(|id| plans.contains_key(*id)) {
        let d = depth(id, state, &mut memo, &mut HashSet::new());
        if by_depth.len() <= d {
            by_depth.resize(d + 1, Vec::new());
        }
        by_depth[d].push(id.clone());
    }
    by_depth.into_iter().filter(|l| !l.is_empty()).collect()
}

async fn update_level(
    env: &DriftEnv,
    state: &StackState,
    level: &[String],
    plans: &HashMap<String, (Map<String, Value>, Map<String, Value>)>,
) -> Vec<(String, Result<(), String>)> {
    let permits = Arc::new(Semaphore::new(env.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for id in level {
        let (Some(rec), Some((desired, previous))) = (state.resources.get(id), plans.get(id))
        else {
            continue;
        };
        let (rec, desired, previous) = (rec.clone(), desired.clone(), previous.clone());
        let (env, id, permits) = (env.clone(), id.clone(), permits.clone());
        let (stack, region) = (state.stack_name.clone(), state.region.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.ok();
            let result = update_one(&env, &stack, &region, &id, &rec, &desired, &previous).await;
            (id, result)
        });
    }
    let mut out = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        if let Ok(r) = joined {
            out.push(r);
        }
    }
    out
}

async fn update_one(
    env: &DriftEnv,
    stack: &str,
    region: &str,
    id: &str,
    rec: &ResourceState,
    desired: &Map<String, Value>,
    previous: &Map<String, Value>,
) -> Result<(), String> {
    let physical_id = rec
        .physical_id
        .as_deref()
        .ok_or("its state record has no physicalId")?;
    let (_, provider) = crate::engine::deploy::record_provider(&env.registry, rec)
        .ok_or_else(|| format!("no provider updates {}", rec.resource_type))?;
    let partition = partition_for_region(region).name;
    let ctx = ProviderContext {
        clients: &env.clients,
        stack_name: stack,
        region,
        account_id: &env.account_id,
        partition,
        no_wait: false,
    };
    let req = ResourceRequest {
        logical_id: id,
        resource_type: &rec.resource_type,
        properties: desired,
        client_token: None,
    };
    match provider.update(&ctx, &req, physical_id, previous).await {
        Ok(UpdateOutcome::Updated(_)) => Ok(()),
        Ok(UpdateOutcome::NeedsReplacement { reason }) => Err(format!(
            "the change cannot be made in place ({reason}); `cdkd drift --revert` never \
             replaces a resource: deploy the app to replace it"
        )),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::baseline::compare::PropertyDrift;
    use crate::engine::drift::ResourceDrift;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn accept_takes_aws_values_into_the_baseline_and_the_declared_properties() {
        let mut rec = ResourceState::new(
            "q",
            "AWS::SQS::Queue",
            map(json!({"VisibilityTimeout": 30, "Secret": "***"})),
        );
        rec.observed_properties = Some(map(
            json!({"VisibilityTimeout": 30, "MessageRetentionPeriod": 345600, "Secret": "***"}),
        ));
        let mut state = StackState::new("S", "us-east-1");
        state.resources.insert("Q".into(), rec);
        let live =
            map(json!({"VisibilityTimeout": 99, "MessageRetentionPeriod": 60, "Secret": "plain"}));
        let found = StackDrift {
            stack: "S".into(),
            region: "us-east-1".into(),
            resources: vec![ResourceDrift {
                logical_id: "Q".into(),
                resource_type: "AWS::SQS::Queue".into(),
                outcome: Outcome::Drifted(vec![
                    PropertyDrift {
                        path: "VisibilityTimeout".into(),
                        expected: json!(30),
                        actual: json!(99),
                    },
                    PropertyDrift {
                        path: "MessageRetentionPeriod".into(),
                        expected: json!(345600),
                        actual: json!(60),
                    },
                ]),
                masked: vec!["Secret".into()],
                live: Some(live),
            }],
        };
        let report = accept_found(&mut state, &found);
        assert_eq!(report.done, ["Q"]);
        let rec = &state.resources["Q"];
        assert_eq!(
            rec.properties,
            map(json!({"VisibilityTimeout": 99, "Secret": "***"}))
        );
        assert_eq!(
            rec.observed_properties,
            Some(map(
                json!({"VisibilityTimeout": 99, "MessageRetentionPeriod": 60, "Secret": "***"})
            ))
        );
    }

    #[test]
    fn revert_sends_recorded_values_and_keeps_aws_values_at_secret_positions() {
        let mut rec = ResourceState::new(
            "f",
            "AWS::Lambda::Function",
            map(
                json!({"Timeout": 3, "Environment": {"Variables": {"TOKEN": "{{resolve:secretsmanager:s}}"}}}),
            ),
        );
        rec.observed_properties = Some(map(json!({"Timeout": 3, "MemorySize": 128})));
        let live = map(
            json!({"Timeout": 9, "MemorySize": 512, "Environment": {"Variables": {"TOKEN": "live-secret"}}}),
        );
        let keys: HashSet<&str> = ["Timeout", "MemorySize"].into();
        let (desired, previous) = revert_bags(&rec, &live, &keys).unwrap_or_default();
        assert_eq!(desired["Timeout"], json!(3));
        assert_eq!(desired["MemorySize"], json!(128));
        assert_eq!(
            desired["Environment"]["Variables"]["TOKEN"],
            json!("live-secret")
        );
        assert_eq!(previous["Timeout"], json!(9));
        assert_eq!(previous["MemorySize"], json!(512));
        // No AWS value behind a mask: refused rather than sending it.
        let bare = map(json!({"Timeout": 9}));
        assert!(revert_bags(&rec, &bare, &keys).is_err());
    }

    #[test]
    fn revert_levels_follow_the_recorded_dependencies() {
        let mut state = StackState::new("S", "us-east-1");
        for (id, deps) in [
            ("Topic", vec![]),
            ("Sub", vec!["Topic"]),
            ("Other", vec![]),
            ("Top", vec!["Sub"]),
        ] {
            let mut r = ResourceState::new(id, "T", Map::new());
            r.dependencies = Some(deps.into_iter().map(String::from).collect());
            state.resources.insert(id.into(), r);
        }
        let plans: HashMap<String, ()> = ["Top", "Topic", "Other"]
            .iter()
            .map(|s| (s.to_string(), ()))
            .collect();
        assert_eq!(
            levels(&state, &plans),
            vec![
                vec!["Topic".to_string(), "Other".into()],
                vec!["Top".into()]
            ]
        );
        assert_eq!(top_level("Config.Timeout"), "Config");
        assert_eq!(top_level("Rules[0].X"), "Rules");
    }
}
