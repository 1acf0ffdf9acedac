//! `cdkd drift`, `--accept`, `--revert` and `cdkd state refresh-observed` end to end through the
//! binary against the emulator, and the observed baselines a deploy records.
//!
//! fixtures/apps/drift deploys one resource of each common type (S3, SQS, SNS, SSM, DynamoDB,
//! IAM role, Lambda) plus a queue the test deletes; one property of each is changed out of band
//! through the AWS SDK, and drift must name exactly those and the deleted queue. Its function
//! reads a Secrets Manager value and a NoEcho parameter: no version of any object in the state
//! bucket may hold either plaintext.

use crate::fixture_app::{record, run};
use crate::support;

use std::collections::BTreeSet;

use serde_json::{json, Value};
use support::app::App;
use support::{s3_client, sdk_config, unique_name};

const APP: &str = "drift";
const STACK: &str = "DriftStack";
const BUCKET_ID: &str = "Bucket83908E77";
const QUEUE: &str = "Queue4A7E3555";
const SCRATCH: &str = "ScratchF72D2ED6";
const TOPIC: &str = "TopicBFC7AF6E";
const TABLE: &str = "TableCD117FA1";
const ROLE: &str = "Role1ABCC5F0";
const FUNCTION: &str = "Function76856677";
const PARAM: &str = "Param165332EC";
const TOKEN: &str = "drift-token-plaintext-7421";
const PASSWORD: &str = "drift-noecho-plaintext-9313";

/// `cdkd drift DriftStack --json <extra>`: (exit code, report of the stack).
fn drift_json(bucket: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec![STACK, "--json"];
    args.extend_from_slice(extra);
    let (code, text) = run("drift", APP, bucket, &args, None);
    let start = text
        .find('[')
        .unwrap_or_else(|| panic!("no JSON report: {text}"));
    let stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
    let report = stream
        .into_iter()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("unreadable JSON report: {text}"));
    (code, report[0].clone())
}

/// (logical id, path) of every drifted property, and the deleted resources.
fn drifted(report: &Value) -> (BTreeSet<(String, String)>, BTreeSet<String>) {
    let (mut changed, mut deleted) = (BTreeSet::new(), BTreeSet::new());
    for d in report["drifted"].as_array().expect("drifted") {
        let id = d["logicalId"].as_str().expect("id").to_owned();
        if d["deleted"] == true {
            deleted.insert(id);
            continue;
        }
        for c in d["changes"].as_array().expect("changes") {
            changed.insert((id.clone(), c["path"].as_str().expect("path").to_owned()));
        }
    }
    (changed, deleted)
}

fn physical(state: &Value, id: &str) -> String {
    state["resources"][id]["physicalId"]
        .as_str()
        .unwrap_or_else(|| panic!("{id} has no physical id: {state}"))
        .to_owned()
}

