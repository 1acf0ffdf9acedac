//! What a stack's scrub shares with the rest of the run (scrub spec, "across stacks"): the
//! synthesized app's templates (a producer's template decides whether its export is
//! secret-bearing; a nested child's template comes from the assembly), the stacks this run
//! targets (an exports index entry of any other producer is coverage only), the needles a
//! parent hands its nested children, and each stack's scrubbed outputs (so a consumer in a
//! `--dry-run` compares against what its producer WOULD store).
//!
//! The hooks the main pass calls: [`before_main_pass`] (inherited and cross-stack needles),
//! [`after_rewrite`] (cross-stack read names, and the record kept for the later passes) and
//! [`after_stack`] (the exports index pass, then the nested children).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::{Map, Value};

use super::report::{StackOutcome, Verdict};
use super::{cross, exports, nested, ScrubEnv, ScrubOptions, ScrubTarget};
use crate::assembly::{CloudAssembly, StackArtifact};
use crate::redact::Needles;
use crate::state::keys::root_stack_name;
use crate::state::StackState;

/// (stack name, region).
type StackKey = (String, String);

/// One stack of the synthesized app.
#[derive(Debug, Clone)]
pub struct AppStack {
    pub stack_name: String,
    pub region: String,
    pub template: Value,
    pub template_file: PathBuf,
}

/// Run-wide knowledge; `Default` is an app with no stacks (every cross-stack check then
/// treats a producer as outside the app).
#[derive(Debug, Default)]
pub struct RunContext {
    app: Vec<AppStack>,
    targets: BTreeSet<(String, String)>,
    /// (child stack, region) → what its parent's row hands it.
    inherited: Mutex<HashMap<(String, String), nested::Handed>>,
    /// (nested child, region) → its template file (for a grandchild's `aws:asset:path`).
    child_files: Mutex<HashMap<(String, String), PathBuf>>,
    /// (stack, region) → the outputs its scrub stores (or would, under `--dry-run`).
    scrubbed: Mutex<HashMap<StackKey, Option<Map<String, Value>>>>,
    /// Regions whose coverage lines were printed.
    coverage_done: Mutex<BTreeSet<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl RunContext {
    /// Every stack of `assembly` whose template reads as JSON, and the `targets` this run
    /// scrubs. A stack with no region takes `default_region`.
    pub fn from_assembly(
        assembly: &CloudAssembly,
        targets: &[&StackArtifact],
        default_region: Option<&str>,
    ) -> RunContext {
        let region_of = |s: &StackArtifact| {
            s.environment
                .region
                .clone()
                .or_else(|| default_region.map(str::to_owned))
        };
        let app = assembly
            .stacks
            .iter()
            .filter_map(|s| {
                let text = std::fs::read_to_string(&s.template_file).ok()?;
                Some(AppStack {
                    stack_name: s.stack_name.clone(),
                    region: region_of(s)?,
                    template: serde_json::from_str(&text).ok()?,
                    template_file: s.template_file.clone(),
                })
            })
            .collect();
        let targets = targets
            .iter()
            .filter_map(|s| Some((s.stack_name.clone(), region_of(s)?)))
            .collect();
        RunContext {
            app,
            targets,
            ..RunContext::default()
        }
    }

    /// The app's stack `name` in `region`.
    pub fn app_stack(&self, name: &str, region: &str) -> Option<&AppStack> {
        self.app
            .iter()
            .find(|s| s.stack_name == name && s.region == region)
    }

    pub fn app_stacks(&self) -> &[AppStack] {
        &self.app
    }

    /// Whether this run scrubs `stack` (a nested child counts with its top-level stack).
    pub fn is_target(&self, stack: &str, region: &str) -> bool {
        self.targets
            .contains(&(root_stack_name(stack).to_owned(), region.to_owned()))
    }

    /// The template file of `stack`: an app stack's, or a nested child's seen this run.
    pub fn template_file(&self, stack: &str, region: &str) -> Option<PathBuf> {
        if let Some(s) = self.app_stack(stack, region) {
            return Some(s.template_file.clone());
        }
        lock(&self.child_files)
            .get(&(stack.to_owned(), region.to_owned()))
            .cloned()
    }

    pub(super) fn remember_child(
        &self,
        child: &str,
        region: &str,
        file: PathBuf,
        n: nested::Handed,
    ) {
        let key = (child.to_owned(), region.to_owned());
        lock(&self.child_files).insert(key.clone(), file);
        lock(&self.inherited).insert(key, n);
    }

    /// What the parent's row handed this (child) stack; taken once.
    pub(super) fn take_inherited(&self, stack: &str, region: &str) -> Option<nested::Handed> {
        lock(&self.inherited).remove(&(stack.to_owned(), region.to_owned()))
    }

    fn remember_scrubbed(&self, stack: &str, region: &str, outputs: Option<Map<String, Value>>) {
        lock(&self.scrubbed).insert((stack.to_owned(), region.to_owned()), outputs);
    }

    /// The outputs `stack` stores after this run's scrub of it (`None`: not scrubbed).
    pub fn scrubbed_outputs(
        &self,
        stack: &str,
        region: &str,
    ) -> Option<Option<Map<String, Value>>> {
        lock(&self.scrubbed)
            .get(&(stack.to_owned(), region.to_owned()))
            .cloned()
    }

    /// True the first time it is asked for `region` (coverage is reported once a region).
    pub(super) fn first_coverage(&self, region: &str) -> bool {
        lock(&self.coverage_done).insert(region.to_owned())
    }
}

/// What the passes after the main one did for one stack (findings and warnings go to the
/// outcome's own lists).
#[derive(Debug, Clone, Default)]
pub struct AcrossReport {
    /// Exports index entries converged onto `state.outputs` (`'name' (region)`).
    pub index_converged: Vec<String>,
    pub index_versions_purged: usize,
    /// Parent `Outputs.<Name>` attributes rewritten to the child's output.
    pub nested_outputs_scrubbed: usize,
    /// Nested children, scrubbed after this stack.
    pub children: Vec<StackOutcome>,
    /// The record as this run's scrub leaves it (kept for the passes after the save).
    pub(crate) scrubbed: Option<StackState>,
    /// Every needle the stack's scrub used.
    pub(crate) needles: Needles,
    /// Nested-stack row → its `Parameters` as the by-position pass resolved them (references
    /// kept): what the row hands its child.
    pub(crate) nested_params: BTreeMap<String, Value>,
    /// This stack's parameters that count as NoEcho (declared, or handed down from one).
    pub(crate) no_echo_params: BTreeSet<String>,
}

impl AcrossReport {
    pub fn findings_remain(&self) -> bool {
        self.children.iter().any(StackOutcome::findings_remain)
    }

