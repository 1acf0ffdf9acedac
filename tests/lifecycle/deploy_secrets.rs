//! `cdkd deploy` and secrets, end to end against the emulator: values resolved from Secrets
//! Manager / ssm-secure dynamic references and NoEcho parameter values reach AWS but never the
//! state bucket (any version of any object) nor the terminal; a redeploy says "no changes";
//! cross-stack reads are recorded as `imports` / `outputReads`.

use crate::support;

use serde_json::{json, Value};
use support::app::App;
use support::{sdk_config, unique_name};

const REGION: &str = "us-east-1";

/// A cloud assembly in a temp dir, with its own bootstrapped state bucket.
fn stack_name(prefix: &str) -> String {
    format!("Sec{}", unique_name(prefix).replace('-', "x"))
}

#[tokio::test]
async fn secrets_and_no_echo_values_never_reach_state_or_the_terminal() {
    let app = App::new("cdkd-secrets");
    let stack = stack_name("secrets");
    let base = format!("/cdkd-test/{}", unique_name("sec"));
    let secret_name = unique_name("db-secret");
    let secret_plain = "Pl41nS3cretXyz";
    let secure_plain = "S3cureParamValue";
    let no_echo_plain = "N0Ech0Value";
    let public_value = "public-config-value";

    let config = sdk_config().await;
    let sm = aws_sdk_secretsmanager::Client::new(&config);
    sm.create_secret()
        .name(&secret_name)
        .secret_string(json!({"password": secret_plain, "user": "admin"}).to_string())
        .send()
        .await
        .expect("create secret");
    let ssm = aws_sdk_ssm::Client::new(&config);
    for (name, value, kind) in [
        (format!("{base}/secure"), secure_plain, "SecureString"),
        (format!("{base}/public"), public_value, "String"),
    ] {
        ssm.put_parameter()
            .name(name)
            .value(value)
            .r#type(kind.into())
            .overwrite(true)
            .send()
            .await
            .expect("put parameter");
    }

    let secret_ref = format!("{{{{resolve:secretsmanager:{secret_name}:SecretString:password}}}}");
    let secure_ref = format!("{{{{resolve:ssm-secure:{base}/secure}}}}");
    let public_ref = format!("{{{{resolve:ssm:{base}/public}}}}");
    let param = |id: &str, value: Value| {
        json!({
            "Type": "AWS::SSM::Parameter",
            "Properties": {"Name": format!("{base}/{id}"), "Type": "String", "Value": value}
        })
    };
    let template = json!({
        "Parameters": {
            "DbPass": {"Type": "String", "NoEcho": true, "Default": "unused-default"}
        },
        "Resources": {
            "FromSecret": param("from-secret", json!(secret_ref)),
            "FromSecure": param("from-secure", json!({"Fn::Sub": format!("pw={secure_ref}")})),
            "FromNoEcho": param("from-noecho", json!({"Fn::Sub": "pw=${DbPass}"})),
            "FromPublic": param("from-public", json!(public_ref))
        },
        "Outputs": {
            "NoEchoOut": {"Value": {"Ref": "DbPass"}},
            "SecretEcho": {"Value": {"Fn::GetAtt": ["FromSecret", "Value"]}},
            "PublicOut": {"Value": {"Fn::GetAtt": ["FromPublic", "Value"]}},
            "Leaky": {
                "Value": "x",
                "Export": {"Name": {"Fn::Sub": "exp-${DbPass}"}}
            },
            "Fine": {"Value": "y", "Export": {"Name": format!("{stack}-fine")}},
            // The NoEcho value in full-width letters: refused, the name withheld.
            "Folded": {"Value": "z", "Export": {"Name": "exp-\u{FF2E}\u{FF10}\u{FF25}\u{FF43}\u{FF48}\u{FF10}\u{FF36}\u{FF41}\u{FF4C}\u{FF55}\u{FF45}"}},
            // A name that resolves a secret: refused, the secret masked.
            "SecretName": {"Value": "w", "Export": {"Name": format!("exp-{secure_ref}")}}
        }
    });
    app.write_stacks(&[(&stack, &template, &[])]);
    let overrides = format!("DbPass={no_echo_plain}");
    let (code, stdout, stderr) = app.deploy(&["--parameters", &overrides]);
    assert_eq!(code, 0, "deploy failed:\n{stderr}");

    // AWS got the real values.
    let got = |name: String| {
        let ssm = ssm.clone();
        async move {
            ssm.get_parameter()
                .name(name)
                .send()
                .await
                .expect("parameter exists")
                .parameter()
                .and_then(|p| p.value())
                .unwrap_or_default()
                .to_owned()
        }
    };
    assert_eq!(got(format!("{base}/from-secret")).await, secret_plain);
    assert_eq!(
        got(format!("{base}/from-secure")).await,
        format!("pw={secure_plain}")
    );
    assert_eq!(
        got(format!("{base}/from-noecho")).await,
        format!("pw={no_echo_plain}")
    );
    assert_eq!(got(format!("{base}/from-public")).await, public_value);

    // State holds expressions, masks and public values.
    let record = app.record(&stack);
    let res = &record["resources"];
    assert_eq!(res["FromSecret"]["properties"]["Value"], json!(secret_ref));
    assert_eq!(
        res["FromSecure"]["properties"]["Value"],
        json!(format!("pw={secure_ref}"))
    );
    assert_eq!(res["FromNoEcho"]["properties"]["Value"], json!("***"));
    assert_eq!(res["FromNoEcho"]["noEchoLeaves"], json!([["Value"]]));
    assert_eq!(
        res["FromPublic"]["properties"]["Value"],
        json!(public_value)
    );
    let outputs = &record["outputs"];
    assert_eq!(outputs["NoEchoOut"], json!("***"));
    assert_eq!(outputs["SecretEcho"], json!(secret_ref));
    assert_eq!(outputs["PublicOut"], json!(public_value));
    let exports = record["exportNames"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(exports, vec![json!(format!("{stack}-fine"))]);
    assert!(
        stderr.contains("Leaky") && stderr.contains("NoEcho parameter DbPass"),
        "the refused export is warned about:\n{stderr}"
    );
    let folded_line = stderr
        .lines()
        .find(|l| l.contains("output Folded"))
        .unwrap_or_else(|| panic!("the folded export is warned about:\n{stderr}"));
    assert!(folded_line.contains("(withheld)"), "{folded_line}");
    assert!(
        !stderr.contains('\u{FF2E}'),
        "the folded spelling is not shown"
    );
    assert!(
        stderr.contains("output SecretName") && stderr.contains("contains a resolved secret"),
        "the secret-bearing export is warned about:\n{stderr}"
    );

    // No plaintext anywhere: every version of every object, and the terminal.
    let plaintexts = [secret_plain, secure_plain, no_echo_plain];
    let objects = app.every_object_version().await;
    assert!(
        objects.iter().any(|(k, _)| k.contains("state.json")),
        "state was written: {:?}",
        objects.iter().map(|(k, _)| k).collect::<Vec<_>>()
    );
    for (key, body) in &objects {
        for p in plaintexts {
            assert!(!body.contains(p), "{key} holds a plaintext secret");
        }
    }
    for p in plaintexts {
        assert!(!stdout.contains(p), "stdout shows a secret:\n{stdout}");
        assert!(!stderr.contains(p), "stderr shows a secret:\n{stderr}");
    }

    // A second deploy changes nothing.
    let (code, stdout2, stderr2) = app.deploy(&["--parameters", &overrides]);
    assert_eq!(code, 0, "redeploy failed:\n{stderr2}");
    assert!(
        stderr2.to_lowercase().contains("no changes"),
        "the redeploy reports no changes:\n{stderr2}"
    );
    for p in plaintexts {
        assert!(!stdout2.contains(p) && !stderr2.contains(p));
    }
    // Nothing but the run's own deployment events (every run records one).
    let outside_events = |all: &[(String, String)]| {
        all.iter()
            .filter(|(k, _)| !support::is_event_store_key(k))
            .count()
    };
    let after = app.every_object_version().await;
    assert_eq!(
        outside_events(&after),
        outside_events(&objects),
        "the redeploy wrote nothing"
    );

    // A new NoEcho value behind the same template is found by reading the resource back
    // (the record only says ***), and sent; it is not written down either.
    let rotated = "R0tatedValue";
    let overrides = format!("DbPass={rotated}");
    let (code, stdout3, stderr3) = app.deploy(&["--parameters", &overrides]);
    assert_eq!(code, 0, "third deploy failed:\n{stderr3}");
    assert_eq!(
        got(format!("{base}/from-noecho")).await,
        format!("pw={rotated}")
    );
    assert!(!stdout3.contains(rotated) && !stderr3.contains(rotated));
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["FromNoEcho"]["properties"]["Value"],
        json!("***")
    );
    for (key, body) in app.every_object_version().await {
        for p in [secret_plain, secure_plain, no_echo_plain, rotated] {
            assert!(!body.contains(p), "{key} holds a plaintext secret");
        }
    }
}

