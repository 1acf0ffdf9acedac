//! `cdkd bootstrap`'s asset storage and the cdkd-assets mode it opts a region into, through the
//! `cdkd` binary against the emulator: the asset bucket, the ECR repository and the
//! `cdkd-bootstrap/{region}.json` marker (written once, re-runs idempotent, none with
//! `--no-assets`); a file asset deployed into the cdkd asset bucket with the template following;
//! container assets with a fake docker (`CDK_DOCKER`, a script that records its argv): an image
//! already in the repository is neither built nor pushed, and a push refused for credentials
//! logs in to the registry host and pushes again; without a docker daemon the error names the
//! stack and nothing deploys.
//!
//! The asset bucket and repository are per account and region, so every test of the emulator
//! shares them; each test uses its own state bucket and its own object keys and image tags.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::{cdkd, s3_client, sdk_config, unique_name};

const REGION: &str = "us-east-1";
const ACCOUNT: &str = "123456789012";
const LAMBDA_KEY: &str = "fb572e8d8b89ba04eed20c2cd2f29ce81dfb8f032efac2d1545631938d9b018f.zip";

fn asset_bucket() -> String {
    format!("cdkd-assets-{ACCOUNT}-{REGION}")
}

fn repository() -> String {
    format!("cdkd-container-assets-{ACCOUNT}-{REGION}")
}

fn marker_key() -> String {
    format!("cdkd-bootstrap/{REGION}.json")
}

/// `cdkd <args> --state-bucket B` in `dir` with extra environment: (exit code, stdout, stderr).
pub(crate) fn run_in(
    dir: &Path,
    bucket: &str,
    args: &[&str],
    envs: &[(&str, &str)],
) -> (i32, String, String) {
    let out = cdkd()
        .current_dir(dir)
        .env("CDKD_PROGRESS", "plain")
        .envs(envs.iter().copied())
        .args(args)
        .args(["--state-bucket", bucket])
        .output()
        .expect("runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    eprintln!("--- cdkd {args:?}\n{stderr}");
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

/// `cdkd bootstrap --json ...` that must succeed: its JSON.
pub(crate) fn bootstrap(bucket: &str, extra: &[&str]) -> Value {
    let mut args = vec!["bootstrap", "--json"];
    args.extend(extra);
    let (code, stdout, stderr) = run_in(Path::new("."), bucket, &args, &[]);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).expect("bootstrap --json")
}

/// Every version of `key` in `bucket`.
async fn versions(bucket: &str, key: &str) -> usize {
    let listed = s3_client()
        .await
        .list_object_versions()
        .bucket(bucket)
        .prefix(key)
        .send()
        .await
        .expect("list versions");
    listed
        .versions()
        .iter()
        .filter(|v| v.key() == Some(key))
        .count()
}

pub(crate) async fn object_json(bucket: &str, key: &str) -> Option<Value> {
    let got = s3_client()
        .await
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .ok()?;
    let bytes = got.body.collect().await.ok()?.into_bytes();
    serde_json::from_slice(&bytes).ok()
}

fn state_info(bucket: &str) -> Value {
    let (code, stdout, stderr) = run_in(Path::new("."), bucket, &["state", "info", "--json"], &[]);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).expect("state info --json")
}

