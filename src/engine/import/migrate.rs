//! `cdkd import <stack> --migrate-from-cloudformation`: take over a stack CloudFormation
//! manages, nested stacks included, without touching a resource.
//!
//! 1. Read the CloudFormation stack (named like the cdkd stack unless the caller names another)
//!    and its nested stacks (`migrate_cfn`), and check them against the synthesized
//!    templates: a resource or a nested stack on one side only, or of another type, is an
//!    error naming it.
//! 2. Under the locks of the stack and of every child (`{parent}~{row}`), read each resource
//!    back through the import path and compute every record (the root's nested rows carry
//!    the cdkd-local ARN, children their parent link), writing nothing yet.
//! 3. Inject `DeletionPolicy: Retain` into every template of the tree and update the root
//!    stack (`migrate_retain`); CloudFormation now keeps every resource when it lets go.
//! 4. Write the records, root first, then release the locks in reverse.
//! 5. Delete the CloudFormation root stack (the delete cascades through its children) and
//!    wait until it is gone.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use super::migrate_cfn::{self, CfnError, CfnStack};
use super::migrate_retain::{self, RetainError, TmpStore};
use super::nested::{child_stack_name, child_template, is_nested};
use super::{compute, DeployEnv, DeployError, ImportOptions, ImportTarget, Imported};
use crate::provider::NON_RESOURCE_TYPES;
use crate::resolve::ParameterOverride;
use crate::state::lock::HeldLock;
use crate::template::parse_template_file;
use crate::ui;

/// Why a migration stopped.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// Refused before anything was changed or written.
    #[error("{0}; nothing was changed")]
    Refused(String),
    #[error("{0}")]
    Import(DeployError),
    #[error("{0}; no cdkd state was written")]
    Retain(RetainError),
    /// The records are written but the CloudFormation stack is not gone.
    #[error(
        "cdkd state is written, but deleting the CloudFormation stack {stack} failed: \
         {detail}; every resource has DeletionPolicy: Retain, so delete the stack in \
         CloudFormation to finish"
    )]
    Delete { stack: String, detail: String },
}

/// What a migration did.
#[derive(Debug, Clone, Default)]
pub struct MigrateReport {
    /// (cdkd stack name, resources imported into it), root first.
    pub stacks: Vec<(String, Vec<Imported>)>,
}

/// Migrates the CloudFormation stack `cfn_stack` (and its nested stacks) into the cdkd stack
/// `target.stack_name`'s state, then deletes it in CloudFormation, keeping every resource.
/// `cfn_stack` is usually the cdkd stack's own name (a stack `cdk deploy` made); it differs
/// when the CloudFormation stack was deployed under another name.
pub async fn migrate_stack(
    env: &DeployEnv,
    target: &ImportTarget<'_>,
    cfn_stack: &str,
    parameters: &[ParameterOverride],
    force: bool,
) -> Result<MigrateReport, MigrateError> {
    let (stack, region) = (target.stack_name, target.region);
    let cfn = env.clients.cloudformation(Some(region));
    let summary = migrate_cfn::describe(&cfn, cfn_stack)
        .await
        .map_err(|e| refused_cfn(stack, cfn_stack, region, e))?;
    if !migrate_cfn::is_updatable(&summary.status) {
        return Err(MigrateError::Refused(format!(
            "{stack}: the CloudFormation stack {cfn_stack} is {}; it can be migrated only \
             from a completed create, update or import",
            summary.status
        )));
    }
    let tree = migrate_cfn::read_tree(&cfn, cfn_stack)
        .await
        .map_err(|e| refused_cfn(stack, cfn_stack, region, e))?;
    let mut options = plan_options(stack, target.template_file, &tree)?;
    options.parameters = parameters.to_vec();
    set_force(&mut options, force);

    let names = stack_names(stack, &options);
    let locks = take_locks(env, &names, region).await?;
    let result = migrate_locked(env, target, &options, &cfn, &tree, &summary).await;
    for lock in locks.into_iter().rev() {
        lock.release_and_warn().await;
    }
    let report = result?;

    ui::info(format!(
        "{stack}: deleting the CloudFormation stack {cfn_stack} (its resources are retained)"
    ));
    let deleted = async {
        migrate_cfn::delete(&cfn, &summary.stack_id).await?;
        migrate_cfn::wait_settled(&cfn, &summary.stack_id).await
    }
    .await;
    match deleted {
        Ok(None) => Ok(report),
        Ok(Some(status)) => Err(MigrateError::Delete {
            stack: cfn_stack.to_owned(),
            detail: format!("it ended {status}"),
        }),
        Err(e) => Err(MigrateError::Delete {
            stack: cfn_stack.to_owned(),
            detail: e.to_string(),
        }),
    }
}

