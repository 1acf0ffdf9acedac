//! The Lambda layer SDK provider (LayerVersion, LayerVersionPermission) against the emulator:
//! a version published from S3 with `Ref` / `Fn::GetAtt` as CloudFormation reports them, a
//! function created with it in `Layers` (what a layer made through the Cloud Control
//! emulator's store could not give), every change answered with a replacement, read, import
//! by physical id, delete and a second delete of what is gone; a permission granted, read
//! back and removed.
//!
//! Run: `./scripts/test --test providers -- provider_lambda_layer::`.

use crate::sdk_env::{obj, replaced, Env};
use crate::support;

use serde_json::json;

const LAYER: &str = "AWS::Lambda::LayerVersion";
const PERMISSION: &str = "AWS::Lambda::LayerVersionPermission";
const FUNCTION: &str = "AWS::Lambda::Function";
const ROLE: &str = "AWS::IAM::Role";

/// A zip holding one file, for the layer's content.
fn zip_bytes() -> Vec<u8> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    w.start_file("nodejs/util.js", zip::write::SimpleFileOptions::default())
        .expect("start");
    w.write_all(b"module.exports = 1;").expect("write");
    w.finish().expect("finish").into_inner()
}

#[tokio::test]
async fn layer_version_lifecycle_and_a_function_that_uses_it() {
    let env = Env::new("LayerStack").await;
    let lambda = aws_sdk_lambda::Client::new(&env.sdk);
    let s3 = support::s3_client().await;
    let bucket = support::unique_name("layer-content");
    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("CreateBucket");
    s3.put_object()
        .bucket(&bucket)
        .key("layer.zip")
        .body(zip_bytes().into())
        .send()
        .await
        .expect("PutObject");

    let name = support::unique_name("deps");
    let v1 = obj(json!({
        "LayerName": name,
        "Description": "shared code",
        "Content": {"S3Bucket": bucket, "S3Key": "layer.zip"},
        "CompatibleRuntimes": ["nodejs20.x"],
        "CompatibleArchitectures": ["x86_64"],
        "LicenseInfo": "MIT",
    }));
    let layer = env.create(LAYER, &v1).await;
    let arn = layer.physical_id.clone();
    assert_eq!(
        arn,
        format!("arn:aws:lambda:us-east-1:123456789012:layer:{name}:1")
    );
    assert_eq!(env.ref_of(LAYER, &layer), json!(arn));
    assert_eq!(layer.attributes["LayerVersionArn"], json!(arn));
    assert_eq!(env.read(LAYER, &v1, &arn).await, Some(v1.clone()));
    assert_eq!(env.import(LAYER, &v1, &arn).await, layer);

    // Any change publishes a new version: the provider answers a replacement.
    let mut v2 = v1.clone();
    v2.insert("Description".into(), json!("shared code, v2"));
    assert!(replaced(env.update(LAYER, &v2, &arn, &v1).await).contains("Description"));
    assert_eq!(env.updated(LAYER, &v1, &arn, &v1).await, layer);

    // A function created with the layer (through its SDK provider) lists it.
    let role = env
        .create(
            ROLE,
            &obj(json!({"AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}],
            }})),
        )
        .await;
    let function = env
        .create(
            FUNCTION,
            &obj(json!({
                "Runtime": "nodejs20.x",
                "Handler": "index.handler",
                "Role": role.attributes["Arn"],
                "Code": {"ZipFile": "exports.handler = async () => require('/opt/nodejs/util.js');"},
                "Layers": [arn],
            })),
        )
        .await;
    let config = lambda
        .get_function_configuration()
        .function_name(&function.physical_id)
        .send()
        .await
        .expect("GetFunctionConfiguration");
    let layers: Vec<&str> = config.layers().iter().filter_map(|l| l.arn()).collect();
    assert_eq!(layers, [arn.as_str()]);

    // A permission on the version: granted, read back, removed.
    let grant =
        obj(json!({"LayerVersionArn": arn, "Action": "lambda:GetLayerVersion", "Principal": "*"}));
    let permission = env.create(PERMISSION, &grant).await;
    assert!(
        permission.physical_id.starts_with(&format!("{arn}#")),
        "{}",
        permission.physical_id
    );
    assert_eq!(
        env.ref_of(PERMISSION, &permission),
        json!(permission.physical_id)
    );
    assert_eq!(
        env.read(PERMISSION, &grant, &permission.physical_id).await,
        Some(grant.clone())
    );
    let policy = lambda
        .get_layer_version_policy()
        .layer_name(&name)
        .version_number(1)
        .send()
        .await
        .expect("GetLayerVersionPolicy");
    assert!(policy
        .policy()
        .unwrap_or_default()
        .contains("lambda:GetLayerVersion"));
    let mut wider = grant.clone();
    wider.insert("Principal".into(), json!("210987654321"));
    assert!(replaced(
        env.update(PERMISSION, &wider, &permission.physical_id, &grant)
            .await
    )
    .contains("Principal"));
    assert_eq!(
        env.import(PERMISSION, &grant, &permission.physical_id)
            .await,
        permission
    );
    env.delete_twice(PERMISSION, &grant, &permission.physical_id)
        .await;

    env.delete_twice(LAYER, &v1, &arn).await;
    let listed = lambda
        .list_layer_versions()
        .layer_name(&name)
        .send()
        .await
        .expect("ListLayerVersions");
    assert!(listed.layer_versions().is_empty(), "{listed:?}");
    // A malformed id is refused, never turned into a delete of something else.
    let refused = crate::sdk_env::provider(LAYER)
        .delete(
            &env.ctx(),
            &crate::sdk_env::req(LAYER, &v1),
            &format!("arn:aws:lambda:us-east-1:123456789012:layer:{name}"),
        )
        .await
        .expect_err("no version in the id");
    assert!(
        refused.to_string().contains("not a layer version ARN"),
        "{refused}"
    );
}
