//! Container image assets: built with docker from the assembly's directory (or produced by the
//! asset's own `executable`), tagged with the ECR destination and pushed.
//!
//! An image whose tag is already in its repository (ECR DescribeImages) is neither built nor
//! pushed. docker is looked for once per run, and only when an image has to be pushed
//! (`CDK_DOCKER` names another executable, as with the CDK); where it does not run,
//! publishing fails with one error naming every stack that needs an image, before any stack
//! deploys. A push is tried first, so a credential docker already holds costs no ECR call; only
//! a push refused for credentials logs in (ECR GetAuthorizationToken, then `docker login
//! --password-stdin` to the registry host the push uses, never the token's proxyEndpoint,
//! which names the caller's own registry) and pushes again.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::AssetError;
use crate::aws::{error_code, AwsError};

/// How an image is made: built from a directory, or named by an executable's output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageSource {
    /// The build context (absolute).
    pub directory: Option<PathBuf>,
    /// A command whose standard output's last line names a local image, instead of a build.
    pub executable: Option<Vec<String>>,
    pub docker_file: Option<String>,
    pub target: Option<String>,
    pub platform: Option<String>,
    pub network_mode: Option<String>,
    pub build_args: Vec<(String, String)>,
}

impl ImageSource {
    /// Reads a `dockerImages` entry's `source`; `dir` is the asset manifest's directory.
    pub fn from_entry(entry: &Value, dir: &std::path::Path) -> Self {
        let source = entry.get("source").cloned().unwrap_or(Value::Null);
        let text = |k: &str| source.get(k).and_then(Value::as_str).map(str::to_owned);
        ImageSource {
            directory: text("directory").map(|d| dir.join(d)),
            executable: source.get("executable").and_then(Value::as_array).map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            }),
            docker_file: text("dockerFile"),
            target: text("dockerBuildTarget"),
            platform: text("platform"),
            network_mode: text("networkMode"),
            build_args: source
                .get("dockerBuildArgs")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// A container image asset bound to one resolved destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageJob {
    pub asset_id: String,
    pub display: String,
    pub source: ImageSource,
    /// `{account}.dkr.ecr.{region}.{suffix}/{repository}:{tag}`.
    pub image_uri: String,
    pub region: String,
    pub stacks: Vec<String>,
}

impl ImageJob {
    /// `{account}.dkr.ecr.{region}.{suffix}`: the registry the push goes to.
    pub fn registry_host(&self) -> &str {
        self.image_uri.split('/').next().unwrap_or_default()
    }

    /// The registry's account (the host's first label).
    pub fn registry_account(&self) -> &str {
        self.registry_host().split('.').next().unwrap_or_default()
    }

    /// (repository, tag) of the destination.
    pub fn repository_and_tag(&self) -> (&str, &str) {
        let path = self
            .image_uri
            .split_once('/')
            .map(|(_, p)| p)
            .unwrap_or_default();
        path.rsplit_once(':').unwrap_or((path, "latest"))
    }
}

/// Whether the destination repository already holds the job's tag. A missing repository or
/// tag is `false`; so is a refused DescribeImages (the push then says what is wrong).
pub async fn image_exists(ecr: &aws_sdk_ecr::Client, job: &ImageJob) -> Result<bool, AssetError> {
    let (repository, tag) = job.repository_and_tag();
    let asked = ecr
        .describe_images()
        .registry_id(job.registry_account())
        .repository_name(repository)
        .image_ids(
            aws_sdk_ecr::types::ImageIdentifier::builder()
                .image_tag(tag)
                .build(),
        )
        .send()
        .await;
    match asked {
        Ok(out) => Ok(!out.image_details().is_empty()),
        Err(e) => match error_code(&e) {
            Some("ImageNotFoundException" | "RepositoryNotFoundException") => Ok(false),
            _ if crate::aws::classify(&e) == crate::aws::ErrorKind::AccessDenied => {
                tracing::debug!("ecr DescribeImages on {} refused; pushing", job.image_uri);
                Ok(false)
            }
            _ => Err(AwsError::call("ecr", "DescribeImages", job.image_uri.clone(), &e).into()),
        },
    }
}

