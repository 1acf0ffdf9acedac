//! The S3 state backend and the state commands against the emulator: bootstrap, ETag-guarded
//! saves, legacy-key migration, refusal of damaged records (left byte-for-byte as stored), and
//! `state list / show / resources` over a record written in the TypeScript cdkd's format.

use crate::support;

use std::path::{Path, PathBuf};

use aws_sdk_s3::primitives::ByteStream;
use cdkd::state::backend::{BackendError, S3Backend, SaveCondition};
use cdkd::state::StateKeys;
use serde_json::Value;
use support::{cdkd, s3_client, unique_name};

pub(super) fn state_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/state")
        .join(name)
}

pub(super) async fn bucket_with_versioning() -> (aws_sdk_s3::Client, String) {
    let client = s3_client().await;
    let bucket = unique_name("cdkd-state");
    client
        .create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("create bucket");
    client
        .put_bucket_versioning()
        .bucket(&bucket)
        .versioning_configuration(
            aws_sdk_s3::types::VersioningConfiguration::builder()
                .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .expect("versioning");
    (client, bucket)
}

pub(super) async fn put(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    body: Vec<u8>,
) -> String {
    let out = client
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(body))
        .send()
        .await
        .expect("put");
    out.e_tag().expect("etag").to_owned()
}

pub(super) async fn get(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
) -> Option<(Vec<u8>, String)> {
    let out = client
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .ok()?;
    let etag = out.e_tag().unwrap_or_default().to_owned();
    Some((
        out.body
            .collect()
            .await
            .expect("body")
            .into_bytes()
            .to_vec(),
        etag,
    ))
}

#[tokio::test]
async fn an_incremental_save_after_someone_elses_write_is_refused_and_the_record_survives() {
    let (client, bucket) = bucket_with_versioning().await;
    let backend = S3Backend::new(client.clone(), bucket.clone(), StateKeys::default());
    let example = std::fs::read(state_fixture("spec-example.json")).expect("fixture");
    let key = "cdkd/MyAppStack/us-east-1/state.json";
    put(&client, &bucket, key, example).await;

    let loaded = backend
        .load("MyAppStack", "us-east-1")
        .await
        .expect("load")
        .expect("present");
    assert!(
        loaded.etag.starts_with('"'),
        "the ETag is kept as S3 sends it, quotes included"
    );

    // Someone else writes in between.
    let theirs = backend
        .save(
            "MyAppStack",
            "us-east-1",
            &loaded.parsed.state,
            SaveCondition::IfMatch(&loaded.etag),
            false,
        )
        .await
        .expect("first writer wins");
    let before = get(&client, &bucket, key).await.expect("stored");
    assert_eq!(before.1, theirs);

    let mut mine = loaded.parsed.state.clone();
    mine.resources.shift_remove("MyBucket");
    let err = backend
        .save(
            "MyAppStack",
            "us-east-1",
            &mine,
            SaveCondition::IfMatch(&loaded.etag),
            false,
        )
        .await
        .expect_err("stale ETag");
    assert!(matches!(err, BackendError::Conflict { .. }));
    assert!(
        err.to_string()
            .starts_with("State has been modified by another process"),
        "{err}"
    );
    assert_eq!(
        get(&client, &bucket, key).await.expect("stored"),
        before,
        "the record is intact"
    );

    // The final save of a deploy is unconditional.
    backend
        .save(
            "MyAppStack",
            "us-east-1",
            &mine,
            SaveCondition::Unconditional,
            false,
        )
        .await
        .expect("unconditional");
    let after = backend
        .load("MyAppStack", "us-east-1")
        .await
        .expect("load")
        .expect("present");
    assert!(!after.parsed.state.resources.contains_key("MyBucket"));
    assert_eq!(after.parsed.state.version, 11);
}

