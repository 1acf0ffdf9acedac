//! Amazon SQS: `AWS::SQS::Queue` and `AWS::SQS::QueuePolicy`.
//!
//! A queue's physical id is its URL (what `Ref` returns); `Fn::GetAtt` offers `Arn`, `QueueName`
//! and `QueueUrl`. Every CloudFormation property except `QueueName` and `FifoQueue` is a queue
//! attribute and changes in place through SetQueueAttributes; a property taken out of the
//! template goes back to the service default. A queue policy has no identity of its own in
//! SQS: it is the `Policy` attribute of each listed queue, so its physical id is a generated
//! name (`Fn::GetAtt Id` and `Ref` return it).

mod queue;
mod queue_policy;

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::QueueAttributeName;
use aws_sdk_sqs::Client;
use aws_smithy_runtime_api::http::Response as HttpResponse;
use serde_json::{Map, Value};

use super::{scaffold, with_properties};
use crate::aws::error_code;
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const QUEUE: &str = "AWS::SQS::Queue";

const QUEUE_POLICY: &str = "AWS::SQS::QueuePolicy";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const QUEUE_POLICY_PROPERTIES: &[&str] = &["PolicyDocument", "Queues"];

/// The SDK provider for SQS queues and queue policies.
pub struct SqsProvider;

/// Where SQS's errors come from.
const SQS: scaffold::Service = scaffold::Service("sqs");

fn client(ctx: &ProviderContext<'_>) -> Client {
    scaffold::regional(ctx, Client::new)
}

/// Not-found, in both spellings SQS uses (JSON `QueueDoesNotExist`, query-compatible
/// `AWS.SimpleQueueService.NonExistentQueue`).
fn is_not_found<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> bool {
    super::is_not_found(err) || error_code(err).is_some_and(|c| c.contains("QueueDoesNotExist"))
}

async fn queue_attributes(
    client: &Client,
    req: &ResourceRequest<'_>,
    url: &str,
) -> Result<Option<HashMap<QueueAttributeName, String>>, ProviderError> {
    match client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
    {
        Ok(out) => Ok(Some(out.attributes.unwrap_or_default())),
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => Err(SQS.err(req, "GetQueueAttributes", url, &e)),
    }
}

#[async_trait]
impl Provider for SqsProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[QUEUE, QUEUE_POLICY]
    }

    fn supported_properties(&self, resource_type: &str) -> Option<Vec<&'static str>> {
        let list = match resource_type {
            QUEUE => return Some(queue::properties()),
            QUEUE_POLICY => QUEUE_POLICY_PROPERTIES,
            _ => return None,
        };
        Some(list.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        match req.resource_type {
            QUEUE_POLICY => queue_policy::create_policy(ctx, req).await,
            _ => queue::create_queue(ctx, req).await,
        }
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        match req.resource_type {
            QUEUE_POLICY => queue_policy::update_policy(ctx, req, physical_id, previous).await,
            _ => queue::update_queue(ctx, req, physical_id, previous).await,
        }
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        match req.resource_type {
            QUEUE_POLICY => queue_policy::delete_policy(ctx, req).await,
            _ => queue::delete_queue(ctx, req, physical_id).await,
        }
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        match req.resource_type {
            QUEUE_POLICY => queue_policy::read_policy(ctx, req).await,
            _ => queue::read_queue(ctx, req, physical_id).await,
        }
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        match req.resource_type {
            QUEUE_POLICY => match queue_policy::read_policy(ctx, req).await? {
                Some(_) => Ok(queue_policy::policy_provisioned(physical_id)),
                None => Err(ProviderError::failed(
                    req,
                    "none of the listed queues has a policy",
                )),
            },
            _ => queue::import_queue(ctx, req, physical_id).await,
        }
    }
}
