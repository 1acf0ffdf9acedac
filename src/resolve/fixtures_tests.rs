//! Resolves the committed fixture templates and compares the result with
//! golden files under `fixtures/golden/resolve/` (`UPDATE_GOLDEN=1`
//! rewrites them).

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::test_support::{Synthetic, SyntheticExternal};
use super::*;
use crate::template::parse_template_file;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `(app, stack, path)` of every `fixtures/apps/*/cdk.out/*.template.json`.
fn fixture_templates() -> Vec<(String, String, PathBuf)> {
    let mut out = Vec::new();
    let apps = root().join("fixtures/apps");
    let mut dirs: Vec<_> = std::fs::read_dir(&apps)
        .expect("fixtures/apps exists")
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for app in dirs {
        let Ok(entries) = std::fs::read_dir(app.join("cdk.out")) else {
            continue;
        };
        let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy().to_string();
            if let Some(stack) = name.strip_suffix(".template.json") {
                let app_name = app.file_name().unwrap().to_string_lossy().to_string();
                out.push((app_name, stack.to_string(), file));
            }
        }
    }
    out
}

/// Everything the resolver makes of one template, as a JSON document.
fn resolve_fixture(stack: &str, path: &Path) -> Result<Value, ResolveError> {
    let mut template = parse_template_file(path).expect("fixture template parses");
    let ctx = ResolveContext::new(stack, "us-east-1", Some("123456789012".into()));
    let params = bind_parameters(&template, &[], stack, &NoExternalLookup)?;
    let verdicts = Resolver::new(&template, &ctx, &params, &Synthetic, &SyntheticExternal)
        .evaluate_conditions()?;
    let report = prune(&mut template, &verdicts, stack);
    let mut r = Resolver::new(&template, &ctx, &params, &Synthetic, &SyntheticExternal)
        .with_conditions(&verdicts);

    let parameters: Map<String, Value> = params
        .iter()
        .map(|(name, v)| {
            let shown = match v {
                ParameterValue::Resolved(v) if params.is_no_echo(name) => json!({"NoEcho": v}),
                ParameterValue::Resolved(v) => v.clone(),
                ParameterValue::Unresolved(reason) => json!({"Unresolved": reason}),
            };
            (name.to_string(), shown)
        })
        .collect();
    let mut resources = Map::new();
    for (id, resource) in &template.resources {
        // A value only AWS can supply (an SSM-typed parameter's) is recorded with its reason;
        // any other failure fails the test.
        let props = match r.resolve_properties(id) {
            Ok(p) => json!(p),
            Err(e) if e.is_unavailable() => json!({"Unresolved": e.to_string()}),
            Err(e) => return Err(e),
        };
        resources.insert(
            id.clone(),
            json!({"Type": resource.type_, "Properties": props}),
        );
    }
    let mut outputs = Map::new();
    for name in template.outputs.keys() {
        let resolved = match r.resolve_output(name) {
            Err(e) if e.is_unavailable() => {
                outputs.insert(name.clone(), json!({"Unresolved": e.to_string()}));
                continue;
            }
            other => other?,
        };
        let shown = match resolved {
            None => json!("(skipped: condition false)"),
            Some(o) => match o.export_name {
                Some(export) => json!({"Value": o.value, "Export": export}),
                None => json!({"Value": o.value}),
            },
        };
        outputs.insert(name.clone(), shown);
    }
    let warnings: Vec<String> = report
        .warnings
        .iter()
        .chain(r.warnings())
        .map(ToString::to_string)
        .collect();
    Ok(json!({
        "StackId": ctx.stack_id(),
        "Parameters": parameters,
        "Conditions": verdicts,
        "PrunedResources": report.removed_resources,
        "SkippedOutputs": report.skipped_outputs,
        "Resources": resources,
        "Outputs": outputs,
        "Warnings": warnings,
    }))
}

#[test]
fn fixture_templates_resolve_to_golden_files() {
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let golden_dir = root().join("fixtures/golden/resolve");
    let fixtures = fixture_templates();
    assert!(
        fixtures.len() >= 8,
        "expected the committed fixtures, found {fixtures:?}"
    );
    let mut failures = Vec::new();
    for (app, stack, path) in fixtures {
        let resolved = match resolve_fixture(&stack, &path) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{app}/{stack}: {e}"));
                continue;
            }
        };
        let text = serde_json::to_string_pretty(&resolved).unwrap() + "\n";
        let golden = golden_dir.join(format!("{app}-{stack}.json"));
        if update {
            std::fs::create_dir_all(&golden_dir).unwrap();
            std::fs::write(&golden, &text).unwrap();
            continue;
        }
        match std::fs::read_to_string(&golden) {
            Ok(want) if want == text => {}
            Ok(_) => failures.push(format!(
                "{}: differs from the resolver's output (rerun with UPDATE_GOLDEN=1 if the change is intended)",
                golden.display()
            )),
            Err(_) => failures.push(format!(
                "{}: missing (run with UPDATE_GOLDEN=1 to create it)",
                golden.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn params_fixture_semantics() {
    let path = root().join("fixtures/apps/params/cdk.out/ParamsStack.template.json");
    let v = resolve_fixture("ParamsStack", &path).unwrap();
    assert_eq!(v["Conditions"]["IsProd"], json!(false));
    assert_eq!(v["Conditions"]["IsNotProd"], json!(true));
    assert_eq!(v["PrunedResources"], json!(["DeadLetterQueue", "ProdFlag"]));
    assert_eq!(v["SkippedOutputs"], json!(["DeadLetterQueueArn"]));
    let queue = &v["Resources"]["Queue4A7E3555"]["Properties"];
    assert_eq!(
        queue,
        &json!({"DelaySeconds": 5, "MessageRetentionPeriod": "345600"})
    );
    assert_eq!(
        v["Resources"]["Settings"]["Properties"]["Value"],
        json!("use1;a;not-a-real-secret")
    );
    assert_eq!(v["Outputs"]["Mode"]["Value"], json!("other"));
    assert!(v["Parameters"]["BootstrapVersion"]["Unresolved"].is_string());
}
