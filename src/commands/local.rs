//! `cdkd local invoke` (a function of the app, run on this machine) and the hidden
//! `cdkd local run-invocation` (the test emulator's way into the same runner).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use aws_credential_types::provider::ProvideCredentials;
use serde_json::{json, Value};

use super::local_function::{self, Code, LocalFunction};
use super::Session;
use crate::cli::{LocalCommand, LocalInvokeArgs, RunInvocationArgs};
use crate::error::{Error, ExitStatus, Result};
use crate::lambda_runtime::code::Scratch;
use crate::lambda_runtime::{self, Ending, ErrorKind, Invocation, Language, Outcome};
use crate::ui;

/// Where the Node.js runtimes' preinstalled AWS SDK v3 is found (NODE_PATH) when the code
/// does not bundle its own: the Lambda service ships `@aws-sdk/client-*` with the runtime,
/// and the CDK's own handlers (S3 auto-delete, AwsCustomResource, the provider framework)
/// rely on it.
pub const NODE_PATH_VAR: &str = crate::env::CDKD_LAMBDA_NODE_PATH;

/// Variables of cdkd's own environment a function run locally inherits: where AWS is and
/// how to reach it. Credentials come from cdkd's credential chain instead (`credentials`).
const PASSTHROUGH: &[&str] = &[
    "AWS_ENDPOINT_URL",
    "AWS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_USE_FIPS_ENDPOINT",
    "AWS_USE_DUALSTACK_ENDPOINT",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];

pub async fn run(session: &Session, command: &LocalCommand) -> Result<ExitStatus> {
    match command {
        LocalCommand::Invoke(args) => invoke(session, args).await,
        LocalCommand::RunInvocation(args) => run_invocation(args).await,
    }
}

fn passthrough() -> BTreeMap<String, String> {
    std::env::vars()
        .filter(|(k, _)| PASSTHROUGH.contains(&k.as_str()) || k.starts_with("AWS_ENDPOINT_URL_"))
        .collect()
}