#[tokio::test]
async fn bootstrap_creates_the_asset_storage_and_writes_the_marker_once() {
    let bucket = unique_name("cdkd-boot-assets");
    let first = bootstrap(&bucket, &[]);
    assert_eq!(first["assetMode"], "cdkd-assets");
    let storage = &first["assetStorage"];
    assert_eq!(storage["bucket"], asset_bucket().as_str());
    assert_eq!(storage["repository"], repository().as_str());
    assert_eq!(
        storage["marker"],
        format!("s3://{bucket}/{}", marker_key()).as_str()
    );
    assert_eq!(storage["markerWritten"], true);

    // The asset bucket: versioned (two writes keep two versions; moto answers
    // GetBucketVersioning with a body the SDK cannot parse), encrypted, public access blocked.
    let s3 = s3_client().await;
    let probe = unique_name("versioning-probe");
    for body in ["one", "two"] {
        s3.put_object()
            .bucket(asset_bucket())
            .key(&probe)
            .body(body.as_bytes().to_vec().into())
            .send()
            .await
            .expect("the asset bucket exists");
    }
    assert_eq!(versions(&asset_bucket(), &probe).await, 2);
    let pab = s3
        .get_public_access_block()
        .bucket(asset_bucket())
        .send()
        .await
        .expect("public access block");
    let cfg = pab.public_access_block_configuration().expect("config");
    assert_eq!(cfg.block_public_acls(), Some(true));
    assert_eq!(cfg.block_public_policy(), Some(true));
    let enc = s3
        .get_bucket_encryption()
        .bucket(asset_bucket())
        .send()
        .await
        .expect("encryption");
    let rule = enc
        .server_side_encryption_configuration()
        .and_then(|c| c.rules().first())
        .and_then(|r| r.apply_server_side_encryption_by_default())
        .expect("a default encryption rule");
    assert_eq!(
        rule.sse_algorithm(),
        &aws_sdk_s3::types::ServerSideEncryption::Aes256
    );

    // The ECR repository: immutable tags, scanned on push.
    let ecr = aws_sdk_ecr::Client::new(&sdk_config().await);
    let repos = ecr
        .describe_repositories()
        .repository_names(repository())
        .send()
        .await
        .expect("the container repository exists");
    let repo = repos.repositories().first().expect("one repository");
    assert_eq!(
        repo.image_tag_mutability(),
        Some(&aws_sdk_ecr::types::ImageTagMutability::Immutable)
    );
    assert_eq!(
        repo.image_scanning_configuration()
            .map(|c| c.scan_on_push()),
        Some(true)
    );

    // The marker names both, as the deploy reads it.
    let marker = object_json(&bucket, &marker_key())
        .await
        .expect("the marker");
    assert_eq!(marker["assetBucket"], asset_bucket().as_str());
    assert_eq!(marker["containerRepo"], repository().as_str());
    assert_eq!(marker["assetSupportVersion"], 1);
    assert!(
        marker["createdAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{marker}"
    );
    assert_eq!(versions(&bucket, &marker_key()).await, 1);
    assert_eq!(state_info(&bucket)["assetStorageRegions"], json!([REGION]));

    // A re-run creates and writes nothing; --force re-applies the settings, still no write.
    let again = bootstrap(&bucket, &[]);
    assert_eq!(again["created"], false);
    assert_eq!(again["assetStorage"]["bucketCreated"], false);
    assert_eq!(again["assetStorage"]["repositoryCreated"], false);
    assert_eq!(again["assetStorage"]["markerWritten"], false);
    let forced = bootstrap(&bucket, &["--force"]);
    assert_eq!(forced["settingsApplied"], true);
    assert_eq!(forced["assetStorage"]["markerWritten"], false);
    assert_eq!(versions(&bucket, &marker_key()).await, 1);
}

#[tokio::test]
async fn no_assets_writes_no_marker() {
    let bucket = unique_name("cdkd-boot-legacy");
    let out = bootstrap(&bucket, &["--no-assets"]);
    assert_eq!(out["assetMode"], "legacy");
    assert!(out["assetStorage"].is_null(), "{out}");
    assert_eq!(versions(&bucket, &marker_key()).await, 0);
    assert_eq!(state_info(&bucket)["assetStorageRegions"], json!([]));
    // Again: still none.
    bootstrap(&bucket, &["--no-assets"]);
    assert_eq!(versions(&bucket, &marker_key()).await, 0);
}

async fn put_marker(bucket: &str, body: &Value) {
    support::s3_client()
        .await
        .put_object()
        .bucket(bucket)
        .key(marker_key())
        .body(body.to_string().into_bytes().into())
        .send()
        .await
        .expect("put marker");
}

#[tokio::test]
async fn a_newer_marker_is_refused_and_kept_and_an_older_shape_is_rewritten_as_upstream_writes_it()
{
    let bucket = unique_name("cdkd-boot-marker");
    bootstrap(&bucket, &["--no-assets"]);
    let newer = json!({"assetBucket": asset_bucket(), "containerRepo": repository(),
        "assetSupportVersion": 2, "createdAt": "2030-01-01T00:00:00.000Z"});
    put_marker(&bucket, &newer).await;
    let (code, _, stderr) = run_in(Path::new("."), &bucket, &["bootstrap"], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("assetSupportVersion 2"), "{stderr}");
    assert_eq!(
        object_json(&bucket, &marker_key()).await,
        Some(newer),
        "never overwritten"
    );

    // The shape an older cdkd of ours wrote: read, then rewritten in upstream's shape.
    put_marker(
        &bucket,
        &json!({"version": 1, "assetBucket": asset_bucket(),
        "containerRepository": repository()}),
    )
    .await;
    let out = bootstrap(&bucket, &[]);
    assert_eq!(out["assetStorage"]["markerWritten"], true, "{out}");
    let marker = object_json(&bucket, &marker_key()).await.expect("marker");
    assert_eq!(marker["containerRepo"], repository().as_str());
    assert_eq!(marker["assetSupportVersion"], 1);
    assert!(marker.get("containerRepository").is_none(), "{marker}");
}

pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/apps")
        .join(name)
        .join("cdk.out")
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
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

/// Replaces `from` with `to` in a file of `dir`.
pub(crate) fn edit(dir: &Path, file: &str, from: &str, to: &str) {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains(from), "{file} holds {from}");
    std::fs::write(&path, text.replace(from, to)).expect("write");
}

