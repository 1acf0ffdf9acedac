//! The RDS SDK provider (DBSubnetGroup, DBInstance, DBCluster) against the emulator, checked
//! through the RDS API: create with `Ref` / `Fn::GetAtt` as CloudFormation reports them (a
//! generated identifier in lower case), the changes made in place, the replacement a
//! create-only change answers, read (what was sent, the master password never), import by
//! physical id, delete and a second delete of what is gone.
//!
//! Run: `./scripts/test --test providers -- provider_rds::`.

use crate::sdk_env::{obj, replaced, Env};
use crate::support;

use serde_json::json;

const GROUP: &str = "AWS::RDS::DBSubnetGroup";
const INSTANCE: &str = "AWS::RDS::DBInstance";
const CLUSTER: &str = "AWS::RDS::DBCluster";

/// `props` without its write-only master password: what a read returns.
fn without_password(
    props: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut out = props.clone();
    out.remove("MasterUserPassword");
    out
}

#[tokio::test]
async fn db_subnet_group_lifecycle() {
    let env = Env::new("RdsStack").await;
    let rds = aws_sdk_rds::Client::new(&env.sdk);
    let (_, subnets) = env
        .vpc_with_subnets(61, &["us-east-1a", "us-east-1b", "us-east-1c"])
        .await;
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

#[tokio::test]
async fn db_instance_lifecycle() {
    let env = Env::new("RdsInst").await;
    let rds = aws_sdk_rds::Client::new(&env.sdk);
    let password = "first-Secret-pw-1";
    let v1 = obj(json!({
        "Engine": "mysql",
        "DBInstanceClass": "db.t3.micro",
        "MasterUsername": "admin",
        "MasterUserPassword": password,
        "AllocatedStorage": "20",
        "BackupRetentionPeriod": 1,
        "Port": "3306",
        "Tags": [{"Key": "team", "Value": "a"}],
    }));
    let made = env.create(INSTANCE, &v1).await;
    let id = made.physical_id.clone();
    assert!(
        id.starts_with("rdsinst") && id == id.to_ascii_lowercase(),
        "a generated identifier, lower case: {id}"
    );
    assert_eq!(env.ref_of(INSTANCE, &made), json!(id));
    let attr = |k: &str| made.attributes[k].as_str().unwrap_or_default().to_owned();
    assert!(
        attr("DBInstanceArn").ends_with(&format!(":db:{id}")),
        "{:?}",
        made.attributes
    );
    assert!(
        !attr("Endpoint.Address").is_empty(),
        "{:?}",
        made.attributes
    );
    assert_eq!(attr("Endpoint.Port"), "3306");
    assert!(!attr("DbiResourceId").is_empty(), "{:?}", made.attributes);
    let read = env.read(INSTANCE, &v1, &id).await;
    assert_eq!(read, Some(without_password(&v1)));
    let imported = env.import(INSTANCE, &v1, &id).await;
    assert_eq!(imported, made);
    for shown in [json!(made.attributes), json!(read)] {
        assert!(
            !shown.to_string().contains(password),
            "the password leaked: {shown}"
        );
    }

    let v2 = obj(json!({
        "Engine": "mysql",
        "DBInstanceClass": "db.t3.small",
        "MasterUsername": "admin",
        "MasterUserPassword": "second-Secret-pw-2",
        "AllocatedStorage": "20",
        "BackupRetentionPeriod": 3,
        "Port": "3306",
        "Tags": [{"Key": "tier", "Value": "db"}],
    }));
    assert_eq!(env.updated(INSTANCE, &v2, &id, &v1).await.physical_id, id);
    let live = rds
        .describe_db_instances()
        .db_instance_identifier(&id)
        .send()
        .await
        .expect("DescribeDBInstances");
    let db = &live.db_instances()[0];
    assert_eq!(db.db_instance_class(), Some("db.t3.small"));
    assert_eq!(db.backup_retention_period(), Some(3));
    assert_eq!(
        env.read(INSTANCE, &v2, &id).await,
        Some(without_password(&v2))
    );

    for (name, value) in [
        ("MasterUsername", json!("root")),
        ("Engine", json!("postgres")),
    ] {
        let mut moved = v2.clone();
        moved.insert(name.into(), value);
        assert!(replaced(env.update(INSTANCE, &moved, &id, &v2).await).contains(name));
    }
    env.delete_twice(INSTANCE, &v2, &id).await;
}

#[tokio::test]
async fn db_cluster_lifecycle() {
    let env = Env::new("RdsCluster").await;
    let rds = aws_sdk_rds::Client::new(&env.sdk);
    let name = support::unique_name("Cluster");
    let v1 = obj(json!({
        "DBClusterIdentifier": name,
        "Engine": "aurora-mysql",
        "MasterUsername": "admin",
        "MasterUserPassword": "cluster-Secret-pw-1",
        "DatabaseName": "app",
        "BackupRetentionPeriod": 1,
        "Tags": [{"Key": "team", "Value": "a"}],
    }));
    let made = env.create(CLUSTER, &v1).await;
    let id = made.physical_id.clone();
    assert_eq!(id, name.to_ascii_lowercase());
    assert_eq!(env.ref_of(CLUSTER, &made), json!(id));
    let attr = |k: &str| made.attributes[k].as_str().unwrap_or_default().to_owned();
    assert!(
        attr("DBClusterArn").ends_with(&format!(":cluster:{id}")),
        "{:?}",
        made.attributes
    );
    assert!(
        !attr("Endpoint.Address").is_empty(),
        "{:?}",
        made.attributes
    );
    assert!(
        !attr("ReadEndpoint.Address").is_empty(),
        "{:?}",
        made.attributes
    );
    assert!(!attr("Endpoint.Port").is_empty(), "{:?}", made.attributes);
    assert!(
        !attr("DBClusterResourceId").is_empty(),
        "{:?}",
        made.attributes
    );
    assert_eq!(
        env.read(CLUSTER, &v1, &id).await,
        Some(without_password(&v1))
    );
    assert_eq!(env.import(CLUSTER, &v1, &id).await, made);

    let mut v2 = v1.clone();
    v2.insert("BackupRetentionPeriod".into(), json!(4));
    v2.insert("Tags".into(), json!([{"Key": "tier", "Value": "db"}]));
    assert_eq!(env.updated(CLUSTER, &v2, &id, &v1).await.physical_id, id);
    let live = rds
        .describe_db_clusters()
        .db_cluster_identifier(&id)
        .send()
        .await
        .expect("DescribeDBClusters");
    assert_eq!(live.db_clusters()[0].backup_retention_period(), Some(4));
    assert_eq!(
        env.read(CLUSTER, &v2, &id).await,
        Some(without_password(&v2))
    );

    let mut renamed = v2.clone();
    renamed.insert("DatabaseName".into(), json!("other"));
    assert!(replaced(env.update(CLUSTER, &renamed, &id, &v2).await).contains("DatabaseName"));
    env.delete_twice(CLUSTER, &v2, &id).await;
}
