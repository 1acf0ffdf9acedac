//! Nested stacks and assets through the `cdkd` binary against the emulator: the committed
//! fixture assemblies `fixtures/apps/nested` (a parent reading its child's outputs) and
//! `fixtures/apps/lambda` (a function whose code is a directory asset), each test with its
//! own state bucket, checked through the AWS SDK and the state records. The
//! `nested-rollback` fixtures (v1, then a v2 whose child changes and whose parent then fails)
//! cover a parent's rollback reverting the child it updated.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{cdkd, s3_client, sdk_config, sts_client, unique_name};

const REGION: &str = "us-east-1";
const NESTED_ROW: &str = "ChildNestedStackChildNestedStackResourceC40294CA";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/apps")
        .join(name)
        .join("cdk.out")
}

/// A fresh state bucket made by `cdkd bootstrap --no-assets`: these tests publish to the CDK
/// bootstrap's storage (legacy mode); tests/commands/bootstrap.rs covers cdkd's own.
fn bootstrap() -> String {
    let bucket = unique_name("cdkd-nested");
    let out = cdkd()
        .args(["bootstrap", "--no-assets", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    bucket
}

/// `cdkd <command> --app DIR --state-bucket B ...`: (exit code, stdout, stderr).
fn run(command: &str, dir: &Path, bucket: &str, extra: &[&str]) -> (i32, String, String) {
    let out = cdkd()
        .current_dir(dir)
        .arg(command)
        .args(["--app", dir.to_str().unwrap(), "--state-bucket", bucket])
        .args(extra)
        .output()
        .expect("runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    eprintln!("--- cdkd {command} {extra:?}\n{stderr}");
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

fn ok(result: (i32, String, String)) -> (String, String) {
    let (code, stdout, stderr) = result;
    assert_eq!(code, 0, "cdkd failed:\n{stderr}");
    (stdout, stderr)
}

async fn account() -> String {
    sts_client()
        .await
        .get_caller_identity()
        .send()
        .await
        .expect("sts")
        .account()
        .expect("account")
        .to_owned()
}

/// The state record of `stack` and its ETag, read straight from the bucket.
async fn state(bucket: &str, stack: &str) -> Option<(Value, String)> {
    let key = format!("cdkd/{stack}/{REGION}/state.json");
    let got = s3_client()
        .await
        .get_object()
        .bucket(bucket)
        .key(&key)
        .send()
        .await
        .ok()?;
    let etag = got.e_tag().unwrap_or_default().to_owned();
    let bytes = got.body.collect().await.expect("body").into_bytes();
    Some((serde_json::from_slice(&bytes).expect("state json"), etag))
}

/// The bucket `cdk bootstrap` would have made for the account and region.
async fn create_cdk_asset_bucket(account: &str) -> String {
    let name = format!("cdk-hnb659fds-assets-{account}-{REGION}");
    let s3 = s3_client().await;
    if s3.head_bucket().bucket(&name).send().await.is_err() {
        if let Err(e) = s3.create_bucket().bucket(&name).send().await {
            // Another test of this binary may have made it a moment ago.
            let text = format!("{e:?}");
            assert!(
                text.contains("BucketAlreadyOwnedByYou") || text.contains("BucketAlreadyExists"),
                "create the CDK asset bucket: {text}"
            );
        }
    }
    name
}

/// Copies a fixture assembly into a temp dir (so a test can edit it).
fn copy_fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture(name), dir.path());
    dir
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

#[tokio::test]
async fn nested_fixture_deploys_its_child_and_a_redeploy_changes_nothing() {
    let bucket = bootstrap();
    let account = account().await;
    create_cdk_asset_bucket(&account).await;
    let dir = copy_fixture("nested");
    let (stdout, _) = ok(run("deploy", dir.path(), &bucket, &["--json"]));

    // The child: its own record under {parent}~{logicalId}, linked to the parent.
    let child_name = format!("ParentStack~{NESTED_ROW}");
    let (child, child_etag) = state(&bucket, &child_name).await.expect("child state");
    assert_eq!(child["stackName"], child_name.as_str());
    assert_eq!(child["parentStack"], "ParentStack");
    assert_eq!(child["parentLogicalId"], NESTED_ROW);
    assert_eq!(child["parentRegion"], REGION);
    let queue_url = child["resources"]["Queue4A7E3555"]["physicalId"]
        .as_str()
        .expect("queue url")
        .to_owned();
    let queue_arn = child["outputs"]["ParentStackChildQueueC61F4DABArn"]
        .as_str()
        .expect("child output")
        .to_owned();
    let sqs = aws_sdk_sqs::Client::new(&sdk_config().await);
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("the child's queue exists");
    assert_eq!(
        attrs
            .attributes()
            .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn))
            .map(String::as_str),
        Some(queue_arn.as_str())
    );

    // The parent: the row's cdkd-local ARN and Outputs.<Name> attributes, read by the
    // parameter and the output through Fn::GetAtt.
    let (parent, parent_etag) = state(&bucket, "ParentStack").await.expect("parent state");
    assert!(parent.get("parentStack").is_none());
    let row = &parent["resources"][NESTED_ROW];
    assert_eq!(row["resourceType"], "AWS::CloudFormation::Stack");
    assert_eq!(
        row["physicalId"],
        format!("arn:cdkd-local:{REGION}:{account}:nested-stack/ParentStack/{NESTED_ROW}").as_str()
    );
    assert_eq!(
        row["attributes"]["Outputs.ParentStackChildQueueC61F4DABArn"],
        queue_arn.as_str()
    );
    assert!(row["properties"]["TemplateURL"]
        .as_str()
        .is_some_and(|u| u
            .ends_with("41bdeb5ceecaeb5a694712f72ba80dee989bac0dab174583714f90caaea02dc6.json")));
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    let param = ssm
        .get_parameter()
        .name("/cdkd/nested/child-queue-arn")
        .send()
        .await
        .expect("the parent's parameter exists");
    assert_eq!(
        param.parameter().and_then(|p| p.value()),
        Some(queue_arn.as_str())
    );
    let printed: Value = serde_json::from_str(&stdout).expect("--json output");
    assert_eq!(
        printed["ParentStack"]["outputs"]["ChildQueueUrl"],
        queue_url.as_str()
    );

    // A second deploy: nothing changes in the parent or the child.
    let (_, stderr) = ok(run("deploy", dir.path(), &bucket, &[]));
    assert!(stderr.contains("no changes"), "{stderr}");
    assert_eq!(state(&bucket, "ParentStack").await.unwrap().1, parent_etag);
    assert_eq!(state(&bucket, &child_name).await.unwrap().1, child_etag);

    // The row leaves the template: the child is destroyed (its queue and its record).
    let template_file = dir.path().join("ParentStack.template.json");
    let mut template: Value =
        serde_json::from_str(&std::fs::read_to_string(&template_file).unwrap()).unwrap();
    let resources = template["Resources"].as_object_mut().unwrap();
    resources.remove(NESTED_ROW);
    resources.remove("ChildQueueArn70CEC905");
    template.as_object_mut().unwrap().remove("Outputs");
    std::fs::write(&template_file, template.to_string()).unwrap();
    ok(run("deploy", dir.path(), &bucket, &[]));
    assert!(state(&bucket, &child_name).await.is_none());
    let (parent, _) = state(&bucket, "ParentStack").await.expect("parent state");
    assert!(parent["resources"].as_object().unwrap().is_empty());
    assert!(
        sqs.get_queue_attributes()
            .queue_url(&queue_url)
            .send()
            .await
            .is_err(),
        "the child's queue is deleted"
    );
}

#[tokio::test]
async fn a_protected_parent_refuses_a_deploy_that_would_delete_its_nested_stack() {
    let bucket = bootstrap();
    create_cdk_asset_bucket(&account().await).await;
    let dir = copy_fixture("nested");
    // terminationProtection on the parent; its parameter (a fixed name another test of this
    // binary deploys) and outputs left out.
    let manifest_file = dir.path().join("manifest.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_file).unwrap()).unwrap();
    manifest["artifacts"]["ParentStack"]["properties"]["terminationProtection"] = true.into();
    std::fs::write(&manifest_file, manifest.to_string()).unwrap();
    let template_file = dir.path().join("ParentStack.template.json");
    let edit = |f: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let mut template: Value =
            serde_json::from_str(&std::fs::read_to_string(&template_file).unwrap()).unwrap();
        f(template["Resources"].as_object_mut().unwrap());
        template.as_object_mut().unwrap().remove("Outputs");
        std::fs::write(&template_file, template.to_string()).unwrap();
    };
    edit(&|r| {
        r.remove("ChildQueueArn70CEC905");
    });
    ok(run("deploy", dir.path(), &bucket, &[]));
    let child_name = format!("ParentStack~{NESTED_ROW}");
    let (child, _) = state(&bucket, &child_name).await.expect("child state");

    // The row leaves the template: deleting the child is refused, and nothing is deleted.
    edit(&|r| {
        r.remove(NESTED_ROW);
    });
    let (code, _, stderr) = run("deploy", dir.path(), &bucket, &["--dry-run"]);
    assert_eq!(code, 1, "--dry-run shows the refusal too: {stderr}");
    assert!(stderr.contains("STACK_TERMINATION_PROTECTION"), "{stderr}");
    let (code, _, stderr) = run("deploy", dir.path(), &bucket, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("STACK_TERMINATION_PROTECTION")
            && stderr.contains(&format!("nested stack(s) {child_name}")),
        "{stderr}"
    );
    assert_eq!(state(&bucket, &child_name).await.expect("kept").0, child);
    let (parent, _) = state(&bucket, "ParentStack").await.expect("parent state");
    assert!(parent["resources"][NESTED_ROW].is_object());
    let queue_url = child["resources"]["Queue4A7E3555"]["physicalId"]
        .as_str()
        .unwrap();
    let sqs = aws_sdk_sqs::Client::new(&sdk_config().await);
    assert!(sqs
        .get_queue_attributes()
        .queue_url(queue_url)
        .send()
        .await
        .is_ok());
}

/// The object's bytes, or `None` when it does not exist./// The object's bytes, or `None` when it does not exist.
async fn object(bucket: &str, key: &str) -> Option<(Vec<u8>, String)> {
    let got = s3_client()
        .await
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .ok()?;
    let etag = got.e_tag().unwrap_or_default().to_owned();
    Some((got.body.collect().await.ok()?.into_bytes().to_vec(), etag))
}

#[tokio::test]
async fn lambda_fixture_publishes_its_code_asset_once() {
    const KEY: &str = "fb572e8d8b89ba04eed20c2cd2f29ce81dfb8f032efac2d1545631938d9b018f.zip";
    let bucket = bootstrap();
    let account = account().await;
    let assets = create_cdk_asset_bucket(&account).await;
    let s3 = s3_client().await;
    // Another test of this binary (or an earlier run) may have published it already.
    let _ = s3.delete_object().bucket(&assets).key(KEY).send().await;
    let dir = copy_fixture("lambda");
    let (_, stderr) = ok(run("deploy", dir.path(), &bucket, &[]));
    assert!(
        stderr.contains(&format!("uploaded to s3://{assets}/{KEY}")),
        "{stderr}"
    );

    // The object is the zip of the asset directory, holding the handler.
    let (bytes, object_etag) = object(&assets, KEY).await.expect("the code asset object");
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a zip");
    let names: Vec<String> = archive
        .file_names()
        .map(|n| n.expect("name").into_owned())
        .collect();
    assert_eq!(names, vec!["index.js".to_owned()]);
    let mut handler = String::new();
    std::io::Read::read_to_string(&mut archive.by_index(0).unwrap(), &mut handler).unwrap();
    let original =
        std::fs::read_to_string(fixture("lambda").join(
            "asset.fb572e8d8b89ba04eed20c2cd2f29ce81dfb8f032efac2d1545631938d9b018f/index.js",
        ))
        .unwrap();
    assert_eq!(handler, original);
    // The stack's own template is not uploaded.
    assert!(
        object(
            &assets,
            "b3aa5063397d039163e9bfd6628768f404053326799e155b1ae2c0593276a54a.json"
        )
        .await
        .is_none(),
        "the stack template is not an asset cdkd uploads"
    );

    // The function's code points at the asset.
    let (state_before, state_etag) = state(&bucket, "LambdaStack").await.expect("state");
    let function = &state_before["resources"]["AssetFunctionA633A7D1"];
    assert_eq!(function["properties"]["Code"]["S3Bucket"], assets.as_str());
    assert_eq!(function["properties"]["Code"]["S3Key"], KEY);
    let name = function["physicalId"].as_str().expect("function name");
    let lambda = aws_sdk_lambda::Client::new(&sdk_config().await);
    let got = lambda
        .get_function()
        .function_name(name)
        .send()
        .await
        .expect("the function exists");
    assert!(got.configuration().is_some());

    // A second deploy: the upload is skipped and nothing changes.
    let (_, stderr) = ok(run("deploy", dir.path(), &bucket, &[]));
    assert!(
        stderr.contains(&format!("already in s3://{assets}/{KEY}")),
        "{stderr}"
    );
    assert!(stderr.contains("no changes"), "{stderr}");
    assert_eq!(object(&assets, KEY).await.expect("object").1, object_etag);
    assert_eq!(state(&bucket, "LambdaStack").await.unwrap().1, state_etag);

    // publish-assets alone: nothing new to upload.
    let (_, stderr) = ok(run("publish-assets", dir.path(), &bucket, &[]));
    assert!(stderr.contains("1 already present"), "{stderr}");
}

#[tokio::test]
async fn publish_assets_without_the_asset_bucket_names_it() {
    let bucket = bootstrap();
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture("lambda"), dir.path());
    // Point the asset at a bucket nobody made.
    let manifest_file = dir.path().join("LambdaStack.assets.json");
    let missing = unique_name("cdkd-no-such-assets");
    let text = std::fs::read_to_string(&manifest_file).unwrap().replace(
        "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}",
        &missing,
    );
    std::fs::write(&manifest_file, text).unwrap();
    let (code, _, stderr) = run("publish-assets", dir.path(), &bucket, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!("the asset bucket {missing} does not exist")),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_region_opted_into_cdkd_asset_storage_publishes_there_and_the_template_follows() {
    const KEY: &str = "fb572e8d8b89ba04eed20c2cd2f29ce81dfb8f032efac2d1545631938d9b018f.zip";
    let bucket = bootstrap();
    let s3 = s3_client().await;
    let own_assets = unique_name("cdkd-assets");
    let marker = format!("cdkd-bootstrap/{REGION}.json");
    // The marker names a bucket that does not exist yet: a hard error, no fallback.
    s3.put_object()
        .bucket(&bucket)
        .key(&marker)
        .body(
            serde_json::json!({"assetBucket": own_assets})
                .to_string()
                .into_bytes()
                .into(),
        )
        .send()
        .await
        .expect("write the marker");
    let dir = copy_fixture("lambda");
    let (code, _, stderr) = run("deploy", dir.path(), &bucket, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!("its asset bucket {own_assets} does not exist")),
        "{stderr}"
    );
    assert!(state(&bucket, "LambdaStack").await.is_none());

    s3.create_bucket()
        .bucket(&own_assets)
        .send()
        .await
        .expect("create the cdkd asset bucket");
    let (_, stderr) = ok(run("deploy", dir.path(), &bucket, &[]));
    assert!(
        stderr.contains(&format!("uploaded to s3://{own_assets}/{KEY}")),
        "{stderr}"
    );
    assert!(object(&own_assets, KEY).await.is_some());
    let (state, _) = state(&bucket, "LambdaStack").await.expect("state");
    let code = &state["resources"]["AssetFunctionA633A7D1"]["properties"]["Code"];
    assert_eq!(code["S3Bucket"], own_assets.as_str());
    assert_eq!(code["S3Key"], KEY);
    // The assembly itself is untouched.
    let template = std::fs::read_to_string(dir.path().join("LambdaStack.template.json")).unwrap();
    assert!(template.contains("cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"));
}

