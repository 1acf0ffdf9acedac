//! `cdkd scrub` end to end against the emulator: a record written with plaintext secrets (as
//! an older cdkd would have) is found by `--dry-run --fail` (exit 1, every object version
//! byte-identical), repaired by a real run by position (interpolated secrets, two spellings,
//! list elements by Key, short secrets) and by value (no plaintext in any version of any
//! object), clean afterwards, and `cdkd diff --fail` agrees; what scrub cannot fix (a secret
//! in an output key, an abandoned scan) keeps `--fail` red; the legacy key is migrated;
//! malformed records are refused with exit 2.

use crate::support;

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
        support::app::every_object_version(&self.bucket).await
    }
}

fn stack_name(prefix: &str) -> String {
    format!("Scr{}", unique_name(prefix).replace('-', "x"))
}

async fn create_secret(value: &Value) -> String {
    let name = unique_name("scrub-secret");
    let sm = aws_sdk_secretsmanager::Client::new(&sdk_config().await);
    sm.create_secret()
        .name(&name)
        .secret_string(value.to_string())
        .send()
        .await
        .expect("create secret");
    name
}

fn secret_ref(name: &str, key: &str) -> String {
    format!("{{{{resolve:secretsmanager:{name}:SecretString:{key}}}}}")
}

fn ssm_param(name: String, value: Value) -> Value {
    json!({"Type": "AWS::SSM::Parameter", "Properties": {"Name": name, "Type": "String", "Value": value}})
}