fn docker() -> String {
    std::env::var("CDK_DOCKER")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "docker".to_owned())
}

/// Whether docker answers (`docker version` succeeds within 20 s).
pub async fn docker_available() -> bool {
    let run = Command::new(docker())
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    matches!(
        tokio::time::timeout(Duration::from_secs(20), run).await,
        Ok(Ok(status)) if status.success()
    )
}

/// Builds (or produces), tags and pushes one image, logging in to its registry only when the
/// push is refused for credentials. The build (or the asset's executable) runs under a permit
/// of `builds` (`--image-build-concurrency`); the push does not hold one.
pub async fn publish_image(
    ecr: &aws_sdk_ecr::Client,
    job: &ImageJob,
    builds: &tokio::sync::Semaphore,
) -> Result<(), AssetError> {
    let src = &job.source;
    let build_permit = builds.acquire().await;
    let local = match (&src.executable, &src.directory) {
        (Some(command), _) if !command.is_empty() => {
            let out = run(
                job,
                "run the asset's executable",
                &command[0],
                &command[1..],
            )
            .await?;
            out.lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| AssetError::Docker {
                    asset: job.display.clone(),
                    step: "run the asset's executable".into(),
                    message: "it printed no image name".into(),
                })?
        }
        (_, Some(dir)) => {
            let local = format!("cdkdasset-{}", job.asset_id.to_ascii_lowercase());
            let mut args: Vec<String> = vec!["build".into(), "--tag".into(), local.clone()];
            let mut flag = |name: &str, value: &Option<String>| {
                if let Some(v) = value {
                    args.push(name.to_owned());
                    args.push(v.clone());
                }
            };
            flag("--file", &src.docker_file);
            flag("--target", &src.target);
            flag("--platform", &src.platform);
            flag("--network", &src.network_mode);
            for (k, v) in &src.build_args {
                args.push("--build-arg".into());
                args.push(format!("{k}={v}"));
            }
            args.push(dir.to_string_lossy().into_owned());
            run(job, "docker build", &docker(), &args).await?;
            local
        }
        _ => {
            return Err(AssetError::Docker {
                asset: job.display.clone(),
                step: "read the asset".into(),
                message: "its source names neither a directory nor an executable".into(),
            })
        }
    };
    drop(build_permit);
    run(
        job,
        "docker tag",
        &docker(),
        &["tag".into(), local, job.image_uri.clone()],
    )
    .await?;
    let push = ["push".to_owned(), job.image_uri.clone()];
    match run(job, "docker push", &docker(), &push).await {
        Ok(_) => Ok(()),
        Err(AssetError::Docker { message, .. }) if looks_like_auth(&message) => {
            tracing::debug!(
                "docker push {} refused ({message}); logging in",
                job.image_uri
            );
            login(ecr, job).await?;
            run(job, "docker push", &docker(), &push).await.map(|_| ())
        }
        Err(e) => Err(e),
    }
}

/// Hosts logged in to during this run: one login per registry, whatever the number of images.
fn logged_in() -> &'static tokio::sync::Mutex<HashSet<String>> {
    static HOSTS: OnceLock<tokio::sync::Mutex<HashSet<String>>> = OnceLock::new();
    HOSTS.get_or_init(|| tokio::sync::Mutex::new(HashSet::new()))
}

