//! `cdkd import` end to end against the emulator: resources created directly with the SDK
//! (not by cdkd) are adopted by mapping (`--resource` and `--resource-mapping-inline`), their
//! records carry the template's resolved properties, the read-back attributes,
//! `provisionedBy` and an observed baseline; the rollback journal marks what was adopted
//! (`importedResources`); a following `cdkd diff --fail` exits 0, a `cdkd deploy` sends no
//! mutating call, and `cdkd destroy` deletes them. A physical id that does not exist is
//! refused by name and nothing is written.
//! In a region bootstrapped with cdkd-owned asset storage, a Lambda function dropped from
//! state and imported back records the cdkd asset bucket, so `cdkd diff --fail` exits 0.

use crate::support;

use serde_json::{json, Value};
use support::{cdkd, s3_client, sdk_config, unique_name};
use tempfile::TempDir;

const REGION: &str = "us-east-1";

fn write_app(dir: &TempDir, stack: &str, template: &Value) {
    let file = format!("{stack}.template.json");
    std::fs::write(
        dir.path().join(&file),
        serde_json::to_string_pretty(template).unwrap(),
    )
    .expect("template");
    let manifest = json!({"version": "36.0.0", "artifacts": {stack: {
        "type": "aws:cloudformation:stack",
        "environment": "aws://unknown-account/unknown-region",
        "properties": {"templateFile": file}
    }}});
    std::fs::write(dir.path().join("manifest.json"), manifest.to_string()).expect("manifest");
}

fn run(dir: &TempDir, bucket: &str, args: &[&str]) -> (i32, String, String) {
    run_env(dir, bucket, args, &[])
}

