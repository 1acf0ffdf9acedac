//! `AWS::EC2::EIP` (physical id Cloud Control's `PublicIp|AllocationId`; `Ref` the public
//! address; `Fn::GetAtt` `AllocationId`, `PublicIp`; tags in place, the rest replaces it) and
//! `AWS::EC2::NatGateway` (physical id and `Ref`: the gateway id; `Fn::GetAtt NatGatewayId`;
//! tags in place, the rest replaces it).
//!
//! Waits: a NAT gateway's create returns once the gateway is `available` (a route to a
//! pending one is accepted, but traffic through it is not; `--no-wait` skips the wait), and
//! its delete returns once it is `deleted`, whatever `--no-wait` says: until then AWS keeps
//! its network interface in the subnet and its Elastic IP associated, so the subnet's, the
//! address's and the internet gateway's deletes after it would fail.

use std::time::Duration;

use aws_sdk_ec2::types::{
    Address, ConnectivityType, DomainType, NatGateway, NatGatewayState, ResourceType,
};
use aws_sdk_ec2::Client;
use serde_json::{json, Map, Value};

use super::wait::{self, Poll};
use super::{is_not_found, provisioned, tags, unless_gone, EC2};
use crate::provider::props::{changed, Props};
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

pub(super) const EIP_PROPERTIES: &[&str] =
    &["Domain", "NetworkBorderGroup", "PublicIpv4Pool", "Tags"];
pub(super) const NAT_PROPERTIES: &[&str] = &[
    "AllocationId",
    "ConnectivityType",
    "PrivateIpAddress",
    "SubnetId",
    "Tags",
];

/// AWS documents NAT gateway creation and deletion as taking up to a quarter of an hour.
const NAT_LIMIT: Duration = Duration::from_secs(15 * 60);

/// The allocation id of an Elastic IP id (`PublicIp|AllocationId`, or a bare allocation id).
fn allocation(id: &str) -> &str {
    id.rsplit('|').next().unwrap_or(id)
}

async fn describe_address(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Address>, ProviderError> {
    let call = client.describe_addresses();
    // A bare public address (an import by `Ref`) is looked up as such.
    let call = if id.contains('|') || id.starts_with("eipalloc-") {
        call.allocation_ids(allocation(id))
    } else {
        call.public_ips(id)
    };
    Ok(
        unless_gone(call.send().await, req, "DescribeAddresses", id)?
            .and_then(|out| out.addresses().first().cloned()),
    )
}

fn eip_made(ip: &str, allocation: &str) -> Provisioned {
    provisioned(
        format!("{ip}|{allocation}"),
        &[("AllocationId", json!(allocation)), ("PublicIp", json!(ip))],
    )
}

pub(super) async fn create_eip(
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let domain = props.str("Domain")?.unwrap_or_else(|| "vpc".into());
    let out = client
        .allocate_address()
        .domain(DomainType::from(domain.as_str()))
        .set_network_border_group(props.str("NetworkBorderGroup")?)
        .set_public_ipv4_pool(props.str("PublicIpv4Pool")?)
        .set_tag_specifications(tags::specification(req, ResourceType::ElasticIp)?.map(|s| vec![s]))
        .send()
        .await
        .map_err(|e| EC2.err(req, "AllocateAddress", req.logical_id, &e))?;
    let ip = EC2.required(req, out.public_ip(), "public IP")?;
    let alloc = EC2.required(req, out.allocation_id(), "allocation id")?;
    Ok(eip_made(ip, alloc))
}

pub(super) async fn update_eip(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    for name in ["Domain", "PublicIpv4Pool"] {
        if changed(previous, req.properties, name) {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: format!("{name} changed: an address keeps its pool and domain"),
            });
        }
    }
    let alloc = allocation(id);
    tags::update(client, req, alloc, previous).await?;
    eip_provisioned(client, req, id)
        .await?
        .map(UpdateOutcome::Updated)
        .ok_or_else(|| ProviderError::failed(req, format!("Elastic IP {id} does not exist")))
}

pub(super) async fn delete_eip(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    let alloc = allocation(id);
    let call = || client.release_address().allocation_id(alloc).send();
    unless_gone(
        wait::while_dependent(call).await,
        req,
        "ReleaseAddress",
        alloc,
    )
    .map(|_| ())
}

pub(super) async fn read_eip(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(a) = describe_address(client, req, id).await? else {
        return Ok(None);
    };
    let mut props = Map::new();
    if let Some(d) = a.domain() {
        props.insert("Domain".into(), json!(d.as_str()));
    }
    for (name, value) in [
        ("NetworkBorderGroup", a.network_border_group()),
        ("PublicIpv4Pool", a.public_ipv4_pool()),
    ] {
        // Defaults AWS fills in are shown only where the template names them.
        if let Some(v) = value.filter(|_| req.properties.contains_key(name)) {
            props.insert(name.into(), json!(v));
        }
    }
    tags::read_into(&mut props, a.tags());
    Ok(Some(props))
}

