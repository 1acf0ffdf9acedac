//! KMS, Lambda layers and Route 53 through cdkd's SDK providers, end to end through the
//! binary against the emulator (fixtures/apps/kms-layer-dns: a `kms.Key` with an alias, a
//! `lambda.LayerVersion` from a directory asset used by a function, a `PublicHostedZone` with
//! an `ARecord`). Every resource of these types is recorded `provisionedBy: sdk` and the
//! deploy's trace holds no Cloud Control call; the function is created with the layer (what
//! a layer made in the Cloud Control emulator's store could not give it); `diff --fail` is
//! clean after each deploy; v2's changes are made in place (same physical ids); destroy leaves
//! nothing in moto. And a stack whose record says its hosted zone was made through Cloud
//! Control (what a cdkd from before the Route 53 provider wrote) diffs clean and updates
//! through Cloud Control.

use crate::deploy_routing::{cc_create, cc_properties, diff_fail, pinned_state};
use crate::fixture_app::{self, record, run, traced};
use crate::support;

use aws_sdk_kms::types::KeyState;
use aws_sdk_route53::types::RrType;
use serde_json::{json, Value};
use support::{sdk_config, unique_name};

const STACK: &str = "KmsLayerDns";
const TYPES: &[&str] = &[
    "AWS::KMS::Key",
    "AWS::KMS::Alias",
    "AWS::Lambda::LayerVersion",
    "AWS::Route53::HostedZone",
    "AWS::Route53::RecordSet",
];

fn sdk_resources(state: &Value) -> Vec<(String, String, String)> {
    fixture_app::sdk_resources(state, TYPES)
}

/// The A record's (TTL, addresses).
async fn www(r53: &aws_sdk_route53::Client, zone: &str) -> (Option<i64>, Vec<String>) {
    let out = r53
        .list_resource_record_sets()
        .hosted_zone_id(zone)
        .start_record_name("www.cdkd-e2e.example.com.")
        .start_record_type(RrType::A)
        .max_items(1)
        .send()
        .await
        .expect("ListResourceRecordSets");
    let set = out.resource_record_sets().first().expect("the A record");
    assert_eq!(set.name(), "www.cdkd-e2e.example.com.");
    (
        set.ttl(),
        set.resource_records()
            .iter()
            .map(|r| r.value().to_owned())
            .collect(),
    )
}

