//! The deployment-event store: what `cdkd events` reads back, written by every deploy, destroy
//! and rollback, in the TypeScript cdkd's format and key layout so either binary reads the
//! other's history.
//!
//! ```text
//! {prefix}/{stack}/{region}/deployments/{runId}.jsonl   one run: one JSON event per line
//! {prefix}/{stack}/{region}/deployments/index.json      the newest 20 runs, newest first
//! ```
//!
//! Why it is built the way it is:
//! - It is a post-mortem aid, never a reason to fail: [`EventLog::record`] only buffers, the
//!   stream is re-written whole (S3 has no append) by a background flush 2 s after the first
//!   unsaved event or at once past 50 of them, and the last flush, the index and the
//!   self-bounding prune run in the background after the run ([`crate::state::deferred`], awaited
//!   before the process exits). A failed write warns once per run, then goes to debug.
//! - Every run has its own key, so there is no lock; the index is a derived view written
//!   last-writer-wins (a run that loses the race is still readable by id).
//! - Events carry metadata and (masked) error text only, never resource properties.
//! - The event layer survives `cdkd destroy` by design (`--purge-events` and `cdkd events prune`
//!   remove it); every delete from it also purges the deleted keys' noncurrent versions.
//!
//! The reading side and the prune are in [`super::events_read`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_sdk_s3::primitives::ByteStream;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::keys::StateKeys;
use crate::ui;

/// The `indexVersion` this binary reads and writes.
pub const INDEX_VERSION: u64 = 1;
/// Runs the index keeps, and the window the writer bounds the run streams to.
pub const MAX_INDEX_RUNS: usize = 20;
/// How long an unsaved event waits for company before the stream is written.
const FLUSH_INTERVAL: Duration = Duration::from_secs(2);
/// Unsaved events that trigger a write at once.
const FLUSH_THRESHOLD: usize = 50;
/// The per-object parenthetical of a purge warning about the event store.
pub const EVENTS_OBJECT_DESCRIPTION: &str =
    "the deployment event store, whose error messages are classed as sensitive";

/// The command that produced a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunCommand {
    Deploy,
    Destroy,
    Rollback,
}

impl RunCommand {
    pub fn as_str(self) -> &'static str {
        match self {
            RunCommand::Deploy => "deploy",
            RunCommand::Destroy => "destroy",
            RunCommand::Rollback => "rollback",
        }
    }
}

/// A run's terminal result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunResult {
    Succeeded,
    Failed,
}

impl RunResult {
    pub fn as_str(self) -> &'static str {
        match self {
            RunResult::Succeeded => "SUCCEEDED",
            RunResult::Failed => "FAILED",
        }
    }
}

/// The resource operation an event is about (`operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// `eventType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    RunStarted,
    RunFinished,
    ResourceStarted,
    ResourceSucceeded,
    ResourceFailed,
    ResourceRetained,
    ResourceSkipped,
    RollbackStarted,
    RollbackResourceSucceeded,
    RollbackResourceFailed,
    RollbackFinished,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::RunStarted => "RUN_STARTED",
            EventType::RunFinished => "RUN_FINISHED",
            EventType::ResourceStarted => "RESOURCE_STARTED",
            EventType::ResourceSucceeded => "RESOURCE_SUCCEEDED",
            EventType::ResourceFailed => "RESOURCE_FAILED",
            EventType::ResourceRetained => "RESOURCE_RETAINED",
            EventType::ResourceSkipped => "RESOURCE_SKIPPED",
            EventType::RollbackStarted => "ROLLBACK_STARTED",
            EventType::RollbackResourceSucceeded => "ROLLBACK_RESOURCE_SUCCEEDED",
            EventType::RollbackResourceFailed => "ROLLBACK_RESOURCE_FAILED",
            EventType::RollbackFinished => "ROLLBACK_FINISHED",
        }
    }
}

/// A run's per-operation counters (`counts` of `RUN_FINISHED`); `failed` and `skipped` are
/// written only when non-zero, as upstream does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub created: usize,
    pub updated: usize,
    pub deleted: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// One event being built: the fields in the order upstream writes them. `timestamp` is
