//! A real CDK app's networking through cdkd's EC2 SDK provider, end to end through the binary
//! against the emulator (fixtures/apps/ec2-network: `ec2.Vpc` over two zones with one NAT
//! gateway, and a security group with an inline rule). Every EC2 resource is recorded
//! `provisionedBy: sdk` and the deploy's trace holds no Cloud Control call; `diff --fail` is
//! clean after each deploy; v2's tags and second ingress rule are applied in place (same
//! physical ids); destroy leaves nothing in EC2.

use crate::fixture_app::{self, run, traced};
use crate::support;

use aws_sdk_ec2::types::Filter;
use serde_json::Value;
use support::{sdk_config, unique_name};

const STACK: &str = "Ec2Network";

fn record(bucket: &str) -> Value {
    fixture_app::record(STACK, bucket)
}

/// (logical id, physical id) of every EC2 resource the record holds, after checking each is
/// recorded as made by the SDK provider.
fn ec2_resources(state: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (id, r) in state["resources"].as_object().expect("resources") {
        let ty = r["resourceType"].as_str().expect("type");
        if ty.starts_with("AWS::EC2::") {
            assert_eq!(
                r["provisionedBy"], "sdk",
                "{id} ({ty}) is not on the SDK route: {r}"
            );
            let physical = r["physicalId"].as_str().expect("physical id").to_owned();
            out.push((id.clone(), ty.to_owned(), physical));
        }
    }
    out.sort();
    out
}

/// The group's ingress ports, sorted.
async fn ingress_ports(ec2: &aws_sdk_ec2::Client, group: &str) -> Vec<i32> {
    let out = ec2
        .describe_security_groups()
        .group_ids(group)
        .send()
        .await
        .expect("DescribeSecurityGroups");
    let mut ports: Vec<i32> = out.security_groups()[0]
        .ip_permissions()
        .iter()
        .filter_map(|p| p.from_port())
        .collect();
    ports.sort_unstable();
    ports
}

