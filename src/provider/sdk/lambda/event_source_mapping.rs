//! `AWS::Lambda::EventSourceMapping`.
//!
//! Physical id, `Ref` and `Fn::GetAtt Id`: the mapping's UUID; `Fn::GetAtt
//! EventSourceMappingArn` too. `EventSourceArn`, `StartingPosition`,
//! `StartingPositionTimestamp`, `SelfManagedEventSource`, `Topics` and `Queues` replace the
//! mapping; everything else (`BatchSize`, `Enabled`, `FunctionName`, filters, retries,
//! destinations, ...) changes in place through UpdateEventSourceMapping, a property taken
//! out of the template going back to Lambda's default. Tags change through Tag/UntagResource.
//! Creates, updates and deletes wait for the mapping to settle (`Creating`, `Updating`,
//! `Deleting` ...), which Lambda requires before the next change.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_lambda::types::{EndPointType, EventSourcePosition, SelfManagedEventSource};
use aws_sdk_lambda::Client;
use serde_json::{json, Map, Value};

use super::mapping_fields::{apply_fields, Fields, FIELD_PROPERTIES};
use super::{
    client, is_conflict_or_role_propagation, is_not_found, is_update_in_progress, nonempty, put,
    replacing_changes, send_with_retry, tag_changes, tag_map, tags_value, Backoff, Obj, API,
    CONFLICT_BUDGET, IAM_PROPAGATION_BUDGET,
};
use crate::provider::props::{changed, changed_properties};
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const MAPPING: &str = "AWS::Lambda::EventSourceMapping";

/// Properties UpdateEventSourceMapping cannot change.
const REPLACING: &[&str] = &[
    "EventSourceArn",
    "StartingPosition",
    "StartingPositionTimestamp",
    "SelfManagedEventSource",
    "Topics",
    "Queues",
];

/// How long a mapping may stay in a transitional state.
const SETTLE_BUDGET: Duration = Duration::from_secs(600);

/// The SDK provider for event source mappings.
pub struct EventSourceMappingProvider;

fn attributes(uuid: &str, arn: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("Id".into(), json!(uuid));
    m.insert("EventSourceMappingArn".into(), json!(arn));
    m
}

/// The other properties this provider knows (create-only, or applied separately).
const OTHER_PROPERTIES: &[&str] = &[
    "EventSourceArn",
    "StartingPosition",
    "StartingPositionTimestamp",
    "SelfManagedEventSource",
    "Topics",
    "Queues",
    "Tags",
];

fn check_known(req: &ResourceRequest<'_>) -> Result<(), ProviderError> {
    let unknown: Vec<&str> = req
        .properties
        .keys()
        .map(String::as_str)
        .filter(|k| !FIELD_PROPERTIES.contains(k) && !OTHER_PROPERTIES.contains(k))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(ProviderError::failed(
        req,
        format!(
            "cdkd's event source mapping provider does not support {}",
            unknown.join(", ")
        ),
    ))
}

/// Whether a mapping state is a resting one (`Enabled`, `Disabled`).
fn is_settled(state: Option<&str>) -> bool {
    !matches!(
        state,
        Some("Creating" | "Enabling" | "Disabling" | "Updating" | "Deleting")
    )
}

/// Waits for the mapping to reach a resting state; with `gone`, for it to disappear.
async fn wait_mapping(
    client: &Client,
    req: &ResourceRequest<'_>,
    uuid: &str,
    gone: bool,
    first_state: Option<&str>,
) -> Result<(), ProviderError> {
    if !gone && is_settled(first_state) {
        return Ok(());
    }
    let mut backoff = Backoff::new(SETTLE_BUDGET);
    loop {
        match client.get_event_source_mapping().uuid(uuid).send().await {
            Ok(out) if !gone && is_settled(out.state()) => return Ok(()),
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {
                return if gone {
                    Ok(())
                } else {
                    Err(ProviderError::failed(
                        req,
                        format!("event source mapping {uuid} disappeared"),
                    ))
                }
            }
            Err(e) => return Err(API.err(req, "GetEventSourceMapping", uuid, &e)),
        }
        if !backoff.wait().await {
            return Err(ProviderError::Timeout {
                logical_id: req.logical_id.to_owned(),
                resource_type: req.resource_type.to_owned(),
                seconds: SETTLE_BUDGET.as_secs(),
                detail: format!("event source mapping {uuid} did not settle"),
            });
        }
    }
}

