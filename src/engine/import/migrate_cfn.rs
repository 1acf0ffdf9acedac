//! The CloudFormation side of `cdkd import --migrate-from-cloudformation`: reading a stack
//! tree (its resources, recursively through `AWS::CloudFormation::Stack` rows, children
//! fetched in parallel), its templates, and updating and deleting the root stack with waits.

use std::time::{Duration, Instant};

use aws_sdk_cloudformation::types::{Capability, Parameter, StackStatus, TemplateStage};
use aws_sdk_cloudformation::Client;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use indexmap::IndexMap;
use tokio::task::JoinSet;

use super::nested::is_nested;
use crate::aws::{classify, error_code, AwsError, ErrorKind};

type SdkError<E> = aws_smithy_runtime_api::client::result::SdkError<
    E,
    aws_smithy_runtime_api::client::orchestrator::HttpResponse,
>;

/// The service's message of a failed call.
fn sdk_message<E: ProvideErrorMetadata>(e: &SdkError<E>) -> String {
    match e {
        aws_smithy_runtime_api::client::result::SdkError::ServiceError(s) => {
            s.err().message().unwrap_or_default().to_owned()
        }
        _ => String::new(),
    }
}

/// One resource row of a CloudFormation stack.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct CfnRow {
    pub resource_type: String,
    pub physical_id: Option<String>,
    pub status: String,
}

/// A CloudFormation stack and its nested stacks, as AWS lists them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct CfnStack {
    /// What the stack was asked for by: the root's name, a child's physical id (its ARN).
    pub name: String,
    /// Logical id → row, in the order AWS listed them.
    pub rows: IndexMap<String, CfnRow>,
    /// Nested-stack row → the child stack.
    pub children: IndexMap<String, CfnStack>,
}

/// What a CloudFormation step failed on.
#[derive(Debug, thiserror::Error)]
pub enum CfnError {
    #[error("CloudFormation stack {0} does not exist")]
    Missing(String),
    #[error(transparent)]
    Aws(#[from] AwsError),
    #[error("{0}")]
    Other(String),
}

/// How long an update or a delete may take before cdkd stops waiting.
const WAIT_LIMIT: Duration = Duration::from_secs(3600);

/// Reads the stack `name` and, in parallel per level, every nested stack below it.
pub(super) async fn read_tree(client: &Client, name: &str) -> Result<CfnStack, CfnError> {
    let mut root = CfnStack {
        name: name.to_owned(),
        rows: read_rows(client, name).await?,
        children: IndexMap::new(),
    };
    fill_children(client, &mut root).await?;
    Ok(root)
}

/// Fetches the children of `stack` (all at once), then theirs, level by level.
async fn fill_children(client: &Client, stack: &mut CfnStack) -> Result<(), CfnError> {
    let mut level: Vec<(Vec<String>, String)> = child_refs(stack, &[])?;
    while !level.is_empty() {
        let mut tasks = JoinSet::new();
        for (path, physical) in level {
            let client = client.clone();
            tasks.spawn(async move {
                let rows = read_rows(&client, &physical).await;
                (path, physical, rows)
            });
        }
        let mut next = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            let (path, physical, rows) =
                joined.map_err(|e| CfnError::Other(format!("a stack read stopped: {e}")))?;
            let child = CfnStack {
                name: physical,
                rows: rows?,
                children: IndexMap::new(),
            };
            next.extend(child_refs(&child, &path)?);
            insert_at(stack, &path, child);
        }
        level = next;
    }
    sort_children(stack);
    Ok(())
}

/// (path of row ids from the root, physical id) of each nested row of `stack`.
fn child_refs(stack: &CfnStack, path: &[String]) -> Result<Vec<(Vec<String>, String)>, CfnError> {
    let mut out = Vec::new();
    for (id, row) in &stack.rows {
        if !is_nested(&row.resource_type) {
            continue;
        }
        let Some(physical) = row.physical_id.clone().filter(|p| !p.is_empty()) else {
            return Err(CfnError::Other(format!(
                "nested stack '{id}' of {} has no physical id (status {}); fix the \
                 CloudFormation stack first",
                stack.name, row.status
            )));
        };
        let mut p = path.to_vec();
        p.push(id.clone());
        out.push((p, physical));
    }
    Ok(out)
}

fn insert_at(root: &mut CfnStack, path: &[String], child: CfnStack) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = root;
    for id in parents {
        match at.children.get_mut(id) {
            Some(c) => at = c,
            None => return,
        }
    }
    at.children.insert(last.clone(), child);
}

