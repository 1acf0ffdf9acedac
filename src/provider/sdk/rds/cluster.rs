//! `AWS::RDS::DBCluster`: physical id and `Ref` the cluster identifier (RDS keeps it in lower
//! case; generated as CloudFormation does when the template gives none); `Fn::GetAtt`
//! `Endpoint.Address`, `Endpoint.Port`, `ReadEndpoint.Address`, `DBClusterArn`,
//! `DBClusterResourceId` and, when RDS manages the master password,
//! `MasterUserSecret.SecretArn`.
//!
//! The schema's create-only properties (and `Engine`, `AvailabilityZones`) replace the
//! cluster; every property in [`MODIFY`] changes in place through ModifyDBCluster with
//! `ApplyImmediately`, logs exports through its enable / disable lists, tags on the ARN.
//! `MasterUserPassword` is sent and never read back or reported. Create waits until the
//! cluster is `available` (its instances and its endpoint's users need that) unless
//! `--no-wait`; delete waits until it is gone (its subnet group cannot go before).

use std::sync::LazyLock;

use aws_sdk_rds::operation::create_db_cluster::builders::CreateDBClusterFluentBuilder;
use aws_sdk_rds::operation::modify_db_cluster::builders::ModifyDBClusterFluentBuilder;
use aws_sdk_rds::types::{DbCluster, ServerlessV2ScalingConfiguration};
use aws_sdk_rds::Client;
use serde_json::{json, Map, Value};

use super::database::{self, Database};
use super::fields::{self, field, Field};
use super::{create_tags, identifier, identifier_read, read_tags, unless_gone, RDS};
use crate::provider::props::{changed, Props};
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
use crate::provider::sdk::scaffold::nested::{Fields, Obj};
use crate::provider::sdk::scaffold::readback::as_asked;
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// `ServerlessV2ScalingConfiguration` (Aurora Serverless v2 capacity), as RDS takes it.
fn scaling(p: &Props<'_>) -> Result<Option<ServerlessV2ScalingConfiguration>, ProviderError> {
    let Some(v) = p.get("ServerlessV2ScalingConfiguration") else {
        return Ok(None);
    };
    let req = p.request();
    let o = Obj::new(
        req,
        "ServerlessV2ScalingConfiguration",
        v,
        &["MinCapacity", "MaxCapacity", "SecondsUntilAutoPause"],
    )?;
    let capacity = |key: &str| -> Result<Option<f64>, ProviderError> {
        match v.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| {
                p.failed(format!(
                    "property ServerlessV2ScalingConfiguration.{key} must be a number"
                ))
            }),
            Some(_) => Err(p.failed(format!(
                "property ServerlessV2ScalingConfiguration.{key} must be a number"
            ))),
        }
    };
    Ok(Some(
        ServerlessV2ScalingConfiguration::builder()
            .set_min_capacity(capacity("MinCapacity")?)
            .set_max_capacity(capacity("MaxCapacity")?)
            .set_seconds_until_auto_pause(o.i32("SecondsUntilAutoPause")?)
            .build(),
    ))
}

