//! The corpus of real CDK apps (`fixtures/apps/corpus-*`, listed in fixtures/README.md), each
//! taken through the whole life of a stack by the `cdkd` binary against the emulator: deploy
//! v1, `diff --fail` exits 0, `diff --fail` on v2 exits 1, deploy v2, `diff --fail` exits 0,
//! destroy. Afterwards the state bucket holds none of the stack's keys and every resource
//! either record named (v1's and v2's, so replaced ones too) is gone from AWS. That last
//! check is independent of cdkd's providers: SDK-routed types are looked up through their own
//! service clients, Cloud Control ones through the Cloud Control API's GetResource.
//!
//! One `#[test]` per app so they run in parallel; each has its own state bucket, and each app
//! has its own stack name, so the generated physical names never meet.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use serde_json::Value;
use support::{cdkd, s3_client, sdk_config, string_leaves, unique_name};

fn fixture(app: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/apps")
        .join(app)
        .join("cdk.out")
}

/// `cdkd <args..> --state-bucket B`, run in `dir`: (exit code, stdout, stderr).
fn run(dir: &Path, bucket: &str, args: &[&str]) -> (i32, String, String) {
    let out = cdkd()
        .current_dir(dir)
        .env("CDKD_PROGRESS", "plain")
        .env("NO_COLOR", "1")
        .args(args)
        .args(["--state-bucket", bucket])
        .output()
        .expect("runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    eprintln!("--- cdkd {args:?}\n{stdout}\n{stderr}");
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

/// `cdkd <command> --app <fixture> ...`.
fn app_cmd(command: &str, app: &str, bucket: &str, extra: &[&str]) -> (i32, String, String) {
    let dir = fixture(app);
    let mut args = vec![command, "--app", dir.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    run(&dir, bucket, &args)
}

/// The stack's state record (`cdkd state show --json`, unwrapped).
fn record(bucket: &str, stack: &str) -> Value {
    let (code, stdout, stderr) = run(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        bucket,
        &["state", "show", stack, "--json"],
    );
    assert_eq!(code, 0, "state show {stack}: {stderr}");
    let shown: Value = serde_json::from_str(&stdout).expect("state json");
    match shown.get("state") {
        Some(s) if s.is_object() => s.clone(),
        _ => shown,
    }
}

/// One resource a record named.
#[derive(Debug, Clone)]
struct Recorded {
    logical_id: String,
    type_: String,
    physical_id: String,
    cloud_control: bool,
    properties: Value,
}

fn recorded(state: &Value) -> Vec<Recorded> {
    let resources = state["resources"].as_object().expect("resources map");
    resources
        .iter()
        .map(|(id, r)| Recorded {
            logical_id: id.clone(),
            type_: r["resourceType"].as_str().expect("type").to_owned(),
            physical_id: r["physicalId"].as_str().expect("physical id").to_owned(),
            cloud_control: r["provisionedBy"] == "cc-api",
            properties: r["properties"].clone(),
        })
        .collect()
}

/// Keys under the stack's state prefix (state.json, lock.json, the journal, ...).
async fn stack_keys(bucket: &str, stack: &str) -> Vec<String> {
    let listed = s3_client()
        .await
        .list_objects_v2()
        .bucket(bucket)
        .prefix(format!("cdkd/{stack}/"))
        .send()
        .await
        .expect("list state bucket");
    listed
        .contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect()
}

/// The error codes AWS answers for "there is no such thing".
const NOT_FOUND: &[&str] = &[
    "NoSuchEntity",
    "ResourceNotFoundException",
    "ResourceNotFound",
    "NoSuchBucket",
    "NoSuchBucketPolicy",
    "NotFound",
    "NotFoundException",
    "AWS.SimpleQueueService.NonExistentQueue",
    "QueueDoesNotExist",
    "ParameterNotFound",
    "DBSubnetGroupNotFoundFault",
    "DBInstanceNotFound",
    "DBInstanceNotFoundFault",
    "DBClusterNotFoundFault",
    "LoadBalancerNotFound",
    "TargetGroupNotFound",
    "ListenerNotFound",
    "RuleNotFound",
];

/// Whether an SDK answer says the thing does not exist: `Ok` means it does, a not-found error
/// (or a bare 404) that it does not; any other error fails the test.
fn absent<T, E>(what: &str, result: Result<T, SdkError<E>>) -> bool
where
    E: ProvideErrorMetadata + std::fmt::Debug,
{
    match result {
        Ok(_) => false,
        Err(e) => {
            let status = e.raw_response().map(|r| r.status().as_u16());
            let code = ProvideErrorMetadata::code(&e).map(str::to_owned);
            match code.as_deref() {
                Some(c) if NOT_FOUND.contains(&c) => true,
                None if status == Some(404) => true,
                _ => panic!("looking up {what}: unexpected error {e:?}"),
            }
        }
    }
}

fn prop<'a>(r: &'a Recorded, key: &str) -> &'a str {
    r.properties[key]
        .as_str()
        .unwrap_or_else(|| panic!("{} ({}): no string {key}", r.logical_id, r.type_))
}

fn prop_list(r: &Recorded, key: &str) -> Vec<String> {
    r.properties[key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `r` still exists in AWS, asked through its service's own client (or Cloud
/// Control's GetResource for the types cdkd provisions there).
async fn exists(r: &Recorded) -> bool {
    let config = sdk_config().await;
    let id = r.physical_id.as_str();
    let what = format!("{} {} {id}", r.logical_id, r.type_);
    if r.cloud_control {
        let cc = aws_sdk_cloudcontrol::Client::new(&config);
        return !absent(
            &what,
            cc.get_resource()
                .type_name(&r.type_)
                .identifier(id)
                .send()
                .await,
        );
    }
    let iam = || aws_sdk_iam::Client::new(&config);
    let lambda = || aws_sdk_lambda::Client::new(&config);
    let sqs = || aws_sdk_sqs::Client::new(&config);
    let sns = || aws_sdk_sns::Client::new(&config);
    match r.type_.as_str() {
        "AWS::IAM::Role" => !absent(&what, iam().get_role().role_name(id).send().await),
        "AWS::IAM::Policy" => {
            let name = prop(r, "PolicyName");
            let mut any = false;
            for role in prop_list(r, "Roles") {
                let got = iam()
                    .get_role_policy()
                    .role_name(&role)
                    .policy_name(name)
                    .send()
                    .await;
                any |= !absent(&what, got);
            }
            any
        }
        "AWS::IAM::ManagedPolicy" => !absent(&what, iam().get_policy().policy_arn(id).send().await),
        "AWS::IAM::InstanceProfile" => !absent(
            &what,
            iam()
                .get_instance_profile()
                .instance_profile_name(id)
                .send()
                .await,
        ),
        "AWS::Lambda::Function" => !absent(
            &what,
            lambda().get_function().function_name(id).send().await,
        ),
        "AWS::Lambda::Version" => !absent(
            &what,
            lambda().get_function().function_name(id).send().await,
        ),
        "AWS::Lambda::Alias" => !absent(
            &what,
            lambda()
                .get_alias()
                .function_name(prop(r, "FunctionName"))
                .name(prop(r, "Name"))
                .send()
                .await,
        ),
        "AWS::Lambda::Url" => {
            let mut req = lambda()
                .get_function_url_config()
                .function_name(prop(r, "TargetFunctionArn"));
            if let Some(q) = r.properties["Qualifier"].as_str() {
                req = req.qualifier(q);
            }
            !absent(&what, req.send().await)
        }
        "AWS::Lambda::Permission" => {
            match lambda()
                .get_policy()
                .function_name(prop(r, "FunctionName"))
                .send()
                .await
            {
                Ok(p) => p.policy().unwrap_or_default().contains(id),
                Err(e) => !absent(&what, Err::<(), _>(e)),
            }
        }
        "AWS::Lambda::EventSourceMapping" => !absent(
            &what,
            lambda().get_event_source_mapping().uuid(id).send().await,
        ),
        "AWS::S3::Bucket" => !absent(
            &what,
            s3_client().await.head_bucket().bucket(id).send().await,
        ),
        "AWS::S3::BucketPolicy" => !absent(
            &what,
            s3_client()
                .await
                .get_bucket_policy()
                .bucket(prop(r, "Bucket"))
                .send()
                .await,
        ),
        "AWS::SQS::Queue" => !absent(
            &what,
            sqs().get_queue_attributes().queue_url(id).send().await,
        ),
        "AWS::SQS::QueuePolicy" => {
            let mut any = false;
            for queue in prop_list(r, "Queues") {
                let got = sqs()
                    .get_queue_attributes()
                    .queue_url(&queue)
                    .attribute_names(aws_sdk_sqs::types::QueueAttributeName::Policy)
                    .send()
                    .await;
                any |= match got {
                    Ok(a) => a.attributes().is_some_and(|m| {
                        m.contains_key(&aws_sdk_sqs::types::QueueAttributeName::Policy)
                    }),
                    Err(e) => !absent(&what, Err::<(), _>(e)),
                };
            }
            any
        }
        "AWS::SNS::Topic" => !absent(
            &what,
            sns().get_topic_attributes().topic_arn(id).send().await,
        ),
        "AWS::SNS::Subscription" => !absent(
            &what,
            sns()
                .get_subscription_attributes()
                .subscription_arn(id)
                .send()
                .await,
        ),
        "AWS::SNS::TopicPolicy" => {
            // The policy lives on its topics: it is gone when they are.
            let mut any = false;
            for topic in prop_list(r, "Topics") {
                any |= !absent(
                    &what,
                    sns().get_topic_attributes().topic_arn(&topic).send().await,
                );
            }
            any
        }
        "AWS::DynamoDB::Table" => !absent(
            &what,
            aws_sdk_dynamodb::Client::new(&config)
                .describe_table()
                .table_name(id)
                .send()
                .await,
        ),
        "AWS::Logs::LogGroup" => {
            let groups = aws_sdk_cloudwatchlogs::Client::new(&config)
                .describe_log_groups()
                .log_group_name_prefix(id)
                .send()
                .await
                .expect("describe log groups");
            groups
                .log_groups()
                .iter()
                .any(|g| g.log_group_name() == Some(id))
        }
        "AWS::SSM::Parameter" => !absent(
            &what,
            aws_sdk_ssm::Client::new(&config)
                .get_parameter()
                .name(id)
                .send()
                .await,
        ),
        "AWS::SecretsManager::Secret" => {
            match aws_sdk_secretsmanager::Client::new(&config)
                .describe_secret()
                .secret_id(id)
                .send()
                .await
            {
                // Scheduled for deletion counts as deleted (CloudFormation does the same).
                Ok(s) => s.deleted_date().is_none(),
                Err(e) => !absent(&what, Err::<(), _>(e)),
            }
        }
        t if t.starts_with("AWS::EC2::") => ec2_exists(r, &what, &config).await,
        "AWS::KMS::Key" => {
            let kms = aws_sdk_kms::Client::new(&config);
            match kms.describe_key().key_id(id).send().await {
                // Scheduled for deletion counts as deleted (a key is never removed at once).
                Ok(k) => k.key_metadata().is_some_and(|m| {
                    m.key_state() != Some(&aws_sdk_kms::types::KeyState::PendingDeletion)
                }),
                Err(e) => !absent(&what, Err::<(), _>(e)),
            }
        }
        "AWS::RDS::DBSubnetGroup" => !absent(
            &what,
            aws_sdk_rds::Client::new(&config)
                .describe_db_subnet_groups()
                .db_subnet_group_name(id)
                .send()
                .await,
        ),
        "AWS::RDS::DBInstance" => !absent(
            &what,
            aws_sdk_rds::Client::new(&config)
                .describe_db_instances()
                .db_instance_identifier(id)
                .send()
                .await,
        ),
        "AWS::RDS::DBCluster" => !absent(
            &what,
            aws_sdk_rds::Client::new(&config)
                .describe_db_clusters()
                .db_cluster_identifier(id)
                .send()
                .await,
        ),
        t if t.starts_with("AWS::ElasticLoadBalancingV2::") => {
            let elb = aws_sdk_elasticloadbalancingv2::Client::new(&config);
            match t {
                "AWS::ElasticLoadBalancingV2::LoadBalancer" => !absent(
                    &what,
                    elb.describe_load_balancers()
                        .load_balancer_arns(id)
                        .send()
                        .await,
                ),
                "AWS::ElasticLoadBalancingV2::TargetGroup" => !absent(
                    &what,
                    elb.describe_target_groups()
                        .target_group_arns(id)
                        .send()
                        .await,
                ),
                "AWS::ElasticLoadBalancingV2::Listener" => !absent(
                    &what,
                    elb.describe_listeners().listener_arns(id).send().await,
                ),
                _ => !absent(&what, elb.describe_rules().rule_arns(id).send().await),
            }
        }
        "AWS::KMS::Alias" => aws_sdk_kms::Client::new(&config)
            .list_aliases()
            .send()
            .await
            .expect("ListAliases")
            .aliases()
            .iter()
            .any(|a| a.alias_name() == Some(id)),
        other => panic!("{what}: no independent existence check for {other}; add one"),
    }
}

/// Whether an EC2 networking resource the SDK provider recorded still exists, asked through
/// EC2's own Describe calls (a NAT gateway in state `deleted` is gone, as EC2 lists it for a
/// while after).
async fn ec2_exists(r: &Recorded, what: &str, config: &aws_config::SdkConfig) -> bool {
    use aws_sdk_ec2::types::Filter;
    let ec2 = aws_sdk_ec2::Client::new(config);
    let id = r.physical_id.as_str();
    // EC2 answers "no such id" with a code per kind of id (InvalidVpcID.NotFound, ...).
    fn gone<T, E: ProvideErrorMetadata + std::fmt::Debug>(
        what: &str,
        res: Result<T, SdkError<E>>,
    ) -> Option<T> {
        match res {
            Ok(v) => Some(v),
            Err(e) if ProvideErrorMetadata::code(&e).is_some_and(|c| c.ends_with(".NotFound")) => {
                None
            }
            Err(e) => panic!("looking up {what}: unexpected error {e:?}"),
        }
    }
    let tail = |s: &str| s.rsplit('|').next().unwrap_or(s).to_owned();
    match r.type_.as_str() {
        "AWS::EC2::VPC" => gone(what, ec2.describe_vpcs().vpc_ids(id).send().await)
            .is_some_and(|o| !o.vpcs().is_empty()),
        "AWS::EC2::Subnet" => gone(what, ec2.describe_subnets().subnet_ids(id).send().await)
            .is_some_and(|o| !o.subnets().is_empty()),
        "AWS::EC2::InternetGateway" => gone(
            what,
            ec2.describe_internet_gateways()
                .internet_gateway_ids(id)
                .send()
                .await,
        )
        .is_some_and(|o| !o.internet_gateways().is_empty()),
        "AWS::EC2::VPCGatewayAttachment" => gone(
            what,
            ec2.describe_internet_gateways()
                .filters(
                    Filter::builder()
                        .name("attachment.vpc-id")
                        .values(tail(id))
                        .build(),
                )
                .send()
                .await,
        )
        .is_some_and(|o| !o.internet_gateways().is_empty()),
        "AWS::EC2::RouteTable" => gone(
            what,
            ec2.describe_route_tables().route_table_ids(id).send().await,
        )
        .is_some_and(|o| !o.route_tables().is_empty()),
        "AWS::EC2::Route" => {
            let (table, dest) = id.split_once('|').expect("rtb|destination");
            gone(
                what,
                ec2.describe_route_tables()
                    .route_table_ids(table)
                    .send()
                    .await,
            )
            .is_some_and(|o| {
                o.route_tables().iter().flat_map(|t| t.routes()).any(|x| {
                    x.destination_cidr_block() == Some(dest)
                        || x.destination_ipv6_cidr_block() == Some(dest)
                })
            })
        }
        "AWS::EC2::SubnetRouteTableAssociation" => gone(
            what,
            ec2.describe_route_tables()
                .filters(
                    Filter::builder()
                        .name("association.route-table-association-id")
                        .values(id)
                        .build(),
                )
                .send()
                .await,
        )
        .is_some_and(|o| !o.route_tables().is_empty()),
        "AWS::EC2::EIP" => gone(
            what,
            ec2.describe_addresses()
                .allocation_ids(tail(id))
                .send()
                .await,
        )
        .is_some_and(|o| !o.addresses().is_empty()),
        "AWS::EC2::NatGateway" => gone(
            what,
            ec2.describe_nat_gateways().nat_gateway_ids(id).send().await,
        )
        .is_some_and(|o| {
            o.nat_gateways()
                .iter()
                .any(|n| n.state().is_some_and(|s| s.as_str() != "deleted"))
        }),
        "AWS::EC2::SecurityGroup" => gone(
            what,
            ec2.describe_security_groups().group_ids(id).send().await,
        )
        .is_some_and(|o| !o.security_groups().is_empty()),
        "AWS::EC2::SecurityGroupIngress" | "AWS::EC2::SecurityGroupEgress" => gone(
            what,
            ec2.describe_security_group_rules()
                .security_group_rule_ids(id)
                .send()
                .await,
        )
        .is_some_and(|o| !o.security_group_rules().is_empty()),
        other => panic!("{what}: no independent existence check for {other}; add one"),
    }
}

/// A `Ref` must hand consumers CloudFormation's value, never cdkd's internal `a|b` Cloud
/// Control identifier: no resource property (what was sent to AWS) and no output or export
/// of the record may carry the physical id of a composite-identifier resource. Returns how
/// many composite-identifier resources the record holds, so a caller can insist the scan
/// was not vacuous.
fn assert_no_composite_id_leaks(app: &str, state: &Value) -> usize {
    let resources = recorded(state);
    let composite: Vec<&Recorded> = resources
        .iter()
        .filter(|r| r.cloud_control && r.physical_id.contains('|'))
        .collect();
    let mut leaves = Vec::new();
    for r in &resources {
        string_leaves(
            &r.properties,
            &format!("{}.Properties", r.logical_id),
            &mut leaves,
        );
    }
    string_leaves(&state["outputs"], "outputs", &mut leaves);
    for c in &composite {
        for (path, text) in &leaves {
            assert!(
                !text.contains(c.physical_id.as_str()),
                "{app}: {path} carries the Cloud Control identifier {:?} of {} ({}) instead of its Ref value",
                c.physical_id,
                c.logical_id,
                c.type_
            );
        }
    }
    composite.len()
}

/// What a cycle expects of destroy beyond the state being gone.
#[derive(Default)]
struct Expect<'a> {
    /// Logical ids whose DeletionPolicy keeps them: they must still exist after destroy.
    retained: &'a [&'a str],
}

/// The whole cycle of `app` (and `app`-v2), stack `stack`. Returns the resources the two
/// records named, for app-specific checks.
async fn cycle(app: &str, stack: &str, expect: Expect<'_>) -> Vec<Recorded> {
    let v2 = format!("{app}-v2");
    let bucket = unique_name(&format!("cdkd-{app}"));
    let (code, _, stderr) = run(Path::new("."), &bucket, &["bootstrap"]);
    assert_eq!(code, 0, "bootstrap: {stderr}");

    let (code, _, stderr) = app_cmd("deploy", app, &bucket, &[]);
    assert_eq!(code, 0, "{app}: deploy v1 failed:\n{stderr}");
    let (code, stdout, stderr) = app_cmd("diff", app, &bucket, &["--fail"]);
    assert_eq!(
        code, 0,
        "{app}: a phantom change right after deploying v1:\n{stdout}\n{stderr}"
    );
    let first_state = record(&bucket, stack);
    assert_no_composite_id_leaks(app, &first_state);
    let first = recorded(&first_state);
    for r in &first {
        assert!(
            exists(r).await,
            "{app}: {} ({}) {} is recorded but not in AWS",
            r.logical_id,
            r.type_,
            r.physical_id
        );
    }

    let (code, stdout, stderr) = app_cmd("diff", &v2, &bucket, &["--fail"]);
    assert_eq!(
        code, 1,
        "{app}: v2 shows no change against v1:\n{stdout}\n{stderr}"
    );
    let (code, _, stderr) = app_cmd("deploy", &v2, &bucket, &[]);
    assert_eq!(code, 0, "{app}: deploy v2 failed:\n{stderr}");
    let (code, stdout, stderr) = app_cmd("diff", &v2, &bucket, &["--fail"]);
    assert_eq!(
        code, 0,
        "{app}: a phantom change right after deploying v2:\n{stdout}\n{stderr}"
    );
    let second_state = record(&bucket, stack);
    assert_no_composite_id_leaks(&v2, &second_state);
    let second = recorded(&second_state);
    for r in &second {
        assert!(
            exists(r).await,
            "{app}: {} ({}) {} is recorded after v2 but not in AWS",
            r.logical_id,
            r.type_,
            r.physical_id
        );
    }

    let (code, _, stderr) = app_cmd("destroy", &v2, &bucket, &[stack, "--force"]);
    assert_eq!(code, 0, "{app}: destroy failed:\n{stderr}");
    let left: Vec<String> = stack_keys(&bucket, stack)
        .await
        .into_iter()
        .filter(|k| !support::is_event_store_key(k))
        .collect();
    assert_eq!(
        left,
        Vec::<String>::new(),
        "{app}: state objects left after destroy (besides the event store)"
    );

    // Every physical resource either record named, once (a resource v2 kept appears twice).
    let mut all: BTreeMap<(String, String), Recorded> = BTreeMap::new();
    for r in first.into_iter().chain(second) {
        all.insert((r.type_.clone(), r.physical_id.clone()), r);
    }
    for r in all.values() {
        let keep = expect.retained.contains(&r.logical_id.as_str());
        assert_eq!(
            exists(r).await,
            keep,
            "{app}: {} ({}) {} {} after destroy",
            r.logical_id,
            r.type_,
            r.physical_id,
            if keep {
                "is gone (its policy keeps it)"
            } else {
                "survived"
            }
        );
    }
    all.into_values().collect()
}

#[tokio::test]
async fn queue_worker() {
    cycle(
        "corpus-queue-worker",
        "CorpusQueueWorker",
        Expect::default(),
    )
    .await;
}

#[tokio::test]
async fn rest_api() {
    let all = cycle("corpus-rest-api", "CorpusRestApi", Expect::default()).await;
    let composite = all.iter().filter(|r| r.physical_id.contains('|')).count();
    assert!(
        composite > 0,
        "the REST API app has composite-identifier resources (methods, stages), so its leak scan is not vacuous"
    );
}

#[tokio::test]
async fn http_api() {
    cycle("corpus-http-api", "CorpusHttpApi", Expect::default()).await;
}

#[tokio::test]
async fn static_site() {
    cycle("corpus-static-site", "CorpusStaticSite", Expect::default()).await;
}

#[tokio::test]
async fn vpc_nat() {
    cycle("corpus-vpc-nat", "CorpusVpcNat", Expect::default()).await;
}

#[tokio::test]
async fn bastion_sg() {
    cycle("corpus-bastion-sg", "CorpusBastionSg", Expect::default()).await;
}

#[tokio::test]
async fn fargate() {
    cycle("corpus-fargate", "CorpusFargate", Expect::default()).await;
}

#[tokio::test]
async fn event_pipeline() {
    cycle(
        "corpus-event-pipeline",
        "CorpusEventPipeline",
        Expect::default(),
    )
    .await;
}

#[tokio::test]
async fn user_pool() {
    cycle("corpus-user-pool", "CorpusUserPool", Expect::default()).await;
}

#[tokio::test]
async fn rds() {
    cycle("corpus-rds", "CorpusRds", Expect::default()).await;
}

#[tokio::test]
async fn kms_encrypted() {
    cycle(
        "corpus-kms-encrypted",
        "CorpusKmsEncrypted",
        Expect::default(),
    )
    .await;
}

#[tokio::test]
async fn sns_fanout() {
    cycle("corpus-sns-fanout", "CorpusSnsFanout", Expect::default()).await;
}

#[tokio::test]
async fn secret_config() {
    cycle(
        "corpus-secret-config",
        "CorpusSecretConfig",
        Expect::default(),
    )
    .await;
}

#[tokio::test]
async fn lambda_url() {
    cycle("corpus-lambda-url", "CorpusLambdaUrl", Expect::default()).await;
}

#[tokio::test]
async fn iam_policies() {
    cycle(
        "corpus-iam-policies",
        "CorpusIamPolicies",
        Expect::default(),
    )
    .await;
}

#[tokio::test]
async fn dynamo_stream() {
    cycle(
        "corpus-dynamo-stream",
        "CorpusDynamoStream",
        Expect::default(),
    )
    .await;
}

#[tokio::test]
async fn scheduled_job() {
    cycle(
        "corpus-scheduled-job",
        "CorpusScheduledJob",
        Expect::default(),
    )
    .await;
}

#[tokio::test]
async fn log_metrics() {
    cycle("corpus-log-metrics", "CorpusLogMetrics", Expect::default()).await;
}

#[tokio::test]
async fn sfn_lambda() {
    cycle("corpus-sfn-lambda", "CorpusSfnLambda", Expect::default()).await;
}

#[tokio::test]
async fn queue_alarms() {
    cycle(
        "corpus-queue-alarms",
        "CorpusQueueAlarms",
        Expect::default(),
    )
    .await;
}

/// CDK's default for a table is RETAIN: destroy forgets the stack (no state left) but the
/// table stays, and the parameter beside it (DESTROY) goes.
#[tokio::test]
async fn retained_table() {
    let all = cycle(
        "corpus-retained-table",
        "CorpusRetainedTable",
        Expect {
            retained: &["Customers6955EA0A"],
        },
    )
    .await;
    let table = all
        .iter()
        .find(|r| r.type_ == "AWS::DynamoDB::Table")
        .expect("the table was recorded");
    // The retained table is the test's to clean up.
    aws_sdk_dynamodb::Client::new(&sdk_config().await)
        .delete_table()
        .table_name(&table.physical_id)
        .send()
        .await
        .expect("delete the retained table");
}
