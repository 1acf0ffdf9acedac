//! What a deploy tells the user: one line per finished resource on stderr, and a summary.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::provider::Route;

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
}

impl Done {
    pub fn new(logical_id: &str, resource_type: &str, route: Route) -> Self {
        Done {
            logical_id: logical_id.to_owned(),
            resource_type: resource_type.to_owned(),
            route,
            action: Action::Unchanged,
            elapsed: Duration::ZERO,
        }
    }

    pub fn with(mut self, action: Action, started: Instant) -> Self {
        self.action = action;
        self.elapsed = started.elapsed();
        self
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
