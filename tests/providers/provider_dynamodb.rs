//! The `AWS::DynamoDB::Table` SDK provider against the emulator (moto: tables are ACTIVE at
//! once; it has no contributor insights or Kinesis streaming destinations, and ignores SSE,
//! TableClass and on-demand throughput in UpdateTable, so those are not exercised here).
//!
//! Run: `eval "$(./scripts/emulator start)" && cargo test --test provider_dynamodb`.

use crate::support;

use std::sync::Arc;

use aws_sdk_dynamodb::types::{
    BillingMode, PointInTimeRecoveryStatus, TableDescription, TimeToLiveStatus,
};
use cdkd::aws::{ClientOptions, Clients};
use cdkd::provider::{Provider, ProviderContext, ResourceRequest, UpdateOutcome};
use serde_json::{json, Map, Value};

const TABLE: &str = "AWS::DynamoDB::Table";

struct Env {
    clients: Clients,
    stack: String,
    ddb: aws_sdk_dynamodb::Client,
}

impl Env {
    async fn new() -> Self {
        let sdk = support::sdk_config().await;
        Env {
            clients: Clients::load(&ClientOptions::default()).await,
            stack: support::unique_name("DdbStack"),
            ddb: aws_sdk_dynamodb::Client::new(&sdk),
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

    async fn describe(&self, name: &str) -> TableDescription {
        self.ddb
            .describe_table()
            .table_name(name)
            .send()
            .await
            .expect("DescribeTable")
            .table
            .expect("table")
    }

    async fn tags(&self, arn: &str) -> Vec<(String, String)> {
        let mut tags: Vec<(String, String)> = self
            .ddb
            .list_tags_of_resource()
            .resource_arn(arn)
            .send()
            .await
            .expect("ListTagsOfResource")
            .tags()
            .iter()
            .map(|t| (t.key().to_owned(), t.value().to_owned()))
            .collect();
        tags.sort();
        tags
    }
}

fn provider() -> Arc<dyn Provider> {
    cdkd::provider::sdk::all()
        .into_iter()
        .find(|p| p.resource_types().contains(&TABLE))
        .expect("a DynamoDB table provider")
}

fn req<'a>(logical_id: &'a str, props: &'a Map<String, Value>) -> ResourceRequest<'a> {
    ResourceRequest {
        logical_id,
        resource_type: TABLE,
        properties: props,
        client_token: None,
    }
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

fn gsi(name: &str, key: &str) -> Value {
    json!({
        "IndexName": name,
        "KeySchema": [{"AttributeName": key, "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "ALL"},
    })
}

fn base(name: &str) -> Value {
    json!({
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "g1", "AttributeType": "S"},
        ],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "GlobalSecondaryIndexes": [gsi("ByG1", "g1")],
        "TimeToLiveSpecification": {"AttributeName": "expires", "Enabled": true},
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true},
        "Tags": [{"Key": "team", "Value": "a"}, {"Key": "env", "Value": "test"}],
    })
}

fn set(props: &Map<String, Value>, key: &str, value: Value) -> Map<String, Value> {
    let mut m = props.clone();
    m.insert(key.into(), value);
    m
}

#[tokio::test]
async fn table_lifecycle_in_place_updates_and_replacement() {
    let env = Env::new().await;
    let p = provider();
    let ctx = env.ctx();
    let name = support::unique_name("ddb-table");
    let v1 = obj(base(&name));

    // Create: Ref is the name, Arn is what DescribeTable says, no stream yet.
    let made = p.create(&ctx, &req("Table", &v1)).await.expect("create");
    assert_eq!(made.physical_id, name);
    assert_eq!(
        p.ref_value(TABLE, &made.physical_id, &made.attributes),
        json!(name)
    );
    let t = env.describe(&name).await;
    assert_eq!(
        made.attributes.get("Arn"),
        Some(&json!(t.table_arn().expect("arn")))
    );
    assert!(!made.attributes.contains_key("StreamArn"));
    assert_eq!(t.global_secondary_indexes().len(), 1);
    let arn = t.table_arn().expect("arn").to_owned();
    assert_eq!(
        env.tags(&arn).await,
        [("env".into(), "test".into()), ("team".into(), "a".into())]
    );

    // Read: CloudFormation's names.
    let read = p
        .read(&ctx, &req("Table", &v1), &name)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["TableName"], json!(name));
    assert_eq!(read["BillingMode"], json!("PAY_PER_REQUEST"));
    assert_eq!(read["KeySchema"], v1["KeySchema"]);
    assert_eq!(
        read["GlobalSecondaryIndexes"][0]["IndexName"],
        json!("ByG1")
    );
    assert_eq!(
        read["TimeToLiveSpecification"],
        json!({"AttributeName": "expires", "Enabled": true})
    );
    assert_eq!(
        read["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"],
        json!(true)
    );
    assert_eq!(
        read["Tags"],
        json!([{"Key": "env", "Value": "test"}, {"Key": "team", "Value": "a"}])
    );

    // In place: stream on, index swapped, TTL moved, PITR off, tags changed, provisioned
    // capacity, deletion protection.
    let mut v2 = set(
        &v1,
        "StreamSpecification",
        json!({"StreamViewType": "NEW_AND_OLD_IMAGES"}),
    );
    v2 = set(
        &v2,
        "AttributeDefinitions",
        json!([
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "g2", "AttributeType": "N"},
        ]),
    );
    v2 = set(&v2, "GlobalSecondaryIndexes", json!([gsi("ByG2", "g2")]));
    v2 = set(
        &v2,
        "TimeToLiveSpecification",
        json!({"AttributeName": "ttl", "Enabled": true}),
    );
    v2 = set(
        &v2,
        "PointInTimeRecoverySpecification",
        json!({"PointInTimeRecoveryEnabled": false}),
    );
    v2 = set(
        &v2,
        "Tags",
        json!([{"Key": "team", "Value": "b"}, {"Key": "owner", "Value": "me"}]),
    );
    v2 = set(&v2, "DeletionProtectionEnabled", json!(true));
    let out = p
        .update(&ctx, &req("Table", &v2), &name, &v1)
        .await
        .expect("update");
    let UpdateOutcome::Updated(updated) = out else {
        panic!("expected an in-place update, got {out:?}");
    };
    assert_eq!(updated.physical_id, name);
    let t = env.describe(&name).await;
    assert_eq!(updated.attributes.get("Arn"), Some(&json!(arn)));
    let stream_arn = t.latest_stream_arn().expect("a stream");
    assert_eq!(
        updated.attributes.get("StreamArn"),
        Some(&json!(stream_arn))
    );
    assert!(t
        .stream_specification()
        .expect("stream spec")
        .stream_enabled());
    let names: Vec<&str> = t
        .global_secondary_indexes()
        .iter()
        .filter_map(|g| g.index_name())
        .collect();
    assert_eq!(names, ["ByG2"]);
    assert_eq!(t.deletion_protection_enabled(), Some(true));
    let ttl = env
        .ddb
        .describe_time_to_live()
        .table_name(&name)
        .send()
        .await
        .expect("ttl");
    let ttl = ttl.time_to_live_description().expect("ttl description");
    assert_eq!(
        (ttl.time_to_live_status(), ttl.attribute_name()),
        (Some(&TimeToLiveStatus::Enabled), Some("ttl"))
    );
    let backups = env
        .ddb
        .describe_continuous_backups()
        .table_name(&name)
        .send()
        .await
        .expect("backups");
    let pitr = backups
        .continuous_backups_description()
        .and_then(|d| d.point_in_time_recovery_description())
        .and_then(|d| d.point_in_time_recovery_status());
    assert_eq!(pitr, Some(&PointInTimeRecoveryStatus::Disabled));
    assert_eq!(
        env.tags(&arn).await,
        [("owner".into(), "me".into()), ("team".into(), "b".into())]
    );