/// stamped by [`EventLog::record`].
#[derive(Debug, Clone)]
pub struct Event {
    fields: Map<String, Value>,
}

impl Event {
    pub fn new(event_type: EventType, stack: &str) -> Self {
        let mut fields = Map::new();
        fields.insert("eventType".into(), event_type.as_str().into());
        fields.insert("stackName".into(), stack.into());
        Event { fields }
    }

    fn set(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.fields.insert(key.into(), value.into());
        self
    }

    /// A resource event's operation, logical id and type.
    pub fn resource(self, op: Operation, logical_id: &str, resource_type: &str) -> Self {
        self.target(op, logical_id)
            .set("resourceType", resource_type)
    }

    /// The operation and logical id alone (a skip whose resource type is not at hand).
    pub fn target(self, op: Operation, logical_id: &str) -> Self {
        self.set("operation", op.as_str())
            .set("logicalId", logical_id)
    }

    /// `sdk` or `cc-api`.
    pub fn provisioned_by(self, route: &str) -> Self {
        self.set("provisionedBy", route)
    }

    pub fn physical_id(self, id: Option<&str>) -> Self {
        match id {
            Some(id) if !id.is_empty() => self.set("physicalId", id),
            _ => self,
        }
    }

    pub fn duration(self, elapsed: Duration) -> Self {
        self.set("durationMs", elapsed.as_millis() as u64)
    }

    pub fn reason(self, reason: &str) -> Self {
        self.set("reason", reason)
    }

    pub fn result(self, result: RunResult) -> Self {
        self.set("result", result.as_str())
    }

    pub fn counts(self, c: Counts) -> Self {
        let mut m = Map::new();
        m.insert("created".into(), c.created.into());
        m.insert("updated".into(), c.updated.into());
        m.insert("deleted".into(), c.deleted.into());
        if c.failed > 0 {
            m.insert("failed".into(), c.failed.into());
        }
        if c.skipped > 0 {
            m.insert("skipped".into(), c.skipped.into());
        }
        self.set("counts", Value::Object(m))
    }

    /// The failure: `{name, message}`. The message must already be masked (the callers hold
    /// the stack's secret redactor; this layer never sees a resolved secret on purpose).
    pub fn error(self, name: &str, message: &str) -> Self {
        self.set("error", json!({ "name": name, "message": message }))
    }

    fn into_line(self, timestamp: String) -> String {
        let mut fields = Map::new();
        fields.insert("timestamp".into(), timestamp.into());
        fields.extend(self.fields);
        Value::Object(fields).to_string()
    }
}