/// Children in the order their rows are listed (they arrive in completion order).
fn sort_children(stack: &mut CfnStack) {
    let order: Vec<String> = stack.rows.keys().cloned().collect();
    stack.children.sort_by(|a, _, b, _| {
        let pos = |k: &String| order.iter().position(|x| x == k).unwrap_or(usize::MAX);
        pos(a).cmp(&pos(b))
    });
    for c in stack.children.values_mut() {
        sort_children(c);
    }
}

/// The rows of one stack: DescribeStackResources, and ListStackResources (paginated) when
/// the first call returned its 100-row maximum.
pub(super) async fn read_rows(
    client: &Client,
    stack: &str,
) -> Result<IndexMap<String, CfnRow>, CfnError> {
    let out = client
        .describe_stack_resources()
        .stack_name(stack)
        .send()
        .await
        .map_err(|e| missing_or(stack, "DescribeStackResources", &e))?;
    let mut rows = IndexMap::new();
    for r in out.stack_resources() {
        rows.insert(
            r.logical_resource_id().unwrap_or_default().to_owned(),
            CfnRow {
                resource_type: r.resource_type().unwrap_or_default().to_owned(),
                physical_id: r.physical_resource_id().map(str::to_owned),
                status: r
                    .resource_status()
                    .map(|s| s.as_str().to_owned())
                    .unwrap_or_default(),
            },
        );
    }
    if rows.len() < 100 {
        return Ok(rows);
    }
    let mut rows = IndexMap::new();
    let mut token: Option<String> = None;
    loop {
        let page = client
            .list_stack_resources()
            .stack_name(stack)
            .set_next_token(token.clone())
            .send()
            .await
            .map_err(|e| missing_or(stack, "ListStackResources", &e))?;
        for r in page.stack_resource_summaries() {
            rows.insert(
                r.logical_resource_id().unwrap_or_default().to_owned(),
                CfnRow {
                    resource_type: r.resource_type().unwrap_or_default().to_owned(),
                    physical_id: r.physical_resource_id().map(str::to_owned),
                    status: r
                        .resource_status()
                        .map(|s| s.as_str().to_owned())
                        .unwrap_or_default(),
                },
            );
        }
        token = page.next_token().map(str::to_owned);
        if token.is_none() {
            return Ok(rows);
        }
    }
}

fn missing_or<E>(stack: &str, operation: &'static str, e: &SdkError<E>) -> CfnError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    let message = sdk_message(e);
    if classify(e) == ErrorKind::NotFound
        || (error_code(e) == Some("ValidationError") && message.contains("does not exist"))
    {
        return CfnError::Missing(stack.to_owned());
    }
    CfnError::Aws(AwsError::call("cloudformation", operation, stack, e))
}

/// The root stack's id, status and parameter keys (DescribeStacks).
#[derive(Debug, Clone)]
pub(super) struct StackSummary {
    pub stack_id: String,
    pub status: String,
    pub parameter_keys: Vec<String>,
}

pub(super) async fn describe(client: &Client, stack: &str) -> Result<StackSummary, CfnError> {
    let out = client
        .describe_stacks()
        .stack_name(stack)
        .send()
        .await
        .map_err(|e| missing_or(stack, "DescribeStacks", &e))?;
    let s = out
        .stacks()
        .first()
        .ok_or_else(|| CfnError::Missing(stack.to_owned()))?;
    Ok(StackSummary {
        stack_id: s.stack_id().unwrap_or(stack).to_owned(),
        status: s
            .stack_status()
            .map(|x| x.as_str().to_owned())
            .unwrap_or_default(),
        parameter_keys: s
            .parameters()
            .iter()
            .filter_map(|p| p.parameter_key().map(str::to_owned))
            .collect(),
    })
}

/// Statuses from which a stack can be updated.
pub(super) fn is_updatable(status: &str) -> bool {
    matches!(
        status,
        "CREATE_COMPLETE"
            | "UPDATE_COMPLETE"
            | "UPDATE_ROLLBACK_COMPLETE"
            | "IMPORT_COMPLETE"
            | "IMPORT_ROLLBACK_COMPLETE"
    )
}

/// The template CloudFormation holds for `stack`, as it was submitted (`Original`).
pub(super) async fn template_body(client: &Client, stack: &str) -> Result<String, CfnError> {
    let out = client
        .get_template()
        .stack_name(stack)
        .template_stage(TemplateStage::Original)
        .send()
        .await
        .map_err(|e| missing_or(stack, "GetTemplate", &e))?;
    out.template_body()
        .map(str::to_owned)
        .ok_or_else(|| CfnError::Other(format!("GetTemplate returned no template for {stack}")))
}

