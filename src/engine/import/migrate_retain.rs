//! Retain injection for a migration: every CloudFormation template of the stack tree gets
//! `DeletionPolicy: Retain` on each resource that is not a nested stack (so the parent's
//! DeleteStack cascades through the children and deletes no resource), through the
//! format-keeping codec. Each nested child's modified template is uploaded to the state
//! bucket and its parent's `TemplateURL` rewritten to it; the root's template is submitted
//! inline up to 51,200 bytes, else uploaded under `cdkd-migrate-tmp/<stack>/` and deleted
//! right after UpdateStack. Every uploaded object is deleted once the update settled.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use aws_sdk_cloudformation::Client as Cfn;

use super::migrate_cfn::{self, Body, CfnError, CfnStack, StackSummary};
use super::nested::is_nested;
use crate::aws::{classify, AwsError, ErrorKind};
use crate::template::codec::{SourceFormat, SourceTemplate};

/// The largest template CloudFormation takes inline (TemplateBody).
pub(super) const INLINE_LIMIT: usize = 51_200;
/// The largest template CloudFormation reads from S3 (TemplateURL).
pub(super) const URL_LIMIT: usize = 1_048_576;

/// Why the injection failed.
#[derive(Debug, thiserror::Error)]
pub enum RetainError {
    #[error("{stack}: its CloudFormation template cannot be edited: {detail}")]
    Template { stack: String, detail: String },
    #[error(
        "{stack}: the template with DeletionPolicy: Retain is {size} bytes, over CloudFormation's \
         {URL_LIMIT}-byte TemplateURL limit; it cannot be submitted"
    )]
    TooLarge { stack: String, size: usize },
    #[error(
        "{stack}: nested stack '{id}' is in its CloudFormation template but not among the \
         stack's resources"
    )]
    NoChild { stack: String, id: String },
    #[error(transparent)]
    Cfn(#[from] CfnError),
    #[error(transparent)]
    Aws(#[from] AwsError),
    #[error(
        "{stack}: the update that sets DeletionPolicy: Retain ended {status}; the stack was \
         not deleted"
    )]
    UpdateFailed { stack: String, status: String },
}

/// The objects a migration puts in the state bucket, deleted when it is done with them.
pub(super) struct TmpStore {
    client: aws_sdk_s3::Client,
    bucket: String,
    /// `https://s3.<region>.<suffix>/<bucket>`: the path-style URL CloudFormation reads.
    url_base: String,
    prefix: String,
    uploaded: Mutex<Vec<String>>,
}

impl TmpStore {
    /// A store under `cdkd-migrate-tmp/<stack>/` of `bucket`, reached through `client`.
    pub fn new(client: aws_sdk_s3::Client, bucket: &str, stack: &str, stamp: &str) -> Self {
        let region = client
            .config()
            .region()
            .map(|r| r.as_ref().to_owned())
            .unwrap_or_else(|| "us-east-1".to_owned());
        let suffix = crate::resolve::partition_for_region(&region).url_suffix;
        TmpStore {
            client,
            bucket: bucket.to_owned(),
            url_base: format!("https://s3.{region}.{suffix}/{bucket}"),
            prefix: format!("cdkd-migrate-tmp/{stack}/{stamp}"),
            uploaded: Mutex::new(Vec::new()),
        }
    }

    /// Uploads `text` as `<prefix><name>.<ext>` and returns its URL.
    async fn put(
        &self,
        name: &str,
        text: String,
        format: SourceFormat,
    ) -> Result<String, AwsError> {
        let key = format!("{}{name}.{}", self.prefix, format.extension());
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(&key)
            .content_type(format.content_type())
            .body(text.into_bytes().into())
            .send()
            .await
            .map_err(|e| {
                AwsError::call("s3", "PutObject", format!("s3://{}/{key}", self.bucket), &e)
            })?;
        self.uploaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(key.clone());
        Ok(format!("{}/{key}", self.url_base))
    }

    /// Deletes every object this store uploaded; a failure is a warning naming the key.
    pub async fn delete_all(&self) {
        let keys = std::mem::take(&mut *self.uploaded.lock().unwrap_or_else(|p| p.into_inner()));
        for key in keys {
            self.delete(&key).await;
        }
    }

