//! `cdkd bootstrap`: create the state bucket and the region's cdkd-owned asset storage, or
//! re-apply their settings with `--force`.
//!
//! Buckets get versioning (state history is the recovery path), default SSE-S3 encryption and
//! a full public access block. No bucket policy is set: a "deny unless this account" or
//! TLS-only policy is a deliberate, account-specific choice left to the user (and the local
//! emulator applies a policy's Deny while ignoring its Condition, which would lock every caller
//! out).
//!
//! Unless `--no-assets`, the region also gets an asset bucket (`cdkd-assets-{account}-{region}`)
//! and an ECR repository (`cdkd-container-assets-{account}-{region}`, immutable tags, scan on
//! push), and the marker `cdkd-bootstrap/{region}.json` is written in the state bucket LAST,
//! once both exist: its presence is what opts deploys into cdkd-assets mode. A region whose
//! marker already names storage keeps those names (a re-run recreates what is missing). With
//! `--no-assets` no marker is written, and deploys publish to the CDK bootstrap's destinations.

use aws_sdk_ecr::types::{
    EncryptionConfiguration, EncryptionType, ImageScanningConfiguration, ImageTagMutability,
};
use aws_sdk_s3::types::{
    BucketLocationConstraint, BucketVersioningStatus, CreateBucketConfiguration,
    PublicAccessBlockConfiguration, ServerSideEncryption, ServerSideEncryptionByDefault,
    ServerSideEncryptionConfiguration, ServerSideEncryptionRule, VersioningConfiguration,
};
use serde_json::{json, Value};

use super::Session;
use crate::assets::redirect::Marker;
use crate::aws::{classify, error_code, AwsError, Clients, ErrorKind};
use crate::cli::BootstrapArgs;
use crate::error::{Error, ExitStatus, Result};
use crate::state::bucket::default_bucket_name;
use crate::state::keys::bootstrap_marker_key;
use crate::ui;

/// The default asset bucket of an account and region.
pub fn asset_bucket_name(account: &str, region: &str) -> String {
    format!("cdkd-assets-{account}-{region}")
}

/// The default container-asset repository of an account and region.
pub fn container_repository_name(account: &str, region: &str) -> String {
    format!("cdkd-container-assets-{account}-{region}")
}

pub async fn run(session: &Session, args: &BootstrapArgs) -> Result<ExitStatus> {
    if args.destroy {
        return super::bootstrap_destroy::run(session, args).await;
    }
    let clients = session.clients().await;
    let region = clients.default_region().ok_or_else(|| {
        Error::Usage("no region for the state bucket: pass --region or set AWS_REGION".into())
    })?;
    let name = match &session.settings.state_bucket {
        Some(name) => name.clone(),
        None => default_bucket_name(&clients.account_id().await?),
    };
    let s3 = clients.s3(Some(&region));

    let existed = !ensure_bucket(&s3, &name, &region).await?;
    let configure = !existed || args.force;
    if configure {
        apply_settings(&s3, &name).await?;
    }
    let assets = if args.no_assets {
        None
    } else {
        let names = Requested {
            bucket: args.asset_bucket.as_deref(),
            repository: args.container_repo.as_deref(),
        };
        Some(asset_storage(clients, &s3, &name, &region, args.force, names).await?)
    };
    let marker_key = bootstrap_marker_key(&region);
    // --no-assets never opts a region out: an earlier marker stays, and says so.
    let kept_marker = args.no_assets && marker(&s3, &name, &marker_key).await?.is_some();

    if args.json {
        ui::output(
            serde_json::to_string_pretty(&json!({
                "bucket": name,
                "region": region,
                "created": !existed,
                "settingsApplied": configure,
                "assetStorage": assets.as_ref().map(|a| a.to_json(&name, &marker_key)),
                "assetMode": if assets.is_some() || kept_marker { "cdkd-assets" } else { "legacy" },
            }))
            .unwrap_or_default(),
        );
        return Ok(ExitStatus::Success);
    }
    if !existed {
        ui::info(format!(
            "Created state bucket {name} in {region} (versioning, SSE-S3 encryption, public access blocked)"
        ));
    } else if args.force {
        ui::info(format!(
            "State bucket {name} exists; re-applied versioning, encryption and public access block"
        ));
    } else {
        ui::info(format!(
            "State bucket {name} already exists; nothing to do (pass --force to re-apply its settings)"
        ));
    }
    match &assets {
        Some(a) => a.report(&name, &marker_key, args.force),
        None if kept_marker => ui::warn(format!(
            "--no-assets: {region} stays in cdkd-assets mode, because s3://{name}/{marker_key} \
             already opts it in; delete that marker to publish to the CDK bootstrap's storage again"
        )),
        None => ui::info(format!(
            "No cdkd asset storage (--no-assets): deploys in {region} publish to the CDK \
             bootstrap's bucket and repository"
        )),
    }
    Ok(ExitStatus::Success)
}

