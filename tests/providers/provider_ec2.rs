//! The EC2 networking SDK provider (VPC, Subnet, InternetGateway, VPCGatewayAttachment,
//! RouteTable, Route, SubnetRouteTableAssociation, EIP, NatGateway, SecurityGroup and its
//! standalone Ingress / Egress) against the emulator, checked through the EC2 API itself:
//! create, `Ref` and attributes as CloudFormation reports them, update in place, the
//! replacement an update answers for a create-only change, read, import by physical id,
//! delete (and a second delete of what is gone).
//!
//! Run: `./scripts/test --test providers -- provider_ec2::`.

use crate::support;

use std::sync::Arc;

use aws_sdk_ec2::types::{AttributeBooleanValue, Filter, VpcAttributeName};
use cdkd::aws::{ClientOptions, Clients};
use cdkd::provider::{Provider, ProviderContext, Provisioned, ResourceRequest, UpdateOutcome};
use serde_json::{json, Map, Value};

const VPC: &str = "AWS::EC2::VPC";
const SUBNET: &str = "AWS::EC2::Subnet";
const IGW: &str = "AWS::EC2::InternetGateway";
const ATTACHMENT: &str = "AWS::EC2::VPCGatewayAttachment";
const ROUTE_TABLE: &str = "AWS::EC2::RouteTable";
const ROUTE: &str = "AWS::EC2::Route";
const ASSOCIATION: &str = "AWS::EC2::SubnetRouteTableAssociation";
const EIP: &str = "AWS::EC2::EIP";
const NAT: &str = "AWS::EC2::NatGateway";
const SG: &str = "AWS::EC2::SecurityGroup";
const INGRESS: &str = "AWS::EC2::SecurityGroupIngress";
const EGRESS: &str = "AWS::EC2::SecurityGroupEgress";

struct Env {
    clients: Clients,
    stack: String,
    ec2: aws_sdk_ec2::Client,
    p: Arc<dyn Provider>,
}

impl Env {
    async fn new() -> Self {
        let sdk = support::sdk_config().await;
        Env {
            clients: Clients::load(&ClientOptions::default()).await,
            stack: support::unique_name("Ec2Stack"),
            ec2: aws_sdk_ec2::Client::new(&sdk),
            p: cdkd::provider::sdk::all()
                .into_iter()
                .find(|p| p.resource_types().contains(&VPC))
                .expect("an EC2 provider"),
        }
    }

