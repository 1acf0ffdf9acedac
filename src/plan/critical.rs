//! The critical path: the chain of resources whose expected durations add up
//! to the most, which bounds how fast a fully parallel walk can finish.
//! Used for reporting only.

use std::time::Duration;

use super::graph::DependencyGraph;
use super::Direction;

/// The longest weighted chain through the graph.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CriticalPath {
    /// Logical ids in walking order (first to start, first).
    pub ids: Vec<String>,
    /// The sum of their weights.
    pub total: Duration,
}

impl DependencyGraph {
    /// The chain, walked in `direction`, whose `weight`s (expected
    /// durations) add up to the most. Ties go to the chain whose members come
    /// first in walking order. Empty for an empty graph.
    pub fn critical_path(
        &self,
        direction: Direction,
        weight: impl Fn(&str) -> Duration,
    ) -> CriticalPath {
        let n = self.len();
        // best[i]: the heaviest chain ending at i; prev[i]: its previous link.
        let mut best = vec![Duration::ZERO; n];
        let mut prev: Vec<Option<usize>> = vec![None; n];
        let order = self.order_indices(direction);
        let mut rank = vec![0; n];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r;
        }
        for &i in &order {
            let mut pre = self.prerequisites(i, direction);
            pre.sort_by_key(|&p| rank[p]);
            let mut from: Option<usize> = None;
            for p in pre {
                if from.is_none_or(|f| best[p] > best[f]) {
                    from = Some(p);
                }
            }
            prev[i] = from;
            best[i] = from.map_or(Duration::ZERO, |f| best[f]) + weight(self.id_at(i));
        }
        let mut end: Option<usize> = None;
        for &i in &order {
            if end.is_none_or(|e| best[i] > best[e]) {
                end = Some(i);
            }
        }
        let Some(end) = end else {
            return CriticalPath::default();
        };
        let mut ids = vec![end];
        while let Some(p) = prev[*ids.last().expect("non-empty")] {
            ids.push(p);
        }
        ids.reverse();
        CriticalPath {
            ids: ids.into_iter().map(|i| self.id_at(i).to_string()).collect(),
            total: best[end],
        }
    }
}
