//! `cdkd drift`: each recorded resource read back from AWS and compared with its baseline
//! (`observedProperties`, else the recorded `properties`), by the rules of
//! [`crate::engine::baseline::compare`]. State-driven: no app, no synthesis.
//!
//! [`check_stack`] reads every resource of one stack at once (bounded by the concurrency) and
//! never writes; [`write`] holds the three commands that act on what it found, each under
//! the stack lock with the ETag chain of every state writer: `--accept` (state takes AWS's
//! values), `--revert` (AWS takes the recorded values, through the provider's update, in
//! dependency order) and `cdkd state refresh-observed` (the baseline re-read, AWS untouched).

pub mod write;

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::Semaphore;

use crate::aws::Clients;
use crate::engine::baseline::compare::{compare, Comparison, PropertyDrift};
use crate::provider::{ProviderContext, Registry, ResourceRequest};
use crate::resolve::partition_for_region;
use crate::state::{ResourceState, StackState};

/// What the drift commands share.
#[derive(Clone)]
pub struct DriftEnv {
    pub clients: Arc<Clients>,
    pub registry: Arc<Registry>,
    pub account_id: String,
    /// Reads (and, for `--revert`, updates) at once, at least 1.
    pub concurrency: usize,
}

/// Why a resource was not compared.
#[derive(Debug, Clone, PartialEq)]
pub enum NotCompared {
    /// `cdkd import` declined its baseline (`observedBaselineRefused`): it is not read back
    /// at all, so the live value never enters the report.
    BaselineRefused,
    /// The read failed (the message, masked): cdkd could not compare it.
    ReadFailed(String),
}

/// One resource's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Every compared property matches.
    Clean,
    /// These properties differ from the baseline.
    Drifted(Vec<PropertyDrift>),
    /// AWS no longer has the resource.
    Deleted,
    NotCompared(NotCompared),
    /// Nothing in AWS to read: a custom resource, a nested stack's row, a type no provider
    /// reads (with why).
    Skipped(&'static str),
}

/// One resource of the report.
#[derive(Debug, Clone)]
pub struct ResourceDrift {
    pub logical_id: String,
    pub resource_type: String,
    pub outcome: Outcome,
    /// Secret positions (`***`, `{{resolve:...}}`) not compared in the clear.
    pub masked: Vec<String>,
    /// What AWS reported (never printed or stored as it is: it can hold secrets).
    pub live: Option<Map<String, Value>>,
}

impl ResourceDrift {
    /// Drifted or deleted.
    pub fn has_drift(&self) -> bool {
        matches!(self.outcome, Outcome::Drifted(_) | Outcome::Deleted)
    }
}

/// One stack's report.
#[derive(Debug, Clone)]
pub struct StackDrift {
    pub stack: String,
    pub region: String,
    pub resources: Vec<ResourceDrift>,
}

impl StackDrift {
    pub fn has_drift(&self) -> bool {
        self.resources.iter().any(ResourceDrift::has_drift)
    }

    /// A resource cdkd could not, or declined to, compare.
    pub fn has_uncompared(&self) -> bool {
        self.resources
            .iter()
            .any(|r| matches!(r.outcome, Outcome::NotCompared(_)))
    }
}

/// Why a resource of this type has nothing to read, if it has not.
fn unreadable(resource_type: &str) -> Option<&'static str> {
    if crate::provider::custom::is_custom_type(resource_type) {
        Some("a custom resource is what its handler was last told; it has nothing to read")
    } else if crate::engine::deploy::is_nested(resource_type) {
        Some("a nested stack's row: its child stack's record is checked on its own")
    } else if crate::provider::is_skipped_type(resource_type) {
        Some("not a resource")
    } else {
        None
    }
}

/// Reads `rec` back from AWS: `Ok(None)` when it no longer exists.
pub(crate) async fn read_record(
    env: &DriftEnv,
    stack: &str,
    region: &str,
    id: &str,
    rec: &ResourceState,
) -> Result<Option<Map<String, Value>>, String> {
    let Some(physical_id) = rec.physical_id.as_deref() else {
        return Err("its state record has no physicalId".into());
    };
    let Some((_, provider)) = crate::engine::deploy::record_provider(&env.registry, rec) else {
        return Err(format!("no provider reads {}", rec.resource_type));
    };
    let partition = partition_for_region(region).name;
    let ctx = ProviderContext {
        clients: &env.clients,
        stack_name: stack,
        region,
        account_id: &env.account_id,
        partition,
        no_wait: true,
    };
    let req = ResourceRequest {
        logical_id: id,
        resource_type: &rec.resource_type,
        properties: &rec.properties,
        client_token: None,
    };
    provider
        .read(&ctx, &req, physical_id)
        .await
        .map_err(|e| e.to_string())
}

