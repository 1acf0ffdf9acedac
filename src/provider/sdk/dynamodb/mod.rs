//! `AWS::DynamoDB::Table` through the DynamoDB API.
//!
//! Physical id and `Ref`: the table name. `Fn::GetAtt`: `Arn`, and `StreamArn` while a stream
//! is on. `TableName`, `KeySchema`, `LocalSecondaryIndexes`, `ImportSourceSpecification` and a
//! new type for a key attribute replace the table; everything else is updated in place with
//! the API that owns it: UpdateTable (billing mode and throughput, global secondary indexes one
//! per call, streams, SSE, table class, warm throughput, deletion protection), UpdateTimeToLive,
//! UpdateContinuousBackups, UpdateContributorInsights, the Kinesis streaming destination calls,
//! resource policies and tags. Before each UpdateTable call the table is waited on until it and
//! every index are ACTIVE, as DynamoDB requires; `--no-wait` skips only the final wait.

mod read;
mod settings;
mod spec;
mod update;

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{
    BillingMode, IndexStatus, TableClass, TableDescription, TableStatus, Tag,
};
use aws_sdk_dynamodb::Client;
use aws_smithy_runtime_api::http::Response as HttpResponse;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use serde_json::{json, Map, Value};

use self::settings::{configure_new_table, is_policy_absent, needs_configuration, stream_spec};
use self::spec::Spec;
use crate::aws::{classify, error_code, ErrorKind};
use crate::provider::sdk::scaffold::Service;
use crate::provider::{
    naming, Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const TABLE: &str = "AWS::DynamoDB::Table";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const TABLE_PROPERTIES: &[&str] = &[
    "AttributeDefinitions",
    "BillingMode",
    "ContributorInsightsSpecification",
    "DeletionProtectionEnabled",
    "GlobalSecondaryIndexes",
    "ImportSourceSpecification",
    "KeySchema",
    "KinesisStreamSpecification",
    "LocalSecondaryIndexes",
    "OnDemandThroughput",
    "PointInTimeRecoverySpecification",
    "ProvisionedThroughput",
    "ResourcePolicy",
    "SSESpecification",
    "StreamSpecification",
    "TableClass",
    "TableName",
    "Tags",
    "TimeToLiveSpecification",
    "WarmThroughput",
];
const SERVICE: &str = "dynamodb";

/// How long a table or index may take to become ACTIVE (index backfills can be slow).
const ACTIVE_LIMIT: Duration = Duration::from_secs(60 * 60);
/// How long a deleted table may take to disappear.
const GONE_LIMIT: Duration = Duration::from_secs(30 * 60);
const POLL_FIRST: Duration = Duration::from_millis(500);
const POLL_MAX: Duration = Duration::from_secs(10);
/// Attempts at a call DynamoDB refuses while the table is busy (ResourceInUse, LimitExceeded).
const BUSY_ATTEMPTS: u32 = 8;

pub struct DynamoDbTableProvider;

type Sdk<E> = SdkError<E, HttpResponse>;

fn client(ctx: &ProviderContext<'_>) -> Client {
    ctx.clients.cached(Some(ctx.region), Client::new)
}

/// Every failed call's typed error (`scaffold::Service`).
pub(super) const API: Service = Service(SERVICE);

fn is_busy<E: ProvideErrorMetadata>(err: &Sdk<E>) -> bool {
    error_code(err) == Some("ResourceInUseException") || is_over_limit(err)
}

/// Too many concurrent table operations in the account, or throttled.
fn is_over_limit<E: ProvideErrorMetadata>(err: &Sdk<E>) -> bool {
    error_code(err) == Some("LimitExceededException") || classify(err) == ErrorKind::Throttled
}

fn next_delay(delay: Duration) -> Duration {
    (delay * 2).min(POLL_MAX)
}

/// Runs `call` again, with backoff, while DynamoDB answers that the table is busy.
async fn retry_busy<T, E, F, Fut>(call: F) -> Result<T, Sdk<E>>
where
    E: ProvideErrorMetadata,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Sdk<E>>>,
{
    retry_while(call, is_busy).await
}

async fn retry_while<T, E, F, Fut>(mut call: F, retryable: fn(&Sdk<E>) -> bool) -> Result<T, Sdk<E>>
where
    E: ProvideErrorMetadata,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Sdk<E>>>,
{
    let mut delay = Duration::from_secs(1);
    let mut attempt = 1;
    loop {
        match call().await {
            Err(e) if attempt < BUSY_ATTEMPTS && retryable(&e) => {
                tokio::time::sleep(delay).await;
                delay = next_delay(delay);
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// DescribeTable; `None` when the table does not exist.
async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    table: &str,
) -> Result<Option<TableDescription>, ProviderError> {
    match client.describe_table().table_name(table).send().await {
        Ok(out) => Ok(out.table),
        Err(e) if classify(&e) == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(API.err(req, "DescribeTable", table, &e)),
    }
}

fn ready(t: &TableDescription) -> bool {
    t.table_status() == Some(&TableStatus::Active)
        && t.global_secondary_indexes()
            .iter()
            .all(|g| g.index_status() == Some(&IndexStatus::Active))
}

fn timeout(req: &ResourceRequest<'_>, limit: Duration, detail: String) -> ProviderError {
    ProviderError::Timeout {
        logical_id: req.logical_id.to_owned(),
        resource_type: req.resource_type.to_owned(),
        seconds: limit.as_secs(),
        detail,
    }
}

/// Polls until the table and all its global secondary indexes are ACTIVE.
async fn wait_ready(
    client: &Client,
    req: &ResourceRequest<'_>,
    table: &str,
) -> Result<TableDescription, ProviderError> {
    let start = Instant::now();
    let mut delay = POLL_FIRST;
    loop {
        let t = describe(client, req, table).await?.ok_or_else(|| {
            ProviderError::failed(
                req,
                format!("table {table} disappeared while waiting for it to become ACTIVE"),
            )
        })?;
        if ready(&t) {
            return Ok(t);
        }
        if start.elapsed() >= ACTIVE_LIMIT {
            let status = t
                .table_status()
                .map(|s| s.as_str().to_owned())
                .unwrap_or_default();
            return Err(timeout(
                req,
                ACTIVE_LIMIT,
                format!("table {table} is {status}, not ACTIVE with all indexes ACTIVE"),
            ));
        }
        tokio::time::sleep(delay).await;
        delay = next_delay(delay);
    }
}

/// Polls until the table no longer exists.
async fn wait_gone(
    client: &Client,
    req: &ResourceRequest<'_>,
    table: &str,
) -> Result<(), ProviderError> {
    let start = Instant::now();
    let mut delay = POLL_FIRST;
    while describe(client, req, table).await?.is_some() {
        if start.elapsed() >= GONE_LIMIT {
            return Err(timeout(
                req,
                GONE_LIMIT,
                format!("table {table} is still being deleted"),
            ));
        }
        tokio::time::sleep(delay).await;
        delay = next_delay(delay);
    }
    Ok(())
}

/// What `Fn::GetAtt` reads: `Arn`, and `StreamArn` while a stream is on.
fn attributes(t: &TableDescription) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(arn) = t.table_arn() {
        out.insert("Arn".into(), json!(arn));
    }
    let streaming = t.stream_specification().is_some_and(|s| s.stream_enabled());
    if let (true, Some(arn)) = (streaming, t.latest_stream_arn()) {
        out.insert("StreamArn".into(), json!(arn));
    }
    out
}

fn provisioned(t: &TableDescription) -> Provisioned {
    Provisioned {
        physical_id: t.table_name().unwrap_or_default().to_owned(),
        attributes: attributes(t),
    }
}

fn sdk_tags(
    req: &ResourceRequest<'_>,
    tags: &BTreeMap<String, String>,
) -> Result<Vec<Tag>, ProviderError> {
    tags.iter()
        .map(|(k, v)| {
            Tag::builder()
                .key(k)
                .value(v)
                .build()
                .map_err(|e| ProviderError::failed(req, format!("property Tags: {e}")))
        })
        .collect()
}

async fn create_table(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let spec = Spec::new(req);
    let props = spec.props();
    if props.get("ImportSourceSpecification").is_some() {
        return Err(ProviderError::failed(
            req,
            "ImportSourceSpecification (creating a table from an S3 import) is not supported by the SDK provider",
        ));
    }
    let name = match props.str("TableName")? {
        Some(n) => n,
        None => naming::generate(ctx.stack_name, req.logical_id, naming::DYNAMODB_TABLE),
    };
    let mode = spec.billing_mode()?;
    let is_provisioned = mode == BillingMode::Provisioned;
    let gsis = spec
        .global_indexes()?
        .iter()
        .map(|g| g.for_create(&spec, is_provisioned))
        .collect::<Result<Vec<_>, _>>()?;
    let lsis = spec.local_indexes()?;
    let stream = spec
        .stream_view_type()?
        .map(|vt| {
            stream_spec(Some(&vt)).map_err(|e| {
                ProviderError::failed(req, format!("property StreamSpecification: {e}"))
            })
        })
        .transpose()?;
    let tags = sdk_tags(req, &spec.tags()?)?;
    let call = client
        .create_table()
        .table_name(&name)
        .set_attribute_definitions(Some(spec.attribute_definitions()?))
        .set_key_schema(Some(spec.key_schema()?))
        .billing_mode(mode)
        .set_provisioned_throughput(if is_provisioned {
            spec.throughput_at(
                req.properties.get("ProvisionedThroughput"),
                "ProvisionedThroughput",
            )?
        } else {
            None
        })
        .set_on_demand_throughput(if is_provisioned {
            None
        } else {
            spec.on_demand_at(
                req.properties.get("OnDemandThroughput"),
                "OnDemandThroughput",
            )?
        })
        .set_warm_throughput(spec.warm_at(req.properties.get("WarmThroughput"), "WarmThroughput")?)
        .set_global_secondary_indexes((!gsis.is_empty()).then_some(gsis))
        .set_local_secondary_indexes((!lsis.is_empty()).then_some(lsis))
        .set_stream_specification(stream)
        .set_sse_specification(spec.sse()?)
        .set_table_class(
            props
                .str("TableClass")?
                .map(|c| TableClass::from(c.as_str())),
        )
        .set_deletion_protection_enabled(props.bool("DeletionProtectionEnabled")?)
        .set_resource_policy(spec.table_policy()?)
        .set_tags((!tags.is_empty()).then_some(tags));
    // ResourceInUse here means the table exists: only account limits are retried.
    let created = retry_while(|| call.clone().send(), is_over_limit)
        .await
        .map_err(|e| API.err(req, "CreateTable", &name, &e))?;
    let mut table = created.table_description.ok_or_else(|| {
        ProviderError::failed(
            req,
            format!("CreateTable for {name} returned no table description"),
        )
    })?;

    let configure = needs_configuration(&spec, req)?;
    if configure || !ctx.no_wait {
        table = wait_ready(client, req, &name).await?;
    }
    if configure {
        if let Err(err) = configure_new_table(client, req, &spec, &table).await {
            // Leave nothing half-made behind: the engine records no table for a failed create.
            let _ = client.delete_table().table_name(&name).send().await;
            return Err(err);
        }
    }
    Ok(provisioned(&table))
}

async fn delete_table(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    table: &str,
) -> Result<(), ProviderError> {
    let call = client.delete_table().table_name(table);
    match retry_busy(|| call.clone().send()).await {
        Ok(_) => {}
        Err(e) if classify(&e) == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(API.err(req, "DeleteTable", table, &e)),
    }
    if !ctx.no_wait {
        wait_gone(client, req, table).await?;
    }
    Ok(())
}

async fn read_table(
    client: &Client,
    req: &ResourceRequest<'_>,
    table: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(t) = describe(client, req, table).await? else {
        return Ok(None);
    };
    let mut out = read::table_properties(&t);
    let ttl = client
        .describe_time_to_live()
        .table_name(table)
        .send()
        .await
        .map_err(|e| API.err(req, "DescribeTimeToLive", table, &e))?;
    if let Some(d) = ttl.time_to_live_description() {
        if let Some(v) = read::ttl(d.time_to_live_status(), d.attribute_name()) {
            out.insert("TimeToLiveSpecification".into(), v);
        }
    }
    let backups = client
        .describe_continuous_backups()
        .table_name(table)
        .send()
        .await
        .map_err(|e| API.err(req, "DescribeContinuousBackups", table, &e))?;
    if let Some(p) = backups
        .continuous_backups_description()
        .and_then(|d| d.point_in_time_recovery_description())
    {
        out.insert(
            "PointInTimeRecoverySpecification".into(),
            read::pitr(
                p.point_in_time_recovery_status(),
                p.recovery_period_in_days(),
            ),
        );
    }
    if let Some(arn) = t.table_arn() {
        let tags = list_tags(client, req, arn).await?;
        if !tags.is_empty() {
            let list = tags
                .into_iter()
                .map(|(k, v)| json!({"Key": k, "Value": v}))
                .collect();
            out.insert("Tags".into(), Value::Array(list));
        }
        match client.get_resource_policy().resource_arn(arn).send().await {
            Ok(p) => {
                if let Some(doc) = p.policy() {
                    let doc: Value = serde_json::from_str(doc).unwrap_or_else(|_| json!(doc));
                    out.insert("ResourcePolicy".into(), json!({"PolicyDocument": doc}));
                }
            }
            Err(e) if is_policy_absent(&e) => {}
            Err(e) => return Err(API.err(req, "GetResourcePolicy", arn, &e)),
        }
    }
    Ok(Some(out))
}

/// The table's tags, without the `aws:` ones the service adds.
async fn list_tags(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<BTreeMap<String, String>, ProviderError> {
    let mut out = BTreeMap::new();
    let mut token: Option<String> = None;
    loop {
        let page = client
            .list_tags_of_resource()
            .resource_arn(arn)
            .set_next_token(token.take())
            .send()
            .await
            .map_err(|e| API.err(req, "ListTagsOfResource", arn, &e))?;
        for t in page.tags() {
            if !t.key().starts_with("aws:") {
                out.insert(t.key().to_owned(), t.value().to_owned());
            }
        }
        match page.next_token() {
            Some(t) if !t.is_empty() => token = Some(t.to_owned()),
            _ => return Ok(out),
        }
    }
}

#[async_trait]
impl Provider for DynamoDbTableProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[TABLE]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(TABLE_PROPERTIES.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        create_table(ctx, &client(ctx), req).await
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        update::update_table(ctx, &client(ctx), req, physical_id, previous).await
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        delete_table(ctx, &client(ctx), req, physical_id).await
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        read_table(&client(ctx), req, physical_id).await
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        match describe(&client(ctx), req, physical_id).await? {
            Some(t) => Ok(provisioned(&t)),
            None => Err(ProviderError::failed(
                req,
                format!("table {physical_id} does not exist"),
            )),
        }
    }
}
