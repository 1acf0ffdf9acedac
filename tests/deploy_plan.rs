//! The deploy's plan end to end through the binary against the emulator: a property whose
//! new expression reads an attribute the state record does not hold is updated (not planned
//! as "no change"), `cdkd diff` reports it before the deploy, and an expression that did not
//! change plans no change even when its attribute is missing from the record; one AWS cannot
//! be asked for is shown as a change known after deploy.

mod support;

use serde_json::{json, Value};
use support::app::App;
use support::{cdkd, s3_client, sdk_config, unique_name};

const REGION: &str = "us-east-1";

fn state_key(stack: &str) -> String {
    format!("cdkd/{stack}/{REGION}/state.json")
}

async fn object(bucket: &str, key: &str) -> Value {
    let out = s3_client()
        .await
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .expect("get object");
    let bytes = out.body.collect().await.expect("body").into_bytes();
    serde_json::from_slice(&bytes).expect("json")
}

async fn put_object(bucket: &str, key: &str, value: &Value) {
    s3_client()
        .await
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(value.to_string().into_bytes().into())
        .send()
        .await
        .expect("put object");
}

/// Drops `attribute` from `resource`'s record, as a record whose provider did not report it
/// (or another writer's) holds it; returns the value it had.
async fn forget_attribute(app: &App, stack: &str, resource: &str, attribute: &str) -> String {
    let key = state_key(stack);
    let mut state = object(&app.bucket, &key).await;
    let attributes = state["resources"][resource]["attributes"]
        .as_object_mut()
        .expect("attributes");
    let value = attributes
        .remove(attribute)
        .and_then(|v| v.as_str().map(str::to_owned))
        .expect("recorded attribute");
    put_object(&app.bucket, &key, &state).await;
    value
}

/// `cdkd diff --fail`: (exit code, stdout, stderr).
fn diff(app: &App) -> (i32, String, String) {
    let dir = app.dir.path();
    let out = cdkd()
        .current_dir(dir)
        .arg("diff")
        .args(["--app", dir.to_str().expect("utf-8 path")])
        .args(["--state-bucket", &app.bucket, "--fail"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("--- cdkd diff\n{stdout}\n{stderr}");
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

/// The parameter's (value, version).
async fn parameter(name: &str) -> (String, i64) {
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    let out = ssm
        .get_parameter()
        .name(name)
        .send()
        .await
        .expect("parameter");
    let p = out.parameter().expect("parameter");
    (p.value().unwrap_or_default().to_owned(), p.version())
}

fn template(stack: &str, param: &str, value: Value) -> Value {
    json!({"Resources": {
        "Queue": {"Type": "AWS::SQS::Queue",
            "Properties": {"QueueName": format!("{stack}-q")}},
        "Param": {"Type": "AWS::SSM::Parameter",
            "Properties": {"Name": param, "Type": "String", "Value": value}}
    }})
}

#[tokio::test]
async fn a_property_changed_to_read_an_unrecorded_attribute_is_updated() {
    let app = App::new("cdkd-plan");
    let stack = unique_name("plan-unrecorded");
    let param = format!("/{stack}/queue");

    // v1: the parameter holds the queue's Ref (its URL).
    let v1 = template(&stack, &param, json!({"Ref": "Queue"}));
    app.write_stacks(&[(&stack, &v1, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let (url, _) = parameter(&param).await;
    assert!(url.contains("://"), "{url}");

    // The queue's record loses its Arn, as if its provider had not reported it.
    let arn = forget_attribute(&app, &stack, "Queue", "Arn").await;

    // v2: the parameter reads the Arn instead. The diff reports the change, with the value
    // read back from AWS.
    let v2 = template(&stack, &param, json!({"Fn::GetAtt": ["Queue", "Arn"]}));
    app.write_stacks(&[(&stack, &v2, &[])]);
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("Param"), "{stdout}");
    assert!(stdout.contains("Value"), "{stdout}");
    assert!(stdout.contains(&arn), "{stdout}");

    // The deploy updates the parameter (not "no change").
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("Arn was not recorded"), "{stderr}");
    let (value, version) = parameter(&param).await;
    assert_eq!(value, arn);
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["Queue"]["attributes"]["Arn"],
        arn.as_str()
    );
    assert_eq!(
        record["resources"]["Param"]["properties"]["Value"],
        arn.as_str()
    );

    // Nothing left to change: the diff is clean.
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(code, 0, "a phantom change:\n{stdout}\n{stderr}");

    // The same expression whose attribute the record lacks again: still no change, for the
    // diff and for the deploy (nothing is sent to SSM), and the attribute is stored again.
    forget_attribute(&app, &stack, "Queue", "Arn").await;
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(code, 0, "a phantom change:\n{stdout}\n{stderr}");
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("updated"), "{stderr}");
    assert_eq!(parameter(&param).await, (arn.clone(), version));
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["Queue"]["attributes"]["Arn"],
        arn.as_str()
    );
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}

#[tokio::test]
async fn an_attribute_aws_cannot_be_asked_for_is_a_change_known_after_deploy() {
    // The SSM provider does not report a parameter's Arn, and reading the parameter back
    // does not find it: the diff cannot resolve the new value, and reports a possible change.
    let app = App::new("cdkd-plan");
    let stack = unique_name("plan-unknown");
    let source = format!("/{stack}/source");
    let reader = format!("/{stack}/reader");
    let stack_template = |value: Value| {
        json!({"Resources": {
            "Source": {"Type": "AWS::SSM::Parameter",
                "Properties": {"Name": source, "Type": "String", "Value": "v"}},
            "Reader": {"Type": "AWS::SSM::Parameter",
                "Properties": {"Name": reader, "Type": "String", "Value": value}}
        }})
    };
    let v1 = stack_template(json!({"Ref": "Source"}));
    app.write_stacks(&[(&stack, &v1, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let record = app.record(&stack);
    assert!(record["resources"]["Source"]["attributes"]
        .get("Arn")
        .is_none());

    let v2 = stack_template(json!({"Fn::GetAtt": ["Source", "Arn"]}));
    app.write_stacks(&[(&stack, &v2, &[])]);
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("Reader"), "{stdout}");
    assert!(stdout.contains("[known after deploy]"), "{stdout}");
    assert!(stdout.contains("Fn::GetAtt"), "{stdout}");
    // v1 again: nothing changed.
    app.write_stacks(&[(&stack, &v1, &[])]);
    let (code, stdout, stderr) = diff(&app);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}
