//! `cdkd gc`, `cdkd bootstrap --destroy` and `cdkd state migrate` through the binary against
//! the emulator. Each test bootstraps its own asset bucket and repository (custom names in its
//! own state bucket's marker), since gc deletes what no record of ITS state bucket uses and the
//! default storage is shared by every test of the emulator.

use crate::bootstrap::{bootstrap, copy_dir, edit, fixture, run_in, state, FakeDocker};
use crate::support;

use std::path::Path;

use serde_json::{json, Value};
use support::{s3_client, sdk_config, unique_name};

const ACCOUNT: &str = "123456789012";
const LAMBDA_KEY: &str = "fb572e8d8b89ba04eed20c2cd2f29ce81dfb8f032efac2d1545631938d9b018f.zip";

/// A 64-hex-digit content hash of `seed` (cdkd names assets by one).
fn hash(seed: &str) -> String {
    use sha2::Digest;
    format!(
        "{:x}",
        sha2::Sha256::digest(format!("{seed}-{}", unique_name("h")))
    )
}

/// The lambda fixture with its code at `key`, plus an SSM parameter holding the URI of a
/// container image asset tagged `tag`.
fn app(key: &str, tag: &str, parameter: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture("lambda"), dir.path());
    edit(dir.path(), "LambdaStack.assets.json", LAMBDA_KEY, key);
    edit(dir.path(), "LambdaStack.template.json", LAMBDA_KEY, key);
    std::fs::create_dir_all(dir.path().join("asset.image")).expect("build context");
    std::fs::write(dir.path().join("asset.image/Dockerfile"), "FROM scratch\n")
        .expect("Dockerfile");
    let path = dir.path().join("LambdaStack.template.json");
    let mut template: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("template")).expect("json");
    template["Resources"]["ImageUri"] = json!({
        "Type": "AWS::SSM::Parameter",
        "Properties": {"Name": parameter, "Type": "String", "Value": {"Fn::Sub": format!(
            "${{AWS::AccountId}}.dkr.ecr.${{AWS::Region}}.${{AWS::URLSuffix}}/cdk-hnb659fds-container-assets-${{AWS::AccountId}}-${{AWS::Region}}:{tag}"
        )}}
    });
    std::fs::write(&path, template.to_string()).expect("template");
    let path = dir.path().join("LambdaStack.assets.json");
    let mut assets: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("assets")).expect("json");
    assets["dockerImages"] = json!({tag: {
        "displayName": "Worker/Image",
        "source": {"directory": "asset.image"},
        "destinations": {"current_account-current_region": {
            "repositoryName": "cdk-hnb659fds-container-assets-${AWS::AccountId}-${AWS::Region}",
            "imageTag": tag
        }}
    }});
    std::fs::write(&path, assets.to_string()).expect("assets");
    dir
}

/// Puts an image tagged `tag` into `repository` (the fake docker pushes nothing), with a
/// manifest of its own so each tag is its own image.
async fn put_image(repository: &str, tag: &str) -> String {
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "size": 2,
            "digest": format!("sha256:{}", hash(tag))
        },
        "layers": []
    });
    let out = aws_sdk_ecr::Client::new(&sdk_config().await)
        .put_image()
        .repository_name(repository)
        .image_manifest(manifest.to_string())
        .image_tag(tag)
        .send()
        .await
        .expect("PutImage");
    out.image()
        .and_then(|i| i.image_id())
        .and_then(|i| i.image_digest())
        .expect("a digest")
        .to_owned()
}

async fn object_exists(bucket: &str, key: &str) -> bool {
    s3_client()
        .await
        .head_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .is_ok()
}

async fn image_tags(repository: &str) -> Vec<String> {
    let out = aws_sdk_ecr::Client::new(&sdk_config().await)
        .describe_images()
        .repository_name(repository)
        .send()
        .await
        .expect("DescribeImages");
    let mut tags: Vec<String> = out
        .image_details()
        .iter()
        .flat_map(|d| d.image_tags().iter().cloned())
        .collect();
    tags.sort();
    tags
}

/// Bootstraps `bucket` with asset storage of its own: (asset bucket, repository).
fn own_storage(bucket: &str) -> (String, String) {
    let assets = unique_name("cdkd-gc-assets");
    let repository = unique_name("cdkd-gc-images");
    bootstrap(
        bucket,
        &["--asset-bucket", &assets, "--container-repo", &repository],
    );
    (assets, repository)
}

fn deploy(dir: &Path, bucket: &str, docker: &FakeDocker) -> String {
    let app = dir.to_str().expect("utf-8 path");
    let (code, _, stderr) = run_in(
        dir,
        bucket,
        &["deploy", "--app", app],
        &[("CDK_DOCKER", &docker.path())],
    );
    assert_eq!(code, 0, "{stderr}");
    stderr
}

