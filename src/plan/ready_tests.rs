//! ReadyTracker: release exactly once, skip on failure, both directions.

use std::collections::HashSet;

use serde_json::json;

use super::graph_tests::graph;
use super::*;

fn diamond() -> DependencyGraph {
    graph(json!({"Resources": {
        "Alias": {"Type": "T", "Properties": {"F": {"Ref": "Fn"}}, "DependsOn": "Policy"},
        "Bucket": {"Type": "T"},
        "Fn": {"Type": "T", "Properties": {"R": {"Fn::GetAtt": ["Role", "Arn"]}, "L": {"Ref": "Log"}}},
        "Log": {"Type": "T"},
        "Policy": {"Type": "T", "Properties": {"Roles": [{"Ref": "Role"}]}},
        "Role": {"Type": "T"},
    }}))
}

#[test]
fn deploy_releases_when_all_dependencies_are_done() {
    let g = diamond();
    let mut t = g.ready_tracker(Direction::Deploy);
    assert_eq!(t.direction(), Direction::Deploy);
    assert_eq!(t.initial_ready(), vec!["Bucket", "Log", "Role"]);
    let steps: &[(&str, &[&str])] = &[
        ("Bucket", &[]),
        ("Role", &["Policy"]),
        ("Log", &["Fn"]),
        ("Log", &[]),
        ("Fn", &[]),
        ("Policy", &["Alias"]),
        ("Nope", &[]),
        ("Alias", &[]),
    ];
    for (id, want) in steps {
        assert!(!t.is_finished());
        assert_eq!(t.complete(id), *want, "completing {id}");
    }
    assert!(t.is_finished());
    assert!(t.unfinished().is_empty());
    assert!(t.complete("Alias").is_empty());
}

#[test]
fn deploy_failure_skips_transitive_dependents() {
    let g = diamond();
    let mut t = g.ready_tracker(Direction::Deploy);
    assert_eq!(t.fail("Role"), vec!["Alias", "Fn", "Policy"]);
    assert_eq!(t.fail("Role"), Vec::<String>::new());
    assert_eq!(t.complete("Fn"), Vec::<String>::new());
    assert_eq!(t.unfinished(), vec!["Bucket", "Log"]);
    assert_eq!(t.complete("Log"), Vec::<String>::new());
    assert_eq!(t.fail("Bucket"), Vec::<String>::new());
    assert!(t.is_finished());
}

#[test]
fn delete_mirrors_deploy() {
    let g = diamond();
    let mut t = g.ready_tracker(Direction::Delete);
    assert_eq!(t.initial_ready(), vec!["Bucket", "Alias"]);
    assert_eq!(t.complete("Alias"), vec!["Policy", "Fn"]);
    assert_eq!(t.complete("Policy"), Vec::<String>::new());
    assert_eq!(t.fail("Fn"), vec!["Log", "Role"]);
    assert_eq!(t.unfinished(), vec!["Bucket"]);
    assert_eq!(t.complete("Bucket"), Vec::<String>::new());
    assert!(t.is_finished());
}

/// Walks the whole graph in a pseudo-random completion order and checks
/// that every resource is released exactly once, after all its
/// prerequisites.
fn walk(g: &DependencyGraph, dir: Direction, seed: u64) {
    let mut t = g.ready_tracker(dir);
    let mut ready: Vec<String> = t.initial_ready().iter().map(|s| s.to_string()).collect();
    let mut released: HashSet<String> = ready.iter().cloned().collect();
    let mut done: HashSet<String> = HashSet::new();
    let mut x = seed;
    while !ready.is_empty() {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let id = ready.remove((x >> 33) as usize % ready.len());
        let prereqs = match dir {
            Direction::Deploy => g.dependencies_of(&id),
            Direction::Delete => g.dependents_of(&id),
        };
        assert!(prereqs.iter().all(|p| done.contains(*p)), "{id} ran early");
        done.insert(id.clone());
        for r in t.complete(&id) {
            assert!(released.insert(r.clone()), "{r} released twice");
            ready.push(r);
        }
    }
    assert_eq!(done.len(), g.len());
    assert!(t.is_finished());
}

#[test]
fn random_walks_release_everything_once() {
    let g = diamond();
    for seed in 0..50 {
        walk(&g, Direction::Deploy, seed);
        walk(&g, Direction::Delete, seed);
    }
}

#[test]
fn delete_tracker_follows_implicit_edges() {
    let g = super::delete_rules_tests::vpc_graph();
    let t = g.ready_tracker(Direction::Delete);
    // The gateway attachment waits for the route, NAT gateway and EIP even
    // though none of them references it.
    assert!(!t.initial_ready().contains(&"Attachment"));
    let order = g.delete_order();
    let pos = |id: &str| order.iter().position(|x| *x == id).unwrap();
    for first in ["Route", "Nat", "Eip"] {
        assert!(
            pos(first) < pos("Attachment"),
            "{first} before Attachment: {order:?}"
        );
    }
    for seed in 0..20 {
        walk(&g, Direction::Delete, seed);
        walk(&g, Direction::Deploy, seed);
    }
}
