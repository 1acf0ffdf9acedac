//! `cdkd destroy` and `cdkd state destroy` end to end against the emulator: the fixture apps
//! deployed then destroyed, stacks ordered by the references in their templates, the
//! strong-reference refusal, partial destroys (exit 2) and their
//! re-runs, non-empty and auto-emptied buckets, retained resources, the record refusals, and
//! the sidecars a destroy removes. Each test has its own state bucket.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::http::http;
use support::{cdkd, s3_client, sdk_config, unique_name};
use tempfile::TempDir;

const REGION: &str = "us-east-1";

/// (exit code, stdout, stderr) of `cdkd <args> --state-bucket <bucket>` run in `dir`.
fn run(dir: &Path, bucket: &str, args: &[&str]) -> (i32, String, String) {
    let out = cdkd()
        .current_dir(dir)
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

fn bootstrap(prefix: &str) -> String {
    let bucket = unique_name(prefix);
    let (code, _, stderr) = run(Path::new("."), &bucket, &["bootstrap"]);
    assert_eq!(code, 0, "{stderr}");
    bucket
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/apps/{name}/cdk.out"))
}

/// Deploys then destroys with `--app <dir>`; returns the destroy's (code, stderr).
fn app_cmd(dir: &Path, bucket: &str, args: &[&str]) -> (i32, String) {
    let app = dir.to_str().unwrap();
    let mut full = args.to_vec();
    full.extend(["--app", app]);
    let (code, _, stderr) = run(dir, bucket, &full);
    (code, stderr)
}

/// A hand-written cloud assembly of one stack.
struct App {
    dir: TempDir,
    stack: String,
    bucket: String,
}

impl App {
    fn new(prefix: &str, template: &Value) -> App {
        let app = App {
            dir: tempfile::tempdir().expect("temp dir"),
            stack: format!("Destroy{}", unique_name(prefix).replace('-', "x")),
            bucket: bootstrap("cdkd-destroy"),
        };
        let file = format!("{}.template.json", app.stack);
        let manifest = json!({"version": "36.0.0", "artifacts": {app.stack.clone(): {
            "type": "aws:cloudformation:stack",
            "environment": "aws://unknown-account/unknown-region",
            "properties": {"templateFile": file}
        }}});
        std::fs::write(app.dir.path().join(&file), template.to_string()).unwrap();
        std::fs::write(app.dir.path().join("manifest.json"), manifest.to_string()).unwrap();
        app
    }

    fn cmd(&self, args: &[&str]) -> (i32, String) {
        app_cmd(self.dir.path(), &self.bucket, args)
    }

    fn deploy(&self) {
        let (code, stderr) = self.cmd(&["deploy"]);
        assert_eq!(code, 0, "deploy failed:\n{stderr}");
    }

    fn state(&self) -> Option<Value> {
        state_json(&self.bucket, &self.stack)
    }

    fn physical_id(&self, id: &str) -> String {
        let state = self.state().expect("a state record");
        state["resources"][id]["physicalId"]
            .as_str()
            .unwrap_or_else(|| panic!("{id} has a physical id: {state}"))
            .to_owned()
    }
}

fn state_json(bucket: &str, stack: &str) -> Option<Value> {
    let out = cdkd()
        .args(["state", "show", stack, "--json", "--state-bucket", bucket])
        .args(["--stack-region", REGION])
        .output()
        .expect("runs");
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("state json"))
}

/// Every current key under `prefix` in `bucket`.
async fn keys_under(bucket: &str, prefix: &str) -> Vec<String> {
    let out = s3_client()
        .await
        .list_objects_v2()
        .bucket(bucket)
        .prefix(prefix)
        .send()
        .await
        .expect("list");
    out.contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect()
}

/// The stored bodies (not delete markers) of exactly `key`, current or not.
async fn bodies_of(bucket: &str, key: &str) -> usize {
    let out = s3_client()
        .await
        .list_object_versions()
        .bucket(bucket)
        .prefix(key)
        .send()
        .await
        .expect("list versions");
    out.versions()
        .iter()
        .filter(|v| v.key() == Some(key))
        .count()
}

async fn put(bucket: &str, key: &str, body: &str) {
    s3_client()
        .await
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(body.as_bytes().to_vec().into())
        .send()
        .await
        .expect("put");
}

