//! `cdkd scrub`: repairing state records an older cdkd wrote with plaintext secrets.
//!
//! Per stack, under its lock (no lock under `--dry-run`, which writes nothing): learn the
//! secrets the run can know ([`learn`]), rewrite the record ([`rewrite`]), save it with
//! If-Match, then purge the noncurrent versions of the key it rewrote (`--purge-history`:
//! of every record examined and not refused). A record scrub cannot read is refused (exit 2)
//! rather than laundered; under `--dry-run` the readable half is audited and the run still
//! exits 2. See the scrub spec for the rules; [`report`] renders the summary.

pub mod across;
pub mod conditions;
pub mod cross;
pub mod exports;
pub mod keys;
pub mod learn;
pub mod main_pass;
pub mod nested;
pub mod position;
pub mod position_paths;
pub mod readers;
pub mod report;
pub mod rewrite;

use std::sync::Arc;

use serde_json::Value;

use crate::resolve::ExternalReader;
use crate::state::backend::{BackendError, S3Backend, SaveCondition};
use crate::state::purge_noncurrent_versions;

pub use report::{StackOutcome, Verdict};
pub use rewrite::Rewrite;

/// What every stack's scrub shares.
pub struct ScrubEnv {
    pub backend: Arc<S3Backend>,
    pub reader: Arc<ExternalReader>,
    /// The app, the targets and what stacks hand each other (`across`).
    pub run: Arc<across::RunContext>,
}

/// One stack to scrub.
pub struct ScrubTarget<'a> {
    pub stack_name: &'a str,
    pub region: &'a str,
    /// The stack's template, raw.
    pub template: &'a Value,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ScrubOptions {
    pub dry_run: bool,
    pub purge_history: bool,
}

/// Scrubs one stack; never fails: every problem is in the outcome.
pub async fn scrub_stack(
    env: &ScrubEnv,
    target: &ScrubTarget<'_>,
    options: ScrubOptions,
) -> StackOutcome {
    let mut outcome = StackOutcome::new(target.stack_name, target.region);
    if options.dry_run {
        scrub_locked(env, target, options, &mut outcome).await;
        across::after_stack(env, target, options, &mut outcome).await;
        return outcome;
    }
    let lock = match env
        .backend
        .lock(target.stack_name, target.region, "scrub")
        .await
    {
        Ok(lock) => lock,
        Err(e) => {
            outcome.fail(format!("could not take the stack lock: {e}"));
            return outcome;
        }
    };
    scrub_locked(env, target, options, &mut outcome).await;
    across::after_stack(env, target, options, &mut outcome).await;
    lock.release_and_warn().await;
    outcome
}

async fn scrub_locked(
    env: &ScrubEnv,
    target: &ScrubTarget<'_>,
    options: ScrubOptions,
    outcome: &mut StackOutcome,
) {
    let (stack, region) = (target.stack_name, target.region);
    outcome.dry_run = options.dry_run;
    let loaded = if options.dry_run {
        env.backend.load_for_reading(stack, region).await
    } else {
        env.backend.load(stack, region).await
    };
    let loaded = match loaded {
        Ok(Some(l)) => l,
        Ok(None) => {
            outcome.verdict = Verdict::NoRecord;
            return;
        }
        Err(BackendError::State(e)) => {
            outcome.refuse(format!(
                "the record cannot be scrubbed: {e} (nothing was written; repair the record, \
                 then re-run cdkd scrub)"
            ));
            return;
        }
        Err(e) => {
            outcome.fail(format!("reading the record failed: {e}"));
            return;
        }
    };
    for defect in &loaded.parsed.defects {
        // Only a lossy (dry-run) read gets here: audit the rest, still exit 2.
        outcome.refuse(format!(
            "the record cannot be scrubbed: {defect}; the damaged part was NOT examined \
             (--dry-run audited the rest)"
        ));
    }
    let original = loaded.parsed.state.clone();
    let raw_record = serde_json::to_value(&original).unwrap_or(Value::Null);
    let handed = env.run.take_inherited(stack, region).unwrap_or_default();
    let mut learned = learn::learn(
        &env.reader,
        region,
        target.template,
        &raw_record,
        &handed.references(),
    )
    .await;
    across::before_main_pass(env, target, &original, &mut learned.needles, outcome).await;
    outcome.unresolved = learned.unresolved.clone();

    let mut state = original.clone();
    let (learned, change) =
        main_pass::run(env, target, &mut state, learned, &handed, outcome).await;
    outcome.rewrite = change.clone();
    across::after_rewrite(&mut state, &learned.needles, outcome);
    let changed = state != original;
    // A save that only records NoEcho positions rewrites no plaintext: not a finding.
    let rewrote = changed && outcome.rewrite.found() > 0;
    if options.dry_run {
        outcome.verdict = if rewrote {
            Verdict::WouldScrub
        } else {
            Verdict::Clean
        };
        return;
    }
    if outcome.is_refused() {
        return;
    }
    let mut purge_keys: Vec<String> = Vec::new();
    if changed {
        let saved = env
            .backend
            .save(
                stack,
                region,
                &state,
                SaveCondition::IfMatch(&loaded.etag),
                loaded.parsed.from_legacy_key,
            )
            .await;
        match saved {
            Ok(_) => {
                outcome.verdict = if rewrote {
                    Verdict::Scrubbed
                } else {
                    Verdict::Clean
                };
                purge_keys.push(env.backend.keys().state(stack, region));
                if loaded.parsed.from_legacy_key {
                    purge_keys.push(loaded.key.clone());
                    if let Ok(Some(_)) = env.backend.get_object(&loaded.key).await {
                        outcome.fail(format!(
                            "SCRUB_LEGACY_STATE_KEY_SURVIVES: the pre-region key {} still holds \
                             the pre-scrub record; delete it by hand",
                            loaded.key
                        ));
                    }
                }
            }
            Err(BackendError::Conflict { .. }) => {
                outcome.fail(
                    "the record changed while it was being scrubbed; nothing was written; \
                     re-run cdkd scrub"
                        .to_string(),
                );
                return;
            }
            Err(e) => {
                // The write may have landed: purge anyway.
                outcome.fail(format!("saving the scrubbed record failed: {e}"));
                purge_keys.push(env.backend.keys().state(stack, region));
                if loaded.parsed.from_legacy_key {
                    if let Ok(Some(_)) = env.backend.get_object(&loaded.key).await {
                        outcome.fail(format!(
                            "SCRUB_LEGACY_STATE_KEY_SURVIVES: the pre-region key {} still holds \
                             the pre-scrub record; delete it by hand",
                            loaded.key
                        ));
                    }
                }
            }
        }
    } else {
        outcome.verdict = Verdict::Clean;
        if options.purge_history {
            purge_keys.push(loaded.key.clone());
        }
    }
    for key in purge_keys {
        let purged =
            purge_noncurrent_versions(env.backend.client(), env.backend.bucket(), &key).await;
        outcome.versions_purged += purged.versions_deleted;
        if let Some(f) = purged.failure_description() {
            outcome.fail(format!(
                "purging the earlier versions of {f} failed: they may still hold plaintext; \
                 delete them by hand"
            ));
        }
    }
}
