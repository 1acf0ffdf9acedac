//! The strong-reference scan at destroy (cross-stack-references.md, "Strong-reference scan at
//! destroy"): a producer whose record has outputs is refused while any other stack's record
//! lists an `Fn::ImportValue` of it (`imports[]` naming this stack and region).
//!
//! The scan reads every record in the bucket rather than the exports index, which has no
//! consumer-side mapping and may be stale. A record that cannot be read at all fails the scan
//! closed: a destroy is the direction that cannot be undone.
//!
//! Each scan lists the records afresh (after the stacks that depend on the producer are gone),
//! but a record whose listed ETag is one this run already read is not read again: its imports
//! are taken from [`RecordImports`], the run's copy keyed by key, ETag and the region it was
//! read as. An ETag names one version's bytes, so the answer is the one a read of every record
//! at the listing would give; in a chain of stacks destroyed one after another, each scan
//! after the first costs its listing only (the stacks still waiting have not changed).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;
use tokio::task::JoinSet;

use crate::state::backend::{BackendError, ListedRecord, S3Backend};
use crate::state::{StackRef, StateImportEntry};

/// The `imports[]` of each record version one run has read, shared by the stacks of one
/// destroy. Only what a read confirmed is kept: a record that changed between the listing and
/// the read, or could not be read, is read again by the next scan.
#[derive(Default)]
pub struct RecordImports {
    /// (key, ETag, region read as) -> the record's imports.
    cells: Mutex<HashMap<(String, String, String), Arc<OnceCell<Arc<Vec<StateImportEntry>>>>>>,
}

/// Why a record's imports were not kept.
enum Miss {
    /// Read, but not the version the listing named (or gone): the answer, not kept.
    Changed(Option<Arc<Vec<StateImportEntry>>>),
    Failed(BackendError),
}

impl RecordImports {
    /// The imports of the listed record `rec`, read as `region`'s; `None` when it is gone.
    async fn imports_of(
        &self,
        backend: &S3Backend,
        rec: &ListedRecord,
        region: &str,
    ) -> Result<Option<Arc<Vec<StateImportEntry>>>, BackendError> {
        let stack = &rec.stack.stack_name;
        let read = || async {
            let loaded = backend.load_for_reading(stack, region).await?;
            let version = loaded.as_ref().map(|l| (l.key.clone(), l.etag.clone()));
            let imports =
                loaded.map(|l| Arc::new(l.parsed.state.imports.clone().unwrap_or_default()));
            Ok::<_, BackendError>((version, imports))
        };
        if rec.etag.is_empty() {
            return Ok(read().await?.1);
        }
        let cell = {
            let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
            cells
                .entry((rec.key.clone(), rec.etag.clone(), region.to_owned()))
                .or_default()
                .clone()
        };
        let kept = cell
            .get_or_try_init(|| async {
                match read().await {
                    Ok((Some((key, etag)), Some(imports)))
                        if key == rec.key && etag == rec.etag =>
                    {
                        Ok(imports)
                    }
                    Ok((_, imports)) => Err(Miss::Changed(imports)),
                    Err(e) => Err(Miss::Failed(e)),
                }
            })
            .await;
        match kept {
            Ok(imports) => Ok(Some(imports.clone())),
            Err(Miss::Changed(imports)) => Ok(imports),
            Err(Miss::Failed(e)) => Err(e),
        }
    }
}

/// A stack that still imports from the producer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consumer {
    pub stack: String,
    pub region: String,
    /// The export names it imports, in record order, without repeats.
    pub exports: Vec<String>,
}

impl std::fmt::Display for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}) imports {}",
            self.stack,
            self.region,
            self.exports.join(", ")
        )
    }
}

/// Why the scan could not answer.
#[derive(Debug, thiserror::Error)]
#[error("cannot check whether another stack imports from {producer} ({region}): {detail}; nothing was deleted: repair or remove that record (`cdkd state show` / `cdkd state orphan`) and re-run")]
pub struct ScanError {
    pub producer: String,
    pub region: String,
    pub detail: String,
}

/// Every other stack whose record imports from `producer` in `region`, in listing order.
/// `seen` is the run's copy of the records already read.
pub async fn active_consumers(
    backend: &Arc<S3Backend>,
    seen: &Arc<RecordImports>,
    producer: &str,
    region: &str,
) -> Result<Vec<Consumer>, ScanError> {
    let fail = |detail: String| ScanError {
        producer: producer.to_owned(),
        region: region.to_owned(),
        detail,
    };
    let records = backend
        .list_record_objects()
        .await
        .map_err(|e| fail(format!("listing the state records failed: {e}")))?;
    let mut tasks = JoinSet::new();
    for (order, rec) in records.into_iter().enumerate() {
        let StackRef {
            stack_name,
            region: rec_region,
        } = rec.stack.clone();
        // A legacy record (no region in its key) is read as the producer's region's.
        let rec_region = rec_region.unwrap_or_else(|| region.to_owned());
        if stack_name == producer && rec_region == region {
            continue;
        }
        let (backend, seen) = (backend.clone(), seen.clone());
        tasks.spawn(async move {
            let imports = seen.imports_of(&backend, &rec, &rec_region).await;
            (order, stack_name, rec_region, imports)
        });
    }
    let mut found: Vec<(usize, Consumer)> = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        let (order, stack, rec_region, imports) =
            joined.map_err(|e| fail(format!("a record read did not finish: {e}")))?;
        let imports = imports.map_err(|e| {
            fail(format!(
                "the record of stack {stack} ({rec_region}) could not be read: {e}"
            ))
        })?;
        let Some(imports) = imports else { continue };
        let mut exports: Vec<String> = Vec::new();
        for entry in imports.iter() {
            if entry.source_stack == producer
                && entry.source_region == region
                && !exports.contains(&entry.export_name)
            {
                exports.push(entry.export_name.clone());
            }
        }
        if !exports.is_empty() {
            found.push((
                order,
                Consumer {
                    stack,
                    region: rec_region,
                    exports,
                },
            ));
        }
    }
    found.sort_by_key(|(order, _)| *order);
    Ok(found.into_iter().map(|(_, c)| c).collect())
}
