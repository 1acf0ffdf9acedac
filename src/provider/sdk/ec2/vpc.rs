//! `AWS::EC2::VPC`: physical id and `Ref` are the VPC id. `Fn::GetAtt`: `VpcId`, `CidrBlock`,
//! `CidrBlockAssociations`, `DefaultNetworkAcl`, `DefaultSecurityGroup`, `Ipv6CidrBlocks`.
//! `CidrBlock` replaces the VPC; the DNS attributes change in place (ModifyVpcAttribute, one
//! attribute per call as the API requires), `InstanceTenancy` through ModifyVpcTenancy, tags
//! through CreateTags / DeleteTags.

use aws_sdk_ec2::types::{AttributeBooleanValue, Filter, ResourceType, Tenancy, Vpc};
use aws_sdk_ec2::Client;
use serde_json::{json, Map, Value};

use super::{provisioned, tags, unless_gone, wait, EC2};
use crate::provider::props::{changed, Props};
use crate::provider::{ProviderError, Provisioned, ResourceRequest, UpdateOutcome};

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control).
pub(super) const PROPERTIES: &[&str] = &[
    "CidrBlock",
    "EnableDnsHostnames",
    "EnableDnsSupport",
    "InstanceTenancy",
    "Tags",
];

async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Vpc>, ProviderError> {
    Ok(unless_gone(
        client.describe_vpcs().vpc_ids(id).send().await,
        req,
        "DescribeVpcs",
        id,
    )?
    .and_then(|out| out.vpcs().first().cloned()))
}

