//! `AWS::EC2::Subnet`: physical id and `Ref` are the subnet id. `Fn::GetAtt`: `SubnetId`,
//! `VpcId`, `AvailabilityZone`, `AvailabilityZoneId`, `CidrBlock`, `Ipv6CidrBlocks`,
//! `NetworkAclAssociationId`, `OutpostArn`. Placement and addressing replace the subnet;
//! `MapPublicIpOnLaunch` changes in place (ModifySubnetAttribute), tags through CreateTags /
//! DeleteTags.

use aws_sdk_ec2::types::{AttributeBooleanValue, Filter, ResourceType, Subnet};
use aws_sdk_ec2::Client;
use serde_json::{json, Map, Value};

use super::{provisioned, tags, unless_gone, wait, EC2};
use crate::provider::props::{changed, Props};
use crate::provider::{ProviderError, Provisioned, ResourceRequest, UpdateOutcome};

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control).
pub(super) const PROPERTIES: &[&str] = &[
    "AvailabilityZone",
    "AvailabilityZoneId",
    "CidrBlock",
    "MapPublicIpOnLaunch",
    "Tags",
    "VpcId",
];

async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Subnet>, ProviderError> {
    Ok(unless_gone(
        client.describe_subnets().subnet_ids(id).send().await,
        req,
        "DescribeSubnets",
        id,
    )?
    .and_then(|out| out.subnets().first().cloned()))
}

/// The id of the association between the subnet and its network ACL.
async fn acl_association(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<String>, ProviderError> {
    let out = client
        .describe_network_acls()
        .filters(
            Filter::builder()
                .name("association.subnet-id")
                .values(id)
                .build(),
        )
        .send()
        .await
        .map_err(|e| EC2.err(req, "DescribeNetworkAcls", id, &e))?;
    Ok(out
        .network_acls()
        .iter()
        .flat_map(|a| a.associations())
        .find(|a| a.subnet_id() == Some(id))
        .and_then(|a| a.network_acl_association_id().map(str::to_owned)))
}

pub(super) async fn provisioned_of(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    let Some(s) = describe(client, req, id).await? else {
        return Ok(None);
    };
    let acl = acl_association(client, req, id).await?;
    let ipv6: Vec<Value> = s
        .ipv6_cidr_block_association_set()
        .iter()
        .filter_map(|a| a.ipv6_cidr_block().map(|b| json!(b)))
        .collect();
    let text = |v: Option<&str>| json!(v.unwrap_or_default());
    let mut attrs = vec![
        ("SubnetId", json!(id)),
        ("VpcId", text(s.vpc_id())),
        ("AvailabilityZone", text(s.availability_zone())),
        ("AvailabilityZoneId", text(s.availability_zone_id())),
        ("CidrBlock", text(s.cidr_block())),
        ("Ipv6CidrBlocks", Value::Array(ipv6)),
    ];
    if let Some(a) = acl {
        attrs.push(("NetworkAclAssociationId", json!(a)));
    }
    if let Some(o) = s.outpost_arn() {
        attrs.push(("OutpostArn", json!(o)));
    }
    Ok(Some(provisioned(id, &attrs)))
}

async fn set_public_ip(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    on: bool,
) -> Result<(), ProviderError> {
    client
        .modify_subnet_attribute()
        .subnet_id(id)
        .map_public_ip_on_launch(AttributeBooleanValue::builder().value(on).build())
        .send()
        .await
        .map(|_| ())
        .map_err(|e| EC2.err(req, "ModifySubnetAttribute", id, &e))
}

pub(super) async fn create(
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let vpc = props.required_str("VpcId")?;
    let out = client
        .create_subnet()
        .vpc_id(&vpc)
        .set_cidr_block(props.str("CidrBlock")?)
        .set_availability_zone(props.str("AvailabilityZone")?)
        .set_availability_zone_id(props.str("AvailabilityZoneId")?)
        .set_tag_specifications(tags::specification(req, ResourceType::Subnet)?.map(|s| vec![s]))
        .send()
        .await
        .map_err(|e| EC2.err(req, "CreateSubnet", &vpc, &e))?;
    let id = EC2
        .required(req, out.subnet().and_then(|s| s.subnet_id()), "subnet id")?
        .to_owned();
    if props.bool("MapPublicIpOnLaunch")? == Some(true) {
        set_public_ip(client, req, &id, true).await?;
    }
    provisioned_of(client, req, &id)
        .await?
        .ok_or_else(|| ProviderError::failed(req, format!("subnet {id} vanished after its create")))
}

pub(super) async fn update(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    if changed(previous, req.properties, "MapPublicIpOnLaunch") {
        let on = Props::new(req)
            .bool("MapPublicIpOnLaunch")?
            .unwrap_or(false);
        set_public_ip(client, req, id, on).await?;
    }
    tags::update(client, req, id, previous).await?;
    provisioned_of(client, req, id)
        .await?
        .map(UpdateOutcome::Updated)
        .ok_or_else(|| ProviderError::failed(req, format!("subnet {id} does not exist")))
}

pub(super) async fn delete(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    // A NAT gateway's network interface leaves the subnet some time after the gateway.
    unless_gone(
        wait::while_dependent(|| client.delete_subnet().subnet_id(id).send()).await,
        req,
        "DeleteSubnet",
        id,
    )
    .map(|_| ())
}

pub(super) async fn read(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(s) = describe(client, req, id).await? else {
        return Ok(None);
    };
    let mut props = Map::new();
    let mut put = |k: &str, v: Option<&str>| {
        if let Some(v) = v {
            props.insert(k.into(), json!(v));
        }
    };
    put("VpcId", s.vpc_id());
    put("CidrBlock", s.cidr_block());
    put("AvailabilityZone", s.availability_zone());
    // Only one of the zone's two names is sent; read back the one the template uses.
    if req.properties.contains_key("AvailabilityZoneId") {
        put("AvailabilityZoneId", s.availability_zone_id());
        props.remove("AvailabilityZone");
    }
    props.insert(
        "MapPublicIpOnLaunch".into(),
        json!(s.map_public_ip_on_launch().unwrap_or(false)),
    );
    tags::read_into(&mut props, s.tags());
    Ok(Some(props))
}
