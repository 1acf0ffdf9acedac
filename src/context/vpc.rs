//! `vpc-provider`: one VPC (`Vpc.fromLookup`) with its subnets grouped the way the CDK groups
//! them, their route tables, and its VPN gateway.
//!
//! A subnet's type is its `aws-cdk:subnet-type` tag; without one it is Public when it maps
//! public IPs on launch or its route table routes to an internet gateway, Private when it
//! routes 0.0.0.0/0 to a NAT gateway or has a transit gateway route, Isolated otherwise. Its
//! group name is the query's `subnetGroupNameTag` (default `aws-cdk:subnet-name`), else the
//! type. A subnet without its own route table uses the VPC's main one. Groups must cover the
//! same zones unless the query asks for asymmetric subnets (`subnetGroups`).

use aws_config::SdkConfig;
use aws_sdk_ec2::types::{Filter, RouteTable, Subnet, Tag, Vpc};
use indexmap::IndexMap;
use serde_json::{json, Map, Value};

use super::query::{LookupError, Query};

const TYPE_TAG: &str = "aws-cdk:subnet-type";
const NAME_TAG: &str = "aws-cdk:subnet-name";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubnetType {
    Public,
    Private,
    Isolated,
}

impl SubnetType {
    fn as_str(self) -> &'static str {
        match self {
            SubnetType::Public => "Public",
            SubnetType::Private => "Private",
            SubnetType::Isolated => "Isolated",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "Public" => Some(SubnetType::Public),
            "Private" => Some(SubnetType::Private),
            "Isolated" => Some(SubnetType::Isolated),
            _ => None,
        }
    }
}

/// One subnet, classified.
#[derive(Debug, Clone, PartialEq)]
pub struct Classified {
    pub az: String,
    pub cidr: Option<String>,
    pub kind: SubnetType,
    pub name: String,
    pub subnet_id: String,
    pub route_table_id: String,
}

pub async fn lookup(config: &SdkConfig, query: Query<'_>) -> Result<Value, LookupError> {
    let ec2 = aws_sdk_ec2::Client::new(config);
    let filter = query.opt_object("filter")?.cloned().unwrap_or_default();
    let filters: Vec<Filter> = filter
        .iter()
        .map(|(name, value)| {
            let value = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Filter::builder().name(name).values(value).build()
        })
        .collect();
    let vpcs = ec2
        .describe_vpcs()
        .set_filters(Some(filters))
        .send()
        .await
        .map_err(|e| LookupError::call("ec2", "DescribeVpcs", query.json(), &e))?
        .vpcs
        .unwrap_or_default();
    let vpc = match vpcs.as_slice() {
        [] => {
            return Err(LookupError::not_found(format!(
                "Could not find any VPCs matching {}",
                query.json()
            )))
        }
        [one] => one,
        many => {
            return Err(LookupError::failed(format!(
                "Found {} VPCs matching {}; please narrow the search criteria",
                many.len(),
                query.json()
            )))
        }
    };
    let vpc_id = vpc.vpc_id().unwrap_or_default().to_owned();
    let subnets = describe_subnets(&ec2, &vpc_id).await?;
    let tables = describe_route_tables(&ec2, &vpc_id).await?;
    let name_tag = query.opt_str("subnetGroupNameTag")?;
    let classified = subnets
        .iter()
        .map(|s| classify(s, &tables, name_tag))
        .collect::<Result<Vec<_>, _>>()?;
    let vpn_gateway = if query.opt_bool("returnVpnGateways")?.unwrap_or(true) {
        vpn_gateway(&ec2, &vpc_id).await?
    } else {
        None
    };
    let asymmetric = query.opt_bool("returnAsymmetricSubnets")?.unwrap_or(false);
    response(vpc, &classified, vpn_gateway, asymmetric)
}

async fn describe_subnets(
    ec2: &aws_sdk_ec2::Client,
    vpc_id: &str,
) -> Result<Vec<Subnet>, LookupError> {
    let mut all = Vec::new();
    let mut token = None;
    loop {
        let out = ec2
            .describe_subnets()
            .filters(Filter::builder().name("vpc-id").values(vpc_id).build())
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| LookupError::call("ec2", "DescribeSubnets", vpc_id, &e))?;
        all.extend(out.subnets.unwrap_or_default());
        token = out.next_token.filter(|t| !t.is_empty());
        if token.is_none() {
            return Ok(all);
        }
    }
}

