//! Stack selection: names, display paths and glob patterns, `--all`, the automatic pick of a
//! single-stack app, and dependency order for every multi-stack command.
//!
//! Patterns follow the CDK CLI: `*` does not cross `/`, so `'*'` selects the top-level stacks and
//! `MyStage/*` the stacks of one Stage. Globs match display paths; a plain name may also be a
//! stack name or an artifact id.

use std::collections::{BTreeSet, HashMap};

use super::manifest::{CloudAssembly, StackArtifact};
use super::AssemblyError;

#[derive(Debug, Clone, Default)]
pub struct Selector<'a> {
    pub patterns: &'a [String],
    pub all: bool,
    /// Also select every stack the selected ones depend on (deploy without --exclusively).
    pub with_dependencies: bool,
}

/// Selects stacks and returns them in dependency order (dependencies first; ties keep manifest
/// order). An empty app selects nothing without error.
pub fn select<'a>(
    assembly: &'a CloudAssembly,
    selector: &Selector<'_>,
) -> Result<Vec<&'a StackArtifact>, AssemblyError> {
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
    if selector.with_dependencies {
        let by_key = index(stacks);
        let mut queue: Vec<usize> = chosen.iter().copied().collect();
        while let Some(i) = queue.pop() {
            for dep in &stacks[i].dependencies {
                if let Some(&j) = by_key.get(&(stacks[i].assembly_dir.as_path(), dep.as_str())) {
                    if chosen.insert(j) {
                        queue.push(j);
                    }
                }
            }
        }
    }
    order(stacks, &chosen)
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

/// Kahn's algorithm over the chosen stacks, lowest manifest index first among the ready ones.
fn order<'a>(
    stacks: &'a [StackArtifact],
    chosen: &BTreeSet<usize>,
) -> Result<Vec<&'a StackArtifact>, AssemblyError> {
    let by_key = index(stacks);
    let deps_of = |i: usize| -> Vec<usize> {
        stacks[i]
            .dependencies
            .iter()
            .filter_map(|d| {
                by_key
                    .get(&(stacks[i].assembly_dir.as_path(), d.as_str()))
                    .copied()
            })
            .filter(|j| chosen.contains(j))
            .collect()
    };
    let mut remaining: BTreeSet<usize> = chosen.clone();
    let mut out = Vec::with_capacity(chosen.len());
    while !remaining.is_empty() {
        let ready = remaining
            .iter()
            .copied()
            .find(|&i| deps_of(i).iter().all(|d| !remaining.contains(d)));
        match ready {
            Some(i) => {
                remaining.remove(&i);
                out.push(&stacks[i]);
            }
            None => {
                return Err(AssemblyError::DependencyCycle {
                    stacks: remaining
                        .iter()
                        .map(|&i| stacks[i].display_name.clone())
                        .collect(),
                })
            }
        }
    }
    Ok(out)
}

fn names(stacks: &[StackArtifact]) -> Vec<String> {
    stacks.iter().map(|s| s.display_name.clone()).collect()
}
