//! The text of a deploy's results: each stack's summary (counts, elapsed time, outputs, the
//! critical path), the plan a `--dry-run` prints, and the closing line with the totals.

use std::time::Duration;

use serde_json::Value;

use crate::engine::deploy::{StackReport, Tally};
use crate::plan::ChangeSet;

/// A line and whether it is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub error: bool,
    pub text: String,
}

fn info(text: impl Into<String>) -> Line {
    Line {
        error: false,
        text: text.into(),
    }
}

fn error(text: impl Into<String>) -> Line {
    Line {
        error: true,
        text: text.into(),
    }
}

/// Prints lines through `ui` (errors with their prefix).
pub fn print(lines: &[Line]) {
    for l in lines {
        if l.error {
            super::error(&l.text);
        } else {
            super::info(&l.text);
        }
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// The summary of one stack's deploy that took `elapsed`.
pub fn stack_summary(report: &StackReport, elapsed: Duration) -> Vec<Line> {
    let name = &report.stack_name;
    let mut lines = Vec::new();
    if !report.changed {
        lines.push(info(format!(
            "✓ {name}: no changes; nothing was written ({})",
            secs(elapsed)
        )));
        lines.extend(outputs(name, report));
        return lines;
    }
    if report.is_success() {
        lines.push(info(format!(
            "✓ {name}: deployed ({}) in {}",
            report.tally.describe(),
            secs(elapsed)
        )));
        for (id, why) in &report.unaddressed {
            lines.push(error(format!("  {id}: unaddressed: {why}")));
        }
        lines.extend(outputs(name, report));
        lines.extend(report.critical_path.render().into_iter().map(info));
        return lines;
    }
    lines.push(error(format!(
        "{name}: deploy failed ({}) after {}; {}",
        report.tally.describe(),
        secs(elapsed),
        report
            .rollback
            .as_ref()
            .map(|r| r.line.as_str())
            .unwrap_or("what was done is kept in state")
    )));
    if let Some(r) = &report.rollback {
        for (id, message) in &r.rollback_failures {
            lines.push(error(format!("  {id}: not rolled back: {message}")));
        }
    }
    for (id, message) in &report.failures {
        lines.push(error(format!("  {id}: {message}")));
    }
    for (id, why) in &report.unaddressed {
        lines.push(error(format!("  {id}: unaddressed: {why}")));
    }
    if !report.cancelled.is_empty() {
        lines.push(error(format!(
            "  interrupted before starting: {}",
            report.cancelled.join(", ")
        )));
    }
    lines.extend(report.critical_path.render().into_iter().map(info));
    lines
}

fn outputs(name: &str, report: &StackReport) -> Vec<Line> {
    if report.outputs.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![info("Outputs:")];
    for (key, value) in &report.outputs {
        let shown = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        lines.push(info(format!("  {name}.{key} = {shown}")));
    }
    lines
}

/// What `--dry-run` prints for a stack: its plan, one line per resource that would change.
pub fn dry_run(stack: &str, region: &str, describe: &str, changes: &ChangeSet) -> Vec<Line> {
    let mut lines = vec![info(format!("{stack} ({region}): {describe}"))];
    lines.extend(
        super::prompt::describe(crate::cli::RequireApproval::AnyChange, changes)
            .into_iter()
            .map(info),
    );
    lines
}

/// How each stack ended, for the closing line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StackCounts {
    pub deployed: usize,
    pub unchanged: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// `Deploy finished in 3.4 s: 2 stacks deployed, 1 unchanged; resources: 5 created, 2
/// unchanged`. The first count names its noun (stacks), the resources come after their own
/// label, so a stack count never reads as a resource count.
pub fn closing(counts: StackCounts, tally: &Tally, elapsed: Duration) -> Line {
    let plural = |n: usize| if n == 1 { "stack" } else { "stacks" };
    let parts: Vec<String> = [
        (counts.deployed, "deployed"),
        (counts.unchanged, "unchanged"),
        (counts.failed, "failed"),
        (counts.skipped, "skipped"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .enumerate()
    .map(|(i, (n, what))| match i {
        0 => format!("{n} {} {what}", plural(*n)),
        _ => format!("{n} {what}"),
    })
    .collect();
    let stacks = if parts.is_empty() {
        "no stacks".to_owned()
    } else {
        parts.join(", ")
    };
    let text = format!(
        "Deploy finished in {}: {stacks}; resources: {}",
        secs(elapsed),
        tally.describe()
    );
    if counts.failed + counts.skipped > 0 {
        error(text)
    } else {
        info(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closing_line() {
        let mut t = Tally::default();
        t.created = 2;
        let line = closing(
            StackCounts {
                deployed: 1,
                unchanged: 1,
                ..StackCounts::default()
            },
            &t,
            Duration::from_millis(3400),
        );
        assert_eq!(
            line.text,
            "Deploy finished in 3.4 s: 1 stack deployed, 1 unchanged; resources: 2 created"
        );
        assert!(!line.error);
        t.created = 0;
        t.unchanged = 8;
        let line = closing(
            StackCounts {
                unchanged: 1,
                ..StackCounts::default()
            },
            &t,
            Duration::from_millis(3400),
        );
        assert_eq!(
            line.text,
            "Deploy finished in 3.4 s: 1 stack unchanged; resources: 8 unchanged"
        );
    }
}