/// The state record of `stack`, read straight from the bucket.
pub(crate) async fn state(bucket: &str, stack: &str) -> Option<Value> {
    object_json(bucket, &format!("cdkd/{stack}/{REGION}/state.json")).await
}

#[tokio::test]
async fn a_file_asset_deploys_into_the_cdkd_asset_bucket_and_the_template_follows() {
    let bucket = unique_name("cdkd-boot-file");
    bootstrap(&bucket, &[]);
    // A key of its own, so the upload is this test's whatever else shares the bucket.
    let key = format!("{}.zip", unique_name("asset"));
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture("lambda"), dir.path());
    edit(dir.path(), "LambdaStack.assets.json", LAMBDA_KEY, &key);
    edit(dir.path(), "LambdaStack.template.json", LAMBDA_KEY, &key);
    let app = dir.path().to_str().expect("utf-8 path");

    let (code, _, stderr) = run_in(dir.path(), &bucket, &["deploy", "--app", app], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("uploaded to s3://{}/{key}", asset_bucket())),
        "{stderr}"
    );
    s3_client()
        .await
        .head_object()
        .bucket(asset_bucket())
        .key(&key)
        .send()
        .await
        .expect("the asset is in the cdkd asset bucket");
    let record = state(&bucket, "LambdaStack").await.expect("state");
    let code_props = &record["resources"]["AssetFunctionA633A7D1"]["properties"]["Code"];
    assert_eq!(code_props["S3Bucket"], asset_bucket().as_str());
    assert_eq!(code_props["S3Key"], key.as_str());
    // diff and a dry run read the templates as the deploy rewrote them: nothing to change.
    let (code, stdout, stderr) =
        run_in(dir.path(), &bucket, &["diff", "--fail", "--app", app], &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("There were no differences"), "{stdout}");
    let (code, stdout, stderr) = run_in(
        dir.path(),
        &bucket,
        &["deploy", "--dry-run", "--app", app],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("no resource changes"),
        "{stdout}\n{stderr}"
    );
    // The assembly on disk is left as synthesized.
    let template =
        std::fs::read_to_string(dir.path().join("LambdaStack.template.json")).expect("template");
    assert!(template.contains("cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"));
}

