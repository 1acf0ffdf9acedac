//! The stack lock and the noncurrent-version purge against the emulator: mutual exclusion
//! under 8 concurrent acquirers, takeover of expired (and non-numeric-expiry) locks, renewal
//! moving expiresAt forward, a holder that lost its lock leaving the new owner's alone,
//! force-unlock, the release tombstone, and purges that leave no noncurrent versions or
//! delete markers behind while never touching the current version or a neighbouring key.

mod support;

use std::net::{Shutdown, TcpListener, TcpStream};
use std::ops::Not;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BucketVersioningStatus, Destination, ReplicationConfiguration, ReplicationRule,
    ReplicationRuleFilter, ReplicationRuleStatus, VersioningConfiguration,
};
use aws_sdk_s3::Client;
use cdkd::state::lock::{now_ms, LockConfig, LockError, LockManager, ReleaseOutcome};
use cdkd::state::purge::{
    check_replication, purge_noncurrent_versions, render_purge_warning, PurgeOutcome,
    ReplicationCheck, ReplicationDestination, ReplicationProbe, LOCK_OBJECT_DESCRIPTION,
};
use cdkd::state::{LockInfo, StateKeys, DEFAULT_LOCK_TTL};
use support::{s3_client, unique_name};
use tokio::sync::Barrier;

const REGION: &str = "us-east-1";

async fn new_bucket(versioned: bool) -> (Client, String) {
    let client = s3_client().await;
    let bucket = unique_name("cdkd-lock");
    client
        .create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("create bucket");
    if versioned {
        client
            .put_bucket_versioning()
            .bucket(&bucket)
            .versioning_configuration(
                VersioningConfiguration::builder()
                    .status(BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await
            .expect("versioning");
    }
    (client, bucket)
}

/// Short retries and renewals, so nothing in this file waits for seconds.
fn fast() -> LockConfig {
    LockConfig {
        max_retries: 3,
        retry_delay: Duration::from_millis(50),
        renew_interval: None,
    }
}

async fn manager(bucket: &str) -> LockManager {
    LockManager::new(s3_client().await, bucket, StateKeys::default()).with_config(fast())
}

fn lock_key(stack: &str) -> String {
    StateKeys::default().lock(stack, REGION)
}

/// A relay between the SDK and moto, one per test, that also injects the faults the lock must
/// survive.
///
/// moto evaluates If-None-Match / If-Match and then writes without holding a lock in between
/// (werkzeug serves each request on its own thread), so two concurrent conditional PUTs can
/// both succeed there, which S3 never allows. The relay passes writes one at a time (reads stay
/// concurrent), restoring the atomicity the lock relies on. moto answers `Connection: close`,
/// so one connection carries one request.
#[derive(Default)]
struct Relay {
    writes: Mutex<()>,
    /// Apply the next PUT, then drop the connection without its answer.
    lose_next_put_answer: AtomicBool,
    /// Answer every DELETE carrying If-Match with this status (0: pass it on).
    refuse_conditional_deletes: AtomicU16,
    /// Answer every GET with 403.
    deny_reads: AtomicBool,
    /// Answer ListObjectVersions with 403.
    deny_version_listing: AtomicBool,
    /// Answer DeleteObjects itself, refusing every key: the first with NoSuchVersion, the
    /// rest with AccessDenied (what a missing s3:DeleteObjectVersion looks like).
    refuse_version_deletes: AtomicBool,
}

impl Relay {
    fn start() -> (Arc<Relay>, String) {
        let upstream = support::emulator_env()
            .into_iter()
            .find(|(k, _)| k == "AWS_ENDPOINT_URL")
            .map(|(_, v)| v)
            .expect("AWS_ENDPOINT_URL");
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let relay = Arc::new(Relay::default());
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay");
        let endpoint = format!("http://{}", listener.local_addr().expect("relay address"));
        let serving = relay.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (relay, upstream) = (serving.clone(), upstream.clone());
                std::thread::spawn(move || relay.serve(client, &upstream));
            }
        });
        (relay, endpoint)
    }

    /// An S3 client that goes through a new relay.
    async fn client() -> (Arc<Relay>, Client) {
        let (relay, endpoint) = Relay::start();
        (relay, relay_client(&endpoint).await)
    }

    fn serve(&self, mut client: TcpStream, upstream: &str) -> std::io::Result<()> {
        client.set_nodelay(true)?;
        let head = peek_head(&client)?;
        let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
        let method = text.split(' ').next().unwrap_or("").to_owned();
        let request_line = text.lines().next().unwrap_or("").to_owned();
        if method == "post"
            && request_line.contains("?delete")
            && self.refuse_version_deletes.load(Ordering::SeqCst)
        {
            return refuse_every_delete(client, &head, &text);
        }
        let refuse = match method.as_str() {
            "get"
                if request_line.contains("versions")
                    && self.deny_version_listing.load(Ordering::SeqCst) =>
            {
                403
            }
            "get" if self.deny_reads.load(Ordering::SeqCst) => 403,
            "delete" if text.contains("\r\nif-match:") => {
                self.refuse_conditional_deletes.load(Ordering::SeqCst)
            }
            _ => 0,
        };
        if refuse != 0 {
            std::io::Read::read_exact(&mut client, &mut vec![0; head.len()])?;
            let (code, reason) = match refuse {
                403 => ("AccessDenied", "Forbidden"),
                _ => ("NotImplemented", "Not Implemented"),
            };
            let body = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>injected by the test relay</Message></Error>");
            let answer = format!("HTTP/1.1 {refuse} {reason}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
            std::io::Write::write_all(&mut client, answer.as_bytes())?;
            return client.shutdown(Shutdown::Both);
        }
        let lose_answer =
            method == "put" && self.lose_next_put_answer.swap(false, Ordering::SeqCst);
        let _one_at_a_time = matches!(method.as_str(), "get" | "head")
            .not()
            .then(|| self.writes.lock().unwrap_or_else(|p| p.into_inner()));
        let mut server = TcpStream::connect(upstream)?;
        server.set_nodelay(true)?;
        let (mut request_in, mut request_out) = (client.try_clone()?, server.try_clone()?);
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut request_in, &mut request_out);
            let _ = request_out.shutdown(Shutdown::Write);
        });
        // The answer, until moto closes the connection.
        if lose_answer {
            std::io::copy(&mut server, &mut std::io::sink())?;
            return client.shutdown(Shutdown::Both);
        }
        std::io::copy(&mut server, &mut client)?;
        client.shutdown(Shutdown::Write)
    }
}

