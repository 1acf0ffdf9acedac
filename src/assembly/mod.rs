//! The cloud assembly: running the app (or reading an existing assembly directory), the
//! manifest's stacks, nested assemblies, annotations, missing context, and stack selection.

pub mod assets;
mod cross_refs;
mod environment;
mod manifest;
pub mod prefix_names;
mod select;
mod synth;

use std::path::{Path, PathBuf};

pub use environment::{Environment, UNKNOWN_ACCOUNT, UNKNOWN_REGION};
pub use manifest::{Annotation, CloudAssembly, MissingContext, Severity, StackArtifact};
pub use select::{select, select_ordered, Selection, Selector};
pub use synth::{run_app, run_build, SynthInput};

#[derive(Debug, thiserror::Error)]
pub enum AssemblyError {
    #[error("cloud assembly {file}: cannot read: {source}")]
    ReadManifest {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cloud assembly {file}: invalid JSON at line {line} column {column}: {message}")]
    InvalidJson {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("cloud assembly {file}: {path}: {message}")]
    Manifest {
        file: PathBuf,
        path: String,
        message: String,
    },
    #[error("cannot run the app `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the app `{command}` failed with {status}; fix the app (its output is above) and try again"
    )]
    AppFailed { command: String, status: String },
    #[error("the cdk.json build command `{command}` failed with {status}; fix the build (its output is above) and try again")]
    BuildFailed { command: String, status: String },
    #[error("the app `{command}` wrote no manifest.json to {outdir}; is it a CDK app that calls app.synth()?")]
    NoManifest { command: String, outdir: PathBuf },
    #[error("cannot create the output directory {dir}: {source}")]
    OutputDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no stack matches `{pattern}`; stacks in this app: {}", list(.available))]
    NoSuchStack {
        pattern: String,
        available: Vec<String>,
    },
    #[error("this app has several stacks; name one or more, or pass --all. Stacks: {}", list(.available))]
    AmbiguousSelection { available: Vec<String> },
    #[error("invalid stack pattern `{pattern}`: {message}")]
    BadPattern { pattern: String, message: String },
    #[error("stack dependencies form a cycle among: {}", .stacks.join(", "))]
    DependencyCycle { stacks: Vec<String> },
    #[error("synthesis reported {count} error(s); first: {path}: {message}")]
    ErrorAnnotations {
        count: usize,
        path: String,
        message: String,
    },
    #[error("synthesis reported {count} warning(s) (--strict mode); first: {path}: {message}; fix them, or deploy without --strict")]
    StrictWarnings {
        count: usize,
        path: String,
        message: String,
    },
    #[error("the cloud assembly lacks context values: {}; synthesize from the app command (cdkd then looks them up), or pass them with -c key=value", describe_missing(.missing))]
    MissingContext { missing: Vec<MissingContext> },
}

impl AssemblyError {
    pub(crate) fn manifest(file: &Path, path: &str, message: &str) -> Self {
        AssemblyError::Manifest {
            file: file.to_owned(),
            path: path.to_owned(),
            message: message.to_owned(),
        }
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_owned()
    } else {
        names.join(", ")
    }
}

fn describe_missing(missing: &[MissingContext]) -> String {
    missing
        .iter()
        .map(|m| format!("{} ({})", m.key, m.provider))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where the assembly comes from: an app command or a directory that already holds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppSource {
    Directory(PathBuf),
    Command(String),
}

impl AppSource {
    /// An `--app` that names an existing directory is an assembly; anything else is a command.
    pub fn classify(app: &str, project_dir: &Path) -> Self {
        let candidate = project_dir.join(app);
        if candidate.is_dir() {
            AppSource::Directory(candidate)
        } else {
            AppSource::Command(app.to_owned())
        }
    }
}

/// Produces the cloud assembly: synthesizes through the app command, or loads the directory.
pub async fn obtain(
    source: &AppSource,
    project_dir: &Path,
    outdir: &Path,
    input: SynthInput<'_>,
) -> Result<CloudAssembly, AssemblyError> {
    match source {
        AppSource::Directory(dir) => CloudAssembly::load(dir),
        AppSource::Command(command) => {
            run_app(command, project_dir, outdir, input).await?;
            CloudAssembly::load(outdir)
        }
    }
}

/// How annotations fail a run (upstream cdkd's and the CDK CLI's `--strict` and
/// `--ignore-errors`): by default an error fails and a warning is printed; `strict` fails on a
/// warning too; `ignore_errors` prints errors without failing. Both: strict wins.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnnotationPolicy {
    pub strict: bool,
    pub ignore_errors: bool,
}

/// Splits the selected stacks' annotations under the default policy: warnings are returned to
/// print, errors fail.
pub fn check_annotations(stacks: &[&StackArtifact]) -> Result<Vec<Annotation>, AssemblyError> {
    check_annotations_with(stacks, AnnotationPolicy::default())
}

/// [`check_annotations`] under `policy`; the annotations returned are to be printed.
pub fn check_annotations_with(
    stacks: &[&StackArtifact],
    policy: AnnotationPolicy,
) -> Result<Vec<Annotation>, AssemblyError> {
    let all: Vec<&Annotation> = stacks.iter().flat_map(|s| s.annotations.iter()).collect();
    let of = |severity: Severity| -> Vec<&Annotation> {
        all.iter()
            .copied()
            .filter(|a| a.severity == severity)
            .collect()
    };
    let (errors, warnings) = (of(Severity::Error), of(Severity::Warning));
    if let Some(first) = errors
        .first()
        .filter(|_| policy.strict || !policy.ignore_errors)
    {
        return Err(AssemblyError::ErrorAnnotations {
            count: errors.len(),
            path: first.path.clone(),
            message: first.message.clone(),
        });
    }
    if let Some(first) = warnings.first().filter(|_| policy.strict) {
        return Err(AssemblyError::StrictWarnings {
            count: warnings.len(),
            path: first.path.clone(),
            message: first.message.clone(),
        });
    }
    Ok(errors.into_iter().chain(warnings).cloned().collect())
}
