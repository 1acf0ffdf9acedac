//! How `cdkd deploy` routes a resource between its SDK provider and Cloud Control, end to end
//! through the binary against the emulator (src/engine/deploy/route.rs): a property the SDK
//! provider does not send sends the resource through Cloud Control (never dropped, never a
//! failure), the diff is clean afterwards, and the resource returns to its SDK provider once
//! neither the template nor the record carries the property; a record made through Cloud
//! Control stays there (`provisionedBy` honoured) and updates through it; a resource the SDK
//! provider made, whose template gains a property Cloud Control could not address it for, is
//! refused before anything changes.

use crate::support;

use serde_json::{json, Value};
use support::app::App;
use support::{cdkd, sdk_config, unique_name};

pub(crate) fn diff_fail(app: &App) -> (i32, String) {
    let dir = app.dir.path();
    let out = cdkd()
        .current_dir(dir)
        .arg("diff")
        .args(["--app", dir.to_str().expect("utf-8 path")])
        .args(["--state-bucket", &app.bucket, "--fail"])
        .output()
        .expect("runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn provisioned_by(app: &App, stack: &str, id: &str) -> Value {
    app.record(stack)["resources"][id]["provisionedBy"].clone()
}

/// A role Lambda can assume and one function named `name`, with `extra` properties.
fn function_stack(name: &str, extra: Value) -> Value {
    let mut props = json!({
        "FunctionName": name,
        "Handler": "index.handler",
        "Runtime": "python3.12",
        "Code": {"ZipFile": "def handler(event, context):\n    return 1\n"},
        "Role": {"Fn::GetAtt": ["Role", "Arn"]}
    });
    for (k, v) in extra.as_object().expect("object") {
        props[k] = v.clone();
    }
    json!({"Resources": {
        "Role": {"Type": "AWS::IAM::Role", "Properties": {
            "AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"},
                "Action": "sts:AssumeRole"}]}}},
        "Fn": {"Type": "AWS::Lambda::Function", "Properties": props}
    }})
}

async fn description(name: &str) -> Option<String> {
    let lambda = aws_sdk_lambda::Client::new(&sdk_config().await);
    let out = lambda
        .get_function_configuration()
        .function_name(name)
        .send()
        .await
        .expect("the function exists in Lambda");
    out.description().map(str::to_owned)
}

pub(crate) async fn cc_properties(type_name: &str, identifier: &str) -> Value {
    let cc = aws_sdk_cloudcontrol::Client::new(&sdk_config().await);
    let out = cc
        .get_resource()
        .type_name(type_name)
        .identifier(identifier)
        .send()
        .await
        .expect("Cloud Control knows the resource");
    let props = out
        .resource_description()
        .and_then(|d| d.properties())
        .expect("properties");
    serde_json::from_str(props).expect("json")
}

