//! The exports index pass (scrub spec, "The exports index pass"): after a stack's record is
//! scrubbed, each entry of `{prefix}/_index/{region}/exports.json` the stack owns is
//! converged onto the value `state.outputs` holds under the same name, when that value
//! carries a `{{resolve:` reference or the `***` mask and the entry differs. The comparison is
//! against the record, never against the plaintext the run resolved (a rotated secret would
//! otherwise read as a difference forever).
//!
//! No entry is added or removed. An owned entry whose name `state.outputs` no longer holds is
//! reported (a finding when it still holds a secret this run recorded), an entry of a
//! producer this run does not scrub is coverage only. `--dry-run` reads and reports: each
//! divergent entry is a finding. A real run that could not write an entry fails with
//! SCRUB_EXPORT_INDEX_INCOMPLETE (exit 2), and purges the index's noncurrent versions after
//! any write it attempted (warning, never failing, when the version grants are missing).

use serde_json::Value;

use super::report::StackOutcome;
use super::{ScrubEnv, ScrubOptions, ScrubTarget};
use crate::redact::Needles;
use crate::resolve::external::{holds_mask, holds_reference};
use crate::state::exports::{ExportIndex, ExportIndexStore, IndexPeek, IndexWriteStatus};
use crate::state::{purge_noncurrent_versions, StackState};

/// Runs the pass for `target`'s region.
pub async fn index_pass(
    env: &ScrubEnv,
    target: &ScrubTarget<'_>,
    options: ScrubOptions,
    state: &StackState,
    outcome: &mut StackOutcome,
) {
    let (stack, region) = (target.stack_name, target.region);
    let backend = &env.backend;
    let store = ExportIndexStore::new(
        backend.client().clone(),
        backend.bucket(),
        backend.keys().clone(),
    );
    let key = backend.keys().export_index(region);
    let index = match store.peek(region).await {
        Ok(IndexPeek::Valid(index)) => index,
        Ok(IndexPeek::Absent) => return,
        Ok(IndexPeek::Corrupt(why)) => {
            outcome.warnings.push(format!(
                "the exports index of {region} is corrupt ({why}), so its entries were not \
                 examined; the next cdkd deploy in the region rebuilds it from the state records"
            ));
            return;
        }
        Err(e) => {
            outcome.fail(format!(
                "SCRUB_EXPORT_INDEX_INCOMPLETE: the exports index of {region} could not be \
                 read ({e}), so this stack's entries in it were not examined; re-run cdkd \
                 scrub once the cause is cleared"
            ));
            return;
        }
    };
    let needles = outcome.across.needles.clone();
    report_coverage(env, region, &index, outcome);

    let outputs = state.outputs.clone().unwrap_or_default();
    let mut divergent: Vec<(String, Value)> = Vec::new();
    for (name, entry) in &index.exports {
        if !entry.is_from(stack, region) {
            continue;
        }
        match outputs.get(name) {
            Some(v) if (holds_reference(v) || holds_mask(v)) && *v != entry.value => {
                divergent.push((name.clone(), v.clone()));
            }
            Some(_) => {}
            None => {
                let shown = entry_name(name, &needles);
                if needles.redact_value(&entry.value) != entry.value {
                    outcome.findings.push(format!(
                        "exports index entry {shown} ({region}) still holds a secret this run \
                         recorded, and state.outputs no longer holds that name, so there is no \
                         value to converge it to; redeploy {stack}, which rewrites the index \
                         from its own outputs"
                    ));
                } else {
                    outcome.warnings.push(format!(
                        "exports index entry {shown} ({region}) names no key of state.outputs; \
                         it keeps what it holds until {stack} is redeployed"
                    ));
                }
            }
        }
    }

    if divergent.is_empty() {
        if options.purge_history && !options.dry_run {
            purge(env, &key, outcome).await;
        }
        return;
    }
    let names: Vec<String> = divergent
        .iter()
        .map(|(n, _)| format!("{} ({region})", entry_name(n, &needles)))
        .collect();
    if options.dry_run {
        outcome.findings.push(format!(
            "exports index entr{} {} differ{} from state.outputs; a real run converges {} \
             (--dry-run wrote nothing)",
            if names.len() == 1 { "y" } else { "ies" },
            names.join(", "),
            if names.len() == 1 { "s" } else { "" },
            if names.len() == 1 { "it" } else { "them" },
        ));
        return;
    }
    let report = store.converge_stack(region, stack, divergent).await;
    match report.status {
        IndexWriteStatus::Written { .. } | IndexWriteStatus::Unchanged => {
            outcome.across.index_converged.extend(names);
        }
        IndexWriteStatus::Failed | IndexWriteStatus::RetriesExhausted => {
            let why = report
                .warnings
                .last()
                .cloned()
                .unwrap_or_else(|| "the write did not land".to_owned());
            outcome.fail(format!(
                "SCRUB_EXPORT_INDEX_INCOMPLETE: exports index entr{} {} kept the value{} \
                 {} held: {why}. Re-run the same cdkd scrub once the cause is cleared; an entry \
                 already matching state.outputs is left alone",
                if names.len() == 1 { "y" } else { "ies" },
                names.join(", "),
                if names.len() == 1 { "" } else { "s" },
                if names.len() == 1 { "it" } else { "they" },
            ));
        }
    }
    // Purged after any write attempted, failed or not: its history has no recovery value.
    purge(env, &key, outcome).await;
}

/// Entries of producers this run does not scrub: coverage, reported once per region.
fn report_coverage(env: &ScrubEnv, region: &str, index: &ExportIndex, out: &mut StackOutcome) {
    let mut foreign: Vec<String> = index
        .exports
        .values()
        .filter(|e| e.producer_region == region && !env.run.is_target(&e.producer_stack, region))
        .map(|e| e.producer_stack.clone())
        .collect();
    foreign.sort();
    foreign.dedup();
    if foreign.is_empty() || !env.run.first_coverage(region) {
        return;
    }
    out.warnings.push(format!(
        "coverage: the exports index of {region} also holds entries of {} stack(s) this run \
         does not scrub ({}); each app clears its own entries with its own cdkd scrub",
        foreign.len(),
        foreign.join(", ")
    ));
}

async fn purge(env: &ScrubEnv, key: &str, outcome: &mut StackOutcome) {
    let purged = purge_noncurrent_versions(env.backend.client(), env.backend.bucket(), key).await;
    outcome.across.index_versions_purged += purged.versions_deleted;
    if let Some(f) = purged.failure_description() {
        outcome.warnings.push(format!(
            "purging the earlier versions of {f} failed, so they may still hold plaintext; \
             grant s3:ListBucketVersions and s3:DeleteObjectVersion and re-run, or delete them \
             by hand"
        ));
    }
}

/// An entry's name as printed: withheld when it holds a secret this run recorded or any
/// character outside printable ASCII.
pub fn entry_name(name: &str, needles: &Needles) -> String {
    let printable = name.chars().all(|c| (' '..='~').contains(&c));
    if !printable || needles.redact_str(name).is_some() {
        "<name withheld>".to_owned()
    } else {
        format!("'{name}'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_holding_a_secret_or_unprintable_characters_are_withheld() {
        let mut n = Needles::default();
        n.add_secret("hunter22", Some("{{resolve:ssm-secure:x}}"));
        assert_eq!(entry_name("VpcId", &n), "'VpcId'");
        assert_eq!(entry_name("pre-hunter22", &n), "<name withheld>");
        assert_eq!(entry_name("Vpc\u{200b}Id", &n), "<name withheld>");
    }
}
