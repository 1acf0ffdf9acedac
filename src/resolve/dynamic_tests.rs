//! Dynamic references: parsing, splitting, substitution and the secrets map.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::dynamic::*;
use super::external::{holds_mask, parse_role_arn};
use super::{LookupError, ResolveContext};

fn ssm(name: &str, version: Option<u64>, secure: bool) -> ReferenceTarget {
    ReferenceTarget::Ssm {
        name: name.into(),
        version: version.map(SsmSelector::Version),
        secure,
    }
}

fn ssm_label(name: &str, label: &str, secure: bool) -> ReferenceTarget {
    ReferenceTarget::Ssm {
        name: name.into(),
        version: Some(SsmSelector::Label(label.into())),
        secure,
    }
}

fn sm(id: &str, key: Option<&str>, stage: Option<&str>, vid: Option<&str>) -> ReferenceTarget {
    ReferenceTarget::SecretsManager {
        secret_id: id.into(),
        json_key: key.map(Into::into),
        version_stage: stage.map(Into::into),
        version_id: vid.map(Into::into),
    }
}

#[test]
fn parses_every_form() {
    let arn_sm = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:db-AbCdEf";
    let arn_ssm = "arn:aws-cn:ssm:cn-north-1:111122223333:parameter/team/x";
    let table: Vec<(String, ReferenceTarget)> = vec![
        ("ssm:/app/name".into(), ssm("/app/name", None, false)),
        ("ssm:app.name-1_x".into(), ssm("app.name-1_x", None, false)),
        ("ssm:/app/name:12".into(), ssm("/app/name", Some(12), false)),
        ("ssm-secure:/db/pw".into(), ssm("/db/pw", None, true)),
        ("ssm-secure:/db/pw:3".into(), ssm("/db/pw", Some(3), true)),
        (format!("ssm:{arn_ssm}"), ssm(arn_ssm, None, false)),
        (format!("ssm:{arn_ssm}:4"), ssm(arn_ssm, Some(4), false)),
        (
            "ssm:/app/name:prod".into(),
            ssm_label("/app/name", "prod", false),
        ),
        (
            "ssm-secure:/db/pw:release-2.1_b".into(),
            ssm_label("/db/pw", "release-2.1_b", true),
        ),
        (
            format!("ssm:{arn_ssm}:Blue"),
            ssm_label(arn_ssm, "Blue", false),
        ),
        (
            "secretsmanager:MySecret".into(),
            sm("MySecret", None, None, None),
        ),
        (
            "secretsmanager:MySecret:SecretString".into(),
            sm("MySecret", None, None, None),
        ),
        (
            "secretsmanager:MySecret:SecretString:password".into(),
            sm("MySecret", Some("password"), None, None),
        ),
        (
            "secretsmanager:MySecret::password".into(),
            sm("MySecret", Some("password"), None, None),
        ),
        (
            "secretsmanager:MySecret:SecretString:password:AWSPREVIOUS".into(),
            sm("MySecret", Some("password"), Some("AWSPREVIOUS"), None),
        ),
        (
            "secretsmanager:MySecret:SecretString::AWSPENDING".into(),
            sm("MySecret", None, Some("AWSPENDING"), None),
        ),
        (
            "secretsmanager:MySecret:SecretString:::0123-abcd".into(),
            sm("MySecret", None, None, Some("0123-abcd")),
        ),
        (
            "secretsmanager:a/b+c=d.e@f-g".into(),
            sm("a/b+c=d.e@f-g", None, None, None),
        ),
        (
            format!("secretsmanager:{arn_sm}"),
            sm(arn_sm, None, None, None),
        ),
        (
            format!("secretsmanager:{arn_sm}:SecretString:user"),
            sm(arn_sm, Some("user"), None, None),
        ),
    ];
    for (inner, want) in table {
        let text = format!("{{{{resolve:{inner}}}}}");
        let r = DynamicReference::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(r.target, want, "{text}");
        assert_eq!(r.text, text);
    }
}