/// `docker login` to the job's registry host with an ECR authorization token.
async fn login(ecr: &aws_sdk_ecr::Client, job: &ImageJob) -> Result<(), AssetError> {
    let host = job.registry_host().to_owned();
    let mut hosts = logged_in().lock().await;
    if hosts.contains(&host) {
        // Another image's push logged in a moment ago; its credential is the fresh one.
        return Ok(());
    }
    let token = ecr
        .get_authorization_token()
        .send()
        .await
        .map_err(|e| AwsError::call("ecr", "GetAuthorizationToken", host.clone(), &e))?;
    let encoded = token
        .authorization_data()
        .iter()
        .find_map(|d| d.authorization_token())
        .unwrap_or_default();
    let password = password_of(encoded).ok_or_else(|| AssetError::Docker {
        asset: job.display.clone(),
        step: "docker login".into(),
        message: format!("ECR GetAuthorizationToken for {host} returned no usable token"),
    })?;
    let mut child = Command::new(docker())
        .args(["login", "--username", "AWS", "--password-stdin", &host])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| AssetError::Docker {
            asset: job.display.clone(),
            step: "docker login".into(),
            message: format!("cannot run {}: {e}", docker()),
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A write error shows up as the login's own failure below.
        let _ = stdin.write_all(password.as_bytes()).await;
    }
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| AssetError::Docker {
            asset: job.display.clone(),
            step: "docker login".into(),
            message: format!("{} login did not finish: {e}", docker()),
        })?;
    if !out.status.success() {
        return Err(AssetError::Docker {
            asset: job.display.clone(),
            step: format!("docker login to {host}"),
            message: format!("exited with {}: {}", out.status, tail(&out.stderr)),
        });
    }
    hosts.insert(host);
    Ok(())
}

/// The password of an ECR token (`base64("AWS:<password>")`).
fn password_of(token: &str) -> Option<String> {
    let bytes = aws_smithy_types::base64::decode(token).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (_, password) = text.split_once(':')?;
    (!password.is_empty()).then(|| password.to_owned())
}

/// The last three lines of a command's error output, on one line.
fn tail(stderr: &[u8]) -> String {
    let stderr = String::from_utf8_lossy(stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
}

fn looks_like_auth(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "no basic auth credentials",
        "unauthorized",
        "authorization",
        "denied",
    ]
    .iter()
    .any(|s| m.contains(s))
}

/// Runs one command; its standard output on success, its last error lines otherwise.
async fn run(
    job: &ImageJob,
    step: &str,
    program: &str,
    args: &[String],
) -> Result<String, AssetError> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| AssetError::Docker {
            asset: job.display.clone(),
            step: step.to_owned(),
            message: format!("cannot run {program}: {e}"),
        })?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    Err(AssetError::Docker {
        asset: job.display.clone(),
        step: step.to_owned(),
        message: format!("exited with {}: {}", out.status, tail(&out.stderr)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(uri: &str) -> ImageJob {
        ImageJob {
            asset_id: "a".into(),
            display: "a".into(),
            source: ImageSource::default(),
            image_uri: uri.into(),
            region: "cn-north-1".into(),
            stacks: Vec::new(),
        }
    }

    #[test]
    fn the_destination_is_read_from_the_image_uri() {
        let j = job("123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/team/repo:abc123");
        assert_eq!(
            j.registry_host(),
            "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn"
        );
        assert_eq!(j.registry_account(), "123456789012");
        assert_eq!(j.repository_and_tag(), ("team/repo", "abc123"));
    }

    #[test]
    fn the_token_password_is_after_the_user() {
        let token = aws_smithy_types::base64::encode("AWS:se:cret");
        assert_eq!(password_of(&token).as_deref(), Some("se:cret"));
        assert_eq!(password_of("!!not base64"), None);
        assert_eq!(password_of(&aws_smithy_types::base64::encode("AWS:")), None);
    }

    #[test]
    fn auth_refusals_are_recognised() {
        assert!(looks_like_auth("no basic auth credentials"));
        assert!(looks_like_auth(
            "denied: Your authorization token has expired"
        ));
        assert!(!looks_like_auth("name unknown: repository does not exist"));
    }
}
