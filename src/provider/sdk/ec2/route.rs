//! `AWS::EC2::RouteTable` (physical id and `Ref`: the table id; only tags change),
//! `AWS::EC2::Route` (physical id and `Ref`: Cloud Control's `rtb-…|destination`; `Fn::GetAtt
//! CidrBlock` is the destination; a new target is swapped in with ReplaceRoute, a new
//! destination or table replaces the route) and `AWS::EC2::SubnetRouteTableAssociation`
//! (physical id, `Ref` and `Fn::GetAtt Id`: the association id; both properties replace it).

use aws_sdk_ec2::types::{Filter, ResourceType, Route, RouteTable};
use aws_sdk_ec2::Client;
use serde_json::{json, Map, Value};

use super::{is_not_found, provisioned, tags, unless_gone, EC2};
use crate::provider::props::Props;
use crate::provider::{ProviderError, Provisioned, ResourceRequest, UpdateOutcome};

pub(super) const TABLE_PROPERTIES: &[&str] = &["Tags", "VpcId"];
pub(super) const ASSOCIATION_PROPERTIES: &[&str] = &["RouteTableId", "SubnetId"];

/// Where a route sends traffic: its CloudFormation property, in CloudFormation's order.
const TARGETS: &[&str] = &[
    "GatewayId",
    "NatGatewayId",
    "NetworkInterfaceId",
    "VpcPeeringConnectionId",
    "TransitGatewayId",
    "EgressOnlyInternetGatewayId",
    "InstanceId",
    "VpcEndpointId",
    "CarrierGatewayId",
    "LocalGatewayId",
];
/// What a route matches.
const DESTINATIONS: &[&str] = &[
    "DestinationCidrBlock",
    "DestinationIpv6CidrBlock",
    "DestinationPrefixListId",
];

pub(super) const ROUTE_PROPERTIES: &[&str] = &[
    "RouteTableId",
    "DestinationCidrBlock",
    "DestinationIpv6CidrBlock",
    "DestinationPrefixListId",
    "GatewayId",
    "NatGatewayId",
    "NetworkInterfaceId",
    "VpcPeeringConnectionId",
    "TransitGatewayId",
    "EgressOnlyInternetGatewayId",
    "InstanceId",
    "VpcEndpointId",
    "CarrierGatewayId",
    "LocalGatewayId",
];