/// The properties CreateDBCluster takes as one field each.
const CREATE: &[Field<CreateDBClusterFluentBuilder>] = &[
    field!(int "AllocatedStorage" => set_allocated_storage),
    field!(flag "AutoMinorVersionUpgrade" => set_auto_minor_version_upgrade),
    field!(list "AvailabilityZones" => set_availability_zones),
    field!(int "BackupRetentionPeriod" => set_backup_retention_period),
    field!(flag "CopyTagsToSnapshot" => set_copy_tags_to_snapshot),
    field!(text "DatabaseName" => set_database_name),
    field!(text "DBClusterInstanceClass" => set_db_cluster_instance_class),
    field!(text "DBClusterParameterGroupName" => set_db_cluster_parameter_group_name),
    field!(text "DBSubnetGroupName" => set_db_subnet_group_name),
    field!(flag "DeletionProtection" => set_deletion_protection),
    field!(list "EnableCloudwatchLogsExports" => set_enable_cloudwatch_logs_exports),
    field!(flag "EnableHttpEndpoint" => set_enable_http_endpoint),
    field!(flag "EnableIAMDatabaseAuthentication" => set_enable_iam_database_authentication),
    field!(text "Engine" => set_engine),
    field!(text "EngineMode" => set_engine_mode),
    field!(text "EngineVersion" => set_engine_version),
    field!(int "Iops" => set_iops),
    field!(text "KmsKeyId" => set_kms_key_id),
    field!(flag "ManageMasterUserPassword" => set_manage_master_user_password),
    field!(text "MasterUserPassword" => set_master_user_password),
    field!(text "MasterUsername" => set_master_username),
    ("MasterUserSecret", |b, p| {
        Ok(b.set_master_user_secret_kms_key_id(fields::secret_key(p)?))
    }),
    field!(int "MonitoringInterval" => set_monitoring_interval),
    field!(text "MonitoringRoleArn" => set_monitoring_role_arn),
    field!(text "NetworkType" => set_network_type),
    field!(flag "PerformanceInsightsEnabled" => set_enable_performance_insights),
    field!(text "PerformanceInsightsKmsKeyId" => set_performance_insights_kms_key_id),
    field!(int "PerformanceInsightsRetentionPeriod" => set_performance_insights_retention_period),
    field!(int "Port" => set_port),
    field!(text "PreferredBackupWindow" => set_preferred_backup_window),
    field!(text "PreferredMaintenanceWindow" => set_preferred_maintenance_window),
    field!(flag "PubliclyAccessible" => set_publicly_accessible),
    ("ServerlessV2ScalingConfiguration", |b, p| {
        Ok(b.set_serverless_v2_scaling_configuration(scaling(p)?))
    }),
    field!(flag "StorageEncrypted" => set_storage_encrypted),
    field!(text "StorageType" => set_storage_type),
    field!(list "VpcSecurityGroupIds" => set_vpc_security_group_ids),
];

/// The properties ModifyDBCluster changes in place.
const MODIFY: &[Field<ModifyDBClusterFluentBuilder>] = &[
    field!(int "AllocatedStorage" => set_allocated_storage),
    field!(flag "AllowMajorVersionUpgrade" => set_allow_major_version_upgrade),
    field!(flag "AutoMinorVersionUpgrade" => set_auto_minor_version_upgrade),
    field!(int "BackupRetentionPeriod" => set_backup_retention_period),
    field!(flag "CopyTagsToSnapshot" => set_copy_tags_to_snapshot),
    field!(text "DBClusterInstanceClass" => set_db_cluster_instance_class),
    field!(text "DBClusterParameterGroupName" => set_db_cluster_parameter_group_name),
    field!(flag "DeletionProtection" => set_deletion_protection),
    field!(flag "EnableHttpEndpoint" => set_enable_http_endpoint),
    field!(flag "EnableIAMDatabaseAuthentication" => set_enable_iam_database_authentication),
    field!(text "EngineVersion" => set_engine_version),
    field!(int "Iops" => set_iops),
    field!(flag "ManageMasterUserPassword" => set_manage_master_user_password),
    field!(text "MasterUserPassword" => set_master_user_password),
    ("MasterUserSecret", |b, p| {
        Ok(b.set_master_user_secret_kms_key_id(fields::secret_key(p)?))
    }),
    field!(int "MonitoringInterval" => set_monitoring_interval),
    field!(text "MonitoringRoleArn" => set_monitoring_role_arn),
    field!(text "NetworkType" => set_network_type),
    field!(flag "PerformanceInsightsEnabled" => set_enable_performance_insights),
    field!(text "PerformanceInsightsKmsKeyId" => set_performance_insights_kms_key_id),
    field!(int "PerformanceInsightsRetentionPeriod" => set_performance_insights_retention_period),
    field!(int "Port" => set_port),
    field!(text "PreferredBackupWindow" => set_preferred_backup_window),
    field!(text "PreferredMaintenanceWindow" => set_preferred_maintenance_window),
    ("ServerlessV2ScalingConfiguration", |b, p| {
        Ok(b.set_serverless_v2_scaling_configuration(scaling(p)?))
    }),
    field!(text "StorageType" => set_storage_type),
    field!(list "VpcSecurityGroupIds" => set_vpc_security_group_ids),
];

