//! Integration tests of a stack's lifecycle through the `cdkd` binary against the emulator:
//! deploy (flags, plans, routing, failures and rollback, nested stacks, secrets), diff and destroy.
//!
//! One test binary for all of them, because every binary links the whole AWS SDK: the link,
//! not the tests, dominated the suite's build. Each module is one former `tests/<name>.rs`,
//! so a narrow run names it as a filter: `./scripts/test --test lifecycle -- destroy::`.
//! Tests of different modules run in parallel in one process against one emulator: a fault a
//! module injects is scoped to a resource type no other module of this binary creates.

#[path = "../support/mod.rs"]
mod support;

mod access_key;
mod alb_rds;
mod custom_resources;
mod deploy;
mod deploy_cli;
mod deploy_failure;
mod deploy_flags;
mod deploy_nested;
mod deploy_plan;
mod deploy_prefix_names;
mod deploy_routing;
mod deploy_secrets;
mod deploy_tags;
mod deploy_timeouts;
mod deploy_vpc_edges;
mod destroy;
mod diff;
mod drift;
mod ec2_network;
mod events;
mod fixture_app;
mod kms_layer_dns;
mod secrets_paths;
mod security;