#[tokio::test]
async fn kms_layers_and_dns_deploy_update_and_destroy_through_their_sdk_providers() {
    let bucket = unique_name("cdkd-kms-layer-dns");
    let (code, text) = run("bootstrap", "kms-layer-dns", &bucket, &[], None);
    assert_eq!(code, 0, "bootstrap: {text}");
    let trace = std::env::temp_dir().join(format!("{bucket}.trace.jsonl"));
    let (code, text) = run(
        "deploy",
        "kms-layer-dns",
        &bucket,
        &[],
        Some(trace.as_path()),
    );
    assert_eq!(code, 0, "deploy v1: {text}");

    let ops = traced(&trace);
    assert!(
        !ops.iter().any(|o| o.starts_with("CloudApiService")),
        "{ops:?}"
    );
    // JSON-protocol calls are traced as `Target.Operation`, REST ones as `METHOD /path`.
    for op in [
        "TrentService.CreateKey",
        "TrentService.CreateAlias",
        "/versions",
        "POST /2015-03-31/functions",
        "POST /2013-04-01/hostedzone",
        "/rrset",
    ] {
        assert!(ops.iter().any(|o| o.contains(op)), "{op} not in {ops:?}");
    }
    let first = record(STACK, &bucket);
    let v1 = sdk_resources(&first);
    assert_eq!(v1.len(), TYPES.len(), "{v1:?}");
    let (code, text) = run("diff", "kms-layer-dns", &bucket, &["--fail"], None);
    assert_eq!(code, 0, "a phantom change right after deploy: {text}");

    let sdk = sdk_config().await;
    let kms = aws_sdk_kms::Client::new(&sdk);
    let lambda = aws_sdk_lambda::Client::new(&sdk);
    let r53 = aws_sdk_route53::Client::new(&sdk);
    let output = |name: &str| {
        first["outputs"][name]
            .as_str()
            .unwrap_or_else(|| panic!("{name} output"))
            .to_owned()
    };
    let (key, layer, function, zone) = (
        output("KeyId"),
        output("LayerArn"),
        output("FunctionName"),
        output("ZoneId"),
    );
    let aliases = kms
        .list_aliases()
        .key_id(&key)
        .send()
        .await
        .expect("ListAliases");
    let names: Vec<&str> = aliases
        .aliases()
        .iter()
        .filter_map(|a| a.alias_name())
        .collect();
    assert_eq!(names, ["alias/cdkd-e2e-kms-layer-dns"]);
    let config = lambda
        .get_function_configuration()
        .function_name(&function)
        .send()
        .await
        .expect("GetFunctionConfiguration");
    let layers: Vec<&str> = config.layers().iter().filter_map(|l| l.arn()).collect();
    assert_eq!(
        layers,
        [layer.as_str()],
        "the function uses the SDK-made layer"
    );
    assert_eq!(
        www(&r53, &zone).await,
        (Some(300), vec!["192.0.2.10".to_owned()])
    );

    // v2: every change in place.
    let (code, text) = run("diff", "kms-layer-dns-v2", &bucket, &["--fail"], None);
    assert_eq!(code, 1, "v2 differs from v1: {text}");
    let (code, text) = run("deploy", "kms-layer-dns-v2", &bucket, &[], None);
    assert_eq!(code, 0, "deploy v2: {text}");
    assert_eq!(
        sdk_resources(&record(STACK, &bucket)),
        v1,
        "no resource is replaced"
    );
    let meta = kms
        .describe_key()
        .key_id(&key)
        .send()
        .await
        .expect("DescribeKey")
        .key_metadata
        .expect("metadata");
    assert_eq!(meta.description(), Some("cdkd e2e key, v2"));
    let tags = kms
        .list_resource_tags()
        .key_id(&key)
        .send()
        .await
        .expect("ListResourceTags");
    assert!(
        tags.tags()
            .iter()
            .any(|t| t.tag_key() == "Tier" && t.tag_value() == "secrets"),
        "{tags:?}"
    );
    assert_eq!(
        www(&r53, &zone).await,
        (Some(60), vec!["192.0.2.20".to_owned()])
    );
    let live = r53
        .get_hosted_zone()
        .id(&zone)
        .send()
        .await
        .expect("GetHostedZone");
    assert_eq!(
        live.hosted_zone()
            .and_then(|z| z.config())
            .and_then(|c| c.comment()),
        Some("cdkd e2e, v2")
    );
    let (code, text) = run("diff", "kms-layer-dns-v2", &bucket, &["--fail"], None);
    assert_eq!(code, 0, "a phantom change right after deploy v2: {text}");

    // Destroy: nothing is left (a key waits out its deletion window, as KMS keys do).
    let (code, text) = run(
        "destroy",
        "kms-layer-dns-v2",
        &bucket,
        &[STACK, "--force"],
        None,
    );
    assert_eq!(code, 0, "destroy: {text}");
    let meta = kms
        .describe_key()
        .key_id(&key)
        .send()
        .await
        .expect("DescribeKey")
        .key_metadata
        .expect("metadata");
    assert_eq!(meta.key_state(), Some(&KeyState::PendingDeletion));
    let aliases = kms
        .list_aliases()
        .key_id(&key)
        .send()
        .await
        .expect("ListAliases");
    assert!(aliases.aliases().is_empty(), "{aliases:?}");
    let layer_name = layer.rsplit_once(':').map(|(l, _)| l).expect("layer ARN");
    let versions = lambda
        .list_layer_versions()
        .layer_name(layer_name)
        .send()
        .await;
    assert!(
        versions
            .as_ref()
            .map_or(true, |v| v.layer_versions().is_empty()),
        "the layer version survived: {versions:?}"
    );
    assert!(lambda
        .get_function()
        .function_name(&function)
        .send()
        .await
        .is_err());
    assert!(
        r53.get_hosted_zone().id(&zone).send().await.is_err(),
        "the zone survived"
    );
    let _ = std::fs::remove_file(&trace);
}