async fn relay_client(endpoint: &str) -> Client {
    let config = aws_sdk_s3::config::Builder::from(&support::sdk_config().await)
        .force_path_style(true)
        .endpoint_url(endpoint)
        .build();
    Client::from_conf(config)
}

/// Answers a DeleteObjects request with a per-key error for every version it names.
fn refuse_every_delete(mut client: TcpStream, head: &[u8], text: &str) -> std::io::Result<()> {
    let length: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    std::io::Read::read_exact(&mut client, &mut vec![0; head.len()])?;
    let mut body = vec![0; length];
    std::io::Read::read_exact(&mut client, &mut body)?;
    let body = String::from_utf8_lossy(&body);
    let mut errors = String::new();
    for (i, part) in body.split("<Object>").skip(1).enumerate() {
        let field = |name: &str| {
            part.split(&format!("<{name}>"))
                .nth(1)
                .and_then(|rest| rest.split(&format!("</{name}>")).next())
                .unwrap_or("")
                .to_owned()
        };
        let code = if i == 0 {
            "NoSuchVersion"
        } else {
            "AccessDenied"
        };
        errors.push_str(&format!(
            "<Error><Key>{}</Key><VersionId>{}</VersionId><Code>{code}</Code><Message>injected</Message></Error>",
            field("Key"),
            field("VersionId")
        ));
    }
    let answer = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{errors}</DeleteResult>"
    );
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
    std::io::Write::write_all(&mut client, response.as_bytes())?;
    client.shutdown(Shutdown::Both)
}