#[tokio::test]
async fn a_consumer_records_its_imports_and_output_reads() {
    let app = App::new("cdkd-secrets");
    let producer = stack_name("producer");
    let consumer = stack_name("consumer");
    let base = format!("/cdkd-test/{}", unique_name("xs"));
    let export = format!("{producer}-param-name");
    let producer_template = json!({
        "Resources": {
            "Shared": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {"Name": format!("{base}/shared"), "Type": "String", "Value": "v1"}
            }
        },
        "Outputs": {
            "SharedName": {"Value": {"Ref": "Shared"}, "Export": {"Name": export}}
        }
    });
    let consumer_template = json!({
        "Resources": {
            "ViaImport": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {
                    "Name": format!("{base}/via-import"), "Type": "String",
                    "Value": {"Fn::ImportValue": export}
                }
            },
            "ViaOutput": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {
                    "Name": format!("{base}/via-output"), "Type": "String",
                    "Value": {"Fn::GetStackOutput": {
                        "StackName": producer, "OutputName": "SharedName"
                    }}
                }
            }
        }
    });
    app.write_stacks(&[
        (&producer, &producer_template, &[]),
        (&consumer, &consumer_template, &[producer.as_str()]),
    ]);
    let (code, _, stderr) = app.deploy(&[&producer, "-e"]);
    assert_eq!(code, 0, "producer deploy failed:\n{stderr}");
    let (code, _, stderr) = app.deploy(&[&consumer, "-e", "--no-cfn-fallback"]);
    assert_eq!(code, 0, "consumer deploy failed:\n{stderr}");

    let record = app.record(&consumer);
    let name = format!("{base}/shared");
    assert_eq!(
        record["resources"]["ViaImport"]["properties"]["Value"],
        json!(name)
    );
    assert_eq!(
        record["resources"]["ViaOutput"]["properties"]["Value"],
        json!(name)
    );
    assert_eq!(
        record["imports"],
        json!([{"sourceStack": producer, "sourceRegion": REGION, "exportName": export}])
    );
    assert_eq!(
        record["outputReads"],
        json!([{"sourceStack": producer, "sourceRegion": REGION, "outputName": "SharedName"}])
    );

    // Unchanged on a redeploy, which writes nothing.
    let (code, _, stderr) = app.deploy(&[&consumer, "-e"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.to_lowercase().contains("no changes"), "{stderr}");

    // A FAILED consumer deploy records its imports too (every save unions them), so the
    // producer's destroy still sees the consumer.
    let failing = stack_name("failing");
    let failing_template = json!({
        "Resources": {
            "ViaImport": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {
                    "Name": format!("{base}/failing-import"), "Type": "String",
                    "Value": {"Fn::ImportValue": export}
                }
            },
            "Bad": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {"Type": "Bogus", "Value": "x"}
            }
        }
    });
    app.write_stacks(&[
        (&producer, &producer_template, &[]),
        (&failing, &failing_template, &[producer.as_str()]),
    ]);
    let (code, _, stderr) = app.deploy(&[&failing, "-e", "--no-rollback"]);
    assert_eq!(code, 1, "{stderr}");
    let record = app.record(&failing);
    assert!(
        record["resources"].get("ViaImport").is_some(),
        "the created resource is kept: {record}"
    );
    assert_eq!(
        record["imports"],
        json!([{"sourceStack": producer, "sourceRegion": REGION, "exportName": export}])
    );
}

