//! `cdkd context`: the context the app is given, as `cdk context` shows it, numbered in key
//! order; `--reset KEY_OR_NUMBER` removes one cached lookup from cdk.context.json (a glob such
//! as `vpc-provider:*` removes every match), `--clear` empties that file. Values from cdk.json,
//! ~/.cdk.json or `-c` are listed but never removed: they are not a cache.

use serde_json::{Map, Value};

use super::Session;
use crate::cli::ContextArgs;
use crate::context::store::{ContextFile, StoreError};
use crate::error::{ExitStatus, Result};
use crate::ui;

pub fn run(session: &Session, args: &ContextArgs) -> Result<ExitStatus> {
    let file = ContextFile::in_dir(&session.settings.project_dir);
    let all = &session.settings.context;
    if args.clear {
        file.write(&Map::new())?;
        ui::info("All context values cleared.");
        return Ok(ExitStatus::Success);
    }
    if let Some(which) = &args.reset {
        return reset(&file, all, which, args.force);
    }
    if args.json {
        let text = serde_json::to_string_pretty(&Value::Object(sorted(all)))
            .unwrap_or_else(|_| "{}".into());
        ui::output(text);
        return Ok(ExitStatus::Success);
    }
    if all.is_empty() {
        ui::info("This app has no context values yet. They are saved to cdk.context.json when a synthesis looks up VPCs, SSM parameters, availability zones and the like.");
        return Ok(ExitStatus::Success);
    }
    ui::output(table(all));
    ui::info("Run `cdkd context --reset KEY_OR_NUMBER` to remove a cached value; it is looked up again on the next synthesis.");
    Ok(ExitStatus::Success)
}

fn sorted(all: &Map<String, Value>) -> Map<String, Value> {
    let mut keys: Vec<&String> = all.keys().collect();
    keys.sort();
    keys.into_iter()
        .map(|k| (k.clone(), all[k].clone()))
        .collect()
}

/// `#  Key  Value` with each value as one line of JSON.
pub fn table(all: &Map<String, Value>) -> String {
    let rows: Vec<(String, String, String)> = sorted(all)
        .iter()
        .enumerate()
        .map(|(i, (k, v))| {
            let one_line = serde_json::to_string(v).unwrap_or_default();
            ((i + 1).to_string(), k.clone(), one_line)
        })
        .collect();
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(1).max(1);
    let w1 = rows.iter().map(|r| r.1.len()).max().unwrap_or(3).max(3);
    let mut out = format!("{:<w0$}  {:<w1$}  Value", "#", "Key");
    for (n, k, v) in rows {
        out.push('\n');
        out.push_str(&format!("{n:<w0$}  {k:<w1$}  {v}"));
    }
    out
}

fn reset(
    file: &ContextFile,
    all: &Map<String, Value>,
    which: &str,
    force: bool,
) -> Result<ExitStatus> {
    let key = match which.parse::<usize>() {
        Ok(n) if n.to_string() == which => {
            let keys: Vec<String> = sorted(all).keys().cloned().collect();
            keys.get(n.wrapping_sub(1))
                .cloned()
                .ok_or(StoreError::NoSuchNumber {
                    number: n,
                    count: keys.len(),
                })?
        }
        _ => which.to_owned(),
    };
    let mut cached = file.load()?;
    let matched: Vec<String> = if cached.contains_key(&key) {
        vec![key.clone()]
    } else {
        match glob::Pattern::new(&key) {
            Ok(p) if key.contains(['*', '?', '[']) => {
                cached.keys().filter(|k| p.matches(k)).cloned().collect()
            }
            _ => Vec::new(),
        }
    };
    if matched.is_empty() {
        let err = StoreError::NotCached {
            key,
            file: file.path.clone(),
        };
        if force {
            ui::warn(err.to_string());
            return Ok(ExitStatus::Success);
        }
        return Err(err.into());
    }
    for k in &matched {
        cached.remove(k);
    }
    file.write(&cached)?;
    for k in &matched {
        ui::info(format!(
            "Context value {k} reset. It will be refreshed on the next synthesis."
        ));
    }
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_table_is_numbered_in_key_order() {
        let all = json!({"b": {"x": [1, 2]}, "a": "v"});
        let t = table(all.as_object().unwrap());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines,
            ["#  Key  Value", "1  a    \"v\"", "2  b    {\"x\":[1,2]}"]
        );
    }
}
