//! Stack selection: names, display paths and glob patterns, `--all`, the automatic pick of a
//! single-stack app, and dependency order for every multi-stack command: the manifest's
//! dependencies plus the cross-stack references the templates imply.
//!
//! Patterns follow the CDK CLI: `*` does not cross `/`, so `'*'` selects the top-level stacks and
//! `MyStage/*` the stacks of one Stage. Globs match display paths; a plain name may also be a
//! stack name or an artifact id.

use std::collections::{BTreeSet, HashMap};

use super::cross_refs;
use super::manifest::{CloudAssembly, StackArtifact};
use super::AssemblyError;

#[derive(Debug, Clone, Default)]
pub struct Selector<'a> {
    pub patterns: &'a [String],
    pub all: bool,
    /// Also select every stack the selected ones depend on or import from (deploy without
    /// --exclusively).
    pub with_dependencies: bool,
}

/// The selected stacks in dependency order, with the edges between them.
#[derive(Debug)]
pub struct Selection<'a> {
    /// Dependencies first; ties keep manifest order.
    pub stacks: Vec<&'a StackArtifact>,
    /// For each stack (by position), the positions of the earlier stacks it comes after:
    /// manifest dependencies and every reference the templates imply.
    pub after: Vec<Vec<usize>>,
    /// The part of `after` the stack needs: manifest dependencies and the producers of what
    /// it imports (`Fn::ImportValue`), without the weak `Fn::GetStackOutput` reads.
    pub needs: Vec<Vec<usize>>,
    /// Cross-stack references that form a cycle and were set aside to order the stacks.
    pub notes: Vec<String>,
}

/// Selects stacks and returns them in dependency order (dependencies first; ties keep manifest
/// order). An empty app selects nothing without error.
pub fn select<'a>(
    assembly: &'a CloudAssembly,
    selector: &Selector<'_>,
) -> Result<Vec<&'a StackArtifact>, AssemblyError> {
    Ok(select_ordered(assembly, selector)?.stacks)
}

/// [`select`], with the edges between the selected stacks: the manifest's, plus those the
/// templates imply (see [`super::cross_refs`]). With `with_dependencies`, what a selected
/// stack depends on or imports from is selected too; a stack it only reads with
/// `Fn::GetStackOutput` is ordered before it when selected, and never brought in.
pub fn select_ordered<'a>(
    assembly: &'a CloudAssembly,
    selector: &Selector<'_>,
) -> Result<Selection<'a>, AssemblyError> {
    let stacks = &assembly.stacks;
    let mut chosen: BTreeSet<usize> = BTreeSet::new();
    if selector.all {
        chosen.extend(0..stacks.len());
    } else if selector.patterns.is_empty() {
        match stacks.len() {
            0 => {}
            1 => {
                chosen.insert(0);
            }
            _ => {
                return Err(AssemblyError::AmbiguousSelection {
                    available: names(stacks),
                })
            }
        }
    } else {
        for pattern in selector.patterns {
            let matched = matching(stacks, pattern)?;
            if matched.is_empty() {
                return Err(AssemblyError::NoSuchStack {
                    pattern: pattern.clone(),
                    available: names(stacks),
                });
            }
            chosen.extend(matched);
        }
    }
    if chosen.is_empty() {
        return Ok(Selection {
            stacks: Vec::new(),
            after: Vec::new(),
            needs: Vec::new(),
            notes: Vec::new(),
        });
    }
    // One stack, nothing to bring in: no order to find, no template to read.
    let graph = if chosen.len() == 1 && !selector.with_dependencies {
        Graph::manifest_only(stacks)
    } else {
        Graph::new(stacks)
    };
    if selector.with_dependencies {
        let mut queue: Vec<usize> = chosen.iter().copied().collect();
        while let Some(i) = queue.pop() {
            for j in graph.edges(i, Tier::Needed) {
                if chosen.insert(j) {
                    queue.push(j);
                }
            }
        }
    }
    order(stacks, &graph, &chosen)
}

fn matching(stacks: &[StackArtifact], pattern: &str) -> Result<Vec<usize>, AssemblyError> {
    let is_glob = pattern.contains(['*', '?', '[']);
    if !is_glob {
        return Ok(stacks
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.display_name == pattern || s.stack_name == pattern || s.artifact_id == pattern
            })
            .map(|(i, _)| i)
            .collect());
    }
    let glob = glob::Pattern::new(pattern).map_err(|e| AssemblyError::BadPattern {
        pattern: pattern.to_owned(),
        message: e.msg.to_owned(),
    })?;
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    Ok(stacks
        .iter()
        .enumerate()
        .filter(|(_, s)| glob.matches_with(&s.display_name, options))
        .map(|(i, _)| i)
        .collect())
}

type Key<'a> = (&'a std::path::Path, &'a str);

