//! The longer views of `cdkd state` (upstream cdkd's flags): `state list --long` (resources,
//! last write, lock) and `--tree` (nested children under their parents), `state resources
//! --long` (dependencies and attributes), `state show --show-nested` (each nested child's
//! record after its parent's). They only read.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::error::Result;
use crate::state::backend::S3Backend;
use crate::state::lock::{describe_holder, LockManager};
use crate::state::{StackRef, StackState};
use crate::ui;

/// `Parent~Child`: the record name of a nested child.
const NESTED_SEPARATOR: char = '~';

fn locks(backend: &S3Backend) -> LockManager {
    LockManager::new(
        backend.client().clone(),
        backend.bucket(),
        backend.keys().clone(),
    )
}

/// A record as parsed for reading (damage repaired in memory), `None` when it is gone.
async fn load(backend: &S3Backend, stack: &str, region: &str) -> Option<StackState> {
    match backend.load_for_reading(stack, region).await {
        Ok(Some(loaded)) => Some(loaded.parsed.state),
        Ok(None) => None,
        Err(e) => {
            ui::warn(format!("{stack} ({region}): cannot read its record: {e}"));
            None
        }
    }
}

/// ISO 8601 (UTC) of unix milliseconds.
fn timestamp(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    aws_smithy_types::DateTime::from_secs(secs)
        .fmt(aws_smithy_types::date_time::Format::DateTime)
        .unwrap_or_else(|_| ms.to_string())
}

/// `state list --long`: each record's resource count, last write and lock holder.
pub async fn list_long(backend: &S3Backend, records: &[StackRef], json: bool) -> Result<()> {
    let locks = locks(backend);
    let mut rows = Vec::new();
    for r in records {
        let region = r.region.clone().unwrap_or_default();
        let state = load(backend, &r.stack_name, &region).await;
        let lock = match r.region.as_deref() {
            Some(region) => locks.read(&r.stack_name, region).await.ok().flatten(),
            None => None,
        };
        rows.push((r, state, lock));
    }
    if json {
        let list: Vec<Value> = rows
            .iter()
            .map(|(r, state, lock)| {
                json!({
                    "stackName": r.stack_name,
                    "region": r.region,
                    "resourceCount": state.as_ref().map(|s| s.resources.len()),
                    "lastModified": state.as_ref().and_then(|s| s.last_modified).map(timestamp),
                    "locked": lock.is_some(),
                    "lockedBy": lock.as_ref().map(|l| describe_holder(&l.info)),
                })
            })
            .collect();
        ui::output(serde_json::to_string_pretty(&list).unwrap_or_default());
        return Ok(());
    }
    for (r, state, lock) in rows {
        ui::output(format!(
            "{} ({})",
            r.stack_name,
            r.region.as_deref().unwrap_or("legacy record")
        ));
        let count = state
            .as_ref()
            .map_or("unreadable".to_owned(), |s| s.resources.len().to_string());
        ui::output(format!("  Resources:     {count}"));
        let when = state
            .as_ref()
            .and_then(|s| s.last_modified)
            .map_or("unknown".to_owned(), timestamp);
        ui::output(format!("  Last modified: {when}"));
        let held = lock.map_or("unlocked".to_owned(), |l| {
            format!("locked by {}", describe_holder(&l.info))
        });
        ui::output(format!("  Lock:          {held}"));
    }
    Ok(())
}

