//! The emulator's Cloud Control API (scripts/cloudcontrol_emulator.py), driven by the real
//! `aws_sdk_cloudcontrol` client through the ordinary SDK configuration: the same
//! `AWS_ENDPOINT_URL` as moto, no Cloud Control-specific setting.
//!
//! Faults are switched on with a plain HTTP POST to `/_cloudcontrol/faults`. Tests in this
//! file run in parallel against one emulator, so every fault is scoped to a resource type
//! that only one test uses, and limited to a count, so it never outlives its test.

use crate::support;

use std::time::Duration;

use aws_sdk_cloudcontrol::types::{HandlerErrorCode, Operation, OperationStatus, ProgressEvent};
use aws_sdk_cloudcontrol::Client;
use serde_json::{json, Value};
use support::http::http;

const ACCOUNT: &str = "123456789012";

async fn client() -> Client {
    Client::new(&support::sdk_config().await)
}

/// Poll GetResourceRequestStatus until the request leaves PENDING / IN_PROGRESS; returns the
/// final event and how many polls answered IN_PROGRESS on the way.
async fn wait(cc: &Client, started: &ProgressEvent) -> (ProgressEvent, usize) {
    assert_eq!(
        started.operation_status(),
        Some(&OperationStatus::InProgress),
        "a mutation answers IN_PROGRESS: {started:?}"
    );
    let token = started.request_token().expect("a request token");
    let mut in_progress = 0;
    for _ in 0..50 {
        let event = cc
            .get_resource_request_status()
            .request_token(token)
            .send()
            .await
            .expect("GetResourceRequestStatus")
            .progress_event
            .expect("a progress event");
        match event.operation_status() {
            Some(OperationStatus::InProgress | OperationStatus::Pending) => in_progress += 1,
            _ => return (event, in_progress),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("request {token} never finished");
}

async fn create(cc: &Client, type_name: &str, desired: Value) -> ProgressEvent {
    let started = cc
        .create_resource()
        .type_name(type_name)
        .desired_state(desired.to_string())
        .send()
        .await
        .expect("CreateResource")
        .progress_event
        .expect("a progress event");
    assert_eq!(started.operation(), Some(&Operation::Create));
    wait(cc, &started).await.0
}

async fn update(cc: &Client, type_name: &str, identifier: &str, patch: Value) -> ProgressEvent {
    let started = cc
        .update_resource()
        .type_name(type_name)
        .identifier(identifier)
        .patch_document(patch.to_string())
        .send()
        .await
        .expect("UpdateResource")
        .progress_event
        .expect("a progress event");
    wait(cc, &started).await.0
}

async fn delete(cc: &Client, type_name: &str, identifier: &str) -> ProgressEvent {
    let started = cc
        .delete_resource()
        .type_name(type_name)
        .identifier(identifier)
        .send()
        .await
        .expect("DeleteResource")
        .progress_event
        .expect("a progress event");
    wait(cc, &started).await.0
}

/// GetResource: Some(properties) or None when the emulator answers ResourceNotFoundException.
async fn get(cc: &Client, type_name: &str, identifier: &str) -> Option<Value> {
    match cc
        .get_resource()
        .type_name(type_name)
        .identifier(identifier)
        .send()
        .await
    {
        Ok(out) => {
            let desc = out.resource_description.expect("a resource description");
            assert_eq!(desc.identifier(), Some(identifier));
            Some(
                serde_json::from_str(desc.properties().expect("properties"))
                    .expect("JSON properties"),
            )
        }
        Err(err) => {
            let err = err.into_service_error();
            assert!(
                err.is_resource_not_found_exception(),
                "GetResource: {err:?}"
            );
            None
        }
    }
}

fn succeeded(event: &ProgressEvent) -> &str {
    assert_eq!(
        event.operation_status(),
        Some(&OperationStatus::Success),
        "request failed: {event:?}"
    );
    event
        .identifier()
        .expect("a successful request names its resource")
}

fn failed_with(event: &ProgressEvent, code: HandlerErrorCode) {
    assert_eq!(
        event.operation_status(),
        Some(&OperationStatus::Failed),
        "{event:?}"
    );
    assert_eq!(event.error_code(), Some(&code), "{event:?}");
}

async fn list_identifiers(cc: &Client, type_name: &str, model: Option<Value>) -> Vec<String> {
    let pages: Vec<_> = cc
        .list_resources()
        .type_name(type_name)
        .set_resource_model(model.map(|m| m.to_string()))
        .max_results(2)
        .into_paginator()
        .send()
        .collect()
        .await;
    pages
        .into_iter()
        .flat_map(|page| {
            page.expect("ListResources")
                .resource_descriptions
                .unwrap_or_default()
        })
        .map(|d| d.identifier.expect("an identifier"))
        .collect()
}

// -- raw HTTP to the emulator (the control API, and moto's own SQS API) -------------------------

/// POST /_cloudcontrol/faults; returns the ids of the faults added.
fn fault(spec: Value) -> Vec<String> {
    let (status, body) = http(
        "POST",
        "/_cloudcontrol/faults",
        &[("Content-Type", "application/json")],
        &spec.to_string(),
    );
    assert_eq!(status, 200, "fault {spec}: {body}");
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    answer["ids"]
        .as_array()
        .expect("ids")
        .iter()
        .map(|id| id.as_str().expect("an id").to_owned())
        .collect()
}

/// How many times the fault with this id has fired.
fn fired(id: &str) -> u64 {
    let (status, body) = http("GET", "/_cloudcontrol/faults", &[], "");
    assert_eq!(status, 200, "{body}");
    let state: Value = serde_json::from_str(&body).expect("JSON");
    state["faults"]
        .as_array()
        .expect("faults")
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no fault {id} in {state}"))["fired"]
        .as_u64()
        .expect("fired")
}

/// A call to moto's SQS query API (not Cloud Control): the response XML.
fn sqs_query(form: &str) -> String {
    let auth = "AWS4-HMAC-SHA256 Credential=testing/20240101/us-east-1/sqs/aws4_request, \
                SignedHeaders=host, Signature=0";
    let (status, body) = http(
        "POST",
        "/",
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Authorization", auth),
        ],
        form,
    );
    assert_eq!(status, 200, "SQS {form}: {body}");
    body
}

// -- the tests ---------------------------------------------------------------------------------

/// AWS::SQS::Queue is backed by moto: the queue Cloud Control creates is a real SQS queue.
#[tokio::test]
async fn sqs_queue_lifecycle_is_real_in_moto() {
    let cc = client().await;
    let t = "AWS::SQS::Queue";
    let name = support::unique_name("cc-queue");

    let created = create(&cc, t, json!({"QueueName": name, "VisibilityTimeout": 30})).await;
    let url = succeeded(&created).to_owned();
    assert!(
        url.ends_with(&format!("/{ACCOUNT}/{name}")),
        "the identifier is the queue URL: {url}"
    );
    let listed = sqs_query(&format!("Action=ListQueues&QueueNamePrefix={name}"));
    assert!(
        listed.contains(&format!("/{name}</QueueUrl>")),
        "SQS lists the queue: {listed}"
    );

    let props = get(&cc, t, &url).await.expect("the queue");
    assert_eq!(props["QueueName"], json!(name));
    assert_eq!(props["QueueUrl"], json!(url));
    assert_eq!(
        props["Arn"],
        json!(format!("arn:aws:sqs:us-east-1:{ACCOUNT}:{name}"))
    );
    assert_eq!(props["VisibilityTimeout"], json!(30));
    assert!(list_identifiers(&cc, t, None).await.contains(&url));

    let updated = update(
        &cc,
        t,
        &url,
        json!([{"op": "replace", "path": "/VisibilityTimeout", "value": 45}]),
    )
    .await;
    succeeded(&updated);
    assert_eq!(
        get(&cc, t, &url).await.expect("the queue")["VisibilityTimeout"],
        json!(45)
    );
    let attrs = sqs_query(&format!(
        "Action=GetQueueAttributes&QueueUrl={url}&AttributeName.1=VisibilityTimeout"
    ));
    assert!(
        attrs.contains("<Value>45</Value>"),
        "SQS sees the update: {attrs}"
    );

    // A second queue of the same name: AlreadyExists.
    let again = create(&cc, t, json!({"QueueName": name})).await;
    failed_with(&again, HandlerErrorCode::AlreadyExists);

    succeeded(&delete(&cc, t, &url).await);
    assert_eq!(get(&cc, t, &url).await, None);
    let listed = sqs_query(&format!("Action=ListQueues&QueueNamePrefix={name}"));
    assert!(
        !listed.contains(&name),
        "SQS no longer lists the queue: {listed}"
    );
    failed_with(&delete(&cc, t, &url).await, HandlerErrorCode::NotFound);
}

/// A type moto has no model for lives in the generic store: composite identifier
/// ([ApiId, RouteId] joined with "|"), write-only AuthorizerId never returned.
#[tokio::test]
async fn generic_type_composite_identifier_and_write_only_property() {
    let cc = client().await;
    let t = "AWS::ApiGatewayV2::Route";
    let api = support::unique_name("api");

    let created = create(
        &cc,
        t,
        json!({"ApiId": api, "RouteKey": "GET /items", "AuthorizationType": "CUSTOM", "AuthorizerId": "auth1"}),
    )
    .await;
    let id = succeeded(&created).to_owned();
    let (api_part, route_id) = id.split_once('|').expect("a composite identifier");
    assert_eq!(api_part, api);
    assert!(!route_id.is_empty());

    let props = get(&cc, t, &id).await.expect("the route");
    assert_eq!(
        props["RouteId"],
        json!(route_id),
        "the generated read-only id"
    );
    assert_eq!(props["RouteKey"], json!("GET /items"));
    assert_eq!(props["AuthorizationType"], json!("CUSTOM"));
    assert!(props.get("AuthorizerId").is_none(), "write-only: {props}");

    let updated = update(
        &cc,
        t,
        &id,
        json!([
            {"op": "replace", "path": "/RouteKey", "value": "GET /things"},
            {"op": "add", "path": "/AuthorizerId", "value": "auth2"}
        ]),
    )
    .await;
    assert_eq!(succeeded(&updated), id);
    let props = get(&cc, t, &id).await.expect("the route");
    assert_eq!(props["RouteKey"], json!("GET /things"));
    assert!(props.get("AuthorizerId").is_none(), "write-only: {props}");

    // ApiId is create-only: Cloud Control refuses the patch outright.
    let err = cc
        .update_resource()
        .type_name(t)
        .identifier(&id)
        .patch_document(json!([{"op": "replace", "path": "/ApiId", "value": "other"}]).to_string())
        .send()
        .await
        .expect_err("a create-only property cannot change")
        .into_service_error();
    assert!(err.is_not_updatable_exception(), "{err:?}");

    // Two more routes of the same API; ListResources pages (2 a page) and filters by ApiId.
    let mut ids = vec![id.clone()];
    for key in ["GET /a", "GET /b"] {
        ids.push(
            succeeded(&create(&cc, t, json!({"ApiId": api, "RouteKey": key})).await).to_owned(),
        );
    }
    let mut listed = list_identifiers(&cc, t, Some(json!({"ApiId": api}))).await;
    listed.sort();
    ids.sort();
    assert_eq!(listed, ids);

    for id in &ids {
        succeeded(&delete(&cc, t, id).await);
        assert_eq!(get(&cc, t, id).await, None);
    }
    failed_with(
        &update(
            &cc,
            t,
            &ids[0],
            json!([{"op": "replace", "path": "/RouteKey", "value": "x"}]),
        )
        .await,
        HandlerErrorCode::NotFound,
    );
}

#[tokio::test]
async fn request_stays_in_progress_for_the_configured_polls() {
    let cc = client().await;
    let t = "AWS::AppConfig::Application";
    fault(json!({"polls": {"polls": 3, "TypeName": t, "Operation": "CREATE", "count": 1}}));

    let started = cc
        .create_resource()
        .type_name(t)
        .desired_state(json!({"Name": support::unique_name("app")}).to_string())
        .send()
        .await
        .expect("CreateResource")
        .progress_event
        .expect("a progress event");
    let (done, in_progress) = wait(&cc, &started).await;
    assert_eq!(in_progress, 3, "three polls answered IN_PROGRESS");
    let id = succeeded(&done).to_owned();
    assert!(done.resource_model().is_some(), "SUCCESS carries the model");
    assert!(get(&cc, t, &id).await.is_some());

    // The fault was for one request: the delete completes on the default schedule.
    let started = cc
        .delete_resource()
        .type_name(t)
        .identifier(&id)
        .send()
        .await
        .expect("DeleteResource")
        .progress_event
        .expect("a progress event");
    let (done, in_progress) = wait(&cc, &started).await;
    succeeded(&done);
    assert_eq!(in_progress, 1, "one IN_PROGRESS poll by default");
}

#[tokio::test]
async fn failed_create_reports_the_configured_code_and_message() {
    let cc = client().await;
    let t = "AWS::Cassandra::Keyspace";
    let message = "Keyspace limit reached (injected by the test)";
    fault(
        json!({"fail_create": {"TypeName": t, "ErrorCode": "InvalidRequest", "StatusMessage": message}}),
    );

    let name = support::unique_name("ks").replace('-', "_");
    let event = create(&cc, t, json!({"KeyspaceName": name})).await;
    failed_with(&event, HandlerErrorCode::InvalidRequest);
    assert_eq!(event.status_message(), Some(message));
    assert_eq!(
        get(&cc, t, &name).await,
        None,
        "a failed create leaves nothing"
    );

    // The fault was for one request: the next create succeeds.
    let id = succeeded(&create(&cc, t, json!({"KeyspaceName": name})).await).to_owned();
    assert_eq!(id, name);
    succeeded(&delete(&cc, t, &id).await);
}

#[tokio::test]
async fn sdk_retries_absorb_two_throttles() {
    let cc = client().await;
    let t = "AWS::Logs::LogGroup";
    let ids =
        fault(json!({"throttle": {"count": 2, "TypeName": t, "Operation": "CreateResource"}}));

    let name = format!("/cdkd/test/{}", support::unique_name("throttled"));
    let event = create(&cc, t, json!({"LogGroupName": name, "RetentionInDays": 7})).await;
    assert_eq!(succeeded(&event), name);
    assert_eq!(
        fired(&ids[0]),
        2,
        "both throttles were answered (and retried)"
    );
    let props = get(&cc, t, &name).await.expect("the log group");
    assert_eq!(
        props["Arn"],
        json!(format!("arn:aws:logs:us-east-1:{ACCOUNT}:log-group:{name}"))
    );
    succeeded(&delete(&cc, t, &name).await);
}

#[tokio::test]
async fn client_token_replays_the_original_request() {
    let cc = client().await;
    let t = "AWS::Athena::WorkGroup";
    let desired = json!({"Name": support::unique_name("wg")}).to_string();
    let token = support::unique_name("token");
    let send = || {
        cc.create_resource()
            .type_name(t)
            .desired_state(&desired)
            .client_token(&token)
            .send()
    };
    let first = send()
        .await
        .expect("CreateResource")
        .progress_event
        .expect("event");
    let second = send()
        .await
        .expect("CreateResource again")
        .progress_event
        .expect("event");
    assert_eq!(
        first.request_token(),
        second.request_token(),
        "same request, not a second resource"
    );
    let id = succeeded(&wait(&cc, &first).await.0).to_owned();

    let err = cc
        .create_resource()
        .type_name(t)
        .desired_state("{}")
        .client_token(&token)
        .send()
        .await
        .expect_err("a token reused for another request")
        .into_service_error();
    assert!(err.is_client_token_conflict_exception(), "{err:?}");
    succeeded(&delete(&cc, t, &id).await);
}