/// How an update's template is submitted.
pub(super) enum Body {
    Inline(String),
    Url(String),
}

/// UpdateStack with every parameter at its previous value; `Ok(false)` when CloudFormation
/// says there is nothing to update.
pub(super) async fn update(
    client: &Client,
    summary: &StackSummary,
    body: Body,
) -> Result<bool, CfnError> {
    let params: Vec<Parameter> = summary
        .parameter_keys
        .iter()
        .map(|k| {
            Parameter::builder()
                .parameter_key(k)
                .use_previous_value(true)
                .build()
        })
        .collect();
    let mut req = client
        .update_stack()
        .stack_name(&summary.stack_id)
        .set_parameters(Some(params))
        .capabilities(Capability::CapabilityIam)
        .capabilities(Capability::CapabilityNamedIam)
        .capabilities(Capability::CapabilityAutoExpand);
    req = match body {
        Body::Inline(text) => req.template_body(text),
        Body::Url(url) => req.template_url(url),
    };
    match req.send().await {
        Ok(_) => Ok(true),
        Err(e) => {
            let message = sdk_message(&e);
            if message.contains("No updates are to be performed") {
                return Ok(false);
            }
            Err(CfnError::Aws(AwsError::call(
                "cloudformation",
                "UpdateStack",
                summary.stack_id.clone(),
                &e,
            )))
        }
    }
}

/// DeleteStack.
pub(super) async fn delete(client: &Client, stack_id: &str) -> Result<(), CfnError> {
    client
        .delete_stack()
        .stack_name(stack_id)
        .send()
        .await
        .map_err(|e| {
            CfnError::Aws(AwsError::call(
                "cloudformation",
                "DeleteStack",
                stack_id,
                &e,
            ))
        })?;
    Ok(())
}

/// Waits until the stack leaves its `*_IN_PROGRESS` states; `Ok(None)` when it is gone.
pub(super) async fn wait_settled(
    client: &Client,
    stack_id: &str,
) -> Result<Option<String>, CfnError> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(250);
    loop {
        let status = match describe(client, stack_id).await {
            Ok(s) => s.status,
            Err(CfnError::Missing(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        if status == StackStatus::DeleteComplete.as_str() {
            return Ok(None);
        }
        if !status.ends_with("_IN_PROGRESS") {
            return Ok(Some(status));
        }
        if started.elapsed() > WAIT_LIMIT {
            return Err(CfnError::Other(format!(
                "{stack_id} is still {status} after {} minutes; cdkd stopped waiting",
                WAIT_LIMIT.as_secs() / 60
            )));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: &str) -> CfnRow {
        CfnRow {
            resource_type: t.into(),
            physical_id: Some(format!("p-{t}")),
            status: "CREATE_COMPLETE".into(),
        }
    }

    #[test]
    fn children_land_at_their_path_in_row_order() {
        let mut root = CfnStack {
            name: "R".into(),
            rows: [
                ("B".to_string(), row("AWS::CloudFormation::Stack")),
                ("A".to_string(), row("AWS::CloudFormation::Stack")),
                ("Q".to_string(), row("AWS::SQS::Queue")),
            ]
            .into_iter()
            .collect(),
            children: IndexMap::new(),
        };
        let refs = child_refs(&root, &[]).unwrap();
        assert_eq!(refs.len(), 2);
        insert_at(&mut root, &["A".into()], CfnStack::default());
        insert_at(&mut root, &["B".into()], CfnStack::default());
        insert_at(&mut root, &["B".into(), "G".into()], CfnStack::default());
        sort_children(&mut root);
        let keys: Vec<&String> = root.children.keys().collect();
        assert_eq!(keys, vec!["B", "A"]);
        assert!(root.children["B"].children.contains_key("G"));
    }

    #[test]
    fn a_nested_row_without_physical_id_is_refused() {
        let mut r = row("AWS::CloudFormation::Stack");
        r.physical_id = None;
        let stack = CfnStack {
            name: "R".into(),
            rows: [("C".to_string(), r)].into_iter().collect(),
            children: IndexMap::new(),
        };
        let e = child_refs(&stack, &[]).unwrap_err().to_string();
        assert!(e.contains("'C'"), "{e}");
    }
}