/// What bootstrapping the region's asset storage did.
struct AssetStorage {
    bucket: String,
    repository: String,
    bucket_created: bool,
    repository_created: bool,
    marker_written: bool,
}

impl AssetStorage {
    fn to_json(&self, state_bucket: &str, marker_key: &str) -> Value {
        json!({
            "bucket": self.bucket,
            "repository": self.repository,
            "marker": format!("s3://{state_bucket}/{marker_key}"),
            "bucketCreated": self.bucket_created,
            "repositoryCreated": self.repository_created,
            "markerWritten": self.marker_written,
        })
    }

    fn report(&self, state_bucket: &str, marker_key: &str, force: bool) {
        let created: Vec<String> = [
            (self.bucket_created, format!("asset bucket {}", self.bucket)),
            (
                self.repository_created,
                format!("ECR repository {}", self.repository),
            ),
        ]
        .into_iter()
        .filter_map(|(made, what)| made.then_some(what))
        .collect();
        if !created.is_empty() {
            ui::info(format!("Created {}", created.join(" and ")));
        } else if force {
            ui::info(format!(
                "Asset bucket {} and ECR repository {} exist; re-applied their settings",
                self.bucket, self.repository
            ));
        } else {
            ui::info(format!(
                "Asset bucket {} and ECR repository {} already exist",
                self.bucket, self.repository
            ));
        }
        if self.marker_written {
            ui::info(format!(
                "Wrote s3://{state_bucket}/{marker_key}: deploys in this region publish assets to cdkd's own storage"
            ));
        }
    }
}

/// `--asset-bucket` / `--container-repo`: names instead of the defaults.
#[derive(Clone, Copy)]
struct Requested<'a> {
    bucket: Option<&'a str>,
    repository: Option<&'a str>,
}

/// Creates (or heals) the region's asset bucket and repository, then writes the marker. A
/// region whose marker names other storage than `requested` is refused (as upstream: the
/// marker's names are what every deploy already publishes to).
async fn asset_storage(
    clients: &Clients,
    state_s3: &aws_sdk_s3::Client,
    state_bucket: &str,
    region: &str,
    force: bool,
    requested: Requested<'_>,
) -> Result<AssetStorage> {
    let account = clients.account_id().await?;
    let key = bootstrap_marker_key(region);
    let existing = match marker(state_s3, state_bucket, &key).await? {
        // A newer cdkd's marker is never overwritten with this one's (older) shape.
        Some(bytes) if Marker::newer_version(&bytes).is_some() => {
            let why = Marker::parse(&bytes).err().unwrap_or_default();
            return Err(Error::Usage(format!(
                "s3://{state_bucket}/{key}: {why}; the marker was left as it is"
            )));
        }
        Some(bytes) => Marker::parse(&bytes).ok(),
        None => None,
    };
    if let Some(m) = &existing {
        let differs = |flag: &str, asked: Option<&str>, recorded: Option<&str>| match asked {
            Some(asked) if recorded != Some(asked) => Some(format!(
                "{flag} {asked}: s3://{state_bucket}/{key} already names {} for {region}; \
                 re-bootstrapping a region with another name is refused (deploys publish to the \
                 marker's storage): drop the flag, or delete the marker first",
                recorded.unwrap_or("none")
            )),
            _ => None,
        };
        let refusal =
            differs("--asset-bucket", requested.bucket, Some(&m.asset_bucket)).or_else(|| {
                differs(
                    "--container-repo",
                    requested.repository,
                    m.container_repository.as_deref(),
                )
            });
        if let Some(refusal) = refusal {
            return Err(Error::Usage(refusal));
        }
    }
    let bucket = existing
        .as_ref()
        .map(|m| m.asset_bucket.clone())
        .or_else(|| requested.bucket.map(str::to_owned))
        .unwrap_or_else(|| asset_bucket_name(&account, region));
    let repository = existing
        .as_ref()
        .and_then(|m| m.container_repository.clone())
        .or_else(|| requested.repository.map(str::to_owned))
        .unwrap_or_else(|| container_repository_name(&account, region));

    let s3 = clients.s3(Some(region));
    let bucket_created = ensure_bucket(&s3, &bucket, region).await?;
    if bucket_created || force {
        apply_settings(&s3, &bucket).await?;
    }
    let ecr = clients.ecr(Some(region));
    let repository_created = ensure_repository(&ecr, &repository).await?;
    if !repository_created && force {
        apply_repository_settings(&ecr, &repository).await?;
    }

    // Written last, and only when it does not already say this.
    let up_to_date = existing.as_ref().is_some_and(|m| {
        m.current_shape
            && m.asset_bucket == bucket
            && m.container_repository.as_deref() == Some(&repository)
    });
    if !up_to_date {
        let now = crate::state::events::iso_millis(std::time::SystemTime::now());
        let body = Marker::body(&bucket, &repository, &now);
        state_s3
            .put_object()
            .bucket(state_bucket)
            .key(&key)
            .content_type("application/json")
            .body(serde_json::to_vec_pretty(&body).unwrap_or_default().into())
            .send()
            .await
            .map_err(|e| {
                AwsError::call("s3", "PutObject", format!("s3://{state_bucket}/{key}"), &e)
            })?;
    }
    Ok(AssetStorage {
        bucket,
        repository,
        bucket_created,
        repository_created,
        marker_written: !up_to_date,
    })
}