#[tokio::test]
async fn gc_deletes_what_only_an_earlier_version_used_and_keeps_what_the_deployed_one_uses() {
    let bucket = unique_name("cdkd-gc");
    let (assets, repository) = own_storage(&bucket);
    let (key1, key2) = (format!("{}.zip", hash("v1")), format!("{}.zip", hash("v2")));
    let (tag1, tag2) = (hash("t1"), hash("t2"));
    let digest1 = put_image(&repository, &tag1).await;
    put_image(&repository, &tag2).await;
    let parameter = format!("/cdkd/gc/{}", unique_name("image"));
    let docker = FakeDocker::new();
    let v1 = app(&key1, &tag1, &parameter);
    let v2 = app(&key2, &tag2, &parameter);
    deploy(v1.path(), &bucket, &docker);
    deploy(v2.path(), &bucket, &docker);
    assert!(object_exists(&assets, &key1).await && object_exists(&assets, &key2).await);

    // Unreferenced but younger than the default 30 days: kept.
    let (code, stdout, stderr) = run_in(Path::new("."), &bucket, &["gc", "--dry-run"], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("Nothing to collect"), "{stdout}{stderr}");

    let (code, stdout, stderr) = run_in(
        Path::new("."),
        &bucket,
        &["gc", "--older-than", "0s", "--dry-run", "--json"],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let plan: Value = serde_json::from_str(&stdout).expect("gc --json");
    let ids = |list: &Value| -> Vec<String> {
        list.as_array()
            .expect("a list")
            .iter()
            .map(|c| c["id"].as_str().expect("id").to_owned())
            .collect()
    };
    assert_eq!(ids(&plan["objects"]), [key1.clone()], "{plan}");
    assert_eq!(ids(&plan["images"]), [digest1.clone()], "{plan}");
    assert_eq!(plan["assetBucket"], json!(assets));
    assert!(
        object_exists(&assets, &key1).await,
        "a dry run deletes nothing"
    );

    // Without a terminal, deleting needs --yes.
    let (code, _, stderr) = run_in(Path::new("."), &bucket, &["gc", "--older-than", "0s"], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("pass --yes"), "{stderr}");
    assert!(object_exists(&assets, &key1).await);

    let (code, _, stderr) = run_in(
        Path::new("."),
        &bucket,
        &["gc", "--older-than", "0s", "--yes"],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!object_exists(&assets, &key1).await, "v1's code is gone");
    assert!(object_exists(&assets, &key2).await, "v2's code stays");
    assert_eq!(image_tags(&repository).await, [tag2.clone()]);

    // The deployed version needs nothing published again.
    let stderr = deploy(v2.path(), &bucket, &docker);
    assert!(!stderr.contains("uploaded"), "{stderr}");
    assert!(
        !docker
            .calls()
            .iter()
            .any(|c| c.starts_with("build") || c.starts_with("push")),
        "{:?}",
        docker.calls()
    );
    let record = state(&bucket, "LambdaStack").await.expect("state");
    assert_eq!(
        record["resources"]["AssetFunctionA633A7D1"]["properties"]["Code"]["S3Key"],
        json!(key2)
    );
}

#[tokio::test]
async fn gc_refuses_while_a_stack_is_locked_and_when_a_record_is_unreadable() {
    let bucket = unique_name("cdkd-gc-lock");
    let (assets, _) = own_storage(&bucket);
    let s3 = s3_client().await;
    s3.put_object()
        .bucket(&assets)
        .key("orphan.zip")
        .body(b"x".to_vec().into())
        .send()
        .await
        .expect("put");
    for (key, body) in [
        ("cdkd/Busy/us-east-1/lock.json", "{}"),
        ("cdkd/Broken/us-east-1/state.json", "{not json"),
    ] {
        s3.put_object()
            .bucket(&bucket)
            .key(key)
            .body(body.as_bytes().to_vec().into())
            .send()
            .await
            .expect("put");
        let (code, _, stderr) = run_in(
            Path::new("."),
            &bucket,
            &["gc", "--older-than", "0s", "--yes"],
            &[],
        );
        assert_eq!(code, 1, "{stderr}");
        assert!(stderr.contains(key), "{stderr}");
        assert!(
            object_exists(&assets, "orphan.zip").await,
            "nothing deleted"
        );
        s3.delete_object()
            .bucket(&bucket)
            .key(key)
            .send()
            .await
            .expect("delete");
    }
    let (code, _, stderr) = run_in(
        Path::new("."),
        &bucket,
        &["gc", "--older-than", "0s", "--yes"],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!object_exists(&assets, "orphan.zip").await);
}

#[tokio::test]
async fn bootstrap_destroy_refuses_while_a_stack_uses_the_storage_and_tears_it_down_after() {
    let bucket = unique_name("cdkd-bdestroy");
    let (assets, repository) = own_storage(&bucket);
    let key = format!("{}.zip", hash("bd"));
    let tag = hash("bd-tag");
    put_image(&repository, &tag).await;
    let docker = FakeDocker::new();
    let dir = app(&key, &tag, &format!("/cdkd/bd/{}", unique_name("image")));
    deploy(dir.path(), &bucket, &docker);

    let (code, _, stderr) = run_in(
        Path::new("."),
        &bucket,
        &["bootstrap", "--destroy", "--yes"],
        &[],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("LambdaStack"), "names the record: {stderr}");
    assert!(object_exists(&assets, &key).await, "nothing deleted");
    let (code, _, stderr) = run_in(
        Path::new("."),
        &bucket,
        &[
            "bootstrap",
            "--destroy",
            "--include-state-bucket",
            "--yes",
            "--force",
        ],
        &[],
    );
    assert_eq!(code, 1, "state is still there: {stderr}");
    assert!(object_exists(&assets, &key).await, "nothing deleted");

    let app_dir = dir.path().to_str().expect("utf-8 path");
    let (code, _, stderr) = run_in(
        dir.path(),
        &bucket,
        &["destroy", "--app", app_dir, "--force"],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run_in(
        Path::new("."),
        &bucket,
        &["bootstrap", "--destroy", "--include-state-bucket", "--yes"],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let s3 = s3_client().await;
    assert!(
        s3.head_bucket().bucket(&assets).send().await.is_err(),
        "asset bucket gone"
    );
    assert!(
        s3.head_bucket().bucket(&bucket).send().await.is_err(),
        "state bucket gone"
    );
    let ecr = aws_sdk_ecr::Client::new(&sdk_config().await);
    assert!(
        ecr.describe_repositories()
            .repository_names(&repository)
            .send()
            .await
            .is_err(),
        "repository gone"
    );
}

#[tokio::test]
async fn state_migrate_moves_a_legacy_record_where_every_command_finds_it() {
    // The legacy name is per region: a region no other test uses keeps this one's apart. The
    // current default (cdkd-state-{account}) is the account's; no other test of this binary
    // uses it, and this one removes it at the end.
    let region = "eu-west-3";
    let legacy = format!("cdkd-state-{ACCOUNT}-{region}");
    let current = format!("cdkd-state-{ACCOUNT}");
    let key = format!("cdkd/Old/{region}/state.json");
    let s3 = s3_client().await;
    s3.create_bucket()
        .bucket(&legacy)
        .create_bucket_configuration(
            aws_sdk_s3::types::CreateBucketConfiguration::builder()
                .location_constraint(aws_sdk_s3::types::BucketLocationConstraint::from(region))
                .build(),
        )
        .send()
        .await
        .expect("legacy bucket");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/state/spec-example.json");
    let mut record: Value =
        serde_json::from_slice(&std::fs::read(fixture).expect("fixture")).expect("json");
    record["stackName"] = json!("Old");
    record["region"] = json!(region);
    s3.put_object()
        .bucket(&legacy)
        .key(&key)
        .body(record.to_string().into_bytes().into())
        .send()
        .await
        .expect("legacy record");
    let run = |args: &[&str]| {
        let out = support::cdkd()
            .env("CDKD_PROGRESS", "plain")
            .args(args)
            .args(["--region", region])
            .output()
            .expect("runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = run(&["state", "list"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("Old") && stderr.contains("legacy"),
        "{stdout}{stderr}"
    );

    let (code, stdout, stderr) = run(&["state", "migrate", "--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(&format!("would move {key}")), "{stdout}");
    assert!(
        s3.head_bucket().bucket(&current).send().await.is_err(),
        "a dry run changes nothing"
    );
    let (code, _, stderr) = run(&["state", "migrate"]);
    assert_eq!(code, 1, "without a terminal it asks for --yes: {stderr}");
    let (code, _, stderr) = run(&["state", "migrate", "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("Migrated 1 object(s)"), "{stderr}");

    let (code, stdout, stderr) = run(&["state", "list"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("Old") && !stderr.contains("legacy"),
        "{stdout}{stderr}"
    );
    let (code, stdout, stderr) = run(&["state", "show", "Old", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\"Old\""), "{stdout}");
    let (code, stdout, _) = run(&["state", "info", "--json"]);
    assert_eq!(code, 0);
    assert!(stdout.contains(&current), "{stdout}");
    assert!(
        s3.get_object()
            .bucket(&legacy)
            .key(&key)
            .send()
            .await
            .is_err(),
        "gone from the legacy bucket"
    );
    // Run again: nothing left to move, nothing overwritten.
    let (code, _, stderr) = run(&["state", "migrate", "--yes", "--remove-legacy"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        s3.head_bucket().bucket(&legacy).send().await.is_err(),
        "legacy bucket removed"
    );
    let (code, stdout, _) = run(&["state", "list"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("Old"), "{stdout}");
    // Leave the account's default bucket as the other tests found it: absent.
    let (code, _, stderr) = run(&[
        "bootstrap",
        "--destroy",
        "--include-state-bucket",
        "--yes",
        "--state-bucket",
        &current,
    ]);
    assert_eq!(code, 1, "a record is still there: {stderr}");
    let (code, _, stderr) = run(&["state", "orphan", "Old", "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run(&[
        "bootstrap",
        "--destroy",
        "--include-state-bucket",
        "--yes",
        "--state-bucket",
        &current,
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(s3.head_bucket().bucket(&current).send().await.is_err());
}
