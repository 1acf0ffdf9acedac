//! `--no-aggressive-vpc-parallel` (upstream cdkd's flag): by default a deploy drops the CDK's
//! defensive `DependsOn` from a role (or a VPC Lambda, its policy, URL, event-source mapping)
//! onto a subnet's route, so the role does not wait for the route; the flag keeps the edge.
//! Seen in the dependencies the deploy records for the role.

use crate::support;

use serde_json::{json, Value};
use support::app::App;
use support::unique_name;

fn template() -> Value {
    json!({"Resources": {
        "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.42.0.0/16"}},
        "Igw": {"Type": "AWS::EC2::InternetGateway", "Properties": {}},
        "Attach": {"Type": "AWS::EC2::VPCGatewayAttachment", "Properties": {
            "VpcId": {"Ref": "Vpc"}, "InternetGatewayId": {"Ref": "Igw"}}},
        "Table": {"Type": "AWS::EC2::RouteTable", "Properties": {"VpcId": {"Ref": "Vpc"}}},
        "Route": {"Type": "AWS::EC2::Route", "DependsOn": ["Attach"], "Properties": {
            "RouteTableId": {"Ref": "Table"}, "DestinationCidrBlock": "0.0.0.0/0",
            "GatewayId": {"Ref": "Igw"}}},
        // What the CDK writes for a VPC Lambda's role: DependsOn the private default route.
        "Role": {"Type": "AWS::IAM::Role", "DependsOn": ["Route"], "Properties": {
            "AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"},
                "Action": "sts:AssumeRole"}]}}},
        // A DependsOn outside the relaxed pairs stays.
        "Other": {"Type": "AWS::SSM::Parameter", "DependsOn": ["Route"], "Properties": {
            "Type": "String", "Value": "x"}}
    }})
}

fn dependencies(app: &App, stack: &str, id: &str) -> Value {
    app.record(stack)["resources"][id]["dependencies"].clone()
}

#[tokio::test]
async fn the_defensive_route_depends_on_is_relaxed_by_default_and_kept_with_the_flag() {
    let app = App::new("cdkd-vpc-edges");
    let stack = unique_name("VpcEdges");
    app.write_stacks(&[(&stack, &template(), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let role = dependencies(&app, &stack, "Role");
    assert!(
        !role.to_string().contains("\"Route\""),
        "the relaxed edge is gone: {role}"
    );
    assert_eq!(dependencies(&app, &stack, "Other"), json!(["Route"]));

    // The flag restores it (an unchanged role's record follows the plan's edges).
    let (code, _, stderr) = app.deploy(&["--no-aggressive-vpc-parallel"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(dependencies(&app, &stack, "Role"), json!(["Route"]));

    let dir = app.dir.path();
    let out = support::cdkd()
        .args([
            "destroy",
            "--all",
            "--force",
            "--app",
            dir.to_str().expect("utf-8"),
        ])
        .args(["--state-bucket", &app.bucket])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
