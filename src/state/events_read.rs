//! Reading and pruning the deployment-event store ([`super::events`]): what `cdkd events`,
//! `cdkd events prune` and `destroy --purge-events` do with it.
//!
//! Reads are lenient where upstream's are, because the run streams are the source of truth
//! and the index only a derived view: a missing or damaged index is rebuilt from the streams
//! (a run without `RUN_FINISHED` is `UNKNOWN`, never called failed), and a torn last line of a
//! stream is skipped. Events are kept as the JSON objects they are, so a field this binary
//! does not know survives a read and a rewrite. An index with a NEWER `indexVersion` is never
//! rewritten: the listing falls back to the streams, and the writer leaves it alone.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use super::events::{index_body, index_key, read_object, run_key, INDEX_VERSION, MAX_INDEX_RUNS};
use super::keys::StateKeys;
use super::purge::{purge_noncurrent_versions, render_purge_warning};
use crate::ui;

/// One event as stored (one JSONL line).
pub type StoredEvent = Map<String, Value>;
/// One run as the index (or a stream, when there is no index) describes it.
pub type RunSummary = Map<String, Value>;

/// The index's `runs`, `Ok(None)` for a body that is not an index (rebuilt from the
/// streams), `Err` for an index of a newer version than this binary writes.
pub fn parse_index(bytes: &[u8]) -> Result<Option<Vec<Value>>, String> {
    let Ok(Value::Object(file)) = serde_json::from_slice::<Value>(bytes) else {
        return Ok(None);
    };
    if let Some(v) = file.get("indexVersion").and_then(Value::as_u64) {
        if v > INDEX_VERSION {
            return Err(format!(
                "the deployment-event index has indexVersion {v}, newer than this cdkd \
                 ({INDEX_VERSION}); upgrade cdkd to update it"
            ));
        }
    }
    Ok(file.get("runs").and_then(Value::as_array).cloned())
}

/// The events of one stream, in order; lines that do not parse (a torn final line of an
/// interrupted flush) are skipped.
pub fn parse_stream(bytes: &[u8]) -> Vec<StoredEvent> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter_map(|l| serde_json::from_str::<StoredEvent>(l).ok())
        .collect()
}

/// A stream as the writer lays it out: one compact JSON object per line, a final newline.
pub fn write_stream(events: &[StoredEvent]) -> String {
    let lines: Vec<String> = events
        .iter()
        .map(|e| Value::Object(e.clone()).to_string())
        .collect();
    format!("{}\n", lines.join("\n"))
}

/// The epoch milliseconds a run id's leading timestamp names (`None` for any other shape:
/// the age prune keeps such a run, the safe direction).
pub fn run_id_time(run_id: &str) -> Option<SystemTime> {
    let b = run_id.as_bytes();
    if b.len() < 19 || b[8] != b'T' || b[18] != b'Z' {
        return None;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = run_id.get(r)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (y, mo, d) = (digits(0..4)?, digits(4..6)?, digits(6..8)?);
    let (h, mi, s, ms) = (
        digits(9..11)?,
        digits(11..13)?,
        digits(13..15)?,
        digits(15..18)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let days = super::events::days_from_civil(y, mo as u32, d as u32);
    let total = days * 86_400_000 + h * 3_600_000 + mi * 60_000 + s * 1000 + ms;
    u64::try_from(total)
        .ok()
        .map(|t| SystemTime::UNIX_EPOCH + Duration::from_millis(t))
}

/// Which runs `cdkd events prune` deletes.
#[derive(Debug, Clone, Copy, Default)]
pub struct PruneOptions {
    pub keep: Option<usize>,
    pub older_than: Option<Duration>,
    pub all: bool,
}

/// What a prune did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneResult {
    pub deleted: Vec<String>,
    pub remaining: Vec<String>,
    pub index_deleted: bool,
}

/// The run ids `options` selects from `ids_desc` (newest first): beyond the newest `keep`
/// AND older than the cutoff when both are given; the newest 20 kept when neither is.
pub fn select_prune(ids_desc: &[String], options: &PruneOptions, now: SystemTime) -> Vec<String> {
    if options.all {
        return ids_desc.to_vec();
    }
    let keep = match (options.keep, options.older_than) {
        (None, None) => Some(MAX_INDEX_RUNS),
        (k, _) => k,
    };
    let protected = keep.unwrap_or(0).min(ids_desc.len());
    let candidates = if keep.is_some() {
        &ids_desc[protected..]
    } else {
        ids_desc
    };
    candidates
        .iter()
        .filter(|id| match options.older_than {
            None => true,
            Some(age) => run_id_time(id)
                .is_some_and(|t| now.duration_since(t).is_ok_and(|since| since > age)),
        })
        .cloned()
        .collect()
}

/// The S3 side of the store, shared by the writer's self-bounding prune and the commands.
pub struct StoreAccess<'a> {
    pub client: &'a aws_sdk_s3::Client,
    pub bucket: &'a str,
    pub keys: &'a StateKeys,
}

