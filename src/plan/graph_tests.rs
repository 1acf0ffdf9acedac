//! Graph building, errors, orders, queries and the critical path.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::template::Template;

pub(super) fn tpl(v: Value) -> Template {
    Template::from_value(v, Path::new("test.json")).expect("valid template")
}

pub(super) fn graph(v: Value) -> DependencyGraph {
    DependencyGraph::from_template_all("S", &tpl(v)).expect("graph")
}

/// Dependency edges as "from->to", sorted.
fn deps(g: &DependencyGraph) -> Vec<String> {
    let mut v: Vec<String> = g
        .edges()
        .filter(|(_, _, e)| e.is_dependency())
        .map(|(a, b, _)| format!("{a}->{b}"))
        .collect();
    v.sort();
    v
}

fn res(props: Value) -> Value {
    json!({"Type": "AWS::X::Y", "Properties": props})
}

#[test]
fn edges_from_every_form() {
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        ("ref", res(json!({"P": {"Ref": "A"}})), vec!["A->R"]),
        (
            "getatt",
            res(json!({"P": {"Fn::GetAtt": ["A", "Arn"]}})),
            vec!["A->R"],
        ),
        (
            "getatt dotted",
            res(json!({"P": {"Fn::GetAtt": "A.Arn"}})),
            vec!["A->R"],
        ),
        (
            "sub",
            res(json!({"P": {"Fn::Sub": "${A}/${B.Arn}"}})),
            vec!["A->R", "B->R"],
        ),
        (
            "sub vars",
            res(json!({"P": {"Fn::Sub": ["${A}-${B}", {"A": {"Ref": "Param"}}]}})),
            vec!["B->R"],
        ),
        (
            "sub vars value references",
            res(json!({"P": {"Fn::Sub": ["${X}", {"X": {"Fn::GetAtt": ["A", "Arn"]}}]}})),
            vec!["A->R"],
        ),
        (
            "sub escape",
            res(json!({"P": {"Fn::Sub": "${!A} ${AWS::Region}"}})),
            vec![],
        ),
        (
            "if branches",
            res(json!({"P": {"Fn::If": ["C", {"Ref": "A"}, {"Ref": "B"}]}})),
            vec!["A->R", "B->R"],
        ),
        (
            "join",
            res(json!({"P": {"Fn::Join": [",", [{"Ref": "A"}, "x"]]}})),
            vec!["A->R"],
        ),
        (
            "params pseudo conditions",
            res(json!({"P": [{"Ref": "Param"}, {"Ref": "AWS::StackName"}, {"Condition": "C"}]})),
            vec![],
        ),
        (
            "pruned resource",
            res(json!({"P": {"Ref": "Pruned"}})),
            vec![],
        ),
        (
            "depends on string",
            json!({"Type": "AWS::X::Y", "DependsOn": "A"}),
            vec!["A->R"],
        ),
        (
            "depends on list with pruned",
            json!({"Type": "AWS::X::Y", "DependsOn": ["A", "B", "Pruned"]}),
            vec!["A->R", "B->R"],
        ),
        ("no properties", json!({"Type": "AWS::X::Y"}), vec![]),
    ];
    for (name, r, want) in cases {
        let t = tpl(json!({
            "Parameters": {"Param": {"Type": "String"}},
            "Conditions": {"C": {"Fn::Equals": ["a", "b"]}},
            "Resources": {
                "A": {"Type": "AWS::X::A"},
                "B": {"Type": "AWS::X::B"},
                "Pruned": {"Type": "AWS::X::P", "Condition": "C"},
                "R": r,
            }
        }));
        let g = DependencyGraph::from_template("S", &t, ["A", "B", "R"]).expect(name);
        assert_eq!(deps(&g), want, "case {name}");
        assert!(!g.contains("Pruned"), "case {name}");
    }
}

#[test]
fn edge_flags_say_why() {
    let g = graph(json!({"Resources": {
        "A": {"Type": "T"},
        "B": {"Type": "T", "DependsOn": "A", "Properties": {"P": {"Ref": "A"}}},
        "C": {"Type": "T", "DependsOn": ["A"]},
    }}));
    let edges: Vec<(&str, &str, Edge)> = g.edges().map(|(a, b, e)| (a, b, e.clone())).collect();
    let both = Edge {
        reference: true,
        depends_on: true,
        delete_rule: None,
    };
    let only = Edge {
        depends_on: true,
        ..Edge::default()
    };
    assert_eq!(edges, vec![("A", "B", both), ("A", "C", only)]);
    assert_eq!(g.referrers_of("A"), vec!["B"]);
    assert_eq!(g.dependents_of("A"), vec!["B", "C"]);
}

