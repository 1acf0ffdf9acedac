//! `cdkd scrub` end to end against the emulator: a record written with plaintext secrets (as
//! an older cdkd would have) is found by `--dry-run --fail` (exit 1, every object version
//! byte-identical), repaired by a real run (no plaintext in any version of any object), clean
//! afterwards, and `cdkd diff --fail` agrees; a malformed record is refused with exit 2.

mod support;

use serde_json::{json, Value};
use support::{cdkd, s3_client, sdk_config, unique_name};
use tempfile::TempDir;

const REGION: &str = "us-east-1";

struct App {
    dir: TempDir,
    bucket: String,
}

impl App {
    fn new() -> App {
        let app = App {
            dir: tempfile::tempdir().expect("temp dir"),
            bucket: unique_name("cdkd-scrub"),
        };
        let out = cdkd()
            .args(["bootstrap", "--state-bucket", &app.bucket])
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        app
    }

    fn write_stack(&self, name: &str, template: &Value) {
        let file = format!("{name}.template.json");
        let manifest = json!({"version": "36.0.0", "artifacts": {name: {
            "type": "aws:cloudformation:stack",
            "environment": "aws://unknown-account/unknown-region",
            "properties": {"templateFile": file}
        }}});
        std::fs::write(self.dir.path().join(&file), template.to_string()).expect("template");
        std::fs::write(self.dir.path().join("manifest.json"), manifest.to_string())
            .expect("manifest");
    }

    /// `cdkd <command> --app DIR --state-bucket B ...`: (exit code, stdout + stderr).
    fn run(&self, command: &str, extra: &[&str]) -> (i32, String) {
        let dir = self.dir.path().to_str().expect("utf-8 path");
        let out = cdkd()
            .current_dir(self.dir.path())
            .arg(command)
            .args(["--app", dir, "--state-bucket", &self.bucket])
            .args(extra)
            .output()
            .expect("runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("--- cdkd {command} {extra:?}\n{text}");
        (out.status.code().unwrap_or(-1), text)
    }

    fn state_key(&self, stack: &str) -> String {
        format!("cdkd/{stack}/{REGION}/state.json")
    }

    async fn put(&self, key: &str, body: String) {
        s3_client()
            .await
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(body.into_bytes().into())
            .send()
            .await
            .expect("put");
    }

    async fn get(&self, key: &str) -> String {
        let out = s3_client()
            .await
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .expect("get");
        let bytes = out.body.collect().await.expect("body").into_bytes();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Every version of every object: (key@version, body), sorted.
    async fn every_object_version(&self) -> Vec<(String, String)> {
        let s3 = s3_client().await;
        let mut out = Vec::new();
        let page = s3
            .list_object_versions()
            .bucket(&self.bucket)
            .send()
            .await
            .expect("list versions");
        for v in page.versions() {
            let (Some(key), Some(id)) = (v.key(), v.version_id()) else {
                continue;
            };
            let body = s3
                .get_object()
                .bucket(&self.bucket)
                .key(key)
                .version_id(id)
                .send()
                .await
                .expect("get version")
                .body
                .collect()
                .await
                .expect("body")
                .into_bytes();
            out.push((
                format!("{key}@{id}"),
                String::from_utf8_lossy(&body).into_owned(),
            ));
        }
        out.sort();
        out
    }
}

fn stack_name(prefix: &str) -> String {
    format!("Scr{}", unique_name(prefix).replace('-', "x"))
}

#[tokio::test]
async fn scrub_repairs_a_record_written_with_plaintext_secrets() {
    let app = App::new();
    let stack = stack_name("scrub");
    let base = format!("/cdkd-scrub/{}", unique_name("p"));
    let secret_name = unique_name("scrub-secret");
    let secret_plain = "Pl41nScrubSecret";
    let no_echo_plain = "N0EchoScrubDefault";

    let sm = aws_sdk_secretsmanager::Client::new(&sdk_config().await);
    sm.create_secret()
        .name(&secret_name)
        .secret_string(json!({"password": secret_plain}).to_string())
        .send()
        .await
        .expect("create secret");
    let secret_ref = format!("{{{{resolve:secretsmanager:{secret_name}:SecretString:password}}}}");
    let template = json!({
        "Parameters": {"DbPass": {"Type": "String", "NoEcho": true, "Default": no_echo_plain}},
        "Resources": {
            "FromSecret": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": format!("{base}/from-secret"), "Type": "String", "Value": secret_ref}},
            "FromNoEcho": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": format!("{base}/from-noecho"), "Type": "String",
                "Value": {"Fn::Sub": "pw=${DbPass}"}}}
        },
        "Outputs": {"SecretEcho": {"Value": {"Fn::GetAtt": ["FromSecret", "Value"]}}}
    });
    app.write_stack(&stack, &template);
    let (code, _) = app.run("deploy", &[]);
    assert_eq!(code, 0, "deploy");

