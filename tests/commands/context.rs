//! Context lookups against the emulator: every provider through the library (the same
//! function the synthesis loop calls), and the whole loop end to end through the `cdkd`
//! binary with a real CDK app (`node app.js`).
//!
//! Run: `./scripts/test --test context`.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aws_credential_types::provider::ProvideCredentials;
use aws_sdk_ec2::types::{Filter, InstanceType, IpPermission, IpRange, Ipv6Range, Tag};
use cdkd::assembly::MissingContext;
use cdkd::aws::{ClientOptions, Clients};
use cdkd::context::{lookup, LookupError, Lookups};
use serde_json::{json, Value};
use support::{cdkd, unique_name};

const ACCOUNT: &str = "123456789012";
const REGION: &str = "us-east-1";
const LOOKUP_ROLE: &str =
    "arn:${AWS::Partition}:iam::123456789012:role/cdk-hnb659fds-lookup-role-123456789012-us-east-1";

async fn lookups() -> Arc<Lookups> {
    let clients = Clients::load(&ClientOptions::default()).await;
    Arc::new(Lookups::new(&clients))
}

/// A missing-context entry for `provider`, its query in the emulator's environment.
fn missing(provider: &str, query: Value) -> MissingContext {
    let mut props = json!({"account": ACCOUNT, "region": REGION})
        .as_object()
        .cloned()
        .unwrap();
    props.extend(query.as_object().cloned().expect("query object"));
    MissingContext {
        key: format!("{provider}:test"),
        provider: provider.into(),
        props,
    }
}

async fn ask(provider: &str, query: Value) -> Result<Value, LookupError> {
    let l = lookups().await;
    lookup(l.as_ref(), &missing(provider, query)).await
}

async fn ec2() -> aws_sdk_ec2::Client {
    aws_sdk_ec2::Client::new(&support::sdk_config().await)
}

async fn ssm() -> aws_sdk_ssm::Client {
    aws_sdk_ssm::Client::new(&support::sdk_config().await)
}

async fn put_parameter(name: &str, value: &str) {
    ssm()
        .await
        .put_parameter()
        .name(name)
        .value(value)
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .overwrite(true)
        .send()
        .await
        .expect("PutParameter");
}

async fn create_vpc(ec2: &aws_sdk_ec2::Client, cidr: &str) -> String {
    ec2.create_vpc()
        .cidr_block(cidr)
        .send()
        .await
        .expect("CreateVpc")
        .vpc
        .and_then(|v| v.vpc_id)
        .expect("vpc id")
}

async fn create_subnet(
    ec2: &aws_sdk_ec2::Client,
    vpc: &str,
    cidr: &str,
    az: &str,
    tags: &[(&str, &str)],
) -> String {
    let id = ec2
        .create_subnet()
        .vpc_id(vpc)
        .cidr_block(cidr)
        .availability_zone(az)
        .send()
        .await
        .expect("CreateSubnet")
        .subnet
        .and_then(|s| s.subnet_id)
        .expect("subnet id");
    if !tags.is_empty() {
        let mut req = ec2.create_tags().resources(&id);
        for (k, v) in tags {
            req = req.tags(Tag::builder().key(*k).value(*v).build());
        }
        req.send().await.expect("CreateTags");
    }
    id
}

async fn create_route_table(ec2: &aws_sdk_ec2::Client, vpc: &str, subnets: &[&str]) -> String {
    let id = ec2
        .create_route_table()
        .vpc_id(vpc)
        .send()
        .await
        .expect("CreateRouteTable")
        .route_table
        .and_then(|t| t.route_table_id)
        .expect("route table id");
    for s in subnets {
        ec2.associate_route_table()
            .route_table_id(&id)
            .subnet_id(*s)
            .send()
            .await
            .expect("AssociateRouteTable");
    }
    id
}

#[tokio::test]
async fn availability_zones_are_the_regions_available_zones() {
    let answer = ask("availability-zones", json!({})).await.expect("lookup");
    let direct: Vec<String> = ec2()
        .await
        .describe_availability_zones()
        .send()
        .await
        .expect("DescribeAvailabilityZones")
        .availability_zones()
        .iter()
        .filter(|z| z.state() == Some(&aws_sdk_ec2::types::AvailabilityZoneState::Available))
        .filter_map(|z| z.zone_name().map(str::to_owned))
        .collect();
    assert!(!direct.is_empty());
    assert_eq!(answer, json!(direct));
}