    pub fn unfinished(&self) -> bool {
        self.children.iter().any(StackOutcome::unfinished)
    }

    /// What the summary line adds.
    pub fn summary_suffix(&self) -> String {
        let mut parts = Vec::new();
        if !self.index_converged.is_empty() {
            parts.push(format!(
                "converged {} exports index entr{} ({}); purged {} earlier index version(s)",
                self.index_converged.len(),
                if self.index_converged.len() == 1 {
                    "y"
                } else {
                    "ies"
                },
                self.index_converged.join(", "),
                self.index_versions_purged
            ));
        }
        if self.nested_outputs_scrubbed > 0 {
            parts.push(format!(
                "Scrubbed {} nested-stack output attribute(s)",
                self.nested_outputs_scrubbed
            ));
        }
        if !self.children.is_empty() {
            parts.push("this line covers the parent's own records only".to_owned());
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" [{}]", parts.join("; "))
        }
    }

    /// The children's lines: (warnings, summary lines).
    pub fn child_lines(&self) -> (Vec<String>, Vec<String>) {
        let (mut warnings, mut summaries) = (Vec::new(), Vec::new());
        for c in &self.children {
            let (w, s) = c.lines();
            warnings.extend(w);
            summaries.push(s);
        }
        (warnings, summaries)
    }

    /// The `--json` fields this report adds.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "exportsIndexConverged": self.index_converged,
            "exportsIndexVersionsPurged": self.index_versions_purged,
            "nestedOutputAttributesScrubbed": self.nested_outputs_scrubbed,
            "nested": self.children.iter().map(StackOutcome::to_json).collect::<Vec<_>>(),
        })
    }
}

/// Before the main pass: the needles of the stack's cross-stack reads (refusing the stack when
/// a read cannot be resolved). What a parent hands a child is taken by the caller: its secrets
/// are scoped to the child resources that read the parameter, not run-wide.
pub async fn before_main_pass(
    env: &ScrubEnv,
    target: &ScrubTarget<'_>,
    record: &StackState,
    needles: &mut Needles,
    outcome: &mut StackOutcome,
) {
    cross::cross_region_prepass(env, target, outcome).await;
    cross::learn_reads(env, target, record, needles, outcome).await;
}

/// After the rewrite: the cross-stack read names, and the record kept for later passes.
pub fn after_rewrite(state: &mut StackState, needles: &Needles, outcome: &mut StackOutcome) {
    outcome.rewrite.leaves += cross::redact_read_names(state, needles);
    outcome.across.scrubbed = Some(state.clone());
    outcome.across.needles = needles.clone();
}

/// After the record's save (or a dry run's verdict), still under the stack's lock: the
/// exports index pass, then the nested children.
pub async fn after_stack(
    env: &ScrubEnv,
    target: &ScrubTarget<'_>,
    options: ScrubOptions,
    outcome: &mut StackOutcome,
) {
    let Some(state) = outcome.across.scrubbed.clone() else {
        return;
    };
    env.run
        .remember_scrubbed(target.stack_name, target.region, state.outputs.clone());
    if outcome.is_refused() {
        return;
    }
    // A real run converges the index only onto a record that is stored (a failed save leaves
    // the verdict unset): another failure (a purge, unverified readers) does not stop it.
    let saved = options.dry_run || matches!(outcome.verdict, Verdict::Scrubbed | Verdict::Clean);
    if saved {
        exports::index_pass(env, target, options, &state, outcome).await;
    }
    nested::scrub_children(env, target, options, &state, outcome).await;
}
