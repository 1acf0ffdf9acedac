//! The Lambda SDK providers against the emulator (moto: control plane only, no code runs).
//!
//! Run: `eval "$(./scripts/emulator start)" && cargo test --test provider_lambda`.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::FunctionCode;
use cdkd::aws::{ClientOptions, Clients};
use cdkd::provider::{Provider, ProviderContext, ResourceRequest, UpdateOutcome};
use serde_json::{json, Map, Value};

const FUNCTION: &str = "AWS::Lambda::Function";
const PERMISSION: &str = "AWS::Lambda::Permission";
const URL: &str = "AWS::Lambda::Url";
const VERSION: &str = "AWS::Lambda::Version";
const ALIAS: &str = "AWS::Lambda::Alias";
const MAPPING: &str = "AWS::Lambda::EventSourceMapping";

const TRUST: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;

struct Env {
    clients: Clients,
    stack: String,
    sdk: aws_config::SdkConfig,
}

impl Env {
    async fn new() -> Self {
        let sdk = support::sdk_config().await;
        Env {
            clients: Clients::load(&ClientOptions::default()).await,
            stack: support::unique_name("LambdaStack"),
            sdk,
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

    fn lambda(&self) -> aws_sdk_lambda::Client {
        aws_sdk_lambda::Client::new(&self.sdk)
    }

    async fn role_named(&self, name: &str) -> String {
        aws_sdk_iam::Client::new(&self.sdk)
            .create_role()
            .role_name(name)
            .assume_role_policy_document(TRUST)
            .send()
            .await
            .expect("CreateRole")
            .role
            .expect("role")
            .arn
    }

    async fn role(&self) -> String {
        self.role_named(&support::unique_name("lambda-role")).await
    }

    /// A function made straight through the SDK, for the providers that need one.
    async fn function(&self, role: &str) -> (String, String) {
        let name = support::unique_name("fn");
        let out = self
            .lambda()
            .create_function()
            .function_name(&name)
            .role(role)
            .runtime(aws_sdk_lambda::types::Runtime::Nodejs20x)
            .handler("index.handler")
            .code(
                FunctionCode::builder()
                    .zip_file(Blob::new(zip_bytes("exports.handler = async () => 1;")))
                    .build(),
            )
            .send()
            .await
            .expect("CreateFunction");
        (name, out.function_arn.expect("arn"))
    }
}

/// A small valid zip for the SDK-made functions (the providers zip inline code themselves).
fn zip_bytes(source: &str) -> Vec<u8> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    w.start_file("index.js", zip::write::SimpleFileOptions::default())
        .expect("start");
    w.write_all(source.as_bytes()).expect("write");
    w.finish().expect("finish").into_inner()
}

fn provider(resource_type: &str) -> Arc<dyn Provider> {
    cdkd::provider::sdk::all()
        .into_iter()
        .find(|p| p.resource_types().contains(&resource_type))
        .unwrap_or_else(|| panic!("no SDK provider for {resource_type}"))
}

fn props(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

fn req<'a>(logical_id: &'a str, t: &'a str, p: &'a Map<String, Value>) -> ResourceRequest<'a> {
    ResourceRequest {
        logical_id,
        resource_type: t,
        properties: p,
        client_token: None,
    }
}

fn updated(outcome: UpdateOutcome) -> cdkd::provider::Provisioned {
    match outcome {
        UpdateOutcome::Updated(p) => p,
        UpdateOutcome::NeedsReplacement { reason } => panic!("unexpected replacement: {reason}"),
    }
}

fn assert_replaces(outcome: UpdateOutcome, property: &str) {
    match outcome {
        UpdateOutcome::NeedsReplacement { reason } => {
            assert!(reason.contains(property), "{reason}")
        }
        UpdateOutcome::Updated(_) => panic!("{property} should force replacement"),
    }
}

