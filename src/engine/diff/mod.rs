//! `cdkd diff`: what a deploy of each stack would change, for people and for CI.
//!
//! Per stack the record is read (leniently: a diff never writes, so damage is dropped, warned
//! about and reported under "blocking"), and the deploy's own preparation, change computation
//! and outputs bag are run against it ([`crate::engine::deploy::preview`]); no lock is taken.
//! Outside values resolve as the deploy resolves them (cross-stack reads, SSM-typed
//! parameters, public `{{resolve:ssm:...}}`), through a reader with no exports index that
//! withholds secrets: a secret-bearing reference is compared as the expression state stores,
//! and no secret is fetched. A value that cannot be resolved before a dependency exists is not
//! compared. An attribute a reference reads that the record of an existing resource lacks is
//! read back from AWS first (read-only, as the deploy does); one that cannot be read is a
//! change `[known after deploy]`. With `--recursive`, nested stacks are diffed against their
//! child records (`{parent}~{logicalId}`) and shown under their parent.
//!
//! - [`rows`]: resource rows with only the changed sub-properties;
//! - [`outputs`]: the outputs bag compared key by key, with the spec's withholding rules.

pub mod outputs;
mod removed;
pub mod rows;

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::engine::deploy::preview::{preview, Preview};
use crate::engine::deploy::DeployError;
use crate::plan::{references, ChangeKind};
use crate::provider::Registry;
use crate::resolve::{ExternalReader, ParameterOverride};
use crate::state::backend::S3Backend;
use crate::state::StackState;

pub use outputs::{OutputChange, OutputDiff};
pub use rows::{PropertyChange, ResourceDiff};

/// What every stack of one `cdkd diff` shares.
pub struct DiffEnv {
    pub backend: Arc<S3Backend>,
    pub registry: Arc<Registry>,
    /// Outside reads, read-only: no exports index, and it must withhold secrets
    /// ([`ExternalReader::withholding_secrets`]); `None` leaves every outside value unknown.
    pub reader: Option<Arc<ExternalReader>>,
    pub account_id: String,
    /// Reads back an attribute a reference reads that a record lacks (read-only); `None`
    /// leaves such a property a possible change.
    pub clients: Option<Arc<crate::aws::Clients>>,
    /// `--recursive`: diff each nested stack against its child record, under its parent.
    pub recursive: bool,
}

/// The stack to diff.
pub struct DiffTarget<'a> {
    pub stack_name: &'a str,
    pub region: &'a str,
    pub template_file: &'a Path,
    /// The stack's tags (the deploy's stack_tags.rs), in the resources as a deploy writes them.
    pub stack_tags: &'a [(String, String)],
}

/// The diff of one stack (and, recursively, its nested stacks).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StackDiff {
    pub stack_name: String,
    pub region: String,
    /// The logical id of the row in the parent, for a nested stack.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_logical_id: Option<String>,
    /// No record exists yet: a deploy creates the stack.
    pub new_stack: bool,
    pub resources: Vec<ResourceDiff>,
    pub outputs: Vec<OutputDiff>,
    /// Refusals a deploy of this stack would hit (exit status 3).
    pub blocking: Vec<String>,
    /// Notes that are not changes (they never fail `--fail`).
    pub notes: Vec<String>,
    /// The IAM statements, managed policies and security-group rules the deploy adds or
    /// removes (crate::plan::security).
    #[serde(skip_serializing_if = "crate::plan::security::SecurityChanges::is_empty")]
    pub security: crate::plan::security::SecurityChanges,
    pub nested: Vec<StackDiff>,
}

impl StackDiff {
    /// Whether a deploy would change anything here or in a nested stack.
    pub fn has_changes(&self) -> bool {
        !self.resources.is_empty()
            || !self.outputs.is_empty()
            || self.nested.iter().any(StackDiff::has_changes)
    }

    /// Whether the deploy broadens permissions here or in a nested stack.
    pub fn broadens(&self) -> bool {
        self.security.broadening || self.nested.iter().any(StackDiff::broadens)
    }

    /// Whether a blocking refusal applies here or in a nested stack.
    pub fn is_blocked(&self) -> bool {
        !self.blocking.is_empty() || self.nested.iter().any(StackDiff::is_blocked)
    }
}

/// A stack that could not be diffed at all.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error(transparent)]
    Deploy(#[from] DeployError),
    #[error("reading the state of {stack} ({region}) failed: {detail}")]
    State {
        stack: String,
        region: String,
        detail: String,
    },
}

/// Diffs one stack against its record, then its nested stacks.
pub async fn diff_stack(
    env: &DiffEnv,
    target: &DiffTarget<'_>,
    overrides: &[ParameterOverride],
) -> Result<StackDiff, DiffError> {
    diff_boxed(
        env,
        target.stack_name.to_owned(),
        target.region.to_owned(),
        target.template_file.to_path_buf(),
        target.stack_tags.to_vec(),
        overrides.to_vec(),
        Vec::new(),
        None,
    )
    .await
}

type Boxed<'a> = Pin<Box<dyn Future<Output = Result<StackDiff, DiffError>> + Send + 'a>>;

