//! The `AWS::SSM::Parameter` SDK provider against the emulator.
//!
//! Run: `eval "$(./scripts/emulator start)" && cargo test --test provider_ssm`.

use crate::support;

use std::sync::Arc;

use aws_sdk_ssm::types::{ParameterStringFilter, ResourceTypeForTagging};
use cdkd::aws::{ClientOptions, Clients};
use cdkd::provider::{Provider, ProviderContext, ResourceRequest, UpdateOutcome};
use serde_json::{json, Map, Value};

const PARAMETER: &str = "AWS::SSM::Parameter";

struct Env {
    clients: Clients,
    stack: String,
    ssm: aws_sdk_ssm::Client,
}

impl Env {
    async fn new() -> Self {
        let sdk = support::sdk_config().await;
        Env {
            clients: Clients::load(&ClientOptions::default()).await,
            stack: support::unique_name("SsmStack"),
            ssm: aws_sdk_ssm::Client::new(&sdk),
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

    /// (type, value) as GetParameter reports them.
    async fn get(&self, name: &str) -> (String, String) {
        let p = self
            .ssm
            .get_parameter()
            .name(name)
            .send()
            .await
            .expect("GetParameter")
            .parameter
            .expect("parameter");
        (
            p.r#type().expect("type").as_str().to_owned(),
            p.value().expect("value").to_owned(),
        )
    }

    async fn description(&self, name: &str) -> Option<String> {
        let filter = ParameterStringFilter::builder()
            .key("Name")
            .option("Equals")
            .values(name)
            .build()
            .expect("filter");
        self.ssm
            .describe_parameters()
            .parameter_filters(filter)
            .send()
            .await
            .expect("DescribeParameters")
            .parameters()
            .first()
            .and_then(|p| p.description().map(str::to_owned))
    }

    async fn tags(&self, name: &str) -> Vec<(String, String)> {
        let mut tags: Vec<(String, String)> = self
            .ssm
            .list_tags_for_resource()
            .resource_type(ResourceTypeForTagging::Parameter)
            .resource_id(name)
            .send()
            .await
            .expect("ListTagsForResource")
            .tag_list()
            .iter()
            .map(|t| (t.key().to_owned(), t.value().to_owned()))
            .collect();
        tags.sort();
        tags
    }
}

fn provider() -> Arc<dyn Provider> {
    cdkd::provider::sdk::all()
        .into_iter()
        .find(|p| p.resource_types().contains(&PARAMETER))
        .expect("an SSM parameter provider")
}

fn req<'a>(logical_id: &'a str, props: &'a Map<String, Value>) -> ResourceRequest<'a> {
    ResourceRequest {
        logical_id,
        resource_type: PARAMETER,
        properties: props,
        client_token: None,
    }
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

#[tokio::test]
async fn parameter_lifecycle() {
    let env = Env::new().await;
    let p = provider();
    let ctx = env.ctx();
    let name = format!("/cdkd-test/{}", support::unique_name("param"));
    let v1 = obj(json!({
        "Name": name,
        "Type": "String",
        "Value": "one",
        "Description": "first",
        "Tags": {"team": "a", "env": "test"},
    }));

    // Create: Ref is the name; Type and Value are what GetParameter reports.
    let made = p.create(&ctx, &req("Param", &v1)).await.expect("create");
    assert_eq!(made.physical_id, name);
    assert_eq!(
        p.ref_value(PARAMETER, &made.physical_id, &made.attributes),
        json!(name)
    );
    let (ty, value) = env.get(&name).await;
    assert_eq!(made.attributes.get("Type"), Some(&json!(ty)));
    assert_eq!(made.attributes.get("Value"), Some(&json!(value)));
    assert_eq!((ty.as_str(), value.as_str()), ("String", "one"));
    assert_eq!(
        env.tags(&name).await,
        [("env".into(), "test".into()), ("team".into(), "a".into())]
    );

    let read = p
        .read(&ctx, &req("Param", &v1), &name)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["Name"], json!(name));
    assert_eq!(read["Type"], json!("String"));
    assert_eq!(read["Value"], json!("one"));
    assert_eq!(read["Description"], json!("first"));
    assert_eq!(read["Tags"], json!({"env": "test", "team": "a"}));

    // In place: value, description and tags.
    let v2 = obj(json!({
        "Name": name,
        "Type": "String",
        "Value": "two",
        "Description": "second",
        "Tags": {"team": "b", "owner": "me"},
    }));
    let out = p
        .update(&ctx, &req("Param", &v2), &name, &v1)
        .await
        .expect("update");
    let UpdateOutcome::Updated(updated) = out else {
        panic!("expected an in-place update, got {out:?}");
    };
    assert_eq!(updated.physical_id, name);
    let (ty, value) = env.get(&name).await;
    assert_eq!(updated.attributes.get("Value"), Some(&json!(value)));
    assert_eq!(updated.attributes.get("Type"), Some(&json!(ty)));
    assert_eq!(value, "two");
    assert_eq!(env.description(&name).await.as_deref(), Some("second"));
    assert_eq!(
        env.tags(&name).await,
        [("owner".into(), "me".into()), ("team".into(), "b".into())]
    );

    // In place: String to StringList, the list given as a list.
    let v3 = obj(
        json!({"Name": name, "Type": "StringList", "Value": ["x", "y"], "Tags": {"team": "b", "owner": "me"}}),
    );
    let out = p
        .update(&ctx, &req("Param", &v3), &name, &v2)
        .await
        .expect("update type");
    let UpdateOutcome::Updated(updated) = out else {
        panic!("expected an in-place update, got {out:?}");
    };
    let (ty, value) = env.get(&name).await;
    assert_eq!((ty.as_str(), value.as_str()), ("StringList", "x,y"));
    assert_eq!(updated.attributes.get("Type"), Some(&json!("StringList")));
    assert_eq!(updated.attributes.get("Value"), Some(&json!("x,y")));

    // A new name replaces the parameter.
    let renamed = obj(json!({"Name": format!("{name}-2"), "Type": "StringList", "Value": "x,y"}));
    let out = p
        .update(&ctx, &req("Param", &renamed), &name, &v3)
        .await
        .expect("update name");
    assert!(
        matches!(out, UpdateOutcome::NeedsReplacement { .. }),
        "{out:?}"
    );

    p.delete(&ctx, &req("Param", &v3), &name)
        .await
        .expect("delete");
    assert!(env.ssm.get_parameter().name(&name).send().await.is_err());
    p.delete(&ctx, &req("Param", &v3), &name)
        .await
        .expect("delete again");
    assert!(p
        .read(&ctx, &req("Param", &v3), &name)
        .await
        .expect("read")
        .is_none());
}

#[tokio::test]
async fn generated_name_import_and_secure_string_refused() {
    let env = Env::new().await;
    let p = provider();
    let ctx = env.ctx();
    let props = obj(json!({"Type": "String", "Value": "hello"}));
    let made = p
        .create(&ctx, &req("MyParam", &props))
        .await
        .expect("create");
    assert!(
        made.physical_id.starts_with("CFN-MyParam-"),
        "{}",
        made.physical_id
    );
    assert_eq!(made.physical_id.len(), "CFN-MyParam-".len() + 12);
    assert_eq!(
        env.get(&made.physical_id).await,
        ("String".into(), "hello".into())
    );

    let imported = p
        .import(&ctx, &req("MyParam", &props), &made.physical_id)
        .await
        .expect("import");
    assert_eq!(imported, made);

    let secure = obj(
        json!({"Name": support::unique_name("secure"), "Type": "SecureString", "Value": "s3cr3t-value"}),
    );
    let err = p
        .create(&ctx, &req("Secure", &secure))
        .await
        .expect_err("SecureString refused");
    let msg = err.to_string();
    assert!(msg.starts_with("Secure (AWS::SSM::Parameter): "), "{msg}");
    assert!(!msg.contains("s3cr3t-value"), "{msg}");

    p.delete(&ctx, &req("MyParam", &props), &made.physical_id)
        .await
        .expect("delete");
    p.delete(&ctx, &req("MyParam", &props), &made.physical_id)
        .await
        .expect("delete again");
}