#[tokio::test]
async fn skip_assets_publishes_nothing_and_deploys_against_the_object_already_there() {
    let bucket = unique_name("cdkd-boot-skip");
    bootstrap(&bucket, &[]);
    let key = format!("{}.zip", unique_name("asset"));
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture("lambda"), dir.path());
    edit(dir.path(), "LambdaStack.assets.json", LAMBDA_KEY, &key);
    edit(dir.path(), "LambdaStack.template.json", LAMBDA_KEY, &key);
    let app = dir.path().to_str().expect("utf-8 path");
    // The object the assets say is published already, with a body no upload would write.
    let s3 = s3_client().await;
    let placed = s3
        .put_object()
        .bucket(asset_bucket())
        .key(&key)
        .body(b"placed by hand".to_vec().into())
        .send()
        .await
        .expect("put the asset object")
        .e_tag()
        .map(str::to_owned);

    // A publish would look at the object first (HEAD, skipped when it is there): the trace of
    // every AWS request the deploy made must not name the asset's key at all.
    let trace = dir.path().join("trace.jsonl");
    let trace_env = trace.to_str().expect("utf-8 path");
    let (code, _, stderr) = run_in(
        dir.path(),
        &bucket,
        &["deploy", "--app", app, "--skip-assets"],
        &[("CDKD_TRACE_FILE", trace_env)],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("uploaded to"), "{stderr}");
    let calls = std::fs::read_to_string(&trace).expect("the trace");
    assert!(calls.contains("\"event\":\"call\""), "{calls}");
    assert!(
        !calls.contains(key.as_str()),
        "a request touched the asset:\n{calls}"
    );
    let head = s3
        .head_object()
        .bucket(asset_bucket())
        .key(&key)
        .send()
        .await
        .expect("the object is still there");
    assert_eq!(
        head.e_tag().map(str::to_owned),
        placed,
        "nothing re-published it"
    );
    // The template still points at the cdkd asset bucket, as a deploy with publishing would.
    let record = state(&bucket, "LambdaStack").await.expect("state");
    let code_props = &record["resources"]["AssetFunctionA633A7D1"]["properties"]["Code"];
    assert_eq!(code_props["S3Bucket"], asset_bucket().as_str());
    assert_eq!(code_props["S3Key"], key.as_str());
}

/// A fake docker in its own directory: records each invocation's argv (one line) in
/// `argv.log` and a login's standard input in `login.stdin`; `push` fails once with an
/// authentication error while `fail-next-push` exists; `version` fails while `no-daemon` does.
pub(crate) struct FakeDocker {
    dir: tempfile::TempDir,
}

impl FakeDocker {
    pub(crate) fn new() -> FakeDocker {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = dir.path().join("docker");
        std::fs::write(
            &script,
            r#"#!/bin/sh
here="$(dirname "$0")"
echo "$*" >> "$here/argv.log"
case "$1" in
  version)
    if [ -e "$here/no-daemon" ]; then
      echo "Cannot connect to the Docker daemon" >&2
      exit 1
    fi ;;
  login) cat > "$here/login.stdin" ;;
  push)
    if [ -e "$here/fail-next-push" ]; then
      rm -f "$here/fail-next-push"
      echo "no basic auth credentials" >&2
      exit 1
    fi ;;
esac
exit 0
"#,
        )
        .expect("write the fake docker");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        FakeDocker { dir }
    }

    pub(crate) fn path(&self) -> String {
        self.dir
            .path()
            .join("docker")
            .to_string_lossy()
            .into_owned()
    }

    fn without_daemon(&self) {
        std::fs::write(self.dir.path().join("no-daemon"), "").expect("flag");
    }

    fn fail_next_push(&self) {
        std::fs::write(self.dir.path().join("fail-next-push"), "").expect("flag");
    }

    pub(crate) fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("argv.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn login_stdin(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join("login.stdin")).ok()
    }
}

