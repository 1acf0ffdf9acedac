//! The deployment-event store end to end: every deploy and destroy records a run under the
//! stack's `deployments/`, `cdkd events` lists and prints them (text and JSON), no secret
//! reaches any version of those objects, and `cdkd events prune` keeps what it is told to.

use crate::support;

use serde_json::{json, Value};
use support::app::{every_object_version, App};
use support::{cdkd, sdk_config, unique_name};

const REGION: &str = "us-east-1";

fn stack_name(prefix: &str) -> String {
    format!("Ev{}", unique_name(prefix).replace('-', "x"))
}

/// `cdkd ARGS --state-bucket B`: (exit code, stdout, stderr).
fn run(app: &App, args: &[&str]) -> (i32, String, String) {
    let dir = app.dir.path();
    let out = cdkd()
        .current_dir(dir)
        .env("CDKD_PROGRESS", "plain")
        .args(args)
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

fn events_json(app: &App, args: &[&str]) -> Value {
    let (code, stdout, stderr) = run(app, &[&["events"], args, &["--json"]].concat());
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn run_ids(listing: &Value) -> Vec<String> {
    listing["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["runId"].as_str().expect("runId").to_owned())
        .collect()
}

/// Every version of every object under the stack's `deployments/`.
async fn deployments(app: &App, stack: &str) -> Vec<(String, String)> {
    let prefix = format!("cdkd/{stack}/{REGION}/deployments/");
    every_object_version(&app.bucket)
        .await
        .into_iter()
        .filter(|(k, _)| k.starts_with(&prefix))
        .collect()
}

#[tokio::test]
async fn a_deploy_and_a_destroy_are_two_runs_and_no_secret_is_recorded() {
    let app = App::new("cdkd-events");
    let stack = stack_name("runs");
    let secret_name = unique_name("ev-secret");
    let secret_plain = "Ev3ntS3cretValue";
    let sm = aws_sdk_secretsmanager::Client::new(&sdk_config().await);
    sm.create_secret()
        .name(&secret_name)
        .secret_string(json!({"password": secret_plain}).to_string())
        .send()
        .await
        .expect("create secret");
    let secret_ref = format!("{{{{resolve:secretsmanager:{secret_name}:SecretString:password}}}}");
    let template = json!({
        "Resources": {
            "Queue": {"Type": "AWS::SQS::Queue"},
            "Param": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {
                    "Name": format!("/cdkd-test/{stack}/p"),
                    "Type": "String",
                    "Value": secret_ref
                }
            }
        }
    });
    app.write_stacks(&[(&stack, &template, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");

    let listing = events_json(&app, &[&stack]);
    assert_eq!(listing["stackName"], stack.as_str());
    assert_eq!(listing["region"], REGION);
    let runs = listing["runs"].as_array().expect("runs").clone();
    assert_eq!(runs.len(), 1, "{listing}");
    assert_eq!(runs[0]["command"], "deploy");
    assert_eq!(runs[0]["result"], "SUCCEEDED");
    let deploy_run = runs[0]["runId"].as_str().expect("runId").to_owned();

    let events = events_json(&app, &[&stack, "--run", &deploy_run]);
    let events = events.as_array().expect("an array of events");
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["eventType"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(types.first(), Some(&"RUN_STARTED"), "{types:?}");
    assert_eq!(types.last(), Some(&"RUN_FINISHED"), "{types:?}");
    assert_eq!(events[0]["command"], "deploy");
    assert_eq!(events[0]["region"], REGION);
    for id in ["Queue", "Param"] {
        let of = |t: &str| {
            events
                .iter()
                .find(|e| e["eventType"] == t && e["logicalId"] == id)
                .unwrap_or_else(|| panic!("no {t} of {id}: {types:?}"))
        };
        assert_eq!(of("RESOURCE_STARTED")["operation"], "CREATE");
        let done = of("RESOURCE_SUCCEEDED");
        assert!(
            done["physicalId"].as_str().is_some_and(|p| !p.is_empty()),
            "{done}"
        );
        assert!(done["durationMs"].is_u64(), "{done}");
        assert_eq!(done["provisionedBy"], "sdk");
    }
    let finished = events.last().expect("events");
    assert_eq!(finished["result"], "SUCCEEDED");
    assert_eq!(
        finished["counts"],
        json!({"created": 2, "updated": 0, "deleted": 0})
    );
    for e in events {
        assert!(
            e["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{e}"
        );
        assert_eq!(e["stackName"], stack.as_str());
    }

    let (code, _, stderr) = run(
        &app,
        &[
            "destroy",
            "--app",
            app.dir.path().to_str().unwrap(),
            "--all",
            "--force",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let listing = events_json(&app, &[&stack]);
    let runs = listing["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "the history survives the destroy: {listing}");
    assert_eq!(runs[0]["command"], "destroy", "newest first");
    assert_eq!(runs[0]["result"], "SUCCEEDED");
    assert_eq!(runs[1]["runId"], deploy_run.as_str());
    let destroy_run = runs[0]["runId"].as_str().unwrap().to_owned();
    let destroyed = events_json(&app, &[&stack, "--run", &destroy_run]);
    let deletes = destroyed
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["eventType"] == "RESOURCE_SUCCEEDED" && e["operation"] == "DELETE")
        .count();
    assert_eq!(deletes, 2, "{destroyed}");

    // The text forms name the runs and the events.
    let (code, stdout, _) = run(&app, &["events", &stack]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains(&deploy_run) && stdout.contains(&destroy_run),
        "{stdout}"
    );
    assert!(stdout.contains("destroy  SUCCEEDED"), "{stdout}");
    let (code, stdout, _) = run(
        &app,
        &["events", &stack, "--run", &deploy_run, "--format", "text"],
    );
    assert_eq!(code, 0);
    assert!(
        stdout.contains("RESOURCE_SUCCEEDED  Queue (AWS::SQS::Queue)  CREATE  [sdk]"),
        "{stdout}"
    );
    assert!(stdout.contains("+2/~0/-0"), "{stdout}");

    // The secret reached AWS, and no version of any event object holds it.
    let objects = deployments(&app, &stack).await;
    assert!(objects.len() >= 3, "two streams and the index: {objects:?}");
    for (key, body) in &objects {
        assert!(
            !body.contains(secret_plain),
            "{key} holds the secret: {body}"
        );
    }
    let (code, _, stderr) = run(&app, &["events", "NoSuchStack"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("no deployment-event history for stack NoSuchStack"),
        "{stderr}"
    );
}

#[tokio::test]
async fn prune_keeps_the_newest_runs_and_all_leaves_nothing() {
    let app = App::new("cdkd-evprune");
    let stack = stack_name("prune");
    let template = json!({"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}});
    app.write_stacks(&[(&stack, &template, &[])]);
    for _ in 0..4 {
        let (code, _, stderr) = app.deploy(&[]);
        assert_eq!(code, 0, "{stderr}");
    }
    let before = run_ids(&events_json(&app, &[&stack]));
    assert_eq!(
        before.len(),
        4,
        "a deploy that changes nothing is a run too"
    );

    // Without --yes and without a terminal: refused, nothing deleted.
    let (code, _, stderr) = run(&app, &["events", "prune", &stack, "--keep", "1"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("pass --yes"), "{stderr}");
    assert_eq!(run_ids(&events_json(&app, &[&stack])), before);
    let (code, _, stderr) = run(&app, &["events", "prune", &stack, "--all", "--keep", "1"]);
    assert_ne!(code, 0, "--all conflicts with --keep: {stderr}");
    assert!(stderr.contains("cannot be used with"), "{stderr}");

    let (code, _, stderr) = run(&app, &["events", "prune", &stack, "--keep", "2", "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("Pruned 2 run(s)"), "{stderr}");
    let after = run_ids(&events_json(&app, &[&stack]));
    assert_eq!(after, before[..2].to_vec(), "the newest two are kept");
    // The deleted streams are gone with every version; the kept ones are readable.
    let objects = deployments(&app, &stack).await;
    for old in &before[2..] {
        assert!(
            !objects.iter().any(|(k, _)| k.contains(old.as_str())),
            "{old}: {objects:?}"
        );
    }
    for kept in &after {
        let events = events_json(&app, &[&stack, "--run", kept]);
        assert!(!events.as_array().unwrap().is_empty());
    }
    // --older-than a day keeps today's runs.
    let (code, _, stderr) = run(
        &app,
        &["events", "prune", &stack, "--older-than", "24h", "-y"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(run_ids(&events_json(&app, &[&stack])), after);

    let (code, _, stderr) = run(&app, &["events", "prune", &stack, "--all", "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        deployments(&app, &stack).await,
        Vec::<(String, String)>::new()
    );
    let (code, _, _) = run(&app, &["events", &stack]);
    assert_eq!(code, 1, "no history is left");
}

async fn put(app: &App, key: &str, body: Vec<u8>) {
    support::s3_client()
        .await
        .put_object()
        .bucket(&app.bucket)
        .key(key)
        .body(body.into())
        .send()
        .await
        .expect("put");
}

async fn body(app: &App, key: &str) -> Option<Vec<u8>> {
    let out = support::s3_client()
        .await
        .get_object()
        .bucket(&app.bucket)
        .key(key)
        .send()
        .await
        .ok()?;
    Some(out.body.collect().await.ok()?.into_bytes().to_vec())
}

/// Upstream cdkd's own event store (tests/fixtures/upstream, scripts/upstream-goldens) as it
/// wrote it: `cdkd events` lists its runs and prints its events.
#[tokio::test]
async fn upstream_runs_are_listed_and_read() {
    let app = App::new("cdkd-evup");
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/upstream/deployments");
    let stack = "GoldenStack";
    for entry in std::fs::read_dir(&golden).expect("goldens") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let key = format!("cdkd/{stack}/{REGION}/deployments/{name}");
        put(&app, &key, std::fs::read(&path).unwrap()).await;
    }
    let index: Value =
        serde_json::from_slice(&std::fs::read(golden.join("index.json")).unwrap()).unwrap();
    let listing = events_json(&app, &[stack]);
    assert_eq!(
        listing["runs"], index["runs"],
        "the index's rows, as upstream wrote them"
    );
    let failed = index["runs"][0]["runId"].as_str().unwrap();
    let events = events_json(&app, &[stack, "--run", failed]);
    let events = events.as_array().unwrap();
    assert_eq!(
        events.len() as u64,
        index["runs"][0]["eventCount"].as_u64().unwrap()
    );
    assert!(events
        .iter()
        .any(|e| e["eventType"] == "RESOURCE_FAILED" && e["logicalId"] == "Doc"));
    let (code, stdout, _) = run(&app, &["events", stack, "--run", failed]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("CloudControlOperationFailedError: CREATE failed for Doc"),
        "{stdout}"
    );

    // Without the index, the runs are rebuilt from the streams, results and all.
    let index_key = format!("cdkd/{stack}/{REGION}/deployments/index.json");
    support::s3_client()
        .await
        .delete_object()
        .bucket(&app.bucket)
        .key(&index_key)
        .send()
        .await
        .unwrap();
    let rebuilt = events_json(&app, &[stack]);
    let results: Vec<&Value> = rebuilt["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["result"])
        .collect();
    assert_eq!(results, vec!["FAILED", "SUCCEEDED"], "{rebuilt}");
    assert_eq!(rebuilt["runs"][0]["cdkdVersion"], "0.284.40");
}

/// Objects of a newer format than this binary knows are refused and left as they are: a
/// journal stops the deploy and the rollback; an index is not rewritten (the run is still
/// recorded in its own stream, and the deploy is not failed for it).
#[tokio::test]
async fn newer_journals_and_indexes_are_refused_and_kept() {
    let app = App::new("cdkd-evnewer");
    let stack = stack_name("newer");
    let template = json!({"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}});
    app.write_stacks(&[(&stack, &template, &[])]);
    let journal_key = format!("cdkd/{stack}/{REGION}/rollback-journal.json");
    let journal =
        json!({"journalVersion": 2, "stackName": stack, "region": REGION, "segments": []});
    let journal = serde_json::to_vec(&journal).unwrap();
    put(&app, &journal_key, journal.clone()).await;
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("journalVersion 2"), "{stderr}");
    let (code, _, stderr) = run(&app, &["rollback", &stack]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        body(&app, &journal_key).await,
        Some(journal),
        "never overwritten"
    );
    support::s3_client()
        .await
        .delete_object()
        .bucket(&app.bucket)
        .key(&journal_key)
        .send()
        .await
        .unwrap();

    let index_key = format!("cdkd/{stack}/{REGION}/deployments/index.json");
    let index = serde_json::to_vec(&json!({"indexVersion": 2, "runs": []})).unwrap();
    put(&app, &index_key, index.clone()).await;
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("indexVersion 2"), "one warning: {stderr}");
    assert_eq!(body(&app, &index_key).await, Some(index));
    let (code, stdout, stderr) = run(&app, &["events", &stack, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let listing: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        listing["runs"].as_array().map(Vec::len),
        Some(2),
        "from the streams: {listing}"
    );
}
