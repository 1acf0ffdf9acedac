//! One stack's main pass: the by-position pass ([`position`]) first, then the by-value pass
//! and the output key rules ([`rewrite`]), with the readers of every key the rules could drop
//! checked across all records first ([`readers`]).

use std::collections::BTreeSet;

use super::learn::Learned;
use super::nested::Handed;
use super::position::{position_pass, PositionInput};
use super::rewrite::{rewrite, OutputRules, Rewrite};
use super::{readers, ScrubEnv, ScrubTarget, StackOutcome};
use crate::state::StackState;

/// Rewrites `state` in place; returns `learned` with what the positions taught added to its
/// needles, and what changed. Refusals, failures, findings and warnings go to `outcome`.
pub async fn run(
    env: &ScrubEnv,
    target: &ScrubTarget<'_>,
    state: &mut StackState,
    mut learned: Learned,
    handed: &Handed,
    outcome: &mut StackOutcome,
) -> (Learned, Rewrite) {
    let (stack, region) = (target.stack_name, target.region);
    let account_id = env.reader.clients().account_id().await.ok();
    let input = PositionInput {
        reader: env.reader.clone(),
        stack,
        region,
        account_id,
        template: target.template,
        handed,
    };
    let positioned = match position_pass(&input, state).await {
        Ok(p) => Some(p),
        Err(e) => {
            outcome.refuse(format!(
                "the template cannot be resolved: {} (nothing was written; fix the template \
                 and re-run cdkd scrub)",
                learned.needles.mask_text(&e)
            ));
            None
        }
    };
    let mut named = BTreeSet::new();
    let (mut all_exports_resolved, mut export_names) = (true, Vec::new());
    let mut position_leaves = 0;
    if let Some(p) = positioned {
        learned.needles.merge(&p.needles);
        position_leaves = p.leaves;
        named = p.named_outputs;
        all_exports_resolved = p.all_exports_resolved;
        export_names = p.export_names;
        outcome.across.nested_params = p.nested_params;
        outcome.across.no_echo_params = p.no_echo_params;
        let mask = |v: Vec<String>| -> Vec<String> {
            v.iter().map(|l| learned.needles.mask_text(l)).collect()
        };
        // A reference both halves report is named once, by the property it stopped.
        outcome
            .unresolved
            .retain(|u| !p.abandoned.iter().any(|a| a.contains(u.as_str())));
        outcome.abandoned.extend(mask(p.abandoned));
        outcome.not_examined.extend(mask(p.not_examined));
        outcome.warnings.extend(mask(p.warnings));
    } else {
        // Without the template's names every stored key is kept.
        if let Some(o) = state.outputs.as_ref() {
            named = o.keys().cloned().collect();
        }
    }

    let run_has_secret = !learned.needles.is_empty() || handed.carries_secret();
    let candidates = state
        .outputs
        .as_ref()
        .is_some_and(|o| o.keys().any(|k| !named.contains(k)));
    let mut readers_unverified = false;
    let read_elsewhere = if candidates && run_has_secret {
        match readers::output_keys_read_elsewhere(&env.backend, stack, region).await {
            Ok(read) => read,
            Err(e) => {
                readers_unverified = true;
                outcome.fail(format!(
                    "SCRUB_DROPPED_OUTPUT_READERS_UNVERIFIED: {e}; no output key was dropped \
                     (the rest of the record was scrubbed); fix the read and re-run"
                ));
                BTreeSet::new()
            }
        }
    } else {
        BTreeSet::new()
    };
    let rules = OutputRules {
        named: &named,
        read_elsewhere: &read_elsewhere,
        readers_unverified,
        run_has_secret,
        all_exports_resolved,
        export_names: &export_names,
    };
    let mut change = rewrite(state, &learned.needles, &rules);
    change.leaves += position_leaves;
    (learned, change)
}