async fn migrate_locked(
    env: &DeployEnv,
    target: &ImportTarget<'_>,
    options: &ImportOptions,
    cfn: &aws_sdk_cloudformation::Client,
    tree: &CfnStack,
    summary: &migrate_cfn::StackSummary,
) -> Result<MigrateReport, MigrateError> {
    let computed = compute(env, target, options, None)
        .await
        .map_err(MigrateError::Import)?;
    // The uploads are that CloudFormation stack's templates: keyed by its name.
    let store = TmpStore::new(
        env.backend.client().clone(),
        env.backend.bucket(),
        &tree.name,
        &stamp(),
    );
    migrate_retain::inject_and_update(cfn, &store, tree, summary)
        .await
        .map_err(MigrateError::Retain)?;
    let mut report = MigrateReport::default();
    for c in computed.flatten() {
        c.save(env).await.map_err(MigrateError::Import)?;
        ui::info(format!(
            "{} ({}): {} resource{} imported from CloudFormation",
            c.stack,
            c.region,
            c.imported.len(),
            if c.imported.len() == 1 { "" } else { "s" }
        ));
        report.stacks.push((c.stack.clone(), c.imported.clone()));
    }
    Ok(report)
}

fn refused_cfn(stack: &str, cfn_stack: &str, region: &str, e: CfnError) -> MigrateError {
    match e {
        CfnError::Missing(name) if name == cfn_stack && cfn_stack == stack => {
            MigrateError::Refused(format!(
                "{stack}: there is no CloudFormation stack named {stack} in {region}; \
                 --migrate-from-cloudformation takes over the stack of the same name (name \
                 another one as --migrate-from-cloudformation CFN_STACK)"
            ))
        }
        CfnError::Missing(name) if name == cfn_stack => MigrateError::Refused(format!(
            "{stack}: there is no CloudFormation stack named {cfn_stack} in {region}; check \
             the name given to --migrate-from-cloudformation"
        )),
        other => MigrateError::Refused(format!("{stack}: {other}")),
    }
}

/// `--force` reaches every stack of the tree.
fn set_force(options: &mut ImportOptions, force: bool) {
    options.force = force;
    for child in options.nested.values_mut() {
        set_force(child, force);
    }
}

/// Every cdkd stack name of the tree, root first (depth-first).
fn stack_names(stack: &str, options: &ImportOptions) -> Vec<String> {
    let mut out = vec![stack.to_owned()];
    for (id, child) in &options.nested {
        out.extend(stack_names(&child_stack_name(stack, id), child));
    }
    out
}

/// Takes the locks in order; on a failure, releases those taken, newest first.
async fn take_locks(
    env: &DeployEnv,
    names: &[String],
    region: &str,
) -> Result<Vec<HeldLock>, MigrateError> {
    let mut held: Vec<HeldLock> = Vec::new();
    for name in names {
        match env.backend.lock(name, region, "import").await {
            Ok(lock) => held.push(lock),
            Err(e) => {
                for lock in held.into_iter().rev() {
                    lock.release_and_warn().await;
                }
                return Err(MigrateError::Refused(format!("{name}: {e}")));
            }
        }
    }
    Ok(held)
}

/// Checks the CloudFormation stack `cfn` against the synthesized template (its children
/// recursively, from the cloud assembly) and builds what to import: every row by its
/// physical id, every nested row as its child.
fn plan_options(
    stack: &str,
    template_file: &Path,
    cfn: &CfnStack,
) -> Result<ImportOptions, MigrateError> {
    let template = parse_template_file(template_file)
        .map_err(|e| MigrateError::Refused(format!("{stack}: {e}")))?;
    let assembly_dir = template_file.parent().unwrap_or(Path::new("."));
    for (id, res) in &template.resources {
        if cfn.rows.contains_key(id) || res.condition.is_some() {
            continue;
        }
        return Err(MigrateError::Refused(format!(
            "{stack}: '{id}' ({}) is in the template but not in the CloudFormation stack; \
             migrate a stack deployed from this template, or deploy it with CloudFormation \
             first",
            res.type_
        )));
    }
    let mut options = ImportOptions {
        record_outputs: true,
        ..ImportOptions::default()
    };
    for (id, row) in &cfn.rows {
        let Some(res) = template.resources.get(id) else {
            return Err(MigrateError::Refused(format!(
                "{stack}: '{id}' ({}) is in the CloudFormation stack but not in the template; \
                 the template must declare every resource the stack has",
                row.resource_type
            )));
        };
        if res.type_ != row.resource_type {
            return Err(MigrateError::Refused(format!(
                "{stack}: '{id}' is a {} in the template but a {} in the CloudFormation stack",
                res.type_, row.resource_type
            )));
        }
        if NON_RESOURCE_TYPES.contains(&res.type_.as_str()) {
            continue;
        }
        let physical = row.physical_id.clone().unwrap_or_default();
        if physical.is_empty()
            || row.status.ends_with("_FAILED")
            || row.status.starts_with("DELETE_")
        {
            return Err(MigrateError::Refused(format!(
                "{stack}: '{id}' ({}) is {} in the CloudFormation stack{}; fix the stack first",
                res.type_,
                row.status,
                if physical.is_empty() {
                    " with no physical id"
                } else {
                    ""
                }
            )));
        }
        if is_nested(&res.type_) {
            let Some(child) = cfn.children.get(id) else {
                return Err(MigrateError::Refused(format!(
                    "{stack}: nested stack '{id}' was not read from CloudFormation"
                )));
            };
            let file = child_template(assembly_dir, id, res, &res.properties)
                .map_err(|e| MigrateError::Refused(format!("{stack}: '{id}': {e}")))?;
            let child_options = plan_options(&child_stack_name(stack, id), &file, child)?;
            options.nested.insert(id.clone(), child_options);
        } else {
            options.mapping.insert(id.clone(), physical);
        }
    }
    Ok(options)
}

