//! The command surface, as clap definitions only.
//!
//! Nothing here talks to AWS or decides behaviour: `commands/` turns these typed options into work.
//! Every command and flag carries help text, since `cdkd <command> --help` is the user's manual.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

mod assets;
mod cdk_compat;
mod deploy;
mod destroy;
mod escape;
mod gc;
mod import;
mod local;
mod state;
mod timeouts;
pub use assets::{AssetPublishing, AssetStorage};
pub use cdk_compat::{CdkDeployCompat, CdkGlobalCompat};
pub use deploy::{
    CfnFallback, DeployArgs, RequireApproval, DEFAULT_CONCURRENCY, DEFAULT_STACK_CONCURRENCY,
};
pub use destroy::DestroyArgs;
pub use escape::EscapeHatches;
pub use gc::GcArgs;
pub use import::ImportArgs;
pub use local::{LocalCommand, LocalInvokeArgs, RunInvocationArgs};
pub use state::{
    StateCommand, StateDestroyArgs, StateInfoArgs, StateListArgs, StateMigrateArgs,
    StateOrphanArgs, StateRefreshObservedArgs, StateResourcesArgs, StateShowArgs, StateStackArgs,
};
pub use timeouts::ResourceTimeouts;

/// Deploy AWS CDK apps without CloudFormation.
///
/// cdkd synthesizes your CDK app (or reads an existing cloud assembly), diffs each stack against
/// its own state in S3, and creates, updates and deletes resources directly through the AWS SDK
/// and the Cloud Control API, in parallel along the dependency graph.
#[derive(Debug, Parser)]
#[command(name = "cdkd", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOptions,

    #[command(subcommand)]
    pub command: Command,
}

/// Options every command accepts.
#[derive(Debug, Clone, Default, Args)]
pub struct GlobalOptions {
    /// The app to synthesize: a command (e.g. "node bin/app.js") or a cloud assembly directory.
    /// Overrides CDKD_APP and the "app" key of cdk.json.
    #[arg(short = 'a', long, global = true, value_name = "COMMAND|DIR")]
    pub app: Option<String>,

    /// Directory the app writes its cloud assembly to (default: cdk.json "output", else cdk.out).
    #[arg(short = 'o', long, global = true, value_name = "DIR")]
    pub output: Option<PathBuf>,

    /// Context value passed to the app, as key=value (repeatable). The value reaches the app
    /// as a string ("5", "true"), as the CDK CLI passes it.
    #[arg(short = 'c', long = "context", global = true, value_name = "KEY=VALUE")]
    pub context: Vec<String>,

    /// S3 bucket holding cdkd state (default: CDKD_STATE_BUCKET, cdk.json, then cdkd-state-{account}).
    #[arg(long, global = true, value_name = "BUCKET")]
    pub state_bucket: Option<String>,

    /// Key prefix of the state records in the state bucket [default: cdkd].
    #[arg(long, global = true, value_name = "PREFIX")]
    pub state_prefix: Option<String>,

    /// AWS region to use when a stack does not pin one.
    #[arg(long, global = true, value_name = "REGION")]
    pub region: Option<String>,

    /// Named AWS profile from ~/.aws/config and ~/.aws/credentials.
    #[arg(long, global = true, value_name = "PROFILE")]
    pub profile: Option<String>,

    /// IAM role to assume for every AWS call.
    #[arg(long, global = true, value_name = "ARN")]
    pub role_arn: Option<String>,

    /// More output (repeat for debug detail).
    #[arg(short = 'v', long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Answer yes to every confirmation prompt.
    #[arg(short = 'y', long, global = true)]
    pub yes: bool,

    /// Look up the context values the app is missing (VPCs, SSM parameters, zones, ...) with
    /// the AWS credentials and save them to cdk.context.json [default].
    #[arg(long, global = true, overrides_with = "no_lookups")]
    pub lookups: bool,

    /// Never look up context: a value missing from cdk.context.json, cdk.json and -c is an error.
    #[arg(long, global = true, overrides_with = "lookups")]
    pub no_lookups: bool,

    #[command(flatten)]
    pub cdk: CdkGlobalCompat,
}

