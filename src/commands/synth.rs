//! `cdkd synth`: synthesize and print the selected stack's template.

use serde_json::{Map, Value};

use super::{require_complete, select_ordered_with, Session};
use crate::cli::SynthArgs;
use crate::error::{ExitStatus, Result};
use crate::template;
use crate::ui;

pub async fn run(session: &Session, args: &SynthArgs) -> Result<ExitStatus> {
    let assembly = session.assembly().await?;
    require_complete(&assembly)?;
    let nothing_named = args.selection.stacks.is_empty() && !args.selection.all;
    if nothing_named && assembly.stacks.len() > 1 {
        // Like `cdk synth`: synthesize everything, print nothing, say how to see one template.
        let all: Vec<_> = assembly.stacks.iter().collect();
        for note in crate::assembly::check_annotations_with(&all, args.annotations.policy())? {
            ui::warn(format!("{}: {}", note.path, note.message));
        }
        for stack in &all {
            template::parse_template_file(&stack.template_file)?;
        }
        ui::info(format!(
            "Successfully synthesized to {}",
            assembly.dir.display()
        ));
        let names: Vec<_> = assembly
            .stacks
            .iter()
            .map(|s| s.display_name.as_str())
            .collect();
        ui::info(format!(
            "Supply a stack id ({}) to display its template.",
            names.join(", ")
        ));
        return Ok(ExitStatus::Success);
    }
    let stacks =
        select_ordered_with(&assembly, &args.selection, false, args.annotations.policy())?.stacks;
    let mut templates = Vec::with_capacity(stacks.len());
    for stack in &stacks {
        let parsed = template::parse_template_file(&stack.template_file)?;
        templates.push((stack.display_name.clone(), parsed.to_value()));
    }
    if args.quiet {
        ui::info(format!(
            "Successfully synthesized to {}",
            assembly.dir.display()
        ));
        return Ok(ExitStatus::Success);
    }
    let rendered = if args.json {
        match templates.as_slice() {
            [(_, only)] => pretty_json(only),
            _ => pretty_json(&Value::Object(templates.into_iter().collect::<Map<_, _>>())),
        }
    } else {
        templates
            .iter()
            .map(|(_, t)| yaml(t))
            .collect::<Vec<_>>()
            .join("---\n")
    };
    ui::output(rendered.strip_suffix('\n').unwrap_or(&rendered));
    Ok(ExitStatus::Success)
}

fn pretty_json(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

fn yaml(v: &Value) -> String {
    serde_norway::to_string(v).unwrap_or_else(|_| pretty_json(v))
}
