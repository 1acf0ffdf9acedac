//! The resolver's external reads against the emulator: dynamic references
//! (SSM String / StringList / SecureString, Secrets Manager, JSON keys, ARN
//! regions, assembled by Fn::Sub / Fn::Join), Fn::ImportValue (index hit,
//! state scan with write-through, CloudFormation fallback as a weak
//! reference, masks and secret expressions), and Fn::GetStackOutput (cross
//! region, DescribeStacks fallback, a malformed producer record, cross
//! account under an assumed role). Each test has its own state bucket.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use aws_sdk_s3::primitives::ByteStream;
use cdkd::aws::{ClientOptions, Clients};
use cdkd::resolve::external::{DynamicCache, ImportSource};
use cdkd::resolve::ExternalReader;
use cdkd::resolve::{
    prefetch, NoResources, PrefetchedStack, ResolveContext, ResolveError, Resolver,
};
use cdkd::state::backend::S3Backend;
use cdkd::state::bucket::StateBucket;
use cdkd::state::exports::ExportIndexStore;
use cdkd::state::{StateImportEntry, StateKeys};
use cdkd::template::Template;
use serde_json::{json, Value};
use support::{sdk_config, unique_name};

const REGION: &str = "us-east-1";

struct Env {
    clients: Arc<Clients>,
    s3: aws_sdk_s3::Client,
    bucket: String,
    index: Arc<ExportIndexStore>,
}

async fn env() -> Env {
    support::emulator_env();
    let clients = Arc::new(Clients::load(&ClientOptions::default()).await);
    let s3 = clients.s3(Some(REGION));
    let bucket = unique_name("cdkd-resolve");
    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("bucket");
    let index = Arc::new(ExportIndexStore::new(
        s3.clone(),
        &bucket,
        StateKeys::default(),
    ));
    Env {
        clients,
        s3,
        bucket,
        index,
    }
}

impl Env {
    fn reader(&self, cfn_fallback: bool) -> Arc<ExternalReader> {
        let backend = S3Backend::connect(
            &self.clients,
            &StateBucket {
                name: self.bucket.clone(),
                region: REGION.into(),
            },
            StateKeys::default(),
        );
        Arc::new(
            ExternalReader::new(
                self.clients.clone(),
                Arc::new(backend),
                Some(self.index.clone()),
            )
            .with_cfn_fallback(cfn_fallback),
        )
    }

    async fn put_record(&self, stack: &str, region: &str, outputs: Value) {
        put_record(&self.s3, &self.bucket, stack, region, outputs).await;
    }
}

async fn put_record(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    stack: &str,
    region: &str,
    outputs: Value,
) {
    let body = json!({
        "version": 11, "stackName": stack, "region": region,
        "resources": {}, "outputs": outputs, "lastModified": 1
    });
    s3.put_object()
        .bucket(bucket)
        .key(StateKeys::default().state(stack, region))
        .body(ByteStream::from(serde_json::to_vec_pretty(&body).unwrap()))
        .send()
        .await
        .expect("put record");
}

fn template(v: Value) -> Template {
    Template::from_value(v, Path::new("test.json")).expect("template")
}

/// Prefetches `t` for stack `stack`, then resolves every resource's
/// properties and substitutes their dynamic references.
async fn run(
    reader: Arc<ExternalReader>,
    stack: &str,
    t: &Template,
) -> (
    PrefetchedStack,
    Result<Vec<(Value, cdkd::resolve::SecretsMap)>, ResolveError>,
) {
    let ctx = ResolveContext::new(stack, REGION, Some("123456789012".into()));
    let fut = prefetch(reader, t, &[], &ctx, &NoResources);
    assert_send(&fut);
    let p = fut.await.expect("prefetch");
    let out = {
        let mut r =
            Resolver::new(t, &ctx, &p.params, &NoResources, &p.lookup).with_conditions(&p.verdicts);
        let mut out = Vec::new();
        let mut err = None;
        for id in t.resources.keys() {
            match r.resolve_properties(id) {
                Ok(props) => {
                    let path = format!("Resources.{id}.Properties");
                    match p.lookup.substitute(&Value::Object(props), &path) {
                        Ok(x) => out.push(x),
                        Err(e) => err = err.or(Some(e)),
                    }
                }
                Err(e) => err = err.or(Some(e)),
            }
        }
        match err {
            Some(e) => Err(e),
            None => Ok(out),
        }
    };
    (p, out)
}

