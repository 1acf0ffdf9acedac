//! The CloudWatch Logs SDK provider (`AWS::Logs::LogGroup`) against the emulator, checked
//! through the Logs API itself.
//!
//! moto 5.2.5 has no AssociateKmsKey / DisassociateKmsKey, data protection, index policy,
//! deletion protection or bearer-token APIs and does not report a log group class, so those
//! paths are not exercised here (a KMS key given at creation is).
//!
//! Run: `eval "$(./scripts/emulator start)" && cargo test --test provider_logs`.

use crate::support;

use std::sync::Arc;

use aws_sdk_cloudwatchlogs::types::LogGroup;
use cdkd::aws::{ClientOptions, Clients};
use cdkd::provider::{Provider, ProviderContext, ResourceRequest, UpdateOutcome};
use serde_json::{json, Map, Value};

const LOG_GROUP: &str = "AWS::Logs::LogGroup";

struct Env {
    clients: Clients,
    stack: String,
    logs: aws_sdk_cloudwatchlogs::Client,
}

impl Env {
    async fn new() -> Self {
        let sdk = support::sdk_config().await;
        Env {
            clients: Clients::load(&ClientOptions::default()).await,
            stack: support::unique_name("LogsStack"),
            logs: aws_sdk_cloudwatchlogs::Client::new(&sdk),
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

    async fn group(&self, name: &str) -> Option<LogGroup> {
        self.logs
            .describe_log_groups()
            .log_group_name_prefix(name)
            .send()
            .await
            .expect("DescribeLogGroups")
            .log_groups
            .unwrap_or_default()
            .into_iter()
            .find(|g| g.log_group_name() == Some(name))
    }

    async fn tags(&self, arn: &str) -> Vec<(String, String)> {
        let mut tags: Vec<(String, String)> = self
            .logs
            .list_tags_for_resource()
            .resource_arn(arn)
            .send()
            .await
            .expect("ListTagsForResource")
            .tags
            .unwrap_or_default()
            .into_iter()
            .collect();
        tags.sort();
        tags
    }
}

fn provider() -> Arc<dyn Provider> {
    cdkd::provider::sdk::all()
        .into_iter()
        .find(|p| p.resource_types().contains(&LOG_GROUP))
        .expect("a log group provider")
}

fn req<'a>(logical_id: &'a str, props: &'a Map<String, Value>) -> ResourceRequest<'a> {
    ResourceRequest {
        logical_id,
        resource_type: LOG_GROUP,
        properties: props,
        client_token: None,
    }
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

#[tokio::test]
async fn log_group_create_read_update_replace_delete() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider();
    let name = format!("/cdkd/{}", support::unique_name("group"));
    let key = "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555";
    let props = obj(json!({
        "LogGroupName": name,
        "RetentionInDays": 7,
        "KmsKeyId": key,
        "Tags": [{"Key": "team", "Value": "a"}, {"Key": "drop", "Value": "me"}]
    }));
    let r = req("Group", &props);
    let created = p.create(&ctx, &r).await.expect("create");

    // Ref is the name; GetAtt Arn is the service's ARN in its `:*` form.
    let group = env.group(&name).await.expect("created");
    assert_eq!(created.physical_id, name);
    assert_eq!(
        p.ref_value(LOG_GROUP, &created.physical_id, &created.attributes),
        json!(name)
    );
    let arn = group.arn().expect("arn");
    assert!(arn.ends_with(":*"), "{arn}");
    assert_eq!(created.attributes["Arn"], json!(arn));
    assert_eq!(
        created.attributes["Arn"],
        json!(format!(
            "arn:aws:logs:us-east-1:123456789012:log-group:{name}:*"
        ))
    );
    assert_eq!(group.retention_in_days(), Some(7));
    assert_eq!(group.kms_key_id(), Some(key));
    let bare = arn.trim_end_matches(":*");
    assert_eq!(
        env.tags(bare).await,
        [("drop".into(), "me".into()), ("team".into(), "a".into())]
    );

    let read = p
        .read(&ctx, &r, &name)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["LogGroupName"], json!(name));
    assert_eq!(read["RetentionInDays"], json!(7));
    assert_eq!(read["KmsKeyId"], json!(key));
    assert_eq!(
        read["Tags"],
        json!([{"Key": "drop", "Value": "me"}, {"Key": "team", "Value": "a"}])
    );
    assert_eq!(p.import(&ctx, &r, &name).await.expect("import"), created);

    // In place: retention changes, tags change.
    let props2 = obj(json!({
        "LogGroupName": name,
        "RetentionInDays": 30,
        "KmsKeyId": key,
        "Tags": [{"Key": "team", "Value": "b"}, {"Key": "new", "Value": "1"}]
    }));
    let outcome = p
        .update(&ctx, &req("Group", &props2), &name, &props)
        .await
        .expect("update");
    assert_eq!(outcome, UpdateOutcome::Updated(created.clone()));
    assert_eq!(
        env.group(&name).await.expect("exists").retention_in_days(),
        Some(30)
    );
    assert_eq!(
        env.tags(bare).await,
        [("new".into(), "1".into()), ("team".into(), "b".into())]
    );

    // Retention removed: never expire.
    let mut props3 = props2.clone();
    props3.remove("RetentionInDays");
    let outcome = p
        .update(&ctx, &req("Group", &props3), &name, &props2)
        .await
        .expect("update");
    assert!(matches!(outcome, UpdateOutcome::Updated(_)));
    assert_eq!(
        env.group(&name).await.expect("exists").retention_in_days(),
        None
    );

    // A new name or class replaces; naming the default class is no change.
    for (prop, value) in [
        ("LogGroupName", json!(format!("{name}-2"))),
        ("LogGroupClass", json!("INFREQUENT_ACCESS")),
    ] {
        let mut replaced = props3.clone();
        replaced.insert(prop.into(), value);
        let outcome = p
            .update(&ctx, &req("Group", &replaced), &name, &props3)
            .await
            .expect("update");
        assert!(
            matches!(outcome, UpdateOutcome::NeedsReplacement { .. }),
            "{prop}: {outcome:?}"
        );
    }
    let mut standard = props3.clone();
    standard.insert("LogGroupClass".into(), json!("STANDARD"));
    let outcome = p
        .update(&ctx, &req("Group", &standard), &name, &props3)
        .await
        .expect("update");
    assert!(matches!(outcome, UpdateOutcome::Updated(_)), "{outcome:?}");

    p.delete(&ctx, &r, &name).await.expect("delete");
    assert!(env.group(&name).await.is_none());
    p.delete(&ctx, &r, &name).await.expect("delete again");
    assert_eq!(p.read(&ctx, &r, &name).await.expect("read"), None);
}

#[tokio::test]
async fn log_group_name_is_generated_when_absent() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider();
    let props = obj(json!({}));
    let r = req("AppLogs", &props);
    let created = p.create(&ctx, &r).await.expect("create");
    assert!(
        created
            .physical_id
            .starts_with(&format!("{}-AppLogs-", env.stack)),
        "{}",
        created.physical_id
    );
    let group = env.group(&created.physical_id).await.expect("created");
    assert_eq!(created.attributes["Arn"], json!(group.arn().expect("arn")));
    assert_eq!(group.retention_in_days(), None);

    let err = p
        .create(
            &ctx,
            &req("Again", &obj(json!({"LogGroupName": created.physical_id}))),
        )
        .await
        .expect_err("exists");
    let msg = err.to_string();
    assert!(
        msg.starts_with("Again (AWS::Logs::LogGroup): logs CreateLogGroup on "),
        "{msg}"
    );
    p.delete(&ctx, &r, &created.physical_id)
        .await
        .expect("delete");
}