#[tokio::test]
async fn function_create_read_update_replace_delete() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(FUNCTION);
    let lambda = env.lambda();
    let role = env.role().await;

    let v1 = props(json!({
        "Role": role,
        "Runtime": "nodejs20.x",
        "Handler": "index.handler",
        "Code": {"ZipFile": "exports.handler = async () => 'one';"},
        "Timeout": 10,
        "Environment": {"Variables": {"A": "1", "B": 2}},
        "Tags": [{"Key": "team", "Value": "core"}, {"Key": "old", "Value": "x"}]
    }));
    let r1 = req("Handler", FUNCTION, &v1);
    let made = p.create(&ctx, &r1).await.expect("create");
    let name = made.physical_id.clone();
    assert!(
        name.starts_with(&format!("{}-Handler-", env.stack)),
        "{name}"
    );
    assert!(name.len() <= 64, "{name}");

    // Ref and every GetAtt against the service's own view.
    let got = lambda
        .get_function()
        .function_name(&name)
        .send()
        .await
        .expect("GetFunction");
    let config = got.configuration().expect("configuration");
    assert_eq!(p.ref_value(FUNCTION, &name, &made.attributes), json!(name));
    assert_eq!(
        made.attributes["Arn"],
        json!(config.function_arn().expect("arn"))
    );
    let snap = config.snap_start().expect("snap start");
    let apply_on = snap.apply_on().expect("apply on").as_str();
    let status = snap.optimization_status().expect("status").as_str();
    assert_eq!(
        made.attributes["SnapStartResponse.ApplyOn"],
        json!(apply_on)
    );
    assert_eq!(
        made.attributes["SnapStartResponse.OptimizationStatus"],
        json!(status)
    );
    assert_eq!(
        made.attributes["SnapStartResponse"]["ApplyOn"],
        json!(apply_on)
    );
    assert_eq!(config.timeout(), Some(10));
    let sha1 = config.code_sha256().expect("sha").to_owned();
    assert!(!sha1.is_empty() && config.code_size() > 0);
    let vars = config
        .environment()
        .and_then(|e| e.variables())
        .expect("variables");
    assert_eq!(vars.get("B").map(String::as_str), Some("2"));
    assert_eq!(
        got.tags().and_then(|t| t.get("team")).map(String::as_str),
        Some("core")
    );

    let read = p
        .read(&ctx, &r1, &name)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["FunctionName"], json!(name));
    assert_eq!(read["Timeout"], json!(10));
    assert_eq!(read["Runtime"], json!("nodejs20.x"));
    assert_eq!(
        read["Environment"],
        json!({"Variables": {"A": "1", "B": "2"}})
    );
    assert_eq!(
        read["Tags"],
        json!([{"Key": "old", "Value": "x"}, {"Key": "team", "Value": "core"}])
    );
    let imported = p.import(&ctx, &r1, &name).await.expect("import");
    assert_eq!(imported.attributes, made.attributes);

    // In place: code, configuration, concurrency and tags.
    let v2 = props(json!({
        "Role": role,
        "Runtime": "nodejs20.x",
        "Handler": "index.handler",
        "Code": {"ZipFile": "exports.handler = async () => 'two';"},
        "Timeout": 30,
        "MemorySize": 256,
        "Description": "second",
        "Environment": {"Variables": {"A": "1"}},
        "ReservedConcurrentExecutions": 5,
        "Tags": [{"Key": "team", "Value": "platform"}]
    }));
    let r2 = req("Handler", FUNCTION, &v2);
    let after = updated(p.update(&ctx, &r2, &name, &v1).await.expect("update"));
    assert_eq!(after.physical_id, name);
    assert_eq!(after.attributes["Arn"], made.attributes["Arn"]);
    let got = lambda
        .get_function()
        .function_name(&name)
        .send()
        .await
        .expect("GetFunction");
    let config = got.configuration().expect("configuration");
    assert_ne!(
        config.code_sha256(),
        Some(sha1.as_str()),
        "code was replaced"
    );
    assert_eq!(config.timeout(), Some(30));
    assert_eq!(config.memory_size(), Some(256));
    assert_eq!(config.description(), Some("second"));
    let vars = config
        .environment()
        .and_then(|e| e.variables())
        .expect("variables");
    assert!(
        vars.get("B").is_none(),
        "removed variable is gone: {vars:?}"
    );
    assert_eq!(
        got.concurrency()
            .and_then(|c| c.reserved_concurrent_executions()),
        Some(5)
    );
    let tags = got.tags().cloned().unwrap_or_default();
    assert_eq!(tags.get("team").map(String::as_str), Some("platform"));
    assert!(!tags.contains_key("old"), "{tags:?}");

    // Removed properties go back to the defaults.
    let v3 = props(json!({
        "Role": role,
        "Runtime": "nodejs20.x",
        "Handler": "index.handler",
        "Code": {"ZipFile": "exports.handler = async () => 'two';"},
        "Tags": [{"Key": "team", "Value": "platform"}]
    }));
    let r3 = req("Handler", FUNCTION, &v3);
    updated(p.update(&ctx, &r3, &name, &v2).await.expect("update back"));
    let got = lambda
        .get_function()
        .function_name(&name)
        .send()
        .await
        .expect("GetFunction");
    let config = got.configuration().expect("configuration");
    assert_eq!(config.timeout(), Some(3));
    assert_eq!(config.memory_size(), Some(128));
    assert_eq!(config.description(), Some(""));
    assert!(got
        .concurrency()
        .and_then(|c| c.reserved_concurrent_executions())
        .is_none());

    // Create-only properties replace.
    let mut renamed = v3.clone();
    renamed.insert(
        "FunctionName".into(),
        json!(support::unique_name("renamed")),
    );
    let rr = req("Handler", FUNCTION, &renamed);
    assert_replaces(
        p.update(&ctx, &rr, &name, &v3).await.expect("update"),
        "FunctionName",
    );
    let mut image = v3.clone();
    image.insert("PackageType".into(), json!("Image"));
    let ri = req("Handler", FUNCTION, &image);
    assert_replaces(
        p.update(&ctx, &ri, &name, &v3).await.expect("update"),
        "PackageType",
    );

    p.delete(&ctx, &r3, &name).await.expect("delete");
    let gone = lambda.get_function().function_name(&name).send().await;
    assert!(gone.is_err(), "function still exists");
    assert!(p.read(&ctx, &r3, &name).await.expect("read").is_none());
    p.delete(&ctx, &r3, &name).await.expect("delete again");
}