/// The verdict on one resource given what AWS reported.
pub fn judge(rec: &ResourceState, live: Option<&Map<String, Value>>) -> (Outcome, Vec<String>) {
    let Some(live) = live else {
        return (Outcome::Deleted, Vec::new());
    };
    let Comparison { drifted, masked } = compare(rec.drift_baseline(), &rec.properties, live);
    if drifted.is_empty() {
        (Outcome::Clean, masked)
    } else {
        (Outcome::Drifted(drifted), masked)
    }
}

/// Reads and compares every resource of `state` (or only `only`, when given).
pub async fn check_stack(
    env: &DriftEnv,
    state: &StackState,
    only: Option<&[String]>,
) -> StackDrift {
    let (stack, region) = (state.stack_name.clone(), state.region.clone());
    let permits = Arc::new(Semaphore::new(env.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    let mut order = Vec::new();
    for (id, rec) in &state.resources {
        if only.is_some_and(|o| !o.contains(id)) {
            continue;
        }
        order.push(id.clone());
        let (env, id, rec) = (env.clone(), id.clone(), rec.clone());
        let (stack, region, permits) = (stack.clone(), region.clone(), permits.clone());
        tasks.spawn(async move {
            let base = |outcome, masked, live| ResourceDrift {
                logical_id: id.clone(),
                resource_type: rec.resource_type.clone(),
                outcome,
                masked,
                live,
            };
            if let Some(why) = unreadable(&rec.resource_type) {
                return base(Outcome::Skipped(why), Vec::new(), None);
            }
            if rec.baseline_refused() {
                return base(
                    Outcome::NotCompared(NotCompared::BaselineRefused),
                    Vec::new(),
                    None,
                );
            }
            let _permit = permits.acquire_owned().await.ok();
            match read_record(&env, &stack, &region, &id, &rec).await {
                Ok(live) => {
                    let (outcome, masked) = judge(&rec, live.as_ref());
                    base(outcome, masked, live)
                }
                Err(e) => base(
                    Outcome::NotCompared(NotCompared::ReadFailed(e)),
                    Vec::new(),
                    None,
                ),
            }
        });
    }
    let mut done = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(r) => done.push(r),
            Err(e) => tracing::debug!("a drift read did not finish: {e}"),
        }
    }
    done.sort_by_key(|r| order.iter().position(|o| *o == r.logical_id));
    StackDrift {
        stack,
        region,
        resources: done,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_resource_aws_no_longer_has_is_drift() {
        let rec = ResourceState::new("q", "AWS::SQS::Queue", Map::new());
        let (outcome, _) = judge(&rec, None);
        assert_eq!(outcome, Outcome::Deleted);
        let found = ResourceDrift {
            logical_id: "Q".into(),
            resource_type: "AWS::SQS::Queue".into(),
            outcome,
            masked: Vec::new(),
            live: None,
        };
        assert!(found.has_drift());
    }

    #[test]
    fn the_observed_baseline_wins_over_the_recorded_properties() {
        let mut rec = ResourceState::new(
            "q",
            "AWS::SQS::Queue",
            map(json!({"VisibilityTimeout": 30})),
        );
        let live = map(json!({"VisibilityTimeout": "30", "DelaySeconds": "5"}));
        // Without a baseline, only the recorded properties are compared.
        assert_eq!(judge(&rec, Some(&live)).0, Outcome::Clean);
        // With one, what AWS had after the deploy is compared too.
        rec.observed_properties =
            Some(map(json!({"VisibilityTimeout": "30", "DelaySeconds": "0"})));
        match judge(&rec, Some(&live)).0 {
            Outcome::Drifted(d) => assert_eq!(d[0].path, "DelaySeconds"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nothing_to_read_for_custom_resources_and_nested_rows() {
        assert!(unreadable("Custom::Thing").is_some());
        assert!(unreadable("AWS::CloudFormation::Stack").is_some());
        assert!(unreadable("AWS::SQS::Queue").is_none());
    }
}
