//! Custom resources whose handlers are the CDK's own code (fixtures/apps/custom-resources):
//! the emulator runs each Lambda Invoke with cdkd's local Lambda runtime
//! (scripts/lambda-invocations.md), so the S3 auto-delete handler and AwsCustomResource's
//! handler make their own SDK calls against the emulator and PUT their cfn-response to the
//! presigned ResponseURL. Deploy, update (the -v2 assembly) and destroy through the binary.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{self, cdkd, sdk_config, unique_name};

const PARAMETER: &str = "/cdkd/custom-resources/greeting";

fn assembly(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/apps/{name}/cdk.out"))
}

/// `cdkd ARGS --app DIR --state-bucket B`: (exit code, stdout, stderr).
fn run(dir: &Path, bucket: &str, args: &[&str]) -> (i32, String, String) {
    let out = cdkd()
        .current_dir(dir)
        .args(args)
        .args(["--app", dir.to_str().unwrap(), "--state-bucket", bucket])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("--- cdkd {args:?}\n{stderr}");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

fn state_json(bucket: &str, stack: &str) -> Value {
    let out = cdkd()
        .args(["state", "show", stack, "--json", "--state-bucket", bucket])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("state json")
}

/// The physical id of the one resource of `type_` whose logical id starts with `prefix`.
fn physical_id(state: &Value, type_: &str, prefix: &str) -> String {
    state["resources"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(id, r)| id.starts_with(prefix) && r["resourceType"] == type_)
        .and_then(|(_, r)| r["physicalId"].as_str())
        .unwrap_or_else(|| panic!("a {type_} {prefix}* in {state}"))
        .to_owned()
}

/// The outcomes the emulator recorded for `function`'s invocations.
fn outcomes(function: &str) -> Vec<Value> {
    support::handler::invocations(function)
        .into_iter()
        .map(|i| i["outcome"].clone())
        .collect()
}

async fn parameter(ssm: &aws_sdk_ssm::Client, name: &str) -> Option<String> {
    let out = ssm.get_parameter().name(name).send().await.ok()?;
    out.parameter().and_then(|p| p.value()).map(str::to_owned)
}

#[tokio::test]
async fn auto_delete_and_aws_custom_resource_run_the_cdks_handlers_through_deploy_update_destroy() {
    let config = sdk_config().await;
    let ssm = aws_sdk_ssm::Client::new(&config);
    let s3 = support::s3_client().await;
    let _ = ssm.delete_parameter().name(PARAMETER).send().await;
    let bucket = unique_name("cdkd-cr");
    let (v1, v2) = (
        assembly("custom-resources"),
        assembly("custom-resources-v2"),
    );
    let (code, _, stderr) = run(&v1, &bucket, &["bootstrap"]);
    assert_eq!(code, 0, "{stderr}");

    // Create: the AwsCustomResource handler puts the parameter itself.
    let (code, stdout, stderr) = run(&v1, &bucket, &["deploy", "CustomResources", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        parameter(&ssm, PARAMETER).await.as_deref(),
        Some("hello v1")
    );
    let printed: Value = serde_json::from_str(&stdout).expect("json");
    // putParameter's Version, from the handler's flattened response (Data).
    let version = &printed["CustomResources"]["outputs"]["ParameterVersion"];
    assert!(version == "1" || version == 1, "{printed}");
    let state = state_json(&bucket, "CustomResources");
    let sdk_function = physical_id(
        &state,
        "AWS::Lambda::Function",
        "AWS679f53fac002430cb0da5b7982bd2287",
    );
    let delete_function = physical_id(
        &state,
        "AWS::Lambda::Function",
        "CustomS3AutoDeleteObjectsCustomResourceProviderHandler",
    );
    let data_bucket = physical_id(&state, "AWS::S3::Bucket", "Bucket");
    let ran = outcomes(&sdk_function);
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(ran[0]["status"], "success", "{ran:?}");
    assert!(
        ran[0]["logs"].as_str().unwrap().contains("putParameter"),
        "{ran:?}"
    );
    // The auto-delete handler ran on create (it tags the bucket) and answered SUCCESS.
    let ran = outcomes(&delete_function);
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(ran[0]["status"], "success", "{ran:?}");

    // Update: the same handler overwrites the parameter with the new value.
    let (code, _, stderr) = run(&v2, &bucket, &["deploy", "CustomResources"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        parameter(&ssm, PARAMETER).await.as_deref(),
        Some("hello v2")
    );
    assert_eq!(outcomes(&sdk_function).len(), 2);

    // Objects in the bucket: destroy's auto-delete handler empties it, then it goes.
    for key in ["a.txt", "dir/b.txt"] {
        s3.put_object()
            .bucket(&data_bucket)
            .key(key)
            .body(aws_sdk_s3::primitives::ByteStream::from_static(b"x"))
            .send()
            .await
            .expect("PutObject");
    }
    let (code, _, stderr) = run(&v2, &bucket, &["destroy", "CustomResources", "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        parameter(&ssm, PARAMETER).await,
        None,
        "deleteParameter ran on delete"
    );
    let head = s3.head_bucket().bucket(&data_bucket).send().await;
    assert!(head.is_err(), "the bucket is gone: {head:?}");
    let ran = outcomes(&delete_function);
    assert!(ran.iter().all(|o| o["status"] == "success"), "{ran:?}");
    assert!(
        ran.len() >= 2,
        "the Delete reached the auto-delete handler: {ran:?}"
    );
}

/// The provider framework (custom_resources.Provider) with an isComplete handler: the
/// framework's onEvent starts its Step Functions waiter, which the emulator executes
/// (scripts/stepfunctions_waiter.py): the framework's isComplete Lambda is retried until the
/// user's isComplete says so, then the framework PUTs the cfn-response.
#[tokio::test]
async fn a_provider_framework_resource_with_is_complete_deploys_updates_and_destroys() {
    let bucket = unique_name("cdkd-crp");
    let (v1, v2) = (
        assembly("custom-resources"),
        assembly("custom-resources-v2"),
    );
    let (code, _, stderr) = run(&v1, &bucket, &["bootstrap"]);
    assert_eq!(code, 0, "{stderr}");

    let (code, stdout, stderr) = run(&v1, &bucket, &["deploy", "CustomProvider", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let printed: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(
        printed["CustomProvider"]["outputs"]["ThingReady"], "yes-1",
        "{printed}"
    );
    let state = state_json(&bucket, "CustomProvider");
    assert_eq!(
        state["resources"]["Thing"]["physicalId"], "thing-1",
        "the user's onEvent named it: {state}"
    );
    let user_is_complete = physical_id(&state, "AWS::Lambda::Function", "IsComplete");
    let checks = outcomes(&user_is_complete);
    // onEvent made it ready 6 s later: the waiter's Retry asked again at least once.
    assert!(checks.len() >= 2, "{checks:?}");
    assert!(
        checks.iter().all(|o| o["status"] == "success"),
        "{checks:?}"
    );
    assert!(
        checks.last().unwrap()["logs"]
            .as_str()
            .unwrap()
            .contains("isComplete Create true"),
        "{checks:?}"
    );

    // Update: a new physical id from onEvent replaces the resource; the old one gets its Delete.
    let (code, stdout, stderr) = run(&v2, &bucket, &["deploy", "CustomProvider", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let printed: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(
        printed["CustomProvider"]["outputs"]["ThingReady"], "yes-2",
        "{printed}"
    );
    assert_eq!(
        state_json(&bucket, "CustomProvider")["resources"]["Thing"]["physicalId"],
        "thing-2"
    );
    let on_event = physical_id(&state, "AWS::Lambda::Function", "OnEvent");
    let events: Vec<String> = support::handler::invocations(&on_event)
        .iter()
        .map(|i| {
            i["payload"]["RequestType"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(
        events,
        ["Create", "Update", "Delete"],
        "the replaced thing-1 was deleted"
    );

    let (code, _, stderr) = run(&v2, &bucket, &["destroy", "CustomProvider", "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    let events = support::handler::invocations(&on_event);
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(events[3]["payload"]["RequestType"], "Delete");
    assert_eq!(events[3]["payload"]["PhysicalResourceId"], "thing-2");
}