#[tokio::test]
async fn function_from_s3_and_python_inline_source() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(FUNCTION);
    let role = env.role().await;

    let s3 = support::s3_client().await;
    let bucket = support::unique_name("code");
    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("CreateBucket");
    s3.put_object()
        .bucket(&bucket)
        .key("fn.zip")
        .body(zip_bytes("exports.handler = async () => 's3';").into())
        .send()
        .await
        .expect("PutObject");
    let name = support::unique_name("s3fn");
    let v = props(json!({
        "FunctionName": name,
        "Role": role,
        "Runtime": "nodejs20.x",
        "Handler": "index.handler",
        "Code": {"S3Bucket": bucket, "S3Key": "fn.zip"},
        "Architectures": ["arm64"]
    }));
    let r = req("FromS3", FUNCTION, &v);
    let made = p.create(&ctx, &r).await.expect("create from S3");
    assert_eq!(made.physical_id, name, "a given FunctionName is used as is");
    let config = env
        .lambda()
        .get_function_configuration()
        .function_name(&name)
        .send()
        .await
        .expect("GetFunctionConfiguration");
    assert!(config.code_size > 0);
    p.delete(&ctx, &r, &name).await.expect("delete");

    let py = props(json!({
        "Role": role,
        "Runtime": "python3.12",
        "Handler": "index.handler",
        "Code": {"ZipFile": "def handler(event, context):\n    return 1\n"}
    }));
    let r = req("Py", FUNCTION, &py);
    let made = p.create(&ctx, &r).await.expect("create python");
    p.delete(&ctx, &r, &made.physical_id).await.expect("delete");

    let java = props(json!({
        "Role": role,
        "Runtime": "java21",
        "Handler": "a.B",
        "Code": {"ZipFile": "class B {}"}
    }));
    let err = p
        .create(&ctx, &req("Java", FUNCTION, &java))
        .await
        .expect_err("inline source needs Node.js or Python")
        .to_string();
    assert!(err.starts_with("Java (AWS::Lambda::Function): "), "{err}");
}

