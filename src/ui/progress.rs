//! Live deploy progress on stderr, like `cdk deploy`: one line per finished resource
//! operation, prefixed with its stack; on a terminal, a status line kept at the bottom (a bar
//! with done / total, what is in flight and the elapsed time) and redrawn after every line.
//! In CI (stderr not a terminal, `TERM=dumb` or `CDKD_PROGRESS=plain`) only the lines.
//!
//! Every other message (`ui::info`, `ui::warn`, ...) goes through [`print_line`], so it never
//! tears the status line.

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write as _};
use std::sync::Mutex;
use std::time::Instant;

use crate::engine::deploy::{Action, Done};
use crate::env;

/// The status line currently drawn at the bottom of stderr, if any.
static STATUS: Mutex<Option<String>> = Mutex::new(None);

/// Clears the status line, prints `line` on stderr, and draws the status line again.
pub fn print_line(line: &str) {
    let status = STATUS.lock().unwrap_or_else(|p| p.into_inner());
    let mut err = std::io::stderr().lock();
    if status.is_some() {
        let _ = write!(err, "\r\x1b[2K");
    }
    let _ = writeln!(err, "{line}");
    if let Some(s) = status.as_ref() {
        let _ = write!(err, "{s}");
    }
    let _ = err.flush();
}

fn draw_status(text: Option<String>) {
    let mut status = STATUS.lock().unwrap_or_else(|p| p.into_inner());
    let mut err = std::io::stderr().lock();
    if status.is_some() || text.is_some() {
        let _ = write!(err, "\r\x1b[2K");
    }
    if let Some(t) = &text {
        let _ = write!(err, "{t}");
    }
    let _ = err.flush();
    *status = text;
}

/// Whether a redrawn status line suits stderr: a terminal that is not `dumb`, and
/// `CDKD_PROGRESS` not `plain`.
pub fn bar_suits_stderr() -> bool {
    std::io::stderr().is_terminal()
        && std::env::var(env::TERM).map_or(true, |t| t != "dumb")
        && std::env::var(env::CDKD_PROGRESS).map_or(true, |p| p != "plain")
}

#[derive(Default)]
struct Counts {
    total: usize,
    finished: usize,
    failed: usize,
    running: BTreeSet<(String, String)>,
}

/// The progress of one `cdkd deploy` (every stack it deploys).
pub struct Progress {
    bar: bool,
    began: Instant,
    counts: Mutex<Counts>,
}

impl Progress {
    /// `bar`: draw the status line (see [`bar_suits_stderr`]).
    pub fn new(bar: bool) -> Self {
        Progress {
            bar,
            began: Instant::now(),
            counts: Mutex::new(Counts::default()),
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A stack's walk begins with `resources` operations to decide.
    pub fn add_total(&self, resources: usize) {
        self.counts().total += resources;
        self.redraw();
    }

    pub fn started(&self, stack: &str, id: &str) {
        self.counts()
            .running
            .insert((stack.to_owned(), id.to_owned()));
        self.redraw();
    }

    /// A resource operation ended: its line (unless nothing had to change) and the bar.
    pub fn finished(&self, stack: &str, done: &Done, error: Option<&str>) {
        {
            let mut c = self.counts();
            c.running
                .remove(&(stack.to_owned(), done.logical_id.clone()));
            c.finished += 1;
            if done.action == Action::Failed {
                c.failed += 1;
            }
        }
        if done.did_work() {
            print_line(&format!("{stack} | {}", done.line(error).trim_start()));
        }
        self.redraw();
    }

    /// A step that is not a walk's resource operation (a rollback's) ended: `line`, when
    /// there is one, printed with its stack, and the step counted like an operation.
    pub fn step_finished(&self, stack: &str, id: &str, line: Option<&str>, failed: bool) {
        {
            let mut c = self.counts();
            c.running.remove(&(stack.to_owned(), id.to_owned()));
            c.finished += 1;
            if failed {
                c.failed += 1;
            }
        }
        if let Some(line) = line {
            print_line(&format!("{stack} | {line}"));
        }
        self.redraw();
    }

    /// Resources of `stack` that will not run (a dependency failed, or an interruption).
    pub fn not_run(&self, stack: &str, ids: &[String], why: &str) {
        for id in ids {
            print_line(&format!("{stack} | - {id} {why}"));
        }
        let mut c = self.counts();
        c.finished += ids.len();
    }

    fn status_text(&self) -> String {
        let c = self.counts();
        let width = 24usize;
        let filled = if c.total == 0 {
            0
        } else {
            (c.finished.min(c.total) * width) / c.total
        };
        let mut bar = "=".repeat(filled);
        if filled < width {
            bar.push('>');
            bar.push_str(&" ".repeat(width - filled - 1));
        }
        let running: Vec<&str> = c.running.iter().map(|(_, id)| id.as_str()).collect();
        let mut inflight = running
            .iter()
            .take(3)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if running.len() > 3 {
            inflight.push_str(&format!(" +{}", running.len() - 3));
        }
        let failed = if c.failed > 0 {
            format!(", {} failed", c.failed)
        } else {
            String::new()
        };
        let mut text = format!(
            "[{bar}] {}/{}{failed} {:.0}s",
            c.finished,
            c.total,
            self.began.elapsed().as_secs_f64()
        );
        if !inflight.is_empty() {
            text.push_str(&format!(" | {inflight}"));
        }
        text.chars()
            .take(terminal_width().saturating_sub(1))
            .collect()
    }

    fn redraw(&self) {
        if self.bar {
            draw_status(Some(self.status_text()));
        }
    }

    /// Removes the status line (before the summary).
    pub fn clear(&self) {
        if self.bar {
            draw_status(None);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The terminal's width from `COLUMNS`, else 100.
fn terminal_width() -> usize {
    std::env::var(env::COLUMNS)
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|w: &usize| *w > 20)
        .unwrap_or(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollback_step_is_counted_like_an_operation() {
        let p = Progress::new(false);
        p.add_total(2);
        p.started("S", "A");
        assert!(p.status_text().ends_with("| A"), "{}", p.status_text());
        p.step_finished("S", "A", None, false);
        p.step_finished("S", "B", None, true);
        let text = p.status_text();
        assert!(text.contains("] 2/2, 1 failed "), "{text}");
        assert!(!text.contains("| A"), "{text}");
    }
}
