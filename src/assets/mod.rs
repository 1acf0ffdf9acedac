//! Publishing the file and container assets a stack needs before it deploys (its asset
//! manifests: the `cdk:asset-manifest` artifacts the stack artifact depends on).
//!
//! Each asset is bound to each of its destinations with `${AWS::AccountId}`,
//! `${AWS::Region}` and `${AWS::Partition}` filled in for the stack's environment, and
//! published once however many stacks need it, all in parallel: file assets to S3
//! ([`file`]; a directory as a deterministic zip, [`zip`]), skipped when the object already
//! exists; container images with docker ([`container`]), skipped when the repository already
//! holds the tag. The stack's own template is not
//! uploaded: cdkd deploys without CloudFormation and never reads it from S3.
//!
//! Destinations are used as the asset manifest names them (the CDK bootstrap's bucket and
//! repository: the spec's legacy mode) unless the region's asset-storage marker
//! (`cdkd-bootstrap/{region}.json` in the state bucket) opts it into cdkd-owned storage: then
//! the default destinations are redirected to the marker's bucket and repository, and a
//! deploy rewrites the templates to match ([`redirect`]). Publishing roles (`assumeRoleArn`)
//! are not assumed: the caller's credentials publish.

pub mod container;
pub mod file;
pub mod redirect;
pub mod references;
pub mod zip;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::assembly::assets::AssetManifest;
use crate::assembly::{AssemblyError, StackArtifact};
use crate::aws::{AwsError, Clients};
use crate::resolve::partition_for_region;
use crate::state::backend::S3Backend;
use crate::ui;
use container::{ImageJob, ImageSource};
use file::{FileJob, FileOutcome};
use redirect::{Marker, Redirect};

/// How assets are published: upstream cdkd's `--asset-publish-concurrency`,
/// `--image-build-concurrency` and `--use-cdk-bootstrap-assets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishOptions {
    /// Asset jobs at once (an S3 upload, or an image's build and push).
    pub concurrency: usize,
    /// Docker builds (or asset executables) at once, within those jobs.
    pub image_builds: usize,
    /// Publish to the destinations the asset manifest names (the CDK bootstrap's bucket and
    /// repository) even in a region opted into cdkd-owned storage, and deploy the templates
    /// unrewritten.
    pub use_cdk_bootstrap_assets: bool,
}

/// Upstream's defaults.
pub const DEFAULT_PUBLISH_CONCURRENCY: usize = 8;
pub const DEFAULT_IMAGE_BUILDS: usize = 4;

impl Default for PublishOptions {
    fn default() -> Self {
        PublishOptions {
            concurrency: DEFAULT_PUBLISH_CONCURRENCY,
            image_builds: DEFAULT_IMAGE_BUILDS,
            use_cdk_bootstrap_assets: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AssetError {
    #[error(transparent)]
    Assembly(#[from] AssemblyError),
    #[error(transparent)]
    Aws(#[from] AwsError),
    #[error("asset source {path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("asset source {path}: cannot zip: {message}")]
    Zip { path: PathBuf, message: String },
    #[error("asset {asset}: {message}")]
    Packaging { asset: String, message: String },
    #[error(
        "asset {asset}: the asset bucket {bucket} does not exist in {region}; bootstrap the \
         environment first (`cdk bootstrap` creates it)"
    )]
    MissingBucket {
        bucket: String,
        region: String,
        asset: String,
    },
    #[error(
        "container image assets need docker, which does not run here (`docker version` \
         failed; set CDK_DOCKER to use another executable); stacks that need one: {}; \
         nothing was deployed",
        .stacks.join(", ")
    )]
    DockerUnavailable { stacks: Vec<String> },
    #[error("asset {asset}: {step} failed: {message}")]
    Docker {
        asset: String,
        step: String,
        message: String,
    },
    #[error("stack {stack}: no region to publish its assets to: the stack does not pin one and none is configured (--region, AWS_REGION or the profile)")]
    NoRegion { stack: String },
    #[error("{marker} in the state bucket cannot be read: {message}; run `cdkd bootstrap` again")]
    BadMarker { marker: String, message: String },
    #[error(
        "{marker} opts {region} into cdkd-owned asset storage, but its asset bucket {bucket} \
         does not exist; run `cdkd bootstrap` again (cdkd never falls back to the CDK bucket)"
    )]
    MarkerBucketMissing {
        marker: String,
        region: String,
        bucket: String,
    },
    #[error("cannot write the redirected templates to {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} asset(s) failed to publish: {}", .0.len(), .0.join("; "))]
    Several(Vec<String>),
}

