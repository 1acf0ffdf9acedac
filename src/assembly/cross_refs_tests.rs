use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::*;
use crate::assembly::{select_ordered, CloudAssembly, Selector};

fn agnostic() -> Environment {
    Environment::unknown()
}

fn pinned(account: &str, region: &str) -> Environment {
    Environment {
        account: Some(account.into()),
        region: Some(region.into()),
    }
}

fn text(v: Value, stack: &str, env: &Environment) -> Option<String> {
    static_text(
        &v,
        &Pseudo {
            stack_name: stack,
            environment: env,
        },
    )
}

#[test]
fn names_evaluate_over_literals_and_pseudo_parameters() {
    let env = pinned("111111111111", "cn-north-1");
    let cases = [
        (json!("Shared-QueueArn"), Some("Shared-QueueArn")),
        (
            json!({"Fn::Sub": "${AWS::StackName}-Arn"}),
            Some("Prod-Arn"),
        ),
        (
            json!({"Fn::Sub": "${AWS::Region}:${AWS::AccountId}:${AWS::Partition}:${AWS::URLSuffix}"}),
            Some("cn-north-1:111111111111:aws-cn:amazonaws.com.cn"),
        ),
        (
            json!({"Fn::Sub": ["${Prefix}-${!Literal}", {"Prefix": {"Ref": "AWS::StackName"}}]}),
            Some("Prod-${Literal}"),
        ),
        (
            json!({"Fn::Join": [":", ["a", {"Ref": "AWS::Region"}, {"Fn::Sub": "${AWS::StackName}"}]]}),
            Some("a:cn-north-1:Prod"),
        ),
        (json!({"Fn::Sub": "open ${ end"}), Some("open ${ end")),
        // Known only when deploying: no name, so no edge.
        (json!({"Fn::Sub": "${Env}-Arn"}), None),
        (json!({"Fn::Sub": "${Queue.Arn}"}), None),
        (json!({"Ref": "Env"}), None),
        (json!({"Ref": "AWS::StackId"}), None),
        (json!({"Fn::Join": [":", {"Ref": "List"}]}), None),
        (json!({"Fn::GetAtt": ["Queue", "Arn"]}), None),
        (json!({"Fn::Sub": ["${X}", {"X": {"Ref": "Param"}}]}), None),
        (json!(7), None),
    ];
    for (v, want) in cases {
        assert_eq!(text(v.clone(), "Prod", &env).as_deref(), want, "{v}");
    }
}

#[test]
fn an_agnostic_stacks_unknown_environment_is_a_placeholder() {
    let v = json!({"Fn::Sub": "${AWS::AccountId}-${AWS::Region}-${AWS::Partition}-x"});
    let a = text(v.clone(), "A", &agnostic()).expect("evaluates");
    assert_eq!(
        a, "${AWS::AccountId}-${AWS::Region}-${AWS::Partition}-x",
        "equal between agnostic stacks"
    );
    let b = text(v, "B", &pinned("1", "us-east-1")).expect("evaluates");
    assert_eq!(b, "1-us-east-1-aws-x");
}

#[test]
fn facts_collect_exports_imports_and_reads_anywhere_in_the_template() {
    let template = json!({
        "Resources": {
            "P": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Value": {"Fn::Join": ["", [{"Fn::ImportValue": "Literal"}, {"Fn::ImportValue": {"Fn::Sub": "${AWS::Region}-Sub"}}]]},
                "Other": {"Fn::ImportValue": {"Ref": "Param"}},
            }},
            "R": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Value": {"Fn::GetStackOutput": {"StackName": "Producer", "OutputName": "Url"}},
                "Two": {"Fn::GetStackOutput": {"StackName": "Far", "OutputName": "Url", "Region": "eu-west-1"}},
                "Three": {"Fn::GetStackOutput": {"StackName": "Other", "OutputName": "Url", "RoleArn": "arn:aws:iam::2:role/r"}},
                "Four": {"Fn::GetStackOutput": {"StackName": {"Ref": "Param"}, "OutputName": "Url"}},
            }},
        },
        "Outputs": {
            "A": {"Value": "x", "Export": {"Name": "Plain"}},
            "B": {"Value": "x", "Export": {"Name": {"Fn::Sub": "${AWS::StackName}-B"}}},
            "C": {"Value": "x", "Export": {"Name": {"Fn::GetAtt": ["R", "Value"]}}},
            "D": {"Value": "x"},
        }
    });
    let env = pinned("1", "us-east-1");
    let f = facts(
        &template,
        &Pseudo {
            stack_name: "Me",
            environment: &env,
        },
    );
    assert_eq!(f.exports, ["Plain", "Me-B"]);
    assert_eq!(f.imports, ["Literal", "us-east-1-Sub"]);
    assert_eq!(
        f.reads,
        [
            ("Producer".to_owned(), None),
            ("Far".to_owned(), Some("eu-west-1".to_owned()))
        ]
    );
}

