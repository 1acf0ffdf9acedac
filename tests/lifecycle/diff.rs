//! `cdkd diff` end to end against the emulator: right after a deploy of a fixture app
//! `cdkd diff --fail` exits 0; the app's second variant exits 1 with exactly the expected rows
//! (golden files, random suffixes and the endpoint filtered); a stack reading a secret and a
//! NoEcho parameter never shows either value.

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
        assert_clean(&dir, &bucket, &["--all"]);
        if app == "nested" {
            // The child is diffed too, against its own record.
            let (_, stdout, _) = run("diff", &dir, &bucket, &["--all"]);
            assert!(stdout.contains("Stack ParentStack~"), "{stdout}");
        }
        // The second variant: nested, the child queue's VisibilityTimeout in place (its only
        // non-stateful create-only candidate is the queue the parent reads); lambda, a
        // function's Timeout in place and the other's FunctionName (create-only).
        assert_variant_golden(&format!("{app}-v2"), &bucket, &["--all"]);
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