/// What publishing did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublishReport {
    pub uploaded: usize,
    pub already_present: usize,
    pub images_pushed: usize,
}

impl PublishReport {
    pub fn is_empty(&self) -> bool {
        self.uploaded + self.already_present + self.images_pushed == 0
    }
}

/// Everything the selected stacks need published, deduplicated by destination.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PublishPlan {
    pub files: Vec<FileJob>,
    pub images: Vec<ImageJob>,
}

/// Replaces `${AWS::AccountId}`, `${AWS::Region}` and `${AWS::Partition}`.
pub fn substitute(text: &str, account: &str, region: &str) -> String {
    text.replace("${AWS::AccountId}", account)
        .replace("${AWS::Region}", region)
        .replace("${AWS::Partition}", partition_for_region(region).name)
}

/// The publish work of `stacks`: every asset of their asset manifests bound to each
/// destination, in the stack's environment (its pinned account and region, else the caller's).
pub fn plan(
    stacks: &[&StackArtifact],
    caller_account: &str,
    default_region: Option<&str>,
    redirects: &HashMap<String, Redirect>,
) -> Result<PublishPlan, AssetError> {
    let mut files: BTreeMap<(String, String, String), FileJob> = BTreeMap::new();
    let mut images: BTreeMap<String, ImageJob> = BTreeMap::new();
    for stack in stacks {
        let account = stack
            .environment
            .account
            .clone()
            .unwrap_or_else(|| caller_account.to_owned());
        let Some(stack_region) = stack
            .environment
            .region
            .clone()
            .or_else(|| default_region.map(str::to_owned))
        else {
            if stack.asset_manifests.is_empty() {
                continue;
            }
            return Err(AssetError::NoRegion {
                stack: stack.display_name.clone(),
            });
        };
        for manifest_file in &stack.asset_manifests {
            let manifest = AssetManifest::load(manifest_file)?;
            let dir = manifest_file
                .parent()
                .map(PathBuf::from)
                .unwrap_or_default();
            let display_of = |id: &str, kind: &str| -> String {
                let entry = if kind == "file" {
                    manifest.files.get(id)
                } else {
                    manifest.docker_images.get(id)
                };
                entry
                    .and_then(|e| e.get("displayName"))
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| id.to_owned())
            };
            for asset in manifest.file_assets(manifest_file)? {
                if asset.source_path == stack.template_file {
                    continue;
                }
                for d in &asset.destinations {
                    let region = d
                        .region
                        .as_deref()
                        .map(|r| substitute(r, &account, &stack_region))
                        .unwrap_or_else(|| stack_region.clone());
                    let mut bucket = substitute(&d.bucket_name, &account, &region);
                    if let Some(r) = redirects.get(&region) {
                        bucket = r.bucket(&bucket);
                    }
                    let key = substitute(&d.object_key, &account, &region);
                    let job = files
                        .entry((region.clone(), bucket.clone(), key.clone()))
                        .or_insert_with(|| FileJob {
                            asset_id: asset.id.clone(),
                            display: display_of(&asset.id, "file"),
                            source_path: asset.source_path.clone(),
                            packaging: asset.packaging.clone(),
                            bucket,
                            key,
                            region,
                            stacks: Vec::new(),
                        });
                    if !job.stacks.contains(&stack.display_name) {
                        job.stacks.push(stack.display_name.clone());
                    }
                }
            }
            for (id, entry) in &manifest.docker_images {
                let source = ImageSource::from_entry(entry, &dir);
                let dests = entry
                    .get("destinations")
                    .and_then(serde_json::Value::as_object);
                for d in dests.into_iter().flat_map(|m| m.values()) {
                    let text = |k: &str| d.get(k).and_then(serde_json::Value::as_str);
                    let region = text("region")
                        .map(|r| substitute(r, &account, &stack_region))
                        .unwrap_or_else(|| stack_region.clone());
                    let mut repository = substitute(
                        text("repositoryName").unwrap_or_default(),
                        &account,
                        &region,
                    );
                    if let Some(r) = redirects.get(&region) {
                        repository = r.repository(&repository);
                    }
                    let tag = substitute(text("imageTag").unwrap_or(id), &account, &region);
                    let host = format!(
                        "{account}.dkr.ecr.{region}.{}",
                        partition_for_region(&region).url_suffix
                    );
                    let image_uri = format!("{host}/{repository}:{tag}");
                    let job = images.entry(image_uri.clone()).or_insert_with(|| ImageJob {
                        asset_id: id.clone(),
                        display: display_of(id, "image"),
                        source: source.clone(),
                        image_uri,
                        region,
                        stacks: Vec::new(),
                    });
                    if !job.stacks.contains(&stack.display_name) {
                        job.stacks.push(stack.display_name.clone());
                    }
                }
            }
        }
    }
    Ok(PublishPlan {
        files: files.into_values().collect(),
        images: images.into_values().collect(),
    })
}