#[async_trait]
impl Provider for EventSourceMappingProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[MAPPING]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(
            FIELD_PROPERTIES
                .iter()
                .chain(OTHER_PROPERTIES)
                .copied()
                .collect(),
        )
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        check_known(req)?;
        let root = Obj::root(req);
        root.required_str("FunctionName")?;
        let fields = Fields::read(&root, FIELD_PROPERTIES, false)?;
        let endpoints = match root.object("SelfManagedEventSource")? {
            Some(s) => match s.object("Endpoints")? {
                Some(e) => {
                    let mut map = HashMap::new();
                    for (key, _) in e.map.iter() {
                        if let Some(list) = e.strings(key)? {
                            map.insert(EndPointType::from(key.as_str()), list);
                        }
                    }
                    Some(
                        SelfManagedEventSource::builder()
                            .set_endpoints(Some(map))
                            .build(),
                    )
                }
                None => None,
            },
            None => None,
        };
        let tags = tag_map(req)?;
        let client = client(ctx);
        let b = client
            .create_event_source_mapping()
            .set_event_source_arn(root.str("EventSourceArn")?)
            .set_starting_position(
                root.str("StartingPosition")?
                    .map(|p| EventSourcePosition::from(p.as_str())),
            )
            .set_starting_position_timestamp(
                root.f64("StartingPositionTimestamp")?
                    .map(aws_smithy_types::DateTime::from_secs_f64),
            )
            .set_topics(root.strings("Topics")?)
            .set_queues(root.strings("Queues")?)
            .set_self_managed_event_source(endpoints)
            .set_tags((!tags.is_empty()).then_some(tags));
        let b = apply_fields!(b, fields);
        let out = send_with_retry!(b, IAM_PROPAGATION_BUDGET, is_conflict_or_role_propagation)
            .map_err(|e| API.err(req, "CreateEventSourceMapping", req.logical_id, &e))?;
        let uuid = out.uuid().unwrap_or_default().to_owned();
        let arn = out
            .event_source_mapping_arn()
            .unwrap_or_default()
            .to_owned();
        if !ctx.no_wait {
            if let Err(e) = wait_mapping(&client, req, &uuid, false, out.state()).await {
                let _ = client
                    .delete_event_source_mapping()
                    .uuid(&uuid)
                    .send()
                    .await;
                return Err(e);
            }
        }
        Ok(Provisioned {
            physical_id: uuid.clone(),
            attributes: attributes(&uuid, &arn),
        })
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        check_known(req)?;
        let changes = changed_properties(previous, req.properties);
        let replacing = replacing_changes(MAPPING, &changes, REPLACING);
        if !replacing.is_empty() {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: format!("{} cannot change in place", replacing.join(", ")),
            });
        }
        let root = Obj::root(req);
        let client = client(ctx);
        let names: Vec<&str> = FIELD_PROPERTIES
            .iter()
            .copied()
            .filter(|p| changes.iter().any(|c| c == p))
            .collect();
        let arn = if names.is_empty() {
            let out = client
                .get_event_source_mapping()
                .uuid(physical_id)
                .send()
                .await
                .map_err(|e| API.err(req, "GetEventSourceMapping", physical_id, &e))?;
            out.event_source_mapping_arn()
                .unwrap_or_default()
                .to_owned()
        } else {
            let fields = Fields::read(&root, &names, true)?;
            let b = apply_fields!(
                client.update_event_source_mapping().uuid(physical_id),
                fields
            );
            let out = send_with_retry!(b, IAM_PROPAGATION_BUDGET, is_conflict_or_role_propagation)
                .map_err(|e| API.err(req, "UpdateEventSourceMapping", physical_id, &e))?;
            if !ctx.no_wait {
                wait_mapping(&client, req, physical_id, false, out.state()).await?;
            }
            out.event_source_mapping_arn()
                .unwrap_or_default()
                .to_owned()
        };
        if changed(previous, req.properties, "Tags") && !arn.is_empty() {
            let current = client
                .list_tags()
                .resource(&arn)
                .send()
                .await
                .map_err(|e| API.err(req, "ListTags", &arn, &e))?
                .tags
                .unwrap_or_default();
            let (set, remove) = tag_changes(&current, &tag_map(req)?);
            if !remove.is_empty() {
                client
                    .untag_resource()
                    .resource(&arn)
                    .set_tag_keys(Some(remove))
                    .send()
                    .await
                    .map_err(|e| API.err(req, "UntagResource", &arn, &e))?;
            }
            if !set.is_empty() {
                client
                    .tag_resource()
                    .resource(&arn)
                    .set_tags(Some(set))
                    .send()
                    .await
                    .map_err(|e| API.err(req, "TagResource", &arn, &e))?;
            }
        }
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: attributes(physical_id, &arn),
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        let client = client(ctx);
        let b = client.delete_event_source_mapping().uuid(physical_id);
        match send_with_retry!(b, CONFLICT_BUDGET, is_update_in_progress) {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => return Ok(()),
            Err(e) => return Err(API.err(req, "DeleteEventSourceMapping", physical_id, &e)),
        }
        if ctx.no_wait {
            return Ok(());
        }
        wait_mapping(&client, req, physical_id, true, None).await
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let client = client(ctx);
        let m = match client
            .get_event_source_mapping()
            .uuid(physical_id)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(API.err(req, "GetEventSourceMapping", physical_id, &e)),
        };
        let mut p = Map::new();
        let s = |v: Option<&str>| nonempty(v).map(Value::String);
        put(&mut p, "Id", s(m.uuid()));
        put(
            &mut p,
            "EventSourceMappingArn",
            s(m.event_source_mapping_arn()),
        );
        put(&mut p, "EventSourceArn", s(m.event_source_arn()));
        put(&mut p, "FunctionName", s(m.function_arn()));
        put(&mut p, "BatchSize", m.batch_size().map(Value::from));
        put(
            &mut p,
            "Enabled",
            m.state()
                .map(|st| json!(!matches!(st, "Disabled" | "Disabling"))),
        );
        put(
            &mut p,
            "StartingPosition",
            m.starting_position().map(|v| json!(v.as_str())),
        );
        put(
            &mut p,
            "StartingPositionTimestamp",
            m.starting_position_timestamp()
                .map(|t| json!(t.as_secs_f64())),
        );
        put(
            &mut p,
            "MaximumBatchingWindowInSeconds",
            m.maximum_batching_window_in_seconds().map(Value::from),
        );
        put(
            &mut p,
            "ParallelizationFactor",
            m.parallelization_factor().map(Value::from),
        );
        put(
            &mut p,
            "MaximumRecordAgeInSeconds",
            m.maximum_record_age_in_seconds().map(Value::from),
        );
        put(
            &mut p,
            "BisectBatchOnFunctionError",
            m.bisect_batch_on_function_error().map(Value::from),
        );
        put(
            &mut p,
            "MaximumRetryAttempts",
            m.maximum_retry_attempts().map(Value::from),
        );
        put(
            &mut p,
            "TumblingWindowInSeconds",
            m.tumbling_window_in_seconds().map(Value::from),
        );
        put(&mut p, "KmsKeyArn", s(m.kms_key_arn()));
        if let Some(fc) = m.filter_criteria().filter(|fc| !fc.filters().is_empty()) {
            let filters: Vec<Value> = fc
                .filters()
                .iter()
                .map(|f| json!({"Pattern": f.pattern()}))
                .collect();
            p.insert("FilterCriteria".into(), json!({ "Filters": filters }));
        }
        if let Some(d) = m.destination_config() {
            let mut dest = Map::new();
            if let Some(t) = nonempty(d.on_failure().and_then(|o| o.destination())) {
                dest.insert("OnFailure".into(), json!({ "Destination": t }));
            }
            if let Some(t) = nonempty(d.on_success().and_then(|o| o.destination())) {
                dest.insert("OnSuccess".into(), json!({ "Destination": t }));
            }
            if !dest.is_empty() {
                p.insert("DestinationConfig".into(), Value::Object(dest));
            }
        }
        if let Some(n) = m.scaling_config().and_then(|c| c.maximum_concurrency()) {
            p.insert("ScalingConfig".into(), json!({ "MaximumConcurrency": n }));
        }
        if !m.function_response_types().is_empty() {
            let types: Vec<&str> = m
                .function_response_types()
                .iter()
                .map(|t| t.as_str())
                .collect();
            p.insert("FunctionResponseTypes".into(), json!(types));
        }
        if !m.topics().is_empty() {
            p.insert("Topics".into(), json!(m.topics()));
        }
        if !m.queues().is_empty() {
            p.insert("Queues".into(), json!(m.queues()));
        }
        if !m.source_access_configurations().is_empty() {
            let list: Vec<Value> = m
                .source_access_configurations()
                .iter()
                .map(|c| json!({"Type": c.r#type().map(|t| t.as_str()), "URI": c.uri()}))
                .collect();
            p.insert("SourceAccessConfigurations".into(), Value::Array(list));
        }
        if let Some(arn) = m.event_source_mapping_arn() {
            if let Ok(out) = client.list_tags().resource(arn).send().await {
                if let Some(tags) = out.tags().and_then(tags_value) {
                    p.insert("Tags".into(), tags);
                }
            }
        }
        Ok(Some(p))
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        match client(ctx)
            .get_event_source_mapping()
            .uuid(physical_id)
            .send()
            .await
        {
            Ok(out) => Ok(Provisioned {
                physical_id: physical_id.to_owned(),
                attributes: attributes(
                    physical_id,
                    out.event_source_mapping_arn().unwrap_or_default(),
                ),
            }),
            Err(e) if is_not_found(&e) => Err(ProviderError::failed(
                req,
                format!("event source mapping {physical_id} does not exist"),
            )),
            Err(e) => Err(API.err(req, "GetEventSourceMapping", physical_id, &e)),
        }
    }
}
