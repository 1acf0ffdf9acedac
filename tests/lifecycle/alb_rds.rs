//! ELBv2 and RDS through cdkd's SDK providers, end to end through the binary against the
//! emulator (fixtures/apps/alb-rds: an ApplicationLoadBalancer with a listener, a target
//! group and a rule in a VPC; a PostgreSQL DatabaseInstance and an Aurora DatabaseCluster,
//! each with a generated master password in Secrets Manager). Every resource of these types
//! is recorded `provisionedBy: sdk` and the trace holds no Cloud Control call for any of
//! them; `diff --fail` is clean after each deploy; v2's changes are made in place (same
//! physical ids); no version of any object cdkd wrote for the stack holds a master password;
//! destroy leaves nothing in moto. And a DB instance recorded through Cloud Control (what a
//! cdkd from before the RDS provider wrote) diffs clean and returns to the SDK provider on
//! its update.

use crate::deploy_routing::{cc_create, diff_fail, pinned_state};
use crate::fixture_app::{self, record, run};
use crate::support;

use serde_json::{json, Value};
use support::{cdkd, sdk_config, unique_name};

const STACK: &str = "AlbRds";
const TYPES: &[&str] = &[
    "AWS::ElasticLoadBalancingV2::LoadBalancer",
    "AWS::ElasticLoadBalancingV2::TargetGroup",
    "AWS::ElasticLoadBalancingV2::Listener",
    "AWS::ElasticLoadBalancingV2::ListenerRule",
    "AWS::RDS::DBSubnetGroup",
    "AWS::RDS::DBInstance",
    "AWS::RDS::DBCluster",
];

fn sdk_resources(state: &Value) -> Vec<(String, String, String)> {
    fixture_app::sdk_resources(state, TYPES)
}

