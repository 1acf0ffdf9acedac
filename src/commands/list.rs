//! `cdkd list`: the app's stacks in dependency order.

use serde_json::{json, Value};

use super::{select_stacks, Session};
use crate::assembly::StackArtifact;
use crate::cli::{ListArgs, StackSelection};
use crate::error::{ExitStatus, Result};
use crate::ui;

pub async fn run(session: &Session, args: &ListArgs) -> Result<ExitStatus> {
    let assembly = session.assembly_without_lookups().await?;
    for missing in &assembly.missing {
        ui::warn(format!(
            "the app is missing context `{}` ({}); templates hold placeholder values until it is looked up",
            missing.key, missing.provider
        ));
    }
    // Listing shows everything unless the user narrowed it.
    let selection = if args.selection.stacks.is_empty() {
        StackSelection {
            stacks: Vec::new(),
            all: true,
            stack: None,
        }
    } else {
        args.selection.clone()
    };
    let stacks = select_stacks(&assembly, &selection, false)?;
    let (account, region) = if args.long || args.json {
        session.best_effort_environment().await
    } else {
        (None, None)
    };
    let describe = |s: &StackArtifact| {
        let env = s
            .environment
            .resolved(account.as_deref(), region.as_deref());
        let deps: Vec<String> = s
            .dependencies
            .iter()
            .filter_map(|d| {
                assembly
                    .stacks
                    .iter()
                    .find(|o| o.artifact_id == *d && o.assembly_dir == s.assembly_dir)
            })
            .map(|o| o.display_name.clone())
            .collect();
        json!({
            "id": s.display_name,
            "name": s.stack_name,
            "environment": {
                "account": env.account.as_deref().unwrap_or(crate::assembly::UNKNOWN_ACCOUNT),
                "region": env.region.as_deref().unwrap_or(crate::assembly::UNKNOWN_REGION),
                "name": env.to_string(),
            },
            "dependencies": deps,
        })
    };
    if args.show_dependencies && !args.long {
        // Upstream cdkd's `list -d`: only the id and the dependencies of each stack.
        let list: Vec<Value> = stacks
            .iter()
            .map(|s| {
                let full = describe(s);
                json!({"id": full["id"], "dependencies": full["dependencies"]})
            })
            .collect();
        ui::output(if args.json {
            serde_json::to_string_pretty(&list).unwrap_or_default()
        } else {
            serde_norway::to_string(&list)
                .unwrap_or_default()
                .trim_end()
                .to_owned()
        });
    } else if args.json {
        let list: Vec<Value> = stacks.iter().map(|s| describe(s)).collect();
        ui::output(serde_json::to_string_pretty(&list).unwrap_or_default());
    } else if args.long {
        let list: Vec<Value> = stacks.iter().map(|s| describe(s)).collect();
        ui::output(
            serde_norway::to_string(&list)
                .unwrap_or_default()
                .trim_end(),
        );
    } else {
        for s in &stacks {
            ui::output(&s.display_name);
        }
    }
    Ok(ExitStatus::Success)
}
