//! Implicit delete-order edges.

use serde_json::{json, Map, Value};

use super::graph_tests::graph;
use super::*;

/// A public and a private route through one VPC, the way the CDK builds it,
/// minus the DependsOn the CDK adds (so only the rules order the deletes).
pub(super) fn vpc_graph() -> DependencyGraph {
    graph(json!({"Resources": {
        "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}},
        "Igw": {"Type": "AWS::EC2::InternetGateway"},
        "Attachment": {"Type": "AWS::EC2::VPCGatewayAttachment",
            "Properties": {"VpcId": {"Ref": "Vpc"}, "InternetGatewayId": {"Ref": "Igw"}}},
        "Subnet": {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": {"Ref": "Vpc"}}},
        "RouteTable": {"Type": "AWS::EC2::RouteTable", "Properties": {"VpcId": {"Ref": "Vpc"}}},
        "Association": {"Type": "AWS::EC2::SubnetRouteTableAssociation",
            "Properties": {"SubnetId": {"Ref": "Subnet"}, "RouteTableId": {"Ref": "RouteTable"}}},
        "Route": {"Type": "AWS::EC2::Route", "Properties": {
            "RouteTableId": {"Ref": "RouteTable"}, "GatewayId": {"Ref": "Igw"},
            "DestinationCidrBlock": "0.0.0.0/0"}},
        "Eip": {"Type": "AWS::EC2::EIP", "Properties": {"Domain": "vpc"}},
        "Nat": {"Type": "AWS::EC2::NatGateway", "Properties": {
            "SubnetId": {"Ref": "Subnet"}, "AllocationId": {"Fn::GetAtt": ["Eip", "AllocationId"]}}},
        "PrivateRoute": {"Type": "AWS::EC2::Route", "Properties": {
            "RouteTableId": {"Ref": "RouteTable"}, "NatGatewayId": {"Ref": "Nat"}}},
        "Sg": {"Type": "AWS::EC2::SecurityGroup",
            "Properties": {"VpcId": {"Fn::GetAtt": ["Vpc", "VpcId"]}}},
    }}))
}

/// Implicit edges as (rule, deleted first, deleted after), sorted.
fn implicit(g: &DependencyGraph) -> Vec<(String, String, String)> {
    let mut v: Vec<_> = g
        .edges()
        .filter_map(|(dep, dependent, e)| {
            e.delete_rule
                .map(|r| (r.to_string(), dependent.to_string(), dep.to_string()))
        })
        .collect();
    v.sort();
    v
}

fn rows(rows: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    let mut v: Vec<_> = rows
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
    v.sort();
    v
}

#[test]
fn vpc_template_gets_the_cloudformation_delete_order() {
    let g = vpc_graph();
    assert_eq!(
        implicit(&g),
        rows(&[
            ("gateway-detach-last", "Route", "Attachment"),
            ("gateway-detach-last", "Nat", "Attachment"),
            ("gateway-detach-last", "Eip", "Attachment"),
            ("gateway-detach-last", "PrivateRoute", "Attachment"),
            ("vpc-last", "Attachment", "Vpc"),
            ("vpc-last", "Subnet", "Vpc"),
            ("vpc-last", "RouteTable", "Vpc"),
            ("vpc-last", "Sg", "Vpc"),
            ("route-table-association-first", "Association", "Subnet"),
            ("route-table-association-first", "Association", "RouteTable"),
        ])
    );
    // Delete-only: the deploy order is untouched by them.
    assert!(g
        .dependencies_of("Route")
        .iter()
        .all(|d| *d != "Attachment"));
    let order = g.delete_order();
    let pos = |id: &str| order.iter().position(|x| *x == id).unwrap();
    for (first, then) in [
        ("Route", "Attachment"),
        ("Nat", "Attachment"),
        ("Eip", "Attachment"),
        ("Attachment", "Igw"),
        ("Association", "Subnet"),
        ("Association", "RouteTable"),
        ("Subnet", "Vpc"),
        ("Sg", "Vpc"),
        ("Attachment", "Vpc"),
    ] {
        assert!(pos(first) < pos(then), "{first} before {then}: {order:?}");
    }
}

#[test]
fn same_vpc_value_links_resources_of_an_imported_vpc() {
    let vpc = |v: &str| json!({"Fn::ImportValue": v});
    let g = graph(json!({"Resources": {
        "Attachment": {"Type": "AWS::EC2::VPCGatewayAttachment", "Properties": {"VpcId": vpc("a")}},
        "Table": {"Type": "AWS::EC2::RouteTable", "Properties": {"VpcId": vpc("a")}},
        "Route": {"Type": "AWS::EC2::Route", "Properties": {"RouteTableId": {"Ref": "Table"}}},
        "OtherTable": {"Type": "AWS::EC2::RouteTable", "Properties": {"VpcId": vpc("b")}},
        "OtherRoute": {"Type": "AWS::EC2::Route", "Properties": {"RouteTableId": {"Ref": "OtherTable"}}},
        "LiteralRoute": {"Type": "AWS::EC2::Route", "Properties": {"RouteTableId": "rtb-1"}},
    }}));
    assert_eq!(
        implicit(&g),
        rows(&[("gateway-detach-last", "Route", "Attachment")])
    );
}

#[test]
fn a_rule_that_would_close_a_cycle_is_left_out() {
    let g = graph(json!({"Resources": {
        "Vpc": {"Type": "AWS::EC2::VPC"},
        "Table": {"Type": "AWS::EC2::RouteTable", "Properties": {"VpcId": {"Ref": "Vpc"}}},
        "Route": {"Type": "AWS::EC2::Route", "Properties": {"RouteTableId": {"Ref": "Table"}}},
        "Attachment": {"Type": "AWS::EC2::VPCGatewayAttachment",
            "DependsOn": "Route", "Properties": {"VpcId": {"Ref": "Vpc"}}},
    }}));
    assert!(!implicit(&g)
        .iter()
        .any(|(r, _, _)| r == "gateway-detach-last"));
    let order = g.delete_order();
    assert_eq!(order.first(), Some(&"Attachment"));
}

fn props(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[test]
fn resolved_records_match_by_physical_id() {
    let none: Vec<String> = Vec::new();
    let perm = props(json!({"FunctionName": "my-fn", "Action": "lambda:InvokeFunction"}));
    let policy = props(json!({"Roles": ["my-role"], "PolicyName": "p"}));
    let subnet = props(json!({"VpcId": "vpc-1"}));
    let other_subnet = props(json!({"VpcId": "vpc-2"}));
    let node = |id, type_, physical, properties| RecordNode {
        logical_id: id,
        resource_type: type_,
        physical_id: Some(physical),
        properties,
        dependencies: &none,
    };
    let records = [
        node("Fn", "AWS::Lambda::Function", "my-fn", None),
        node("Perm", "AWS::Lambda::Permission", "perm-1", Some(&perm)),
        node("Role", "AWS::IAM::Role", "my-role", None),
        node("Policy", "AWS::IAM::Policy", "pol-1", Some(&policy)),
        node("Vpc", "AWS::EC2::VPC", "vpc-1", None),
        node("Subnet", "AWS::EC2::Subnet", "subnet-1", Some(&subnet)),
        node(
            "Foreign",
            "AWS::EC2::Subnet",
            "subnet-2",
            Some(&other_subnet),
        ),
    ];
    let g = DependencyGraph::from_records("S", records).unwrap();
    assert_eq!(
        implicit(&g),
        rows(&[
            ("lambda-function-last", "Perm", "Fn"),
            ("iam-role-last", "Policy", "Role"),
            ("vpc-last", "Subnet", "Vpc"),
        ])
    );
    let order = g.delete_order();
    let pos = |id: &str| order.iter().position(|x| *x == id).unwrap();
    assert!(pos("Perm") < pos("Fn"));
    assert!(pos("Policy") < pos("Role"));
    assert!(pos("Subnet") < pos("Vpc"));
}

#[test]
fn every_rule_is_named_and_typed() {
    for rule in DELETE_RULES {
        assert!(!rule.name.is_empty());
        assert!(!rule.first.is_empty());
        assert!(!rule.first.contains(&rule.then), "{}", rule.name);
        if let Link::Names(p) = rule.link {
            assert!(!p.is_empty());
        }
    }
}
