//! How `cdkd deploy` publishes assets, by upstream cdkd's flags, through the binary against
//! the emulator: `--image-build-concurrency` and `--asset-publish-concurrency` bound the builds
//! and the publish jobs (seen in the start and end times a fake docker records), and
//! `--use-cdk-bootstrap-assets` publishes to the CDK bootstrap's bucket the manifest names
//! even in a region opted into cdkd-owned storage, the template left as written.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::{cdkd, s3_client, unique_name};

const REGION: &str = "us-east-1";
const ACCOUNT: &str = "123456789012";
const LAMBDA_KEY: &str = "fb572e8d8b89ba04eed20c2cd2f29ce81dfb8f032efac2d1545631938d9b018f.zip";

fn run_in(dir: &Path, bucket: &str, args: &[&str], envs: &[(&str, &str)]) -> (i32, String) {
    let out = cdkd()
        .current_dir(dir)
        .env("CDKD_PROGRESS", "plain")
        .envs(envs.iter().copied())
        .args(args)
        .args(["--state-bucket", bucket])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("--- cdkd {args:?}\n{stderr}");
    (out.status.code().unwrap_or(-1), stderr)
}

fn bootstrap(bucket: &str) {
    let (code, stderr) = run_in(Path::new("."), bucket, &["bootstrap"], &[]);
    assert_eq!(code, 0, "{stderr}");
}

/// A fake docker that records when each `build` and `push` starts and ends (each takes
/// 0.4 s), in `events.log`: `start build 1712345678123456789`.
struct TimedDocker {
    dir: tempfile::TempDir,
}

impl TimedDocker {
    fn new() -> TimedDocker {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = dir.path().join("docker");
        std::fs::write(
            &script,
            r#"#!/bin/sh
here="$(dirname "$0")"
case "$1" in
  build|push)
    echo "start $1 $(date +%s%N)" >> "$here/events.log"
    sleep 0.4
    echo "end $1 $(date +%s%N)" >> "$here/events.log" ;;
esac
exit 0
"#,
        )
        .expect("write the fake docker");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        TimedDocker { dir }
    }

    fn path(&self) -> String {
        self.dir
            .path()
            .join("docker")
            .to_string_lossy()
            .into_owned()
    }

    /// The most operations of `kinds` that ran at once, and how many ran.
    fn most_at_once(&self, kinds: &[&str]) -> (usize, usize) {
        let text = std::fs::read_to_string(self.dir.path().join("events.log")).unwrap_or_default();
        let mut events: Vec<(u128, i32)> = text
            .lines()
            .filter_map(|l| {
                let mut parts = l.split_whitespace();
                let (edge, kind, at) = (parts.next()?, parts.next()?, parts.next()?);
                if !kinds.contains(&kind) {
                    return None;
                }
                let at: u128 = at.parse().ok()?;
                Some((at, if edge == "start" { 1 } else { -1 }))
            })
            .collect();
        // An end sorts before a start at the same instant.
        events.sort();
        let (mut now, mut most, mut ran) = (0i32, 0i32, 0);
        for (_, delta) in events {
            now += delta;
            most = most.max(now);
            if delta > 0 {
                ran += 1;
            }
        }
        (most as usize, ran)
    }

    fn clear(&self) {
        let _ = std::fs::remove_file(self.dir.path().join("events.log"));
    }
}

/// A stack with one SSM parameter and `tags.len()` container image assets.
fn images_app(tags: &[String]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("asset.image")).expect("build context");
    std::fs::write(dir.path().join("asset.image/Dockerfile"), "FROM scratch\n")
        .expect("Dockerfile");
    let template = json!({"Resources": {"P": {"Type": "AWS::SSM::Parameter", "Properties": {
        "Type": "String", "Value": "x"}}}});
    std::fs::write(
        dir.path().join("Images.template.json"),
        template.to_string(),
    )
    .expect("template");
    let images: serde_json::Map<String, Value> = tags
        .iter()
        .map(|tag| {
            (
                tag.clone(),
                json!({
                    "displayName": format!("Image/{tag}"),
                    "source": {"directory": "asset.image"},
                    "destinations": {"current_account-current_region": {
                        "repositoryName": "cdk-hnb659fds-container-assets-${AWS::AccountId}-${AWS::Region}",
                        "imageTag": tag
                    }}
                }),
            )
        })
        .collect();
    let assets = json!({"version": "36.0.0", "files": {}, "dockerImages": images});
    std::fs::write(dir.path().join("Images.assets.json"), assets.to_string()).expect("assets");
    let manifest = json!({"version": "36.0.0", "artifacts": {
        "Images.assets": {"type": "cdk:asset-manifest",
            "properties": {"file": "Images.assets.json"}},
        "Images": {"type": "aws:cloudformation:stack",
            "environment": "aws://unknown-account/unknown-region",
            "properties": {"templateFile": "Images.template.json"},
            "dependencies": ["Images.assets"]}
    }});
    std::fs::write(dir.path().join("manifest.json"), manifest.to_string()).expect("manifest");
    dir
}

