//! Custom resources and wait conditions against the emulator, through the real response path:
//! the provider writes a placeholder in a versioned state bucket, invokes the Lambda (or
//! publishes to the SNS topic) its ServiceToken names, and polls; the handler is real code the
//! emulator runs (a Lambda function, or one subscribed to the topic), which PUTs its
//! cfn-response to the presigned ResponseURL; the test reads the envelope cdkd sent from the
//! emulator's record of the invocation (GET /_lambda/invocations).
//!
//! Run: `eval "$(./scripts/emulator start)" && cargo test --test provider_custom`.

use crate::support;

use std::time::{Duration, Instant};

use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::FunctionCode;
use cdkd::aws::{ClientOptions, Clients};
use cdkd::provider::custom::responses::ResponseBucket;
use cdkd::provider::custom::wait_condition::{WaitConditionHandleProvider, WaitConditionProvider};
use cdkd::provider::custom::{unmasked_data, CustomResourceProvider};
use cdkd::provider::{Provider, ProviderContext, ProviderError, ResourceRequest, UpdateOutcome};
use serde_json::{json, Map, Value};
use support::handler::invocations;

const TRUST: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;

struct Env {
    clients: Clients,
    sdk: aws_config::SdkConfig,
    s3: aws_sdk_s3::Client,
    stack: String,
    bucket: String,
}

impl Env {
    async fn new() -> Self {
        let sdk = support::sdk_config().await;
        let s3 = support::s3_client().await;
        let bucket = support::unique_name("cr-state");
        s3.create_bucket()
            .bucket(&bucket)
            .send()
            .await
            .expect("CreateBucket");
        s3.put_bucket_versioning()
            .bucket(&bucket)
            .versioning_configuration(
                aws_sdk_s3::types::VersioningConfiguration::builder()
                    .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await
            .expect("PutBucketVersioning");
        Env {
            clients: Clients::load(&ClientOptions::default()).await,
            sdk,
            s3,
            stack: support::unique_name("CrStack"),
            bucket,
        }
    }

    fn ctx(&self) -> ProviderContext<'_> {
        ProviderContext {
            clients: &self.clients,
            stack_name: &self.stack,
            region: "us-east-1",
            account_id: "123456789012",
            partition: "aws",
            no_wait: false,
        }
    }

    fn provider(&self, timeout: Duration) -> CustomResourceProvider {
        CustomResourceProvider::new(Some(ResponseBucket::new(self.s3.clone(), &self.bucket)))
            .with_timeout(timeout)
            .with_polling(Duration::from_millis(50), Duration::from_millis(200))
    }

    /// A function whose handler runs and returns without answering (the handler that never
    /// answers); returns its name and ARN.
    async fn function(&self) -> (String, String) {
        self.function_with("def handler(e, c): pass\n").await
    }

    /// A function whose handler is `source` (index.py); returns its name and ARN.
    async fn function_with(&self, source: &str) -> (String, String) {
        let role = aws_sdk_iam::Client::new(&self.sdk)
            .create_role()
            .role_name(support::unique_name("cr-role"))
            .assume_role_policy_document(TRUST)
            .send()
            .await
            .expect("CreateRole")
            .role
            .expect("role")
            .arn;
        let name = support::unique_name("cr-handler");
        let out = aws_sdk_lambda::Client::new(&self.sdk)
            .create_function()
            .function_name(&name)
            .role(role)
            .runtime(aws_sdk_lambda::types::Runtime::Python312)
            .handler("index.handler")
            .code(
                FunctionCode::builder()
                    .zip_file(Blob::new(zip_bytes(source)))
                    .build(),
            )
            .send()
            .await
            .expect("CreateFunction");
        (name, out.function_arn.expect("arn"))
    }

    /// Every version and delete marker the bucket holds under `key`: (bodies, markers).
    async fn versions(&self, key: &str) -> (usize, usize) {
        let out = self
            .s3
            .list_object_versions()
            .bucket(&self.bucket)
            .prefix(key)
            .send()
            .await
            .expect("ListObjectVersions");
        let bodies = out
            .versions()
            .iter()
            .filter(|v| v.key() == Some(key))
            .count();
        let markers = out
            .delete_markers()
            .iter()
            .filter(|v| v.key() == Some(key))
            .count();
        (bodies, markers)
    }