#[test]
fn refuses_malformed_references() {
    for (inner, needle) in [
        ("ssm:", "empty"),
        ("ssm:/a:", "version"),
        ("ssm:/a:1v", "version"),
        ("ssm:/a:0", "positive integer"),
        ("ssm:/a:awsLabel", "label"),
        ("ssm:/a:SSM-x", "label"),
        ("ssm:/a:-x", "label"),
        ("ssm:/a:la bel", "label"),
        ("ssm:/a:1:2", "version"),
        ("ssm:has space", "not a valid"),
        ("ssm:arn:aws:s3:::bucket", "ARN"),
        ("ssm:arn:aws:ssm:us-east-1:1:parameter/", "no parameter"),
        ("ssm-secure:", "empty"),
        ("secretsmanager:", "empty"),
        ("secretsmanager:S:SecretBinary", "only SecretString"),
        ("secretsmanager:S:SecretString:k:AWSCURRENT:id", "not both"),
        ("secretsmanager:S:SecretString:k:st:id:extra", "too many"),
        ("secretsmanager:arn:aws:secretsmanager:us-east-1:1", "ARN"),
        ("s3:bucket/key", "unsupported service"),
        ("ssm", "empty"),
    ] {
        let text = format!("{{{{resolve:{inner}}}}}");
        let e = DynamicReference::parse(&text).expect_err(&text);
        assert!(e.message.contains(needle), "{text}: {e}");
        assert_eq!(e.reference, text);
    }
    let e = split_references("a {{resolve:ssm:/x").unwrap_err();
    assert!(e.message.contains("not closed"), "{e}");
    let e = split_references("{{resolve:ssm:/a{{resolve:ssm:/b}}").unwrap_err();
    assert!(e.message.contains("brace"), "{e}");
}

#[test]
fn splits_embedded_and_several_references() {
    let text = "postgres://{{resolve:ssm:/u}}:{{resolve:secretsmanager:db:SecretString:pw}}@h/{{resolve:ssm:/d:2}}";
    let segs = split_references(text).unwrap();
    let shape: Vec<String> = segs
        .iter()
        .map(|s| match s {
            Segment::Text(t) => format!("T({t})"),
            Segment::Reference(r) => format!("R({})", r.text),
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            "T(postgres://)",
            "R({{resolve:ssm:/u}})",
            "T(:)",
            "R({{resolve:secretsmanager:db:SecretString:pw}})",
            "T(@h/)",
            "R({{resolve:ssm:/d:2}})",
        ]
    );
    assert_eq!(find_references(text).unwrap().len(), 3);
    assert_eq!(
        split_references("plain }} text").unwrap(),
        vec![Segment::Text("plain }} text")]
    );
    assert!(split_references("").unwrap().is_empty());
    let mut all = Vec::new();
    collect_references(
        &json!({"a": [text, 1, {"b": "{{resolve:ssm:/z}}"}], "{{resolve:ssm:/key}}": "x"}),
        &mut all,
    );
    assert_eq!(all.len(), 4, "map keys are not read");
}

#[test]
fn lookup_region_is_the_arns_else_the_stacks() {
    let r = DynamicReference::parse(
        "{{resolve:secretsmanager:arn:aws:secretsmanager:eu-west-1:111122223333:secret:db-Ab:SecretString:pw}}",
    )
    .unwrap();
    assert_eq!(r.arn_region(), Some("eu-west-1"));
    assert_eq!(r.fetch_key("us-east-1").region(), "eu-west-1");
    let r = DynamicReference::parse("{{resolve:ssm:/x:3}}").unwrap();
    assert_eq!(
        r.fetch_key("ap-south-1"),
        FetchKey::Parameter {
            region: "ap-south-1".into(),
            name: "/x:3".into()
        }
    );
    // Two JSON keys of one secret share one fetch.
    let a = DynamicReference::parse("{{resolve:secretsmanager:s:SecretString:a}}").unwrap();
    let b = DynamicReference::parse("{{resolve:secretsmanager:s::b}}").unwrap();
    assert_eq!(a.fetch_key("r"), b.fetch_key("r"));
}

/// Fetches from a fixed table; records which keys were asked for.
struct Table(HashMap<FetchKey, Fetched>);

impl DynamicLookup for Table {
    fn fetched(&self, key: &FetchKey) -> Result<Fetched, LookupError> {
        self.0
            .get(key)
            .cloned()
            .ok_or_else(|| LookupError::Failed("not found".into()))
    }
}