async fn export_names(bucket: &str) -> Vec<String> {
    let out = s3_client()
        .await
        .get_object()
        .bucket(bucket)
        .key(format!("cdkd/_index/{REGION}/exports.json"))
        .send()
        .await;
    let Ok(out) = out else { return Vec::new() };
    let bytes = out.body.collect().await.expect("body").into_bytes();
    let index: Value = serde_json::from_slice(&bytes).expect("index json");
    index["exports"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// Whether the resource a record names still exists, for the types the fixtures use; `None`
/// for a type this test cannot look up.
async fn exists(resource_type: &str, physical_id: &str) -> Option<bool> {
    let config = sdk_config().await;
    Some(match resource_type {
        "AWS::SQS::Queue" => aws_sdk_sqs::Client::new(&config)
            .get_queue_attributes()
            .queue_url(physical_id)
            .send()
            .await
            .is_ok(),
        "AWS::S3::Bucket" => s3_client()
            .await
            .head_bucket()
            .bucket(physical_id)
            .send()
            .await
            .is_ok(),
        "AWS::DynamoDB::Table" => aws_sdk_dynamodb::Client::new(&config)
            .describe_table()
            .table_name(physical_id)
            .send()
            .await
            .is_ok(),
        "AWS::IAM::Role" => aws_sdk_iam::Client::new(&config)
            .get_role()
            .role_name(physical_id)
            .send()
            .await
            .is_ok(),
        "AWS::SNS::Topic" => aws_sdk_sns::Client::new(&config)
            .get_topic_attributes()
            .topic_arn(physical_id)
            .send()
            .await
            .is_ok(),
        "AWS::SSM::Parameter" => aws_sdk_ssm::Client::new(&config)
            .get_parameter()
            .name(physical_id)
            .send()
            .await
            .is_ok(),
        _ => return None,
    })
}

/// (stack, type, physical id) of every resource in every record of `bucket`.
fn recorded(bucket: &str) -> Vec<(String, String, String)> {
    let out = cdkd()
        .args(["state", "list", "--json", "--state-bucket", bucket])
        .output()
        .expect("runs");
    let list: Value = serde_json::from_slice(&out.stdout).expect("list json");
    let mut all = Vec::new();
    for r in list.as_array().unwrap() {
        let stack = r["stackName"].as_str().unwrap();
        let state = state_json(bucket, stack).expect("record");
        for rec in state["resources"].as_object().unwrap().values() {
            if let Some(pid) = rec["physicalId"].as_str() {
                let t = rec["resourceType"].as_str().unwrap();
                all.push((stack.to_owned(), t.to_owned(), pid.to_owned()));
            }
        }
    }
    all
}

/// The CDK bootstrap's asset bucket, which a deploy publishes file assets (a nested stack's
/// template) to; created when missing.
async fn ensure_cdk_asset_bucket() {
    let name = format!("cdk-hnb659fds-assets-123456789012-{REGION}");
    let s3 = s3_client().await;
    if s3.head_bucket().bucket(&name).send().await.is_err() {
        // A parallel test may create it first; either way it exists afterwards.
        let _ = s3.create_bucket().bucket(&name).send().await;
    }
}

/// Deploys a fixture app, destroys it with `--all`, and checks nothing is left.
async fn deploy_and_destroy_fixture(name: &str) {
    ensure_cdk_asset_bucket().await;
    let bucket = bootstrap(&format!("cdkd-fx-{name}"));
    let dir = fixture(name);
    let (code, stderr) = app_cmd(&dir, &bucket, &["deploy", "--all"]);
    assert_eq!(code, 0, "{name}: deploy failed:\n{stderr}");
    let resources = recorded(&bucket);
    assert!(!resources.is_empty(), "{name}: nothing recorded");
    let mut checked = 0;
    for (_, t, pid) in &resources {
        if exists(t, pid).await == Some(true) {
            checked += 1;
        }
    }
    assert!(checked > 0, "{name}: no resource could be looked up");

    let (code, stderr) = app_cmd(&dir, &bucket, &["destroy", "--all", "--force"]);
    assert_eq!(code, 0, "{name}: destroy failed:\n{stderr}");
    for (stack, t, pid) in &resources {
        assert_ne!(
            exists(t, pid).await,
            Some(true),
            "{name}: {stack} {t} {pid} survived"
        );
    }
    let left = keys_under(&bucket, "cdkd/").await;
    let left: Vec<&String> = left
        .iter()
        .filter(|k| !k.contains("/_index/") && !support::is_event_store_key(k))
        .collect();
    assert!(left.is_empty(), "{name}: state objects left: {left:?}");
    assert_eq!(export_names(&bucket).await, Vec::<String>::new(), "{name}");
}

#[tokio::test]
async fn every_deployable_fixture_app_is_destroyed_without_a_trace() {
    // One test, one fixture after another: the fixtures name some resources (SSM parameter
    // names, export names) literally, so two deploys of one app cannot overlap. cross-stack has
    // its own test below.
    for name in ["basic", "params", "stages", "nested", "lambda"] {
        deploy_and_destroy_fixture(name).await;
    }
}

/// The byte offset of `needle` in `text`; fails naming it.
fn offset(text: &str, needle: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in:\n{text}"))
}

/// Issue 15: stacks linked only through their templates (an `Fn::ImportValue` of a name the
/// producer exports, an `Fn::GetStackOutput` of the producer; no manifest dependency, and the
/// consumer first in the manifest) deploy producer first in one `--all` run, and are destroyed
/// consumer first, the producer's destroy not refused for a consumer still there.
#[tokio::test]
async fn stacks_linked_only_by_their_templates_deploy_and_destroy_in_order() {
    for (name, producer, consumer, param) in [
        (
            "cross-stack-import",
            "ImportProducer",
            "ImportConsumer",
            "QueueUrl7D9C5587",
        ),
        (
            "cross-stack-output",
            "OutputProducer",
            "OutputReader",
            "QueueUrl",
        ),
    ] {
        let bucket = bootstrap("cdkd-order");
        let dir = fixture(name);
        let (code, stderr) = app_cmd(&dir, &bucket, &["deploy", "--all"]);
        assert_eq!(code, 0, "{name}: deploy failed:\n{stderr}");
        assert!(
            offset(&stderr, &format!("✓ {producer}: deployed"))
                < offset(&stderr, &format!("Deploying {consumer}")),
            "{name}: the consumer started before its producer deployed:\n{stderr}"
        );
        let produced = state_json(&bucket, producer).expect("producer record");
        let read = state_json(&bucket, consumer).expect("consumer record");
        let url = produced["outputs"]["QueueUrl"]
            .as_str()
            .or(produced["outputs"]["QueueUrlOut"].as_str())
            .unwrap_or_else(|| panic!("{name}: the producer's queue url: {produced}"));
        assert_eq!(
            read["resources"][param]["properties"]["Value"], url,
            "{name}: the consumer's parameter holds the producer's output"
        );
        let resources = recorded(&bucket);

        let (code, stderr) = app_cmd(&dir, &bucket, &["destroy", "--all", "--force"]);
        assert_eq!(code, 0, "{name}: destroy failed:\n{stderr}");
        assert!(
            offset(&stderr, &format!("{consumer}: destroyed"))
                < offset(&stderr, &format!("Destroying {producer}")),
            "{name}: the producer went first:\n{stderr}"
        );
        for (stack, t, pid) in &resources {
            assert_ne!(
                exists(t, pid).await,
                Some(true),
                "{name}: {stack} {t} {pid} survived"
            );
        }
        let left = keys_under(&bucket, "cdkd/").await;
        let left: Vec<&String> = left
            .iter()
            .filter(|k| !k.contains("/_index/") && !support::is_event_store_key(k))
            .collect();
        assert!(left.is_empty(), "{name}: state objects left: {left:?}");
        assert_eq!(export_names(&bucket).await, Vec::<String>::new(), "{name}");
    }
}

#[tokio::test]
async fn confirmation_is_required_and_a_missing_record_is_nothing_to_do() {
    let app = App::new(
        "confirm",
        &json!({"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}}),
    );
    app.deploy();
    let (code, stderr) = app.cmd(&["destroy"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("pass --yes"), "{stderr}");
    let url = app.physical_id("Q");
    assert_eq!(exists("AWS::SQS::Queue", &url).await, Some(true));

    let events = format!("cdkd/{}/{REGION}/deployments/run-1.jsonl", app.stack);
    put(&app.bucket, &events, "one").await;
    put(&app.bucket, &events, "two").await;
    let (code, stderr) = app.cmd(&["destroy", "--yes", "--purge-events"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(exists("AWS::SQS::Queue", &url).await, Some(false));
    assert!(app.state().is_none());
    assert_eq!(
        bodies_of(&app.bucket, &events).await,
        0,
        "the event store is purged"
    );
    let (code, stderr) = app.cmd(&["destroy", "--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("no state record"), "{stderr}");
}

#[tokio::test]
async fn a_producer_is_refused_while_a_consumer_imports_from_it() {
    let bucket = bootstrap("cdkd-xs");
    let dir = fixture("cross-stack");
    let (code, stderr) = app_cmd(&dir, &bucket, &["deploy", "--all"]);
    assert_eq!(code, 0, "{stderr}");
    let producer = state_json(&bucket, "ProducerStack").expect("producer record");

    let (code, stderr) = app_cmd(&dir, &bucket, &["destroy", "ProducerStack", "--force"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("StackHasActiveImportsError"), "{stderr}");
    assert!(
        stderr.contains("ConsumerStack (us-east-1) imports"),
        "{stderr}"
    );
    assert_eq!(state_json(&bucket, "ProducerStack"), Some(producer.clone()));
    let queue = producer["resources"]["Queue4A7E3555"]["physicalId"]
        .as_str()
        .unwrap();
    assert_eq!(exists("AWS::SQS::Queue", queue).await, Some(true));

    // `state destroy` runs the same scan.
    let (code, _, stderr) = run(
        Path::new("."),
        &bucket,
        &["state", "destroy", "ProducerStack", "--force"],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("StackHasActiveImportsError"), "{stderr}");

    let (code, stderr) = app_cmd(&dir, &bucket, &["destroy", "ConsumerStack", "--force"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, stderr) = app_cmd(&dir, &bucket, &["destroy", "ProducerStack", "--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(exists("AWS::SQS::Queue", queue).await, Some(false));
    assert!(state_json(&bucket, "ProducerStack").is_none());
    assert!(export_names(&bucket).await.is_empty());
}

/// The strong-reference scans of one destroy share the records they read (by key and ETag),
/// and still see each record as it is at their listing: a record that went, one that started
/// importing, one that stopped.
#[tokio::test]
async fn the_scans_of_one_destroy_see_every_record_as_it_is_now() {
    use cdkd::engine::destroy::scan::{active_consumers, RecordImports};
    use cdkd::state::backend::S3Backend;
    use cdkd::state::StateKeys;
    use std::sync::Arc;

    let bucket = bootstrap("cdkd-scan");
    let backend = Arc::new(S3Backend::new(
        s3_client().await,
        bucket.clone(),
        StateKeys::default(),
    ));
    let key = |stack: &str| format!("cdkd/{stack}/{REGION}/state.json");
    let record = |stack: &str, imports: &[&str]| {
        let imports: Vec<Value> = imports
            .iter()
            .map(|e| json!({"sourceStack": "P", "sourceRegion": REGION, "exportName": e}))
            .collect();
        json!({"version": 11, "stackName": stack, "region": REGION, "resources": {},
               "outputs": {"Url": "u"}, "exportNames": ["P-Url"], "imports": imports})
        .to_string()
    };
    put(&bucket, &key("P"), &record("P", &[])).await;
    put(&bucket, &key("A"), &record("A", &["P-Url"])).await;
    put(&bucket, &key("B"), &record("B", &[])).await;
    let seen = Arc::new(RecordImports::default());
    let scan = || {
        let (backend, seen) = (backend.clone(), seen.clone());
        async move {
            active_consumers(&backend, &seen, "P", REGION)
                .await
                .expect("scan")
                .into_iter()
                .map(|c| (c.stack, c.exports))
                .collect::<Vec<_>>()
        }
    };
    let a = vec![("A".to_owned(), vec!["P-Url".to_owned()])];
    assert_eq!(scan().await, a);
    assert_eq!(
        scan().await,
        a,
        "unchanged records, answered from the run's copy"
    );

    s3_client()
        .await
        .delete_object()
        .bucket(&bucket)
        .key(key("A"))
        .send()
        .await
        .expect("delete");
    put(&bucket, &key("B"), &record("B", &["P-Url", "P-Url"])).await;
    assert_eq!(
        scan().await,
        vec![("B".to_owned(), vec!["P-Url".to_owned()])],
        "a record gone is not a consumer; one rewritten since is read again"
    );
    put(&bucket, &key("B"), &record("B", &[])).await;
    assert_eq!(scan().await, Vec::<(String, Vec<String>)>::new());
}

fn add_fault(fault: Value) {
    let (status, body) = http("POST", "/_cloudcontrol/faults", &[], &fault.to_string());
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_failed_delete_exits_2_with_state_trimmed_and_the_rerun_finishes() {
    let stream = unique_name("stream");
    let app = App::new(
        "partial",
        &json!({
            "Resources": {
                "Base": {"Type": "AWS::SSM::Parameter",
                         "Properties": {"Type": "String", "Value": "base"}},
                "Stream": {"Type": "AWS::Kinesis::Stream", "DependsOn": "Base",
                           "Properties": {"Name": stream, "ShardCount": 1}},
                "Reader": {"Type": "AWS::SSM::Parameter",
                           "Properties": {"Type": "String", "Value": {"Ref": "Stream"}}},
                "Other": {"Type": "AWS::SQS::Queue"}
            },
            "Outputs": {"StreamName": {"Value": {"Ref": "Stream"},
                                       "Export": {"Name": format!("{stream}-name")}}}
        }),
    );
    app.deploy();
    let base = app.physical_id("Base");
    let reader = app.physical_id("Reader");
    let other = app.physical_id("Other");
    add_fault(json!({"fail_delete": {
        "TypeName": "AWS::Kinesis::Stream",
        "ErrorCode": "GeneralServiceException",
        "StatusMessage": "injected by the destroy test",
        "count": 1
    }}));

    let (code, stderr) = app.cmd(&["destroy", "--force"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("injected by the destroy test"), "{stderr}");
    assert!(stderr.contains("destroy incomplete"), "{stderr}");
    assert!(stderr.contains("Base skipped"), "{stderr}");
    let state = app.state().expect("the trimmed record is kept");
    let mut left: Vec<&String> = state["resources"].as_object().unwrap().keys().collect();
    left.sort();
    assert_eq!(left, ["Base", "Stream"], "{state}");
    assert_eq!(state["outputs"], json!({}), "{state}");
    assert!(state.get("imports").is_none() && state.get("outputReads").is_none());
    assert_eq!(exists("AWS::SSM::Parameter", &reader).await, Some(false));
    assert_eq!(exists("AWS::SQS::Queue", &other).await, Some(false));
    assert_eq!(exists("AWS::SSM::Parameter", &base).await, Some(true));

    let (code, stderr) = app.cmd(&["destroy", "--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("deleting 2 resource(s)"), "{stderr}");
    for replayed in ["Reader", "Other"] {
        assert!(!stderr.contains(replayed), "{replayed} replayed:\n{stderr}");
    }
    assert_eq!(exists("AWS::SSM::Parameter", &base).await, Some(false));
    assert!(app.state().is_none());
    let names = export_names(&app.bucket).await;
    assert!(!names.contains(&format!("{stream}-name")), "{names:?}");
}

#[tokio::test]
async fn a_non_empty_bucket_survives_unless_the_template_opted_in_to_emptying() {
    let (plain, auto) = (unique_name("plain"), unique_name("auto"));
    let app = App::new(
        "buckets",
        &json!({"Resources": {
            "Plain": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": plain}},
            "Auto": {"Type": "AWS::S3::Bucket", "Properties": {
                "BucketName": auto,
                "VersioningConfiguration": {"Status": "Enabled"},
                "Tags": [{"Key": "aws-cdk:auto-delete-objects", "Value": "true"}]
            }}
        }}),
    );
    app.deploy();
    // The CDK's bucket-emptying custom resource, as a deploy would record it. Its handler
    // never answers in the emulator: destroy must not wait for it.
    let key = format!("cdkd/{}/{REGION}/state.json", app.stack);
    let mut state = app.state().unwrap();
    state["resources"]["AutoAutoDeleteObjectsCustomResource"] = json!({
        "physicalId": "auto-delete-1",
        "resourceType": "Custom::S3AutoDeleteObjects",
        "properties": {
            "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:never-answers",
            "BucketName": auto
        },
        "attributes": {},
        "dependencies": ["Auto"]
    });
    put(&app.bucket, &key, &state.to_string()).await;
    put(&plain, "keep.txt", "data").await;
    put(&auto, "a.txt", "v1").await;
    put(&auto, "a.txt", "v2").await;
    put(&auto, "b.txt", "gone").await;
    s3_client()
        .await
        .delete_object()
        .bucket(&auto)
        .key("b.txt")
        .send()
        .await
        .expect("a delete marker");

    let started = std::time::Instant::now();
    let (code, stderr) = app.cmd(&["destroy", "--force"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        started.elapsed().as_secs() < 60,
        "the custom resource held the destroy"
    );
    assert!(
        stderr.contains(&format!("bucket {plain} is not empty")),
        "{stderr}"
    );
    assert!(stderr.contains("autoDeleteObjects"), "{stderr}");
    assert_eq!(exists("AWS::S3::Bucket", &auto).await, Some(false));
    assert_eq!(exists("AWS::S3::Bucket", &plain).await, Some(true));
    assert_eq!(keys_under(&plain, "").await, ["keep.txt"]);
    let state = app.state().unwrap();
    let left: Vec<&String> = state["resources"].as_object().unwrap().keys().collect();
    assert_eq!(left, ["Plain"], "{state}");

    s3_client()
        .await
        .delete_object()
        .bucket(&plain)
        .key("keep.txt")
        .send()
        .await
        .unwrap();
    let (code, stderr) = app.cmd(&["destroy", "--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(exists("AWS::S3::Bucket", &plain).await, Some(false));
}

#[tokio::test]
async fn retained_resources_survive_and_leave_no_record() {
    let app = App::new(
        "retain",
        &json!({"Resources": {
            "Kept": {"Type": "AWS::SQS::Queue", "DeletionPolicy": "Retain"},
            "KeptToo": {"Type": "AWS::SSM::Parameter", "DeletionPolicy": "RetainExceptOnCreate",
                        "Properties": {"Type": "String", "Value": {"Ref": "Kept"}}},
            "Gone": {"Type": "AWS::SQS::Queue"}
        }}),
    );
    app.deploy();
    let (kept, kept_too, gone) = (
        app.physical_id("Kept"),
        app.physical_id("KeptToo"),
        app.physical_id("Gone"),
    );
    let (code, stderr) = app.cmd(&["destroy", "--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("2 retained by DeletionPolicy"), "{stderr}");
    assert_eq!(exists("AWS::SQS::Queue", &kept).await, Some(true));
    assert_eq!(exists("AWS::SSM::Parameter", &kept_too).await, Some(true));
    assert_eq!(exists("AWS::SQS::Queue", &gone).await, Some(false));
    assert!(app.state().is_none());
}

#[tokio::test]
async fn state_destroy_needs_no_app_and_removes_the_ledger_and_journal_with_their_history() {
    let app = App::new(
        "nostate",
        &json!({"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}}),
    );
    app.deploy();
    let url = app.physical_id("Q");
    let base = format!("cdkd/{}/{REGION}", app.stack);
    for file in ["create-tokens.json", "rollback-journal.json"] {
        put(&app.bucket, &format!("{base}/{file}"), "{\"v\":1}").await;
        put(&app.bucket, &format!("{base}/{file}"), "{\"v\":2}").await;
    }
    let empty = tempfile::tempdir().unwrap();
    let (code, _, stderr) = run(
        empty.path(),
        &app.bucket,
        &["state", "destroy", &app.stack, "--force"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(exists("AWS::SQS::Queue", &url).await, Some(false));
    let left = keys_under(&app.bucket, &format!("{base}/")).await;
    assert!(
        left.iter().all(|k| support::is_event_store_key(k)),
        "only the event store is left: {left:?}"
    );
    for file in ["create-tokens.json", "rollback-journal.json"] {
        let key = format!("{base}/{file}");
        assert_eq!(bodies_of(&app.bucket, &key).await, 0, "{key} kept a body");
    }
    // The record's own history is kept: it is what the bucket is versioned for.
    assert!(bodies_of(&app.bucket, &format!("{base}/state.json")).await > 0);
}

#[tokio::test]
async fn a_failed_create_only_the_journal_records_is_deleted_before_the_journal() {
    let app = App::new(
        "journal",
        &json!({"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}}),
    );
    app.deploy();
    let sqs = aws_sdk_sqs::Client::new(&sdk_config().await);
    let stray = sqs
        .create_queue()
        .queue_name(unique_name("stray"))
        .send()
        .await
        .expect("queue")
        .queue_url()
        .unwrap()
        .to_owned();
    let journal = json!({
        "journalVersion": 1, "stackName": app.stack, "region": REGION,
        "segments": [{"reason": "no-rollback", "writtenAt": 1, "operations": [],
            "failedOperations": [{"kind": "CREATE", "logicalId": "Stray",
                "resourceType": "AWS::SQS::Queue", "physicalId": stray, "error": "timed out"}]}]
    });
    let key = format!("cdkd/{}/{REGION}/rollback-journal.json", app.stack);
    put(&app.bucket, &key, &journal.to_string()).await;
    let (code, stderr) = app.cmd(&["destroy", "--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("only the rollback journal recorded"),
        "{stderr}"
    );
    assert_eq!(exists("AWS::SQS::Queue", &stray).await, Some(false));
    assert!(keys_under(&app.bucket, &key).await.is_empty());
}

/// Writes a record by hand and runs `state destroy` on it: (code, stderr, record after).
async fn state_destroy_record(record: &Value) -> (i32, String, Option<Vec<u8>>) {
    let bucket = bootstrap("cdkd-refuse");
    let stack = record["stackName"].as_str().unwrap();
    let key = format!("cdkd/{stack}/{REGION}/state.json");
    put(&bucket, &key, &record.to_string()).await;
    let (code, _, stderr) = run(
        Path::new("."),
        &bucket,
        &[
            "state",
            "destroy",
            stack,
            "--stack-region",
            REGION,
            "--force",
        ],
    );
    let after = s3_client()
        .await
        .get_object()
        .bucket(&bucket)
        .key(&key)
        .send()
        .await
        .ok();
    let after = match after {
        Some(o) => Some(o.body.collect().await.unwrap().into_bytes().to_vec()),
        None => None,
    };
    (code, stderr, after)
}

#[tokio::test]
async fn damaged_and_region_disagreeing_records_are_refused_and_kept() {
    let queue = json!({"physicalId": "https://sqs.invalid/1/q", "resourceType": "AWS::SQS::Queue",
                       "properties": {}, "dependencies": []});
    let record = |region: Value, resources: Value, outputs: Value| {
        json!({"version": 11, "stackName": unique_name("Damaged"), "region": region,
               "resources": resources, "outputs": outputs})
    };
    let cases = [
        (
            record(json!("eu-west-1"), json!({"Q": queue}), json!({})),
            "STATE_REGION_MISMATCH",
        ),
        (
            record(json!(REGION), json!("abc"), json!({})),
            "STATE_RESOURCES_MALFORMED",
        ),
        (
            record(json!(REGION), json!({"Q": null}), json!({})),
            "STATE_RESOURCES_MALFORMED",
        ),
        (
            record(json!(REGION), json!({"Q": queue}), json!("abcdef")),
            "STATE_RESOURCES_MALFORMED",
        ),
    ];
    for (rec, code_name) in cases {
        let (code, stderr, after) = state_destroy_record(&rec).await;
        assert_eq!(code, 1, "{rec}: {stderr}");
        assert!(stderr.contains(code_name), "{rec}: {stderr}");
        assert!(stderr.contains("nothing was deleted"), "{stderr}");
        let after: Value = serde_json::from_slice(&after.expect("the record is kept")).unwrap();
        assert_eq!(after, rec, "the record is left as stored");
    }
    // With no resources there is nothing to strand: the disagreeing record is cleaned up.
    let (code, stderr, after) =
        state_destroy_record(&record(json!("eu-west-1"), json!({}), json!({}))).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(after.is_none());
}

/// The RDS instance `id` exists in the emulator's RDS.
async fn db_instance_exists(id: &str) -> bool {
    aws_sdk_rds::Client::new(&sdk_config().await)
        .describe_db_instances()
        .db_instance_identifier(id)
        .send()
        .await
        .is_ok()
}

/// The manual snapshots RDS holds of the instance `id`.
async fn db_snapshots(id: &str) -> Vec<String> {
    aws_sdk_rds::Client::new(&sdk_config().await)
        .describe_db_snapshots()
        .db_instance_identifier(id)
        .snapshot_type("manual")
        .send()
        .await
        .expect("describe snapshots")
        .db_snapshots()
        .iter()
        .filter_map(|s| s.db_snapshot_identifier().map(str::to_owned))
        .collect()
}

/// Deploys `fixtures/apps/protected-db` (terminationProtection, an RDS instance with
/// DeletionProtection and CloudFormation's default Snapshot policy, a queue) into a fresh
/// bucket: (bucket, the instance's identifier, the queue's URL).
async fn deploy_protected_db(prefix: &str) -> (String, String, String) {
    let bucket = bootstrap(prefix);
    let (code, stderr) = app_cmd(&fixture("protected-db"), &bucket, &["deploy"]);
    assert_eq!(code, 0, "deploy failed:\n{stderr}");
    let state = state_json(&bucket, "ProtectedDb").expect("a record");
    let db = state["resources"]["Db"]["physicalId"].as_str().unwrap();
    let queue = state["resources"]["Queue4A7E3555"]["physicalId"]
        .as_str()
        .unwrap();
    assert!(db_instance_exists(db).await, "{db} is in RDS");
    (bucket, db.to_owned(), queue.to_owned())
}

#[tokio::test]
async fn a_protected_stack_is_refused_and_remove_protection_destroys_it_after_a_final_snapshot() {
    let (bucket, db, queue) = deploy_protected_db("cdkd-protect").await;
    let dir = fixture("protected-db");

    // terminationProtection: refused before anything is deleted, naming the stack.
    let (code, stderr) = app_cmd(&dir, &bucket, &["destroy", "--force"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("ProtectedDb: STACK_TERMINATION_PROTECTION")
            && stderr.contains("--remove-protection"),
        "{stderr}"
    );
    assert!(db_instance_exists(&db).await);
    assert_eq!(exists("AWS::SQS::Queue", &queue).await, Some(true));
    let state = state_json(&bucket, "ProtectedDb").expect("the record stays");
    assert_eq!(state["resources"].as_object().unwrap().len(), 2);
    assert!(db_snapshots(&db).await.is_empty());

    // --remove-protection: the stack's and the instance's protection are turned off, the
    // instance's final snapshot is taken (the default Snapshot policy), then everything goes.
    let (code, stderr) = app_cmd(
        &dir,
        &bucket,
        &["destroy", "--force", "--remove-protection"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("DeletionProtection turned off"), "{stderr}");
    assert!(!db_instance_exists(&db).await, "{db} is deleted");
    assert_eq!(exists("AWS::SQS::Queue", &queue).await, Some(false));
    let snapshots = db_snapshots(&db).await;
    assert_eq!(snapshots.len(), 1, "{snapshots:?}");
    assert!(
        snapshots[0].starts_with(&format!("{db}-final-")),
        "{snapshots:?}"
    );
    assert!(
        stderr.contains(&format!("final snapshot {}", snapshots[0])),
        "{stderr}"
    );
    assert!(state_json(&bucket, "ProtectedDb").is_none());
}

#[tokio::test]
async fn state_destroy_with_skip_final_snapshot_deletes_without_one() {
    let (bucket, db, queue) = deploy_protected_db("cdkd-skipsnap").await;
    // No app, so no terminationProtection to check (the record keeps none); the instance's
    // own protection is turned off, and no final snapshot is taken.
    let args = [
        "state",
        "destroy",
        "ProtectedDb",
        "--force",
        "--stack-region",
        REGION,
        "--remove-protection",
        "--skip-final-snapshot",
    ];
    let (code, _, stderr) = run(Path::new("."), &bucket, &args);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("without the final snapshot"), "{stderr}");
    assert!(!db_instance_exists(&db).await, "{db} is deleted");
    assert_eq!(exists("AWS::SQS::Queue", &queue).await, Some(false));
    assert_eq!(db_snapshots(&db).await, Vec::<String>::new());
    assert!(state_json(&bucket, "ProtectedDb").is_none());
}

#[tokio::test]
async fn deletion_protection_refuses_the_delete_until_remove_protection_turns_it_off() {
    let app = App::new(
        "dbprot",
        &json!({"Resources": {
            "Db": {"Type": "AWS::RDS::DBInstance", "DeletionPolicy": "Delete",
                   "Properties": {"Engine": "mysql", "DBInstanceClass": "db.t3.micro",
                                  "MasterUsername": "admin", "DeletionProtection": true}},
            "Q": {"Type": "AWS::SQS::Queue"}
        }}),
    );
    app.deploy();
    let (db, queue) = (app.physical_id("Db"), app.physical_id("Q"));

    // The protected instance's delete is refused (RDS would refuse it): a partial destroy that
    // keeps its record.
    let (code, stderr) = app.cmd(&["destroy", "--force"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("DeletionProtection is on, so AWS refuses to delete Db")
            && stderr.contains("--remove-protection"),
        "{stderr}"
    );
    assert!(db_instance_exists(&db).await);
    assert_eq!(exists("AWS::SQS::Queue", &queue).await, Some(false));
    let state = app.state().expect("the trimmed record");
    let left: Vec<&String> = state["resources"].as_object().unwrap().keys().collect();
    assert_eq!(left, vec!["Db"]);
    // RDS itself refuses it too (as it does when protection was turned on outside cdkd).
    let rds = aws_sdk_rds::Client::new(&sdk_config().await);
    let out = rds
        .delete_db_instance()
        .db_instance_identifier(&db)
        .skip_final_snapshot(true)
        .send()
        .await;
    assert!(out.is_err(), "RDS refuses too: {out:?}");

    // --remove-protection turns DeletionProtection off first; DeletionPolicy: Delete takes no
    // snapshot.
    let (code, stderr) = app.cmd(&["destroy", "--force", "--remove-protection"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!db_instance_exists(&db).await, "{db} is deleted");
    assert_eq!(db_snapshots(&db).await, Vec::<String>::new());
    assert!(app.state().is_none());
}

#[tokio::test]
async fn a_deploy_snapshots_a_removed_snapshot_policy_volume_before_deleting_it() {
    let volume = json!({"Type": "AWS::EC2::Volume", "DeletionPolicy": "Snapshot",
                        "Properties": {"AvailabilityZone": "us-east-1a", "Size": 8}});
    let queue = json!({"Type": "AWS::SQS::Queue"});
    let app = App::new(
        "volsnap",
        &json!({"Resources": {"Vol": volume, "Q": queue}}),
    );
    app.deploy();
    let vol = app.physical_id("Vol");
    let ec2 = aws_sdk_ec2::Client::new(&sdk_config().await);
    let tagged = || async {
        ec2.describe_snapshots()
            .filters(
                aws_sdk_ec2::types::Filter::builder()
                    .name("tag:cdkd:final-snapshot-of")
                    .values(&vol)
                    .build(),
            )
            .send()
            .await
            .expect("describe snapshots")
            .snapshots()
            .iter()
            .map(|s| {
                (
                    s.volume_id().unwrap_or_default().to_owned(),
                    s.state().cloned(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert!(tagged().await.is_empty());

    // The next version drops the volume: its final snapshot is taken, then it is deleted.
    let template = json!({"Resources": {"Q": queue}});
    let file = app.dir.path().join(format!("{}.template.json", app.stack));
    std::fs::write(file, template.to_string()).unwrap();
    app.deploy();
    let snapshots = tagged().await;
    assert_eq!(
        snapshots,
        vec![(
            vol.clone(),
            Some(aws_sdk_ec2::types::SnapshotState::Completed)
        )]
    );
    let left = ec2.describe_volumes().volume_ids(&vol).send().await;
    assert!(
        left.as_ref().map_or(true, |o| o.volumes().is_empty()),
        "{vol} is deleted: {left:?}"
    );
}
