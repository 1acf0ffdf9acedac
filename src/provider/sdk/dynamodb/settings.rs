//! Table settings with APIs of their own (TTL, point-in-time recovery, contributor insights,
//! Kinesis streaming, resource policies) and the stream specification UpdateTable takes.

use aws_sdk_dynamodb::types::{
    ApproximateCreationDateTimePrecision, ContributorInsightsAction, ContributorInsightsMode,
    EnableKinesisStreamingConfiguration, PointInTimeRecoverySpecification, StreamSpecification,
    StreamViewType, TableDescription, TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use super::spec::Spec;
use super::{retry_busy, Sdk, API};
use crate::aws::{classify, error_code, ErrorKind};
use crate::provider::{ProviderError, ResourceRequest};

pub(super) fn stream_spec(view_type: Option<&str>) -> Result<StreamSpecification, String> {
    StreamSpecification::builder()
        .stream_enabled(view_type.is_some())
        .set_stream_view_type(view_type.map(StreamViewType::from))
        .build()
        .map_err(|e| e.to_string())
}

pub(super) async fn set_ttl(
    client: &Client,
    req: &ResourceRequest<'_>,
    table: &str,
    attribute: &str,
    enabled: bool,
) -> Result<(), ProviderError> {
    let spec = TimeToLiveSpecification::builder()
        .attribute_name(attribute)
        .enabled(enabled)
        .build()
        .map_err(|e| {
            ProviderError::failed(req, format!("property TimeToLiveSpecification: {e}"))
        })?;
    let call = client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(spec);
    retry_busy(|| call.clone().send())
        .await
        .map_err(|e| API.err(req, "UpdateTimeToLive", table, &e))?;
    Ok(())
}

pub(super) async fn set_pitr(
    client: &Client,
    req: &ResourceRequest<'_>,
    table: &str,
    enabled: bool,
    days: Option<i32>,
) -> Result<(), ProviderError> {
    let spec = PointInTimeRecoverySpecification::builder()
        .point_in_time_recovery_enabled(enabled)
        .set_recovery_period_in_days(if enabled { days } else { None })
        .build()
        .map_err(|e| {
            ProviderError::failed(
                req,
                format!("property PointInTimeRecoverySpecification: {e}"),
            )
        })?;
    let call = client
        .update_continuous_backups()
        .table_name(table)
        .point_in_time_recovery_specification(spec);
    retry_busy(|| call.clone().send())
        .await
        .map_err(|e| API.err(req, "UpdateContinuousBackups", table, &e))?;
    Ok(())
}

pub(super) async fn set_insights(
    client: &Client,
    req: &ResourceRequest<'_>,
    table: &str,
    index: Option<&str>,
    enabled: bool,
    mode: Option<ContributorInsightsMode>,
) -> Result<(), ProviderError> {
    let action = if enabled {
        ContributorInsightsAction::Enable
    } else {
        ContributorInsightsAction::Disable
    };
    let call = client
        .update_contributor_insights()
        .table_name(table)
        .set_index_name(index.map(str::to_owned))
        .contributor_insights_action(action)
        .set_contributor_insights_mode(if enabled { mode } else { None });
    let target = index.map_or_else(|| table.to_owned(), |i| format!("{table} index {i}"));
    retry_busy(|| call.clone().send())
        .await
        .map_err(|e| API.err(req, "UpdateContributorInsights", &target, &e))?;
    Ok(())
}

pub(super) async fn set_kinesis(
    client: &Client,
    req: &ResourceRequest<'_>,
    table: &str,
    stream_arn: &str,
    precision: Option<&str>,
    enable: bool,
) -> Result<(), ProviderError> {
    let config = precision.map(|p| {
        EnableKinesisStreamingConfiguration::builder()
            .approximate_creation_date_time_precision(ApproximateCreationDateTimePrecision::from(p))
            .build()
    });
    if enable {
        let call = client
            .enable_kinesis_streaming_destination()
            .table_name(table)
            .stream_arn(stream_arn)
            .set_enable_kinesis_streaming_configuration(config);
        retry_busy(|| call.clone().send())
            .await
            .map_err(|e| API.err(req, "EnableKinesisStreamingDestination", table, &e))?;
    } else {
        let call = client
            .disable_kinesis_streaming_destination()
            .table_name(table)
            .stream_arn(stream_arn);
        match retry_busy(|| call.clone().send()).await {
            Ok(_) => {}
            Err(e) if classify(&e) == ErrorKind::NotFound => {}
            Err(e) => return Err(API.err(req, "DisableKinesisStreamingDestination", table, &e)),
        }
    }
    Ok(())
}

/// Puts (`Some`) or removes (`None`) the resource policy of a table or stream.
pub(super) async fn set_policy(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    policy: Option<&str>,
) -> Result<(), ProviderError> {
    match policy {
        Some(p) => {
            let call = client.put_resource_policy().resource_arn(arn).policy(p);
            retry_busy(|| call.clone().send())
                .await
                .map_err(|e| API.err(req, "PutResourcePolicy", arn, &e))?;
        }
        None => {
            let call = client.delete_resource_policy().resource_arn(arn);
            match retry_busy(|| call.clone().send()).await {
                Ok(_) => {}
                Err(e) if is_policy_absent(&e) => {}
                Err(e) => return Err(API.err(req, "DeleteResourcePolicy", arn, &e)),
            }
        }
    }
    Ok(())
}

pub(super) fn is_policy_absent<E: ProvideErrorMetadata>(err: &Sdk<E>) -> bool {
    error_code(err) == Some("PolicyNotFoundException") || classify(err) == ErrorKind::NotFound
}

/// The settings CreateTable cannot carry, applied once the table is ACTIVE.
pub(super) async fn configure_new_table(
    client: &Client,
    req: &ResourceRequest<'_>,
    spec: &Spec<'_>,
    t: &TableDescription,
) -> Result<(), ProviderError> {
    let table = t.table_name().unwrap_or_default();
    if let Some(attr) = spec.ttl_enabled_attribute()? {
        set_ttl(client, req, table, &attr, true).await?;
    }
    let (pitr, days) = spec.pitr()?;
    if pitr {
        set_pitr(client, req, table, true, days).await?;
    }
    let (insights, mode) = spec.insights_at(
        req.properties.get("ContributorInsightsSpecification"),
        "ContributorInsightsSpecification",
    )?;
    if insights {
        set_insights(client, req, table, None, true, mode).await?;
    }
    for gsi in spec.global_indexes()? {
        let (on, mode) = gsi.insights(spec)?;
        if on {
            set_insights(client, req, table, Some(&gsi.name), true, mode).await?;
        }
    }
    if let Some((arn, precision)) = spec.kinesis()? {
        set_kinesis(client, req, table, &arn, precision.as_deref(), true).await?;
    }
    if let (Some(policy), Some(stream)) = (spec.stream_policy()?, t.latest_stream_arn()) {
        set_policy(client, req, stream, Some(&policy)).await?;
    }
    Ok(())
}

/// Whether anything must be set on the table after CreateTable, which needs it ACTIVE.
pub(super) fn needs_configuration(
    spec: &Spec<'_>,
    req: &ResourceRequest<'_>,
) -> Result<bool, ProviderError> {
    let gsi_insights = spec
        .global_indexes()?
        .iter()
        .map(|g| g.insights(spec).map(|(on, _)| on))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .any(|on| on);
    Ok(spec.ttl_enabled_attribute()?.is_some()
        || spec.pitr()?.0
        || spec
            .insights_at(
                req.properties.get("ContributorInsightsSpecification"),
                "ContributorInsightsSpecification",
            )?
            .0
        || gsi_insights
        || spec.kinesis()?.is_some()
        || spec.stream_policy()?.is_some())
}
