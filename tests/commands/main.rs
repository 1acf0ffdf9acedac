//! Integration tests of cdkd's other commands and whole apps, through the `cdkd` binary against
//! the emulator: the CLI surface, bootstrap, context lookups, the corpus of real CDK apps,
//! import (by mapping, auto, and migration from CloudFormation), orphan, cross-stack and external references,
//! cdk.json settings,
//! scrub.
//!
//! One test binary for all of them, because every binary links the whole AWS SDK. Each module
//! is one former `tests/<name>.rs`, so a narrow run names it as a filter:
//! `./scripts/test --test commands -- corpus::`.

#[path = "../support/mod.rs"]
mod support;

mod assets_publish;
mod bootstrap;
mod cli;
mod context;
mod corpus;
mod gc;
mod import;
mod import_auto;
mod import_migrate;
mod local_invoke;
mod orphan;
mod parameters;
mod resolve_external;
mod scrub;
mod scrub_cross;
mod settings;
