//! `cdkd import` with upstream cdkd's modes, end to end against the emulator: without a
//! mapping every resource is looked for (a queue, a topic, a bucket and a parameter by the
//! names the template gives them, an unnamed queue through the CloudFormation stack of the
//! same name), one that exists nowhere is reported and left out; `--dry-run` writes nothing
//! (every object version of the state bucket unchanged) yet `--record-resource-mapping`
//! writes the mapping it found, which `--resource-mapping` then replays into another state
//! bucket; over an existing record the auto mode needs `--force`; a mapping alone imports
//! only what it names, `--auto` beside it finds the rest.

use crate::support;

use aws_sdk_cloudformation::types::StackStatus;
use serde_json::{json, Value};
use support::app::App;
use support::{cdkd, s3_client, sdk_config, unique_name};

/// What exists in the emulator before the import, made directly with the SDK.
struct World {
    stack: String,
    queue_url: String,
    topic_arn: String,
    bucket: String,
    param: String,
    /// The queue CloudFormation made (and named) for the logical id `Generated`.
    generated_url: String,
    template: Value,
}

async fn world() -> World {
    let config = sdk_config().await;
    let sqs = aws_sdk_sqs::Client::new(&config);
    let sns = aws_sdk_sns::Client::new(&config);
    let ssm = aws_sdk_ssm::Client::new(&config);
    let stack = format!("Auto{}", unique_name("s").replace('-', "x"));
    let queue = unique_name("auto-q");
    let topic = unique_name("auto-t");
    let bucket = unique_name("auto-b");
    let param = format!("/{}", unique_name("auto-p"));
    let queue_url = sqs
        .create_queue()
        .queue_name(&queue)
        .send()
        .await
        .expect("queue")
        .queue_url
        .expect("url");
    let topic_arn = sns
        .create_topic()
        .name(&topic)
        .send()
        .await
        .expect("topic")
        .topic_arn
        .expect("arn");
    s3_client()
        .await
        .create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("bucket");
    ssm.put_parameter()
        .name(&param)
        .value("v")
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .expect("parameter");
    // The CloudFormation stack of the same name holds the one queue the template leaves
    // unnamed: only CloudFormation knows the name it generated.
    let cfn = aws_sdk_cloudformation::Client::new(&config);
    let cfn_template = json!({"Resources": {"Generated": {"Type": "AWS::SQS::Queue"}}});
    cfn.create_stack()
        .stack_name(&stack)
        .template_body(cfn_template.to_string())
        .send()
        .await
        .expect("create stack");
    let mut done = false;
    for _ in 0..100 {
        let out = cfn
            .describe_stacks()
            .stack_name(&stack)
            .send()
            .await
            .expect("describe");
        match out.stacks()[0].stack_status() {
            Some(StackStatus::CreateComplete) => {
                done = true;
                break;
            }
            Some(StackStatus::CreateInProgress) => {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await
            }
            other => panic!("stack creation ended {other:?}"),
        }
    }
    assert!(done, "stack creation did not finish");
    let generated_url = cfn
        .describe_stack_resources()
        .stack_name(&stack)
        .send()
        .await
        .expect("resources")
        .stack_resources()[0]
        .physical_resource_id()
        .expect("physical id")
        .to_owned();
    let template = json!({"Resources": {
        "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": queue}},
        "Topic": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": topic}},
        "Bucket": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": bucket}},
        "Param": {"Type": "AWS::SSM::Parameter",
            "Properties": {"Name": param, "Type": "String", "Value": "v"}},
        "Generated": {"Type": "AWS::SQS::Queue"},
        "Missing": {"Type": "AWS::SQS::Queue",
            "Properties": {"QueueName": unique_name("auto-nowhere")}}
    }});
    World {
        stack,
        queue_url,
        topic_arn,
        bucket,
        param,
        generated_url,
        template,
    }
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