/// The marker's body, or `None` when the region has none.
async fn marker(s3: &aws_sdk_s3::Client, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
    match s3.get_object().bucket(bucket).key(key).send().await {
        Ok(out) => {
            let bytes = out.body.collect().await.map_err(|e| {
                AwsError::Unexpected(format!("reading s3://{bucket}/{key} failed: {e}"))
            })?;
            Ok(Some(bytes.into_bytes().to_vec()))
        }
        Err(e) if classify(&e) == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(AwsError::call("s3", "GetObject", format!("s3://{bucket}/{key}"), &e).into()),
    }
}

/// Creates `name` in `region` unless it exists; whether this call created it.
pub(super) async fn ensure_bucket(
    s3: &aws_sdk_s3::Client,
    name: &str,
    region: &str,
) -> Result<bool> {
    match s3.head_bucket().bucket(name).send().await {
        Ok(_) => return Ok(false),
        Err(e) if classify(&e) == ErrorKind::NotFound => {}
        Err(e) => return Err(AwsError::call("s3", "HeadBucket", name, &e).into()),
    }
    let mut create = s3.create_bucket().bucket(name);
    if region != "us-east-1" {
        create = create.create_bucket_configuration(
            CreateBucketConfiguration::builder()
                .location_constraint(BucketLocationConstraint::from(region))
                .build(),
        );
    }
    match create.send().await {
        Ok(_) => Ok(true),
        // Made a moment ago by a concurrent bootstrap of the same account.
        Err(e) if error_code(&e) == Some("BucketAlreadyOwnedByYou") => Ok(false),
        Err(e) => Err(AwsError::call("s3", "CreateBucket", name, &e).into()),
    }
}

/// Creates the ECR repository unless it exists; whether this call created it.
async fn ensure_repository(ecr: &aws_sdk_ecr::Client, name: &str) -> Result<bool> {
    match ecr
        .describe_repositories()
        .repository_names(name)
        .send()
        .await
    {
        Ok(_) => return Ok(false),
        Err(e) if error_code(&e) == Some("RepositoryNotFoundException") => {}
        Err(e) => return Err(AwsError::call("ecr", "DescribeRepositories", name, &e).into()),
    }
    let encryption = EncryptionConfiguration::builder()
        .encryption_type(EncryptionType::Aes256)
        .build()
        .map_err(|e| AwsError::Unexpected(format!("building the ECR encryption failed: {e}")))?;
    let created = ecr
        .create_repository()
        .repository_name(name)
        .image_tag_mutability(ImageTagMutability::Immutable)
        .image_scanning_configuration(
            ImageScanningConfiguration::builder()
                .scan_on_push(true)
                .build(),
        )
        .encryption_configuration(encryption)
        .send()
        .await;
    match created {
        Ok(_) => Ok(true),
        Err(e) if error_code(&e) == Some("RepositoryAlreadyExistsException") => Ok(false),
        Err(e) => Err(AwsError::call("ecr", "CreateRepository", name, &e).into()),
    }
}

/// Immutable tags (asset tags are content hashes) and scan on push; encryption is fixed at
/// creation.
async fn apply_repository_settings(ecr: &aws_sdk_ecr::Client, name: &str) -> Result<(), AwsError> {
    ecr.put_image_tag_mutability()
        .repository_name(name)
        .image_tag_mutability(ImageTagMutability::Immutable)
        .send()
        .await
        .map_err(|e| AwsError::call("ecr", "PutImageTagMutability", name, &e))?;
    ecr.put_image_scanning_configuration()
        .repository_name(name)
        .image_scanning_configuration(
            ImageScanningConfiguration::builder()
                .scan_on_push(true)
                .build(),
        )
        .send()
        .await
        .map_err(|e| AwsError::call("ecr", "PutImageScanningConfiguration", name, &e))?;
    Ok(())
}

pub(super) async fn apply_settings(s3: &aws_sdk_s3::Client, bucket: &str) -> Result<(), AwsError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_asset_storage_names() {
        assert_eq!(
            asset_bucket_name("123456789012", "eu-west-1"),
            "cdkd-assets-123456789012-eu-west-1"
        );
        assert_eq!(
            container_repository_name("123456789012", "eu-west-1"),
            "cdkd-container-assets-123456789012-eu-west-1"
        );
    }
}
