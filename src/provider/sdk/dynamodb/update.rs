//! In-place updates of a table: each changed property through the API that owns it, in an
//! order DynamoDB accepts (index deletions, capacity, index creations, then the rest), with
//! the table waited on until ACTIVE before every UpdateTable call.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_dynamodb::types::{
    BillingMode, DeleteGlobalSecondaryIndexAction, GlobalSecondaryIndexUpdate, OnDemandThroughput,
    SseSpecification, TableClass, UpdateGlobalSecondaryIndexAction,
};
use aws_sdk_dynamodb::Client;
use serde_json::{Map, Value};

use super::settings::{set_insights, set_kinesis, set_pitr, set_policy, set_ttl, stream_spec};
use super::spec::{Gsi, Spec};
use super::{provisioned, retry_busy, sdk_tags, wait_ready, API, TABLE};
use crate::provider::props::{changed, changed_properties};
use crate::provider::{schema, ProviderContext, ProviderError, ResourceRequest, UpdateOutcome};

/// Properties whose change replaces the table, besides the schema's create-only ones.
const REPLACING: &[&str] = &[
    "TableName",
    "KeySchema",
    "LocalSecondaryIndexes",
    "ImportSourceSpecification",
];

/// Why the change cannot be made in place, if it cannot.
fn replacement_reason(
    old: &Spec<'_>,
    new: &Spec<'_>,
    changes: &[String],
) -> Result<Option<String>, ProviderError> {
    if let Some(p) = changes
        .iter()
        .find(|p| REPLACING.contains(&p.as_str()) || schema::is_create_only(TABLE, p))
    {
        return Ok(Some(format!("{p} cannot be changed on an existing table")));
    }
    // A key attribute's type is fixed for the table's life.
    let (old_types, new_types) = (old.attribute_types()?, new.attribute_types()?);
    let mut key_attributes: Vec<String> = new
        .key_schema()?
        .iter()
        .map(|k| k.attribute_name().to_owned())
        .collect();
    for lsi in new.local_indexes()? {
        key_attributes.extend(
            lsi.key_schema()
                .iter()
                .map(|k| k.attribute_name().to_owned()),
        );
    }
    Ok(key_attributes
        .into_iter()
        .find(|a| old_types.get(a) != new_types.get(a))
        .map(|a| format!("the type of key attribute {a} cannot be changed on an existing table")))
}

