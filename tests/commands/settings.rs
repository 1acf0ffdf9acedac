//! cdk.json settings and `-c` as the CDK CLI reads them, through the `cdkd` binary: context
//! values reach the app as strings, `build` runs before an app command, `requireApproval`,
//! `outputsFile` and `profile` come from cdk.json below the flags, and keys cdkd does not use
//! are one `--verbose` line, never an error.

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::cdkd;

/// A python3 app that records the context it was given in its template's Metadata and fails
/// unless the build command has written built.txt.
const APP: &str = r#"
import json, os, sys
if not os.path.exists("built.txt"):
    print("settings-app: built.txt is missing: the build did not run", file=sys.stderr)
    sys.exit(4)
out = os.environ["CDK_OUTDIR"]
ctx = json.loads(os.environ.get("CDK_CONTEXT_JSON") or "{}")
seen = {k: ctx.get(k) for k in ("n", "flag", "fromJson")}
template = {
    "Metadata": {"seen": seen},
    "Resources": {"Q": {"Type": "AWS::SQS::Queue"}},
    "Outputs": {"QueueUrl": {"Value": {"Ref": "Q"}}},
}
manifest = {"version": "36.0.0", "artifacts": {"SettingsStack": {
    "type": "aws:cloudformation:stack",
    "environment": "aws://unknown-account/unknown-region",
    "properties": {"templateFile": "SettingsStack.template.json"}}}}
os.makedirs(out, exist_ok=True)
json.dump(template, open(os.path.join(out, "SettingsStack.template.json"), "w"))
json.dump(manifest, open(os.path.join(out, "manifest.json"), "w"))
"#;

fn write_project(dir: &Path, cdk_json: &Value) {
    std::fs::write(dir.join("app.py"), APP).expect("app");
    std::fs::write(dir.join("cdk.json"), cdk_json.to_string()).expect("cdk.json");
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = cdkd()
        .current_dir(dir)
        .env("CDKD_PROGRESS", "plain")
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn context_flags_reach_the_app_as_strings_after_the_build() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_project(
        dir.path(),
        &serde_json::json!({
            "app": "python3 app.py",
            "build": "echo built > built.txt",
            "context": {"fromJson": 7},
            "watch": {"include": ["**"]},
            "notACdkSetting": true
        }),
    );
    let (code, stdout, stderr) = run(
        dir.path(),
        &["synth", "--json", "-c", "n=5", "-c", "flag=true"],
    );
    assert_eq!(code, 0, "{stderr}");
    let template: Value = serde_json::from_str(&stdout).expect("template JSON");
    let seen = &template["Metadata"]["seen"];
    assert_eq!(seen["n"], Value::String("5".into()), "{seen}");
    assert_eq!(seen["flag"], Value::String("true".into()), "{seen}");
    // cdk.json's own context keeps its JSON types.
    assert_eq!(seen["fromJson"], 7, "{seen}");
    assert!(dir.path().join("built.txt").is_file(), "the build ran");
    // Keys cdkd does not use: silent by default, one line each under --verbose.
    assert!(!stderr.contains("watch"), "{stderr}");
    let (code, _, stderr) = run(dir.path(), &["synth", "-q", "-v"]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("ignored")).collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("\"watch\" is a CDK CLI setting")),
        "{stderr}"
    );
    assert!(
        lines.iter().any(|l| l.contains("\"notACdkSetting\"")),
        "{stderr}"
    );
}

