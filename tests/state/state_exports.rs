//! The exports index store against the emulator: concurrent writers under
//! If-Match / If-None-Match, per-stack replace and remove, the rebuild from
//! state records written in the TypeScript cdkd's format (unreadable records
//! named and skipped), the rebuild a lookup triggers on a missing or corrupt
//! index, and the `exportNames` rules.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use cdkd::state::exports::{
    ExportIndex, ExportIndexStore, IndexWriteStatus, DEFAULT_RETRY_BASE_DELAY,
};
use cdkd::state::{parse_state, StackState, StateKeys};
use serde_json::{json, Value};
use support::{s3_client, unique_name};

const REGION: &str = "us-east-1";

async fn bucket() -> (aws_sdk_s3::Client, String) {
    let client = s3_client().await;
    let bucket = unique_name("cdkd-exports");
    client
        .create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("create bucket");
    (client, bucket)
}

fn store(client: &aws_sdk_s3::Client, bucket: &str) -> ExportIndexStore {
    ExportIndexStore::new(client.clone(), bucket, StateKeys::default())
        .with_retry_base_delay(Duration::from_millis(10))
}

async fn put(client: &aws_sdk_s3::Client, bucket: &str, key: &str, body: impl Into<Vec<u8>>) {
    client
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(body.into()))
        .send()
        .await
        .expect("put");
}

/// A record as the TypeScript cdkd writes it (`JSON.stringify(state, null, 2)`).
async fn put_record(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    stack: &str,
    region: &str,
    body: Value,
) {
    let key = StateKeys::default().state(stack, region);
    put(
        client,
        bucket,
        &key,
        serde_json::to_string_pretty(&body).unwrap(),
    )
    .await;
}

fn record_body(
    stack: &str,
    outputs: Value,
    export_names: Option<Value>,
    last_modified: u64,
) -> Value {
    let mut body = json!({
        "version": 9,
        "stackName": stack,
        "region": REGION,
        "resources": {},
        "outputs": outputs,
        "lastModified": last_modified
    });
    if let Some(names) = export_names {
        body["exportNames"] = names;
    }
    body
}

fn state(stack: &str, outputs: Value, export_names: Option<Value>) -> StackState {
    let body = record_body(stack, outputs, export_names, 1);
    parse_state(&serde_json::to_vec(&body).unwrap(), stack, REGION)
        .unwrap()
        .state
}

/// The stored index, read raw: export name → (producer stack, value).
async fn stored(client: &aws_sdk_s3::Client, bucket: &str) -> BTreeMap<String, (String, Value)> {
    let out = client
        .get_object()
        .bucket(bucket)
        .key(StateKeys::default().export_index(REGION))
        .send()
        .await
        .expect("the index exists");
    let bytes = out.body.collect().await.unwrap().into_bytes();
    let raw: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(raw["indexVersion"], 1);
    assert_eq!(raw["region"], REGION);
    assert!(raw["lastModified"].is_u64());
    ExportIndex::parse(&bytes)
        .expect("a valid index")
        .exports
        .into_iter()
        .map(|(name, e)| {
            assert_eq!(e.producer_region, REGION);
            (name, (e.producer_stack, e.value))
        })
        .collect()
}

fn names(index: &BTreeMap<String, (String, Value)>) -> Vec<&str> {
    index.keys().map(String::as_str).collect()
}

#[tokio::test]
async fn eight_concurrent_writers_all_land() {
    let (client, bucket) = bucket().await;
    let mut tasks = Vec::new();
    for i in 0..8 {
        // Each writer its own store: independent processes, no shared cache.
        // The production backoff: under 8-way contention the emulator takes
        // tens of milliseconds per request, so a shorter base delay would let
        // the losers collide again round after round.
        let store = ExportIndexStore::new(client.clone(), &bucket, StateKeys::default())
            .with_retry_base_delay(DEFAULT_RETRY_BASE_DELAY);
        tasks.push(tokio::spawn(async move {
            let stack = format!("Stack{i}");
            let outputs = json!({ format!("Exp{i}A"): format!("a-{i}"), format!("Exp{i}B"): i });
            store
                .update_stack(REGION, &stack, &state(&stack, outputs, None))
                .await
        }));
    }
    for task in tasks {
        let report = task.await.unwrap();
        assert!(report.is_written(), "{report:?}");
        assert!(report.warnings.is_empty(), "{report:?}");
    }
    let index = stored(&client, &bucket).await;
    assert_eq!(index.len(), 16);
    for i in 0..8 {
        let stack = format!("Stack{i}");
        assert_eq!(
            index[&format!("Exp{i}A")],
            (stack.clone(), json!(format!("a-{i}")))
        );
        assert_eq!(index[&format!("Exp{i}B")], (stack, json!(i)));
    }
}

