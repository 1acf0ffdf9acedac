//! `cdkd destroy`'s options.

use clap::Args;

use super::{ResourceTimeouts, StackSelection, DEFAULT_CONCURRENCY};

#[derive(Debug, Args)]
pub struct DestroyArgs {
    #[command(flatten)]
    pub selection: StackSelection,
    /// Do not ask for confirmation.
    #[arg(short = 'f', long)]
    pub force: bool,
    /// Maximum concurrent delete operations per stack (the default, as deploy's, lets a wide
    /// stack go in one round under the per-service limit on AWS calls in flight).
    #[arg(long, default_value_t = DEFAULT_CONCURRENCY, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: u32,
    /// Also delete the stack's deployment event store (deployments/ beside its state), every
    /// version of it; otherwise it survives the destroy.
    #[arg(long)]
    pub purge_events: bool,
    /// Delete resources whose DeletionPolicy is Snapshot without the final snapshot the
    /// policy takes first (their data is lost).
    #[arg(long)]
    pub skip_final_snapshot: bool,
    /// Destroy stacks with terminationProtection: true, and turn off each resource's deletion
    /// protection (RDS DeletionProtection, DynamoDB DeletionProtectionEnabled, ...) before
    /// deleting it.
    #[arg(long)]
    pub remove_protection: bool,
    #[command(flatten)]
    pub timeouts: ResourceTimeouts,
}
