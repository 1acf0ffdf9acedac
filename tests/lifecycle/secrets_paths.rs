//! Secrets on every path a stack takes, end to end through the binary against the emulator:
//! one stack holding a secret reference, a NoEcho parameter and a NoEcho custom resource's
//! Data goes through diff, diff --json, deploy, deploy --dry-run, a deploy that fails and
//! rolls back, and destroy, and no command's output and no version of any object in the state
//! bucket holds any of the three plaintexts; and a custom resource whose Delete would need a
//! masked property is not sent `***` but skipped and reported unaddressed.

use crate::support;

use serde_json::{json, Value};
use support::app::App;
use support::handler::invocations;
use support::{sdk_config, unique_name};

const TRUST: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;

/// `cdkd ARGS --app DIR --state-bucket B`: (exit code, stdout, stderr).
fn run(app: &App, args: &[&str]) -> (i32, String, String) {
    let dir = app.dir.path();
    let out = support::cdkd()
        .current_dir(dir)
        .env("CDKD_PROGRESS", "plain")
        .env("CDKD_CUSTOM_RESOURCE_TIMEOUT", "30")
        .args(args)
        .args(["--app", dir.to_str().expect("utf-8 path")])
        .args(["--state-bucket", &app.bucket])
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

/// The stacks' custom-resource handler, real code the emulator runs: `Minter` answers NoEcho
/// with a token derived from the function's name (so no template, state or log holds it before
/// the handler mints it) and refuses the Update to `Nonce` 2; every other resource succeeds.
const HANDLER: &str = r#"import json
import os
import urllib.request


def handler(event, context):
    kind, lid = event["RequestType"], event["LogicalResourceId"]
    props = event.get("ResourceProperties", {})
    doc = {"Status": "SUCCESS", "PhysicalResourceId": "minted-1" if lid == "Minter" else lid.lower() + "-1",
           "StackId": event["StackId"], "RequestId": event["RequestId"], "LogicalResourceId": lid}
    if lid == "Minter" and kind != "Delete":
        name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        doc["NoEcho"] = True
        doc["Data"] = {"Token": "ScanT0ken" + name[::-1].replace("-", "")}
    if kind == "Update" and str(props.get("Nonce")) == "2":
        doc["Status"] = "FAILED"
        doc["Reason"] = "the minter refused this update"
    request = urllib.request.Request(event["ResponseURL"], data=json.dumps(doc).encode(), method="PUT", headers={"Content-Type": ""})
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request).read()
"#;

/// The token [`HANDLER`] mints for `function`.
fn minted_token(function: &str) -> String {
    let reversed: String = function.chars().rev().filter(|c| *c != '-').collect();
    format!("ScanT0ken{reversed}")
}

fn handler_resources(function: &str) -> serde_json::Map<String, Value> {
    let resources = json!({
        "Role": {"Type": "AWS::IAM::Role", "Properties": {
            "AssumeRolePolicyDocument": serde_json::from_str::<Value>(TRUST).expect("trust")}},
        "Handler": {"Type": "AWS::Lambda::Function", "Properties": {
            "FunctionName": function, "Runtime": "python3.12", "Handler": "index.handler",
            "Role": {"Fn::GetAtt": ["Role", "Arn"]},
            "Code": {"ZipFile": HANDLER}}}
    });
    resources.as_object().expect("object").clone()
}