#[tokio::test]
async fn update_replace_takeover_and_remove_touch_only_that_stack() {
    let (client, bucket) = bucket().await;
    let store = store(&client, &bucket);
    let a = state(
        "A",
        json!({"X": "x1", "Y": "y1", "Plain": "p"}),
        Some(json!(["X", "Y"])),
    );
    let report = store.update_stack(REGION, "A", &a).await;
    assert_eq!(report.status, IndexWriteStatus::Written { attempt: 1 });
    assert!(
        report.rebuilt,
        "a missing index is derived from the records first"
    );
    let b = state("B", json!({"Z": "z1"}), None);
    assert!(store.update_stack(REGION, "B", &b).await.is_written());
    assert_eq!(names(&stored(&client, &bucket).await), vec!["X", "Y", "Z"]);

    // Same exports again: nothing to write.
    let again = store.update_stack(REGION, "A", &a).await;
    assert_eq!(again.status, IndexWriteStatus::Unchanged);

    // A drops Y and changes X: only A's entries move.
    let a2 = state("A", json!({"X": "x2", "Y": "y1"}), Some(json!(["X"])));
    assert!(store.update_stack(REGION, "A", &a2).await.is_written());
    let index = stored(&client, &bucket).await;
    assert_eq!(names(&index), vec!["X", "Z"]);
    assert_eq!(index["X"], ("A".into(), json!("x2")));

    // B also exports X: the latest writer wins, and the warning names both.
    let b2 = state("B", json!({"Z": "z1", "X": "xb"}), None);
    let report = store.update_stack(REGION, "B", &b2).await;
    assert!(report.is_written());
    assert_eq!(report.warnings.len(), 1, "{report:?}");
    assert!(report.warnings[0].contains("'A'") && report.warnings[0].contains("'B'"));
    let hit = store.lookup(REGION, "X").await.expect("X is indexed");
    assert_eq!(
        (
            hit.producer_stack.as_str(),
            hit.producer_region.as_str(),
            &hit.value
        ),
        ("B", REGION, &json!("xb"))
    );

    // Re-point X back to A, then remove B: A's entries stay.
    assert!(store.update_stack(REGION, "A", &a2).await.is_written());
    let report = store.remove_stack(REGION, "B").await;
    assert!(report.is_written(), "{report:?}");
    assert_eq!(names(&stored(&client, &bucket).await), vec!["X"]);
    assert_eq!(
        store.remove_stack(REGION, "B").await.status,
        IndexWriteStatus::Unchanged
    );
    // A fresh store (another process) reads the same thing.
    let other = self::store(&client, &bucket);
    assert_eq!(other.lookup(REGION, "X").await.unwrap().producer_stack, "A");
    assert!(other.lookup(REGION, "Z").await.is_none());
}

#[tokio::test]
async fn rebuild_derives_from_records_and_names_the_unreadable_ones() {
    let (client, bucket) = bucket().await;
    // A v9 record exactly as the TypeScript cdkd wrote it: only BucketArn is an export.
    let fixture = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/state/v9.json"
    ))
    .unwrap();
    put(
        &client,
        &bucket,
        &StateKeys::default().state("Producer", REGION),
        fixture,
    )
    .await;
    // Pre-v9: every output key is importable.
    put_record(
        &client,
        &bucket,
        "OldStack",
        REGION,
        record_body("OldStack", json!({"VpcId": "vpc-1"}), None, 5),
    )
    .await;
    // Exports nothing.
    put_record(
        &client,
        &bucket,
        "Quiet",
        REGION,
        record_body("Quiet", json!({"QuietOut": "q"}), Some(json!([])), 5),
    )
    .await;
    // exportNames not a list: nothing, with a warning.
    put_record(
        &client,
        &bucket,
        "BadNames",
        REGION,
        record_body("BadNames", json!({"Shared": "s"}), Some(json!("Shared")), 5),
    )
    .await;
    // Unreadable records: not JSON, and an outputs bag that is a string.
    put(
        &client,
        &bucket,
        &StateKeys::default().state("Broken", REGION),
        "{\"version\": 9, \"outp",
    )
    .await;
    put_record(
        &client,
        &bucket,
        "Stringy",
        REGION,
        record_body("Stringy", json!("abcdef"), None, 5),
    )
    .await;
    // Two producers of Dup: the later lastModified wins.
    put_record(
        &client,
        &bucket,
        "Early",
        REGION,
        record_body("Early", json!({"Dup": "early"}), Some(json!(["Dup"])), 10),
    )
    .await;
    put_record(
        &client,
        &bucket,
        "Late",
        REGION,
        record_body("Late", json!({"Dup": "late"}), Some(json!(["Dup"])), 20),
    )
    .await;
    // Another region's record and a non-record object are not this index's.
    put_record(
        &client,
        &bucket,
        "Far",
        "eu-west-1",
        record_body("Far", json!({"FarOut": "f"}), None, 5),
    )
    .await;
    put(&client, &bucket, "cdkd/OldStack/us-east-1/lock.json", "{}").await;
    // A stale index to be replaced.
    put(
        &client,
        &bucket,
        &StateKeys::default().export_index(REGION),
        "{\"indexVersion\":1,\"exports\":{}}",
    )
    .await;

    let report = store(&client, &bucket).rebuild(REGION).await;
    assert!(report.is_written() && report.rebuilt, "{report:?}");
    let index = stored(&client, &bucket).await;
    assert_eq!(names(&index), vec!["BucketArn", "Dup", "VpcId"]);
    assert_eq!(
        index["BucketArn"],
        ("Producer".into(), json!("arn:aws:s3:::legacy-bucket-1"))
    );
    assert_eq!(index["Dup"], ("Late".into(), json!("late")));
    assert_eq!(index["VpcId"], ("OldStack".into(), json!("vpc-1")));

    let warned = |stack: &str| {
        report
            .warnings
            .iter()
            .filter(|w| w.contains(&format!("'{stack}'")))
            .count()
    };
    assert_eq!(warned("Broken"), 1, "{:#?}", report.warnings);
    assert_eq!(warned("Stringy"), 1, "{:#?}", report.warnings);
    assert_eq!(warned("BadNames"), 1, "{:#?}", report.warnings);
    assert!(report
        .warnings
        .iter()
        .any(|w| w.contains("'Early'") && w.contains("'Late'")));
    assert_eq!(warned("Quiet"), 0, "[] is an ordinary record");
    assert_eq!(report.warnings.len(), 4, "{:#?}", report.warnings);
    assert!(
        report.warnings.iter().all(|w| !w.contains("abcdef")),
        "values are never printed"
    );
}

