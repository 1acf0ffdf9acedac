//! The dependency graph of one stack's resources.
//!
//! Nodes are the resources in scope (those left after condition pruning), in
//! template order; a node's index is its template position, which is what
//! every deterministic tie-break uses. Edges point from a dependency to its
//! dependent. A graph that exists has no cycle among its dependency edges:
//! the constructors refuse one with [`PlanError::ResourceCycle`].

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use petgraph::Direction as Dir;
use serde_json::{Map, Value};

use super::delete_rules::{implicit_edges, RuleNode};
use super::refs::references;
use super::{Direction, PlanError};
use crate::template::Template;

/// Why one resource comes before another. One edge per ordered pair; the
/// flags say which relations hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Edge {
    /// The dependent names the dependency with `Ref`, `Fn::GetAtt` or `Fn::Sub`.
    pub reference: bool,
    /// `DependsOn` in the template, or a dependency recorded in state.
    pub depends_on: bool,
    /// An implicit delete-order rule ([`super::DELETE_RULES`]) by name: the
    /// dependent is deleted before the dependency. Ignored when deploying.
    pub delete_rule: Option<&'static str>,
}

impl Edge {
    /// Whether the edge orders creation (and therefore deletion too).
    pub fn is_dependency(&self) -> bool {
        self.reference || self.depends_on
    }
}

#[derive(Debug, Clone)]
struct Node {
    id: String,
    type_: String,
}

/// One resource as state records it, for [`DependencyGraph::from_records`].
#[derive(Debug, Clone, Copy)]
pub struct RecordNode<'a> {
    pub logical_id: &'a str,
    pub resource_type: &'a str,
    /// Lets the delete rules match a resolved property such as
    /// `VpcId: "vpc-0abc"` to the resource that holds that id.
    pub physical_id: Option<&'a str>,
    pub properties: Option<&'a Map<String, Value>>,
    /// The recorded dependencies (logical ids). Ids not among the records
    /// are ignored: those resources are gone already.
    pub dependencies: &'a [String],
}

/// The resources of one stack and the order between them.
#[derive(Debug, Clone)]
pub struct DependencyGraph {
    stack: String,
    graph: DiGraph<Node, Edge>,
    index: HashMap<String, NodeIndex>,
}