#[tokio::test]
async fn a_first_save_refuses_to_overwrite_an_existing_record() {
    let (client, bucket) = bucket_with_versioning().await;
    let backend = S3Backend::new(client.clone(), bucket.clone(), StateKeys::default());
    put(
        &client,
        &bucket,
        "cdkd/MyAppStack/us-east-1/state.json",
        std::fs::read(state_fixture("spec-example.json")).expect("fixture"),
    )
    .await;
    let loaded = backend
        .load("MyAppStack", "us-east-1")
        .await
        .expect("load")
        .expect("present");
    let err = backend
        .save(
            "MyAppStack",
            "us-east-1",
            &loaded.parsed.state,
            SaveCondition::IfAbsent,
            false,
        )
        .await
        .expect_err("exists");
    assert!(matches!(err, BackendError::Conflict { .. }));
}

#[tokio::test]
async fn a_legacy_record_is_read_and_migrated_on_the_next_write() {
    let (client, bucket) = bucket_with_versioning().await;
    let backend = S3Backend::new(client.clone(), bucket.clone(), StateKeys::default());
    let v1 = std::fs::read(state_fixture("v1.json")).expect("fixture");
    let stack = serde_json::from_slice::<Value>(&v1).expect("json")["stackName"]
        .as_str()
        .expect("name")
        .to_owned();
    let legacy_key = format!("cdkd/{stack}/state.json");
    put(&client, &bucket, &legacy_key, v1).await;

    let loaded = backend
        .load(&stack, "us-east-1")
        .await
        .expect("load")
        .expect("legacy record found");
    assert!(loaded.parsed.from_legacy_key);
    assert_eq!(loaded.key, legacy_key);
    backend
        .save(
            &stack,
            "us-east-1",
            &loaded.parsed.state,
            SaveCondition::IfMatch(&loaded.etag),
            true,
        )
        .await
        .expect("migrating save");
    assert!(
        get(&client, &bucket, &legacy_key).await.is_none(),
        "legacy key deleted"
    );
    let (bytes, _) = get(
        &client,
        &bucket,
        &format!("cdkd/{stack}/us-east-1/state.json"),
    )
    .await
    .expect("new key");
    let written: Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(written["version"], 11);
    assert_eq!(written["region"], "us-east-1");
    let reloaded = backend
        .load(&stack, "us-east-1")
        .await
        .expect("load")
        .expect("present");
    assert!(!reloaded.parsed.from_legacy_key);
    assert_eq!(
        reloaded.parsed.state.resources.len(),
        loaded.parsed.state.resources.len()
    );
}

#[tokio::test]
async fn every_schema_version_loads_and_version_12_is_refused() {
    let (client, bucket) = bucket_with_versioning().await;
    let backend = S3Backend::new(client.clone(), bucket.clone(), StateKeys::default());
    for v in 2..=11 {
        let body = std::fs::read(state_fixture(&format!("v{v}.json"))).expect("fixture");
        let stack = format!("V{v}Stack");
        put(
            &client,
            &bucket,
            &format!("cdkd/{stack}/us-east-1/state.json"),
            body,
        )
        .await;
        let loaded = backend
            .load(&stack, "us-east-1")
            .await
            .expect("loads")
            .expect("present");
        assert_eq!(loaded.parsed.state.version, 11, "v{v} upgraded in memory");
    }
    put(
        &client,
        &bucket,
        "cdkd/V12/us-east-1/state.json",
        std::fs::read(state_fixture("v12.json")).expect("fixture"),
    )
    .await;
    let err = backend.load("V12", "us-east-1").await.expect_err("refused");
    assert!(
        err.to_string()
            .contains("Unsupported state schema version 12. Upgrade cdkd."),
        "{err}"
    );
}

