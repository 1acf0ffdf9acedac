//! `AWS::RDS::DBInstance`: physical id and `Ref` the instance identifier (RDS keeps it in
//! lower case; generated as CloudFormation does when the template gives none); `Fn::GetAtt`
//! `Endpoint.Address`, `Endpoint.Port`, `Endpoint.HostedZoneId`, `DBInstanceArn`,
//! `DbiResourceId` and, when RDS manages the master password, `MasterUserSecret.SecretArn`.
//!
//! The schema's create-only properties (and `Engine`, `AvailabilityZone`) replace the
//! instance; every other property in [`MODIFY`] changes in place through ModifyDBInstance
//! with `ApplyImmediately` (unless the template says otherwise), logs exports through its
//! enable / disable lists, tags on the ARN. `MasterUserPassword` (resolved from its dynamic
//! reference by the engine) is sent and never read back or reported: RDS does not return it.
//! Create waits until the instance is `available` (its endpoint exists only then, and
//! whatever connects to it needs that), unless `--no-wait`; delete waits until it is gone
//! (its subnet group and security groups cannot be deleted before).

use std::sync::LazyLock;

use aws_sdk_rds::operation::create_db_instance::builders::CreateDBInstanceFluentBuilder;
use aws_sdk_rds::operation::modify_db_instance::builders::ModifyDBInstanceFluentBuilder;
use aws_sdk_rds::types::DbInstance;
use aws_sdk_rds::Client;
use serde_json::{json, Map, Value};

use super::database::{self, Database};
use super::fields::{self, field, Field};
use super::{create_tags, identifier, identifier_read, read_tags, unless_gone, RDS};
use crate::provider::props::{changed, Props};
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
use crate::provider::sdk::scaffold::nested::Fields;
use crate::provider::sdk::scaffold::readback::as_asked;
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// The properties CreateDBInstance takes as one field each.
const CREATE: &[Field<CreateDBInstanceFluentBuilder>] = &[
    field!(int "AllocatedStorage" => set_allocated_storage),
    field!(flag "AutoMinorVersionUpgrade" => set_auto_minor_version_upgrade),
    field!(text "AvailabilityZone" => set_availability_zone),
    field!(int "BackupRetentionPeriod" => set_backup_retention_period),
    field!(text "CACertificateIdentifier" => set_ca_certificate_identifier),
    field!(text "CharacterSetName" => set_character_set_name),
    field!(flag "CopyTagsToSnapshot" => set_copy_tags_to_snapshot),
    field!(text "DBClusterIdentifier" => set_db_cluster_identifier),
    field!(text "DBInstanceClass" => set_db_instance_class),
    field!(text "DBName" => set_db_name),
    field!(text "DBParameterGroupName" => set_db_parameter_group_name),
    field!(text "DBSubnetGroupName" => set_db_subnet_group_name),
    field!(flag "DeletionProtection" => set_deletion_protection),
    field!(list "EnableCloudwatchLogsExports" => set_enable_cloudwatch_logs_exports),
    field!(flag "EnableIAMDatabaseAuthentication" => set_enable_iam_database_authentication),
    field!(flag "EnablePerformanceInsights" => set_enable_performance_insights),
    field!(text "Engine" => set_engine),
    field!(text "EngineVersion" => set_engine_version),
    field!(int "Iops" => set_iops),
    field!(text "KmsKeyId" => set_kms_key_id),
    field!(text "LicenseModel" => set_license_model),
    field!(flag "ManageMasterUserPassword" => set_manage_master_user_password),
    field!(text "MasterUserPassword" => set_master_user_password),
    field!(text "MasterUsername" => set_master_username),
    ("MasterUserSecret", |b, p| {
        Ok(b.set_master_user_secret_kms_key_id(fields::secret_key(p)?))
    }),
    field!(int "MaxAllocatedStorage" => set_max_allocated_storage),
    field!(int "MonitoringInterval" => set_monitoring_interval),
    field!(text "MonitoringRoleArn" => set_monitoring_role_arn),
    field!(flag "MultiAZ" => set_multi_az),
    field!(text "NetworkType" => set_network_type),
    field!(text "OptionGroupName" => set_option_group_name),
    field!(text "PerformanceInsightsKMSKeyId" => set_performance_insights_kms_key_id),
    field!(int "PerformanceInsightsRetentionPeriod" => set_performance_insights_retention_period),
    field!(int "Port" => set_port),
    field!(text "PreferredBackupWindow" => set_preferred_backup_window),
    field!(text "PreferredMaintenanceWindow" => set_preferred_maintenance_window),
    field!(int "PromotionTier" => set_promotion_tier),
    field!(flag "PubliclyAccessible" => set_publicly_accessible),
    field!(flag "StorageEncrypted" => set_storage_encrypted),
    field!(int "StorageThroughput" => set_storage_throughput),
    field!(text "StorageType" => set_storage_type),
    field!(text "Timezone" => set_timezone),
    field!(list "VPCSecurityGroups" => set_vpc_security_group_ids),
];