/// Milliseconds since the epoch: the temporary upload's name.
fn stamp() -> String {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis().to_string())
        .unwrap_or_else(|_| "0".into())
}

#[cfg(test)]
mod tests {
    use super::super::migrate_cfn::CfnRow;
    use super::*;

    fn row(t: &str, physical: &str) -> CfnRow {
        CfnRow {
            resource_type: t.into(),
            physical_id: Some(physical.into()),
            status: "CREATE_COMPLETE".into(),
        }
    }

    fn write(dir: &Path, name: &str, v: serde_json::Value) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    }

    fn assembly() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "child.json",
            serde_json::json!({"Resources": {"T": {"Type": "AWS::SNS::Topic"}}}),
        );
        let parent = write(
            dir.path(),
            "P.template.json",
            serde_json::json!({"Resources": {
                "Q": {"Type": "AWS::SQS::Queue"},
                "Meta": {"Type": "AWS::CDK::Metadata", "Condition": "C"},
                "C1": {"Type": "AWS::CloudFormation::Stack",
                       "Properties": {"TemplateURL": "https://x/child.json"},
                       "Metadata": {"aws:asset:path": "child.json"}}
            }, "Conditions": {"C": {"Fn::Equals": ["a", "a"]}}}),
        );
        (dir, parent)
    }

    fn cfn_tree() -> CfnStack {
        CfnStack {
            name: "P".into(),
            rows: [
                ("Q".to_string(), row("AWS::SQS::Queue", "https://q")),
                (
                    "C1".to_string(),
                    row("AWS::CloudFormation::Stack", "arn:child"),
                ),
            ]
            .into_iter()
            .collect(),
            children: [(
                "C1".to_string(),
                CfnStack {
                    name: "arn:child".into(),
                    rows: [("T".to_string(), row("AWS::SNS::Topic", "arn:topic"))]
                        .into_iter()
                        .collect(),
                    children: indexmap::IndexMap::new(),
                },
            )]
            .into_iter()
            .collect(),
        }
    }

    #[test]
    fn a_matching_tree_maps_every_row() {
        let (_dir, parent) = assembly();
        let o = plan_options("P", &parent, &cfn_tree()).unwrap();
        assert_eq!(o.mapping["Q"], "https://q");
        assert!(o.record_outputs);
        assert_eq!(o.nested["C1"].mapping["T"], "arn:topic");
        assert_eq!(stack_names("P", &o), vec!["P", "P~C1"]);
        let mut o = o;
        set_force(&mut o, true);
        assert!(o.force && o.nested["C1"].force);
    }

    #[test]
    fn a_row_on_one_side_only_is_named() {
        let (_dir, parent) = assembly();
        let mut tree = cfn_tree();
        tree.rows.shift_remove("Q");
        let e = plan_options("P", &parent, &tree).unwrap_err().to_string();
        assert!(
            e.contains("'Q'") && e.contains("not in the CloudFormation stack"),
            "{e}"
        );

        let mut tree = cfn_tree();
        tree.rows.shift_remove("C1");
        let e = plan_options("P", &parent, &tree).unwrap_err().to_string();
        assert!(e.contains("'C1'"), "{e}");

        let mut tree = cfn_tree();
        tree.children["C1"]
            .rows
            .insert("Extra".into(), row("AWS::SQS::Queue", "https://e"));
        let e = plan_options("P", &parent, &tree).unwrap_err().to_string();
        assert!(e.contains("P~C1") && e.contains("'Extra'"), "{e}");

        let mut tree = cfn_tree();
        tree.rows["Q"].resource_type = "AWS::SNS::Topic".into();
        let e = plan_options("P", &parent, &tree).unwrap_err().to_string();
        assert!(e.contains("'Q'"), "{e}");
    }
}