/// Stack selection shared by the multi-stack commands.
#[derive(Debug, Clone, Default, Args)]
pub struct StackSelection {
    /// Stacks by name, display path (MyStage/Api) or glob pattern ('*', 'MyStage/*').
    #[arg(value_name = "STACKS")]
    pub stacks: Vec<String>,

    /// Select every stack in the app.
    #[arg(long)]
    pub all: bool,

    /// The stack to operate on, as upstream cdkd's `--stack NAME`: used when no STACKS are
    /// named (named ones win).
    #[arg(long = "stack", value_name = "NAME")]
    pub stack: Option<String>,
}

impl StackSelection {
    /// Folds `--stack` into the named stacks when none are named (upstream's precedence).
    pub fn absorb_stack_flag(&mut self) {
        if let Some(name) = self.stack.take() {
            if self.stacks.is_empty() {
                self.stacks.push(name);
            }
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create or update stacks: synthesize, diff against state, then provision resources directly.
    Deploy(DeployArgs),
    /// Show what a deploy would change, without changing anything.
    Diff(DiffArgs),
    /// Delete every resource of the selected stacks, in reverse dependency order, and their state.
    Destroy(DestroyArgs),
    /// Synthesize the app and print the selected stack's template (or write the cloud assembly).
    Synth(SynthArgs),
    /// List the stacks of the app, in dependency order.
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// Create or update the state bucket (versioned, encrypted, public access blocked).
    Bootstrap(BootstrapArgs),
    /// Adopt existing AWS resources into a stack's state, or migrate a CloudFormation stack.
    ///
    /// Without --resource / --resource-mapping[-inline], every resource of the template is
    /// looked for (auto mode): its physical id from the CloudFormation stack of the same name if
    /// there is one, else from the name the template gives it (BucketName, QueueName, ...); one
    /// not found is reported and left out. With a mapping, only the resources it names are
    /// imported (--auto looks for the others too).
    Import(ImportArgs),
    /// Remove resources from cdkd state by construct path, leaving them running in AWS.
    Orphan(OrphanArgs),
    /// Find plaintext secrets in state records and rewrite them to their references.
    Scrub(ScrubArgs),
    /// Replay a stack's rollback journal after an interrupted deploy.
    Rollback(RollbackArgs),
    /// Remove a stack's lock unconditionally (after a crashed run).
    ForceUnlock(ForceUnlockArgs),
    /// Compare recorded resource properties with what AWS reports now.
    Drift(DriftArgs),
    /// Build and upload the selected stacks' file and container assets.
    PublishAssets(PublishAssetsArgs),
    /// Delete the region's cdkd asset objects and images no state record uses (and stranded
    /// custom-resource response placeholders).
    Gc(GcArgs),
    /// Inspect and maintain state records without an app.
    #[command(subcommand)]
    State(StateCommand),
    /// Read a stack's recorded deploy / destroy / rollback runs (the deployment-event store).
    Events(EventsArgs),
    /// List the cached context values (cdk.context.json and the rest), or reset them.
    Context(ContextArgs),
    /// Run the app's Lambda functions on this machine (Node.js and Python, no Docker).
    #[command(subcommand)]
    Local(LocalCommand),
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub selection: StackSelection,
    /// Template parameter value, as [STACK:]KEY=VALUE (repeatable); `*:KEY=VALUE` or
    /// `KEY=VALUE` is for every stack, `STACK:` wins for its stack. Values are not remembered
    /// between deploys (state has no place for them): pass them on every run.
    #[arg(long = "parameters", value_name = "[STACK:]KEY=VALUE")]
    pub parameters: Vec<String>,
    /// Exit 1 when anything would change (a CI gate).
    #[arg(long)]
    pub fail: bool,
    /// Print the differences as JSON.
    #[arg(long)]
    pub json: bool,
    /// Show only the security changes (the IAM statement, managed-policy and security-group
    /// tables); --fail then exits 1 only when permissions broaden.
    #[arg(long)]
    pub security_only: bool,
    /// Also diff each nested stack (AWS::CloudFormation::Stack row) against its own record,
    /// shown under its parent; --fail then considers the whole tree.
    #[arg(long)]
    pub recursive: bool,
    #[command(flatten)]
    pub assets: AssetStorage,
    #[command(flatten)]
    pub fallback: CfnFallback,
}

#[derive(Debug, Args)]
pub struct SynthArgs {
    #[command(flatten)]
    pub selection: StackSelection,
    /// Only synthesize (write the cloud assembly); print no template.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Print templates as JSON instead of YAML.
    #[arg(short = 'j', long)]
    pub json: bool,
    #[command(flatten)]
    pub annotations: AnnotationFlags,
}

/// `--strict` / `--ignore-errors` (deploy and synth), with upstream cdkd's meaning.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct AnnotationFlags {
    /// Fail when a selected stack carries a warning annotation, not only an error.
    #[arg(long)]
    pub strict: bool,
    /// Print error annotations without failing (the deployment is likely invalid); --strict
    /// wins over it.
    #[arg(long)]
    pub ignore_errors: bool,
}

impl AnnotationFlags {
    pub fn policy(self) -> crate::assembly::AnnotationPolicy {
        crate::assembly::AnnotationPolicy {
            strict: self.strict,
            ignore_errors: self.ignore_errors,
        }
    }
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub selection: StackSelection,
    /// Also show each stack's environment and dependencies.
    #[arg(short = 'l', long)]
    pub long: bool,
    /// Show each stack's id and dependencies (YAML, or JSON with --json), as upstream cdkd.
    #[arg(short = 'd', long)]
    pub show_dependencies: bool,
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BootstrapArgs {
    /// Re-apply the settings of an existing state bucket and asset storage; with --destroy,
    /// delete the asset storage even while state records reference it.
    #[arg(long)]
    pub force: bool,
    /// Tear the region's cdkd asset storage down instead: the asset bucket and container
    /// repository with everything in them, then the marker (refused while a state record
    /// references them, unless --force).
    #[arg(long, conflicts_with_all = ["no_assets", "asset_bucket", "container_repo"])]
    pub destroy: bool,
    /// With --destroy, also delete the state bucket (refused while any stack has state or
    /// another region's marker is in it).
    #[arg(long, requires = "destroy")]
    pub include_state_bucket: bool,
    /// Create no cdkd asset storage and write no marker: deploys keep publishing to the CDK
    /// bootstrap's bucket and repository (legacy mode).
    #[arg(long)]
    pub no_assets: bool,
    /// Name of the cdkd asset bucket to create [default: cdkd-assets-{account}-{region}];
    /// written into the region's marker (a region whose marker names another is refused).
    #[arg(long, value_name = "NAME", conflicts_with = "no_assets")]
    pub asset_bucket: Option<String>,
    /// Name of the container-asset ECR repository to create
    /// [default: cdkd-container-assets-{account}-{region}]; written into the marker likewise.
    #[arg(long, value_name = "NAME", conflicts_with = "no_assets")]
    pub container_repo: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct OrphanArgs {
    /// Construct paths of the resources to orphan, as Stack/Path/To/Resource.
    #[arg(required = true, value_name = "STACK/CONSTRUCT_PATH")]
    pub paths: Vec<String>,
    /// Show what would change without writing state.
    #[arg(long)]
    pub dry_run: bool,
    /// Orphan even when a reference to the resource cannot be resolved from the record's
    /// attributes cache (it is kept as it is), and ask no confirmation on a terminal.
    #[arg(short = 'f', long)]
    pub force: bool,
    /// Region of the stack's state record (default: the stack's region).
    #[arg(long, value_name = "REGION")]
    pub stack_region: Option<String>,
}

#[derive(Debug, Args)]
pub struct ScrubArgs {
    #[command(flatten)]
    pub selection: StackSelection,
    /// Report what would be rewritten; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Exit 1 when a plaintext secret is found (a CI gate).
    #[arg(long)]
    pub fail: bool,
    /// Purge noncurrent versions of every record examined, not only the rewritten ones.
    #[arg(long)]
    pub purge_history: bool,
    /// Print findings as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// The stack whose rollback journal to replay.
    pub stack: String,
    /// Do not roll this resource back (by logical id, repeatable): drop it from state as it
    /// is, left in AWS (upstream cdkd's and `cdk rollback`'s --orphan).
    #[arg(long = "orphan", value_name = "LOGICAL_ID")]
    pub orphan: Vec<String>,
    /// Do not ask for confirmation on a terminal (as --yes; off a terminal nothing is asked).
    #[arg(short = 'f', long)]
    pub force: bool,
    /// Also revert resources whose update failed.
    #[arg(long)]
    pub revert_failed: bool,
    /// Region of the stack's state record.
    #[arg(long, value_name = "REGION")]
    pub stack_region: Option<String>,
    /// Delete reverted creates whose DeletionPolicy is Snapshot without their final snapshot.
    #[arg(long)]
    pub skip_final_snapshot: bool,
}

#[derive(Debug, Args)]
pub struct ForceUnlockArgs {
    /// The stacks whose locks to remove (one or more).
    #[arg(required = true, value_name = "STACKS")]
    pub stacks: Vec<String>,
    /// Region of the stack's state record.
    #[arg(long, value_name = "REGION")]
    pub stack_region: Option<String>,
}

#[derive(Debug, Args)]
pub struct DriftArgs {
    #[command(flatten)]
    pub selection: StackSelection,
    /// Record AWS's current values for every drifted property in state (state <- AWS).
    #[arg(long, conflicts_with = "revert")]
    pub accept: bool,
    /// Send the recorded values of every drifted resource back to AWS through its
    /// provider's update, dependencies first (AWS <- state).
    #[arg(long)]
    pub revert: bool,
    /// With --accept / --revert: print what would change, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Resources read (and, with --revert, updated) at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: u32,
    /// Region of the stacks' state records (needed when a stack has records in several).
    #[arg(long, value_name = "REGION")]
    pub stack_region: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PublishAssetsArgs {
    #[command(flatten)]
    pub selection: StackSelection,
    #[command(flatten)]
    pub assets: AssetPublishing,
}

#[derive(Debug, Args)]
pub struct ContextArgs {
    /// Remove one cached value by key or by its number in the listing; it is looked up again
    /// on the next synthesis.
    #[arg(
        short = 'e',
        long,
        value_name = "KEY_OR_NUMBER",
        conflicts_with = "clear"
    )]
    pub reset: Option<String>,
    /// With --reset: succeed even when the key is not in cdk.context.json.
    #[arg(short = 'f', long, requires = "reset")]
    pub force: bool,
    /// Remove every cached value from cdk.context.json.
    #[arg(long)]
    pub clear: bool,
    /// Print the context as JSON.
    #[arg(short = 'j', long)]
    pub json: bool,
}

/// `cdkd events <stack>` lists the runs, `--run` prints one; `cdkd events prune <stack>`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EventsArgs {
    #[command(subcommand)]
    pub command: Option<EventsCommand>,
    /// The stack (state record name, e.g. MyStack or Parent); its history survives a destroy.
    #[arg(required = true)]
    pub stack: Option<String>,
    /// Print this run's ordered events instead of the list of runs.
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<String>,
    /// Region of the stack's history (needed when it has history in several regions).
    #[arg(long, value_name = "REGION")]
    pub stack_region: Option<String>,
    /// Print as JSON (the same as --format json).
    #[arg(long)]
    pub json: bool,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<EventsFormat>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EventsFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Delete old runs of a stack's deployment-event store (the newest 20 are kept by default).
    Prune(EventsPruneArgs),
}

#[derive(Debug, Args)]
pub struct EventsPruneArgs {
    /// The stack whose runs to delete.
    pub stack: String,
    /// Keep the newest N runs.
    #[arg(long, value_name = "N")]
    pub keep: Option<usize>,
    /// Delete runs older than this (e.g. 90s, 30m, 24h); with --keep, only runs beyond the
    /// newest N that are also older.
    #[arg(long, value_name = "DURATION")]
    pub older_than: Option<String>,
    /// Delete every run, the index and every earlier version under deployments/.
    #[arg(long, conflicts_with_all = ["keep", "older_than"])]
    pub all: bool,
    /// Region of the stack's history.
    #[arg(long, value_name = "REGION")]
    pub stack_region: Option<String>,
}

impl Command {
    /// The stack selection of a multi-stack command.
    pub fn selection_mut(&mut self) -> Option<&mut StackSelection> {
        match self {
            Command::Deploy(a) => Some(&mut a.selection),
            Command::Diff(a) => Some(&mut a.selection),
            Command::Destroy(a) => Some(&mut a.selection),
            Command::Synth(a) => Some(&mut a.selection),
            Command::List(a) => Some(&mut a.selection),
            Command::Scrub(a) => Some(&mut a.selection),
            Command::Drift(a) => Some(&mut a.selection),
            Command::PublishAssets(a) => Some(&mut a.selection),
            _ => None,
        }
    }