/// `state list --tree`: top-level records with their nested children (`Parent~Child`, as a
/// child record's `parentStack` names) indented under them.
pub async fn list_tree(backend: &S3Backend, records: &[StackRef], json: bool) -> Result<()> {
    let mut parents: BTreeMap<(String, String), Option<String>> = BTreeMap::new();
    for r in records {
        let region = r.region.clone().unwrap_or_default();
        let parent = if r.stack_name.contains(NESTED_SEPARATOR) {
            match load(backend, &r.stack_name, &region).await {
                Some(s) => s.parent_stack,
                None => r
                    .stack_name
                    .rsplit_once(NESTED_SEPARATOR)
                    .map(|(p, _)| p.to_owned()),
            }
        } else {
            None
        };
        parents.insert((r.stack_name.clone(), region), parent);
    }
    let children_of = |name: &str, region: &str| -> Vec<String> {
        parents
            .iter()
            .filter(|((_, r), p)| r == region && p.as_deref() == Some(name))
            .map(|((n, _), _)| n.clone())
            .collect()
    };
    let known =
        |name: &str, region: &str| parents.contains_key(&(name.to_owned(), region.to_owned()));
    // Roots: no parent, or a parent with no record of its own.
    let roots: Vec<(String, String)> = parents
        .iter()
        .filter(|((_, region), p)| p.as_deref().is_none_or(|p| !known(p, region)))
        .map(|(k, _)| k.clone())
        .collect();
    fn node(
        name: &str,
        region: &str,
        children_of: &dyn Fn(&str, &str) -> Vec<String>,
        depth: usize,
        lines: &mut Vec<String>,
    ) -> Value {
        let label = if depth == 0 {
            format!("{name} ({region})")
        } else {
            format!("{}└─ {name}", "   ".repeat(depth - 1))
        };
        lines.push(label);
        let children: Vec<Value> = children_of(name, region)
            .iter()
            .map(|c| node(c, region, children_of, depth + 1, lines))
            .collect();
        json!({"stackName": name, "region": region, "children": children})
    }
    let mut lines = Vec::new();
    let tree: Vec<Value> = roots
        .iter()
        .map(|(name, region)| node(name, region, &children_of, 0, &mut lines))
        .collect();
    if json {
        ui::output(serde_json::to_string_pretty(&tree).unwrap_or_default());
    } else {
        for line in lines {
            ui::output(line);
        }
    }
    Ok(())
}

/// `state resources --long`: one block per resource, with its dependencies and attributes.
pub fn resources_long(state: &StackState) -> Vec<String> {
    let mut lines = Vec::new();
    for (id, r) in &state.resources {
        lines.push(id.clone());
        lines.push(format!("  Type:          {}", r.resource_type));
        lines.push(format!(
            "  Physical id:   {}",
            r.physical_id.as_deref().unwrap_or("-")
        ));
        if let Some(by) = &r.provisioned_by {
            lines.push(format!("  Provisioned:   {}", by.as_str()));
        }
        let deps = r
            .dependencies
            .as_ref()
            .filter(|d| !d.is_empty())
            .map_or("(none)".to_owned(), |d| d.join(", "));
        lines.push(format!("  Dependencies:  {deps}"));
        match r.attributes.as_ref().filter(|a| !a.is_empty()) {
            None => lines.push("  Attributes:    (none)".to_owned()),
            Some(attributes) => {
                lines.push("  Attributes:".to_owned());
                for (k, v) in attributes {
                    let shown = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    lines.push(format!("    {k} = {shown}"));
                }
            }
        }
    }
    lines
}

/// The records of `state`'s nested children (`AWS::CloudFormation::Stack` rows), in the
/// record's order, each with its own children: (row logical id, child record name, record).
pub async fn nested_children(
    backend: &S3Backend,
    state: &StackState,
    region: &str,
) -> Vec<(String, String, Option<StackState>)> {
    let mut out = Vec::new();
    for (id, r) in &state.resources {
        if r.resource_type != "AWS::CloudFormation::Stack" {
            continue;
        }
        let child = format!("{}{NESTED_SEPARATOR}{id}", state.stack_name);
        let record = load(backend, &child, region).await;
        out.push((id.clone(), child, record));
    }
    out
}

/// `state show --show-nested --json`: `{state, children: [...]}`, recursively.
pub fn show_tree_json<'a>(
    backend: &'a S3Backend,
    state: StackState,
    region: &'a str,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Value> + Send + 'a>> {
    Box::pin(async move {
        let mut children = Vec::new();
        for (id, name, record) in nested_children(backend, &state, region).await {
            children.push(match record {
                Some(child) => {
                    let mut v = show_tree_json(backend, child, region).await;
                    v["logicalId"] = json!(id);
                    v
                }
                None => json!({"logicalId": id, "stackName": name, "state": null}),
            });
        }
        json!({"state": state, "children": children})
    })
}