impl StoreAccess<'_> {
    async fn list(&self, prefix: &str) -> Result<Vec<String>, String> {
        let mut keys = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(self.bucket)
            .prefix(prefix)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| {
                crate::aws::AwsError::call(
                    "s3",
                    "ListObjectsV2",
                    format!("s3://{}/{prefix}", self.bucket),
                    &e,
                )
                .to_string()
            })?;
            keys.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_owned)),
            );
        }
        Ok(keys)
    }

    /// The regions with a `deployments/` object of `stack`: from the keys, not from a state
    /// record, so a destroyed stack's history is found.
    pub async fn regions(&self, stack: &str) -> Result<Vec<String>, String> {
        let folder = format!("{}{stack}/", self.keys.list_prefix());
        let mut regions: Vec<String> = self
            .list(&folder)
            .await?
            .iter()
            .filter_map(|k| {
                let parts: Vec<&str> = k.strip_prefix(&folder)?.split('/').collect();
                match parts.as_slice() {
                    [region, super::keys::DEPLOYMENTS_DIR, file]
                        if !region.is_empty() && !file.is_empty() =>
                    {
                        Some((*region).to_owned())
                    }
                    _ => None,
                }
            })
            .collect();
        regions.sort();
        regions.dedup();
        Ok(regions)
    }

    /// The run ids with a stream, newest first.
    pub async fn run_ids(&self, stack: &str, region: &str) -> Result<Vec<String>, String> {
        let folder = self.keys.deployments_prefix(stack, region);
        let mut ids: Vec<String> = self
            .list(&folder)
            .await?
            .iter()
            .filter_map(|k| k.strip_prefix(&folder)?.strip_suffix(".jsonl"))
            .filter(|id| !id.is_empty() && !id.contains('/'))
            .map(str::to_owned)
            .collect();
        ids.sort();
        ids.reverse();
        Ok(ids)
    }

    /// One run's events; `None` when it has no stream.
    pub async fn read_run(
        &self,
        stack: &str,
        region: &str,
        run_id: &str,
    ) -> Result<Option<Vec<StoredEvent>>, String> {
        let key = run_key(self.keys, stack, region, run_id);
        Ok(read_object(self.client, self.bucket, &key)
            .await?
            .map(|b| parse_stream(&b)))
    }

    /// The runs, newest first: the index's rows, else one row per stream read from it.
    pub async fn list_runs(&self, stack: &str, region: &str) -> Result<Vec<RunSummary>, String> {
        let key = index_key(self.keys, stack, region);
        if let Some(bytes) = read_object(self.client, self.bucket, &key).await? {
            match parse_index(&bytes) {
                Ok(Some(runs)) => {
                    return Ok(runs
                        .into_iter()
                        .filter_map(|r| match r {
                            Value::Object(m) => Some(m),
                            _ => None,
                        })
                        .collect())
                }
                Ok(None) => {}
                Err(newer) => ui::warn(format!("{newer}; listing the runs from their streams")),
            }
        }
        let mut runs = Vec::new();
        for id in self.run_ids(stack, region).await? {
            let events = self.read_run(stack, region, &id).await.unwrap_or(None);
            runs.push(summarize(&id, events.as_deref().unwrap_or(&[])));
        }
        Ok(runs)
    }

    /// Deletes the streams of `run_ids` and purges their noncurrent versions (each flush
    /// left one); a purge that fails warns, it never fails the delete.
    pub async fn delete_runs(
        &self,
        stack: &str,
        region: &str,
        run_ids: &[String],
    ) -> Result<(), String> {
        let keys: Vec<String> = run_ids
            .iter()
            .map(|id| run_key(self.keys, stack, region, id))
            .collect();
        self.delete_keys(&keys).await
    }

    async fn delete_keys(&self, keys: &[String]) -> Result<(), String> {
        let mut outcomes = Vec::new();
        for key in keys {
            self.client
                .delete_object()
                .bucket(self.bucket)
                .key(key)
                .send()
                .await
                .map_err(|e| {
                    crate::aws::AwsError::call(
                        "s3",
                        "DeleteObject",
                        format!("s3://{}/{key}", self.bucket),
                        &e,
                    )
                    .to_string()
                })?;
            outcomes.push(purge_noncurrent_versions(self.client, self.bucket, key).await);
        }
        if let Some(w) = render_purge_warning(
            self.bucket,
            super::events::EVENTS_OBJECT_DESCRIPTION,
            &outcomes,
        ) {
            ui::warn(w);
        }
        Ok(())
    }

    /// `cdkd events prune`: deletes the selected streams, then rewrites the index without
    /// them (first, so a delete that fails midway leaves no index row naming a gone stream),
    /// or deletes it when no run remains. Errors surface: the user asked for this.
    pub async fn prune(
        &self,
        stack: &str,
        region: &str,
        options: &PruneOptions,
        now: SystemTime,
    ) -> Result<PruneResult, String> {
        let ids = self.run_ids(stack, region).await?;
        if options.all {
            let purged = purge_prefix(self, stack, region).await;
            purged?;
            return Ok(PruneResult {
                deleted: ids,
                remaining: Vec::new(),
                index_deleted: true,
            });
        }
        let doomed = select_prune(&ids, options, now);
        let gone: HashSet<&String> = doomed.iter().collect();
        let remaining: Vec<String> = ids.iter().filter(|i| !gone.contains(i)).cloned().collect();
        if doomed.is_empty() {
            return Ok(PruneResult {
                remaining,
                ..PruneResult::default()
            });
        }
        let index = index_key(self.keys, stack, region);
        let index_deleted = if remaining.is_empty() {
            self.delete_keys(std::slice::from_ref(&index)).await?;
            true
        } else {
            self.rewrite_index(stack, region, &index, &gone).await?;
            false
        };
        self.delete_runs(stack, region, &doomed).await?;
        Ok(PruneResult {
            deleted: doomed,
            remaining,
            index_deleted,
        })
    }

    async fn rewrite_index(
        &self,
        stack: &str,
        region: &str,
        key: &str,
        gone: &HashSet<&String>,
    ) -> Result<(), String> {
        let Some(bytes) = read_object(self.client, self.bucket, key).await? else {
            return Ok(());
        };
        // A damaged index is left (the streams are the truth); a newer one is refused.
        let Some(runs) = parse_index(&bytes)? else {
            return Ok(());
        };
        let kept: Vec<Value> = runs
            .iter()
            .filter(|r| {
                r.get("runId")
                    .and_then(Value::as_str)
                    .is_none_or(|id| !gone.contains(&id.to_owned()))
            })
            .cloned()
            .collect();
        if kept.len() == runs.len() {
            return Ok(());
        }
        self.client
            .put_object()
            .bucket(self.bucket)
            .key(key)
            .content_type("application/json")
            .body(index_body(stack, region, &kept).into_bytes().into())
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                crate::aws::AwsError::call(
                    "s3",
                    "PutObject",
                    format!("s3://{}/{key}", self.bucket),
                    &e,
                )
                .to_string()
            })
    }
}

