//! `cdkd scrub` across stacks, end to end against the emulator: the exports index entry a
//! stack owns is converged onto its scrubbed `state.outputs` (and no index version keeps the
//! plaintext), an index write S3 refuses (or an index read, under `--dry-run`) exits 2 with
//! SCRUB_EXPORT_INDEX_INCOMPLETE, a nested child is scrubbed with the secret learned from its
//! parent's row, a consumer's copy of a secret-bearing export is rewritten (and refused while
//! the producer still stores the plaintext), an unreadable producer exits 2, and a deleted
//! output another stack imports is kept and reported.
//!
//! Every record is written straight into the state bucket, as an older cdkd would have
//! written it.

use crate::support;

use serde_json::{json, Value};
use support::app::App;
use support::{cdkd, s3_client, sdk_config, unique_name};

const REGION: &str = "us-east-1";

fn name(prefix: &str) -> String {
    format!("Sx{}", unique_name(prefix).replace('-', "x"))
}

/// `cdkd scrub --app DIR --state-bucket B ...`: (exit code, stdout + stderr).
fn scrub(app: &App, extra: &[&str]) -> (i32, String) {
    let dir = app.dir.path();
    let out = cdkd()
        .current_dir(dir)
        .arg("scrub")
        .args(["--app", dir.to_str().expect("utf-8 path")])
        .args(["--state-bucket", &app.bucket])
        .args(extra)
        .output()
        .expect("runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("--- cdkd scrub {extra:?}\n{text}");
    (out.status.code().unwrap_or(-1), text)
}

fn state_key(stack: &str) -> String {
    format!("cdkd/{stack}/{REGION}/state.json")
}

fn index_key() -> String {
    format!("cdkd/_index/{REGION}/exports.json")
}

async fn put(app: &App, key: &str, body: &Value) {
    s3_client()
        .await
        .put_object()
        .bucket(&app.bucket)
        .key(key)
        .body(body.to_string().into_bytes().into())
        .send()
        .await
        .expect("put");
}

async fn get(app: &App, key: &str) -> Value {
    let out = s3_client()
        .await
        .get_object()
        .bucket(&app.bucket)
        .key(key)
        .send()
        .await
        .expect("get");
    let bytes = out.body.collect().await.expect("body").into_bytes();
    serde_json::from_slice(&bytes).expect("json")
}

/// A Secrets Manager secret `{"password": plain}`; returns its `{{resolve:...}}` reference.
async fn secret(plain: &str) -> String {
    let name = unique_name("scrub-cross");
    aws_sdk_secretsmanager::Client::new(&sdk_config().await)
        .create_secret()
        .name(&name)
        .secret_string(json!({ "password": plain }).to_string())
        .send()
        .await
        .expect("create secret");
    format!("{{{{resolve:secretsmanager:{name}:SecretString:password}}}}")
}

fn param(value: Value) -> Value {
    json!({"Type": "AWS::SSM::Parameter", "Properties": {"Type": "String", "Value": value}})
}

/// A state record as an older cdkd wrote it: one SSM parameter row per `(id, value)`.
fn record(stack: &str, rows: &[(&str, &str)], outputs: Value) -> Value {
    let resources: serde_json::Map<String, Value> = rows
        .iter()
        .map(|(id, value)| {
            (
                id.to_string(),
                json!({"physicalId": format!("/{stack}/{id}"), "resourceType": "AWS::SSM::Parameter",
                       "properties": {"Type": "String", "Value": value}}),
            )
        })
        .collect();
    json!({"version": 11, "stackName": stack, "region": REGION,
           "resources": resources, "outputs": outputs, "lastModified": 1})
}

fn index(entries: Value) -> Value {
    json!({"indexVersion": 1, "region": REGION, "exports": entries, "lastModified": 1})
}

fn entry(value: &str, producer: &str) -> Value {
    json!({"value": value, "producerStack": producer, "producerRegion": REGION})
}

fn assert_nowhere(versions: &[(String, String)], plain: &str) {
    for (version, body) in versions {
        assert!(!body.contains(plain), "plaintext left in {version}");
    }
}

/// A producer exporting a secret, its record and the index entry holding the plaintext.
async fn exporting_producer(app: &App, plain: &str) -> (String, String, String) {
    let stack = name("prod");
    let export = format!("{stack}-DbPw");
    let reference = secret(plain).await;
    let template = json!({
        "Resources": {"Pw": param(json!(reference))},
        "Outputs": {"DbPw": {"Value": reference, "Export": {"Name": export}}}
    });
    app.write_stacks(&[(&stack, &template, &[])]);
    let outputs = json!({"DbPw": plain, export.clone(): plain});
    let mut rec = record(&stack, &[("Pw", plain)], outputs);
    rec["exportNames"] = json!([export]);
    put(app, &state_key(&stack), &rec).await;
    let entries = json!({
        export.clone(): entry(plain, &stack),
        "OtherAppExport": entry("public-value", "SomeOtherAppStack")
    });
    put(app, &index_key(), &index(entries)).await;
    (stack, export, reference)
}

#[tokio::test]
async fn the_exports_index_entry_is_converged_and_its_history_purged() {
    let app = App::new("cdkd-scrubx");
    let plain = "Pl41nIndexSecret";
    let (stack, export, reference) = exporting_producer(&app, plain).await;

    let before = app.every_object_version().await;
    let (code, text) = scrub(&app, &[&stack, "--dry-run", "--fail"]);
    assert_eq!(code, 1, "the dry run finds the record and the entry");
    assert!(text.contains("exports index"), "{text}");
    assert!(!text.contains(plain));
    assert_eq!(
        app.every_object_version().await,
        before,
        "--dry-run wrote nothing"
    );

    let (code, text) = scrub(&app, &[&stack]);
    assert_eq!(code, 0, "the real run");
    assert!(
        text.contains("coverage"),
        "another app's entry is coverage: {text}"
    );
    let idx = get(&app, &index_key()).await;
    assert_eq!(idx["exports"][&export]["value"], json!(reference));
    assert_eq!(
        idx["exports"]["OtherAppExport"],
        entry("public-value", "SomeOtherAppStack"),
        "another producer's entry is never touched"
    );
    assert_nowhere(&app.every_object_version().await, plain);

    // The record already held the expression: the index alone still makes the gate red.
    put(
        &app,
        &index_key(),
        &index(json!({export.clone(): entry(plain, &stack)})),
    )
    .await;
    let (code, _) = scrub(&app, &[&stack, "--dry-run", "--fail"]);
    assert_eq!(code, 1, "a divergent entry alone is a finding");
    let (code, _) = scrub(&app, &[&stack]);
    assert_eq!(code, 0);
    let (code, text) = scrub(&app, &[&stack, "--dry-run", "--fail"]);
    assert_eq!(code, 0, "clean after the real run: {text}");
    assert_nowhere(&app.every_object_version().await, plain);
}

async fn deny(app: &App, action: &str) {
    let policy = json!({"Version": "2012-10-17", "Statement": [{
        "Effect": "Deny", "Principal": "*", "Action": action,
        "Resource": format!("arn:aws:s3:::{}/cdkd/_index/*", app.bucket)
    }]});
    s3_client()
        .await
        .put_bucket_policy()
        .bucket(&app.bucket)
        .policy(policy.to_string())
        .send()
        .await
        .expect("bucket policy");
}

#[tokio::test]
async fn an_index_entry_scrub_cannot_write_or_read_exits_2() {
    let app = App::new("cdkd-scrubx");
    let plain = "Pl41nDeniedIndex";
    let (stack, export, _) = exporting_producer(&app, plain).await;

    deny(&app, "s3:GetObject").await;
    let (code, text) = scrub(&app, &[&stack, "--dry-run"]);
    assert_eq!(code, 2, "an index the dry run cannot read");
    assert!(text.contains("SCRUB_EXPORT_INDEX_INCOMPLETE"), "{text}");
    let (code, _) = scrub(&app, &[&stack, "--dry-run", "--fail"]);
    assert_eq!(code, 2, "ranked above --fail's 1");

    deny(&app, "s3:PutObject").await;
    let (code, text) = scrub(&app, &[&stack]);
    assert_eq!(code, 2, "an entry the real run could not write");
    assert!(text.contains("SCRUB_EXPORT_INDEX_INCOMPLETE"), "{text}");
    assert!(text.contains(&export), "the entry is named: {text}");
    assert!(!text.contains(plain));
    let record = get(&app, &state_key(&stack)).await;
    assert!(
        !record.to_string().contains(plain),
        "the record itself was still scrubbed"
    );
}

#[tokio::test]
async fn a_nested_child_is_scrubbed_with_the_secret_its_parent_passes() {
    let app = App::new("cdkd-scrubx");
    let plain = "Pl41nNestedSecret";
    let reference = secret(plain).await;
    // The child's own secret: only the child's scrub knows it, so the parent's mirror of the
    // child's output is rewritten by the nested pass, not by the parent's own.
    let own_plain = "Pl41nChildOwnSecret";
    let own_reference = secret(own_plain).await;
    let parent = name("parent");
    let child = format!("{parent}~Child");
    let child_template = json!({
        "Parameters": {"DbPass": {"Type": "String"}},
        "Resources": {"Inner": param(json!({"Ref": "DbPass"})), "Own": param(json!(own_reference))},
        "Outputs": {"Echo": {"Value": {"Fn::Sub": "pw=${DbPass}"}}, "OwnPw": {"Value": own_reference}}
    });
    std::fs::write(
        app.dir.path().join("child.nested.template.json"),
        child_template.to_string(),
    )
    .expect("child template");
    let parent_template = json!({
        "Resources": {"Child": {
            "Type": "AWS::CloudFormation::Stack",
            "Metadata": {"aws:asset:path": "child.nested.template.json"},
            "Properties": {"TemplateURL": "https://example.invalid/child.json",
                           "Parameters": {"DbPass": reference}}
        }}
    });
    app.write_stacks(&[(&parent, &parent_template, &[])]);
    let parent_record = json!({"version": 11, "stackName": parent, "region": REGION,
        "resources": {"Child": {
            "physicalId": format!("arn:cdkd-local:{REGION}:123456789012:nested-stack/{parent}/Child"),
            "resourceType": "AWS::CloudFormation::Stack",
            "properties": {"TemplateURL": "https://example.invalid/child.json",
                           "Parameters": {"DbPass": plain}},
            "attributes": {"Outputs.Echo": format!("pw={plain}"), "Outputs.OwnPw": own_plain}
        }},
        "outputs": {}, "lastModified": 1});
    put(&app, &state_key(&parent), &parent_record).await;
    let mut child_record = record(
        &child,
        &[("Inner", plain), ("Own", own_plain)],
        json!({"Echo": format!("pw={plain}"), "OwnPw": own_plain}),
    );
    child_record["parentStack"] = json!(parent);
    child_record["parentLogicalId"] = json!("Child");
    child_record["parentRegion"] = json!(REGION);
    put(&app, &state_key(&child), &child_record).await;

    let before = app.every_object_version().await;
    let (code, text) = scrub(&app, &[&parent, "--dry-run", "--fail"]);
    assert_eq!(code, 1, "the child's plaintext is found through its parent");
    assert!(text.contains(&child), "the child has its own line: {text}");
    assert!(
        text.contains("would scrub 1 nested-stack output attribute(s)"),
        "{text}"
    );
    assert_eq!(
        app.every_object_version().await,
        before,
        "--dry-run wrote nothing"
    );

    let (code, text) = scrub(&app, &[&parent]);
    assert_eq!(code, 0, "the real run");
    assert!(
        text.contains("Scrubbed 1 nested-stack output attribute(s)"),
        "{text}"
    );
    let child_after = get(&app, &state_key(&child)).await;
    assert_eq!(
        child_after["resources"]["Inner"]["properties"]["Value"],
        json!(reference),
        "the child record holds the parent's expression"
    );
    let echo = format!("pw={reference}");
    assert_eq!(child_after["outputs"]["Echo"], json!(echo));
    let parent_after = get(&app, &state_key(&parent)).await;
    assert_eq!(
        parent_after["resources"]["Child"]["attributes"]["Outputs.Echo"],
        json!(echo),
        "the parent's mirror of the child output"
    );
    assert_eq!(
        parent_after["resources"]["Child"]["attributes"]["Outputs.OwnPw"],
        json!(own_reference),
        "rewritten to the child's output by the nested pass"
    );
    let versions = app.every_object_version().await;
    assert_nowhere(&versions, plain);
    assert_nowhere(&versions, own_plain);
    let (code, text) = scrub(&app, &[&parent, "--dry-run", "--fail"]);
    assert_eq!(code, 0, "clean afterwards: {text}");
}

/// A producer that declares an export from a secret, and a consumer importing it.
async fn producer_and_consumer(
    app: &App,
    plain: &str,
    producer_scrubbed: bool,
) -> (String, String, String) {
    let reference = secret(plain).await;
    let producer = name("src");
    let consumer = name("dst");
    let export = format!("{producer}-Pw");
    let producer_template = json!({
        "Resources": {"Pw": param(json!(reference))},
        "Outputs": {"Pw": {"Value": reference, "Export": {"Name": export}}}
    });
    let consumer_template = json!({
        "Resources": {"Copy": param(json!({"Fn::ImportValue": export}))}
    });
    app.write_stacks(&[
        (&producer, &producer_template, &[]),
        (&consumer, &consumer_template, &[producer.as_str()]),
    ]);
    let stored = if producer_scrubbed {
        reference.as_str()
    } else {
        plain
    };
    let mut p = record(
        &producer,
        &[("Pw", stored)],
        json!({"Pw": stored, export.clone(): stored}),
    );
    p["exportNames"] = json!([export]);
    put(app, &state_key(&producer), &p).await;
    let mut c = record(&consumer, &[("Copy", plain)], json!({}));
    c["imports"] = json!([{"sourceStack": producer, "sourceRegion": REGION, "exportName": export}]);
    put(app, &state_key(&consumer), &c).await;
    (producer, consumer, reference)
}

#[tokio::test]
async fn a_consumers_copy_of_a_secret_bearing_export_is_rewritten() {
    let app = App::new("cdkd-scrubx");
    let plain = "Pl41nImportedSecret";
    let (_, consumer, reference) = producer_and_consumer(&app, plain, true).await;

    let (code, text) = scrub(&app, &[&consumer, "--dry-run", "--fail"]);
    assert_eq!(code, 1, "the imported plaintext is found: {text}");
    let (code, _) = scrub(&app, &[&consumer]);
    assert_eq!(code, 0);
    let after = get(&app, &state_key(&consumer)).await;
    assert_eq!(
        after["resources"]["Copy"]["properties"]["Value"],
        json!(reference)
    );
    assert_nowhere(&app.every_object_version().await, plain);
}

#[tokio::test]
async fn a_producer_still_storing_the_plaintext_refuses_its_consumer_until_scrubbed_first() {
    let app = App::new("cdkd-scrubx");
    let plain = "Pl41nChainSecret";
    let (producer, consumer, reference) = producer_and_consumer(&app, plain, false).await;

    let consumer_key = state_key(&consumer);
    let before = get(&app, &consumer_key).await;
    let (code, text) = scrub(&app, &[&consumer]);
    assert_eq!(code, 2, "refused: the producer still stores the plaintext");
    assert!(
        text.contains(&producer),
        "the refusal names the producer: {text}"
    );
    assert_eq!(
        get(&app, &consumer_key).await,
        before,
        "nothing was written"
    );
    let (code, _) = scrub(&app, &[&consumer, "--dry-run", "--fail"]);
    assert_eq!(code, 2, "also under --dry-run");

    // --all scrubs the producer first, so the consumer's read then carries the expression.
    let (code, text) = scrub(&app, &["--all", "--dry-run", "--fail"]);
    assert_eq!(code, 1, "the dry run of both finds plaintext: {text}");
    let (code, _) = scrub(&app, &["--all"]);
    assert_eq!(code, 0);
    let after = get(&app, &consumer_key).await;
    assert_eq!(
        after["resources"]["Copy"]["properties"]["Value"],
        json!(reference)
    );
    assert_nowhere(&app.every_object_version().await, plain);
}

#[tokio::test]
async fn a_cross_stack_read_whose_producer_cannot_be_read_exits_2() {
    let app = App::new("cdkd-scrubx");
    let plain = "Pl41nUnreadable";
    let reference = secret(plain).await;
    let consumer = name("lost");
    let damaged = name("damaged");
    let template = json!({
        "Resources": {
            "Own": param(json!(reference)),
            "Gone": param(json!({"Fn::ImportValue": format!("{consumer}-NoSuchExport")}))
        }
    });
    app.write_stacks(&[(&consumer, &template, &[])]);
    let rec = record(&consumer, &[("Own", plain), ("Gone", "x")], json!({}));
    put(&app, &state_key(&consumer), &rec).await;
    let key = state_key(&consumer);
    for extra in [&[][..], &["--dry-run"][..], &["--dry-run", "--fail"][..]] {
        let mut args = vec![consumer.as_str()];
        args.extend_from_slice(extra);
        let (code, text) = scrub(&app, &args);
        assert_eq!(code, 2, "an unresolvable import refuses with {extra:?}");
        assert!(
            text.contains("Gone"),
            "the refusal names the resource: {text}"
        );
    }
    assert_eq!(get(&app, &key).await, rec, "a refused stack is not written");

    // A producer whose outputs map is damaged: the read is unverifiable, the rest is scrubbed.
    let template = json!({
        "Resources": {
            "Own": param(json!(reference)),
            "Read": param(json!({"Fn::GetStackOutput": {"StackName": damaged, "OutputName": "X"}}))
        }
    });
    app.write_stacks(&[(&consumer, &template, &[])]);
    put(
        &app,
        &key,
        &record(&consumer, &[("Own", plain), ("Read", "x")], json!({})),
    )
    .await;
    let broken = json!({"version": 11, "stackName": damaged, "region": REGION,
                        "resources": {}, "outputs": "abcdef"});
    put(&app, &state_key(&damaged), &broken).await;
    let (code, text) = scrub(&app, &[&consumer]);
    assert_eq!(code, 2, "an unreadable producer exits 2 without --fail");
    assert!(text.contains("could NOT be verified"), "{text}");
    let after = get(&app, &key).await;
    assert_eq!(
        after["resources"]["Own"]["properties"]["Value"],
        json!(reference),
        "the rest of the stack was still scrubbed"
    );
}

#[tokio::test]
async fn a_deleted_output_another_stack_imports_is_kept_and_reported() {
    let app = App::new("cdkd-scrubx");
    let plain = "Pl41nKeptOutput";
    let reference = secret(plain).await;
    let producer = name("keep");
    let reader = name("reader");
    let template = json!({"Resources": {"Pw": param(json!(reference))}});
    app.write_stacks(&[(&producer, &template, &[])]);
    // OldPw holds a plaintext this run cannot recognise (the secret has since rotated);
    // Gone likewise, but nobody reads it.
    let rec = record(
        &producer,
        &[("Pw", plain)],
        json!({"OldPw": "rotated-away-value", "Gone": "another-old-value"}),
    );
    put(&app, &state_key(&producer), &rec).await;
    let reader_rec = json!({"version": 11, "stackName": reader, "region": REGION,
        "resources": {}, "outputs": {},
        "imports": [{"sourceStack": producer, "sourceRegion": REGION, "exportName": "OldPw"}]});
    put(&app, &state_key(&reader), &reader_rec).await;

    let (code, text) = scrub(&app, &[&producer]);
    assert_eq!(code, 0, "a real run without --fail: {text}");
    assert!(text.contains("OldPw"), "the kept key is reported: {text}");
    let after = get(&app, &state_key(&producer)).await;
    assert_eq!(
        after["outputs"]["OldPw"],
        json!("rotated-away-value"),
        "kept"
    );
    assert!(
        after["outputs"].get("Gone").is_none(),
        "the unread key is dropped"
    );
    assert_eq!(
        after["resources"]["Pw"]["properties"]["Value"],
        json!(reference)
    );
    let (code, _) = scrub(&app, &[&producer, "--dry-run", "--fail"]);
    assert_eq!(code, 1, "the kept key keeps --fail red");
}

#[tokio::test]
async fn a_complete_reference_to_a_secret_in_another_region_that_cannot_be_read_exits_2() {
    let app = App::new("cdkd-scrubx");
    let stack = name("xregion");
    let arn = format!(
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:{}-AbCdEf",
        unique_name("gone")
    );
    let reference = format!("{{{{resolve:secretsmanager:{arn}:SecretString:pw}}}}");
    let template = json!({"Resources": {"Far": param(json!(reference))}});
    app.write_stacks(&[(&stack, &template, &[])]);
    let rec = record(&stack, &[("Far", "whatever-it-was")], json!({}));
    put(&app, &state_key(&stack), &rec).await;
    for extra in [&[][..], &["--dry-run"][..], &["--dry-run", "--fail"][..]] {
        let mut args = vec![stack.as_str()];
        args.extend_from_slice(extra);
        let (code, text) = scrub(&app, &args);
        assert_eq!(code, 2, "refused with {extra:?}");
        assert!(
            text.contains("SCRUB_CROSS_REGION_SECRET_UNRESOLVED"),
            "{text}"
        );
    }
    assert_eq!(
        get(&app, &state_key(&stack)).await,
        rec,
        "nothing was written"
    );
}

#[tokio::test]
async fn a_record_older_than_the_read_fields_keeps_every_undeclared_key() {
    let app = App::new("cdkd-scrubx");
    let plain = "Pl41nOldReader";
    let reference = secret(plain).await;
    let producer = name("oldrd");
    let template = json!({"Resources": {"Pw": param(json!(reference))}});
    app.write_stacks(&[(&producer, &template, &[])]);
    let rec = record(&producer, &[("Pw", plain)], json!({"Stale": "old-value"}));
    put(&app, &state_key(&producer), &rec).await;
    // Written before schema v8: it records no outputReads, so it may read anything.
    let old = name("old");
    let old_rec = json!({"version": 7, "stackName": old, "region": REGION,
                         "resources": {}, "outputs": {}});
    put(&app, &state_key(&old), &old_rec).await;

    let (code, text) = scrub(&app, &[&producer]);
    assert_eq!(code, 0, "{text}");
    let after = get(&app, &state_key(&producer)).await;
    assert_eq!(after["outputs"]["Stale"], json!("old-value"), "kept");
    assert_eq!(
        after["resources"]["Pw"]["properties"]["Value"],
        json!(reference)
    );
    let (code, _) = scrub(&app, &[&producer, "--dry-run", "--fail"]);
    assert_eq!(code, 1, "kept and reported");
}

#[tokio::test]
async fn a_re_export_chain_refuses_its_end_naming_every_stack_head_first() {
    let app = App::new("cdkd-scrubx");
    let plain = "Pl41nChainedSecret";
    let reference = secret(plain).await;
    let (head, middle, end) = (name("head"), name("mid"), name("end"));
    let (head_export, middle_export) = (format!("{head}-Pw"), format!("{middle}-Pw"));
    let head_t = json!({"Resources": {"Pw": param(json!(reference))},
        "Outputs": {"Pw": {"Value": reference, "Export": {"Name": head_export}}}});
    let middle_t = json!({"Resources": {},
        "Outputs": {"Pw": {"Value": {"Fn::ImportValue": head_export},
                           "Export": {"Name": middle_export}}}});
    let end_t = json!({"Resources": {"Copy": param(json!({"Fn::ImportValue": middle_export}))}});
    app.write_stacks(&[
        (&head, &head_t, &[]),
        (&middle, &middle_t, &[head.as_str()]),
        (&end, &end_t, &[middle.as_str()]),
    ]);
    let head_rec = record(
        &head,
        &[("Pw", plain)],
        json!({"Pw": plain, head_export.clone(): plain}),
    );
    put(&app, &state_key(&head), &head_rec).await;
    let middle_rec = record(
        &middle,
        &[],
        json!({"Pw": plain, middle_export.clone(): plain}),
    );
    put(&app, &state_key(&middle), &middle_rec).await;
    let end_rec = record(&end, &[("Copy", plain)], json!({}));
    put(&app, &state_key(&end), &end_rec).await;

    let (code, text) = scrub(&app, &[&end]);
    assert_eq!(code, 2, "the end of an unscrubbed chain is refused");
    let (h, m) = (text.find(&format!("scrub {head}")), text.rfind(&middle));
    assert!(
        h.is_some() && m.is_some() && h < m,
        "the remedy names the chain head first: {text}"
    );
    assert_eq!(
        get(&app, &state_key(&end)).await,
        end_rec,
        "nothing was written"
    );
}

/// A parent passing `params` to a child with `child_template`; the child's record holds
/// `rows` (SSM parameter rows). Returns (parent, child).
async fn nested_pair(
    app: &App,
    child_template: &Value,
    params: Value,
    stored_params: Value,
    rows: &[(&str, &str)],
) -> (String, String) {
    let parent = name("parent");
    let child = format!("{parent}~Child");
    std::fs::write(
        app.dir.path().join("child.nested.template.json"),
        child_template.to_string(),
    )
    .expect("child template");
    let parent_template = json!({
        "Resources": {"Child": {
            "Type": "AWS::CloudFormation::Stack",
            "Metadata": {"aws:asset:path": "child.nested.template.json"},
            "Properties": {"TemplateURL": "https://example.invalid/child.json",
                           "Parameters": params}
        }}
    });
    app.write_stacks(&[(&parent, &parent_template, &[])]);
    let parent_record = json!({"version": 11, "stackName": parent, "region": REGION,
        "resources": {"Child": {
            "physicalId": format!("arn:cdkd-local:{REGION}:123456789012:nested-stack/{parent}/Child"),
            "resourceType": "AWS::CloudFormation::Stack",
            "properties": {"TemplateURL": "https://example.invalid/child.json",
                           "Parameters": stored_params},
            "attributes": {}
        }},
        "outputs": {}, "lastModified": 1});
    put(app, &state_key(&parent), &parent_record).await;
    let mut child_record = record(&child, rows, json!({}));
    child_record["parentStack"] = json!(parent);
    child_record["parentLogicalId"] = json!("Child");
    child_record["parentRegion"] = json!(REGION);
    put(app, &state_key(&child), &child_record).await;
    (parent, child)
}

#[tokio::test]
async fn a_childs_parameters_are_bound_to_what_its_parent_passes() {
    let app = App::new("cdkd-scrubx");
    let plain = "Pl41nBoundSecret";
    let reference = secret(plain).await;
    let token = "T0kenPassedLiteral";
    // No Default on either parameter, and a pattern only the plaintext would meet.
    let child_template = json!({
        "Parameters": {
            "DbPass": {"Type": "String", "AllowedPattern": "^[A-Za-z0-9]+$"},
            "Token": {"Type": "String", "NoEcho": true}
        },
        "Resources": {
            "Reader": param(json!({"Fn::Sub": "pw=${DbPass}"})),
            "TokenUser": param(json!({"Ref": "Token"}))
        }
    });
    let (parent, child) = nested_pair(
        &app,
        &child_template,
        json!({"DbPass": reference, "Token": token}),
        json!({"DbPass": plain, "Token": token}),
        &[("Reader", &format!("pw={plain}")), ("TokenUser", token)],
    )
    .await;

    let (code, text) = scrub(&app, &[&parent, "--dry-run", "--fail"]);
    assert_eq!(code, 1, "the child's plaintext is found by position");
    assert!(
        !text.contains("placeholder"),
        "the passed parameter is bound: {text}"
    );
    let (code, text) = scrub(&app, &[&parent]);
    assert_eq!(code, 0, "the real run: {text}");
    let after = get(&app, &state_key(&child)).await;
    assert_eq!(
        after["resources"]["Reader"]["properties"]["Value"],
        json!(format!("pw={reference}")),
        "the position the parameter fills holds the parent's expression"
    );
    assert_eq!(
        after["resources"]["TokenUser"]["properties"]["Value"],
        json!("***"),
        "the child's NoEcho parameter is masked"
    );
    assert!(
        after["resources"]["TokenUser"]["noEchoLeaves"]
            .to_string()
            .contains("Value"),
        "{after}"
    );
    assert!(!after.to_string().contains(plain));
    assert!(!after.to_string().contains(token));
    let (code, text) = scrub(&app, &[&parent, "--dry-run", "--fail"]);
    assert_eq!(code, 0, "clean afterwards: {text}");
}

#[tokio::test]
async fn a_parent_passed_secret_is_looked_for_only_in_the_resources_reading_it() {
    let app = App::new("cdkd-scrubx");
    let plain = "Pl41nScopedSecret";
    let reference = secret(plain).await;
    // `Unrelated` is a literal of the child's template that merely contains the same text.
    let literal = format!("note {plain}");
    let child_template = json!({
        "Parameters": {"DbPass": {"Type": "String"}},
        "Resources": {
            "Reader": param(json!({"Ref": "DbPass"})),
            "Unrelated": param(json!(literal))
        }
    });
    let (parent, child) = nested_pair(
        &app,
        &child_template,
        json!({"DbPass": reference}),
        json!({"DbPass": reference}),
        &[("Reader", plain), ("Unrelated", &literal)],
    )
    .await;

    let (code, text) = scrub(&app, &[&parent]);
    assert_eq!(code, 0, "the real run: {text}");
    let after = get(&app, &state_key(&child)).await;
    assert_eq!(
        after["resources"]["Reader"]["properties"]["Value"],
        json!(reference),
        "the reader of the parameter is rewritten"
    );
    assert_eq!(
        after["resources"]["Unrelated"]["properties"]["Value"],
        json!(literal),
        "a resource that does not read the parameter is left alone"
    );
    // A second run learns the expression now stored in the child, and still leaves it alone.
    let (code, text) = scrub(&app, &[&parent]);
    assert_eq!(code, 0, "{text}");
    let again = get(&app, &state_key(&child)).await;
    assert_eq!(
        again["resources"]["Unrelated"]["properties"]["Value"],
        json!(literal)
    );
}
