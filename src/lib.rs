//! cdkd deploys AWS CDK apps without CloudFormation.
//!
//! The pipeline, one module per job:
//!
//! ```text
//! cli → commands → { state, aws } → { template, assembly, config }
//! ```
//!
//! - [`cli`]: clap definitions only; [`commands`]: handlers that turn options into work.
//! - [`config`]: cdk.json, cdk.context.json, environment; one precedence rule.
//! - [`assembly`]: running the app, reading the cloud assembly, selecting stacks.
//! - [`context`]: context lookups (the synthesis loop, its providers, cdk.context.json).
//! - [`template`]: the CloudFormation template model (JSON and YAML with short tags).
//! - [`state`]: state records, their schema versions and key layout.
//! - [`aws`]: the one client factory and AWS error classification.
//! - [`ui`]: what the user sees; [`error`]: errors and exit codes; [`env`]: environment variables.
//!
//! See docs/architecture.md for the full module map and the layers still to come.

pub mod assembly;
pub mod assets;
pub mod aws;
pub mod cli;
pub mod commands;
pub mod config;
pub mod context;
pub mod engine;
pub mod env;
pub mod error;
pub mod plan;
pub mod provider;
pub mod redact;
pub mod resolve;
pub mod state;
pub mod template;
pub mod ui;

pub use error::{Error, ExitStatus};

use clap::Parser;

/// Parses the command line, runs the command, prints any error as one line, returns the exit code.
pub fn run() -> std::process::ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // clap's own help / version output is a success; a usage error is a failure.
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitStatus::Success.into()
                }
                _ => ExitStatus::Failure.into(),
            };
        }
    };
    ui::init_logging(cli.global.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            ui::error(format!("cannot start the async runtime: {e}"));
            return ExitStatus::Failure.into();
        }
    };
    match runtime.block_on(commands::dispatch(cli)) {
        Ok(status) => status.into(),
        Err(e) => {
            ui::error(e.to_string());
            e.exit_status().into()
        }
    }
}