/// The redirect of each region whose asset-storage marker opts into cdkd-owned storage; a
/// marker whose bucket is gone is an error, never a silent fallback.
pub async fn redirects(
    clients: &Clients,
    backend: &S3Backend,
    account: &str,
    regions: &[String],
) -> Result<HashMap<String, Redirect>, AssetError> {
    let mut out = HashMap::new();
    for region in regions {
        let key = crate::state::keys::bootstrap_marker_key(region);
        let Some((bytes, _)) = backend.get_object(&key).await? else {
            continue;
        };
        let marker = Marker::parse(&bytes).map_err(|message| AssetError::BadMarker {
            marker: key.clone(),
            message,
        })?;
        let s3 = clients.s3(Some(region));
        if let Err(e) = s3.head_bucket().bucket(&marker.asset_bucket).send().await {
            if crate::aws::classify(&e) == crate::aws::ErrorKind::NotFound {
                return Err(AssetError::MarkerBucketMissing {
                    marker: key,
                    region: region.clone(),
                    bucket: marker.asset_bucket,
                });
            }
            let target = format!("s3://{}", marker.asset_bucket);
            return Err(AwsError::call("s3", "HeadBucket", target, &e).into());
        }
        out.insert(region.clone(), Redirect::new(account, region, &marker));
    }
    Ok(out)
}

/// Redirected copies of templates, removed when dropped.
#[derive(Debug, Default)]
pub struct RedirectedTemplates {
    dir: Option<PathBuf>,
}

impl Drop for RedirectedTemplates {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Points each stack in a redirected region at copies of its assembly's templates (its own
/// and its nested stacks') with the storage references rewritten.
fn redirect_templates(
    stacks: &mut [StackArtifact],
    caller_account: &str,
    default_region: Option<&str>,
    redirects: &HashMap<String, Redirect>,
) -> Result<RedirectedTemplates, AssetError> {
    let mut guard = RedirectedTemplates::default();
    if redirects.is_empty() {
        return Ok(guard);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let root = std::env::temp_dir().join(format!("cdkd-templates-{}-{nanos}", std::process::id()));
    for stack in stacks.iter_mut() {
        let region = stack
            .environment
            .region
            .clone()
            .or_else(|| default_region.map(str::to_owned));
        let account = stack
            .environment
            .account
            .as_deref()
            .unwrap_or(caller_account);
        let Some(r) = region.and_then(|region| redirects.get(&region)) else {
            continue;
        };
        if account != r.account {
            continue;
        }
        let source_dir = stack
            .template_file
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default();
        let dir = root.join(&stack.artifact_id);
        let write_err = |path: &std::path::Path| {
            let path = path.to_owned();
            move |source| AssetError::Write { path, source }
        };
        std::fs::create_dir_all(&dir).map_err(write_err(&dir))?;
        guard.dir = Some(root.clone());
        let entries = std::fs::read_dir(&source_dir).map_err(|source| AssetError::Read {
            path: source_dir.clone(),
            source,
        })?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".template.json") {
                continue;
            }
            let path = entry.path();
            let text = std::fs::read_to_string(&path).map_err(|source| AssetError::Read {
                path: path.clone(),
                source,
            })?;
            let target = dir.join(&name);
            let rewritten = match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(mut template) => {
                    r.rewrite_template(&mut template);
                    serde_json::to_string(&template).unwrap_or(text)
                }
                // Not JSON: the deploy reports the template's own error.
                Err(_) => text,
            };
            std::fs::write(&target, rewritten).map_err(write_err(&target))?;
        }
        if let Some(name) = stack.template_file.file_name() {
            stack.template_file = dir.join(name);
        }
    }
    Ok(guard)
}