fn table() -> Table {
    let p = |name: &str, value: &str, secure| {
        (
            FetchKey::Parameter {
                region: "us-east-1".into(),
                name: name.into(),
            },
            Fetched::Parameter {
                value: value.into(),
                secure,
            },
        )
    };
    let s = |region: &str, id: &str, value: &str| {
        (
            FetchKey::Secret {
                region: region.into(),
                secret_id: id.into(),
                version_stage: None,
                version_id: None,
            },
            Fetched::Secret {
                value: value.into(),
            },
        )
    };
    Table(HashMap::from([
        p("/pub", "public-value", false),
        p("/list", "a,b,c", false),
        p("/sec", "s3cure-param", true),
        s(
            "us-east-1",
            "db",
            r#"{"user":"admin","pw":"hunter22","port":5432}"#,
        ),
        s("us-east-1", "raw", "raw-secret"),
        s(
            "eu-west-1",
            "arn:aws:secretsmanager:eu-west-1:111122223333:secret:x-Ab",
            "far-away",
        ),
    ]))
}

fn ctx() -> ResolveContext {
    ResolveContext::new("App", "us-east-1", Some("123456789012".into()))
}

#[test]
fn substitutes_and_records_only_secret_bearing_positions() {
    let value = json!({
        "Public": "{{resolve:ssm:/pub}}",
        "List": "{{resolve:ssm:/list}}",
        "SecureViaSsm": "{{resolve:ssm:/sec}}",
        "SecureViaSsmSecure": "{{resolve:ssm-secure:/sec}}",
        "Url": "postgres://{{resolve:secretsmanager:db:SecretString:user}}:{{resolve:secretsmanager:db::pw}}@{{resolve:ssm:/pub}}/x",
        "Port": "{{resolve:secretsmanager:db:SecretString:port}}",
        "Whole": ["{{resolve:secretsmanager:raw}}", 7, true],
        "Far": "{{resolve:secretsmanager:arn:aws:secretsmanager:eu-west-1:111122223333:secret:x-Ab}}",
        "Plain": "no reference"
    });
    let (out, secrets) =
        substitute_dynamic_references(&value, "Resources.Db.Properties", &ctx(), &table()).unwrap();
    assert_eq!(
        out,
        json!({
            "Public": "public-value",
            "List": "a,b,c",
            "SecureViaSsm": "s3cure-param",
            "SecureViaSsmSecure": "s3cure-param",
            "Url": "postgres://admin:hunter22@public-value/x",
            "Port": "5432",
            "Whole": ["raw-secret", 7, true],
            "Far": "far-away",
            "Plain": "no reference"
        })
    );
    let base = "Resources.Db.Properties";
    let positions: Vec<(String, String)> = secrets
        .positions()
        .map(|(p, s)| (p.to_string(), s.expression.clone()))
        .collect();
    let want: Vec<(String, String)> = [
        ("SecureViaSsm", "{{resolve:ssm:/sec}}"),
        ("SecureViaSsmSecure", "{{resolve:ssm-secure:/sec}}"),
        // Public references stay resolved inside the expression.
        (
            "Url",
            "postgres://{{resolve:secretsmanager:db:SecretString:user}}:{{resolve:secretsmanager:db::pw}}@public-value/x",
        ),
        ("Port", "{{resolve:secretsmanager:db:SecretString:port}}"),
        ("Whole[0]", "{{resolve:secretsmanager:raw}}"),
        (
            "Far",
            "{{resolve:secretsmanager:arn:aws:secretsmanager:eu-west-1:111122223333:secret:x-Ab}}",
        ),
    ]
    .iter()
    .map(|(k, e)| {
        let sep = if k.starts_with('[') { "" } else { "." };
        (format!("{base}{sep}{k}"), e.to_string())
    })
    .collect();
    assert_eq!(positions, want);
    assert_eq!(
        secrets
            .get(&format!("{base}.Url"))
            .unwrap()
            .references
            .len(),
        2
    );
    let mut plain: Vec<&str> = secrets.plaintexts().collect();
    plain.sort();
    assert_eq!(
        plain,
        vec![
            "5432",
            "admin",
            "far-away",
            "hunter22",
            "raw-secret",
            "s3cure-param"
        ]
    );
    let debug = format!("{secrets:?}");
    assert!(
        !debug.contains("hunter22") && debug.contains("6 hidden"),
        "{debug}"
    );
}

