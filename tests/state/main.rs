//! Integration tests of the state backend against the emulator: records, the exports index,
//! the stack lock (contention, expiry, renewal) and the lock under injected faults.
//!
//! One test binary for all of them, because every binary links the whole AWS SDK. Each module
//! is one former `tests/<name>.rs`, so a narrow run names it as a filter:
//! `./scripts/test --test state -- state_lock::`.

#[path = "../support/mod.rs"]
mod support;

/// Helpers the two stack-lock modules share.
mod lock {
    pub mod common;
    pub mod relay;
}

mod state_backend;
mod state_exports;
mod state_lock;
mod state_lock_faults;
mod state_sidecars;
mod state_views;
