//! What CreateEventSourceMapping and UpdateEventSourceMapping share: the CloudFormation
//! properties turned into SDK values, and a macro that applies them to either request.

use aws_sdk_lambda::types::{
    AmazonManagedKafkaEventSourceConfig, DestinationConfig, DocumentDbEventSourceConfig,
    EventSourceMappingLoggingConfig, EventSourceMappingMetric, EventSourceMappingMetricsConfig,
    EventSourceMappingSystemLogLevel, Filter, FilterCriteria, FullDocument, FunctionResponseType,
    KafkaEventSourceMappingConsumptionMode, KafkaSchemaRegistryAccessConfig,
    KafkaSchemaRegistryAuthType, KafkaSchemaRegistryConfig, KafkaSchemaValidationAttribute,
    KafkaSchemaValidationConfig, OnFailure, OnSuccess, ProvisionedPollerConfig, ScalingConfig,
    SchemaRegistryEventRecordFormat, SelfManagedKafkaEventSourceConfig, SourceAccessConfiguration,
    SourceAccessType,
};

use super::Obj;
use crate::provider::ProviderError;

/// The values create and update share, each `None` when not sent.
#[derive(Default)]
pub(super) struct Fields {
    pub function_name: Option<String>,
    pub enabled: Option<bool>,
    pub batch_size: Option<i32>,
    pub filter_criteria: Option<FilterCriteria>,
    pub kms_key_arn: Option<String>,
    pub metrics_config: Option<EventSourceMappingMetricsConfig>,
    pub logging_config: Option<EventSourceMappingLoggingConfig>,
    pub scaling_config: Option<ScalingConfig>,
    pub maximum_batching_window_in_seconds: Option<i32>,
    pub parallelization_factor: Option<i32>,
    pub destination_config: Option<DestinationConfig>,
    pub maximum_record_age_in_seconds: Option<i32>,
    pub bisect_batch_on_function_error: Option<bool>,
    pub maximum_retry_attempts: Option<i32>,
    pub tumbling_window_in_seconds: Option<i32>,
    pub source_access_configurations: Option<Vec<SourceAccessConfiguration>>,
    pub function_response_types: Option<Vec<FunctionResponseType>>,
    pub amazon_managed_kafka_event_source_config: Option<AmazonManagedKafkaEventSourceConfig>,
    pub self_managed_kafka_event_source_config: Option<SelfManagedKafkaEventSourceConfig>,
    pub document_db_event_source_config: Option<DocumentDbEventSourceConfig>,
    pub provisioned_poller_config: Option<ProvisionedPollerConfig>,
}

pub(super) const FIELD_PROPERTIES: &[&str] = &[
    "FunctionName",
    "Enabled",
    "BatchSize",
    "FilterCriteria",
    "KmsKeyArn",
    "MetricsConfig",
    "LoggingConfig",
    "ScalingConfig",
    "MaximumBatchingWindowInSeconds",
    "ParallelizationFactor",
    "DestinationConfig",
    "MaximumRecordAgeInSeconds",
    "BisectBatchOnFunctionError",
    "MaximumRetryAttempts",
    "TumblingWindowInSeconds",
    "SourceAccessConfigurations",
    "FunctionResponseTypes",
    "AmazonManagedKafkaEventSourceConfig",
    "SelfManagedKafkaEventSourceConfig",
    "DocumentDBEventSourceConfig",
    "ProvisionedPollerConfig",
];

/// Lambda's default batch size for an event source.
fn default_batch_size(event_source_arn: Option<&str>) -> i32 {
    match event_source_arn {
        Some(arn) if arn.starts_with("arn:") && arn.split(':').nth(2) == Some("sqs") => 10,
        _ => 100,
    }
}

fn schema_registry(o: &Obj<'_>) -> Result<Option<KafkaSchemaRegistryConfig>, ProviderError> {
    let Some(r) = o.object("SchemaRegistryConfig")? else {
        return Ok(None);
    };
    let mut access = Vec::new();
    for a in r.objects("AccessConfigs")? {
        access.push(
            KafkaSchemaRegistryAccessConfig::builder()
                .set_type(
                    a.str("Type")?
                        .map(|t| KafkaSchemaRegistryAuthType::from(t.as_str())),
                )
                .set_uri(a.str("URI")?)
                .build(),
        );
    }
    let mut validation = Vec::new();
    for v in r.objects("SchemaValidationConfigs")? {
        validation.push(
            KafkaSchemaValidationConfig::builder()
                .set_attribute(
                    v.str("Attribute")?
                        .map(|t| KafkaSchemaValidationAttribute::from(t.as_str())),
                )
                .build(),
        );
    }
    Ok(Some(
        KafkaSchemaRegistryConfig::builder()
            .set_schema_registry_uri(r.str("SchemaRegistryURI")?)
            .set_event_record_format(
                r.str("EventRecordFormat")?
                    .map(|f| SchemaRegistryEventRecordFormat::from(f.as_str())),
            )
            .set_access_configs((!access.is_empty()).then_some(access))
            .set_schema_validation_configs((!validation.is_empty()).then_some(validation))
            .build(),
    ))
}

