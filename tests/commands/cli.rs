//! The `cdkd` binary end to end: help, stack listing and synthesis on every fixture app, the app
//! command path, and one-line errors for every malformed input.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::cdkd;

fn fixture(app: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/apps")
        .join(app)
}

fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs cdkd in `dir` and returns its output, whatever the exit code.
fn run_in(dir: &Path, args: &[&str]) -> std::process::Output {
    cdkd()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("cdkd runs")
}

/// Asserts a failure with exit code 1 and exactly one `error:` line that contains `needle`.
fn assert_one_line_error(out: &std::process::Output, needle: &str) {
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr_of(out));
    let err = stderr_of(out);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "expected one error line, got: {err}");
    assert!(
        errors[0].contains(needle),
        "error line {:?} lacks {needle:?}",
        errors[0]
    );
    assert!(!err.contains("panicked"), "{err}");
}

const COMMANDS: &[&[&str]] = &[
    &["deploy"],
    &["diff"],
    &["destroy"],
    &["synth"],
    &["list"],
    &["ls"],
    &["bootstrap"],
    &["import"],
    &["orphan"],
    &["scrub"],
    &["rollback"],
    &["force-unlock"],
    &["drift"],
    &["publish-assets"],
    &["state"],
    &["state", "info"],
    &["state", "list"],
    &["state", "resources"],
    &["state", "show"],
    &["state", "orphan"],
    &["state", "destroy"],
    &["state", "refresh-observed"],
];

#[test]
fn help_for_cdkd_and_every_command() {
    let out = cdkd().arg("--help").output().expect("runs");
    assert!(out.status.success());
    let top = stdout_of(&out);
    for name in [
        "deploy",
        "diff",
        "destroy",
        "synth",
        "list",
        "bootstrap",
        "import",
        "orphan",
        "scrub",
        "rollback",
        "force-unlock",
        "drift",
        "publish-assets",
        "state",
    ] {
        assert!(top.contains(name), "top-level help lacks {name}");
    }
    for global in [
        "--app",
        "--output",
        "--context",
        "--state-bucket",
        "--state-prefix",
        "--region",
        "--profile",
        "--role-arn",
        "--verbose",
        "--yes",
    ] {
        assert!(top.contains(global), "top-level help lacks {global}");
    }
    for command in COMMANDS {
        let out = cdkd().args(*command).arg("--help").output().expect("runs");
        assert!(out.status.success(), "{command:?} --help failed");
        let text = stdout_of(&out);
        assert!(text.contains("Usage: cdkd"), "{command:?}: {text}");
    }
}