#[tokio::test]
async fn a_container_asset_without_docker_fails_naming_the_stack() {
    let bucket = bootstrap();
    let dir = copy_fixture("lambda");
    let manifest_file = dir.path().join("LambdaStack.assets.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_file).unwrap()).unwrap();
    manifest["dockerImages"] = serde_json::json!({
        "abc123": {
            "displayName": "Worker/Image",
            "source": {"directory": "asset.abc123"},
            "destinations": {"current_account-current_region": {
                "repositoryName": "cdk-hnb659fds-container-assets-${AWS::AccountId}-${AWS::Region}",
                "imageTag": "abc123"
            }}
        }
    });
    std::fs::write(&manifest_file, manifest.to_string()).unwrap();
    let out = cdkd()
        .current_dir(dir.path())
        .env("CDK_DOCKER", "/nonexistent/docker")
        .args(["deploy", "--app", dir.path().to_str().unwrap()])
        .args(["--state-bucket", &bucket])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("container image assets need docker")
            && stderr.contains("stacks that need one: LambdaStack"),
        "{stderr}"
    );
    // Nothing was deployed.
    assert!(state(&bucket, "LambdaStack").await.is_none());
}

/// The parent and child of the `nested-rollback` fixtures.
const ROLLBACK_STACK: &str = "NestedRollback";
const ROLLBACK_CHILD: &str = "NestedRollback~Child";
/// The child's own nested stack, whose `Knob` parameter v2 changes too.
const ROLLBACK_GRANDCHILD: &str = "NestedRollback~Child~Grand";
/// v2 replaces the child's `Renamed` (an SSM parameter, a stateful type) by renaming it.
const FORCE: &str = "--force-stateful-recreation";
/// The type whose create the rollback tests make fail (no other test of this binary makes one).
const BREAKER_TYPE: &str = "AWS::Athena::WorkGroup";

