use std::collections::HashSet;

use serde_json::{json, Map, Value};

use super::*;
use crate::resolve::dynamic::SecretPosition;
use crate::resolve::ConditionVerdicts;
use crate::state::PathSegment::{Index, Key};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[test]
fn secret_positions_get_their_expression() {
    let mut secrets = SecretsMap::default();
    secrets.insert_position(
        "Env.Vars[1]",
        SecretPosition {
            expression: "pw={{resolve:ssm-secure:/p}}".into(),
            references: vec!["{{resolve:ssm-secure:/p}}".into()],
        },
    );
    let sent = json!({"Env": {"Vars": ["a", "pw=plain"]}, "Other": "pw=plain"});
    assert_eq!(
        with_expressions(&sent, &secrets),
        json!({"Env": {"Vars": ["a", "pw={{resolve:ssm-secure:/p}}"]}, "Other": "pw=plain"})
    );
}

fn scope_test(
    template: Value,
    resolved: Value,
    verdicts: ConditionVerdicts,
) -> Vec<Vec<PathSegment>> {
    let params: HashSet<String> = ["Pw".to_string()].into();
    let scope = NoEchoScope {
        params: &params,
        verdicts: &verdicts,
    };
    scope.property_leaves(&obj(template), &obj(resolved))
}

#[test]
fn no_echo_positions_follow_the_template() {
    let leaves = scope_test(
        json!({
            "A": {"Ref": "Pw"},
            "B": {"Fn::Sub": "user:${Pw}@host"},
            "C": [{"Key": "k", "Value": {"Fn::Join": ["", ["x", {"Ref": "Pw"}]]}}],
            "D": {"Fn::Sub": "${!Pw} literal"},
            "E": {"Fn::Sub": ["${Pw}", {"Pw": "shadowed"}]},
            "F": {"Ref": "Other"},
            "G": 5
        }),
        json!({
            "A": "p", "B": "user:p@host", "C": [{"Key": "k", "Value": "xp"}],
            "D": "${Pw} literal", "E": "shadowed", "F": "o", "G": 5
        }),
        ConditionVerdicts::new(),
    );
    assert_eq!(
        leaves,
        vec![
            vec![Key("A".into())],
            vec![Key("B".into())],
            vec![Key("C".into()), Index(0), Key("Value".into())],
        ]
    );
}

#[test]
fn fn_if_reads_only_the_selected_branch() {
    let t = json!({"A": {"Fn::If": ["Cond", "lit", {"Ref": "Pw"}]}});
    let r = json!({"A": "lit"});
    let mut v = ConditionVerdicts::new();
    v.insert("Cond".into(), true);
    assert!(scope_test(t.clone(), r.clone(), v).is_empty());
    assert_eq!(scope_test(t, r, ConditionVerdicts::new()).len(), 1);
}

#[test]
fn a_list_parameter_masks_each_element_and_numbers_too() {
    let leaves = scope_test(
        json!({"L": {"Ref": "Pw"}, "N": {"Ref": "Pw"}}),
        json!({"L": ["a", "b"], "N": 42}),
        ConditionVerdicts::new(),
    );
    let mut v = json!({"L": ["a", "b"], "N": 42});
    mask_leaves(&mut v, &leaves);
    assert_eq!(v, json!({"L": ["***", "***"], "N": "***"}));
}

#[test]
fn comparable_keeps_a_legacy_plaintext_record_equal() {
    let sent = obj(json!({"P": "plain", "Q": "x"}));
    let leaves = vec![vec![Key("P".into())]];
    let mut stored = Value::Object(sent.clone());
    mask_leaves(&mut stored, &leaves);
    let stored = obj(stored);
    // A masked record: compared as masks.
    let rec = obj(json!({"P": "***", "Q": "x"}));
    assert_eq!(comparable(&stored, &sent, &leaves, &rec), rec);
    // A record an older cdkd wrote in the clear: compared with the plaintext.
    let legacy = obj(json!({"P": "plain", "Q": "x"}));
    assert_eq!(comparable(&stored, &sent, &leaves, &legacy), legacy);
}

#[test]
fn short_literals_are_listed_only_where_the_template_spells_them() {
    let template = json!({
        "A": "abc",
        "B": "{{resolve:secretsmanager:s}}",
        "C": {"Ref": "P"},
        "D": ["abc", "abcdef"],
        "E": {"F": "ab"},
        "G": ["ab", {"Fn::If": ["C", "x", {"Ref": "AWS::NoValue"}]}]
    });
    let key = |k: &str| PathSegment::Key(k.into());
    assert_eq!(
        short_literals(template.as_object().unwrap()),
        vec![
            (vec![key("A")], "abc".to_string()),
            (vec![key("D"), PathSegment::Index(0)], "abc".to_string()),
            (vec![key("E"), key("F")], "ab".to_string()),
        ]
    );
}