/// The lambda fixture's stack reduced to one SSM parameter holding the image's URI, with one
/// container image asset (tag `tag`) aimed at the CDK bootstrap's repository.
fn container_app(tag: &str, parameter: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture("lambda"), dir.path());
    std::fs::create_dir_all(dir.path().join("asset.image")).expect("build context");
    std::fs::write(dir.path().join("asset.image/Dockerfile"), "FROM scratch\n")
        .expect("Dockerfile");
    let template = json!({"Resources": {"ImageUri": {
        "Type": "AWS::SSM::Parameter",
        "Properties": {
            "Name": parameter,
            "Type": "String",
            "Value": {"Fn::Sub": format!(
                "${{AWS::AccountId}}.dkr.ecr.${{AWS::Region}}.${{AWS::URLSuffix}}/cdk-hnb659fds-container-assets-${{AWS::AccountId}}-${{AWS::Region}}:{tag}"
            )}
        }
    }}});
    std::fs::write(
        dir.path().join("LambdaStack.template.json"),
        template.to_string(),
    )
    .expect("template");
    let assets = json!({
        "version": "55.0.0",
        "files": {},
        "dockerImages": {tag: {
            "displayName": "Worker/Image",
            "source": {"directory": "asset.image"},
            "destinations": {"current_account-current_region": {
                "repositoryName": "cdk-hnb659fds-container-assets-${AWS::AccountId}-${AWS::Region}",
                "imageTag": tag,
                "assumeRoleArn": "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/cdk-hnb659fds-image-publishing-role-${AWS::AccountId}-${AWS::Region}"
            }}
        }}
    });
    std::fs::write(
        dir.path().join("LambdaStack.assets.json"),
        assets.to_string(),
    )
    .expect("asset manifest");
    dir
}

fn image_uri(tag: &str) -> String {
    format!(
        "{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{}:{tag}",
        repository()
    )
}

async fn parameter_value(name: &str) -> Option<String> {
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    let got = ssm.get_parameter().name(name).send().await.ok()?;
    got.parameter()?.value().map(str::to_owned)
}

#[tokio::test]
async fn an_image_already_in_the_repository_is_neither_built_nor_pushed() {
    let bucket = unique_name("cdkd-boot-image");
    bootstrap(&bucket, &[]);
    let tag = unique_name("present");
    // The image is already there: put into the cdkd repository with PutImage.
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "size": 2,
            "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        },
        "layers": []
    });
    aws_sdk_ecr::Client::new(&sdk_config().await)
        .put_image()
        .repository_name(repository())
        .image_manifest(manifest.to_string())
        .image_tag(&tag)
        .send()
        .await
        .expect("PutImage");
    let parameter = format!("/cdkd/boot/{tag}");
    let app = container_app(&tag, &parameter);
    let docker = FakeDocker::new();
    let app_dir = app.path().to_str().expect("utf-8 path");
    let (code, _, stderr) = run_in(
        app.path(),
        &bucket,
        &["deploy", "--app", app_dir],
        &[("CDK_DOCKER", &docker.path())],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("already in {}", image_uri(&tag))),
        "{stderr}"
    );
    let calls = docker.calls();
    assert!(
        !calls
            .iter()
            .any(|c| c.starts_with("build") || c.starts_with("push") || c.starts_with("login")),
        "docker was asked to build or push: {calls:?}"
    );
    // The template's reference to the image follows the redirect.
    assert_eq!(
        parameter_value(&parameter).await.as_deref(),
        Some(image_uri(&tag).as_str())
    );
}

