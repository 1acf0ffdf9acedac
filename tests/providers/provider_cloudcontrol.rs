//! The Cloud Control provider through the real aws-sdk-cloudcontrol client against the
//! project's Cloud Control emulator: lifecycles, a write-only property, a composite identifier,
//! slow requests, failures and throttling.

use crate::support;

use std::time::Duration;

use cdkd::aws::{ClientOptions, Clients};
use cdkd::provider::cloudcontrol::{CloudControlProvider, PollPolicy};
use cdkd::provider::{Provider, ProviderContext, ProviderError, ResourceRequest, UpdateOutcome};
use serde_json::{json, Map, Value};
use support::http::http;
use support::unique_name;

fn provider() -> CloudControlProvider {
    CloudControlProvider {
        poll: PollPolicy {
            first_interval: Duration::from_millis(20),
            max_interval: Duration::from_millis(100),
            timeout: Duration::from_secs(30),
            notice_every: Duration::from_secs(60),
        },
    }
}

async fn clients() -> Clients {
    support::emulator_env();
    Clients::load(&ClientOptions::default()).await
}

fn ctx(clients: &Clients) -> ProviderContext<'_> {
    ProviderContext {
        clients,
        stack_name: "CcStack",
        region: "us-east-1",
        account_id: "123456789012",
        partition: "aws",
        no_wait: false,
    }
}

