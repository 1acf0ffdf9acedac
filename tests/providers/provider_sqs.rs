//! The SQS SDK provider (`AWS::SQS::Queue`, `AWS::SQS::QueuePolicy`) against the emulator,
//! checked through the SQS API itself.
//!
//! moto quirk worked around here: any SetQueueAttributes call that does not name `Policy`
//! clears the queue's policy, so the policy test never changes other attributes afterwards.
//!
//! Run: `eval "$(./scripts/emulator start)" && cargo test --test provider_sqs`.

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;

use aws_sdk_sqs::types::QueueAttributeName;
use cdkd::aws::{ClientOptions, Clients};
use cdkd::provider::{Provider, ProviderContext, ResourceRequest, UpdateOutcome};
use serde_json::{json, Map, Value};

const QUEUE: &str = "AWS::SQS::Queue";
const QUEUE_POLICY: &str = "AWS::SQS::QueuePolicy";

struct Env {
    clients: Clients,
    stack: String,
    sqs: aws_sdk_sqs::Client,
}

impl Env {
    async fn new() -> Self {
        let sdk = support::sdk_config().await;
        Env {
            clients: Clients::load(&ClientOptions::default()).await,
            stack: support::unique_name("SqsStack"),
            sqs: aws_sdk_sqs::Client::new(&sdk),
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

    async fn attributes(&self, url: &str) -> HashMap<QueueAttributeName, String> {
        self.sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await
            .expect("GetQueueAttributes")
            .attributes
            .unwrap_or_default()
    }

    async fn tags(&self, url: &str) -> Vec<(String, String)> {
        let mut tags: Vec<(String, String)> = self
            .sqs
            .list_queue_tags()
            .queue_url(url)
            .send()
            .await
            .expect("ListQueueTags")
            .tags
            .unwrap_or_default()
            .into_iter()
            .collect();
        tags.sort();
        tags
    }

    async fn exists(&self, url: &str) -> bool {
        let name = url.rsplit('/').next().expect("queue name");
        self.sqs
            .get_queue_url()
            .queue_name(name)
            .send()
            .await
            .is_ok()
    }
}

fn provider(resource_type: &str) -> Arc<dyn Provider> {
    cdkd::provider::sdk::all()
        .into_iter()
        .find(|p| p.resource_types().contains(&resource_type))
        .expect("an SQS provider")
}

fn req<'a>(
    logical_id: &'a str,
    resource_type: &'a str,
    props: &'a Map<String, Value>,
) -> ResourceRequest<'a> {
    ResourceRequest {
        logical_id,
        resource_type,
        properties: props,
        client_token: None,
    }
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

fn attr(attrs: &HashMap<QueueAttributeName, String>, name: QueueAttributeName) -> Option<&str> {
    attrs.get(&name).map(String::as_str)
}

#[tokio::test]
async fn queue_create_read_update_replace_delete() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(QUEUE);

    // A dead-letter queue first, with a generated name.
    let dlq_props = obj(json!({}));
    let dlq = p
        .create(&ctx, &req("Dlq", QUEUE, &dlq_props))
        .await
        .expect("create DLQ");
    let dlq_name = dlq.attributes["QueueName"]
        .as_str()
        .expect("name")
        .to_owned();
    assert!(
        dlq_name.starts_with(&format!("{}-Dlq-", env.stack)),
        "{dlq_name}"
    );
    let dlq_arn = dlq.attributes["Arn"].clone();

    let name = support::unique_name("cdkd-queue");
    let props = obj(json!({
        "QueueName": name,
        "VisibilityTimeout": 45,
        "MessageRetentionPeriod": "3600",
        "RedrivePolicy": {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3},
        "Tags": [{"Key": "team", "Value": "a"}, {"Key": "drop", "Value": "me"}]
    }));
    let r = req("Queue", QUEUE, &props);
    let created = p.create(&ctx, &r).await.expect("create");

    // Ref, physical id and every GetAtt against the service's own answers.
    let url = env
        .sqs
        .get_queue_url()
        .queue_name(&name)
        .send()
        .await
        .expect("GetQueueUrl")
        .queue_url
        .expect("url");
    assert_eq!(created.physical_id, url);
    assert_eq!(
        p.ref_value(QUEUE, &created.physical_id, &created.attributes),
        json!(url)
    );
    let attrs = env.attributes(&url).await;
    assert_eq!(
        created.attributes["Arn"],
        json!(attr(&attrs, QueueAttributeName::QueueArn).expect("arn"))
    );
    assert_eq!(created.attributes["QueueName"], json!(name));
    assert_eq!(created.attributes["QueueUrl"], json!(url));
    assert_eq!(
        attr(&attrs, QueueAttributeName::VisibilityTimeout),
        Some("45")
    );
    assert_eq!(
        attr(&attrs, QueueAttributeName::MessageRetentionPeriod),
        Some("3600")
    );
    assert_eq!(
        env.tags(&url).await,
        [("drop".into(), "me".into()), ("team".into(), "a".into())]
    );