/// The properties ModifyDBInstance changes in place.
const MODIFY: &[Field<ModifyDBInstanceFluentBuilder>] = &[
    field!(int "AllocatedStorage" => set_allocated_storage),
    field!(flag "AllowMajorVersionUpgrade" => set_allow_major_version_upgrade),
    field!(flag "AutoMinorVersionUpgrade" => set_auto_minor_version_upgrade),
    field!(int "BackupRetentionPeriod" => set_backup_retention_period),
    field!(text "CACertificateIdentifier" => set_ca_certificate_identifier),
    field!(flag "CertificateRotationRestart" => set_certificate_rotation_restart),
    field!(flag "CopyTagsToSnapshot" => set_copy_tags_to_snapshot),
    field!(text "DBInstanceClass" => set_db_instance_class),
    field!(text "DBParameterGroupName" => set_db_parameter_group_name),
    field!(flag "DeletionProtection" => set_deletion_protection),
    field!(flag "EnableIAMDatabaseAuthentication" => set_enable_iam_database_authentication),
    field!(flag "EnablePerformanceInsights" => set_enable_performance_insights),
    field!(text "EngineVersion" => set_engine_version),
    field!(int "Iops" => set_iops),
    field!(text "LicenseModel" => set_license_model),
    field!(flag "ManageMasterUserPassword" => set_manage_master_user_password),
    field!(text "MasterUserPassword" => set_master_user_password),
    ("MasterUserSecret", |b, p| {
        Ok(b.set_master_user_secret_kms_key_id(fields::secret_key(p)?))
    }),
    field!(int "MaxAllocatedStorage" => set_max_allocated_storage),
    field!(int "MonitoringInterval" => set_monitoring_interval),
    field!(text "MonitoringRoleArn" => set_monitoring_role_arn),
    field!(flag "MultiAZ" => set_multi_az),
    field!(text "NetworkType" => set_network_type),
    field!(text "OptionGroupName" => set_option_group_name),
    field!(text "PerformanceInsightsKMSKeyId" => set_performance_insights_kms_key_id),
    field!(int "PerformanceInsightsRetentionPeriod" => set_performance_insights_retention_period),
    field!(int "Port" => set_db_port_number),
    field!(text "PreferredBackupWindow" => set_preferred_backup_window),
    field!(text "PreferredMaintenanceWindow" => set_preferred_maintenance_window),
    field!(int "PromotionTier" => set_promotion_tier),
    field!(flag "PubliclyAccessible" => set_publicly_accessible),
    field!(int "StorageThroughput" => set_storage_throughput),
    field!(text "StorageType" => set_storage_type),
    field!(list "VPCSecurityGroups" => set_vpc_security_group_ids),
];

/// Properties RDS cannot change on a live instance although the schema does not mark them
/// create-only.
const REPLACING: &[&str] = &["Engine", "AvailabilityZone"];

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control).
pub(super) static PROPERTIES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    fields::names(
        CREATE,
        &[
            "AllowMajorVersionUpgrade",
            "ApplyImmediately",
            "CertificateRotationRestart",
            "DBInstanceIdentifier",
            "DeleteAutomatedBackups",
            "Tags",
        ],
    )
});