    /// Every body version under the custom-resource-responses folder.
    async fn response_bodies_left(&self) -> usize {
        self.s3
            .list_object_versions()
            .bucket(&self.bucket)
            .prefix("custom-resource-responses/")
            .send()
            .await
            .expect("ListObjectVersions")
            .versions()
            .len()
    }
}

fn zip_bytes(source: &str) -> Vec<u8> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    w.start_file("index.py", zip::write::SimpleFileOptions::default())
        .expect("start");
    w.write_all(source.as_bytes()).expect("write");
    w.finish().expect("finish").into_inner()
}

fn props(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

fn request<'a>(
    logical_id: &'a str,
    resource_type: &'a str,
    properties: &'a Map<String, Value>,
) -> ResourceRequest<'a> {
    ResourceRequest {
        logical_id,
        resource_type,
        properties,
        client_token: None,
    }
}

fn response_key(envelope: &Value) -> String {
    format!(
        "custom-resource-responses/{}.json",
        envelope["RequestId"].as_str().expect("RequestId")
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn lambda_backed_create_update_delete_round_trip() {
    let env = Env::new().await;
    let (name, arn) = env.function_with(DATABASE_HANDLER).await;
    let provider = env.provider(Duration::from_secs(20));
    let ctx = env.ctx();
    let v1 = props(json!({"ServiceToken": arn, "Size": 3, "Enabled": true, "Name": "a"}));
    let req = request("Db", "Custom::Database", &v1);

    // Create: the envelope CloudFormation sends; Data becomes the attributes.
    let made = provider.create(&ctx, &req).await.expect("create");
    let envelope = envelope_of(&name, 0);
    assert_eq!(made.physical_id, "db-1");
    assert_eq!(made.attributes["Endpoint"], "db.local");
    assert_eq!(made.attributes["Port"], 5432);
    assert_eq!(envelope["RequestType"], "Create");
    assert_eq!(envelope["ResourceType"], "Custom::Database");
    assert_eq!(envelope["LogicalResourceId"], "Db");
    assert_eq!(envelope["ServiceToken"], arn.as_str());
    assert!(envelope.get("PhysicalResourceId").is_none());
    assert!(envelope.get("OldResourceProperties").is_none());
    assert_eq!(
        envelope["ResourceProperties"],
        json!({"ServiceToken": arn, "Size": "3", "Enabled": "true", "Name": "a"})
    );
    let stack_id = envelope["StackId"].as_str().expect("StackId").to_owned();
    assert!(
        stack_id.starts_with(&format!(
            "arn:aws:cloudformation:us-east-1:123456789012:stack/{}/",
            env.stack
        )),
        "{stack_id}"
    );
    let key = response_key(&envelope);
    assert!(
        envelope["ResponseURL"]
            .as_str()
            .expect("url")
            .contains(&format!("/{}/{key}?", env.bucket)),
        "the ResponseURL names the placeholder in the state bucket: {}",
        envelope["ResponseURL"]
    );
    assert_eq!(
        env.versions(&key).await.0,
        0,
        "the response object and its noncurrent versions are purged"
    );
    let invoked = invocations(&name);
    assert_eq!(invoked[0]["invocationType"], "RequestResponse");

    // Update in place: OldResourceProperties and the physical id travel with it.
    let v2 = props(json!({"ServiceToken": arn, "Size": 4, "Enabled": true, "Name": "a"}));
    let req2 = request("Db", "Custom::Database", &v2);
    let out = provider
        .update(&ctx, &req2, "db-1", &v1)
        .await
        .expect("update");
    let envelope = envelope_of(&name, 1);
    let UpdateOutcome::Updated(updated) = out else {
        panic!("expected an in-place update")
    };
    assert_eq!(updated.physical_id, "db-1");
    assert_eq!(updated.attributes["Endpoint"], "db2.local");
    assert_eq!(envelope["RequestType"], "Update");
    assert_eq!(envelope["PhysicalResourceId"], "db-1");
    assert_eq!(envelope["ResourceProperties"]["Size"], "4");
    assert_eq!(envelope["OldResourceProperties"]["Size"], "3");
    assert_eq!(
        envelope["StackId"],
        stack_id.as_str(),
        "one StackId per stack"
    );
    assert_eq!(env.versions(&response_key(&envelope)).await.0, 0);

    // Delete.
    provider.delete(&ctx, &req2, "db-1").await.expect("delete");
    let envelope = envelope_of(&name, 2);
    assert_eq!(envelope["RequestType"], "Delete");
    assert_eq!(envelope["PhysicalResourceId"], "db-1");
    assert_eq!(envelope["ResourceProperties"]["Size"], "4");
    assert_eq!(env.response_bodies_left().await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_update_answered_with_a_new_physical_id_deletes_the_old_one() {
    let env = Env::new().await;
    let (name, arn) = env
        .function_with(&answering(
            "    if event[\"RequestType\"] == \"Update\":\n        respond(event, PhysicalResourceId=\"thing-2\", Data={\"V\": \"2\"})\n    else:\n        respond(event, PhysicalResourceId=event[\"PhysicalResourceId\"])",
        ))
        .await;
    let provider = env.provider(Duration::from_secs(20));
    let ctx = env.ctx();
    let old = props(json!({"ServiceToken": arn, "Version": "1"}));
    let new = props(json!({"ServiceToken": arn, "Version": "2"}));
    let req = request("Thing", "AWS::CloudFormation::CustomResource", &new);

    let out = provider
        .update(&ctx, &req, "thing-1", &old)
        .await
        .expect("update");
    let UpdateOutcome::Updated(made) = out else {
        panic!("expected Updated")
    };
    assert_eq!(made.physical_id, "thing-2");
    assert_eq!(envelope_of(&name, 0)["RequestType"], "Update");
    let delete = envelope_of(&name, 1);
    assert_eq!(delete["RequestType"], "Delete");
    assert_eq!(delete["PhysicalResourceId"], "thing-1");
    assert_eq!(
        delete["ResourceProperties"]["Version"], "1",
        "the old properties"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_is_reported_with_the_handlers_reason() {
    let env = Env::new().await;
    let (name, arn) = env
        .function_with(&answering(
            "    respond(event, Status=\"FAILED\", Reason=\"quota exceeded in account\", PhysicalResourceId=\"x\")",
        ))
        .await;
    let provider = env.provider(Duration::from_secs(20));
    let p = props(json!({"ServiceToken": arn}));
    let req = request("Quota", "Custom::Quota", &p);
    let err = provider.create(&env.ctx(), &req).await.expect_err("FAILED");
    let envelope = envelope_of(&name, 0);
    let text = err.to_string();
    assert!(text.starts_with("Quota (Custom::Quota): "), "{text}");
    assert!(
        text.contains("answered FAILED: quota exceeded in account"),
        "{text}"
    );
    assert_eq!(env.versions(&response_key(&envelope)).await.0, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handler_that_never_answers_times_out_naming_the_resource_and_function() {
    let env = Env::new().await;
    let (name, arn) = env.function().await;
    let provider = env.provider(Duration::from_secs(1));
    let p = props(json!({"ServiceToken": arn}));
    let req = request("Silent", "Custom::Silent", &p);
    let started = Instant::now();
    let err = provider
        .create(&env.ctx(), &req)
        .await
        .expect_err("timeout");
    // The handler ran (and returned without answering).
    let envelope = envelope_of(&name, 0);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(matches!(err, ProviderError::Timeout { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with("Silent (Custom::Silent): timed out after 1 s"),
        "{text}"
    );
    assert!(text.contains(&arn), "names the function: {text}");
    assert!(text.contains("CDKD_CUSTOM_RESOURCE_TIMEOUT"), "{text}");
    assert_eq!(
        env.versions(&response_key(&envelope)).await.0,
        0,
        "the placeholder is removed with its versions"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_echo_data_is_masked_in_attributes_and_kept_in_process() {
    let env = Env::new().await;
    let (_, arn) = env
        .function_with(&answering(
            "    respond(event, PhysicalResourceId=\"m-1\", NoEcho=True, Data={\"Token\": \"s3cr3t-value\", \"Count\": 2})",
        ))
        .await;
    let provider = env.provider(Duration::from_secs(20));
    let p = props(json!({"ServiceToken": arn}));
    let req = request("Minter", "Custom::Minter", &p);
    let made = provider.create(&env.ctx(), &req).await.expect("create");
    assert_eq!(made.attributes["Token"], "***");
    assert_eq!(made.attributes["Count"], 2);
    let real = unmasked_data(&env.stack, "Minter").expect("kept in process");
    assert_eq!(real["Token"], "s3cr3t-value");
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_of_a_custom_resource_whose_function_is_gone_succeeds() {
    let env = Env::new().await;
    let provider = env.provider(Duration::from_secs(5));
    let arn = "arn:aws:lambda:us-east-1:123456789012:function:cdkd-never-created";
    let p = props(json!({"ServiceToken": arn}));
    let req = request("Orphan", "Custom::Orphan", &p);
    provider
        .delete(&env.ctx(), &req, "orphan-1")
        .await
        .expect("a Delete nothing can answer is done");
    let err = provider
        .create(&env.ctx(), &req)
        .await
        .expect_err("no handler");
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert_eq!(env.response_bodies_left().await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn sns_backed_round_trip() {
    let env = Env::new().await;
    let sns = aws_sdk_sns::Client::new(&env.sdk);
    let topic = sns
        .create_topic()
        .name(support::unique_name("cr-topic"))
        .send()
        .await
        .expect("CreateTopic")
        .topic_arn
        .expect("arn");
    // The topic's subscriber is a real handler (the emulator delivers SNS to Lambda through
    // cdkd's local runtime): it answers the envelope the notification carries.
    let (function, function_arn) = env.function_with(SNS_HANDLER).await;
    sns.subscribe()
        .topic_arn(&topic)
        .protocol("lambda")
        .endpoint(&function_arn)
        .send()
        .await
        .expect("Subscribe");

    let provider = env.provider(Duration::from_secs(30));
    let p = props(json!({"ServiceToken": topic, "Flavour": "vanilla"}));
    let req = request("ViaSns", "Custom::ViaSns", &p);
    let made = provider.create(&env.ctx(), &req).await.expect("create");
    assert_eq!(made.physical_id, "sns-1");
    assert_eq!(made.attributes["Flavour"], "vanilla");
    let delivered = invocations(&function);
    assert_eq!(delivered.len(), 1, "one notification");
    assert_eq!(delivered[0]["source"], "sns");
    let message = delivered[0]["payload"]["Records"][0]["Sns"]["Message"]
        .as_str()
        .expect("the notification's message");
    let envelope: Value = serde_json::from_str(message).expect("the envelope as JSON");
    assert_eq!(envelope["RequestType"], "Create");
    assert_eq!(envelope["ServiceToken"], topic.as_str());
    assert_eq!(envelope["ResourceProperties"]["Flavour"], "vanilla");
    assert_eq!(env.versions(&response_key(&envelope)).await.0, 0);
}

/// A real SNS-subscribed handler: reads the custom-resource envelope from the notification
/// and answers SUCCESS with physical id sns-1 and the envelope's `Flavour` as Data.
const SNS_HANDLER: &str = r#"import json
import urllib.request


def handler(event, context):
    envelope = json.loads(event["Records"][0]["Sns"]["Message"])
    flavour = envelope["ResourceProperties"].get("Flavour")
    body = json.dumps({
        "Status": "SUCCESS", "PhysicalResourceId": "sns-1", "StackId": envelope["StackId"],
        "RequestId": envelope["RequestId"], "LogicalResourceId": envelope["LogicalResourceId"],
        "Data": {"Flavour": flavour},
    }).encode()
    request = urllib.request.Request(envelope["ResponseURL"], data=body, method="PUT", headers={"Content-Type": ""})
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request).read()
"#;

#[tokio::test(flavor = "multi_thread")]
async fn wait_condition_handle_and_countless_wait_condition() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let empty = Map::new();
    let handle = WaitConditionHandleProvider;
    let req = request("Handle", "AWS::CloudFormation::WaitConditionHandle", &empty);
    let made = handle.create(&ctx, &req).await.expect("create");
    assert!(
        made.physical_id.starts_with(
            "https://cloudformation-waitcondition-us-east-1.s3.us-east-1.amazonaws.com/arn%3Aaws%3Acloudformation%3Aus-east-1%3A123456789012%3Astack%2F"
        ),
        "{}",
        made.physical_id
    );
    assert!(made.physical_id.ends_with("/Handle"));
    assert_eq!(
        handle.ref_value(
            "AWS::CloudFormation::WaitConditionHandle",
            &made.physical_id,
            &made.attributes
        ),
        Value::String(made.physical_id.clone())
    );
    handle
        .delete(&ctx, &req, &made.physical_id)
        .await
        .expect("delete");

    let wait = WaitConditionProvider;
    let p = props(json!({"Handle": made.physical_id, "Timeout": "300"}));
    let req = request("Wait", "AWS::CloudFormation::WaitCondition", &p);
    let done = wait
        .create(&ctx, &req)
        .await
        .expect("a countless wait is a no-op");
    assert_eq!(done.attributes["Data"], "{}");
    wait.delete(&ctx, &req, &done.physical_id)
        .await
        .expect("delete");

    let p = props(json!({"Handle": made.physical_id, "Timeout": "300", "Count": 1}));
    let req = request("Wait", "AWS::CloudFormation::WaitCondition", &p);
    let err = wait.create(&ctx, &req).await.expect_err("signals");
    assert!(err.to_string().contains("waits for 1 signal(s)"), "{err}");
}

/// `cdkd deploy --app DIR` in a thread: (exit code, stdout, stderr).
fn deploy_in_background(
    dir: &std::path::Path,
    bucket: &str,
) -> std::thread::JoinHandle<(i32, String, String)> {
    let dir = dir.to_owned();
    let bucket = bucket.to_owned();
    std::thread::spawn(move || {
        let out = support::cdkd()
            .current_dir(&dir)
            .env("CDKD_CUSTOM_RESOURCE_TIMEOUT", "30")
            .args([
                "deploy",
                "--json",
                "--app",
                dir.to_str().expect("utf-8 path"),
            ])
            .args(["--state-bucket", &bucket])
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        eprintln!("--- cdkd deploy\n{stderr}");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr,
        )
    })
}

fn write_assembly(dir: &std::path::Path, stack: &str, template: &Value) {
    let file = format!("{stack}.template.json");
    std::fs::write(dir.join(&file), template.to_string()).expect("template");
    let manifest = json!({"version": "36.0.0", "artifacts": {stack: {
        "type": "aws:cloudformation:stack",
        "environment": "aws://unknown-account/unknown-region",
        "properties": {"templateFile": file}
    }}});
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).expect("manifest");
}

/// A real handler (the emulator runs it, scripts/lambda-invocations.md): answers every
/// request SUCCESS with physical id thing-1, and `Endpoint` = thing.local for Size 1,
/// thing2.local for Size 2, through the envelope's presigned ResponseURL.
const ANSWERING_HANDLER: &str = r#"import json
import urllib.request


def handler(event, context):
    size = event["ResourceProperties"].get("Size")
    data = {} if event["RequestType"] == "Delete" else {"Endpoint": "thing.local" if size == "1" else "thing%s.local" % size}
    body = json.dumps({
        "Status": "SUCCESS", "PhysicalResourceId": event.get("PhysicalResourceId", "thing-1"),
        "StackId": event["StackId"], "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"], "Data": data,
    }).encode()
    request = urllib.request.Request(event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": ""})
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request).read()
"#;

/// A Python handler whose `handler` is `body` (indented four spaces), with
/// `respond(event, **fields)` PUTting a cfn-response (Status SUCCESS unless given) to the
/// envelope's ResponseURL, as the cfnresponse module does.
fn answering(body: &str) -> String {
    format!(
        r#"import json
import urllib.request


def respond(event, **fields):
    doc = {{"Status": "SUCCESS", "StackId": event["StackId"], "RequestId": event["RequestId"],
           "LogicalResourceId": event["LogicalResourceId"]}}
    doc.update(fields)
    request = urllib.request.Request(event["ResponseURL"], data=json.dumps(doc).encode(), method="PUT", headers={{"Content-Type": ""}})
    urllib.request.build_opener(urllib.request.ProxyHandler({{}})).open(request).read()


def handler(event, context):
{body}
"#
    )
}

/// A real handler for the in-process round trip: physical id db-1; Create answers
/// Endpoint db.local and Port 5432 (a number), Update Endpoint db2.local, Delete no Data.
const DATABASE_HANDLER: &str = r#"import json
import urllib.request


def handler(event, context):
    kind = event["RequestType"]
    data = {"Create": {"Endpoint": "db.local", "Port": 5432}, "Update": {"Endpoint": "db2.local"}}.get(kind, {})
    body = json.dumps({
        "Status": "SUCCESS", "PhysicalResourceId": "db-1", "StackId": event["StackId"],
        "RequestId": event["RequestId"], "LogicalResourceId": event["LogicalResourceId"], "Data": data,
    }).encode()
    request = urllib.request.Request(event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": ""})
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request).read()
"#;

fn custom_stack_with(function: &str, size: Option<u32>, code: &str) -> Value {
    let mut resources = json!({
        "Role": {"Type": "AWS::IAM::Role", "Properties": {
            "AssumeRolePolicyDocument": serde_json::from_str::<Value>(TRUST).expect("trust")}},
        "Handler": {"Type": "AWS::Lambda::Function", "Properties": {
            "FunctionName": function, "Runtime": "python3.12", "Handler": "index.handler",
            "Role": {"Fn::GetAtt": ["Role", "Arn"]},
            "Code": {"ZipFile": code}}},
        "Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"},
        "CDKMetadata": {"Type": "AWS::CDK::Metadata", "Properties": {"Analytics": "v2:deflate64:x"}}
    });
    let mut outputs = json!({"HandleUrl": {"Value": {"Ref": "Handle"}}});
    if let Some(size) = size {
        resources["Thing"] = json!({"Type": "Custom::Thing", "Properties": {
            "ServiceToken": {"Fn::GetAtt": ["Handler", "Arn"]}, "Size": size}});
        outputs["Endpoint"] = json!({"Value": {"Fn::GetAtt": ["Thing", "Endpoint"]}});
        outputs["ThingId"] = json!({"Value": {"Ref": "Thing"}});
    }
    json!({"Resources": resources, "Outputs": outputs})
}

#[tokio::test(flavor = "multi_thread")]
async fn cdkd_deploy_creates_updates_and_deletes_a_custom_resource() {
    let bucket = support::unique_name("cr-deploy");
    let out = support::cdkd()
        .args(["bootstrap", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let stack = format!("Cr{}", support::unique_name("e2e").replace('-', "x"));
    let function = support::unique_name("cr-e2e");

    // Create: the function is made by the deploy, then the handler is invoked and answers.
    write_assembly(
        dir.path(),
        &stack,
        &custom_stack_with(&function, Some(1), ANSWERING_HANDLER),
    );
    let (code, stdout, stderr) = deploy_in_background(dir.path(), &bucket)
        .join()
        .expect("deploy");
    let envelope = envelope_of(&function, 0);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(envelope["RequestType"], "Create");
    assert_eq!(envelope["ResourceType"], "Custom::Thing");
    assert_eq!(envelope["ResourceProperties"]["Size"], "1");
    let printed: Value = serde_json::from_str(&stdout).expect("--json output");
    let outputs = &printed[&stack]["outputs"];
    assert_eq!(outputs["Endpoint"], "thing.local", "{printed}");
    assert_eq!(outputs["ThingId"], "thing-1");
    assert!(
        outputs["HandleUrl"]
            .as_str()
            .is_some_and(|u| u.starts_with("https://cloudformation-waitcondition-")),
        "{outputs}"
    );
    let state = state_json(&bucket, &stack);
    let thing = &state["resources"]["Thing"];
    assert_eq!(thing["physicalId"], "thing-1");
    assert_eq!(thing["provisionedBy"], "sdk");
    assert_eq!(thing["attributes"]["Endpoint"], "thing.local");
    assert!(state["resources"].get("CDKMetadata").is_none(), "skipped");

    // Update: the handler gets Update with the old properties.
    write_assembly(
        dir.path(),
        &stack,
        &custom_stack_with(&function, Some(2), ANSWERING_HANDLER),
    );
    let (code, stdout, stderr) = deploy_in_background(dir.path(), &bucket)
        .join()
        .expect("deploy");
    let envelope = envelope_of(&function, 1);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(envelope["RequestType"], "Update");
    assert_eq!(envelope["OldResourceProperties"]["Size"], "1");
    assert_eq!(envelope["ResourceProperties"]["Size"], "2");
    let printed: Value = serde_json::from_str(&stdout).expect("--json output");
    assert_eq!(printed[&stack]["outputs"]["Endpoint"], "thing2.local");

    // Removed from the template: the handler gets Delete.
    write_assembly(
        dir.path(),
        &stack,
        &custom_stack_with(&function, None, ANSWERING_HANDLER),
    );
    let (code, _, stderr) = deploy_in_background(dir.path(), &bucket)
        .join()
        .expect("deploy");
    let envelope = envelope_of(&function, 2);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(envelope["RequestType"], "Delete");
    assert_eq!(envelope["PhysicalResourceId"], "thing-1");
    assert!(state_json(&bucket, &stack)["resources"]
        .get("Thing")
        .is_none());

    // No response object (or earlier version of one) is left in the state bucket.
    let left = support::s3_client()
        .await
        .list_object_versions()
        .bucket(&bucket)
        .prefix("custom-resource-responses/")
        .send()
        .await
        .expect("ListObjectVersions");
    assert_eq!(left.versions().len(), 0, "{left:?}");
}

/// The envelope of invocation number `index` of `function`, which the handler ran on and
/// answered by itself (the emulator recorded it, with its outcome).
fn envelope_of(function: &str, index: usize) -> Value {
    let all = support::handler::invocations(function);
    let invocation = all
        .get(index)
        .unwrap_or_else(|| panic!("invocation {index} of {function}: {all:?}"));
    assert_eq!(invocation["outcome"]["status"], "success", "{invocation}");
    invocation["payload"].clone()
}

fn state_json(bucket: &str, stack: &str) -> Value {
    let out = support::cdkd()
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

#[tokio::test(flavor = "multi_thread")]
async fn cdkd_destroy_sends_the_custom_resource_its_delete() {
    let bucket = support::unique_name("cr-destroy");
    let out = support::cdkd()
        .args(["bootstrap", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let stack = format!("Crd{}", support::unique_name("e2e").replace('-', "x"));
    let function = support::unique_name("cr-destroy");
    write_assembly(
        dir.path(),
        &stack,
        &custom_stack_with(&function, Some(7), ANSWERING_HANDLER),
    );
    let (code, _, stderr) = deploy_in_background(dir.path(), &bucket)
        .join()
        .expect("deploy");
    assert_eq!(code, 0, "{stderr}");

    let destroy = {
        let dir = dir.path().to_owned();
        let bucket = bucket.clone();
        let stack = stack.clone();
        std::thread::spawn(move || {
            support::cdkd()
                .current_dir(&dir)
                .env("CDKD_CUSTOM_RESOURCE_TIMEOUT", "30")
                .args(["destroy", "--force", "--app", dir.to_str().expect("utf-8")])
                .args(["--state-bucket", &bucket, &stack])
                .output()
                .expect("runs")
        })
    };
    let out = destroy.join().expect("destroy");
    let envelope = envelope_of(&function, 1);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(envelope["RequestType"], "Delete");
    assert_eq!(envelope["PhysicalResourceId"], "thing-1");
    assert_eq!(envelope["ResourceProperties"]["Size"], "7");
}
