//! The SNS SDK provider (`AWS::SNS::Topic`, `AWS::SNS::Subscription`, `AWS::SNS::TopicPolicy`)
//! against the emulator, checked through the SNS API itself.
//!
//! Run: `eval "$(./scripts/emulator start)" && cargo test --test provider_sns`.

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;

use cdkd::aws::{ClientOptions, Clients};
use cdkd::provider::{Provider, ProviderContext, ResourceRequest, UpdateOutcome};
use serde_json::{json, Map, Value};

const TOPIC: &str = "AWS::SNS::Topic";
const SUBSCRIPTION: &str = "AWS::SNS::Subscription";
const TOPIC_POLICY: &str = "AWS::SNS::TopicPolicy";

struct Env {
    clients: Clients,
    stack: String,
    sns: aws_sdk_sns::Client,
    sqs: aws_sdk_sqs::Client,
}

impl Env {
    async fn new() -> Self {
        let sdk = support::sdk_config().await;
        Env {
            clients: Clients::load(&ClientOptions::default()).await,
            stack: support::unique_name("SnsStack"),
            sns: aws_sdk_sns::Client::new(&sdk),
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

    async fn topic_attributes(&self, arn: &str) -> HashMap<String, String> {
        self.sns
            .get_topic_attributes()
            .topic_arn(arn)
            .send()
            .await
            .expect("GetTopicAttributes")
            .attributes
            .unwrap_or_default()
    }

    async fn topic_exists(&self, arn: &str) -> bool {
        self.sns
            .get_topic_attributes()
            .topic_arn(arn)
            .send()
            .await
            .is_ok()
    }

    async fn subscription_attributes(&self, arn: &str) -> Option<HashMap<String, String>> {
        self.sns
            .get_subscription_attributes()
            .subscription_arn(arn)
            .send()
            .await
            .ok()
            .map(|o| o.attributes.unwrap_or_default())
    }

    /// (protocol, endpoint, ARN) of each subscription, sorted.
    async fn subscriptions(&self, topic: &str) -> Vec<(String, String, String)> {
        let out = self
            .sns
            .list_subscriptions_by_topic()
            .topic_arn(topic)
            .send()
            .await
            .expect("ListSubscriptionsByTopic");
        let mut subs: Vec<_> = out
            .subscriptions()
            .iter()
            .map(|s| {
                (
                    s.protocol().unwrap_or_default().to_owned(),
                    s.endpoint().unwrap_or_default().to_owned(),
                    s.subscription_arn().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        subs.sort();
        subs
    }

    async fn tags(&self, arn: &str) -> Vec<(String, String)> {
        let out = self
            .sns
            .list_tags_for_resource()
            .resource_arn(arn)
            .send()
            .await
            .expect("ListTagsForResource");
        let mut tags: Vec<_> = out
            .tags()
            .iter()
            .map(|t| (t.key().to_owned(), t.value().to_owned()))
            .collect();
        tags.sort();
        tags
    }

    /// A queue to subscribe, by ARN.
    async fn queue_arn(&self, prefix: &str) -> String {
        let url = self
            .sqs
            .create_queue()
            .queue_name(support::unique_name(prefix))
            .send()
            .await
            .expect("CreateQueue")
            .queue_url
            .expect("url");
        self.sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
            .send()
            .await
            .expect("GetQueueAttributes")
            .attributes
            .unwrap_or_default()
            .remove(&aws_sdk_sqs::types::QueueAttributeName::QueueArn)
            .expect("QueueArn")
    }
}

fn provider(resource_type: &str) -> Arc<dyn Provider> {
    cdkd::provider::sdk::all()
        .into_iter()
        .find(|p| p.resource_types().contains(&resource_type))
        .expect("an SNS provider")
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

fn parse(s: &str) -> Value {
    serde_json::from_str(s).expect("JSON")
}

#[tokio::test]
async fn topic_create_read_update_replace_delete() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(TOPIC);
    let q1 = env.queue_arn("sns-topic-q1").await;
    let q2 = env.queue_arn("sns-topic-q2").await;

    let name = support::unique_name("cdkd-topic");
    let props = obj(json!({
        "TopicName": name,
        "DisplayName": "First",
        "Subscription": [{"Protocol": "sqs", "Endpoint": q1}],
        "Tags": [{"Key": "team", "Value": "a"}, {"Key": "drop", "Value": "me"}]
    }));
    let r = req("Topic", TOPIC, &props);
    let created = p.create(&ctx, &r).await.expect("create");

    let attrs = env.topic_attributes(&created.physical_id).await;
    let arn = attrs.get("TopicArn").cloned().expect("TopicArn");
    assert_eq!(created.physical_id, arn);
    assert!(arn.ends_with(&format!(":{name}")), "{arn}");
    assert_eq!(
        p.ref_value(TOPIC, &created.physical_id, &created.attributes),
        json!(arn)
    );
    assert_eq!(created.attributes["TopicArn"], json!(arn));
    assert_eq!(created.attributes["TopicName"], json!(name));
    assert_eq!(attrs.get("DisplayName").map(String::as_str), Some("First"));
    let subs = env.subscriptions(&arn).await;
    assert_eq!(
        subs.iter()
            .map(|s| (s.0.as_str(), s.1.as_str()))
            .collect::<Vec<_>>(),
        [("sqs", q1.as_str())]
    );
    assert_eq!(
        env.tags(&arn).await,
        [("drop".into(), "me".into()), ("team".into(), "a".into())]
    );

    let read = p.read(&ctx, &r, &arn).await.expect("read").expect("exists");
    assert_eq!(read["TopicName"], json!(name));
    assert_eq!(read["DisplayName"], json!("First"));
    assert_eq!(
        read["Subscription"],
        json!([{"Endpoint": q1, "Protocol": "sqs"}])
    );
    assert_eq!(
        read["Tags"],
        json!([{"Key": "drop", "Value": "me"}, {"Key": "team", "Value": "a"}])
    );
    assert_eq!(p.import(&ctx, &r, &arn).await.expect("import"), created);

    // In place: display name, the inline subscription moves to q2, tags.
    let props2 = obj(json!({
        "TopicName": name,
        "DisplayName": "Second",
        "Subscription": [{"Protocol": "sqs", "Endpoint": q2}],
        "Tags": [{"Key": "team", "Value": "b"}]
    }));
    let outcome = p
        .update(&ctx, &req("Topic", TOPIC, &props2), &arn, &props)
        .await
        .expect("update");
    assert_eq!(outcome, UpdateOutcome::Updated(created.clone()));
    let attrs = env.topic_attributes(&arn).await;
    assert_eq!(attrs.get("DisplayName").map(String::as_str), Some("Second"));
    let subs = env.subscriptions(&arn).await;
    assert_eq!(
        subs.iter()
            .map(|s| (s.0.as_str(), s.1.as_str()))
            .collect::<Vec<_>>(),
        [("sqs", q2.as_str())]
    );
    assert_eq!(env.tags(&arn).await, [("team".into(), "b".into())]);

    // Removing DisplayName clears it.
    let mut props3 = props2.clone();
    props3.remove("DisplayName");
    let outcome = p
        .update(&ctx, &req("Topic", TOPIC, &props3), &arn, &props2)
        .await
        .expect("update");
    assert!(matches!(outcome, UpdateOutcome::Updated(_)));
    assert_eq!(
        env.topic_attributes(&arn)
            .await
            .get("DisplayName")
            .map(String::as_str)
            .unwrap_or(""),
        ""
    );

    for (prop, value) in [
        ("TopicName", json!(format!("{name}-2"))),
        ("FifoTopic", json!(true)),
    ] {
        let mut replaced = props3.clone();
        replaced.insert(prop.into(), value);
        let outcome = p
            .update(&ctx, &req("Topic", TOPIC, &replaced), &arn, &props3)
            .await
            .expect("update");
        assert!(
            matches!(outcome, UpdateOutcome::NeedsReplacement { .. }),
            "{prop}: {outcome:?}"
        );
    }

    p.delete(&ctx, &r, &arn).await.expect("delete");
    assert!(!env.topic_exists(&arn).await);
    p.delete(&ctx, &r, &arn).await.expect("delete again");
    assert_eq!(p.read(&ctx, &r, &arn).await.expect("read"), None);
}

#[tokio::test]
async fn fifo_topic_gets_a_generated_fifo_name() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(TOPIC);
    let props = obj(json!({"FifoTopic": true, "ContentBasedDeduplication": true}));
    let r = req("Events", TOPIC, &props);
    let created = p.create(&ctx, &r).await.expect("create");
    let name = created.attributes["TopicName"]
        .as_str()
        .expect("name")
        .to_owned();
    assert!(
        name.starts_with(&format!("{}-Events-", env.stack)) && name.ends_with(".fifo"),
        "{name}"
    );
    let attrs = env.topic_attributes(&created.physical_id).await;
    assert_eq!(attrs.get("FifoTopic").map(String::as_str), Some("true"));
    assert_eq!(
        attrs.get("ContentBasedDeduplication").map(String::as_str),
        Some("true")
    );

    let props2 = obj(json!({"FifoTopic": true, "ContentBasedDeduplication": false}));
    let outcome = p
        .update(
            &ctx,
            &req("Events", TOPIC, &props2),
            &created.physical_id,
            &props,
        )
        .await
        .expect("update");
    assert!(matches!(outcome, UpdateOutcome::Updated(_)));
    let attrs = env.topic_attributes(&created.physical_id).await;
    assert_eq!(
        attrs.get("ContentBasedDeduplication").map(String::as_str),
        Some("false")
    );
    p.delete(&ctx, &r, &created.physical_id)
        .await
        .expect("delete");
}

#[tokio::test]
async fn subscription_create_read_update_replace_delete() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let topics = provider(TOPIC);
    let p = provider(SUBSCRIPTION);
    let empty = obj(json!({}));
    let topic = topics
        .create(&ctx, &req("Topic", TOPIC, &empty))
        .await
        .expect("create topic");
    let topic_arn = topic.physical_id.clone();
    let queue = env.queue_arn("sns-sub").await;

    let filter = json!({"color": ["red"]});
    let props = obj(json!({
        "TopicArn": topic_arn,
        "Protocol": "sqs",
        "Endpoint": queue,
        "RawMessageDelivery": "true",
        "FilterPolicy": filter
    }));
    let r = req("Sub", SUBSCRIPTION, &props);
    let created = p.create(&ctx, &r).await.expect("create");

    let subs = env.subscriptions(&topic_arn).await;
    assert_eq!(subs.len(), 1);
    assert_eq!(created.physical_id, subs[0].2);
    assert_eq!(created.attributes["Arn"], json!(subs[0].2));
    assert_eq!(
        p.ref_value(SUBSCRIPTION, &created.physical_id, &created.attributes),
        json!(subs[0].2)
    );
    let attrs = env
        .subscription_attributes(&created.physical_id)
        .await
        .expect("exists");
    assert_eq!(
        attrs.get("RawMessageDelivery").map(String::as_str),
        Some("true")
    );
    assert_eq!(
        attrs.get("FilterPolicy").map(|s| parse(s)),
        Some(filter.clone())
    );

    let read = p
        .read(&ctx, &r, &created.physical_id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["TopicArn"], json!(topic_arn));
    assert_eq!(read["Protocol"], json!("sqs"));
    assert_eq!(read["Endpoint"], json!(queue));
    assert_eq!(read["RawMessageDelivery"], json!(true));
    assert_eq!(read["FilterPolicy"], filter);
    assert_eq!(
        p.import(&ctx, &r, &created.physical_id)
            .await
            .expect("import"),
        created
    );

    // In place.
    let filter2 = json!({"color": ["blue", "green"]});
    let props2 = obj(json!({
        "TopicArn": topic_arn,
        "Protocol": "sqs",
        "Endpoint": queue,
        "RawMessageDelivery": false,
        "FilterPolicy": filter2
    }));
    let outcome = p
        .update(
            &ctx,
            &req("Sub", SUBSCRIPTION, &props2),
            &created.physical_id,
            &props,
        )
        .await
        .expect("update");
    assert_eq!(outcome, UpdateOutcome::Updated(created.clone()));
    let attrs = env
        .subscription_attributes(&created.physical_id)
        .await
        .expect("exists");
    assert_eq!(
        attrs.get("RawMessageDelivery").map(String::as_str),
        Some("false")
    );
    assert_eq!(attrs.get("FilterPolicy").map(|s| parse(s)), Some(filter2));

    // Topic, protocol, endpoint and the region replace.
    let other_queue = env.queue_arn("sns-sub-2").await;
    for (prop, value) in [
        ("Endpoint", json!(other_queue)),
        ("Protocol", json!("lambda")),
        ("TopicArn", json!(format!("{topic_arn}-other"))),
        ("Region", json!("eu-west-1")),
    ] {
        let mut replaced = props2.clone();
        replaced.insert(prop.into(), value);
        let outcome = p
            .update(
                &ctx,
                &req("Sub", SUBSCRIPTION, &replaced),
                &created.physical_id,
                &props2,
            )
            .await
            .expect("update");
        assert!(
            matches!(outcome, UpdateOutcome::NeedsReplacement { .. }),
            "{prop}: {outcome:?}"
        );
    }
    // Naming the topic's own region is no move.
    let mut same_region = props2.clone();
    same_region.insert("Region".into(), json!("us-east-1"));
    let outcome = p
        .update(
            &ctx,
            &req("Sub", SUBSCRIPTION, &same_region),
            &created.physical_id,
            &props2,
        )
        .await
        .expect("update");
    assert!(matches!(outcome, UpdateOutcome::Updated(_)), "{outcome:?}");

    p.delete(&ctx, &r, &created.physical_id)
        .await
        .expect("delete");
    assert!(env.subscriptions(&topic_arn).await.is_empty());
    p.delete(&ctx, &r, &created.physical_id)
        .await
        .expect("delete again");
    assert_eq!(
        p.read(&ctx, &r, &created.physical_id).await.expect("read"),
        None
    );
    topics
        .delete(&ctx, &req("Topic", TOPIC, &empty), &topic_arn)
        .await
        .expect("delete topic");
}

fn topic_policy(topic: &str, action: &str) -> Value {
    json!({
        "Version": "2012-10-17",
        "Statement": [{"Sid": "s", "Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"}, "Action": action, "Resource": topic}]
    })
}

#[tokio::test]
async fn topic_policy_sets_moves_and_restores_the_default() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let topics = provider(TOPIC);
    let p = provider(TOPIC_POLICY);
    let empty = obj(json!({}));
    let t1 = topics
        .create(&ctx, &req("T1", TOPIC, &empty))
        .await
        .expect("create t1")
        .physical_id;
    let t2 = topics
        .create(&ctx, &req("T2", TOPIC, &empty))
        .await
        .expect("create t2")
        .physical_id;
    let default1 = parse(&env.topic_attributes(&t1).await["Policy"]);

    let doc = topic_policy(&t1, "sns:Publish");
    let props = obj(json!({"PolicyDocument": doc, "Topics": [t1]}));
    let r = req("TopicPolicy", TOPIC_POLICY, &props);
    let created = p.create(&ctx, &r).await.expect("create");
    assert!(
        created
            .physical_id
            .starts_with(&format!("{}-TopicPolicy-", env.stack)),
        "{}",
        created.physical_id
    );
    assert_eq!(created.attributes["Id"], json!(created.physical_id));
    assert_eq!(
        p.ref_value(TOPIC_POLICY, &created.physical_id, &created.attributes),
        json!(created.physical_id)
    );
    assert_eq!(parse(&env.topic_attributes(&t1).await["Policy"]), doc);

    let read = p
        .read(&ctx, &r, &created.physical_id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["PolicyDocument"], doc);
    assert_eq!(read["Topics"], json!([t1]));

    let doc2 = topic_policy(&t2, "sns:Subscribe");
    let props2 = obj(json!({"PolicyDocument": doc2, "Topics": [t2]}));
    let r2 = req("TopicPolicy", TOPIC_POLICY, &props2);
    let outcome = p
        .update(&ctx, &r2, &created.physical_id, &props)
        .await
        .expect("update");
    assert_eq!(
        outcome,
        UpdateOutcome::Updated(created.clone()),
        "TopicPolicy has no create-only property"
    );
    assert_eq!(
        parse(&env.topic_attributes(&t1).await["Policy"]),
        default1,
        "t1 back to the default policy"
    );
    assert_eq!(parse(&env.topic_attributes(&t2).await["Policy"]), doc2);
    assert_eq!(
        p.import(&ctx, &r2, &created.physical_id)
            .await
            .expect("import"),
        created
    );

    p.delete(&ctx, &r2, &created.physical_id)
        .await
        .expect("delete");
    let policy2 = parse(&env.topic_attributes(&t2).await["Policy"]);
    assert_eq!(policy2["Id"], json!("__default_policy_ID"));
    assert_eq!(policy2["Statement"][0]["Resource"], json!(t2));
    p.delete(&ctx, &r2, &created.physical_id)
        .await
        .expect("delete again");

    for (id, t) in [("T1", &t1), ("T2", &t2)] {
        topics
            .delete(&ctx, &req(id, TOPIC, &empty), t)
            .await
            .expect("delete topic");
    }
    p.delete(&ctx, &r2, &created.physical_id)
        .await
        .expect("delete with the topic gone");
    assert_eq!(
        p.read(&ctx, &r2, &created.physical_id).await.expect("read"),
        None
    );
}
