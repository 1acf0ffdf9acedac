//! `Fn::ImportValue`: the exports index, then the state scan (written
//! through to the index), then CloudFormation `ListExports` (weak).

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::{DynamicCache, ExternalReader};
use crate::aws::AwsError;
use crate::resolve::dynamic::SecretsMap;
use crate::resolve::error::LookupError;
use crate::state::exports::ExportEntry;
use crate::state::StateImportEntry;

/// Where an export was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportSource {
    /// The region's exports index.
    ExportsIndex,
    /// A state record the index did not know (written through since).
    StateScan,
    /// CloudFormation `ListExports`: a weak reference, not recorded and not
    /// re-resolved.
    CloudFormation,
}

/// A resolved `Fn::ImportValue`.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedValue {
    /// The value, its dynamic references resolved in the producer's region.
    pub value: Value,
    pub source: ImportSource,
    /// The producing cdkd stack and its region (`None` for CloudFormation).
    pub producer: Option<(String, String)>,
    /// Secret-bearing references the re-resolution substituted: their
    /// plaintexts must be redacted from this stack's state as well.
    pub secrets: SecretsMap,
}

impl ImportedValue {
    /// The `state.imports` entry a strong (cdkd-sourced) import records.
    pub fn import_entry(&self, export_name: &str) -> Option<StateImportEntry> {
        let (stack, region) = self.producer.as_ref()?;
        Some(StateImportEntry {
            source_stack: stack.clone(),
            source_region: region.clone(),
            export_name: export_name.to_string(),
            extra: Map::new(),
        })
    }
}

/// An export found in cdkd state, not yet re-resolved.
struct Found {
    value: Value,
    stack: String,
    region: String,
    source: ImportSource,
}

/// The outcome of one batch: each name's value or failure, and warnings.
pub type ImportResults = (
    IndexMap<String, Result<ImportedValue, LookupError>>,
    Vec<String>,
);

impl ExternalReader {
    /// Resolves the `Fn::ImportValue` names of stack `consumer` in `region`.
    /// The index is read once, a miss costs one scan of the region's records
    /// for the whole batch, and CloudFormation is asked once for what is left.
    pub async fn import_values(
        &self,
        consumer: &str,
        region: &str,
        names: &[String],
        cache: &DynamicCache,
    ) -> ImportResults {
        let mut warnings = Vec::new();
        let mut found: IndexMap<String, Found> = IndexMap::new();
        if let Some(index) = &self.index {
            for name in names {
                if let Some(entry) = index.lookup(region, name).await {
                    // A stack never imports from itself: fall through to the scan.
                    if entry.producer_stack != consumer {
                        found.insert(
                            name.clone(),
                            Found {
                                value: entry.value,
                                stack: entry.producer_stack,
                                region: entry.producer_region,
                                source: ImportSource::ExportsIndex,
                            },
                        );
                    }
                }
            }
        }
        let missing: Vec<&String> = names.iter().filter(|n| !found.contains_key(*n)).collect();
        let mut scan_problem = None;
        if !missing.is_empty() {
            match self
                .scan_region(consumer, region, &missing, &mut warnings)
                .await
            {
                Ok(hits) => {
                    for (name, hit) in hits {
                        self.write_through(region, &name, &hit).await;
                        found.insert(name, hit);
                    }
                }
                Err(e) => {
                    let w = format!("the state scan for Fn::ImportValue failed: {e}");
                    tracing::warn!("{w}");
                    warnings.push(w);
                    scan_problem = Some(e.to_string());
                }
            }
        }
        let missing: Vec<&String> = names.iter().filter(|n| !found.contains_key(*n)).collect();
        let mut cfn: IndexMap<String, String> = IndexMap::new();
        if !missing.is_empty() && self.cfn_fallback {
            match self.list_exports(region).await {
                Ok(all) => cfn = all,
                Err(e) => {
                    let w = format!(
                        "the CloudFormation fallback for Fn::ImportValue failed ({e}); \
                         reporting the exports as not found"
                    );
                    tracing::warn!("{w}");
                    warnings.push(w);
                }
            }
        }

        let mut out = IndexMap::new();
        for name in names {
            let r = if let Some(hit) = found.get(name) {
                let what = format!("export '{name}' of stack '{}' ({})", hit.stack, hit.region);
                self.reresolve(cache, &hit.value, &hit.stack, &hit.region, name, &what)
                    .await
                    .map(|(value, secrets)| ImportedValue {
                        value,
                        source: hit.source.clone(),
                        producer: Some((hit.stack.clone(), hit.region.clone())),
                        secrets,
                    })
            } else if let Some(v) = cfn.get(name) {
                Ok(ImportedValue {
                    value: Value::String(v.clone()),
                    source: ImportSource::CloudFormation,
                    producer: None,
                    secrets: SecretsMap::default(),
                })
            } else {
                Err(self.not_found(name, region, scan_problem.as_deref()))
            };
            out.insert(name.clone(), r);
        }
        (out, warnings)
    }