/// The scanned stack: a custom resource `Minter` answering NoEcho (read by `TokenCopy` and an
/// output), a secret reference (`SecretCopy`, an output) and a NoEcho parameter (`PassCopy`,
/// an output). `Minter` depends on the two copies, so a failed Minter update comes after
/// both were updated and the rollback reverts them.
fn scanned_stack(function: &str, base: &str, secret_ref: &str, nonce: u32, desc: &str) -> Value {
    let mut resources = handler_resources(function);
    let ssm = |name: &str, value: Value, desc: &str| {
        json!({"Type": "AWS::SSM::Parameter", "Properties": {
            "Name": format!("{base}/{name}"), "Type": "String", "Description": desc,
            "Value": value}})
    };
    resources.insert("SecretCopy".into(), ssm("secret", json!(secret_ref), desc));
    resources.insert(
        "PassCopy".into(),
        ssm("pass", json!({"Ref": "DbPass"}), desc),
    );
    resources.insert(
        "Minter".into(),
        json!({"Type": "Custom::Minter", "DependsOn": ["SecretCopy", "PassCopy"],
            "Properties": {"ServiceToken": {"Fn::GetAtt": ["Handler", "Arn"]}, "Nonce": nonce}}),
    );
    resources.insert(
        "TokenCopy".into(),
        ssm("token", json!({"Fn::GetAtt": ["Minter", "Token"]}), "token"),
    );
    json!({
        "Parameters": {"DbPass": {"Type": "String", "NoEcho": true}},
        "Resources": resources,
        "Outputs": {
            "TokenOut": {"Value": {"Fn::GetAtt": ["Minter", "Token"]}},
            "PassOut": {"Value": {"Ref": "DbPass"}},
            "SecretOut": {"Value": secret_ref}
        }
    })
}

/// The exit code of a scan step (its stderr is shown by [`run`]).
fn step_code(
    step: &mut impl FnMut(&str, &[&str]) -> (i32, String),
    label: &str,
    args: &[&str],
) -> i32 {
    step(label, args).0
}

async fn ssm_value(ssm: &aws_sdk_ssm::Client, name: &str) -> String {
    ssm.get_parameter()
        .name(name)
        .send()
        .await
        .expect("parameter")
        .parameter
        .and_then(|p| p.value)
        .unwrap_or_default()
}