impl Fields {
    /// The `names` properties; with `reset`, one the template dropped returns to the default.
    pub fn read(root: &Obj<'_>, names: &[&str], reset: bool) -> Result<Self, ProviderError> {
        let want = |n: &str| names.contains(&n);
        let mut f = Fields::default();
        if want("FunctionName") {
            f.function_name = root.str("FunctionName")?;
        }
        if want("Enabled") {
            f.enabled = root.bool("Enabled")?.or(reset.then_some(true));
        }
        if want("BatchSize") {
            let default = default_batch_size(root.str("EventSourceArn")?.as_deref());
            f.batch_size = root.i32("BatchSize")?.or(reset.then_some(default));
        }
        if want("FilterCriteria") {
            let mut filters = Vec::new();
            if let Some(fc) = root.object("FilterCriteria")? {
                for filter in fc.objects("Filters")? {
                    filters.push(
                        Filter::builder()
                            .set_pattern(filter.json_text("Pattern")?)
                            .build(),
                    );
                }
            }
            f.filter_criteria = (root.get("FilterCriteria").is_some() || reset)
                .then(|| FilterCriteria::builder().set_filters(Some(filters)).build());
        }
        if want("KmsKeyArn") {
            f.kms_key_arn = root.str("KmsKeyArn")?.or_else(|| reset.then(String::new));
        }
        if want("MetricsConfig") {
            let metrics = match root.object("MetricsConfig")? {
                Some(m) => Some(m.strings("Metrics")?.unwrap_or_default()),
                None => reset.then(Vec::new),
            };
            f.metrics_config = metrics.map(|list| {
                EventSourceMappingMetricsConfig::builder()
                    .set_metrics(Some(
                        list.iter()
                            .map(|m| EventSourceMappingMetric::from(m.as_str()))
                            .collect(),
                    ))
                    .build()
            });
        }
        if want("LoggingConfig") {
            if let Some(l) = root.object("LoggingConfig")? {
                f.logging_config = Some(
                    EventSourceMappingLoggingConfig::builder()
                        .set_system_log_level(
                            l.str("SystemLogLevel")?
                                .map(|s| EventSourceMappingSystemLogLevel::from(s.as_str())),
                        )
                        .build(),
                );
            }
        }
        if want("ScalingConfig") {
            f.scaling_config = match root.object("ScalingConfig")? {
                Some(s) => Some(
                    ScalingConfig::builder()
                        .set_maximum_concurrency(s.i32("MaximumConcurrency")?)
                        .build(),
                ),
                None => reset.then(|| ScalingConfig::builder().build()),
            };
        }
        if want("MaximumBatchingWindowInSeconds") {
            f.maximum_batching_window_in_seconds = root
                .i32("MaximumBatchingWindowInSeconds")?
                .or(reset.then_some(0));
        }
        if want("ParallelizationFactor") {
            f.parallelization_factor = root.i32("ParallelizationFactor")?.or(reset.then_some(1));
        }
        if want("DestinationConfig") {
            let (on_failure, on_success) = match root.object("DestinationConfig")? {
                Some(d) => (
                    d.object("OnFailure")?
                        .map(|o| o.str("Destination"))
                        .transpose()?
                        .flatten(),
                    d.object("OnSuccess")?
                        .map(|o| o.str("Destination"))
                        .transpose()?
                        .flatten(),
                ),
                None => (None, None),
            };
            if root.get("DestinationConfig").is_some() || reset {
                let mut b = DestinationConfig::builder().on_failure(
                    OnFailure::builder()
                        .destination(on_failure.unwrap_or_default())
                        .build(),
                );
                if let Some(d) = on_success {
                    b = b.on_success(OnSuccess::builder().destination(d).build());
                }
                f.destination_config = Some(b.build());
            }
        }
        if want("MaximumRecordAgeInSeconds") {
            f.maximum_record_age_in_seconds = root
                .i32("MaximumRecordAgeInSeconds")?
                .or(reset.then_some(-1));
        }
        if want("BisectBatchOnFunctionError") {
            f.bisect_batch_on_function_error = root
                .bool("BisectBatchOnFunctionError")?
                .or(reset.then_some(false));
        }
        if want("MaximumRetryAttempts") {
            f.maximum_retry_attempts = root.i32("MaximumRetryAttempts")?.or(reset.then_some(-1));
        }
        if want("TumblingWindowInSeconds") {
            f.tumbling_window_in_seconds =
                root.i32("TumblingWindowInSeconds")?.or(reset.then_some(0));
        }
        if want("SourceAccessConfigurations") {
            let mut list = Vec::new();
            for s in root.objects("SourceAccessConfigurations")? {
                list.push(
                    SourceAccessConfiguration::builder()
                        .set_type(s.str("Type")?.map(|t| SourceAccessType::from(t.as_str())))
                        .set_uri(s.str("URI")?)
                        .build(),
                );
            }
            f.source_access_configurations =
                (root.get("SourceAccessConfigurations").is_some() || reset).then_some(list);
        }
        if want("FunctionResponseTypes") {
            f.function_response_types = root
                .strings("FunctionResponseTypes")?
                .or_else(|| reset.then(Vec::new))
                .map(|l| {
                    l.iter()
                        .map(|t| FunctionResponseType::from(t.as_str()))
                        .collect()
                });
        }
        if want("AmazonManagedKafkaEventSourceConfig") {
            if let Some(k) = root.object("AmazonManagedKafkaEventSourceConfig")? {
                f.amazon_managed_kafka_event_source_config = Some(
                    AmazonManagedKafkaEventSourceConfig::builder()
                        .set_consumer_group_id(k.str("ConsumerGroupId")?)
                        .set_schema_registry_config(schema_registry(&k)?)
                        .build(),
                );
            }
        }
        if want("SelfManagedKafkaEventSourceConfig") {
            if let Some(k) = root.object("SelfManagedKafkaEventSourceConfig")? {
                f.self_managed_kafka_event_source_config = Some(
                    SelfManagedKafkaEventSourceConfig::builder()
                        .set_consumer_group_id(k.str("ConsumerGroupId")?)
                        .set_schema_registry_config(schema_registry(&k)?)
                        .set_consumption_mode(
                            k.str("ConsumptionMode")?
                                .map(|m| KafkaEventSourceMappingConsumptionMode::from(m.as_str())),
                        )
                        .build(),
                );
            }
        }
        if want("DocumentDBEventSourceConfig") {
            if let Some(d) = root.object("DocumentDBEventSourceConfig")? {
                f.document_db_event_source_config = Some(
                    DocumentDbEventSourceConfig::builder()
                        .set_database_name(d.str("DatabaseName")?)
                        .set_collection_name(d.str("CollectionName")?)
                        .set_full_document(
                            d.str("FullDocument")?
                                .map(|m| FullDocument::from(m.as_str())),
                        )
                        .build(),
                );
            }
        }
        if want("ProvisionedPollerConfig") {
            f.provisioned_poller_config = match root.object("ProvisionedPollerConfig")? {
                Some(p) => Some(
                    ProvisionedPollerConfig::builder()
                        .set_minimum_pollers(p.i32("MinimumPollers")?)
                        .set_maximum_pollers(p.i32("MaximumPollers")?)
                        .set_poller_group_name(p.str("PollerGroupName")?)
                        .build(),
                ),
                None => reset.then(|| ProvisionedPollerConfig::builder().build()),
            };
        }
        Ok(f)
    }
}