/// The request line and headers, without consuming them.
fn peek_head(client: &TcpStream) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 16 * 1024];
    let mut seen = 0;
    for _ in 0..200 {
        seen = client.peek(&mut buf)?;
        if seen == 0 {
            break;
        }
        if let Some(end) = buf[..seen].windows(4).position(|w| w == b"\r\n\r\n") {
            return Ok(buf[..end + 4].to_vec());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(buf[..seen].to_vec())
}

async fn put(client: &Client, bucket: &str, key: &str, body: &[u8]) -> String {
    client
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(body.to_vec()))
        .send()
        .await
        .expect("put")
        .e_tag()
        .expect("etag")
        .to_owned()
}

async fn get(client: &Client, bucket: &str, key: &str) -> Option<(Vec<u8>, String)> {
    let out = client
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .ok()?;
    let etag = out.e_tag().unwrap_or_default().to_owned();
    let body = out
        .body
        .collect()
        .await
        .expect("body")
        .into_bytes()
        .to_vec();
    Some((body, etag))
}

/// (noncurrent bodies, noncurrent delete markers, current entries) of exactly `key`.
async fn version_counts(client: &Client, bucket: &str, key: &str) -> (usize, usize, usize) {
    let out = client
        .list_object_versions()
        .bucket(bucket)
        .prefix(key)
        .send()
        .await
        .expect("list versions");
    let versions: Vec<_> = out
        .versions()
        .iter()
        .filter(|v| v.key() == Some(key))
        .collect();
    let markers: Vec<_> = out
        .delete_markers()
        .iter()
        .filter(|m| m.key() == Some(key))
        .collect();
    let current = versions
        .iter()
        .filter(|v| v.is_latest() == Some(true))
        .count()
        + markers
            .iter()
            .filter(|m| m.is_latest() == Some(true))
            .count();
    (
        versions
            .iter()
            .filter(|v| v.is_latest() == Some(false))
            .count(),
        markers
            .iter()
            .filter(|m| m.is_latest() == Some(false))
            .count(),
        current,
    )
}

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
async fn a_renewal_whose_answer_was_lost_is_adopted_not_declared_lost() {
    let (client, bucket) = new_bucket(true).await;
    let (relay, relayed) = Relay::client().await;
    let mgr = LockManager::new(relayed, &bucket, StateKeys::default()).with_config(LockConfig {
        renew_interval: Some(Duration::from_millis(200)),
        ..fast()
    });
    let key = lock_key("LostAnswer");
    let held = mgr
        .acquire("LostAnswer", REGION, "me@h:1", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap();
    let first_etag = held.etag();
    // S3 applies the next renewal but its answer never arrives: the retry (or
    // the next tick) conflicts with this process's own write.
    relay.lose_next_put_answer.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        !relay.lose_next_put_answer.load(Ordering::SeqCst),
        "a renewal ran"
    );
    assert!(!held.is_lost());
    let (bytes, etag) = get(&client, &bucket, &key).await.unwrap();
    assert_ne!(etag, first_etag);
    assert_eq!(LockInfo::parse(&bytes).unwrap().owner, "me@h:1");
    assert_eq!(held.release().await.unwrap(), ReleaseOutcome::Released);
    assert!(get(&client, &bucket, &key).await.is_none());
}

