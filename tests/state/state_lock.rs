//! The stack lock against the emulator: mutual exclusion under 8 concurrent acquirers, the
//! body it writes, takeover of expired (and non-numeric-expiry) locks, retries, renewal
//! moving expiresAt forward, a holder that lost its lock leaving the new owner's alone,
//! force-unlock and the release tombstone. Injected faults and the noncurrent-version purge
//! are in `state_lock_faults.rs`.

use crate::lock::{common, relay};
use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cdkd::state::lock::{now_ms, LockConfig, LockError, LockManager, ReleaseOutcome};
use cdkd::state::{LockInfo, StateKeys, DEFAULT_LOCK_TTL};
use common::{fast, get, lock_key, manager, new_bucket, put, version_counts, REGION};
use relay::{relay_client, Relay};
use support::s3_client;
use tokio::sync::Barrier;

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn eight_concurrent_acquirers_one_winner_per_round() {
    let (_, bucket) = new_bucket(true).await;
    let stack = "Contended";
    // One relay for all eight, so their writes reach moto one at a time, as S3 orders them.
    let (_relay, endpoint) = Relay::start();
    let mut managers = Vec::new();
    for _ in 0..8 {
        managers.push(
            LockManager::new(relay_client(&endpoint).await, &bucket, StateKeys::default())
                .with_config(fast()),
        );
    }
    for round in 0..12 {
        let barrier = Arc::new(Barrier::new(8));
        let mut tasks = Vec::new();
        for (i, mgr) in managers.iter().enumerate() {
            let (mgr, barrier) = (mgr.clone(), barrier.clone());
            tasks.push(tokio::spawn(async move {
                let owner = format!("worker{i}@test:{round}");
                barrier.wait().await;
                let started = Instant::now();
                let result = mgr
                    .acquire(stack, REGION, &owner, Some("deploy"), DEFAULT_LOCK_TTL)
                    .await;
                (owner, result, started.elapsed())
            }));
        }
        let mut winners = Vec::new();
        let mut losers = Vec::new();
        for task in tasks {
            let (owner, result, elapsed) = task.await.expect("task");
            match result {
                Ok(held) => winners.push((owner, held)),
                Err(e) => losers.push((e, elapsed)),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: exactly one winner");
        let (winner, held) = winners.pop().unwrap();
        assert_eq!(held.info().owner, winner);
        for (err, elapsed) in &losers {
            assert!(
                elapsed < &Duration::from_secs(2),
                "round {round}: {elapsed:?}"
            );
            match err {
                LockError::Held {
                    holder: Some(holder),
                    ..
                } => assert_eq!(holder.owner, winner, "round {round}"),
                other => panic!("round {round}: expected a held error, got {other}"),
            }
            assert!(err.to_string().contains(&winner));
            assert!(err.to_string().contains("cdkd force-unlock Contended"));
        }
        assert_eq!(held.release().await.unwrap(), ReleaseOutcome::Released);
    }
    let client = s3_client().await;
    assert!(get(&client, &bucket, &lock_key(stack)).await.is_none());
}

#[tokio::test]
async fn the_lock_body_is_what_json_stringify_writes() {
    let (client, bucket) = new_bucket(false).await;
    let mgr = manager(&bucket).await;
    let ttl = Duration::from_secs(90);
    let held = mgr
        .acquire("Body", REGION, "alice@host:7", Some("destroy"), ttl)
        .await
        .unwrap();
    let (bytes, etag) = get(&client, &bucket, &lock_key("Body")).await.unwrap();
    assert_eq!(etag, held.etag());
    let info = held.info();
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        format!(
            r#"{{"owner":"alice@host:7","timestamp":{},"expiresAt":{},"operation":"destroy"}}"#,
            info.timestamp,
            info.timestamp + 90_000
        )
    );
    assert!(info.timestamp.abs_diff(now_ms()) < 60_000);
    let snapshot = mgr.read("Body", REGION).await.unwrap().unwrap();
    assert_eq!(snapshot.info, info);
    held.release().await.unwrap();
    assert!(mgr.read("Body", REGION).await.unwrap().is_none());
}

#[tokio::test]
async fn expired_and_unreadable_expiry_locks_are_taken_over() {
    let (client, bucket) = new_bucket(true).await;
    let mgr = manager(&bucket).await;
    let bodies: [&[u8]; 4] = [
        br#"{"owner":"ghost@old:1","timestamp":1,"expiresAt":2,"operation":"deploy"}"#,
        br#"{"owner":"ghost@old:2","timestamp":1,"expiresAt":"Infinity"}"#,
        br#"{"owner":"ghost@old:3","timestamp":1,"expiresAt":null}"#,
        br#"{"owner":"ghost@old:4","timestamp":1}"#,
    ];
    for (i, body) in bodies.iter().enumerate() {
        let stack = format!("Expired{i}");
        let key = lock_key(&stack);
        put(&client, &bucket, &key, body).await;
        let held = mgr
            .acquire(
                &stack,
                REGION,
                "new@host:1",
                Some("deploy"),
                DEFAULT_LOCK_TTL,
            )
            .await
            .unwrap_or_else(|e| panic!("body {i}: {e}"));
        let (stored, _) = get(&client, &bucket, &key).await.unwrap();
        assert_eq!(LockInfo::parse(&stored).unwrap().owner, "new@host:1");
        // The reaped body was purged; the reap's delete marker went noncurrent
        // under the new lock and goes with the next release's purge.
        assert_eq!(version_counts(&client, &bucket, &key).await, (0, 1, 1));
        held.release().await.unwrap();
        assert_eq!(version_counts(&client, &bucket, &key).await, (0, 0, 1));
    }

    // A live lock is not taken, with or without retries; the error names it.
    let key = lock_key("Live");
    let live = format!(
        r#"{{"owner":"bob@box:9","timestamp":1,"expiresAt":{},"operation":"deploy"}}"#,
        now_ms() + 600_000
    );
    put(&client, &bucket, &key, live.as_bytes()).await;
    let started = Instant::now();
    let err = mgr
        .acquire_with_retry("Live", REGION, "new@host:1", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(150));
    let text = err.to_string();
    assert!(
        text.starts_with("Stack Live (us-east-1) is locked by bob@box:9 (deploy) until "),
        "{text}"
    );
    assert_eq!(
        get(&client, &bucket, &key).await.unwrap().0,
        live.as_bytes()
    );

    // A body that is not an object reads as no lock, is never reaped, and only
    // force-unlock clears it.
    let key = lock_key("Garbage");
    put(&client, &bucket, &key, b"[1,2]").await;
    let err = mgr
        .acquire_with_retry("Garbage", REGION, "new@host:1", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::Held { holder: None, .. }), "{err}");
    assert!(err.to_string().contains("no lock could be read"));
    assert!(mgr.read("Garbage", REGION).await.unwrap().is_none());
    assert!(mgr.force_unlock("Garbage", REGION).await.unwrap());
    assert_eq!(version_counts(&client, &bucket, &key).await, (0, 0, 1));
    mgr.acquire("Garbage", REGION, "new@host:1", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

#[tokio::test]
async fn acquire_with_retry_waits_for_a_release() {
    let (_, bucket) = new_bucket(false).await;
    let first = manager(&bucket).await;
    let second = LockManager::new(s3_client().await, &bucket, StateKeys::default()).with_config(
        LockConfig {
            retry_delay: Duration::from_millis(300),
            ..fast()
        },
    );
    let held = first
        .acquire("Wait", REGION, "first@h:1", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap();
    let releaser = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        held.release().await.unwrap()
    });
    let taken = second
        .acquire_with_retry("Wait", REGION, "second@h:2", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap();
    assert_eq!(releaser.await.unwrap(), ReleaseOutcome::Released);
    assert_eq!(taken.info().owner, "second@h:2");
    taken.release().await.unwrap();
}

#[tokio::test]
async fn renewal_moves_expires_at_forward_past_the_ttl() {
    let (client, bucket) = new_bucket(true).await;
    let mgr = LockManager::new(s3_client().await, &bucket, StateKeys::default()).with_config(
        LockConfig {
            renew_interval: Some(Duration::from_millis(300)),
            ..fast()
        },
    );
    let key = lock_key("Renewed");
    let ttl = Duration::from_secs(2);
    let held = mgr
        .acquire("Renewed", REGION, "worker@h:1", Some("deploy"), ttl)
        .await
        .unwrap();
    let first = LockInfo::parse(&get(&client, &bucket, &key).await.unwrap().0).unwrap();
    let mut last = first.clone();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(800)).await;
        let (bytes, etag) = get(&client, &bucket, &key).await.unwrap();
        let now = LockInfo::parse(&bytes).unwrap();
        assert!(now.expires_at > last.expires_at, "{now:?} after {last:?}");
        assert_eq!(now.timestamp, first.timestamp);
        assert_eq!(now.owner, "worker@h:1");
        assert_eq!(now.operation.as_deref(), Some("deploy"));
        // The holder tracks the ETag it last wrote.
        assert!(etag == held.etag() || held.info().expires_at > now.expires_at);
        last = now;
    }
    // 2.4 s after acquisition a 2 s lock is still live, and nobody else gets it.
    assert!(!last.is_expired(now_ms()));
    assert!(!held.is_lost());
    let other = manager(&bucket).await;
    assert!(matches!(
        other
            .acquire("Renewed", REGION, "other@h:2", None, ttl)
            .await,
        Err(LockError::Held { .. })
    ));
    assert_eq!(held.release().await.unwrap(), ReleaseOutcome::Released);
    // Every renewal's version and the release's marker history are gone.
    assert_eq!(version_counts(&client, &bucket, &key).await, (0, 0, 1));
    // Renewal stopped with the release: nothing re-creates the lock.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(get(&client, &bucket, &key).await.is_none());
}