    // Rewrite the record as an older cdkd would have stored it: plaintext at the secret
    // positions, and an output the template no longer declares holding the secret.
    let key = app.state_key(&stack);
    let mut record: Value = serde_json::from_str(&app.get(&key).await).expect("record json");
    let res = &mut record["resources"];
    assert_eq!(res["FromSecret"]["properties"]["Value"], json!(secret_ref));
    res["FromSecret"]["properties"]["Value"] = json!(secret_plain);
    res["FromNoEcho"]["properties"]["Value"] = json!(format!("pw={no_echo_plain}"));
    record["outputs"]["SecretEcho"] = json!(secret_plain);
    record["outputs"]["DeletedSecretOut"] = json!(format!("prefix-{secret_plain}"));
    app.put(&key, record.to_string()).await;

    // The CI gate finds it and writes nothing.
    let before = app.every_object_version().await;
    let (code, text) = app.run("scrub", &[&stack, "--dry-run", "--fail"]);
    assert_eq!(code, 1, "dry-run --fail finds the plaintext");
    assert!(text.contains("found"), "{text}");
    assert!(!text.contains(secret_plain) && !text.contains(no_echo_plain));
    assert_eq!(
        app.every_object_version().await,
        before,
        "--dry-run wrote nothing"
    );

    // A real run repairs the record and purges the history.
    let (code, text) = app.run("scrub", &[&stack]);
    assert_eq!(code, 0, "scrub");
    assert!(text.contains("scrubbed"), "{text}");
    for (version, body) in app.every_object_version().await {
        assert!(
            !body.contains(secret_plain),
            "secret plaintext left in {version}"
        );
        assert!(
            !body.contains(no_echo_plain),
            "NoEcho plaintext left in {version}"
        );
    }
    let record: Value = serde_json::from_str(&app.get(&key).await).expect("record json");
    assert_eq!(
        record["resources"]["FromSecret"]["properties"]["Value"],
        json!(secret_ref)
    );
    assert_eq!(
        record["resources"]["FromNoEcho"]["properties"]["Value"],
        json!("***")
    );
    assert_eq!(record["outputs"]["SecretEcho"], json!(secret_ref));
    assert!(
        record["outputs"].get("DeletedSecretOut").is_none(),
        "the undeclared secret output is dropped"
    );

    // Clean now, and the deploy agrees nothing changed.
    let (code, text) = app.run("scrub", &[&stack, "--dry-run", "--fail"]);
    assert_eq!(code, 0, "clean after the real run: {text}");
    let (code, _) = app.run("diff", &[&stack, "--fail"]);
    assert_eq!(code, 0, "diff --fail after scrub");
}

#[tokio::test]
async fn a_record_with_a_damaged_resources_map_is_refused_with_exit_2() {
    let app = App::new();
    let stack = stack_name("broken");
    let template = json!({
        "Parameters": {"DbPass": {"Type": "String", "NoEcho": true, "Default": "SomeDefault1"}},
        "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {}}}
    });
    app.write_stack(&stack, &template);
    let key = app.state_key(&stack);
    let body = json!({"version": 11, "stackName": stack, "region": REGION,
        "resources": "oops", "outputs": {"O": "SomeDefault1"}})
    .to_string();
    app.put(&key, body.clone()).await;

    let (code, text) = app.run("scrub", &[&stack]);
    assert_eq!(code, 2, "a real run refuses");
    assert!(
        text.contains(&stack),
        "the message names the record: {text}"
    );
    assert_eq!(app.get(&key).await, body, "nothing was written");
    for extra in [
        &["--dry-run"][..],
        &["--dry-run", "--fail"][..],
        &["--fail"][..],
    ] {
        let mut args = vec![stack.as_str()];
        args.extend_from_slice(extra);
        let (code, _) = app.run("scrub", &args);
        assert_eq!(code, 2, "exit 2 with {extra:?}");
    }
    assert_eq!(app.get(&key).await, body, "nothing was written");
}