    // Billing mode to provisioned (the index gets capacity too), protection off again.
    let mut v3 = set(&v2, "BillingMode", json!("PROVISIONED"));
    v3 = set(
        &v3,
        "ProvisionedThroughput",
        json!({"ReadCapacityUnits": 3, "WriteCapacityUnits": 4}),
    );
    let mut g = gsi("ByG2", "g2");
    g["ProvisionedThroughput"] = json!({"ReadCapacityUnits": 1, "WriteCapacityUnits": 2});
    v3 = set(&v3, "GlobalSecondaryIndexes", json!([g]));
    v3 = set(&v3, "DeletionProtectionEnabled", json!(false));
    let out = p
        .update(&ctx, &req("Table", &v3), &name, &v2)
        .await
        .expect("update to provisioned");
    assert!(matches!(out, UpdateOutcome::Updated(_)), "{out:?}");
    let t = env.describe(&name).await;
    assert_eq!(
        t.billing_mode_summary().and_then(|b| b.billing_mode()),
        Some(&BillingMode::Provisioned)
    );
    let tp = t.provisioned_throughput().expect("throughput");
    assert_eq!(
        (tp.read_capacity_units(), tp.write_capacity_units()),
        (Some(3), Some(4))
    );
    assert_eq!(t.deletion_protection_enabled(), Some(false));
    let read = p
        .read(&ctx, &req("Table", &v3), &name)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(
        read["ProvisionedThroughput"],
        json!({"ReadCapacityUnits": 3, "WriteCapacityUnits": 4})
    );
    assert_eq!(
        read["StreamSpecification"],
        json!({"StreamViewType": "NEW_AND_OLD_IMAGES"})
    );

