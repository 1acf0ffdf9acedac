//! Stack-level tags end to end: the `tags` fixture (fixtures/apps/tags) sets `Team` through
//! the stack's `tags` prop (manifest only) and `CostCenter` through `Tags.of(stack).add`;
//! its second variant (tags-v2) changes both values. The emulator must show the stack tags on
//! the queue, the topic and the parameter (the types moto reports tags for), the queue that
//! tags `Team` itself keeps its own value, a changed stack tag updates the resources in
//! place, and `diff --fail` finds nothing left to do.

use crate::support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use support::{cdkd, sdk_config, unique_name};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/apps/{name}/cdk.out"))
}

fn run(args: &[&str], bucket: &str) -> (i32, String, String) {
    let out = cdkd()
        .args(args)
        .args(["--state-bucket", bucket])
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

fn deploy(variant: &str, bucket: &str) {
    let dir = fixture(variant);
    let (code, _, stderr) = run(&["deploy", "--all", "--app", dir.to_str().unwrap()], bucket);
    assert_eq!(code, 0, "{variant} deploy failed:\n{stderr}");
}

fn outputs(bucket: &str) -> Value {
    let (code, stdout, stderr) = run(&["state", "show", "TagsStack", "--json"], bucket);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).expect("state json");
    let state = v.get("state").filter(|s| s.is_object()).unwrap_or(&v);
    state["outputs"].clone()
}

struct Tags {
    queue: BTreeMap<String, String>,
    own_queue: BTreeMap<String, String>,
    topic: BTreeMap<String, String>,
    param: BTreeMap<String, String>,
}

async fn tags(outs: &Value) -> Tags {
    let config = sdk_config().await;
    let out = |name: &str| {
        outs[name]
            .as_str()
            .unwrap_or_else(|| panic!("output {name}: {outs}"))
            .to_owned()
    };
    let sqs = aws_sdk_sqs::Client::new(&config);
    let queue_tags = |url: String| {
        let sqs = sqs.clone();
        async move {
            let got = sqs.list_queue_tags().queue_url(&url).send().await;
            let got = got.unwrap_or_else(|e| panic!("ListQueueTags {url}: {e:?}"));
            got.tags()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .collect()
        }
    };
    let sns = aws_sdk_sns::Client::new(&config);
    let topic = sns
        .list_tags_for_resource()
        .resource_arn(out("TopicArn"))
        .send()
        .await
        .expect("SNS ListTagsForResource");
    let ssm = aws_sdk_ssm::Client::new(&config);
    let param = ssm
        .list_tags_for_resource()
        .resource_type(aws_sdk_ssm::types::ResourceTypeForTagging::Parameter)
        .resource_id(out("ParamName"))
        .send()
        .await
        .expect("SSM ListTagsForResource");
    Tags {
        queue: queue_tags(out("QueueUrl")).await,
        own_queue: queue_tags(out("OwnQueueUrl")).await,
        topic: topic
            .tags()
            .iter()
            .map(|t| (t.key().to_owned(), t.value().to_owned()))
            .collect(),
        param: param
            .tag_list()
            .iter()
            .map(|t| (t.key().to_owned(), t.value().to_owned()))
            .collect(),
    }
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn stack_tags_reach_every_taggable_resource_and_a_change_updates_them() {
    let bucket = unique_name("cdkd-tags");
    let (code, _, stderr) = run(&["bootstrap"], &bucket);
    assert_eq!(code, 0, "{stderr}");

    deploy("tags", &bucket);
    let before = outputs(&bucket);
    let got = tags(&before).await;
    let stack = map(&[("CostCenter", "cc-1"), ("Team", "blue")]);
    assert_eq!(got.queue, stack, "queue");
    assert_eq!(got.topic, stack, "topic");
    assert_eq!(got.param, stack, "parameter (a map-shaped Tags)");
    assert_eq!(
        got.own_queue,
        map(&[("CostCenter", "cc-1"), ("Team", "own")]),
        "the resource's own tag wins"
    );

    // Both stack tag values change: every tagged resource is updated in place.
    deploy("tags-v2", &bucket);
    let after = outputs(&bucket);
    assert_eq!(before["QueueUrl"], after["QueueUrl"], "same queue: {after}");
    assert_eq!(before["TopicArn"], after["TopicArn"], "same topic: {after}");
    let got = tags(&after).await;
    let stack = map(&[("CostCenter", "cc-2"), ("Team", "green")]);
    assert_eq!(got.queue, stack, "queue after the change");
    assert_eq!(got.topic, stack, "topic after the change");
    assert_eq!(got.param, stack, "parameter after the change");
    assert_eq!(
        got.own_queue,
        map(&[("CostCenter", "cc-2"), ("Team", "own")])
    );

    // The diff applies the stack tags as the deploy does: nothing left to change.
    let dir = fixture("tags-v2");
    let (code, stdout, stderr) = run(
        &[
            "diff",
            "--fail",
            "--app",
            dir.to_str().unwrap(),
            "TagsStack",
        ],
        &bucket,
    );
    assert_eq!(code, 0, "diff --fail after the deploy:\n{stdout}\n{stderr}");
    // And against the first variant it names the tag change.
    let dir = fixture("tags");
    let (code, stdout, _) = run(
        &[
            "diff",
            "--fail",
            "--app",
            dir.to_str().unwrap(),
            "TagsStack",
        ],
        &bucket,
    );
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("Tags"), "{stdout}");

    let dir = fixture("tags-v2");
    let (code, _, stderr) = run(
        &[
            "destroy",
            "--all",
            "--force",
            "--app",
            dir.to_str().unwrap(),
        ],
        &bucket,
    );
    assert_eq!(code, 0, "{stderr}");
}