#[test]
fn unknown_depends_on_names_both() {
    let t = tpl(json!({"Resources": {"A": {"Type": "T", "DependsOn": ["Ghost"]}}}));
    let err = DependencyGraph::from_template_all("MyStack", &t).unwrap_err();
    assert_eq!(
        err,
        PlanError::UnknownDependsOn {
            stack: "MyStack".into(),
            resource: "A".into(),
            target: "Ghost".into()
        }
    );
    let msg = err.to_string();
    assert!(msg.contains("MyStack") && msg.contains("A") && msg.contains("Ghost"));
    assert!(!msg.contains('\n'));
}

#[test]
fn cycles_are_reported_in_depends_on_order() {
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "three",
            json!({
                "Z": {"Type": "T"},
                "A": {"Type": "T", "Properties": {"P": {"Ref": "B"}}},
                "B": {"Type": "T", "Properties": {"P": {"Fn::GetAtt": "C.Arn"}}},
                "C": {"Type": "T", "DependsOn": "A"},
            }),
            vec!["A", "B", "C"],
        ),
        (
            "started from the first in template order",
            json!({
                "C": {"Type": "T", "DependsOn": "A"},
                "A": {"Type": "T", "Properties": {"P": {"Ref": "B"}}},
                "B": {"Type": "T", "Properties": {"P": {"Ref": "C"}}},
            }),
            vec!["C", "A", "B"],
        ),
        (
            "self",
            json!({"A": {"Type": "T", "Properties": {"P": {"Fn::Sub": "${A.Arn}"}}}}),
            vec!["A"],
        ),
        (
            "two, with a bystander depending on the cycle",
            json!({
                "X": {"Type": "T", "DependsOn": ["A"]},
                "A": {"Type": "T", "DependsOn": ["B"]},
                "B": {"Type": "T", "DependsOn": ["A"]},
            }),
            vec!["A", "B"],
        ),
    ];
    for (name, resources, want) in cases {
        let t = tpl(json!({ "Resources": resources }));
        let err = DependencyGraph::from_template_all("S", &t).unwrap_err();
        let PlanError::ResourceCycle { stack, members } = &err else {
            panic!("case {name}: {err}");
        };
        assert_eq!(stack, "S");
        assert_eq!(members, &want, "case {name}");
    }
    let t = tpl(json!({"Resources": {
        "A": {"Type": "T", "DependsOn": "B"},
        "B": {"Type": "T", "DependsOn": "C"},
        "C": {"Type": "T", "DependsOn": "A"},
    }}));
    assert_eq!(
        DependencyGraph::from_template_all("Prod", &t)
            .unwrap_err()
            .to_string(),
        "stack Prod: dependency cycle among resources: A -> B -> C -> A; \
         break it by removing one of the references or DependsOn"
    );
}

#[test]
fn a_cycle_through_a_pruned_resource_is_no_cycle() {
    let t = tpl(json!({
        "Conditions": {"Off": {"Fn::Equals": ["a", "b"]}},
        "Resources": {
            "A": {"Type": "T", "DependsOn": "B"},
            "B": {"Type": "T", "Properties": {"P": {"Ref": "A"}}, "Condition": "Off"},
        }
    }));
    let g = DependencyGraph::from_template("S", &t, ["A"]).unwrap();
    assert_eq!(g.deploy_order(), vec!["A"]);
}