#[tokio::test]
async fn scrub_repairs_a_record_written_with_plaintext_secrets() {
    let app = App::new();
    let stack = stack_name("scrub");
    let base = format!("/cdkd-scrub/{}", unique_name("p"));
    let secret_plain = "Pl41nScrubSecret";
    let pin = "x9Q"; // under the 4-character floor
    let no_echo_plain = "N0EchoScrubDefault";
    let secret_name = create_secret(&json!({"password": secret_plain, "pin": pin})).await;
    let password = secret_ref(&secret_name, "password");
    let current =
        format!("{{{{resolve:secretsmanager:{secret_name}:SecretString:password:AWSCURRENT}}}}");
    let pin_ref = secret_ref(&secret_name, "pin");
    let template = json!({
        "Parameters": {"DbPass": {"Type": "String", "NoEcho": true, "Default": no_echo_plain}},
        "Resources": {
            "FromSecret": ssm_param(format!("{base}/from-secret"), json!(password)),
            // The same value through a second spelling: each keeps its own expression.
            "Current": ssm_param(format!("{base}/current"), json!(current)),
            "FromNoEcho": ssm_param(format!("{base}/from-noecho"), json!({"Fn::Sub": "pw=${DbPass}"})),
            "Joined": ssm_param(format!("{base}/joined"),
                json!({"Fn::Join": ["", ["pin=", pin_ref, "@", {"Ref": "AWS::Region"}]]})),
            "Subbed": ssm_param(format!("{base}/subbed"),
                json!({"Fn::Sub": format!("postgres://u:{password}@host/${{AWS::Region}}")})),
            "Short": ssm_param(format!("{base}/short"), json!(format!("code-{pin}-1"))),
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {
                "Tags": [{"Key": "pin", "Value": pin_ref}, {"Key": "team", "Value": "core"}]}}
        },
        "Outputs": {"SecretEcho": {"Value": {"Fn::GetAtt": ["FromSecret", "Value"]}}}
    });
    app.write_stack(&stack, &template);
    let (code, _) = app.run("deploy", &[]);
    assert_eq!(code, 0, "deploy");

    // Rewrite the record as an older cdkd would have stored it: plaintext at every secret
    // position, the observed baseline in AWS's order, and an output the template no longer
    // declares holding a value nothing in the run knows.
    let key = app.state_key(&stack);
    let mut record: Value = serde_json::from_str(&app.get(&key).await).expect("record json");
    let deployed = record.clone();
    let res = &mut record["resources"];
    assert_eq!(res["FromSecret"]["properties"]["Value"], json!(password));
    assert_eq!(res["Current"]["properties"]["Value"], json!(current));
    res["FromSecret"]["properties"]["Value"] = json!(secret_plain);
    res["Current"]["properties"]["Value"] = json!(secret_plain);
    res["FromNoEcho"]["properties"]["Value"] = json!(format!("pw={no_echo_plain}"));
    res["Joined"]["properties"]["Value"] = json!(format!("pin={pin}@{REGION}"));
    res["Subbed"]["properties"]["Value"] =
        json!(format!("postgres://u:{secret_plain}@host/{REGION}"));
    res["Queue"]["properties"]["Tags"][0]["Value"] = json!(pin);
    res["Queue"]["observedProperties"] = json!({"Tags": [
        {"Key": "team", "Value": "core"}, {"Key": "pin", "Value": pin}]});
    record["outputs"]["SecretEcho"] = json!(secret_plain);
    record["outputs"]["OldDbUrl"] = json!("jdbc://app:an-unknown-old-secret@db");
    app.put(&key, record.to_string()).await;

    // The CI gate finds it and writes nothing.
    let before = app.every_object_version().await;
    let (code, text) = app.run("scrub", &[&stack, "--dry-run", "--fail"]);
    assert_eq!(code, 1, "dry-run --fail finds the plaintext");
    assert!(
        text.contains("Would drop") || text.contains("would drop"),
        "{text}"
    );
    assert!(!text.contains(secret_plain) && !text.contains(no_echo_plain));
    let (code, _) = app.run("scrub", &[&stack, "--dry-run"]);
    assert_eq!(code, 0, "without --fail a finding does not fail the run");
    assert_eq!(
        app.every_object_version().await,
        before,
        "--dry-run wrote nothing"
    );

    // A real run repairs the record and purges the history.
    let (code, text) = app.run("scrub", &[&stack]);
    assert_eq!(code, 0, "scrub");
    assert!(
        text.contains("scrubbed") && text.contains("OldDbUrl"),
        "{text}"
    );
    for (version, body) in app.every_object_version().await {
        for plain in [secret_plain, no_echo_plain, "an-unknown-old-secret"] {
            assert!(!body.contains(plain), "plaintext left in {version}");
        }
    }
    let record: Value = serde_json::from_str(&app.get(&key).await).expect("record json");
    let res = &record["resources"];
    assert_eq!(res["FromSecret"]["properties"]["Value"], json!(password));
    assert_eq!(res["Current"]["properties"]["Value"], json!(current));
    assert_eq!(res["FromNoEcho"]["properties"]["Value"], json!("***"));
    assert!(
        res["FromNoEcho"]["noEchoLeaves"]
            .as_array()
            .is_some_and(|l| l.contains(&json!(["Value"]))),
        "{}",
        res["FromNoEcho"]
    );
    assert_eq!(
        res["Joined"]["properties"]["Value"],
        json!(format!("pin={pin_ref}@{REGION}")),
        "a short secret is repaired at its position"
    );
    assert_eq!(
        res["Subbed"]["properties"]["Value"],
        json!(format!("postgres://u:{password}@host/{REGION}"))
    );
    // The 4-character floor: a short secret is not searched for elsewhere.
    assert_eq!(
        res["Short"]["properties"]["Value"],
        deployed["resources"]["Short"]["properties"]["Value"]
    );
    assert_eq!(
        res["Short"]["properties"]["Value"],
        json!(format!("code-{pin}-1"))
    );
    // List elements by Key: the observed baseline is in another order.
    assert_eq!(
        res["Queue"]["properties"]["Tags"][0]["Value"],
        json!(pin_ref)
    );
    assert_eq!(
        res["Queue"]["observedProperties"]["Tags"],
        json!([{"Key": "team", "Value": "core"}, {"Key": "pin", "Value": pin_ref}])
    );
    assert_eq!(record["outputs"]["SecretEcho"], json!(password));
    assert!(
        record["outputs"].get("OldDbUrl").is_none(),
        "the undeclared output nothing rewrote is dropped"
    );

    // Clean now, and the deploy agrees nothing changed.
    let (code, text) = app.run("scrub", &[&stack, "--dry-run", "--fail"]);
    assert_eq!(code, 0, "clean after the real run: {text}");
    assert!(text.contains("No plaintext secrets found"), "{text}");
    let (code, _) = app.run("diff", &[&stack, "--fail"]);
    assert_eq!(code, 0, "diff --fail after scrub");
}

