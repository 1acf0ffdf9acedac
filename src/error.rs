//! The top-level error and its mapping to exit codes.
//!
//! Each layer has its own typed error; this enum gathers them so `run()` can print one line and
//! pick the exit code the spec defines: 0 success, 1 failure, 2 partial failure, 3 for diff's
//! blocking refusals.

use std::process::ExitCode;

use crate::assembly::AssemblyError;
use crate::aws::AwsError;
use crate::config::ConfigError;
use crate::plan::PlanError;
use crate::state::backend::BackendError;
use crate::state::bucket::BucketError;
use crate::state::edit::EditError;
use crate::state::lock::LockError;
use crate::state::StateError;
use crate::template::TemplateError;

/// How a command ended, as the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    Success = 0,
    Failure = 1,
    Partial = 2,
    Blocked = 3,
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> Self {
        ExitCode::from(status as u8)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Assembly(#[from] AssemblyError),
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error(transparent)]
    Aws(#[from] AwsError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Bucket(#[from] BucketError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Edit(#[from] EditError),
    #[error(transparent)]
    Assets(#[from] crate::assets::AssetError),
    #[error(transparent)]
    Context(#[from] crate::context::ContextError),
    #[error(transparent)]
    ContextStore(#[from] crate::context::store::StoreError),
    #[error(transparent)]
    Drift(#[from] crate::engine::drift::write::DriftError),
    /// Wrong or conflicting arguments that clap cannot express.
    #[error("{0}")]
    Usage(String),
    /// Some of the work was done, some failed; state was kept.
    #[error("{0}")]
    Partial(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Partial(_) => ExitStatus::Partial,
            _ => ExitStatus::Failure,
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
