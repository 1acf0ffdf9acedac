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
pub mod lambda_runtime;
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
    let mut cli = match cli::Cli::try_parse() {
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
    if let Some(selection) = cli.command.selection_mut() {
        selection.absorb_stack_flag();
    }
    if cli.global.cdk.no_color {
        // Before any thread starts: every colour decision reads NO_COLOR.
        std::env::set_var(env::NO_COLOR, "1");
    }
    ui::init_logging(cli.global.verbose);
    for warning in cli.global.cdk.warnings() {
        ui::warn(warning);
    }
    if let cli::Command::Deploy(args) = &cli.command {
        for warning in args.cdk.warnings() {
            ui::warn(warning);
        }
    }
    // 8 MiB worker stacks (Tokio's default is 2): a nested stack's deploy, and its rollback,
    // poll the engine's futures several levels deep, and debug builds keep them unboxed.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(8 * 1024 * 1024)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            ui::error(format!("cannot start the async runtime: {e}"));
            return ExitStatus::Failure.into();
        }
    };
    // The background purges (state::deferred) finish before the process exits.
    let outcome = runtime.block_on(async {
        let outcome = commands::dispatch(cli).await;
        state::deferred::drain().await;
        outcome
    });
    match outcome {
        Ok(status) => status.into(),
        Err(e) => {
            ui::error(e.to_string());
            e.exit_status().into()
        }
    }
}
