//! What beside a record goes with it, and a lock left without one: `cdkd state orphan` of a
//! whole record deletes the create-token ledger and the rollback journal before the record;
//! `cdkd force-unlock` clears the lock of a stack a crashed first deploy left with no record.

use crate::state_backend::{bucket_with_versioning, get, put, state_fixture};
use crate::support::cdkd;

const LOCK: &str = r#"{"owner":"crashed@host:1","timestamp":1700000000000,"expiresAt":4102444800000,"operation":"deploy"}"#;

fn run(args: &[&str]) -> (i32, String) {
    let out = cdkd().args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn state_orphan_of_a_whole_record_takes_its_ledger_and_journal_with_it() {
    let (client, bucket) = bucket_with_versioning().await;
    let base = "cdkd/MyAppStack/us-east-1";
    let record = std::fs::read(state_fixture("spec-example.json")).expect("fixture");
    put(&client, &bucket, &format!("{base}/state.json"), record).await;
    let ledger = br#"{"version":1,"nonce":"n","recordSaved":true,"sent":{}}"#.to_vec();
    put(
        &client,
        &bucket,
        &format!("{base}/create-tokens.json"),
        ledger,
    )
    .await;
    let journal = br#"{"journalVersion":1,"segments":[]}"#.to_vec();
    put(
        &client,
        &bucket,
        &format!("{base}/rollback-journal.json"),
        journal,
    )
    .await;

    let (code, err) = run(&[
        "state",
        "orphan",
        "MyAppStack",
        "--yes",
        "--state-bucket",
        &bucket,
    ]);
    assert_eq!(code, 0, "{err}");
    for file in ["state.json", "create-tokens.json", "rollback-journal.json"] {
        assert!(
            get(&client, &bucket, &format!("{base}/{file}"))
                .await
                .is_none(),
            "{file} was left behind"
        );
    }
}

#[tokio::test]
async fn force_unlock_clears_a_lock_a_first_deploy_left_without_a_record() {
    let (client, bucket) = bucket_with_versioning().await;
    let lock_key = "cdkd/Fresh/eu-west-1/lock.json";
    put(&client, &bucket, lock_key, LOCK.as_bytes().to_vec()).await;

    let (code, err) = run(&["force-unlock", "Fresh", "--state-bucket", &bucket]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("crashed@host:1"), "the holder is named: {err}");
    assert!(err.contains("Unlocked stack Fresh (eu-west-1)"), "{err}");
    assert!(get(&client, &bucket, lock_key).await.is_none());

    // Nothing at all: the usual region chain, and nothing to unlock.
    let (code, err) = run(&["force-unlock", "Fresh", "--state-bucket", &bucket]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("was not locked"), "{err}");

    // Locks in two regions and no record: which one is the user's to say.
    put(
        &client,
        &bucket,
        "cdkd/Twice/eu-west-1/lock.json",
        LOCK.as_bytes().to_vec(),
    )
    .await;
    put(
        &client,
        &bucket,
        "cdkd/Twice/us-west-2/lock.json",
        LOCK.as_bytes().to_vec(),
    )
    .await;
    let (code, err) = run(&["force-unlock", "Twice", "--state-bucket", &bucket]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--stack-region"), "{err}");
    let (code, err) = run(&[
        "force-unlock",
        "Twice",
        "--stack-region",
        "us-west-2",
        "--state-bucket",
        &bucket,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(get(&client, &bucket, "cdkd/Twice/us-west-2/lock.json")
        .await
        .is_none());
    assert!(get(&client, &bucket, "cdkd/Twice/eu-west-1/lock.json")
        .await
        .is_some());
}