#[tokio::test]
async fn damaged_records_are_refused_with_their_code_and_left_byte_for_byte() {
    let (client, bucket) = bucket_with_versioning().await;
    let backend = S3Backend::new(client.clone(), bucket.clone(), StateKeys::default());
    let mut checked = 0;
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/state"))
        .expect("dir")
    {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name")
            .to_owned();
        if !name.starts_with("malformed-") {
            continue;
        }
        let stack = format!("S{checked}");
        let key = format!("cdkd/{stack}/us-east-1/state.json");
        let etag = put(
            &client,
            &bucket,
            &key,
            std::fs::read(&path).expect("fixture"),
        )
        .await;
        let before = get(&client, &bucket, &key).await.expect("stored");

        let err = backend.load(&stack, "us-east-1").await.expect_err(&name);
        match &err {
            BackendError::State(state_err) => {
                assert_eq!(
                    state_err.code(),
                    cdkd::state::STATE_RESOURCES_MALFORMED,
                    "{name}: {state_err}"
                )
            }
            other => panic!("{name}: unexpected {other}"),
        }
        assert!(!err.to_string().contains('\n'), "{name}: one line");
        // Read-only commands still show what they can, and nothing is written.
        let shown = cdkd()
            .args(["state", "show", &stack, "--state-bucket", &bucket])
            .output()
            .expect("runs");
        assert!(!String::from_utf8_lossy(&shown.stderr).contains("panicked"));
        let after = get(&client, &bucket, &key).await.expect("stored");
        assert_eq!(after, before, "{name}: bytes and ETag unchanged");
        assert_eq!(after.1, etag);
        checked += 1;
    }
    assert!(
        checked >= 15,
        "all malformed fixtures were exercised ({checked})"
    );
}

#[tokio::test]
async fn state_commands_render_a_record_written_by_the_typescript_cdkd() {
    let (client, bucket) = bucket_with_versioning().await;
    let example = std::fs::read(state_fixture("spec-example.json")).expect("fixture");
    put(
        &client,
        &bucket,
        "cdkd/MyAppStack/us-east-1/state.json",
        example.clone(),
    )
    .await;
    put(
        &client,
        &bucket,
        "cdkd/Other/eu-west-1/state.json",
        example.clone(),
    )
    .await;
    put(
        &client,
        &bucket,
        "cdkd/Other/us-east-1/state.json",
        example.clone(),
    )
    .await;
    put(
        &client,
        &bucket,
        "cdkd/_index/us-east-1/exports.json",
        b"{}".to_vec(),
    )
    .await;

    let run = |args: &[&str]| {
        let out = cdkd()
            .args(args)
            .args(["--state-bucket", &bucket])
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {stderr}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    let listed = run(&["state", "list"]);
    let rows: Vec<Vec<&str>> = listed
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec!["MyAppStack", "us-east-1"],
            vec!["Other", "eu-west-1"],
            vec!["Other", "us-east-1"]
        ],
        "the index is not a stack"
    );
    let json: Value = serde_json::from_str(&run(&["state", "list", "--json"])).expect("json");
    assert_eq!(json[0]["stackName"], "MyAppStack");

    let resources = run(&["state", "resources", "MyAppStack"]);
    assert!(
        resources.lines().any(|l| l.starts_with("MyBucket")
            && l.contains("AWS::S3::Bucket")
            && l.contains("myappstack-mybucket-abc123xyz")
            && l.ends_with("sdk")),
        "{resources}"
    );
    let json: Value =
        serde_json::from_str(&run(&["state", "resources", "MyAppStack", "--json"])).expect("json");
    assert_eq!(json[1]["logicalId"], "MyFunction");

    let shown = run(&["state", "show", "MyAppStack"]);
    assert!(
        shown.contains("Object key:    cdkd/MyAppStack/us-east-1/state.json"),
        "{shown}"
    );
    assert!(
        shown.contains("BucketName = myappstack-mybucket-abc123xyz"),
        "{shown}"
    );
    let raw = run(&["state", "show", "MyAppStack", "--json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&raw).expect("json"),
        serde_json::from_slice::<Value>(&example).expect("json"),
        "--json prints the stored record"
    );

    // A stack with records in two regions needs --stack-region.
    let out = cdkd()
        .args(["state", "show", "Other", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("several regions (eu-west-1, us-east-1); pass --stack-region"));
    run(&["state", "show", "Other", "--stack-region", "eu-west-1"]);

    let info = run(&["state", "info"]);
    assert!(
        info.contains(&format!("State bucket:  {bucket}")) && info.contains("Records:       3"),
        "{info}"
    );
}

#[tokio::test]
async fn bootstrap_is_idempotent_and_sets_up_the_bucket() {
    let client = s3_client().await;
    let bucket = unique_name("cdkd-boot");
    let run = |args: &[&str]| {
        let out = cdkd()
            .arg("bootstrap")
            .args(args)
            .args(["--state-bucket", &bucket, "--json"])
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).expect("json")
    };
    let first = run(&[]);
    assert_eq!(first["created"], true);
    assert_eq!(first["settingsApplied"], true);
    let second = run(&[]);
    assert_eq!(second["created"], false);
    assert_eq!(second["settingsApplied"], false);
    let forced = run(&["--force"]);
    assert_eq!(forced["settingsApplied"], true);

    let pab = client
        .get_public_access_block()
        .bucket(&bucket)
        .send()
        .await
        .expect("public access block");
    let cfg = pab.public_access_block_configuration().expect("config");
    assert_eq!(cfg.block_public_acls(), Some(true));
    assert_eq!(cfg.restrict_public_buckets(), Some(true));
    let enc = client
        .get_bucket_encryption()
        .bucket(&bucket)
        .send()
        .await
        .expect("encryption");
    assert!(enc.server_side_encryption_configuration().is_some());
    // Versioning is on: two writes of one key leave two versions.
    put(&client, &bucket, "k", b"1".to_vec()).await;
    put(&client, &bucket, "k", b"2".to_vec()).await;
    let versions = client
        .list_object_versions()
        .bucket(&bucket)
        .prefix("k")
        .send()
        .await
        .expect("versions");
    assert_eq!(versions.versions().len(), 2);
}

