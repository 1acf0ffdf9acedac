//! Who reads a stack's outputs: before an output the template no longer declares is dropped,
//! every other record in the bucket is checked for an `outputReads` or `imports` entry naming
//! it (scrub spec, "across stacks"). A record that cannot be listed or read (or that is listed
//! and reads as absent) makes the answer unknown. A record that predates the field recording
//! a read (`imports` before schema v4, `outputReads` before v8) may read any key, so every
//! key then counts as read (kept and reported, `--fail` exits 1).

use std::collections::BTreeSet;

use crate::state::backend::S3Backend;

/// The output keys of `stack` in `region` some other record reads; `Err` names what could
/// not be read (the readers are then unverified).
pub async fn output_keys_read_elsewhere(
    backend: &S3Backend,
    stack: &str,
    region: &str,
) -> Result<BTreeSet<String>, String> {
    let refs = backend
        .list_records()
        .await
        .map_err(|e| format!("listing state records failed: {e}"))?;
    let mut read = BTreeSet::new();
    // A record older than the field that records a read (imports: v4, outputReads: v8), or
    // whose reads cannot be compared, may read any key: then every key counts as read.
    let mut predates = false;
    for r in refs {
        let Some(r_region) = r.region.as_deref() else {
            predates = true; // a pre-region (v1) record
            continue;
        };
        if r.stack_name == stack && r_region == region {
            continue;
        }
        let loaded = backend
            .load_for_reading(&r.stack_name, r_region)
            .await
            .map_err(|e| {
                format!(
                    "reading the record of {} ({r_region}) failed: {e}",
                    r.stack_name
                )
            })?;
        // A listed record that reads as absent cannot say whom it reads.
        let Some(loaded) = loaded else {
            return Err(format!(
                "the record of {} ({r_region}) is listed but reads as absent",
                r.stack_name
            ));
        };
        let other = &loaded.parsed.state;
        if loaded.parsed.source_version < 8
            || matches!(
                other.output_reads,
                Some(crate::state::Lenient::Malformed(_))
            )
        {
            predates = true;
        }
        for entry in loaded.parsed.state.output_read_entries() {
            if entry.source_stack == stack && entry.source_region == region {
                read.insert(entry.output_name);
            }
        }
        // Fn::ImportValue reads an export alias, which is a key of the producer's outputs.
        for entry in loaded.parsed.state.imports.iter().flatten() {
            if entry.source_stack == stack && entry.source_region == region {
                read.insert(entry.export_name.clone());
            }
        }
    }
    if predates {
        if let Ok(Some(own)) = backend.load_for_reading(stack, region).await {
            read.extend(
                own.parsed
                    .state
                    .outputs
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k),
            );
        }
    }
    Ok(read)
}