    // Replacing changes.
    let key_change = set(
        &v3,
        "KeySchema",
        json!([{"AttributeName": "pk", "KeyType": "HASH"}]),
    );
    let renamed = set(&v3, "TableName", json!(format!("{name}-2")));
    let lsi = set(
        &v3,
        "LocalSecondaryIndexes",
        json!([{"IndexName": "L", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "g2", "KeyType": "RANGE"}], "Projection": {"ProjectionType": "KEYS_ONLY"}}]),
    );
    let retyped = set(
        &v3,
        "AttributeDefinitions",
        json!([
            {"AttributeName": "pk", "AttributeType": "N"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "g2", "AttributeType": "N"},
        ]),
    );
    for desired in [&key_change, &renamed, &lsi, &retyped] {
        let out = p
            .update(&ctx, &req("Table", desired), &name, &v3)
            .await
            .expect("update");
        assert!(
            matches!(out, UpdateOutcome::NeedsReplacement { .. }),
            "{out:?}"
        );
    }

    // Delete, and delete again.
    p.delete(&ctx, &req("Table", &v3), &name)
        .await
        .expect("delete");
    assert!(env
        .ddb
        .describe_table()
        .table_name(&name)
        .send()
        .await
        .is_err());
    p.delete(&ctx, &req("Table", &v3), &name)
        .await
        .expect("delete again");
    assert!(p
        .read(&ctx, &req("Table", &v3), &name)
        .await
        .expect("read")
        .is_none());
}

#[tokio::test]
async fn generated_name_stream_on_create_and_import() {
    let env = Env::new().await;
    let p = provider();
    let ctx = env.ctx();
    let props = obj(json!({
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
        "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
        "StreamSpecification": {"StreamViewType": "KEYS_ONLY"},
    }));
    let made = p
        .create(&ctx, &req("Orders", &props))
        .await
        .expect("create");
    assert!(
        made.physical_id
            .starts_with(&format!("{}-Orders-", env.stack)),
        "{}",
        made.physical_id
    );
    let t = env.describe(&made.physical_id).await;
    assert_eq!(
        made.attributes.get("Arn"),
        Some(&json!(t.table_arn().expect("arn")))
    );
    assert_eq!(
        made.attributes.get("StreamArn"),
        Some(&json!(t.latest_stream_arn().expect("stream")))
    );

    let imported = p
        .import(&ctx, &req("Orders", &props), &made.physical_id)
        .await
        .expect("import");
    assert_eq!(imported, made);

    // Stream off in place: StreamArn is no longer an attribute.
    let mut off = props.clone();
    off.remove("StreamSpecification");
    let out = p
        .update(&ctx, &req("Orders", &off), &made.physical_id, &props)
        .await
        .expect("update");
    let UpdateOutcome::Updated(updated) = out else {
        panic!("expected an in-place update, got {out:?}");
    };
    assert!(!updated.attributes.contains_key("StreamArn"));
    assert!(!env
        .describe(&made.physical_id)
        .await
        .stream_specification()
        .is_some_and(|s| s.stream_enabled()));

    p.delete(&ctx, &req("Orders", &off), &made.physical_id)
        .await
        .expect("delete");
    p.delete(&ctx, &req("Orders", &off), &made.physical_id)
        .await
        .expect("delete again");
    let err = p
        .import(&ctx, &req("Orders", &off), &made.physical_id)
        .await
        .expect_err("gone");
    assert!(
        err.to_string()
            .starts_with("Orders (AWS::DynamoDB::Table): "),
        "{err}"
    );
}
