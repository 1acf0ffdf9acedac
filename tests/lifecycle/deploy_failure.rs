//! A deploy that fails, is interrupted or races another, end to end through the `cdkd` binary
//! against the emulator: automatic rollback, `--no-rollback` then `cdkd rollback`, SIGKILL at
//! several points of a 20-resource deploy and a re-run that converges, and the stack lock.
//!
//! Failures are injected with the Cloud Control emulator's fault API, each scoped to a type
//! that only one kind of test here creates.

use crate::support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::http::http;
use support::{cdkd, emulator_env, s3_client, sdk_config, unique_name};
use tempfile::TempDir;

const REGION: &str = "us-east-1";
/// The type whose creates the failure tests make fail (no other test creates one).
const FAILING_TYPE: &str = "AWS::ECR::Repository";
/// The type the lock test makes slow.
const SLOW_TYPE: &str = "AWS::CloudWatch::Dashboard";

struct App {
    dir: TempDir,
    stack: String,
    bucket: String,
}

impl App {
    fn new(prefix: &str) -> App {
        let app = App {
            dir: tempfile::tempdir().expect("temp dir"),
            stack: unique_name(prefix),
            bucket: unique_name("cdkd-fail"),
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

    fn write(&self, template: &Value) {
        let file = format!("{}.template.json", self.stack);
        std::fs::write(
            self.dir.path().join(&file),
            serde_json::to_string_pretty(template).unwrap(),
        )
        .expect("template");
        let manifest = json!({"version": "36.0.0", "artifacts": {&self.stack: {
            "type": "aws:cloudformation:stack",
            "environment": "aws://unknown-account/unknown-region",
            "properties": {"templateFile": file}
        }}});
        std::fs::write(self.dir.path().join("manifest.json"), manifest.to_string())
            .expect("manifest");
    }

    fn args(&self, command: &str) -> Vec<String> {
        let dir = self.dir.path().to_str().unwrap().to_owned();
        vec![
            command.into(),
            "--app".into(),
            dir,
            "--state-bucket".into(),
            self.bucket.clone(),
        ]
    }

    /// Runs cdkd: (exit code, stderr).
    fn run(&self, args: &[&str]) -> (i32, String) {
        let out = cdkd()
            .current_dir(self.dir.path())
            .args(args)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        eprintln!("--- cdkd {args:?}\n{stderr}");
        (out.status.code().unwrap_or(-1), stderr)
    }

    fn deploy(&self, extra: &[&str]) -> (i32, String) {
        let mut args = self.args("deploy");
        args.extend(extra.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run(&refs)
    }

    fn key(&self, file: &str) -> String {
        format!("cdkd/{}/{REGION}/{file}", self.stack)
    }

    async fn object(&self, file: &str) -> Option<Value> {
        let out = s3_client()
            .await
            .get_object()
            .bucket(&self.bucket)
            .key(self.key(file))
            .send()
            .await
            .ok()?;
        let bytes = out.body.collect().await.ok()?.into_bytes();
        serde_json::from_slice(&bytes).ok()
    }

    async fn state(&self) -> Option<Value> {
        self.object("state.json").await
    }

    /// The physical ids state records.
    async fn recorded(&self) -> BTreeSet<String> {
        let Some(state) = self.state().await else {
            return BTreeSet::new();
        };
        state["resources"]
            .as_object()
            .map(|m| {
                m.values()
                    .filter_map(|r| r["physicalId"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    async fn force_unlock(&self) {
        let (code, _) = self.run(&[
            "force-unlock",
            &self.stack,
            "--state-bucket",
            &self.bucket,
            "--stack-region",
            REGION,
        ]);
        assert_eq!(code, 0);
    }
}

fn add_fault(fault: Value) {
    let (status, body) = http("POST", "/_cloudcontrol/faults", &[], &fault.to_string());
    assert_eq!(status, 200, "{body}");
}

/// What the emulator holds for `stack`: queues, topics, parameters and event buses.
struct Live {
    queues: BTreeSet<String>,
    topics: BTreeSet<String>,
    parameters: BTreeSet<String>,
    buses: BTreeSet<String>,
}

impl Live {
    async fn of(stack: &str) -> Live {
        let config = sdk_config().await;
        let sqs = aws_sdk_sqs::Client::new(&config);
        let sns = aws_sdk_sns::Client::new(&config);
        let ssm = aws_sdk_ssm::Client::new(&config);
        let cc = aws_sdk_cloudcontrol::Client::new(&config);
        let queues = sqs
            .list_queues()
            .queue_name_prefix(format!("{stack}-"))
            .send()
            .await
            .map(|o| o.queue_urls().to_vec())
            .unwrap_or_default()
            .into_iter()
            .collect();
        let mut topics = BTreeSet::new();
        let mut token = None;
        loop {
            let out = sns
                .list_topics()
                .set_next_token(token)
                .send()
                .await
                .expect("list topics");
            for t in out.topics() {
                let arn = t.topic_arn().unwrap_or_default();
                if arn.contains(&format!(":{stack}-")) {
                    topics.insert(arn.to_owned());
                }
            }
            token = out.next_token().map(str::to_owned);
            if token.is_none() {
                break;
            }
        }
        let parameters = ssm
            .get_parameters_by_path()
            .path(format!("/{stack}/"))
            .send()
            .await
            .map(|o| {
                o.parameters()
                    .iter()
                    .filter_map(|p| p.name().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let buses = cc
            .list_resources()
            .type_name("AWS::Events::EventBus")
            .send()
            .await
            .map(|o| {
                o.resource_descriptions()
                    .iter()
                    .filter_map(|d| d.identifier().map(str::to_owned))
                    .filter(|id| id.starts_with(&format!("{stack}-")))
                    .collect()
            })
            .unwrap_or_default();
        Live {
            queues,
            topics,
            parameters,
            buses,
        }
    }

    fn count(&self) -> usize {
        self.queues.len() + self.topics.len() + self.parameters.len() + self.buses.len()
    }

    fn all(&self) -> BTreeSet<String> {
        self.queues
            .iter()
            .chain(&self.topics)
            .chain(&self.parameters)
            .chain(&self.buses)
            .cloned()
            .collect()
    }
}

/// Queues `Keep` and `Grow`, a parameter reading Keep's ARN, and (with `failing`) a new queue
/// `Added` plus a repository whose create the emulator fails, after everything else.
fn app_template(stack: &str, keep_timeout: u32, failing: bool) -> Value {
    let mut resources = json!({
        "Keep": {"Type": "AWS::SQS::Queue", "Properties": {
            "QueueName": format!("{stack}-keep"), "VisibilityTimeout": keep_timeout}},
        "Param": {"Type": "AWS::SSM::Parameter", "Properties": {
            "Name": format!("/{stack}/keep-arn"), "Type": "String",
            "Value": {"Fn::GetAtt": ["Keep", "Arn"]}}}
    });
    if failing {
        resources["Added"] = json!({"Type": "AWS::SQS::Queue", "Properties": {
            "QueueName": format!("{stack}-added")}});
        resources["Repo"] = json!({"Type": FAILING_TYPE,
            "Properties": {"RepositoryName": format!("{stack}-repo")},
            "DependsOn": ["Added", "Param"]});
    }
    json!({"Resources": resources})
}

async fn visibility(stack: &str, queue: &str) -> Option<String> {
    let sqs = aws_sdk_sqs::Client::new(&sdk_config().await);
    let url = sqs
        .get_queue_url()
        .queue_name(format!("{stack}-{queue}"))
        .send()
        .await
        .ok()?
        .queue_url()?
        .to_owned();
    let attr = aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout;
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(attr.clone())
        .send()
        .await
        .ok()?;
    out.attributes().and_then(|a| a.get(&attr)).cloned()
}

fn fail_next_repository_create() {
    add_fault(
        json!({"fail_create": {"TypeName": FAILING_TYPE, "ErrorCode": "InvalidRequest",
        "StatusMessage": "injected by deploy_failure.rs", "count": 1}}),
    );
}

#[tokio::test]
async fn a_failed_first_deploy_rolls_back_everything_it_created() {
    let app = App::new("fail-first");
    app.write(&app_template(&app.stack, 30, true));
    fail_next_repository_create();
    let (code, stderr) = app.deploy(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("rolled back"), "{stderr}");
    assert!(stderr.contains("injected by deploy_failure.rs"), "{stderr}");
    // The rollback's lines go through the progress sink: prefixed with the stack.
    let reverted = format!("{} | ↩ Param AWS::SSM::Parameter deleted", app.stack);
    assert!(stderr.contains(&reverted), "{stderr}");
    // Nothing the run created survives, and the stack has no objects left.
    assert_eq!(visibility(&app.stack, "keep").await, None);
    assert_eq!(visibility(&app.stack, "added").await, None);
    let live = Live::of(&app.stack).await;
    assert!(live.parameters.is_empty(), "{:?}", live.parameters);
    assert!(app.state().await.is_none(), "the empty record is deleted");
    assert!(app.object("rollback-journal.json").await.is_none());
    assert!(app.object("create-tokens.json").await.is_none());
}

#[tokio::test]
async fn a_rolled_back_create_under_retain_is_kept_in_orphans_and_retain_except_on_create_is_deleted(
) {
    let app = App::new("fail-retain");
    let name = |n: &str| format!("{}-{n}", app.stack);
    app.write(&json!({"Resources": {
        "Kept": {"Type": "AWS::SQS::Queue", "DeletionPolicy": "Retain",
                 "Properties": {"QueueName": name("kept")}},
        "Cleaned": {"Type": "AWS::SQS::Queue", "DeletionPolicy": "RetainExceptOnCreate",
                    "Properties": {"QueueName": name("cleaned")}},
        "Repo": {"Type": FAILING_TYPE, "Properties": {"RepositoryName": name("repo")},
                 "DependsOn": ["Kept", "Cleaned"]}
    }}));
    fail_next_repository_create();
    let (code, stderr) = app.deploy(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("rolled back"), "{stderr}");
    assert!(
        stderr.contains("Kept AWS::SQS::Queue retained in AWS (DeletionPolicy: Retain)"),
        "{stderr}"
    );
    // Retain keeps the queue the rolled-back create made; RetainExceptOnCreate does not.
    assert_eq!(visibility(&app.stack, "kept").await.as_deref(), Some("30"));
    assert_eq!(visibility(&app.stack, "cleaned").await, None);

    // The kept queue is the record's orphan, so the record outlives the failed first deploy.
    let state = app.state().await.expect("the record keeps the orphan");
    assert_eq!(state["resources"], json!({}));
    let orphans = state["orphans"].as_array().expect("an orphans list");
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    assert_eq!(orphans[0]["logicalId"], "Kept");
    assert!(orphans[0]["orphanedAt"].as_u64().is_some(), "{orphans:?}");
    let kept = &orphans[0]["state"];
    assert_eq!(kept["resourceType"], "AWS::SQS::Queue");
    assert_eq!(kept["deletionPolicy"], "Retain");
    assert!(
        kept["physicalId"]
            .as_str()
            .is_some_and(|u| u.ends_with(&name("kept"))),
        "{kept}"
    );
    let sqs = aws_sdk_sqs::Client::new(&sdk_config().await);
    let url = kept["physicalId"].as_str().unwrap();
    sqs.delete_queue()
        .queue_url(url)
        .send()
        .await
        .expect("clean up");
}

#[tokio::test]
async fn a_failed_update_is_rolled_back_to_the_previous_deploy() {
    let app = App::new("fail-update");
    app.write(&app_template(&app.stack, 30, false));
    assert_eq!(app.deploy(&[]).0, 0);
    let before = app.state().await.expect("state");

    // Second deploy: Keep is updated, Added created, then Repo fails.
    app.write(&app_template(&app.stack, 45, true));
    fail_next_repository_create();
    let (code, stderr) = app.deploy(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("rolled back"), "{stderr}");
    assert_eq!(visibility(&app.stack, "keep").await.as_deref(), Some("30"));
    assert_eq!(
        visibility(&app.stack, "added").await,
        None,
        "created, then deleted"
    );
    let after = app.state().await.expect("state kept");
    assert_eq!(
        after["resources"], before["resources"],
        "state is as before the deploy"
    );
    let journal = app.object("rollback-journal.json").await.expect("journal");
    let segment = &journal["segments"][0];
    assert_eq!(journal["journalVersion"], 1);
    assert_eq!(segment["reason"], "auto-rollback-clean");
    assert_eq!(segment["operations"], json!([]));
    assert_eq!(segment["failedOperations"][0]["logicalId"], "Repo");

    // The next successful deploy removes the journal.
    app.write(&app_template(&app.stack, 30, false));
    assert_eq!(app.deploy(&[]).0, 0);
    assert!(app.object("rollback-journal.json").await.is_none());
}

#[tokio::test]
async fn no_rollback_keeps_the_changes_and_cdkd_rollback_reverts_them() {
    let app = App::new("fail-keep");
    app.write(&app_template(&app.stack, 30, false));
    assert_eq!(app.deploy(&[]).0, 0);
    let before = app.state().await.expect("state");

    app.write(&app_template(&app.stack, 45, true));
    fail_next_repository_create();
    let (code, stderr) = app.deploy(&["--no-rollback"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("cdkd rollback"), "{stderr}");
    assert_eq!(visibility(&app.stack, "keep").await.as_deref(), Some("45"));
    assert!(visibility(&app.stack, "added").await.is_some());
    let kept = app.state().await.expect("state");
    assert!(kept["resources"].get("Added").is_some(), "{kept}");
    let journal = app.object("rollback-journal.json").await.expect("journal");
    let segment = &journal["segments"][0];
    assert_eq!(segment["reason"], "no-rollback-failure");
    assert_eq!(segment["initialDeploy"], false, "{segment}");
    assert!(
        segment["runId"].as_str().is_some_and(|id| id.contains('T')),
        "the failed run's deployment-event id: {segment}"
    );
    let ops: BTreeSet<String> = segment["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o["changeType"].as_str().unwrap(),
                o["logicalId"].as_str().unwrap()
            )
        })
        .collect();
    assert!(ops.contains("CREATE Added"), "{ops:?}");
    assert!(ops.contains("UPDATE Keep"), "{ops:?}");

    // `cdkd rollback` needs no app: only the stack name and the bucket.
    let (code, stderr) = app.run(&["rollback", &app.stack, "--state-bucket", &app.bucket]);
    assert_eq!(code, 0, "{stderr}");
    // No progress sink there: each reverted operation is its own indented line.
    assert!(
        stderr.contains("  ↩ Added AWS::SQS::Queue deleted"),
        "{stderr}"
    );
    assert_eq!(visibility(&app.stack, "keep").await.as_deref(), Some("30"));
    assert_eq!(visibility(&app.stack, "added").await, None);
    let after = app.state().await.expect("state");
    assert_eq!(after["resources"], before["resources"]);
    assert!(app.object("rollback-journal.json").await.is_none());
    let (code, stderr) = app.run(&["rollback", &app.stack, "--state-bucket", &app.bucket]);
    assert_eq!(code, 0);
    assert!(stderr.contains("nothing to roll back"), "{stderr}");
}

/// `cdkd rollback --orphan ID` (upstream's, as `cdk rollback --orphan`): that resource is not
/// rolled back but dropped from state, left in AWS; the rest roll back.
#[tokio::test]
async fn rollback_orphan_skips_the_named_resource_and_drops_it_from_state() {
    let app = App::new("fail-orphan");
    app.write(&app_template(&app.stack, 30, false));
    assert_eq!(app.deploy(&[]).0, 0);
    app.write(&app_template(&app.stack, 45, true));
    fail_next_repository_create();
    let (code, stderr) = app.deploy(&["--no-rollback"]);
    assert_eq!(code, 1, "{stderr}");

    let (code, stderr) = app.run(&[
        "rollback",
        &app.stack,
        "--orphan",
        "Added",
        "--force",
        "--state-bucket",
        &app.bucket,
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("Added AWS::SQS::Queue orphaned (--orphan"),
        "{stderr}"
    );
    // Added stays in AWS and leaves the record's resources; Keep is rolled back.
    assert!(visibility(&app.stack, "added").await.is_some());
    assert_eq!(visibility(&app.stack, "keep").await.as_deref(), Some("30"));
    let state = app.state().await.expect("state");
    assert!(state["resources"].get("Added").is_none(), "{state}");
    assert!(state["resources"].get("Keep").is_some(), "{state}");
    let orphans = state["orphans"].to_string();
    assert!(orphans.contains("Added"), "kept among the orphans: {state}");
    assert!(app.object("rollback-journal.json").await.is_none());
}

/// The committed 20-resource fixture, deployed under `app.stack`.
fn write_twenty(app: &App) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/apps/twenty/cdk.out/Twenty.template.json");
    let template: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).expect("fixture")).expect("json");
    app.write(&template);
}

#[tokio::test]
async fn sigkill_at_several_points_then_redeploy_converges() {
    let mut killed = 0;
    for kill_at in [2usize, 8, 14] {
        let app = App::new(&format!("kill{kill_at}"));
        write_twenty(&app);
        let bin = assert_cmd::cargo::cargo_bin("cdkd");
        let mut child = Command::new(bin)
            .current_dir(app.dir.path())
            .args(app.args("deploy"))
            .args(["--concurrency", "2"])
            .envs(emulator_env())
            .env_remove("CDKD_STATE_BUCKET")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn cdkd");
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = 0;
        loop {
            if child.try_wait().expect("wait").is_some() {
                break;
            }
            seen = Live::of(&app.stack).await.count();
            if seen >= kill_at {
                child.kill().expect("SIGKILL");
                killed += 1;
                break;
            }
            assert!(Instant::now() < deadline, "the deploy took too long");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let _ = child.wait();
        eprintln!("kill point {kill_at}: killed with {seen} resource(s) in the emulator");

        // The killed run left its lock behind; the user removes it and deploys again.
        app.force_unlock().await;
        let (code, stderr) = app.deploy(&["--concurrency", "2"]);
        assert_eq!(code, 0, "{stderr}");

        let live = Live::of(&app.stack).await;
        assert_eq!(
            live.queues.len(),
            8,
            "no duplicate queue: {:?}",
            live.queues
        );
        assert_eq!(
            live.topics.len(),
            4,
            "no duplicate topic: {:?}",
            live.topics
        );
        assert_eq!(live.parameters.len(), 4, "{:?}", live.parameters);
        assert_eq!(live.buses.len(), 4, "{:?}", live.buses);
        let recorded = app.recorded().await;
        assert_eq!(recorded.len(), 20);
        let untracked: Vec<_> = live.all().difference(&recorded).cloned().collect();
        assert!(
            untracked.is_empty(),
            "untracked in the emulator: {untracked:?}"
        );

        // And a third deploy has nothing left to do.
        let (code, stderr) = app.deploy(&[]);
        assert_eq!(code, 0, "{stderr}");
        assert!(stderr.contains("no changes"), "{stderr}");
    }
    assert!(
        killed >= 2,
        "only {killed} run(s) were still going at their kill point"
    );
}

#[tokio::test]
async fn two_deploys_of_one_stack_one_waits_out_and_fails_naming_the_holder() {
    let app = App::new("lock");
    app.write(
        &json!({"Resources": {"Board": {"Type": SLOW_TYPE, "Properties": {
        "DashboardName": format!("{}-board", app.stack),
        "DashboardBody": "{\"widgets\": []}"}}}}),
    );
    // The first deploy's create stays in progress for about ten seconds.
    add_fault(
        json!({"polls": {"polls": 7, "TypeName": SLOW_TYPE, "Operation": "CREATE",
        "count": 1}}),
    );
    let bin = assert_cmd::cargo::cargo_bin("cdkd");
    let first = Command::new(bin)
        .current_dir(app.dir.path())
        .args(app.args("deploy"))
        .envs(emulator_env())
        .env_remove("CDKD_STATE_BUCKET")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cdkd");
    // Wait until the first one holds the lock.
    let deadline = Instant::now() + Duration::from_secs(30);
    while app.object("lock.json").await.is_none() {
        assert!(
            Instant::now() < deadline,
            "the first deploy never took the lock"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (code, stderr) = app.deploy(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("locked by"),
        "the holder is named: {stderr}"
    );
    let out = first.wait_with_output().expect("first deploy");
    assert!(
        out.status.success(),
        "the first deploy proceeds: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(app.state().await.is_some());
}

#[tokio::test]
async fn a_create_an_interrupted_run_sent_is_taken_over_not_duplicated() {
    let config = sdk_config().await;
    let ssm = aws_sdk_ssm::Client::new(&config);
    let iam = aws_sdk_iam::Client::new(&config);

    // A parameter with a declared name, and a role whose name cdkd generates.
    let app = App::new("adopt");
    let template = json!({"Resources": {
        "Param": {"Type": "AWS::SSM::Parameter", "Properties": {
            "Name": format!("/{}/adopted", app.stack), "Type": "String", "Value": "v1"}},
        "Role": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow",
            "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}}}
    }});
    app.write(&template);

    // Without a ledger entry, a parameter that already exists is someone else's: refused.
    ssm.put_parameter()
        .name(format!("/{}/adopted", app.stack))
        .value("v1")
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .expect("parameter");
    let (code, stderr) = app.deploy(&["--no-rollback"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("ParameterAlreadyExists"), "{stderr}");

    // The run that "made" them was killed before state named them; its ledger says so.
    let other = App::new("adopt2");
    let mut with_name = template.clone();
    with_name["Resources"]["Param"]["Properties"]["Name"] =
        json!(format!("/{}/adopted", other.stack));
    other.write(&with_name);
    ssm.put_parameter()
        .name(format!("/{}/adopted", other.stack))
        .value("v1")
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .expect("parameter");
    let token = "feedfacefeedfacefeedfacefeedface";
    // The role name a create under that token generates.
    let role_name = cdkd::provider::naming::compose(
        &other.stack,
        "Role",
        &cdkd::state::ledger::name_suffix(token, "Role"),
        cdkd::provider::naming::IAM_NAME,
    );
    iam.create_role()
        .role_name(&role_name)
        .assume_role_policy_document(
            template["Resources"]["Role"]["Properties"]["AssumeRolePolicyDocument"].to_string(),
        )
        .send()
        .await
        .expect("role");
    let ledger = json!({"version": 1, "nonce": "0123456789abcdef", "recordSaved": false,
        "sent": {"Param": {"token": "aaaa", "firstSentAt": 1},
                 "Role": {"token": token, "firstSentAt": 1}}});
    s3_client()
        .await
        .put_object()
        .bucket(&other.bucket)
        .key(other.key("create-tokens.json"))
        .body(ledger.to_string().into_bytes().into())
        .send()
        .await
        .expect("ledger written");

    let (code, stderr) = other.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("took over /{}/adopted", other.stack)),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("took over {role_name}")),
        "{stderr}"
    );
    let recorded = other.recorded().await;
    assert!(recorded.contains(&role_name), "{recorded:?}");
    let roles = iam
        .list_roles()
        .send()
        .await
        .expect("roles")
        .roles()
        .iter()
        .filter(|r| r.role_name().starts_with(&format!("{}-Role-", other.stack)))
        .count();
    assert_eq!(roles, 1, "no second role");
}

#[tokio::test]
async fn ctrl_c_finishes_in_flight_work_saves_state_writes_the_journal_and_unlocks() {
    let app = App::new("ctrlc");
    write_twenty(&app);
    let bin = assert_cmd::cargo::cargo_bin("cdkd");
    let mut child = Command::new(bin)
        .current_dir(app.dir.path())
        .args(app.args("deploy"))
        .args(["--concurrency", "2"])
        .envs(emulator_env())
        .env_remove("CDKD_STATE_BUCKET")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cdkd");
    let deadline = Instant::now() + Duration::from_secs(60);
    while Live::of(&app.stack).await.count() < 3 {
        assert!(Instant::now() < deadline, "the deploy never started");
        assert!(
            child.try_wait().expect("wait").is_none(),
            "finished too soon"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    let out = child.wait_with_output().expect("cdkd ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");

    // Whatever exists is recorded, the lock is gone, and the journal names this attempt.
    let live = Live::of(&app.stack).await;
    let recorded = app.recorded().await;
    assert!(live.count() < 20, "interrupted before the end");
    assert!(
        live.all().is_subset(&recorded),
        "{:?} vs {recorded:?}",
        live.all()
    );
    assert!(
        app.object("lock.json").await.is_none(),
        "the lock was released"
    );
    let journal = app.object("rollback-journal.json").await.expect("journal");
    assert_eq!(journal["segments"][0]["reason"], "interrupted");

    // The next deploy finishes the job and clears the journal.
    let (code, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(Live::of(&app.stack).await.count(), 20);
    assert!(app.object("rollback-journal.json").await.is_none());
}
