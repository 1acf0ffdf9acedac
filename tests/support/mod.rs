//! Shared helpers for integration tests that talk to the local AWS emulator.
//!
//! Each test binary (`tests/<binary>/main.rs`) declares it once with
//! `#[path = "../support/mod.rs"] mod support;`; its modules `use crate::support;`. The
//! emulator is started by `./scripts/test` (or by hand: `eval "$(./scripts/emulator start)"`),
//! which exports `AWS_ENDPOINT_URL` and friends; every helper here reads them from the
//! environment, so the clients go through the SDK's ordinary configuration chain, like cdkd
//! itself.
#![allow(dead_code)] // each test binary uses a different subset

pub mod app;
pub mod handler;
pub mod http;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_config::BehaviorVersion;

/// Variables `scripts/emulator start` exports (besides the `AWS_ENDPOINT_URL_*` ones).
const EMULATOR_VARS: &[&str] = &[
    "AWS_ENDPOINT_URL",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_EC2_METADATA_DISABLED",
    "CDKD_TEST_EMULATOR",
];

/// The emulator's environment, as exported by `scripts/emulator start`: the variables
/// above that are set, plus any service-specific `AWS_ENDPOINT_URL_<SERVICE>`.
///
/// Panics when `AWS_ENDPOINT_URL` is not set: without it the tests would talk to real AWS.
pub fn emulator_env() -> Vec<(String, String)> {
    if std::env::var_os("AWS_ENDPOINT_URL").is_none_or(|v| v.is_empty()) {
        panic!(
            "integration tests need the local emulator: run ./scripts/test, \
             or eval \"$(./scripts/emulator start)\" first"
        );
    }
    let mut vars: Vec<(String, String)> = EMULATOR_VARS
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect();
    let mut per_service: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("AWS_ENDPOINT_URL_"))
        .collect();
    per_service.sort();
    vars.extend(per_service);
    vars
}

/// SDK configuration from the environment (`AWS_ENDPOINT_URL`, region, static keys).
/// The endpoint is deliberately not set in code: cdkd relies on the SDK reading it.
pub async fn sdk_config() -> aws_config::SdkConfig {
    emulator_env(); // fail loudly before the SDK wanders off to real AWS
    aws_config::defaults(BehaviorVersion::latest()).load().await
}

/// An S3 client for the emulator. Path-style addressing: `bucket.127.0.0.1` does not resolve.
pub async fn s3_client() -> aws_sdk_s3::Client {
    let config = aws_sdk_s3::config::Builder::from(&sdk_config().await)
        .force_path_style(true)
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

/// An STS client for the emulator.
pub async fn sts_client() -> aws_sdk_sts::Client {
    aws_sdk_sts::Client::new(&sdk_config().await)
}

/// A name that no other test (in this process, a parallel one, or an earlier run against a
/// long-lived emulator) uses: `prefix-<pid>-<counter>-<nanos>`, numbers in base 36.
/// Lowercase `[a-z0-9-]`, at most 63 characters: valid as an S3 bucket name.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock before 1970")
        .as_nanos();
    let suffix = format!(
        "-{}-{}-{}",
        base36(u128::from(std::process::id())),
        base36(u128::from(n)),
        base36(nanos)
    );

    let mut head: String = prefix
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    head.truncate(63 - suffix.len());
    let head = head.trim_matches('-');
    let head = if head.is_empty() { "t" } else { head };
    format!("{head}{suffix}")
}

fn base36(mut n: u128) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ascii")
}

/// Whether `key` belongs to a stack's deployment-event store (`.../deployments/`), the one
/// layer of a stack's keys that `cdkd destroy` keeps by design (spec: state-schema, the
/// event store; `destroy --purge-events` and `cdkd events prune` remove it).
pub fn is_event_store_key(key: &str) -> bool {
    key.contains("/deployments/")
}

/// The `cdkd` binary under test, with the emulator's environment applied and
/// `CDKD_STATE_BUCKET` removed (each test names its own state bucket).
pub fn cdkd() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("cdkd").expect("the cdkd binary is built");
    cmd.envs(emulator_env()).env_remove("CDKD_STATE_BUCKET");
    cmd
}

/// Every string leaf of `v` with its JSON path under `path` (`a.b[0].c`), for scans of
/// records and outputs.
pub fn string_leaves(v: &serde_json::Value, path: &str, out: &mut Vec<(String, String)>) {
    use serde_json::Value;
    match v {
        Value::String(s) => out.push((path.to_owned(), s.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                string_leaves(item, &format!("{path}[{i}]"), out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                string_leaves(item, &format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

/// The value of load balancer attribute `key`, as ELBv2 reports it (empty when unset).
pub async fn lb_attribute(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    arn: &str,
    key: &str,
) -> String {
    elb.describe_load_balancer_attributes()
        .load_balancer_arn(arn)
        .send()
        .await
        .expect("DescribeLoadBalancerAttributes")
        .attributes()
        .iter()
        .find(|a| a.key() == Some(key))
        .and_then(|a| a.value().map(str::to_owned))
        .unwrap_or_default()
}
