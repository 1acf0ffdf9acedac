//! `cdkd deploy`'s command surface end to end against the emulator: stacks in parallel under
//! --stack-concurrency with failed dependencies skipping their dependents, the producers a
//! consumer imports from brought in (not with -e), --dry-run (no
//! lock, no write, no AWS change), --require-approval with and without --yes,
//! --outputs-file, the trace of AWS calls, and the plain rendering (golden files under
//! fixtures/golden/deploy/, durations and names filtered; UPDATE_GOLDEN=1 rewrites them).

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::app::App;
use support::{cdkd, s3_client, unique_name};

const REGION: &str = "us-east-1";

/// What these tests ask of the shared harness beyond deploying.
impl App {
    /// The keys under the stack's state prefix (state.json, lock.json, ...).
    async fn keys(&self, stack: &str) -> Vec<String> {
        let listed = s3_client()
            .await
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(format!("cdkd/{stack}/"))
            .send()
            .await
            .expect("list");
        listed
            .contents()
            .iter()
            .filter_map(|o| o.key().map(str::to_owned))
            .collect()
    }
}

fn stack_name(prefix: &str) -> String {
    format!("Ux{}", unique_name(prefix).replace('-', "x"))
}

/// One SSM parameter with a name under the stack, and an output with its name.
fn param_template(stack: &str, value: &str) -> Value {
    json!({
        "Resources": {
            "Param": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {"Name": format!("/{stack}/param"), "Type": "String", "Value": value}
            }
        },
        "Outputs": {"ParamName": {"Value": {"Ref": "Param"}}}
    })
}

async fn parameter_exists(name: &str) -> bool {
    let ssm = aws_sdk_ssm::Client::new(&support::sdk_config().await);
    ssm.get_parameter().name(name).send().await.is_ok()
}