/// Writes the fixture assembly `name` into `dir` (over what is there), its resource names
/// made unique with `token` so tests running at once do not share parameters.
fn write_rollback_fixture(name: &str, dir: &Path, token: &str) {
    for entry in std::fs::read_dir(fixture(name)).expect("read fixture") {
        let entry = entry.expect("entry");
        let text = std::fs::read_to_string(entry.path()).expect("fixture file");
        std::fs::write(
            dir.join(entry.file_name()),
            text.replace("cdkd-nested-rollback", token),
        )
        .expect("write fixture file");
    }
}

fn fail_next_breaker_create() {
    let fault = serde_json::json!({"fail_create": {"TypeName": BREAKER_TYPE,
        "ErrorCode": "InvalidRequest", "StatusMessage": "injected by deploy_nested.rs",
        "count": 1}});
    let (status, body) =
        support::http::http("POST", "/_cloudcontrol/faults", &[], &fault.to_string());
    assert_eq!(status, 200, "{body}");
}

/// The value of the SSM parameter `/{token}/{name}`, or `None` when it does not exist.
async fn parameter(token: &str, name: &str) -> Option<String> {
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    let got = ssm
        .get_parameter()
        .name(format!("/{token}/{name}"))
        .send()
        .await
        .ok()?;
    got.parameter()?.value().map(str::to_owned)
}

