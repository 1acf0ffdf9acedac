//! `--require-approval broadening` and the diff's security tables, end to end: a change that
//! adds an IAM statement (a queue policy) is shown in `cdkd diff`'s IAM table and needs
//! approval (refused without a terminal and without `--yes`, asked on a terminal); a change
//! that adds none deploys without a question. A security group's ingress rule reaches the
//! diff's security-group table. `cdkd rollback` asks on a terminal unless `--force`.

use crate::support;

use serde_json::{json, Value};
use support::app::App;
use support::cdkd;

const STACK: &str = "SecurityStack";

fn queue(timeout: u32) -> Value {
    json!({"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": timeout}})
}

fn queue_policy() -> Value {
    json!({"Type": "AWS::SQS::QueuePolicy", "Properties": {
        "Queues": [{"Ref": "Queue"}],
        "PolicyDocument": {"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Action": "sqs:SendMessage",
            "Principal": {"Service": "sns.amazonaws.com"},
            "Resource": {"Fn::GetAtt": ["Queue", "Arn"]}}]}}})
}

fn template(resources: Value) -> Value {
    json!({ "Resources": resources })
}

fn diff(app: &App, extra: &[&str]) -> (i32, String, String) {
    let dir = app.dir.path();
    let out = cdkd()
        .current_dir(dir)
        .args(["diff", "--app", dir.to_str().expect("utf-8"), STACK])
        .args(["--state-bucket", &app.bucket])
        .args(extra)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn broadening_asks_for_an_added_iam_statement_and_not_for_other_changes() {
    let app = App::new("cdkd-security");
    app.write_stacks(&[(STACK, &template(json!({"Queue": queue(30)})), &[])]);
    let (code, _, stderr) = app.deploy(&["--require-approval", "broadening"]);
    assert_eq!(code, 0, "a queue alone widens nothing: {stderr}");

    // A change that adds no IAM statement: no question.
    app.write_stacks(&[(STACK, &template(json!({"Queue": queue(60)})), &[])]);
    let (code, _, stderr) = app.deploy(&["--require-approval", "broadening"]);
    assert_eq!(code, 0, "an update that widens nothing: {stderr}");

    // A queue policy adds a statement: the diff shows it, and the deploy needs approval.
    let widened = template(json!({"Queue": queue(60), "Policy": queue_policy()}));
    app.write_stacks(&[(STACK, &widened, &[])]);
    let (code, stdout, stderr) = diff(&app, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("IAM Statement Changes"), "{stdout}");
    let row = stdout
        .lines()
        .find(|l| l.contains("sqs:SendMessage"))
        .unwrap_or_else(|| panic!("no statement row:\n{stdout}"));
    assert!(
        row.starts_with("│ + │")
            && row.contains("Allow")
            && row.contains("Service:sns.amazonaws.com"),
        "{row}"
    );
    let (code, stdout, _) = diff(&app, &["--security-only", "--fail"]);
    assert_eq!(
        code, 1,
        "--security-only --fail fails on a broadening:\n{stdout}"
    );
    assert!(
        !stdout.contains("[+] AWS::SQS::QueuePolicy"),
        "only the tables:\n{stdout}"
    );

    let (code, _, stderr) = app.deploy(&["--require-approval", "broadening"]);
    assert_eq!(code, 1, "no terminal, no --yes: refused\n{stderr}");
    assert!(
        stderr.contains("--require-approval broadening") && stderr.contains("--yes"),
        "{stderr}"
    );
    assert!(
        stderr.contains("IAM Statement Changes"),
        "the table is shown: {stderr}"
    );
    assert!(
        app.record(STACK)["resources"].get("Policy").is_none(),
        "nothing was deployed"
    );

    // On a terminal it asks; "n" refuses, nothing changes.
    let dir = app.dir.path().to_str().expect("utf-8").to_owned();
    let command = format!(
        "{} deploy --app {dir} --state-bucket {} --require-approval broadening",
        env!("CARGO_BIN_EXE_cdkd"),
        app.bucket
    );
    let out = cdkd_in_terminal(&command, "n\n");
    assert!(
        out.contains("Do you wish to deploy these changes (y/n)?"),
        "{out}"
    );
    assert!(
        out.contains("sqs:SendMessage"),
        "the table is in the prompt: {out}"
    );
    assert!(
        app.record(STACK)["resources"].get("Policy").is_none(),
        "{out}"
    );

    let (code, _, stderr) = app.deploy(&["--require-approval", "broadening", "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(app.record(STACK)["resources"].get("Policy").is_some());
    let (code, stdout, _) = diff(&app, &["--security-only", "--fail"]);
    assert_eq!(code, 0, "nothing left to widen:\n{stdout}");
    assert!(
        stdout.contains("There were no security-related changes"),
        "{stdout}"
    );

    // A security group's ingress rule reaches the diff's own table (not deployed).
    let mut with_group = widened.clone();
    with_group["Resources"]["Group"] = json!({"Type": "AWS::EC2::SecurityGroup", "Properties": {
        "GroupDescription": "web",
        "SecurityGroupIngress": [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443,
            "CidrIp": "0.0.0.0/0"}]}});
    app.write_stacks(&[(STACK, &with_group, &[])]);
    let (code, stdout, _) = diff(&app, &[]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("Security Group Changes"), "{stdout}");
    let row = stdout
        .lines()
        .find(|l| l.contains("${Group.GroupId}"))
        .unwrap_or_else(|| panic!("no rule row:\n{stdout}"));
    assert!(
        row.contains("In") && row.contains("TCP 443") && row.contains("Everyone (IPv4)"),
        "{row}"
    );
}

/// Runs `command` under `script` (a pseudo-terminal for stdin and stderr), typing `input`;
/// what the terminal showed. Stdin stays open until the command ends (`script` would end the
/// session at its end of input).
fn cdkd_in_terminal(command: &str, input: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut child = std::process::Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .envs(support::emulator_env())
        .env_remove("CDKD_STATE_BUCKET")
        .env("CDKD_PROGRESS", "plain")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("script runs");
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stdout.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    });
    let mut stdin = child.stdin.take().expect("stdin");
    std::thread::sleep(std::time::Duration::from_secs(3));
    stdin.write_all(input.as_bytes()).expect("typed");
    stdin.flush().expect("flushed");
    let _status = child.wait().expect("finishes");
    drop(stdin);
    reader.join().expect("reader")
}

