//! What a fully successful destroy removes besides the resources: the create-token ledger
//! (BEFORE the record, as state-schema.md requires: if it cannot be deleted the record stays and
//! the command fails), the rollback journal, then `state.json`; the two transient objects with
//! their noncurrent versions purged (fail-soft, with the spec's warning). `state.json`'s own
//! history is kept: it is the recovery capability the bucket is versioned for.

use crate::state::backend::S3Backend;
use crate::state::purge::{purge_noncurrent_versions, render_purge_warning, PurgeOutcome};
use crate::ui;

/// A sidecar or the record that could not be deleted; the record is still in place.
#[derive(Debug, thiserror::Error)]
#[error("every resource of {stack} ({region}) is gone, but {what} could not be deleted ({detail}); the state record was kept: re-run the destroy to finish")]
pub struct CleanupError {
    pub stack: String,
    pub region: String,
    pub what: String,
    pub detail: String,
}

/// Deletes the ledger, the journal and the record (`legacy_key` too when the record was never
/// re-saved out of the legacy layout).
pub(super) async fn remove_record(
    backend: &S3Backend,
    stack: &str,
    region: &str,
    legacy_key: Option<&str>,
) -> Result<(), CleanupError> {
    let keys = backend.keys();
    let fail = |what: &str, detail: String| CleanupError {
        stack: stack.to_owned(),
        region: region.to_owned(),
        what: what.to_owned(),
        detail,
    };
    let ledger = keys.create_tokens(stack, region);
    let journal = keys.rollback_journal(stack, region);
    let mut purged: Vec<(PurgeOutcome, &str)> = Vec::new();
    for (key, what, description) in [
        (
            &ledger,
            "the create-token ledger",
            "the create-token ledger, which holds token nonces and no secret",
        ),
        (
            &journal,
            "the rollback journal",
            "the rollback journal, whose `failedOperations[].attemptedProperties` records the \
             properties of the failed write verbatim",
        ),
    ] {
        backend
            .delete_object(key)
            .await
            .map_err(|e| fail(&format!("{what} {key}"), e.to_string()))?;
        let outcome = purge_noncurrent_versions(backend.client(), backend.bucket(), key).await;
        purged.push((outcome, description));
    }
    for (outcome, description) in &purged {
        if let Some(w) =
            render_purge_warning(backend.bucket(), description, std::slice::from_ref(outcome))
        {
            ui::warn(w);
        }
    }
    let state_key = keys.state(stack, region);
    backend
        .delete_object(&state_key)
        .await
        .map_err(|e| fail(&format!("the state record {state_key}"), e.to_string()))?;
    if let Some(legacy) = legacy_key {
        backend
            .delete_object(legacy)
            .await
            .map_err(|e| fail(&format!("the legacy state record {legacy}"), e.to_string()))?;
    }
    Ok(())
}