#[test]
fn a_root_string_is_its_own_position() {
    let (out, secrets) = substitute_dynamic_references(
        &json!("pw={{resolve:secretsmanager:db::pw}}"),
        "Outputs.Conn.Value",
        &ctx(),
        &table(),
    )
    .unwrap();
    assert_eq!(out, json!("pw=hunter22"));
    let pos = secrets.get("Outputs.Conn.Value").unwrap();
    assert_eq!(pos.expression, "pw={{resolve:secretsmanager:db::pw}}");
    // No reference at all: nothing recorded, value untouched.
    let (out, secrets) =
        substitute_dynamic_references(&json!({"a": [1, "x"]}), "P", &ctx(), &table()).unwrap();
    assert_eq!(out, json!({"a": [1, "x"]}));
    assert!(secrets.is_empty());
}

#[test]
fn errors_name_stack_path_and_reference_never_the_value() {
    let fail = |v: Value| {
        substitute_dynamic_references(&v, "Resources.Fn.Properties", &ctx(), &table())
            .unwrap_err()
            .to_string()
    };
    let e = fail(json!({"Env": {"K": "{{resolve:secretsmanager:db::missing}}"}}));
    assert!(
        e.starts_with("stack App: Resources.Fn.Properties.Env.K: dynamic reference: "),
        "{e}"
    );
    assert!(
        e.contains("{{resolve:secretsmanager:db::missing}}") && e.contains("no JSON key 'missing'"),
        "{e}"
    );
    assert!(!e.contains("hunter22") && !e.contains("admin"), "{e}");
    let e = fail(json!(["{{resolve:secretsmanager:raw::k}}"]));
    assert!(
        e.contains("Properties[0]") && e.contains("not a JSON object"),
        "{e}"
    );
    assert!(!e.contains("raw-secret"), "{e}");
    let e = fail(json!("{{resolve:ssm:/absent}}"));
    assert!(
        e.contains("{{resolve:ssm:/absent}} (looked up in us-east-1): not found"),
        "{e}"
    );
    let e = fail(json!("{{resolve:nope:x}}"));
    assert!(e.contains("unsupported service 'nope'"), "{e}");
}

#[test]
fn secrets_map_merges_and_dedups() {
    let mut a = SecretsMap::default();
    a.insert_plaintext("x");
    a.insert_plaintext("x");
    a.insert_plaintext("");
    let mut b = SecretsMap::default();
    b.insert_plaintext("y");
    b.insert_position(
        "P",
        SecretPosition {
            expression: "{{resolve:secretsmanager:s}}".into(),
            references: vec!["{{resolve:secretsmanager:s}}".into()],
        },
    );
    a.merge(b);
    assert_eq!(a.plaintexts().collect::<Vec<_>>(), vec!["x", "y"]);
    assert!(a.get("P").is_some());
    let fetched = Fetched::Secret {
        value: "top-secret".into(),
    };
    assert!(!format!("{fetched:?}").contains("top-secret"));
}

#[test]
fn masks_and_role_arns() {
    assert!(holds_mask(&json!({"a": ["x", "***"]})));
    assert!(!holds_mask(&json!("a***b")));
    for (arn, account) in [
        ("arn:aws:iam::111122223333:role/reader", "111122223333"),
        (
            "arn:aws-us-gov:iam::111122223333:role/path/to/reader",
            "111122223333",
        ),
        ("arn:aws-cn:iam::111122223333:role/r", "111122223333"),
        ("arn:aws-iso-b:iam::111122223333:role/r", "111122223333"),
        ("arn:aws-eusc:iam::111122223333:role/r", "111122223333"),
        (
            "arn:aws:iam::111122223333:role/aws-service-role/ops.example.com/AWSServiceRole_X",
            "111122223333",
        ),
    ] {
        assert_eq!(parse_role_arn(arn).unwrap().account, account, "{arn}");
    }
    for bad in [
        "arn:aws:iam::111122223333:user/alice",
        "arn:aws:iam::11112222333:role/r",
        "arn:aws:iam:us-east-1:111122223333:role/r",
        "arn:azure:iam::111122223333:role/r",
        "arn:aws:iam::111122223333:role/",
        "role/r",
    ] {
        assert!(parse_role_arn(bad).is_err(), "{bad}");
    }
}

/// A preview's lookup: only public parameters are in it (a secret asked for fails the test),
/// and a SecureString comes back as a read without decryption does, value dropped.
struct Withholding(Table);

