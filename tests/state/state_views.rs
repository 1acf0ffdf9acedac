//! Upstream cdkd's `state` views and multi-stack forms, through the binary against the
//! emulator's S3: `state list --long / --tree`, `state resources --long`, `state show
//! --show-nested`, and several stacks on `force-unlock`, `state orphan` and `state destroy`.

use crate::support;

use serde_json::{json, Value};
use support::cdkd;

use super::state_backend::{bucket_with_versioning, get, put};

fn record(stack: &str, resources: Value, extra: Value) -> Vec<u8> {
    let mut r = json!({
        "version": 11, "stackName": stack, "region": "us-east-1",
        "resources": resources, "lastModified": 1_700_000_000_000u64
    });
    for (k, v) in extra.as_object().expect("object") {
        r[k] = v.clone();
    }
    r.to_string().into_bytes()
}

fn run(bucket: &str, args: &[&str]) -> (i32, String, String) {
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

#[tokio::test]
async fn state_views_show_counts_locks_the_nested_tree_and_resource_detail() {
    let (client, bucket) = bucket_with_versioning().await;
    let parent = json!({
        "Queue": {"resourceType": "AWS::SQS::Queue", "physicalId": "https://q/1",
            "properties": {}, "attributes": {"Arn": "arn:aws:sqs:us-east-1:1:q"},
            "provisionedBy": "sdk"},
        "Child": {"resourceType": "AWS::CloudFormation::Stack", "physicalId": "Parent~Child",
            "properties": {}, "dependencies": ["Queue"]}
    });
    put(
        &client,
        &bucket,
        "cdkd/Parent/us-east-1/state.json",
        record("Parent", parent, json!({})),
    )
    .await;
    let child = json!({"Topic": {"resourceType": "AWS::SNS::Topic", "physicalId": "arn:t",
        "properties": {}}});
    put(
        &client,
        &bucket,
        "cdkd/Parent~Child/us-east-1/state.json",
        record(
            "Parent~Child",
            child,
            json!({"parentStack": "Parent",
            "parentLogicalId": "Child", "parentRegion": "us-east-1"}),
        ),
    )
    .await;
    put(
        &client,
        &bucket,
        "cdkd/Solo/us-east-1/state.json",
        record("Solo", json!({}), json!({})),
    )
    .await;
    let lock = r#"{"owner":"someone@elsewhere:1","timestamp":1700000000000,"expiresAt":4102444800000,"operation":"deploy"}"#;
    put(
        &client,
        &bucket,
        "cdkd/Solo/us-east-1/lock.json",
        lock.as_bytes().to_vec(),
    )
    .await;

    let (code, out, err) = run(&bucket, &["state", "list", "--long"]);
    assert_eq!(code, 0, "{err}");
    let blocks: Vec<&str> = out.split("\n").collect();
    let at = |name: &str| blocks.iter().position(|l| l.starts_with(name)).expect(name);
    let parent_at = at("Parent (us-east-1)");
    assert_eq!(blocks[parent_at + 1].trim(), "Resources:     2", "{out}");
    assert!(
        blocks[parent_at + 2].contains("2023-11-14T22:13:20Z"),
        "{out}"
    );
    assert_eq!(
        blocks[parent_at + 3].trim(),
        "Lock:          unlocked",
        "{out}"
    );
    let solo_at = at("Solo (us-east-1)");
    assert!(
        blocks[solo_at + 3].contains("locked by someone@elsewhere:1"),
        "{out}"
    );
    let (_, out, _) = run(&bucket, &["state", "list", "--long", "--json"]);
    let rows: Value = serde_json::from_str(&out).expect("json");
    let solo = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["stackName"] == "Solo")
        .unwrap();
    assert_eq!(
        (solo["locked"].clone(), solo["resourceCount"].clone()),
        (json!(true), json!(0))
    );

    let (code, out, err) = run(&bucket, &["state", "list", "--tree"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        ["Parent (us-east-1)", "└─ Parent~Child", "Solo (us-east-1)"],
        "{out}"
    );
    let (_, out, _) = run(&bucket, &["state", "list", "--tree", "--json"]);
    let tree: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(tree[0]["children"][0]["stackName"], "Parent~Child");
    let (code, _, _) = run(&bucket, &["state", "list", "--tree", "--long"]);
    assert_eq!(code, 1, "--tree and --long are one or the other");

    let (code, out, err) = run(&bucket, &["state", "resources", "Parent", "--long"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Queue\n  Type:          AWS::SQS::Queue"),
        "{out}"
    );
    assert!(out.contains("    Arn = arn:aws:sqs:us-east-1:1:q"), "{out}");
    assert!(out.contains("  Dependencies:  Queue"), "{out}");

    let (code, out, err) = run(&bucket, &["state", "show", "Parent", "--show-nested"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Stack:         Parent\n"), "{out}");
    assert!(out.contains("Stack:         Parent~Child\n"), "{out}");
    assert!(out.contains("Parent stack:  Parent"), "{out}");
    assert!(out.contains("Topic  AWS::SNS::Topic  arn:t"), "{out}");
    let (_, plain, _) = run(&bucket, &["state", "show", "Parent"]);
    assert!(
        !plain.contains("Stack:         Parent~Child"),
        "without the flag no child: {plain}"
    );
    let (_, out, _) = run(
        &bucket,
        &["state", "show", "Parent", "--show-nested", "--json"],
    );
    let tree: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(tree["state"]["stackName"], "Parent");
    assert_eq!(tree["children"][0]["logicalId"], "Child");
    assert_eq!(tree["children"][0]["state"]["stackName"], "Parent~Child");
}

#[tokio::test]
async fn force_unlock_state_orphan_and_state_destroy_take_several_stacks() {
    let (client, bucket) = bucket_with_versioning().await;
    let lock = r#"{"owner":"someone@elsewhere:1","timestamp":1700000000000,"expiresAt":4102444800000,"operation":"deploy"}"#;
    for stack in ["A", "B", "C", "D"] {
        let key = format!("cdkd/{stack}/us-east-1/state.json");
        put(&client, &bucket, &key, record(stack, json!({}), json!({}))).await;
    }
    for stack in ["A", "B"] {
        let key = format!("cdkd/{stack}/us-east-1/lock.json");
        put(&client, &bucket, &key, lock.as_bytes().to_vec()).await;
    }
    let (code, _, err) = run(&bucket, &["force-unlock", "A", "B"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("Unlocked stack A (us-east-1)"), "{err}");
    assert!(err.contains("Unlocked stack B (us-east-1)"), "{err}");
    for stack in ["A", "B"] {
        assert!(get(
            &client,
            &bucket,
            &format!("cdkd/{stack}/us-east-1/lock.json")
        )
        .await
        .is_none());
    }

    // Refused without a confirmation, for every stack named; then both go.
    let (code, _, err) = run(&bucket, &["state", "orphan", "A", "B"]);
    assert_ne!(code, 0, "{err}");
    assert!(get(&client, &bucket, "cdkd/A/us-east-1/state.json")
        .await
        .is_some());
    let (code, _, err) = run(&bucket, &["state", "orphan", "A", "B", "--yes"]);
    assert_eq!(code, 0, "{err}");
    for stack in ["A", "B"] {
        let key = format!("cdkd/{stack}/us-east-1/state.json");
        assert!(get(&client, &bucket, &key).await.is_none(), "{stack}");
    }
    let (code, _, err) = run(&bucket, &["state", "orphan", "C", "D", "--resource", "X"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("give one stack"), "{err}");

    // One stack of three has no record: the others are destroyed, the exit is partial.
    let (code, _, err) = run(&bucket, &["state", "destroy", "C", "Nope", "D", "--force"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("Nope"), "{err}");
    for stack in ["C", "D"] {
        let key = format!("cdkd/{stack}/us-east-1/state.json");
        assert!(get(&client, &bucket, &key).await.is_none(), "{stack}");
    }
}
