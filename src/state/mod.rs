//! State records and the S3 state backend.
//!
//! cdkd keeps each stack's record in `state.json` in the state bucket, in the
//! exact format the TypeScript cdkd reads and writes, so either binary can
//! take over a live stack:
//!
//! - [`record`] / [`resource`]: the record types (`StackState`,
//!   `ResourceState`, the import / output-read / orphan entries, `LockInfo`),
//!   with unknown fields kept for the next write, and the writer
//!   ([`serialize_state`]) that lays the text out as `JSON.stringify(state,
//!   null, 2)` does.
//! - [`parse_state`]: bytes to a record upgraded from any schema version
//!   1..=11, the region decided by the key, every malformed shape the spec
//!   lists refused with `STATE_RESOURCES_MALFORMED` ([`StateError`]).
//! - [`keys`]: the bucket's key layout.

pub mod backend;
pub mod bucket;
mod check;
pub mod deferred;
pub mod edit;
mod error;
pub mod events;
pub mod events_read;
pub mod exports;
pub mod journal;
mod json;
pub mod keys;
pub mod ledger;
pub mod lock;
mod parse;
pub mod purge;
pub mod record;
pub mod resource;
mod value;

pub use error::{
    BadOrphan, BadRow, OrphanProblem, RowProblem, StateError, STATE_NOT_JSON, STATE_NOT_OBJECT,
    STATE_REGION_MISMATCH, STATE_RESOURCES_MALFORMED, STATE_SCHEMA_UNSUPPORTED,
};
pub use keys::{StackRef, StateKeys, DEFAULT_STATE_PREFIX};
pub use lock::{HeldLock, LockConfig, LockError, LockManager, ReleaseOutcome, DEFAULT_LOCK_TTL};
pub use parse::{
    legacy_record_region, parse_legacy_state, parse_state, parse_state_lossy, BodyRegion,
    LegacyRegion, ParsedState,
};
pub use purge::{purge_noncurrent_versions, PurgeOutcome};
pub use record::{
    serialize_state, serialize_state_for, ConditionVerdict, LockInfo, StackOrphanRecord,
    StackState, StateImportEntry, StateOutputReadEntry, STATE_SCHEMA_VERSION,
    STATE_SCHEMA_VERSION_LEGACY,
};
pub use resource::{
    BaselineRefusalReason, PathSegment, ProvisionedBy, ResourcePolicy, ResourceState,
};
pub use value::{Lenient, ValueKind};
