//! One stack's scrub outcome, the lines it prints and its `--json` form: what was scrubbed,
//! what was found and what was not examined. The exit code rule lives in [`exit_code`]: 2 when
//! any stack could not finish (a refusal or a failure, with or without `--fail`, also under
//! `--dry-run`), else 1 under `--fail` when findings remain, else 0.

use serde_json::{json, Value};

use super::rewrite::Rewrite;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verdict {
    /// Not examined (yet), or stopped before a verdict.
    #[default]
    NotExamined,
    /// The stack has no state record.
    NoRecord,
    /// Nothing the run knows is in the record.
    Clean,
    /// A real run rewrote the record.
    Scrubbed,
    /// `--dry-run`: a real run would rewrite the record.
    WouldScrub,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Verdict::NotExamined => "notExamined",
            Verdict::NoRecord => "noRecord",
            Verdict::Clean => "clean",
            Verdict::Scrubbed => "scrubbed",
            Verdict::WouldScrub => "wouldScrub",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct StackOutcome {
    pub stack: String,
    pub region: String,
    pub verdict: Verdict,
    pub dry_run: bool,
    pub rewrite: Rewrite,
    /// Secret references whose value could not be fetched: plaintext behind them is unknown.
    pub unresolved: Vec<String>,
    /// Properties / outputs whose scan stopped at a reference it could not resolve.
    pub abandoned: Vec<String>,
    /// Findings other passes report (exports index, nested parents, cross-stack reads).
    pub findings: Vec<String>,
    /// What was not examined and is not counted (a property that does not resolve here).
    pub not_examined: Vec<String>,
    /// Plain warnings (placeholders scrub cannot bind).
    pub warnings: Vec<String>,
    /// Refusals (a record or template scrub cannot read): exit 2.
    pub refusals: Vec<String>,
    /// Failures (lock, save, purge, unverified readers): exit 2.
    pub failures: Vec<String>,
    pub versions_purged: usize,
    /// The passes across stacks (exports index, nested children).
    pub across: super::across::AcrossReport,
}

impl StackOutcome {
    pub fn new(stack: &str, region: &str) -> Self {
        StackOutcome {
            stack: stack.to_owned(),
            region: region.to_owned(),
            ..StackOutcome::default()
        }
    }

    pub fn refuse(&mut self, message: String) {
        self.refusals.push(message);
    }

    pub fn fail(&mut self, message: String) {
        self.failures.push(message);
    }

    pub fn is_refused(&self) -> bool {
        !self.refusals.is_empty()
    }

    /// Could not finish: exit 2.
    pub fn unfinished(&self) -> bool {
        !self.refusals.is_empty() || !self.failures.is_empty() || self.across.unfinished()
    }

    /// Every finding line a real run cannot clear by itself (and a dry run's would-be
    /// rewrites are counted through the verdict).
    pub fn finding_lines(&self) -> Vec<String> {
        let rw = &self.rewrite;
        let mut out = Vec::new();
        for u in &self.unresolved {
            out.push(format!(
                "{u} could not be resolved, so a plaintext of it cannot be looked for"
            ));
        }
        out.extend(self.abandoned.iter().cloned());
        out.extend(rw.key_findings.iter().cloned());
        for k in &rw.kept_read_outputs {
            out.push(format!(
                "output key {k} is no longer declared and is kept because another stack reads \
                 it (or its readers could not be verified); stop the read and deploy, then \
                 re-run"
            ));
        }
        for k in &rw.kept_alias_outputs {
            out.push(format!(
                "output key {k} may be a live export alias this run could not reproduce; it \
                 was LEFT as it is (a deploy rewrites the outputs)"
            ));
        }
        out.extend(self.findings.iter().cloned());
        out
    }

    /// Plaintext still in the record (a dry run's would-be rewrites) or not ruled out.
    pub fn findings_remain(&self) -> bool {
        self.verdict == Verdict::WouldScrub
            || !self.finding_lines().is_empty()
            || self.across.findings_remain()
    }

    /// This outcome and its nested children's, parents first.
    pub fn flattened(&self) -> Vec<&StackOutcome> {
        let mut out = vec![self];
        for c in &self.across.children {
            out.extend(c.flattened());
        }
        out
    }

    /// The per-stack lines: warnings first, then the summary.
    pub fn lines(&self) -> (Vec<String>, String) {
        let name = format!("{} ({})", self.stack, self.region);
        let mut warnings = Vec::new();
        for r in self.refusals.iter().chain(&self.failures) {
            warnings.push(format!("{name}: {r}"));
        }
        for f in self.finding_lines() {
            warnings.push(format!("{name}: {f}"));
        }
        for w in self.not_examined.iter().chain(&self.warnings) {
            warnings.push(format!("{name}: {w}"));
        }
        let rw = &self.rewrite;
        let dropped = |verb: &str| {
            if rw.dropped_outputs.is_empty() {
                String::new()
            } else {
                format!(
                    "; {verb} {} output key(s) its template no longer declares: {}",
                    rw.dropped_outputs.len(),
                    rw.dropped_outputs.join(", ")
                )
            }
        };
        let findings = self.finding_lines().len();
        let called_clean = findings == 0 && !self.unfinished() && !self.across.findings_remain();
        let summary = match self.verdict {
            Verdict::NoRecord => format!("{name}: no state record; not examined"),
            Verdict::NotExamined => format!("{name}: not examined"),
            Verdict::Clean if called_clean => format!("{name}: No plaintext secrets found"),
            Verdict::Clean => {
                format!("{name}: nothing to rewrite, but not called clean: {findings} finding(s)")
            }
            Verdict::Scrubbed => format!(
                "{name}: scrubbed {} value(s){}; purged {} earlier version(s){}",
                rw.leaves,
                dropped("dropped"),
                self.versions_purged,
                if findings > 0 {
                    format!("; {findings} finding(s) remain")
                } else {
                    String::new()
                }
            ),
            Verdict::WouldScrub => format!(
                "{name}: found {} plaintext value(s){}; a real run would rewrite them \
                 (--dry-run wrote nothing){}",
                rw.leaves,
                dropped("would drop"),
                if findings > 0 {
                    format!("; {findings} other finding(s)")
                } else {
                    String::new()
                }
            ),
        };
        (
            warnings,
            format!("{summary}{}", self.across.summary_suffix()),
        )
    }

    /// The stack's entry in `cdkd scrub --json`.
    pub fn to_json(&self) -> Value {
        let rw = &self.rewrite;
        json!({
            "stackName": self.stack,
            "region": self.region,
            "verdict": self.verdict.as_str(),
            "dryRun": self.dry_run,
            "clean": !self.findings_remain() && !self.unfinished()
                && matches!(self.verdict, Verdict::Clean | Verdict::Scrubbed),
            "scrubbedValues": rw.leaves,
            "droppedOutputs": rw.dropped_outputs,
            "findings": self.finding_lines(),
            "notExamined": self.not_examined,
            "warnings": self.warnings,
            "refusals": self.refusals,
            "failures": self.failures,
            "versionsPurged": self.versions_purged,
            "exportsIndexConverged": self.across.index_converged,
            "nestedOutputAttributesScrubbed": self.across.nested_outputs_scrubbed,
            "children": self.across.children.iter().map(StackOutcome::to_json).collect::<Vec<_>>(),
        })
    }
}

/// The run's exit code (0 clean, 1 findings under `--fail`, 2 could not finish).
pub fn exit_code(outcomes: &[StackOutcome], fail: bool) -> u8 {
    if outcomes.iter().any(StackOutcome::unfinished) {
        2
    } else if fail && outcomes.iter().any(StackOutcome::findings_remain) {
        1
    } else {
        0
    }
}

/// The whole `--json` document.
pub fn json_document(outcomes: &[StackOutcome], fail: bool) -> Value {
    json!({
        "exitCode": exit_code(outcomes, fail),
        "stacks": outcomes.iter().map(StackOutcome::to_json).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_rank_unfinished_above_findings() {
        let mut found = StackOutcome::new("A", "r");
        found.verdict = Verdict::WouldScrub;
        let clean = StackOutcome {
            verdict: Verdict::Clean,
            ..StackOutcome::new("B", "r")
        };
        assert_eq!(exit_code(&[found.clone(), clean.clone()], true), 1);
        assert_eq!(exit_code(&[found.clone()], false), 0);
        assert_eq!(exit_code(std::slice::from_ref(&clean), true), 0);
        let mut refused = StackOutcome::new("C", "r");
        refused.refuse("damaged".into());
        assert_eq!(exit_code(&[found, refused.clone()], true), 2);
        assert_eq!(exit_code(&[refused], false), 2);
        let mut key = clean.clone();
        key.rewrite.key_findings.push("k".into());
        assert_eq!(exit_code(&[key.clone()], true), 1);
        assert!(key.lines().1.contains("not called clean"));
        assert_eq!(json_document(&[key], true)["stacks"][0]["clean"], false);
    }
}