/// The time as JavaScript's `Date.prototype.toISOString` writes it:
/// `2026-06-13T01:23:45.678Z`.
pub fn iso_millis(at: SystemTime) -> String {
    let ms = at
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let (secs, millis) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar (Howard
/// Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// (year, month, day) to days since 1970-01-01 (the inverse of [`civil_from_days`]).
pub(super) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A time-sortable, unique run id: the start time in compact ISO form and eight hex digits,
/// `20260613T012345678Z-1a2b3c4d` (sorting the keys sorts the runs).
pub fn new_run_id(at: SystemTime) -> String {
    let compact: String = iso_millis(at)
        .chars()
        .filter(|c| !matches!(c, '-' | ':' | '.'))
        .collect();
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = Sha256::new();
    h.update(
        at.duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
            .to_le_bytes(),
    );
    h.update(std::process::id().to_le_bytes());
    h.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let suffix: String = h.finalize()[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{compact}-{suffix}")
}

/// `{prefix}/{stack}/{region}/deployments/{runId}.jsonl`.
pub fn run_key(keys: &StateKeys, stack: &str, region: &str, run_id: &str) -> String {
    format!("{}{run_id}.jsonl", keys.deployments_prefix(stack, region))
}

/// `{prefix}/{stack}/{region}/deployments/index.json`.
pub fn index_key(keys: &StateKeys, stack: &str, region: &str) -> String {
    format!("{}index.json", keys.deployments_prefix(stack, region))
}

/// One run's event log: buffers events and writes them behind the run. Cheap to clone (a
/// nested child's deploy or destroy records into its top-level stack's run, as upstream's).
#[derive(Clone)]
pub struct EventLog {
    inner: Arc<Inner>,
}

struct Inner {
    client: aws_sdk_s3::Client,
    bucket: String,
    keys: StateKeys,
    stack: String,
    region: String,
    command: RunCommand,
    run_id: String,
    started_at: String,
    started: Instant,
    buf: Mutex<Buffer>,
    /// Serializes the PUTs, so an older snapshot never lands over a newer one.
    write: tokio::sync::Mutex<()>,
    warned: AtomicBool,
}

#[derive(Default)]
struct Buffer {
    lines: Vec<String>,
    persisted: usize,
    finished: bool,
    discarded: bool,
    /// A delayed flush is scheduled.
    timer: bool,
    /// An immediate flush (past the threshold) is scheduled: one is enough.
    immediate: bool,
}

impl EventLog {
    /// Opens the log of a new run and records its `RUN_STARTED`.
    pub fn start(
        client: aws_sdk_s3::Client,
        bucket: &str,
        keys: StateKeys,
        (stack, region): (&str, &str),
        command: RunCommand,
    ) -> Self {
        let now = SystemTime::now();
        let log = EventLog {
            inner: Arc::new(Inner {
                client,
                bucket: bucket.to_owned(),
                keys,
                stack: stack.to_owned(),
                region: region.to_owned(),
                command,
                run_id: new_run_id(now),
                started_at: iso_millis(now),
                started: Instant::now(),
                buf: Mutex::new(Buffer::default()),
                write: tokio::sync::Mutex::new(()),
                warned: AtomicBool::new(false),
            }),
        };
        log.record(
            Event::new(EventType::RunStarted, stack)
                .set("command", command.as_str())
                .set("region", region)
                .set("cdkdVersion", env!("CARGO_PKG_VERSION")),
        );
        log
    }

    pub fn run_id(&self) -> &str {
        &self.inner.run_id
    }

    /// The stack whose `deployments/` the run is written under (the top-level stack).
    pub fn stack(&self) -> &str {
        &self.inner.stack
    }

    /// Time since the run started, for `RUN_FINISHED`'s `durationMs`.
    pub fn elapsed(&self) -> Duration {
        self.inner.started.elapsed()
    }

    /// Buffers one event, stamped now. Never blocks on S3 and never fails.
    pub fn record(&self, event: Event) {
        let line = event.into_line(iso_millis(SystemTime::now()));
        let flush_now = {
            let mut buf = self.lock();
            if buf.finished {
                return;
            }
            buf.lines.push(line);
            if buf.lines.len() - buf.persisted >= FLUSH_THRESHOLD && !buf.immediate {
                buf.immediate = true;
                Some(Duration::ZERO)
            } else if !buf.timer {
                buf.timer = true;
                Some(FLUSH_INTERVAL)
            } else {
                None
            }
        };
        if let Some(delay) = flush_now {
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            let log = self.clone();
            runtime.spawn(async move {
                tokio::time::sleep(delay).await;
                {
                    let mut buf = log.lock();
                    if delay.is_zero() {
                        buf.immediate = false;
                    } else {
                        buf.timer = false;
                    }
                }
                log.flush().await;
            });
        }
    }

    /// Records `RUN_FINISHED` and ends the run: the last flush, the index and the prune run
    /// in the background, drained before the process exits.
    pub fn finish(&self, finished: Event) {
        self.record(finished);
        self.lock().finished = true;
        let log = self.clone();
        super::deferred::spawn(async move { log.finalize().await });
    }

    /// Ends the run without writing anything more (`destroy --purge-events` is about to
    /// delete the store): waits for a write in flight, so none lands after the purge.
    pub async fn discard(&self) {
        {
            let mut buf = self.lock();
            buf.finished = true;
            buf.discarded = true;
        }
        let _guard = self.inner.write.lock().await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Buffer> {
        self.inner.buf.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes the whole stream when it holds events not yet written.
    async fn flush(&self) {
        let _guard = self.inner.write.lock().await;
        let (body, count) = {
            let buf = self.lock();
            if buf.discarded || buf.lines.len() == buf.persisted {
                return;
            }
            (format!("{}\n", buf.lines.join("\n")), buf.lines.len())
        };
        let i = &self.inner;
        let key = run_key(&i.keys, &i.stack, &i.region, &i.run_id);
        let put = i
            .client
            .put_object()
            .bucket(&i.bucket)
            .key(&key)
            .content_type("application/x-ndjson")
            .body(ByteStream::from(body.into_bytes()))
            .send()
            .await;
        match put {
            Ok(_) => {
                let mut buf = self.lock();
                buf.persisted = buf.persisted.max(count);
            }
            Err(e) => self.warn_once(&crate::aws::AwsError::call(
                "s3",
                "PutObject",
                format!("s3://{}/{key}", i.bucket),
                &e,
            )),
        }
    }

    async fn finalize(&self) {
        self.flush().await;
        let (persisted, discarded) = {
            let buf = self.lock();
            (buf.persisted, buf.discarded)
        };
        // Nothing stored: no index row for a stream that is not there.
        if persisted == 0 || discarded {
            return;
        }
        let result = self.result_recorded();
        if let Err(e) = self.update_index(&result, persisted).await {
            self.warn_once(&e);
        }
    }

    /// The result the last recorded `RUN_FINISHED` carries.
    fn result_recorded(&self) -> String {
        let buf = self.lock();
        buf.lines
            .iter()
            .rev()
            .filter_map(|l| serde_json::from_str::<Map<String, Value>>(l).ok())
            .find(|e| e.get("eventType").and_then(Value::as_str) == Some("RUN_FINISHED"))
            .and_then(|e| e.get("result").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| RunResult::Failed.as_str().to_owned())
    }

    /// Prepends this run to the index (read-modify-write, last writer wins), then deletes the
    /// run streams older than the oldest run the index keeps.
    async fn update_index(&self, result: &str, events: usize) -> Result<(), String> {
        let i = &self.inner;
        let key = index_key(&i.keys, &i.stack, &i.region);
        let existing = read_object(&i.client, &i.bucket, &key).await?;
        let mut runs: Vec<Value> = Vec::new();
        if let Some(bytes) = existing {
            match super::events_read::parse_index(&bytes) {
                Ok(Some(parsed)) => runs = parsed,
                Ok(None) => tracing::debug!("deployment-event index {key} unreadable; rewriting"),
                Err(newer) => {
                    // Never overwrite (and so downgrade) an index a newer cdkd wrote: the
                    // stream is stored and `cdkd events --run` reads it.
                    return Err(format!(
                        "{newer}; left as it is, run {} not listed",
                        i.run_id
                    ));
                }
            }
        }
        let summary = json!({
            "runId": i.run_id,
            "command": i.command.as_str(),
            "cdkdVersion": env!("CARGO_PKG_VERSION"),
            "startedAt": i.started_at,
            "finishedAt": iso_millis(SystemTime::now()),
            "result": result,
            "eventCount": events,
        });
        runs.retain(|r| r.get("runId").and_then(Value::as_str) != Some(&i.run_id));
        runs.insert(0, summary);
        runs.truncate(MAX_INDEX_RUNS);
        let body = index_body(&i.stack, &i.region, &runs);
        i.client
            .put_object()
            .bucket(&i.bucket)
            .key(&key)
            .content_type("application/json")
            .body(ByteStream::from(body.into_bytes()))
            .send()
            .await
            .map_err(|e| {
                crate::aws::AwsError::call(
                    "s3",
                    "PutObject",
                    format!("s3://{}/{key}", i.bucket),
                    &e,
                )
                .to_string()
            })?;
        if runs.len() < MAX_INDEX_RUNS {
            return Ok(());
        }
        let kept: Vec<&str> = runs
            .iter()
            .filter_map(|r| r.get("runId").and_then(Value::as_str))
            .collect();
        let Some(cutoff) = kept.iter().min().map(|s| s.to_string()) else {
            return Ok(());
        };
        let reader = super::events_read::StoreAccess {
            client: &i.client,
            bucket: &i.bucket,
            keys: &i.keys,
        };
        let ids = reader.run_ids(&i.stack, &i.region).await?;
        let stale: Vec<String> = ids.into_iter().filter(|id| *id < cutoff).collect();
        reader.delete_runs(&i.stack, &i.region, &stale).await?;
        tracing::debug!(
            "pruned {} superseded deployment-event stream(s) of {} ({})",
            stale.len(),
            i.stack,
            i.region
        );
        Ok(())
    }

    fn warn_once(&self, e: &dyn std::fmt::Display) {
        let message = format!(
            "could not store the deployment events of run {} ({} {}): {e}",
            self.inner.run_id, self.inner.stack, self.inner.region
        );
        if self.inner.warned.swap(true, Ordering::Relaxed) {
            tracing::debug!("{message}");
        } else {
            ui::warn(format!(
                "{message}; continuing: deployment events are best-effort and never fail the run"
            ));
        }
    }
}

/// `index.json` as upstream lays it out (`JSON.stringify(file, null, 2)`).
pub(super) fn index_body(stack: &str, region: &str, runs: &[Value]) -> String {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let file = json!({
        "indexVersion": INDEX_VERSION,
        "stackName": stack,
        "region": region,
        "runs": runs,
        "lastModified": now_ms,
    });
    serde_json::to_string_pretty(&file).unwrap_or_default()
}

/// An object's bytes, `None` when the key does not exist.
pub(super) async fn read_object(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
) -> Result<Option<Vec<u8>>, String> {
    use crate::aws::{classify, ErrorKind};
    let out = match client.get_object().bucket(bucket).key(key).send().await {
        Ok(out) => out,
        Err(e) if classify(&e) == ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(crate::aws::AwsError::call(
                "s3",
                "GetObject",
                format!("s3://{bucket}/{key}"),
                &e,
            )
            .to_string())
        }
    };
    let body = out
        .body
        .collect()
        .await
        .map_err(|e| format!("reading s3://{bucket}/{key} failed: {e}"))?;
    Ok(Some(body.into_bytes().to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_as_javascript_writes_them() {
        let at = UNIX_EPOCH + Duration::from_millis(1_781_314_425_678);
        assert_eq!(iso_millis(at), "2026-06-13T01:33:45.678Z");
        assert_eq!(iso_millis(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(iso_millis(leap), "2000-02-29T00:00:00.000Z");
        for days in [-1, 0, 59, 10_956, 20_617, 100_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn run_ids_sort_by_time_and_differ() {
        let at = UNIX_EPOCH + Duration::from_millis(1_781_314_425_678);
        let a = new_run_id(at);
        let b = new_run_id(at);
        assert!(a.starts_with("20260613T013345678Z-"), "{a}");
        assert_eq!(a.len(), "20260613T013345678Z-1a2b3c4d".len());
        assert_ne!(a, b);
        let later = new_run_id(at + Duration::from_millis(1));
        assert!(later > a && later > b);
    }

    #[test]
    fn event_lines_carry_upstream_field_names() {
        let line = Event::new(EventType::ResourceFailed, "S")
            .resource(Operation::Create, "Q", "AWS::SQS::Queue")
            .provisioned_by("sdk")
            .duration(Duration::from_millis(12))
            .error("Error", "boom")
            .into_line("T".into());
        assert_eq!(
            line,
            r#"{"timestamp":"T","eventType":"RESOURCE_FAILED","stackName":"S","operation":"CREATE","logicalId":"Q","resourceType":"AWS::SQS::Queue","provisionedBy":"sdk","durationMs":12,"error":{"name":"Error","message":"boom"}}"#
        );
        let counts = Event::new(EventType::RunFinished, "S")
            .result(RunResult::Succeeded)
            .counts(Counts {
                created: 1,
                skipped: 2,
                ..Counts::default()
            })
            .into_line("T".into());
        assert!(counts.ends_with(
            r#""result":"SUCCEEDED","counts":{"created":1,"updated":0,"deleted":0,"skipped":2}}"#
        ));
    }
}