fn diff_boxed(
    env: &DiffEnv,
    stack: String,
    region: String,
    template_file: std::path::PathBuf,
    stack_tags: Vec<(String, String)>,
    overrides: Vec<ParameterOverride>,
    secret_parameters: Vec<(String, Option<String>)>,
    parent_logical_id: Option<String>,
) -> Boxed<'_> {
    Box::pin(async move {
        let mut diff = StackDiff {
            stack_name: stack.clone(),
            region: region.clone(),
            parent_logical_id,
            ..StackDiff::default()
        };
        let loaded = env
            .backend
            .load_for_reading(&stack, &region)
            .await
            .map_err(|e| DiffError::State {
                stack: stack.clone(),
                region: region.clone(),
                detail: e.to_string(),
            })?;
        let state = match loaded {
            Some(l) => {
                for w in &l.parsed.warnings {
                    crate::ui::warn(w);
                }
                for defect in &l.parsed.defects {
                    diff.blocking.push(format!(
                        "{}: {defect}; the damaged part was left out of this preview, so the \
                         preview is wrong there, and cdkd deploy refuses this record until it \
                         is repaired",
                        defect.code()
                    ));
                }
                l.parsed.state
            }
            None => {
                diff.new_stack = true;
                StackState::new(&stack, &region)
            }
        };
        let state = match &env.clients {
            Some(clients) => {
                crate::engine::deploy::unrecorded::complete_for_preview(
                    &env.registry,
                    clients,
                    &stack,
                    &region,
                    &env.account_id,
                    &template_file,
                    state,
                )
                .await
            }
            None => state,
        };
        let pre = preview(
            &stack,
            &region,
            &env.account_id,
            &template_file,
            &stack_tags,
            &overrides,
            &secret_parameters,
            env.reader.clone(),
            &state,
            &env.registry,
        )
        .await?;
        diff.blocking.extend(pre.refusals.iter().cloned());
        diff.security = pre.changes.security.clone();
        diff.resources = rows::resource_rows(&pre, &state);
        let (outs, notes) = outputs::compare(&outputs::OutputsInput {
            stack: &stack,
            desired: &pre.outputs,
            failed: &pre.failed_outputs,
            stored: state.outputs.as_ref(),
            recorded_skipped: state.skipped_outputs(),
            changed_resources: &changed_ids(&pre),
            template: &pre.template,
            condition_skipped: &pre.condition_skipped_outputs,
            needles: &pre.needles,
        });
        diff.outputs = outs;
        diff.notes.extend(notes);
        if let Some(note) = no_echo_note(&pre) {
            diff.notes.push(note);
        }

        for child in pre.nested.iter().filter(|_| env.recursive) {
            let name = child.stack_name.clone();
            let (file, params) = match (&child.template_file, &child.parameters) {
                (Ok(f), Ok(p)) => (f.clone(), p.clone()),
                (Err(e), _) | (_, Err(e)) => {
                    diff.notes.push(format!(
                        "nested stack {} ({name}) not diffed: {e}",
                        child.logical_id
                    ));
                    continue;
                }
            };
            let nested = diff_boxed(
                env,
                name,
                region.clone(),
                file,
                child.stack_tags.clone(),
                params,
                child.secret_parameters.clone(),
                Some(child.logical_id.clone()),
            )
            .await?;
            diff.nested.push(nested);
        }
        if env.recursive {
            let withhold = outputs::template_holds_secret_reference(&pre.template);
            for change in removed_nested(&pre) {
                let child = format!("{stack}~{change}");
                let sub = removed::removed_subtree(
                    env,
                    child,
                    region.clone(),
                    change.clone(),
                    withhold,
                    &pre.needles,
                );
                diff.nested.push(sub.await?);
            }
        }
        Ok(diff)
    })
}

/// The nested stack rows the deploy deletes (removed from the template, or condition-false).
fn removed_nested(pre: &Preview) -> Vec<String> {
    pre.changes
        .changes
        .iter()
        .filter(|c| {
            c.kind == ChangeKind::Delete && crate::engine::deploy::is_nested(&c.resource_type)
        })
        .map(|c| c.logical_id.clone())
        .collect()
}

/// The logical ids a deploy would create, update, replace or delete.
fn changed_ids(pre: &Preview) -> Vec<String> {
    pre.changes
        .changes
        .iter()
        .filter(|c| c.kind != ChangeKind::NoChange)
        .map(|c| c.logical_id.clone())
        .collect()
}

/// "N unchanged resources read a NoEcho parameter": the diff compares the masks only.
fn no_echo_note(pre: &Preview) -> Option<String> {
    let no_echo: Vec<&String> = pre
        .template
        .parameters
        .iter()
        .filter(|(_, p)| p.no_echo)
        .map(|(n, _)| n)
        .collect();
    if no_echo.is_empty() {
        return None;
    }
    let count = pre
        .changes
        .changes
        .iter()
        .filter(|c| c.kind == ChangeKind::NoChange)
        .filter(|c| {
            pre.template.resources.get(&c.logical_id).is_some_and(|r| {
                let props = Value::Object(r.properties.clone());
                references(&props)
                    .iter()
                    .any(|x| no_echo.iter().any(|n| **n == x.target))
            })
        })
        .count();
    (count > 0).then(|| {
        format!(
            "{count} unchanged resource(s) read a NoEcho parameter; the diff compares the \
             masked values only (a changed NoEcho value is not visible here)"
        )
    })
}
