//! The IAM access key SDK provider (`AWS::IAM::AccessKey`, which Cloud Control cannot make)
//! against the emulator: create, the in-place status update, the replacement `Serial` and
//! `UserName` ask for, read, import and delete.

use crate::support;

use cdkd::aws::{ClientOptions, Clients};
use cdkd::provider::{ProviderContext, ResourceRequest, UpdateOutcome};
use serde_json::{json, Map, Value};

const KEY: &str = "AWS::IAM::AccessKey";

fn props(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("properties are an object")
}

fn request<'a>(properties: &'a Map<String, Value>) -> ResourceRequest<'a> {
    ResourceRequest {
        logical_id: "Key",
        resource_type: KEY,
        properties,
        client_token: None,
    }
}

/// The user's keys as IAM lists them: (id, status).
async fn listed(iam: &aws_sdk_iam::Client, user: &str) -> Vec<(String, String)> {
    iam.list_access_keys()
        .user_name(user)
        .send()
        .await
        .expect("ListAccessKeys")
        .access_key_metadata()
        .iter()
        .map(|k| {
            (
                k.access_key_id().unwrap_or_default().to_owned(),
                k.status()
                    .map(|s| s.as_str().to_owned())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test]
async fn access_key_lifecycle() {
    let clients = Clients::load(&ClientOptions::default()).await;
    let stack = support::unique_name("KeyStack");
    let ctx = ProviderContext {
        clients: &clients,
        stack_name: &stack,
        region: "us-east-1",
        account_id: "123456789012",
        partition: "aws",
        no_wait: false,
    };
    let iam = aws_sdk_iam::Client::new(&support::sdk_config().await);
    let user = support::unique_name("ci");
    iam.create_user()
        .user_name(&user)
        .send()
        .await
        .expect("CreateUser");
    let p = cdkd::provider::sdk::all()
        .into_iter()
        .find(|p| p.resource_types().contains(&KEY))
        .expect("an SDK provider for access keys");
    assert_eq!(p.secret_attributes(KEY), ["SecretAccessKey"]);
    assert!(p
        .supported_properties(KEY)
        .is_some_and(|s| s.contains(&"Serial")));

    // Created inactive: the status is set after the create, which mints active keys.
    let v1 = props(json!({"UserName": user, "Status": "Inactive"}));
    let created = p.create(&ctx, &request(&v1)).await.expect("create");
    let id = created.physical_id.clone();
    assert_eq!(listed(&iam, &user).await, [(id.clone(), "Inactive".into())]);
    assert_eq!(p.ref_value(KEY, &id, &created.attributes), json!(id));
    let secret = created.attributes["SecretAccessKey"]
        .as_str()
        .expect("the secret");
    assert_eq!(secret.len(), 40, "an access key's secret");
    assert_eq!(created.attributes["Id"], json!(id));

    let read = p
        .read(&ctx, &request(&v1), &id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["Status"], "Inactive");
    assert_eq!(read["UserName"], json!(user));
    assert!(read.get("SecretAccessKey").is_none(), "never read back");

    // In place: the status; the answer carries no attributes, so the recorded ones stay.
    let v2 = props(json!({"UserName": user, "Status": "Active"}));
    match p
        .update(&ctx, &request(&v2), &id, &v1)
        .await
        .expect("update")
    {
        UpdateOutcome::Updated(made) => {
            assert_eq!(made.physical_id, id);
            assert!(made.attributes.is_empty(), "{:?}", made.attributes);
        }
        other => panic!("expected an in-place update, got {other:?}"),
    }
    assert_eq!(listed(&iam, &user).await, [(id.clone(), "Active".into())]);

    // A new Serial (or user) asks for a new key.
    for changed in [
        json!({"UserName": user, "Status": "Active", "Serial": 2}),
        json!({"UserName": "someone-else", "Status": "Active"}),
    ] {
        let v3 = props(changed);
        match p
            .update(&ctx, &request(&v3), &id, &v2)
            .await
            .expect("update")
        {
            UpdateOutcome::NeedsReplacement { .. } => {}
            other => panic!("expected a replacement, got {other:?}"),
        }
    }

    let imported = p.import(&ctx, &request(&v2), &id).await.expect("import");
    assert_eq!(imported.physical_id, id);
    assert!(
        imported.attributes.get("SecretAccessKey").is_none(),
        "an adopted key's secret is unknown"
    );
    assert!(p
        .import(&ctx, &request(&v2), "AKIANOTAKEY000000000")
        .await
        .is_err());

    p.delete(&ctx, &request(&v2), &id).await.expect("delete");
    assert!(listed(&iam, &user).await.is_empty());
    p.delete(&ctx, &request(&v2), &id)
        .await
        .expect("deleting a deleted key is success");
    assert_eq!(p.read(&ctx, &request(&v2), &id).await.expect("read"), None);
    iam.delete_user()
        .user_name(&user)
        .send()
        .await
        .expect("DeleteUser");
    assert_eq!(p.read(&ctx, &request(&v2), &id).await.expect("read"), None);
    p.delete(&ctx, &request(&v2), &id)
        .await
        .expect("deleting the key of a deleted user is success");
}