#[tokio::test]
async fn an_unevaluated_condition_falls_back_only_for_a_lock_still_ours() {
    let (client, bucket) = new_bucket(true).await;
    let (relay, relayed) = Relay::client().await;
    let mgr = LockManager::new(relayed, &bucket, StateKeys::default()).with_config(fast());
    let direct = manager(&bucket).await;
    let key = lock_key("Fallback");
    let acquire = |owner: &'static str| {
        let mgr = mgr.clone();
        async move {
            mgr.acquire("Fallback", REGION, owner, None, DEFAULT_LOCK_TTL)
                .await
                .unwrap()
        }
    };

    // 501: an endpoint without If-Match on DELETE. Still ours, so deleted without it.
    relay
        .refuse_conditional_deletes
        .store(501, Ordering::SeqCst);
    let held = acquire("old@h:1").await;
    assert_eq!(held.release().await.unwrap(), ReleaseOutcome::Released);
    assert!(get(&client, &bucket, &key).await.is_none());
    assert_eq!(version_counts(&client, &bucket, &key).await, (0, 0, 1));

    // 403 (a policy turning a genuine 412 into a 403) after a takeover: left alone.
    relay
        .refuse_conditional_deletes
        .store(403, Ordering::SeqCst);
    let held = acquire("old@h:1").await;
    assert!(direct.force_unlock("Fallback", REGION).await.unwrap());
    let theirs = direct
        .acquire("Fallback", REGION, "new@h:2", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap();
    let before = get(&client, &bucket, &key).await.unwrap();
    match held.release().await.unwrap() {
        ReleaseOutcome::NotOurs { holder: Some(h) } => assert_eq!(h.owner, "new@h:2"),
        other => panic!("expected NotOurs, got {other:?}"),
    }
    assert_eq!(get(&client, &bucket, &key).await.unwrap(), before);
    theirs.release().await.unwrap();

    // 403, and the re-read is denied too: the release refuses and deletes nothing.
    let held = acquire("old@h:1").await;
    relay.deny_reads.store(true, Ordering::SeqCst);
    let err = held.release().await.unwrap_err();
    relay.deny_reads.store(false, Ordering::SeqCst);
    assert!(matches!(err, LockError::ReleaseUnverified { .. }), "{err}");
    assert!(err.to_string().contains("`cdkd force-unlock Fallback`"));
    let (bytes, _) = get(&client, &bucket, &key).await.unwrap();
    assert_eq!(LockInfo::parse(&bytes).unwrap().owner, "old@h:1");
    assert_eq!(
        held.release().await.unwrap(),
        ReleaseOutcome::AlreadyReleased
    );
    assert!(direct.force_unlock("Fallback", REGION).await.unwrap());

    // The expired-lock reap has no fallback: it reports, and the lock stays.
    let expired = br#"{"owner":"ghost@old:1","timestamp":1,"expiresAt":2}"#;
    put(&client, &bucket, &key, expired).await;
    let err = mgr
        .acquire("Fallback", REGION, "new@h:3", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::Reap { .. }), "{err}");
    assert!(err.to_string().contains("ghost@old:1"), "{err}");
    assert!(err.to_string().contains("`cdkd force-unlock Fallback`"));
    assert_eq!(get(&client, &bucket, &key).await.unwrap().0, expired);
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