/// A stack recorded through Cloud Control for a type that now has an SDK provider, pinned
/// there (the hosted zone is not in `SAME_ID_ON_BOTH_ROUTES`), diffs clean, and its update
/// goes through Cloud Control, whose model moves (issue 19, Done when 4).
#[tokio::test]
async fn a_hosted_zone_recorded_through_cloud_control_diffs_clean_and_updates_there() {
    let app = support::app::App::new("cdkd-zone-pinned");
    let stack = "ZonePinned";
    let domain = format!("{}.example.com.", unique_name("pinned"));
    let props = |comment: &str| json!({"Name": domain, "HostedZoneConfig": {"Comment": comment}});
    let id = cc_create("AWS::Route53::HostedZone", &props("v1")).await;
    pinned_state(
        &app,
        stack,
        "Zone",
        "AWS::Route53::HostedZone",
        &id,
        &props("v1"),
        json!({"Id": id}),
    )
    .await;
    let template = |comment: &str| json!({"Resources": {"Zone": {"Type": "AWS::Route53::HostedZone", "Properties": props(comment)}}});
    app.write_stacks(&[(stack, &template("v1"), &[])]);
    let (code, text) = diff_fail(&app);
    assert_eq!(code, 0, "the recorded stack diffs clean: {text}");

    app.write_stacks(&[(stack, &template("v2"), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    let rec = app.record(stack);
    assert_eq!(
        rec["resources"]["Zone"]["provisionedBy"],
        json!("cc-api"),
        "{rec}"
    );
    assert_eq!(rec["resources"]["Zone"]["physicalId"], json!(id));
    let model = cc_properties("AWS::Route53::HostedZone", &id).await;
    assert_eq!(model["HostedZoneConfig"]["Comment"], json!("v2"), "{model}");
    let (code, text) = diff_fail(&app);
    assert_eq!(code, 0, "clean after the update: {text}");
}

/// A KMS key recorded through Cloud Control (the emulator makes it real in KMS, as Cloud
/// Control does in AWS) diffs clean, then returns to the SDK provider on its update: the
/// SDK provider addresses it by the key id Cloud Control recorded (`SAME_ID_ON_BOTH_ROUTES`),
/// so the record flips to `sdk` with the same physical id and the change is made through KMS.
#[tokio::test]
async fn a_kms_key_recorded_through_cloud_control_returns_to_the_sdk_provider() {
    let app = support::app::App::new("cdkd-key-return");
    let stack = "KeyReturn";
    let props = |description: &str| json!({"Description": description, "EnableKeyRotation": true});
    let id = cc_create("AWS::KMS::Key", &props("v1")).await;
    let arn = format!("arn:aws:kms:us-east-1:123456789012:key/{id}");
    pinned_state(
        &app,
        stack,
        "Key",
        "AWS::KMS::Key",
        &id,
        &props("v1"),
        json!({"Arn": arn, "KeyId": id}),
    )
    .await;
    let template = |description: &str| json!({"Resources": {"Key": {"Type": "AWS::KMS::Key", "Properties": props(description)}}});
    app.write_stacks(&[(stack, &template("v1"), &[])]);
    let (code, text) = diff_fail(&app);
    assert_eq!(code, 0, "the recorded stack diffs clean: {text}");

    app.write_stacks(&[(stack, &template("v2"), &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("returns to its SDK provider"), "{stderr}");
    let rec = app.record(stack);
    assert_eq!(
        rec["resources"]["Key"]["provisionedBy"],
        json!("sdk"),
        "{rec}"
    );
    assert_eq!(rec["resources"]["Key"]["physicalId"], json!(id));
    assert_eq!(
        rec["resources"]["Key"]["attributes"]["Arn"],
        json!(arn),
        "{rec}"
    );
    let kms = aws_sdk_kms::Client::new(&sdk_config().await);
    let meta = kms
        .describe_key()
        .key_id(&id)
        .send()
        .await
        .expect("DescribeKey")
        .key_metadata
        .expect("metadata");
    assert_eq!(meta.description(), Some("v2"));
    let (code, text) = diff_fail(&app);
    assert_eq!(code, 0, "clean after the update: {text}");
}
