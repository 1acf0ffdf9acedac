//! The strong-reference scan at destroy (cross-stack-references.md, "Strong-reference scan at
//! destroy"): a producer whose record has outputs is refused while any other stack's record
//! lists an `Fn::ImportValue` of it (`imports[]` naming this stack and region).
//!
//! The scan reads every record in the bucket rather than the exports index, which has no
//! consumer-side mapping and may be stale. A record that cannot be read at all fails the scan
//! closed: a destroy is the direction that cannot be undone.

use std::sync::Arc;

use tokio::task::JoinSet;

use crate::state::backend::S3Backend;
use crate::state::StackRef;

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
pub async fn active_consumers(
    backend: &Arc<S3Backend>,
    producer: &str,
    region: &str,
) -> Result<Vec<Consumer>, ScanError> {
    let fail = |detail: String| ScanError {
        producer: producer.to_owned(),
        region: region.to_owned(),
        detail,
    };
    let records = backend
        .list_records()
        .await
        .map_err(|e| fail(format!("listing the state records failed: {e}")))?;
    let mut tasks = JoinSet::new();
    for (
        order,
        StackRef {
            stack_name,
            region: rec_region,
        },
    ) in records.into_iter().enumerate()
    {
        // A legacy record (no region in its key) is read as the producer's region's.
        let rec_region = rec_region.unwrap_or_else(|| region.to_owned());
        if stack_name == producer && rec_region == region {
            continue;
        }
        let backend = backend.clone();
        tasks.spawn(async move {
            let loaded = backend.load_for_reading(&stack_name, &rec_region).await;
            (order, stack_name, rec_region, loaded)
        });
    }
    let mut found: Vec<(usize, Consumer)> = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        let (order, stack, rec_region, loaded) =
            joined.map_err(|e| fail(format!("a record read did not finish: {e}")))?;
        let loaded = loaded.map_err(|e| {
            fail(format!(
                "the record of stack {stack} ({rec_region}) could not be read: {e}"
            ))
        })?;
        let Some(loaded) = loaded else { continue };
        let mut exports: Vec<String> = Vec::new();
        for entry in loaded.parsed.state.imports.iter().flatten() {
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