#[tokio::test]
async fn a_push_refused_for_credentials_logs_in_to_the_registry_host_and_pushes_again() {
    let bucket = unique_name("cdkd-boot-login");
    bootstrap(&bucket, &[]);
    let tag = unique_name("pushed");
    let parameter = format!("/cdkd/boot/{tag}");
    let app = container_app(&tag, &parameter);
    let docker = FakeDocker::new();
    docker.fail_next_push();
    let app_dir = app.path().to_str().expect("utf-8 path");
    let (code, _, stderr) = run_in(
        app.path(),
        &bucket,
        &["deploy", "--app", app_dir],
        &[("CDK_DOCKER", &docker.path())],
    );
    assert_eq!(code, 0, "{stderr}");
    let uri = image_uri(&tag);
    assert!(stderr.contains(&format!("pushed {uri}")), "{stderr}");

    let calls = docker.calls();
    let host = format!("{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com");
    let push = format!("push {uri}");
    let login = format!("login --username AWS --password-stdin {host}");
    let at = |line: &str| calls.iter().position(|c| c == line);
    let first_push = at(&push).unwrap_or_else(|| panic!("no push: {calls:?}"));
    let login_at = at(&login).unwrap_or_else(|| panic!("no login to {host}: {calls:?}"));
    assert!(first_push < login_at, "pushed first: {calls:?}");
    assert_eq!(
        calls[login_at + 1..].iter().filter(|c| **c == push).count(),
        1,
        "pushed again after the login: {calls:?}"
    );
    assert!(
        calls.iter().any(|c| c.starts_with("build --tag ")),
        "{calls:?}"
    );
    assert!(
        calls
            .iter()
            .any(|c| c.ends_with(&format!(" {uri}")) && c.starts_with("tag ")),
        "{calls:?}"
    );
    // The password went in on standard input (never argv): the ECR token's password part.
    let password = docker.login_stdin().expect("login read its password");
    assert!(!password.is_empty());
    assert!(!calls.iter().any(|c| c.contains(&password)), "{calls:?}");
    assert_eq!(
        parameter_value(&parameter).await.as_deref(),
        Some(uri.as_str())
    );
}

#[tokio::test]
async fn an_image_to_push_without_a_docker_daemon_fails_naming_the_stack() {
    let bucket = unique_name("cdkd-boot-nodaemon");
    bootstrap(&bucket, &[]);
    let tag = unique_name("absent");
    let parameter = format!("/cdkd/boot/{tag}");
    let app = container_app(&tag, &parameter);
    let docker = FakeDocker::new();
    docker.without_daemon();
    let app_dir = app.path().to_str().expect("utf-8 path");
    let (code, _, stderr) = run_in(
        app.path(),
        &bucket,
        &["deploy", "--app", app_dir],
        &[("CDK_DOCKER", &docker.path())],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("container image assets need docker")
            && stderr.contains("stacks that need one: LambdaStack"),
        "{stderr}"
    );
    assert_eq!(docker.calls(), vec!["version".to_owned()]);
    assert!(state(&bucket, "LambdaStack").await.is_none());
    assert_eq!(parameter_value(&parameter).await, None);
}

/// `--asset-bucket` / `--container-repo` (upstream's): the region's storage under those names,
/// written into the marker, where deploys then publish; another name later is refused.
#[tokio::test]
async fn bootstrap_names_the_asset_storage_and_deploys_publish_there() {
    let bucket = unique_name("cdkd-boot-named");
    let assets = unique_name("named-assets");
    let repo = unique_name("named-repo");
    bootstrap(
        &bucket,
        &["--asset-bucket", &assets, "--container-repo", &repo],
    );
    let marker = object_json(&bucket, &marker_key()).await.expect("marker");
    assert_eq!(marker["assetBucket"], assets.as_str(), "{marker}");
    assert_eq!(marker["containerRepo"], repo.as_str(), "{marker}");
    s3_client()
        .await
        .head_bucket()
        .bucket(&assets)
        .send()
        .await
        .expect("the named bucket exists");
    aws_sdk_ecr::Client::new(&sdk_config().await)
        .describe_repositories()
        .repository_names(&repo)
        .send()
        .await
        .expect("the named repository exists");

    let (code, _, stderr) = run_in(
        Path::new("."),
        &bucket,
        &["bootstrap", "--asset-bucket", "other-name"],
        &[],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("refused"), "{stderr}");
    assert_eq!(
        object_json(&bucket, &marker_key()).await.expect("marker"),
        marker
    );

    let key = format!("{}.zip", unique_name("named"));
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture("lambda"), dir.path());
    edit(dir.path(), "LambdaStack.assets.json", LAMBDA_KEY, &key);
    edit(dir.path(), "LambdaStack.template.json", LAMBDA_KEY, &key);
    let app = dir.path().to_str().expect("utf-8 path");
    let (code, _, stderr) = run_in(dir.path(), &bucket, &["deploy", "--app", app], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("uploaded to s3://{assets}/{key}")),
        "{stderr}"
    );
}
