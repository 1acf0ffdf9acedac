//! `cdkd import <Stack> --migrate-from-cloudformation` end to end against the emulator.
//!
//! A CloudFormation stack is created directly in the emulator with the SDK: a parent (JSON)
//! with a queue, a bucket and a nested stack whose template (YAML with short tags) sits in
//! S3; the cloud assembly holds the same parent template and the child as a nested template
//! file. The migration must leave cdkd state for the parent and the child (with its parent
//! link), no CloudFormation stack, every resource in place (the parent's queue still holding
//! the message sent before, the bucket its object), no temporary template in the state
//! bucket, and a clean `cdkd diff --fail`. A template resource CloudFormation does not have
//! is refused by name before anything is written. A CloudFormation stack deployed under
//! another name than the CDK stack's is migrated when `--migrate-from-cloudformation` names it.
//!
//! Emulator note (moto 5.2.5): moto applies an update of a nested-stack row by deleting the
//! child stack and creating it again from the new template, where CloudFormation updates
//! the child in place. The old child template has no Retain, so moto deletes the child's
//! resources and creates new ones. The child's resources are therefore explicitly named
//! here, so the re-created ones carry the same physical ids; they survive the final
//! DeleteStack only because the child template cdkd uploaded carries Retain (moto honours
//! DeletionPolicy: Retain on DeleteStack, nested children included). Data inside the child's
//! resources does not survive in moto; the parent's resources, which moto updates in place,
//! are where the test checks data survives.

use crate::support;

use aws_sdk_cloudformation::types::StackStatus;
use serde_json::{json, Value};
use support::app::App;
use support::{cdkd, s3_client, sdk_config, unique_name};

const NESTED_FILE: &str = "MigChild.nested.template.json";

struct Names {
    stack: String,
    /// The CloudFormation stack's name: the cdkd stack's, or another one.
    cfn: String,
    assets: String,
    parent_bucket: String,
    child_queue: String,
    child_topic: String,
}

impl Names {
    fn new() -> Names {
        let stack = unique_name("migparent");
        Names {
            cfn: stack.clone(),
            stack,
            assets: unique_name("mig-assets"),
            parent_bucket: unique_name("mig-parent-bucket"),
            child_queue: unique_name("mig-child-queue"),
            child_topic: unique_name("mig-child-topic"),
        }
    }

    fn template_url(&self) -> String {
        format!(
            "https://s3.us-east-1.amazonaws.com/{}/child.yaml",
            self.assets
        )
    }
}

fn parent_template(n: &Names) -> Value {
    json!({
        "Resources": {
            "ParentQueue": {"Type": "AWS::SQS::Queue"},
            "ParentBucket": {
                "Type": "AWS::S3::Bucket",
                "Properties": {"BucketName": n.parent_bucket}
            },
            "MigChild": {
                "Type": "AWS::CloudFormation::Stack",
                "Properties": {
                    "TemplateURL": n.template_url(),
                    "Parameters": {"ParentQueueArn": {"Fn::GetAtt": ["ParentQueue", "Arn"]}}
                },
                "Metadata": {"aws:asset:path": NESTED_FILE}
            }
        }
    })
}

/// The child as CloudFormation holds it: YAML with short-form tags.
fn child_yaml(n: &Names) -> String {
    format!(
        r#"AWSTemplateFormatVersion: "2010-09-09"
Parameters:
  ParentQueueArn:
    Type: String
Resources:
  ChildQueue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: {queue}
  ChildTopic:
    Type: AWS::SNS::Topic
    Properties:
      TopicName: {topic}
      DisplayName: !Select [5, !Split [":", !Ref ParentQueueArn]]
Outputs:
  QueueUrl:
    Value: !Ref ChildQueue
"#,
        queue = n.child_queue,
        topic = n.child_topic
    )
}

/// The same child as the cloud assembly holds it (JSON, long forms).
fn child_json(n: &Names) -> Value {
    json!({
        "AWSTemplateFormatVersion": "2010-09-09",
        "Parameters": {"ParentQueueArn": {"Type": "String"}},
        "Resources": {
            "ChildQueue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": n.child_queue}},
            "ChildTopic": {
                "Type": "AWS::SNS::Topic",
                "Properties": {
                    "TopicName": n.child_topic,
                    "DisplayName": {"Fn::Select": [5, {"Fn::Split": [":", {"Ref": "ParentQueueArn"}]}]}
                }
            }
        },
        "Outputs": {"QueueUrl": {"Value": {"Ref": "ChildQueue"}}}
    })
}

