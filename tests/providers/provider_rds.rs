//! The RDS SDK provider (DBSubnetGroup) against the emulator, checked through the RDS API:
//! create with `Ref` / `Fn::GetAtt` as CloudFormation reports them, the description, subnets
//! and tags changed in place, the replacement a new name answers, read, import by physical
//! id, delete and a second delete of what is gone.
//!
//! Run: `./scripts/test --test providers -- provider_rds::`.

use crate::sdk_env::{obj, replaced, Env};
use crate::support;

use serde_json::json;

const GROUP: &str = "AWS::RDS::DBSubnetGroup";

#[tokio::test]
async fn db_subnet_group_lifecycle() {
    let env = Env::new("RdsStack").await;
    let ec2 = aws_sdk_ec2::Client::new(&env.sdk);
    let rds = aws_sdk_rds::Client::new(&env.sdk);
    let vpc = ec2
        .create_vpc()
        .cidr_block("10.61.0.0/16")
        .send()
        .await
        .expect("CreateVpc")
        .vpc
        .and_then(|v| v.vpc_id)
        .expect("vpc id");
    let mut subnets = Vec::new();
    for (i, zone) in ["us-east-1a", "us-east-1b", "us-east-1c"]
        .iter()
        .enumerate()
    {
        let id = ec2
            .create_subnet()
            .vpc_id(&vpc)
            .cidr_block(format!("10.61.{i}.0/24"))
            .availability_zone(*zone)
            .send()
            .await
            .expect("CreateSubnet")
            .subnet
            .and_then(|s| s.subnet_id)
            .expect("subnet id");
        subnets.push(id);
    }
    let name = support::unique_name("Db-Subnets");
    let v1 = obj(json!({
        "DBSubnetGroupName": name,
        "DBSubnetGroupDescription": "one",
        "SubnetIds": [subnets[0], subnets[1]],
        "Tags": [{"Key": "team", "Value": "a"}],
    }));
    let group = env.create(GROUP, &v1).await;
    let id = group.physical_id.clone();
    assert_eq!(id, name.to_ascii_lowercase());
    assert_eq!(env.ref_of(GROUP, &group), json!(id));
    assert!(
        group.attributes["DBSubnetGroupArn"]
            .as_str()
            .is_some_and(|a| a.ends_with(&format!(":subgrp:{id}"))),
        "{:?}",
        group.attributes
    );
    assert_eq!(env.read(GROUP, &v1, &id).await, Some(v1.clone()));
    assert_eq!(env.import(GROUP, &v1, &id).await, group);

    let v2 = obj(json!({
        "DBSubnetGroupName": name,
        "DBSubnetGroupDescription": "two",
        "SubnetIds": [subnets[1], subnets[2]],
        "Tags": [{"Key": "tier", "Value": "db"}],
    }));
    assert_eq!(env.updated(GROUP, &v2, &id, &v1).await, group);
    let live = rds
        .describe_db_subnet_groups()
        .db_subnet_group_name(&id)
        .send()
        .await
        .expect("DescribeDBSubnetGroups");
    let g = &live.db_subnet_groups()[0];
    assert_eq!(g.db_subnet_group_description(), Some("two"));
    let mut ids: Vec<&str> = g
        .subnets()
        .iter()
        .filter_map(|s| s.subnet_identifier())
        .collect();
    ids.sort_unstable();
    let mut want = vec![subnets[1].as_str(), subnets[2].as_str()];
    want.sort_unstable();
    assert_eq!(ids, want);
    assert_eq!(env.read(GROUP, &v2, &id).await, Some(v2.clone()));

    let mut renamed = v2.clone();
    renamed.insert("DBSubnetGroupName".into(), json!(format!("{name}-2")));
    assert!(replaced(env.update(GROUP, &renamed, &id, &v2).await).contains("DBSubnetGroupName"));

    env.delete_twice(GROUP, &v2, &id).await;
}