/// Publishes what `stacks` need and, for stacks in a region opted into cdkd-owned storage,
/// points them at templates rewritten to match. Keep the returned guard until the deploy ends.
pub async fn publish_for_deploy(
    clients: &Clients,
    backend: &S3Backend,
    caller_account: &str,
    mut stacks: Vec<StackArtifact>,
    options: PublishOptions,
) -> Result<(Vec<StackArtifact>, RedirectedTemplates), AssetError> {
    let default_region = clients.default_region();
    let refs: Vec<&StackArtifact> = stacks.iter().collect();
    let redirects = redirects_for(clients, backend, caller_account, &refs, options).await?;
    publish_with(clients, caller_account, &refs, &redirects, options).await?;
    drop(refs);
    let guard = redirect_templates(
        &mut stacks,
        caller_account,
        default_region.as_deref(),
        &redirects,
    )?;
    Ok((stacks, guard))
}

/// For commands that read templates without publishing (diff, a deploy's dry run): stacks in
/// a region opted into cdkd-owned storage pointed at templates rewritten as a deploy rewrites
/// them, so they compare with what the deploy recorded. Keep the guard while they are read.
pub async fn redirect_for_reading(
    clients: &Clients,
    backend: &S3Backend,
    caller_account: &str,
    mut stacks: Vec<StackArtifact>,
    options: PublishOptions,
) -> Result<(Vec<StackArtifact>, RedirectedTemplates), AssetError> {
    let default_region = clients.default_region();
    let refs: Vec<&StackArtifact> = stacks.iter().collect();
    let redirects = redirects_for(clients, backend, caller_account, &refs, options).await?;
    drop(refs);
    let guard = redirect_templates(
        &mut stacks,
        caller_account,
        default_region.as_deref(),
        &redirects,
    )?;
    Ok((stacks, guard))
}

/// Publishes everything `stacks` need, in parallel; every failure is reported together.
pub async fn publish(
    clients: &Clients,
    backend: &S3Backend,
    caller_account: &str,
    stacks: &[&StackArtifact],
    options: PublishOptions,
) -> Result<PublishReport, AssetError> {
    let redirects = redirects_for(clients, backend, caller_account, stacks, options).await?;
    publish_with(clients, caller_account, stacks, &redirects, options).await
}

/// The redirects of the regions `stacks` publish assets to; no marker is read when there is
/// nothing to publish (a stack without assets costs no AWS call here).
async fn redirects_for(
    clients: &Clients,
    backend: &S3Backend,
    caller_account: &str,
    stacks: &[&StackArtifact],
    options: PublishOptions,
) -> Result<HashMap<String, Redirect>, AssetError> {
    if options.use_cdk_bootstrap_assets {
        // The manifest's destinations verbatim: no marker is read, nothing is redirected.
        return Ok(HashMap::new());
    }
    let default_region = clients.default_region();
    let probe = plan(
        stacks,
        caller_account,
        default_region.as_deref(),
        &HashMap::new(),
    )?;
    let mut regions: Vec<String> = probe
        .files
        .iter()
        .map(|f| f.region.clone())
        .chain(probe.images.iter().map(|i| i.region.clone()))
        .collect();
    regions.sort();
    regions.dedup();
    redirects(clients, backend, caller_account, &regions).await
}