    async fn delete(&self, key: &str) {
        let result = self
            .client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await;
        if let Err(e) = result {
            if classify(&e) != ErrorKind::NotFound {
                crate::ui::warn(format!(
                    "the migration's temporary template s3://{}/{key} was not deleted ({}); \
                     delete it by hand",
                    self.bucket,
                    AwsError::call("s3", "DeleteObject", key, &e)
                ));
            }
        }
        self.uploaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|k| k != key);
    }
}

type Boxed<'a> =
    Pin<Box<dyn Future<Output = Result<(String, SourceFormat), RetainError>> + Send + 'a>>;

/// The template of `stack` with Retain injected and its children's TemplateURLs pointing at
/// their uploaded retained templates (recursively). `path` names it in keys and messages.
fn retained<'a>(cfn: &'a Cfn, store: &'a TmpStore, stack: &'a CfnStack, path: String) -> Boxed<'a> {
    Box::pin(async move {
        let body = migrate_cfn::template_body(cfn, &stack.name).await?;
        let mut template = SourceTemplate::parse(&body).map_err(|e| RetainError::Template {
            stack: path.clone(),
            detail: e.to_string(),
        })?;
        template.retain_all(is_nested);
        let rows: Vec<String> = template
            .resources()
            .into_iter()
            .filter(|(_, t)| t.as_deref().is_some_and(is_nested))
            .map(|(id, _)| id)
            .collect();
        for id in rows {
            let Some(child) = stack.children.get(&id) else {
                return Err(RetainError::NoChild {
                    stack: path.clone(),
                    id,
                });
            };
            let child_path = format!("{path}~{id}");
            let (text, format) = retained(cfn, store, child, child_path.clone()).await?;
            if text.len() > URL_LIMIT {
                return Err(RetainError::TooLarge {
                    stack: child_path,
                    size: text.len(),
                });
            }
            let url = store.put(&format!("/{child_path}"), text, format).await?;
            template.set_template_url(&id, &url);
        }
        let text = template
            .render_within(INLINE_LIMIT)
            .map_err(|e| RetainError::Template {
                stack: path.clone(),
                detail: e.to_string(),
            })?;
        Ok((text, template.format()))
    })
}

/// Injects Retain across the tree and updates the root stack, waiting for the update.
/// Uploaded templates are deleted before this returns, whatever the outcome.
pub(super) async fn inject_and_update(
    cfn: &Cfn,
    store: &TmpStore,
    tree: &CfnStack,
    summary: &StackSummary,
) -> Result<(), RetainError> {
    let result = inject_inner(cfn, store, tree, summary).await;
    store.delete_all().await;
    result
}

async fn inject_inner(
    cfn: &Cfn,
    store: &TmpStore,
    tree: &CfnStack,
    summary: &StackSummary,
) -> Result<(), RetainError> {
    let (text, format) = retained(cfn, store, tree, tree.name.clone()).await?;
    let size = text.len();
    let updated = if size <= INLINE_LIMIT {
        migrate_cfn::update(cfn, summary, Body::Inline(text)).await?
    } else if size <= URL_LIMIT {
        let url = store.put("", text, format).await?;
        let key = url
            .rsplit_once(&format!("/{}/", store.bucket))
            .map(|(_, k)| k.to_owned());
        let sent = migrate_cfn::update(cfn, summary, Body::Url(url)).await;
        // CloudFormation has read the template once UpdateStack answered.
        if let Some(key) = key {
            store.delete(&key).await;
        }
        sent?
    } else {
        return Err(RetainError::TooLarge {
            stack: tree.name.clone(),
            size,
        });
    };
    if !updated {
        crate::ui::info(format!(
            "{}: every resource already has DeletionPolicy: Retain",
            tree.name
        ));
        return Ok(());
    }
    match migrate_cfn::wait_settled(cfn, &summary.stack_id).await? {
        Some(status) if status == "UPDATE_COMPLETE" => Ok(()),
        Some(status) => Err(RetainError::UpdateFailed {
            stack: tree.name.clone(),
            status,
        }),
        None => Err(RetainError::UpdateFailed {
            stack: tree.name.clone(),
            status: "with the stack gone".into(),
        }),
    }
}