/// An engine runs prefetches on spawned tasks: the future must be Send.
fn assert_send<T: Send>(_: &T) {}

fn resource(props: Value) -> Value {
    json!({"Type": "AWS::SQS::Queue", "Properties": props})
}

#[tokio::test]
async fn dynamic_references_resolve_against_ssm_and_secrets_manager() {
    let e = env().await;
    let conf = sdk_config().await;
    let ssm = aws_sdk_ssm::Client::new(&conf);
    let sm = aws_sdk_secretsmanager::Client::new(&conf);
    let n = unique_name("dyn");
    use aws_sdk_ssm::types::ParameterType as T;
    for (name, value, kind) in [
        ("pub", "public-value", T::String),
        ("list", "a,b,c", T::StringList),
        ("sec", "secure-param-value", T::SecureString),
    ] {
        ssm.put_parameter()
            .name(format!("/{n}/{name}"))
            .value(value)
            .r#type(kind)
            .send()
            .await
            .expect("put parameter");
    }
    sm.create_secret()
        .name(format!("{n}-db"))
        .secret_string(r#"{"user":"admin","pw":"hunter2-pw"}"#)
        .send()
        .await
        .expect("secret");
    let far = aws_sdk_secretsmanager::Client::from_conf(
        aws_sdk_secretsmanager::config::Builder::from(&conf)
            .region(aws_sdk_secretsmanager::config::Region::new("eu-west-1"))
            .build(),
    );
    let far_arn = far
        .create_secret()
        .name(format!("{n}-far"))
        .secret_string("far-away-secret")
        .send()
        .await
        .expect("far secret")
        .arn
        .unwrap();

    let t = template(json!({
        "Parameters": {
            "Prefix": {"Type": "String", "Default": format!("/{n}")},
            "FromSsm": {"Type": "AWS::SSM::Parameter::Value<String>", "Default": format!("/{n}/pub")}
        },
        "Resources": {"Q": resource(json!({
            "Public": format!("{{{{resolve:ssm:/{n}/pub}}}}"),
            "List": format!("{{{{resolve:ssm:/{n}/list}}}}"),
            "SecureBySsm": format!("{{{{resolve:ssm:/{n}/sec}}}}"),
            "SecureBySsmSecure": format!("{{{{resolve:ssm-secure:/{n}/sec}}}}"),
            "Assembled": {"Fn::Sub": "x-{{resolve:ssm:${Prefix}/pub}}"},
            "Joined": {"Fn::Join": ["", ["{{resolve:secretsmanager:", format!("{n}-db"), ":SecretString:pw}}"]]},
            "Url": format!("u={{{{resolve:secretsmanager:{n}-db::user}}}};p={{{{resolve:secretsmanager:{n}-db:SecretString:pw:AWSCURRENT}}}}"),
            "Far": format!("{{{{resolve:secretsmanager:{far_arn}}}}}"),
            "Param": {"Ref": "FromSsm"}
        }))}
    }));
    let (p, out) = run(e.reader(true), "Dyn", &t).await;
    let (value, secrets) = out.expect("resolves").remove(0);
    assert_eq!(
        value,
        json!({
            "Public": "public-value",
            "List": "a,b,c",
            "SecureBySsm": "secure-param-value",
            "SecureBySsmSecure": "secure-param-value",
            "Assembled": "x-public-value",
            "Joined": "hunter2-pw",
            "Url": "u=admin;p=hunter2-pw",
            "Far": "far-away-secret",
            "Param": "public-value"
        })
    );
    let base = "Resources.Q.Properties";
    let mut positions: Vec<(String, String)> = secrets
        .positions()
        .map(|(k, v)| (k.trim_start_matches(base).to_string(), v.expression.clone()))
        .collect();
    positions.sort();
    assert_eq!(
        positions,
        vec![
            (".Far".into(), format!("{{{{resolve:secretsmanager:{far_arn}}}}}")),
            (
                ".Joined".into(),
                format!("{{{{resolve:secretsmanager:{n}-db:SecretString:pw}}}}")
            ),
            (".SecureBySsm".into(), format!("{{{{resolve:ssm:/{n}/sec}}}}")),
            (
                ".SecureBySsmSecure".into(),
                format!("{{{{resolve:ssm-secure:/{n}/sec}}}}")
            ),
            (
                ".Url".into(),
                format!("u={{{{resolve:secretsmanager:{n}-db::user}}}};p={{{{resolve:secretsmanager:{n}-db:SecretString:pw:AWSCURRENT}}}}")
            ),
        ]
    );
    let mut plain: Vec<&str> = secrets.plaintexts().collect();
    plain.sort();
    assert_eq!(
        plain,
        vec![
            "admin",
            "far-away-secret",
            "hunter2-pw",
            "secure-param-value"
        ]
    );
    assert!(p.lookup.recorded_imports().is_empty());

    // A missing JSON key fails naming the stack, position and reference only.
    let t = template(json!({"Resources": {"Q": resource(json!({
        "Bad": format!("{{{{resolve:secretsmanager:{n}-db::nope}}}}")
    }))}}));
    let (_, out) = run(e.reader(true), "Dyn", &t).await;
    let err = out.unwrap_err().to_string();
    assert!(
        err.starts_with("stack Dyn: Resources.Q.Properties.Bad: dynamic reference:")
            && err.contains("no JSON key 'nope'")
            && !err.contains("hunter2"),
        "{err}"
    );
}

#[tokio::test]
async fn import_value_from_the_index_records_a_strong_import() {
    let e = env().await;
    let conf = sdk_config().await;
    let sm = aws_sdk_secretsmanager::Client::new(&conf);
    let secret = unique_name("shared");
    sm.create_secret()
        .name(&secret)
        .secret_string("producer-plaintext")
        .send()
        .await
        .expect("secret");
    let outputs = json!({
        "Out": "v-1",
        "us-east-1-shared": "v-1",
        "SecretOut": format!("{{{{resolve:secretsmanager:{secret}}}}}"),
        "Masked": "***"
    });
    e.put_record("Producer", REGION, outputs).await;
    // The consumer's own export must never satisfy its own import.
    e.put_record("Consumer", REGION, json!({"self-export": "mine"}))
        .await;
    let report = e.index.rebuild(REGION).await;
    assert!(report.is_written(), "{report:?}");

    let t = template(json!({"Resources": {"Q": resource(json!({
        "Shared": {"Fn::ImportValue": {"Fn::Sub": "${AWS::Region}-shared"}},
        "Secret": {"Fn::ImportValue": "SecretOut"},
        "Joined": {"Fn::Join": ["-", ["pre", {"Fn::ImportValue": "SecretOut"}]]}
    }))}}));
    let (p, out) = run(e.reader(false), "Consumer", &t).await;
    let (value, secrets) = out.expect("resolves").remove(0);
    assert_eq!(
        value,
        json!({"Shared": "v-1", "Secret": "producer-plaintext", "Joined": "pre-producer-plaintext"})
    );
    // The re-resolved secret is recorded at the position that holds it whole.
    assert_eq!(
        secrets
            .get("Resources.Q.Properties.Secret")
            .unwrap()
            .expression,
        format!("{{{{resolve:secretsmanager:{secret}}}}}")
    );
    assert_eq!(
        p.lookup
            .cross_stack_secrets()
            .plaintexts()
            .collect::<Vec<_>>(),
        vec!["producer-plaintext"]
    );
    let mut imports = p.lookup.recorded_imports();
    imports.sort_by(|a, b| a.export_name.cmp(&b.export_name));
    let entry = |name: &str| StateImportEntry {
        source_stack: "Producer".into(),
        source_region: REGION.into(),
        export_name: name.into(),
        extra: Default::default(),
    };
    assert_eq!(imports, vec![entry("SecretOut"), entry("us-east-1-shared")]);
    let (hits, _) = e
        .reader(false)
        .import_values("Consumer", REGION, &["Out".into()], &DynamicCache::new())
        .await;
    assert_eq!(
        hits["Out"].as_ref().unwrap().source,
        ImportSource::ExportsIndex
    );

    // A self-reference and a mask are refused.
    for (name, needle) in [
        ("self-export", "export 'self-export' not found"),
        ("Masked", "redaction mask"),
    ] {
        let t = template(
            json!({"Resources": {"Q": resource(json!({"X": {"Fn::ImportValue": name}}))}}),
        );
        let (_, out) = run(e.reader(false), "Consumer", &t).await;
        let err = out.unwrap_err().to_string();
        assert!(err.contains(needle), "{err}");
        assert!(
            err.contains("Resources.Q.Properties.X.Fn::ImportValue"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn an_index_miss_scans_state_and_writes_through() {
    let e = env().await;
    // An index that predates the producer's record.
    assert!(e.index.rebuild(REGION).await.is_written());
    e.put_record("Late", REGION, json!({"LateExport": "late-value"}))
        .await;
    // A record in another region never satisfies this region's import.
    e.put_record("Elsewhere", "eu-west-1", json!({"Far": "no"}))
        .await;
    let t = template(
        json!({"Resources": {"Q": resource(json!({"X": {"Fn::ImportValue": "LateExport"}}))}}),
    );
    let (hits, _) = e
        .reader(false)
        .import_values(
            "Consumer",
            REGION,
            &["LateExport".into()],
            &DynamicCache::new(),
        )
        .await;
    assert_eq!(
        hits["LateExport"].as_ref().unwrap().source,
        ImportSource::StateScan
    );
    let (p, out) = run(e.reader(false), "Consumer", &t).await;
    assert_eq!(out.unwrap()[0].0, json!({"X": "late-value"}));
    assert_eq!(p.lookup.recorded_imports().len(), 1);
    let (hits, _) = e
        .reader(false)
        .import_values(
            "Other",
            REGION,
            &["LateExport".into()],
            &DynamicCache::new(),
        )
        .await;
    assert_eq!(
        hits["LateExport"].as_ref().unwrap().source,
        ImportSource::ExportsIndex,
        "the scan hit was written through"
    );
    let fresh = ExportIndexStore::new(e.s3.clone(), &e.bucket, StateKeys::default());
    let entry = fresh
        .lookup(REGION, "LateExport")
        .await
        .expect("written through");
    assert_eq!(entry.value, json!("late-value"));
    assert_eq!(entry.producer_stack, "Late");

    let t =
        template(json!({"Resources": {"Q": resource(json!({"X": {"Fn::ImportValue": "Far"}}))}}));
    let (_, out) = run(e.reader(false), "Consumer", &t).await;
    let err = out.unwrap_err().to_string();
    assert!(
        err.contains("export 'Far' not found in us-east-1") && err.contains("fallback is off"),
        "{err}"
    );
}

#[tokio::test]
async fn cloudformation_exports_and_outputs_are_weak_references() {
    let e = env().await;
    let cfn = aws_sdk_cloudformation::Client::new(&sdk_config().await);
    let stack = unique_name("CfnProducer");
    let export = unique_name("cfn-export");
    let body = json!({
        "Resources": {"H": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": {"Out": {"Value": "from-cfn {{resolve:ssm:/not/resolved}}", "Export": {"Name": export}}}
    });
    cfn.create_stack()
        .stack_name(&stack)
        .template_body(body.to_string())
        .send()
        .await
        .expect("create stack");
    let t = template(json!({"Resources": {"Q": resource(json!({
        "Imported": {"Fn::ImportValue": export},
        "Output": {"Fn::GetStackOutput": {"StackName": stack, "OutputName": "Out"}}
    }))}}));
    let ctx = ResolveContext::new("Consumer", REGION, Some("123456789012".into()));
    let p = prefetch(e.reader(true), &t, &[], &ctx, &NoResources)
        .await
        .unwrap();
    let mut r = Resolver::new(&t, &ctx, &p.params, &NoResources, &p.lookup);
    let props = r.resolve_properties("Q").unwrap();
    // Not re-resolved: the token is what CloudFormation publishes.
    assert_eq!(
        Value::Object(props),
        json!({"Imported": "from-cfn {{resolve:ssm:/not/resolved}}", "Output": "from-cfn {{resolve:ssm:/not/resolved}}"})
    );
    assert!(p.lookup.recorded_imports().is_empty());
    assert!(p.lookup.recorded_output_reads().is_empty());

    let p = prefetch(e.reader(false), &t, &[], &ctx, &NoResources)
        .await
        .unwrap();
    let mut r = Resolver::new(&t, &ctx, &p.params, &NoResources, &p.lookup);
    let err = r.resolve_properties("Q").unwrap_err().to_string();
    assert!(
        err.contains("not found") && err.contains("fallback is off"),
        "{err}"
    );
    let _ = cfn.delete_stack().stack_name(&stack).send().await;
}

#[tokio::test]
async fn get_stack_output_reads_another_region_and_records_the_read() {
    let e = env().await;
    e.put_record(
        "Net",
        "us-west-2",
        json!({"VpcId": "vpc-123", "Masked": "***"}),
    )
    .await;
    let t = template(json!({"Resources": {"Q": resource(json!({
        "Vpc": {"Fn::GetStackOutput": {"StackName": "Net", "OutputName": "VpcId", "Region": "us-west-2"}}
    }))}}));
    // The prefetch alone records nothing; the resolution that reads does.
    let ctx = ResolveContext::new("App", REGION, None);
    let p = prefetch(e.reader(false), &t, &[], &ctx, &NoResources)
        .await
        .unwrap();
    assert!(p.lookup.recorded_output_reads().is_empty());
    let props = Resolver::new(&t, &ctx, &p.params, &NoResources, &p.lookup)
        .resolve_properties("Q")
        .unwrap();
    assert_eq!(Value::Object(props), json!({"Vpc": "vpc-123"}));
    let reads = p.lookup.recorded_output_reads();
    assert_eq!(reads.len(), 1);
    assert_eq!(
        (
            reads[0].source_stack.as_str(),
            reads[0].source_region.as_str(),
            reads[0].output_name.as_str()
        ),
        ("Net", "us-west-2", "VpcId")
    );
    assert!(p.lookup.recorded_imports().is_empty());

    // Missing output, mask, absent record, malformed record.
    e.put_record("Broken", REGION, json!("abcdef")).await;
    for (args, needle) in [
        (
            json!({"StackName": "Net", "OutputName": "Nope", "Region": "us-west-2"}),
            "has no output 'Nope' (its outputs: VpcId, Masked)",
        ),
        (
            json!({"StackName": "Net", "OutputName": "Masked", "Region": "us-west-2"}),
            "redaction mask",
        ),
        (
            json!({"StackName": "Net", "OutputName": "VpcId"}),
            "stack 'Net' has no cdkd state record in us-east-1",
        ),
        (
            json!({"StackName": "Broken", "OutputName": "0"}),
            "is malformed",
        ),
    ] {
        let t = template(
            json!({"Resources": {"Q": resource(json!({"X": {"Fn::GetStackOutput": args}}))}}),
        );
        let (_, out) = run(e.reader(false), "App", &t).await;
        let err = out.unwrap_err().to_string();
        assert!(err.contains(needle), "{err}");
    }
}

#[tokio::test]
async fn get_stack_output_across_accounts_assumes_the_role_once() {
    let e = env().await;
    // moto keys assumed-role credentials to the role's account, so a bucket
    // made under them is invisible to the default account.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let account = format!(
        "{:012}",
        (nanos ^ u128::from(std::process::id())) % 1_000_000_000_000
    );
    let role = format!("arn:aws:iam::{account}:role/cdkd-state-reader");
    let sts = support::sts_client().await;
    let c = sts
        .assume_role()
        .role_arn(&role)
        .role_session_name("test-setup")
        .send()
        .await
        .unwrap()
        .credentials
        .unwrap();
    let creds = aws_sdk_s3::config::Credentials::new(
        c.access_key_id(),
        c.secret_access_key(),
        Some(c.session_token().to_string()),
        None,
        "test",
    );
    let conf = sdk_config().await;
    let producer_s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&conf)
            .credentials_provider(creds)
            .force_path_style(true)
            .build(),
    );
    let bucket = format!("cdkd-state-{account}");
    let _ = producer_s3.create_bucket().bucket(&bucket).send().await;
    put_record(
        &producer_s3,
        &bucket,
        "Platform",
        REGION,
        json!({"VpcId": "vpc-shared", "Subnet": "subnet-1", "Pw": "{{resolve:secretsmanager:pw}}"}),
    )
    .await;
    let site = |out: &str| json!({"Fn::GetStackOutput": {"StackName": "Platform", "OutputName": out, "RoleArn": role}});
    let t = template(json!({"Resources": {
        "A": resource(json!({"V": site("VpcId"), "S": site("Subnet")})),
        "B": resource(json!({"V": site("VpcId")}))
    }}));
    let reader = e.reader(false);
    let (p, out) = run(reader.clone(), "Workload", &t).await;
    let out = out.unwrap();
    assert_eq!(out[0].0, json!({"V": "vpc-shared", "S": "subnet-1"}));
    assert_eq!(out[1].0, json!({"V": "vpc-shared"}));
    // Two distinct requests fetched concurrently shared one AssumeRole.
    assert_eq!(reader.assume_role_calls(), 1);
    assert!(p.lookup.recorded_output_reads().is_empty());
    // The producer's bucket belongs to the role's account, not the
    // consumer's. (moto serves GetObject on any account's bucket to any
    // caller, so it cannot prove the read itself went out under the role.)
    let own = e.s3.list_buckets().send().await.unwrap();
    assert!(own
        .buckets()
        .iter()
        .all(|b| b.name() != Some(bucket.as_str())));

    // A secret expression is refused; so is a computed RoleArn.
    let t = template(json!({"Resources": {"A": resource(json!({"V": site("Pw")}))}}));
    let err = run(reader.clone(), "Workload", &t)
        .await
        .1
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("redacted secret reference") && err.contains(&role),
        "{err}"
    );
    assert_eq!(reader.assume_role_calls(), 1, "cached across stacks");
    let t = template(
        json!({"Resources": {"A": resource(json!({"V": {"Fn::GetStackOutput": {
            "StackName": "Platform", "OutputName": "VpcId",
            "RoleArn": {"Fn::Sub": format!("arn:aws:iam::{account}:role/cdkd-state-reader")}
        }}}))}}),
    );
    let err = run(reader.clone(), "Workload", &t)
        .await
        .1
        .unwrap_err()
        .to_string();
    assert!(err.contains("RoleArn must be a literal"), "{err}");
    let t = template(
        json!({"Resources": {"A": resource(json!({"V": {"Fn::GetStackOutput": {
            "StackName": "Platform", "OutputName": "VpcId", "RoleArn": format!("arn:aws:iam::{account}:user/x")
        }}}))}}),
    );
    let err = run(reader, "Workload", &t).await.1.unwrap_err().to_string();
    assert!(err.contains("not an IAM role ARN"), "{err}");
}

#[tokio::test]
async fn get_azs_asks_ec2_in_the_stacks_region_or_the_named_one() {
    let e = env().await;
    let t = template(json!({"Resources": {"Q": resource(json!({
        "Here": {"Fn::GetAZs": ""},
        "ByRef": {"Fn::Select": [1, {"Fn::GetAZs": {"Ref": "AWS::Region"}}]},
        "Far": {"Fn::GetAZs": "EU-WEST-1"},
        "Count": {"Fn::Length": {"Fn::GetAZs": "eu-west-1"}}
    }))}}));
    let reader = e.reader(false);
    let (p, out) = run(reader.clone(), "Azs", &t).await;
    let (value, secrets) = out.expect("resolves").remove(0);
    assert!(secrets.is_empty());
    // What EC2 itself lists, in name order.
    let ec2 = |region: &'static str| {
        let clients = e.clients.clone();
        async move {
            let mut z: Vec<String> = clients
                .ec2(Some(region))
                .describe_availability_zones()
                .send()
                .await
                .expect("describe")
                .availability_zones()
                .iter()
                .filter_map(|z| z.zone_name().map(String::from))
                .collect();
            z.sort();
            z
        }
    };
    let here = ec2("us-east-1").await;
    let far = ec2("eu-west-1").await;
    assert!(here.len() >= 2 && !far.is_empty());
    assert!(here.iter().all(|z| z.starts_with("us-east-1")));
    assert_eq!(
        value,
        json!({"Here": here, "ByRef": here[1], "Far": far, "Count": far.len()})
    );
    assert!(p.lookup.wanted_availability_zone_regions().is_empty());

    // A region EC2 cannot answer for fails where Fn::GetAZs is used, naming it.
    let t = template(json!({"Resources": {"Q": resource(json!({
        "Bad": {"Fn::GetAZs": "no-such-region-9"}
    }))}}));
    let (_, out) = run(reader, "Azs", &t).await;
    if let Err(err) = out {
        let err = err.to_string();
        assert!(
            err.contains("Fn::GetAZs") && err.contains("Resources.Q.Properties.Bad"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_masked_output_is_bridged_only_within_the_run_that_deployed_it() {
    let e = env().await;
    let producer = unique_name("MaskProducer");
    let export = unique_name("masked-export");
    e.put_record(
        &producer,
        REGION,
        json!({"Token": "***", export.clone(): "***", "Listed": ["a", "***"]}),
    )
    .await;
    let t = template(json!({"Resources": {"Q": resource(json!({
        "Out": {"Fn::GetStackOutput": {"StackName": producer, "OutputName": "Token"}},
        "Imp": {"Fn::Join": ["", ["x-", {"Fn::ImportValue": export}]]},
        "List": {"Fn::GetStackOutput": {"StackName": producer, "OutputName": "Listed"}}
    }))}}));

    // Another run: refused rather than sending *** to AWS.
    let (_, out) = run(e.reader(false), "MaskConsumer", &t).await;
    let err = out.unwrap_err().to_string();
    assert!(
        err.contains("redaction mask '***'") && err.contains("in one run"),
        "{err}"
    );

    // The same run: the plaintext the producer's deploy resolved is handed over.
    let reader = e.reader(false);
    let token = "run-token-plaintext".to_string();
    let plain = serde_json::Map::from_iter([
        ("Token".to_string(), json!(token)),
        (export.clone(), json!(token)),
        ("Listed".to_string(), json!(["a", "b-secret"])),
    ]);
    reader.remember_run_outputs(&producer, REGION, plain.iter());
    // Another stack of the same name in another region is not bridged.
    assert_eq!(reader.run_output(&producer, "eu-west-1", "Token"), None);
    let (p, out) = run(reader.clone(), "MaskConsumer", &t).await;
    let (value, secrets) = out.expect("bridged").remove(0);
    assert_eq!(
        value,
        json!({"Out": token, "Imp": format!("x-{token}"), "List": ["a", "b-secret"]})
    );
    // Mask-only: no expression to persist, the plaintexts go to redaction.
    assert_eq!(secrets.positions().count(), 0);
    let mut plains: Vec<String> = p
        .lookup
        .cross_stack_secrets()
        .plaintexts()
        .map(String::from)
        .collect();
    plains.sort();
    assert_eq!(plains, vec!["b-secret".to_string(), token.clone()]);
    assert_eq!(p.lookup.recorded_output_reads().len(), 2);

    // A run that only knows the mask itself still refuses.
    let reader = e.reader(false);
    let masked = serde_json::Map::from_iter([("Token".to_string(), json!("***"))]);
    reader.remember_run_outputs(&producer, REGION, masked.iter());
    let t = template(json!({"Resources": {"Q": resource(json!({
        "Out": {"Fn::GetStackOutput": {"StackName": producer, "OutputName": "Token"}}
    }))}}));
    let (_, out) = run(reader, "MaskConsumer", &t).await;
    assert!(out.unwrap_err().to_string().contains("redaction mask"));
}

#[tokio::test]
async fn cloudformation_tokens_stay_literal_through_the_post_pass() {
    let e = env().await;
    let conf = sdk_config().await;
    let cfn = aws_sdk_cloudformation::Client::new(&conf);
    let ssm = aws_sdk_ssm::Client::new(&conf);
    // The consumer's own reference to a parameter that exists.
    let own = format!("/{}", unique_name("own"));
    ssm.put_parameter()
        .name(&own)
        .value("own-value")
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .expect("parameter");
    let stack = unique_name("CfnLiteral");
    let export = unique_name("cfn-literal");
    let published = "a,{{resolve:ssm:/published/by/cfn}},{{resolve:bogus:x}}";
    let body = json!({
        "Resources": {"H": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": {"Out": {"Value": published, "Export": {"Name": export}}}
    });
    cfn.create_stack()
        .stack_name(&stack)
        .template_body(body.to_string())
        .send()
        .await
        .expect("create stack");
    let t = template(json!({"Resources": {"Q": resource(json!({
        "Whole": {"Fn::ImportValue": export},
        "Joined": {"Fn::Join": ["|", [{"Fn::ImportValue": export}, format!("{{{{resolve:ssm:{own}}}}}")]]},
        "Split": {"Fn::Select": [1, {"Fn::Split": [",", {"Fn::GetStackOutput": {"StackName": stack, "OutputName": "Out"}}]}]}
    }))}}));
    let (p, out) = run(e.reader(true), "LiteralConsumer", &t).await;
    let (value, secrets) = out.expect("the CloudFormation values are data").remove(0);
    assert_eq!(
        value,
        json!({
            "Whole": published,
            "Joined": format!("{published}|own-value"),
            "Split": "{{resolve:ssm:/published/by/cfn}}"
        })
    );
    assert!(secrets.is_empty());
    assert!(p.lookup.recorded_imports().is_empty());
    let _ = cfn.delete_stack().stack_name(&stack).send().await;
}

#[tokio::test]
async fn ssm_references_read_a_version_or_a_label() {
    let e = env().await;
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    let name = format!("/{}", unique_name("versioned"));
    for v in ["first", "second"] {
        ssm.put_parameter()
            .name(&name)
            .value(v)
            .r#type(aws_sdk_ssm::types::ParameterType::String)
            .overwrite(true)
            .send()
            .await
            .expect("put");
    }
    ssm.label_parameter_version()
        .name(&name)
        .parameter_version(1)
        .labels("golden")
        .send()
        .await
        .expect("label");
    let t = template(json!({"Resources": {"Q": resource(json!({
        "Latest": format!("{{{{resolve:ssm:{name}}}}}"),
        "V1": format!("{{{{resolve:ssm:{name}:1}}}}"),
        "V2": format!("{{{{resolve:ssm:{name}:2}}}}"),
        "Label": format!("{{{{resolve:ssm:{name}:golden}}}}")
    }))}}));
    let (_, out) = run(e.reader(false), "Versions", &t).await;
    assert_eq!(
        out.expect("resolves")[0].0,
        json!({"Latest": "second", "V1": "first", "V2": "second", "Label": "first"})
    );
    let t = template(json!({"Resources": {"Q": resource(json!({
        "Missing": format!("{{{{resolve:ssm:{name}:nolabel}}}}")
    }))}}));
    let (_, out) = run(e.reader(false), "Versions", &t).await;
    let err = out.unwrap_err().to_string();
    assert!(err.contains("Resources.Q.Properties.Missing"), "{err}");
}