/// `s` in full-width letters and digits (what NFKC folds back).
fn full_width(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_graphic() {
                char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap_or(c)
            } else {
                c
            }
        })
        .collect()
}

/// What changes between runs replaced, for the golden file.
fn normalize(text: &str, names: &[(&str, &str)]) -> String {
    let mut out = text.to_owned();
    for (name, placeholder) in names {
        out = out.replace(name, placeholder);
    }
    out
}

fn golden(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/golden/scrub")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(&path, actual).expect("write golden");
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
    assert_eq!(actual, expected, "golden {name} differs");
}

#[tokio::test]
async fn findings_scrub_cannot_fix_keep_the_gate_red() {
    let app = App::new();
    let stack = stack_name("find");
    let base = format!("/cdkd-scrub/{}", unique_name("f"));
    let secret_plain = "F1ndingsSecretValue";
    let secret_name = create_secret(&json!({"password": secret_plain})).await;
    let doomed_name = create_secret(&json!({"password": "D00medSecretValue"})).await;
    let template = json!({
        "Resources": {
            "FromSecret": ssm_param(format!("{base}/a"), json!(secret_ref(&secret_name, "password"))),
            "Doomed": ssm_param(format!("{base}/b"),
                json!({"Fn::Sub": format!("x-{}", secret_ref(&doomed_name, "password"))}))
        },
        "Outputs": {"Out": {"Value": "public"}}
    });
    app.write_stack(&stack, &template);
    let (code, _) = app.run("deploy", &[]);
    assert_eq!(code, 0, "deploy");
    // The reference behind Doomed stops resolving: what its value held cannot be looked for.
    let sm = aws_sdk_secretsmanager::Client::new(&sdk_config().await);
    sm.delete_secret()
        .secret_id(&doomed_name)
        .force_delete_without_recovery(true)
        .send()
        .await
        .expect("delete secret");

    let key = app.state_key(&stack);
    let mut record: Value = serde_json::from_str(&app.get(&key).await).expect("record json");
    let outputs = &mut record["outputs"];
    outputs[format!("Exp-{secret_plain}")] = json!("v1");
    outputs[format!("Fw{}", full_width(secret_plain))] = json!("v2");
    outputs["DeletedSecretOut"] = json!(format!("prefix-{secret_plain}"));
    app.put(&key, record.to_string()).await;

    let (code, stdout) = {
        let dir = app.dir.path().to_str().expect("utf-8");
        let out = cdkd()
            .current_dir(app.dir.path())
            .args(["scrub", &stack, "--dry-run", "--fail", "--json"])
            .args(["--app", dir, "--state-bucket", &app.bucket])
            .output()
            .expect("runs");
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert_eq!(code, 1, "{stdout}");
    let doc: Value = serde_json::from_str(&stdout).expect("--json is one JSON document");
    assert_eq!(doc["exitCode"], json!(1));
    assert!(!stdout.contains(secret_plain), "{stdout}");
    golden(
        "findings.json",
        &normalize(
            &stdout,
            &[
                (&stack, "<STACK>"),
                (&secret_name, "<SECRET>"),
                (&doomed_name, "<DOOMED>"),
            ],
        ),
    );

    // The real run rewrites what it can and still reports what it cannot.
    let (code, text) = app.run("scrub", &[&stack]);
    assert_eq!(code, 0, "findings fail a run only under --fail: {text}");
    assert!(
        text.contains("output key Exp-*** renders a secret"),
        "{text}"
    );
    assert!(text.contains("name withheld"), "{text}");
    assert!(
        text.contains("ABANDONED") && text.contains("Doomed"),
        "{text}"
    );
    assert!(!text.contains(secret_plain), "{text}");
    let record: Value = serde_json::from_str(&app.get(&key).await).expect("record json");
    assert_eq!(
        record["outputs"]["DeletedSecretOut"],
        json!(format!("prefix-{}", secret_ref(&secret_name, "password"))),
        "an undeclared key a pass rewrote is kept, carrying the reference"
    );
    let (code, text) = app.run("scrub", &[&stack, "--dry-run", "--fail"]);
    assert_eq!(code, 1, "a key cannot be rewritten: still red: {text}");
    assert!(!text.contains("No plaintext secrets found"), "{text}");
}

#[tokio::test]
async fn a_legacy_key_is_migrated_and_history_purged_on_request() {
    let app = App::new();
    let stack = stack_name("legacy");
    let no_echo_plain = "LegacyN0EchoValue";
    let template = json!({
        "Parameters": {"DbPass": {"Type": "String", "NoEcho": true, "Default": no_echo_plain}},
        "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {}}},
        "Outputs": {"Pass": {"Value": {"Ref": "DbPass"}}}
    });
    app.write_stack(&stack, &template);
    let legacy = format!("cdkd/{stack}/state.json");
    let record = json!({"version": 2, "stackName": stack, "region": REGION, "resources": {},
        "outputs": {"Pass": no_echo_plain}});
    app.put(&legacy, record.to_string()).await;

    let (code, text) = app.run("scrub", &[&stack, "--dry-run", "--fail"]);
    assert_eq!(code, 1, "{text}");
    let (code, text) = app.run("scrub", &[&stack]);
    assert_eq!(code, 0, "{text}");
    let migrated: Value =
        serde_json::from_str(&app.get(&app.state_key(&stack)).await).expect("record json");
    assert_eq!(migrated["outputs"]["Pass"], json!("***"));
    for (version, body) in app.every_object_version().await {
        assert!(
            !version.starts_with(&format!("{legacy}@")),
            "legacy key left: {version}"
        );
        assert!(!body.contains(no_echo_plain), "plaintext left in {version}");
    }

    // --purge-history: a record scrub examines and does not rewrite loses its history too.
    let key = app.state_key(&stack);
    let body = app.get(&key).await;
    app.put(&key, body.clone()).await;
    let versions_of = |all: Vec<(String, String)>| {
        all.into_iter()
            .filter(|(v, _)| v.starts_with(&format!("{key}@")))
            .count()
    };
    assert_eq!(versions_of(app.every_object_version().await), 2);
    let (code, _) = app.run("scrub", &[&stack]);
    assert_eq!(code, 0);
    assert_eq!(
        versions_of(app.every_object_version().await),
        2,
        "kept without the flag"
    );
    let (code, _) = app.run("scrub", &[&stack, "--purge-history"]);
    assert_eq!(code, 0);
    assert_eq!(
        versions_of(app.every_object_version().await),
        1,
        "purged with the flag"
    );
    assert_eq!(app.get(&key).await, body, "the record itself is untouched");
}

#[tokio::test]
async fn a_legacy_key_that_cannot_be_deleted_is_reported() {
    let app = App::new();
    let stack = stack_name("survive");
    let template = json!({
        "Parameters": {"DbPass": {"Type": "String", "NoEcho": true, "Default": "Surv1vingValue"}},
        "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {}}},
        "Outputs": {"Pass": {"Value": {"Ref": "DbPass"}}}
    });
    app.write_stack(&stack, &template);
    let legacy = format!("cdkd/{stack}/state.json");
    let record = json!({"version": 2, "stackName": stack, "region": REGION, "resources": {},
        "outputs": {"Pass": "Surv1vingValue"}});
    app.put(&legacy, record.to_string()).await;
    let policy = json!({"Version": "2012-10-17", "Statement": [{
        "Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject",
        "Resource": format!("arn:aws:s3:::{}/{legacy}", app.bucket)}]});
    s3_client()
        .await
        .put_bucket_policy()
        .bucket(&app.bucket)
        .policy(policy.to_string())
        .send()
        .await
        .expect("policy");
    let (code, text) = app.run("scrub", &[&stack]);
    let _ = s3_client()
        .await
        .delete_bucket_policy()
        .bucket(&app.bucket)
        .send()
        .await;
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("SCRUB_LEGACY_STATE_KEY_SURVIVES"), "{text}");
}