#[tokio::test]
async fn a_masked_output_reaches_a_consumer_deployed_in_the_same_run() {
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    let app = App::new("cdkd-secrets");
    let producer = stack_name("maskprod");
    let consumer = stack_name("maskcons");
    let secret = format!("tok-{}", unique_name("plain"));
    let export = format!("{producer}-token");
    let param_name = format!("/cdkd-test/{}/copy", unique_name("mask"));
    let producer_template = json!({
        "Parameters": {"Token": {"Type": "String", "NoEcho": true, "Default": secret}},
        "Resources": {
            "Marker": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {"Type": "String", "Value": "marker"}
            }
        },
        "Outputs": {"TokenOut": {"Value": {"Ref": "Token"}, "Export": {"Name": export}}}
    });
    let consumer_template = json!({
        "Resources": {
            "Copy": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {
                    "Name": param_name, "Type": "String",
                    "Value": {"Fn::ImportValue": export}
                }
            }
        }
    });
    app.write_stacks(&[
        (&producer, &producer_template, &[]),
        (&consumer, &consumer_template, &[producer.as_str()]),
    ]);
    let (code, stdout, stderr) = app.deploy(&["--all", "--no-cfn-fallback"]);
    assert_eq!(code, 0, "deploy failed:\n{stderr}");
    assert!(!stdout.contains(&secret) && !stderr.contains(&secret));

    // The producer stores the output masked; the consumer got the plaintext in AWS...
    assert_eq!(app.record(&producer)["outputs"]["TokenOut"], json!("***"));
    let value = ssm
        .get_parameter()
        .name(&param_name)
        .send()
        .await
        .expect("consumer parameter")
        .parameter
        .and_then(|p| p.value)
        .unwrap_or_default();
    assert_eq!(value, secret);
    // ...and no version of any state object holds it.
    for (key, body) in app.every_object_version().await {
        assert!(!body.contains(&secret), "plaintext in {key}");
    }
}

