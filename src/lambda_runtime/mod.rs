//! A local Lambda runtime: runs one invocation of a Node.js or Python function on this
//! machine, without Docker, the way the Lambda service runs it.
//!
//! The runner serves the Lambda Runtime API on a loopback port for one invocation
//! ([`api`]), starts the language's interpreter as a child process with Lambda's standard
//! environment and a small bootstrap of our own that loops on that API ([`bootstrap`],
//! [`launch`]), and answers with what the handler posted back: its result, its error, or a
//! timeout once the function's timeout passed (the child is killed). Everything the child
//! wrote to stdout and stderr is the invocation's log. The code is a directory or a zip
//! archive ([`code`]).
//!
//! Users: `cdkd local invoke` (a function of the app, from the assembly or from state) and
//! the hidden `cdkd local run-invocation`, through which the test emulator
//! (scripts/lambda_invocations.py) runs the functions it holds, custom-resource handlers
//! included.

pub mod api;
pub mod bootstrap;
pub mod code;
pub mod launch;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

pub use launch::run;

/// What to run: one function, one event.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The function's code: a directory or a zip archive.
    pub code: PathBuf,
    /// The Lambda runtime identifier (`nodejs20.x`, `python3.12`).
    pub runtime: String,
    /// The handler (`index.handler`, `app/main.lambda_handler`).
    pub handler: String,
    /// The function's environment variables (its `Environment.Variables`).
    pub environment: BTreeMap<String, String>,
    /// Extra variables of the caller's environment: credentials, region, endpoints. The
    /// function's own variables win over these; Lambda's reserved ones win over both.
    pub passthrough: BTreeMap<String, String>,
    pub timeout: Duration,
    pub memory_mb: u32,
    pub function_name: String,
    pub function_arn: String,
    pub region: String,
    /// Directory put on NODE_PATH (the SDK the Lambda Node.js runtimes preinstall).
    pub node_path: Option<PathBuf>,
    /// The event, as the bytes the caller sent.
    pub event: Vec<u8>,
}

/// How an invocation ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The handler returned: its result as the JSON bytes it posted.
    Success(Vec<u8>),
    /// The handler (or the runtime loading it) reported an error: the Lambda error document
    /// (`errorType`, `errorMessage`, `trace` / `stackTrace`).
    Error { kind: ErrorKind, document: Value },
    /// The function ran past its timeout and was stopped.
    Timeout(Duration),
    /// The runtime process ended without answering (a crash, `process.exit`).
    Exited { code: Option<i32> },
}

/// Which Runtime API route an error came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `POST /runtime/invocation/{id}/error`: the handler threw or returned an error.
    Function,
    /// `POST /runtime/init/error`: the handler could not be loaded.
    Init,
}

impl Ending {
    /// The error type Lambda reports for this ending (`X-Amz-Function-Error` and the
    /// document's `errorType`), `None` on success.
    pub fn error_document(&self) -> Option<Value> {
        match self {
            Ending::Success(_) => None,
            Ending::Error { document, .. } => Some(document.clone()),
            Ending::Timeout(after) => Some(serde_json::json!({
                "errorType": "Sandbox.Timedout",
                "errorMessage": format!("Task timed out after {:.2} seconds", after.as_secs_f64()),
            })),
            Ending::Exited { code } => Some(serde_json::json!({
                "errorType": "Runtime.ExitError",
                "errorMessage": match code {
                    Some(c) => format!("RequestId: the runtime exited with status {c} before answering"),
                    None => "RequestId: the runtime was killed by a signal before answering".to_owned(),
                },
            })),
        }
    }
}

/// The result of one invocation.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub ending: Ending,
    /// stdout and stderr of the runtime, in the order they arrived, between the START and
    /// END / REPORT lines Lambda writes.
    pub logs: String,
    pub duration: Duration,
    pub request_id: String,
    /// The interpreter that ran it (`node v20.20.2`, `python3 3.11.7`).
    pub interpreter: String,
}

/// Why an invocation could not be run at all (as opposed to a function that failed).
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("runtime `{runtime}` is not one the local runner supports (Node.js nodejs18.x and later, Python python3.9 and later); run it in AWS or with Docker")]
    Unsupported { runtime: String },
    #[error("runtime `{runtime}` needs `{program}` on PATH, which was not found: install {language} to run this function locally")]
    NotInstalled {
        runtime: String,
        program: String,
        language: &'static str,
    },
    #[error("function code {path}: {message}")]
    Code { path: PathBuf, message: String },
    #[error("local Lambda runtime: {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl RunnerError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        RunnerError::Io {
            context: context.into(),
            source,
        }
    }
}

/// A runtime family the runner can start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    Node { major: u32 },
    Python { minor: u32 },
}

impl Language {
    /// `nodejs18.x`.. and `python3.9`.., else `None`.
    pub fn parse(runtime: &str) -> Option<Language> {
        if let Some(rest) = runtime.strip_prefix("nodejs") {
            let major: u32 = rest.strip_suffix(".x")?.parse().ok()?;
            return (major >= 18).then_some(Language::Node { major });
        }
        if let Some(rest) = runtime.strip_prefix("python3.") {
            let minor: u32 = rest.parse().ok()?;
            return (minor >= 9).then_some(Language::Python { minor });
        }
        None
    }

    /// Whether the runner runs `runtime` (the emulator asks before routing an Invoke here).
    pub fn supports(runtime: &str) -> bool {
        Language::parse(runtime).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_runtimes_are_node_18_up_and_python_3_9_up() {
        assert_eq!(
            Language::parse("nodejs20.x"),
            Some(Language::Node { major: 20 })
        );
        assert_eq!(
            Language::parse("nodejs18.x"),
            Some(Language::Node { major: 18 })
        );
        assert_eq!(Language::parse("nodejs16.x"), None);
        assert_eq!(
            Language::parse("python3.12"),
            Some(Language::Python { minor: 12 })
        );
        assert_eq!(Language::parse("python3.8"), None);
        assert_eq!(Language::parse("java21"), None);
        assert_eq!(Language::parse("provided.al2023"), None);
        assert_eq!(Language::parse("nodejs"), None);
    }
}