#[tokio::test]
async fn lock_cycles_leave_no_noncurrent_versions() {
    let (client, bucket) = new_bucket(true).await;
    let mgr = LockManager::new(s3_client().await, &bucket, StateKeys::default()).with_config(
        LockConfig {
            renew_interval: Some(Duration::from_millis(60)),
            ..fast()
        },
    );
    let key = lock_key("Cycles");
    for _ in 0..4 {
        let held = mgr
            .acquire("Cycles", REGION, "me@h:1", Some("deploy"), DEFAULT_LOCK_TTL)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await; // a few renewals
        assert_eq!(held.release().await.unwrap(), ReleaseOutcome::Released);
        assert_eq!(version_counts(&client, &bucket, &key).await, (0, 0, 1));
    }
    // state.json next to it keeps its history.
    let state = StateKeys::default().state("Cycles", REGION);
    put(&client, &bucket, &state, b"{}").await;
    put(&client, &bucket, &state, b"{ }").await;
    mgr.acquire("Cycles", REGION, "me@h:1", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    assert_eq!(version_counts(&client, &bucket, &state).await, (1, 0, 1));
}

#[tokio::test]
async fn the_purge_spares_the_current_version_and_neighbouring_keys() {
    let (client, bucket) = new_bucket(true).await;
    let key = "cdkd/S/us-east-1/rollback-journal.json";
    let neighbour = "cdkd/S/us-east-1/rollback-journal.json.bak";
    for body in [&b"1"[..], b"2", b"3"] {
        put(&client, &bucket, key, body).await;
        put(&client, &bucket, neighbour, body).await;
    }
    let outcome = purge_noncurrent_versions(&client, &bucket, key).await;
    assert!(outcome.is_clean(), "{outcome:?}");
    assert_eq!((outcome.versions_deleted, outcome.markers_deleted), (2, 0));
    assert!(outcome.needs_replication_check());
    assert_eq!(get(&client, &bucket, key).await.unwrap().0, b"3");
    assert_eq!(version_counts(&client, &bucket, key).await, (0, 0, 1));
    assert_eq!(version_counts(&client, &bucket, neighbour).await, (2, 0, 1));

    // Delete (a marker), write again: the marker goes noncurrent and is purged
    // with the body it hid; the live object stays.
    client
        .delete_object()
        .bucket(&bucket)
        .key(key)
        .send()
        .await
        .unwrap();
    put(&client, &bucket, key, b"4").await;
    let outcome = purge_noncurrent_versions(&client, &bucket, key).await;
    assert_eq!((outcome.versions_deleted, outcome.markers_deleted), (1, 1));
    assert_eq!(get(&client, &bucket, key).await.unwrap().0, b"4");

    // The current delete marker is never removed (that would resurrect a body).
    client
        .delete_object()
        .bucket(&bucket)
        .key(key)
        .send()
        .await
        .unwrap();
    let outcome = purge_noncurrent_versions(&client, &bucket, key).await;
    assert_eq!((outcome.versions_deleted, outcome.markers_deleted), (1, 0));
    assert_eq!(version_counts(&client, &bucket, key).await, (0, 0, 1));
    assert!(get(&client, &bucket, key).await.is_none());

    // Nothing to purge, and an unversioned bucket: clean, no replica check due.
    let outcome = purge_noncurrent_versions(&client, &bucket, key).await;
    assert!(outcome.is_clean() && !outcome.needs_replication_check());
    let (plain, plain_bucket) = new_bucket(false).await;
    put(&plain, &plain_bucket, key, b"x").await;
    let outcome = purge_noncurrent_versions(&plain, &plain_bucket, key).await;
    assert!(outcome.is_clean(), "{outcome:?}");
    assert_eq!(get(&plain, &plain_bucket, key).await.unwrap().0, b"x");

    // A missing bucket: the purge reports, never throws.
    let outcome = purge_noncurrent_versions(&client, &unique_name("no-such"), key).await;
    let failure = outcome.failure.clone().expect("a failure");
    assert!(failure.listing_incomplete);
    assert!(outcome.needs_replication_check());
    assert!(outcome
        .failure_description()
        .unwrap()
        .ends_with("s3:ListBucketVersions)"));
}

#[tokio::test]
async fn purge_failures_are_reported_per_key_never_thrown() {
    let (client, bucket) = new_bucket(true).await;
    let (relay, relayed) = Relay::client().await;
    let key = "cdkd/S/us-east-1/lock.json";
    for body in [&b"1"[..], b"2", b"3", b"4"] {
        put(&client, &bucket, key, body).await;
    }

    // Missing s3:DeleteObjectVersion: DeleteObjects succeeds overall and refuses per key.
    relay.refuse_version_deletes.store(true, Ordering::SeqCst);
    let outcome = purge_noncurrent_versions(&relayed, &bucket, key).await;
    let failure = outcome
        .failure
        .clone()
        .expect("per-key refusals are failures");
    assert_eq!(failure.code, "AccessDenied");
    assert_eq!(failure.action, "s3:DeleteObjectVersion");
    assert_eq!(failure.versions_left, 2);
    assert!(!failure.listing_incomplete);
    // The NoSuchVersion one counts as removed.
    assert_eq!(outcome.versions_deleted, 1);
    let text = render_purge_warning(&bucket, LOCK_OBJECT_DESCRIPTION, &[outcome]).unwrap();
    assert!(
        text.ends_with(&format!(
            "Failures: {key} (AccessDenied: s3:DeleteObjectVersion)"
        )),
        "{text}"
    );
    assert_eq!(version_counts(&client, &bucket, key).await, (3, 0, 1));

    // Missing s3:ListBucketVersions: nothing is deleted, the outcome says so.
    relay.refuse_version_deletes.store(false, Ordering::SeqCst);
    relay.deny_version_listing.store(true, Ordering::SeqCst);
    let outcome = purge_noncurrent_versions(&relayed, &bucket, key).await;
    assert_eq!(
        outcome.failure_description().unwrap(),
        format!("{key} (AccessDenied: s3:ListBucketVersions)")
    );
    assert!(outcome.needs_replication_check());
    assert_eq!(version_counts(&client, &bucket, key).await, (3, 0, 1));

    // A release whose purge fails still releases (the failure goes to debug).
    let mgr = LockManager::new(relayed, &bucket, StateKeys::default()).with_config(fast());
    let held = mgr
        .acquire("Denied", REGION, "me@h:1", None, DEFAULT_LOCK_TTL)
        .await
        .unwrap();
    assert_eq!(held.release().await.unwrap(), ReleaseOutcome::Released);
    assert!(get(&client, &bucket, &lock_key("Denied")).await.is_none());
}

#[tokio::test]
async fn replication_rules_covering_the_purged_keys_are_found() {
    let (client, bucket) = new_bucket(true).await;
    let key = "cdkd/S/us-east-1/lock.json";
    assert_eq!(
        check_replication(&client, &bucket, &[key]).await,
        ReplicationCheck::NotCovered
    );
    let (_, replica) = new_bucket(true).await;
    let rule = |id: &str, prefix: &str, status| {
        ReplicationRule::builder()
            .id(id)
            .priority(1)
            .status(status)
            .filter(ReplicationRuleFilter::builder().prefix(prefix).build())
            .destination(
                Destination::builder()
                    .bucket(format!("arn:aws:s3:::{replica}"))
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap()
    };
    let configure = |rule: ReplicationRule| {
        let (client, bucket) = (client.clone(), bucket.clone());
        async move {
            client
                .put_bucket_replication()
                .bucket(&bucket)
                .replication_configuration(
                    ReplicationConfiguration::builder()
                        .role("arn:aws:iam::123456789012:role/replication")
                        .rules(rule)
                        .build()
                        .unwrap(),
                )
                .send()
                .await
                .expect("put replication");
        }
    };
    // moto keeps no rule filter (every rule reads back as Prefix ""), so prefix
    // and tag coverage are unit-tested; here: the call, the destination, the flag.
    configure(rule("cdkd", "cdkd/", ReplicationRuleStatus::Disabled)).await;
    assert_eq!(
        check_replication(&client, &bucket, &[key]).await,
        ReplicationCheck::Covered(vec![ReplicationDestination {
            bucket: replica.clone(),
            disabled: true,
        }])
    );

    // The run-wide probe warns once per (object kind, destinations), and only
    // after a purge that removed a body.
    let probe = ReplicationProbe::new();
    let markers_only = PurgeOutcome {
        key: key.to_owned(),
        markers_deleted: 2,
        ..PurgeOutcome::default()
    };
    let body = PurgeOutcome {
        versions_deleted: 1,
        ..markers_only.clone()
    };
    assert_eq!(
        probe
            .after_purge(&client, &bucket, "lock", "d", &[markers_only])
            .await,
        None
    );
    let text = probe
        .after_purge(&client, &bucket, "lock", "d", std::slice::from_ref(&body))
        .await
        .expect("a warning");
    assert!(text.contains(&format!("s3://{bucket}")), "{text}");
    assert!(text.ends_with(&format!(
        "Destination(s): {replica} (rule disabled; earlier copies remain)"
    )));
    assert_eq!(
        probe
            .after_purge(&client, &bucket, "lock", "d", &[body])
            .await,
        None
    );
}