async fn publish_with(
    clients: &Clients,
    caller_account: &str,
    stacks: &[&StackArtifact],
    redirects: &HashMap<String, Redirect>,
    options: PublishOptions,
) -> Result<PublishReport, AssetError> {
    let default_region = clients.default_region();
    let plan = plan(stacks, caller_account, default_region.as_deref(), redirects)?;
    if plan.files.is_empty() && plan.images.is_empty() {
        return Ok(PublishReport::default());
    }
    let mut report = PublishReport::default();
    // An image already in its repository needs neither docker nor a push.
    let mut images = Vec::with_capacity(plan.images.len());
    for job in plan.images {
        if container::image_exists(&clients.ecr(Some(&job.region)), &job).await? {
            ui::info(format!(
                "  asset {}: already in {}",
                job.display, job.image_uri
            ));
            report.already_present += 1;
        } else {
            images.push(job);
        }
    }
    if !images.is_empty() && !container::docker_available().await {
        let mut stacks: Vec<String> = images
            .iter()
            .flat_map(|i| i.stacks.iter().cloned())
            .collect();
        stacks.sort();
        stacks.dedup();
        return Err(AssetError::DockerUnavailable { stacks });
    }

    enum Done {
        File(FileOutcome),
        Image,
    }
    let permits = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let builds = Arc::new(Semaphore::new(options.image_builds.max(1)));
    let mut tasks: JoinSet<(String, Result<Done, AssetError>)> = JoinSet::new();
    for job in plan.files {
        let s3 = clients.s3(Some(&job.region));
        let permits = permits.clone();
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let result = file::publish_file(&s3, &job).await;
            if let Ok(outcome) = &result {
                let what = match outcome {
                    FileOutcome::Uploaded => "uploaded to",
                    FileOutcome::AlreadyPresent => "already in",
                };
                ui::info(format!(
                    "  asset {}: {what} s3://{}/{}",
                    job.display, job.bucket, job.key
                ));
            }
            (job.display, result.map(Done::File))
        });
    }
    for job in images {
        let ecr = clients.ecr(Some(&job.region));
        let permits = permits.clone();
        let builds = builds.clone();
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let result = container::publish_image(&ecr, &job, &builds).await;
            if result.is_ok() {
                ui::info(format!("  asset {}: pushed {}", job.display, job.image_uri));
            }
            (job.display, result.map(|()| Done::Image))
        });
    }
    let mut failures: Vec<AssetError> = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((_, Ok(Done::File(FileOutcome::Uploaded)))) => report.uploaded += 1,
            Ok((_, Ok(Done::File(FileOutcome::AlreadyPresent)))) => report.already_present += 1,
            Ok((_, Ok(Done::Image))) => report.images_pushed += 1,
            Ok((_, Err(e))) => failures.push(e),
            Err(e) => failures.push(AssetError::Packaging {
                asset: "(task)".into(),
                message: format!("publishing stopped: {e}"),
            }),
        }
    }
    match failures.len() {
        0 => Ok(report),
        1 => Err(failures.remove(0)),
        _ => Err(AssetError::Several(
            failures.iter().map(ToString::to_string).collect(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn placeholders_are_filled_in() {
        assert_eq!(
            substitute(
                "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}",
                "123456789012",
                "eu-west-1"
            ),
            "cdk-hnb659fds-assets-123456789012-eu-west-1"
        );
        assert_eq!(
            substitute("arn:${AWS::Partition}:x", "1", "cn-north-1"),
            "arn:aws-cn:x"
        );
    }

    #[test]
    fn the_lambda_fixture_plans_its_code_asset_but_not_its_template() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/apps/lambda/cdk.out");
        let assembly = crate::assembly::CloudAssembly::load(&dir).unwrap();
        let stacks: Vec<&StackArtifact> = assembly.stacks.iter().collect();
        let plan = plan(&stacks, "123456789012", Some("us-east-1"), &HashMap::new()).unwrap();
        assert!(plan.images.is_empty());
        assert_eq!(plan.files.len(), 1, "{plan:?}");
        let job = &plan.files[0];
        assert_eq!(job.bucket, "cdk-hnb659fds-assets-123456789012-us-east-1");
        assert_eq!(
            job.key,
            "fb572e8d8b89ba04eed20c2cd2f29ce81dfb8f032efac2d1545631938d9b018f.zip"
        );
        assert_eq!(job.packaging, "zip");
        assert_eq!(job.region, "us-east-1");
        assert_eq!(job.stacks, vec!["LambdaStack".to_owned()]);
        assert!(job.source_path.is_dir());
    }

    #[test]
    fn the_nested_fixture_plans_the_child_template() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/apps/nested/cdk.out");
        let assembly = crate::assembly::CloudAssembly::load(&dir).unwrap();
        let stacks: Vec<&StackArtifact> = assembly.stacks.iter().collect();
        let plan = plan(
            &stacks,
            "111111111111",
            Some("eu-central-1"),
            &HashMap::new(),
        )
        .unwrap();
        let keys: Vec<&str> = plan.files.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(
            keys,
            vec!["41bdeb5ceecaeb5a694712f72ba80dee989bac0dab174583714f90caaea02dc6.json"]
        );
        assert_eq!(plan.files[0].packaging, "file");
    }

    #[test]
    fn a_stack_without_a_region_is_refused_only_when_it_has_assets() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/apps/lambda/cdk.out");
        let assembly = crate::assembly::CloudAssembly::load(&dir).unwrap();
        let stacks: Vec<&StackArtifact> = assembly.stacks.iter().collect();
        assert!(matches!(
            plan(&stacks, "1", None, &HashMap::new()),
            Err(AssetError::NoRegion { .. })
        ));
    }
}