    fn not_found(&self, name: &str, region: &str, scan_problem: Option<&str>) -> LookupError {
        let mut msg = format!(
            "export '{name}' not found in {region}: no other cdkd stack in the state bucket publishes it"
        );
        if let Some(p) = scan_problem {
            msg.push_str(&format!(" (the state scan failed: {p})"));
        }
        if self.cfn_fallback {
            msg.push_str(", and CloudFormation ListExports does not list it");
        } else {
            msg.push_str(" (the CloudFormation fallback is off)");
        }
        LookupError::Failed(msg)
    }

    /// Reads every record of `region` (legacy region-less records count as
    /// the region's), except the consumer's own, for the first stack
    /// publishing each wanted name.
    async fn scan_region(
        &self,
        consumer: &str,
        region: &str,
        wanted: &[&String],
        warnings: &mut Vec<String>,
    ) -> Result<IndexMap<String, Found>, AwsError> {
        let mut hits = IndexMap::new();
        let refs = self.state.list_records().await?;
        for r in refs {
            if r.stack_name == consumer || r.region.as_deref().is_some_and(|x| x != region) {
                continue;
            }
            if hits.len() == wanted.len() {
                break;
            }
            let loaded = match self.state.load_for_reading(&r.stack_name, region).await {
                Ok(Some(l)) => l,
                Ok(None) => continue,
                Err(e) => {
                    let w = format!(
                        "skipping stack '{}' ({region}) in the Fn::ImportValue scan: {e}",
                        r.stack_name
                    );
                    tracing::warn!("{w}");
                    warnings.push(w);
                    continue;
                }
            };
            let state = &loaded.parsed.state;
            let Some(outputs) = &state.outputs else {
                continue;
            };
            for key in state.importable_output_keys() {
                if hits.contains_key(key) || !wanted.iter().any(|w| w.as_str() == key) {
                    continue;
                }
                if let Some(value) = outputs.get(key) {
                    hits.insert(
                        key.to_string(),
                        Found {
                            value: value.clone(),
                            stack: r.stack_name.clone(),
                            region: region.to_string(),
                            source: ImportSource::StateScan,
                        },
                    );
                }
            }
        }
        Ok(hits)
    }

    async fn write_through(&self, region: &str, name: &str, hit: &Found) {
        if let Some(index) = &self.index {
            let entry = ExportEntry::new(hit.value.clone(), hit.stack.clone(), hit.region.clone());
            index.patch_entry(region, name, entry).await;
        }
    }

    /// Every CloudFormation export of `region` (all pages).
    async fn list_exports(&self, region: &str) -> Result<IndexMap<String, String>, AwsError> {
        let mut out = IndexMap::new();
        let mut pages = self
            .clients
            .cloudformation(Some(region))
            .list_exports()
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| {
                AwsError::call("cloudformation", "ListExports", region.to_string(), &e)
            })?;
            for export in page.exports() {
                if let (Some(n), Some(v)) = (export.name(), export.value()) {
                    out.entry(n.to_string()).or_insert_with(|| v.to_string());
                }
            }
        }
        Ok(out)
    }
}