async fn describe_table(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<RouteTable>, ProviderError> {
    Ok(unless_gone(
        client
            .describe_route_tables()
            .route_table_ids(id)
            .send()
            .await,
        req,
        "DescribeRouteTables",
        id,
    )?
    .and_then(|out| out.route_tables().first().cloned()))
}

fn table_made(id: &str) -> Provisioned {
    provisioned(id, &[("RouteTableId", json!(id))])
}

pub(super) async fn create_table(
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let vpc = Props::new(req).required_str("VpcId")?;
    let out = client
        .create_route_table()
        .vpc_id(&vpc)
        .set_tag_specifications(
            tags::specification(req, ResourceType::RouteTable)?.map(|s| vec![s]),
        )
        .send()
        .await
        .map_err(|e| EC2.err(req, "CreateRouteTable", &vpc, &e))?;
    let id = EC2.required(
        req,
        out.route_table().and_then(|t| t.route_table_id()),
        "route table id",
    )?;
    Ok(table_made(id))
}

pub(super) async fn update_table(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    tags::update(client, req, id, previous).await?;
    Ok(UpdateOutcome::Updated(table_made(id)))
}

pub(super) async fn delete_table(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    unless_gone(
        client.delete_route_table().route_table_id(id).send().await,
        req,
        "DeleteRouteTable",
        id,
    )
    .map(|_| ())
}

pub(super) async fn read_table(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    Ok(describe_table(client, req, id).await?.map(|t| {
        let mut props = Map::new();
        if let Some(v) = t.vpc_id() {
            props.insert("VpcId".into(), json!(v));
        }
        tags::read_into(&mut props, t.tags());
        props
    }))
}

pub(super) async fn table_provisioned(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    Ok(describe_table(client, req, id)
        .await?
        .map(|_| table_made(id)))
}

/// A route's table and destination, from its `rtb-…|destination` id.
fn split_route(req: &ResourceRequest<'_>, id: &str) -> Result<(String, String), ProviderError> {
    match id.split_once('|') {
        Some((table, dest)) if !table.is_empty() && !dest.is_empty() => {
            Ok((table.to_owned(), dest.to_owned()))
        }
        _ => Err(ProviderError::failed(
            req,
            format!("route id {id:?} is not ROUTE_TABLE_ID|DESTINATION"),
        )),
    }
}

/// The destination property the template sets and its value.
fn destination(req: &ResourceRequest<'_>) -> Result<(&'static str, String), ProviderError> {
    let props = Props::new(req);
    for name in DESTINATIONS {
        if let Some(v) = props.str(name)? {
            return Ok((name, v));
        }
    }
    Err(ProviderError::missing(req, "DestinationCidrBlock"))
}

/// The target property the template sets and its value.
fn target(req: &ResourceRequest<'_>) -> Result<(&'static str, String), ProviderError> {
    let props = Props::new(req);
    for name in TARGETS {
        if let Some(v) = props.str(name)? {
            return Ok((name, v));
        }
    }
    Err(ProviderError::failed(
        req,
        format!("a route needs a target: one of {}", TARGETS.join(", ")),
    ))
}

fn route_made(table: &str, dest: &str) -> Provisioned {
    provisioned(format!("{table}|{dest}"), &[("CidrBlock", json!(dest))])
}

/// Sets a CreateRoute or ReplaceRoute call's destination and target: the two builders are
/// distinct types whose setters have the same names, so one body serves both.
macro_rules! routed {
    ($call:expr, $dest:expr, $target:expr) => {{
        let (dname, dvalue) = $dest;
        let (tname, tvalue) = $target;
        let call = match dname {
            "DestinationIpv6CidrBlock" => $call.destination_ipv6_cidr_block(dvalue),
            "DestinationPrefixListId" => $call.destination_prefix_list_id(dvalue),
            _ => $call.destination_cidr_block(dvalue),
        };
        match tname {
            "NatGatewayId" => call.nat_gateway_id(tvalue),
            "NetworkInterfaceId" => call.network_interface_id(tvalue),
            "VpcPeeringConnectionId" => call.vpc_peering_connection_id(tvalue),
            "TransitGatewayId" => call.transit_gateway_id(tvalue),
            "EgressOnlyInternetGatewayId" => call.egress_only_internet_gateway_id(tvalue),
            "InstanceId" => call.instance_id(tvalue),
            "VpcEndpointId" => call.vpc_endpoint_id(tvalue),
            "CarrierGatewayId" => call.carrier_gateway_id(tvalue),
            "LocalGatewayId" => call.local_gateway_id(tvalue),
            _ => call.gateway_id(tvalue),
        }
    }};
}

pub(super) async fn create_route(
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let table = Props::new(req).required_str("RouteTableId")?;
    let dest = destination(req)?;
    let to = target(req)?;
    let shown = dest.1.clone();
    let call = client.create_route().route_table_id(&table);
    routed!(call, dest, to)
        .send()
        .await
        .map_err(|e| EC2.err(req, "CreateRoute", &format!("{table} {shown}"), &e))?;
    Ok(route_made(&table, &shown))
}

pub(super) async fn update_route(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    _previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    let (table, shown) = split_route(req, id)?;
    let dest = destination(req)?;
    let to = target(req)?;
    let call = client.replace_route().route_table_id(&table);
    routed!(call, dest, to)
        .send()
        .await
        .map_err(|e| EC2.err(req, "ReplaceRoute", &format!("{table} {shown}"), &e))?;
    Ok(UpdateOutcome::Updated(route_made(&table, &shown)))
}

pub(super) async fn delete_route(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    let (table, dest) = split_route(req, id)?;
    let call = client.delete_route().route_table_id(&table);
    let call = if dest.contains(':') {
        call.destination_ipv6_cidr_block(&dest)
    } else if dest.starts_with("pl-") {
        call.destination_prefix_list_id(&dest)
    } else {
        call.destination_cidr_block(&dest)
    };
    unless_gone(call.send().await, req, "DeleteRoute", id).map(|_| ())
}

/// The route of `id` in its table, if both exist.
async fn find_route(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<(String, String, Route)>, ProviderError> {
    let (table, dest) = split_route(req, id)?;
    let Some(t) = describe_table(client, req, &table).await? else {
        return Ok(None);
    };
    let found = t.routes().iter().find(|r| {
        [
            r.destination_cidr_block(),
            r.destination_ipv6_cidr_block(),
            r.destination_prefix_list_id(),
        ]
        .contains(&Some(dest.as_str()))
    });
    Ok(found.cloned().map(|r| (table, dest, r)))
}

pub(super) async fn read_route(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some((table, _, r)) = find_route(client, req, id).await? else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("RouteTableId".into(), json!(table));
    let fields = [
        ("DestinationCidrBlock", r.destination_cidr_block()),
        ("DestinationIpv6CidrBlock", r.destination_ipv6_cidr_block()),
        ("DestinationPrefixListId", r.destination_prefix_list_id()),
        ("GatewayId", r.gateway_id()),
        ("NatGatewayId", r.nat_gateway_id()),
        ("NetworkInterfaceId", r.network_interface_id()),
        ("VpcPeeringConnectionId", r.vpc_peering_connection_id()),
        ("TransitGatewayId", r.transit_gateway_id()),
        (
            "EgressOnlyInternetGatewayId",
            r.egress_only_internet_gateway_id(),
        ),
        ("InstanceId", r.instance_id()),
        ("CarrierGatewayId", r.carrier_gateway_id()),
        ("LocalGatewayId", r.local_gateway_id()),
    ];
    for (name, value) in fields {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            props.insert(name.into(), json!(v));
        }
    }
    // A route to a NAT gateway or an interface names the instance behind it too; only the
    // target the template set is the route's.
    if let Ok((name, _)) = target(req) {
        for t in TARGETS.iter().filter(|t| **t != name) {
            props.remove(*t);
        }
    }
    Ok(Some(props))
}

pub(super) async fn route_provisioned(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    Ok(find_route(client, req, id)
        .await?
        .map(|(table, dest, _): (String, String, Route)| route_made(&table, &dest)))
}

fn association_made(id: &str) -> Provisioned {
    provisioned(id, &[("Id", json!(id))])
}

pub(super) async fn create_association(
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let table = props.required_str("RouteTableId")?;
    let subnet = props.required_str("SubnetId")?;
    let out = client
        .associate_route_table()
        .route_table_id(&table)
        .subnet_id(&subnet)
        .send()
        .await
        .map_err(|e| EC2.err(req, "AssociateRouteTable", &table, &e))?;
    let id = EC2.required(req, out.association_id(), "association id")?;
    Ok(association_made(id))
}

/// Both of an association's properties replace it, so an update only reports it again.
pub(super) async fn update_association(
    _client: &Client,
    _req: &ResourceRequest<'_>,
    id: &str,
) -> Result<UpdateOutcome, ProviderError> {
    Ok(UpdateOutcome::Updated(association_made(id)))
}

pub(super) async fn delete_association(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    unless_gone(
        client
            .disassociate_route_table()
            .association_id(id)
            .send()
            .await,
        req,
        "DisassociateRouteTable",
        id,
    )
    .map(|_| ())
}

/// The association's (route table, subnet), if it exists.
async fn find_association(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<(String, String)>, ProviderError> {
    let out = match client
        .describe_route_tables()
        .filters(
            Filter::builder()
                .name("association.route-table-association-id")
                .values(id)
                .build(),
        )
        .send()
        .await
    {
        Ok(out) => out,
        Err(e) if is_not_found(&e) => return Ok(None),
        Err(e) => return Err(EC2.err(req, "DescribeRouteTables", id, &e)),
    };
    Ok(out.route_tables().iter().find_map(|t| {
        let a = t
            .associations()
            .iter()
            .find(|a| a.route_table_association_id() == Some(id))?;
        Some((t.route_table_id()?.to_owned(), a.subnet_id()?.to_owned()))
    }))
}

pub(super) async fn read_association(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    Ok(find_association(client, req, id).await?.map(|(t, s)| {
        let mut props = Map::new();
        props.insert("RouteTableId".into(), json!(t));
        props.insert("SubnetId".into(), json!(s));
        props
    }))
}

pub(super) async fn association_provisioned(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    Ok(find_association(client, req, id)
        .await?
        .map(|_| association_made(id)))
}