#[test]
fn usage_errors_exit_1() {
    let out = cdkd()
        .args(["list", "--no-such-flag"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let out = cdkd()
        .args(["deploy", "--concurrency", "0"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn list_every_fixture_assembly() {
    let expected: &[(&str, &[&str])] = &[
        ("basic", &["BasicStack"]),
        ("cross-stack", &["ProducerStack", "ConsumerStack"]),
        // No manifest dependency, consumers first in the manifest: producers first from the
        // templates (Fn::ImportValue of the names the producer exports; Fn::GetStackOutput).
        ("cross-stack-import", &["ImportProducer", "ImportConsumer"]),
        ("cross-stack-output", &["OutputProducer", "OutputReader"]),
        ("nested", &["ParentStack"]),
        ("params", &["ParamsStack"]),
        ("lambda", &["LambdaStack"]),
        ("stages", &["MyStage/Db", "MyStage/Api", "Root"]),
        ("app-command", &["CommandStack"]),
        ("annotations", &["WarnStack"]),
    ];
    for (app, stacks) in expected {
        let out = run_in(&fixture(app), &["list", "--app", "cdk.out"]);
        assert!(out.status.success(), "{app}: {}", stderr_of(&out));
        let listed: Vec<String> = stdout_of(&out).lines().map(str::to_owned).collect();
        assert_eq!(listed, *stacks, "{app}");
    }
}

#[test]
fn list_long_and_json_show_environment_and_dependencies() {
    let out = run_in(&fixture("cross-stack"), &["ls", "-a", "cdk.out", "--json"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(list[1]["id"], "ConsumerStack");
    assert_eq!(
        list[1]["dependencies"],
        serde_json::json!(["ProducerStack"])
    );
    // Unknown halves are filled from STS and the region chain (the emulator's).
    assert_eq!(
        list[0]["environment"]["name"],
        "aws://123456789012/us-east-1"
    );

    let out = run_in(&fixture("stages"), &["ls", "-a", "cdk.out", "--long"]);
    assert!(out.status.success());
    let text = stdout_of(&out);
    assert!(
        text.contains("id: MyStage/Api") && text.contains("name: MyStage-Api"),
        "{text}"
    );
    assert!(text.contains("- MyStage/Db"), "{text}");
}

#[test]
fn selection_by_pattern_path_and_name() {
    let dir = fixture("stages");
    let ls = |args: &[&str]| {
        let mut all = vec!["ls", "-a", "cdk.out"];
        all.extend_from_slice(args);
        let out = run_in(&dir, &all);
        assert!(out.status.success(), "{args:?}: {}", stderr_of(&out));
        stdout_of(&out)
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(ls(&["MyStage/*"]), ["MyStage/Db", "MyStage/Api"]);
    assert_eq!(ls(&["*"]), ["Root"], "`*` does not cross a `/`");
    assert_eq!(
        ls(&["MyStage-Api"]),
        ["MyStage/Api"],
        "stack names select too"
    );
    assert_eq!(ls(&["Root", "MyStage/Api"]), ["MyStage/Api", "Root"]);

    let out = run_in(&dir, &["ls", "-a", "cdk.out", "Nope"]);
    assert_one_line_error(
        &out,
        "no stack matches `Nope`; stacks in this app: MyStage/Db, MyStage/Api, Root",
    );
}

#[test]
fn synth_prints_the_single_stack_template() {
    for (app, resource_type) in [
        ("basic", "AWS::DynamoDB::Table"),
        ("nested", "AWS::CloudFormation::Stack"),
        ("params", "AWS::SSM::Parameter"),
        ("lambda", "AWS::Lambda::Function"),
    ] {
        let dir = fixture(app);
        let out = run_in(&dir, &["synth", "-a", "cdk.out"]);
        assert!(out.status.success(), "{app}: {}", stderr_of(&out));
        assert!(
            stdout_of(&out).contains(&format!("Type: {resource_type}")),
            "{app}"
        );

        let out = run_in(&dir, &["synth", "-a", "cdk.out", "--json"]);
        assert!(out.status.success());
        let printed: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("cdk.out/manifest.json")).expect("manifest"),
        )
        .expect("JSON");
        let template_file = manifest["artifacts"]
            .as_object()
            .expect("artifacts")
            .values()
            .find(|a| a["type"] == "aws:cloudformation:stack")
            .and_then(|a| a["properties"]["templateFile"].as_str())
            .expect("a stack")
            .to_owned();
        let on_disk: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("cdk.out").join(template_file)).expect("template"),
        )
        .expect("JSON");
        assert_eq!(
            printed, on_disk,
            "{app}: synth --json must print the template unchanged"
        );
    }
}

#[test]
fn synth_of_a_multi_stack_app_names_the_stacks_or_prints_the_selected_one() {
    let dir = fixture("cross-stack");
    let out = run_in(&dir, &["synth", "-a", "cdk.out"]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert!(stderr_of(&out).contains("Supply a stack id (ProducerStack, ConsumerStack)"));

    let out = run_in(&dir, &["synth", "-a", "cdk.out", "ConsumerStack"]);
    assert!(out.status.success());
    assert!(stdout_of(&out).contains("Fn::ImportValue"));
}

/// Copies the app-command fixture's app into a scratch directory so the test writes no files
/// into the repository.
fn scratch_app_command() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        fixture("app-command").join("app.py"),
        dir.path().join("app.py"),
    )
    .expect("copy app");
    std::fs::write(dir.path().join("cdk.json"), r#"{"app": "python3 app.py"}"#).expect("cdk.json");
    dir
}

#[test]
fn a_real_app_command_is_run_with_the_cdk_environment() {
    let dir = scratch_app_command();
    let out = run_in(
        dir.path(),
        &["synth", "--json", "-c", "bucketSuffix=from-cli"],
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    let template: Value =
        serde_json::from_slice(&out.stdout).expect("stdout holds only the template");
    let meta = &template["Metadata"]["cdkd:fixture"];
    assert_eq!(meta["bucketSuffix"], "from-cli", "context reached the app");
    assert_eq!(
        meta["defaultAccount"], "123456789012",
        "CDK_DEFAULT_ACCOUNT from STS"
    );
    assert_eq!(
        meta["defaultRegion"], "us-east-1",
        "CDK_DEFAULT_REGION from the region chain"
    );
    let err = stderr_of(&out);
    assert!(
        err.contains("app-command: synthesizing CommandStack"),
        "app stdout streamed to stderr: {err}"
    );
    assert!(err.contains("this line is written to stderr"), "{err}");
    assert!(
        dir.path().join("cdk.out/manifest.json").is_file(),
        "default output dir is cdk.out"
    );

    // --app and -o override cdk.json; the listing comes from the fresh assembly.
    let out = run_in(
        dir.path(),
        &["ls", "-a", "python3 app.py", "-o", "elsewhere"],
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out).trim(), "CommandStack");
    assert!(dir.path().join("elsewhere/manifest.json").is_file());
}

#[test]
fn a_failing_app_command_is_one_error_naming_the_command() {
    let dir = scratch_app_command();
    let out = run_in(dir.path(), &["synth", "-c", "fail=true"]);
    assert_one_line_error(&out, "the app `python3 app.py` failed with exit code 3");
    assert!(
        stderr_of(&out).contains("failing on purpose"),
        "the app's own output is shown"
    );

    let out = run_in(dir.path(), &["ls", "-a", "definitely-not-a-command-xyz"]);
    assert_one_line_error(&out, "definitely-not-a-command-xyz");
}

#[test]
fn cdkd_app_environment_variable_is_used_below_the_flag() {
    let dir = fixture("basic");
    let out = cdkd()
        .current_dir(&dir)
        .env("CDKD_APP", "cdk.out")
        .arg("ls")
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out).trim(), "BasicStack");
}

#[test]
fn warnings_are_printed_and_error_annotations_fail() {
    let dir = fixture("annotations");
    let out = run_in(&dir, &["synth", "-a", "cdk.out"]);
    assert!(out.status.success());
    assert!(
        stderr_of(&out).contains("warning: /WarnStack/Queue: This queue is only a fixture warning")
    );

    let out = run_in(&dir, &["synth", "-a", "error.out"]);
    assert_one_line_error(&out, "/ErrorStack/Queue: This queue is a fixture error");
}

/// `--strict` (upstream cdkd's and the CDK's): a warning annotation fails too; `--ignore-errors`
/// prints an error annotation and goes on (deploy too: the stack is deployed); both together:
/// strict wins.
#[test]
fn strict_fails_on_warnings_and_ignore_errors_goes_on_past_errors() {
    let dir = fixture("annotations");
    let out = run_in(&dir, &["synth", "--strict", "-a", "cdk.out"]);
    assert_one_line_error(&out, "1 warning(s) (--strict mode)");
    assert!(stderr_of(&out).contains("This queue is only a fixture warning"));

    let out = run_in(&dir, &["synth", "--ignore-errors", "-a", "error.out"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("/ErrorStack/Queue: This queue is a fixture error"),
        "the error is still shown: {}",
        stderr_of(&out)
    );
    assert!(
        stdout_of(&out).contains("AWS::SQS::Queue"),
        "the template is printed"
    );

    let out = run_in(
        &dir,
        &["synth", "--ignore-errors", "--strict", "-a", "error.out"],
    );
    assert_one_line_error(&out, "/ErrorStack/Queue: This queue is a fixture error");
    // deploy judges annotations the same way, before anything is read from AWS.
    let out = run_in(
        &dir,
        &[
            "deploy",
            "--strict",
            "-a",
            "cdk.out",
            "--state-bucket",
            "unused",
        ],
    );
    assert_one_line_error(&out, "(--strict mode)");
    // deploy --ignore-errors goes on past the error annotation and deploys the stack.
    let bucket = support::unique_name("cdkd-ignore-errors");
    let out = run_in(
        &dir,
        &["bootstrap", "--no-assets", "--state-bucket", &bucket],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let deploy = [
        "deploy",
        "--ignore-errors",
        "-a",
        "error.out",
        "--state-bucket",
        &bucket,
    ];
    let out = run_in(&dir, &deploy);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("This queue is a fixture error"),
        "the error is still shown: {}",
        stderr_of(&out)
    );
    assert!(
        stderr_of(&out).contains("1 created"),
        "the stack is deployed: {}",
        stderr_of(&out)
    );
}

/// Upstream cdkd's `--stack NAME` selects a stack like a positional name; a named one wins.
#[test]
fn the_stack_flag_selects_a_stack() {
    let dir = fixture("cross-stack");
    let out = run_in(
        &dir,
        &[
            "synth",
            "--json",
            "-a",
            "cdk.out",
            "--stack",
            "ProducerStack",
        ],
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    let template: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one template");
    let types: Vec<&str> = template["Resources"]
        .as_object()
        .expect("resources")
        .values()
        .filter_map(|r| r["Type"].as_str())
        .collect();
    assert!(
        types.contains(&"AWS::S3::Bucket"),
        "the producer's: {types:?}"
    );
    assert!(
        !types.contains(&"AWS::SSM::Parameter"),
        "not the consumer's: {types:?}"
    );
    let out = run_in(
        &dir,
        &[
            "ls",
            "-a",
            "cdk.out",
            "--stack",
            "ProducerStack",
            "ConsumerStack",
        ],
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        stdout_of(&out).trim(),
        "ConsumerStack",
        "the named stack wins"
    );
}

#[test]
fn missing_context_is_reported_clearly() {
    let dir = fixture("missing-context");
    let out = run_in(&dir, &["synth", "-a", "cdk.out"]);
    assert_one_line_error(&out, "vpc-provider");
    let out = run_in(&dir, &["ls", "-a", "cdk.out"]);
    assert!(out.status.success());
    assert!(
        stderr_of(&out).contains("missing context"),
        "{}",
        stderr_of(&out)
    );
}

/// Writes a scratch assembly whose manifest and template are given as text.
fn scratch_assembly(manifest: &str, template: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let asm = dir.path().join("asm");
    std::fs::create_dir(&asm).expect("mkdir");
    std::fs::write(asm.join("manifest.json"), manifest).expect("write");
    std::fs::write(asm.join("S.template.json"), template).expect("write");
    dir
}

const GOOD_MANIFEST: &str = r#"{"version":"55.0.0","artifacts":{"S":{"type":"aws:cloudformation:stack","environment":"aws://unknown-account/unknown-region","properties":{"templateFile":"S.template.json"}}}}"#;
const GOOD_TEMPLATE: &str = r#"{"Resources":{"Q":{"Type":"AWS::SQS::Queue"}}}"#;

#[test]
fn malformed_manifests_are_one_line_errors() {
    let cases = [
        ("{", "manifest.json: invalid JSON at line 1"),
        ("[]", "manifest.json: (top level): expected a JSON object"),
        (r#"{"artifacts":{}}"#, "version: missing"),
        (
            r#"{"version":"1","artifacts":[]}"#,
            "artifacts: expected an object",
        ),
        (
            r#"{"version":"1","artifacts":{"S":{"type":"aws:cloudformation:stack"}}}"#,
            "artifacts.S.properties: expected an object",
        ),
        (
            r#"{"version":"1","artifacts":{"S":{"type":"aws:cloudformation:stack","properties":{"templateFile":7}}}}"#,
            "artifacts.S.properties.templateFile: expected a string",
        ),
        (
            r#"{"version":"1","artifacts":{"S":{"type":"aws:cloudformation:stack","properties":{"templateFile":"../x.json"}}}}"#,
            "must be a relative path inside the assembly",
        ),
        (
            r#"{"version":"1","artifacts":{"S":{"type":"aws:cloudformation:stack","environment":"nope","properties":{"templateFile":"S.template.json"}}}}"#,
            "artifacts.S.environment: expected aws://ACCOUNT/REGION",
        ),
        (
            r#"{"version":"1","artifacts":{"S":{"type":"aws:cloudformation:stack","dependencies":"x","properties":{"templateFile":"S.template.json"}}}}"#,
            "artifacts.S.dependencies: expected a list of strings",
        ),
    ];
    for (manifest, needle) in cases {
        let dir = scratch_assembly(manifest, GOOD_TEMPLATE);
        let out = run_in(dir.path(), &["ls", "-a", "asm"]);
        assert_one_line_error(&out, needle);
    }
    // The good pair works, so the failures above are the manifest's.
    let dir = scratch_assembly(GOOD_MANIFEST, GOOD_TEMPLATE);
    let out = run_in(dir.path(), &["synth", "-a", "asm"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
}

#[test]
fn malformed_templates_are_one_line_errors_naming_file_and_path() {
    let cases = [
        ("{\"Resources\": ", "S.template.json"),
        (r#"{"Resources":[]}"#, "Resources"),
        (r#"{"Resources":{"Q":{"Properties":{}}}}"#, "Resources.Q"),
        (r#"{"Resources":{"Q":{"Type":5}}}"#, "Resources.Q.Type"),
        (
            r#"{"Resources":{"Q":{"Type":"AWS::SQS::Queue","Properties":[]}}}"#,
            "Resources.Q.Properties",
        ),
        (r#"{"Resources":{},"Outputs":{"O":{}}}"#, "Outputs.O"),
    ];
    for (template, needle) in cases {
        let dir = scratch_assembly(GOOD_MANIFEST, template);
        let out = run_in(dir.path(), &["synth", "-a", "asm"]);
        assert_one_line_error(&out, needle);
        assert!(
            stderr_of(&out).contains("S.template.json"),
            "{}",
            stderr_of(&out)
        );
    }
}

#[test]
fn malformed_cdk_json_and_context_values_are_one_line_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("cdk.json"), "{\"app\": \"x\",").expect("write");
    let out = run_in(dir.path(), &["ls"]);
    assert_one_line_error(&out, "cdk.json: invalid JSON");

    std::fs::write(dir.path().join("cdk.json"), r#"{"app": ["node"]}"#).expect("write");
    let out = run_in(dir.path(), &["ls"]);
    assert_one_line_error(&out, "\"app\" must be a string");

    std::fs::write(dir.path().join("cdk.json"), "{}").expect("write");
    std::fs::write(dir.path().join("cdk.context.json"), "nope").expect("write");
    let out = run_in(dir.path(), &["ls"]);
    assert_one_line_error(&out, "cdk.context.json: invalid JSON");
    std::fs::remove_file(dir.path().join("cdk.context.json")).expect("rm");

    let out = run_in(dir.path(), &["ls", "-c", "novalue"]);
    assert_one_line_error(&out, "invalid context `-c novalue`");
    let out = run_in(dir.path(), &["ls", "-c", "=v"]);
    assert_one_line_error(&out, "invalid context");

    let out = run_in(dir.path(), &["ls"]);
    assert_one_line_error(&out, "no app to synthesize");
}

/// The real CDK apps re-synthesize through `node app.js` with the fixtures' npm packages
/// (`./scripts/test` installs them when they are missing).
#[test]
fn a_real_cdk_app_synthesizes_through_node() {
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/node_modules/aws-cdk-lib");
    assert!(
        modules.is_dir(),
        "fixtures/node_modules is not installed: run ./scripts/test, or npm install in fixtures/"
    );
    let out_dir = tempfile::tempdir().expect("tempdir");
    let out = cdkd()
        .current_dir(fixture("cross-stack"))
        .args(["ls", "-o"])
        .arg(out_dir.path())
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        stdout_of(&out).lines().collect::<Vec<_>>(),
        ["ProducerStack", "ConsumerStack"]
    );
    assert!(out_dir.path().join("manifest.json").is_file());
}

#[test]
fn garbage_assemblies_never_panic() {
    let manifests = [
        "", "null", "0", "\"x\"", "{\"version\":1}", "{\"version\":\"1\",\"artifacts\":{\"a\":1}}",
        "{\"version\":\"1\",\"artifacts\":{\"a\":{\"type\":3}}}",
        "{\"version\":\"1\",\"artifacts\":{\"a\":{\"type\":\"cdk:cloud-assembly\",\"properties\":{}}}}",
        "{\"version\":\"1\",\"artifacts\":{\"a\":{\"type\":\"cdk:cloud-assembly\",\"properties\":{\"directoryName\":\"nope\"}}}}",
        "{\"version\":\"1\",\"missing\":[{}]}",
        "{\"version\":\"1\",\"artifacts\":{\"S\":{\"type\":\"aws:cloudformation:stack\",\"metadata\":{\"/S\":[{\"type\":\"aws:cdk:error\"}]},\"properties\":{\"templateFile\":\"S.template.json\"}}}}",
    ];
    for manifest in manifests {
        let dir = scratch_assembly(manifest, "{}");
        for cmd in [["ls", "-a", "asm"], ["synth", "-a", "asm"]] {
            let out = run_in(dir.path(), &cmd);
            assert!(
                !stderr_of(&out).contains("panicked"),
                "{manifest}: {}",
                stderr_of(&out)
            );
            assert!(matches!(out.status.code(), Some(0 | 1)), "{manifest}");
        }
    }
}

/// A port nothing listens on: bound, then released.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// A deploy against a closed port is one line naming the service, the operation and the
/// endpoint, with the remedy; never the SDK's debug dump.
#[test]
fn a_deploy_against_a_closed_port_names_the_endpoint() {
    let dir = fixture("basic");
    let endpoint = format!("http://127.0.0.1:{}", closed_port());
    // Every service closed: the first call (STS, the account) fails.
    let out = cdkd()
        .current_dir(&dir)
        .env("AWS_ENDPOINT_URL", &endpoint)
        .env("AWS_ENDPOINT_URL_STS", &endpoint)
        .args(["deploy", "-a", "cdk.out", "--state-bucket", "b"])
        .output()
        .expect("runs");
    assert_one_line_error(&out, &format!("cannot connect to {endpoint}"));
    let err = stderr_of(&out);
    assert!(err.contains("sts GetCallerIdentity"), "{err}");
    assert!(err.contains("correct AWS_ENDPOINT_URL"), "{err}");
    for dump in ["DispatchFailure", "ConnectorError", "hyper_util", "Os {"] {
        assert!(!err.contains(dump), "debug dump in: {err}");
    }

    // STS answers, S3 (the state bucket) is closed: the S3 call names its endpoint.
    let out = cdkd()
        .current_dir(&dir)
        .env("AWS_ENDPOINT_URL_S3", &endpoint)
        .args(["deploy", "-a", "cdk.out", "--state-bucket", "b"])
        .output()
        .expect("runs");
    // The stack's line, then the run's summary line.
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    let line = err
        .lines()
        .find(|l| l.contains("cannot connect to"))
        .unwrap_or_else(|| panic!("no connection error in: {err}"));
    assert!(
        line.contains("s3 PutObject") && line.contains(&endpoint),
        "{line}"
    );
    assert!(!err.contains("DispatchFailure"), "{err}");
}

/// No credentials anywhere: one line saying so and how to provide them, naming the profile.
#[test]
fn missing_credentials_are_one_line_with_the_remedy() {
    let home = tempfile::tempdir().expect("tempdir");
    let out = cdkd()
        .current_dir(fixture("basic"))
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env("HOME", home.path())
        .env("AWS_CONFIG_FILE", home.path().join("config"))
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            home.path().join("credentials"),
        )
        .args(["deploy", "-a", "cdk.out", "--profile", "nobody"])
        .output()
        .expect("runs");
    assert_one_line_error(&out, "no AWS credentials found for profile `nobody`");
    let err = stderr_of(&out);
    assert!(err.contains("aws sso login --profile nobody"), "{err}");
    assert!(!err.contains("CredentialsNotLoaded"), "{err}");
}

/// `cdk deploy`-style invocations work: each CDK flag cdkd has nothing to do for is one
/// warning line, `-O` writes the outputs file, `-R` parses as --no-rollback.
#[test]
fn cdk_style_deploy_flags_work_with_a_warning_each() {
    let app = support::app::App::new("cdk-flags");
    let template = serde_json::json!({
        "Resources": {"Q": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"QueueUrl": {"Value": {"Ref": "Q"}}}
    });
    app.write_stacks(&[("CdkFlags", &template, &[])]);
    let outputs = app.dir.path().join("out.json");
    let (code, _, stderr) = app.deploy(&[
        "--hotswap",
        "--hotswap-fallback",
        "--method",
        "direct",
        "--progress",
        "events",
        "--ci",
        "--no-notices",
        "--asset-parallelism",
        "--asset-prebuild",
        "--no-color",
        "-R",
        "-O",
        outputs.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:") && l.contains("is a CDK CLI flag"))
        .collect();
    assert_eq!(warnings.len(), 8, "{stderr}");
    for flag in [
        "--hotswap ",
        "--method direct",
        "--progress events",
        "--ci ",
        "--no-notices",
    ] {
        assert!(
            warnings.iter().any(|w| w.contains(flag)),
            "{flag}: {stderr}"
        );
    }
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&outputs).expect("-O file")).expect("JSON");
    assert!(written["CdkFlags"]["QueueUrl"].is_string(), "{written}");
}

/// Upstream cdkd's `list -d`: each stack's id and dependencies, YAML or JSON.
#[test]
fn list_show_dependencies_prints_ids_and_dependencies_only() {
    let out = run_in(&fixture("cross-stack"), &["ls", "-a", "cdk.out", "-d"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.contains("id: ConsumerStack"), "{text}");
    assert!(text.contains("- ProducerStack"), "{text}");
    assert!(
        !text.contains("name:") && !text.contains("environment"),
        "{text}"
    );
    let out = run_in(
        &fixture("cross-stack"),
        &["ls", "-a", "cdk.out", "-d", "--json"],
    );
    let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        list[1],
        serde_json::json!({"id": "ConsumerStack", "dependencies": ["ProducerStack"]})
    );
}