/// The rollback journal of `stack`, when one exists.
async fn journal(bucket: &str, stack: &str) -> Option<Value> {
    let key = format!("cdkd/{stack}/{REGION}/rollback-journal.json");
    let (bytes, _) = object(bucket, &key).await?;
    Some(serde_json::from_slice(&bytes).expect("journal json"))
}

/// Deploys the v1 fixture: the child's `Setting` is v1, it has `Dropped` and `Renamed` is
/// `renamed-a`; no journal stays.
async fn deploy_v1(dir: &Path, bucket: &str, token: &str) -> Value {
    write_rollback_fixture("nested-rollback", dir, token);
    ok(run("deploy", dir, bucket, &[]));
    assert_eq!(parameter(token, "setting").await.as_deref(), Some("v1"));
    assert_eq!(parameter(token, "mirror").await.as_deref(), Some("v1"));
    assert!(parameter(token, "dropped").await.is_some());
    assert!(parameter(token, "renamed-a").await.is_some());
    assert_eq!(parameter(token, "grand").await.as_deref(), Some("grand-v1"));
    // A successful nested deploy leaves no journal, the child's included.
    assert!(journal(bucket, ROLLBACK_CHILD).await.is_none());
    assert!(journal(bucket, ROLLBACK_GRANDCHILD).await.is_none());
    assert!(journal(bucket, ROLLBACK_STACK).await.is_none());
    state(bucket, ROLLBACK_CHILD).await.expect("child state").0
}

