//! The rebuild: deriving a region's exports index from its state records.
//!
//! Every `{prefix}/{stack}/{region}/state.json` of the region is read (a few at
//! a time) with the strict reader, the one every command that acts on a record
//! uses. A record it refuses (not JSON, not an object, an unsupported version,
//! any malformed shape, notably an `outputs` that is not a map) contributes
//! nothing and is named in a warning; so does one whose `exportNames` cannot be
//! read. A legacy `{prefix}/{stack}/state.json` counts only when its body names
//! this region and no region-scoped record of the stack exists. Two records
//! publishing one name: the later `lastModified` wins (ties: the later stack
//! name), with a warning naming both.

use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;

use super::index::{takeover_warning, ExportEntry, ExportIndex};
use super::store::ExportIndexStore;
use super::{published_exports, unreadable_export_set_warning};
use crate::aws::{classify, error_code, AwsError, ErrorKind};
use crate::state::keys::StackRef;
use crate::state::value::quoted;
use crate::state::{legacy_record_region, parse_state, LegacyRegion};

/// State records fetched at once.
const CONCURRENCY: usize = 16;

/// One readable record's contribution.
struct Producer {
    last_modified: u64,
    stack: String,
    exports: Vec<(String, Value)>,
}

impl ExportIndexStore {
    /// Every export the region's state records publish, latest writer winning
    /// a name two records publish (ordered by `lastModified`), plus warnings:
    /// one per record that cannot be read or whose export set cannot be, one
    /// per contested name. `Err` when the bucket cannot be listed or a record
    /// cannot be fetched: nothing should be written then.
    pub(super) async fn derive(
        &self,
        region: &str,
    ) -> Result<(IndexMap<String, ExportEntry>, Vec<String>), AwsError> {
        let refs = self.list_records().await?;
        let regional: Vec<&StackRef> = refs
            .iter()
            .filter(|r| r.region.as_deref() == Some(region))
            .collect();
        // A legacy record is this region's only when its body names the region
        // and no region-scoped record of the stack supersedes it.
        let legacy = refs.iter().filter(|r| {
            r.region.is_none() && !regional.iter().any(|g| g.stack_name == r.stack_name)
        });
        let wanted: Vec<(String, String, bool)> = regional
            .iter()
            .map(|r| {
                (
                    r.stack_name.clone(),
                    self.keys.state(&r.stack_name, region),
                    false,
                )
            })
            .chain(legacy.map(|r| {
                (
                    r.stack_name.clone(),
                    self.keys.legacy_state(&r.stack_name),
                    true,
                )
            }))
            .collect();
        let bodies = self.fetch_all(wanted).await?;

        let mut warnings = Vec::new();
        let mut producers: Vec<Producer> = Vec::new();
        for (stack, is_legacy, bytes) in bodies {
            if is_legacy
                && !matches!(legacy_record_region(&bytes), LegacyRegion::Region(r) if r == region)
            {
                continue;
            }
            let parsed = match parse_state(&bytes, &stack, region) {
                Ok(parsed) => parsed,
                Err(e) => {
                    warnings.push(format!(
                        "Exports index for {}: publishing nothing from stack {}, whose state record cannot be read ({e})",
                        quoted(region),
                        quoted(&stack),
                    ));
                    continue;
                }
            };
            let (exports, problem) = published_exports(&parsed.state);
            if let Some(why) = problem {
                warnings.push(unreadable_export_set_warning(&stack, region, &why));
            }
            producers.push(Producer {
                last_modified: parsed.state.last_modified.unwrap_or(0),
                stack,
                exports,
            });
        }
        producers.sort_by(|a, b| (a.last_modified, &a.stack).cmp(&(b.last_modified, &b.stack)));
        let mut index = ExportIndex::default();
        for Producer { stack, exports, .. } in producers {
            for (name, value) in exports {
                let entry = ExportEntry::new(value, stack.as_str(), region);
                if let Some(earlier) = index
                    .exports
                    .get(&name)
                    .filter(|e| !e.is_from(&stack, region))
                {
                    warnings.push(takeover_warning(&name, earlier, &entry));
                }
                index.exports.insert(name, entry);
            }
        }
        Ok((index.exports, warnings))
    }

    /// Every state record key under the prefix.
    async fn list_records(&self) -> Result<Vec<StackRef>, AwsError> {
        let prefix = self.keys.list_prefix();
        let mut refs = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(&prefix)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page =
                page.map_err(|e| AwsError::call("s3", "ListObjectsV2", self.target(&prefix), &e))?;
            refs.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().and_then(|k| self.keys.parse_state_key(k))),
            );
        }
        refs.sort();
        refs.dedup();
        Ok(refs)
    }

    /// Fetches `(stack, key, legacy)` bodies, a few at a time, in the given
    /// order. A key deleted since the listing is skipped.
    async fn fetch_all(
        &self,
        wanted: Vec<(String, String, bool)>,
    ) -> Result<Vec<(String, bool, Vec<u8>)>, AwsError> {
        let semaphore = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
        let mut tasks = tokio::task::JoinSet::new();
        for (position, (stack, key, legacy)) in wanted.into_iter().enumerate() {
            let (client, bucket, semaphore) = (
                self.client.clone(),
                self.bucket.clone(),
                Arc::clone(&semaphore),
            );
            tasks.spawn(async move {
                let _permit = semaphore.acquire_owned().await;
                let fetched = fetch(&client, &bucket, &key).await;
                (position, stack, legacy, fetched)
            });
        }
        let mut bodies = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            let (position, stack, legacy, fetched) =
                joined.map_err(|e| AwsError::Unexpected(format!("a state read stopped: {e}")))?;
            if let Some(bytes) = fetched? {
                bodies.push((position, stack, legacy, bytes));
            }
        }
        bodies.sort_by_key(|b| b.0);
        Ok(bodies.into_iter().map(|(_, s, l, b)| (s, l, b)).collect())
    }
}

async fn fetch(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
) -> Result<Option<Vec<u8>>, AwsError> {
    let target = format!("s3://{bucket}/{key}");
    let out = match client.get_object().bucket(bucket).key(key).send().await {
        Ok(out) => out,
        Err(e) if classify(&e) == ErrorKind::NotFound && error_code(&e) != Some("NoSuchBucket") => {
            return Ok(None)
        }
        Err(e) => return Err(AwsError::call("s3", "GetObject", target, &e)),
    };
    let bytes = out
        .body
        .collect()
        .await
        .map_err(|e| AwsError::Unexpected(format!("reading {target} failed: {e}")))?;
    Ok(Some(bytes.into_bytes().to_vec()))
}
