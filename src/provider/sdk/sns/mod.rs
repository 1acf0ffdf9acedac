//! Amazon SNS: `AWS::SNS::Topic`, `AWS::SNS::Subscription` and `AWS::SNS::TopicPolicy`.
//!
//! Topics and subscriptions are named by their ARNs (the physical id and `Ref`). A topic
//! policy has no identity of its own in SNS: it is the `Policy` attribute of each listed topic,
//! so its physical id is a generated name. Every call goes to the region in the ARN it acts on,
//! which is what lets a subscription reach a topic in another region.

mod subscription;
mod topic;
mod topic_policy;

use async_trait::async_trait;
use aws_sdk_sns::Client;
use serde_json::{Map, Value};

use super::{is_not_found, scaffold, with_properties};
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const TOPIC: &str = "AWS::SNS::Topic";

const SUBSCRIPTION: &str = "AWS::SNS::Subscription";

const TOPIC_POLICY: &str = "AWS::SNS::TopicPolicy";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const TOPIC_POLICY_PROPERTIES: &[&str] = &["PolicyDocument", "Topics"];

/// The SDK provider for SNS topics, subscriptions and topic policies.
pub struct SnsProvider;

/// A client for `region` (the context's region when `None`).
fn client(ctx: &ProviderContext<'_>, region: Option<&str>) -> Client {
    ctx.clients
        .cached(Some(region.unwrap_or(ctx.region)), Client::new)
}

/// The region field of an ARN (`arn:aws:sns:REGION:...`), when it has one.
fn arn_region(arn: &str) -> Option<&str> {
    arn.split(':').nth(3).filter(|r| !r.is_empty())
}

/// The account field of an ARN.
fn arn_account(arn: &str) -> Option<&str> {
    arn.split(':').nth(4).filter(|a| !a.is_empty())
}

/// A client for the region an ARN names.
fn client_for_arn(ctx: &ProviderContext<'_>, arn: &str) -> Client {
    client(ctx, arn_region(arn))
}

/// Where SNS's errors come from.
const SNS: scaffold::Service = scaffold::Service("sns");

#[async_trait]
impl Provider for SnsProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[TOPIC, SUBSCRIPTION, TOPIC_POLICY]
    }

    fn supported_properties(&self, resource_type: &str) -> Option<Vec<&'static str>> {
        let list = match resource_type {
            TOPIC => return Some(topic::properties()),
            SUBSCRIPTION => return Some(subscription::properties()),
            TOPIC_POLICY => TOPIC_POLICY_PROPERTIES,
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
            SUBSCRIPTION => subscription::create(ctx, req).await,
            TOPIC_POLICY => topic_policy::create(ctx, req).await,
            _ => topic::create(ctx, req).await,
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
            SUBSCRIPTION => subscription::update(ctx, req, physical_id, previous).await,
            TOPIC_POLICY => topic_policy::update(ctx, req, physical_id, previous).await,
            _ => topic::update(ctx, req, physical_id, previous).await,
        }
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        match req.resource_type {
            SUBSCRIPTION => subscription::delete(ctx, req, physical_id).await,
            TOPIC_POLICY => topic_policy::delete(ctx, req).await,
            _ => topic::delete(ctx, req, physical_id).await,
        }
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        match req.resource_type {
            SUBSCRIPTION => subscription::read(ctx, req, physical_id).await,
            TOPIC_POLICY => topic_policy::read(ctx, req).await,
            _ => topic::read(ctx, req, physical_id).await,
        }
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        match req.resource_type {
            SUBSCRIPTION => subscription::import(ctx, req, physical_id).await,
            TOPIC_POLICY => topic_policy::import(ctx, req, physical_id).await,
            _ => topic::import(ctx, req, physical_id).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arn_fields() {
        let arn = "arn:aws:sns:eu-west-1:123456789012:topic:0b1c";
        assert_eq!(arn_region(arn), Some("eu-west-1"));
        assert_eq!(arn_account(arn), Some("123456789012"));
        assert_eq!(arn_region("pending confirmation"), None);
    }
}