/// The Done-when scan of issue 16: every command a stack's life takes, on a stack holding all
/// three kinds of secret, prints none of them, and no object version stores one.
#[tokio::test(flavor = "multi_thread")]
async fn no_command_prints_or_stores_a_secret_reference_no_echo_parameter_or_no_echo_data() {
    let config = sdk_config().await;
    let ssm = aws_sdk_ssm::Client::new(&config);
    let app = App::new("cdkd-scan");
    let stack = format!("Scan{}", unique_name("s").replace('-', "x"));
    let function = unique_name("scan-minter");
    let base = format!("/cdkd-test/{}", unique_name("scan"));
    let secret_name = unique_name("scan-secret");
    let secret_plain = format!("ScanS3cret{}", unique_name("v").replace('-', ""));
    let pass_plain = format!("ScanN0Echo{}", unique_name("v").replace('-', ""));
    let token_plain = minted_token(&function);
    aws_sdk_secretsmanager::Client::new(&config)
        .create_secret()
        .name(&secret_name)
        .secret_string(&secret_plain)
        .send()
        .await
        .expect("create secret");
    let secret_ref = format!("{{{{resolve:secretsmanager:{secret_name}:SecretString}}}}");
    let pass = format!("DbPass={pass_plain}");
    let write = |nonce: u32, desc: &str| {
        let template = scanned_stack(&function, &base, &secret_ref, nonce, desc);
        app.write_stacks(&[(&stack, &template, &[])]);
    };
    let mut outputs: Vec<(String, String, String)> = Vec::new();
    let mut step = |label: &str, args: &[&str]| -> (i32, String) {
        let (code, stdout, stderr) = run(&app, args);
        outputs.push((label.to_owned(), stdout, stderr.clone()));
        (code, stderr)
    };

    // Before any deploy: diff and diff --json preview the creates.
    write(1, "d1");
    assert_eq!(
        step_code(
            &mut step,
            "diff (no state)",
            &["diff", "--parameters", &pass]
        ),
        0
    );
    assert_eq!(
        step_code(
            &mut step,
            "diff --json (no state)",
            &["diff", "--json", "--parameters", &pass]
        ),
        0
    );

    // Deploy: the handler answers NoEcho; every reader gets its plaintext in AWS.
    assert_eq!(
        step_code(&mut step, "deploy", &["deploy", "--parameters", &pass]),
        0
    );
    assert_eq!(
        ssm_value(&ssm, &format!("{base}/secret")).await,
        secret_plain
    );
    assert_eq!(ssm_value(&ssm, &format!("{base}/pass")).await, pass_plain);
    assert_eq!(ssm_value(&ssm, &format!("{base}/token")).await, token_plain);
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["SecretCopy"]["properties"]["Value"],
        json!(secret_ref)
    );
    assert_eq!(
        record["resources"]["PassCopy"]["properties"]["Value"],
        json!("***")
    );
    assert_eq!(
        record["resources"]["TokenCopy"]["properties"]["Value"],
        json!("***")
    );

    // Right after the deploy: diff --fail and diff --json --fail are clean.
    let diff = ["diff", "--fail", "--parameters", &pass];
    assert_eq!(step_code(&mut step, "diff --fail", &diff), 0);
    let diff_json = ["diff", "--json", "--fail", "--parameters", &pass];
    assert_eq!(step_code(&mut step, "diff --json --fail", &diff_json), 0);

    // A change previewed: dry run and diff of the next template.
    write(2, "d2");
    let dry = ["deploy", "--dry-run", "--parameters", &pass];
    assert_eq!(step_code(&mut step, "deploy --dry-run", &dry), 0);
    assert_eq!(
        step_code(&mut step, "diff (change)", &["diff", "--parameters", &pass]),
        0
    );
    assert_eq!(
        step_code(
            &mut step,
            "diff --json (change)",
            &["diff", "--json", "--parameters", &pass]
        ),
        0
    );

    // The change deployed: the copies update, Minter's handler fails, the deploy rolls back.
    let (code, failed) = step("failed deploy", &["deploy", "--parameters", &pass]);
    assert_eq!(code, 1, "{failed}");
    assert!(
        failed.contains("the minter refused this update"),
        "{failed}"
    );
    assert!(failed.to_lowercase().contains("roll"), "{failed}");
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["SecretCopy"]["properties"]["Description"],
        json!("d1"),
        "the rollback reverted SecretCopy"
    );
    assert_eq!(
        ssm_value(&ssm, &format!("{base}/secret")).await,
        secret_plain,
        "the rollback sent the secret, not its expression"
    );
    assert_eq!(ssm_value(&ssm, &format!("{base}/pass")).await, pass_plain);

    // Destroy: Minter's Delete is sent (its properties hold nothing masked).
    assert_eq!(step_code(&mut step, "destroy", &["destroy", "--force"]), 0);
    let answered = invocations(&function);
    assert!(
        answered.len() >= 3,
        "Create, the failed Update and the Delete"
    );
    let last = &answered[answered.len() - 1]["payload"];
    assert_eq!(last["RequestType"], "Delete");

    drop(step);
    let plaintexts = [&secret_plain, &pass_plain, &token_plain];
    for (label, stdout, stderr) in &outputs {
        for p in plaintexts {
            assert!(
                !stdout.contains(p.as_str()) && !stderr.contains(p.as_str()),
                "{label} printed a plaintext secret"
            );
        }
    }
    let versions = app.every_object_version().await;
    assert!(
        versions.iter().any(|(key, _)| key.contains(&stack)),
        "the state bucket holds versions of the stack's record"
    );
    for (key, body) in &versions {
        for p in plaintexts {
            assert!(!body.contains(p.as_str()), "{key} holds a plaintext secret");
        }
    }
}

