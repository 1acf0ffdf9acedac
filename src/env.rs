//! Every environment variable cdkd reads or sets, as documented constants.
//!
//! Keeping them in one place makes the contract with the CDK CLI (what an app sees) and with the
//! user's shell (what cdkd honours) reviewable at a glance.

/// The app command or assembly directory (below `--app`, above cdk.json).
pub const CDKD_APP: &str = "CDKD_APP";
/// The state bucket (below `--state-bucket`, above cdk.json).
pub const CDKD_STATE_BUCKET: &str = "CDKD_STATE_BUCKET";
/// The state key prefix (below `--state-prefix`, above cdk.json).
pub const CDKD_STATE_PREFIX: &str = "CDKD_STATE_PREFIX";
/// `true` asks `cdkd deploy` for upstream's pre-0.94 naming (below
/// `--prefix-user-supplied-names`, above cdk.json `context.cdkd.prefixUserSuppliedNames`).
pub const CDKD_PREFIX_USER_SUPPLIED_NAMES: &str = "CDKD_PREFIX_USER_SUPPLIED_NAMES";
/// A 12-digit account id used when STS cannot answer (AWS::AccountId fallback).
pub const AWS_ACCOUNT_ID: &str = "AWS_ACCOUNT_ID";
/// How long (whole seconds) a deploy waits for a custom resource's handler to answer
/// (default 3600, CloudFormation's hour).
pub const CDKD_CUSTOM_RESOURCE_TIMEOUT: &str = "CDKD_CUSTOM_RESOURCE_TIMEOUT";
/// `cdkd local invoke` / `local run-invocation`: the directory put on a Node.js function's
/// NODE_PATH (the AWS SDK v3 the Lambda Node.js runtimes preinstall).
pub const CDKD_LAMBDA_NODE_PATH: &str = "CDKD_LAMBDA_NODE_PATH";
/// The local Lambda runtime's interpreters, when not `node` / `python3` on PATH.
pub const CDKD_LAMBDA_NODE: &str = "CDKD_LAMBDA_NODE";
pub const CDKD_LAMBDA_PYTHON: &str = "CDKD_LAMBDA_PYTHON";

/// Set for the app: where it writes the cloud assembly.
pub const CDK_OUTDIR: &str = "CDK_OUTDIR";
/// Set for the app: the merged context as a JSON object.
pub const CDK_CONTEXT_JSON: &str = "CDK_CONTEXT_JSON";
/// Set for the app: the account of the caller's credentials, when known.
pub const CDK_DEFAULT_ACCOUNT: &str = "CDK_DEFAULT_ACCOUNT";
/// Set for the app: the region from the region chain, when known.
pub const CDK_DEFAULT_REGION: &str = "CDK_DEFAULT_REGION";

/// Region chain, in the order the AWS CLI reads them.
pub const AWS_REGION: &str = "AWS_REGION";
pub const AWS_DEFAULT_REGION: &str = "AWS_DEFAULT_REGION";
/// Endpoint override (read by aws-config itself); its presence switches S3 to path-style.
pub const AWS_ENDPOINT_URL: &str = "AWS_ENDPOINT_URL";
/// Service-specific endpoint override for S3 (also read by aws-config).
pub const AWS_ENDPOINT_URL_S3: &str = "AWS_ENDPOINT_URL_S3";
/// The named profile (read by aws-config itself; cdkd names it in credential errors).
pub const AWS_PROFILE: &str = "AWS_PROFILE";

/// Disables colour in human output (https://no-color.org).
pub const NO_COLOR: &str = "NO_COLOR";

/// When set, every AWS call and resource operation is appended to this file as JSON lines
/// (used by scripts/bench to count the calls on the critical path).
pub const CDKD_TRACE_FILE: &str = "CDKD_TRACE_FILE";
/// `plain` forces one line per event even on a terminal (no redrawn progress bar).
pub const CDKD_PROGRESS: &str = "CDKD_PROGRESS";
/// `dumb` turns the progress bar off.
pub const TERM: &str = "TERM";
/// The terminal width the progress bar fits into.
pub const COLUMNS: &str = "COLUMNS";