fn run_env(
    dir: &TempDir,
    bucket: &str,
    args: &[&str],
    envs: &[(&str, &str)],
) -> (i32, String, String) {
    let out = cdkd()
        .current_dir(dir.path())
        .envs(envs.iter().copied())
        .args(args)
        .args([
            "--app",
            dir.path().to_str().unwrap(),
            "--state-bucket",
            bucket,
        ])
        .output()
        .expect("runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    eprintln!("--- cdkd {args:?}\n{stderr}");
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

fn state(bucket: &str, stack: &str) -> Option<Value> {
    let out = cdkd()
        .args(["state", "show", stack, "--json", "--state-bucket", bucket])
        .output()
        .expect("runs");
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("state json"))
}

#[tokio::test]
async fn resources_made_outside_cdkd_are_imported_and_a_deploy_then_changes_nothing() {
    let config = sdk_config().await;
    let sqs = aws_sdk_sqs::Client::new(&config);
    let ssm = aws_sdk_ssm::Client::new(&config);
    let bucket = unique_name("cdkd-import");
    let out = cdkd()
        .args(["bootstrap", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stack = format!("Import{}", unique_name("s").replace('-', "x"));
    let queue_name = unique_name("imported-q");
    let param_name = format!("/{}", unique_name("imported-p"));

    // Made directly, as an operator (or CloudFormation) would have.
    let url = sqs
        .create_queue()
        .queue_name(&queue_name)
        .attributes(
            aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout,
            "45",
        )
        .send()
        .await
        .expect("queue")
        .queue_url
        .expect("url");
    let arn = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("attributes")
        .attributes
        .and_then(|a| {
            a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn)
                .cloned()
        })
        .expect("arn");
    ssm.put_parameter()
        .name(&param_name)
        .value(&arn)
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .expect("parameter");

    let template = json!({"Resources": {
        "Queue": {"Type": "AWS::SQS::Queue",
            "Properties": {"QueueName": queue_name, "VisibilityTimeout": 45}},
        "Param": {"Type": "AWS::SSM::Parameter",
            "Properties": {"Name": param_name, "Type": "String",
                "Value": {"Fn::GetAtt": ["Queue", "Arn"]}}}
    }});
    let dir = tempfile::tempdir().expect("temp dir");
    write_app(&dir, &stack, &template);

    // A physical id that does not exist is refused by name; nothing is written.
    let missing = format!("{}-missing", param_name);
    let (code, _, stderr) = run(
        &dir,
        &bucket,
        &[
            "import",
            &stack,
            "--resource",
            &format!("Queue={url}"),
            "--resource",
            &format!("Param={missing}"),
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("'Param'")
            && stderr.contains(&missing)
            && stderr.contains("does not exist"),
        "{stderr}"
    );
    assert!(state(&bucket, &stack).is_none(), "nothing was written");

    // An unknown logical id is refused too.
    let (code, _, stderr) = run(&dir, &bucket, &["import", &stack, "--resource", "Nope=x"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("'Nope' is not a resource"), "{stderr}");

    // A journal a failed deploy left, holding a create of Queue that made another queue.
    let journal_key = format!("cdkd/{stack}/{REGION}/rollback-journal.json");
    let s3 = s3_client().await;
    let journal = json!({"journalVersion": 1, "stackName": stack, "region": REGION,
        "segments": [{"reason": "no-rollback", "writtenAt": 1, "failedOperations": [],
            "operations": [{"kind": "CREATE", "logicalId": "Queue",
                "resourceType": "AWS::SQS::Queue", "physicalId": "https://other/queue"}]}]});
    s3.put_object()
        .bucket(&bucket)
        .key(&journal_key)
        .body(journal.to_string().into_bytes().into())
        .send()
        .await
        .expect("journal");

    let inline = json!({"Param": param_name}).to_string();
    let (code, _, stderr) = run(
        &dir,
        &bucket,
        &[
            "import",
            &stack,
            "--resource",
            &format!("Queue={url}"),
            "--resource-mapping-inline",
            &inline,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("2 resources imported"), "{stderr}");
    assert!(
        stderr.contains("https://other/queue"),
        "the other queue is named: {stderr}"
    );
    let body = s3
        .get_object()
        .bucket(&bucket)
        .key(&journal_key)
        .send()
        .await
        .expect("journal kept")
        .body
        .collect()
        .await
        .expect("body")
        .into_bytes();
    let journal: Value = serde_json::from_slice(&body).expect("journal json");
    let segment = &journal["segments"][0];
    assert_eq!(
        segment["importedResources"],
        json!([{"logicalId": "Queue", "physicalId": url, "resourceType": "AWS::SQS::Queue"}])
    );
    assert_eq!(segment["supersededLogicalIds"], json!(["Queue"]));

    let s = state(&bucket, &stack).expect("state written");
    let queue = &s["resources"]["Queue"];
    assert_eq!(queue["physicalId"], url.as_str());
    assert_eq!(queue["resourceType"], "AWS::SQS::Queue");
    assert_eq!(queue["provisionedBy"], "sdk");
    assert_eq!(queue["properties"]["QueueName"], queue_name.as_str());
    assert_eq!(queue["attributes"]["Arn"], arn.as_str());
    assert!(queue["observedProperties"].is_object(), "{queue}");
    let param = &s["resources"]["Param"];
    assert_eq!(param["physicalId"], param_name.as_str());
    assert_eq!(param["properties"]["Value"], arn.as_str());
    assert_eq!(param["dependencies"], json!(["Queue"]));

    // Importing again without --force is refused.
    let (code, _, stderr) = run(
        &dir,
        &bucket,
        &["import", &stack, "--resource", &format!("Queue={url}")],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("already in state"), "{stderr}");

    // The diff sees nothing to do, and a deploy then changes nothing: no mutating call.
    let (code, _, stderr) = run(&dir, &bucket, &["diff", "--fail"]);
    assert_eq!(code, 0, "{stderr}");
    let trace = dir.path().join("trace.jsonl");
    let traced = [("CDKD_TRACE_FILE", trace.to_str().expect("utf-8 path"))];
    let (code, _, stderr) = run_env(&dir, &bucket, &["deploy"], &traced);
    assert_eq!(code, 0, "{stderr}");
    // The journal sends it down the full path (which settles the journal), with nothing to do.
    assert!(stderr.contains("(2 unchanged)"), "{stderr}");
    let writes = mutating_calls(&trace, &bucket);
    assert!(writes.is_empty(), "the deploy sent {writes:?}");
    let journal_left = s3
        .head_object()
        .bucket(&bucket)
        .key(&journal_key)
        .send()
        .await
        .is_ok();
    assert!(!journal_left, "a successful deploy deletes the journal");
    let visibility = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout)
        .send()
        .await
        .expect("attributes")
        .attributes
        .and_then(|a| {
            a.get(&aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout)
                .cloned()
        });
    assert_eq!(visibility.as_deref(), Some("45"));

    // Destroy deletes what was imported.
    let (code, _, stderr) = run(&dir, &bucket, &["destroy", "--all", "--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(state(&bucket, &stack).is_none(), "the record is gone");
    let queue_gone = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .is_err();
    assert!(queue_gone, "the imported queue was deleted");
    let param_gone = ssm.get_parameter().name(&param_name).send().await.is_err();
    assert!(param_gone, "the imported parameter was deleted");
}

/// The mutating AWS calls a run's trace recorded (the state bucket's own bookkeeping aside).
fn mutating_calls(trace: &std::path::Path, bucket: &str) -> Vec<String> {
    std::fs::read_to_string(trace)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "call")
        .filter_map(|e| e["op"].as_str().map(str::to_owned))
        .filter(|op| !op.contains(&format!(" /{bucket}/")))
        .filter(|op| match op.split_once(' ') {
            Some((method, _)) => !matches!(method, "GET" | "HEAD"),
            None => {
                let action = op.rsplit('.').next().unwrap_or(op);
                !["Get", "Describe", "List", "Head", "Lookup", "Query", "Scan"]
                    .iter()
                    .any(|p| action.starts_with(p))
            }
        })
        .collect()
}

/// A journal op of a logical id that is then imported is never run by `cdkd rollback`: the
/// journal's CREATE of the queue would otherwise delete the resource just adopted.
#[tokio::test]
async fn rollback_runs_no_journal_op_of_an_imported_resource() {
    let config = sdk_config().await;
    let sqs = aws_sdk_sqs::Client::new(&config);
    let bucket = unique_name("cdkd-import-rb");
    let out = cdkd()
        .args(["bootstrap", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let stack = format!("ImportRb{}", unique_name("s").replace('-', "x"));
    let queue_name = unique_name("imported-rb");
    let url = sqs
        .create_queue()
        .queue_name(&queue_name)
        .send()
        .await
        .expect("queue")
        .queue_url
        .expect("url");
    let dir = tempfile::tempdir().expect("temp dir");
    write_app(
        &dir,
        &stack,
        &json!({"Resources": {"Queue": {"Type": "AWS::SQS::Queue",
            "Properties": {"QueueName": queue_name}}}}),
    );
    // A failed deploy's journal: it created this very queue, then failed.
    let journal = json!({"journalVersion": 1, "stackName": stack, "region": REGION,
        "segments": [{"reason": "no-rollback", "writtenAt": 1, "failedOperations": [],
            "operations": [{"kind": "CREATE", "logicalId": "Queue",
                "resourceType": "AWS::SQS::Queue", "physicalId": url}]}]});
    s3_client()
        .await
        .put_object()
        .bucket(&bucket)
        .key(format!("cdkd/{stack}/{REGION}/rollback-journal.json"))
        .body(journal.to_string().into_bytes().into())
        .send()
        .await
        .expect("journal");

    let (code, _, stderr) = run(
        &dir,
        &bucket,
        &["import", &stack, "--resource", &format!("Queue={url}")],
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run(&dir, &bucket, &["rollback", &stack]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("replaying a journal segment"), "{stderr}");
    let journal_left = s3_client()
        .await
        .head_object()
        .bucket(&bucket)
        .key(format!("cdkd/{stack}/{REGION}/rollback-journal.json"))
        .send()
        .await
        .is_ok();
    assert!(!journal_left, "the replayed journal is deleted");
    let alive = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .is_ok();
    assert!(alive, "the imported queue survives the rollback");
    let s = state(&bucket, &stack).expect("state kept");
    assert_eq!(s["resources"]["Queue"]["physicalId"], url.as_str());
    let _ = sqs.delete_queue().queue_url(&url).send().await;
}

/// Copies the synthesized fixture app `name` into `to`.
fn copy_fixture(name: &str, to: &std::path::Path) {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/apps")
        .join(name)
        .join("cdk.out");
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for entry in std::fs::read_dir(from).expect("read fixture") {
            let entry = entry.expect("entry");
            let target = to.join(entry.file_name());
            if entry.file_type().expect("type").is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).expect("copy");
            }
        }
    }
    copy(&from, to);
}

#[tokio::test]
async fn an_import_in_cdkd_assets_mode_records_the_asset_bucket_the_deploy_uses() {
    const FUNCTION: &str = "AssetFunctionA633A7D1";
    const LAMBDA_KEY: &str = "fb572e8d8b89ba04eed20c2cd2f29ce81dfb8f032efac2d1545631938d9b018f.zip";
    let asset_bucket = format!("cdkd-assets-123456789012-{REGION}");
    let bucket = unique_name("cdkd-import-assets");
    // The default bootstrap opts the region into cdkd-owned asset storage.
    let out = cdkd()
        .args(["bootstrap", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = tempfile::tempdir().expect("temp dir");
    copy_fixture("lambda", dir.path());
    // An object key of its own: the asset bucket is shared by every test of the emulator.
    let key = format!("{}.zip", unique_name("import-asset"));
    for file in ["LambdaStack.assets.json", "LambdaStack.template.json"] {
        let path = dir.path().join(file);
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.contains(LAMBDA_KEY), "{file} names the asset");
        std::fs::write(&path, text.replace(LAMBDA_KEY, &key)).expect("write");
    }
    let (code, _, stderr) = run(&dir, &bucket, &["deploy"]);
    assert_eq!(code, 0, "{stderr}");
    let record = state(&bucket, "LambdaStack").expect("state");
    let function = &record["resources"][FUNCTION];
    assert_eq!(
        function["properties"]["Code"]["S3Bucket"],
        asset_bucket.as_str()
    );
    let physical = function["physicalId"]
        .as_str()
        .expect("physical id")
        .to_owned();

    // Dropped from state (the function stays), then adopted back by mapping.
    let (code, _, stderr) = run(
        &dir,
        &bucket,
        &["state", "orphan", "LambdaStack", "--resource", FUNCTION],
    );
    assert_eq!(code, 0, "{stderr}");
    let record = state(&bucket, "LambdaStack").expect("state");
    assert!(record["resources"].get(FUNCTION).is_none(), "{record}");
    let (code, _, stderr) = run(
        &dir,
        &bucket,
        &[
            "import",
            "LambdaStack",
            "--resource",
            &format!("{FUNCTION}={physical}"),
        ],
    );
    assert_eq!(code, 0, "{stderr}");

    // Nothing differs: the record names the bucket the deploy published to.
    let (code, stdout, stderr) = run(&dir, &bucket, &["diff", "--fail"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("There were no differences"), "{stdout}");
    let record = state(&bucket, "LambdaStack").expect("state");
    let code_props = &record["resources"][FUNCTION]["properties"]["Code"];
    assert_eq!(code_props["S3Bucket"], asset_bucket.as_str(), "{record}");
    assert_eq!(code_props["S3Key"], key.as_str());
}

/// (Orphan, the way out before an import back.) An orphan that rewrites a stack output an
/// export names brings the exports index along, as a deploy's save does.
#[tokio::test]
async fn an_orphan_that_rewrites_an_exported_output_updates_the_exports_index() {
    let bucket = unique_name("cdkd-orphan-export");
    let out = cdkd()
        .args(["bootstrap", "--no-assets", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stack = format!("Export{}", unique_name("s").replace('-', "x"));
    let export = format!("{stack}-QueueUrl");
    let url = format!("https://sqs.{REGION}.amazonaws.com/123456789012/{stack}-q");
    // A record whose exported output still holds a reference to the queue.
    let record = json!({"version": 11, "stackName": stack, "region": REGION,
        "resources": {"Queue": {"physicalId": url, "resourceType": "AWS::SQS::Queue",
            "properties": {}, "attributes": {}}},
        "outputs": {export.as_str(): {"Ref": "Queue"}},
        "exportNames": [export]});
    let s3 = s3_client().await;
    s3.put_object()
        .bucket(&bucket)
        .key(format!("cdkd/{stack}/{REGION}/state.json"))
        .body(record.to_string().into_bytes().into())
        .send()
        .await
        .expect("put state");
    // The index as the deploy that wrote that record left it.
    let index_key = format!("cdkd/_index/{REGION}/exports.json");
    let stale = json!({"indexVersion": 1, "region": REGION, "exports": {export.as_str(): {
        "value": {"Ref": "Queue"}, "producerStack": stack, "producerRegion": REGION}},
        "lastModified": 1});
    s3.put_object()
        .bucket(&bucket)
        .key(&index_key)
        .body(stale.to_string().into_bytes().into())
        .send()
        .await
        .expect("put index");

    let dir = tempfile::tempdir().expect("temp dir");
    let (code, _, stderr) = run(
        &dir,
        &bucket,
        &["state", "orphan", &stack, "--resource", "Queue"],
    );
    assert_eq!(code, 0, "{stderr}");
    let index = s3
        .get_object()
        .bucket(&bucket)
        .key(&index_key)
        .send()
        .await
        .expect("the exports index is written");
    let index: Value =
        serde_json::from_slice(&index.body.collect().await.expect("body").to_vec()).expect("json");
    let text = index.to_string();
    assert!(text.contains(&export) && text.contains(&url), "{index}");
    assert!(!text.contains("\"Ref\""), "{index}");
    let after = state(&bucket, &stack).expect("state");
    assert_eq!(after["outputs"][&export], url.as_str(), "{after}");
}