/// After the parent's rollback: the child is as v1 left it, in the emulator and in its state,
/// and nothing the failed run created in it survives; its pending segment is gone.
async fn assert_child_is_v1(bucket: &str, token: &str, before: &Value) {
    assert_eq!(parameter(token, "setting").await.as_deref(), Some("v1"));
    assert_eq!(
        parameter(token, "added").await,
        None,
        "created, then deleted"
    );
    assert_eq!(
        parameter(token, "dropped").await.as_deref(),
        Some("only-in-v1"),
        "deleted, then created again"
    );
    assert_eq!(parameter(token, "mirror").await.as_deref(), Some("v1"));
    // The replacement is swapped back: the old parameter was kept for it, the new one goes.
    assert!(parameter(token, "renamed-a").await.is_some());
    assert_eq!(parameter(token, "renamed-b").await, None);
    let (child, _) = state(bucket, ROLLBACK_CHILD).await.expect("child state");
    let mut ids: Vec<&String> = child["resources"].as_object().unwrap().keys().collect();
    let mut before_ids: Vec<&String> = before["resources"].as_object().unwrap().keys().collect();
    ids.sort();
    before_ids.sort();
    assert_eq!(ids, before_ids, "{child}");
    for id in ["Setting", "Dropped", "Renamed"] {
        assert_eq!(
            child["resources"][id]["properties"], before["resources"][id]["properties"],
            "{id}"
        );
        assert_eq!(
            child["resources"][id]["physicalId"],
            before["resources"][id]["physicalId"]
        );
    }
    assert_eq!(child["resources"]["Setting"]["properties"]["Value"], "v1");
    assert_eq!(child["outputs"]["SettingValue"], "v1");
    let (parent, _) = state(bucket, ROLLBACK_STACK).await.expect("parent state");
    assert_eq!(
        parent["resources"]["Child"]["attributes"]["Outputs.SettingValue"],
        "v1"
    );
    assert_eq!(
        parent["resources"]["Mirror"]["properties"]["Value"], "v1",
        "{parent}"
    );
    assert!(parent["resources"].get("Breaker").is_none());
    assert!(
        journal(bucket, ROLLBACK_CHILD).await.is_none(),
        "the child's pending segment is replayed and its journal deleted"
    );
    // The grandchild is reverted through the child's row op, recursively.
    assert_eq!(parameter(token, "grand").await.as_deref(), Some("grand-v1"));
    let (grand, _) = state(bucket, ROLLBACK_GRANDCHILD)
        .await
        .expect("grandchild state");
    assert_eq!(
        grand["resources"]["Knob"]["properties"]["Value"],
        "grand-v1"
    );
    assert!(journal(bucket, ROLLBACK_GRANDCHILD).await.is_none());
}

