//! `cdkd bootstrap`: create the state bucket, or re-apply its settings with `--force`.
//!
//! The bucket gets versioning (state history is the recovery path), default SSE-S3 encryption
//! and a full public access block. No bucket policy is set: a "deny unless this account" or
//! TLS-only policy is a deliberate, account-specific choice left to the user (and the local
//! emulator applies a policy's Deny while ignoring its Condition, which would lock every caller
//! out). The asset-storage marker (`cdkd-bootstrap/{region}.json`) is not written: without it
//! deploys use the CDK bootstrap's asset destinations, the legacy mode.

use aws_sdk_s3::types::{
    BucketLocationConstraint, BucketVersioningStatus, CreateBucketConfiguration,
    PublicAccessBlockConfiguration, ServerSideEncryption, ServerSideEncryptionByDefault,
    ServerSideEncryptionConfiguration, ServerSideEncryptionRule, VersioningConfiguration,
};
use serde_json::json;

use super::Session;
use crate::aws::{classify, AwsError, ErrorKind};
use crate::cli::BootstrapArgs;
use crate::error::{Error, ExitStatus, Result};
use crate::state::bucket::default_bucket_name;
use crate::ui;

pub async fn run(session: &Session, args: &BootstrapArgs) -> Result<ExitStatus> {
    let clients = session.clients().await;
    let region = clients.default_region().ok_or_else(|| {
        Error::Usage("no region for the state bucket: pass --region or set AWS_REGION".into())
    })?;
    let name = match &session.settings.state_bucket {
        Some(name) => name.clone(),
        None => default_bucket_name(&clients.account_id().await?),
    };
    let s3 = clients.s3(Some(&region));

    let existed = match s3.head_bucket().bucket(&name).send().await {
        Ok(_) => true,
        Err(e) if classify(&e) == ErrorKind::NotFound => false,
        Err(e) => return Err(AwsError::call("s3", "HeadBucket", &name, &e).into()),
    };
    let configure = !existed || args.force;
    if !existed {
        let mut create = s3.create_bucket().bucket(&name);
        if region != "us-east-1" {
            create = create.create_bucket_configuration(
                CreateBucketConfiguration::builder()
                    .location_constraint(BucketLocationConstraint::from(region.as_str()))
                    .build(),
            );
        }
        if let Err(e) = create.send().await {
            let code = crate::aws::error_code(&e).unwrap_or_default();
            if code != "BucketAlreadyOwnedByYou" {
                return Err(AwsError::call("s3", "CreateBucket", &name, &e).into());
            }
        }
    }
    if configure {
        apply_settings(&s3, &name).await?;
    }

    if args.json {
        ui::output(
            serde_json::to_string_pretty(&json!({
                "bucket": name,
                "region": region,
                "created": !existed,
                "settingsApplied": configure,
            }))
            .unwrap_or_default(),
        );
    } else if !existed {
        ui::info(format!(
            "Created state bucket {name} in {region} (versioning, SSE-S3 encryption, public access blocked)"
        ));
    } else if args.force {
        ui::info(format!(
            "State bucket {name} exists; re-applied versioning, encryption and public access block"
        ));
    } else {
        ui::info(format!("State bucket {name} already exists; nothing to do (pass --force to re-apply its settings)"));
    }
    Ok(ExitStatus::Success)
}

async fn apply_settings(s3: &aws_sdk_s3::Client, bucket: &str) -> Result<(), AwsError> {
    s3.put_bucket_versioning()
        .bucket(bucket)
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .map_err(|e| AwsError::call("s3", "PutBucketVersioning", bucket, &e))?;
    s3.put_public_access_block()
        .bucket(bucket)
        .public_access_block_configuration(
            PublicAccessBlockConfiguration::builder()
                .block_public_acls(true)
                .ignore_public_acls(true)
                .block_public_policy(true)
                .restrict_public_buckets(true)
                .build(),
        )
        .send()
        .await
        .map_err(|e| AwsError::call("s3", "PutPublicAccessBlock", bucket, &e))?;
    let by_default = ServerSideEncryptionByDefault::builder()
        .sse_algorithm(ServerSideEncryption::Aes256)
        .build()
        .map_err(|e| AwsError::Unexpected(format!("building the encryption rule failed: {e}")))?;
    let encryption = ServerSideEncryptionConfiguration::builder()
        .rules(
            ServerSideEncryptionRule::builder()
                .apply_server_side_encryption_by_default(by_default)
                .build(),
        )
        .build()
        .map_err(|e| {
            AwsError::Unexpected(format!("building the encryption configuration failed: {e}"))
        })?;
    s3.put_bucket_encryption()
        .bucket(bucket)
        .server_side_encryption_configuration(encryption)
        .send()
        .await
        .map_err(|e| AwsError::call("s3", "PutBucketEncryption", bucket, &e))?;
    Ok(())
}