/// The VPC's default security group and network ACL (what `DefaultSecurityGroup` and
/// `DefaultNetworkAcl` return).
async fn defaults(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(Option<String>, Option<String>), ProviderError> {
    let vpc = Filter::builder().name("vpc-id").values(id).build();
    let groups = client
        .describe_security_groups()
        .filters(vpc.clone())
        .filters(
            Filter::builder()
                .name("group-name")
                .values("default")
                .build(),
        )
        .send()
        .await
        .map_err(|e| EC2.err(req, "DescribeSecurityGroups", id, &e))?;
    let acls = client
        .describe_network_acls()
        .filters(vpc)
        .filters(Filter::builder().name("default").values("true").build())
        .send()
        .await
        .map_err(|e| EC2.err(req, "DescribeNetworkAcls", id, &e))?;
    Ok((
        groups
            .security_groups()
            .first()
            .and_then(|g| g.group_id().map(str::to_owned)),
        acls.network_acls()
            .first()
            .and_then(|a| a.network_acl_id().map(str::to_owned)),
    ))
}

fn ipv6_blocks(vpc: &Vpc) -> Vec<Value> {
    vpc.ipv6_cidr_block_association_set()
        .iter()
        .filter_map(|a| a.ipv6_cidr_block().map(|b| json!(b)))
        .collect()
}

/// What a create reports, read from EC2: `None` when the VPC does not exist.
pub(super) async fn provisioned_of(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    let Some(vpc) = describe(client, req, id).await? else {
        return Ok(None);
    };
    let (group, acl) = defaults(client, req, id).await?;
    let associations: Vec<Value> = vpc
        .cidr_block_association_set()
        .iter()
        .filter_map(|a| a.association_id().map(|x| json!(x)))
        .collect();
    Ok(Some(provisioned(
        id,
        &[
            ("VpcId", json!(id)),
            ("CidrBlock", json!(vpc.cidr_block().unwrap_or_default())),
            ("CidrBlockAssociations", Value::Array(associations)),
            ("DefaultSecurityGroup", json!(group.unwrap_or_default())),
            ("DefaultNetworkAcl", json!(acl.unwrap_or_default())),
            ("Ipv6CidrBlocks", Value::Array(ipv6_blocks(&vpc))),
        ],
    )))
}

async fn set_dns(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    hostnames: Option<bool>,
    support: Option<bool>,
) -> Result<(), ProviderError> {
    let value = |b: bool| AttributeBooleanValue::builder().value(b).build();
    // Support first: hostnames can only be on where DNS support is.
    if let Some(b) = support {
        client
            .modify_vpc_attribute()
            .vpc_id(id)
            .enable_dns_support(value(b))
            .send()
            .await
            .map_err(|e| EC2.err(req, "ModifyVpcAttribute", id, &e))?;
    }
    if let Some(b) = hostnames {
        client
            .modify_vpc_attribute()
            .vpc_id(id)
            .enable_dns_hostnames(value(b))
            .send()
            .await
            .map_err(|e| EC2.err(req, "ModifyVpcAttribute", id, &e))?;
    }
    Ok(())
}

pub(super) async fn create(
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let cidr = props.required_str("CidrBlock")?;
    let out = client
        .create_vpc()
        .cidr_block(&cidr)
        .set_instance_tenancy(
            props
                .str("InstanceTenancy")?
                .map(|t| Tenancy::from(t.as_str())),
        )
        .set_tag_specifications(tags::specification(req, ResourceType::Vpc)?.map(|s| vec![s]))
        .send()
        .await
        .map_err(|e| EC2.err(req, "CreateVpc", &cidr, &e))?;
    let id = EC2
        .required(req, out.vpc().and_then(|v| v.vpc_id()), "VPC id")?
        .to_owned();
    // CreateVpc turns DNS support on and hostnames off: only a different ask is sent.
    let support = props.bool("EnableDnsSupport")?.filter(|b| !b);
    let hostnames = props.bool("EnableDnsHostnames")?.filter(|b| *b);
    set_dns(client, req, &id, hostnames, support).await?;
    provisioned_of(client, req, &id)
        .await?
        .ok_or_else(|| ProviderError::failed(req, format!("VPC {id} vanished after its create")))
}

pub(super) async fn update(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    let props = Props::new(req);
    let dns = |name: &str, default: bool| -> Result<Option<bool>, ProviderError> {
        Ok(if changed(previous, req.properties, name) {
            Some(props.bool(name)?.unwrap_or(default))
        } else {
            None
        })
    };
    let hostnames = dns("EnableDnsHostnames", false)?;
    let support = dns("EnableDnsSupport", true)?;
    set_dns(client, req, id, hostnames, support).await?;
    if changed(previous, req.properties, "InstanceTenancy") {
        let tenancy = props
            .str("InstanceTenancy")?
            .unwrap_or_else(|| "default".into());
        client
            .modify_vpc_tenancy()
            .vpc_id(id)
            .instance_tenancy(aws_sdk_ec2::types::VpcTenancy::from(tenancy.as_str()))
            .send()
            .await
            .map_err(|e| EC2.err(req, "ModifyVpcTenancy", id, &e))?;
    }
    tags::update(client, req, id, previous).await?;
    provisioned_of(client, req, id)
        .await?
        .map(UpdateOutcome::Updated)
        .ok_or_else(|| ProviderError::failed(req, format!("VPC {id} does not exist")))
}

pub(super) async fn delete(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    unless_gone(
        wait::while_dependent(|| client.delete_vpc().vpc_id(id).send()).await,
        req,
        "DeleteVpc",
        id,
    )
    .map(|_| ())
}

async fn attribute(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    name: aws_sdk_ec2::types::VpcAttributeName,
) -> Result<Option<bool>, ProviderError> {
    let out = client
        .describe_vpc_attribute()
        .vpc_id(id)
        .attribute(name)
        .send()
        .await
        .map_err(|e| EC2.err(req, "DescribeVpcAttribute", id, &e))?;
    Ok(out
        .enable_dns_hostnames()
        .or(out.enable_dns_support())
        .and_then(|v| v.value()))
}

pub(super) async fn read(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    use aws_sdk_ec2::types::VpcAttributeName as A;
    let Some(vpc) = describe(client, req, id).await? else {
        return Ok(None);
    };
    let mut props = Map::new();
    if let Some(cidr) = vpc.cidr_block() {
        props.insert("CidrBlock".into(), json!(cidr));
    }
    if let Some(t) = vpc.instance_tenancy() {
        props.insert("InstanceTenancy".into(), json!(t.as_str()));
    }
    if let Some(b) = attribute(client, req, id, A::EnableDnsHostnames).await? {
        props.insert("EnableDnsHostnames".into(), json!(b));
    }
    if let Some(b) = attribute(client, req, id, A::EnableDnsSupport).await? {
        props.insert("EnableDnsSupport".into(), json!(b));
    }
    tags::read_into(&mut props, vpc.tags());
    Ok(Some(props))
}