    let read = p.read(&ctx, &r, &url).await.expect("read").expect("exists");
    assert_eq!(read["QueueName"], json!(name));
    assert_eq!(read["VisibilityTimeout"], json!(45));
    assert_eq!(
        read["RedrivePolicy"],
        json!({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3})
    );
    assert_eq!(
        read["Tags"],
        json!([{"Key": "drop", "Value": "me"}, {"Key": "team", "Value": "a"}])
    );

    let imported = p.import(&ctx, &r, &url).await.expect("import by URL");
    assert_eq!(imported, created);
    let by_name = p.import(&ctx, &r, &name).await.expect("import by name");
    assert_eq!(by_name.physical_id, url);

    // In place: attributes change, the redrive policy goes, tags are set and removed.
    let updated_props = obj(json!({
        "QueueName": name,
        "VisibilityTimeout": 60,
        "DelaySeconds": 5,
        "Tags": [{"Key": "team", "Value": "b"}, {"Key": "new", "Value": "1"}]
    }));
    let outcome = p
        .update(&ctx, &req("Queue", QUEUE, &updated_props), &url, &props)
        .await
        .expect("update");
    let UpdateOutcome::Updated(updated) = outcome else {
        panic!("expected an in-place update, got {outcome:?}")
    };
    assert_eq!(updated, created);
    let attrs = env.attributes(&url).await;
    assert_eq!(
        attr(&attrs, QueueAttributeName::VisibilityTimeout),
        Some("60")
    );
    assert_eq!(attr(&attrs, QueueAttributeName::DelaySeconds), Some("5"));
    assert_eq!(
        attr(&attrs, QueueAttributeName::MessageRetentionPeriod),
        Some("345600"),
        "removed: back to the default"
    );
    assert_eq!(
        attr(&attrs, QueueAttributeName::RedrivePolicy).unwrap_or(""),
        ""
    );
    assert_eq!(
        env.tags(&url).await,
        [("new".into(), "1".into()), ("team".into(), "b".into())]
    );

    // Create-only properties replace.
    for (prop, value) in [
        ("QueueName", json!(format!("{name}-2"))),
        ("FifoQueue", json!(true)),
    ] {
        let mut replaced = updated_props.clone();
        replaced.insert(prop.into(), value);
        let outcome = p
            .update(&ctx, &req("Queue", QUEUE, &replaced), &url, &updated_props)
            .await
            .expect("update");
        assert!(
            matches!(outcome, UpdateOutcome::NeedsReplacement { .. }),
            "{prop}: {outcome:?}"
        );
    }
    // FifoQueue false is the same queue type as no FifoQueue.
    let mut same = updated_props.clone();
    same.insert("FifoQueue".into(), json!(false));
    let outcome = p
        .update(&ctx, &req("Queue", QUEUE, &same), &url, &updated_props)
        .await
        .expect("update");
    assert!(matches!(outcome, UpdateOutcome::Updated(_)), "{outcome:?}");

    p.delete(&ctx, &r, &url).await.expect("delete");
    assert!(!env.exists(&url).await);
    p.delete(&ctx, &r, &url).await.expect("delete again");
    assert_eq!(p.read(&ctx, &r, &url).await.expect("read"), None);
    p.delete(&ctx, &req("Dlq", QUEUE, &dlq_props), &dlq.physical_id)
        .await
        .expect("delete DLQ");
}

#[tokio::test]
async fn fifo_queue_gets_a_fifo_name_and_updates_in_place() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(QUEUE);
    let props = obj(json!({"FifoQueue": "true", "ContentBasedDeduplication": true}));
    let r = req("Orders", QUEUE, &props);
    let created = p.create(&ctx, &r).await.expect("create");
    let name = created.attributes["QueueName"]
        .as_str()
        .expect("name")
        .to_owned();
    assert!(
        name.ends_with(".fifo") && name.starts_with(&format!("{}-Orders-", env.stack)),
        "{name}"
    );
    assert!(name.len() <= 80);
    let attrs = env.attributes(&created.physical_id).await;
    assert_eq!(attr(&attrs, QueueAttributeName::FifoQueue), Some("true"));
    assert_eq!(
        attr(&attrs, QueueAttributeName::ContentBasedDeduplication),
        Some("true")
    );

    let read = p
        .read(&ctx, &r, &created.physical_id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["FifoQueue"], json!(true));
    assert_eq!(read["ContentBasedDeduplication"], json!(true));

    let new_props = obj(json!({"FifoQueue": true}));
    let outcome = p
        .update(
            &ctx,
            &req("Orders", QUEUE, &new_props),
            &created.physical_id,
            &props,
        )
        .await
        .expect("update");
    assert!(matches!(outcome, UpdateOutcome::Updated(_)), "{outcome:?}");
    let attrs = env.attributes(&created.physical_id).await;
    assert_eq!(
        attr(&attrs, QueueAttributeName::ContentBasedDeduplication),
        Some("false")
    );

    let mut standard = new_props.clone();
    standard.remove("FifoQueue");
    let outcome = p
        .update(
            &ctx,
            &req("Orders", QUEUE, &standard),
            &created.physical_id,
            &new_props,
        )
        .await
        .expect("update");
    assert!(
        matches!(outcome, UpdateOutcome::NeedsReplacement { .. }),
        "{outcome:?}"
    );

    p.delete(&ctx, &r, &created.physical_id)
        .await
        .expect("delete");
    p.delete(&ctx, &r, &created.physical_id)
        .await
        .expect("delete again");
}