#[test]
fn a_failing_build_stops_the_run_and_an_assembly_directory_skips_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_project(
        dir.path(),
        &serde_json::json!({"app": "python3 app.py", "build": "echo building; exit 9"}),
    );
    let (code, _, stderr) = run(dir.path(), &["synth", "-q"]);
    assert_eq!(code, 1, "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("build command `echo building; exit 9` failed with exit code 9"),
        "{stderr}"
    );
    assert!(
        stderr.contains("building"),
        "the build's output is shown: {stderr}"
    );
    assert!(
        !stderr.contains("settings-app"),
        "the app did not run: {stderr}"
    );

    // An assembly directory is read as it is: no build.
    std::fs::write(dir.path().join("built.txt"), "by hand").expect("write");
    let out_dir = dir.path().join("asm");
    let (code, _, stderr) = run(
        dir.path(),
        &["synth", "-q", "-a", "python3 app.py", "-o", "asm"],
    );
    assert_eq!(
        code, 1,
        "the build still runs before an app command: {stderr}"
    );
    std::fs::write(dir.path().join("cdk.json"), r#"{"app": "python3 app.py"}"#).expect("write");
    let (code, _, stderr) = run(dir.path(), &["synth", "-q", "-o", "asm"]);
    assert_eq!(code, 0, "{stderr}");
    std::fs::write(
        dir.path().join("cdk.json"),
        r#"{"app": "python3 app.py", "build": "exit 9"}"#,
    )
    .expect("write");
    let (code, _, stderr) = run(dir.path(), &["ls", "-a", out_dir.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn require_approval_and_outputs_file_come_from_cdk_json_below_the_flags() {
    let app = support::app::App::new("settings");
    let dir = app.dir.path();
    write_project(
        dir,
        &serde_json::json!({
            "app": "python3 app.py",
            "build": "echo built > built.txt",
            "requireApproval": "any-change",
            "outputsFile": "outputs.json",
            "context": {"cdkd": {"stateBucket": app.bucket}}
        }),
    );
    // No terminal, no --yes: cdk.json's any-change refuses the deploy.
    let (code, _, stderr) = run(dir, &["deploy"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("need approval (--require-approval any-change)"),
        "{stderr}"
    );
    let refused = std::fs::read_to_string(dir.join("outputs.json")).unwrap_or_default();
    assert!(!refused.contains("QueueUrl"), "nothing deployed: {refused}");

    // The flag wins over cdk.json; the outputs land where cdk.json says.
    let (code, _, stderr) = run(dir, &["deploy", "--require-approval", "never"]);
    assert_eq!(code, 0, "{stderr}");
    let outputs: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("outputs.json")).expect("outputs file"),
    )
    .expect("JSON");
    assert!(
        outputs["SettingsStack"]["QueueUrl"]
            .as_str()
            .is_some_and(|u| u.contains("/")),
        "{outputs}"
    );
    // --outputs-file wins over cdk.json.
    let (code, _, stderr) = run(
        dir,
        &[
            "deploy",
            "--require-approval",
            "never",
            "--outputs-file",
            "flag.json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(dir.join("flag.json").is_file());

    // "broadening" (the CDK's default) is the real level: nothing here widens a permission,
    // so nothing is asked and no warning is printed.
    std::fs::write(
        dir.join("cdk.json"),
        serde_json::json!({
            "app": "python3 app.py",
            "requireApproval": "broadening",
            "context": {"cdkd": {"stateBucket": app.bucket}}
        })
        .to_string(),
    )
    .expect("write");
    let (code, _, stderr) = run(dir, &["deploy", "-c", "n=changed"]);
    assert!(!stderr.contains("read as any-change"), "{stderr}");
    assert_eq!(
        code, 0,
        "no permission widens, nothing to approve: {stderr}"
    );
}

#[test]
fn profile_comes_from_cdk_json_below_aws_profile_and_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    write_project(
        dir.path(),
        &serde_json::json!({"app": "python3 app.py", "profile": "fromjson"}),
    );
    std::fs::write(dir.path().join("built.txt"), "").expect("write");
    let without_keys = |args: &[&str], profile_env: Option<&str>| {
        let mut cmd = cdkd();
        cmd.current_dir(dir.path())
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env("HOME", home.path())
            .env("AWS_CONFIG_FILE", home.path().join("config"))
            .env(
                "AWS_SHARED_CREDENTIALS_FILE",
                home.path().join("credentials"),
            )
            .args(args);
        if let Some(p) = profile_env {
            cmd.env("AWS_PROFILE", p);
        }
        let out = cmd.output().expect("runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let deploy = ["deploy", "--state-bucket", "b"];
    // No credentials for any profile: the error names the one in use.
    let (code, _, stderr) = without_keys(&deploy, None);
    assert_eq!(code, 1);
    assert!(stderr.contains("for profile `fromjson`"), "{stderr}");
    let (_, _, stderr) = without_keys(&deploy, Some("fromenv"));
    assert!(stderr.contains("for profile `fromenv`"), "{stderr}");
    let mut flagged = deploy.to_vec();
    flagged.extend(["--profile", "fromflag"]);
    let (_, _, stderr) = without_keys(&flagged, Some("fromenv"));
    assert!(stderr.contains("for profile `fromflag`"), "{stderr}");

    // cdk.json's profile has credentials: STS answers, the listing knows the account.
    let (code, stdout, stderr) = without_keys(&["ls", "--json"], None);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("unknown-account"),
        "no credentials yet: {stdout}"
    );
    std::fs::write(
        home.path().join("credentials"),
        "[fromjson]\naws_access_key_id = AKIAFROMJSON\naws_secret_access_key = s\n",
    )
    .expect("credentials");
    let (code, stdout, stderr) = without_keys(&["ls", "--json"], None);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("aws://123456789012/"), "{stdout}");
}