    fn ctx(&self) -> ProviderContext<'_> {
        ProviderContext {
            clients: &self.clients,
            stack_name: &self.stack,
            region: "us-east-1",
            account_id: "123456789012",
            partition: "aws",
            no_wait: false,
        }
    }

    async fn create(&self, ty: &str, props: &Map<String, Value>) -> Provisioned {
        self.p
            .create(&self.ctx(), &req(ty, props))
            .await
            .unwrap_or_else(|e| panic!("create {ty}: {e}"))
    }

    async fn update(
        &self,
        ty: &str,
        props: &Map<String, Value>,
        id: &str,
        prev: &Map<String, Value>,
    ) -> UpdateOutcome {
        self.p
            .update(&self.ctx(), &req(ty, props), id, prev)
            .await
            .unwrap_or_else(|e| panic!("update {ty}: {e}"))
    }

    async fn updated(
        &self,
        ty: &str,
        props: &Map<String, Value>,
        id: &str,
        prev: &Map<String, Value>,
    ) -> Provisioned {
        match self.update(ty, props, id, prev).await {
            UpdateOutcome::Updated(p) => p,
            other => panic!("{ty}: expected an in-place update, got {other:?}"),
        }
    }

    async fn read(
        &self,
        ty: &str,
        props: &Map<String, Value>,
        id: &str,
    ) -> Option<Map<String, Value>> {
        self.p
            .read(&self.ctx(), &req(ty, props), id)
            .await
            .unwrap_or_else(|e| panic!("read {ty}: {e}"))
    }

    async fn import(&self, ty: &str, props: &Map<String, Value>, id: &str) -> Provisioned {
        self.p
            .import(&self.ctx(), &req(ty, props), id)
            .await
            .unwrap_or_else(|e| panic!("import {ty}: {e}"))
    }

    /// Deletes, then deletes again: what is gone is success.
    async fn delete_twice(&self, ty: &str, props: &Map<String, Value>, id: &str) {
        for round in ["delete", "second delete"] {
            self.p
                .delete(&self.ctx(), &req(ty, props), id)
                .await
                .unwrap_or_else(|e| panic!("{round} {ty}: {e}"));
        }
        assert_eq!(self.read(ty, props, id).await, None, "{ty} {id} is gone");
    }

    fn ref_of(&self, ty: &str, made: &Provisioned) -> Value {
        self.p.ref_value(ty, &made.physical_id, &made.attributes)
    }

    async fn vpc(&self, cidr: &str) -> (String, Map<String, Value>) {
        let props = obj(json!({"CidrBlock": cidr}));
        (self.create(VPC, &props).await.physical_id, props)
    }

    async fn tags(&self, id: &str) -> Vec<(String, String)> {
        let out = self
            .ec2
            .describe_tags()
            .filters(Filter::builder().name("resource-id").values(id).build())
            .send()
            .await
            .expect("DescribeTags");
        let mut tags: Vec<(String, String)> = out
            .tags()
            .iter()
            .map(|t| {
                (
                    t.key().unwrap_or_default().to_owned(),
                    t.value().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        tags.sort();
        tags
    }
}

fn req<'a>(ty: &'a str, props: &'a Map<String, Value>) -> ResourceRequest<'a> {
    ResourceRequest {
        logical_id: "Res",
        resource_type: ty,
        properties: props,
        client_token: None,
    }
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn replaced(out: UpdateOutcome) -> String {
    match out {
        UpdateOutcome::NeedsReplacement { reason } => reason,
        other => panic!("expected a replacement, got {other:?}"),
    }
}

#[tokio::test]
async fn vpc_and_subnet_lifecycle() {
    let env = Env::new().await;
    let v1 = obj(json!({
        "CidrBlock": "10.40.0.0/16",
        "EnableDnsHostnames": true,
        "EnableDnsSupport": true,
        "InstanceTenancy": "default",
        "Tags": [{"Key": "Name", "Value": "one"}],
    }));
    let vpc = env.create(VPC, &v1).await;
    let id = vpc.physical_id.clone();
    assert!(id.starts_with("vpc-"), "{id}");
    assert_eq!(env.ref_of(VPC, &vpc), json!(id));
    assert_eq!(vpc.attributes["VpcId"], json!(id));
    assert_eq!(vpc.attributes["CidrBlock"], json!("10.40.0.0/16"));
    let groups = env
        .ec2
        .describe_security_groups()
        .filters(Filter::builder().name("vpc-id").values(&id).build())
        .send()
        .await
        .expect("DescribeSecurityGroups");
    let default_group = groups.security_groups()[0].group_id().expect("group id");
    assert_eq!(vpc.attributes["DefaultSecurityGroup"], json!(default_group));
    let acl = vpc.attributes["DefaultNetworkAcl"].as_str().expect("acl");
    assert!(acl.starts_with("acl-"), "{acl}");
    let dns = |a: VpcAttributeName| {
        let ec2 = env.ec2.clone();
        let id = id.clone();
        async move {
            let out = ec2
                .describe_vpc_attribute()
                .vpc_id(id)
                .attribute(a)
                .send()
                .await
                .expect("attr");
            out.enable_dns_hostnames()
                .or(out.enable_dns_support())
                .and_then(AttributeBooleanValue::value)
        }
    };
    assert_eq!(dns(VpcAttributeName::EnableDnsHostnames).await, Some(true));
    assert_eq!(env.tags(&id).await, pairs(&[("Name", "one")]));
    assert_eq!(
        env.read(VPC, &v1, &id).await.map(Value::Object),
        Some(json!({
            "CidrBlock": "10.40.0.0/16",
            "EnableDnsHostnames": true,
            "EnableDnsSupport": true,
            "InstanceTenancy": "default",
            "Tags": [{"Key": "Name", "Value": "one"}],
        }))
    );

    // In place: DNS hostnames off, tags changed.
    let v2 = obj(json!({
        "CidrBlock": "10.40.0.0/16",
        "EnableDnsSupport": true,
        "Tags": [{"Key": "Name", "Value": "two"}, {"Key": "Tier", "Value": "net"}],
    }));
    let again = env.updated(VPC, &v2, &id, &v1).await;
    assert_eq!(again.physical_id, id);
    assert_eq!(dns(VpcAttributeName::EnableDnsHostnames).await, Some(false));
    assert_eq!(
        env.tags(&id).await,
        pairs(&[("Name", "two"), ("Tier", "net")])
    );
    // A new CIDR block replaces the VPC.
    let moved = obj(json!({"CidrBlock": "10.41.0.0/16"}));
    assert!(replaced(env.update(VPC, &moved, &id, &v2).await).contains("CidrBlock"));
    assert_eq!(env.import(VPC, &v2, &id).await, again);

    // A subnet in it.
    let s1 = obj(json!({
        "VpcId": id,
        "CidrBlock": "10.40.1.0/24",
        "AvailabilityZone": "us-east-1a",
        "MapPublicIpOnLaunch": true,
        "Tags": [{"Key": "Name", "Value": "pub"}],
    }));
    let subnet = env.create(SUBNET, &s1).await;
    let sid = subnet.physical_id.clone();
    assert!(sid.starts_with("subnet-"), "{sid}");
    assert_eq!(env.ref_of(SUBNET, &subnet), json!(sid));
    assert_eq!(subnet.attributes["SubnetId"], json!(sid));
    assert_eq!(subnet.attributes["VpcId"], json!(id));
    assert_eq!(subnet.attributes["AvailabilityZone"], json!("us-east-1a"));
    assert_eq!(subnet.attributes["CidrBlock"], json!("10.40.1.0/24"));
    assert_eq!(subnet.attributes["Ipv6CidrBlocks"], json!([]));
    assert!(subnet.attributes["NetworkAclAssociationId"]
        .as_str()
        .is_some_and(|a| a.starts_with("aclassoc-")));
    let live = |ec2: aws_sdk_ec2::Client, sid: String| async move {
        ec2.describe_subnets()
            .subnet_ids(sid)
            .send()
            .await
            .expect("DescribeSubnets")
            .subnets()[0]
            .map_public_ip_on_launch()
    };
    assert_eq!(live(env.ec2.clone(), sid.clone()).await, Some(true));
    assert_eq!(
        env.read(SUBNET, &s1, &sid).await.map(Value::Object),
        Some(Value::Object(s1.clone()))
    );
    let s2 = obj(json!({
        "VpcId": id,
        "CidrBlock": "10.40.1.0/24",
        "AvailabilityZone": "us-east-1a",
        "MapPublicIpOnLaunch": false,
    }));
    env.updated(SUBNET, &s2, &sid, &s1).await;
    assert_eq!(live(env.ec2.clone(), sid.clone()).await, Some(false));
    assert!(env.tags(&sid).await.is_empty());
    let elsewhere =
        obj(json!({"VpcId": id, "CidrBlock": "10.40.2.0/24", "AvailabilityZone": "us-east-1a"}));
    assert!(replaced(env.update(SUBNET, &elsewhere, &sid, &s2).await).contains("CidrBlock"));
    assert_eq!(env.import(SUBNET, &s2, &sid).await.physical_id, sid);

    env.delete_twice(SUBNET, &s2, &sid).await;
    env.delete_twice(VPC, &v2, &id).await;
}

#[tokio::test]
async fn gateways_routes_and_nat_lifecycle() {
    let env = Env::new().await;
    let (vpc, vpc_props) = env.vpc("10.50.0.0/16").await;
    let subnet_props =
        obj(json!({"VpcId": vpc, "CidrBlock": "10.50.0.0/24", "AvailabilityZone": "us-east-1a"}));
    let subnet = env.create(SUBNET, &subnet_props).await.physical_id;

    // Internet gateway and its attachment (Ref: Cloud Control's `IGW|vpc-…`).
    let g1 = obj(json!({"Tags": [{"Key": "Name", "Value": "igw"}]}));
    let igw = env.create(IGW, &g1).await;
    let gid = igw.physical_id.clone();
    assert_eq!(env.ref_of(IGW, &igw), json!(gid));
    assert_eq!(igw.attributes["InternetGatewayId"], json!(gid));
    let g2 = obj(json!({"Tags": [{"Key": "Name", "Value": "igw2"}]}));
    env.updated(IGW, &g2, &gid, &g1).await;
    assert_eq!(env.tags(&gid).await, pairs(&[("Name", "igw2")]));
    let a = obj(json!({"VpcId": vpc, "InternetGatewayId": gid}));
    let att = env.create(ATTACHMENT, &a).await;
    assert_eq!(att.physical_id, format!("IGW|{vpc}"));
    assert_eq!(env.ref_of(ATTACHMENT, &att), json!(format!("IGW|{vpc}")));
    assert_eq!(att.attributes["AttachmentType"], json!("IGW"));
    let attached = env
        .ec2
        .describe_internet_gateways()
        .internet_gateway_ids(&gid)
        .send()
        .await
        .expect("DescribeInternetGateways");
    assert_eq!(
        attached.internet_gateways()[0].attachments()[0].vpc_id(),
        Some(vpc.as_str())
    );
    assert_eq!(
        env.read(ATTACHMENT, &a, &att.physical_id).await,
        Some(a.clone())
    );
    assert_eq!(env.import(ATTACHMENT, &a, &att.physical_id).await, att);
    let other_vpc = obj(json!({"VpcId": "vpc-0000", "InternetGatewayId": gid}));
    assert!(replaced(
        env.update(ATTACHMENT, &other_vpc, &att.physical_id, &a)
            .await
    )
    .contains("VpcId"));

    // Route table, a route to the gateway, the subnet's association.
    let t1 = obj(json!({"VpcId": vpc}));
    let table = env.create(ROUTE_TABLE, &t1).await;
    let tid = table.physical_id.clone();
    assert_eq!(env.ref_of(ROUTE_TABLE, &table), json!(tid));
    assert_eq!(table.attributes["RouteTableId"], json!(tid));
    let t2 = obj(json!({"VpcId": vpc, "Tags": [{"Key": "k", "Value": "v"}]}));
    env.updated(ROUTE_TABLE, &t2, &tid, &t1).await;
    assert_eq!(env.tags(&tid).await, pairs(&[("k", "v")]));
    assert_eq!(env.read(ROUTE_TABLE, &t2, &tid).await, Some(t2.clone()));
    let r1 =
        obj(json!({"RouteTableId": tid, "DestinationCidrBlock": "0.0.0.0/0", "GatewayId": gid}));
    let route = env.create(ROUTE, &r1).await;
    assert_eq!(route.physical_id, format!("{tid}|0.0.0.0/0"));
    assert_eq!(env.ref_of(ROUTE, &route), json!(format!("{tid}|0.0.0.0/0")));
    assert_eq!(route.attributes["CidrBlock"], json!("0.0.0.0/0"));
    assert_eq!(
        env.read(ROUTE, &r1, &route.physical_id).await,
        Some(r1.clone())
    );
    let a1 = obj(json!({"RouteTableId": tid, "SubnetId": subnet}));
    let assoc = env.create(ASSOCIATION, &a1).await;
    assert!(
        assoc.physical_id.starts_with("rtbassoc-"),
        "{}",
        assoc.physical_id
    );
    assert_eq!(env.ref_of(ASSOCIATION, &assoc), json!(assoc.physical_id));
    assert_eq!(
        env.read(ASSOCIATION, &a1, &assoc.physical_id).await,
        Some(a1.clone())
    );
    assert_eq!(
        env.import(ASSOCIATION, &a1, &assoc.physical_id).await,
        assoc
    );
    let a2 = obj(json!({"RouteTableId": "rtb-0000", "SubnetId": subnet}));
    assert!(
        replaced(env.update(ASSOCIATION, &a2, &assoc.physical_id, &a1).await)
            .contains("RouteTableId")
    );

    // An Elastic IP and a NAT gateway (created available: the wait has nothing to wait for
    // on the emulator, and must not fail).
    let e1 = obj(json!({"Domain": "vpc", "Tags": [{"Key": "Name", "Value": "eip"}]}));
    let eip = env.create(EIP, &e1).await;
    let ip = eip.attributes["PublicIp"].as_str().expect("ip").to_owned();
    let alloc = eip.attributes["AllocationId"]
        .as_str()
        .expect("alloc")
        .to_owned();
    assert!(alloc.starts_with("eipalloc-"), "{alloc}");
    assert_eq!(eip.physical_id, format!("{ip}|{alloc}"));
    assert_eq!(env.ref_of(EIP, &eip), json!(ip));
    assert_eq!(env.read(EIP, &e1, &eip.physical_id).await, Some(e1.clone()));
    let e2 = obj(json!({"Domain": "vpc"}));
    env.updated(EIP, &e2, &eip.physical_id, &e1).await;
    assert!(env.tags(&alloc).await.is_empty());
    assert_eq!(env.import(EIP, &e2, &alloc).await, eip);
    let n1 = obj(
        json!({"SubnetId": subnet, "AllocationId": alloc, "Tags": [{"Key": "Name", "Value": "nat"}]}),
    );
    let nat = env.create(NAT, &n1).await;
    let nid = nat.physical_id.clone();
    assert!(nid.starts_with("nat-"), "{nid}");
    assert_eq!(env.ref_of(NAT, &nat), json!(nid));
    assert_eq!(nat.attributes["NatGatewayId"], json!(nid));
    assert_eq!(env.read(NAT, &n1, &nid).await, Some(n1.clone()));
    let n2 = obj(
        json!({"SubnetId": subnet, "AllocationId": alloc, "Tags": [{"Key": "Name", "Value": "nat2"}]}),
    );
    env.updated(NAT, &n2, &nid, &n1).await;
    assert_eq!(env.tags(&nid).await, pairs(&[("Name", "nat2")]));
    assert_eq!(env.import(NAT, &n2, &nid).await, nat);

    // The route moves to the NAT gateway in place (ReplaceRoute); a new destination replaces it.
    let r2 =
        obj(json!({"RouteTableId": tid, "DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": nid}));
    let moved = env.updated(ROUTE, &r2, &route.physical_id, &r1).await;
    assert_eq!(moved.physical_id, route.physical_id);
    assert_eq!(
        env.read(ROUTE, &r2, &route.physical_id).await,
        Some(r2.clone())
    );
    let r3 = obj(
        json!({"RouteTableId": tid, "DestinationCidrBlock": "10.9.0.0/16", "NatGatewayId": nid}),
    );
    assert!(
        replaced(env.update(ROUTE, &r3, &route.physical_id, &r2).await)
            .contains("DestinationCidrBlock")
    );
    assert_eq!(env.import(ROUTE, &r2, &route.physical_id).await, route);

    // Delete in the order a destroy takes; each second delete finds nothing.
    env.delete_twice(ROUTE, &r2, &route.physical_id).await;
    env.p
        .delete(&env.ctx(), &req(NAT, &n2), &nid)
        .await
        .expect("delete NAT");
    let state = env
        .ec2
        .describe_nat_gateways()
        .nat_gateway_ids(&nid)
        .send()
        .await
        .expect("DescribeNatGateways");
    assert_eq!(
        state.nat_gateways()[0].state().map(|s| s.as_str()),
        Some("deleted"),
        "the NAT delete returns once the gateway is deleted"
    );
    env.delete_twice(NAT, &n2, &nid).await;
    env.delete_twice(EIP, &e2, &eip.physical_id).await;
    env.delete_twice(ASSOCIATION, &a1, &assoc.physical_id).await;
    env.delete_twice(ROUTE_TABLE, &t2, &tid).await;
    env.delete_twice(ATTACHMENT, &a, &att.physical_id).await;
    env.delete_twice(IGW, &g2, &gid).await;
    env.delete_twice(SUBNET, &subnet_props, &subnet).await;
    env.delete_twice(VPC, &vpc_props, &vpc).await;
}

/// The group's (ingress, egress) rules as `protocol port cidr-or-group`, sorted.
async fn rules_of(env: &Env, group: &str) -> (Vec<String>, Vec<String>) {
    let out = env
        .ec2
        .describe_security_groups()
        .group_ids(group)
        .send()
        .await
        .expect("DescribeSecurityGroups");
    let g = &out.security_groups()[0];
    let flat = |perms: &[aws_sdk_ec2::types::IpPermission]| {
        let mut v = Vec::new();
        for p in perms {
            let head = format!(
                "{} {}",
                p.ip_protocol().unwrap_or_default(),
                p.from_port().map(|f| f.to_string()).unwrap_or_default()
            );
            for r in p.ip_ranges() {
                v.push(format!("{head} {}", r.cidr_ip().unwrap_or_default()));
            }
            for u in p.user_id_group_pairs() {
                v.push(format!("{head} {}", u.group_id().unwrap_or_default()));
            }
        }
        v.sort();
        v
    };
    (flat(g.ip_permissions()), flat(g.ip_permissions_egress()))
}

#[tokio::test]
async fn security_group_lifecycle_keeps_default_egress_unless_listed() {
    let env = Env::new().await;
    let (vpc, vpc_props) = env.vpc("10.60.0.0/16").await;
    // No egress listed: the allow-all rule EC2 gives a new group stays.
    let v1 = obj(json!({
        "GroupDescription": "web hosts",
        "VpcId": vpc,
        "SecurityGroupIngress": [
            {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0", "Description": "https"},
        ],
        "Tags": [{"Key": "Name", "Value": "web"}],
    }));
    let sg = env.create(SG, &v1).await;
    let id = sg.physical_id.clone();
    assert!(id.starts_with("sg-"), "{id}");
    assert_eq!(env.ref_of(SG, &sg), json!(id));
    assert_eq!(sg.attributes["GroupId"], json!(id));
    assert_eq!(sg.attributes["VpcId"], json!(vpc));
    assert_eq!(
        rules_of(&env, &id).await,
        (
            vec!["tcp 443 0.0.0.0/0".into()],
            vec!["-1  0.0.0.0/0".into()]
        )
    );
    let read = env.read(SG, &v1, &id).await.expect("exists");
    assert_eq!(read["SecurityGroupIngress"], v1["SecurityGroupIngress"]);
    assert!(!read.contains_key("SecurityGroupEgress"), "{read:?}");
    assert_eq!(read["Tags"], v1["Tags"]);

    // An explicit egress list replaces the default; a second ingress rule is added.
    let v2 = obj(json!({
        "GroupDescription": "web hosts",
        "VpcId": vpc,
        "SecurityGroupIngress": [
            {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0", "Description": "https"},
            {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "CidrIp": "10.0.0.0/8"},
        ],
        "SecurityGroupEgress": [{"IpProtocol": "tcp", "FromPort": 5432, "ToPort": 5432, "CidrIp": "10.60.0.0/16"}],
        "Tags": [{"Key": "Name", "Value": "web2"}],
    }));
    env.updated(SG, &v2, &id, &v1).await;
    assert_eq!(
        rules_of(&env, &id).await,
        (
            vec!["tcp 22 10.0.0.0/8".into(), "tcp 443 0.0.0.0/0".into()],
            vec!["tcp 5432 10.60.0.0/16".into()]
        )
    );
    assert_eq!(env.tags(&id).await, pairs(&[("Name", "web2")]));
    // Dropping the list brings the default back; dropping a rule revokes it.
    env.updated(SG, &v1, &id, &v2).await;
    assert_eq!(
        rules_of(&env, &id).await,
        (
            vec!["tcp 443 0.0.0.0/0".into()],
            vec!["-1  0.0.0.0/0".into()]
        )
    );
    let renamed = obj(json!({"GroupDescription": "other", "VpcId": vpc}));
    assert!(replaced(env.update(SG, &renamed, &id, &v1).await).contains("GroupDescription"));
    assert_eq!(env.import(SG, &v1, &id).await, sg);

    // A group created with an explicit egress list never holds the default.
    let locked = obj(json!({
        "GroupDescription": "locked",
        "VpcId": vpc,
        "SecurityGroupEgress": [{"IpProtocol": "icmp", "FromPort": 252, "ToPort": 86, "CidrIp": "255.255.255.255/32", "Description": "Disallow all traffic"}],
    }));
    let l = env.create(SG, &locked).await.physical_id;
    assert_eq!(
        rules_of(&env, &l).await,
        (vec![], vec!["icmp 252 255.255.255.255/32".into()])
    );
    let read = env.read(SG, &locked, &l).await.expect("exists");
    assert_eq!(read["SecurityGroupEgress"], locked["SecurityGroupEgress"]);

    env.delete_twice(SG, &locked, &l).await;
    env.delete_twice(SG, &v1, &id).await;
    env.delete_twice(VPC, &vpc_props, &vpc).await;
}

#[tokio::test]
async fn standalone_rules_lifecycle() {
    let env = Env::new().await;
    let (vpc, vpc_props) = env.vpc("10.70.0.0/16").await;
    let group = |d: &str| obj(json!({"GroupDescription": d, "VpcId": vpc}));
    let (admin_props, web_props) = (group("admin"), group("web"));
    let admin = env.create(SG, &admin_props).await.physical_id;
    let web = env.create(SG, &web_props).await.physical_id;

    let i1 = obj(json!({
        "GroupId": web,
        "IpProtocol": "tcp",
        "FromPort": 22,
        "ToPort": 22,
        "SourceSecurityGroupId": admin,
        "Description": "ssh from admin hosts",
    }));
    let ingress = env.create(INGRESS, &i1).await;
    let rid = ingress.physical_id.clone();
    assert!(rid.starts_with("sgr-"), "{rid}");
    assert_eq!(env.ref_of(INGRESS, &ingress), json!(rid));
    assert_eq!(ingress.attributes["Id"], json!(rid));
    assert_eq!(
        rules_of(&env, &web).await.0,
        vec![format!("tcp 22 {admin}")]
    );
    // moto's DescribeSecurityGroupRules leaves out the description of a rule that names a
    // group, so the read-back is compared without it.
    let without_description = |m: &Map<String, Value>| {
        let mut m = m.clone();
        m.remove("Description");
        Some(m)
    };
    let read = env.read(INGRESS, &i1, &rid).await;
    assert_eq!(
        read.as_ref().and_then(without_description),
        without_description(&i1)
    );
    let mut i2 = i1.clone();
    i2.insert("Description".into(), json!("ssh"));
    env.updated(INGRESS, &i2, &rid, &i1).await;
    let read = env.read(INGRESS, &i2, &rid).await;
    assert_eq!(
        read.as_ref().and_then(without_description),
        without_description(&i2)
    );
    let mut wider = i2.clone();
    wider.insert("ToPort".into(), json!(23));
    assert!(replaced(env.update(INGRESS, &wider, &rid, &i2).await).contains("ToPort"));
    assert_eq!(env.import(INGRESS, &i2, &rid).await, ingress);

    let o1 = obj(json!({
        "GroupId": admin,
        "IpProtocol": "tcp",
        "FromPort": 22,
        "ToPort": 22,
        "DestinationSecurityGroupId": web,
    }));
    let egress = env.create(EGRESS, &o1).await;
    assert!(
        egress.physical_id.starts_with("sgr-"),
        "{}",
        egress.physical_id
    );
    assert!(rules_of(&env, &admin)
        .await
        .1
        .contains(&format!("tcp 22 {web}")));
    assert_eq!(
        env.read(EGRESS, &o1, &egress.physical_id).await,
        Some(o1.clone())
    );

    env.delete_twice(EGRESS, &o1, &egress.physical_id).await;
    env.delete_twice(INGRESS, &i2, &rid).await;
    assert!(rules_of(&env, &web).await.0.is_empty());
    env.delete_twice(SG, &web_props, &web).await;
    env.delete_twice(SG, &admin_props, &admin).await;
    env.delete_twice(VPC, &vpc_props, &vpc).await;
}