#[tokio::test]
async fn a_property_the_sdk_provider_does_not_send_goes_through_cloud_control_and_back() {
    let app = App::new("cdkd-route");
    let stack = "RouteStack";
    let name = unique_name("cdkd-durable");
    let durable = json!({"DurableConfig": {"ExecutionTimeout": 900}, "Description": "v1"});
    app.write_stacks(&[(stack, &function_stack(&name, durable), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(
            "Fn (AWS::Lambda::Function): through Cloud Control: cdkd's SDK provider does not \
             send property DurableConfig"
        ),
        "{stderr}"
    );
    assert_eq!(provisioned_by(&app, stack, "Fn"), json!("cc-api"));
    assert_eq!(provisioned_by(&app, stack, "Role"), json!("sdk"));
    assert_eq!(
        cc_properties("AWS::Lambda::Function", &name).await["DurableConfig"],
        json!({"ExecutionTimeout": 900})
    );
    assert_eq!(description(&name).await.as_deref(), Some("v1"));
    let (code, text) = diff_fail(&app);
    assert_eq!(code, 0, "the diff is clean after the deploy: {text}");

    // The property goes: Cloud Control, which applied it, unsets it; the record stays there.
    app.write_stacks(&[(
        stack,
        &function_stack(&name, json!({"Description": "v2"})),
        &[],
    )]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(provisioned_by(&app, stack, "Fn"), json!("cc-api"));
    let model = cc_properties("AWS::Lambda::Function", &name).await;
    assert_eq!(model.get("DurableConfig"), None, "{model}");
    assert_eq!(description(&name).await.as_deref(), Some("v2"));

    // Neither the template nor the record carries it now: the next change goes through the
    // SDK provider, on the same function.
    app.write_stacks(&[(
        stack,
        &function_stack(&name, json!({"Description": "v3"})),
        &[],
    )]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("Fn (AWS::Lambda::Function): returns to its SDK provider"),
        "{stderr}"
    );
    assert_eq!(provisioned_by(&app, stack, "Fn"), json!("sdk"));
    assert_eq!(
        app.record(stack)["resources"]["Fn"]["physicalId"],
        json!(name)
    );
    assert_eq!(description(&name).await.as_deref(), Some("v3"));
    let (code, text) = diff_fail(&app);
    assert_eq!(code, 0, "the diff is clean after the return: {text}");
}

#[tokio::test]
async fn an_sdk_record_gaining_a_property_cloud_control_cannot_take_over_is_refused() {
    let app = App::new("cdkd-route-refuse");
    let stack = "RouteRefuse";
    let queue = |extra: Value| {
        let mut props = json!({"VisibilityTimeout": 30});
        for (k, v) in extra.as_object().expect("object") {
            props[k] = v.clone();
        }
        json!({"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": props}}})
    };
    app.write_stacks(&[(stack, &queue(json!({})), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let before = app.record(stack);
    assert_eq!(before["resources"]["Q"]["provisionedBy"], json!("sdk"));

    app.write_stacks(&[(
        stack,
        &queue(json!({"VisibilityTimeout": 60, "NotAnSqsProperty": "x"})),
        &[],
    )]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(
            "Q (AWS::SQS::Queue): cdkd's SDK provider does not send property NotAnSqsProperty"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    let after = app.record(stack);
    assert_eq!(after["resources"]["Q"], before["resources"]["Q"]);
}

#[tokio::test]
async fn a_property_a_false_condition_removes_keeps_the_sdk_route() {
    let app = App::new("cdkd-route-cond");
    let stack = "RouteCondition";
    // CDK writes an optional property as `Fn::If [cond, value, AWS::NoValue]`: with the
    // condition false the property is not set, so it must not send the queue to Cloud Control.
    let template = |timeout: u32| {
        json!({
            "Conditions": {"Never": {"Fn::Equals": ["a", "b"]}},
            "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {
                "VisibilityTimeout": timeout,
                "NotAnSqsProperty": {"Fn::If": ["Never", "x", {"Ref": "AWS::NoValue"}]}
            }}}
        })
    };
    app.write_stacks(&[(stack, &template(30), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("through Cloud Control"), "{stderr}");
    assert_eq!(provisioned_by(&app, stack, "Q"), json!("sdk"));
    let (code, text) = diff_fail(&app);
    assert_eq!(code, 0, "the diff is clean: {text}");

    app.write_stacks(&[(stack, &template(60), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(
        code, 0,
        "an SDK record updates through its provider: {stderr}"
    );
    assert_eq!(provisioned_by(&app, stack, "Q"), json!("sdk"));
    assert_eq!(
        app.record(stack)["resources"]["Q"]["properties"]["VisibilityTimeout"],
        json!(60)
    );
}

/// Creates `desired` of `type_name` through Cloud Control and waits for it: its identifier.
pub(crate) async fn cc_create(type_name: &str, desired: &Value) -> String {
    let cc = aws_sdk_cloudcontrol::Client::new(&sdk_config().await);
    let out = cc
        .create_resource()
        .type_name(type_name)
        .desired_state(desired.to_string())
        .send()
        .await
        .expect("CreateResource");
    let token = out
        .progress_event()
        .and_then(|e| e.request_token())
        .expect("request token")
        .to_owned();
    for _ in 0..50 {
        let status = cc
            .get_resource_request_status()
            .request_token(&token)
            .send()
            .await
            .expect("GetResourceRequestStatus");
        let event = status.progress_event().expect("progress event");
        match event.operation_status().map(|s| s.as_str()) {
            Some("SUCCESS") => return event.identifier().expect("identifier").to_owned(),
            Some("FAILED") => panic!("create failed: {:?}", event.status_message()),
            _ => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
        }
    }
    panic!("the Cloud Control create did not finish");
}

/// Writes the state of a cdkd from before the type had an SDK provider: one resource,
/// recorded as made through Cloud Control.
pub(crate) async fn pinned_state(
    app: &App,
    stack: &str,
    logical: &str,
    ty: &str,
    id: &str,
    props: &Value,
    attributes: Value,
) {
    let state = json!({
        "version": 11,
        "stackName": stack,
        "region": "us-east-1",
        "resources": {logical: {
            "physicalId": id,
            "resourceType": ty,
            "properties": props,
            "attributes": attributes,
            "dependencies": [],
            "provisionedBy": "cc-api"
        }},
        "outputs": {},
        "lastModified": 1_764_633_600_000_u64
    });
    support::s3_client()
        .await
        .put_object()
        .bucket(&app.bucket)
        .key(format!("cdkd/{stack}/us-east-1/state.json"))
        .body(state.to_string().into_bytes().into())
        .send()
        .await
        .expect("put the fixture state");
}

/// A stack whose record says its SSM parameter was made through Cloud Control (what a cdkd
/// from before the type had an SDK provider wrote) diffs clean and updates through Cloud
/// Control, not through the SSM provider the type has now.
#[tokio::test]
async fn a_record_made_through_cloud_control_stays_there_when_its_type_has_an_sdk_provider() {
    let app = App::new("cdkd-route-pinned");
    let stack = "RoutePinned";
    let name = unique_name("/cdkd/pinned");
    let props = |value: &str| json!({"Name": name, "Type": "String", "Value": value});
    let id = cc_create("AWS::SSM::Parameter", &props("v1")).await;
    assert_eq!(id, name);
    pinned_state(
        &app,
        stack,
        "P",
        "AWS::SSM::Parameter",
        &name,
        &props("v1"),
        json!({}),
    )
    .await;
    let template = |value: &str| json!({"Resources": {"P": {"Type": "AWS::SSM::Parameter", "Properties": props(value)}}});
    app.write_stacks(&[(stack, &template("v1"), &[])]);
    let (code, text) = diff_fail(&app);
    assert_eq!(code, 0, "the recorded stack diffs clean: {text}");

    app.write_stacks(&[(stack, &template("v2"), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(provisioned_by(&app, stack, "P"), json!("cc-api"));
    // Cloud Control's own model moved, which an update through the SSM API would not do.
    assert_eq!(
        cc_properties("AWS::SSM::Parameter", &name).await["Value"],
        json!("v2")
    );
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    let got = ssm
        .get_parameter()
        .name(&name)
        .send()
        .await
        .expect("GetParameter");
    assert_eq!(got.parameter().and_then(|p| p.value()), Some("v2"));
    let (code, text) = diff_fail(&app);
    assert_eq!(code, 0, "clean after the update: {text}");
}

/// `--allow-unsupported-types` (upstream's escape hatch): a type cdkd refuses is tried through
/// Cloud Control, recorded there, and destroyed through it; `--allow-unsupported-properties`
/// keeps a resource on its SDK provider, the property not sent.
#[tokio::test]
async fn the_escape_hatches_route_what_cdkd_would_refuse_or_send_elsewhere() {
    let app = App::new("cdkd-route-escape");
    let stack = unique_name("RouteEscape");
    // A type outside the schema snapshot (the Cloud Control emulator accepts it).
    let widget = json!({"Resources": {"W": {"Type": "Test::Thing::Widget",
        "Properties": {"Size": 3}}}});
    app.write_stacks(&[(&stack, &widget, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("W: resource type Test::Thing::Widget is not supported"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--allow-unsupported-types Test::Thing::Widget"),
        "the refusal names the flag: {stderr}"
    );
    let (code, _, stderr) = app.deploy(&[
        "--allow-unsupported-types",
        "Test::Other::X,Test::Thing::Widget",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let record = app.record(&stack);
    assert_eq!(record["resources"]["W"]["provisionedBy"], json!("cc-api"));
    let id = record["resources"]["W"]["physicalId"]
        .as_str()
        .expect("physical id")
        .to_owned();
    assert_eq!(
        cc_properties("Test::Thing::Widget", &id).await["Size"],
        json!(3)
    );
    // The record is pinned to Cloud Control: destroy needs no flag.
    let dir = app.dir.path();
    let out = cdkd()
        .current_dir(dir)
        .args([
            "destroy",
            "--all",
            "--force",
            "--app",
            dir.to_str().expect("utf-8"),
        ])
        .args(["--state-bucket", &app.bucket])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cc = aws_sdk_cloudcontrol::Client::new(&sdk_config().await);
    let gone = cc
        .get_resource()
        .type_name("Test::Thing::Widget")
        .identifier(&id)
        .send()
        .await;
    assert!(gone.is_err(), "the widget is deleted: {gone:?}");

    // A property the Lambda SDK provider does not send: allowed, the function stays on the
    // SDK provider and the property is said not to be sent.
    let name = unique_name("cdkd-allowprop");
    let durable = json!({"DurableConfig": {"ExecutionTimeout": 900}, "Description": "v1"});
    app.write_stacks(&[(&stack, &function_stack(&name, durable), &[])]);
    let (code, _, stderr) = app.deploy(&[
        "--allow-unsupported-properties",
        "AWS::Lambda::Function:DurableConfig",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(
            "Fn (AWS::Lambda::Function): property DurableConfig is not sent to AWS \
             (--allow-unsupported-properties"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("through Cloud Control"), "{stderr}");
    assert_eq!(provisioned_by(&app, &stack, "Fn"), json!("sdk"));
    assert_eq!(description(&name).await.as_deref(), Some("v1"));
}

/// `--recreate-via-cc-api` / `--recreate-via-sdk-provider` (upstream's flags): a recorded
/// function is deleted and created again through the other route, its record's
/// `provisionedBy` flips each way; the move needs a confirmation (`--yes` off a terminal) and
/// is refused when it cannot be meant.
#[tokio::test]
async fn recreate_moves_a_recorded_resource_between_its_sdk_provider_and_cloud_control() {
    let app = App::new("cdkd-route-recreate");
    let stack = "RouteRecreate";
    let name = unique_name("cdkd-recreate");
    app.write_stacks(&[(
        stack,
        &function_stack(&name, json!({"Description": "v1"})),
        &[],
    )]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(provisioned_by(&app, stack, "Fn"), json!("sdk"));
    let before = app.record(stack);

    // A destructive move: refused without a terminal to ask on and without --yes.
    let (code, _, stderr) = app.deploy(&["--recreate-via-cc-api", "Fn"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("need approval"), "{stderr}");
    assert_eq!(app.record(stack)["resources"], before["resources"]);
    // Names that cannot be meant are refused before anything changes.
    for (args, says) in [
        (
            vec!["--recreate-via-cc-api", "NoSuchId"],
            "logical id NoSuchId",
        ),
        (
            vec!["--recreate-via-sdk-provider", "Fn"],
            "already provisioned through its SDK provider",
        ),
        (
            vec![
                "--recreate-via-cc-api",
                "Fn",
                "--recreate-via-sdk-provider",
                "Fn",
            ],
            "named by both",
        ),
    ] {
        let mut all = args.clone();
        all.push("--yes");
        let (code, _, stderr) = app.deploy(&all);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert_eq!(app.record(stack)["resources"], before["resources"]);

    let (code, _, stderr) = app.deploy(&["--recreate-via-cc-api", "Fn", "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("Fn (AWS::Lambda::Function): --recreate-via-cc-api: deleted, then created again through Cloud Control"),
        "{stderr}"
    );
    assert_eq!(provisioned_by(&app, stack, "Fn"), json!("cc-api"));
    assert_eq!(
        provisioned_by(&app, stack, "Role"),
        json!("sdk"),
        "only the named one moves"
    );
    assert_eq!(
        cc_properties("AWS::Lambda::Function", &name).await["Description"],
        json!("v1")
    );
    assert_eq!(description(&name).await.as_deref(), Some("v1"));
    let (code, text) = diff_fail(&app);
    assert_eq!(code, 0, "the diff is clean after the move: {text}");

    let (code, _, stderr) = app.deploy(&["--recreate-via-cc-api", "Fn", "--yes"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("already provisioned through Cloud Control"),
        "{stderr}"
    );

    let (code, _, stderr) = app.deploy(&["--recreate-via-sdk-provider", "Fn", "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(provisioned_by(&app, stack, "Fn"), json!("sdk"));
    assert_eq!(description(&name).await.as_deref(), Some("v1"));
    let (code, text) = diff_fail(&app);
    assert_eq!(code, 0, "the diff is clean after the return: {text}");
}