#[tokio::test]
async fn ssm_parameters_are_read_and_a_missing_one_is_not_found() {
    let name = format!("/{}/p", unique_name("ctx-ssm"));
    put_parameter(&name, "hello").await;
    assert_eq!(
        ask("ssm", json!({"parameterName": name}))
            .await
            .expect("lookup"),
        json!("hello")
    );
    let gone = format!("{name}-gone");
    match ask("ssm", json!({"parameterName": gone})).await {
        Err(LookupError::NotFound(m)) => assert!(
            m.contains("SSM parameter not available in account 123456789012, region us-east-1")
                && m.contains(&gone),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
    // ignoreErrorOnMissingContext turns not-found into the dummy value, as the CDK CLI does.
    let dummy = ask(
        "ssm",
        json!({"parameterName": gone, "ignoreErrorOnMissingContext": true, "dummyValue": "dummy"}),
    )
    .await
    .expect("dummy");
    assert_eq!(dummy, json!("dummy"));
}

#[tokio::test]
async fn the_lookup_role_is_assumed_and_a_foreign_account_is_refused() {
    let l = lookups().await;
    let role = LOOKUP_ROLE.replace("${AWS::Partition}", "aws");
    let config = l
        .config_for(ACCOUNT, REGION, Some(&role), None)
        .await
        .expect("assumes the lookup role");
    let creds = config
        .credentials_provider()
        .expect("credentials")
        .provide_credentials()
        .await
        .expect("assumed credentials");
    assert_ne!(
        creds.access_key_id(),
        "testing",
        "the role's, not the caller's"
    );
    assert!(creds.session_token().is_some());
    let who = aws_sdk_sts::Client::new(&config)
        .get_caller_identity()
        .send()
        .await
        .expect("GetCallerIdentity");
    assert!(
        who.arn().is_some_and(
            |a| a.contains("assumed-role/cdk-hnb659fds-lookup-role-123456789012-us-east-1")
        ),
        "{who:?}"
    );

    // Through a provider, with the ARN's placeholders as the app writes them.
    let name = format!("/{}/p", unique_name("ctx-role"));
    put_parameter(&name, "via-role").await;
    let answer = ask(
        "ssm",
        json!({"parameterName": name, "lookupRoleArn": LOOKUP_ROLE}),
    )
    .await
    .expect("lookup through the role");
    assert_eq!(answer, json!("via-role"));

    // Another account without a lookup role: refused before any lookup call.
    let mut foreign = missing("ssm", json!({"parameterName": name}));
    foreign
        .props
        .insert("account".into(), json!("999999999999"));
    match lookup(&l, &foreign).await {
        Err(LookupError::Failed(m)) => assert!(
            m.contains("credentials are for account 123456789012")
                && m.contains("account 999999999999"),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn unknown_providers_and_plugins_are_errors_naming_them() {
    match ask("no-such-provider", json!({})).await {
        Err(LookupError::Failed(m)) => assert!(m.contains("`no-such-provider`"), "{m}"),
        other => panic!("{other:?}"),
    }
    match ask("plugin", json!({"pluginName": "x"})).await {
        Err(LookupError::Failed(m)) => assert!(m.contains("plugins are not supported"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// A VPC of public (internet-gateway route), private (tagged group name, NAT route) and
/// isolated (the main table) subnets in two zones, with an attached VPN gateway.
#[tokio::test]
async fn vpcs_are_grouped_into_subnet_types_with_route_tables_and_vpn_gateway() {
    let ec2 = ec2().await;
    let vpc = create_vpc(&ec2, "10.40.0.0/16").await;
    let (a, b) = ("us-east-1a", "us-east-1b");
    let pub_a = create_subnet(&ec2, &vpc, "10.40.0.0/24", a, &[]).await;
    let pub_b = create_subnet(&ec2, &vpc, "10.40.1.0/24", b, &[]).await;
    let app_a = create_subnet(
        &ec2,
        &vpc,
        "10.40.2.0/24",
        a,
        &[("aws-cdk:subnet-name", "App")],
    )
    .await;
    let app_b = create_subnet(
        &ec2,
        &vpc,
        "10.40.3.0/24",
        b,
        &[("aws-cdk:subnet-name", "App")],
    )
    .await;
    let iso_a = create_subnet(&ec2, &vpc, "10.40.4.0/24", a, &[]).await;

    let igw = ec2
        .create_internet_gateway()
        .send()
        .await
        .expect("CreateInternetGateway")
        .internet_gateway
        .and_then(|g| g.internet_gateway_id)
        .expect("igw id");
    ec2.attach_internet_gateway()
        .internet_gateway_id(&igw)
        .vpc_id(&vpc)
        .send()
        .await
        .expect("AttachInternetGateway");
    let rt_pub = create_route_table(&ec2, &vpc, &[&pub_a, &pub_b]).await;
    ec2.create_route()
        .route_table_id(&rt_pub)
        .destination_cidr_block("0.0.0.0/0")
        .gateway_id(&igw)
        .send()
        .await
        .expect("CreateRoute igw");
    let eip = ec2
        .allocate_address()
        .domain(aws_sdk_ec2::types::DomainType::Vpc)
        .send()
        .await
        .expect("AllocateAddress")
        .allocation_id
        .expect("allocation id");
    let nat = ec2
        .create_nat_gateway()
        .subnet_id(&pub_a)
        .allocation_id(eip)
        .send()
        .await
        .expect("CreateNatGateway")
        .nat_gateway
        .and_then(|n| n.nat_gateway_id)
        .expect("nat id");
    let rt_app = create_route_table(&ec2, &vpc, &[&app_a, &app_b]).await;
    ec2.create_route()
        .route_table_id(&rt_app)
        .destination_cidr_block("0.0.0.0/0")
        .nat_gateway_id(&nat)
        .send()
        .await
        .expect("CreateRoute nat");
    let main = ec2
        .describe_route_tables()
        .filters(Filter::builder().name("vpc-id").values(&vpc).build())
        .filters(
            Filter::builder()
                .name("association.main")
                .values("true")
                .build(),
        )
        .send()
        .await
        .expect("DescribeRouteTables")
        .route_tables()
        .first()
        .and_then(|t| t.route_table_id().map(str::to_owned))
        .expect("main route table");
    let vgw = ec2
        .create_vpn_gateway()
        .r#type(aws_sdk_ec2::types::GatewayType::Ipsec1)
        .send()
        .await
        .expect("CreateVpnGateway")
        .vpn_gateway
        .and_then(|g| g.vpn_gateway_id)
        .expect("vgw id");
    ec2.attach_vpn_gateway()
        .vpn_gateway_id(&vgw)
        .vpc_id(&vpc)
        .send()
        .await
        .expect("AttachVpnGateway");

    let query = json!({"filter": {"vpc-id": vpc}});
    // One isolated subnet in one zone only: the symmetric answer cannot be given.
    match ask("vpc-provider", query.clone()).await {
        Err(LookupError::Failed(m)) => assert!(m.contains("same AZs"), "{m}"),
        other => panic!("{other:?}"),
    }
    // The asymmetric answer lists each group with its own subnets.
    let mut asym = query.clone();
    asym["returnAsymmetricSubnets"] = json!(true);
    let answer = ask("vpc-provider", asym).await.expect("asymmetric lookup");
    assert_eq!(answer["availabilityZones"], json!([]));
    let groups = answer["subnetGroups"].as_array().expect("groups");
    let group = |name: &str| {
        groups
            .iter()
            .find(|g| g["name"] == name)
            .unwrap_or_else(|| panic!("group {name} in {answer}"))
    };
    assert_eq!(group("Isolated")["type"], "Isolated");
    assert_eq!(
        group("Isolated")["subnets"],
        json!([{"subnetId": iso_a, "cidr": "10.40.4.0/24", "availabilityZone": a, "routeTableId": main}])
    );
    assert_eq!(group("App")["type"], "Private");
    assert_eq!(group("Public")["subnets"][1]["subnetId"], json!(pub_b));

    let iso_b = create_subnet(&ec2, &vpc, "10.40.5.0/24", b, &[]).await;
    let answer = ask("vpc-provider", query).await.expect("symmetric lookup");
    assert_eq!(answer["vpcId"], json!(vpc));
    assert_eq!(answer["vpcCidrBlock"], "10.40.0.0/16");
    assert_eq!(answer["ownerAccountId"], ACCOUNT);
    assert_eq!(answer["availabilityZones"], json!([a, b]));
    assert_eq!(answer["publicSubnetIds"], json!([pub_a, pub_b]));
    assert_eq!(answer["publicSubnetNames"], json!(["Public"]));
    assert_eq!(answer["publicSubnetRouteTableIds"], json!([rt_pub, rt_pub]));
    assert_eq!(answer["privateSubnetIds"], json!([app_a, app_b]));
    assert_eq!(answer["privateSubnetNames"], json!(["App"]));
    assert_eq!(
        answer["privateSubnetRouteTableIds"],
        json!([rt_app, rt_app])
    );
    assert_eq!(answer["isolatedSubnetIds"], json!([iso_a, iso_b]));
    assert_eq!(answer["isolatedSubnetRouteTableIds"], json!([main, main]));
    assert_eq!(answer["vpnGatewayId"], json!(vgw));
    assert!(answer.get("subnetGroups").is_none());

    // returnVpnGateways: false skips the gateway; a filter matching nothing is not-found.
    let answer = ask(
        "vpc-provider",
        json!({"filter": {"vpc-id": vpc}, "returnVpnGateways": false}),
    )
    .await
    .expect("lookup");
    assert!(answer.get("vpnGatewayId").is_none());
    let none = ask(
        "vpc-provider",
        json!({"filter": {"tag:Name": unique_name("no-vpc")}}),
    )
    .await;
    assert!(
        matches!(none, Err(LookupError::NotFound(ref m)) if m.contains("Could not find any VPCs")),
        "{none:?}"
    );
}

/// The newest image matching the filters: an image made from an instance under a unique name.
#[tokio::test]
async fn amis_are_found_by_filters() {
    let ec2 = ec2().await;
    let base = ec2
        .describe_images()
        .owners("amazon")
        .send()
        .await
        .expect("DescribeImages")
        .images()
        .iter()
        .find_map(|i| i.image_id().map(str::to_owned))
        .expect("moto has built-in images");
    let instance = ec2
        .run_instances()
        .image_id(base)
        .instance_type(InstanceType::T2Micro)
        .min_count(1)
        .max_count(1)
        .send()
        .await
        .expect("RunInstances")
        .instances()
        .first()
        .and_then(|i| i.instance_id().map(str::to_owned))
        .expect("instance id");
    let name = unique_name("ctx-ami");
    let image = ec2
        .create_image()
        .instance_id(instance)
        .name(&name)
        .send()
        .await
        .expect("CreateImage")
        .image_id
        .expect("image id");
    let answer = ask(
        "ami",
        json!({"filters": {"name": [name], "state": ["available"]}}),
    )
    .await
    .expect("lookup");
    assert_eq!(answer, json!(image));
    let answer = ask(
        "ami",
        json!({"owners": [ACCOUNT], "filters": {"name": [name]}}),
    )
    .await
    .expect("lookup by owner");
    assert_eq!(answer, json!(image));
    let none = ask(
        "ami",
        json!({"filters": {"name": [unique_name("no-image")]}}),
    )
    .await;
    assert!(
        matches!(none, Err(LookupError::NotFound(ref m)) if m.contains("No AMI found")),
        "{none:?}"
    );
}

#[tokio::test]
async fn hosted_zones_are_found_public_or_private_in_a_vpc() {
    let r53 = aws_sdk_route53::Client::new(&support::sdk_config().await);
    let domain = format!("{}.example.com", unique_name("zone"));
    let public = r53
        .create_hosted_zone()
        .name(&domain)
        .caller_reference(unique_name("ref"))
        .send()
        .await
        .expect("CreateHostedZone")
        .hosted_zone
        .expect("zone")
        .id;
    let vpc = create_vpc(&ec2().await, "10.41.0.0/16").await;
    let private = r53
        .create_hosted_zone()
        .name(&domain)
        .caller_reference(unique_name("ref"))
        .vpc(
            aws_sdk_route53::types::Vpc::builder()
                .vpc_id(&vpc)
                .vpc_region(aws_sdk_route53::types::VpcRegion::UsEast1)
                .build(),
        )
        .hosted_zone_config(
            aws_sdk_route53::types::HostedZoneConfig::builder()
                .private_zone(true)
                .build(),
        )
        .send()
        .await
        .expect("CreateHostedZone private")
        .hosted_zone
        .expect("zone")
        .id;
    let answer = ask("hosted-zone", json!({"domainName": domain}))
        .await
        .expect("public");
    assert_eq!(answer, json!({"Id": public, "Name": format!("{domain}.")}));
    let answer = ask(
        "hosted-zone",
        json!({"domainName": domain, "privateZone": true, "vpcId": vpc}),
    )
    .await
    .expect("private");
    assert_eq!(answer, json!({"Id": private, "Name": format!("{domain}.")}));
    let other_vpc = ask(
        "hosted-zone",
        json!({"domainName": domain, "privateZone": true, "vpcId": "vpc-00000000"}),
    )
    .await;
    assert!(
        matches!(other_vpc, Err(LookupError::NotFound(ref m)) if m.contains("wanted exactly 1 zone")),
        "{other_vpc:?}"
    );
}

#[tokio::test]
async fn security_groups_are_found_by_id_or_name_with_their_egress() {
    let ec2 = ec2().await;
    let vpc = create_vpc(&ec2, "10.42.0.0/16").await;
    let name = unique_name("ctx-sg");
    let sg = ec2
        .create_security_group()
        .group_name(&name)
        .description("context lookup test")
        .vpc_id(&vpc)
        .send()
        .await
        .expect("CreateSecurityGroup")
        .group_id
        .expect("group id");
    // Start from no egress at all.
    let egress = ec2
        .describe_security_groups()
        .group_ids(&sg)
        .send()
        .await
        .expect("DescribeSecurityGroups")
        .security_groups()[0]
        .ip_permissions_egress()
        .to_vec();
    if !egress.is_empty() {
        ec2.revoke_security_group_egress()
            .group_id(&sg)
            .set_ip_permissions(Some(egress))
            .send()
            .await
            .expect("RevokeSecurityGroupEgress");
    }
    let by_id = json!({"securityGroupId": sg});
    assert_eq!(
        ask("security-group", by_id.clone()).await.expect("by id"),
        json!({"securityGroupId": sg, "allowAllOutbound": false})
    );
    ec2.authorize_security_group_egress()
        .group_id(&sg)
        .ip_permissions(
            IpPermission::builder()
                .ip_protocol("-1")
                .ip_ranges(IpRange::builder().cidr_ip("0.0.0.0/0").build())
                .build(),
        )
        .send()
        .await
        .expect("egress v4");
    assert_eq!(
        ask("security-group", by_id.clone()).await.unwrap()["allowAllOutbound"],
        false
    );
    ec2.authorize_security_group_egress()
        .group_id(&sg)
        .ip_permissions(
            IpPermission::builder()
                .ip_protocol("-1")
                .ipv6_ranges(Ipv6Range::builder().cidr_ipv6("::/0").build())
                .build(),
        )
        .send()
        .await
        .expect("egress v6");
    assert_eq!(
        ask("security-group", by_id).await.unwrap()["allowAllOutbound"],
        true
    );
    assert_eq!(
        ask(
            "security-group",
            json!({"securityGroupName": name, "vpcId": vpc})
        )
        .await
        .expect("by name")["securityGroupId"],
        json!(sg)
    );
    let both = ask(
        "security-group",
        json!({"securityGroupName": name, "securityGroupId": sg}),
    )
    .await;
    assert!(
        matches!(both, Err(LookupError::Failed(ref m)) if m.contains("can not be specified both")),
        "{both:?}"
    );
    let none = ask(
        "security-group",
        json!({"securityGroupName": unique_name("none"), "vpcId": vpc}),
    )
    .await;
    assert!(matches!(none, Err(LookupError::NotFound(_))), "{none:?}");
}

#[tokio::test]
async fn load_balancers_and_listeners_are_found_by_tags_arn_and_port() {
    use aws_sdk_elasticloadbalancingv2::types as elb;
    let sdk = support::sdk_config().await;
    let client = aws_sdk_elasticloadbalancingv2::Client::new(&sdk);
    let ec2 = ec2().await;
    let vpc = create_vpc(&ec2, "10.43.0.0/16").await;
    let s1 = create_subnet(&ec2, &vpc, "10.43.0.0/24", "us-east-1a", &[]).await;
    let s2 = create_subnet(&ec2, &vpc, "10.43.1.0/24", "us-east-1b", &[]).await;
    let tag = unique_name("lb");
    let lb = client
        .create_load_balancer()
        .name(&tag[..tag.len().min(32)].trim_end_matches('-').to_owned())
        .subnets(&s1)
        .subnets(&s2)
        .r#type(elb::LoadBalancerTypeEnum::Application)
        .tags(elb::Tag::builder().key("cdkd-test").value(&tag).build())
        .send()
        .await
        .expect("CreateLoadBalancer")
        .load_balancers()[0]
        .clone();
    let lb_arn = lb.load_balancer_arn().expect("arn").to_owned();
    let tg = client
        .create_target_group()
        .name(format!("tg{}", &tag[tag.len().saturating_sub(20)..]).trim_end_matches('-'))
        .protocol(elb::ProtocolEnum::Http)
        .port(80)
        .vpc_id(&vpc)
        .send()
        .await
        .expect("CreateTargetGroup")
        .target_groups()[0]
        .target_group_arn()
        .expect("tg arn")
        .to_owned();
    let mut listeners = Vec::new();
    for port in [80, 8080] {
        let arn = client
            .create_listener()
            .load_balancer_arn(&lb_arn)
            .protocol(elb::ProtocolEnum::Http)
            .port(port)
            .default_actions(
                elb::Action::builder()
                    .r#type(elb::ActionTypeEnum::Forward)
                    .target_group_arn(&tg)
                    .build(),
            )
            .send()
            .await
            .expect("CreateListener")
            .listeners()[0]
            .listener_arn()
            .expect("listener arn")
            .to_owned();
        listeners.push(arn);
    }
    let tags = json!([{"key": "cdkd-test", "value": tag}]);
    let answer = ask(
        "load-balancer",
        json!({"loadBalancerType": "application", "loadBalancerTags": tags}),
    )
    .await
    .expect("by tags");
    assert_eq!(answer["loadBalancerArn"], json!(lb_arn));
    assert_eq!(answer["vpcId"], json!(vpc));
    assert_eq!(
        answer["loadBalancerDnsName"],
        json!(lb.dns_name().expect("dns"))
    );
    assert_eq!(
        answer["loadBalancerCanonicalHostedZoneId"],
        json!(lb.canonical_hosted_zone_id().expect("zone"))
    );
    assert_eq!(answer["ipAddressType"], "ipv4");
    assert!(answer["securityGroupIds"].is_array());
    let by_arn = ask(
        "load-balancer",
        json!({"loadBalancerType": "application", "loadBalancerArn": lb_arn}),
    )
    .await
    .expect("by arn");
    assert_eq!(by_arn, answer);
    let wrong_type = ask(
        "load-balancer",
        json!({"loadBalancerType": "network", "loadBalancerTags": tags}),
    )
    .await;
    assert!(
        matches!(wrong_type, Err(LookupError::NotFound(_))),
        "{wrong_type:?}"
    );

    let listener = ask(
        "load-balancer-listener",
        json!({"loadBalancerType": "application", "loadBalancerTags": tags, "listenerPort": 8080}),
    )
    .await
    .expect("listener by port");
    assert_eq!(listener["listenerArn"], json!(listeners[1]));
    assert_eq!(listener["listenerPort"], 8080);
    let by_arn = ask(
        "load-balancer-listener",
        json!({"loadBalancerType": "application", "listenerArn": listeners[0]}),
    )
    .await
    .expect("listener by arn");
    assert_eq!(by_arn["listenerPort"], 80);
    let many = ask(
        "load-balancer-listener",
        json!({"loadBalancerType": "application", "loadBalancerTags": tags, "listenerProtocol": "HTTP"}),
    )
    .await;
    assert!(
        matches!(many, Err(LookupError::Failed(ref m)) if m.contains("Multiple load balancer listeners")),
        "{many:?}"
    );
}

#[tokio::test]
async fn kms_aliases_give_their_key_id() {
    let kms = aws_sdk_kms::Client::new(&support::sdk_config().await);
    let key = kms
        .create_key()
        .send()
        .await
        .expect("CreateKey")
        .key_metadata
        .expect("metadata")
        .key_id;
    let alias = format!("alias/{}", unique_name("ctx-key"));
    kms.create_alias()
        .alias_name(&alias)
        .target_key_id(&key)
        .send()
        .await
        .expect("CreateAlias");
    assert_eq!(
        ask("key-provider", json!({"aliasName": alias}))
            .await
            .expect("lookup"),
        json!({"keyId": key})
    );
    let gone = format!("{alias}-gone");
    let none = ask("key-provider", json!({"aliasName": gone})).await;
    assert!(
        matches!(none, Err(LookupError::NotFound(ref m)) if m.contains("Could not find any key with alias")),
        "{none:?}"
    );
    let dummy = ask(
        "key-provider",
        json!({"aliasName": gone, "ignoreErrorOnMissingContext": true, "dummyValue": {"keyId": "1234abcd-12ab-34cd-56ef-1234567890ab"}}),
    )
    .await
    .expect("dummy");
    assert_eq!(
        dummy,
        json!({"keyId": "1234abcd-12ab-34cd-56ef-1234567890ab"})
    );
}

#[tokio::test]
async fn endpoint_services_give_their_zones() {
    let service = "com.amazonaws.us-east-1.s3";
    let direct = ec2()
        .await
        .describe_vpc_endpoint_services()
        .service_names(service)
        .send()
        .await
        .expect("DescribeVpcEndpointServices")
        .service_details()[0]
        .availability_zones()
        .to_vec();
    assert!(!direct.is_empty());
    let answer = ask(
        "endpoint-service-availability-zones",
        json!({"serviceName": service}),
    )
    .await
    .expect("lookup");
    assert_eq!(answer, json!(direct));
}

/// The generic Cloud Control lookup, through the project's Cloud Control emulator.
#[tokio::test]
async fn cloud_control_lookups_by_identifier_and_by_properties() {
    use aws_sdk_cloudcontrol::types::OperationStatus;
    let cc = aws_sdk_cloudcontrol::Client::new(&support::sdk_config().await);
    let t = "AWS::Athena::WorkGroup";
    let name = unique_name("ctx-wg");
    let description = unique_name("described");
    let started = cc
        .create_resource()
        .type_name(t)
        .desired_state(json!({"Name": name, "Description": description}).to_string())
        .send()
        .await
        .expect("CreateResource")
        .progress_event
        .expect("event");
    let token = started.request_token().expect("token").to_owned();
    for _ in 0..100 {
        let status = cc
            .get_resource_request_status()
            .request_token(&token)
            .send()
            .await
            .expect("status")
            .progress_event
            .expect("event");
        match status.operation_status() {
            Some(OperationStatus::Success) => break,
            Some(OperationStatus::Failed) => panic!("{status:?}"),
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    let answer = ask(
        "cc-api-provider",
        json!({"typeName": t, "exactIdentifier": name, "propertiesToReturn": ["Name", "Description"]}),
    )
    .await
    .expect("by identifier");
    assert_eq!(
        answer,
        json!([{"Name": name, "Description": description, "Identifier": name}])
    );
    let answer = ask(
        "cc-api-provider",
        json!({"typeName": t, "propertyMatch": {"Description": description},
               "propertiesToReturn": ["Name"], "expectedMatchCount": "exactly-one"}),
    )
    .await
    .expect("by properties");
    assert_eq!(answer, json!([{"Name": name, "Identifier": name}]));

    let gone = format!("{name}-gone");
    let none = ask(
        "cc-api-provider",
        json!({"typeName": t, "exactIdentifier": gone, "propertiesToReturn": ["Name"]}),
    )
    .await;
    assert!(
        matches!(none, Err(LookupError::NotFound(ref m)) if m.contains(&gone)),
        "{none:?}"
    );
    let dummy = ask(
        "cc-api-provider",
        json!({"typeName": t, "exactIdentifier": gone, "propertiesToReturn": ["Name"],
               "ignoreErrorOnMissingContext": true, "dummyValue": [{"Name": "dummy"}]}),
    )
    .await
    .expect("dummy");
    assert_eq!(dummy, json!([{"Name": "dummy"}]));
    let zero = ask(
        "cc-api-provider",
        json!({"typeName": t, "propertyMatch": {"Description": gone},
               "propertiesToReturn": ["Name"], "expectedMatchCount": "at-least-one"}),
    )
    .await;
    assert!(matches!(zero, Err(LookupError::NotFound(_))), "{zero:?}");
}

// ---------------------------------------------------------------------------------------------
// End to end: `cdkd deploy` of a real CDK app (fixtures/apps/lookups) that looks up the default
// VPC, an SSM parameter and the region's zones.

fn lookups_app() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/apps/lookups/app.js")
}

/// One project directory running the lookups app with its own names and state bucket.
struct Project {
    dir: tempfile::TempDir,
    bucket: String,
    stack: String,
    param: String,
    prefix: String,
}

impl Project {
    fn new() -> Project {
        let modules =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/node_modules/aws-cdk-lib");
        assert!(
            modules.is_dir(),
            "fixtures/node_modules is not installed: run ./scripts/test, or npm install in fixtures/"
        );
        let id = unique_name("ctx-e2e");
        let project = Project {
            dir: tempfile::tempdir().expect("temp dir"),
            bucket: id.clone(),
            stack: format!("Lookups-{id}"),
            param: format!("/{id}/input"),
            prefix: format!("/{id}/out"),
        };
        let app = format!("node {}", lookups_app().display());
        std::fs::write(
            project.dir.path().join("cdk.json"),
            json!({"app": app}).to_string(),
        )
        .expect("cdk.json");
        let out = cdkd()
            .args(["bootstrap", "--state-bucket", &project.bucket])
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        project
    }

    /// `cdkd ARGS -c ...` in the project directory: (exit code, stdout, stderr).
    fn run(&self, args: &[&str], trace: Option<&Path>) -> (i32, String, String) {
        let mut cmd = cdkd();
        cmd.current_dir(self.dir.path())
            .env("CDKD_PROGRESS", "plain")
            .args(args)
            .args(["--state-bucket", &self.bucket])
            .args(["-c", &format!("lookupParam={}", self.param)])
            .args(["-c", &format!("prefix={}", self.prefix)])
            .args(["-c", &format!("stackName={}", self.stack)]);
        if let Some(trace) = trace {
            cmd.env("CDKD_TRACE_FILE", trace);
        }
        let out = cmd.output().expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        eprintln!("--- cdkd {args:?}\n{stderr}");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr,
        )
    }

    fn context_file(&self) -> serde_json::Map<String, Value> {
        let path = self.dir.path().join("cdk.context.json");
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).expect("cdk.context.json is JSON"),
            Err(_) => serde_json::Map::new(),
        }
    }

    fn template(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("cdk.out/LookupsStack.template.json"))
            .expect("template")
    }
}

/// The AWS calls a traced run made, as (stack, op).
fn traced_calls(trace: &Path) -> Vec<(Option<String>, String)> {
    std::fs::read_to_string(trace)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "call")
        .map(|e| {
            (
                e["stack"].as_str().map(str::to_owned),
                e["op"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

const LOOKUP_OPS: &[&str] = &[
    "DescribeVpcs",
    "DescribeSubnets",
    "DescribeRouteTables",
    "DescribeVpnGateways",
    "DescribeAvailabilityZones",
];

fn lookup_calls(trace: &Path) -> Vec<String> {
    traced_calls(trace)
        .into_iter()
        .filter(|(stack, op)| {
            stack.as_deref() == Some("(context)") || LOOKUP_OPS.contains(&op.as_str())
        })
        .map(|(_, op)| op)
        .collect()
}

async fn parameter(name: &str) -> String {
    ssm()
        .await
        .get_parameter()
        .name(name)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GetParameter {name}: {e:?}"))
        .parameter
        .and_then(|p| p.value)
        .expect("value")
}

#[tokio::test]
async fn an_app_with_lookups_deploys_caches_them_and_redeploys_without_looking_up() {
    let project = Project::new();
    let value = unique_name("looked-up-value");
    put_parameter(&project.param, &value).await;
    let ec2 = ec2().await;
    let vpc = ec2
        .describe_vpcs()
        .filters(Filter::builder().name("isDefault").values("true").build())
        .send()
        .await
        .expect("DescribeVpcs")
        .vpcs()[0]
        .vpc_id()
        .expect("default vpc")
        .to_owned();
    let mut subnets: Vec<(String, String)> = ec2
        .describe_subnets()
        .filters(Filter::builder().name("vpc-id").values(&vpc).build())
        .send()
        .await
        .expect("DescribeSubnets")
        .subnets()
        .iter()
        .map(|s| {
            (
                s.availability_zone().unwrap_or_default().to_owned(),
                s.subnet_id().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    subnets.sort();
    let subnet_ids: Vec<String> = subnets.into_iter().map(|(_, id)| id).collect();
    assert!(!subnet_ids.is_empty());

    // First deploy: every lookup is made (attributed to "(context)" in the trace) and cached.
    let trace1 = project.dir.path().join("trace1.jsonl");
    let (code, _, stderr) = project.run(&["deploy", "--all"], Some(&trace1));
    assert_eq!(code, 0, "{stderr}");
    let first = lookup_calls(&trace1);
    for op in [
        "DescribeVpcs",
        "DescribeSubnets",
        "DescribeAvailabilityZones",
        "AmazonSSM.GetParameter",
    ] {
        assert!(
            first.iter().any(|o| o == op),
            "{op} not among the lookup calls {first:?}"
        );
    }
    let cached = project.context_file();
    let key = |prefix: &str| {
        cached
            .keys()
            .find(|k| k.starts_with(prefix))
            .cloned()
            .unwrap_or_else(|| panic!("no {prefix}* key in {cached:?}"))
    };
    let vpc_key = key("vpc-provider:");
    let ssm_key = key("ssm:");
    let az_key = key("availability-zones:");
    assert_eq!(
        az_key,
        "availability-zones:account=123456789012:region=us-east-1"
    );
    assert!(
        ssm_key.contains(&format!("parameterName={}", project.param)),
        "{ssm_key}"
    );
    assert_eq!(cached[&ssm_key], json!(value));
    assert_eq!(cached[&vpc_key]["vpcId"], json!(vpc));
    let cached_subnets: Vec<String> = cached[&vpc_key]["subnetGroups"]
        .as_array()
        .expect("subnet groups")
        .iter()
        .flat_map(|g| g["subnets"].as_array().cloned().unwrap_or_default())
        .filter_map(|s| s["subnetId"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(cached_subnets, subnet_ids);
    let keys: Vec<&String> = cached.keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "cdk.context.json keys are sorted");

    // What AWS holds reached the template and the deployed resources.
    let template = project.template();
    assert!(
        template.contains(&vpc) && template.contains(&value),
        "{template}"
    );
    assert!(subnet_ids.iter().all(|s| template.contains(s.as_str())));
    assert_eq!(parameter(&format!("{}/VpcId", project.prefix)).await, vpc);
    assert_eq!(
        parameter(&format!("{}/LookedUp", project.prefix)).await,
        value
    );
    assert_eq!(
        parameter(&format!("{}/PublicSubnets", project.prefix)).await,
        subnet_ids.join(",")
    );
    let zones = cached[&az_key]
        .as_array()
        .expect("zones")
        .iter()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(parameter(&format!("{}/Zones", project.prefix)).await, zones);

    // Second deploy: everything comes from cdk.context.json, no lookup call at all.
    let before = std::fs::read_to_string(project.dir.path().join("cdk.context.json")).unwrap();
    let trace2 = project.dir.path().join("trace2.jsonl");
    let (code, _, stderr) = project.run(&["deploy", "--all"], Some(&trace2));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.to_lowercase().contains("no changes"), "{stderr}");
    assert!(
        !traced_calls(&trace2).is_empty(),
        "the second deploy was traced"
    );
    assert_eq!(lookup_calls(&trace2), Vec::<String>::new());
    assert_eq!(
        std::fs::read_to_string(project.dir.path().join("cdk.context.json")).unwrap(),
        before,
        "a run that looks nothing up leaves cdk.context.json as it was"
    );

    // `cdkd context` lists the cached values, numbered in key order; --json prints them all.
    let (code, stdout, stderr) = project.run(&["context"], None);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(&vpc_key) && stdout.contains(&ssm_key),
        "{stdout}"
    );
    let (code, stdout, _) = project.run(&["context", "--json"], None);
    assert_eq!(code, 0);
    let listed: Value = serde_json::from_str(&stdout).expect("context --json");
    assert_eq!(listed[&ssm_key], json!(value));

    // --no-lookups with the cache cleared fails naming every missing key, and writes nothing.
    let (code, _, stderr) = project.run(&["context", "--clear"], None);
    assert_eq!(code, 0, "{stderr}");
    assert!(project.context_file().is_empty());
    let (code, _, stderr) = project.run(&["deploy", "--all", "--no-lookups"], None);
    assert_eq!(code, 1, "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains("--no-lookups"), "{stderr}");
    for k in [&vpc_key, &ssm_key] {
        assert!(last.contains(k.as_str()), "{k} not named in: {last}");
    }
    assert!(project.context_file().is_empty());

    // A deploy after --clear looks everything up again.
    let trace3 = project.dir.path().join("trace3.jsonl");
    let (code, _, stderr) = project.run(&["deploy", "--all"], Some(&trace3));
    assert_eq!(code, 0, "{stderr}");
    assert!(lookup_calls(&trace3).iter().any(|o| o == "DescribeVpcs"));
    assert_eq!(project.context_file(), cached);

    // --reset by number removes one cached value (the first in key order: the zones).
    let (code, _, stderr) = project.run(&["context", "--reset", "1"], None);
    assert_eq!(code, 0, "{stderr}");
    let after = project.context_file();
    assert!(
        !after.contains_key(&az_key) && after.contains_key(&vpc_key),
        "{after:?}"
    );
    let (code, _, stderr) = project.run(&["context", "--reset", "lookupParam"], None);
    assert_eq!(code, 1, "a -c value is not a cached lookup: {stderr}");
    assert!(
        stderr.contains("lookupParam") && stderr.contains("cdk.context.json"),
        "{stderr}"
    );

    let (code, _, stderr) = project.run(&["destroy", "--all", "--force"], None);
    assert_eq!(code, 0, "{stderr}");
}

/// A lookup that fails reaches the app as that key's error value for one synthesis only: the
/// app asks again, the loop stops naming the key and the provider's message, and nothing of it
/// is saved.
#[tokio::test]
async fn a_failing_lookup_is_reported_with_its_key_and_never_saved() {
    let project = Project::new();
    // No parameter under project.param: the ssm lookup fails; the VPC and zones succeed.
    let (code, _, stderr) = project.run(&["synth", "--all", "-q"], None);
    assert_eq!(code, 1, "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("did not settle")
            && last.contains(&format!("parameterName={}", project.param))
            && last.contains("SSM parameter not available"),
        "{last}"
    );
    let cached = project.context_file();
    assert!(
        cached.keys().any(|k| k.starts_with("vpc-provider:")),
        "{cached:?}"
    );
    assert!(!cached.keys().any(|k| k.starts_with("ssm:")), "{cached:?}");
    assert!(!serde_json::to_string(&cached)
        .unwrap()
        .contains("$providerError"));

    // Once the parameter exists, the same project synthesizes.
    put_parameter(&project.param, "now-there").await;
    let (code, _, stderr) = project.run(&["synth", "--all", "-q"], None);
    assert_eq!(code, 0, "{stderr}");
    assert!(project.template().contains("now-there"));
    // `list` never looks up: with the cache cleared it only warns.
    let (code, _, _) = project.run(&["context", "--clear"], None);
    assert_eq!(code, 0);
    let (code, stdout, stderr) = project.run(&["list"], None);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("LookupsStack"), "{stdout}");
    assert!(stderr.contains("missing context"), "{stderr}");
    assert!(project.context_file().is_empty());
}