/// The AWS values the test changes, as one comparable list.
async fn live_values(conf: &aws_config::SdkConfig, state: &Value) -> Vec<String> {
    let sqs = aws_sdk_sqs::Client::new(conf);
    let queue = sqs
        .get_queue_attributes()
        .queue_url(physical(state, QUEUE))
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout)
        .send()
        .await
        .expect("GetQueueAttributes");
    let sns = aws_sdk_sns::Client::new(conf);
    let topic = sns
        .get_topic_attributes()
        .topic_arn(physical(state, TOPIC))
        .send()
        .await
        .expect("GetTopicAttributes");
    let ssm = aws_sdk_ssm::Client::new(conf);
    let param = ssm
        .get_parameter()
        .name(physical(state, PARAM))
        .send()
        .await
        .expect("GetParameter");
    let ddb = aws_sdk_dynamodb::Client::new(conf);
    let table = ddb
        .describe_table()
        .table_name(physical(state, TABLE))
        .send()
        .await
        .expect("DescribeTable");
    let iam = aws_sdk_iam::Client::new(conf);
    let role = iam
        .get_role()
        .role_name(physical(state, ROLE))
        .send()
        .await
        .expect("GetRole");
    let lambda = aws_sdk_lambda::Client::new(conf);
    let function = lambda
        .get_function_configuration()
        .function_name(physical(state, FUNCTION))
        .send()
        .await
        .expect("GetFunctionConfiguration");
    let s3 = aws_sdk_s3::Client::new(conf);
    let tagging = s3
        .get_bucket_tagging()
        .bucket(physical(state, BUCKET_ID))
        .send()
        .await
        .expect("GetBucketTagging");
    vec![
        format!(
            "queue {:?}",
            queue
                .attributes()
                .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout))
                .cloned()
        ),
        format!(
            "topic {:?}",
            topic
                .attributes()
                .and_then(|a| a.get("DisplayName"))
                .cloned()
        ),
        format!(
            "param {:?}",
            param.parameter().and_then(|p| p.value()).map(str::to_owned)
        ),
        format!(
            "table {:?}",
            table
                .table()
                .and_then(|t| t.billing_mode_summary())
                .and_then(|b| b.billing_mode())
                .map(|m| m.as_str().to_owned())
        ),
        format!(
            "role {:?}",
            role.role().and_then(|r| r.description()).map(str::to_owned)
        ),
        format!("function {:?}", function.timeout()),
        format!(
            "bucket {:?}",
            tagging
                .tag_set()
                .iter()
                .map(|t| format!("{}={}", t.key(), t.value()))
                .collect::<Vec<_>>()
        ),
    ]
}

/// Changes one property of each type out of band.
async fn change_out_of_band(conf: &aws_config::SdkConfig, state: &Value) {
    use aws_sdk_dynamodb::types::{BillingMode, ProvisionedThroughput};
    use aws_sdk_s3::types::{Tag, Tagging};
    aws_sdk_sqs::Client::new(conf)
        .set_queue_attributes()
        .queue_url(physical(state, QUEUE))
        .attributes(
            aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout,
            "99",
        )
        .send()
        .await
        .expect("SetQueueAttributes");
    aws_sdk_sns::Client::new(conf)
        .set_topic_attributes()
        .topic_arn(physical(state, TOPIC))
        .attribute_name("DisplayName")
        .attribute_value("changed in the console")
        .send()
        .await
        .expect("SetTopicAttributes");
    aws_sdk_ssm::Client::new(conf)
        .put_parameter()
        .name(physical(state, PARAM))
        .value("off")
        .overwrite(true)
        .send()
        .await
        .expect("PutParameter");
    aws_sdk_dynamodb::Client::new(conf)
        .update_table()
        .table_name(physical(state, TABLE))
        .billing_mode(BillingMode::Provisioned)
        .provisioned_throughput(
            ProvisionedThroughput::builder()
                .read_capacity_units(5)
                .write_capacity_units(5)
                .build()
                .expect("throughput"),
        )
        .send()
        .await
        .expect("UpdateTable");
    aws_sdk_iam::Client::new(conf)
        .update_role()
        .role_name(physical(state, ROLE))
        .description("changed role")
        .send()
        .await
        .expect("UpdateRole");
    aws_sdk_lambda::Client::new(conf)
        .update_function_configuration()
        .function_name(physical(state, FUNCTION))
        .timeout(30)
        .send()
        .await
        .expect("UpdateFunctionConfiguration");
    aws_sdk_s3::Client::new(conf)
        .put_bucket_tagging()
        .bucket(physical(state, BUCKET_ID))
        .tagging(
            Tagging::builder()
                .tag_set(
                    Tag::builder()
                        .key("team")
                        .value("console")
                        .build()
                        .expect("tag"),
                )
                .build()
                .expect("tagging"),
        )
        .send()
        .await
        .expect("PutBucketTagging");
}

fn expected_drift() -> BTreeSet<(String, String)> {
    [
        (QUEUE, "VisibilityTimeout"),
        (TOPIC, "DisplayName"),
        (PARAM, "Value"),
        (TABLE, "BillingMode"),
        (ROLE, "Description"),
        (FUNCTION, "Timeout"),
        (BUCKET_ID, "Tags"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_owned(), b.to_owned()))
    .collect()
}