fn props(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

fn fault(body: Value) {
    let (status, text) = http(
        "POST",
        "/_cloudcontrol/faults",
        &[("Content-Type", "application/json")],
        &body.to_string(),
    );
    assert_eq!(status, 200, "{text}");
}

#[tokio::test]
async fn a_queue_lives_its_whole_life_through_cloud_control() {
    let clients = clients().await;
    let ctx = ctx(&clients);
    let p = provider();
    let name = unique_name("ccq");
    let desired = props(json!({"QueueName": name, "VisibilityTimeout": 30}));
    let req = ResourceRequest {
        logical_id: "Queue",
        resource_type: "AWS::SQS::Queue",
        properties: &desired,
        client_token: None,
    };
    let created = p.create(&ctx, &req).await.expect("create");
    assert!(
        created.physical_id.ends_with(&name),
        "the queue URL is the identifier: {}",
        created.physical_id
    );
    assert_eq!(
        created.attributes["Arn"],
        format!("arn:aws:sqs:us-east-1:123456789012:{name}")
    );
    assert_eq!(created.attributes["QueueUrl"], created.physical_id);

    let updated_props = props(json!({"QueueName": name, "VisibilityTimeout": 45}));
    let update_req = ResourceRequest {
        properties: &updated_props,
        ..req.clone()
    };
    match p
        .update(&ctx, &update_req, &created.physical_id, &desired)
        .await
        .expect("update")
    {
        UpdateOutcome::Updated(after) => assert_eq!(after.physical_id, created.physical_id),
        other => panic!("expected an in-place update, got {other:?}"),
    }
    let read = p
        .read(&ctx, &req, &created.physical_id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["VisibilityTimeout"], 45);

    let renamed = props(json!({"QueueName": format!("{name}-2"), "VisibilityTimeout": 45}));
    let rename_req = ResourceRequest {
        properties: &renamed,
        ..req.clone()
    };
    assert!(matches!(
        p.update(&ctx, &rename_req, &created.physical_id, &updated_props)
            .await
            .expect("update"),
        UpdateOutcome::NeedsReplacement { .. }
    ));

    p.delete(&ctx, &req, &created.physical_id)
        .await
        .expect("delete");
    assert!(p
        .read(&ctx, &req, &created.physical_id)
        .await
        .expect("read")
        .is_none());
    p.delete(&ctx, &req, &created.physical_id)
        .await
        .expect("delete again is success");
}

#[tokio::test]
async fn a_composite_identifier_and_a_write_only_property_survive_an_update() {
    let clients = clients().await;
    let ctx = ctx(&clients);
    let p = provider();
    let api_id = unique_name("api");
    let desired = props(json!({"ApiId": api_id, "RouteKey": "GET /a", "AuthorizerId": "auth1"}));
    let req = ResourceRequest {
        logical_id: "Route",
        resource_type: "AWS::ApiGatewayV2::Route",
        properties: &desired,
        client_token: None,
    };
    let created = p.create(&ctx, &req).await.expect("create");
    let parts: Vec<&str> = created.physical_id.split('|').collect();
    assert_eq!(
        parts.len(),
        2,
        "composite id joined with |: {}",
        created.physical_id
    );
    assert_eq!(parts[0], api_id);

    // AuthorizerId is write-only: a read never returns it, so the patch must re-send it.
    let changed = props(json!({"ApiId": api_id, "RouteKey": "GET /b", "AuthorizerId": "auth1"}));
    let update_req = ResourceRequest {
        properties: &changed,
        ..req.clone()
    };
    match p
        .update(&ctx, &update_req, &created.physical_id, &desired)
        .await
        .expect("update")
    {
        UpdateOutcome::Updated(after) => assert_eq!(after.physical_id, created.physical_id),
        other => panic!("{other:?}"),
    }
    let read = p
        .read(&ctx, &req, &created.physical_id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["RouteKey"], "GET /b");
    assert!(
        read.get("AuthorizerId").is_none(),
        "write-only properties are not returned"
    );
    p.delete(&ctx, &req, &created.physical_id)
        .await
        .expect("delete");
}

#[tokio::test]
async fn slow_requests_are_polled_to_completion_and_failures_carry_aws_message() {
    let clients = clients().await;
    let ctx = ctx(&clients);
    let p = provider();
    // A type no other module of this test binary creates (cloudcontrol_emulator throttles log
    // groups), so the fault cannot reach a test running beside this one.
    let slow = "AWS::CodeDeploy::Application";
    fault(json!({"polls": {"polls": 4, "TypeName": slow, "count": 1}}));
    let name = unique_name("slow-app");
    let desired = props(json!({"ApplicationName": name}));
    let req = ResourceRequest {
        logical_id: "App",
        resource_type: slow,
        properties: &desired,
        client_token: None,
    };
    let created = p
        .create(&ctx, &req)
        .await
        .expect("create after several IN_PROGRESS polls");
    assert_eq!(created.physical_id, name);
    p.delete(&ctx, &req, &created.physical_id)
        .await
        .expect("delete");

    fault(
        json!({"fail_create": {"TypeName": "AWS::Kinesis::Stream", "ErrorCode": "InvalidRequest", "StatusMessage": "Shard count is out of range", "count": 1}}),
    );
    let desired = props(json!({"Name": unique_name("stream"), "ShardCount": 1}));
    let req = ResourceRequest {
        logical_id: "Stream",
        resource_type: "AWS::Kinesis::Stream",
        properties: &desired,
        client_token: None,
    };
    let err = p.create(&ctx, &req).await.expect_err("failed create");
    assert!(matches!(err, ProviderError::Failed { .. }));
    let text = err.to_string();
    assert!(
        text.contains("Stream (AWS::Kinesis::Stream)")
            && text.contains("InvalidRequest")
            && text.contains("Shard count is out of range"),
        "{text}"
    );
}

#[tokio::test]
async fn throttling_is_retried() {
    let clients = clients().await;
    let ctx = ctx(&clients);
    let p = provider();
    fault(json!({"throttle": {"count": 2, "TypeName": "AWS::ECR::Repository"}}));
    let name = unique_name("repo");
    let desired = props(json!({"RepositoryName": name}));
    let req = ResourceRequest {
        logical_id: "Repo",
        resource_type: "AWS::ECR::Repository",
        properties: &desired,
        client_token: None,
    };
    let created = p
        .create(&ctx, &req)
        .await
        .expect("create despite two throttles");
    assert_eq!(created.physical_id, name);
    p.delete(&ctx, &req, &created.physical_id)
        .await
        .expect("delete");
}