#[tokio::test]
async fn independent_stacks_run_in_parallel_and_a_failed_dependency_skips_its_dependents() {
    let app = App::new("cdkd-ux");
    let (a, b, c) = (stack_name("a"), stack_name("b"), stack_name("c"));
    let broken = json!({"Resources": {"Nope": {"Type": "AWS::Nope::Nothing", "Properties": {}}}});
    // A fails before provisioning; B is independent; C depends on A.
    app.write_stacks(&[
        (&a, &broken, &[]),
        (&b, &param_template(&b, "b"), &[]),
        (&c, &param_template(&c, "c"), &[a.as_str()]),
    ]);
    let (code, _, stderr) = app.deploy(&["--stack-concurrency", "2", "--all"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{c}: skipped: the stack it depends on ({a}) did not deploy"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("✓ {b}: deployed (1 created)")),
        "{stderr}"
    );
    assert!(parameter_exists(&format!("/{b}/param")).await);
    assert!(!parameter_exists(&format!("/{c}/param")).await);
    assert!(
        stderr.contains("1 stack deployed, 1 failed, 1 skipped"),
        "{stderr}"
    );

    // Two independent stacks with --stack-concurrency 2: both start before either ends.
    let app = App::new("cdkd-ux");
    let (d, e) = (stack_name("d"), stack_name("e"));
    app.write_stacks(&[
        (&d, &param_template(&d, "d"), &[]),
        (&e, &param_template(&e, "e"), &[]),
    ]);
    let (code, _, stderr) = app.deploy(&["--stack-concurrency", "2", "--all"]);
    assert_eq!(code, 0, "{stderr}");
    let first_summary = stderr.find("✓ ").expect("a summary");
    assert!(
        stderr[..first_summary].contains(&format!("Deploying {d}"))
            && stderr[..first_summary].contains(&format!("Deploying {e}")),
        "{stderr}"
    );

    // With --stack-concurrency 1 the second starts only after the first ended.
    let app = App::new("cdkd-ux");
    let (f, g) = (stack_name("f"), stack_name("g"));
    app.write_stacks(&[
        (&f, &param_template(&f, "f"), &[]),
        (&g, &param_template(&g, "g"), &[]),
    ]);
    let (code, _, stderr) = app.deploy(&["--stack-concurrency", "1", "--all"]);
    assert_eq!(code, 0, "{stderr}");
    let first_summary = stderr.find("✓ ").expect("a summary");
    assert!(
        !stderr[..first_summary].contains(&format!("Deploying {g}")),
        "{stderr}"
    );
}

#[tokio::test]
async fn dry_run_prints_the_plan_and_takes_no_lock_and_writes_nothing() {
    let app = App::new("cdkd-ux");
    let stack = stack_name("dry");
    app.write_stacks(&[(&stack, &param_template(&stack, "v1"), &[])]);
    // A lock held by someone else does not stop a dry run: it never takes one.
    s3_client()
        .await
        .put_object()
        .bucket(&app.bucket)
        .key(format!("cdkd/{stack}/{REGION}/lock.json"))
        .body(
            json!({"owner": "someone@else", "operation": "deploy",
                   "acquiredAt": 1, "expiresAt": 4_102_444_800_000u64})
            .to_string()
            .into_bytes()
            .into(),
        )
        .send()
        .await
        .expect("lock");
    let (code, _, stderr) = app.deploy(&["--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("{stack} ({REGION}): 1 to create")),
        "{stderr}"
    );
    assert!(
        stderr.contains("  [+] Param (AWS::SSM::Parameter) create"),
        "{stderr}"
    );
    assert!(stderr.contains("Dry run: nothing was locked, written or changed."));
    assert_eq!(
        app.keys(&stack).await,
        vec![format!("cdkd/{stack}/{REGION}/lock.json")]
    );
    assert!(!parameter_exists(&format!("/{stack}/param")).await);
}

#[tokio::test]
async fn require_approval_refuses_without_a_terminal_unless_yes() {
    let app = App::new("cdkd-ux");
    let stack = stack_name("appr");
    app.write_stacks(&[(&stack, &param_template(&stack, "v1"), &[])]);

    let (code, _, stderr) = app.deploy(&["--require-approval", "any-change"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("need approval (--require-approval any-change)")
            && stderr.contains("pass --yes"),
        "{stderr}"
    );
    assert!(!parameter_exists(&format!("/{stack}/param")).await);

    // Only creates: nothing destructive to approve.
    let (code, _, stderr) = app.deploy(&["--require-approval", "destructive"]);
    assert_eq!(code, 0, "{stderr}");

    // A removal is destructive: refused, then approved with --yes.
    let empty = json!({"Resources": {"Other": {"Type": "AWS::SSM::Parameter",
        "Properties": {"Type": "String", "Value": "x"}}}});
    app.write_stacks(&[(&stack, &empty, &[])]);
    let (code, _, stderr) = app.deploy(&["--require-approval", "destructive"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(parameter_exists(&format!("/{stack}/param")).await);
    let (code, _, stderr) = app.deploy(&["--require-approval", "destructive", "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!parameter_exists(&format!("/{stack}/param")).await);
}

#[tokio::test]
async fn outputs_file_and_trace() {
    let app = App::new("cdkd-ux");
    let stack = stack_name("outs");
    app.write_stacks(&[(&stack, &param_template(&stack, "v1"), &[])]);
    let outputs = app.dir.path().join("out/outputs.json");
    let trace = app.dir.path().join("trace.jsonl");
    let (code, _, stderr) = app.deploy_env(
        &["--outputs-file", outputs.to_str().unwrap()],
        &[("CDKD_TRACE_FILE", trace.to_str().unwrap())],
    );
    assert_eq!(code, 0, "{stderr}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&outputs).expect("outputs file"))
            .expect("json");
    assert_eq!(
        written,
        json!({ stack.clone(): {"ParamName": format!("/{stack}/param")} })
    );

    // The trace attributes the PutParameter to the resource and records the operation.
    let events: Vec<Value> = std::fs::read_to_string(&trace)
        .expect("trace")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert!(
        events.iter().any(|e| e["event"] == "call"
            && e["id"] == "Param"
            && e["op"] == "AmazonSSM.PutParameter"),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "resource" && e["id"] == "Param" && e["action"] == "Created"),
        "{events:?}"
    );
    assert!(events.iter().any(|e| e["event"] == "call"
        && e["id"].is_null()
        && e["op"].as_str().is_some_and(|o| o.ends_with("/state.json"))));
}

/// `cdkd deploy --app <fixture app> ...` against `bucket`: (exit code, stderr).
fn deploy_fixture(app: &str, bucket: &str, args: &[&str]) -> (i32, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/apps")
        .join(app)
        .join("cdk.out");
    let out = cdkd()
        .env("CDKD_PROGRESS", "plain")
        .arg("deploy")
        .args(["--app", dir.to_str().expect("utf-8 path")])
        .args(["--state-bucket", bucket])
        .args(args)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("--- cdkd deploy {app} {args:?}\n{stderr}");
    (out.status.code().unwrap_or(-1), stderr)
}

/// Issue 15: a stack that imports a name another stack of the app exports (no manifest
/// dependency) brings that producer into its deploy, first, unless `--exclusively`; one that
/// only reads a stack's output (`Fn::GetStackOutput`) never brings it in.
#[tokio::test]
async fn a_consumer_brings_in_the_stack_it_imports_from_unless_exclusively() {
    let app = App::new("cdkd-order");
    let (code, stderr) =
        deploy_fixture("cross-stack-import", &app.bucket, &["ImportConsumer", "-e"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(!stderr.contains("Deploying ImportProducer"), "{stderr}");
    assert!(app.keys("ImportProducer").await.is_empty(), "{stderr}");

    let (code, stderr) = deploy_fixture("cross-stack-import", &app.bucket, &["ImportConsumer"]);
    assert_eq!(code, 0, "{stderr}");
    let (producer_done, consumer_start) = (
        stderr.find("✓ ImportProducer: deployed"),
        stderr.find("Deploying ImportConsumer"),
    );
    assert!(
        producer_done.is_some() && producer_done < consumer_start,
        "{stderr}"
    );

    let app = App::new("cdkd-order");
    let (code, stderr) = deploy_fixture("cross-stack-output", &app.bucket, &["OutputReader"]);
    assert_eq!(code, 1, "nothing to read yet: {stderr}");
    assert!(!stderr.contains("Deploying OutputProducer"), "{stderr}");
    assert!(app.keys("OutputProducer").await.is_empty(), "{stderr}");
    let (code, stderr) = deploy_fixture("cross-stack-output", &app.bucket, &["OutputProducer"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, stderr) = deploy_fixture("cross-stack-output", &app.bucket, &["OutputReader"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("Deploying OutputProducer"), "{stderr}");
}

/// Durations, the stack name and the emulator's port replaced with placeholders.
fn normalize(text: &str, stack: &str) -> String {
    let durations = regex::Regex::new(r"\d+\.\d s").unwrap();
    let text = durations.replace_all(text, "#.# s");
    text.replace(stack, "STACK")
}

fn golden(name: &str, actual: &str) {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/golden/deploy")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{}: missing; run with UPDATE_GOLDEN=1", path.display()));
    assert_eq!(actual, expected, "golden file {}", path.display());
}

#[tokio::test]
async fn plain_rendering_golden() {
    let app = App::new("cdkd-ux");
    let stack = stack_name("gold");
    // A two-link chain (deterministic order at --concurrency 1) and a literal output.
    let template = json!({
        "Resources": {
            "First": {"Type": "AWS::SSM::Parameter",
                "Properties": {"Name": format!("/{stack}/first"), "Type": "String", "Value": "one"}},
            "Second": {"Type": "AWS::SSM::Parameter",
                "Properties": {"Name": format!("/{stack}/second"), "Type": "String",
                    "Value": {"Ref": "First"}}}
        },
        "Outputs": {
            "Literal": {"Value": "hello"},
            "SecondName": {"Value": {"Ref": "Second"}}
        }
    });
    app.write_stacks(&[(&stack, &template, &[])]);
    let (code, _, stderr) = app.deploy(&["--concurrency", "1"]);
    assert_eq!(code, 0, "{stderr}");
    golden("create.txt", &normalize(&stderr, &stack));

    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    golden("no-change.txt", &normalize(&stderr, &stack));

    let (code, _, stderr) = app.deploy(&["--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    golden("dry-run-no-change.txt", &normalize(&stderr, &stack));
}

/// Whether a traced AWS operation changes something. The stack lock's own writes (its object
/// and the purge of its history, a DeleteObjects on the state bucket) are the one kind of
/// write a no-change deploy makes; the record, the exports index, the ledger and the journal
/// must not be written.
fn mutates(op: &str, state_bucket: &str) -> bool {
    let records = [
        "/state.json",
        "/exports.json",
        "/create-tokens.json",
        "/rollback-journal.json",
    ];
    if op.contains(&format!(" /{state_bucket}/")) && !records.iter().any(|r| op.ends_with(r)) {
        return false;
    }
    if let Some((method, _)) = op.split_once(' ') {
        return !matches!(method, "GET" | "HEAD");
    }
    let action = op.rsplit('.').next().unwrap_or(op);
    !["Get", "Describe", "List", "Head", "Lookup", "Query", "Scan"]
        .iter()
        .any(|p| action.starts_with(p))
}

/// Issue #6: every fixture app deploys, and deploying it again says "no changes" and sends no
/// mutating AWS call (counted from the run's own trace).
#[tokio::test]
async fn every_fixture_app_redeploys_without_a_mutating_call() {
    let s3 = s3_client().await;
    let _ = s3
        .create_bucket()
        .bucket("cdk-hnb659fds-assets-123456789012-us-east-1")
        .send()
        .await;
    let ssm = aws_sdk_ssm::Client::new(&support::sdk_config().await);
    for name in [
        "/cdkd/basic/bucket-name",
        "/cdkd/params/settings",
        "/cdkd/stages/table-name",
        "/cdkd/cross-stack/queue-url",
        "/cdkd/nested/child-queue-arn",
    ] {
        let _ = ssm.delete_parameter().name(name).send().await;
    }
    for app in [
        "basic",
        "params",
        "stages",
        "cross-stack",
        "nested",
        "lambda",
    ] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/apps")
            .join(app)
            .join("cdk.out");
        let bucket = unique_name("cdkd-redeploy");
        let out = cdkd()
            .args(["bootstrap", "--state-bucket", &bucket])
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let trace = tempfile::NamedTempFile::new().expect("trace file");
        let deploy = |traced: bool| {
            let mut cmd = cdkd();
            cmd.current_dir(&dir)
                .args(["deploy", "--all", "--app", dir.to_str().unwrap()])
                .args(["--state-bucket", &bucket]);
            if traced {
                cmd.env("CDKD_TRACE_FILE", trace.path());
            }
            let out = cmd.output().expect("runs");
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{app}: deploy failed:\n{stderr}"
            );
            stderr
        };
        deploy(false);
        let stderr = deploy(true);
        assert!(
            stderr.to_lowercase().contains("no changes"),
            "{app}: {stderr}"
        );
        let calls: Vec<Value> = std::fs::read_to_string(trace.path())
            .expect("trace")
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["event"] == "call")
            .collect();
        assert!(!calls.is_empty(), "{app}: the trace recorded no call");
        let writes: Vec<&str> = calls
            .iter()
            .filter_map(|e| e["op"].as_str())
            .filter(|op| mutates(op, &bucket))
            .collect();
        assert!(writes.is_empty(), "{app}: the redeploy sent {writes:?}");
        if app == "basic" {
            basic_second_variant_updates_in_place_and_replaces(&bucket).await;
        }
        // Leave nothing behind for the fixtures' fixed names.
        let out = cdkd()
            .current_dir(&dir)
            .args([
                "destroy",
                "--all",
                "--force",
                "--app",
                dir.to_str().unwrap(),
            ])
            .args(["--state-bucket", &bucket])
            .output()
            .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{app}: destroy failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The basic app's second variant (fixtures/apps/basic-v2) over a deployed basic app: the
/// queue's VisibilityTimeout changes in place (same queue), the topic's TopicName is
/// create-only (a new topic, created before the old one is deleted), the subscription that
/// reads the topic is replaced with it, the removed parameter goes, the new queue comes.
async fn basic_second_variant_updates_in_place_and_replaces(bucket: &str) {
    let state = |bucket: &str| {
        let out = cdkd()
            .args([
                "state",
                "show",
                "BasicStack",
                "--json",
                "--state-bucket",
                bucket,
            ])
            .output()
            .expect("runs");
        let v: Value = serde_json::from_slice(&out.stdout).expect("state json");
        match v.get("state") {
            Some(s) if s.is_object() => s.clone(),
            _ => v,
        }
    };
    let before = state(bucket);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/apps/basic-v2/cdk.out");
    let trace = tempfile::NamedTempFile::new().expect("trace file");
    let out = cdkd()
        .current_dir(&dir)
        .args(["deploy", "--all", "--app", dir.to_str().unwrap()])
        .args(["--state-bucket", bucket])
        .env("CDKD_TRACE_FILE", trace.path())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "basic-v2 deploy failed:\n{stderr}"
    );
    let after = state(bucket);
    let id = |s: &Value, r: &str| s["resources"][r]["physicalId"].as_str().map(str::to_owned);
    assert_eq!(
        id(&before, "Queue4A7E3555"),
        id(&after, "Queue4A7E3555"),
        "updated in place"
    );
    let (old_topic, new_topic) = (
        id(&before, "TopicBFC7AF6E").expect("old topic"),
        id(&after, "TopicBFC7AF6E").expect("new topic"),
    );
    assert!(new_topic.ends_with(":cdkd-basic-v2-topic"), "{new_topic}");
    assert_ne!(
        id(&before, "QueueBasicStackTopic5FC7D1C8C1B7767B"),
        id(&after, "QueueBasicStackTopic5FC7D1C8C1B7767B"),
        "the subscription follows its topic"
    );
    assert!(after["resources"].get("Param165332EC").is_none(), "{after}");
    assert!(
        after["resources"].get("ExtraQueue0D4B1F2A").is_some(),
        "{after}"
    );
    let sns = aws_sdk_sns::Client::new(&support::sdk_config().await);
    assert!(
        sns.get_topic_attributes()
            .topic_arn(&old_topic)
            .send()
            .await
            .is_err(),
        "the old topic {old_topic} is deleted"
    );
    // Create before delete: the old topic's DeleteTopic (the run's only one) starts after the
    // new topic's CreateTopic ended.
    let calls: Vec<Value> = std::fs::read_to_string(trace.path())
        .expect("trace")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "call")
        .filter(|e| e["op"].as_str().is_some_and(|o| o.ends_with("Topic")))
        .collect();
    let at = |op: &str, field: &str| {
        calls
            .iter()
            .find(|e| e["op"].as_str().is_some_and(|o| o.ends_with(op)))
            .and_then(|e| e[field].as_f64())
            .unwrap_or_else(|| panic!("no {op} call for the topic: {calls:?}"))
    };
    assert!(
        at("DeleteTopic", "startMs") >= at("CreateTopic", "endMs"),
        "{calls:?}"
    );
}
