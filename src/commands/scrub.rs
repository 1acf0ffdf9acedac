//! `cdkd scrub`: selects stacks, hands each to the scrub engine in turn, prints the per-stack
//! summary (or, with `--json`, one JSON document on stdout; warnings stay on stderr) and
//! returns the exit status (0 clean, 1 findings under `--fail`, 2 could not
//! finish).

use std::sync::Arc;

use serde_json::Value;

use super::{require_complete, select_stacks, Session};
use crate::aws::{ClientOptions, Clients};
use crate::cli::ScrubArgs;
use crate::engine::scrub::{
    report::exit_code, scrub_stack, ScrubEnv, ScrubOptions, ScrubTarget, StackOutcome,
};
use crate::error::{ExitStatus, Result};
use crate::resolve::ExternalReader;
use crate::ui;

pub async fn run(session: &Session, args: &ScrubArgs) -> Result<ExitStatus> {
    let assembly = session.assembly().await?;
    require_complete(&assembly)?;
    let stacks = select_stacks(&assembly, &args.selection, false)?;
    if stacks.is_empty() {
        ui::info("The app has no stacks; nothing to scrub");
        return Ok(ExitStatus::Success);
    }
    let settings = &session.settings;
    let clients = Arc::new(
        Clients::load(&ClientOptions {
            region: settings.region.clone(),
            profile: settings.profile.clone(),
            role_arn: settings.role_arn.clone(),
        })
        .await,
    );
    let backend = Arc::new(session.state_backend().await?);
    let reader = Arc::new(ExternalReader::new(clients.clone(), backend.clone(), None));
    let run = crate::engine::scrub::across::RunContext::from_assembly(
        &assembly,
        &stacks,
        clients.default_region().as_deref(),
    );
    let env = ScrubEnv {
        backend,
        reader,
        run: Arc::new(run),
    };
    let options = ScrubOptions {
        dry_run: args.dry_run,
        purge_history: args.purge_history,
    };

    let mut outcomes: Vec<StackOutcome> = Vec::new();
    for stack in &stacks {
        let Some(region) = stack
            .environment
            .region
            .clone()
            .or_else(|| clients.default_region())
        else {
            let mut o = StackOutcome::new(&stack.stack_name, "?");
            o.fail("no region: the stack does not pin one and none is configured".into());
            outcomes.push(o);
            continue;
        };
        let template = match read_template(&stack.template_file) {
            Ok(t) => t,
            Err(e) => {
                let mut o = StackOutcome::new(&stack.stack_name, &region);
                o.fail(e);
                outcomes.push(o);
                continue;
            }
        };
        let target = ScrubTarget {
            stack_name: &stack.stack_name,
            region: &region,
            template: &template,
        };
        outcomes.push(scrub_stack(&env, &target, options).await);
    }

    for o in outcomes.iter().flat_map(StackOutcome::flattened) {
        let (warnings, summary) = o.lines();
        for w in warnings {
            ui::warn(w);
        }
        if !args.json {
            ui::output(summary);
        }
    }
    if args.json {
        let doc = crate::engine::scrub::report::json_document(&outcomes, args.fail);
        ui::output(serde_json::to_string_pretty(&doc).unwrap_or_default());
    }
    Ok(match exit_code(&outcomes, args.fail) {
        0 => ExitStatus::Success,
        1 => ExitStatus::Failure,
        _ => ExitStatus::Partial,
    })
}

fn read_template(path: &std::path::Path) -> std::result::Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("reading the template {} failed: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("the template {} is not JSON: {e}", path.display()))
}