/// A secret shorter than 4 characters whose value another resource spells as a template
/// literal: the literal is stored as the template spells it (it is not a plaintext that came
/// from a reference), the reference's own position keeps its expression, and `cdkd diff
/// --fail` right after the deploy finds nothing to change.
#[tokio::test]
async fn a_literal_equal_to_a_short_secret_diffs_clean_after_the_deploy() {
    let app = App::new("cdkd-short-secret");
    let stack = stack_name("short");
    let base = format!("/cdkd-test/{}", unique_name("short"));
    let secret_name = unique_name("short-secret");
    let short_plain = "abc";

    let config = sdk_config().await;
    let sm = aws_sdk_secretsmanager::Client::new(&config);
    sm.create_secret()
        .name(&secret_name)
        .secret_string(short_plain)
        .send()
        .await
        .expect("create secret");

    let secret_ref = format!("{{{{resolve:secretsmanager:{secret_name}:SecretString}}}}");
    let param = |id: &str, value: Value| {
        json!({
            "Type": "AWS::SSM::Parameter",
            "Properties": {"Name": format!("{base}/{id}"), "Type": "String", "Value": value}
        })
    };
    let template = json!({
        "Resources": {
            "FromSecret": param("from-secret", json!(secret_ref)),
            "Literal": param("literal", json!(short_plain))
        }
    });
    app.write_stacks(&[(&stack, &template, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "deploy failed:\n{stderr}");

    let record = app.record(&stack);
    let res = &record["resources"];
    assert_eq!(res["FromSecret"]["properties"]["Value"], json!(secret_ref));
    assert_eq!(res["Literal"]["properties"]["Value"], json!(short_plain));
    // The reference's own position never holds the plaintext, in any version.
    let mut versions = 0;
    for (key, body) in app.every_object_version().await {
        if let Ok(v) = serde_json::from_str::<Value>(&body) {
            if let Some(p) = v.pointer("/resources/FromSecret/properties/Value") {
                assert_eq!(p, &json!(secret_ref), "{key} holds the secret's plaintext");
                versions += 1;
            }
        }
    }

    assert!(
        versions > 0,
        "a state version records the secret's position"
    );

    let diff_fail = || {
        let dir = app.dir.path();
        let out = support::cdkd()
            .current_dir(dir)
            .arg("diff")
            .args(["--app", dir.to_str().expect("utf-8 path")])
            .args(["--state-bucket", &app.bucket])
            .arg("--fail")
            .output()
            .expect("runs");
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };
    let (code, text) = diff_fail();
    assert_eq!(code, Some(0), "the unchanged app diffs clean:\n{text}");

    // A later deploy that changes another resource leaves the unchanged literal as spelled.
    let mut template = template;
    template["Resources"]["Other"] = param("other", json!("other-value"));
    app.write_stacks(&[(&stack, &template, &[])]);
    let (code, _, stderr) = app.deploy(&[]);
    assert_eq!(code, 0, "second deploy failed:\n{stderr}");
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["Literal"]["properties"]["Value"],
        json!(short_plain)
    );
    assert_eq!(
        record["resources"]["FromSecret"]["properties"]["Value"],
        json!(secret_ref)
    );
    let (code, text) = diff_fail();
    assert_eq!(
        code,
        Some(0),
        "the app diffs clean after the second deploy:\n{text}"
    );
}

/// A producer exporting a secret reference to a secret it creates itself (so nothing could
/// read the secret before the deploy): the output and its export are stored as the
/// unresolved expression, never skipped, and a consumer importing it deploys in the same run
/// with the plaintext in AWS and the expression in its own record.
#[tokio::test]
async fn an_exported_secret_reference_is_stored_as_its_expression_and_imported() {
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    let app = App::new("cdkd-secrets");
    let producer = stack_name("secprod");
    let consumer = stack_name("seccons");
    let plain = format!("pw-{}", unique_name("exported"));
    let secret_name = unique_name("exported-secret");
    let export = format!("{producer}-password");
    let param_name = format!("/cdkd-test/{}/copy", unique_name("secexp"));
    let producer_template = json!({
        "Resources": {
            "Secret": {
                "Type": "AWS::SecretsManager::Secret",
                "Properties": {
                    "Name": secret_name,
                    "SecretString": json!({"password": plain}).to_string()
                }
            }
        },
        "Outputs": {
            "Password": {
                "Value": {"Fn::Join": ["", [
                    "{{resolve:secretsmanager:", {"Ref": "Secret"}, ":SecretString:password}}"
                ]]},
                "Export": {"Name": export}
            }
        }
    });
    let consumer_template = json!({
        "Resources": {
            "Copy": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {
                    "Name": param_name, "Type": "String",
                    "Value": {"Fn::ImportValue": export}
                }
            }
        }
    });
    app.write_stacks(&[
        (&producer, &producer_template, &[]),
        (&consumer, &consumer_template, &[producer.as_str()]),
    ]);
    let (code, stdout, stderr) = app.deploy(&["--all", "--no-cfn-fallback"]);
    assert_eq!(code, 0, "deploy failed:\n{stderr}");
    assert!(
        !stderr.contains("skipped"),
        "no output is skipped:\n{stderr}"
    );
    assert!(!stdout.contains(&plain) && !stderr.contains(&plain));

    let record = app.record(&producer);
    let stored = record["outputs"]["Password"].as_str().unwrap_or_default();
    assert!(
        stored.starts_with("{{resolve:secretsmanager:")
            && stored.ends_with(":SecretString:password}}"),
        "the output holds the expression: {record}"
    );
    assert_eq!(record["outputs"][&export], json!(stored), "the export too");
    assert_eq!(record["exportNames"], json!([export]));
    assert!(record.get("skippedOutputs").is_none(), "{record}");

    // The consumer got the plaintext in AWS and stores the expression.
    let value = ssm
        .get_parameter()
        .name(&param_name)
        .send()
        .await
        .expect("consumer parameter")
        .parameter
        .and_then(|p| p.value)
        .unwrap_or_default();
    assert_eq!(value, plain);
    let consumer_record = app.record(&consumer);
    assert_eq!(
        consumer_record["resources"]["Copy"]["properties"]["Value"],
        json!(stored)
    );
    let objects = app.every_object_version().await;
    let index = objects
        .iter()
        .filter(|(k, _)| k.contains("_index"))
        .map(|(_, b)| b.as_str())
        .collect::<Vec<_>>();
    assert!(
        index
            .iter()
            .any(|b| b.contains(&export) && b.contains("{{resolve:secretsmanager:")),
        "the exports index holds the expression: {index:?}"
    );
    for (key, body) in &objects {
        // The producer's Secret spells the value as a template literal; nowhere else may
        // hold it.
        let mut body: Value = serde_json::from_str(body).unwrap_or(json!(body));
        if let Some(secret) = body.pointer_mut("/resources/Secret/properties") {
            *secret = json!({});
        }
        assert!(!body.to_string().contains(&plain), "plaintext in {key}");
    }

    // A redeploy of both changes nothing.
    let (code, _, stderr) = app.deploy(&["--all", "--no-cfn-fallback"]);
    assert_eq!(code, 0, "redeploy failed:\n{stderr}");
    assert!(!stderr.contains(&plain));
}

