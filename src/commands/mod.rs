//! Command handlers: glue from typed options to the engines. Each handler resolves settings,
//! obtains what it needs (assembly, clients, state) and returns an exit status; behaviour lives
//! in the layers below.

mod asset_storage;
mod bootstrap;
mod bootstrap_destroy;
mod context;
mod deploy;
mod destroy;
mod diff;
mod drift;
mod events;
mod force_unlock;
mod gc;
mod import;
mod list;
mod local;
mod local_function;
mod orphan;
mod orphan_state;
mod publish_assets;
mod rollback;
mod scrub;
mod state;
mod state_migrate;
mod state_views;
mod synth;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OnceCell;

use crate::assembly::{
    self, AppSource, CloudAssembly, Selection, Selector, StackArtifact, SynthInput,
};
use crate::aws::{ClientOptions, Clients};
use crate::cli::{Cli, Command, StackSelection};
use crate::config::{Settings, Sources};
use crate::context::{ContextFile, Lookups, LoopOptions};
use crate::error::{ExitStatus, Result};
use crate::state::backend::S3Backend;
use crate::state::bucket::{self, StateBucket};
use crate::state::StateKeys;
use crate::ui;

/// What every handler shares: merged settings and lazily built AWS clients.
pub struct Session {
    pub settings: Settings,
    clients: OnceCell<Clients>,
}

impl Session {
    pub fn new(settings: Settings) -> Self {
        Session {
            settings,
            clients: OnceCell::new(),
        }
    }

    pub async fn clients(&self) -> &Clients {
        self.clients
            .get_or_init(|| async {
                Clients::load(&ClientOptions {
                    region: self.settings.region.clone(),
                    profile: self.settings.profile.clone(),
                    role_arn: self.settings.role_arn.clone(),
                })
                .await
            })
            .await
    }

    /// The caller's account and region when they can be had quickly; `None` halves otherwise.
    /// Used only to tell an app (or a listing) its default environment, as the CDK CLI does.
    pub async fn best_effort_environment(&self) -> (Option<String>, Option<String>) {
        let clients = self.clients().await;
        let region = clients.default_region();
        let account = tokio::time::timeout(Duration::from_secs(5), clients.account_id())
            .await
            .ok()
            .and_then(|r| {
                r.map_err(|e| tracing::debug!("no default account: {e}"))
                    .ok()
            });
        (account, region)
    }

    /// The state bucket (name and region) this run uses.
    pub async fn state_bucket(&self) -> Result<StateBucket> {
        Ok(bucket::resolve(self.clients().await, self.settings.state_bucket.as_deref()).await?)
    }

    /// The S3 state backend, its client targeted at the bucket's region.
    pub async fn state_backend(&self) -> Result<S3Backend> {
        let bucket = self.state_bucket().await?;
        let backend = S3Backend::connect(
            self.clients().await,
            &bucket,
            StateKeys::new(self.settings.state_prefix.clone()),
        );
        // Custom-resource handlers answer into this bucket, whichever command runs them.
        crate::provider::routing::use_state_bucket_for_custom_resources(&backend);
        Ok(backend)
    }

    /// Runs the app (or reads the assembly directory) and returns the loaded assembly, its
    /// missing context looked up and saved to cdk.context.json first (unless --no-lookups).
    pub async fn assembly(&self) -> Result<CloudAssembly> {
        self.synthesize(true).await
    }

    /// Runs the app once and returns the assembly as it is, missing context and all (`list`
    /// only warns about it).
    pub async fn assembly_without_lookups(&self) -> Result<CloudAssembly> {
        self.synthesize(false).await
    }

    async fn synthesize(&self, lookups: bool) -> Result<CloudAssembly> {
        let app = self.settings.require_app()?;
        let source = AppSource::classify(app, &self.settings.project_dir);
        let AppSource::Command(command) = &source else {
            return Ok(assembly::obtain(
                &source,
                &self.settings.project_dir,
                &self.settings.output,
                SynthInput::default(),
            )
            .await?);
        };
        // cdk.json "build" runs before an app command, never before an assembly directory.
        if let Some(build) = &self.settings.build {
            assembly::run_build(build, &self.settings.project_dir).await?;
        }
        let (account, region) = self.best_effort_environment().await;
        let input = SynthInput {
            context: self.settings.context.clone(),
            default_account: account.as_deref(),
            default_region: region.as_deref(),
        };
        if !lookups {
            return Ok(assembly::obtain(
                &source,
                &self.settings.project_dir,
                &self.settings.output,
                input,
            )
            .await?);
        }
        let lookups = if self.settings.lookups {
            Some(Arc::new(Lookups::new(self.clients().await)))
        } else {
            None
        };
        let context_file = ContextFile::in_dir(&self.settings.project_dir);
        let options = LoopOptions {
            command,
            project_dir: &self.settings.project_dir,
            outdir: &self.settings.output,
            lookups,
            context_file: &context_file,
        };
        Ok(crate::context::synthesize(options, input).await?)
    }
}