pub(super) async fn update_table(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    table: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    let prev_req = ResourceRequest {
        properties: previous,
        ..req.clone()
    };
    let (old, new) = (Spec::new(&prev_req), Spec::new(req));
    let changes = changed_properties(previous, req.properties);
    if let Some(reason) = replacement_reason(&old, &new, &changes)? {
        return Ok(UpdateOutcome::NeedsReplacement { reason });
    }
    let desired = req.properties;
    let mut t = wait_ready(client, req, table).await?;
    if changes.is_empty() {
        return Ok(UpdateOutcome::Updated(provisioned(&t)));
    }
    let arn = t.table_arn().unwrap_or_default().to_owned();

    // Global secondary indexes: which go, which come, which stay.
    let (old_types, new_types) = (old.attribute_types()?, new.attribute_types()?);
    let old_gsis = old.global_indexes()?;
    let new_gsis = new.global_indexes()?;
    let old_by_name: BTreeMap<&str, &Gsi<'_>> =
        old_gsis.iter().map(|g| (g.name.as_str(), g)).collect();
    let new_names: BTreeSet<&str> = new_gsis.iter().map(|g| g.name.as_str()).collect();
    let rebuilt: BTreeSet<&str> = new_gsis
        .iter()
        .filter(|g| {
            old_by_name
                .get(g.name.as_str())
                .is_some_and(|o| o.structure(&old_types) != g.structure(&new_types))
        })
        .map(|g| g.name.as_str())
        .collect();
    let deletes: Vec<&str> = old_gsis
        .iter()
        .map(|g| g.name.as_str())
        .filter(|n| !new_names.contains(n) || rebuilt.contains(n))
        .collect();
    let creates: Vec<&Gsi<'_>> = new_gsis
        .iter()
        .filter(|g| !old_by_name.contains_key(g.name.as_str()) || rebuilt.contains(g.name.as_str()))
        .collect();
    let kept: Vec<(&Gsi<'_>, &Gsi<'_>)> = new_gsis
        .iter()
        .filter(|g| !rebuilt.contains(g.name.as_str()))
        .filter_map(|g| old_by_name.get(g.name.as_str()).map(|o| (*o, g)))
        .collect();

    // 1. Index deletions, one per call.
    for name in &deletes {
        let action = DeleteGlobalSecondaryIndexAction::builder()
            .index_name(*name)
            .build()
            .map_err(|e| ProviderError::failed(req, format!("GlobalSecondaryIndexes: {e}")))?;
        let call = client
            .update_table()
            .table_name(table)
            .global_secondary_index_updates(
                GlobalSecondaryIndexUpdate::builder().delete(action).build(),
            );
        retry_busy(|| call.clone().send()).await.map_err(|e| {
            API.err(
                req,
                "UpdateTable",
                &format!("{table} (delete index {name})"),
                &e,
            )
        })?;
        t = wait_ready(client, req, table).await?;
    }

    // 2. Capacity: billing mode, table throughput, the kept indexes' throughput.
    let (old_mode, new_mode) = (old.billing_mode()?, new.billing_mode()?);
    let is_provisioned = new_mode == BillingMode::Provisioned;
    let mode_changed = old_mode != new_mode;
    let mut call = client.update_table().table_name(table);
    let mut capacity = false;
    if mode_changed {
        call = call.billing_mode(new_mode.clone());
        capacity = true;
    }
    if is_provisioned && (mode_changed || changed(previous, desired, "ProvisionedThroughput")) {
        let tp = new
            .throughput_at(
                desired.get("ProvisionedThroughput"),
                "ProvisionedThroughput",
            )?
            .ok_or_else(|| ProviderError::missing(req, "ProvisionedThroughput"))?;
        call = call.provisioned_throughput(tp);
        capacity = true;
    }
    if !is_provisioned && changed(previous, desired, "OnDemandThroughput") {
        let od = new
            .on_demand_at(desired.get("OnDemandThroughput"), "OnDemandThroughput")?
            .unwrap_or_else(unlimited);
        call = call.on_demand_throughput(od);
        capacity = true;
    }
    for (o, g) in &kept {
        let mut action = UpdateGlobalSecondaryIndexAction::builder().index_name(&g.name);
        let mut touched = false;
        if is_provisioned
            && (mode_changed
                || o.raw.get("ProvisionedThroughput") != g.raw.get("ProvisionedThroughput"))
        {
            let tp = g.throughput(&new)?.ok_or_else(|| {
                ProviderError::missing(req, &format!("{}.ProvisionedThroughput", g.path))
            })?;
            action = action.provisioned_throughput(tp);
            touched = true;
        }
        if !is_provisioned && o.raw.get("OnDemandThroughput") != g.raw.get("OnDemandThroughput") {
            action = action.on_demand_throughput(g.on_demand(&new)?.unwrap_or_else(unlimited));
            touched = true;
        }
        if touched {
            let action = action
                .build()
                .map_err(|e| ProviderError::failed(req, format!("{}: {e}", g.path)))?;
            call = call.global_secondary_index_updates(
                GlobalSecondaryIndexUpdate::builder().update(action).build(),
            );
            capacity = true;
        }
    }
    if capacity {
        retry_busy(|| call.clone().send())
            .await
            .map_err(|e| API.err(req, "UpdateTable", &format!("{table} (capacity)"), &e))?;
        t = wait_ready(client, req, table).await?;
    }

    // 3. Warm throughput, of the table and of kept indexes.
    if changed(previous, desired, "WarmThroughput") {
        if let Some(w) = new.warm_at(desired.get("WarmThroughput"), "WarmThroughput")? {
            let call = client.update_table().table_name(table).warm_throughput(w);
            retry_busy(|| call.clone().send()).await.map_err(|e| {
                API.err(
                    req,
                    "UpdateTable",
                    &format!("{table} (warm throughput)"),
                    &e,
                )
            })?;
            t = wait_ready(client, req, table).await?;
        }
    }
    for (o, g) in &kept {
        if o.raw.get("WarmThroughput") == g.raw.get("WarmThroughput") {
            continue;
        }
        if let Some(w) = g.warm(&new)? {
            let action = UpdateGlobalSecondaryIndexAction::builder()
                .index_name(&g.name)
                .warm_throughput(w)
                .build()
                .map_err(|e| ProviderError::failed(req, format!("{}: {e}", g.path)))?;
            let call = client
                .update_table()
                .table_name(table)
                .global_secondary_index_updates(
                    GlobalSecondaryIndexUpdate::builder().update(action).build(),
                );
            retry_busy(|| call.clone().send()).await.map_err(|e| {
                API.err(
                    req,
                    "UpdateTable",
                    &format!("{table} (index {} warm throughput)", g.name),
                    &e,
                )
            })?;
            t = wait_ready(client, req, table).await?;
        }
    }

    // 4. Index creations, one per call, each waited on until ACTIVE.
    for g in &creates {
        let action = g.for_update_create(&new, is_provisioned)?;
        let call = client
            .update_table()
            .table_name(table)
            .set_attribute_definitions(Some(new.attribute_definitions()?))
            .global_secondary_index_updates(
                GlobalSecondaryIndexUpdate::builder().create(action).build(),
            );
        retry_busy(|| call.clone().send()).await.map_err(|e| {
            API.err(
                req,
                "UpdateTable",
                &format!("{table} (create index {})", g.name),
                &e,
            )
        })?;
        t = wait_ready(client, req, table).await?;
    }

    // 5. Table class, encryption, deletion protection: one UpdateTable each.
    if changed(previous, desired, "TableClass") {
        let class = new
            .props()
            .str("TableClass")?
            .unwrap_or_else(|| "STANDARD".into());
        let call = client
            .update_table()
            .table_name(table)
            .table_class(TableClass::from(class.as_str()));
        retry_busy(|| call.clone().send())
            .await
            .map_err(|e| API.err(req, "UpdateTable", &format!("{table} (table class)"), &e))?;
        t = wait_ready(client, req, table).await?;
    }
    if changed(previous, desired, "SSESpecification") {
        let sse = new
            .sse()?
            .unwrap_or_else(|| SseSpecification::builder().enabled(false).build());
        let call = client
            .update_table()
            .table_name(table)
            .sse_specification(sse);
        retry_busy(|| call.clone().send())
            .await
            .map_err(|e| API.err(req, "UpdateTable", &format!("{table} (encryption)"), &e))?;
        t = wait_ready(client, req, table).await?;
    }

    // 6. Streams: a new view type is a new stream, so the old one is turned off first.
    let (old_view, new_view) = (old.stream_view_type()?, new.stream_view_type()?);
    if old_view != new_view {
        if old_view.is_some() {
            let spec = stream_spec(None).map_err(|e| ProviderError::failed(req, e))?;
            let call = client
                .update_table()
                .table_name(table)
                .stream_specification(spec);
            retry_busy(|| call.clone().send()).await.map_err(|e| {
                API.err(req, "UpdateTable", &format!("{table} (disable stream)"), &e)
            })?;
            t = wait_ready(client, req, table).await?;
        }
        if let Some(view) = &new_view {
            let spec = stream_spec(Some(view)).map_err(|e| ProviderError::failed(req, e))?;
            let call = client
                .update_table()
                .table_name(table)
                .stream_specification(spec);
            retry_busy(|| call.clone().send()).await.map_err(|e| {
                API.err(req, "UpdateTable", &format!("{table} (enable stream)"), &e)
            })?;
            t = wait_ready(client, req, table).await?;
        }
    }
    let (old_policy, new_policy) = (old.stream_policy()?, new.stream_policy()?);
    if let (Some(_), Some(stream)) = (&new_view, t.latest_stream_arn()) {
        if old_view != new_view {
            // A new stream starts without a policy.
            if let Some(p) = &new_policy {
                set_policy(client, req, stream, Some(p)).await?;
            }
        } else if old_policy != new_policy {
            set_policy(client, req, stream, new_policy.as_deref()).await?;
        }
    }

    if changed(previous, desired, "DeletionProtectionEnabled") {
        let on = new
            .props()
            .bool("DeletionProtectionEnabled")?
            .unwrap_or(false);
        let call = client
            .update_table()
            .table_name(table)
            .deletion_protection_enabled(on);
        retry_busy(|| call.clone().send()).await.map_err(|e| {
            API.err(
                req,
                "UpdateTable",
                &format!("{table} (deletion protection)"),
                &e,
            )
        })?;
        t = wait_ready(client, req, table).await?;
    }

    // 7. Settings with their own APIs.
    if changed(previous, desired, "TimeToLiveSpecification") {
        let (was, now) = (old.ttl_enabled_attribute()?, new.ttl_enabled_attribute()?);
        if was != now {
            // DynamoDB cannot move TTL to another attribute directly: off, then on.
            if let Some(attr) = &was {
                set_ttl(client, req, table, attr, false).await?;
            }
            if let Some(attr) = &now {
                set_ttl(client, req, table, attr, true).await?;
            }
        }
    }
    if changed(previous, desired, "PointInTimeRecoverySpecification") {
        let (on, days) = new.pitr()?;
        set_pitr(client, req, table, on, days).await?;
    }
    if changed(previous, desired, "ContributorInsightsSpecification") {
        let key = "ContributorInsightsSpecification";
        let (was, _) = old.insights_at(previous.get(key), key)?;
        let (on, mode) = new.insights_at(desired.get(key), key)?;
        if was || on {
            set_insights(client, req, table, None, on, mode).await?;
        }
    }
    for g in &new_gsis {
        let (on, mode) = g.insights(&new)?;
        let was = match old_by_name.get(g.name.as_str()) {
            Some(o) if !rebuilt.contains(g.name.as_str()) => o.insights(&old)?,
            _ => (false, None),
        };
        if (on, &mode) != (was.0, &was.1) && (on || was.0) {
            set_insights(client, req, table, Some(&g.name), on, mode).await?;
        }
    }
    if changed(previous, desired, "KinesisStreamSpecification") {
        let (was, now) = (old.kinesis()?, new.kinesis()?);
        if let Some((arn, _)) = &was {
            if now.as_ref().map(|n| &n.0) != Some(arn) {
                set_kinesis(client, req, table, arn, None, false).await?;
            }
        }
        if let Some((arn, precision)) = &now {
            if was.as_ref().map(|w| &w.0) != Some(arn) {
                set_kinesis(client, req, table, arn, precision.as_deref(), true).await?;
            } else {
                let call = client
                    .update_kinesis_streaming_destination()
                    .table_name(table)
                    .stream_arn(arn)
                    .set_update_kinesis_streaming_configuration(precision.as_deref().map(|p| {
                        aws_sdk_dynamodb::types::UpdateKinesisStreamingConfiguration::builder()
                            .approximate_creation_date_time_precision(p.into())
                            .build()
                    }));
                retry_busy(|| call.clone().send())
                    .await
                    .map_err(|e| API.err(req, "UpdateKinesisStreamingDestination", table, &e))?;
            }
        }
    }
    if changed(previous, desired, "ResourcePolicy") {
        set_policy(client, req, &arn, new.table_policy()?.as_deref()).await?;
    }
    if changed(previous, desired, "Tags") {
        update_tags(client, req, &arn, &old.tags()?, &new.tags()?).await?;
    }

    let t = if ctx.no_wait {
        t
    } else {
        wait_ready(client, req, table).await?
    };
    Ok(UpdateOutcome::Updated(provisioned(&t)))
}

/// On-demand throughput without a limit.
fn unlimited() -> OnDemandThroughput {
    OnDemandThroughput::builder()
        .max_read_request_units(-1)
        .max_write_request_units(-1)
        .build()
}

async fn update_tags(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> Result<(), ProviderError> {
    // Keys whose value changes are removed first too: TagResource then sets them afresh even
    // where a service (or emulator) would append instead of overwrite.
    let removed: Vec<String> = old
        .iter()
        .filter(|(k, v)| new.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    if !removed.is_empty() {
        let call = client
            .untag_resource()
            .resource_arn(arn)
            .set_tag_keys(Some(removed));
        retry_busy(|| call.clone().send())
            .await
            .map_err(|e| API.err(req, "UntagResource", arn, &e))?;
    }
    let set: BTreeMap<String, String> = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !set.is_empty() {
        let call = client
            .tag_resource()
            .resource_arn(arn)
            .set_tags(Some(sdk_tags(req, &set)?));
        retry_busy(|| call.clone().send())
            .await
            .map_err(|e| API.err(req, "TagResource", arn, &e))?;
    }
    Ok(())
}