#[tokio::test]
async fn function_create_waits_for_a_new_role_to_propagate() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(FUNCTION);
    let role_name = support::unique_name("late-role");
    let role_arn = format!("arn:aws:iam::123456789012:role/{role_name}");
    let v = props(json!({
        "Role": role_arn,
        "Runtime": "nodejs20.x",
        "Handler": "index.handler",
        "Code": {"ZipFile": "exports.handler = async () => 1;"}
    }));
    let r = req("Late", FUNCTION, &v);
    let started = Instant::now();
    let (made, _) = tokio::join!(p.create(&ctx, &r), async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        env.role_named(&role_name).await
    });
    let made = made.expect("create retried until the role existed");
    assert!(started.elapsed() >= Duration::from_millis(1500));
    p.delete(&ctx, &r, &made.physical_id).await.expect("delete");
}

#[tokio::test]
async fn permission_lifecycle() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(PERMISSION);
    let lambda = env.lambda();
    let role = env.role().await;
    let (function, function_arn) = env.function(&role).await;

    let v = props(json!({
        "FunctionName": function_arn,
        "Action": "lambda:InvokeFunction",
        "Principal": "s3.amazonaws.com",
        "SourceArn": "arn:aws:s3:::some-bucket",
        "SourceAccount": "123456789012"
    }));
    let r = req("Invoke", PERMISSION, &v);
    let made = p.create(&ctx, &r).await.expect("create");
    let sid = made.physical_id.clone();
    assert!(sid.starts_with(&format!("{}-Invoke-", env.stack)), "{sid}");
    assert_eq!(p.ref_value(PERMISSION, &sid, &made.attributes), json!(sid));
    assert_eq!(made.attributes["Id"], json!(sid));

    let policy = lambda
        .get_policy()
        .function_name(&function)
        .send()
        .await
        .expect("GetPolicy");
    let doc: Value = serde_json::from_str(policy.policy().expect("policy")).expect("json");
    let statement = doc["Statement"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["Sid"] == json!(sid)))
        .expect("statement added");
    assert_eq!(statement["Action"], json!("lambda:InvokeFunction"));

    let read = p.read(&ctx, &r, &sid).await.expect("read").expect("exists");
    assert_eq!(read["Principal"], json!("s3.amazonaws.com"));
    assert_eq!(read["SourceArn"], json!("arn:aws:s3:::some-bucket"));
    assert_eq!(read["SourceAccount"], json!("123456789012"));
    assert_eq!(
        p.import(&ctx, &r, &sid).await.expect("import").attributes,
        made.attributes
    );

    // Nothing changed: kept. Any change: replaced (every property is create-only).
    let same = updated(p.update(&ctx, &r, &sid, &v).await.expect("no-op update"));
    assert_eq!(same.physical_id, sid);
    let mut other = v.clone();
    other.insert("Principal".into(), json!("sns.amazonaws.com"));
    let ro = req("Invoke", PERMISSION, &other);
    assert_replaces(
        p.update(&ctx, &ro, &sid, &v).await.expect("update"),
        "Principal",
    );

    p.delete(&ctx, &r, &sid).await.expect("delete");
    assert!(p.read(&ctx, &r, &sid).await.expect("read").is_none());
    p.delete(&ctx, &r, &sid).await.expect("delete again");
    // Also once the function itself is gone.
    lambda
        .delete_function()
        .function_name(&function)
        .send()
        .await
        .expect("DeleteFunction");
    p.delete(&ctx, &r, &sid)
        .await
        .expect("delete after the function");
}

