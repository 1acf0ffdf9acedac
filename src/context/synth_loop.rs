//! The synthesis loop: run the app; when its manifest lists missing context, answer every
//! missing key (in parallel), save the answers to `cdk.context.json`, hand them to the app and
//! run it again, until nothing is missing.
//!
//! It stops with an error when lookups are off (`--no-lookups`), when a round asks for the same
//! keys as the one before (a lookup that keeps failing: the error carries each provider's
//! message), or after [`MAX_ROUNDS`] rounds (an app whose lookups depend on lookups without
//! end).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::task::JoinSet;

use super::store::{self, ContextFile, StoreError};
use super::{lookup, LookupError, Lookups};
use crate::assembly::{self, AssemblyError, CloudAssembly, MissingContext, SynthInput};
use crate::ui;

/// Synthesis rounds before giving up on an app that keeps needing new context.
pub const MAX_ROUNDS: usize = 10;

#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error("context lookups are disabled (--no-lookups) and the app needs: {}; run once with lookups where credentials for that account are available and keep cdk.context.json, or pass the values with -c KEY=VALUE", .keys.join(", "))]
    LookupsDisabled { keys: Vec<String> },
    #[error("context lookups did not settle, the app keeps asking for: {}; fix the cause, or pass the value with -c KEY=VALUE", .keys.join("; "))]
    NoProgress { keys: Vec<String> },
    #[error("the app still needs new context after {rounds} synthesis rounds: {}; its lookups depend on each other without end", .keys.join(", "))]
    TooManyRounds { rounds: usize, keys: Vec<String> },
    #[error(transparent)]
    Assembly(#[from] AssemblyError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How one command synthesizes.
pub struct LoopOptions<'a> {
    pub command: &'a str,
    pub project_dir: &'a Path,
    pub outdir: &'a Path,
    /// `None` with `--no-lookups`.
    pub lookups: Option<Arc<Lookups>>,
    pub context_file: &'a ContextFile,
}

/// Runs the app until its context is complete; returns the final assembly.
pub async fn synthesize(
    options: LoopOptions<'_>,
    input: SynthInput<'_>,
) -> Result<CloudAssembly, ContextError> {
    let mut context = input.context.clone();
    let mut previous: Option<BTreeSet<String>> = None;
    let mut failures: BTreeMap<String, LookupError> = BTreeMap::new();
    for _ in 0..MAX_ROUNDS {
        let round = SynthInput {
            context: context.clone(),
            ..input.clone()
        };
        assembly::run_app(options.command, options.project_dir, options.outdir, round).await?;
        let assembly = CloudAssembly::load(options.outdir)?;
        let missing = unique(&assembly.missing);
        if missing.is_empty() {
            return Ok(assembly);
        }
        let Some(lookups) = &options.lookups else {
            return Err(ContextError::LookupsDisabled {
                keys: missing.iter().map(|m| describe(m, None)).collect(),
            });
        };
        let keys: BTreeSet<String> = missing.iter().map(|m| m.key.clone()).collect();
        if previous.as_ref() == Some(&keys) {
            return Err(ContextError::NoProgress {
                keys: missing
                    .iter()
                    .map(|m| describe(m, failures.get(&m.key)))
                    .collect(),
            });
        }
        previous = Some(keys);
        let answers = provide(lookups, &missing).await;
        let mut saved = Map::new();
        for (m, answer) in answers {
            let value = match answer {
                Ok(value) => {
                    failures.remove(&m.key);
                    value
                }
                Err(e) => {
                    ui::warn(format!(
                        "context lookup {} ({}) failed: {e}",
                        m.key, m.provider
                    ));
                    let value = store::provider_error(&e.to_string());
                    failures.insert(m.key.clone(), e);
                    value
                }
            };
            saved.insert(m.key.clone(), value.clone());
            context.insert(m.key.clone(), value);
        }
        let written = options.context_file.merge(&saved)?;
        if written > 0 {
            ui::info(format!(
                "Looked up {written} context value(s); saved to {}",
                options.context_file.path.display()
            ));
        }
    }
    let assembly = CloudAssembly::load(options.outdir)?;
    Err(ContextError::TooManyRounds {
        rounds: MAX_ROUNDS,
        keys: unique(&assembly.missing)
            .iter()
            .map(|m| describe(m, None))
            .collect(),
    })
}

/// Each key once (nested assemblies may ask for the same one), in key order.
fn unique(missing: &[MissingContext]) -> Vec<MissingContext> {
    let mut by_key: BTreeMap<&str, &MissingContext> = BTreeMap::new();
    for m in missing {
        by_key.entry(m.key.as_str()).or_insert(m);
    }
    by_key.into_values().cloned().collect()
}

fn describe(m: &MissingContext, failure: Option<&LookupError>) -> String {
    match failure {
        Some(e) => format!("{} ({}): {e}", m.key, m.provider),
        None => format!("{} ({})", m.key, m.provider),
    }
}

/// Every lookup of a round at once; answers in key order. Each one's AWS calls are attributed
/// to it in the trace (stack `(context)`, id = the key).
async fn provide(
    lookups: &Arc<Lookups>,
    missing: &[MissingContext],
) -> Vec<(MissingContext, Result<Value, LookupError>)> {
    let mut tasks = JoinSet::new();
    for m in missing {
        let lookups = Arc::clone(lookups);
        let m = m.clone();
        tasks.spawn(async move {
            let result = crate::aws::trace::scoped(TRACE_STACK, &m.key, lookup(&lookups, &m)).await;
            (m, result)
        });
    }
    let mut out = Vec::with_capacity(missing.len());
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(pair) => out.push(pair),
            Err(e) => tracing::error!("a context lookup task failed: {e}"),
        }
    }
    out.sort_by(|a, b| a.0.key.cmp(&b.0.key));
    out
}

/// The trace's stack name for lookup calls.
pub const TRACE_STACK: &str = "(context)";
