//! CDK CLI flags cdkd has nothing to do for, accepted so `cdk deploy ...` scripts and habits
//! keep working: each given one is one warning line saying why it is ignored. `--no-color`
//! is the exception with an effect: it sets `NO_COLOR` for the run.

use clap::Args;

/// Global CDK CLI flags.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "CDK CLI flags (accepted; cdkd has nothing to do for them)")]
pub struct CdkGlobalCompat {
    /// CDK CLI: CI mode. cdkd's output is the same everywhere; ignored with a warning.
    #[arg(long, global = true)]
    pub ci: bool,
    /// CDK CLI: show notices. cdkd has none; ignored with a warning.
    #[arg(long, global = true, overrides_with = "no_notices")]
    pub notices: bool,
    /// CDK CLI: hide notices. cdkd has none; ignored with a warning.
    #[arg(long, global = true, overrides_with = "notices")]
    pub no_notices: bool,
    /// No colour in the output (sets NO_COLOR for the run).
    #[arg(long, global = true)]
    pub no_color: bool,
}

/// Deploy flags of the CDK CLI.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "CDK CLI flags (accepted; cdkd has nothing to do for them)")]
pub struct CdkDeployCompat {
    /// CDK CLI: hotswap deployment. cdkd always calls the AWS APIs directly; ignored.
    #[arg(long)]
    pub hotswap: bool,
    /// CDK CLI: hotswap, falling back to CloudFormation. Ignored as --hotswap.
    #[arg(long)]
    pub hotswap_fallback: bool,
    /// CDK CLI: change-set, direct or prepare-change-set. cdkd uses no change sets; ignored.
    #[arg(long, value_name = "METHOD")]
    pub method: Option<String>,
    /// CDK CLI: bar or events. cdkd picks its progress display itself; ignored.
    #[arg(long, value_name = "STYLE")]
    pub progress: Option<String>,
    /// CDK CLI: publish assets in parallel. cdkd always does; ignored.
    #[arg(long, overrides_with = "no_asset_parallelism")]
    pub asset_parallelism: bool,
    /// CDK CLI: publish assets one at a time. Ignored.
    #[arg(long, overrides_with = "asset_parallelism")]
    pub no_asset_parallelism: bool,
    /// CDK CLI: build every asset before publishing. Ignored.
    #[arg(long, overrides_with = "no_asset_prebuild")]
    pub asset_prebuild: bool,
    /// CDK CLI: build each asset as it is published. Ignored.
    #[arg(long, overrides_with = "asset_prebuild")]
    pub no_asset_prebuild: bool,
}

impl CdkGlobalCompat {
    /// One warning per given flag that has no effect.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.ci {
            out.push(ignored("--ci", "cdkd's output does not change in CI"));
        }
        if self.notices || self.no_notices {
            let flag = if self.notices {
                "--notices"
            } else {
                "--no-notices"
            };
            out.push(ignored(flag, "cdkd has no notices"));
        }
        out
    }
}

impl CdkDeployCompat {
    /// One warning per given flag.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let direct = "cdkd always deploys directly through the AWS APIs, with no CloudFormation";
        if self.hotswap {
            out.push(ignored("--hotswap", direct));
        }
        if self.hotswap_fallback {
            out.push(ignored("--hotswap-fallback", direct));
        }
        if let Some(method) = &self.method {
            out.push(ignored(&format!("--method {method}"), direct));
        }
        if let Some(progress) = &self.progress {
            out.push(ignored(
                &format!("--progress {progress}"),
                "cdkd shows a bar on a terminal and plain lines elsewhere (CDKD_PROGRESS)",
            ));
        }
        let assets = "cdkd builds and publishes assets in parallel, its own way";
        for (given, flag) in [
            (self.asset_parallelism, "--asset-parallelism"),
            (self.no_asset_parallelism, "--no-asset-parallelism"),
            (self.asset_prebuild, "--asset-prebuild"),
            (self.no_asset_prebuild, "--no-asset-prebuild"),
        ] {
            if given {
                out.push(ignored(flag, assets));
            }
        }
        out
    }
}

fn ignored(flag: &str, why: &str) -> String {
    format!("{flag} is a CDK CLI flag with nothing to do in cdkd ({why}); ignored")
}
