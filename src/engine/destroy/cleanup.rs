//! What a fully successful destroy removes besides the resources: the create-token ledger
//! (BEFORE the record, as state-schema.md requires: if it cannot be deleted the record stays and
//! the command fails), the rollback journal, then `state.json`; the two transient objects with
//! their noncurrent versions purged in the background (fail-soft, with the spec's warning).
//! `state.json`'s own history is kept: it is the recovery capability the bucket is versioned
//! for.

use crate::state::backend::S3Backend;
use crate::state::purge::{purge_noncurrent_versions, render_purge_warning};
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

impl CleanupError {
    fn new(stack: &str, region: &str, not: NotDeleted) -> Self {
        CleanupError {
            stack: stack.to_owned(),
            region: region.to_owned(),
            what: not.what,
            detail: not.detail,
        }
    }
}

/// A destroy's [`delete_sidecars`]; the record goes only after it ([`remove_state`]).
pub(super) async fn remove_sidecars(
    backend: &S3Backend,
    stack: &str,
    region: &str,
) -> Result<(), CleanupError> {
    delete_sidecars(backend, stack, region)
        .await
        .map_err(|f| CleanupError::new(stack, region, f))
}

/// A destroy's [`delete_state`], after [`remove_sidecars`].
pub(super) async fn remove_state(
    backend: &S3Backend,
    stack: &str,
    region: &str,
    legacy_key: Option<&str>,
) -> Result<(), CleanupError> {
    delete_state(backend, stack, region, legacy_key)
        .await
        .map_err(|f| CleanupError::new(stack, region, f))
}

/// One object [`delete_record_with_sidecars`] could not delete; the record is still there.
#[derive(Debug)]
pub(crate) struct NotDeleted {
    /// What it is, with its key.
    pub what: String,
    pub detail: String,
}

fn not_deleted(what: &str, detail: String) -> NotDeleted {
    NotDeleted {
        what: what.to_owned(),
        detail,
    }
}

/// The ledger and the journal, then the record: every command that drops a stack's record
/// (destroy, `state destroy`, `state orphan`) removes its sidecars with it. (A destroy calls
/// the two halves itself, the sidecars' deletes beside its saver's last write.)
pub(crate) async fn delete_record_with_sidecars(
    backend: &S3Backend,
    stack: &str,
    region: &str,
    legacy_key: Option<&str>,
) -> Result<(), NotDeleted> {
    delete_sidecars(backend, stack, region).await?;
    delete_state(backend, stack, region, legacy_key).await
}

/// Deletes the ledger and the journal, together (they are independent). Each one's
/// noncurrent versions are purged in the background once its delete landed
/// (`state::deferred`): fail-soft, so the record's delete does not wait for them.
async fn delete_sidecars(backend: &S3Backend, stack: &str, region: &str) -> Result<(), NotDeleted> {
    let keys = backend.keys();
    let ledger = keys.create_tokens(stack, region);
    let journal = keys.rollback_journal(stack, region);
    let sidecars = [
        (
            ledger,
            "the create-token ledger",
            "the create-token ledger, which holds token nonces and no secret",
        ),
        (
            journal,
            "the rollback journal",
            "the rollback journal, whose `failedOperations[].attemptedProperties` records the \
             properties of the failed write verbatim",
        ),
    ];
    let results = {
        let (ledger, journal) = tokio::join!(
            backend.delete_object(&sidecars[0].0),
            backend.delete_object(&sidecars[1].0)
        );
        [ledger, journal]
    };
    let mut first_failure = None;
    for ((key, what, description), result) in sidecars.iter().zip(results) {
        match result {
            Ok(()) => purge_later(backend, key, description),
            Err(e) => {
                first_failure
                    .get_or_insert_with(|| not_deleted(&format!("{what} {key}"), e.to_string()));
            }
        }
    }
    match first_failure {
        Some(failure) => Err(failure),
        None => Ok(()),
    }
}

/// Deletes the record (`legacy_key` too when the record was never re-saved out of the legacy
/// layout), after [`delete_sidecars`].
async fn delete_state(
    backend: &S3Backend,
    stack: &str,
    region: &str,
    legacy_key: Option<&str>,
) -> Result<(), NotDeleted> {
    let state_key = backend.keys().state(stack, region);
    backend
        .delete_object(&state_key)
        .await
        .map_err(|e| not_deleted(&format!("the state record {state_key}"), e.to_string()))?;
    if let Some(legacy) = legacy_key {
        backend.delete_object(legacy).await.map_err(|e| {
            not_deleted(&format!("the legacy state record {legacy}"), e.to_string())
        })?;
    }
    Ok(())
}

/// Purges `key`'s noncurrent versions in the background, with the spec's warning on failure.
fn purge_later(backend: &S3Backend, key: &str, description: &'static str) {
    let (client, bucket, key) = (
        backend.client().clone(),
        backend.bucket().to_owned(),
        key.to_owned(),
    );
    crate::state::deferred::spawn(async move {
        let outcome = purge_noncurrent_versions(&client, &bucket, &key).await;
        if let Some(w) = render_purge_warning(&bucket, description, std::slice::from_ref(&outcome))
        {
            ui::warn(w);
        }
    });
}

/// `--purge-events`: deletes every object version and delete marker under the stack's
/// `deployments/` event store (which otherwise survives a destroy by design). Fail-soft: a
/// failure is a warning naming the prefix and the two version grants.
pub(super) async fn purge_events(backend: &S3Backend, stack: &str, region: &str) {
    let store = crate::state::events_read::StoreAccess {
        client: backend.client(),
        bucket: backend.bucket(),
        keys: backend.keys(),
    };
    let prefix = backend.keys().deployments_prefix(stack, region);
    match crate::state::events_read::purge_prefix(&store, stack, region).await {
        Ok(0) => {}
        Ok(removed) => ui::info(format!(
            "  purged the deployment event store s3://{}/{prefix} ({removed} version(s))",
            backend.bucket()
        )),
        Err(why) => ui::warn(crate::state::events_read::purge_prefix_warning(
            backend.bucket(),
            &prefix,
            &why,
        )),
    }
}
