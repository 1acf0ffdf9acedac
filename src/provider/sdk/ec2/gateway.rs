//! `AWS::EC2::InternetGateway` (physical id and `Ref`: the gateway id; `Fn::GetAtt
//! InternetGatewayId`; only tags change) and `AWS::EC2::VPCGatewayAttachment` (an internet
//! gateway attached to a VPC; physical id and `Ref` are Cloud Control's identifier
//! `IGW|vpc-…`, `Fn::GetAtt AttachmentType` is `IGW`; a new gateway is swapped in place,
//! a new VPC replaces the attachment).

use aws_sdk_ec2::types::{Filter, InternetGateway, ResourceType};
use aws_sdk_ec2::Client;
use serde_json::{json, Map, Value};

use super::{is_not_found, provisioned, tags, unless_gone, wait, EC2};
use crate::aws::error_code;
use crate::provider::props::{changed, Props};
use crate::provider::sdk::with_properties;
use crate::provider::{ProviderError, Provisioned, ResourceRequest, UpdateOutcome};

pub(super) const GATEWAY_PROPERTIES: &[&str] = &["Tags"];
pub(super) const ATTACHMENT_PROPERTIES: &[&str] = &["InternetGatewayId", "VpcId"];

/// The attachment type CloudFormation reports for an internet gateway.
const IGW: &str = "IGW";

async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<InternetGateway>, ProviderError> {
    Ok(unless_gone(
        client
            .describe_internet_gateways()
            .internet_gateway_ids(id)
            .send()
            .await,
        req,
        "DescribeInternetGateways",
        id,
    )?
    .and_then(|out| out.internet_gateways().first().cloned()))
}

pub(super) async fn gateway_provisioned(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    Ok(describe(client, req, id)
        .await?
        .map(|_| provisioned(id, &[("InternetGatewayId", json!(id))])))
}

pub(super) async fn create_gateway(
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let out = client
        .create_internet_gateway()
        .set_tag_specifications(
            tags::specification(req, ResourceType::InternetGateway)?.map(|s| vec![s]),
        )
        .send()
        .await
        .map_err(|e| EC2.err(req, "CreateInternetGateway", req.logical_id, &e))?;
    let id = EC2.required(
        req,
        out.internet_gateway().and_then(|g| g.internet_gateway_id()),
        "internet gateway id",
    )?;
    Ok(provisioned(id, &[("InternetGatewayId", json!(id))]))
}

pub(super) async fn update_gateway(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    tags::update(client, req, id, previous).await?;
    Ok(UpdateOutcome::Updated(provisioned(
        id,
        &[("InternetGatewayId", json!(id))],
    )))
}

pub(super) async fn delete_gateway(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    let call = || {
        client
            .delete_internet_gateway()
            .internet_gateway_id(id)
            .send()
    };
    unless_gone(
        wait::while_dependent(call).await,
        req,
        "DeleteInternetGateway",
        id,
    )
    .map(|_| ())
}

pub(super) async fn read_gateway(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    Ok(describe(client, req, id).await?.map(|g| {
        let mut props = Map::new();
        tags::read_into(&mut props, g.tags());
        props
    }))
}

/// The VPC of an attachment id (`IGW|vpc-…`; a bare VPC id is accepted on import).
fn attachment_vpc(id: &str) -> &str {
    id.rsplit('|').next().unwrap_or(id)
}

fn attachment_id(vpc: &str) -> String {
    format!("{IGW}|{vpc}")
}

/// The internet gateway attached to `vpc`, if any.
async fn attached_gateway(
    client: &Client,
    req: &ResourceRequest<'_>,
    vpc: &str,
) -> Result<Option<String>, ProviderError> {
    let out = client
        .describe_internet_gateways()
        .filters(
            Filter::builder()
                .name("attachment.vpc-id")
                .values(vpc)
                .build(),
        )
        .send()
        .await
        .map_err(|e| EC2.err(req, "DescribeInternetGateways", vpc, &e))?;
    Ok(out
        .internet_gateways()
        .first()
        .and_then(|g| g.internet_gateway_id().map(str::to_owned)))
}

fn attachment_made(vpc: &str) -> Provisioned {
    provisioned(attachment_id(vpc), &[("AttachmentType", json!(IGW))])
}

async fn attach(
    client: &Client,
    req: &ResourceRequest<'_>,
    gateway: &str,
    vpc: &str,
) -> Result<(), ProviderError> {
    client
        .attach_internet_gateway()
        .internet_gateway_id(gateway)
        .vpc_id(vpc)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| EC2.err(req, "AttachInternetGateway", gateway, &e))
}

/// Detaches `gateway` from `vpc`; one already detached (or gone) is success. EC2 refuses
/// while addresses in the VPC are still mapped (a NAT gateway's Elastic IP being released),
/// so a dependency is waited out.
async fn detach(
    client: &Client,
    req: &ResourceRequest<'_>,
    gateway: &str,
    vpc: &str,
) -> Result<(), ProviderError> {
    let call = || {
        client
            .detach_internet_gateway()
            .internet_gateway_id(gateway)
            .vpc_id(vpc)
            .send()
    };
    match wait::while_dependent(call).await {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) || error_code(&e) == Some("Gateway.NotAttached") => Ok(()),
        Err(e) => Err(EC2.err(req, "DetachInternetGateway", gateway, &e)),
    }
}

pub(super) async fn create_attachment(
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let vpc = props.required_str("VpcId")?;
    let gateway = props.required_str("InternetGatewayId")?;
    attach(client, req, &gateway, &vpc).await?;
    Ok(attachment_made(&vpc))
}

pub(super) async fn update_attachment(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    let vpc = attachment_vpc(id);
    if changed(previous, req.properties, "InternetGatewayId") {
        let prev_req = with_properties(req, previous);
        if let Some(old) = Props::new(&prev_req).str("InternetGatewayId")? {
            detach(client, req, &old, vpc).await?;
        }
        let new = Props::new(req).required_str("InternetGatewayId")?;
        attach(client, req, &new, vpc).await?;
    }
    Ok(UpdateOutcome::Updated(attachment_made(vpc)))
}

pub(super) async fn delete_attachment(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    let vpc = attachment_vpc(id);
    let gateway = match Props::new(req).str("InternetGatewayId")? {
        Some(g) => Some(g),
        None => attached_gateway(client, req, vpc).await?,
    };
    match gateway {
        Some(g) => detach(client, req, &g, vpc).await,
        None => Ok(()),
    }
}

pub(super) async fn read_attachment(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let vpc = attachment_vpc(id);
    Ok(attached_gateway(client, req, vpc).await?.map(|g| {
        let mut props = Map::new();
        props.insert("VpcId".into(), json!(vpc));
        props.insert("InternetGatewayId".into(), json!(g));
        props
    }))
}

pub(super) async fn attachment_provisioned(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    let vpc = attachment_vpc(id);
    Ok(attached_gateway(client, req, vpc)
        .await?
        .map(|_| attachment_made(vpc)))
}
