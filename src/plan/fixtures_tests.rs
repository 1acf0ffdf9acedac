//! Every committed fixture template builds an acyclic graph whose deploy
//! order honours every DependsOn and every reference.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;
use crate::template::parse_template_file;

fn templates(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if p.is_dir() {
            templates(&p, out);
        } else if name.ends_with(".template.json") {
            out.push(p);
        }
    }
}

/// A deliberately naive, independent reading of the names a value uses:
/// `Ref` strings, `Fn::GetAtt` targets and any `${Name}` inside `Fn::Sub`.
fn names(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| names(x, out)),
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("Ref", Value::String(s)) => out.push(s.clone()),
                    ("Fn::GetAtt", Value::Array(a)) => {
                        if let Some(Value::String(s)) = a.first() {
                            out.push(s.clone());
                        }
                    }
                    ("Fn::GetAtt", Value::String(s)) => {
                        out.push(s.split('.').next().unwrap_or_default().to_string())
                    }
                    ("Fn::Sub", Value::String(s)) => {
                        for part in s.split("${").skip(1) {
                            if let Some(name) = part.split('}').next() {
                                out.push(name.split('.').next().unwrap_or_default().to_string());
                            }
                        }
                    }
                    _ => {}
                }
                names(x, out);
            }
        }
        _ => {}
    }
}

#[test]
fn fixture_templates_deploy_in_dependency_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/apps");
    let mut apps: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("fixtures/apps")
        .flatten()
        .map(|e| e.path().join("cdk.out"))
        .collect();
    apps.sort();
    let mut files = Vec::new();
    for app in &apps {
        templates(app, &mut files);
    }
    assert!(files.len() >= 10, "found only {files:?}");
    assert!(files
        .iter()
        .any(|f| f.to_string_lossy().contains(".nested.template.json")));
    assert!(files
        .iter()
        .any(|f| f.to_string_lossy().contains("assembly-")));
    let mut checked_edges = 0;
    for file in &files {
        let t = parse_template_file(file).unwrap_or_else(|e| panic!("{e}"));
        let g = DependencyGraph::from_template_all("Fixture", &t)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let order = g.deploy_order();
        assert_eq!(order.len(), t.resources.len(), "{}", file.display());
        let delete = g.delete_order();
        assert_eq!(delete.len(), t.resources.len(), "{}", file.display());
        let pos = |o: &[&str], id: &str| o.iter().position(|x| *x == id);
        for (id, res) in &t.resources {
            let mut used = res.depends_on.clone();
            names(&Value::Object(res.properties.clone()), &mut used);
            for dep in used.iter().filter(|d| t.resources.contains_key(*d)) {
                checked_edges += 1;
                assert!(
                    pos(&order, dep) < pos(&order, id),
                    "{}: {dep} must deploy before {id}: {order:?}",
                    file.display()
                );
                assert!(
                    pos(&delete, id) < pos(&delete, dep),
                    "{}: {id} must delete before {dep}: {delete:?}",
                    file.display()
                );
            }
        }
        let tracker = g.ready_tracker(Direction::Deploy);
        assert!(!tracker.initial_ready().is_empty() || g.is_empty());
    }
    assert!(
        checked_edges > 0,
        "the fixtures should have some references"
    );
}