fn artifact(name: &str, env: Environment, template_file: PathBuf) -> StackArtifact {
    StackArtifact {
        artifact_id: name.into(),
        stack_name: name.into(),
        display_name: name.into(),
        environment: env,
        template_file,
        dependencies: Vec::new(),
        logical_ids: Vec::new(),
        annotations: Vec::new(),
        asset_manifests: Vec::new(),
        termination_protection: false,
        tags: Map::new(),
        properties: Map::new(),
        assembly_dir: PathBuf::from("/assembly"),
    }
}

fn facts_of(exports: &[&str], imports: &[&str], reads: &[(&str, Option<&str>)]) -> Facts {
    Facts {
        exports: exports.iter().map(|s| s.to_string()).collect(),
        imports: imports.iter().map(|s| s.to_string()).collect(),
        reads: reads
            .iter()
            .map(|(s, r)| (s.to_string(), r.map(str::to_owned)))
            .collect(),
    }
}

#[test]
fn imports_and_reads_become_edges_within_compatible_environments() {
    let stacks = [
        artifact("Consumer", agnostic(), PathBuf::new()),
        artifact("Producer", agnostic(), PathBuf::new()),
        artifact("East", pinned("1", "us-east-1"), PathBuf::new()),
        artifact("West", pinned("1", "us-west-2"), PathBuf::new()),
        artifact("EastReader", pinned("1", "us-east-1"), PathBuf::new()),
    ];
    let facts = [
        facts_of(&[], &["P-Name", "Nobody"], &[("Producer", None)]),
        facts_of(&["P-Name", "Own"], &["Own"], &[("Producer", None)]),
        facts_of(&["Regional"], &[], &[]),
        facts_of(&["Regional"], &[], &[]),
        facts_of(
            &[],
            &["Regional"],
            &[("West", None), ("West", Some("us-west-2")), ("Nope", None)],
        ),
    ];
    let edges = infer(&stacks, &facts);
    let e = |consumer, producer, strong| Inferred {
        consumer,
        producer,
        strong,
    };
    assert_eq!(
        edges,
        [
            // Import and read of the same producer: one strong edge.
            e(0, 1, true),
            // Its own export and its own name are no edges. The import of a name exported
            // in two regions reaches only the one in the reader's region; the read without
            // a Region is of West in us-east-1, which it is not; the one naming us-west-2 is.
            e(4, 2, true),
            e(4, 3, false),
        ]
    );
}

/// An assembly whose stacks' templates are written to a temporary directory.
fn assembly(dir: &tempfile::TempDir, stacks: &[(&str, &[&str], Value)]) -> CloudAssembly {
    let stacks = stacks
        .iter()
        .map(|(name, deps, template)| {
            let file = dir.path().join(format!("{name}.template.json"));
            std::fs::write(&file, template.to_string()).expect("write template");
            let mut a = artifact(name, agnostic(), file);
            a.dependencies = deps.iter().map(|d| d.to_string()).collect();
            a
        })
        .collect();
    CloudAssembly {
        dir: dir.path().to_owned(),
        version: "48.0.0".into(),
        stacks,
        missing: Vec::new(),
    }
}

fn exporting(name: Value) -> Value {
    json!({"Resources": {}, "Outputs": {"O": {"Value": "v", "Export": {"Name": name}}}})
}

fn using(value: Value) -> Value {
    json!({"Resources": {"P": {"Type": "AWS::SSM::Parameter", "Properties": {"Value": value}}}})
}

fn names(stacks: &[&StackArtifact]) -> Vec<String> {
    stacks.iter().map(|s| s.display_name.clone()).collect()
}