#[tokio::test]
async fn queue_errors_name_the_resource() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let props = obj(json!({"QueueName": "bad name!"}));
    let err = provider(QUEUE)
        .create(&ctx, &req("BadQueue", QUEUE, &props))
        .await
        .expect_err("invalid name");
    let msg = err.to_string();
    assert!(
        msg.starts_with("BadQueue (AWS::SQS::Queue): sqs CreateQueue on bad name! failed:"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
}

fn policy_document(queue_arn: &str, action: &str) -> Value {
    json!({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": "123456789012"}, "Action": action, "Resource": queue_arn}]
    })
}

#[tokio::test]
async fn queue_policy_sets_moves_and_clears_policies() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let queues = provider(QUEUE);
    let p = provider(QUEUE_POLICY);
    let empty = obj(json!({}));
    let q1 = queues
        .create(&ctx, &req("Q1", QUEUE, &empty))
        .await
        .expect("create q1");
    let q2 = queues
        .create(&ctx, &req("Q2", QUEUE, &empty))
        .await
        .expect("create q2");
    let arn1 = q1.attributes["Arn"].as_str().expect("arn").to_owned();

    let doc = policy_document(&arn1, "sqs:SendMessage");
    let props = obj(json!({"PolicyDocument": doc, "Queues": [q1.physical_id]}));
    let r = req("Policy", QUEUE_POLICY, &props);
    let created = p.create(&ctx, &r).await.expect("create policy");
    assert!(
        created
            .physical_id
            .starts_with(&format!("{}-Policy-", env.stack)),
        "{}",
        created.physical_id
    );
    assert_eq!(created.attributes["Id"], json!(created.physical_id));
    assert_eq!(
        p.ref_value(QUEUE_POLICY, &created.physical_id, &created.attributes),
        json!(created.physical_id)
    );
    let policy = |attrs: &HashMap<QueueAttributeName, String>| {
        attr(attrs, QueueAttributeName::Policy)
            .map(|p| serde_json::from_str::<Value>(p).expect("policy JSON"))
    };
    assert_eq!(
        policy(&env.attributes(&q1.physical_id).await),
        Some(doc.clone())
    );

    let read = p
        .read(&ctx, &r, &created.physical_id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["PolicyDocument"], doc);
    assert_eq!(read["Queues"], json!([q1.physical_id]));

    // In place: a new document, moved from q1 to q2.
    let doc2 = policy_document(&arn1, "sqs:ReceiveMessage");
    let props2 = obj(json!({"PolicyDocument": doc2, "Queues": [q2.physical_id]}));
    let r2 = req("Policy", QUEUE_POLICY, &props2);
    let outcome = p
        .update(&ctx, &r2, &created.physical_id, &props)
        .await
        .expect("update");
    assert_eq!(
        outcome,
        UpdateOutcome::Updated(created.clone()),
        "QueuePolicy has no create-only property"
    );
    assert_eq!(policy(&env.attributes(&q1.physical_id).await), None);
    assert_eq!(
        policy(&env.attributes(&q2.physical_id).await),
        Some(doc2.clone())
    );
    assert_eq!(
        p.import(&ctx, &r2, &created.physical_id)
            .await
            .expect("import"),
        created
    );

    p.delete(&ctx, &r2, &created.physical_id)
        .await
        .expect("delete");
    assert_eq!(policy(&env.attributes(&q2.physical_id).await), None);
    p.delete(&ctx, &r2, &created.physical_id)
        .await
        .expect("delete again");
    assert_eq!(
        p.read(&ctx, &r2, &created.physical_id).await.expect("read"),
        None
    );

    // Deleting the policy after its queue is gone still succeeds.
    queues
        .delete(&ctx, &req("Q2", QUEUE, &empty), &q2.physical_id)
        .await
        .expect("delete q2");
    p.delete(&ctx, &r2, &created.physical_id)
        .await
        .expect("delete with the queue gone");
    queues
        .delete(&ctx, &req("Q1", QUEUE, &empty), &q1.physical_id)
        .await
        .expect("delete q1");
}
