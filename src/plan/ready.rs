//! In-degree bookkeeping for the concurrent executor.
//!
//! The executor starts every resource [`ReadyTracker::initial_ready`]
//! returns, and each time one ends reports it: [`complete`] returns the
//! resources that just became ready (all their prerequisites done), and
//! [`fail`] returns the resources that can now never run (everything that
//! waits on the failed one, directly or not), which the executor reports as
//! skipped. Each resource is released at most once.
//!
//! [`complete`]: ReadyTracker::complete
//! [`fail`]: ReadyTracker::fail

use std::collections::HashMap;

use super::graph::DependencyGraph;
use super::Direction;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Some prerequisite is not done yet.
    Waiting,
    /// Released to the executor (or ready from the start).
    Ready,
    Done,
    Failed,
    Skipped,
}

/// Which resources may start, as others finish. Owns its data, so it can
/// outlive the graph it was made from.
#[derive(Debug, Clone)]
pub struct ReadyTracker {
    direction: Direction,
    ids: Vec<String>,
    index: HashMap<String, usize>,
    pending: Vec<usize>,
    waiters: Vec<Vec<usize>>,
    state: Vec<State>,
}

impl DependencyGraph {
    /// A tracker for walking this graph in `direction`.
    pub fn ready_tracker(&self, direction: Direction) -> ReadyTracker {
        ReadyTracker::new(self, direction)
    }
}

impl ReadyTracker {
    pub fn new(graph: &DependencyGraph, direction: Direction) -> Self {
        let n = graph.len();
        let pending: Vec<usize> = (0..n)
            .map(|i| graph.prerequisites(i, direction).len())
            .collect();
        let state = pending
            .iter()
            .map(|&p| if p == 0 { State::Ready } else { State::Waiting })
            .collect();
        ReadyTracker {
            direction,
            ids: (0..n).map(|i| graph.id_at(i).to_string()).collect(),
            index: (0..n).map(|i| (graph.id_at(i).to_string(), i)).collect(),
            waiters: (0..n).map(|i| graph.waiters(i, direction)).collect(),
            pending,
            state,
        }
    }

    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// The resources with no prerequisites, in the graph's tie-break order
    /// for the direction (template order to deploy, reverse to delete).
    pub fn initial_ready(&self) -> Vec<&str> {
        let mut v: Vec<usize> = (0..self.ids.len())
            .filter(|&i| self.pending[i] == 0)
            .collect();
        if self.direction == Direction::Delete {
            v.reverse();
        }
        v.into_iter().map(|i| self.ids[i].as_str()).collect()
    }

    /// Records `id` as done and returns the resources that became ready
    /// because of it. Completing an unknown id, or one already finished
    /// (done, failed or skipped), releases nothing.
    pub fn complete(&mut self, id: &str) -> Vec<String> {
        let Some(i) = self.find_open(id) else {
            return Vec::new();
        };
        self.state[i] = State::Done;
        let mut released = Vec::new();
        for w in self.waiters[i].clone() {
            self.pending[w] = self.pending[w].saturating_sub(1);
            if self.pending[w] == 0 && self.state[w] == State::Waiting {
                self.state[w] = State::Ready;
                released.push(w);
            }
        }
        if self.direction == Direction::Delete {
            released.reverse();
        }
        self.names(released)
    }

    /// Records `id` as failed and returns every resource that waits on it,
    /// directly or not, and had not finished: they are now skipped. Failing
    /// an unknown or finished id skips nothing.
    pub fn fail(&mut self, id: &str) -> Vec<String> {
        let Some(i) = self.find_open(id) else {
            return Vec::new();
        };
        self.state[i] = State::Failed;
        let mut skipped = Vec::new();
        let mut todo = self.waiters[i].clone();
        while let Some(w) = todo.pop() {
            if matches!(self.state[w], State::Waiting | State::Ready) {
                self.state[w] = State::Skipped;
                skipped.push(w);
                todo.extend(self.waiters[w].iter().copied());
            }
        }
        skipped.sort_unstable();
        self.names(skipped)
    }

    /// Whether every resource is done, failed or skipped.
    pub fn is_finished(&self) -> bool {
        self.state
            .iter()
            .all(|s| matches!(s, State::Done | State::Failed | State::Skipped))
    }

    /// The resources not yet done, failed or skipped.
    pub fn unfinished(&self) -> Vec<&str> {
        (0..self.ids.len())
            .filter(|&i| matches!(self.state[i], State::Waiting | State::Ready))
            .map(|i| self.ids[i].as_str())
            .collect()
    }

    fn find_open(&self, id: &str) -> Option<usize> {
        let i = *self.index.get(id)?;
        matches!(self.state[i], State::Waiting | State::Ready).then_some(i)
    }

    fn names(&self, v: Vec<usize>) -> Vec<String> {
        v.into_iter().map(|i| self.ids[i].clone()).collect()
    }
}