#[tokio::test]
async fn a_failed_parent_rolls_back_the_child_it_updated() {
    let bucket = bootstrap();
    let token = unique_name("nrb-auto");
    let dir = tempfile::tempdir().expect("temp dir");
    let before = deploy_v1(dir.path(), &bucket, &token).await;

    // v2: the child updates Setting, adds Added and drops Dropped; then the parent's Breaker
    // (after the child row) fails and the parent rolls back.
    write_rollback_fixture("nested-rollback-v2", dir.path(), &token);
    fail_next_breaker_create();
    let (code, _, stderr) = run("deploy", dir.path(), &bucket, &[FORCE]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("injected by deploy_nested.rs"), "{stderr}");
    assert!(stderr.contains("rolled back"), "{stderr}");
    assert_child_is_v1(&bucket, &token, &before).await;

    // The next successful deploy (v2, no fault) leaves no journal anywhere.
    ok(run("deploy", dir.path(), &bucket, &[FORCE]));
    assert_eq!(parameter(&token, "setting").await.as_deref(), Some("v2"));
    assert_eq!(parameter(&token, "dropped").await, None);
    assert!(parameter(&token, "renamed-b").await.is_some());
    assert_eq!(parameter(&token, "renamed-a").await, None, "replaced");
    assert_eq!(
        parameter(&token, "grand").await.as_deref(),
        Some("grand-v2")
    );
    assert!(journal(&bucket, ROLLBACK_CHILD).await.is_none());
    assert!(journal(&bucket, ROLLBACK_GRANDCHILD).await.is_none());
    assert!(journal(&bucket, ROLLBACK_STACK).await.is_none());
}