#[tokio::test]
async fn lookup_rebuilds_a_missing_or_corrupt_index() {
    let (client, bucket) = bucket().await;
    put_record(
        &client,
        &bucket,
        "P",
        REGION,
        record_body("P", json!({"E": "v", "Plain": "p"}), Some(json!(["E"])), 1),
    )
    .await;
    let key = StateKeys::default().export_index(REGION);

    let hit = store(&client, &bucket)
        .lookup(REGION, "E")
        .await
        .expect("rebuilt on a miss");
    assert_eq!((hit.producer_stack.as_str(), hit.value), ("P", json!("v")));
    assert_eq!(names(&stored(&client, &bucket).await), vec!["E"]);
    assert!(store(&client, &bucket)
        .lookup(REGION, "Plain")
        .await
        .is_none());

    for corrupt in [
        "not json at all",
        "[1,2]",
        "{\"indexVersion\":1,\"exports\":\"abc\"}",
        "{\"indexVersion\":1,\"exports\":{\"E\":\"x\"}}",
    ] {
        put(&client, &bucket, &key, corrupt).await;
        let store = store(&client, &bucket);
        let hit = store
            .lookup(REGION, "E")
            .await
            .expect("rebuilt from a corrupt index");
        assert_eq!(hit.producer_stack, "P", "{corrupt}");
        assert_eq!(
            names(&stored(&client, &bucket).await),
            vec!["E"],
            "{corrupt}"
        );
    }

    // One GET per region for the store's lifetime: an out-of-band change is not
    // seen by a store that already read the index; the store's own writes are.
    let store = store(&client, &bucket);
    assert!(store.lookup(REGION, "E").await.is_some());
    put(
        &client,
        &bucket,
        &key,
        "{\"indexVersion\":1,\"exports\":{}}",
    )
    .await;
    assert!(store.lookup(REGION, "E").await.is_some());
    let q = state("Q", json!({"New": 1}), None);
    assert!(store.update_stack(REGION, "Q", &q).await.is_written());
    assert!(store.lookup(REGION, "New").await.is_some());
    assert!(
        store.lookup(REGION, "E").await.is_none(),
        "the cache follows the write"
    );
}

#[tokio::test]
async fn export_names_absent_empty_and_malformed() {
    let (client, bucket) = bucket().await;
    let store = store(&client, &bucket);
    let outputs = |p: &str| json!({ format!("{p}1"): 1, format!("{p}2"): 2 });
    let absent = store
        .update_stack(REGION, "Absent", &state("Absent", outputs("Ab"), None))
        .await;
    let empty = store
        .update_stack(
            REGION,
            "Empty",
            &state("Empty", outputs("Em"), Some(json!([]))),
        )
        .await;
    let bad = store
        .update_stack(
            REGION,
            "Bad",
            &state("Bad", outputs("Ba"), Some(json!({"Ba1": true}))),
        )
        .await;
    let mixed = store
        .update_stack(
            REGION,
            "Mixed",
            &state("Mixed", outputs("Mi"), Some(json!([0, "Mi2", null]))),
        )
        .await;
    assert!(absent.warnings.is_empty() && empty.warnings.is_empty() && mixed.warnings.is_empty());
    assert_eq!(bad.warnings.len(), 1, "{bad:?}");
    assert!(bad.warnings[0].contains("'Bad'") && bad.warnings[0].contains("an object"));
    assert_eq!(
        names(&stored(&client, &bucket).await),
        vec!["Ab1", "Ab2", "Mi2"]
    );
}

#[tokio::test]
async fn a_failing_bucket_warns_and_never_fails() {
    let client = s3_client().await;
    let store = store(&client, &unique_name("cdkd-missing"));
    let report = store
        .update_stack(REGION, "S", &state("S", json!({"E": 1}), None))
        .await;
    assert_eq!(report.status, IndexWriteStatus::Failed);
    assert_eq!(report.warnings.len(), 1, "{report:?}");
    assert!(store.lookup(REGION, "E").await.is_none());
}
