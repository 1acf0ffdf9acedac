//! An IAM access key, a type Cloud Control has no handlers for, end to end through the binary
//! against the emulator (fixtures/apps/access-key: an `iam.User`, its `iam.AccessKey`, and a
//! Secrets Manager secret holding the key's `secretAccessKey`). The key is made by cdkd's SDK
//! provider; its secret reaches Secrets Manager but no version of any object in the state
//! bucket, where the key's attribute and the secret's property are `***`; `diff --fail` is
//! clean; deactivating the key is an in-place update; a change that would have to send the
//! secret again is refused, naming the attribute; destroy removes the key and the user.

use crate::fixture_app::{record, run, traced};
use crate::support;

use serde_json::json;
use support::{sdk_config, unique_name};

const STACK: &str = "AccessKey";
const USER: &str = "cdkd-e2e-ci";

/// (access key id, status) of every key of the fixture's user; `None` when the user is gone.
async fn keys(iam: &aws_sdk_iam::Client) -> Option<Vec<(String, String)>> {
    let out = iam.list_access_keys().user_name(USER).send().await.ok()?;
    Some(
        out.access_key_metadata()
            .iter()
            .map(|k| {
                (
                    k.access_key_id().unwrap_or_default().to_owned(),
                    k.status()
                        .map(|s| s.as_str().to_owned())
                        .unwrap_or_default(),
                )
            })
            .collect(),
    )
}

#[tokio::test]
async fn an_access_key_deploys_through_its_sdk_provider_and_its_secret_never_reaches_state() {
    let bucket = unique_name("cdkd-access-key");
    let (code, text) = run("bootstrap", "access-key", &bucket, &[], None);
    assert_eq!(code, 0, "bootstrap: {text}");
    let trace = std::env::temp_dir().join(format!("{bucket}.trace.jsonl"));
    let (code, text) = run("deploy", "access-key", &bucket, &[], Some(trace.as_path()));
    assert_eq!(code, 0, "deploy v1: {text}");
    let ops = traced(&trace);
    assert!(ops.iter().any(|o| o.contains("CreateAccessKey")), "{ops:?}");

    let sdk = sdk_config().await;
    let iam = aws_sdk_iam::Client::new(&sdk);
    let sm = aws_sdk_secretsmanager::Client::new(&sdk);
    let state = record(STACK, &bucket);
    let key = &state["resources"]["Key961B73FD"];
    assert_eq!(key["provisionedBy"], "sdk", "{key}");
    let key_id = key["physicalId"].as_str().expect("physical id").to_owned();
    assert_eq!(
        keys(&iam).await,
        Some(vec![(key_id.clone(), "Active".to_owned())])
    );
    assert_eq!(state["outputs"]["AccessKeyId"], json!(key_id));
    assert_eq!(key["attributes"]["SecretAccessKey"], "***", "{key}");
    assert_eq!(key["noEchoAttributeNames"], json!(["SecretAccessKey"]));
    let secret = &state["resources"]["KeySecret2DA13121"];
    assert_eq!(secret["properties"]["SecretString"], "***", "{secret}");

    // The secret Secrets Manager holds is the key's (its value, never shown, is 40 characters).
    let stored = sm
        .get_secret_value()
        .secret_id("cdkd-e2e-ci-key")
        .send()
        .await
        .expect("GetSecretValue")
        .secret_string
        .expect("a string secret");
    assert_eq!(stored.len(), 40, "an access key's secret");
    for (object, body) in support::app::every_object_version(&bucket).await {
        assert!(
            !body.contains(&stored),
            "{object} holds the access key's secret in plaintext"
        );
    }
    assert!(
        !text.contains(&stored),
        "the deploy printed the access key's secret"
    );
    let (code, text) = run("diff", "access-key", &bucket, &["--fail"], None);
    assert_eq!(code, 0, "a phantom change right after deploy: {text}");

    // v2: the key is deactivated in place; its secret, not needed again, stays.
    let (code, text) = run("deploy", "access-key-v2", &bucket, &[], None);
    assert_eq!(code, 0, "deploy v2: {text}");
    assert_eq!(
        keys(&iam).await,
        Some(vec![(key_id.clone(), "Inactive".to_owned())])
    );
    let (code, text) = run("diff", "access-key-v2", &bucket, &["--fail"], None);
    assert_eq!(code, 0, "a phantom change after the update: {text}");

    // v3 changes the secret's description: writing the secret again needs the key's secret,
    // which state holds only masked, so the secret is refused rather than sent `***`.
    let (code, text) = run("deploy", "access-key-v3", &bucket, &[], None);
    assert_ne!(code, 0, "deploy v3 must refuse: {text}");
    assert!(
        text.contains("reads Key961B73FD.SecretAccessKey"),
        "the refusal names the attribute: {text}"
    );
    let now = sm
        .get_secret_value()
        .secret_id("cdkd-e2e-ci-key")
        .send()
        .await
        .expect("GetSecretValue");
    assert_eq!(now.secret_string(), Some(stored.as_str()), "unchanged");

    let (code, text) = run("destroy", "access-key-v2", &bucket, &["--force"], None);
    assert_eq!(code, 0, "destroy: {text}");
    assert_eq!(keys(&iam).await, None, "the user and its key are gone");
}
