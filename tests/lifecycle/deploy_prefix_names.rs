//! `--prefix-user-supplied-names` (upstream cdkd's flag): a deploy with it creates the name
//! the template gives an IAM role as `{stack}-{name}`, while a queue's given name and an
//! unnamed role's generated name are as without it; a second deploy with it changes nothing,
//! and a deploy without it then replaces the role under its own name.
//! `CDKD_PREFIX_USER_SUPPLIED_NAMES=true` and cdk.json `context.cdkd.prefixUserSuppliedNames`
//! ask the same. Seen in IAM and SQS.

use crate::support;

use serde_json::{json, Value};
use support::app::App;
use support::{sdk_config, unique_name};

fn template(role: &str, queue: &str) -> Value {
    let trust = json!({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"},
        "Action": "sts:AssumeRole"}]});
    json!({"Resources": {
        "Named": {"Type": "AWS::IAM::Role",
            "Properties": {"RoleName": role, "AssumeRolePolicyDocument": trust}},
        "Unnamed": {"Type": "AWS::IAM::Role",
            "Properties": {"AssumeRolePolicyDocument": trust}},
        "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": queue}}
    }})
}

async fn role_exists(iam: &aws_sdk_iam::Client, name: &str) -> bool {
    iam.get_role().role_name(name).send().await.is_ok()
}

#[tokio::test]
async fn user_given_role_names_get_the_stack_prefix_with_the_flag() {
    let config = sdk_config().await;
    let iam = aws_sdk_iam::Client::new(&config);
    let sqs = aws_sdk_sqs::Client::new(&config);
    let app = App::new("cdkd-prefix-names");
    let stack = format!("Pfx{}", unique_name("s").replace('-', "x"));
    let role = unique_name("named-role");
    let queue = unique_name("prefix-q");
    app.write_stacks(&[(&stack, &template(&role, &queue), &[])]);

    let (code, _, stderr) = app.deploy(&["--prefix-user-supplied-names"]);
    assert_eq!(code, 0, "{stderr}");
    let prefixed = format!("{stack}-{role}");
    assert!(role_exists(&iam, &prefixed).await, "{prefixed} not created");
    assert!(!role_exists(&iam, &role).await, "{role} created unprefixed");
    sqs.get_queue_url()
        .queue_name(&queue)
        .send()
        .await
        .expect("the queue keeps its given name");
    let record = app.record(&stack);
    assert_eq!(record["resources"]["Named"]["physicalId"], json!(prefixed));
    let unnamed = record["resources"]["Unnamed"]["physicalId"]
        .as_str()
        .expect("unnamed role id")
        .to_owned();
    assert!(
        unnamed.starts_with(&format!("{stack}-Unnamed")),
        "{unnamed}"
    );

    // Again with the flag: nothing to change.
    let (code, _, stderr) = app.deploy(&["--prefix-user-supplied-names"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("resources: 3 unchanged"), "{stderr}");

    // Without it: the named role is replaced under its own name, the rest stays.
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(role_exists(&iam, &role).await, "{role} not created");
    assert!(
        !role_exists(&iam, &prefixed).await,
        "{prefixed} not deleted"
    );
    let record = app.record(&stack);
    assert_eq!(record["resources"]["Named"]["physicalId"], json!(role));
    assert_eq!(record["resources"]["Unnamed"]["physicalId"], json!(unnamed));

    // CDKD_PREFIX_USER_SUPPLIED_NAMES=true asks the same, as upstream reads it.
    let (code, _, stderr) = app.deploy_env(&[], &[("CDKD_PREFIX_USER_SUPPLIED_NAMES", "true")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(role_exists(&iam, &prefixed).await, "{prefixed} not created");
    assert!(!role_exists(&iam, &role).await, "{role} not deleted");
    // And so does cdk.json's context.cdkd.prefixUserSuppliedNames: nothing to change.
    std::fs::write(
        app.dir.path().join("cdk.json"),
        json!({"context": {"cdkd": {"prefixUserSuppliedNames": true}}}).to_string(),
    )
    .expect("cdk.json");
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("resources: 3 unchanged"), "{stderr}");
}