const TRUST: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;

/// The handler of `Minter` (the emulator runs it): on Create and Update a fresh random Token,
/// answered NoEcho through the presigned ResponseURL, so only AWS and the handler know it.
const MINTER_HANDLER: &str = r#"import json
import urllib.request
import uuid


def handler(event, context):
    minted = event["RequestType"] != "Delete"
    doc = {"Status": "SUCCESS", "PhysicalResourceId": "minted-1", "StackId": event["StackId"],
           "RequestId": event["RequestId"], "LogicalResourceId": event["LogicalResourceId"],
           "NoEcho": minted, "Data": {"Token": "Tok" + uuid.uuid4().hex} if minted else {}}
    request = urllib.request.Request(event["ResponseURL"], data=json.dumps(doc).encode(), method="PUT", headers={"Content-Type": ""})
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request).read()
"#;

/// A stack whose custom resource `Minter` answers NoEcho, read by two SSM parameters (whole
/// and embedded) and an output; `nonce` is a property of the custom resource, `tier` of the
/// whole-value reader.
fn minter_stack(function: &str, base: &str, nonce: u32, description: &str) -> Value {
    json!({
        "Resources": {
            "Role": {"Type": "AWS::IAM::Role", "Properties": {
                "AssumeRolePolicyDocument": serde_json::from_str::<Value>(TRUST).expect("trust")}},
            "Handler": {"Type": "AWS::Lambda::Function", "Properties": {
                "FunctionName": function, "Runtime": "python3.12", "Handler": "index.handler",
                "Role": {"Fn::GetAtt": ["Role", "Arn"]},
                "Code": {"ZipFile": MINTER_HANDLER}}},
            "Minter": {"Type": "Custom::Minter", "Properties": {
                "ServiceToken": {"Fn::GetAtt": ["Handler", "Arn"]}, "Nonce": nonce}},
            "Copy": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": format!("{base}/copy"), "Type": "String", "Description": description,
                "Value": {"Fn::GetAtt": ["Minter", "Token"]}}},
            "Embedded": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": format!("{base}/embedded"), "Type": "String",
                "Value": {"Fn::Sub": "pw=${Minter.Token}"}}}
        },
        "Outputs": {"TokenOut": {"Value": {"Fn::GetAtt": ["Minter", "Token"]}}}
    })
}