impl DependencyGraph {
    /// Builds the graph of `template`'s resources that are in `scope` (the
    /// ones left after condition pruning; ids the template lacks are
    /// ignored). `stack` names the stack in errors.
    ///
    /// Edges come from every `Ref`, `Fn::GetAtt` and `Fn::Sub` placeholder in
    /// `Properties` that names a resource in scope, and from `DependsOn`.
    /// References to parameters, pseudo parameters and pruned resources are
    /// not edges; a `DependsOn` on a pruned resource is dropped, as
    /// CloudFormation does, but one on a resource the template does not have
    /// is an error.
    pub fn from_template<I, S>(
        stack: &str,
        template: &Template,
        scope: I,
    ) -> Result<Self, PlanError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Self::from_template_relaxing(stack, template, scope, false)
    }

    /// [`from_template`](Self::from_template); with `relax`, without the CDK's defensive
    /// `DependsOn` edges ([`super::defensive`]): a `DependsOn` between those type pairs adds
    /// no edge (a reference between them still does).
    pub fn from_template_relaxing<I, S>(
        stack: &str,
        template: &Template,
        scope: I,
        relax: bool,
    ) -> Result<Self, PlanError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let wanted: HashSet<String> = scope.into_iter().map(|s| s.as_ref().to_string()).collect();
        let mut g = Self::empty(stack);
        let mut rule_nodes = Vec::new();
        for (id, res) in template
            .resources
            .iter()
            .filter(|(id, _)| wanted.contains(*id))
        {
            g.add_node(id, &res.type_);
            rule_nodes.push(RuleNode {
                id,
                type_: &res.type_,
                properties: Some(&res.properties),
                physical_id: None,
            });
        }
        for (id, res) in template
            .resources
            .iter()
            .filter(|(id, _)| wanted.contains(*id))
        {
            let to = g.index[id];
            for dep in &res.depends_on {
                if !template.resources.contains_key(dep) {
                    return Err(PlanError::UnknownDependsOn {
                        stack: stack.to_string(),
                        resource: id.clone(),
                        target: dep.clone(),
                    });
                }
                let relaxed = relax
                    && super::defensive::is_defensive(&res.type_, &template.resources[dep].type_);
                if let Some(&from) = g.index.get(dep).filter(|_| !relaxed) {
                    g.mark(from, to, |e| e.depends_on = true);
                }
            }
            g.add_references(to, &res.properties);
        }
        g.finish(&rule_nodes)
    }

    /// [`from_template`](Self::from_template) with every resource in scope.
    pub fn from_template_all(stack: &str, template: &Template) -> Result<Self, PlanError> {
        Self::from_template(stack, template, template.resources.keys())
    }

    /// Builds the graph of resources as state records them (for destroy):
    /// recorded dependencies, any references still present in the recorded
    /// properties, and the implicit delete rules. Records keep their order.
    pub fn from_records<'a, I>(stack: &str, records: I) -> Result<Self, PlanError>
    where
        I: IntoIterator<Item = RecordNode<'a>>,
    {
        let records: Vec<RecordNode<'a>> = records.into_iter().collect();
        let mut g = Self::empty(stack);
        for r in &records {
            if !g.index.contains_key(r.logical_id) {
                g.add_node(r.logical_id, r.resource_type);
            }
        }
        let mut rule_nodes: Vec<Option<RuleNode>> = vec![None; g.graph.node_count()];
        for r in &records {
            let to = g.index[r.logical_id];
            rule_nodes[to.index()].get_or_insert(RuleNode {
                id: r.logical_id,
                type_: r.resource_type,
                properties: r.properties,
                physical_id: r.physical_id,
            });
            for dep in r.dependencies {
                if let Some(&from) = g.index.get(dep) {
                    g.mark(from, to, |e| e.depends_on = true);
                }
            }
            if let Some(props) = r.properties {
                g.add_references(to, props);
            }
        }
        let rule_nodes: Vec<RuleNode> = rule_nodes.into_iter().flatten().collect();
        g.finish(&rule_nodes)
    }

    fn empty(stack: &str) -> Self {
        DependencyGraph {
            stack: stack.to_string(),
            graph: DiGraph::new(),
            index: HashMap::new(),
        }
    }

    fn add_node(&mut self, id: &str, type_: &str) {
        let n = self.graph.add_node(Node {
            id: id.to_string(),
            type_: type_.to_string(),
        });
        self.index.insert(id.to_string(), n);
    }

    fn add_references(&mut self, to: NodeIndex, properties: &Map<String, Value>) {
        for props in properties.values() {
            for r in references(props) {
                if let Some(&from) = self.index.get(&r.target) {
                    self.mark(from, to, |e| e.reference = true);
                }
            }
        }
    }

    fn mark(&mut self, from: NodeIndex, to: NodeIndex, set: impl FnOnce(&mut Edge)) {
        let e = match self.graph.find_edge(from, to) {
            Some(e) => e,
            None => self.graph.add_edge(from, to, Edge::default()),
        };
        set(&mut self.graph[e]);
    }

    /// Refuses a cycle, then adds the implicit delete-order edges.
    fn finish(mut self, rule_nodes: &[RuleNode]) -> Result<Self, PlanError> {
        if let Some(members) = self.find_cycle() {
            return Err(PlanError::ResourceCycle {
                stack: self.stack.clone(),
                members,
            });
        }
        for e in implicit_edges(rule_nodes) {
            let (first, then) = (NodeIndex::new(e.first), NodeIndex::new(e.then));
            // `first` is deleted before `then`: as if it depended on `then`.
            // A rule never overrides the template: an edge that would close
            // a cycle is left out.
            if first != then && !self.reaches(first, then) {
                self.mark(then, first, |edge| {
                    edge.delete_rule.get_or_insert(e.rule);
                });
            }
        }
        Ok(self)
    }

    /// Whether `to` can be reached from `from` over any edges.
    fn reaches(&self, from: NodeIndex, to: NodeIndex) -> bool {
        let mut seen = HashSet::from([from]);
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            if n == to {
                return true;
            }
            for m in self.graph.neighbors_directed(n, Dir::Outgoing) {
                if seen.insert(m) {
                    stack.push(m);
                }
            }
        }
        false
    }

    /// The first cycle (by template position of its first member), in
    /// "depends on" order, or `None`.
    fn find_cycle(&self) -> Option<Vec<String>> {
        let sccs = petgraph::algo::tarjan_scc(&self.graph);
        let start = sccs
            .iter()
            .filter(|c| c.len() > 1 || self.graph.find_edge(c[0], c[0]).is_some())
            .filter_map(|c| c.iter().min().map(|&m| (m, c)))
            .min_by_key(|(m, _)| *m)?;
        let (s, members) = start;
        let members: HashSet<NodeIndex> = members.iter().copied().collect();
        // Shortest way back to `s` following dependencies, visiting them in
        // template order.
        let mut parent: HashMap<NodeIndex, NodeIndex> = HashMap::new();
        let mut queue = VecDeque::from([s]);
        while let Some(u) = queue.pop_front() {
            for d in self.sorted(self.deps_of(u)) {
                if d == s {
                    let mut path = vec![u];
                    while let Some(&p) = parent.get(path.last().expect("non-empty")) {
                        path.push(p);
                    }
                    path.reverse();
                    return Some(path.iter().map(|&n| self.graph[n].id.clone()).collect());
                }
                if members.contains(&d) && d != s && !parent.contains_key(&d) {
                    parent.insert(d, u);
                    queue.push_back(d);
                }
            }
        }
        None
    }

    fn sorted(&self, mut v: Vec<NodeIndex>) -> Vec<NodeIndex> {
        v.sort();
        v.dedup();
        v
    }

    /// Direct dependencies over dependency edges.
    fn deps_of(&self, n: NodeIndex) -> Vec<NodeIndex> {
        self.linked(n, Dir::Incoming, Edge::is_dependency)
    }

    fn linked(&self, n: NodeIndex, d: Dir, keep: impl Fn(&Edge) -> bool) -> Vec<NodeIndex> {
        let v = self
            .graph
            .edges_directed(n, d)
            .filter(|e| keep(e.weight()))
            .map(|e| {
                if d == Dir::Incoming {
                    e.source()
                } else {
                    e.target()
                }
            })
            .collect();
        self.sorted(v)
    }

    /// What must be finished before `n` can start, walking in `dir`.
    pub(super) fn prerequisites(&self, n: usize, dir: Direction) -> Vec<usize> {
        let n = NodeIndex::new(n);
        let v = match dir {
            Direction::Deploy => self.linked(n, Dir::Incoming, Edge::is_dependency),
            Direction::Delete => self.linked(n, Dir::Outgoing, |_| true),
        };
        v.into_iter().map(NodeIndex::index).collect()
    }

    /// What waits on `n`, walking in `dir`.
    pub(super) fn waiters(&self, n: usize, dir: Direction) -> Vec<usize> {
        let n = NodeIndex::new(n);
        let v = match dir {
            Direction::Deploy => self.linked(n, Dir::Outgoing, Edge::is_dependency),
            Direction::Delete => self.linked(n, Dir::Incoming, |_| true),
        };
        v.into_iter().map(NodeIndex::index).collect()
    }

    /// Node positions in walking order. Ties go to template order when
    /// deploying and to reverse template order when deleting, so a graph
    /// without edges deletes in exactly the reverse of its deploy order.
    pub(super) fn order_indices(&self, dir: Direction) -> Vec<usize> {
        let n = self.graph.node_count();
        let mut pending: Vec<usize> = (0..n).map(|i| self.prerequisites(i, dir).len()).collect();
        let key = |i: usize| match dir {
            Direction::Deploy => Reverse(i),
            Direction::Delete => Reverse(n - 1 - i),
        };
        let mut heap: BinaryHeap<Reverse<usize>> =
            (0..n).filter(|&i| pending[i] == 0).map(key).collect();
        let mut out = Vec::with_capacity(n);
        while let Some(Reverse(k)) = heap.pop() {
            let i = match dir {
                Direction::Deploy => k,
                Direction::Delete => n - 1 - k,
            };
            out.push(i);
            for w in self.waiters(i, dir) {
                pending[w] -= 1;
                if pending[w] == 0 {
                    heap.push(key(w));
                }
            }
        }
        out
    }

    pub(super) fn id_at(&self, i: usize) -> &str {
        &self.graph[NodeIndex::new(i)].id
    }

    /// The stack this graph belongs to.
    pub fn stack(&self) -> &str {
        &self.stack
    }

    pub fn len(&self) -> usize {
        self.graph.node_count()
    }

    pub fn is_empty(&self) -> bool {
        self.graph.node_count() == 0
    }

    pub fn contains(&self, id: &str) -> bool {
        self.index.contains_key(id)
    }

    /// Logical ids in template order.
    pub fn ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.graph.node_weights().map(|n| n.id.as_str())
    }

    pub fn resource_type(&self, id: &str) -> Option<&str> {
        self.index.get(id).map(|&n| self.graph[n].type_.as_str())
    }

    /// Every edge as (dependency, dependent, why), in insertion order.
    pub fn edges(&self) -> impl Iterator<Item = (&str, &str, &Edge)> + '_ {
        self.graph.edge_references().map(|e| {
            (
                self.graph[e.source()].id.as_str(),
                self.graph[e.target()].id.as_str(),
                e.weight(),
            )
        })
    }

    /// The order to create resources in: every dependency before its
    /// dependents; among resources ready at the same time, template order.
    pub fn deploy_order(&self) -> Vec<&str> {
        self.ids_of(self.order_indices(Direction::Deploy))
    }

    /// The order to delete resources in: every dependent before its
    /// dependencies, implicit delete rules included; among resources ready at
    /// the same time, reverse template order.
    pub fn delete_order(&self) -> Vec<&str> {
        self.ids_of(self.order_indices(Direction::Delete))
    }

    /// Direct dependencies of `id` (reference or `DependsOn`), in template
    /// order. Empty for an unknown id.
    pub fn dependencies_of(&self, id: &str) -> Vec<&str> {
        self.walk(id, Dir::Incoming, false, Edge::is_dependency)
    }

    /// Direct dependents of `id`, in template order.
    pub fn dependents_of(&self, id: &str) -> Vec<&str> {
        self.walk(id, Dir::Outgoing, false, Edge::is_dependency)
    }

    /// Everything `id` depends on, directly or not, in template order.
    pub fn transitive_dependencies_of(&self, id: &str) -> Vec<&str> {
        self.walk(id, Dir::Incoming, true, Edge::is_dependency)
    }

    /// Everything that depends on `id`, directly or not, in template order.
    pub fn transitive_dependents_of(&self, id: &str) -> Vec<&str> {
        self.walk(id, Dir::Outgoing, true, Edge::is_dependency)
    }

    /// Direct dependents that name `id` with `Ref` / `Fn::GetAtt` /
    /// `Fn::Sub` (not merely `DependsOn`): the resources whose resolved
    /// properties move when `id`'s physical id or attributes do.
    pub fn referrers_of(&self, id: &str) -> Vec<&str> {
        self.walk(id, Dir::Outgoing, false, |e| e.reference)
    }

    fn walk(&self, id: &str, d: Dir, transitive: bool, keep: fn(&Edge) -> bool) -> Vec<&str> {
        let Some(&start) = self.index.get(id) else {
            return Vec::new();
        };
        let mut seen = HashSet::new();
        let mut todo = vec![start];
        while let Some(n) = todo.pop() {
            for m in self.linked(n, d, keep) {
                if m != start && seen.insert(m) && transitive {
                    todo.push(m);
                }
            }
        }
        let mut v: Vec<NodeIndex> = seen.into_iter().collect();
        v.sort();
        self.ids_of(v.into_iter().map(NodeIndex::index).collect())
    }

    fn ids_of(&self, v: Vec<usize>) -> Vec<&str> {
        v.into_iter().map(|i| self.id_at(i)).collect()
    }
}
