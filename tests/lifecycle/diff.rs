//! `cdkd diff` end to end against the emulator: right after a deploy of a fixture app
//! `cdkd diff --fail` exits 0; the app's second variant exits 1 with exactly the expected rows
//! (golden files, random suffixes and the endpoint filtered); a stack reading a secret and a
//! NoEcho parameter never shows either value; public SSM values compare resolved (an
//! out-of-band change is exactly that change) while no secret is fetched; a no-change deploy
//! keeps an output it cannot resolve, and its export; and the property test: generated
//! templates and the SSM-reading fixture, deployed, then diffed and dry-run with nothing to do.

#[path = "diff_support/generate.rs"]
mod generate;

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::{cdkd, sdk_config, unique_name};

fn fixture(app: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/apps")
        .join(app)
        .join("cdk.out")
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/golden/diff")
        .join(name)
}

/// Runs `cdkd <command> --app DIR --state-bucket B ...`: (exit code, stdout, stderr).
fn run(command: &str, dir: &Path, bucket: &str, extra: &[&str]) -> (i32, String, String) {
    let out = cdkd()
        .current_dir(dir)
        .arg(command)
        .args(["--app", dir.to_str().unwrap(), "--state-bucket", bucket])
        .args(extra)
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    eprintln!("--- cdkd {command} {extra:?}\n{stdout}\n{stderr}");
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

fn bootstrap() -> String {
    let bucket = unique_name("cdkd-diff");
    let out = cdkd()
        .args(["bootstrap", "--state-bucket", &bucket])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    bucket
}

fn deploy(dir: &Path, bucket: &str, extra: &[&str]) {
    let (code, _, stderr) = run("deploy", dir, bucket, extra);
    assert_eq!(code, 0, "deploy failed:\n{stderr}");
}

/// Right after a deploy, a diff has nothing to say and `--fail` passes.
fn assert_clean(dir: &Path, bucket: &str, extra: &[&str]) {
    let mut args = vec!["--fail"];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = run("diff", dir, bucket, &args);
    assert_eq!(
        code, 0,
        "a phantom change right after a deploy:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("There were no differences"), "{stdout}");
    assert!(!stdout.contains("[~]") && !stdout.contains("[+]") && !stdout.contains("[-]"));
    let mut args = vec!["--fail", "--json"];
    args.extend_from_slice(extra);
    let (code, stdout, _) = run("diff", dir, bucket, &args);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(v["hasChanges"], json!(false), "{v}");
}

/// Output with what changes between runs replaced: generated-name suffixes, the emulator's
/// endpoint, the account.
fn normalize(text: &str) -> String {
    let suffix = regex::Regex::new(r"-[A-Z0-9]{12}\b").unwrap();
    let endpoint = regex::Regex::new(r"https?://127\.0\.0\.1:\d+").unwrap();
    let account = regex::Regex::new(r"\b\d{12}\b").unwrap();
    let text = suffix.replace_all(text, "-<SUFFIX>");
    let text = endpoint.replace_all(&text, "<ENDPOINT>");
    account.replace_all(&text, "<ACCOUNT>").into_owned()
}

/// Compares with a golden file; `UPDATE_GOLDEN=1` rewrites it.
fn assert_golden(name: &str, actual: &str) {
    let path = golden(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
    assert_eq!(actual, expected, "golden {name} differs");
}

/// `cdkd diff --fail` on the app's second variant (against what the first variant
/// deployed) exits 1; the human and JSON output match `fixtures/golden/diff/<variant>.{txt,json}`.
fn assert_variant_golden(variant: &str, bucket: &str, extra: &[&str]) {
    let dir = fixture(variant);
    let mut args = vec!["--fail"];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = run("diff", &dir, bucket, &args);
    assert_eq!(code, 1, "{variant}:\n{stdout}\n{stderr}");
    assert_golden(&format!("{variant}.txt"), &normalize(&stdout));
    args.push("--json");
    let (code, stdout, stderr) = run("diff", &dir, bucket, &args);
    assert_eq!(code, 1, "{variant} --json:\n{stdout}\n{stderr}");
    let parsed: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(parsed["hasChanges"], json!(true), "{parsed}");
    assert_golden(&format!("{variant}.json"), &normalize(&stdout));
}

async fn delete_parameter(name: &str) {
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    let _ = ssm.delete_parameter().name(name).send().await;
}

#[tokio::test]
async fn basic_is_clean_after_deploy_and_its_second_variant_shows_exactly_its_rows() {
    // The fixture names its parameter; a run before this one may have left it.
    delete_parameter("/cdkd/basic/bucket-name").await;
    let bucket = bootstrap();
    let v1 = fixture("basic");

    // Before the first deploy everything is a create.
    let (code, stdout, _) = run("diff", &v1, &bucket, &["--fail"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("Stack BasicStack (not deployed yet)"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("[+] AWS::").count(), 8, "{stdout}");
    // Without --fail a diff is not a failure.
    assert_eq!(run("diff", &v1, &bucket, &[]).0, 0);

    deploy(&v1, &bucket, &[]);
    assert_clean(&v1, &bucket, &[]);

    let v2 = fixture("basic-v2");
    let (code, stdout, stderr) = run("diff", &v2, &bucket, &["--fail"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert_golden("basic-v2.txt", &normalize(&stdout));
    let (code, stdout, _) = run("diff", &v2, &bucket, &["--fail", "--json"]);
    assert_eq!(code, 1);
    let parsed: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(parsed["hasChanges"], json!(true));
    assert_golden("basic-v2.json", &normalize(&stdout));

    // The diff took no lock and wrote nothing: the deploy still has nothing to do.
    assert_clean(&v1, &bucket, &[]);
    delete_parameter("/cdkd/basic/bucket-name").await;
}

#[tokio::test]
async fn params_is_clean_after_deploy_and_a_parameter_flip_is_a_change() {
    delete_parameter("/cdkd/params/settings").await;
    let bucket = bootstrap();
    let dir = fixture("params");
    deploy(&dir, &bucket, &[]);
    assert_clean(&dir, &bucket, &[]);
    // EnvName=prod flips the conditions: a conditional queue and parameter appear and the
    // retention moves. An output that reads the new queue cannot be resolved yet, so the
    // Outputs section is not compared (and says so).
    let (code, stdout, stderr) = run(
        "diff",
        &dir,
        &bucket,
        &["--fail", "--parameters", "EnvName=prod"],
    );
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("[+] AWS::SQS::Queue DeadLetterQueue"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[+] AWS::SSM::Parameter ProdFlag"),
        "{stdout}"
    );
    assert!(stdout.contains("[~] MessageRetentionPeriod"), "{stdout}");
    assert!(
        stdout.contains("the Outputs section is not compared"),
        "{stdout}"
    );
    // The NoEcho default never shows.
    assert!(!stdout.contains("not-a-real-secret") && !stderr.contains("not-a-real-secret"));
    // The second variant: the queue's DelaySeconds 5 -> 10 in place and its QueueName
    // (create-only: a replacement).
    assert_variant_golden("params-v2", &bucket, &[]);
    delete_parameter("/cdkd/params/settings").await;
}

#[tokio::test]
async fn stages_are_clean_after_deploy() {
    delete_parameter("/cdkd/stages/table-name").await;
    let bucket = bootstrap();
    let dir = fixture("stages");
    deploy(&dir, &bucket, &["--all"]);
    assert_clean(&dir, &bucket, &["--all"]);
    // The second variant: the stage's parameter gains a Description (in place), the root
    // queue a QueueName (create-only).
    assert_variant_golden("stages-v2", &bucket, &["--all"]);
    delete_parameter("/cdkd/stages/table-name").await;
}

#[tokio::test]
async fn cross_stack_is_clean_after_deploy() {
    let dir = fixture("cross-stack");
    let names = cross_stack_parameters(&dir);
    for n in &names {
        delete_parameter(n).await;
    }
    let bucket = bootstrap();
    deploy(&dir, &bucket, &["--all"]);
    assert_clean(&dir, &bucket, &["--all"]);
    // The second variant: the producer queue's VisibilityTimeout in place, the consumer
    // role's RoleName (create-only; its policy's Roles follows the replacement).
    assert_variant_golden("cross-stack-v2", &bucket, &["--all"]);
    for n in &names {
        delete_parameter(n).await;
    }
}

/// The fixed SSM parameter names the cross-stack fixture declares.
fn cross_stack_parameters(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("ConsumerStack.template.json")).unwrap();
    let t: Value = serde_json::from_str(&text).unwrap();
    t["Resources"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, r)| r["Properties"]["Name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_stack_reading_a_secret_and_a_no_echo_value_never_shows_them() {
    let config = sdk_config().await;
    let secret_name = unique_name("diff-secret");
    let secret_plain = "Pl41nD1ffS3cret";
    let no_echo_plain = "N0Ech0D1ffValue";
    aws_sdk_secretsmanager::Client::new(&config)
        .create_secret()
        .name(&secret_name)
        .secret_string(json!({"password": secret_plain}).to_string())
        .send()
        .await
        .expect("create secret");
    let base = format!("/cdkd-diff/{}", unique_name("p"));
    let secret_ref = format!("{{{{resolve:secretsmanager:{secret_name}:SecretString:password}}}}");
    let template = |prefix: &str| {
        json!({
            "Parameters": {"DbPass": {"Type": "String", "NoEcho": true, "Default": "d"}},
            "Resources": {
                "FromSecret": {"Type": "AWS::SSM::Parameter", "Properties": {
                    "Name": format!("{base}/secret"), "Type": "String",
                    "Value": format!("{prefix}{secret_ref}")}},
                "FromNoEcho": {"Type": "AWS::SSM::Parameter", "Properties": {
                    "Name": format!("{base}/noecho"), "Type": "String",
                    "Value": {"Fn::Sub": "pw=${DbPass}"}}}
            },
            "Outputs": {"NoEchoOut": {"Value": {"Ref": "DbPass"}}}
        })
    };
    let stack = format!("Diff{}", unique_name("sec").replace('-', "x"));
    let write = |dir: &Path, t: &Value| {
        let manifest = json!({"version": "36.0.0", "artifacts": {stack.clone(): {
            "type": "aws:cloudformation:stack",
            "environment": "aws://unknown-account/unknown-region",
            "properties": {"templateFile": format!("{stack}.template.json")}
        }}});
        std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
        std::fs::write(dir.join(format!("{stack}.template.json")), t.to_string()).unwrap();
    };
    let v1 = tempfile::tempdir().unwrap();
    let v2 = tempfile::tempdir().unwrap();
    write(v1.path(), &template(""));
    write(v2.path(), &template("x-"));
    let bucket = bootstrap();
    let pass = format!("DbPass={no_echo_plain}");
    deploy(v1.path(), &bucket, &["--parameters", &pass]);

    let check = |text: &str| {
        assert!(
            !text.contains(secret_plain),
            "secret plaintext shown:\n{text}"
        );
        assert!(!text.contains(no_echo_plain), "NoEcho value shown:\n{text}");
    };
    for json_flag in [false, true] {
        let mut args = vec!["--fail", "--parameters", &pass];
        if json_flag {
            args.push("--json");
        }
        let (code, stdout, stderr) = run("diff", v1.path(), &bucket, &args);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        check(&stdout);
        check(&stderr);
        // The variant changes the secret-bearing value: shown as its expression.
        let (code, stdout, stderr) = run("diff", v2.path(), &bucket, &args);
        assert_eq!(code, 1, "{stdout}\n{stderr}");
        check(&stdout);
        check(&stderr);
        assert!(stdout.contains(&format!("x-{secret_ref}")), "{stdout}");
    }
}

/// The CDK bootstrap's asset bucket, which the nested and lambda fixtures publish to.
async fn asset_bucket() {
    let s3 = support::s3_client().await;
    let _ = s3
        .create_bucket()
        .bucket("cdk-hnb659fds-assets-123456789012-us-east-1")
        .send()
        .await;
}

#[tokio::test]
async fn nested_and_lambda_are_clean_after_deploy() {
    delete_parameter("/cdkd/nested/child-queue-arn").await;
    asset_bucket().await;
    for app in ["nested", "lambda"] {
        let bucket = bootstrap();
        let dir = fixture(app);
        deploy(&dir, &bucket, &["--all"]);
        assert_clean(&dir, &bucket, &["--all", "--recursive"]);
        if app == "nested" {
            // With --recursive the child is diffed too, against its own record; without it
            // (upstream's default, as `cdk diff`) only the parent is.
            let (_, stdout, _) = run("diff", &dir, &bucket, &["--all", "--recursive"]);
            assert!(stdout.contains("Stack ParentStack~"), "{stdout}");
            let (_, stdout, _) = run("diff", &dir, &bucket, &["--all"]);
            assert!(!stdout.contains("Stack ParentStack~"), "{stdout}");
        }
        // The second variant: nested, the child queue's VisibilityTimeout in place (its only
        // non-stateful create-only candidate is the queue the parent reads); lambda, a
        // function's Timeout in place and the other's FunctionName (create-only).
        assert_variant_golden(&format!("{app}-v2"), &bucket, &["--all", "--recursive"]);
        if app == "nested" {
            // The nested row removed from the parent: --recursive shows the child's whole
            // record as deleted under its parent.
            let gone = tempfile::tempdir().unwrap();
            let manifest = json!({"version": "36.0.0", "artifacts": {"ParentStack": {
                "type": "aws:cloudformation:stack",
                "environment": "aws://unknown-account/unknown-region",
                "properties": {"templateFile": "p.json"}
            }}});
            std::fs::write(gone.path().join("manifest.json"), manifest.to_string()).unwrap();
            let template = json!({"Resources": {"Kept": {"Type": "AWS::SQS::Queue"}}});
            std::fs::write(gone.path().join("p.json"), template.to_string()).unwrap();
            let (code, stdout, stderr) = run(
                "diff",
                gone.path(),
                &bucket,
                &["--recursive", "--json", "--fail"],
            );
            assert_eq!(code, 1, "{stdout}\n{stderr}");
            let v: Value = serde_json::from_str(&stdout).expect("json");
            let child = &v["stacks"][0]["nested"][0];
            assert!(
                child["stackName"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("ParentStack~ChildNestedStack")),
                "{v}"
            );
            let rows = child["resources"].as_array().expect("rows");
            assert!(
                !rows.is_empty() && rows.iter().all(|r| r["change"] == json!("DELETE")),
                "{v}"
            );
        }
    }
    delete_parameter("/cdkd/nested/child-queue-arn").await;
}

#[tokio::test]
async fn a_damaged_record_is_previewed_and_blocks_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let stack = format!("Diff{}", unique_name("dmg").replace('-', "x"));
    let manifest = json!({"version": "36.0.0", "artifacts": {stack.clone(): {
        "type": "aws:cloudformation:stack",
        "environment": "aws://unknown-account/unknown-region",
        "properties": {"templateFile": "t.json"}
    }}});
    std::fs::write(dir.path().join("manifest.json"), manifest.to_string()).unwrap();
    let template = json!({"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}});
    std::fs::write(dir.path().join("t.json"), template.to_string()).unwrap();
    let bucket = bootstrap();
    let body = json!({"version": 11, "stackName": stack, "region": "us-east-1",
        "resources": {"Queue": "not a record"}});
    support::s3_client()
        .await
        .put_object()
        .bucket(&bucket)
        .key(format!("cdkd/{stack}/us-east-1/state.json"))
        .body(body.to_string().into_bytes().into())
        .send()
        .await
        .expect("put state");
    let (code, stdout, stderr) = run("diff", dir.path(), &bucket, &[]);
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    assert!(stdout.contains("Blocking"), "{stdout}");
    assert!(stdout.contains("STATE_RESOURCES_MALFORMED"), "{stdout}");
    let (code, stdout, _) = run("diff", dir.path(), &bucket, &["--json"]);
    assert_eq!(code, 3);
    let v: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(v["blocked"], json!(true));
}

/// Puts an SSM String parameter (overwriting).
async fn put_parameter(name: &str, value: &str) {
    aws_sdk_ssm::Client::new(&sdk_config().await)
        .put_parameter()
        .name(name)
        .value(value)
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .overwrite(true)
        .send()
        .await
        .expect("put parameter");
}

/// The SDK operations a `CDKD_TRACE_FILE` trace recorded.
fn traced_operations(trace: &Path) -> Vec<String> {
    std::fs::read_to_string(trace)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["op"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn public_ssm_values_are_compared_resolved_and_an_out_of_band_change_is_exactly_that_change()
{
    let config = sdk_config().await;
    let base = format!("/cdkd-diff/{}", unique_name("dyn"));
    let name = format!("{base}/name");
    let typed = format!("{base}/typed");
    let versioned = format!("{base}/versioned");
    put_parameter(&name, "plain-value-1").await;
    put_parameter(&typed, "typed-value-1").await;
    put_parameter(&versioned, "version-one").await;
    put_parameter(&versioned, "version-two").await;
    let secret_name = unique_name("diff-dyn-secret");
    let secret_plain = "S3cretN0tF3tched";
    aws_sdk_secretsmanager::Client::new(&config)
        .create_secret()
        .name(&secret_name)
        .secret_string(secret_plain)
        .send()
        .await
        .expect("create secret");
    let stack = format!("Diff{}", unique_name("dyn").replace('-', "x"));
    let template = json!({
        "Parameters": {"Typed": {"Type": "AWS::SSM::Parameter::Value<String>", "Default": typed}},
        "Resources": {
            "Whole": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": format!("{base}/out-whole"), "Type": "String",
                "Value": format!("{{{{resolve:ssm:{name}}}}}")}},
            "Joined": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": format!("{base}/out-joined"), "Type": "String",
                "Value": {"Fn::Join": ["-", ["pre", format!("{{{{resolve:ssm:{name}}}}}"),
                    {"Ref": "Typed"}]]}}},
            "Versioned": {"Type": "AWS::SNS::Topic", "Properties": {
                "DisplayName": format!("{{{{resolve:ssm:{versioned}:1}}}}")}},
            "FromSecret": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": format!("{base}/out-secret"), "Type": "String",
                "Value": format!("s={{{{resolve:secretsmanager:{secret_name}}}}}")}}
        },
        "Outputs": {"Shown": {"Value": format!("{{{{resolve:ssm:{name}}}}}")}}
    });
    let app = support::app::App::new("cdkd-diff-dyn");
    app.write_stacks(&[(&stack, &template, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["Joined"]["properties"]["Value"],
        json!("pre-plain-value-1-typed-value-1"),
        "{record}"
    );
    let dir = app.dir.path();
    assert_clean(dir, &app.bucket, &[]);
    // The dry run plans the same: nothing to do.
    let (code, stdout, stderr) = run("deploy", dir, &app.bucket, &["--dry-run"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stderr.contains("no resource changes"), "{stdout}\n{stderr}");

    // No secret is read by the diff, and none of its plaintext is shown.
    let trace = dir.join("diff-trace.jsonl");
    let out = cdkd()
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("CDKD_TRACE_FILE", &trace)
        .args(["diff", "--fail", "--app", dir.to_str().unwrap()])
        .args(["--state-bucket", &app.bucket])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let ops = traced_operations(&trace);
    assert!(ops.iter().any(|o| o.ends_with("GetParameter")), "{ops:?}");
    assert!(!ops.iter().any(|o| o.contains("GetSecretValue")), "{ops:?}");

    // Out of band: the public value changes. The diff shows exactly that change, in both
    // resources that read it and in the output, and nothing else.
    put_parameter(&name, "plain-value-2").await;
    let (code, stdout, stderr) = run("diff", dir, &app.bucket, &["--fail", "--json"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(!stdout.contains(secret_plain) && !stderr.contains(secret_plain));
    let v: Value = serde_json::from_str(&stdout).expect("json");
    let diff = &v["stacks"][0];
    let rows: Vec<(String, String, Value, Value)> = diff["resources"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| {
            r["properties"].as_array().unwrap().iter().map(move |p| {
                (
                    r["logicalId"].as_str().unwrap().to_owned(),
                    p["path"].as_str().unwrap().to_owned(),
                    p["old"].clone(),
                    p["new"].clone(),
                )
            })
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (
                "Whole".to_owned(),
                "Value".to_owned(),
                json!("plain-value-1"),
                json!("plain-value-2")
            ),
            (
                "Joined".to_owned(),
                "Value".to_owned(),
                json!("pre-plain-value-1-typed-value-1"),
                json!("pre-plain-value-2-typed-value-1")
            ),
        ],
        "{v}"
    );
    let outputs: Vec<(String, Value, Value)> = diff["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["key"].as_str().unwrap().to_owned(),
                o["old"].clone(),
                o["new"].clone(),
            )
        })
        .collect();
    assert_eq!(
        outputs,
        vec![(
            "Shown".to_owned(),
            json!("plain-value-1"),
            json!("plain-value-2")
        )],
        "{v}"
    );
    // The SSM-typed parameter's value changes too: the resource reading it shows it.
    put_parameter(&name, "plain-value-1").await;
    put_parameter(&typed, "typed-value-2").await;
    let (code, stdout, stderr) = run("diff", dir, &app.bucket, &["--fail"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("pre-plain-value-1-typed-value-2"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("Whole") && !stdout.contains("Versioned"),
        "{stdout}"
    );
    // Deployed, the diff is clean again.
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_clean(dir, &app.bucket, &[]);
}

/// `cdkd diff --all --fail` and `cdkd deploy --all --dry-run` right after a deploy: nothing.
fn assert_all_clean(dir: &Path, bucket: &str, stacks: &[&str], label: &str) {
    assert_clean(dir, bucket, &["--all"]);
    let (code, stdout, stderr) = run("deploy", dir, bucket, &["--all", "--dry-run"]);
    assert_eq!(code, 0, "{label}: dry run\n{stdout}\n{stderr}");
    for stack in stacks {
        let plan = format!("{stack} (");
        let line = stderr
            .lines()
            .find(|l| l.contains(&plan))
            .unwrap_or_else(|| panic!("{label}: no plan line for {stack}\n{stderr}"));
        assert!(
            line.contains("no resource changes"),
            "{label}: the dry run plans a change right after a deploy: {line}\n{stderr}"
        );
    }
}

#[tokio::test]
async fn property_a_diff_right_after_a_deploy_is_empty_for_generated_templates_and_fixtures() {
    let seed: u64 = std::env::var("CDKD_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(1)
        });
    eprintln!("property test seed: CDKD_DIFF_SEED={seed}");
    let config = sdk_config().await;
    let base = format!("/cdkd-prop/{}", unique_name("p"));
    let (public, typed) = (format!("{base}/public"), format!("{base}/typed"));
    put_parameter(&public, "public-one").await;
    put_parameter(&public, "public-two").await;
    put_parameter(&typed, "typed-one").await;
    let secret = unique_name("prop-secret");
    let secret_plain = "Pr0pS3cretValue";
    aws_sdk_secretsmanager::Client::new(&config)
        .create_secret()
        .name(&secret)
        .secret_string(secret_plain)
        .send()
        .await
        .expect("create secret");

    // Generated apps: a chain of stacks, each importing the previous one's export; deployed,
    // then regenerated with the same resource types (in-place updates) and deployed again.
    let mut rng = generate::Rng::new(seed);
    let app = support::app::App::new("cdkd-prop");
    let names: Vec<String> = (0..5)
        .map(|i| format!("Prop{}S{i}", unique_name("g").replace('-', "x")))
        .collect();
    let shapes: Vec<Vec<&'static str>> = names
        .iter()
        .map(|_| {
            (0..2 + rng.below(4))
                .map(|_| generate::TYPES[rng.below(generate::TYPES.len())])
                .collect()
        })
        .collect();
    for round in 0..2 {
        let templates: Vec<Value> = names
            .iter()
            .zip(&shapes)
            .enumerate()
            .map(|(i, (name, types))| {
                let world = generate::World {
                    public: public.clone(),
                    typed: typed.clone(),
                    secret: secret.clone(),
                    import: (i > 0).then(|| format!("{}-Out0", names[i - 1])),
                };
                generate::stack(&mut rng, &world, name, types)
            })
            .collect();
        let deps: Vec<Vec<&str>> = (0..names.len())
            .map(|i| match i {
                0 => Vec::new(),
                _ => vec![names[i - 1].as_str()],
            })
            .collect();
        let stacks: Vec<(&str, &Value, &[&str])> = names
            .iter()
            .zip(&templates)
            .zip(&deps)
            .map(|((n, t), d)| (n.as_str(), t, d.as_slice()))
            .collect();
        app.write_stacks(&stacks);
        let label = format!("seed {seed} round {round}");
        let (code, _, stderr) = app.deploy(&["--all"]);
        assert_eq!(code, 0, "{label}: deploy failed\n{stderr}");
        let stacks: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_all_clean(app.dir.path(), &app.bucket, &stacks, &label);
        let (_, stdout, stderr) = run("diff", app.dir.path(), &app.bucket, &["--all"]);
        assert!(!stdout.contains(secret_plain) && !stderr.contains(secret_plain));
    }

    // The fixture apps that read SSM at deploy time (the others are covered above in this
    // file, each deployed then diffed).
    for name in [
        "/cdkd/dynamic-refs/out-whole",
        "/cdkd/dynamic-refs/out-joined",
    ] {
        delete_parameter(name).await;
    }
    for (name, value) in [
        ("/cdkd/dynamic-refs/app-name", "fixture-name"),
        ("/cdkd/dynamic-refs/typed", "fixture-typed"),
        ("/cdkd/dynamic-refs/pinned", "fixture-pinned"),
    ] {
        put_parameter(name, value).await;
    }
    let bucket = bootstrap();
    let dir = fixture("dynamic-refs");
    deploy(&dir, &bucket, &["--all"]);
    assert_all_clean(&dir, &bucket, &["DynamicRefsStack"], "dynamic-refs");
    put_parameter("/cdkd/dynamic-refs/app-name", "fixture-name-2").await;
    let (code, stdout, stderr) = run("diff", &dir, &bucket, &["--all", "--fail"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("fixture-name-2"), "{stdout}");
    let (code, _, stderr) = run("destroy", &dir, &bucket, &["--all", "--force"]);
    assert_eq!(code, 0, "{stderr}");
}

#[tokio::test]
async fn a_no_change_deploy_keeps_an_output_it_cannot_resolve_and_its_export_and_diff_agrees() {
    let source = format!("/cdkd-diff/{}/source", unique_name("keep"));
    put_parameter(&source, "kept-value").await;
    let producer = format!("Keep{}", unique_name("p").replace('-', "x"));
    let consumer = format!("{producer}Reader");
    let export = format!("{producer}-name");
    let producer_t = json!({
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {
            "Name": {"Value": format!("{{{{resolve:ssm:{source}}}}}"), "Export": {"Name": export}},
            "Url": {"Value": {"Ref": "Queue"}}
        }
    });
    let consumer_t = json!({"Resources": {"Copy": {"Type": "AWS::SNS::Topic",
        "Properties": {"DisplayName": {"Fn::ImportValue": export}}}}});
    let app = support::app::App::new("cdkd-diff-keep");
    app.write_stacks(&[(&producer, &producer_t, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");

    // The value the output reads is gone: the deploy cannot resolve it this time.
    delete_parameter(&source).await;
    let dir = app.dir.path();
    let (code, stdout, stderr) = run("diff", dir, &app.bucket, &["--fail", "--json"]);
    assert_eq!(
        code, 0,
        "the diff previews the output as kept:\n{stdout}\n{stderr}"
    );
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("output Name skipped"), "{stderr}");
    let record = app.record(&producer);
    assert_eq!(record["outputs"]["Name"], json!("kept-value"), "{record}");
    assert_eq!(record["outputs"][&export], json!("kept-value"), "{record}");
    assert!(
        record["exportNames"]
            .as_array()
            .is_some_and(|a| a.contains(&json!(export))),
        "{record}"
    );
    assert!(record["skippedOutputs"]["Name"].is_string(), "{record}");
    let (code, stdout, stderr) = run("diff", dir, &app.bucket, &["--fail"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // A second no-change deploy writes nothing, and the export still resolves for a consumer.
    app.write_stacks(&[
        (&producer, &producer_t, &[]),
        (&consumer, &consumer_t, &[&producer]),
    ]);
    let (code, _, stderr) = app.deploy(&["--all"]);
    assert_eq!(code, 0, "{stderr}");
    let record = app.record(&consumer);
    assert_eq!(
        record["resources"]["Copy"]["properties"]["DisplayName"],
        json!("kept-value"),
        "{record}"
    );
    assert_clean(dir, &app.bucket, &["--all"]);
}
