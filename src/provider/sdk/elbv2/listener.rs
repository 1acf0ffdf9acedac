//! `AWS::ElasticLoadBalancingV2::Listener`: physical id and `Ref` the ARN; `Fn::GetAtt`
//! `ListenerArn`.
//!
//! `LoadBalancerArn` replaces the listener (create-only); its port, protocol, SSL policy,
//! certificates, ALPN policy and default actions change in place (ModifyListener), its
//! attributes through ModifyListenerAttributes. A listener is ready when CreateListener
//! answers.

use aws_sdk_elasticloadbalancingv2::types::{Listener, ProtocolEnum};
use aws_sdk_elasticloadbalancingv2::Client;
use serde_json::{json, Map, Value};

use super::actions::{action_value, actions, certificate_value, certificates};
use super::attributes::{self, LISTENER_DEFAULTS};
use super::{i32_prop, unless_gone, ELBV2};
use crate::provider::props::{changed, Props};
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
use crate::provider::sdk::scaffold::nested::Fields;
use crate::provider::sdk::scaffold::readback::as_asked;
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control).
pub(super) const PROPERTIES: &[&str] = &[
    "AlpnPolicy",
    "Certificates",
    "DefaultActions",
    "ListenerAttributes",
    "LoadBalancerArn",
    "Port",
    "Protocol",
    "SslPolicy",
];

/// What ModifyListener changes.
const MODIFIED: &[&str] = &[
    "AlpnPolicy",
    "Certificates",
    "DefaultActions",
    "Port",
    "Protocol",
    "SslPolicy",
];

fn protocol(req: &ResourceRequest<'_>) -> Result<Option<ProtocolEnum>, ProviderError> {
    Ok(Props::new(req)
        .str("Protocol")?
        .map(|p| ProtocolEnum::from(p.as_str())))
}

fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<Listener>, ProviderError> {
    Ok(unless_gone(
        client.describe_listeners().listener_arns(arn).send().await,
        req,
        "DescribeListeners",
        arn,
    )?
    .and_then(|out| out.listeners().first().cloned()))
}

fn reported(arn: &str) -> Provisioned {
    provisioned(arn, &[("ListenerArn", json!(arn))])
}

pub(super) async fn provisioned_of(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    Ok(describe(client, req, arn).await?.map(|_| reported(arn)))
}

pub(super) async fn create(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let lb = props.required_str("LoadBalancerArn")?;
    let out = client
        .create_listener()
        .load_balancer_arn(&lb)
        .set_protocol(protocol(req)?)
        .set_port(i32_prop(req, "Port")?)
        .set_ssl_policy(props.str("SslPolicy")?)
        .set_certificates(non_empty(certificates(req)?))
        .set_default_actions(Some(actions(req, "DefaultActions")?))
        .set_alpn_policy(non_empty(props.strings("AlpnPolicy")?))
        .send()
        .await
        .map_err(|e| ELBV2.err(req, "CreateListener", &lb, &e))?;
    let arn = ELBV2
        .required(
            req,
            out.listeners().first().and_then(|l| l.listener_arn()),
            "listener ARN",
        )?
        .to_owned();
    if let Err(e) = (async {
        attributes::modify!(
            req,
            &arn,
            "ModifyListenerAttributes",
            attributes::asked(req, "ListenerAttributes")?,
            client.modify_listener_attributes().listener_arn(&arn)
        );
        Ok::<(), ProviderError>(())
    })
    .await
    {
        // Never leave a half-configured listener behind.
        let _ = client.delete_listener().listener_arn(&arn).send().await;
        return Err(e);
    }
    Ok(reported(&arn))
}

pub(super) async fn update(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    if let Some(replace) = create_only_change(req, previous, &[]) {
        return Ok(replace);
    }
    let props = Props::new(req);
    let moved = |n: &str| changed(previous, req.properties, n);
    if MODIFIED.iter().any(|p| moved(p)) {
        client
            .modify_listener()
            .listener_arn(arn)
            .set_protocol(protocol(req)?)
            .set_port(i32_prop(req, "Port")?)
            .set_ssl_policy(props.str("SslPolicy")?)
            .set_certificates(non_empty(certificates(req)?))
            .set_default_actions(Some(actions(req, "DefaultActions")?))
            .set_alpn_policy(non_empty(props.strings("AlpnPolicy")?))
            .send()
            .await
            .map_err(|e| ELBV2.err(req, "ModifyListener", arn, &e))?;
    }
    if moved("ListenerAttributes") {
        attributes::modify!(
            req,
            arn,
            "ModifyListenerAttributes",
            attributes::to_send(req, previous, "ListenerAttributes", LISTENER_DEFAULTS)?,
            client.modify_listener_attributes().listener_arn(arn)
        );
    }
    provisioned_of(ctx, client, req, arn)
        .await?
        .map(UpdateOutcome::Updated)
        .ok_or_else(|| ProviderError::failed(req, format!("{arn} does not exist")))
}

pub(super) async fn delete(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<(), ProviderError> {
    unless_gone(
        client.delete_listener().listener_arn(arn).send().await,
        req,
        "DeleteListener",
        arn,
    )
    .map(|_| ())
}

pub(super) async fn read(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(l) = describe(client, req, arn).await? else {
        return Ok(None);
    };
    let mut live = Fields::new()
        .put("LoadBalancerArn", l.load_balancer_arn())
        .put("Port", l.port())
        .put("Protocol", l.protocol().map(|p| p.as_str()))
        .put("SslPolicy", l.ssl_policy())
        .list(
            "Certificates",
            l.certificates().iter().map(certificate_value).collect(),
        )
        .put(
            "AlpnPolicy",
            (!l.alpn_policy().is_empty()).then(|| json!(l.alpn_policy())),
        )
        .put(
            "DefaultActions",
            Some(Value::Array(
                l.default_actions().iter().map(action_value).collect(),
            )),
        )
        .map();
    if req.properties.contains_key("ListenerAttributes") {
        let attrs = client
            .describe_listener_attributes()
            .listener_arn(arn)
            .send()
            .await
            .map_err(|e| ELBV2.err(req, "DescribeListenerAttributes", arn, &e))?;
        attributes::read_into(
            &mut live,
            req,
            "ListenerAttributes",
            attributes::pairs_of(attrs.attributes()),
        )?;
    }
    Ok(Some(as_asked(req, live)))
}