/// Selects stacks, prints their warning annotations and fails on error annotations.
pub fn select_stacks<'a>(
    assembly: &'a CloudAssembly,
    selection: &StackSelection,
    with_dependencies: bool,
) -> Result<Vec<&'a StackArtifact>> {
    Ok(select_ordered(assembly, selection, with_dependencies)?.stacks)
}

/// [`select_stacks`] with the edges between the selected stacks (for the commands that
/// schedule them); notes on cross-stack references set aside are printed as warnings.
pub fn select_ordered<'a>(
    assembly: &'a CloudAssembly,
    selection: &StackSelection,
    with_dependencies: bool,
) -> Result<Selection<'a>> {
    select_ordered_with(
        assembly,
        selection,
        with_dependencies,
        assembly::AnnotationPolicy::default(),
    )
}

/// [`select_ordered`] with annotations judged by `policy` (`--strict`, `--ignore-errors`).
pub fn select_ordered_with<'a>(
    assembly: &'a CloudAssembly,
    selection: &StackSelection,
    with_dependencies: bool,
    policy: assembly::AnnotationPolicy,
) -> Result<Selection<'a>> {
    let selected = assembly::select_ordered(
        assembly,
        &Selector {
            patterns: &selection.stacks,
            all: selection.all,
            with_dependencies,
        },
    )?;
    for note in assembly::check_annotations_with(&selected.stacks, policy)? {
        let line = format!("{}: {}", note.path, note.message);
        match note.severity {
            assembly::Severity::Error => ui::error(line),
            _ => ui::warn(line),
        }
    }
    for note in &selected.notes {
        ui::warn(note);
    }
    Ok(selected)
}

/// Missing context makes templates carry dummy values; refuse to act on them.
pub fn require_complete(assembly: &CloudAssembly) -> Result<()> {
    if assembly.missing.is_empty() {
        Ok(())
    } else {
        Err(assembly::AssemblyError::MissingContext {
            missing: assembly.missing.clone(),
        }
        .into())
    }
}

/// Runs `one` for each of the stacks a command names (upstream cdkd's commands take several),
/// one after another. One stack: its result as it is. Several: each is attempted, a failure
/// printed as its line; the status is the worst one, and partial (2) when some stacks failed
/// and others did not.
pub(crate) async fn each_stack<'a, F, Fut>(stacks: &'a [String], mut one: F) -> Result<ExitStatus>
where
    F: FnMut(&'a str) -> Fut,
    Fut: std::future::Future<Output = Result<ExitStatus>>,
{
    if let [only] = stacks {
        return one(only).await;
    }
    let (mut failed, mut succeeded) = (0, 0);
    let mut worst = ExitStatus::Success;
    for stack in stacks {
        match one(stack).await {
            Ok(ExitStatus::Success) => succeeded += 1,
            Ok(status) => {
                failed += 1;
                if status as u8 > worst as u8 {
                    worst = status;
                }
            }
            Err(e) => {
                ui::error(format!("{stack}: {e}"));
                failed += 1;
                worst = ExitStatus::Failure;
            }
        }
    }
    Ok(match (failed, succeeded) {
        (0, _) => ExitStatus::Success,
        (_, 0) => worst,
        _ => ExitStatus::Partial,
    })
}

/// Runs one parsed command line.
pub async fn dispatch(cli: Cli) -> Result<ExitStatus> {
    let sources = Sources::from_process()?;
    let settings = Settings::resolve(&cli.global, &sources)?;
    let session = Session::new(settings);
    match &cli.command {
        Command::Deploy(args) => deploy::run(&session, args).await,
        Command::Destroy(args) => destroy::run(&session, args).await,
        Command::Diff(args) => diff::run(&session, args).await,
        Command::Synth(args) => synth::run(&session, args).await,
        Command::List(args) => list::run(&session, args).await,
        Command::Bootstrap(args) => bootstrap::run(&session, args).await,
        Command::State(cmd) => state::run(&session, cmd).await,
        Command::ForceUnlock(args) => force_unlock::run(&session, args).await,
        Command::PublishAssets(args) => publish_assets::run(&session, args).await,
        Command::Rollback(args) => rollback::run(&session, args).await,
        Command::Scrub(args) => scrub::run(&session, args).await,
        Command::Import(args) => import::run(&session, args).await,
        Command::Orphan(args) => orphan::run(&session, args).await,
        Command::Drift(args) => drift::run(&session, args).await,
        Command::Context(args) => context::run(&session, args),
        Command::Events(args) => events::run(&session, args).await,
        Command::Gc(args) => gc::run(&session, args).await,
        Command::Local(cmd) => local::run(&session, cmd).await,
    }
}
