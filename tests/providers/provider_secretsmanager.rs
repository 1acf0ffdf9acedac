//! The `AWS::SecretsManager::Secret` SDK provider against the emulator.
//!
//! Run: `eval "$(./scripts/emulator start)" && cargo test --test provider_secretsmanager`.

use crate::support;

use std::sync::Arc;

use cdkd::aws::{ClientOptions, Clients};
use cdkd::provider::{Provider, ProviderContext, ResourceRequest, UpdateOutcome};
use serde_json::{json, Map, Value};

const SECRET: &str = "AWS::SecretsManager::Secret";

struct Env {
    clients: Clients,
    stack: String,
    sm: aws_sdk_secretsmanager::Client,
}

impl Env {
    async fn new() -> Self {
        let sdk = support::sdk_config().await;
        Env {
            clients: Clients::load(&ClientOptions::default()).await,
            stack: support::unique_name("SecretStack"),
            sm: aws_sdk_secretsmanager::Client::new(&sdk),
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

    async fn value(&self, id: &str) -> String {
        self.sm
            .get_secret_value()
            .secret_id(id)
            .send()
            .await
            .expect("GetSecretValue")
            .secret_string
            .expect("a string value")
    }

    async fn describe(
        &self,
        id: &str,
    ) -> aws_sdk_secretsmanager::operation::describe_secret::DescribeSecretOutput {
        self.sm
            .describe_secret()
            .secret_id(id)
            .send()
            .await
            .expect("DescribeSecret")
    }
}

fn provider() -> Arc<dyn Provider> {
    cdkd::provider::sdk::all()
        .into_iter()
        .find(|p| p.resource_types().contains(&SECRET))
        .expect("a secret provider")
}

fn req<'a>(logical_id: &'a str, props: &'a Map<String, Value>) -> ResourceRequest<'a> {
    ResourceRequest {
        logical_id,
        resource_type: SECRET,
        properties: props,
        client_token: None,
    }
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

fn sorted_tags(
    d: &aws_sdk_secretsmanager::operation::describe_secret::DescribeSecretOutput,
) -> Vec<(String, String)> {
    let mut tags: Vec<(String, String)> = d
        .tags()
        .iter()
        .map(|t| {
            (
                t.key().unwrap_or_default().to_owned(),
                t.value().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    tags.sort();
    tags
}

#[tokio::test]
async fn secret_lifecycle() {
    let env = Env::new().await;
    let p = provider();
    let ctx = env.ctx();
    let name = support::unique_name("secret");
    let v1 = obj(json!({
        "Name": name,
        "Description": "first",
        "SecretString": "literal-value-1",
        "Tags": [{"Key": "team", "Value": "a"}, {"Key": "env", "Value": "test"}],
    }));

    // Create: the physical id, Ref and Id are the ARN DescribeSecret reports.
    let made = p.create(&ctx, &req("Secret", &v1)).await.expect("create");
    let d = env.describe(&name).await;
    let arn = d.arn().expect("arn").to_owned();
    assert_eq!(made.physical_id, arn);
    assert_eq!(
        p.ref_value(SECRET, &made.physical_id, &made.attributes),
        json!(arn)
    );
    assert_eq!(made.attributes.get("Id"), Some(&json!(arn)));
    assert_eq!(made.attributes.len(), 1, "no attribute carries the value");
    assert_eq!(env.value(&arn).await, "literal-value-1");
    assert_eq!(d.description(), Some("first"));
    assert_eq!(
        sorted_tags(&d),
        [("env".into(), "test".into()), ("team".into(), "a".into())]
    );

    // Read: CloudFormation's names, never the value.
    let read = p
        .read(&ctx, &req("Secret", &v1), &arn)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["Id"], json!(arn));
    assert_eq!(read["Name"], json!(name));
    assert_eq!(read["Description"], json!("first"));
    assert!(!read.contains_key("SecretString"));
    assert!(!Value::Object(read.clone())
        .to_string()
        .contains("literal-value-1"));

    // In place: description, value and tags.
    let v2 = obj(json!({
        "Name": name,
        "Description": "second",
        "SecretString": "literal-value-2",
        "Tags": [{"Key": "team", "Value": "b"}, {"Key": "owner", "Value": "me"}],
    }));
    let out = p
        .update(&ctx, &req("Secret", &v2), &arn, &v1)
        .await
        .expect("update");
    let UpdateOutcome::Updated(updated) = out else {
        panic!("expected an in-place update, got {out:?}");
    };
    assert_eq!(updated.physical_id, arn);
    assert_eq!(updated.attributes.get("Id"), Some(&json!(arn)));
    assert_eq!(env.value(&arn).await, "literal-value-2");
    let d = env.describe(&arn).await;
    assert_eq!(d.description(), Some("second"));
    assert_eq!(
        sorted_tags(&d),
        [("owner".into(), "me".into()), ("team".into(), "b".into())]
    );

    // In place: a generated value, built into the template as CloudFormation does.
    let v3 = obj(json!({
        "Name": name,
        "Description": "second",
        "GenerateSecretString": {
            "SecretStringTemplate": "{\"username\":\"admin\"}",
            "GenerateStringKey": "password",
            "PasswordLength": 20,
            "ExcludeCharacters": "\"@/\\",
        },
        "Tags": [{"Key": "team", "Value": "b"}, {"Key": "owner", "Value": "me"}],
    }));
    let out = p
        .update(&ctx, &req("Secret", &v3), &arn, &v2)
        .await
        .expect("update to generated");
    assert!(matches!(out, UpdateOutcome::Updated(_)), "{out:?}");
    let value: Value = serde_json::from_str(&env.value(&arn).await).expect("JSON value");
    assert_eq!(value["username"], json!("admin"));
    let password = value["password"].as_str().expect("password");
    assert_eq!(password.len(), 20);
    assert!(
        !password.contains(['"', '@', '/', '\\']),
        "excluded characters used"
    );

    // A new name replaces the secret.
    let renamed = set_name(&v3, &format!("{name}-2"));
    let out = p
        .update(&ctx, &req("Secret", &renamed), &arn, &v3)
        .await
        .expect("update name");
    assert!(
        matches!(out, UpdateOutcome::NeedsReplacement { .. }),
        "{out:?}"
    );

    // Delete is immediate (no recovery window), and idempotent.
    p.delete(&ctx, &req("Secret", &v3), &arn)
        .await
        .expect("delete");
    assert!(
        env.sm
            .describe_secret()
            .secret_id(&arn)
            .send()
            .await
            .is_err(),
        "deleted without recovery window"
    );
    p.delete(&ctx, &req("Secret", &v3), &arn)
        .await
        .expect("delete again");
    assert!(p
        .read(&ctx, &req("Secret", &v3), &arn)
        .await
        .expect("read")
        .is_none());
}

fn set_name(props: &Map<String, Value>, name: &str) -> Map<String, Value> {
    let mut m = props.clone();
    m.insert("Name".into(), json!(name));
    m
}

#[tokio::test]
async fn generated_name_and_password_import_and_errors_without_values() {
    let env = Env::new().await;
    let p = provider();
    let ctx = env.ctx();
    let props =
        obj(json!({"GenerateSecretString": {"PasswordLength": 24, "ExcludePunctuation": true}}));
    let made = p
        .create(&ctx, &req("MySecret", &props))
        .await
        .expect("create");
    let d = env.describe(&made.physical_id).await;
    let name = d.name().expect("name");
    assert!(name.starts_with("MySecret-"), "{name}");
    assert_eq!(name.len(), "MySecret-".len() + 12);
    let value = env.value(&made.physical_id).await;
    assert_eq!(value.len(), 24);
    assert!(
        value.chars().all(|c| c.is_ascii_alphanumeric()),
        "punctuation excluded"
    );

    // Import by ARN and by name: the ARN either way.
    let by_arn = p
        .import(&ctx, &req("MySecret", &props), &made.physical_id)
        .await
        .expect("import");
    assert_eq!(by_arn, made);
    let by_name = p
        .import(&ctx, &req("MySecret", &props), name)
        .await
        .expect("import by name");
    assert_eq!(by_name, made);

    // Bad shapes fail before anything is made, and never quote a value or template.
    let both = obj(json!({"SecretString": "do-not-print-me", "GenerateSecretString": {}}));
    let err = p
        .create(&ctx, &req("Both", &both))
        .await
        .expect_err("both refused")
        .to_string();
    assert!(
        err.starts_with("Both (AWS::SecretsManager::Secret): "),
        "{err}"
    );
    assert!(!err.contains("do-not-print-me"), "{err}");
    let half = obj(
        json!({"GenerateSecretString": {"SecretStringTemplate": "{\"user\":\"do-not-print-me\"}"}}),
    );
    let err = p
        .create(&ctx, &req("Half", &half))
        .await
        .expect_err("template without key")
        .to_string();
    assert!(!err.contains("do-not-print-me"), "{err}");
    let broken = obj(
        json!({"GenerateSecretString": {"SecretStringTemplate": "{do-not-print-me", "GenerateStringKey": "k"}}),
    );
    let err = p
        .create(&ctx, &req("Broken", &broken))
        .await
        .expect_err("bad template")
        .to_string();
    assert!(!err.contains("do-not-print-me"), "{err}");

    p.delete(&ctx, &req("MySecret", &props), &made.physical_id)
        .await
        .expect("delete");
    p.delete(&ctx, &req("MySecret", &props), &made.physical_id)
        .await
        .expect("delete again");
}