/// A run's row rebuilt from its stream: command, version and times from its `RUN_STARTED`
/// and last `RUN_FINISHED`; `UNKNOWN` without one.
fn summarize(run_id: &str, events: &[StoredEvent]) -> RunSummary {
    let str_of = |e: Option<&StoredEvent>, k: &str| {
        e.and_then(|e| e.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let is = |e: &&StoredEvent, t: &str| e.get("eventType").and_then(Value::as_str) == Some(t);
    let started = events.iter().find(|e| is(e, "RUN_STARTED"));
    let finished = events.iter().rev().find(|e| is(e, "RUN_FINISHED"));
    let mut row = Map::new();
    row.insert("runId".into(), run_id.into());
    row.insert(
        "command".into(),
        str_of(started, "command")
            .unwrap_or_else(|| "deploy".into())
            .into(),
    );
    row.insert(
        "cdkdVersion".into(),
        str_of(started, "cdkdVersion")
            .unwrap_or_else(|| "unknown".into())
            .into(),
    );
    row.insert(
        "startedAt".into(),
        str_of(started, "timestamp").unwrap_or_default().into(),
    );
    row.insert(
        "finishedAt".into(),
        str_of(finished, "timestamp").unwrap_or_default().into(),
    );
    row.insert(
        "result".into(),
        str_of(finished, "result")
            .unwrap_or_else(|| "UNKNOWN".into())
            .into(),
    );
    row.insert("eventCount".into(), events.len().into());
    row
}

/// Deletes every version and delete marker under the stack's `deployments/` prefix
/// (`destroy --purge-events`, `events prune --all`).
pub async fn purge_prefix(
    store: &StoreAccess<'_>,
    stack: &str,
    region: &str,
) -> Result<usize, String> {
    let prefix = store.keys.deployments_prefix(stack, region);
    let mut removed = 0usize;
    loop {
        let page = store
            .client
            .list_object_versions()
            .bucket(store.bucket)
            .prefix(&prefix)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "listing failed ({})",
                    crate::aws::AwsError::call("s3", "ListObjectVersions", &prefix, &e)
                )
            })?;
        let entries = page
            .versions()
            .iter()
            .map(|v| (v.key(), v.version_id()))
            .chain(
                page.delete_markers()
                    .iter()
                    .map(|m| (m.key(), m.version_id())),
            );
        let ids: Vec<_> = entries
            .filter_map(|(key, version)| {
                aws_sdk_s3::types::ObjectIdentifier::builder()
                    .key(key?)
                    .set_version_id(version.map(str::to_owned))
                    .build()
                    .ok()
            })
            .collect();
        if ids.is_empty() {
            return Ok(removed);
        }
        let count = ids.len();
        let delete = aws_sdk_s3::types::Delete::builder()
            .set_objects(Some(ids))
            .quiet(true)
            .build()
            .map_err(|e| e.to_string())?;
        let out = store
            .client
            .delete_objects()
            .bucket(store.bucket)
            .delete(delete)
            .send()
            .await
            .map_err(|e| {
                crate::aws::AwsError::call("s3", "DeleteObjects", &prefix, &e).to_string()
            })?;
        if let Some(first) = out.errors().first() {
            return Err(format!(
                "{} version(s) could not be deleted (first: {})",
                out.errors().len(),
                first.code().unwrap_or("no code")
            ));
        }
        removed += count;
    }
}

