//! Orchestrations over one concurrent DAG walker: deploy, destroy, diff, scrub and import are
//! built on [`walk`], so every command gets the same scheduling, failure and cancellation rules.

pub mod baseline;
pub mod deploy;
pub mod destroy;
pub mod diff;
pub mod drift;
pub mod events;
pub mod orphan;
pub mod policy;
pub mod scrub;
pub mod walk;