#[tokio::test]
async fn no_rollback_keeps_the_child_and_cdkd_rollback_reverts_it() {
    let bucket = bootstrap();
    let token = unique_name("nrb-keep");
    let dir = tempfile::tempdir().expect("temp dir");
    let before = deploy_v1(dir.path(), &bucket, &token).await;

    write_rollback_fixture("nested-rollback-v2", dir.path(), &token);
    fail_next_breaker_create();
    let (code, _, stderr) = run("deploy", dir.path(), &bucket, &["--no-rollback", FORCE]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(parameter(&token, "setting").await.as_deref(), Some("v2"));
    assert!(parameter(&token, "added").await.is_some());
    assert_eq!(parameter(&token, "dropped").await, None);
    // The replaced parameter's old one is kept until the top-level deploy succeeds.
    assert!(parameter(&token, "renamed-a").await.is_some());
    assert!(parameter(&token, "renamed-b").await.is_some());

    // The child's successful deploy left a pending segment; the parent's row op names it.
    let child_journal = journal(&bucket, ROLLBACK_CHILD)
        .await
        .expect("child journal");
    let segments = child_journal["segments"].as_array().unwrap();
    assert_eq!(segments.len(), 1, "{child_journal}");
    let pending = &segments[0];
    assert_eq!(pending["reason"], "nested-pending-parent");
    let ops: Vec<String> = pending["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o["changeType"].as_str().unwrap(),
                o["logicalId"].as_str().unwrap()
            )
        })
        .collect();
    for op in [
        "UPDATE Setting",
        "CREATE Added",
        "DELETE Dropped",
        "UPDATE Renamed",
    ] {
        assert!(ops.contains(&op.to_owned()), "{op} in {ops:?}");
    }
    let renamed = pending["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["logicalId"] == "Renamed")
        .unwrap();
    assert_eq!(renamed["oldDeletionDeferred"], true, "{renamed}");
    assert_eq!(
        parameter(&token, "grand").await.as_deref(),
        Some("grand-v2")
    );
    let grand_journal = journal(&bucket, ROLLBACK_GRANDCHILD)
        .await
        .expect("grandchild journal");
    let grand_row = pending["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["logicalId"] == "Grand")
        .expect("the child's row op");
    assert_eq!(
        grand_row["nestedChildSegment"],
        grand_journal["segments"][0]["timestamp"]
    );
    let parent_journal = journal(&bucket, ROLLBACK_STACK).await.expect("journal");
    let row_op = parent_journal["segments"][0]["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["logicalId"] == "Child")
        .expect("the row's op")
        .clone();
    assert_eq!(row_op["changeType"], "UPDATE");
    assert_eq!(row_op["nestedChildSegment"], pending["timestamp"]);

    // `cdkd rollback` of the parent reverts the child too.
    let out = cdkd()
        .args(["rollback", ROLLBACK_STACK, "--state-bucket", &bucket])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("--- cdkd rollback\n{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_child_is_v1(&bucket, &token, &before).await;
    assert!(journal(&bucket, ROLLBACK_STACK).await.is_none());
}

#[tokio::test]
async fn a_failed_first_deploy_destroys_the_child_it_created_and_its_journal() {
    let bucket = bootstrap();
    let token = unique_name("nrb-first");
    let dir = tempfile::tempdir().expect("temp dir");
    write_rollback_fixture("nested-rollback-v2", dir.path(), &token);
    fail_next_breaker_create();
    let (code, _, stderr) = run("deploy", dir.path(), &bucket, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("rolled back"), "{stderr}");
    assert!(!stderr.contains("could not save state"), "{stderr}");
    // The created row's revert destroyed the child, whose successful deploy had written a
    // pending segment: its record and journal are gone with its resources.
    for name in ["setting", "added", "mirror", "renamed-b", "grand"] {
        assert_eq!(parameter(&token, name).await, None, "{name}");
    }
    assert!(state(&bucket, ROLLBACK_CHILD).await.is_none());
    assert!(journal(&bucket, ROLLBACK_CHILD).await.is_none());
    assert!(state(&bucket, ROLLBACK_GRANDCHILD).await.is_none());
    assert!(journal(&bucket, ROLLBACK_GRANDCHILD).await.is_none());
    assert!(state(&bucket, ROLLBACK_STACK).await.is_none());
    assert!(journal(&bucket, ROLLBACK_STACK).await.is_none());
}

/// Deploys v1, then v2 with `--no-rollback` and the parent's breaker failing after the child
/// replaced `Renamed`: the old `renamed-a` is still alive, kept for a rollback that is not run.
async fn v2_failed_without_rollback(prefix: &str) -> (String, String, tempfile::TempDir) {
    let bucket = bootstrap();
    let token = unique_name(prefix);
    let dir = tempfile::tempdir().expect("temp dir");
    deploy_v1(dir.path(), &bucket, &token).await;
    write_rollback_fixture("nested-rollback-v2", dir.path(), &token);
    fail_next_breaker_create();
    let (code, _, stderr) = run("deploy", dir.path(), &bucket, &["--no-rollback", FORCE]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        parameter(&token, "renamed-a").await.is_some(),
        "kept for a rollback"
    );
    (bucket, token, dir)
}

#[tokio::test]
async fn removing_a_child_row_deletes_the_old_resources_its_pending_segment_kept() {
    let (bucket, token, dir) = v2_failed_without_rollback("nrb-gone").await;
    let ledger = |stack: &str| format!("cdkd/{stack}/{REGION}/create-tokens.json");
    assert!(
        object(&bucket, &ledger(ROLLBACK_CHILD)).await.is_some(),
        "the child's creates wrote its ledger"
    );

    // The next deploy drops the child row: the child is destroyed, and with it the old
    // parameter its replacement kept alive for the parent's rollback.
    let template = serde_json::json!({"Resources": {"Other": {"Type": "AWS::SSM::Parameter",
        "Properties": {"Name": format!("/{token}/other"), "Type": "String", "Value": "x"}}}});
    std::fs::write(
        dir.path().join("NestedRollback.template.json"),
        template.to_string(),
    )
    .unwrap();
    ok(run("deploy", dir.path(), &bucket, &[]));
    for name in [
        "setting",
        "added",
        "mirror",
        "renamed-a",
        "renamed-b",
        "grand",
    ] {
        assert_eq!(parameter(&token, name).await, None, "{name}");
    }
    for stack in [ROLLBACK_CHILD, ROLLBACK_GRANDCHILD] {
        assert!(state(&bucket, stack).await.is_none(), "{stack}");
        assert!(journal(&bucket, stack).await.is_none(), "{stack}");
        assert!(
            object(&bucket, &ledger(stack)).await.is_none(),
            "{stack}'s ledger"
        );
    }
    assert!(journal(&bucket, ROLLBACK_STACK).await.is_none());
}

#[tokio::test]
async fn destroy_after_a_failed_no_rollback_deploy_deletes_the_olds_a_child_kept() {
    let (bucket, token, dir) = v2_failed_without_rollback("nrb-destroy").await;

    // No rollback: the stack is torn down as it stands. Only the child's journal still names
    // the old `renamed-a`; the destroy deletes it with the rest instead of stranding it.
    let (stdout, stderr) = ok(run("destroy", dir.path(), &bucket, &["--all", "--force"]));
    assert!(
        format!("{stdout}{stderr}").contains("kept for a rollback"),
        "the deferred old is named as such: {stderr}"
    );
    for name in [
        "setting",
        "added",
        "mirror",
        "renamed-a",
        "renamed-b",
        "grand",
    ] {
        assert_eq!(parameter(&token, name).await, None, "{name}");
    }
    for stack in [ROLLBACK_STACK, ROLLBACK_CHILD, ROLLBACK_GRANDCHILD] {
        assert!(state(&bucket, stack).await.is_none(), "{stack}");
        assert!(journal(&bucket, stack).await.is_none(), "{stack}");
    }
}