    /// The command's name as typed, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Deploy(_) => "deploy",
            Command::Diff(_) => "diff",
            Command::Destroy(_) => "destroy",
            Command::Synth(_) => "synth",
            Command::List(_) => "list",
            Command::Bootstrap(_) => "bootstrap",
            Command::Import(_) => "import",
            Command::Orphan(_) => "orphan",
            Command::Scrub(_) => "scrub",
            Command::Rollback(_) => "rollback",
            Command::ForceUnlock(_) => "force-unlock",
            Command::Drift(_) => "drift",
            Command::PublishAssets(_) => "publish-assets",
            Command::Gc(_) => "gc",
            Command::Context(_) => "context",
            Command::Local(LocalCommand::Invoke(_)) => "local invoke",
            Command::Local(LocalCommand::RunInvocation(_)) => "local run-invocation",
            Command::Events(a) => match a.command {
                Some(EventsCommand::Prune(_)) => "events prune",
                None => "events",
            },
            Command::State(s) => match s {
                StateCommand::Info(_) => "state info",
                StateCommand::List(_) => "state list",
                StateCommand::Resources(_) => "state resources",
                StateCommand::Show(_) => "state show",
                StateCommand::Orphan(_) => "state orphan",
                StateCommand::Destroy(_) => "state destroy",
                StateCommand::RefreshObserved(_) => "state refresh-observed",
                StateCommand::Migrate(_) => "state migrate",
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_command_has_help_text() {
        let cli = Cli::command();
        for sub in cli.get_subcommands() {
            assert!(sub.get_about().is_some(), "{} has no help", sub.get_name());
            for nested in sub.get_subcommands() {
                assert!(
                    nested.get_about().is_some(),
                    "{} has no help",
                    nested.get_name()
                );
            }
        }
    }

    #[test]
    fn global_options_parse_anywhere() {
        let cli = Cli::try_parse_from([
            "cdkd",
            "list",
            "-a",
            "cdk.out",
            "-c",
            "k=v",
            "--state-prefix",
            "p",
            "-vv",
        ])
        .expect("parses");
        assert_eq!(cli.global.app.as_deref(), Some("cdk.out"));
        assert_eq!(cli.global.context, vec!["k=v"]);
        assert_eq!(cli.global.verbose, 2);
        assert!(matches!(cli.command, Command::List(_)));
        let ls = Cli::try_parse_from(["cdkd", "ls"]).expect("alias parses");
        assert!(matches!(ls.command, Command::List(_)));
    }

    #[test]
    fn cdk_flags_parse_with_a_warning_each_and_short_forms_map() {
        let cli = Cli::try_parse_from([
            "cdkd",
            "deploy",
            "--hotswap",
            "--hotswap-fallback",
            "--method",
            "direct",
            "--progress",
            "events",
            "--ci",
            "--no-notices",
            "--asset-parallelism",
            "--asset-prebuild",
            "--no-color",
            "-R",
            "-O",
            "out.json",
        ])
        .expect("parses");
        let Command::Deploy(args) = &cli.command else {
            panic!("deploy");
        };
        assert!(args.no_rollback, "-R is --no-rollback");
        assert_eq!(args.outputs_file, Some(PathBuf::from("out.json")), "-O");
        assert!(cli.global.cdk.no_color);
        let warnings: Vec<String> = cli
            .global
            .cdk
            .warnings()
            .into_iter()
            .chain(args.cdk.warnings())
            .collect();
        assert_eq!(warnings.len(), 8, "{warnings:?}");
        assert!(warnings.iter().any(|w| w.starts_with("--method direct ")));
        assert!(warnings.iter().all(|w| w.ends_with("; ignored")));
    }
}