async fn describe_route_tables(
    ec2: &aws_sdk_ec2::Client,
    vpc_id: &str,
) -> Result<Vec<RouteTable>, LookupError> {
    let mut all = Vec::new();
    let mut token = None;
    loop {
        let out = ec2
            .describe_route_tables()
            .filters(Filter::builder().name("vpc-id").values(vpc_id).build())
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| LookupError::call("ec2", "DescribeRouteTables", vpc_id, &e))?;
        all.extend(out.route_tables.unwrap_or_default());
        token = out.next_token.filter(|t| !t.is_empty());
        if token.is_none() {
            return Ok(all);
        }
    }
}

/// The one attached, available VPN gateway of the VPC, if there is exactly one.
async fn vpn_gateway(
    ec2: &aws_sdk_ec2::Client,
    vpc_id: &str,
) -> Result<Option<String>, LookupError> {
    let out = ec2
        .describe_vpn_gateways()
        .filters(
            Filter::builder()
                .name("attachment.vpc-id")
                .values(vpc_id)
                .build(),
        )
        .filters(
            Filter::builder()
                .name("attachment.state")
                .values("attached")
                .build(),
        )
        .filters(Filter::builder().name("state").values("available").build())
        .send()
        .await
        .map_err(|e| LookupError::call("ec2", "DescribeVpnGateways", vpc_id, &e))?;
    Ok(match out.vpn_gateways() {
        [one] => one.vpn_gateway_id().map(str::to_owned),
        _ => None,
    })
}

fn tag<'a>(tags: &'a [Tag], key: &str) -> Option<&'a str> {
    tags.iter()
        .find(|t| t.key() == Some(key))
        .and_then(|t| t.value())
}

/// The route table of a subnet: its own association, else the VPC's main table.
fn table_for<'a>(tables: &'a [RouteTable], subnet_id: &str) -> Option<&'a RouteTable> {
    tables
        .iter()
        .find(|t| {
            t.associations()
                .iter()
                .any(|a| a.subnet_id() == Some(subnet_id))
        })
        .or_else(|| {
            tables
                .iter()
                .find(|t| t.associations().iter().any(|a| a.main() == Some(true)))
        })
}

pub fn classify(
    subnet: &Subnet,
    tables: &[RouteTable],
    name_tag: Option<&str>,
) -> Result<Classified, LookupError> {
    let id = subnet.subnet_id().unwrap_or_default();
    let describe = || subnet.subnet_arn().unwrap_or(id).to_owned();
    let table = table_for(tables, id);
    let routes = table.map(|t| t.routes()).unwrap_or_default();
    let kind = match tag(subnet.tags(), TYPE_TAG) {
        Some(t) => SubnetType::parse(t).ok_or_else(|| {
            LookupError::failed(format!(
                "Subnet {} has invalid subnet type {t} in its {TYPE_TAG} tag; expected Public, Private or Isolated",
                describe()
            ))
        })?,
        None if subnet.map_public_ip_on_launch() == Some(true) => SubnetType::Public,
        None if routes
            .iter()
            .any(|r| r.gateway_id().is_some_and(|g| g.starts_with("igw-"))) =>
        {
            SubnetType::Public
        }
        None if routes.iter().any(|r| {
            r.nat_gateway_id().is_some() && r.destination_cidr_block() == Some("0.0.0.0/0")
        }) =>
        {
            SubnetType::Private
        }
        None if routes.iter().any(|r| r.transit_gateway_id().is_some()) => SubnetType::Private,
        None => SubnetType::Isolated,
    };
    let name = match name_tag {
        Some(key) => tag(subnet.tags(), key)
            .ok_or_else(|| {
                LookupError::failed(format!(
                    "Invalid subnetGroupNameTag: Subnet {} does not have an associated tag with Key='{key}'",
                    describe()
                ))
            })?
            .to_owned(),
        None => tag(subnet.tags(), NAME_TAG)
            .unwrap_or(kind.as_str())
            .to_owned(),
    };
    let route_table_id = table
        .and_then(|t| t.route_table_id())
        .ok_or_else(|| {
            LookupError::failed(format!(
                "Subnet {} does not have an associated route table (and there is no \"main\" table)",
                describe()
            ))
        })?
        .to_owned();
    Ok(Classified {
        az: subnet.availability_zone().unwrap_or_default().to_owned(),
        cidr: subnet.cidr_block().map(str::to_owned),
        kind,
        name,
        subnet_id: id.to_owned(),
        route_table_id,
    })
}

/// Subnets grouped by (type, name) in first-seen order, each group sorted by zone.
pub fn group(subnets: &[Classified]) -> Vec<(SubnetType, String, Vec<&Classified>)> {
    let mut groups: IndexMap<(SubnetType, String), Vec<&Classified>> = IndexMap::new();
    for s in subnets {
        groups.entry((s.kind, s.name.clone())).or_default().push(s);
    }
    groups
        .into_iter()
        .map(|((kind, name), mut members)| {
            members.sort_by(|a, b| a.az.cmp(&b.az));
            (kind, name, members)
        })
        .collect()
}