/// Properties RDS cannot change on a live cluster although the schema does not mark them
/// create-only.
const REPLACING: &[&str] = &["Engine", "AvailabilityZones"];

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control).
pub(super) static PROPERTIES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    fields::names(
        CREATE,
        &["AllowMajorVersionUpgrade", "DBClusterIdentifier", "Tags"],
    )
});

async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<DbCluster>, ProviderError> {
    Ok(unless_gone(
        client
            .describe_db_clusters()
            .db_cluster_identifier(id)
            .send()
            .await,
        req,
        "DescribeDBClusters",
        id,
    )?
    .and_then(|out| out.db_clusters().first().cloned()))
}

/// The shared steps' view of the type ([`database`]).
struct Cluster;

impl Database for Cluster {
    type Live = DbCluster;
    const KIND: &'static str = "DB cluster";
    fn describe<'a>(
        client: &'a Client,
        req: &'a ResourceRequest<'a>,
        id: &'a str,
    ) -> impl std::future::Future<Output = Result<Option<DbCluster>, ProviderError>> + Send + 'a
    {
        describe(client, req, id)
    }
    fn id(live: &DbCluster) -> Option<&str> {
        live.db_cluster_identifier()
    }
    fn status(live: &DbCluster) -> Option<&str> {
        live.status()
    }
    fn arn(live: &DbCluster) -> Option<&str> {
        live.db_cluster_arn()
    }
    fn reported(id: &str, live: &DbCluster) -> Provisioned {
        reported(id, live)
    }
}

/// What `Fn::GetAtt` reads. `Endpoint.Port` is a string, as CloudFormation reports it.
fn reported(id: &str, c: &DbCluster) -> Provisioned {
    let mut attrs = vec![
        (
            "DBClusterArn",
            json!(c.db_cluster_arn().unwrap_or_default()),
        ),
        (
            "DBClusterResourceId",
            json!(c.db_cluster_resource_id().unwrap_or_default()),
        ),
        ("Endpoint.Address", json!(c.endpoint().unwrap_or_default())),
        (
            "Endpoint.Port",
            json!(c.port().map(|p| p.to_string()).unwrap_or_default()),
        ),
        (
            "ReadEndpoint.Address",
            json!(c.reader_endpoint().unwrap_or_default()),
        ),
    ];
    if let Some(arn) = c.master_user_secret().and_then(|s| s.secret_arn()) {
        attrs.push(("MasterUserSecret.SecretArn", json!(arn)));
    }
    provisioned(id, &attrs)
}

pub(super) async fn provisioned_of(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    Ok(describe(client, req, id).await?.map(|c| reported(id, &c)))
}

pub(super) async fn create(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let id = identifier(ctx, req, "DBClusterIdentifier")?;
    let builder = client
        .create_db_cluster()
        .db_cluster_identifier(&id)
        .set_tags(create_tags(req)?);
    let out = fields::create(req, CREATE, builder)?
        .send()
        .await
        .map_err(|e| RDS.err(req, "CreateDBCluster", &id, &e))?;
    database::created::<Cluster>(ctx, client, req, out.db_cluster()).await
}

pub(super) async fn update(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    if let Some(replace) = create_only_change(req, previous, REPLACING) {
        return Ok(replace);
    }
    let builder = client
        .modify_db_cluster()
        .db_cluster_identifier(id)
        .apply_immediately(true);
    let (mut builder, mut any) = fields::modify(req, previous, MODIFY, builder)?;
    if let Some(logs) = database::logs_change(req, previous)? {
        any = true;
        builder = builder.cloudwatch_logs_export_configuration(logs);
    }
    if any {
        builder
            .send()
            .await
            .map_err(|e| RDS.err(req, "ModifyDBCluster", id, &e))?;
    }
    // The endpoint moves with the port: what connects to it needs the new one.
    let settle = any && changed(previous, req.properties, "Port");
    database::updated::<Cluster>(ctx, client, req, id, previous, settle).await
}

