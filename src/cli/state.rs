//! `cdkd state` and its subcommands' options.

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// Show the state bucket, its region and the prefix in use.
    Info(StateInfoArgs),
    /// List the stacks that have state records.
    List(StateListArgs),
    /// List the resources recorded for a stack.
    Resources(StateResourcesArgs),
    /// Print a stack's state record.
    Show(StateShowArgs),
    /// Drop stacks' records, or resources of one, leaving AWS untouched.
    Orphan(StateOrphanArgs),
    /// Delete stacks' resources from their state records alone, without the app.
    Destroy(StateDestroyArgs),
    /// Read stacks' resources back and record what AWS reports as their drift baseline
    /// (observedProperties), without changing AWS.
    RefreshObserved(StateRefreshObservedArgs),
    /// Move every object of the legacy state bucket (cdkd-state-{account}-{region}) into the
    /// current one (cdkd-state-{account}), creating it if needed.
    Migrate(StateMigrateArgs),
}

#[derive(Debug, Args)]
pub struct StateMigrateArgs {
    /// The source bucket [default: cdkd-state-{account}-{region}, for --region].
    #[arg(long, value_name = "NAME")]
    pub legacy_bucket: Option<String>,
    /// The destination bucket [default: cdkd-state-{account}].
    #[arg(long, value_name = "NAME")]
    pub new_bucket: Option<String>,
    /// Show what would be moved; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also delete the legacy bucket, with every earlier version in it, once everything moved.
    #[arg(long)]
    pub remove_legacy: bool,
}

#[derive(Debug, Args)]
pub struct StateInfoArgs {
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StateListArgs {
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also show each record's resource count, last write time and lock holder.
    #[arg(short = 'l', long, conflicts_with = "tree")]
    pub long: bool,
    /// Show nested stacks' records indented under their parents' (each child's record names
    /// its parent).
    #[arg(long)]
    pub tree: bool,
}

#[derive(Debug, Args)]
pub struct StateResourcesArgs {
    #[command(flatten)]
    pub stack: StateStackArgs,
    /// One block per resource, with its dependencies and recorded attributes.
    #[arg(short = 'l', long, conflicts_with = "json")]
    pub long: bool,
}

#[derive(Debug, Args)]
pub struct StateShowArgs {
    #[command(flatten)]
    pub stack: StateStackArgs,
    /// Also show every nested stack's record (AWS::CloudFormation::Stack rows, recursively)
    /// after its parent's; with --json, `{state, children: [...]}`.
    #[arg(long)]
    pub show_nested: bool,
}

#[derive(Debug, Args)]
pub struct StateStackArgs {
    /// The stack (state record name, e.g. MyStack or Parent~Child).
    pub stack: String,
    /// Region of the stack's state record (needed when the stack has records in several regions).
    #[arg(long, value_name = "REGION")]
    pub stack_region: Option<String>,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StateOrphanArgs {
    /// The stacks whose records to drop (one or more; with --resource, one).
    #[arg(required = true, value_name = "STACKS")]
    pub stacks: Vec<String>,
    /// Drop only this resource (logical id) from the record (repeatable).
    #[arg(long = "resource", value_name = "LOGICAL_ID")]
    pub resources: Vec<String>,
    /// Region of the stack's state record.
    #[arg(long, value_name = "REGION")]
    pub stack_region: Option<String>,
    /// With --resource: orphan even when a reference to it cannot be resolved.
    #[arg(long, requires = "resources")]
    pub force: bool,
    /// With --resource: show the reference rewrites without writing state.
    #[arg(long, requires = "resources")]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct StateDestroyArgs {
    /// The stacks to destroy (one or more, one after another).
    #[arg(required = true, value_name = "STACKS")]
    pub stacks: Vec<String>,
    /// Region of the stack's state record.
    #[arg(long, value_name = "REGION")]
    pub stack_region: Option<String>,
    /// Do not ask for confirmation.
    #[arg(short = 'f', long)]
    pub force: bool,
    /// Delete resources whose DeletionPolicy is Snapshot without their final snapshot.
    #[arg(long)]
    pub skip_final_snapshot: bool,
    /// Turn off each resource's deletion protection (RDS DeletionProtection, DynamoDB
    /// DeletionProtectionEnabled, ...) before deleting it. The record holds no stack-level
    /// terminationProtection (that is the app's), so state destroy does not check it.
    #[arg(long)]
    pub remove_protection: bool,
    #[command(flatten)]
    pub timeouts: super::ResourceTimeouts,
}

#[derive(Debug, Args)]
pub struct StateRefreshObservedArgs {
    /// The stacks whose baselines to refresh (none: the only record, or every one with --all).
    #[arg(value_name = "STACKS")]
    pub stacks: Vec<String>,
    /// Every stack the state bucket holds.
    #[arg(long)]
    pub all: bool,
    /// Region of the stacks' state records.
    #[arg(long, value_name = "REGION")]
    pub stack_region: Option<String>,
    /// Resources read at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: u32,
}