async fn cfn() -> aws_sdk_cloudformation::Client {
    aws_sdk_cloudformation::Client::new(&sdk_config().await)
}

/// Creates the CloudFormation stack in the emulator and waits for CREATE_COMPLETE.
async fn create_cfn_stack(n: &Names, parent: &Value) {
    let s3 = s3_client().await;
    s3.create_bucket()
        .bucket(&n.assets)
        .send()
        .await
        .expect("asset bucket");
    s3.put_object()
        .bucket(&n.assets)
        .key("child.yaml")
        .body(child_yaml(n).into_bytes().into())
        .send()
        .await
        .expect("child template");
    let cfn = cfn().await;
    cfn.create_stack()
        .stack_name(&n.cfn)
        .template_body(parent.to_string())
        .send()
        .await
        .expect("create stack");
    for _ in 0..100 {
        let out = cfn
            .describe_stacks()
            .stack_name(&n.cfn)
            .send()
            .await
            .expect("describe");
        let status = out.stacks()[0].stack_status().cloned();
        match status {
            Some(StackStatus::CreateComplete) => return,
            Some(StackStatus::CreateInProgress) => {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await
            }
            other => panic!("stack creation ended {other:?}"),
        }
    }
    panic!("stack creation did not finish");
}

/// The physical id CloudFormation records for `logical_id` of `stack`.
async fn physical_id(stack: &str, logical_id: &str) -> String {
    let out = cfn()
        .await
        .describe_stack_resources()
        .stack_name(stack)
        .logical_resource_id(logical_id)
        .send()
        .await
        .expect("describe resources");
    out.stack_resources()[0]
        .physical_resource_id()
        .expect("physical id")
        .to_owned()
}

/// Stacks CloudFormation still has (not DELETE_COMPLETE) whose name contains `part`.
async fn live_stacks(part: &str) -> Vec<String> {
    let out = cfn().await.list_stacks().send().await.expect("list stacks");
    out.stack_summaries()
        .iter()
        .filter(|s| s.stack_status() != Some(&StackStatus::DeleteComplete))
        .filter_map(|s| s.stack_name())
        .filter(|name| name.contains(part))
        .map(str::to_owned)
        .collect()
}