/// Applies [`Fields`] to a Create- or UpdateEventSourceMapping request.
macro_rules! apply_fields {
    ($builder:expr, $fields:expr) => {{
        let f = $fields;
        $builder
            .set_function_name(f.function_name)
            .set_enabled(f.enabled)
            .set_batch_size(f.batch_size)
            .set_filter_criteria(f.filter_criteria)
            .set_kms_key_arn(f.kms_key_arn)
            .set_metrics_config(f.metrics_config)
            .set_logging_config(f.logging_config)
            .set_scaling_config(f.scaling_config)
            .set_maximum_batching_window_in_seconds(f.maximum_batching_window_in_seconds)
            .set_parallelization_factor(f.parallelization_factor)
            .set_destination_config(f.destination_config)
            .set_maximum_record_age_in_seconds(f.maximum_record_age_in_seconds)
            .set_bisect_batch_on_function_error(f.bisect_batch_on_function_error)
            .set_maximum_retry_attempts(f.maximum_retry_attempts)
            .set_tumbling_window_in_seconds(f.tumbling_window_in_seconds)
            .set_source_access_configurations(f.source_access_configurations)
            .set_function_response_types(f.function_response_types)
            .set_amazon_managed_kafka_event_source_config(
                f.amazon_managed_kafka_event_source_config,
            )
            .set_self_managed_kafka_event_source_config(f.self_managed_kafka_event_source_config)
            .set_document_db_event_source_config(f.document_db_event_source_config)
            .set_provisioned_poller_config(f.provisioned_poller_config)
    }};
}
pub(super) use apply_fields;
