//! Running the app: a shell command that writes a cloud assembly, with the environment the CDK
//! CLI gives it. Its stdout and stderr are streamed to our stderr, so cdkd's own stdout stays
//! clean for templates and JSON.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use super::AssemblyError;
use crate::env;

/// What the app is told about where it runs.
#[derive(Debug, Default, Clone)]
pub struct SynthInput<'a> {
    pub context: Map<String, Value>,
    pub default_account: Option<&'a str>,
    pub default_region: Option<&'a str>,
}

/// Context keys the CDK CLI always sets, so the assembly carries construct paths and asset metadata.
fn cli_context(mut context: Map<String, Value>) -> Map<String, Value> {
    context
        .entry("aws:cdk:enable-path-metadata")
        .or_insert(Value::Bool(true));
    context
        .entry("aws:cdk:enable-asset-metadata")
        .or_insert(Value::Bool(true));
    context
        .entry("aws:cdk:bundling-stacks")
        .or_insert_with(|| Value::Array(vec![Value::String("**".into())]));
    context
}

/// Runs `command` through the shell in `cwd`, writing the assembly to `outdir`.
pub async fn run_app(
    command: &str,
    cwd: &Path,
    outdir: &Path,
    input: SynthInput<'_>,
) -> Result<(), AssemblyError> {
    std::fs::create_dir_all(outdir).map_err(|source| AssemblyError::OutputDir {
        dir: outdir.to_owned(),
        source,
    })?;
    let context = Value::Object(cli_context(input.context));
    let mut cmd = shell(command);
    cmd.current_dir(cwd)
        .env(env::CDK_OUTDIR, outdir)
        .env(env::CDK_CONTEXT_JSON, context.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    match input.default_account {
        Some(a) => cmd.env(env::CDK_DEFAULT_ACCOUNT, a),
        None => cmd.env_remove(env::CDK_DEFAULT_ACCOUNT),
    };
    match input.default_region {
        Some(r) => cmd.env(env::CDK_DEFAULT_REGION, r),
        None => cmd.env_remove(env::CDK_DEFAULT_REGION),
    };
    tracing::debug!(command, outdir = %outdir.display(), "running the app");

    let mut child = cmd.spawn().map_err(|source| AssemblyError::Spawn {
        command: command.to_owned(),
        source,
    })?;
    let out = child.stdout.take().map(|s| tokio::spawn(forward(s)));
    let err = child.stderr.take().map(|s| tokio::spawn(forward(s)));
    let status = child.wait().await.map_err(|source| AssemblyError::Spawn {
        command: command.to_owned(),
        source,
    })?;
    for task in [out, err].into_iter().flatten() {
        let _ = task.await;
    }
    if !status.success() {
        return Err(AssemblyError::AppFailed {
            command: command.to_owned(),
            status: status
                .code()
                .map_or_else(|| "a signal".to_owned(), |c| format!("exit code {c}")),
        });
    }
    if !outdir.join("manifest.json").is_file() {
        return Err(AssemblyError::NoManifest {
            command: command.to_owned(),
            outdir: outdir.to_owned(),
        });
    }
    Ok(())
}

/// Runs cdk.json's `build` command through the shell in `cwd` before the app is synthesized,
/// as the CDK CLI does; its output goes to our stderr, a failure stops the run.
pub async fn run_build(command: &str, cwd: &Path) -> Result<(), AssemblyError> {
    let mut cmd = shell(command);
    cmd.current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    tracing::info!(command, "running the cdk.json build command");
    let spawn_error = |source| AssemblyError::Spawn {
        command: command.to_owned(),
        source,
    };
    let mut child = cmd.spawn().map_err(spawn_error)?;
    let out = child.stdout.take().map(|s| tokio::spawn(forward(s)));
    let err = child.stderr.take().map(|s| tokio::spawn(forward(s)));
    let status = child.wait().await.map_err(spawn_error)?;
    for task in [out, err].into_iter().flatten() {
        let _ = task.await;
    }
    if status.success() {
        return Ok(());
    }
    Err(AssemblyError::BuildFailed {
        command: command.to_owned(),
        status: status
            .code()
            .map_or_else(|| "a signal".to_owned(), |c| format!("exit code {c}")),
    })
}

/// Copies the app's output lines to our stderr as they arrive.
async fn forward(stream: impl AsyncRead + Unpin) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        eprintln!("{line}");
    }
}

#[cfg(unix)]
fn shell(command: &str) -> tokio::process::Command {
    let mut c = tokio::process::Command::new("sh");
    c.arg("-c").arg(command);
    c
}

#[cfg(not(unix))]
fn shell(command: &str) -> tokio::process::Command {
    let mut c = tokio::process::Command::new("cmd");
    c.arg("/C").arg(command);
    c
}