/// A NoEcho custom resource's Data reaches its readers unmasked in AWS in the same run and is
/// `***` in state (its own attributes, named in `noEchoAttributeNames`, the readers'
/// properties and the outputs); a later deploy that would have to send the masked value
/// refuses; forcing the handler to run again sends the new value to every reader.
#[tokio::test(flavor = "multi_thread")]
async fn a_no_echo_custom_resource_value_reaches_its_readers_and_never_state() {
    let ssm = aws_sdk_ssm::Client::new(&sdk_config().await);
    let app = App::new("cdkd-cr-noecho");
    let stack = stack_name("crnoecho");
    let function = unique_name("cr-noecho");
    let base = format!("/cdkd-test/{}", unique_name("crne"));
    let value = |name: String| {
        let ssm = ssm.clone();
        async move {
            ssm.get_parameter()
                .name(name)
                .send()
                .await
                .expect("parameter")
                .parameter
                .and_then(|p| p.value)
                .unwrap_or_default()
        }
    };
    let deploy = |template: Value| {
        app.write_stacks(&[(&stack, &template, &[])]);
        app.deploy_env(&["--json"], &[("CDKD_CUSTOM_RESOURCE_TIMEOUT", "30")])
    };

    // Create: the handler mints a token; the readers get the real value.
    let (code, stdout, stderr) = deploy(minter_stack(&function, &base, 1, "d1"));
    assert_eq!(code, 0, "{stderr}");
    let first = value(format!("{base}/copy")).await;
    assert!(
        first.starts_with("Tok") && first.len() > 20,
        "the minted token: {first}"
    );
    assert_eq!(
        value(format!("{base}/embedded")).await,
        format!("pw={first}")
    );
    let record = app.record(&stack);
    let res = &record["resources"];
    assert_eq!(res["Minter"]["attributes"]["Token"], json!("***"));
    assert_eq!(res["Minter"]["noEchoAttributeNames"], json!(["Token"]));
    assert_eq!(res["Copy"]["properties"]["Value"], json!("***"));
    assert_eq!(res["Embedded"]["properties"]["Value"], json!("***"));
    assert_eq!(record["outputs"]["TokenOut"], json!("***"));
    assert!(!stdout.contains(&first) && !stderr.contains(&first));

    // Unchanged: nothing to send, nothing refused.
    let (code, _, stderr) = deploy(minter_stack(&function, &base, 1, "d1"));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.to_lowercase().contains("no changes"), "{stderr}");

    // A reader that must be written while the handler does not run: refused, AWS untouched.
    let (code, _, stderr) = deploy(minter_stack(&function, &base, 1, "d2"));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("Copy reads Minter.Token")
            && stderr.contains("which Minter declared NoEcho")
            && stderr.contains("change one of Minter's properties"),
        "{stderr}"
    );
    assert_eq!(value(format!("{base}/copy")).await, first);

    // The handler runs again (a new nonce): both readers get the new value.
    let (code, stdout, stderr) = deploy(minter_stack(&function, &base, 2, "d2"));
    assert_eq!(code, 0, "{stderr}");
    let runs = support::handler::invocations(&function);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[1]["payload"]["RequestType"], "Update");
    assert_eq!(runs[1]["outcome"]["status"], "success", "{runs:?}");
    let second = value(format!("{base}/copy")).await;
    assert!(
        second.starts_with("Tok") && second != first,
        "a new token: {second}"
    );
    assert_eq!(
        value(format!("{base}/embedded")).await,
        format!("pw={second}")
    );
    assert!(!stdout.contains(&second) && !stderr.contains(&second));
    let record = app.record(&stack);
    assert_eq!(
        record["resources"]["Copy"]["properties"]["Value"],
        json!("***")
    );
    assert_eq!(
        record["resources"]["Copy"]["properties"]["Description"],
        json!("d2")
    );

    for (key, body) in app.every_object_version().await {
        for p in [&first, &second] {
            assert!(
                !body.contains(p.as_str()),
                "{key} holds the handler's NoEcho value"
            );
        }
    }
}