fn run(app: &App, args: &[&str]) -> (i32, String, String) {
    let dir = app.dir.path();
    let out = cdkd()
        .current_dir(dir)
        .args(args)
        .args([
            "--app",
            dir.to_str().unwrap(),
            "--state-bucket",
            &app.bucket,
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

fn write_assembly(app: &App, n: &Names, parent: &Value, child: &Value) {
    app.write_stacks(&[(&n.stack, parent, &[])]);
    std::fs::write(
        app.dir.path().join(NESTED_FILE),
        serde_json::to_string_pretty(child).unwrap(),
    )
    .expect("nested template");
}

async fn state_keys(bucket: &str) -> Vec<String> {
    let out = s3_client()
        .await
        .list_objects_v2()
        .bucket(bucket)
        .send()
        .await
        .expect("list");
    out.contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cloudformation_stack_with_a_nested_stack_is_migrated_and_every_resource_kept() {
    let n = Names::new();
    let app = App::new("cdkd-migrate");
    let parent = parent_template(&n);
    write_assembly(&app, &n, &parent, &child_json(&n));
    create_cfn_stack(&n, &parent).await;

    let queue_url = physical_id(&n.stack, "ParentQueue").await;
    let child_stack = physical_id(&n.stack, "MigChild").await;
    let child_queue_url = physical_id(&child_stack, "ChildQueue").await;
    let topic_arn = physical_id(&child_stack, "ChildTopic").await;
    let config = sdk_config().await;
    let sqs = aws_sdk_sqs::Client::new(&config);
    let sns = aws_sdk_sns::Client::new(&config);
    let s3 = s3_client().await;
    // Data that must still be there afterwards: the resources are kept, not re-created.
    sqs.send_message()
        .queue_url(&queue_url)
        .message_body("kept")
        .send()
        .await
        .expect("send");
    s3.put_object()
        .bucket(&n.parent_bucket)
        .key("kept.txt")
        .body(b"kept".to_vec().into())
        .send()
        .await
        .expect("put");

    let (code, _, stderr) = run(&app, &["import", &n.stack, "--migrate-from-cloudformation"]);
    assert_eq!(code, 0, "migration failed:\n{stderr}");

    // cdkd state for the parent and the child, linked.
    let account = "123456789012";
    let parent_rec = app.record(&n.stack);
    let rows = &parent_rec["resources"];
    assert_eq!(rows["ParentQueue"]["physicalId"], json!(queue_url));
    assert_eq!(rows["ParentBucket"]["physicalId"], json!(n.parent_bucket));
    assert_eq!(
        rows["MigChild"]["physicalId"],
        json!(format!(
            "arn:cdkd-local:us-east-1:{account}:nested-stack/{}/MigChild",
            n.stack
        ))
    );
    assert_eq!(
        rows["MigChild"]["attributes"]["Outputs.QueueUrl"],
        json!(child_queue_url)
    );
    let child_name = format!("{}~MigChild", n.stack);
    let child_rec = app.record(&child_name);
    assert_eq!(child_rec["parentStack"], json!(n.stack));
    assert_eq!(child_rec["parentLogicalId"], json!("MigChild"));
    assert_eq!(child_rec["parentRegion"], json!("us-east-1"));
    assert_eq!(
        child_rec["resources"]["ChildQueue"]["physicalId"],
        json!(child_queue_url)
    );
    assert_eq!(
        child_rec["resources"]["ChildTopic"]["physicalId"],
        json!(topic_arn)
    );
    assert_eq!(child_rec["outputs"]["QueueUrl"], json!(child_queue_url));

    // CloudFormation let go: no stack of the tree is left.
    assert_eq!(live_stacks(&n.stack).await, Vec::<String>::new());
    // Every resource is still there, the parent's with their data.
    let got = sqs
        .receive_message()
        .queue_url(&queue_url)
        .send()
        .await
        .expect("parent queue kept");
    assert_eq!(got.messages().len(), 1, "the parent queue lost its message");
    let body = s3
        .get_object()
        .bucket(&n.parent_bucket)
        .key("kept.txt")
        .send()
        .await
        .expect("parent bucket kept its object");
    assert_eq!(
        body.body.collect().await.unwrap().into_bytes().as_ref(),
        b"kept"
    );
    sqs.get_queue_attributes()
        .queue_url(&child_queue_url)
        .send()
        .await
        .expect("child queue kept");
    sns.get_topic_attributes()
        .topic_arn(&topic_arn)
        .send()
        .await
        .expect("child topic kept");
    // The temporary templates are gone from the state bucket.
    let tmp: Vec<String> = state_keys(&app.bucket)
        .await
        .into_iter()
        .filter(|k| k.starts_with("cdkd-migrate-tmp/"))
        .collect();
    assert_eq!(tmp, Vec::<String>::new());
    // The child's retained template went through the state bucket as YAML (the bucket is
    // versioned, so the deleted object leaves its versions).
    let uploaded: Vec<String> = app
        .every_object_version()
        .await
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with(&format!("cdkd-migrate-tmp/{}/", n.stack)))
        .collect();
    assert!(
        uploaded.iter().any(|k| k.contains("~MigChild.yaml@")),
        "{uploaded:?}"
    );

    // cdkd now owns the stack and sees nothing to change.
    let (code, stdout, stderr) = run(&app, &["diff", "--fail", "--recursive"]);
    assert_eq!(code, 0, "diff after migration:\n{stdout}\n{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_template_resource_missing_in_cloudformation_is_refused_before_any_write() {
    let n = Names::new();
    let app = App::new("cdkd-migrate-miss");
    let parent = parent_template(&n);
    create_cfn_stack(&n, &parent).await;
    // The assembly declares one more resource than CloudFormation has.
    let mut declared = parent.clone();
    declared["Resources"]["ExtraQueue"] = json!({"Type": "AWS::SQS::Queue"});
    write_assembly(&app, &n, &declared, &child_json(&n));

    let (code, _, stderr) = run(&app, &["import", &n.stack, "--migrate-from-cloudformation"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("'ExtraQueue'"), "{stderr}");
    let keys = state_keys(&app.bucket).await;
    assert!(
        !keys.iter().any(|k| k.ends_with("state.json")),
        "state was written: {keys:?}"
    );
    // CloudFormation still manages the stack.
    assert_eq!(
        live_stacks(&n.stack).await.len(),
        2,
        "{:?}",
        live_stacks(&n.stack).await
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_template_over_the_inline_limit_is_submitted_through_the_state_bucket() {
    let n = Names::new();
    let app = App::new("cdkd-migrate-big");
    let mut parent = parent_template(&n);
    // Over CloudFormation's 51,200-byte TemplateBody limit.
    parent["Resources"]["ParentQueue"]["Metadata"] = json!({"Padding": "x".repeat(60_000)});
    write_assembly(&app, &n, &parent, &child_json(&n));
    create_cfn_stack(&n, &parent).await;
    let queue_url = physical_id(&n.stack, "ParentQueue").await;

    let (code, _, stderr) = run(&app, &["import", &n.stack, "--migrate-from-cloudformation"]);
    assert_eq!(code, 0, "migration failed:\n{stderr}");
    assert_eq!(live_stacks(&n.stack).await, Vec::<String>::new());
    aws_sdk_sqs::Client::new(&sdk_config().await)
        .get_queue_attributes()
        .queue_url(&queue_url)
        .send()
        .await
        .expect("parent queue kept");
    // The root template was uploaded as <stamp>.json and deleted again.
    let root_uploads: Vec<String> = app
        .every_object_version()
        .await
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| {
            k.strip_prefix(&format!("cdkd-migrate-tmp/{}/", n.stack))
                .is_some_and(|rest| !rest.contains('/') && rest.contains(".json@"))
        })
        .collect();
    assert_eq!(root_uploads.len(), 1, "{root_uploads:?}");
    let current: Vec<String> = state_keys(&app.bucket)
        .await
        .into_iter()
        .filter(|k| k.starts_with("cdkd-migrate-tmp/"))
        .collect();
    assert_eq!(current, Vec::<String>::new());
    let (code, stdout, stderr) = run(&app, &["diff", "--fail", "--recursive"]);
    assert_eq!(code, 0, "diff after migration:\n{stdout}\n{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cloudformation_stack_of_another_name_is_migrated_when_named() {
    let mut n = Names::new();
    n.cfn = unique_name("miglegacy");
    let app = App::new("cdkd-migrate-named");
    let parent = parent_template(&n);
    write_assembly(&app, &n, &parent, &child_json(&n));
    create_cfn_stack(&n, &parent).await;
    let queue_url = physical_id(&n.cfn, "ParentQueue").await;
    let child_stack = physical_id(&n.cfn, "MigChild").await;
    let child_queue_url = physical_id(&child_stack, "ChildQueue").await;

    // The bare flag looks for a CloudFormation stack named like the cdkd stack: none.
    let (code, _, stderr) = run(&app, &["import", &n.stack, "--migrate-from-cloudformation"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!("no CloudFormation stack named {}", n.stack)),
        "{stderr}"
    );
    // Another wrong name is refused naming it.
    let wrong = unique_name("nosuchcfn");
    let (code, _, stderr) = run(
        &app,
        &["import", &n.stack, "--migrate-from-cloudformation", &wrong],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&wrong), "{stderr}");
    assert!(
        !state_keys(&app.bucket)
            .await
            .iter()
            .any(|k| k.ends_with("state.json")),
        "a refused migration wrote state"
    );
    assert_eq!(live_stacks(&n.cfn).await.len(), 2);

    let (code, _, stderr) = run(
        &app,
        &["import", &n.stack, "--migrate-from-cloudformation", &n.cfn],
    );
    assert_eq!(code, 0, "migration failed:\n{stderr}");
    assert!(
        stderr.contains(&format!("CloudFormation stack {} is deleted", n.cfn)),
        "{stderr}"
    );
    // The records are the cdkd stack's (and its child's), read from the other stack.
    let rec = app.record(&n.stack);
    assert_eq!(
        rec["resources"]["ParentQueue"]["physicalId"],
        json!(queue_url)
    );
    assert_eq!(
        rec["resources"]["ParentBucket"]["physicalId"],
        json!(n.parent_bucket)
    );
    let child_rec = app.record(&format!("{}~MigChild", n.stack));
    assert_eq!(child_rec["parentStack"], json!(n.stack));
    assert_eq!(
        child_rec["resources"]["ChildQueue"]["physicalId"],
        json!(child_queue_url)
    );
    // The CloudFormation stack of that name let go, its resources kept.
    assert_eq!(live_stacks(&n.cfn).await, Vec::<String>::new());
    aws_sdk_sqs::Client::new(&sdk_config().await)
        .get_queue_attributes()
        .queue_url(&queue_url)
        .send()
        .await
        .expect("parent queue kept");
    // Its retained templates went through the state bucket under its own name.
    let uploaded: Vec<String> = app
        .every_object_version()
        .await
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with(&format!("cdkd-migrate-tmp/{}/", n.cfn)))
        .collect();
    assert!(!uploaded.is_empty(), "no retained template was uploaded");
    let (code, stdout, stderr) = run(&app, &["diff", "--fail", "--recursive"]);
    assert_eq!(code, 0, "diff after migration:\n{stdout}\n{stderr}");
}
