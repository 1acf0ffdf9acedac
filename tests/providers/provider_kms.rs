//! The KMS SDK provider (Key, Alias) against the emulator, checked through the KMS API:
//! create with `Ref` / `Fn::GetAtt` as CloudFormation reports them, update in place, the
//! replacement a create-only change answers, read, import by physical id, delete (a key's
//! deletion scheduled, an alias removed) and a second delete of what is gone.
//!
//! Run: `./scripts/test --test providers -- provider_kms::`.

use crate::sdk_env::{obj, replaced, Env};

use aws_sdk_kms::types::KeyState;
use serde_json::{json, Value};

const KEY: &str = "AWS::KMS::Key";
const ALIAS: &str = "AWS::KMS::Alias";

fn policy(sid: &str) -> Value {
    json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Sid": sid,
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
            "Action": "kms:*",
            "Resource": "*",
        }],
    })
}

#[tokio::test]
async fn key_lifecycle() {
    let env = Env::new("KmsStack").await;
    let kms = aws_sdk_kms::Client::new(&env.sdk);
    let v1 = obj(json!({
        "Description": "one",
        "KeyPolicy": policy("first"),
        "EnableKeyRotation": true,
        "KeyUsage": "ENCRYPT_DECRYPT",
        "Tags": [{"Key": "gone", "Value": "soon"}, {"Key": "team", "Value": "a"}],
    }));
    let key = env.create(KEY, &v1).await;
    let id = key.physical_id.clone();
    assert_eq!(env.ref_of(KEY, &key), json!(id));
    assert_eq!(key.attributes["KeyId"], json!(id));
    assert_eq!(
        key.attributes["Arn"],
        json!(format!("arn:aws:kms:us-east-1:123456789012:key/{id}"))
    );
    let rotation = kms
        .get_key_rotation_status()
        .key_id(&id)
        .send()
        .await
        .expect("rotation");
    assert!(rotation.key_rotation_enabled());

    // Read returns what the template set, so a diff after the deploy is clean.
    let read = env.read(KEY, &v1, &id).await.expect("the key exists");
    for name in [
        "Description",
        "KeyPolicy",
        "EnableKeyRotation",
        "KeyUsage",
        "Tags",
    ] {
        assert_eq!(
            read[name], v1[name],
            "{name} reads back as written: {read:?}"
        );
    }
    assert_eq!(read["Enabled"], json!(true));

    // In place: description, policy, rotation off, disabled, tags.
    let v2 = obj(json!({
        "Description": "two",
        "KeyPolicy": policy("second"),
        "EnableKeyRotation": false,
        "Enabled": false,
        "KeyUsage": "ENCRYPT_DECRYPT",
        "Tags": [{"Key": "team", "Value": "b"}],
    }));
    let after = env.updated(KEY, &v2, &id, &v1).await;
    assert_eq!(after.physical_id, id);
    let meta = kms
        .describe_key()
        .key_id(&id)
        .send()
        .await
        .expect("DescribeKey")
        .key_metadata
        .expect("metadata");
    assert_eq!(meta.description(), Some("two"));
    assert!(!meta.enabled());
    let read = env.read(KEY, &v2, &id).await.expect("the key exists");
    for name in [
        "Description",
        "KeyPolicy",
        "EnableKeyRotation",
        "Enabled",
        "Tags",
    ] {
        assert_eq!(read[name], v2[name], "{name} after the update: {read:?}");
    }

    // KeyUsage cannot change on a live key.
    let mut v3 = v2.clone();
    v3.insert("KeyUsage".into(), json!("SIGN_VERIFY"));
    v3.insert("KeySpec".into(), json!("RSA_2048"));
    let reason = replaced(env.update(KEY, &v3, &id, &v2).await);
    assert!(
        reason.contains("KeySpec") || reason.contains("KeyUsage"),
        "{reason}"
    );

    // Import by id reports what create did.
    let imported = env.import(KEY, &v2, &id).await;
    assert_eq!(imported, after);

    // Delete schedules the deletion with the template's window; the key then reads as gone.
    let mut v4 = v2.clone();
    v4.insert("PendingWindowInDays".into(), json!(7));
    env.delete_twice(KEY, &v4, &id).await;
    let meta = kms
        .describe_key()
        .key_id(&id)
        .send()
        .await
        .expect("DescribeKey")
        .key_metadata
        .expect("metadata");
    assert_eq!(meta.key_state(), Some(&KeyState::PendingDeletion));
}

/// The names of the aliases KMS lists for `key`.
async fn aliases_of(kms: &aws_sdk_kms::Client, key: &str) -> Vec<String> {
    kms.list_aliases()
        .key_id(key)
        .send()
        .await
        .expect("ListAliases")
        .aliases()
        .iter()
        .filter_map(|a| a.alias_name().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn alias_lifecycle() {
    let env = Env::new("KmsAliasStack").await;
    let kms = aws_sdk_kms::Client::new(&env.sdk);
    let first = env.create(KEY, &obj(json!({"Description": "a"}))).await;
    let second = env.create(KEY, &obj(json!({"Description": "b"}))).await;
    let name = format!("alias/{}", env.stack.to_ascii_lowercase());

    let v1 = obj(json!({"AliasName": name, "TargetKeyId": first.attributes["Arn"]}));
    let alias = env.create(ALIAS, &v1).await;
    assert_eq!(alias.physical_id, name);
    assert_eq!(env.ref_of(ALIAS, &alias), json!(name));
    assert_eq!(aliases_of(&kms, &first.physical_id).await, [name.clone()]);
    // The template named the key by ARN: it reads back so.
    assert_eq!(env.read(ALIAS, &v1, &name).await, Some(v1.clone()));

    let v2 = obj(json!({"AliasName": name, "TargetKeyId": second.physical_id}));
    env.updated(ALIAS, &v2, &name, &v1).await;
    assert_eq!(aliases_of(&kms, &second.physical_id).await, [name.clone()]);
    assert!(aliases_of(&kms, &first.physical_id).await.is_empty());
    assert_eq!(env.read(ALIAS, &v2, &name).await, Some(v2.clone()));

    let v3 = obj(json!({"AliasName": format!("{name}-2"), "TargetKeyId": second.physical_id}));
    assert!(replaced(env.update(ALIAS, &v3, &name, &v2).await).contains("AliasName"));

    assert_eq!(env.import(ALIAS, &v2, &name).await.physical_id, name);
    env.delete_twice(ALIAS, &v2, &name).await;
    assert!(aliases_of(&kms, &second.physical_id).await.is_empty());
    for key in [&first, &second] {
        env.delete_twice(KEY, &obj(json!({})), &key.physical_id)
            .await;
    }
}
