//! One stack's scrub outcome and the summary line it prints: what was scrubbed, what was
//! found and what was not examined. The exit code rule lives in [`exit_code`]: 2 when any
//! stack could not finish (a refusal or a failure, with or without `--fail`, also under
//! `--dry-run`), else 1 under `--fail` when findings remain, else 0.

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

#[derive(Debug, Clone, Default)]
pub struct StackOutcome {
    pub stack: String,
    pub region: String,
    pub verdict: Verdict,
    pub rewrite: Rewrite,
    /// Secret references whose value could not be fetched: plaintext behind them is unknown.
    pub unresolved: Vec<String>,
    /// Refusals (a record scrub cannot read): exit 2.
    pub refusals: Vec<String>,
    /// Failures (lock, save, purge): exit 2.
    pub failures: Vec<String>,
    pub versions_purged: usize,
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
        !self.refusals.is_empty() || !self.failures.is_empty()
    }

    /// Plaintext still in the record (a dry run's would-be rewrites) or not ruled out.
    pub fn findings_remain(&self) -> bool {
        self.verdict == Verdict::WouldScrub || !self.unresolved.is_empty()
    }

    /// The per-stack lines: warnings first, then the summary.
    pub fn lines(&self) -> (Vec<String>, String) {
        let name = format!("{} ({})", self.stack, self.region);
        let mut warnings = Vec::new();
        for r in &self.refusals {
            warnings.push(format!("{name}: {r}"));
        }
        for f in &self.failures {
            warnings.push(format!("{name}: {f}"));
        }
        for u in &self.unresolved {
            warnings.push(format!(
                "{name}: {u} could not be resolved, so a plaintext of it cannot be looked for; \
                 the stack is not called clean"
            ));
        }
        for k in &self.rewrite.kept_read_outputs {
            warnings.push(format!(
                "{name}: output {k} is no longer declared and held a secret; it is kept \
                 (redacted) because another stack reads it"
            ));
        }
        let rw = &self.rewrite;
        let dropped = if rw.dropped_outputs.is_empty() {
            String::new()
        } else {
            format!(
                ", dropped undeclared output(s) {}",
                rw.dropped_outputs.join(", ")
            )
        };
        let summary = match self.verdict {
            Verdict::NoRecord => format!("{name}: no state record; not examined"),
            Verdict::NotExamined => format!("{name}: not examined"),
            Verdict::Clean if self.unresolved.is_empty() && !self.unfinished() => {
                format!("{name}: no plaintext secrets found")
            }
            Verdict::Clean => format!("{name}: no known plaintext found, but not called clean"),
            Verdict::Scrubbed => format!(
                "{name}: scrubbed {} value(s){dropped}; purged {} earlier version(s)",
                rw.leaves, self.versions_purged
            ),
            Verdict::WouldScrub => format!(
                "{name}: found {} plaintext value(s){}; a real run would rewrite them \
                 (--dry-run wrote nothing)",
                rw.found(),
                if rw.dropped_outputs.is_empty() {
                    String::new()
                } else {
                    format!(" (would drop output(s) {})", rw.dropped_outputs.join(", "))
                }
            ),
        };
        (warnings, summary)
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
    }
}