fn diamond() -> DependencyGraph {
    // Role → {Fn, Policy}; Fn → Alias; Policy → Alias; Bucket alone; Log → Fn.
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
fn orders_are_topological_with_template_tie_break() {
    let g = diamond();
    assert_eq!(
        g.deploy_order(),
        vec!["Bucket", "Log", "Role", "Fn", "Policy", "Alias"]
    );
    assert_eq!(
        g.delete_order(),
        vec!["Bucket", "Alias", "Policy", "Fn", "Role", "Log"]
    );
    let flat =
        graph(json!({"Resources": {"A": {"Type": "T"}, "B": {"Type": "T"}, "C": {"Type": "T"}}}));
    assert_eq!(flat.deploy_order(), vec!["A", "B", "C"]);
    assert_eq!(flat.delete_order(), vec!["C", "B", "A"]);
}

#[test]
fn direct_and_transitive_queries() {
    let g = diamond();
    assert_eq!(g.dependencies_of("Alias"), vec!["Fn", "Policy"]);
    assert_eq!(
        g.transitive_dependencies_of("Alias"),
        vec!["Fn", "Log", "Policy", "Role"]
    );
    assert_eq!(g.dependents_of("Role"), vec!["Fn", "Policy"]);
    assert_eq!(
        g.transitive_dependents_of("Role"),
        vec!["Alias", "Fn", "Policy"]
    );
    assert_eq!(g.transitive_dependents_of("Bucket"), Vec::<&str>::new());
    assert!(g.dependencies_of("Nope").is_empty());
    assert_eq!(g.referrers_of("Policy"), Vec::<&str>::new());
    assert_eq!(g.resource_type("Fn"), Some("T"));
    assert_eq!(g.len(), 6);
    assert_eq!(g.stack(), "S");
}

#[test]
fn critical_path_is_the_heaviest_chain() {
    let g = diamond();
    let w = |id: &str| {
        Duration::from_secs(match id {
            "Role" => 10,
            "Fn" => 30,
            "Policy" => 5,
            "Alias" => 2,
            "Log" => 1,
            _ => 5,
        })
    };
    let p = g.critical_path(Direction::Deploy, w);
    assert_eq!(p.ids, vec!["Role", "Fn", "Alias"]);
    assert_eq!(p.total, Duration::from_secs(42));
    // Bucket alone outweighs any chain once it is heavy enough.
    let p = g.critical_path(Direction::Deploy, |id| {
        Duration::from_secs(if id == "Bucket" { 100 } else { 1 })
    });
    assert_eq!(
        (p.ids, p.total),
        (vec!["Bucket".to_string()], Duration::from_secs(100))
    );
    let p = g.critical_path(Direction::Delete, w);
    assert_eq!(p.ids, vec!["Alias", "Fn", "Role"]);
    let p = g.critical_path(Direction::Delete, |_| Duration::from_secs(1));
    assert_eq!(p.ids, vec!["Alias", "Policy", "Role"]);
    assert_eq!(p.total, Duration::from_secs(3));
    let empty = graph(json!({"Resources": {}}));
    assert_eq!(
        empty.critical_path(Direction::Deploy, w),
        CriticalPath::default()
    );
}

#[test]
fn from_records_uses_recorded_dependencies() {
    let none: Vec<String> = vec![];
    let fn_deps = vec!["Role".to_string(), "Gone".to_string()];
    let records = [
        RecordNode {
            logical_id: "Role",
            resource_type: "AWS::IAM::Role",
            physical_id: Some("my-role"),
            properties: None,
            dependencies: &none,
        },
        RecordNode {
            logical_id: "Fn",
            resource_type: "AWS::Lambda::Function",
            physical_id: Some("my-fn"),
            properties: None,
            dependencies: &fn_deps,
        },
    ];
    let g = DependencyGraph::from_records("S", records).unwrap();
    assert_eq!(g.delete_order(), vec!["Fn", "Role"]);
    assert_eq!(g.dependencies_of("Fn"), vec!["Role"]);
}

/// A small deterministic generator, so the garbage test needs no extra crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const KEYS: &[&str] = &[
    "Ref",
    "Fn::GetAtt",
    "Fn::Sub",
    "Fn::If",
    "Fn::Join",
    "Condition",
    "DependsOn",
    "VpcId",
    "SubnetId",
    "RouteTableId",
    "AllocationId",
    "Roles",
    "FunctionName",
    "X",
];
const NAMES: &[&str] = &[
    "A",
    "B",
    "C",
    "AWS::Region",
    "",
    "${A}",
    "${!A}",
    "${B.Arn",
    "A.Arn",
    "${C.X.Y}",
    ".",
    "${}",
];

fn garbage(rng: &mut Rng, depth: u32) -> Value {
    match if depth > 5 {
        rng.next() % 4
    } else {
        rng.next() % 8
    } {
        0 => Value::Null,
        1 => json!(rng.next().is_multiple_of(3)),
        2 => json!(rng.next() % 100),
        3 => json!(rng.pick(NAMES)),
        4 | 5 => {
            let n = rng.next() % 3;
            Value::Array((0..n).map(|_| garbage(rng, depth + 1)).collect())
        }
        _ => {
            let n = 1 + rng.next() % 2;
            let mut m = serde_json::Map::new();
            for _ in 0..n {
                m.insert(rng.pick(KEYS).to_string(), garbage(rng, depth + 1));
            }
            Value::Object(m)
        }
    }
}

#[test]
fn garbage_properties_never_panic() {
    let types = [
        "AWS::EC2::VPC",
        "AWS::EC2::Route",
        "AWS::EC2::EIP",
        "AWS::EC2::NatGateway",
        "AWS::EC2::VPCGatewayAttachment",
        "AWS::EC2::Subnet",
        "AWS::IAM::Role",
        "AWS::IAM::Policy",
        "AWS::Lambda::Function",
        "AWS::Lambda::Permission",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..500 {
        let mut resources = serde_json::Map::new();
        for id in ["A", "B", "C"] {
            let props = match garbage(&mut rng, 0) {
                Value::Object(m) => Value::Object(m),
                other => json!({ "P": other }),
            };
            let t = rng.pick(&types);
            resources.insert(id.into(), json!({"Type": t, "Properties": props}));
        }
        let t = tpl(json!({ "Resources": resources }));
        if let Ok(g) = DependencyGraph::from_template_all("S", &t) {
            assert_eq!(g.deploy_order().len(), 3);
            assert_eq!(g.delete_order().len(), 3);
            let _ = g.critical_path(Direction::Delete, |_| Duration::from_secs(1));
        }
        for v in resources.values() {
            let _ = references(v);
        }
    }
}