pub(super) async fn eip_provisioned(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    let Some(a) = describe_address(client, req, id).await? else {
        return Ok(None);
    };
    let ip = EC2.required(req, a.public_ip(), "public IP")?;
    let alloc = EC2.required(req, a.allocation_id(), "allocation id")?;
    Ok(Some(eip_made(ip, alloc)))
}

async fn describe_nat(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<NatGateway>, ProviderError> {
    Ok(unless_gone(
        client
            .describe_nat_gateways()
            .nat_gateway_ids(id)
            .send()
            .await,
        req,
        "DescribeNatGateways",
        id,
    )?
    .and_then(|out| out.nat_gateways().first().cloned()))
}

fn nat_made(id: &str) -> Provisioned {
    provisioned(id, &[("NatGatewayId", json!(id))])
}

/// Waits until the gateway is available; a gateway that failed fails the resource with
/// AWS's reason.
async fn until_available(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    wait::until(req, NAT_LIMIT, move || async move {
        let Some(nat) = describe_nat(client, req, id).await? else {
            return Ok(Poll::Pending(format!("NAT gateway {id} not listed yet")));
        };
        match nat.state() {
            Some(NatGatewayState::Available) => Ok(Poll::Done(())),
            Some(
                NatGatewayState::Failed | NatGatewayState::Deleting | NatGatewayState::Deleted,
            ) => Err(ProviderError::failed(
                req,
                format!(
                    "NAT gateway {id} failed: {}",
                    nat.failure_message().unwrap_or("no reason given")
                ),
            )),
            other => Ok(Poll::Pending(format!(
                "NAT gateway {id} is {}",
                other.map_or("pending", |s| s.as_str())
            ))),
        }
    })
    .await
}

pub(super) async fn create_nat(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let subnet = props.required_str("SubnetId")?;
    let out = client
        .create_nat_gateway()
        .subnet_id(&subnet)
        .set_allocation_id(props.str("AllocationId")?)
        .set_connectivity_type(
            props
                .str("ConnectivityType")?
                .map(|c| ConnectivityType::from(c.as_str())),
        )
        .set_private_ip_address(props.str("PrivateIpAddress")?)
        .set_client_token(req.client_token.map(str::to_owned))
        .set_tag_specifications(
            tags::specification(req, ResourceType::Natgateway)?.map(|s| vec![s]),
        )
        .send()
        .await
        .map_err(|e| EC2.err(req, "CreateNatGateway", &subnet, &e))?;
    let id = EC2
        .required(
            req,
            out.nat_gateway().and_then(|n| n.nat_gateway_id()),
            "NAT gateway id",
        )?
        .to_owned();
    if !ctx.no_wait {
        until_available(client, req, &id).await?;
    }
    Ok(nat_made(&id))
}

pub(super) async fn update_nat(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    tags::update(client, req, id, previous).await?;
    Ok(UpdateOutcome::Updated(nat_made(id)))
}

pub(super) async fn delete_nat(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    match client.delete_nat_gateway().nat_gateway_id(id).send().await {
        Ok(_) => {}
        Err(e) if is_not_found(&e) => return Ok(()),
        Err(e) => return Err(EC2.err(req, "DeleteNatGateway", id, &e)),
    }
    wait::until(req, NAT_LIMIT, move || async move {
        Ok(match describe_nat(client, req, id).await? {
            None => Poll::Done(()),
            Some(n) if n.state() == Some(&NatGatewayState::Deleted) => Poll::Done(()),
            Some(n) => Poll::Pending(format!(
                "NAT gateway {id} is {}",
                n.state().map_or("deleting", |s| s.as_str())
            )),
        })
    })
    .await
}

/// A gateway that exists and is not deleted (or being deleted).
async fn live_nat(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<NatGateway>, ProviderError> {
    Ok(describe_nat(client, req, id).await?.filter(|n| {
        !matches!(
            n.state(),
            Some(NatGatewayState::Deleted | NatGatewayState::Deleting)
        )
    }))
}

pub(super) async fn read_nat(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(n) = live_nat(client, req, id).await? else {
        return Ok(None);
    };
    let mut props = Map::new();
    if let Some(s) = n.subnet_id() {
        props.insert("SubnetId".into(), json!(s));
    }
    if let Some(a) = n.nat_gateway_addresses().first() {
        if let Some(alloc) = a.allocation_id() {
            props.insert("AllocationId".into(), json!(alloc));
        }
        if let Some(ip) = a
            .private_ip()
            .filter(|_| req.properties.contains_key("PrivateIpAddress"))
        {
            props.insert("PrivateIpAddress".into(), json!(ip));
        }
    }
    if let Some(c) = n
        .connectivity_type()
        .filter(|_| req.properties.contains_key("ConnectivityType"))
    {
        props.insert("ConnectivityType".into(), json!(c.as_str()));
    }
    tags::read_into(&mut props, n.tags());
    Ok(Some(props))
}

pub(super) async fn nat_provisioned(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    Ok(live_nat(client, req, id).await?.map(|_| nat_made(id)))
}