/// Logical id → recorded physical id of every resource in the record.
fn physical_ids(record: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for (id, r) in record["resources"].as_object().expect("resources") {
        out.insert(id.clone(), r["physicalId"].clone());
    }
    Value::Object(out)
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_mapping_every_resource_is_found_and_dry_run_writes_nothing() {
    let w = world().await;
    let app = App::new("cdkd-import-auto");
    app.write_stacks(&[(&w.stack, &w.template, &[])]);
    let expected = json!({
        "Queue": w.queue_url,
        "Topic": w.topic_arn,
        "Bucket": w.bucket,
        "Param": w.param,
        "Generated": w.generated_url,
    });

    // A record exists first (one resource by mapping), so the dry run has state to leave be.
    let (code, _, stderr) = run(
        &app,
        &[
            "import",
            &w.stack,
            "--resource",
            &format!("Queue={}", w.queue_url),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("5 resources not in the mapping left out"),
        "{stderr}"
    );
    assert_eq!(
        physical_ids(&app.record(&w.stack)),
        json!({"Queue": w.queue_url})
    );

    // Without a mapping over that record: refused without --force, the record as it was.
    let (code, _, stderr) = run(&app, &["import", &w.stack]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("state already exists") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(
        physical_ids(&app.record(&w.stack)),
        json!({"Queue": w.queue_url})
    );

    // --dry-run: every resource found is shown, the mapping recorded, the bucket untouched
    // (no object and no version added, changed or removed: it takes no lock either).
    let before = app.every_object_version().await;
    let recorded = app.dir.path().join("mapping.json");
    let (code, _, stderr) = run(
        &app,
        &[
            "import",
            &w.stack,
            "--force",
            "--dry-run",
            "--record-resource-mapping",
            recorded.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("would import Generated"), "{stderr}");
    assert!(
        stderr.contains("Missing (AWS::SQS::Queue): not found"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(
        app.every_object_version().await,
        before,
        "--dry-run changed the state bucket"
    );
    let text = std::fs::read_to_string(&recorded).expect("the mapping file is written");
    assert!(text.ends_with('\n'));
    let file: Value = serde_json::from_str(&text).expect("mapping json");
    assert_eq!(file, expected);

    // The real run records what the dry run showed, and drops nothing it found.
    let (code, _, stderr) = run(&app, &["import", &w.stack, "--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("5 resources imported"), "{stderr}");
    let record = app.record(&w.stack);
    assert_eq!(physical_ids(&record), expected);
    assert_eq!(record["resources"]["Topic"]["provisionedBy"], "sdk");

    // The recorded file is a mapping --resource-mapping reads: replayed into another state
    // bucket, it imports the same resources (and only those: it names them all but Missing).
    let other = App::new("cdkd-import-replay");
    other.write_stacks(&[(&w.stack, &w.template, &[])]);
    let (code, _, stderr) = run(
        &other,
        &[
            "import",
            &w.stack,
            "--resource-mapping",
            recorded.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(physical_ids(&other.record(&w.stack)), expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mapping_imports_only_what_it_names_unless_auto_finds_the_rest() {
    let w = world().await;
    let app = App::new("cdkd-import-hybrid");
    app.write_stacks(&[(&w.stack, &w.template, &[])]);
    // The mapping names the bucket; --auto finds the rest, the mapping winning where it names.
    let (code, _, stderr) = run(
        &app,
        &[
            "import",
            &w.stack,
            "--resource",
            &format!("Bucket={}", w.bucket),
            "--auto",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        physical_ids(&app.record(&w.stack)),
        json!({
            "Queue": w.queue_url,
            "Topic": w.topic_arn,
            "Bucket": w.bucket,
            "Param": w.param,
            "Generated": w.generated_url,
        })
    );
    // A mapped resource that does not exist is still an error naming it, under --auto too.
    let other = App::new("cdkd-import-hybrid2");
    other.write_stacks(&[(&w.stack, &w.template, &[])]);
    let nowhere = unique_name("nowhere");
    let (code, _, stderr) = run(
        &other,
        &[
            "import",
            &w.stack,
            "--resource",
            &format!("Bucket={nowhere}"),
            "--auto",
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("'Bucket'") && stderr.contains(&nowhere),
        "{stderr}"
    );
}
