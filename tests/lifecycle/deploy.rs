//! `cdkd deploy` end to end against the emulator: small hand-written cloud assemblies, each test
//! with its own state bucket, checked through the AWS SDK, the state record and the exports
//! index.

use crate::support;

use std::path::Path;

use serde_json::{json, Value};
use support::http::http;
use support::{cdkd, s3_client, sdk_config, string_leaves, unique_name};
use tempfile::TempDir;

const REGION: &str = "us-east-1";

/// A cloud assembly with one stack.
struct App {
    dir: TempDir,
    stack: String,
    bucket: String,
}

impl App {
    /// A fresh stack name and a bootstrapped state bucket.
    fn new(prefix: &str) -> App {
        let app = App {
            dir: tempfile::tempdir().expect("temp dir"),
            stack: format!("Deploy{}", unique_name(prefix).replace('-', "x")),
            bucket: unique_name("cdkd-deploy"),
        };
        let out = cdkd()
            .args(["bootstrap", "--state-bucket", &app.bucket])
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        app
    }

    /// Writes `template` as the stack's template.
    fn write(&self, template: &Value) {
        self.write_stacks(&[(&self.stack, template, &[])]);
    }

    /// Writes an assembly of several stacks: (name, template, the stacks it depends on).
    fn write_stacks(&self, stacks: &[(&str, &Value, &[&str])]) {
        let mut artifacts = serde_json::Map::new();
        for (name, template, deps) in stacks {
            let file = format!("{name}.template.json");
            artifacts.insert(
                name.to_string(),
                json!({
                    "type": "aws:cloudformation:stack",
                    "environment": "aws://unknown-account/unknown-region",
                    "properties": {"templateFile": file},
                    "dependencies": deps
                }),
            );
            let text = serde_json::to_string_pretty(template).unwrap();
            std::fs::write(self.dir.path().join(&file), text).expect("template");
        }
        let manifest = json!({"version": "36.0.0", "artifacts": artifacts});
        std::fs::write(self.dir.path().join("manifest.json"), manifest.to_string())
            .expect("manifest");
    }

    /// `cdkd deploy --app DIR --state-bucket B ...`: (exit code, stdout, stderr).
    fn deploy(&self, extra: &[&str]) -> (i32, String, String) {
        deploy_dir(self.dir.path(), &self.bucket, extra)
    }

    fn state(&self) -> Value {
        state_json(&self.bucket, &self.stack)
    }

    async fn etag(&self) -> String {
        s3_client()
            .await
            .head_object()
            .bucket(&self.bucket)
            .key(format!("cdkd/{}/{REGION}/state.json", self.stack))
            .send()
            .await
            .expect("state.json exists")
            .e_tag()
            .unwrap_or_default()
            .to_owned()
    }
}