async fn assert_no_plaintext(bucket: &str) {
    for (key, body) in support::app::every_object_version(bucket).await {
        for secret in [TOKEN, PASSWORD] {
            assert!(
                !body.contains(secret),
                "{key} holds a plaintext secret: {body}"
            );
        }
    }
}

#[tokio::test]
async fn drift_names_each_out_of_band_change_and_accept_and_revert_settle_it() {
    let conf = sdk_config().await;
    let sm = aws_sdk_secretsmanager::Client::new(&conf);
    let _ = sm
        .create_secret()
        .name("cdkd-drift-token")
        .secret_string(TOKEN)
        .send()
        .await;
    let bucket = unique_name("drift");
    let (code, text) = run("bootstrap", APP, &bucket, &[], None);
    assert_eq!(code, 0, "bootstrap: {text}");
    let password = format!("ApiPassword={PASSWORD}");
    let (code, text) = run("deploy", APP, &bucket, &["--parameters", &password], None);
    assert_eq!(code, 0, "deploy: {text}");

    // A baseline after each create, with the secrets in their stored spelling.
    let state = record(STACK, &bucket);
    for (id, r) in state["resources"].as_object().expect("resources") {
        assert!(
            r["observedProperties"].is_object(),
            "{id} has no baseline: {r}"
        );
    }
    let env = &state["resources"][FUNCTION]["observedProperties"]["Environment"]["Variables"];
    assert_eq!(
        env["TOKEN"], "{{resolve:secretsmanager:cdkd-drift-token:SecretString:::}}",
        "{env}"
    );
    assert_eq!(env["PASSWORD"], "***", "{env}");

    // Untouched: clean.
    let (code, report) = drift_json(&bucket, &[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        drifted(&report),
        (BTreeSet::new(), BTreeSet::new()),
        "{report}"
    );
    let before = live_values(&conf, &state).await;

    change_out_of_band(&conf, &state).await;
    aws_sdk_sqs::Client::new(&conf)
        .delete_queue()
        .queue_url(physical(&state, SCRATCH))
        .send()
        .await
        .expect("DeleteQueue");
    let changed = live_values(&conf, &state).await;
    let (code, report) = drift_json(&bucket, &[]);
    assert_eq!(code, 1, "{report}");
    let (props, deleted) = drifted(&report);
    assert_eq!(props, expected_drift(), "{report}");
    assert_eq!(deleted, [SCRATCH.to_owned()].into(), "{report}");
    // The human report names them too.
    let (code, text) = run("drift", APP, &bucket, &[STACK], None);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!("~ {QUEUE}")) && text.contains(SCRATCH),
        "{text}"
    );

    // --dry-run changes nothing, in AWS or in state.
    let recorded = record(STACK, &bucket);
    for flag in ["--revert", "--accept"] {
        let (code, text) = run("drift", APP, &bucket, &[STACK, flag, "--dry-run"], None);
        assert_eq!(code, 0, "{flag} --dry-run: {text}");
        assert!(text.contains("would"), "{text}");
    }
    assert_eq!(live_values(&conf, &state).await, changed);
    assert_eq!(record(STACK, &bucket), recorded);

    // --revert: AWS takes the template's values back; the deleted queue cannot be updated
    // back (exit 2, its remedy printed).
    let (code, text) = run("drift", APP, &bucket, &[STACK, "--revert", "--yes"], None);
    assert_eq!(code, 2, "revert: {text}");
    assert!(text.contains("state orphan"), "{text}");
    assert_eq!(live_values(&conf, &state).await, before);
    let (_, report) = drift_json(&bucket, &[]);
    assert_eq!(
        drifted(&report),
        (BTreeSet::new(), [SCRATCH.to_owned()].into()),
        "{report}"
    );
    let (code, text) = state_command(&bucket, &["orphan", STACK, "--resource", SCRATCH]);
    assert_eq!(code, 0, "orphan: {text}");
    let (code, report) = drift_json(&bucket, &[]);
    assert_eq!(code, 0, "{report}");

    // --accept: state takes AWS's values, and drift is clean again.
    change_out_of_band(&conf, &state).await;
    let (code, text) = run("drift", APP, &bucket, &[STACK, "--accept", "--yes"], None);
    assert_eq!(code, 0, "accept: {text}");
    let (code, report) = drift_json(&bucket, &[]);
    assert_eq!(code, 0, "{report}");
    let accepted = record(STACK, &bucket);
    let queue = &accepted["resources"][QUEUE];
    assert_eq!(
        queue["properties"]["VisibilityTimeout"]
            .to_string()
            .trim_matches('"'),
        "99"
    );
    assert_eq!(
        queue["observedProperties"]["VisibilityTimeout"]
            .to_string()
            .trim_matches('"'),
        "99"
    );
    assert_eq!(live_values(&conf, &state).await, changed);

    // refresh-observed re-reads without changing AWS, and keeps the secrets out.
    let (code, text) = state_command(&bucket, &["refresh-observed", STACK]);
    assert_eq!(code, 0, "refresh-observed: {text}");
    assert_eq!(live_values(&conf, &state).await, changed);
    assert_no_plaintext(&bucket).await;

    // Cleanup only (destroy has its own tests).
    let _ = run("destroy", APP, &bucket, &["--all", "--force"], None);
}