fn tags(n: usize) -> Vec<String> {
    (0..n).map(|_| unique_name("img").to_lowercase()).collect()
}

#[tokio::test]
async fn the_concurrency_flags_bound_image_builds_and_publish_jobs() {
    let bucket = unique_name("cdkd-assets-conc");
    bootstrap(&bucket);
    let docker = TimedDocker::new();
    let env = [("CDK_DOCKER", docker.path())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let deploy = |extra: &[&str]| {
        let app = images_app(&tags(4));
        let dir = app.path().to_str().expect("utf-8").to_owned();
        let mut args = vec!["deploy", "--app", dir.as_str()];
        args.extend(extra);
        let (code, stderr) = run_in(app.path(), &bucket, &args, &env);
        assert_eq!(code, 0, "{stderr}");
    };

    // Builds one at a time; the pushes are not builds.
    deploy(&["--image-build-concurrency", "1"]);
    assert_eq!(docker.most_at_once(&["build"]), (1, 4));
    docker.clear();
    // The defaults (8 jobs, 4 builds) let the four builds overlap.
    deploy(&[]);
    let (most, ran) = docker.most_at_once(&["build"]);
    assert_eq!(ran, 4);
    assert!(most >= 2, "the builds overlapped by default: {most}");
    docker.clear();
    // One publish job at a time: no build or push overlaps another, whatever the build limit.
    deploy(&[
        "--asset-publish-concurrency",
        "1",
        "--image-build-concurrency",
        "4",
    ]);
    assert_eq!(docker.most_at_once(&["build", "push"]), (1, 8));

    let (code, stderr) = run_in(
        Path::new("."),
        &bucket,
        &["deploy", "--asset-publish-concurrency", "0"],
        &[],
    );
    assert_eq!(code, 1, "zero is refused: {stderr}");
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/apps")
        .join(name)
        .join("cdk.out")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read fixture") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn edit(dir: &Path, file: &str, from: &str, to: &str) {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains(from), "{file} holds {from}");
    std::fs::write(&path, text.replace(from, to)).expect("write");
}

async fn record(bucket: &str, stack: &str) -> Value {
    let out = s3_client()
        .await
        .get_object()
        .bucket(bucket)
        .key(format!("cdkd/{stack}/{REGION}/state.json"))
        .send()
        .await
        .expect("state");
    let bytes = out.body.collect().await.expect("body").into_bytes();
    serde_json::from_slice(&bytes).expect("json")
}

#[tokio::test]
async fn use_cdk_bootstrap_assets_publishes_where_the_manifest_says_in_an_opted_in_region() {
    let bucket = unique_name("cdkd-assets-cdkboot");
    bootstrap(&bucket);
    let cdk_bucket = format!("cdk-hnb659fds-assets-{ACCOUNT}-{REGION}");
    let s3 = s3_client().await;
    // The CDK bootstrap's bucket, as `cdk bootstrap` would have made it (shared: may exist).
    let _ = s3.create_bucket().bucket(&cdk_bucket).send().await;
    let key = format!("{}.zip", unique_name("cdkboot"));
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture("lambda"), dir.path());
    edit(dir.path(), "LambdaStack.assets.json", LAMBDA_KEY, &key);
    edit(dir.path(), "LambdaStack.template.json", LAMBDA_KEY, &key);
    let app = dir.path().to_str().expect("utf-8 path");

    let (code, stderr) = run_in(
        dir.path(),
        &bucket,
        &["deploy", "--app", app, "--use-cdk-bootstrap-assets"],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("uploaded to s3://{cdk_bucket}/{key}")),
        "{stderr}"
    );
    s3.head_object()
        .bucket(&cdk_bucket)
        .key(&key)
        .send()
        .await
        .expect("in the CDK bootstrap's bucket");
    let cdkd_bucket = format!("cdkd-assets-{ACCOUNT}-{REGION}");
    let in_cdkd = s3.head_object().bucket(&cdkd_bucket).key(&key).send().await;
    assert!(in_cdkd.is_err(), "nothing went to cdkd's own bucket");
    // The template is deployed as written: the function's code names the CDK bucket.
    let state = record(&bucket, "LambdaStack").await;
    let code_props = &state["resources"]["AssetFunctionA633A7D1"]["properties"]["Code"];
    assert_eq!(code_props["S3Bucket"], cdk_bucket.as_str(), "{code_props}");
}