pub(super) async fn delete(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    let asked = unless_gone(
        client
            .delete_db_cluster()
            .db_cluster_identifier(id)
            // A final snapshot, when DeletionPolicy asks for one, was taken before this call.
            .skip_final_snapshot(true)
            .send()
            .await,
        req,
        "DeleteDBCluster",
        id,
    )?;
    if asked.is_none() {
        return Ok(());
    }
    database::until_gone::<Cluster>(client, req, id).await
}

pub(super) async fn read(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(c) = describe(client, req, id).await? else {
        return Ok(None);
    };
    let groups: Vec<&str> = c
        .vpc_security_groups()
        .iter()
        .filter_map(|g| g.vpc_security_group_id())
        .collect();
    let logs = c.enabled_cloudwatch_logs_exports();
    let live = Fields::new()
        .put(
            "DBClusterIdentifier",
            Some(identifier_read(req, "DBClusterIdentifier", id)?),
        )
        .put("AllocatedStorage", c.allocated_storage())
        .put("AutoMinorVersionUpgrade", c.auto_minor_version_upgrade())
        .put(
            "AvailabilityZones",
            (!c.availability_zones().is_empty()).then(|| json!(c.availability_zones())),
        )
        .put("BackupRetentionPeriod", c.backup_retention_period())
        .put("CopyTagsToSnapshot", c.copy_tags_to_snapshot())
        .put("DatabaseName", c.database_name())
        .put("DBClusterInstanceClass", c.db_cluster_instance_class())
        .put(
            "DBClusterParameterGroupName",
            c.db_cluster_parameter_group(),
        )
        .put("DBSubnetGroupName", c.db_subnet_group())
        .put("DeletionProtection", c.deletion_protection())
        .put(
            "EnableCloudwatchLogsExports",
            (!logs.is_empty()).then(|| json!(logs)),
        )
        .put("EnableHttpEndpoint", c.http_endpoint_enabled())
        .put(
            "EnableIAMDatabaseAuthentication",
            c.iam_database_authentication_enabled(),
        )
        .put("Engine", c.engine())
        .put("EngineMode", c.engine_mode())
        .put("EngineVersion", c.engine_version())
        .put("Iops", c.iops())
        .put("KmsKeyId", c.kms_key_id())
        .put(
            "ManageMasterUserPassword",
            Some(c.master_user_secret().is_some()),
        )
        .put("MasterUsername", c.master_username())
        .put(
            "MasterUserSecret",
            c.master_user_secret()
                .map(|s| Fields::new().put("KmsKeyId", s.kms_key_id()).value()),
        )
        .put("MonitoringInterval", c.monitoring_interval())
        .put("MonitoringRoleArn", c.monitoring_role_arn())
        .put("NetworkType", c.network_type())
        .put(
            "PerformanceInsightsEnabled",
            c.performance_insights_enabled(),
        )
        .put(
            "PerformanceInsightsKmsKeyId",
            c.performance_insights_kms_key_id(),
        )
        .put(
            "PerformanceInsightsRetentionPeriod",
            c.performance_insights_retention_period(),
        )
        .put("Port", c.port())
        .put("PreferredBackupWindow", c.preferred_backup_window())
        .put(
            "PreferredMaintenanceWindow",
            c.preferred_maintenance_window(),
        )
        .put("PubliclyAccessible", c.publicly_accessible())
        .put(
            "ServerlessV2ScalingConfiguration",
            c.serverless_v2_scaling_configuration().map(|s| {
                Fields::new()
                    .put("MinCapacity", s.min_capacity())
                    .put("MaxCapacity", s.max_capacity())
                    .put("SecondsUntilAutoPause", s.seconds_until_auto_pause())
                    .value()
            }),
        )
        .put("StorageEncrypted", c.storage_encrypted())
        .put("StorageType", c.storage_type())
        .put("VpcSecurityGroupIds", Some(json!(groups)))
        .map();
    let mut props = as_asked(req, live);
    if let Some(arn) = c.db_cluster_arn() {
        read_tags(client, req, arn, &mut props).await?;
    }
    Ok(Some(props))
}
