//! `cdkd deploy`'s options (and the two it shares with `cdkd diff`).

use clap::Args;
use std::path::PathBuf;

use super::{
    AnnotationFlags, AssetPublishing, CdkDeployCompat, EscapeHatches, ResourceTimeouts,
    StackSelection,
};

/// Resource operations per stack at once unless `--concurrency` says otherwise: enough for a
/// wide stack to go in one round. What keeps a real account safe is the per-service limit on
/// calls in flight, which adapts to throttling (`crate::aws::gate`).
pub const DEFAULT_CONCURRENCY: u32 = 256;
/// Stacks at once unless `--stack-concurrency` says otherwise.
pub const DEFAULT_STACK_CONCURRENCY: u32 = 64;

#[derive(Debug, Args)]
pub struct DeployArgs {
    #[command(flatten)]
    pub selection: StackSelection,
    /// Maximum concurrent resource operations per stack. The default lets a wide stack go in
    /// one round; the AWS calls in flight are bounded per service by a limit that backs off on
    /// throttling and recovers (see docs/performance.md).
    #[arg(long, default_value_t = DEFAULT_CONCURRENCY, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: u32,
    /// Maximum concurrent stack deployments. Independent stacks start together by default;
    /// the shared per-service limit on AWS calls in flight bounds them, not a stack count.
    #[arg(long, default_value_t = DEFAULT_STACK_CONCURRENCY, value_parser = clap::value_parser!(u32).range(1..))]
    pub stack_concurrency: u32,
    /// Template parameter value, as [STACK:]KEY=VALUE (repeatable); `*:KEY=VALUE` or
    /// `KEY=VALUE` is for every stack, `STACK:` wins for its stack. Values are not remembered
    /// between deploys (state has no place for them): pass them on every run.
    #[arg(long = "parameters", value_name = "[STACK:]KEY=VALUE")]
    pub parameters: Vec<String>,
    /// Allow replacing stateful resources (tables, buckets, databases) when a change requires it.
    #[arg(long)]
    pub force_stateful_recreation: bool,
    /// Skip the long stabilization waits (CloudFront, RDS, NAT gateways, ...).
    #[arg(long)]
    pub no_wait: bool,
    /// Wait wherever CloudFormation waits (upstream's flag; it cannot be combined with
    /// --no-wait). cdkd skips none of those waits by default today: the types upstream skips
    /// them for (ECS services, CloudFront distributions) go through Cloud Control, whose
    /// handlers wait as CloudFormation does, so the flag changes nothing yet.
    #[arg(long, conflicts_with = "no_wait")]
    pub full_wait: bool,
    /// Create the physical name the template gives an IAM role, user, group, instance
    /// profile or managed policy, or an ELBv2 load balancer or target group, as
    /// {stack}-{name} (upstream cdkd's pre-0.94 naming, for stacks deployed that way). Other
    /// types, and unnamed resources, are named as without it. A later deploy without it
    /// replaces those resources under their own names. Also CDKD_PREFIX_USER_SUPPLIED_NAMES=true
    /// or cdk.json context.cdkd.prefixUserSuppliedNames: true.
    #[arg(long)]
    pub prefix_user_supplied_names: bool,
    /// Keep the CDK's defensive DependsOn edges from VPC Lambdas (and their role, policy,
    /// function URL and event-source mapping) onto the subnets' route and route table
    /// association, which a deploy drops by default so those resources need not wait for the
    /// NAT gateway (Lambda accepts a function whose VPC networking is still coming up).
    #[arg(long)]
    pub no_aggressive_vpc_parallel: bool,
    /// On failure keep what was created instead of rolling back automatically
    /// (cdk.json "rollback": false says the same).
    #[arg(short = 'R', long, overrides_with = "rollback")]
    pub no_rollback: bool,
    /// Roll back automatically on failure [default], over cdk.json "rollback": false.
    #[arg(long, overrides_with = "no_rollback")]
    pub rollback: bool,
    /// Deploy only the named stacks, not the stacks they depend on.
    #[arg(short = 'e', long)]
    pub exclusively: bool,
    /// Print the deploy result (outputs) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Compute and print the plan only: no lock, no state write, no AWS change.
    #[arg(long)]
    pub dry_run: bool,
    /// Which changes need a confirmation before they are made (a prompt on a terminal;
    /// elsewhere pass --yes) [default: cdk.json "requireApproval", else never].
    #[arg(long, value_enum)]
    pub require_approval: Option<RequireApproval>,
    /// Write the stacks' outputs to this file as JSON ({"Stack": {"Key": "value"}})
    /// [default: cdk.json "outputsFile"].
    #[arg(short = 'O', long, value_name = "FILE")]
    pub outputs_file: Option<PathBuf>,
    /// When the new resource of a replacement cannot be created beside the old one (its name
    /// is taken), delete the old one first and create again.
    #[arg(long)]
    pub replace: bool,
    /// Exit 0 even when resources were left unaddressed (kept in state, not deleted).
    #[arg(long)]
    pub allow_unaddressed: bool,
    /// Fail a resource whose Fn::GetAtt names an attribute its provider did not report,
    /// instead of falling back to reading it.
    #[arg(long)]
    pub strict_getatt: bool,
    /// Delete resources (removed, replaced or rolled back) whose DeletionPolicy or
    /// UpdateReplacePolicy is Snapshot without the final snapshot (their data is lost).
    #[arg(long)]
    pub skip_final_snapshot: bool,
    /// Do not read resources back after each create / update to record the baseline
    /// `cdkd drift` compares against (observedProperties); drift then compares against the
    /// recorded template properties, and `cdkd state refresh-observed` records it later.
    #[arg(long)]
    pub no_capture_observed_state: bool,
    #[command(flatten)]
    pub fallback: CfnFallback,
    /// Publish no asset (upstream cdkd's --skip-assets): the stacks deploy against the assets
    /// an earlier deploy or `cdkd publish-assets` published.
    #[arg(long)]
    pub skip_assets: bool,
    #[command(flatten)]
    pub assets: AssetPublishing,
    #[command(flatten)]
    pub annotations: AnnotationFlags,
    #[command(flatten)]
    pub timeouts: ResourceTimeouts,
    #[command(flatten)]
    pub escapes: EscapeHatches,
    #[command(flatten)]
    pub cdk: CdkDeployCompat,
}

/// `--no-cfn-fallback`, one flag for deploy and diff, so a preview resolves cross-stack
/// references exactly as the deploy it previews.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct CfnFallback {
    /// Resolve Fn::ImportValue / Fn::GetStackOutput from cdkd state only: no CloudFormation
    /// ListExports / DescribeStacks fallback.
    #[arg(long)]
    pub no_cfn_fallback: bool,
}

impl CfnFallback {
    /// Whether a cdkd-state miss falls back to CloudFormation.
    pub fn enabled(self) -> bool {
        !self.no_cfn_fallback
    }
}

/// `--require-approval`: which changes need a confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum RequireApproval {
    /// Never ask.
    #[default]
    Never,
    /// Ask before any change.
    AnyChange,
    /// Ask before a replacement or a deletion.
    Destructive,
    /// Ask when permissions widen (the CDK's meaning): an IAM statement, a managed-policy
    /// attachment, an `AWS::Lambda::Permission` or a security-group rule added, a Deny removed.
    Broadening,
}