/// Upstream's `cdkd rollback --force`: on a terminal a rollback asks first ("n" changes
/// nothing, the journal kept); with --force it asks nothing and replays the journal.
#[tokio::test]
async fn rollback_asks_on_a_terminal_unless_force() {
    let app = App::new("cdkd-rollback-ask");
    let stack = format!("Rb{}", support::unique_name("s").replace('-', "x"));
    app.write_stacks(&[(&stack, &template(json!({"Queue": queue(30)})), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let url = app.record(&stack)["resources"]["Queue"]["physicalId"]
        .as_str()
        .expect("url")
        .to_owned();
    // The journal a --no-rollback deploy that created the queue would have left.
    let journal_key = format!("cdkd/{stack}/us-east-1/rollback-journal.json");
    let journal = json!({"journalVersion": 1, "stackName": stack, "region": "us-east-1",
        "segments": [{"reason": "no-rollback", "writtenAt": 1, "failedOperations": [],
            "operations": [{"kind": "CREATE", "logicalId": "Queue",
                "resourceType": "AWS::SQS::Queue", "physicalId": url}]}]});
    let s3 = support::s3_client().await;
    s3.put_object()
        .bucket(&app.bucket)
        .key(&journal_key)
        .body(journal.to_string().into_bytes().into())
        .send()
        .await
        .expect("journal");
    let command = format!(
        "{} rollback {stack} --state-bucket {}",
        env!("CARGO_BIN_EXE_cdkd"),
        app.bucket
    );

    let out = cdkd_in_terminal(&command, "n\n");
    assert!(out.contains("from its journal? [y/N]"), "{out}");
    assert!(
        object_exists(&app.bucket, &journal_key).await,
        "a refused rollback keeps the journal: {out}"
    );
    assert!(queue_alive(&url).await, "{out}");

    let out = cdkd_in_terminal(&format!("{command} --force"), "");
    assert!(!out.contains("[y/N]"), "--force asks nothing: {out}");
    assert!(
        !object_exists(&app.bucket, &journal_key).await,
        "the replayed journal is deleted: {out}"
    );
    assert!(
        !queue_alive(&url).await,
        "the journal's create is undone: {out}"
    );
}

async fn object_exists(bucket: &str, key: &str) -> bool {
    support::s3_client()
        .await
        .head_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .is_ok()
}

async fn queue_alive(url: &str) -> bool {
    aws_sdk_sqs::Client::new(&support::sdk_config().await)
        .get_queue_attributes()
        .queue_url(url)
        .send()
        .await
        .is_ok()
}