#[tokio::test]
async fn url_lifecycle() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(URL);
    let lambda = env.lambda();
    let role = env.role().await;
    let (function, function_arn) = env.function(&role).await;

    let v1 = props(json!({
        "TargetFunctionArn": function_arn,
        "AuthType": "NONE",
        "Cors": {"AllowOrigins": ["https://example.com"], "MaxAge": 60}
    }));
    let r1 = req("Url", URL, &v1);
    let made = p.create(&ctx, &r1).await.expect("create");
    let got = lambda
        .get_function_url_config()
        .function_name(&function)
        .send()
        .await
        .expect("GetFunctionUrlConfig");
    assert_eq!(made.physical_id, got.function_arn());
    assert_eq!(
        p.ref_value(URL, &made.physical_id, &made.attributes),
        json!(got.function_arn())
    );
    assert_eq!(made.attributes["FunctionArn"], json!(got.function_arn()));
    assert_eq!(made.attributes["FunctionUrl"], json!(got.function_url()));
    let read = p
        .read(&ctx, &r1, &made.physical_id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["AuthType"], json!("NONE"));
    assert_eq!(read["Cors"]["AllowOrigins"], json!(["https://example.com"]));

    let v2 = props(json!({
        "TargetFunctionArn": function_arn,
        "AuthType": "AWS_IAM",
        "Cors": {"AllowOrigins": ["https://other.example.com"]}
    }));
    let r2 = req("Url", URL, &v2);
    let after = updated(
        p.update(&ctx, &r2, &made.physical_id, &v1)
            .await
            .expect("update"),
    );
    assert_eq!(
        after.attributes["FunctionUrl"],
        made.attributes["FunctionUrl"]
    );
    let got = lambda
        .get_function_url_config()
        .function_name(&function)
        .send()
        .await
        .expect("GetFunctionUrlConfig");
    assert_eq!(got.auth_type().as_str(), "AWS_IAM");
    assert_eq!(
        got.cors().map(|c| c.allow_origins().to_vec()),
        Some(vec!["https://other.example.com".to_owned()])
    );

    let mut qualified = v2.clone();
    qualified.insert("Qualifier".into(), json!("live"));
    let rq = req("Url", URL, &qualified);
    assert_replaces(
        p.update(&ctx, &rq, &made.physical_id, &v2)
            .await
            .expect("update"),
        "Qualifier",
    );

    p.delete(&ctx, &r2, &made.physical_id)
        .await
        .expect("delete");
    assert!(p
        .read(&ctx, &r2, &made.physical_id)
        .await
        .expect("read")
        .is_none());
    p.delete(&ctx, &r2, &made.physical_id)
        .await
        .expect("delete again");
}

#[tokio::test]
async fn version_lifecycle() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(VERSION);
    let lambda = env.lambda();
    let role = env.role().await;
    let (function, _) = env.function(&role).await;

    let v = props(json!({"FunctionName": function, "Description": "first release"}));
    let r = req("V1", VERSION, &v);
    let made = p.create(&ctx, &r).await.expect("publish");
    let got = lambda
        .get_function_configuration()
        .function_name(&function)
        .qualifier("1")
        .send()
        .await
        .expect("GetFunctionConfiguration");
    assert_eq!(made.physical_id, got.function_arn().expect("arn"));
    assert!(
        made.physical_id.ends_with(&format!(":{function}:1")),
        "{}",
        made.physical_id
    );
    assert_eq!(
        p.ref_value(VERSION, &made.physical_id, &made.attributes),
        json!(made.physical_id)
    );
    assert_eq!(
        made.attributes["Version"],
        json!(got.version().expect("version"))
    );
    assert_eq!(made.attributes["FunctionArn"], json!(made.physical_id));
    let read = p
        .read(&ctx, &r, &made.physical_id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["Version"], json!("1"));
    assert_eq!(read["Description"], json!("first release"));

    let same = updated(
        p.update(&ctx, &r, &made.physical_id, &v)
            .await
            .expect("no-op"),
    );
    assert_eq!(same.attributes, made.attributes);
    let other = props(json!({"FunctionName": function, "Description": "another"}));
    let ro = req("V1", VERSION, &other);
    assert_replaces(
        p.update(&ctx, &ro, &made.physical_id, &v)
            .await
            .expect("update"),
        "Description",
    );

    p.delete(&ctx, &r, &made.physical_id).await.expect("delete");
    let versions = lambda
        .list_versions_by_function()
        .function_name(&function)
        .send()
        .await
        .expect("ListVersionsByFunction");
    let listed: Vec<&str> = versions
        .versions()
        .iter()
        .filter_map(|v| v.version())
        .collect();
    assert_eq!(
        listed,
        ["$LATEST"],
        "only the version went, not the function"
    );
    p.delete(&ctx, &r, &made.physical_id)
        .await
        .expect("delete again");
}

