//! `AWS::ElasticLoadBalancingV2::LoadBalancer`: physical id and `Ref` the ARN; `Fn::GetAtt`
//! `DNSName`, `CanonicalHostedZoneID`, `LoadBalancerArn`, `LoadBalancerFullName`,
//! `LoadBalancerName` and `SecurityGroups`.
//!
//! `Name`, `Type` and `Scheme` replace the load balancer (create-only in the schema); its
//! security groups (SetSecurityGroups), subnets (SetSubnets), address type
//! (SetIpAddressType), attributes (ModifyLoadBalancerAttributes) and tags change in place.
//! A new load balancer is `provisioning` for a minute or more on AWS: create waits until it
//! is `active` (what its listeners' traffic and an alias record to it need), unless
//! `--no-wait`.

use std::time::Duration;

use aws_sdk_elasticloadbalancingv2::types::{
    IpAddressType, LoadBalancer, LoadBalancerSchemeEnum, LoadBalancerStateEnum,
    LoadBalancerTypeEnum, SubnetMapping,
};
use aws_sdk_elasticloadbalancingv2::Client;
use serde_json::{json, Map, Value};

use super::attributes::{self, LOAD_BALANCER_DEFAULTS};
use super::{create_tags, read_tags, unless_gone, update_tags, ELBV2};
use crate::provider::naming;
use crate::provider::props::{changed, Props};
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
use crate::provider::sdk::scaffold::nested::{list_of, Fields};
use crate::provider::sdk::scaffold::readback::as_asked;
use crate::provider::sdk::scaffold::wait::{self, Poll};
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control).
pub(super) const PROPERTIES: &[&str] = &[
    "IpAddressType",
    "LoadBalancerAttributes",
    "Name",
    "Scheme",
    "SecurityGroups",
    "SubnetMappings",
    "Subnets",
    "Tags",
    "Type",
];

/// ELBv2 names: at most 32 letters, digits and hyphens.
pub(super) const NAME_RULES: naming::NameRules = naming::NameRules {
    max_len: 32,
    lowercase: false,
    extra_chars: "-",
    suffix: "",
};

/// How long a new load balancer may take to become `active`.
const ACTIVE_LIMIT: Duration = Duration::from_secs(15 * 60);

const MAPPING_KEYS: &[&str] = &[
    "SubnetId",
    "AllocationId",
    "PrivateIPv4Address",
    "IPv6Address",
];

fn subnet_mappings(req: &ResourceRequest<'_>) -> Result<Option<Vec<SubnetMapping>>, ProviderError> {
    let list = list_of(req, "SubnetMappings", MAPPING_KEYS)?
        .iter()
        .map(|m| {
            Ok(SubnetMapping::builder()
                .set_subnet_id(m.str("SubnetId")?)
                .set_allocation_id(m.str("AllocationId")?)
                .set_private_ipv4_address(m.str("PrivateIPv4Address")?)
                .set_ipv6_address(m.str("IPv6Address")?)
                .build())
        })
        .collect::<Result<Vec<_>, ProviderError>>()?;
    Ok((!list.is_empty()).then_some(list))
}

fn strings(req: &ResourceRequest<'_>, name: &str) -> Result<Option<Vec<String>>, ProviderError> {
    let list = Props::new(req).strings(name)?;
    Ok((!list.is_empty()).then_some(list))
}

fn ip_address_type(req: &ResourceRequest<'_>) -> Result<Option<IpAddressType>, ProviderError> {
    Ok(Props::new(req)
        .str("IpAddressType")?
        .map(|t| IpAddressType::from(t.as_str())))
}

async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<LoadBalancer>, ProviderError> {
    Ok(unless_gone(
        client
            .describe_load_balancers()
            .load_balancer_arns(arn)
            .send()
            .await,
        req,
        "DescribeLoadBalancers",
        arn,
    )?
    .and_then(|out| out.load_balancers().first().cloned()))
}

/// What `Fn::GetAtt` reads of a load balancer. Its full name is the ARN's part after
/// `loadbalancer/` (`app/<name>/<id>`), what CloudWatch metrics name it by.
fn reported(req: &ResourceRequest<'_>, lb: &LoadBalancer) -> Result<Provisioned, ProviderError> {
    let arn = ELBV2.required(req, lb.load_balancer_arn(), "load balancer ARN")?;
    let full = arn.split_once(":loadbalancer/").map_or("", |(_, f)| f);
    Ok(provisioned(
        arn,
        &[
            ("LoadBalancerArn", json!(arn)),
            ("DNSName", json!(lb.dns_name().unwrap_or_default())),
            (
                "CanonicalHostedZoneID",
                json!(lb.canonical_hosted_zone_id().unwrap_or_default()),
            ),
            ("LoadBalancerFullName", json!(full)),
            (
                "LoadBalancerName",
                json!(lb.load_balancer_name().unwrap_or_default()),
            ),
            ("SecurityGroups", json!(lb.security_groups())),
        ],
    ))
}

pub(super) async fn provisioned_of(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    describe(client, req, arn)
        .await?
        .map(|lb| reported(req, &lb))
        .transpose()
}