impl DynamicLookup for Withholding {
    fn fetched(&self, key: &FetchKey) -> Result<Fetched, LookupError> {
        match self.0.fetched(key)? {
            Fetched::Secret { .. } => panic!("a preview fetched a secret: {key:?}"),
            Fetched::Parameter { secure: true, .. } => Ok(Fetched::Parameter {
                value: String::new(),
                secure: true,
            }),
            public => Ok(public),
        }
    }

    fn withholds_secrets(&self) -> bool {
        true
    }
}

#[test]
fn a_withholding_lookup_yields_exactly_what_the_deploy_stores() {
    let value = json!({
        "Public": "{{resolve:ssm:/pub}}",
        "SecureViaSsm": "x-{{resolve:ssm:/sec}}",
        "SecureViaSsmSecure": "{{resolve:ssm-secure:/sec}}",
        "Url": "postgres://{{resolve:secretsmanager:db:SecretString:user}}@{{resolve:ssm:/pub}}/x",
        "Whole": ["{{resolve:secretsmanager:raw}}", 7],
        "Plain": "no reference"
    });
    let path = "Resources.Db.Properties";
    let (sent, secrets) = substitute_dynamic_references(&value, path, &ctx(), &table()).unwrap();
    // What the deploy stores: each secret-bearing leaf as its expression.
    let mut stored = sent.clone();
    for (p, position) in secrets.positions() {
        let rest = p.strip_prefix(&format!("{path}.")).unwrap();
        let slot = match rest.split_once('[') {
            Some((k, i)) => &mut stored[k][i.trim_end_matches(']').parse::<usize>().unwrap()],
            None => &mut stored[rest],
        };
        *slot = json!(position.expression);
    }
    let (previewed, withheld) =
        substitute_dynamic_references(&value, path, &ctx(), &Withholding(table())).unwrap();
    assert_eq!(previewed, stored);
    assert_eq!(previewed["Public"], json!("public-value"));
    assert_eq!(
        previewed["Url"],
        json!("postgres://{{resolve:secretsmanager:db:SecretString:user}}@public-value/x")
    );
    assert_eq!(
        withheld.plaintexts().count(),
        0,
        "nothing secret was learned"
    );
    let positions: Vec<&str> = withheld.positions().map(|(p, _)| p).collect();
    let expected: Vec<&str> = secrets.positions().map(|(p, _)| p).collect();
    assert_eq!(positions, expected);
}

#[test]
fn base64_over_a_secret_is_encoded_after_substitution_and_stored_as_the_mask() {
    let b64 = |s: &str| super::functions::base64(s.as_bytes());
    let value = json!({
        "UserData": base64_pending("#!/bin/sh\necho {{resolve:secretsmanager:raw}} > /x\n".into()),
        "Public": base64_pending("name={{resolve:ssm:/pub}}".into()),
        "Nested": {"Data": base64_pending("{{resolve:ssm:/sec}}".into())}
    });
    let path = "";
    let (sent, secrets) = substitute_dynamic_references(&value, path, &ctx(), &table()).unwrap();
    let encoded = b64("#!/bin/sh\necho raw-secret > /x\n");
    assert_eq!(sent["UserData"], json!(encoded));
    assert_eq!(sent["Public"], json!(b64("name=public-value")));
    assert_eq!(sent["Nested"]["Data"], json!(b64("s3cure-param")));
    let positions: Vec<(&str, &str)> = secrets
        .positions()
        .map(|(p, s)| (p, s.expression.as_str()))
        .collect();
    assert_eq!(
        positions,
        vec![("UserData", "***"), ("Nested.Data", "***")],
        "an encoding of a secret is stored as the mask; a public one is not a secret"
    );
    let plain: Vec<&str> = secrets.plaintexts().collect();
    assert!(plain.contains(&"raw-secret") && plain.contains(&encoded.as_str()));

    // A preview never fetches the secret: it shows the mask the deploy stores.
    let (previewed, _) =
        substitute_dynamic_references(&value, path, &ctx(), &Withholding(table())).unwrap();
    assert_eq!(previewed["UserData"], json!("***"));
    assert_eq!(previewed["Public"], sent["Public"]);
    // Nothing fetched at all: encoded as written, as before the encoding waited.
    assert_eq!(
        encode_pending_as_written(&value)["Public"],
        json!(b64("name={{resolve:ssm:/pub}}"))
    );
}