fn node_path(flag: Option<&PathBuf>) -> Option<PathBuf> {
    flag.cloned().or_else(|| {
        std::env::var_os(NODE_PATH_VAR)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

/// Runs the invocation on a blocking thread (the runner waits on a child process).
async fn execute(invocation: Invocation) -> Result<Outcome> {
    tokio::task::spawn_blocking(move || lambda_runtime::run(&invocation))
        .await
        .map_err(|e| Error::Usage(format!("the local Lambda runtime stopped: {e}")))?
        .map_err(|e| Error::Usage(e.to_string()))
}

// -- run-invocation ------------------------------------------------------------------------

async fn run_invocation(args: &RunInvocationArgs) -> Result<ExitStatus> {
    let mut event = Vec::new();
    std::io::stdin()
        .read_to_end(&mut event)
        .map_err(|e| Error::io("reading the event from stdin", e))?;
    let environment: BTreeMap<String, String> = match &args.environment {
        None => BTreeMap::new(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
            serde_json::from_str(&text).map_err(|e| {
                Error::Usage(format!(
                    "{}: expected a JSON object of strings: {e}",
                    path.display()
                ))
            })?
        }
    };
    let function_arn = args.function_arn.clone().unwrap_or_else(|| {
        format!(
            "arn:aws:lambda:us-east-1:123456789012:function:{}",
            args.function_name
        )
    });
    let region = function_arn
        .split(':')
        .nth(3)
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .or_else(|| std::env::var("AWS_REGION").ok())
        .unwrap_or_else(|| "us-east-1".to_owned());
    let mut passthrough = passthrough();
    for key in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    ] {
        if let Ok(v) = std::env::var(key) {
            passthrough.insert(key.to_owned(), v);
        }
    }
    let invocation = Invocation {
        code: args.code.clone(),
        runtime: args.runtime.clone(),
        handler: args.handler.clone(),
        environment,
        passthrough,
        timeout: Duration::from_secs(args.timeout.max(1)),
        memory_mb: args.memory,
        function_name: args.function_name.clone(),
        function_arn,
        region,
        node_path: node_path(args.node_path.as_ref()),
        event,
    };
    match execute(invocation).await {
        Ok(outcome) => {
            ui::output(outcome_json(&outcome).to_string());
            Ok(ExitStatus::Success)
        }
        Err(e) => {
            ui::output(
                json!({"status": "runner-error", "errorMessage": e.to_string()}).to_string(),
            );
            Ok(ExitStatus::Failure)
        }
    }
}

/// The outcome as the emulator (and `local invoke --json`) reads it.
fn outcome_json(outcome: &Outcome) -> Value {
    let (status, payload) = match &outcome.ending {
        Ending::Success(bytes) => ("success", Some(String::from_utf8_lossy(bytes).into_owned())),
        Ending::Error {
            kind: ErrorKind::Function,
            ..
        } => ("error", None),
        Ending::Error {
            kind: ErrorKind::Init,
            ..
        } => ("init-error", None),
        Ending::Timeout(_) => ("timeout", None),
        Ending::Exited { .. } => ("exited", None),
    };
    json!({
        "status": status,
        "requestId": outcome.request_id,
        "payload": payload,
        "error": outcome.ending.error_document(),
        "logs": outcome.logs,
        "durationMs": outcome.duration.as_millis() as u64,
        "interpreter": outcome.interpreter,
    })
}

// -- invoke --------------------------------------------------------------------------------

async fn invoke(session: &Session, args: &LocalInvokeArgs) -> Result<ExitStatus> {
    let event = read_event(args)?;
    let assembly = session.assembly().await?;
    let (stack, template, logical_id) = local_function::find(&assembly, &args.target)?;
    let clients = session.clients().await;
    let region = stack
        .environment
        .region
        .clone()
        .or_else(|| clients.default_region())
        .unwrap_or_else(|| "us-east-1".to_owned());
    let account = match stack.environment.account.clone() {
        Some(a) => Some(a),
        None => session.best_effort_environment().await.0,
    };
    let state = if args.from_state {
        let backend = session.state_backend().await?;
        let loaded = backend
            .load_for_reading(&stack.stack_name, &region)
            .await?
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--from-state: no state record for stack {} in {region}; deploy it first, or leave --from-state out",
                    stack.stack_name
                ))
            })?;
        Some(loaded.parsed.state)
    } else {
        None
    };
    let mut function = local_function::describe(
        stack,
        &template,
        &logical_id,
        &region,
        account.clone(),
        state.as_ref(),
    )?;
    if let Some(file) = &args.env_vars {
        apply_env_overrides(&mut function, file)?;
    }
    for name in &function.unresolved {
        ui::warn(format!(
            "{}: environment variable {name} left unset",
            function.logical_id
        ));
    }
    if !Language::supports(&function.runtime) {
        return Err(Error::Usage(
            lambda_runtime::RunnerError::Unsupported {
                runtime: function.runtime.clone(),
            }
            .to_string(),
        ));
    }
    let inline = Scratch::new("inline").map_err(|e| Error::Usage(e.to_string()))?;
    let code = match &function.code {
        Code::Path(p) => p.clone(),
        Code::Inline(text) => {
            let file = if function.runtime.starts_with("python") {
                "index.py"
            } else {
                "index.js"
            };
            std::fs::write(inline.path().join(file), text).map_err(|e| {
                Error::io(
                    format!("writing the inline code of {}", function.logical_id),
                    e,
                )
            })?;
            inline.path().to_path_buf()
        }
    };
    let mut passthrough = passthrough();
    passthrough.extend(credentials(session).await);
    let account_part = account.clone().unwrap_or_else(|| "000000000000".to_owned());
    let invocation = Invocation {
        code,
        runtime: function.runtime.clone(),
        handler: function.handler.clone(),
        environment: function.environment.clone(),
        passthrough,
        timeout: function.timeout,
        memory_mb: function.memory_mb,
        function_name: function.function_name.clone(),
        function_arn: format!(
            "arn:aws:lambda:{region}:{account_part}:function:{}",
            function.function_name
        ),
        region,
        node_path: node_path(None),
        event,
    };
    ui::info(format!(
        "invoking {} ({}, {}) locally",
        function.path.as_deref().unwrap_or(&function.logical_id),
        function.runtime,
        function.handler
    ));
    let outcome = execute(invocation).await?;
    drop(inline);
    report(&function, &outcome, args.json)
}

