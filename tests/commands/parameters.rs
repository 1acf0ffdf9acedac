//! `--parameters` through the `cdkd` binary: `*:KEY=VALUE` reaches every stack, a parameter
//! without a default and without a value is named in the error, and values are not
//! remembered between deploys (state has no place for them).

use crate::support;

use serde_json::json;
use support::app::App;

async fn ssm_value(name: &str) -> String {
    let ssm = aws_sdk_ssm::Client::new(&support::sdk_config().await);
    let out = ssm
        .get_parameter()
        .name(name)
        .send()
        .await
        .expect("parameter exists");
    out.parameter
        .and_then(|p| p.value)
        .expect("parameter has a value")
}

#[tokio::test]
async fn star_parameters_reach_every_stack_and_are_not_remembered() {
    let app = App::new("params-star");
    let prefix = support::unique_name("/star");
    let stack = |name: &str| {
        json!({
            "Parameters": {"Env": {"Type": "String"}},
            "Resources": {"P": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": format!("{prefix}/{name}"), "Type": "String", "Value": {"Ref": "Env"}
            }}}
        })
    };
    let (a, b) = (stack("a"), stack("b"));
    app.write_stacks(&[("StackA", &a, &[]), ("StackB", &b, &[])]);

    // No value and no default: the error names the stack and the parameter.
    let (code, _, stderr) = app.deploy(&["--all"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("Parameters.Env") && stderr.contains("--parameters StackA:Env=VALUE"),
        "{stderr}"
    );

    let (code, _, stderr) = app.deploy(&["--all", "--parameters", "*:Env=prod"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(ssm_value(&format!("{prefix}/a")).await, "prod");
    assert_eq!(ssm_value(&format!("{prefix}/b")).await, "prod");

    // A stack-qualified value wins over `*:` for its stack.
    let (code, _, stderr) = app.deploy(&[
        "--all",
        "--parameters",
        "*:Env=staging",
        "--parameters",
        "StackB:Env=dev",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(ssm_value(&format!("{prefix}/a")).await, "staging");
    assert_eq!(ssm_value(&format!("{prefix}/b")).await, "dev");

    // Not remembered: the next deploy without --parameters is missing the value again.
    let (code, _, stderr) = app.deploy(&["--all"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("Parameters.Env"), "{stderr}");
    assert_eq!(ssm_value(&format!("{prefix}/a")).await, "staging");
}