/// The (logical id, operation) of every call a trace recorded.
fn calls(trace: &std::path::Path) -> Vec<(String, String)> {
    std::fs::read_to_string(trace)
        .expect("trace written")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "call")
        .map(|v| {
            (
                v["id"].as_str().unwrap_or_default().to_owned(),
                v["op"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The generated master passwords, from each secret the record holds.
async fn passwords(state: &Value) -> Vec<String> {
    let sm = aws_sdk_secretsmanager::Client::new(&sdk_config().await);
    let mut out = Vec::new();
    for r in state["resources"].as_object().expect("resources").values() {
        if r["resourceType"] != "AWS::SecretsManager::Secret" {
            continue;
        }
        let id = r["physicalId"].as_str().expect("secret id");
        let value = sm
            .get_secret_value()
            .secret_id(id)
            .send()
            .await
            .expect("GetSecretValue");
        let doc: Value =
            serde_json::from_str(value.secret_string().expect("string")).expect("json");
        out.push(doc["password"].as_str().expect("password").to_owned());
    }
    out
}

#[tokio::test]
async fn a_load_balancer_and_databases_deploy_update_and_destroy_through_their_sdk_providers() {
    let bucket = unique_name("cdkd-alb-rds");
    let (code, text) = run("bootstrap", "alb-rds", &bucket, &[], None);
    assert_eq!(code, 0, "bootstrap: {text}");
    let trace = std::env::temp_dir().join(format!("{bucket}.trace.jsonl"));
    let (code, text) = run("deploy", "alb-rds", &bucket, &[], Some(trace.as_path()));
    assert_eq!(code, 0, "deploy v1: {text}");

    let first = record(STACK, &bucket);
    let v1 = sdk_resources(&first);
    assert_eq!(v1.len(), 9, "{v1:?}");
    let ours: Vec<&str> = v1.iter().map(|(id, _, _)| id.as_str()).collect();
    let traced = calls(&trace);
    let through_cc: Vec<&(String, String)> = traced
        .iter()
        .filter(|(id, op)| op.starts_with("CloudApiService") && ours.contains(&id.as_str()))
        .collect();
    assert!(through_cc.is_empty(), "{through_cc:?}");
    for op in [
        "CreateLoadBalancer",
        "CreateTargetGroup",
        "CreateListener",
        "CreateRule",
        "CreateDBInstance",
        "CreateDBCluster",
    ] {
        assert!(
            traced.iter().any(|(_, o)| o == op),
            "{op} not in {traced:?}"
        );
    }
    let (code, text) = run("diff", "alb-rds", &bucket, &["--fail"], None);
    assert_eq!(code, 0, "a phantom change right after deploy: {text}");

    let sdk = sdk_config().await;
    let elb = aws_sdk_elasticloadbalancingv2::Client::new(&sdk);
    let rds = aws_sdk_rds::Client::new(&sdk);
    let output = |name: &str| {
        first["outputs"][name]
            .as_str()
            .unwrap_or_else(|| panic!("{name} output"))
            .to_owned()
    };
    let (lb, tg, db, cluster) = (
        output("LbArn"),
        output("TargetGroupArn"),
        output("DbId"),
        output("ClusterId"),
    );
    let live = elb
        .describe_load_balancers()
        .load_balancer_arns(&lb)
        .send()
        .await
        .expect("DescribeLoadBalancers");
    assert_eq!(
        live.load_balancers()[0].dns_name(),
        Some(output("LbDns").as_str())
    );
    assert_eq!(
        support::lb_attribute(&elb, &lb, "idle_timeout.timeout_seconds").await,
        "60"
    );
    let instance = rds
        .describe_db_instances()
        .db_instance_identifier(&db)
        .send()
        .await
        .expect("DescribeDBInstances");
    let endpoint = instance.db_instances()[0].endpoint().expect("endpoint");
    assert_eq!(endpoint.address(), Some(output("DbEndpoint").as_str()));
    assert_eq!(
        endpoint.port().map(|p| p.to_string()),
        Some(output("DbPort"))
    );
    let c = rds
        .describe_db_clusters()
        .db_cluster_identifier(&cluster)
        .send()
        .await
        .expect("DescribeDBClusters");
    assert_eq!(
        c.db_clusters()[0].endpoint(),
        Some(output("ClusterEndpoint").as_str())
    );

    // v2: every change in place.
    let (code, text) = run("diff", "alb-rds-v2", &bucket, &["--fail"], None);
    assert_eq!(code, 1, "v2 differs from v1: {text}");
    let (code, text) = run("deploy", "alb-rds-v2", &bucket, &[], None);
    assert_eq!(code, 0, "deploy v2: {text}");
    let second = record(STACK, &bucket);
    assert_eq!(sdk_resources(&second), v1, "no resource is replaced");
    assert_eq!(
        support::lb_attribute(&elb, &lb, "idle_timeout.timeout_seconds").await,
        "90"
    );
    let groups = elb
        .describe_target_groups()
        .target_group_arns(&tg)
        .send()
        .await
        .expect("DescribeTargetGroups");
    assert_eq!(
        groups.target_groups()[0].health_check_path(),
        Some("/healthz")
    );
    let instance = rds
        .describe_db_instances()
        .db_instance_identifier(&db)
        .send()
        .await
        .expect("DescribeDBInstances");
    assert_eq!(
        instance.db_instances()[0].backup_retention_period(),
        Some(7)
    );
    let c = rds
        .describe_db_clusters()
        .db_cluster_identifier(&cluster)
        .send()
        .await
        .expect("DescribeDBClusters");
    assert_eq!(c.db_clusters()[0].backup_retention_period(), Some(5));
    let (code, text) = run("diff", "alb-rds-v2", &bucket, &["--fail"], None);
    assert_eq!(code, 0, "a phantom change right after deploy v2: {text}");

    // No state object version holds a master password in the clear.
    let secrets = passwords(&second).await;
    assert_eq!(secrets.len(), 2, "{secrets:?}");
    let versions = support::app::every_object_version(&bucket).await;
    assert!(versions.len() >= 2, "{} versions", versions.len());
    for (key, body) in &versions {
        for p in &secrets {
            assert!(!body.contains(p.as_str()), "{key} holds a master password");
        }
    }

    let (code, text) = run("destroy", "alb-rds-v2", &bucket, &[STACK, "--force"], None);
    assert_eq!(code, 0, "destroy: {text}");
    assert!(
        elb.describe_load_balancers()
            .load_balancer_arns(&lb)
            .send()
            .await
            .is_err(),
        "the load balancer survived"
    );
    assert!(
        elb.describe_target_groups()
            .target_group_arns(&tg)
            .send()
            .await
            .is_err(),
        "the target group survived"
    );
    assert!(
        rds.describe_db_instances()
            .db_instance_identifier(&db)
            .send()
            .await
            .is_err(),
        "the instance survived"
    );
    assert!(
        rds.describe_db_clusters()
            .db_cluster_identifier(&cluster)
            .send()
            .await
            .is_err(),
        "the cluster survived"
    );
    let _ = std::fs::remove_file(&trace);
}

/// A DB instance recorded through Cloud Control (the emulator makes it real in RDS, as Cloud
/// Control does in AWS) diffs clean, then returns to the SDK provider on its update: the SDK
/// provider addresses it by the identifier Cloud Control recorded (`SAME_ID_ON_BOTH_ROUTES`),
/// so the record flips to `sdk` with the same physical id and the change is made through RDS
/// (issue 19, Done when 4).
#[tokio::test]
async fn a_db_instance_recorded_through_cloud_control_returns_to_the_sdk_provider() {
    let app = support::app::App::new("cdkd-db-return");
    let stack = "DbReturn";
    let name = unique_name("db-return").to_ascii_lowercase();
    let props = |retention: u32| {
        json!({
            "DBInstanceIdentifier": name,
            "Engine": "mysql",
            "DBInstanceClass": "db.t3.micro",
            "MasterUsername": "admin",
            "AllocatedStorage": "20",
            "BackupRetentionPeriod": retention,
        })
    };
    let id = cc_create("AWS::RDS::DBInstance", &props(1)).await;
    assert_eq!(id, name);
    pinned_state(
        &app,
        stack,
        "Db",
        "AWS::RDS::DBInstance",
        &id,
        &props(1),
        json!({}),
    )
    .await;
    let template = |retention: u32| {
        json!({"Resources": {"Db": {"Type": "AWS::RDS::DBInstance",
            "DeletionPolicy": "Delete", "Properties": props(retention)}}})
    };
    app.write_stacks(&[(stack, &template(1), &[])]);
    let (code, text) = diff_fail(&app);
    assert_eq!(code, 0, "the recorded stack diffs clean: {text}");

    app.write_stacks(&[(stack, &template(3), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("returns to its SDK provider"), "{stderr}");
    let rec = app.record(stack);
    assert_eq!(
        rec["resources"]["Db"]["provisionedBy"],
        json!("sdk"),
        "{rec}"
    );
    assert_eq!(rec["resources"]["Db"]["physicalId"], json!(id));
    assert!(
        rec["resources"]["Db"]["attributes"]["DBInstanceArn"]
            .as_str()
            .is_some_and(|a| a.ends_with(&format!(":db:{id}"))),
        "{rec}"
    );
    let rds = aws_sdk_rds::Client::new(&sdk_config().await);
    let live = rds
        .describe_db_instances()
        .db_instance_identifier(&id)
        .send()
        .await
        .expect("DescribeDBInstances");
    assert_eq!(live.db_instances()[0].backup_retention_period(), Some(3));
    let (code, text) = diff_fail(&app);
    assert_eq!(code, 0, "clean after the update: {text}");
    let out = cdkd()
        .current_dir(app.dir.path())
        .arg("destroy")
        .args(["--app", app.dir.path().to_str().expect("utf-8 path")])
        .args(["--state-bucket", &app.bucket, stack, "--force"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        rds.describe_db_instances()
            .db_instance_identifier(&id)
            .send()
            .await
            .is_err(),
        "the instance survived"
    );
}
