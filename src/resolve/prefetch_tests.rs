//! The template scan behind [`super::prefetch`] and the cross-stack secret
//! positions; the fetches themselves are covered by tests/commands/resolve_external.rs.

use serde_json::{json, Value};

use super::*;
use crate::resolve::external::join_all;
use crate::resolve::test_support::{bind, template_from};
use crate::resolve::NoExternalLookup;

fn scan(t: &Template) -> Wanted {
    let ctx = ResolveContext::new("S", "eu-west-1", Some("123456789012".into()));
    let params = bind(t);
    let mut resolver = Resolver::new(t, &ctx, &params, &NoResources, &NoExternalLookup);
    let verdicts = resolver.evaluate_conditions().unwrap();
    let mut resolver = resolver.with_conditions(&verdicts);
    let mut s = Scan::new(&mut resolver, &verdicts, "eu-west-1");
    s.template(t, &verdicts);
    s.wanted
}

#[test]
fn the_scan_follows_conditions_and_resolves_arguments() {
    let t = template_from(json!({
        "Parameters": {"Env": {"Type": "String", "Default": "dev"}},
        "Conditions": {
            "IsDev": {"Fn::Equals": [{"Ref": "Env"}, "dev"]},
            "IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]}
        },
        "Resources": {
            "Skipped": {"Type": "T", "Condition": "IsProd",
                "Properties": {"X": {"Fn::ImportValue": "never"}}},
            "B": {"Type": "T"},
            "R": {"Type": "T", "Properties": {
                "Sub": {"Fn::ImportValue": {"Fn::Sub": "${AWS::Region}-${Env}-vpc"}},
                "If": {"Fn::If": ["IsDev",
                    {"Fn::ImportValue": "dev-branch"},
                    {"Fn::ImportValue": "prod-branch"}]},
                "Deferred": {"Fn::ImportValue": {"Fn::Sub": "${B}-x"}},
                "Nested": [{"Fn::Select": [0, [{"Fn::ImportValue": "in-a-list"}]]}],
                "Azs": {"Fn::GetAZs": ""},
                "AzsFar": {"Fn::GetAZs": "US-WEST-2"},
                "Out": {"Fn::GetStackOutput": {"StackName": {"Ref": "Env"}, "OutputName": "O",
                    "Region": "us-east-1"}},
                "Cross": {"Fn::GetStackOutput": {"StackName": "P", "OutputName": "O",
                    "RoleArn": "arn:aws:iam::111122223333:role/r"}},
                "Computed": {"Fn::GetStackOutput": {"StackName": "P", "OutputName": "O2",
                    "RoleArn": {"Fn::Sub": "arn:aws:iam::111122223333:role/r"}}}
            }}
        },
        "Outputs": {
            "A": {"Value": {"Fn::ImportValue": "from-output"}},
            "Gone": {"Value": {"Fn::ImportValue": "never-either"}, "Condition": "IsProd"}
        }
    }));
    let w = scan(&t);
    assert_eq!(
        w.imports.iter().collect::<Vec<_>>(),
        vec![
            "eu-west-1-dev-vpc",
            "dev-branch",
            "in-a-list",
            "from-output"
        ]
    );
    assert_eq!(
        w.az_regions.iter().collect::<Vec<_>>(),
        vec!["eu-west-1", "us-west-2"]
    );
    let outs: Vec<(String, Option<String>, Option<String>, bool)> = w
        .outputs
        .values()
        .map(|(r, lit)| {
            (
                format!("{}/{}", r.stack_name, r.output_name),
                r.region.clone(),
                r.role_arn.clone(),
                *lit,
            )
        })
        .collect();
    let role = Some("arn:aws:iam::111122223333:role/r".to_string());
    assert_eq!(
        outs,
        vec![
            ("dev/O".into(), Some("us-east-1".into()), None, true),
            ("P/O".into(), None, role.clone(), true),
            ("P/O2".into(), None, role, false),
        ]
    );
}

#[test]
fn cross_stack_secrets_are_recorded_where_a_leaf_holds_one_whole() {
    let known = vec![(
        "{{resolve:secretsmanager:s}}".to_string(),
        "plain-secret".to_string(),
    )];
    let mut m = SecretsMap::default();
    let v = json!({"A": "plain-secret", "B": ["x", "plain-secret"], "C": "pre-plain-secret"});
    mark_known(&v, "Resources.R.Properties".into(), &known, &mut m);
    let paths: Vec<&str> = m.positions().map(|(p, _)| p).collect();
    assert_eq!(
        paths,
        vec!["Resources.R.Properties.A", "Resources.R.Properties.B[1]"]
    );
    assert_eq!(m.plaintexts().collect::<Vec<_>>(), vec!["plain-secret"]);

    let mut leaves = Vec::new();
    string_leaves(
        &json!({"a": [{"b": "x"}], "c": 1}),
        String::new(),
        &mut leaves,
    );
    assert_eq!(leaves, vec![("a[0].b".to_string(), "x".to_string())]);
    let mut leaves = Vec::new();
    string_leaves(&Value::String("root".into()), String::new(), &mut leaves);
    assert_eq!(leaves, vec![(String::new(), "root".to_string())]);
}

#[tokio::test]
async fn join_all_keeps_input_order() {
    let futures: Vec<BoxFuture<'_, u32>> = (0..5u32)
        .map(|i| -> BoxFuture<'_, u32> {
            Box::pin(async move {
                tokio::time::sleep(std::time::Duration::from_millis(u64::from(5 - i))).await;
                i
            })
        })
        .collect();
    assert_eq!(join_all(futures).await, vec![0, 1, 2, 3, 4]);
    assert!(join_all::<u32>(Vec::new()).await.is_empty());
}