#[tokio::test]
async fn alias_lifecycle() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(ALIAS);
    let lambda = env.lambda();
    let role = env.role().await;
    let (function, _) = env.function(&role).await;
    let mut versions = Vec::new();
    for description in ["one", "two"] {
        lambda
            .update_function_configuration()
            .function_name(&function)
            .description(description)
            .send()
            .await
            .expect("UpdateFunctionConfiguration");
        let out = lambda
            .publish_version()
            .function_name(&function)
            .send()
            .await
            .expect("PublishVersion");
        versions.push(out.version.expect("version"));
    }

    let v1 =
        props(json!({"FunctionName": function, "Name": "live", "FunctionVersion": versions[0]}));
    let r1 = req("Live", ALIAS, &v1);
    let made = p.create(&ctx, &r1).await.expect("create");
    let got = lambda
        .get_alias()
        .function_name(&function)
        .name("live")
        .send()
        .await
        .expect("GetAlias");
    assert_eq!(made.physical_id, got.alias_arn().expect("arn"));
    assert_eq!(
        p.ref_value(ALIAS, &made.physical_id, &made.attributes),
        json!(made.physical_id)
    );
    assert_eq!(made.attributes["AliasArn"], json!(made.physical_id));

    let v2 = props(json!({
        "FunctionName": function, "Name": "live", "FunctionVersion": versions[1],
        "Description": "canary",
        "RoutingConfig": {"AdditionalVersionWeights": [{"FunctionVersion": versions[0], "FunctionWeight": 0.25}]}
    }));
    let r2 = req("Live", ALIAS, &v2);
    updated(
        p.update(&ctx, &r2, &made.physical_id, &v1)
            .await
            .expect("update"),
    );
    let got = lambda
        .get_alias()
        .function_name(&function)
        .name("live")
        .send()
        .await
        .expect("GetAlias");
    assert_eq!(got.function_version(), Some(versions[1].as_str()));
    assert_eq!(got.description(), Some("canary"));
    let weights = got
        .routing_config()
        .and_then(|r| r.additional_version_weights())
        .expect("weights");
    assert_eq!(weights.get(&versions[0]), Some(&0.25));
    let read = p
        .read(&ctx, &r2, &made.physical_id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["FunctionVersion"], json!(versions[1]));
    assert_eq!(read["Description"], json!("canary"));

    let mut renamed = v2.clone();
    renamed.insert("Name".into(), json!("blue"));
    let rr = req("Live", ALIAS, &renamed);
    assert_replaces(
        p.update(&ctx, &rr, &made.physical_id, &v2)
            .await
            .expect("update"),
        "Name",
    );

    p.delete(&ctx, &r2, &made.physical_id)
        .await
        .expect("delete");
    assert!(lambda
        .get_alias()
        .function_name(&function)
        .name("live")
        .send()
        .await
        .is_err());
    assert!(p
        .read(&ctx, &r2, &made.physical_id)
        .await
        .expect("read")
        .is_none());
    p.delete(&ctx, &r2, &made.physical_id)
        .await
        .expect("delete again");
}

