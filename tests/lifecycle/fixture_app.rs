//! Driving a synthesized fixture app (fixtures/apps/NAME/cdk.out) through the `cdkd` binary,
//! for the end-to-end tests of the SDK providers: one command with its exit code and output,
//! the stack's record as `state show --json` prints it, and the operations a trace recorded.

use crate::support::cdkd;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub fn fixture(app: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/apps")
        .join(app)
        .join("cdk.out")
}

/// `cdkd <command> --app <fixture> <extra..> --state-bucket B`: (exit code, stdout+stderr),
/// with the deploy's calls traced to `trace` when given.
pub fn run(
    command: &str,
    app: &str,
    bucket: &str,
    extra: &[&str],
    trace: Option<&Path>,
) -> (i32, String) {
    let dir = fixture(app);
    let mut cmd = cdkd();
    cmd.current_dir(&dir)
        .env("CDKD_PROGRESS", "plain")
        .env("NO_COLOR", "1")
        .arg(command);
    if command != "bootstrap" {
        cmd.args(["--app", dir.to_str().expect("utf-8 path")]);
    }
    if let Some(t) = trace {
        cmd.env("CDKD_TRACE_FILE", t);
    }
    let out = cmd
        .args(extra)
        .args(["--state-bucket", bucket])
        .output()
        .expect("runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// The stack's state record.
pub fn record(stack: &str, bucket: &str) -> Value {
    let out = cdkd()
        .args(["state", "show", stack, "--json", "--state-bucket", bucket])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: Value = serde_json::from_slice(&out.stdout).expect("json");
    match shown.get("state") {
        Some(s) if s.is_object() => s.clone(),
        _ => shown,
    }
}

/// The operations a trace recorded.
pub fn traced(trace: &Path) -> Vec<String> {
    std::fs::read_to_string(trace)
        .expect("trace written")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "call")
        .filter_map(|v| v["op"].as_str().map(str::to_owned))
        .collect()
}

/// (logical id, type, physical id) of every resource of `types` the record holds, sorted,
/// after checking each is recorded as made by its SDK provider.
pub fn sdk_resources(state: &Value, types: &[&str]) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (id, r) in state["resources"].as_object().expect("resources") {
        let ty = r["resourceType"].as_str().expect("type");
        if types.contains(&ty) {
            assert_eq!(
                r["provisionedBy"], "sdk",
                "{id} ({ty}) is not on the SDK route: {r}"
            );
            let physical = r["physicalId"].as_str().expect("physical id").to_owned();
            out.push((id.clone(), ty.to_owned(), physical));
        }
    }
    out.sort();
    out
}