#[tokio::test]
async fn damaged_outputs_and_damaged_rows_are_refused_with_exit_2() {
    let app = App::new();
    let template = json!({
        "Parameters": {"DbPass": {"Type": "String", "NoEcho": true, "Default": "SomeDefault1"}},
        "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {}}}
    });
    let bad_outputs = stack_name("outs");
    let bad_row = stack_name("row");
    let bodies = [
        (
            bad_outputs.clone(),
            json!({"version": 11, "stackName": bad_outputs, "region": REGION,
                "resources": {}, "outputs": "SomeDefault1"}),
            "outputs",
        ),
        (
            bad_row.clone(),
            json!({"version": 11, "stackName": bad_row, "region": REGION,
                "resources": {"Q": null, "R": {"physicalId": "x"}},
                "outputs": {"O": "SomeDefault1"}}),
            "Q",
        ),
    ];
    for (stack, body, named) in bodies {
        app.write_stack(&stack, &template);
        let key = app.state_key(&stack);
        let body = body.to_string();
        app.put(&key, body.clone()).await;
        for extra in [
            &[][..],
            &["--fail"][..],
            &["--dry-run"][..],
            &["--dry-run", "--fail"][..],
        ] {
            let mut args = vec![stack.as_str()];
            args.extend_from_slice(extra);
            let (code, text) = app.run("scrub", &args);
            assert_eq!(code, 2, "{stack} {extra:?}: {text}");
            assert!(text.contains(&stack) && text.contains(named), "{text}");
        }
        assert_eq!(app.get(&key).await, body, "nothing was written");
    }
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

#[tokio::test]
async fn a_placeholder_naming_nothing_abandons_the_scan_and_an_unbound_parameter_only_warns() {
    let app = App::new();
    let stack = stack_name("placeholder");
    let key = app.state_key(&stack);
    let record = json!({"version": 11, "stackName": stack, "region": REGION,
        "resources": {"P": {"resourceType": "AWS::SSM::Parameter", "physicalId": "/scrub/p",
            "properties": {"Name": "/scrub/p", "Type": "String", "Value": "anything"}}}});
    app.put(&key, record.to_string()).await;
    let with_value = |value: &str| {
        json!({
            "Parameters": {"NoDefault": {"Type": "String"}},
            "Resources": {"P": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": "/scrub/p", "Type": "String",
                "Value": {"Fn::Sub": format!("{{{{resolve:secretsmanager:{value}-db:SecretString:pw}}}}")}}}}
        })
    };

    // ${Typo} names nothing the template declares: the reference is never looked up.
    app.write_stack(&stack, &with_value("${Typo}"));
    let (code, text) = app.run("scrub", &[&stack, "--dry-run", "--fail"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("ABANDONED") && text.contains("Resources.P.Properties.Value"),
        "{text}"
    );

    // A declared parameter with no Default: scrub cannot bind it, which is only a warning.
    app.write_stack(&stack, &with_value("${NoDefault}"));
    let (code, text) = app.run("scrub", &[&stack, "--dry-run", "--fail"]);
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("ABANDONED"), "{text}");
    assert!(text.contains("placeholder"), "{text}");
    assert!(text.contains("No plaintext secrets found"), "{text}");
}
