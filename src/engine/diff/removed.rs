//! `--recursive`: a nested stack its parent's template no longer holds. The parent's deploy
//! deletes the whole child stack, so its preview is the child's record against nothing: every
//! recorded resource a DELETE, every stored output key a REMOVE, and the same for the removed
//! child's own nested stacks, recursively (upstream cdkd shows the same subtree).
//!
//! Nothing is declared or resolved for such a child, so the outputs diff's per-key withholding
//! cannot decide from its own template whether a stored value is legacy secret plaintext: it
//! takes the parent's answer (the nearest live template proving a secret reference), as the
//! spec's outputs diff says, and a stored plain `ssm` expression exonerates the bag as it does
//! for a live stack.

use std::future::Future;
use std::pin::Pin;

use super::outputs::{is_plain_ssm_expression, OutputChange, OutputDiff};
use super::rows::ResourceDiff;
use super::{DiffEnv, DiffError, StackDiff};
use crate::engine::deploy::is_nested;
use crate::plan::{ChangeKind, ChangeReason};
use crate::provider::is_skipped_type;
use crate::redact::Needles;

type Boxed<'a> = Pin<Box<dyn Future<Output = Result<StackDiff, DiffError>> + Send + 'a>>;

/// The subtree of the removed nested stack `stack` (row `logical_id` of its parent).
/// `withhold`: a template above it proves a secret reference.
pub(super) fn removed_subtree<'a>(
    env: &'a DiffEnv,
    stack: String,
    region: String,
    logical_id: String,
    withhold: bool,
    needles: &'a Needles,
) -> Boxed<'a> {
    Box::pin(async move {
        let mut diff = StackDiff {
            stack_name: stack.clone(),
            region: region.clone(),
            parent_logical_id: Some(logical_id),
            ..StackDiff::default()
        };
        let loaded = env
            .backend
            .load_for_reading(&stack, &region)
            .await
            .map_err(|e| DiffError::State {
                stack: stack.clone(),
                region: region.clone(),
                detail: e.to_string(),
            })?;
        let Some(loaded) = loaded else {
            diff.notes.push(format!(
                "{stack}: the removed nested stack has no record; nothing to delete there"
            ));
            return Ok(diff);
        };
        let state = loaded.parsed.state;
        for (id, rec) in &state.resources {
            if is_skipped_type(&rec.resource_type) {
                continue;
            }
            diff.resources.push(ResourceDiff {
                logical_id: id.clone(),
                resource_type: rec.resource_type.clone(),
                change: ChangeKind::Delete,
                route: None,
                old_type: None,
                reasons: vec![ChangeReason::Removed],
                properties: Vec::new(),
            });
        }
        let stored = state.outputs.clone().unwrap_or_default();
        let exonerated = stored.values().any(is_plain_ssm_expression);
        let withheld = withhold && !exonerated;
        let exports: Vec<&str> = state.export_names().unwrap_or_default();
        for (key, old) in &stored {
            diff.outputs.push(OutputDiff {
                key: key.clone(),
                export: exports.contains(&key.as_str()),
                change: OutputChange::Remove,
                old: (!withheld).then(|| needles.redact_value(old)),
                new: None,
                old_withheld: withheld,
            });
        }
        for (id, rec) in &state.resources {
            if !is_nested(&rec.resource_type) {
                continue;
            }
            let child = format!("{stack}~{id}");
            let sub = removed_subtree(env, child, region.clone(), id.clone(), withhold, needles);
            diff.nested.push(sub.await?);
        }
        Ok(diff)
    })
}
