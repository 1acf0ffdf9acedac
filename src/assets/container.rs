//! Container image assets: built with docker from the assembly's directory (or produced by the
//! asset's own `executable`), tagged with the ECR destination and pushed.
//!
//! docker is looked for once per run (`CDK_DOCKER` names another executable, as with the CDK);
//! where it does not run, publishing fails with one error naming every stack that needs an
//! image, before any stack deploys. A push is tried first; cdkd does not log in to ECR itself,
//! so a push refused for credentials says how to log in.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

use super::AssetError;

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

/// Builds (or produces), tags and pushes one image.
pub async fn publish_image(job: &ImageJob) -> Result<(), AssetError> {
    let src = &job.source;
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
    run(
        job,
        "docker tag",
        &docker(),
        &["tag".into(), local, job.image_uri.clone()],
    )
    .await?;
    match run(
        job,
        "docker push",
        &docker(),
        &["push".into(), job.image_uri.clone()],
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(AssetError::Docker { message, .. }) if looks_like_auth(&message) => {
            let host = job.image_uri.split('/').next().unwrap_or_default();
            Err(AssetError::Docker {
                asset: job.display.clone(),
                step: "docker push".into(),
                message: format!(
                    "{message}; log in to the registry first: aws ecr get-login-password \
                     --region {} | docker login --username AWS --password-stdin {host}",
                    job.region
                ),
            })
        }
        Err(e) => Err(e),
    }
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
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
    Err(AssetError::Docker {
        asset: job.display.clone(),
        step: step.to_owned(),
        message: format!(
            "exited with {}: {}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        ),
    })
}