fn deploy_dir(dir: &Path, bucket: &str, extra: &[&str]) -> (i32, String, String) {
    let out = cdkd()
        .current_dir(dir)
        .arg("deploy")
        .args(["--app", dir.to_str().unwrap(), "--state-bucket", bucket])
        .args(extra)
        .output()
        .expect("runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    eprintln!("--- cdkd deploy {extra:?}\n{stderr}");
    (out.status.code().unwrap_or(-1), stdout, stderr)
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

fn ok(result: (i32, String, String)) -> (String, String) {
    let (code, stdout, stderr) = result;
    assert_eq!(code, 0, "deploy failed:\n{stderr}");
    (stdout, stderr)
}

fn queue_template(queue_name: &str, export: &str, with_param: bool) -> Value {
    let mut resources = json!({
        "Queue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {"QueueName": queue_name, "VisibilityTimeout": {"Ref": "Timeout"}},
            "DeletionPolicy": "Delete",
            "Metadata": {"aws:cdk:path": "Stack/Queue/Resource"}
        },
        "Never": {
            "Type": "AWS::SQS::Queue",
            "Condition": "IsNever"
        },
        "Meta": {"Type": "AWS::CDK::Metadata", "Properties": {"Analytics": "v2:x"}}
    });
    if with_param {
        resources["Param"] = json!({
            "Type": "AWS::SSM::Parameter",
            "Properties": {"Type": "String", "Value": {"Fn::GetAtt": ["Queue", "Arn"]}},
            "Metadata": {"aws:cdk:path": "Stack/Param/Resource"}
        });
    }
    json!({
        "Parameters": {"Timeout": {"Type": "Number", "Default": "30"}},
        "Conditions": {"IsNever": {"Fn::Equals": ["a", "b"]}},
        "Resources": resources,
        "Outputs": {
            "QueueArn": {"Value": {"Fn::GetAtt": ["Queue", "Arn"]}, "Export": {"Name": export}},
            "QueueUrl": {"Value": {"Ref": "Queue"}},
            "NeverUrl": {"Value": {"Ref": "Never"}, "Condition": "IsNever"}
        }
    })
}

async fn queue_attr(sqs: &aws_sdk_sqs::Client, url: &str, name: &str) -> String {
    let attr = aws_sdk_sqs::types::QueueAttributeName::from(name);
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(attr.clone())
        .send()
        .await
        .expect("queue attributes");
    out.attributes()
        .and_then(|a| a.get(&attr))
        .cloned()
        .unwrap_or_default()
}

async fn queue_exists(sqs: &aws_sdk_sqs::Client, name: &str) -> bool {
    sqs.get_queue_url().queue_name(name).send().await.is_ok()
}

async fn parameter(ssm: &aws_sdk_ssm::Client, name: &str) -> Option<String> {
    let out = ssm.get_parameter().name(name).send().await.ok()?;
    out.parameter().and_then(|p| p.value()).map(str::to_owned)
}

#[tokio::test]
async fn create_no_change_update_replace_delete() {
    let config = sdk_config().await;
    let sqs = aws_sdk_sqs::Client::new(&config);
    let ssm = aws_sdk_ssm::Client::new(&config);
    let app = App::new("life");
    let (first, second) = (unique_name("q-a"), unique_name("q-b"));
    let export = format!("{}-QueueArn", app.stack);

    // First deploy: everything is created.
    app.write(&queue_template(&first, &export, true));
    let (stdout, stderr) = ok(app.deploy(&["--json"]));
    assert!(
        stderr.contains("Queue AWS::SQS::Queue created (sdk, "),
        "{stderr}"
    );
    assert!(
        stderr.contains("Param AWS::SSM::Parameter created (sdk, "),
        "{stderr}"
    );
    let printed: Value = serde_json::from_str(&stdout).expect("--json output");
    let outputs = &printed[&app.stack]["outputs"];
    let url = outputs["QueueUrl"].as_str().expect("QueueUrl").to_owned();
    let arn = outputs["QueueArn"].as_str().expect("QueueArn").to_owned();
    assert!(outputs.get("NeverUrl").is_none(), "{outputs}");
    assert_eq!(queue_attr(&sqs, &url, "VisibilityTimeout").await, "30");
    assert_eq!(queue_attr(&sqs, &url, "QueueArn").await, arn);

    let state = app.state();
    assert_eq!(state["version"], 11);
    assert_eq!(state["stackName"], app.stack.as_str());
    assert_eq!(state["region"], REGION);
    let queue = &state["resources"]["Queue"];
    assert_eq!(queue["physicalId"], url.as_str());
    assert_eq!(queue["resourceType"], "AWS::SQS::Queue");
    assert_eq!(queue["properties"]["QueueName"], first.as_str());
    assert_eq!(queue["properties"]["VisibilityTimeout"], "30");
    assert_eq!(queue["attributes"]["Arn"], arn.as_str());
    assert_eq!(queue["dependencies"], json!([]));
    assert_eq!(queue["constructPath"], "Stack/Queue/Resource");
    assert_eq!(queue["deletionPolicy"], "Delete");
    assert_eq!(queue["provisionedBy"], "sdk");
    let param = &state["resources"]["Param"];
    assert_eq!(param["properties"]["Value"], arn.as_str());
    assert_eq!(param["dependencies"], json!(["Queue"]));
    let param_name = param["physicalId"]
        .as_str()
        .expect("parameter name")
        .to_owned();
    assert_eq!(
        parameter(&ssm, &param_name).await.as_deref(),
        Some(arn.as_str())
    );
    let resources = state["resources"].as_object().unwrap();
    assert!(!resources.contains_key("Never") && !resources.contains_key("Meta"));
    assert_eq!(state["outputs"]["QueueArn"], arn.as_str());
    assert_eq!(state["outputs"][&export], arn.as_str());
    assert_eq!(state["exportNames"], json!([export]));

    let index_key = format!("cdkd/_index/{REGION}/exports.json");
    let index = s3_client()
        .await
        .get_object()
        .bucket(&app.bucket)
        .key(&index_key)
        .send()
        .await
        .expect("exports index");
    let index = String::from_utf8(index.body.collect().await.unwrap().to_vec()).unwrap();
    assert!(index.contains(&export) && index.contains(&arn), "{index}");

    // Second deploy: nothing changes and nothing is written.
    let etag = app.etag().await;
    let (_, stderr) = ok(app.deploy(&[]));
    assert!(stderr.contains("no changes"), "{stderr}");
    assert_eq!(app.etag().await, etag);

    // A changed property (through a parameter override) updates in place.
    let (_, stderr) = ok(app.deploy(&["--parameters", &format!("{}:Timeout=45", app.stack)]));
    assert!(stderr.contains("Queue AWS::SQS::Queue updated"), "{stderr}");
    assert!(
        !stderr.contains("Param AWS::SSM::Parameter updated"),
        "{stderr}"
    );
    assert_eq!(queue_attr(&sqs, &url, "VisibilityTimeout").await, "45");
    assert_ne!(app.etag().await, etag);

    // A new QueueName (create-only) replaces the queue; the parameter follows the new Arn.
    app.write(&queue_template(&second, &export, true));
    let (stdout, stderr) = ok(app.deploy(&["--json"]));
    assert!(
        stderr.contains("Queue AWS::SQS::Queue replaced"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Param AWS::SSM::Parameter updated"),
        "{stderr}"
    );
    assert!(stderr.contains("old resource deleted"), "{stderr}");
    assert!(queue_exists(&sqs, &second).await);
    assert!(
        !queue_exists(&sqs, &first).await,
        "the old queue is deleted"
    );
    let printed: Value = serde_json::from_str(&stdout).unwrap();
    let new_arn = printed[&app.stack]["outputs"]["QueueArn"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(new_arn.ends_with(&second), "{new_arn}");
    assert_eq!(
        parameter(&ssm, &param_name).await.as_deref(),
        Some(new_arn.as_str())
    );
    assert_eq!(app.state()["outputs"][&export], new_arn.as_str());

    // Removing a resource deletes it.
    app.write(&queue_template(&second, &export, false));
    let (_, stderr) = ok(app.deploy(&[]));
    assert!(
        stderr.contains("Param AWS::SSM::Parameter deleted"),
        "{stderr}"
    );
    assert_eq!(parameter(&ssm, &param_name).await, None);
    let state = app.state();
    assert!(state["resources"].get("Param").is_none(), "{state}");
    assert!(state["resources"].get("Queue").is_some());
}

#[tokio::test]
async fn cloud_control_types_are_created_and_deleted_through_cloud_control() {
    let config = sdk_config().await;
    let cc = aws_sdk_cloudcontrol::Client::new(&config);
    let app = App::new("cc");
    let bus_name = unique_name("bus");
    let template = |with_bus: bool| {
        let mut resources = json!({
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {}}
        });
        if with_bus {
            resources["Kept"] = json!({"Type": "AWS::SQS::Queue", "DeletionPolicy": "Retain"});
            resources["Bus"] = json!({
                "Type": "AWS::Events::EventBus",
                "Properties": {"Name": bus_name},
                "Metadata": {"aws:cdk:path": "Stack/Bus/Resource"}
            });
        }
        json!({"Resources": resources, "Outputs": {"Queue": {"Value": {"Ref": "Queue"}}}})
    };
    app.write(&template(true));
    let (_, stderr) = ok(app.deploy(&[]));
    assert!(
        stderr.contains("Bus AWS::Events::EventBus created (cc-api, "),
        "{stderr}"
    );
    let state = app.state();
    let bus = &state["resources"]["Bus"];
    assert_eq!(bus["provisionedBy"], "cc-api");
    assert_eq!(bus["constructPath"], "Stack/Bus/Resource");
    let id = bus["physicalId"].as_str().expect("physical id").to_owned();
    let got = cc
        .get_resource()
        .type_name("AWS::Events::EventBus")
        .identifier(&id)
        .send()
        .await
        .expect("Cloud Control has the bus");
    let props = got
        .resource_description()
        .and_then(|d| d.properties())
        .unwrap_or_default();
    assert!(props.contains(&bus_name), "{props}");
    assert_eq!(state["exportNames"], json!([]));

    let (_, stderr) = ok(app.deploy(&[]));
    assert!(stderr.contains("no changes"), "{stderr}");

    let kept = state["resources"]["Kept"]["physicalId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(state["resources"]["Kept"]["deletionPolicy"], "Retain");

    app.write(&template(false));
    let (_, stderr) = ok(app.deploy(&[]));
    assert!(
        stderr.contains("Bus AWS::Events::EventBus deleted (cc-api, "),
        "{stderr}"
    );
    assert!(
        stderr.contains("Kept AWS::SQS::Queue removed from state (retained"),
        "{stderr}"
    );
    assert!(app.state()["resources"].get("Kept").is_none());
    let sqs = aws_sdk_sqs::Client::new(&config);
    assert!(
        !queue_attr(&sqs, &kept, "QueueArn").await.is_empty(),
        "the queue is kept"
    );
    let gone = cc
        .get_resource()
        .type_name("AWS::Events::EventBus")
        .identifier(&id)
        .send()
        .await;
    assert!(gone.is_err(), "the bus is deleted");
}

#[tokio::test]
async fn a_failing_resource_skips_its_dependents_and_state_keeps_what_was_created() {
    let app = App::new("fail");
    let repo = unique_name("repo");
    let template = |param_type: &str| {
        json!({"Resources": {
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "BadParam": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {"Type": param_type, "Value": {"Ref": "Queue"}}
            },
            "AfterBad": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {"Type": "String", "Value": {"Ref": "BadParam"}}
            },
            "Repo": {"Type": "AWS::ECR::PublicRepository", "Properties": {"RepositoryName": repo}}
        }})
    };
    // One Cloud Control create of the repository fails. A type no other module of this test
    // binary creates, so the fault cannot reach a test running beside this one.
    let fault = json!({"fail_create": {
        "TypeName": "AWS::ECR::PublicRepository",
        "ErrorCode": "InvalidRequest",
        "StatusMessage": "injected by the deploy test",
        "count": 1
    }});
    let (status, body) = http("POST", "/_cloudcontrol/faults", &[], &fault.to_string());
    assert_eq!(status, 200, "{body}");

    app.write(&template("Bogus"));
    // Without --no-rollback the queue would be rolled back (tests/lifecycle/deploy_failure.rs).
    let (code, _, stderr) = app.deploy(&["--no-rollback"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("BadParam") && stderr.contains("Type must be String or StringList"),
        "{stderr}"
    );
    assert!(stderr.contains("injected by the deploy test"), "{stderr}");
    assert!(stderr.contains("AfterBad skipped"), "{stderr}");
    let state = app.state();
    let resources = state["resources"].as_object().unwrap();
    assert!(resources.contains_key("Queue"), "{state}");
    for absent in ["BadParam", "AfterBad", "Repo"] {
        assert!(!resources.contains_key(absent), "{absent}: {state}");
    }

    // Fixed, the next deploy creates the rest and leaves the queue alone.
    app.write(&template("String"));
    let (_, stderr) = ok(app.deploy(&[]));
    assert!(!stderr.contains("Queue AWS::SQS::Queue"), "{stderr}");
    for created in ["BadParam", "AfterBad", "Repo"] {
        assert!(
            stderr.contains(&format!("{created} AWS::")),
            "{created}: {stderr}"
        );
    }
    assert_eq!(app.state()["resources"]["Repo"]["provisionedBy"], "cc-api");
}

#[tokio::test]
async fn replacing_a_stateful_resource_needs_the_flag() {
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    let app = App::new("stateful");
    let (first, second) = (
        format!("/{}", unique_name("p1")),
        format!("/{}", unique_name("p2")),
    );
    let template = |name: &str| {
        json!({"Resources": {"Param": {
            "Type": "AWS::SSM::Parameter",
            "Properties": {"Name": name, "Type": "String", "Value": "v"}
        }}})
    };
    app.write(&template(&first));
    ok(app.deploy(&[]));
    let etag = app.etag().await;

    app.write(&template(&second));
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("STATEFUL_REPLACE_BLOCKED"), "{stderr}");
    assert!(stderr.contains("--force-stateful-recreation"), "{stderr}");
    assert_eq!(app.etag().await, etag, "nothing was written");
    assert!(parameter(&ssm, &second).await.is_none());

    let (_, stderr) = ok(app.deploy(&["--force-stateful-recreation"]));
    assert!(
        stderr.contains("Param AWS::SSM::Parameter replaced"),
        "{stderr}"
    );
    assert_eq!(parameter(&ssm, &second).await.as_deref(), Some("v"));
    assert!(parameter(&ssm, &first).await.is_none());
}

#[tokio::test]
async fn a_locked_stack_is_refused() {
    let app = App::new("locked");
    app.write(&json!({"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}}));
    let far = 4_102_444_800_000u64; // 2100-01-01
    let lock = json!({"owner": "someone@elsewhere:42", "timestamp": 1, "expiresAt": far});
    s3_client()
        .await
        .put_object()
        .bucket(&app.bucket)
        .key(format!("cdkd/{}/{REGION}/lock.json", app.stack))
        .body(lock.to_string().into_bytes().into())
        .send()
        .await
        .expect("put lock");
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("someone@elsewhere:42"), "{stderr}");
    let state = s3_client()
        .await
        .head_object()
        .bucket(&app.bucket)
        .key(format!("cdkd/{}/{REGION}/state.json", app.stack))
        .send()
        .await;
    assert!(state.is_err(), "no state was written");
}

#[tokio::test]
async fn a_damaged_state_record_is_refused() {
    let app = App::new("damaged");
    app.write(&json!({"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}}));
    let body =
        json!({"version": 11, "stackName": app.stack, "region": REGION, "resources": "oops"});
    s3_client()
        .await
        .put_object()
        .bucket(&app.bucket)
        .key(format!("cdkd/{}/{REGION}/state.json", app.stack))
        .body(body.to_string().into_bytes().into())
        .send()
        .await
        .expect("put state");
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("STATE_RESOURCES_MALFORMED"), "{stderr}");
    assert!(
        stderr.contains("has no readable 'resources' map"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_basic_fixture_deploys_and_then_has_no_changes() {
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    // The fixture names its parameter; a run before this one may have left it.
    let _ = ssm
        .delete_parameter()
        .name("/cdkd/basic/bucket-name")
        .send()
        .await;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/apps/basic/cdk.out");
    let bucket = unique_name("cdkd-basic");
    let out = cdkd()
        .args(["bootstrap", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let (stdout, stderr) = ok(deploy_dir(&dir, &bucket, &["--json"]));
    let printed: Value = serde_json::from_str(&stdout).expect("json");
    let outputs = &printed["BasicStack"]["outputs"];
    assert!(
        outputs["QueueUrl"]
            .as_str()
            .is_some_and(|u| u.contains("Queue")),
        "{outputs}"
    );
    let state = state_json(&bucket, "BasicStack");
    assert_eq!(state["resources"].as_object().unwrap().len(), 8, "{stderr}");
    assert_eq!(state["exportNames"], json!(["CdkdBasicQueueUrl"]));
    let bucket_name = outputs["BucketName"].as_str().unwrap();
    assert_eq!(
        parameter(&ssm, "/cdkd/basic/bucket-name").await.as_deref(),
        Some(bucket_name)
    );

    let (_, stderr) = ok(deploy_dir(&dir, &bucket, &[]));
    assert!(stderr.contains("no changes"), "{stderr}");
    let _ = ssm
        .delete_parameter()
        .name("/cdkd/basic/bucket-name")
        .send()
        .await;
}

#[tokio::test]
async fn dependencies_deploy_first_unless_exclusively_and_a_failed_one_skips_its_dependents() {
    let app = App::new("multi");
    let (producer, consumer) = (format!("{}P", app.stack), format!("{}C", app.stack));
    let queue = json!({"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}});
    app.write_stacks(&[(&producer, &queue, &[]), (&consumer, &queue, &[&producer])]);
    let (_, stderr) = ok(app.deploy(&[&consumer, "--exclusively"]));
    assert!(
        !stderr.contains(&format!("Deploying {producer}")),
        "{stderr}"
    );

    let (_, stderr) = ok(app.deploy(&[&consumer]));
    let at = |name: &str| stderr.find(&format!("Deploying {name} ")).expect(name);
    assert!(at(&producer) < at(&consumer), "{stderr}");
    assert!(
        stderr.contains(&format!("{consumer}: no changes")),
        "{stderr}"
    );

    let broken = json!({"Resources": {"P": {"Type": "AWS::SSM::Parameter",
        "Properties": {"Type": "Bogus", "Value": "v"}}}});
    app.write_stacks(&[(&producer, &broken, &[]), (&consumer, &queue, &[&producer])]);
    let (code, _, stderr) = app.deploy(&["--all"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!("{consumer}: skipped: the stack it depends on")),
        "{stderr}"
    );
}

/// `cdkd <args> --app DIR --state-bucket B`: (exit code, stderr).
fn run_app(dir: &Path, bucket: &str, args: &[&str]) -> (i32, String) {
    let out = cdkd()
        .current_dir(dir)
        .args(args)
        .args(["--app", dir.to_str().unwrap(), "--state-bucket", bucket])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("--- cdkd {args:?}\n{stderr}");
    (out.status.code().unwrap_or(-1), stderr)
}

fn joined_ids(v: &Value, path: &str) -> Vec<(String, String)> {
    let mut all = Vec::new();
    string_leaves(v, path, &mut all);
    all.into_iter().filter(|(_, s)| s.contains('|')).collect()
}

/// A REST API whose children have composite Cloud Control identifiers: every `Ref` of one
/// reaches AWS, state and the outputs as CloudFormation's value (a resource id, a stage
/// name), while state keeps the `|`-joined identifier as the physical id.
#[tokio::test]
async fn the_rest_api_fixture_sends_and_outputs_cloudformation_ref_values() {
    let cc = aws_sdk_cloudcontrol::Client::new(&sdk_config().await);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/apps/rest-api/cdk.out");
    let bucket = unique_name("cdkd-restapi");
    let out = cdkd()
        .args(["bootstrap", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let (stdout, _) = ok(deploy_dir(&dir, &bucket, &["--json"]));
    let printed: Value = serde_json::from_str(&stdout).expect("json");
    let outputs = &printed["RestApiStack"]["outputs"];
    assert_eq!(joined_ids(outputs, "outputs"), vec![], "{outputs}");
    assert_eq!(outputs["StageName"], "prod", "{outputs}");

    let state = state_json(&bucket, "RestApiStack");
    let resources = state["resources"].as_object().expect("resources");
    assert_eq!(resources.len(), 11, "{state}");
    let physical = |id: &str| resources[id]["physicalId"].as_str().unwrap().to_owned();
    let api = physical("ApiF70053CD");
    let items = physical("Apiitems8F0ED6C4");
    assert_eq!(
        items.split('|').collect::<Vec<_>>().len(),
        2,
        "state keeps the identifier"
    );
    let items_id = items.split('|').nth(1).unwrap();
    assert_eq!(outputs["ItemsResourceId"], items_id);
    assert_eq!(
        physical("ApiitemsGET2CEFDB25"),
        format!("{api}|{items_id}|GET")
    );
    let root = &resources["ApiF70053CD"]["attributes"]["RootResourceId"];
    assert_eq!(&outputs["RootResourceId"], root);
    assert_eq!(
        outputs["ApiEndpoint4F160690"],
        format!("https://{api}.execute-api.{REGION}.amazonaws.com/prod/")
    );
    for (id, rec) in resources {
        let props = &rec["properties"];
        assert_eq!(
            joined_ids(props, id),
            vec![],
            "{id} was sent a composite id"
        );
        // What Cloud Control holds for it: no property names a `|`-joined identifier.
        let got = cc
            .get_resource()
            .type_name(rec["resourceType"].as_str().unwrap())
            .identifier(rec["physicalId"].as_str().unwrap())
            .send()
            .await
            .unwrap_or_else(|e| panic!("{id}: {e:?}"));
        let text = got
            .resource_description()
            .and_then(|d| d.properties())
            .unwrap();
        let live: Value = serde_json::from_str(text).expect("properties");
        assert_eq!(joined_ids(&live, id), vec![], "{id} holds a composite id");
    }

    let (code, stderr) = run_app(&dir, &bucket, &["diff", "--fail"]);
    assert_eq!(code, 0, "diff after deploy: {stderr}");

    let (code, stderr) = run_app(&dir, &bucket, &["destroy", "--all", "--force"]);
    assert_eq!(code, 0, "destroy: {stderr}");
    for rec in resources.values() {
        let gone = cc
            .get_resource()
            .type_name(rec["resourceType"].as_str().unwrap())
            .identifier(rec["physicalId"].as_str().unwrap())
            .send()
            .await;
        assert!(gone.is_err(), "{rec} survived the destroy");
    }
}
