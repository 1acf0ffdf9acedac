//! What a deploy tells the user: one line per finished resource on stderr, and a summary;
//! and what it measures: each operation's start and end, from which the critical path of the
//! run (the chain of resources that bounded its wall time) is computed.

use std::fmt::Write as _;
use std::future::Future;
use std::time::{Duration, Instant};

use crate::aws::trace;
use crate::plan::{DependencyGraph, Direction};
use crate::provider::Route;
use crate::ui;
use crate::ui::progress::Progress;

/// What happened to one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Created,
    Updated,
    /// A new resource was created; the old one is deleted after the walk.
    Replaced,
    /// A new resource was created; `UpdateReplacePolicy` keeps the old one.
    ReplacedRetained,
    Unchanged,
    Deleted,
    /// Its record was dropped; `DeletionPolicy` keeps the AWS resource.
    Retained,
    /// The old resource of a replacement was deleted.
    OldDeleted,
    Failed,
}

impl Action {
    fn verb(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Updated => "updated",
            Action::Replaced => "replaced",
            Action::ReplacedRetained => "replaced (old resource retained)",
            Action::Unchanged => "unchanged",
            Action::Deleted => "deleted",
            Action::Retained => "removed from state (retained in AWS)",
            Action::OldDeleted => "old resource deleted",
            Action::Failed => "failed",
        }
    }
}

/// One finished resource operation.
#[derive(Debug, Clone)]
pub struct Done {
    pub logical_id: String,
    pub resource_type: String,
    pub route: Route,
    pub action: Action,
    pub elapsed: Duration,
    /// When the operation started and ended (`None` until [`Done::with`]).
    pub started: Option<Instant>,
    pub finished: Option<Instant>,
}

impl Done {
    pub fn new(logical_id: &str, resource_type: &str, route: Route) -> Self {
        Done {
            logical_id: logical_id.to_owned(),
            resource_type: resource_type.to_owned(),
            route,
            action: Action::Unchanged,
            elapsed: Duration::ZERO,
            started: None,
            finished: None,
        }
    }

    pub fn with(mut self, action: Action, started: Instant) -> Self {
        let now = Instant::now();
        self.action = action;
        self.elapsed = now.saturating_duration_since(started);
        self.started = Some(started);
        self.finished = Some(now);
        self
    }

    /// Whether it made (or tried to make) an AWS change, as opposed to a no-change verdict.
    pub fn did_work(&self) -> bool {
        self.action != Action::Unchanged
    }

    /// `  ✓ Queue4A7E3555 AWS::SQS::Queue created (sdk, 0.4 s)`; a failure adds its error.
    pub fn line(&self, error: Option<&str>) -> String {
        let mark = if self.action == Action::Failed {
            '✗'
        } else {
            '✓'
        };
        let mut s = format!(
            "  {mark} {} {} {} ({}, {:.1} s)",
            self.logical_id,
            self.resource_type,
            self.action.verb(),
            self.route.as_str(),
            self.elapsed.as_secs_f64()
        );
        if let Some(e) = error {
            let _ = write!(s, ": {e}");
        }
        s
    }
}