/// The CDK's VpcContextResponse.
pub fn response(
    vpc: &Vpc,
    subnets: &[Classified],
    vpn_gateway: Option<String>,
    asymmetric: bool,
) -> Result<Value, LookupError> {
    let groups = group(subnets);
    let mut out = Map::new();
    out.insert("vpcId".into(), json!(vpc.vpc_id().unwrap_or_default()));
    if let Some(cidr) = vpc.cidr_block() {
        out.insert("vpcCidrBlock".into(), json!(cidr));
    }
    if let Some(owner) = vpc.owner_id() {
        out.insert("ownerAccountId".into(), json!(owner));
    }
    // Symmetric groups: every group spans the same zones, listed once.
    let symmetric: &[(SubnetType, String, Vec<&Classified>)] =
        if asymmetric { &[] } else { &groups };
    let azs: Vec<&str> = symmetric
        .first()
        .map(|(_, _, m)| m.iter().map(|s| s.az.as_str()).collect())
        .unwrap_or_default();
    for (_, _, members) in symmetric {
        let group_azs: Vec<&str> = members.iter().map(|s| s.az.as_str()).collect();
        if group_azs != azs {
            return Err(LookupError::failed(format!(
                "Not all subnets in VPC have the same AZs: {} vs {}",
                group_azs.join(","),
                azs.join(",")
            )));
        }
    }
    out.insert("availabilityZones".into(), json!(azs));
    for (kind, prefix) in [
        (SubnetType::Isolated, "isolated"),
        (SubnetType::Private, "private"),
        (SubnetType::Public, "public"),
    ] {
        let of_kind: Vec<_> = symmetric.iter().filter(|(k, _, _)| *k == kind).collect();
        if of_kind.is_empty() {
            continue;
        }
        let ids: Vec<&str> = of_kind
            .iter()
            .flat_map(|(_, _, m)| m.iter().map(|s| s.subnet_id.as_str()))
            .collect();
        let names: Vec<&str> = of_kind.iter().map(|(_, n, _)| n.as_str()).collect();
        let tables: Vec<&str> = of_kind
            .iter()
            .flat_map(|(_, _, m)| m.iter().map(|s| s.route_table_id.as_str()))
            .collect();
        out.insert(format!("{prefix}SubnetIds"), json!(ids));
        out.insert(format!("{prefix}SubnetNames"), json!(names));
        out.insert(format!("{prefix}SubnetRouteTableIds"), json!(tables));
    }
    if let Some(id) = vpn_gateway {
        out.insert("vpnGatewayId".into(), json!(id));
    }
    if asymmetric {
        let groups: Vec<Value> = groups
            .iter()
            .map(|(kind, name, members)| {
                json!({
                    "name": name,
                    "type": kind.as_str(),
                    "subnets": members.iter().map(|s| {
                        let mut m = Map::new();
                        m.insert("subnetId".into(), json!(s.subnet_id));
                        if let Some(cidr) = &s.cidr {
                            m.insert("cidr".into(), json!(cidr));
                        }
                        m.insert("availabilityZone".into(), json!(s.az));
                        m.insert("routeTableId".into(), json!(s.route_table_id));
                        Value::Object(m)
                    }).collect::<Vec<_>>(),
                })
            })
            .collect();
        out.insert("subnetGroups".into(), Value::Array(groups));
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ec2::types::{Route, RouteTableAssociation};

    fn subnet(id: &str, az: &str, tags: &[(&str, &str)], public_ip: bool) -> Subnet {
        let mut b = Subnet::builder()
            .subnet_id(id)
            .availability_zone(az)
            .cidr_block("10.0.0.0/24")
            .map_public_ip_on_launch(public_ip);
        for (k, v) in tags {
            b = b.tags(Tag::builder().key(*k).value(*v).build());
        }
        b.build()
    }

    fn table(id: &str, subnets: &[&str], main: bool, route: Route) -> RouteTable {
        let mut b = RouteTable::builder().route_table_id(id).routes(route);
        for s in subnets {
            b = b.associations(RouteTableAssociation::builder().subnet_id(*s).build());
        }
        if main {
            b = b.associations(RouteTableAssociation::builder().main(true).build());
        }
        b.build()
    }

    #[test]
    fn subnets_are_typed_by_tag_public_ip_and_routes() {
        let tables = [
            table(
                "rtb-main",
                &[],
                true,
                Route::builder()
                    .destination_cidr_block("10.0.0.0/16")
                    .gateway_id("local")
                    .build(),
            ),
            table(
                "rtb-igw",
                &["s-igw"],
                false,
                Route::builder().gateway_id("igw-1").build(),
            ),
            table(
                "rtb-nat",
                &["s-nat"],
                false,
                Route::builder()
                    .destination_cidr_block("0.0.0.0/0")
                    .nat_gateway_id("nat-1")
                    .build(),
            ),
            table(
                "rtb-tgw",
                &["s-tgw"],
                false,
                Route::builder()
                    .destination_cidr_block("10.1.0.0/16")
                    .transit_gateway_id("tgw-1")
                    .build(),
            ),
        ];
        let cases = [
            (
                subnet(
                    "s-tag",
                    "a",
                    &[(TYPE_TAG, "Private"), (NAME_TAG, "App")],
                    true,
                ),
                SubnetType::Private,
                "App",
                "rtb-main",
            ),
            (
                subnet("s-ip", "a", &[], true),
                SubnetType::Public,
                "Public",
                "rtb-main",
            ),
            (
                subnet("s-igw", "a", &[], false),
                SubnetType::Public,
                "Public",
                "rtb-igw",
            ),
            (
                subnet("s-nat", "a", &[], false),
                SubnetType::Private,
                "Private",
                "rtb-nat",
            ),
            (
                subnet("s-tgw", "a", &[], false),
                SubnetType::Private,
                "Private",
                "rtb-tgw",
            ),
            (
                subnet("s-none", "a", &[], false),
                SubnetType::Isolated,
                "Isolated",
                "rtb-main",
            ),
        ];
        for (s, kind, name, rtb) in cases {
            let c = classify(&s, &tables, None).expect("classifies");
            assert_eq!(
                (c.kind, c.name.as_str(), c.route_table_id.as_str()),
                (kind, name, rtb),
                "{:?}",
                s.subnet_id()
            );
        }
        let bad = subnet("s-bad", "a", &[(TYPE_TAG, "Weird")], false);
        assert!(classify(&bad, &tables, None)
            .unwrap_err()
            .to_string()
            .contains("invalid subnet type Weird"));
        let err = classify(&subnet("s-ip", "a", &[], true), &tables, Some("tier")).unwrap_err();
        assert!(err.to_string().contains("subnetGroupNameTag"), "{err}");
        assert!(classify(&subnet("s", "a", &[], true), &[], None)
            .unwrap_err()
            .to_string()
            .contains("route table"));
    }

    fn c(id: &str, az: &str, kind: SubnetType, name: &str) -> Classified {
        Classified {
            az: az.into(),
            cidr: Some("10.0.0.0/24".into()),
            kind,
            name: name.into(),
            subnet_id: id.into(),
            route_table_id: format!("rtb-{id}"),
        }
    }

    #[test]
    fn symmetric_groups_list_zones_once_and_ids_per_type() {
        let vpc = Vpc::builder()
            .vpc_id("vpc-1")
            .cidr_block("10.0.0.0/16")
            .owner_id("123")
            .build();
        let subnets = [
            c("pub-b", "b", SubnetType::Public, "Public"),
            c("priv-a", "a", SubnetType::Private, "App"),
            c("pub-a", "a", SubnetType::Public, "Public"),
            c("priv-b", "b", SubnetType::Private, "App"),
        ];
        let v = response(&vpc, &subnets, Some("vgw-1".into()), false).unwrap();
        assert_eq!(v["vpcId"], "vpc-1");
        assert_eq!(v["availabilityZones"], json!(["a", "b"]));
        assert_eq!(v["publicSubnetIds"], json!(["pub-a", "pub-b"]));
        assert_eq!(v["publicSubnetNames"], json!(["Public"]));
        assert_eq!(
            v["privateSubnetRouteTableIds"],
            json!(["rtb-priv-a", "rtb-priv-b"])
        );
        assert!(v.get("isolatedSubnetIds").is_none());
        assert_eq!(v["vpnGatewayId"], "vgw-1");
        assert!(v.get("subnetGroups").is_none());

        let lopsided = [
            c("pub-a", "a", SubnetType::Public, "Public"),
            c("priv-b", "b", SubnetType::Private, "App"),
        ];
        assert!(response(&vpc, &lopsided, None, false)
            .unwrap_err()
            .to_string()
            .contains("same AZs"));
        let v = response(&vpc, &lopsided, None, true).unwrap();
        assert_eq!(v["availabilityZones"], json!([]));
        assert_eq!(v["subnetGroups"][1]["type"], "Private");
        assert_eq!(v["subnetGroups"][1]["subnets"][0]["subnetId"], "priv-b");
        assert_eq!(v["subnetGroups"][0]["subnets"][0]["availabilityZone"], "a");
        assert!(v.get("publicSubnetIds").is_none());
    }
}