/// A nested child fed a NoEcho parameter and a secret reference by its parent: AWS gets the
/// values, the child's record stores `***` (with its `noEchoLeaves`) and the expression by
/// position, whatever the child template declares, and no object version holds either.
#[tokio::test]
async fn a_nested_child_fed_secrets_by_its_parent_stores_no_plaintext() {
    let app = App::new("cdkd-nested-secret");
    let parent = stack_name("nestsec");
    let base = format!("/cdkd-test/{}", unique_name("nestsec"));
    let secret_name = unique_name("nested-secret");
    let secret_plain = "N3stedS3cretValue";
    let no_echo_plain = "N3stedN0Ech0";
    let config = sdk_config().await;
    aws_sdk_secretsmanager::Client::new(&config)
        .create_secret()
        .name(&secret_name)
        .secret_string(secret_plain)
        .send()
        .await
        .expect("create secret");
    let secret_ref = format!("{{{{resolve:secretsmanager:{secret_name}:SecretString}}}}");
    let child = json!({
        "Parameters": {"Pass": {"Type": "String"}, "Secret": {"Type": "String"}},
        "Resources": {
            "FromPass": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": format!("{base}/from-pass"), "Type": "String",
                "Value": {"Ref": "Pass"}}},
            "FromSecret": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": format!("{base}/from-secret"), "Type": "String",
                "Value": {"Fn::Sub": "s=${Secret}"}}}
        },
        "Outputs": {"PassOut": {"Value": {"Ref": "Pass"}}}
    });
    std::fs::write(
        app.dir.path().join("Child.nested.template.json"),
        child.to_string(),
    )
    .expect("child template");
    let template = json!({
        "Parameters": {"DbPass": {"Type": "String", "NoEcho": true}},
        "Resources": {
            "Child": {
                "Type": "AWS::CloudFormation::Stack",
                "Metadata": {"aws:asset:path": "Child.nested.template.json"},
                "Properties": {
                    "TemplateURL": "https://example.invalid/child.json",
                    "Parameters": {"Pass": {"Ref": "DbPass"}, "Secret": secret_ref}
                }
            },
            "FromChild": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": format!("{base}/from-child"), "Type": "String",
                "Value": {"Fn::GetAtt": ["Child", "Outputs.PassOut"]}}}
        }
    });
    app.write_stacks(&[(&parent, &template, &[])]);
    let overrides = format!("DbPass={no_echo_plain}");
    let (code, stdout, stderr) = app.deploy(&["--parameters", &overrides]);
    assert_eq!(code, 0, "deploy failed:\n{stderr}");

    let ssm = aws_sdk_ssm::Client::new(&config);
    for (name, want) in [
        ("from-pass", no_echo_plain.to_owned()),
        ("from-secret", format!("s={secret_plain}")),
        ("from-child", no_echo_plain.to_owned()),
    ] {
        let got = ssm
            .get_parameter()
            .name(format!("{base}/{name}"))
            .send()
            .await
            .expect("parameter")
            .parameter
            .and_then(|p| p.value)
            .unwrap_or_default();
        assert_eq!(got, want, "{name}");
    }
    let record = app.record(&format!("{parent}~Child"));
    let res = &record["resources"];
    assert_eq!(res["FromPass"]["properties"]["Value"], json!("***"));
    assert_eq!(res["FromPass"]["noEchoLeaves"], json!([["Value"]]));
    assert_eq!(
        res["FromSecret"]["properties"]["Value"],
        json!(format!("s={secret_ref}"))
    );
    assert_eq!(record["outputs"]["PassOut"], json!("***"));
    // The parent read the child's masked output in the clear, and stores it masked.
    let parent_record = app.record(&parent);
    let row = &parent_record["resources"]["Child"];
    assert_eq!(row["attributes"]["Outputs.PassOut"], json!("***"));
    assert_eq!(row["noEchoAttributeNames"], json!(["Outputs.PassOut"]));
    assert_eq!(
        parent_record["resources"]["FromChild"]["properties"]["Value"],
        json!("***")
    );
    for p in [secret_plain, no_echo_plain] {
        assert!(!stdout.contains(p) && !stderr.contains(p), "printed: {p}");
    }
    for (key, body) in app.every_object_version().await {
        for p in [secret_plain, no_echo_plain] {
            assert!(!body.contains(p), "{key} holds a plaintext secret");
        }
    }
    // diff --recursive (text and --json) hands the child its parent's secret-fed parameters
    // as the deploy does: clean, and neither plaintext shown.
    for json_flag in [None, Some("--json")] {
        let dir = app.dir.path();
        let out = support::cdkd()
            .current_dir(dir)
            .args(["diff", "--recursive", "--fail", "--parameters", &overrides])
            .args(json_flag)
            .args(["--app", dir.to_str().expect("utf-8 path")])
            .args(["--state-bucket", &app.bucket])
            .output()
            .expect("runs");
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{json_flag:?}:\n{text}");
        for p in [secret_plain, no_echo_plain] {
            assert!(
                !text.contains(p),
                "diff --recursive {json_flag:?} printed {p}"
            );
        }
    }
    let (code, _, stderr) = app.deploy(&["--parameters", &overrides]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.to_lowercase().contains("no changes"), "{stderr}");
}
