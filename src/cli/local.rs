//! `cdkd local`: run the app's Lambda functions on this machine (src/lambda_runtime/).

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum LocalCommand {
    /// Run one Lambda function of the app locally (Node.js and Python runtimes, no Docker)
    /// and print its result and logs; exit 1 when the function fails or times out.
    Invoke(LocalInvokeArgs),
    /// Run one invocation of a function given by its parts (the test emulator's entry
    /// point): the event on stdin, the outcome as one JSON object on stdout.
    #[command(hide = true)]
    RunInvocation(RunInvocationArgs),
}

#[derive(Debug, Args)]
pub struct LocalInvokeArgs {
    /// The function: its construct path (MyStack/MyFunction, the function's own path or its
    /// Resource child's), or STACK:LOGICAL_ID, or a logical id unique in the app.
    #[arg(value_name = "TARGET")]
    pub target: String,
    /// The event: a JSON file, or `-` for stdin [default: {}].
    #[arg(short = 'e', long, value_name = "FILE|-")]
    pub event: Option<String>,
    /// Read the event from stdin (same as `--event -`, upstream cdkd's flag).
    #[arg(long, conflicts_with = "event")]
    pub event_stdin: bool,
    /// Environment variable overrides, a JSON file: `{"VAR": "value"}` for the function, or
    /// `{"LogicalId": {"VAR": "value"}}` (the SAM CLI's shape).
    #[arg(long, value_name = "FILE")]
    pub env_vars: Option<PathBuf>,
    /// Resolve the function's environment from the deployed stack's state (Refs and
    /// Fn::GetAtt of deployed resources) instead of the template alone.
    #[arg(long)]
    pub from_state: bool,
    /// Print the outcome (result, error, logs) as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunInvocationArgs {
    /// The code: a directory or a zip archive.
    #[arg(long, value_name = "PATH")]
    pub code: PathBuf,
    #[arg(long)]
    pub runtime: String,
    #[arg(long)]
    pub handler: String,
    /// Seconds.
    #[arg(long, default_value_t = 3)]
    pub timeout: u64,
    /// MB.
    #[arg(long, default_value_t = 128)]
    pub memory: u32,
    #[arg(long)]
    pub function_name: String,
    #[arg(long)]
    pub function_arn: Option<String>,
    /// The function's environment variables, a JSON object file.
    #[arg(long, value_name = "FILE")]
    pub environment: Option<PathBuf>,
    /// Directory for NODE_PATH (default: CDKD_LAMBDA_NODE_PATH).
    #[arg(long, value_name = "DIR")]
    pub node_path: Option<PathBuf>,
}