#[tokio::test]
async fn event_source_mapping_lifecycle() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(MAPPING);
    let lambda = env.lambda();
    let role = env.role().await;
    let (function, _) = env.function(&role).await;
    let sqs = aws_sdk_sqs::Client::new(&env.sdk);
    let mut queue_arns = Vec::new();
    for _ in 0..2 {
        let url = sqs
            .create_queue()
            .queue_name(support::unique_name("esm"))
            .send()
            .await
            .expect("CreateQueue")
            .queue_url
            .expect("url");
        let attrs = sqs
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
            .send()
            .await
            .expect("GetQueueAttributes");
        let arn = attrs
            .attributes()
            .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn))
            .expect("arn")
            .clone();
        queue_arns.push(arn);
    }

    let v1 = props(json!({
        "FunctionName": function,
        "EventSourceArn": queue_arns[0],
        "BatchSize": 5,
        "Tags": [{"Key": "k", "Value": "v"}]
    }));
    let r1 = req("Queue", MAPPING, &v1);
    let made = p.create(&ctx, &r1).await.expect("create");
    let got = lambda
        .get_event_source_mapping()
        .uuid(&made.physical_id)
        .send()
        .await
        .expect("GetEventSourceMapping");
    assert_eq!(got.uuid(), Some(made.physical_id.as_str()));
    assert_eq!(
        p.ref_value(MAPPING, &made.physical_id, &made.attributes),
        json!(made.physical_id)
    );
    assert_eq!(made.attributes["Id"], json!(made.physical_id));
    assert_eq!(
        made.attributes["EventSourceMappingArn"],
        json!(got.event_source_mapping_arn().expect("arn"))
    );
    assert_eq!(got.batch_size(), Some(5));
    let read = p
        .read(&ctx, &r1, &made.physical_id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["BatchSize"], json!(5));
    assert_eq!(read["EventSourceArn"], json!(queue_arns[0]));
    assert_eq!(read["Enabled"], json!(true));
    assert_eq!(read["Tags"], json!([{"Key": "k", "Value": "v"}]));

    let v2 = props(json!({
        "FunctionName": function,
        "EventSourceArn": queue_arns[0],
        "BatchSize": 8,
        "Enabled": false,
        "Tags": [{"Key": "k", "Value": "w"}]
    }));
    let r2 = req("Queue", MAPPING, &v2);
    let after = updated(
        p.update(&ctx, &r2, &made.physical_id, &v1)
            .await
            .expect("update"),
    );
    assert_eq!(after.attributes, made.attributes);
    let got = lambda
        .get_event_source_mapping()
        .uuid(&made.physical_id)
        .send()
        .await
        .expect("GetEventSourceMapping");
    assert_eq!(got.batch_size(), Some(8));
    assert_eq!(got.state(), Some("Disabled"));
    let tags = lambda
        .list_tags()
        .resource(got.event_source_mapping_arn().expect("arn"))
        .send()
        .await
        .expect("ListTags");
    assert_eq!(
        tags.tags().and_then(|t| t.get("k")).map(String::as_str),
        Some("w")
    );

    let mut moved = v2.clone();
    moved.insert("EventSourceArn".into(), json!(queue_arns[1]));
    let rm = req("Queue", MAPPING, &moved);
    assert_replaces(
        p.update(&ctx, &rm, &made.physical_id, &v2)
            .await
            .expect("update"),
        "EventSourceArn",
    );

    p.delete(&ctx, &r2, &made.physical_id)
        .await
        .expect("delete");
    assert!(lambda
        .get_event_source_mapping()
        .uuid(&made.physical_id)
        .send()
        .await
        .is_err());
    assert!(p
        .read(&ctx, &r2, &made.physical_id)
        .await
        .expect("read")
        .is_none());
    p.delete(&ctx, &r2, &made.physical_id)
        .await
        .expect("delete again");
}