async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<DbInstance>, ProviderError> {
    Ok(unless_gone(
        client
            .describe_db_instances()
            .db_instance_identifier(id)
            .send()
            .await,
        req,
        "DescribeDBInstances",
        id,
    )?
    .and_then(|out| out.db_instances().first().cloned()))
}

/// The shared steps' view of the type ([`database`]).
struct Instance;

impl Database for Instance {
    type Live = DbInstance;
    const KIND: &'static str = "DB instance";
    fn describe<'a>(
        client: &'a Client,
        req: &'a ResourceRequest<'a>,
        id: &'a str,
    ) -> impl std::future::Future<Output = Result<Option<DbInstance>, ProviderError>> + Send + 'a
    {
        describe(client, req, id)
    }
    fn id(live: &DbInstance) -> Option<&str> {
        live.db_instance_identifier()
    }
    fn status(live: &DbInstance) -> Option<&str> {
        live.db_instance_status()
    }
    fn arn(live: &DbInstance) -> Option<&str> {
        live.db_instance_arn()
    }
    fn reported(id: &str, live: &DbInstance) -> Provisioned {
        reported(id, live)
    }
}

/// What `Fn::GetAtt` reads. `Endpoint.Port` is a string, as CloudFormation reports it.
fn reported(id: &str, db: &DbInstance) -> Provisioned {
    let endpoint = db.endpoint();
    let mut attrs = vec![
        (
            "DBInstanceArn",
            json!(db.db_instance_arn().unwrap_or_default()),
        ),
        (
            "DbiResourceId",
            json!(db.dbi_resource_id().unwrap_or_default()),
        ),
        (
            "Endpoint.Address",
            json!(endpoint.and_then(|e| e.address()).unwrap_or_default()),
        ),
        (
            "Endpoint.Port",
            json!(endpoint
                .and_then(|e| e.port())
                .map(|p| p.to_string())
                .unwrap_or_default()),
        ),
        (
            "Endpoint.HostedZoneId",
            json!(endpoint
                .and_then(|e| e.hosted_zone_id())
                .unwrap_or_default()),
        ),
    ];
    if let Some(arn) = db.master_user_secret().and_then(|s| s.secret_arn()) {
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
    Ok(describe(client, req, id).await?.map(|db| reported(id, &db)))
}

pub(super) async fn create(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let id = identifier(ctx, req, "DBInstanceIdentifier")?;
    let builder = client
        .create_db_instance()
        .db_instance_identifier(&id)
        .set_tags(create_tags(req)?);
    let out = fields::create(req, CREATE, builder)?
        .send()
        .await
        .map_err(|e| RDS.err(req, "CreateDBInstance", &id, &e))?;
    database::created::<Instance>(ctx, client, req, out.db_instance()).await
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
    let apply = Props::new(req).bool("ApplyImmediately")?.unwrap_or(true);
    let builder = client
        .modify_db_instance()
        .db_instance_identifier(id)
        .apply_immediately(apply);
    let (mut builder, mut any) = fields::modify(req, previous, MODIFY, builder)?;
    if let Some(logs) = database::logs_change(req, previous)? {
        any = true;
        builder = builder.cloudwatch_logs_export_configuration(logs);
    }
    if any {
        builder
            .send()
            .await
            .map_err(|e| RDS.err(req, "ModifyDBInstance", id, &e))?;
    }
    // The endpoint moves with the port: what connects to it needs the new one.
    let settle = any && apply && changed(previous, req.properties, "Port");
    database::updated::<Instance>(ctx, client, req, id, previous, settle).await
}

pub(super) async fn delete(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    let asked = unless_gone(
        client
            .delete_db_instance()
            .db_instance_identifier(id)
            // A final snapshot, when DeletionPolicy asks for one, was taken before this call.
            .skip_final_snapshot(true)
            .set_delete_automated_backups(Props::new(req).bool("DeleteAutomatedBackups")?)
            .send()
            .await,
        req,
        "DeleteDBInstance",
        id,
    )?;
    if asked.is_none() {
        return Ok(());
    }
    database::until_gone::<Instance>(client, req, id).await
}

pub(super) async fn read(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(db) = describe(client, req, id).await? else {
        return Ok(None);
    };
    let groups: Vec<&str> = db
        .vpc_security_groups()
        .iter()
        .filter_map(|g| g.vpc_security_group_id())
        .collect();
    let logs = db.enabled_cloudwatch_logs_exports();
    let live = Fields::new()
        .put(
            "DBInstanceIdentifier",
            Some(identifier_read(req, "DBInstanceIdentifier", id)?),
        )
        .put("AllocatedStorage", db.allocated_storage())
        .put("AutoMinorVersionUpgrade", db.auto_minor_version_upgrade())
        .put("AvailabilityZone", db.availability_zone())
        .put("BackupRetentionPeriod", db.backup_retention_period())
        .put("CACertificateIdentifier", db.ca_certificate_identifier())
        .put("CharacterSetName", db.character_set_name())
        .put("CopyTagsToSnapshot", db.copy_tags_to_snapshot())
        .put("DBClusterIdentifier", db.db_cluster_identifier())
        .put("DBInstanceClass", db.db_instance_class())
        .put("DBName", db.db_name())
        .put(
            "DBParameterGroupName",
            db.db_parameter_groups()
                .first()
                .and_then(|g| g.db_parameter_group_name()),
        )
        .put(
            "DBSubnetGroupName",
            db.db_subnet_group().and_then(|g| g.db_subnet_group_name()),
        )
        .put("DeletionProtection", db.deletion_protection())
        .put(
            "EnableCloudwatchLogsExports",
            (!logs.is_empty()).then(|| json!(logs)),
        )
        .put(
            "EnableIAMDatabaseAuthentication",
            db.iam_database_authentication_enabled(),
        )
        .put(
            "EnablePerformanceInsights",
            db.performance_insights_enabled(),
        )
        .put("Engine", db.engine())
        .put("EngineVersion", db.engine_version())
        .put("Iops", db.iops())
        .put("KmsKeyId", db.kms_key_id())
        .put("LicenseModel", db.license_model())
        .put(
            "ManageMasterUserPassword",
            Some(db.master_user_secret().is_some()),
        )
        .put("MasterUsername", db.master_username())
        .put(
            "MasterUserSecret",
            db.master_user_secret()
                .map(|s| Fields::new().put("KmsKeyId", s.kms_key_id()).value()),
        )
        .put("MaxAllocatedStorage", db.max_allocated_storage())
        .put("MonitoringInterval", db.monitoring_interval())
        .put("MonitoringRoleArn", db.monitoring_role_arn())
        .put("MultiAZ", db.multi_az())
        .put("NetworkType", db.network_type())
        .put(
            "OptionGroupName",
            db.option_group_memberships()
                .first()
                .and_then(|g| g.option_group_name()),
        )
        .put(
            "PerformanceInsightsKMSKeyId",
            db.performance_insights_kms_key_id(),
        )
        .put(
            "PerformanceInsightsRetentionPeriod",
            db.performance_insights_retention_period(),
        )
        .put(
            "Port",
            db.endpoint()
                .and_then(|e| e.port())
                .or(db.db_instance_port()),
        )
        .put("PreferredBackupWindow", db.preferred_backup_window())
        .put(
            "PreferredMaintenanceWindow",
            db.preferred_maintenance_window(),
        )
        .put("PromotionTier", db.promotion_tier())
        .put("PubliclyAccessible", db.publicly_accessible())
        .put("StorageEncrypted", db.storage_encrypted())
        .put("StorageThroughput", db.storage_throughput())
        .put("StorageType", db.storage_type())
        .put("Timezone", db.timezone())
        .put("VPCSecurityGroups", Some(json!(groups)))
        .map();
    let mut props = as_asked(req, live);
    if let Some(arn) = db.db_instance_arn() {
        read_tags(client, req, arn, &mut props).await?;
    }
    Ok(Some(props))
}
