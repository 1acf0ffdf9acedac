//! `cdkd orphan <Stack/ConstructPath>...`: the construct paths are mapped to logical ids through
//! the synthesized template's `aws:cdk:path` metadata, then `engine::orphan` removes them from
//! the stack's state (leaving them in AWS) and rewrites the references to them.

use super::{require_complete, Session};
use crate::assembly::StackArtifact;
use crate::cli::OrphanArgs;
use crate::engine::orphan::paths::{logical_ids_for, template_readers};
use crate::engine::orphan::{
    describe_unresolved, orphan_resources, OrphanError, OrphanOutcome, OrphanRequest,
};
use crate::error::{Error, ExitStatus, Result};
use crate::template::parse_template_file;
use crate::ui;

pub async fn run(session: &Session, args: &OrphanArgs) -> Result<ExitStatus> {
    let assembly = session.assembly().await?;
    require_complete(&assembly)?;
    let mut chosen: Option<&StackArtifact> = None;
    let mut rests = Vec::new();
    for path in &args.paths {
        let (stack, rest) = stack_of(&assembly.stacks, path)?;
        if let Some(prev) = chosen {
            if prev.stack_name != stack.stack_name {
                return Err(Error::Usage(format!(
                    "every construct path must name the same stack ('{}' and '{}'); run \
                     `cdkd orphan` once per stack",
                    prev.display_name, stack.display_name
                )));
            }
        }
        chosen = Some(stack);
        rests.push((path, rest));
    }
    let Some(stack) = chosen else {
        return Err(Error::Usage("no construct path given".into()));
    };
    let template = parse_template_file(&stack.template_file)?;
    let prefixes = [stack.display_name.as_str(), stack.stack_name.as_str()];
    let mut ids: Vec<String> = Vec::new();
    for (path, rest) in rests {
        let found = logical_ids_for(&template, &prefixes, &rest);
        if found.is_empty() {
            return Err(Error::Usage(format!(
                "construct path '{path}' names no resource of stack {} (its resources carry \
                 their paths in aws:cdk:path metadata; `cdkd synth {}` shows them)",
                stack.display_name, stack.display_name
            )));
        }
        for id in found {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    let region = match args
        .stack_region
        .clone()
        .or_else(|| stack.environment.region.clone())
    {
        Some(r) => r,
        None => session.clients().await.default_region().ok_or_else(|| {
            Error::Usage(format!(
                "{}: no region: the stack does not pin one and none is configured \
                 (--stack-region, --region, AWS_REGION or the profile)",
                stack.display_name
            ))
        })?,
    };
    if !args.dry_run {
        super::orphan_state::confirm_on_terminal(
            session,
            args.force,
            &format!(
                "Orphan {} from the state of {} ({region})? They stay in AWS, unmanaged.",
                ids.join(", "),
                stack.stack_name
            ),
        )?;
    }
    let backend = session.state_backend().await?;
    ui::info(format!(
        "{} ({region}): orphaning {}",
        stack.stack_name,
        ids.join(", ")
    ));
    let outcome = orphan_resources(
        &backend,
        &OrphanRequest {
            stack: &stack.stack_name,
            region: &region,
            logical_ids: &ids,
            force: args.force,
            dry_run: args.dry_run,
        },
    )
    .await
    .map_err(into_error)?;
    report(&stack.stack_name, &region, &ids, &outcome);
    let readers = template_readers(&template, &ids);
    ui::warn(format!(
        "{}: the app still declares {}: the next deploy creates {} anew{} unless you remove \
         {} from the app (or import {} again)",
        stack.stack_name,
        ids.join(", "),
        if ids.len() == 1 { "it" } else { "them" },
        if readers.is_empty() {
            String::new()
        } else {
            format!(" and points {} at the new resource", readers.join(", "))
        },
        if ids.len() == 1 { "it" } else { "them" },
        if ids.len() == 1 { "it" } else { "them" },
    ));
    Ok(ExitStatus::Success)
}

/// The stack a construct path starts with (the longest display path or stack name that is a
/// whole-segment prefix), and the rest of the path.
fn stack_of<'a>(stacks: &'a [StackArtifact], path: &str) -> Result<(&'a StackArtifact, String)> {
    let mut best: Option<(&StackArtifact, usize)> = None;
    for s in stacks {
        for name in [&s.display_name, &s.stack_name] {
            let fits = path
                .strip_prefix(name.as_str())
                .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1);
            if fits && best.is_none_or(|(_, len)| name.len() > len) {
                best = Some((s, name.len()));
            }
        }
    }
    match best {
        Some((s, len)) => Ok((s, path[len + 1..].to_owned())),
        None => Err(Error::Usage(format!(
            "'{path}' is not a construct path of a stack of the app: expected \
             Stack/Path/To/Resource (`cdkd list` shows the stacks); to drop a whole stack's \
             record use `cdkd state orphan <stack>`"
        ))),
    }
}

/// Maps the engine's error to the command's.
pub(super) fn into_error(e: OrphanError) -> Error {
    match e {
        OrphanError::Backend(b) => Error::Backend(b),
        OrphanError::Lock(l) => Error::Lock(l),
        OrphanError::Aws(a) => Error::Aws(a),
        other => Error::Usage(other.to_string()),
    }
}

/// The audit: every reference rewritten, every one kept under --force, and what was written.
pub(super) fn report(stack: &str, region: &str, ids: &[String], outcome: &OrphanOutcome) {
    if outcome.rewrites.is_empty() {
        ui::info(format!(
            "{stack} ({region}): no reference to {} in the rest of the record",
            ids.join(", ")
        ));
    }
    for r in &outcome.rewrites {
        let after = match &r.after {
            Some(v) => v.to_string(),
            None => "(dropped)".into(),
        };
        ui::info(format!("  {}.{}: {} -> {after}", r.owner, r.path, r.before));
    }
    if !outcome.unresolved.is_empty() {
        ui::warn(format!(
            "--force: kept as they are: {}",
            describe_unresolved(&outcome.unresolved)
        ));
    }
    if outcome.written {
        ui::info(format!(
            "Orphaned {} from the state of {stack} ({region}); left in AWS, no longer managed by cdkd",
            ids.join(", ")
        ));
    } else {
        ui::info(format!(
            "--dry-run: {stack} ({region}) was not changed; re-run without --dry-run to orphan {}",
            ids.join(", ")
        ));
    }
}