#[tokio::test]
async fn without_a_bucket_the_error_says_to_bootstrap() {
    let out = cdkd()
        .args(["state", "list", "--state-bucket", &unique_name("nope")])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("does not exist; run `cdkd bootstrap --state-bucket"),
        "{err}"
    );
}

#[tokio::test]
async fn state_orphan_refuses_without_confirmation_then_drops_the_record_and_its_exports() {
    let (client, bucket) = bucket_with_versioning().await;
    let key = "cdkd/MyAppStack/us-east-1/state.json";
    put(
        &client,
        &bucket,
        key,
        std::fs::read(state_fixture("spec-example.json")).expect("fixture"),
    )
    .await;
    let before = get(&client, &bucket, key).await.expect("stored");

    let out = cdkd()
        .args(["state", "orphan", "MyAppStack", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Refusing without confirmation: pass --yes")
    );
    assert_eq!(
        get(&client, &bucket, key).await.expect("still there"),
        before,
        "refusal changes nothing"
    );

    let out = cdkd()
        .args([
            "state",
            "orphan",
            "MyAppStack",
            "--yes",
            "--state-bucket",
            &bucket,
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(get(&client, &bucket, key).await.is_none(), "record dropped");
    assert!(
        get(&client, &bucket, "cdkd/MyAppStack/us-east-1/lock.json")
            .await
            .is_none(),
        "lock released"
    );
}

#[tokio::test]
async fn state_orphan_of_one_resource_works_on_a_damaged_record_and_keeps_the_rest_as_stored() {
    let (client, bucket) = bucket_with_versioning().await;
    let key = "cdkd/MalformedStack/us-east-1/state.json";
    put(
        &client,
        &bucket,
        key,
        std::fs::read(state_fixture("malformed-resource-record-string.json")).expect("fixture"),
    )
    .await;
    let out = cdkd()
        .args([
            "state",
            "orphan",
            "MalformedStack",
            "--resource",
            "Broken",
            "--state-bucket",
            &bucket,
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (bytes, _) = get(&client, &bucket, key).await.expect("record kept");
    let v: Value = serde_json::from_slice(&bytes).expect("json");
    assert!(v["resources"].get("Broken").is_none());
    assert!(v["resources"].get("Bucket").is_some());
    // Now the record is healthy again and loads strictly.
    let backend = S3Backend::new(client.clone(), bucket.clone(), StateKeys::default());
    backend
        .load("MalformedStack", "us-east-1")
        .await
        .expect("loads")
        .expect("present");

    let out = cdkd()
        .args([
            "state",
            "orphan",
            "MalformedStack",
            "--resource",
            "Nope",
            "--state-bucket",
            &bucket,
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no resource Nope"));
}

#[tokio::test]
async fn a_locked_stack_refuses_state_orphan_until_force_unlock() {
    let (client, bucket) = bucket_with_versioning().await;
    let key = "cdkd/MyAppStack/us-east-1/state.json";
    put(
        &client,
        &bucket,
        key,
        std::fs::read(state_fixture("spec-example.json")).expect("fixture"),
    )
    .await;
    let far_future = 4_102_444_800_000u64; // 2100-01-01
    let lock = format!(
        r#"{{"owner":"someone@elsewhere:1","timestamp":1700000000000,"expiresAt":{far_future},"operation":"deploy"}}"#
    );
    put(
        &client,
        &bucket,
        "cdkd/MyAppStack/us-east-1/lock.json",
        lock.into_bytes(),
    )
    .await;
    let before = get(&client, &bucket, key).await.expect("stored");

    let out = cdkd()
        .args([
            "state",
            "orphan",
            "MyAppStack",
            "--resource",
            "MyBucket",
            "--state-bucket",
            &bucket,
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("someone@elsewhere:1"),
        "the holder is named: {err}"
    );
    assert_eq!(
        get(&client, &bucket, key).await.expect("stored"),
        before,
        "nothing written under someone else's lock"
    );

    let out = cdkd()
        .args(["force-unlock", "MyAppStack", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unlocked stack MyAppStack (us-east-1)"));
    assert!(get(&client, &bucket, "cdkd/MyAppStack/us-east-1/lock.json")
        .await
        .is_none());

    let out = cdkd()
        .args([
            "state",
            "orphan",
            "MyAppStack",
            "--resource",
            "MyBucket",
            "--state-bucket",
            &bucket,
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Empties and deletes a bucket if it exists (this test owns the account's default names).
async fn remove_bucket(client: &aws_sdk_s3::Client, bucket: &str) {
    if let Ok(versions) = client.list_object_versions().bucket(bucket).send().await {
        for v in versions.versions() {
            let _ = client
                .delete_object()
                .bucket(bucket)
                .key(v.key().unwrap_or_default())
                .set_version_id(v.version_id().map(str::to_owned))
                .send()
                .await;
        }
        for m in versions.delete_markers() {
            let _ = client
                .delete_object()
                .bucket(bucket)
                .key(m.key().unwrap_or_default())
                .set_version_id(m.version_id().map(str::to_owned))
                .send()
                .await;
        }
    }
    let _ = client.delete_bucket().bucket(bucket).send().await;
}

#[tokio::test]
async fn the_default_bucket_then_the_legacy_name_then_a_bootstrap_error() {
    let client = s3_client().await;
    let default = "cdkd-state-123456789012";
    let legacy = "cdkd-state-123456789012-us-east-1";
    remove_bucket(&client, default).await;
    remove_bucket(&client, legacy).await;

    let out = cdkd().args(["state", "list"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("run `cdkd bootstrap` to create cdkd-state-123456789012"),
        "{err}"
    );

    client
        .create_bucket()
        .bucket(legacy)
        .send()
        .await
        .expect("legacy bucket");
    put(
        &client,
        legacy,
        "cdkd/Legacy/us-east-1/state.json",
        std::fs::read(state_fixture("spec-example.json")).expect("fixture"),
    )
    .await;
    let out = cdkd().args(["state", "list"]).output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("Using legacy state bucket name 'cdkd-state-123456789012-us-east-1'"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Legacy"));

    let out = cdkd().args(["bootstrap"]).output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cdkd().args(["state", "info"]).output().expect("runs");
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("State bucket:  cdkd-state-123456789012\n"),
        "the default wins once it exists"
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("legacy"));
    remove_bucket(&client, default).await;
    remove_bucket(&client, legacy).await;
}