/// Counts of what a stack's deploy did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub created: usize,
    pub updated: usize,
    pub replaced: usize,
    pub deleted: usize,
    pub unchanged: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Tally {
    pub fn add(&mut self, action: Action) {
        match action {
            Action::Created => self.created += 1,
            Action::Updated => self.updated += 1,
            Action::Replaced | Action::ReplacedRetained => self.replaced += 1,
            Action::Deleted | Action::Retained => self.deleted += 1,
            Action::Unchanged => self.unchanged += 1,
            Action::Failed => self.failed += 1,
            Action::OldDeleted => {}
        }
    }

    /// `2 created, 1 updated, 3 unchanged`, leaving out the zeros.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = [
            (self.created, "created"),
            (self.updated, "updated"),
            (self.replaced, "replaced"),
            (self.deleted, "deleted"),
            (self.unchanged, "unchanged"),
            (self.failed, "failed"),
            (self.skipped, "skipped"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if parts.is_empty() {
            "nothing to do".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

/// One resource of the critical path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainLink {
    pub logical_id: String,
    pub resource_type: String,
    pub action: Action,
    pub duration: Duration,
}

/// The chain of resources, along dependency edges, whose operations took the longest in
/// total: nothing in the run could have finished sooner than it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CriticalChain {
    pub links: Vec<ChainLink>,
    pub total: Duration,
}

impl CriticalChain {
    /// The longest chain over `graph`, weighting each resource with the actual duration of
    /// its operation in this run (no-change verdicts and resources not run weigh nothing).
    pub fn of(graph: &DependencyGraph, done: &[Done]) -> CriticalChain {
        let timed = |id: &str| {
            done.iter()
                .find(|d| d.logical_id == id && d.did_work())
                .map(|d| d.elapsed)
        };
        let path = graph.critical_path(Direction::Deploy, |id| timed(id).unwrap_or(Duration::ZERO));
        let links: Vec<ChainLink> = path
            .ids
            .iter()
            .filter_map(|id| {
                let d = done.iter().find(|d| &d.logical_id == id && d.did_work())?;
                Some(ChainLink {
                    logical_id: id.clone(),
                    resource_type: d.resource_type.clone(),
                    action: d.action,
                    duration: d.elapsed,
                })
            })
            .collect();
        let total = links.iter().map(|l| l.duration).sum();
        CriticalChain { links, total }
    }

    /// `Critical path: 3 resources, 1.2 s` and one indented line per link.
    pub fn render(&self) -> Vec<String> {
        if self.links.is_empty() {
            return Vec::new();
        }
        let width = self
            .links
            .iter()
            .map(|l| l.logical_id.chars().count())
            .max()
            .unwrap_or(0);
        let mut lines = vec![format!(
            "Critical path: {} resource{}, {:.1} s",
            self.links.len(),
            if self.links.len() == 1 { "" } else { "s" },
            self.total.as_secs_f64()
        )];
        for (i, l) in self.links.iter().enumerate() {
            let arrow = if i == 0 { "  " } else { "→ " };
            lines.push(format!(
                "  {arrow}{:<width$}  {} {} {:.1} s",
                l.logical_id,
                l.resource_type,
                l.action.verb(),
                l.duration.as_secs_f64()
            ));
        }
        lines
    }
}

/// Asked once a stack's plan is known and before anything changes (`--require-approval`).
pub trait Approve: Send + Sync {
    /// `Err(why)` refuses the stack; nothing has changed at that point.
    fn approve(&self, stack: &str, changes: &crate::plan::ChangeSet) -> Result<(), String>;
}

/// Runs one resource operation of `stack`: tells `progress` it started and how it ended
/// (or prints the line itself when there is no sink), and attributes the AWS calls it makes
/// to it in the trace (CDKD_TRACE_FILE).
pub async fn observe<F>(
    stack: &str,
    id: &str,
    dependencies: &[String],
    progress: Option<&Progress>,
    operation: F,
) -> Result<Done, (Done, String)>
where
    F: Future<Output = Result<Done, (Done, String)>>,
{
    if let Some(p) = progress {
        p.started(stack, id);
    }
    let result = trace::scoped(stack, id, operation).await;
    let (done, error) = match &result {
        Ok(done) => (done, None),
        Err((done, e)) => (done, Some(e.as_str())),
    };
    match progress {
        Some(p) => p.finished(stack, done, error),
        None if done.did_work() => ui::info(done.line(error)),
        None => {}
    }
    trace::resource(stack, done, dependencies);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_tallies() {
        let mut d = Done::new("Queue4A7E3555", "AWS::SQS::Queue", Route::Sdk);
        d.action = Action::Created;
        d.elapsed = Duration::from_millis(420);
        assert_eq!(
            d.line(None),
            "  ✓ Queue4A7E3555 AWS::SQS::Queue created (sdk, 0.4 s)"
        );
        d.action = Action::Failed;
        assert!(d.line(Some("boom")).ends_with("failed (sdk, 0.4 s): boom"));
        let mut t = Tally::default();
        t.add(Action::Created);
        t.add(Action::Unchanged);
        t.skipped = 2;
        assert_eq!(t.describe(), "1 created, 1 unchanged, 2 skipped");
    }
}