fn read_event(args: &LocalInvokeArgs) -> Result<Vec<u8>> {
    let bytes = match args.event.as_deref() {
        _ if args.event_stdin => read_stdin()?,
        Some("-") => read_stdin()?,
        Some(file) => std::fs::read(file)
            .map_err(|e| Error::io(format!("reading the event file {file}"), e))?,
        None => b"{}".to_vec(),
    };
    let source = args.event.as_deref().unwrap_or("stdin");
    serde_json::from_slice::<Value>(&bytes)
        .map_err(|e| Error::Usage(format!("the event ({source}) is not JSON: {e}")))?;
    Ok(bytes)
}

fn read_stdin() -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("reading the event from stdin", e))?;
    Ok(bytes)
}

/// `--env-vars`: `{"VAR": "v"}` or `{"LogicalId": {"VAR": "v"}}` (SAM's shape; only the
/// invoked function's entry applies).
fn apply_env_overrides(function: &mut LocalFunction, file: &PathBuf) -> Result<()> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Error::io(format!("reading --env-vars {}", file.display()), e))?;
    let doc: serde_json::Map<String, Value> = serde_json::from_str(&text).map_err(|e| {
        Error::Usage(format!(
            "--env-vars {}: expected a JSON object: {e}",
            file.display()
        ))
    })?;
    let scoped = doc
        .get(&function.logical_id)
        .and_then(Value::as_object)
        .cloned();
    let flat = scoped.unwrap_or_else(|| doc.into_iter().filter(|(_, v)| !v.is_object()).collect());
    for (k, v) in flat {
        let value = match v {
            Value::String(s) => s,
            other => other.to_string(),
        };
        function
            .unresolved
            .retain(|u| u.split(' ').next() != Some(k.as_str()));
        function.environment.insert(k, value);
    }
    Ok(())
}

/// cdkd's own credentials (profile, role, environment) for the function's SDK calls.
async fn credentials(session: &Session) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let config = session.clients().await.config(None);
    let Some(provider) = config.credentials_provider() else {
        return out;
    };
    match provider.provide_credentials().await {
        Ok(creds) => {
            out.insert("AWS_ACCESS_KEY_ID".into(), creds.access_key_id().to_owned());
            out.insert(
                "AWS_SECRET_ACCESS_KEY".into(),
                creds.secret_access_key().to_owned(),
            );
            if let Some(token) = creds.session_token() {
                out.insert("AWS_SESSION_TOKEN".into(), token.to_owned());
            }
        }
        Err(e) => ui::warn(format!(
            "no AWS credentials for the function ({e}); it runs without any"
        )),
    }
    out
}

/// Prints the logs (stderr) and the result (stdout); exit 1 on a function error or timeout.
fn report(function: &LocalFunction, outcome: &Outcome, as_json: bool) -> Result<ExitStatus> {
    let failed = !matches!(outcome.ending, Ending::Success(_));
    ui::info(format!(
        "{} ran on {}",
        function.runtime, outcome.interpreter
    ));
    if as_json {
        ui::output(outcome_json(outcome).to_string());
    } else {
        eprint!("{}", outcome.logs);
        match &outcome.ending {
            Ending::Success(bytes) => ui::output(String::from_utf8_lossy(bytes)),
            _ => {
                if let Some(doc) = outcome.ending.error_document() {
                    ui::output(doc.to_string());
                }
            }
        }
    }
    if failed {
        let doc = outcome.ending.error_document().unwrap_or(Value::Null);
        let kind = doc
            .get("errorType")
            .and_then(Value::as_str)
            .unwrap_or("Unhandled");
        let message = doc
            .get("errorMessage")
            .and_then(Value::as_str)
            .unwrap_or("");
        let what = match outcome.ending {
            Ending::Timeout(_) => "timed out",
            _ => "failed",
        };
        ui::error(format!(
            "{}:{} {what}: {kind}: {message}",
            function.stack, function.logical_id
        ));
        return Ok(ExitStatus::Failure);
    }
    Ok(ExitStatus::Success)
}
