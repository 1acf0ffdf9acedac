//! Elastic Load Balancing v2: application, network and gateway load balancers, one provider
//! for the family on one client, one module per type:
//! - [`load_balancer`]: `AWS::ElasticLoadBalancingV2::LoadBalancer`.
//! - [`target_group`]: `AWS::ElasticLoadBalancingV2::TargetGroup`.
//! - [`listener`]: `AWS::ElasticLoadBalancingV2::Listener`.
//! - [`rule`]: `AWS::ElasticLoadBalancingV2::ListenerRule`.
//!
//! Every physical id (and `Ref`) is the resource's ARN, which is also the primary identifier
//! Cloud Control records, so either route addresses a resource the other made. Shared here:
//! tags (AddTags / RemoveTags / DescribeTags on the ARN) and the `{Key, Value}` attribute
//! lists each type sets through its own Modify*Attributes call ([`attributes`]); the action
//! and condition shapes listeners and rules share are in [`actions`].

mod actions;
mod attributes;
mod listener;
mod load_balancer;
mod rule;
mod target_group;

use aws_sdk_elasticloadbalancingv2::types::Tag;
use aws_sdk_elasticloadbalancingv2::Client;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::http::Response as HttpResponse;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use serde_json::{Map, Value};

use self::attributes::{built, pairs_of};
use super::scaffold;
use super::scaffold::tags;
use crate::provider::props::Props;
use crate::provider::{ProviderContext, ProviderError, ResourceRequest};

pub(crate) const LOAD_BALANCER: &str = "AWS::ElasticLoadBalancingV2::LoadBalancer";
pub(crate) const TARGET_GROUP: &str = "AWS::ElasticLoadBalancingV2::TargetGroup";
pub(crate) const LISTENER: &str = "AWS::ElasticLoadBalancingV2::Listener";
pub(crate) const LISTENER_RULE: &str = "AWS::ElasticLoadBalancingV2::ListenerRule";

/// Where ELBv2's errors come from.
const ELBV2: scaffold::Service = scaffold::Service("elasticloadbalancing");

fn client(ctx: &ProviderContext<'_>) -> Client {
    scaffold::regional(ctx, Client::new)
}

/// A call's answer, or `None` when ELBv2 says what it names does not exist: it names its
/// not-found errors per kind (`LoadBalancerNotFound`, `TargetGroupNotFound`,
/// `ListenerNotFound`, `RuleNotFound`), with HTTP 400.
fn unless_gone<T, E>(
    result: Result<T, SdkError<E, HttpResponse>>,
    req: &ResourceRequest<'_>,
    operation: &'static str,
    target: &str,
) -> Result<Option<T>, ProviderError>
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    ELBV2.unless_gone_coded(result, req, operation, target, &["NotFound"])
}

/// The request's `Tags`, for a create call (`None` when there are none).
fn create_tags(req: &ResourceRequest<'_>) -> Result<Option<Vec<Tag>>, ProviderError> {
    let tags: Vec<Tag> = built(Props::new(req).tags()?);
    Ok((!tags.is_empty()).then_some(tags))
}

/// Moves the resource's tags from `previous` to the request's, when they changed.
async fn update_tags(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    previous: &Map<String, Value>,
) -> Result<(), ProviderError> {
    tags::update(
        req,
        previous,
        "Tags",
        |keys| async move {
            client
                .remove_tags()
                .resource_arns(arn)
                .set_tag_keys(Some(keys))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| ELBV2.err(req, "RemoveTags", arn, &e))
        },
        |set| async move {
            client
                .add_tags()
                .resource_arns(arn)
                .set_tags(Some(built(set)))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| ELBV2.err(req, "AddTags", arn, &e))
        },
    )
    .await
}

/// The resource's tags into `props` as CloudFormation lists them.
async fn read_tags(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    props: &mut Map<String, Value>,
) -> Result<(), ProviderError> {
    let out = client
        .describe_tags()
        .resource_arns(arn)
        .send()
        .await
        .map_err(|e| ELBV2.err(req, "DescribeTags", arn, &e))?;
    let listed: Vec<&Tag> = out
        .tag_descriptions()
        .iter()
        .flat_map(|d| d.tags())
        .collect();
    tags::read_into(props, "Tags", pairs_of(listed));
    Ok(())
}

/// An `i32` property (ports, counts), refused when it does not fit.
fn i32_prop(req: &ResourceRequest<'_>, name: &str) -> Result<Option<i32>, ProviderError> {
    Props::new(req)
        .i64(name)?
        .map(|n| {
            i32::try_from(n)
                .map_err(|_| ProviderError::failed(req, format!("property {name} is out of range")))
        })
        .transpose()
}

scaffold::family::family_provider!(Elbv2Provider, "Elastic Load Balancing", client, {
    LOAD_BALANCER => load_balancer,
    TARGET_GROUP => target_group,
    LISTENER => listener,
    LISTENER_RULE => rule,
});