#[tokio::test]
async fn a_cdk_vpc_deploys_updates_and_destroys_through_the_ec2_sdk_provider() {
    let bucket = unique_name("cdkd-ec2-network");
    let (code, text) = run("bootstrap", "ec2-network", &bucket, &[], None);
    assert_eq!(code, 0, "bootstrap: {text}");
    let trace = std::env::temp_dir().join(format!("{bucket}.trace.jsonl"));
    let (code, text) = run("deploy", "ec2-network", &bucket, &[], Some(trace.as_path()));
    assert_eq!(code, 0, "deploy v1: {text}");

    // Every EC2 type on the SDK route: recorded so, and not one Cloud Control call.
    let ops = traced(&trace);
    assert!(
        !ops.iter().any(|o| o.starts_with("CloudApiService")),
        "{ops:?}"
    );
    for op in [
        "CreateVpc",
        "CreateSubnet",
        "CreateNatGateway",
        "CreateRoute",
        "CreateSecurityGroup",
    ] {
        assert!(ops.iter().any(|o| o == op), "{op} not in {ops:?}");
    }
    let first = record(&bucket);
    let v1 = ec2_resources(&first);
    let count = |ty: &str| v1.iter().filter(|(_, t, _)| t == ty).count();
    assert_eq!(
        (
            count("AWS::EC2::Subnet"),
            count("AWS::EC2::Route"),
            count("AWS::EC2::NatGateway")
        ),
        (4, 4, 1),
        "{v1:?}"
    );
    let (code, text) = run("diff", "ec2-network", &bucket, &["--fail"], None);
    assert_eq!(code, 0, "a phantom change right after deploy: {text}");

    let ec2 = aws_sdk_ec2::Client::new(&sdk_config().await);
    let vpc = first["outputs"]["VpcId"]
        .as_str()
        .expect("VpcId output")
        .to_owned();
    let group = first["outputs"]["SecurityGroupId"]
        .as_str()
        .expect("SecurityGroupId output")
        .to_owned();
    assert_eq!(ingress_ports(&ec2, &group).await, [443]);
    let nat = ec2
        .describe_nat_gateways()
        .filter(Filter::builder().name("vpc-id").values(&vpc).build())
        .send()
        .await
        .expect("DescribeNatGateways");
    assert_eq!(nat.nat_gateways().len(), 1);

    // v2: tags and a second ingress rule, in place.
    let (code, text) = run("diff", "ec2-network-v2", &bucket, &["--fail"], None);
    assert_eq!(code, 1, "v2 differs from v1: {text}");
    let (code, text) = run("deploy", "ec2-network-v2", &bucket, &[], None);
    assert_eq!(code, 0, "deploy v2: {text}");
    let v2 = ec2_resources(&record(&bucket));
    assert_eq!(
        v2, v1,
        "tags and rules change in place: no resource is replaced"
    );
    assert_eq!(ingress_ports(&ec2, &group).await, [443, 8443]);
    let tagged = ec2
        .describe_vpcs()
        .vpc_ids(&vpc)
        .send()
        .await
        .expect("DescribeVpcs");
    assert!(
        tagged.vpcs()[0]
            .tags()
            .iter()
            .any(|t| t.key() == Some("Tier") && t.value() == Some("network")),
        "{tagged:?}"
    );
    let (code, text) = run("diff", "ec2-network-v2", &bucket, &["--fail"], None);
    assert_eq!(code, 0, "a phantom change right after deploy v2: {text}");

    // Destroy: nothing of the VPC is left in EC2.
    let (code, text) = run(
        "destroy",
        "ec2-network-v2",
        &bucket,
        &[STACK, "--force"],
        None,
    );
    assert_eq!(code, 0, "destroy: {text}");
    let vpcs = ec2
        .describe_vpcs()
        .filters(Filter::builder().name("vpc-id").values(&vpc).build())
        .send()
        .await
        .expect("DescribeVpcs");
    assert!(vpcs.vpcs().is_empty(), "the VPC survived: {vpcs:?}");
    let in_vpc = |name: &str| Filter::builder().name(name).values(&vpc).build();
    let subnets = ec2
        .describe_subnets()
        .filters(in_vpc("vpc-id"))
        .send()
        .await
        .expect("subnets");
    assert!(subnets.subnets().is_empty(), "{subnets:?}");
    let groups = ec2
        .describe_security_groups()
        .filters(in_vpc("vpc-id"))
        .send()
        .await
        .expect("groups");
    assert!(groups.security_groups().is_empty(), "{groups:?}");
    let igws = ec2
        .describe_internet_gateways()
        .filters(in_vpc("attachment.vpc-id"))
        .send()
        .await
        .expect("gateways");
    assert!(igws.internet_gateways().is_empty(), "{igws:?}");
    for (id, ty, physical) in &v1 {
        if ty == "AWS::EC2::EIP" {
            let alloc = physical.rsplit('|').next().expect("allocation id");
            let left = ec2.describe_addresses().allocation_ids(alloc).send().await;
            assert!(
                left.as_ref().map_or(true, |o| o.addresses().is_empty()),
                "{id}: the Elastic IP {physical} survived: {left:?}"
            );
        }
        if ty == "AWS::EC2::InternetGateway" {
            let left = ec2
                .describe_internet_gateways()
                .internet_gateway_ids(physical)
                .send()
                .await;
            assert!(
                left.as_ref()
                    .map_or(true, |o| o.internet_gateways().is_empty()),
                "{id}: the internet gateway {physical} survived: {left:?}"
            );
        }
    }
    let nat = ec2
        .describe_nat_gateways()
        .filter(Filter::builder().name("vpc-id").values(&vpc).build())
        .send()
        .await
        .expect("DescribeNatGateways");
    assert!(
        nat.nat_gateways()
            .iter()
            .all(|n| n.state().map(|s| s.as_str()) == Some("deleted")),
        "{nat:?}"
    );
    let _ = std::fs::remove_file(&trace);
}