fn pick<'a>(
    assembly: &'a CloudAssembly,
    patterns: &[String],
    all: bool,
    deps: bool,
) -> Vec<String> {
    let s = select_ordered(
        assembly,
        &Selector {
            patterns,
            all,
            with_dependencies: deps,
        },
    )
    .expect("selects");
    names(&s.stacks)
}

#[test]
fn selection_orders_producers_first_and_pulls_in_only_what_is_imported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = assembly(
        &dir,
        &[
            (
                "Importer",
                &[],
                using(json!({"Fn::ImportValue": "Producer-Url"})),
            ),
            (
                "Reader",
                &[],
                using(
                    json!({"Fn::GetStackOutput": {"StackName": "Producer", "OutputName": "Url"}}),
                ),
            ),
            (
                "Producer",
                &[],
                exporting(json!({"Fn::Sub": "${AWS::StackName}-Url"})),
            ),
        ],
    );
    assert_eq!(
        pick(&a, &[], true, false),
        ["Producer", "Importer", "Reader"]
    );
    let one = |p: &str| vec![p.to_owned()];
    assert_eq!(
        pick(&a, &one("Importer"), false, true),
        ["Producer", "Importer"]
    );
    assert_eq!(pick(&a, &one("Importer"), false, false), ["Importer"]);
    assert_eq!(
        pick(&a, &one("Reader"), false, true),
        ["Reader"],
        "a read pulls nothing in"
    );

    let s = select_ordered(
        &a,
        &Selector {
            patterns: &[],
            all: true,
            with_dependencies: false,
        },
    )
    .expect("selects");
    assert_eq!(s.after, [vec![], vec![0], vec![0]]);
    assert_eq!(s.needs, [vec![], vec![0], vec![]], "a read is not needed");
    assert!(s.notes.is_empty());
}

#[test]
fn stacks_reading_each_other_are_ordered_with_a_note_and_manifest_cycles_fail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let both = |export: &str, import: &str| {
        json!({
            "Resources": {"P": {"Type": "AWS::SSM::Parameter", "Properties": {"Value": {"Fn::ImportValue": import}}}},
            "Outputs": {"O": {"Value": "v", "Export": {"Name": export}}}
        })
    };
    let a = assembly(
        &dir,
        &[("A", &[], both("a", "b")), ("B", &[], both("b", "a"))],
    );
    let s = select_ordered(
        &a,
        &Selector {
            patterns: &[],
            all: true,
            with_dependencies: false,
        },
    )
    .expect("a cycle of inferred edges still orders");
    assert_eq!(names(&s.stacks), ["A", "B"]);
    assert_eq!(s.after, [vec![], vec![0]]);
    assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
    assert!(
        s.notes[0].contains("A and B read each other's outputs"),
        "{:?}",
        s.notes
    );

    // A manifest edge is never set aside: B depends on A, A imports from B.
    let a = assembly(
        &dir,
        &[("A", &[], both("a", "b")), ("B", &["A"], both("b", "x"))],
    );
    let s = select_ordered(
        &a,
        &Selector {
            patterns: &[],
            all: true,
            with_dependencies: false,
        },
    )
    .expect("orders");
    assert_eq!(names(&s.stacks), ["A", "B"]);

    let a = assembly(&dir, &[("A", &["B"], json!({})), ("B", &["A"], json!({}))]);
    let err = select_ordered(
        &a,
        &Selector {
            patterns: &[],
            all: true,
            with_dependencies: false,
        },
    )
    .expect_err("a manifest cycle");
    assert!(err.to_string().contains("cycle among: A, B"), "{err}");
}

#[test]
fn an_unreadable_template_infers_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut a = assembly(
        &dir,
        &[
            ("Consumer", &[], using(json!({"Fn::ImportValue": "N"}))),
            ("Producer", &[], exporting(json!("N"))),
        ],
    );
    std::fs::write(&a.stacks[1].template_file, "{ not json").expect("write");
    assert_eq!(pick(&a, &[], true, false), ["Consumer", "Producer"]);
    a.stacks[1].template_file = dir.path().join("missing.json");
    assert_eq!(pick(&a, &[], true, false), ["Consumer", "Producer"]);
}