/// The warning of a failed prefix purge: the prefix, why, and the two version grants.
pub fn purge_prefix_warning(bucket: &str, prefix: &str, why: &str) -> String {
    format!(
        "Could not purge the deployment event store s3://{bucket}/{prefix}* (every key under \
         this prefix): {why}. Its versions survive and remain readable via GetObject with a \
         VersionId. Grant s3:ListBucketVersions and s3:DeleteObjectVersion on the state \
         bucket, or purge the prefix by hand."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_id_times_parse_back() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_781_314_425_678);
        let id = super::super::events::new_run_id(at);
        assert_eq!(run_id_time(&id), Some(at));
        assert_eq!(run_id_time("manual-run"), None);
        assert_eq!(run_id_time("20261313T000000000Z-x"), None);
    }

    #[test]
    fn prune_selection_is_conservative() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(2_000_000_000);
        let at = |s: u64| {
            super::super::events::new_run_id(SystemTime::UNIX_EPOCH + Duration::from_secs(s))
        };
        // newest first: 1 s, 1 h, 2 days old, and one id without a time
        let ids = vec![
            at(1_999_999_999),
            at(1_999_996_400),
            at(1_999_827_200),
            "zzz-handmade".to_string(),
        ];
        let mut ids = ids;
        ids.sort();
        ids.reverse();
        let keep = |n| PruneOptions {
            keep: Some(n),
            ..PruneOptions::default()
        };
        assert_eq!(select_prune(&ids, &keep(2), now), ids[2..].to_vec());
        let day = PruneOptions {
            older_than: Some(Duration::from_secs(86_400)),
            ..PruneOptions::default()
        };
        let old = select_prune(&ids, &day, now);
        assert_eq!(old.len(), 1);
        assert_eq!(
            run_id_time(&old[0]),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_999_827_200))
        );
        let both = PruneOptions {
            keep: Some(3),
            older_than: Some(Duration::from_secs(86_400)),
            all: false,
        };
        // "zzz-handmade" sorts newest: the window of 3 holds it, the 1 s and the 1 h runs.
        assert_eq!(select_prune(&ids, &both, now), old);
        let wide = PruneOptions {
            keep: Some(4),
            ..both
        };
        assert!(select_prune(&ids, &wide, now).is_empty());
        assert!(select_prune(&ids, &PruneOptions::default(), now).is_empty());
        let all = PruneOptions {
            all: true,
            ..PruneOptions::default()
        };
        assert_eq!(select_prune(&ids, &all, now), ids);
    }

    #[test]
    fn index_versions() {
        assert_eq!(
            parse_index(br#"{"indexVersion":1,"runs":[{"runId":"a"}]}"#)
                .unwrap()
                .map(|r| r.len()),
            Some(1)
        );
        assert_eq!(parse_index(b"not json").unwrap(), None);
        assert!(parse_index(br#"{"indexVersion":2,"runs":[]}"#).is_err());
    }

    /// Every stream and the index upstream cdkd wrote (scripts/upstream-goldens) read back
    /// and written out again unchanged: streams byte for byte, the index's rows as they were.
    #[test]
    fn upstream_goldens_round_trip() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/upstream/deployments");
        let mut streams = 0;
        for entry in std::fs::read_dir(&dir).expect("the golden event store") {
            let path = entry.expect("entry").path();
            let bytes = std::fs::read(&path).expect("golden");
            if path.extension().is_some_and(|e| e == "jsonl") {
                let events = parse_stream(&bytes);
                assert!(events.len() > 2, "{path:?}");
                assert_eq!(write_stream(&events).as_bytes(), &bytes[..], "{path:?}");
                let row = summarize("r", &events);
                assert_ne!(row["result"], "UNKNOWN", "{path:?}");
                streams += 1;
            }
        }
        assert!(streams >= 2);
        let index = std::fs::read(dir.join("index.json")).expect("golden index");
        let runs = parse_index(&index).expect("version 1").expect("an index");
        assert_eq!(runs.len(), streams);
        let original: Value = serde_json::from_slice(&index).unwrap();
        let rewritten: Value = serde_json::from_str(&index_body(
            original["stackName"].as_str().unwrap(),
            original["region"].as_str().unwrap(),
            &runs,
        ))
        .unwrap();
        for k in ["indexVersion", "stackName", "region", "runs"] {
            assert_eq!(rewritten[k], original[k], "{k}");
        }
    }

    #[test]
    fn streams_skip_torn_lines_and_round_trip() {
        let body = b"{\"eventType\":\"RUN_STARTED\",\"x\":1}\n{\"eventType\":\"RUN_FI";
        let events = parse_stream(body);
        assert_eq!(events.len(), 1);
        assert_eq!(
            write_stream(&events),
            "{\"eventType\":\"RUN_STARTED\",\"x\":1}\n"
        );
        let row = summarize("r", &events);
        assert_eq!(row["result"], "UNKNOWN");
        assert_eq!(row["eventCount"], 1);
    }
}