#[tokio::test]
async fn a_holder_that_lost_its_lock_leaves_the_new_owners_alone() {
    let (client, bucket) = new_bucket(true).await;
    let stale = LockManager::new(s3_client().await, &bucket, StateKeys::default()).with_config(
        LockConfig {
            renew_interval: Some(Duration::from_millis(150)),
            ..fast()
        },
    );
    let admin = manager(&bucket).await;
    let newcomer = manager(&bucket).await;

    // Lost while renewing: the renewal notices, and never writes over the new owner.
    let key = lock_key("TakenOver");
    let old = stale
        .acquire(
            "TakenOver",
            REGION,
            "old@h:1",
            Some("deploy"),
            DEFAULT_LOCK_TTL,
        )
        .await
        .unwrap();
    assert!(admin.force_unlock("TakenOver", REGION).await.unwrap());
    let new = newcomer
        .acquire(
            "TakenOver",
            REGION,
            "new@h:2",
            Some("deploy"),
            DEFAULT_LOCK_TTL,
        )
        .await
        .unwrap();
    let before = get(&client, &bucket, &key).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(old.is_lost());
    assert_eq!(get(&client, &bucket, &key).await.unwrap(), before);
    match old.release().await.unwrap() {
        ReleaseOutcome::NotOurs { holder: Some(h) } => assert_eq!(h.owner, "new@h:2"),
        other => panic!("expected NotOurs, got {other:?}"),
    }
    assert_eq!(get(&client, &bucket, &key).await.unwrap(), before);
    assert_eq!(new.release().await.unwrap(), ReleaseOutcome::Released);

    // Lost between renewals: the release alone must not delete the new lock.
    let key = lock_key("Quiet");
    let old = admin
        .acquire("Quiet", REGION, "old@h:1", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap();
    assert!(newcomer.force_unlock("Quiet", REGION).await.unwrap());
    let new = newcomer
        .acquire("Quiet", REGION, "new@h:2", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap();
    let before = get(&client, &bucket, &key).await.unwrap();
    assert!(matches!(
        old.release().await.unwrap(),
        ReleaseOutcome::NotOurs { .. }
    ));
    assert_eq!(get(&client, &bucket, &key).await.unwrap(), before);
    assert_eq!(new.etag(), before.1);
    new.release().await.unwrap();
}

#[tokio::test]
async fn force_unlock_and_the_release_tombstone() {
    let (client, bucket) = new_bucket(true).await;
    let mgr = manager(&bucket).await;
    let key = lock_key("Tomb");

    assert!(!mgr.force_unlock("Tomb", REGION).await.unwrap());
    assert_eq!(
        mgr.release("Tomb", REGION).await.unwrap(),
        ReleaseOutcome::NotHeld
    );

    // Double release, by handle and by stack: the second is a no-op.
    let held = mgr
        .acquire("Tomb", REGION, "me@h:1", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap();
    assert_eq!(held.release().await.unwrap(), ReleaseOutcome::Released);
    assert_eq!(
        held.release().await.unwrap(),
        ReleaseOutcome::AlreadyReleased
    );
    assert_eq!(
        mgr.release("Tomb", REGION).await.unwrap(),
        ReleaseOutcome::AlreadyReleased
    );

    // A second release racing the first does nothing, and does not touch a
    // lock taken in between.
    let held = mgr
        .acquire("Tomb", REGION, "me@h:1", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap();
    let (a, b) = tokio::join!(held.release(), mgr.release("Tomb", REGION));
    let mut outcomes = vec![a.unwrap(), b.unwrap()];
    outcomes.sort_by_key(|o| format!("{o:?}"));
    assert_eq!(
        outcomes,
        vec![ReleaseOutcome::AlreadyReleased, ReleaseOutcome::Released]
    );
    let other = manager(&bucket).await;
    let theirs = other
        .acquire("Tomb", REGION, "them@h:2", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap();
    assert_eq!(
        held.release().await.unwrap(),
        ReleaseOutcome::AlreadyReleased
    );
    assert_eq!(
        mgr.release("Tomb", REGION).await.unwrap(),
        ReleaseOutcome::AlreadyReleased
    );
    assert_eq!(get(&client, &bucket, &key).await.unwrap().1, theirs.etag());

    // force-unlock removes any lock, someone else's included.
    assert!(mgr.force_unlock("Tomb", REGION).await.unwrap());
    assert!(get(&client, &bucket, &key).await.is_none());
    assert_eq!(version_counts(&client, &bucket, &key).await, (0, 0, 1));
    assert_eq!(theirs.release().await.unwrap(), ReleaseOutcome::Gone);
    assert!(!mgr.force_unlock("Tomb", REGION).await.unwrap());
}
