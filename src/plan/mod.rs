//! The plan: what a deploy or destroy will do, and in which order.
//!
//! This module is data and pure logic; it never calls AWS.
//!
//! - [`DependencyGraph`]: the resources of one stack (after condition
//!   pruning) and the edges between them — every `Ref`, `Fn::GetAtt`,
//!   `Fn::Sub` placeholder and `DependsOn` — plus the implicit delete-order
//!   edges of [`DELETE_RULES`]. It gives the deploy and delete orders, the
//!   direct and transitive dependencies of a resource, and the
//!   [`critical path`](DependencyGraph::critical_path).
//! - [`ReadyTracker`]: in-degree bookkeeping for the concurrent executor:
//!   which resources become ready when one finishes, which are skipped when
//!   one fails. It works in both [`Direction`]s.
//! - [`ChangeSet`]: per-resource create / update / replace / delete / no
//!   change, with reasons and property diffs. The types only; the deploy
//!   engine computes them.
//!
//! Edges point from a dependency to its dependent: if `Function` reads
//! `Role.Arn`, the edge is `Role → Function`; `Role` is created first and
//! deleted last.

mod change;
mod critical;
pub mod defensive;
mod delete_rules;
mod graph;
mod ready;
pub mod refs;
pub mod security;

pub use change::{ChangeCounts, ChangeKind, ChangeReason, ChangeSet, PropertyDiff, ResourceChange};
pub use critical::CriticalPath;
pub use delete_rules::{DeleteRule, Link, DELETE_RULES};
pub use graph::{DependencyGraph, Edge, RecordNode};
pub use ready::ReadyTracker;
pub use refs::{references, RefVia, Reference};

/// Which way the graph is walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Dependencies before dependents (create and update).
    Deploy,
    /// Dependents before dependencies, honouring the implicit delete-order
    /// edges as well (destroy, and the delete half of a deploy).
    Delete,
}

/// A template whose resources cannot be ordered. `Display` is one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// `DependsOn` names a logical id the template does not have.
    #[error("stack {stack}: resource {resource} has DependsOn {target}, but the template has no resource {target}; fix the DependsOn or add the resource")]
    UnknownDependsOn {
        stack: String,
        resource: String,
        target: String,
    },
    /// Resources that depend on each other in a circle. `members` are in
    /// "depends on" order, starting with the member that comes first in the
    /// template; a self-reference has one member.
    #[error("stack {stack}: dependency cycle among resources: {}; break it by removing one of the references or DependsOn", cycle_text(.members))]
    ResourceCycle { stack: String, members: Vec<String> },
}

fn cycle_text(members: &[String]) -> String {
    let mut parts: Vec<&str> = members.iter().map(String::as_str).collect();
    if let Some(first) = members.first() {
        parts.push(first);
    }
    parts.join(" -> ")
}

#[cfg(test)]
mod change_tests;
#[cfg(test)]
mod delete_rules_tests;
#[cfg(test)]
mod fixtures_tests;
#[cfg(test)]
mod graph_tests;
#[cfg(test)]
mod ready_tests;
#[cfg(test)]
mod refs_tests;