/// `cdkd state <args> --state-bucket B`: (exit code, stdout+stderr).
fn state_command(bucket: &str, args: &[&str]) -> (i32, String) {
    let out = support::cdkd()
        .arg("state")
        .args(args)
        .args(["--state-bucket", bucket])
        .output()
        .expect("runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn queues(b_timeout: u32) -> Value {
    json!({"Resources": {
        "A": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 30}},
        "B": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": b_timeout}}
    }})
}

#[tokio::test]
async fn a_deploy_keeps_another_writers_baseline_and_records_its_own() {
    let app = App::new("drift-keep");
    let stack = format!("Keep{}", unique_name("s").replace('-', "x"));
    app.write_stacks(&[(&stack, &queues(30), &[])]);
    let (code, _, err) = app.deploy(&[]);
    assert_eq!(code, 0, "{err}");

    // An upstream writer's record (schema v8) with a baseline cdkd did not capture.
    let mut state = app.record(&stack);
    let region = state["region"].as_str().expect("region").to_owned();
    let upstream = json!({"VisibilityTimeout": "30", "RecordedUpstream": "yes"});
    state["version"] = json!(8);
    state["resources"]["A"]["observedProperties"] = upstream.clone();
    s3_client()
        .await
        .put_object()
        .bucket(&app.bucket)
        .key(format!("cdkd/{stack}/{region}/state.json"))
        .body(state.to_string().into_bytes().into())
        .send()
        .await
        .expect("put state");

    // B is updated: A's baseline stays as its writer left it, B's is read after the update.
    app.write_stacks(&[(&stack, &queues(99), &[])]);
    let (code, _, err) = app.deploy(&[]);
    assert_eq!(code, 0, "{err}");
    let state = app.record(&stack);
    assert_eq!(
        state["resources"]["A"]["observedProperties"], upstream,
        "{state}"
    );
    let b = &state["resources"]["B"]["observedProperties"]["VisibilityTimeout"];
    assert_eq!(b.to_string().trim_matches('"'), "99", "{state}");

    // --no-capture-observed-state: the update reads nothing back; refresh-observed does.
    app.write_stacks(&[(&stack, &queues(77), &[])]);
    let (code, _, err) = app.deploy(&["--no-capture-observed-state"]);
    assert_eq!(code, 0, "{err}");
    let state = app.record(&stack);
    assert!(
        state["resources"]["B"].get("observedProperties").is_none(),
        "{state}"
    );
    let (code, text) = state_command(&app.bucket, &["refresh-observed", &stack]);
    assert_eq!(code, 0, "{text}");
    let state = app.record(&stack);
    let b = &state["resources"]["B"]["observedProperties"]["VisibilityTimeout"];
    assert_eq!(b.to_string().trim_matches('"'), "77", "{state}");
    let (code, _, err) = app.deploy(&[]);
    assert_eq!(code, 0, "an unchanged deploy: {err}");
}