fn index(stacks: &[StackArtifact]) -> HashMap<Key<'_>, usize> {
    stacks
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.assembly_dir.as_path(), s.artifact_id.as_str()), i))
        .collect()
}

/// Which of a stack's edges a step honours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    /// Every edge: manifest, imports, output reads.
    All,
    /// Manifest dependencies and imports.
    Needed,
    /// Manifest dependencies alone.
    Manifest,
}

/// Each stack's edges, as indices into the assembly's stacks.
struct Graph {
    manifest: Vec<Vec<usize>>,
    /// Inferred from `Fn::ImportValue`.
    imports: Vec<Vec<usize>>,
    /// Inferred from `Fn::GetStackOutput` alone.
    reads: Vec<Vec<usize>>,
}

impl Graph {
    fn manifest_only(stacks: &[StackArtifact]) -> Self {
        let by_key = index(stacks);
        let manifest: Vec<Vec<usize>> = stacks
            .iter()
            .map(|s| {
                s.dependencies
                    .iter()
                    .filter_map(|d| by_key.get(&(s.assembly_dir.as_path(), d.as_str())).copied())
                    .collect()
            })
            .collect();
        Graph {
            manifest,
            imports: vec![Vec::new(); stacks.len()],
            reads: vec![Vec::new(); stacks.len()],
        }
    }

    fn new(stacks: &[StackArtifact]) -> Self {
        let mut graph = Graph::manifest_only(stacks);
        for e in cross_refs::infer_from_templates(stacks) {
            if graph.manifest[e.consumer].contains(&e.producer) {
                continue;
            }
            if e.strong {
                graph.imports[e.consumer].push(e.producer);
            } else {
                graph.reads[e.consumer].push(e.producer);
            }
        }
        graph
    }

    fn edges(&self, i: usize, tier: Tier) -> impl Iterator<Item = usize> + '_ {
        let imports: &[usize] = match tier {
            Tier::All | Tier::Needed => self.imports[i].as_slice(),
            Tier::Manifest => &[],
        };
        let reads: &[usize] = match tier {
            Tier::All => self.reads[i].as_slice(),
            Tier::Needed | Tier::Manifest => &[],
        };
        self.manifest[i].iter().chain(imports).chain(reads).copied()
    }
}

/// Kahn's algorithm over the chosen stacks, lowest manifest index first among the ready ones.
/// When only inferred references keep every remaining stack waiting (stacks that read each
/// other), the first stack the manifest lets go is placed with its reads, then its imports,
/// set aside, and a note says so; a cycle of manifest dependencies is an error.
fn order<'a>(
    stacks: &'a [StackArtifact],
    graph: &Graph,
    chosen: &BTreeSet<usize>,
) -> Result<Selection<'a>, AssemblyError> {
    let mut remaining: BTreeSet<usize> = chosen.clone();
    let mut sequence: Vec<usize> = Vec::with_capacity(chosen.len());
    let mut notes = Vec::new();
    while !remaining.is_empty() {
        let ready = [Tier::All, Tier::Needed, Tier::Manifest]
            .into_iter()
            .find_map(|tier| {
                remaining
                    .iter()
                    .copied()
                    .find(|&i| {
                        graph
                            .edges(i, tier)
                            .all(|d| d == i || !remaining.contains(&d))
                    })
                    .map(|i| (i, tier))
            });
        let Some((i, tier)) = ready else {
            return Err(AssemblyError::DependencyCycle {
                stacks: remaining
                    .iter()
                    .map(|&i| stacks[i].display_name.clone())
                    .collect(),
            });
        };
        if tier != Tier::All {
            let mut waiting: Vec<String> = graph
                .edges(i, Tier::All)
                .filter(|&d| d != i && remaining.contains(&d))
                .map(|d| stacks[d].display_name.clone())
                .collect();
            waiting.dedup();
            notes.push(format!(
                "{} and {} read each other's outputs; {} goes first, so on a first deploy \
                 what it reads from them does not exist yet",
                stacks[i].display_name,
                waiting.join(", "),
                stacks[i].display_name
            ));
        }
        remaining.remove(&i);
        sequence.push(i);
    }
    let position: HashMap<usize, usize> =
        sequence.iter().enumerate().map(|(p, &i)| (i, p)).collect();
    let earlier = |p: usize, tier: Tier| -> Vec<usize> {
        let mut out: Vec<usize> = graph
            .edges(sequence[p], tier)
            .filter_map(|d| position.get(&d).copied())
            .filter(|&q| q < p)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    };
    Ok(Selection {
        stacks: sequence.iter().map(|&i| &stacks[i]).collect(),
        after: (0..sequence.len()).map(|p| earlier(p, Tier::All)).collect(),
        needs: (0..sequence.len())
            .map(|p| earlier(p, Tier::Needed))
            .collect(),
        notes,
    })
}

fn names(stacks: &[StackArtifact]) -> Vec<String> {
    stacks.iter().map(|s| s.display_name.clone()).collect()
}