/// Polls until the load balancer is `active`; `failed` is the resource's error.
async fn until_active(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<LoadBalancer, ProviderError> {
    wait::until(req, ACTIVE_LIMIT, move || async move {
        let lb = describe(client, req, arn).await?.ok_or_else(|| {
            ProviderError::failed(req, format!("{arn} vanished while provisioning"))
        })?;
        let state = lb.state().and_then(|s| s.code()).cloned();
        Ok(match state {
            Some(LoadBalancerStateEnum::Active) | None => Poll::Done(lb),
            Some(LoadBalancerStateEnum::Failed) => {
                let why = lb
                    .state()
                    .and_then(|s| s.reason())
                    .unwrap_or("no reason given");
                return Err(ProviderError::failed(req, format!("{arn} failed: {why}")));
            }
            Some(other) => Poll::Pending(format!("{arn} is {}", other.as_str())),
        })
    })
    .await
}

pub(super) async fn create(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let name = match props.str("Name")? {
        Some(n) => n,
        None => {
            naming::single_hyphens(naming::generate(ctx.stack_name, req.logical_id, NAME_RULES))
        }
    };
    let out = client
        .create_load_balancer()
        .name(&name)
        .set_subnets(strings(req, "Subnets")?)
        .set_subnet_mappings(subnet_mappings(req)?)
        .set_security_groups(strings(req, "SecurityGroups")?)
        .set_scheme(
            props
                .str("Scheme")?
                .map(|s| LoadBalancerSchemeEnum::from(s.as_str())),
        )
        .set_type(
            props
                .str("Type")?
                .map(|t| LoadBalancerTypeEnum::from(t.as_str())),
        )
        .set_ip_address_type(ip_address_type(req)?)
        .set_tags(create_tags(req)?)
        .send()
        .await
        .map_err(|e| ELBV2.err(req, "CreateLoadBalancer", &name, &e))?;
    let lb = out.load_balancers().first().ok_or_else(|| {
        ProviderError::failed(req, "elasticloadbalancing returned no load balancer")
    })?;
    let arn = ELBV2
        .required(req, lb.load_balancer_arn(), "load balancer ARN")?
        .to_owned();
    let finish = async {
        attributes::modify!(
            req,
            &arn,
            "ModifyLoadBalancerAttributes",
            attributes::asked(req, "LoadBalancerAttributes")?,
            client
                .modify_load_balancer_attributes()
                .load_balancer_arn(&arn)
        );
        if ctx.no_wait {
            return Ok(lb.clone());
        }
        until_active(client, req, &arn).await
    };
    match finish.await {
        Ok(live) => reported(req, &live),
        Err(e) => {
            // Never leave a half-configured load balancer behind.
            let _ = client
                .delete_load_balancer()
                .load_balancer_arn(&arn)
                .send()
                .await;
            Err(e)
        }
    }
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
    let moved = |n: &str| changed(previous, req.properties, n);
    if moved("SecurityGroups") {
        client
            .set_security_groups()
            .load_balancer_arn(arn)
            .set_security_groups(Some(Props::new(req).strings("SecurityGroups")?))
            .send()
            .await
            .map_err(|e| ELBV2.err(req, "SetSecurityGroups", arn, &e))?;
    }
    if moved("Subnets") || moved("SubnetMappings") {
        client
            .set_subnets()
            .load_balancer_arn(arn)
            .set_subnets(strings(req, "Subnets")?)
            .set_subnet_mappings(subnet_mappings(req)?)
            .send()
            .await
            .map_err(|e| ELBV2.err(req, "SetSubnets", arn, &e))?;
    }
    if moved("IpAddressType") {
        client
            .set_ip_address_type()
            .load_balancer_arn(arn)
            .ip_address_type(ip_address_type(req)?.unwrap_or(IpAddressType::Ipv4))
            .send()
            .await
            .map_err(|e| ELBV2.err(req, "SetIpAddressType", arn, &e))?;
    }
    if moved("LoadBalancerAttributes") {
        attributes::modify!(
            req,
            arn,
            "ModifyLoadBalancerAttributes",
            attributes::to_send(
                req,
                previous,
                "LoadBalancerAttributes",
                LOAD_BALANCER_DEFAULTS
            )?,
            client
                .modify_load_balancer_attributes()
                .load_balancer_arn(arn)
        );
    }
    update_tags(client, req, arn, previous).await?;
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
        client
            .delete_load_balancer()
            .load_balancer_arn(arn)
            .send()
            .await,
        req,
        "DeleteLoadBalancer",
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
    let Some(lb) = describe(client, req, arn).await? else {
        return Ok(None);
    };
    let subnets: Vec<&str> = lb
        .availability_zones()
        .iter()
        .filter_map(|z| z.subnet_id())
        .collect();
    let mappings: Vec<Value> = lb
        .availability_zones()
        .iter()
        .map(|z| {
            let address = z.load_balancer_addresses().first();
            Fields::new()
                .put("SubnetId", z.subnet_id())
                .put("AllocationId", address.and_then(|a| a.allocation_id()))
                .put(
                    "PrivateIPv4Address",
                    address.and_then(|a| a.private_ipv4_address()),
                )
                .put("IPv6Address", address.and_then(|a| a.ipv6_address()))
                .value()
        })
        .collect();
    let mut live = Fields::new()
        .put("Name", lb.load_balancer_name())
        .put("Type", lb.r#type().map(|t| t.as_str()))
        .put("Scheme", lb.scheme().map(|s| s.as_str()))
        .put("IpAddressType", lb.ip_address_type().map(|t| t.as_str()))
        .put("Subnets", Some(json!(subnets)))
        .put("SubnetMappings", Some(Value::Array(mappings)))
        .put("SecurityGroups", Some(json!(lb.security_groups())))
        .map();
    let attrs = client
        .describe_load_balancer_attributes()
        .load_balancer_arn(arn)
        .send()
        .await
        .map_err(|e| ELBV2.err(req, "DescribeLoadBalancerAttributes", arn, &e))?;
    attributes::read_into(
        &mut live,
        req,
        "LoadBalancerAttributes",
        attributes::pairs_of(attrs.attributes()),
    )?;
    let mut props = as_asked(req, live);
    read_tags(client, req, arn, &mut props).await?;
    Ok(Some(props))
}