/// A custom resource whose properties a NoEcho parameter fills holds `***` in its record;
/// removing it from the template does not send its handler a Delete carrying `***`: the delete
/// is skipped, the record kept, and the deploy exits 2 (0 with --allow-unaddressed); a
/// `cdkd state destroy`, which holds no template to re-resolve the value from, skips it too,
/// and so does `cdkd destroy` until today's template reads a NoEcho parameter it can bind
/// there, when the handler's Delete carries the value.
#[tokio::test(flavor = "multi_thread")]
async fn a_custom_resource_delete_that_needs_a_masked_property_is_skipped_and_unaddressed() {
    let app = App::new("cdkd-masked-delete");
    let stack = format!("MaskDel{}", unique_name("s").replace('-', "x"));
    let function = unique_name("masked-delete");
    let plain = format!("MaskedDel{}", unique_name("v").replace('-', ""));
    let pass = format!("DbPass={plain}");
    let template = |with_keeper: bool| {
        let mut resources = handler_resources(&function);
        if with_keeper {
            resources.insert(
                "Keeper".into(),
                json!({"Type": "Custom::Keeper", "Properties": {
                    "ServiceToken": {"Fn::GetAtt": ["Handler", "Arn"]},
                    "Password": {"Ref": "DbPass"}}}),
            );
        }
        json!({
            "Parameters": {"DbPass": {"Type": "String", "NoEcho": true}},
            "Resources": resources
        })
    };

    app.write_stacks(&[(&stack, &template(true), &[])]);
    let (code, _, stderr) = run(&app, &["deploy", "--parameters", &pass]);
    assert_eq!(code, 0, "{stderr}");
    let created = invocations(&function);
    assert_eq!(created.len(), 1);
    assert_eq!(
        created[0]["payload"]["ResourceProperties"]["Password"],
        json!(plain)
    );
    let keeper = &app.record(&stack)["resources"]["Keeper"];
    assert_eq!(keeper["properties"]["Password"], json!("***"));
    assert_eq!(keeper["noEchoLeaves"], json!([["Password"]]));

    // Removed from the template: skipped, kept, unaddressed.
    app.write_stacks(&[(&stack, &template(false), &[])]);
    let (code, _, stderr) = run(&app, &["deploy", "--parameters", &pass]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("Keeper: its Delete is not sent")
            && stderr.contains("the record is kept")
            && stderr.contains("cdkd state orphan"),
        "{stderr}"
    );
    assert!(app.record(&stack)["resources"].get("Keeper").is_some());
    let (code, _, stderr) = run(
        &app,
        &["deploy", "--parameters", &pass, "--allow-unaddressed"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("Keeper: its Delete is not sent"),
        "{stderr}"
    );

    // `cdkd state destroy` holds no template: the same skip, a partial destroy.
    let out = support::cdkd()
        .args(["state", "destroy", &stack, "--force"])
        .args(["--state-bucket", &app.bucket])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("Keeper: its Delete is not sent"),
        "{stderr}"
    );
    let left = app.record(&stack);
    assert!(
        left["resources"].get("Keeper").is_some(),
        "the record is kept"
    );

    assert_eq!(
        invocations(&function).len(),
        1,
        "the handler was never sent a Delete"
    );

    // `cdkd destroy` with the app re-resolves a position from today's template only where it
    // reads a NoEcho parameter it can bind: not while the template lacks the resource, nor
    // while the parameter has no Default (destroy takes no parameter values) ...
    let (code, _, stderr) = run(&app, &["destroy", "--force"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("the app's template no longer holds it")
            && stderr.contains("Keeper: its Delete is not sent"),
        "{stderr}"
    );
    app.write_stacks(&[(&stack, &template(true), &[])]);
    let (code, _, stderr) = run(&app, &["destroy", "--force"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("has no Default"), "{stderr}");
    assert_eq!(invocations(&function).len(), 1);
    // ... and then the handler gets the value, never '***'; the record goes.
    let mut with_default = template(true);
    with_default["Parameters"]["DbPass"]["Default"] = json!(plain);
    app.write_stacks(&[(&stack, &with_default, &[])]);
    let (code, stdout, stderr) = run(&app, &["destroy", "--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains(&plain) && !stderr.contains(&plain));
    let all = invocations(&function);
    assert_eq!(all.len(), 2, "one Delete");
    let delete = &all[1]["payload"];
    assert_eq!(delete["RequestType"], "Delete");
    assert_eq!(delete["ResourceProperties"]["Password"], json!(plain));
    for (key, body) in app.every_object_version().await {
        assert!(!body.contains(&plain), "{key} holds the NoEcho value");
    }
}

/// The EC2 UserData shape, `Fn::Base64` over text embedding a secret reference (here an SSM
/// parameter's value): AWS gets the encoding of the resolved text; state stores `***` with
/// the masked-property fingerprints; `diff --fail` is clean right after the deploy and after
/// the secret rotates (nothing is sent); a new value of the public parameter the text reads,
/// or an edit of the text, is a change that diff shows and deploy sends; no command's output
/// and no object version holds the secret or its encoding.
#[tokio::test(flavor = "multi_thread")]
async fn an_encoded_secret_reaches_aws_resolved_and_state_as_the_mask_with_fingerprints() {
    let config = sdk_config().await;
    let ssm = aws_sdk_ssm::Client::new(&config);
    let secrets = aws_sdk_secretsmanager::Client::new(&config);
    let app = App::new("cdkd-b64");
    let stack = format!("Enc{}", unique_name("s").replace('-', "x"));
    let name = format!("/cdkd-test/{}", unique_name("b64"));
    let secret_name = unique_name("b64-secret");
    let first = format!("B64S3cretOne{}", unique_name("v").replace('-', ""));
    let second = format!("B64S3cretTwo{}", unique_name("v").replace('-', ""));
    secrets
        .create_secret()
        .name(&secret_name)
        .secret_string(&first)
        .send()
        .await
        .expect("create secret");
    let reference = format!("{{{{resolve:secretsmanager:{secret_name}:SecretString}}}}");
    let write = |script: &str| {
        let template = json!({
            "Parameters": {"Env": {"Type": "String", "Default": "dev"}},
            "Resources": {"Encoded": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": name, "Type": "String",
                "Value": {"Fn::Base64": {"Fn::Sub": script.replace("SECRET", &reference)}}}}}
        });
        app.write_stacks(&[(&stack, &template, &[])]);
    };
    let encode = |text: &str| aws_smithy_types::base64::encode(text.as_bytes());
    let mut outputs: Vec<(String, String)> = Vec::new();
    let mut step = |args: &[&str]| -> i32 {
        let (code, stdout, stderr) = run(&app, args);
        outputs.push((stdout, stderr));
        code
    };

    write("#!/bin/sh\necho ${Env} SECRET\n");
    assert_eq!(step(&["deploy"]), 0);
    assert_eq!(
        ssm_value(&ssm, &name).await,
        encode(&format!("#!/bin/sh\necho dev {first}\n")),
        "AWS gets the encoding of the resolved text"
    );
    let record = app.record(&stack);
    let encoded = &record["resources"]["Encoded"];
    assert_eq!(encoded["properties"]["Value"], json!("***"));
    let text_print = encoded["maskedPropertyFingerprints"]["Value"]
        .as_str()
        .expect("a text fingerprint")
        .to_owned();
    assert!(text_print.starts_with("sha256:"), "{text_print}");
    let input_print = encoded["maskedPropertyInputFingerprints"]["Value"]
        .as_str()
        .expect("an input fingerprint")
        .to_owned();
    assert!(
        input_print.starts_with("inputs-sha256:")
            && input_print.ends_with(&format!("+{text_print}")),
        "{input_print}"
    );
    assert_eq!(step(&["diff", "--fail"]), 0, "clean right after the deploy");

    // A record an older writer left without the fields: the next deploy fills them in from
    // the template it deploys and sends nothing.
    let s3 = support::s3_client().await;
    let key = format!("cdkd/{stack}/us-east-1/state.json");
    let body = s3
        .get_object()
        .bucket(&app.bucket)
        .key(&key)
        .send()
        .await
        .expect("record");
    let bytes = body.body.collect().await.expect("body").into_bytes();
    let mut stripped: Value = serde_json::from_slice(&bytes).expect("json");
    let fields = stripped["resources"]["Encoded"]
        .as_object_mut()
        .expect("record");
    fields.remove("maskedPropertyFingerprints");
    fields.remove("maskedPropertyInputFingerprints");
    s3.put_object()
        .bucket(&app.bucket)
        .key(&key)
        .body(serde_json::to_vec(&stripped).expect("json").into())
        .send()
        .await
        .expect("put");
    let version = |ssm: aws_sdk_ssm::Client, name: String| async move {
        ssm.get_parameter()
            .name(name)
            .send()
            .await
            .expect("get")
            .parameter
            .map(|p| p.version)
    };
    let before = version(ssm.clone(), name.clone()).await;
    assert_eq!(step(&["deploy"]), 0);
    assert_eq!(
        version(ssm.clone(), name.clone()).await,
        before,
        "nothing was sent"
    );
    let refilled = app.record(&stack);
    assert_eq!(
        refilled["resources"]["Encoded"]["maskedPropertyFingerprints"]["Value"],
        json!(text_print),
        "the text fingerprint is filled in"
    );
    assert_eq!(
        refilled["resources"]["Encoded"]["maskedPropertyInputFingerprints"]["Value"],
        json!(input_print)
    );

    // A rotated secret behind an unchanged template: nothing to show, nothing sent.
    secrets
        .put_secret_value()
        .secret_id(&secret_name)
        .secret_string(&second)
        .send()
        .await
        .expect("rotate");
    assert_eq!(step(&["diff", "--fail"]), 0, "a rotation is not a change");
    assert_eq!(step(&["deploy"]), 0);
    assert_eq!(
        ssm_value(&ssm, &name).await,
        encode(&format!("#!/bin/sh\necho dev {first}\n")),
        "nothing was sent for a rotation"
    );

    // A new value of the public parameter the text reads: shown and sent.
    assert_eq!(step(&["diff", "--fail", "--parameters", "Env=prod"]), 1);
    assert_eq!(step(&["deploy", "--parameters", "Env=prod"]), 0);
    assert_eq!(
        ssm_value(&ssm, &name).await,
        encode(&format!("#!/bin/sh\necho prod {second}\n"))
    );
    assert_eq!(step(&["diff", "--fail", "--parameters", "Env=prod"]), 0);

    // An edit of the text around the reference: shown and sent.
    write("#!/bin/sh\necho edited ${Env} SECRET\n");
    assert_eq!(step(&["diff", "--fail", "--parameters", "Env=prod"]), 1);
    assert_eq!(step(&["deploy", "--parameters", "Env=prod"]), 0);
    assert_eq!(
        ssm_value(&ssm, &name).await,
        encode(&format!("#!/bin/sh\necho edited prod {second}\n"))
    );
    assert_eq!(step(&["diff", "--fail", "--parameters", "Env=prod"]), 0);
    assert_eq!(step(&["destroy", "--force"]), 0);

    drop(step);
    let mut forbidden = vec![first.clone(), second.clone()];
    for text in [
        format!("#!/bin/sh\necho dev {first}\n"),
        format!("#!/bin/sh\necho prod {second}\n"),
        format!("#!/bin/sh\necho edited prod {second}\n"),
    ] {
        forbidden.push(encode(&text));
    }
    for (stdout, stderr) in &outputs {
        for p in &forbidden {
            assert!(
                !stdout.contains(p.as_str()) && !stderr.contains(p.as_str()),
                "a command printed a secret or its encoding"
            );
        }
    }
    for (key, body) in &app.every_object_version().await {
        for p in &forbidden {
            assert!(
                !body.contains(p.as_str()),
                "{key} holds a secret or its encoding"
            );
        }
    }
}
