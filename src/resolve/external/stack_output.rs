//! `Fn::GetStackOutput`: the producer's state record in any region, else
//! CloudFormation `DescribeStacks`; with a `RoleArn`, the producer account's
//! `cdkd-state-{account}` bucket read under an assumed role.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use serde_json::{Map, Value};
use tokio::sync::OnceCell;

use super::{holds_mask, holds_reference, DynamicCache, ExternalReader};
use crate::aws::{error_code, AwsError};
use crate::resolve::dynamic::SecretsMap;
use crate::resolve::error::LookupError;
use crate::resolve::lookup::StackOutputRequest;
use crate::state::backend::{LoadedState, S3Backend};
use crate::state::bucket::{default_bucket_name, location_to_region};
use crate::state::{StateError, StateOutputReadEntry};

/// Where a stack output was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputSource {
    /// The producer's cdkd state record (same account): recorded in
    /// `state.outputReads`.
    State,
    /// CloudFormation `DescribeStacks`: not recorded, not re-resolved.
    CloudFormation,
    /// Another account's cdkd state, read under a role: not recorded.
    CrossAccount { account: String },
}

/// A resolved `Fn::GetStackOutput`.
#[derive(Debug, Clone, PartialEq)]
pub struct StackOutputValue {
    pub value: Value,
    pub source: OutputSource,
    /// The producer's region (the request's, else the consumer's).
    pub producer_region: String,
    /// Plaintexts the same-account re-resolution substituted.
    pub secrets: SecretsMap,
}

impl StackOutputValue {
    /// The `state.outputReads` entry (same-account cdkd reads only).
    pub fn output_read_entry(&self, request: &StackOutputRequest) -> Option<StateOutputReadEntry> {
        (self.source == OutputSource::State).then(|| StateOutputReadEntry {
            source_stack: request.stack_name.clone(),
            source_region: self.producer_region.clone(),
            output_name: request.output_name.clone(),
            extra: Map::new(),
        })
    }
}

/// The parts of an IAM role ARN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleArnParts {
    pub partition: String,
    pub account: String,
    /// Everything after `role/` (path included).
    pub role_name: String,
}

/// Parses `arn:PARTITION:iam::ACCOUNT:role/[PATH/]NAME` for any partition
/// spelled `aws[a-z0-9-]*`; a user ARN, a region in the ARN or an account
/// that is not 12 digits is refused.
pub fn parse_role_arn(arn: &str) -> Result<RoleArnParts, String> {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r"^arn:(aws[a-z0-9-]*):iam::([0-9]{12}):role/((?:[\w+=,.@-]+/)*[\w+=,.@-]+)$",
        )
        .expect("a valid regex")
    });
    let caps = re.captures(arn.trim()).ok_or_else(|| {
        format!(
            "RoleArn '{arn}' is not an IAM role ARN (expected arn:PARTITION:iam::ACCOUNT_ID:role/NAME with a 12-digit account id)"
        )
    })?;
    Ok(RoleArnParts {
        partition: caps[1].to_string(),
        account: caps[2].to_string(),
        role_name: caps[3].to_string(),
    })
}

/// Credentials from one AssumeRole.
#[derive(Clone)]
pub(crate) struct Assumed {
    credentials: Credentials,
    expires: Option<SystemTime>,
}

/// Re-assume when the cached credentials expire within this.
const REFRESH_MARGIN: Duration = Duration::from_secs(300);
const SESSION_NAME: &str = "cdkd-cross-account-state-read";

impl ExternalReader {
    /// Resolves one `Fn::GetStackOutput` of a stack in `consumer_region`.
    /// `role_arn_literal` says whether the template spelled `RoleArn` as a
    /// literal string (a computed one is refused). Returns warnings beside.
    pub async fn stack_output(
        &self,
        consumer_region: &str,
        request: &StackOutputRequest,
        role_arn_literal: bool,
        cache: &DynamicCache,
    ) -> (Result<StackOutputValue, LookupError>, Vec<String>) {
        let region = match request.region.as_deref().map(str::trim) {
            Some(r) if !r.is_empty() => r.to_ascii_lowercase(),
            _ => consumer_region.to_string(),
        };
        let mut warnings = Vec::new();
        let r = match &request.role_arn {
            Some(arn) if !role_arn_literal => Err(LookupError::Failed(format!(
                "RoleArn must be a literal string in the template (it was computed as '{arn}'); inline the role ARN"
            ))),
            Some(arn) => self.cross_account(request, &region, arn).await,
            None => self.same_account(request, &region, cache, &mut warnings).await,
        };
        (r, warnings)
    }

    async fn same_account(
        &self,
        req: &StackOutputRequest,
        region: &str,
        cache: &DynamicCache,
        warnings: &mut Vec<String>,
    ) -> Result<StackOutputValue, LookupError> {
        let stack = &req.stack_name;
        let loaded = self
            .state
            .load_for_reading(stack, region)
            .await
            .map_err(|e| {
                LookupError::Failed(format!("cannot read stack '{stack}' ({region}): {e}"))
            })?;
        if let Some(loaded) = loaded {
            let value = output_of(&loaded, req, region)?;
            let what = format!("output '{}' of stack '{stack}' ({region})", req.output_name);
            let (value, secrets) = self
                .reresolve(cache, &value, stack, region, &req.output_name, &what)
                .await?;
            return Ok(StackOutputValue {
                value,
                source: OutputSource::State,
                producer_region: region.to_string(),
                secrets,
            });
        }
        let missing = format!("stack '{stack}' has no cdkd state record in {region}");
        if !self.cfn_fallback {
            return Err(LookupError::Failed(format!(
                "{missing} (the CloudFormation fallback is off)"
            )));
        }
        match self.describe_stack_output(req, region).await {
            Ok(Some(v)) => Ok(StackOutputValue {
                value: Value::String(v),
                source: OutputSource::CloudFormation,
                producer_region: region.to_string(),
                secrets: SecretsMap::default(),
            }),
            Ok(None) => Err(LookupError::Failed(format!(
                "{missing}, and CloudFormation has no output '{}' for it",
                req.output_name
            ))),
            Err(e) => {
                let w = format!(
                    "the CloudFormation fallback for Fn::GetStackOutput failed ({e}); reporting the stack as not found"
                );
                tracing::warn!("{w}");
                warnings.push(w);
                Err(LookupError::Failed(missing))
            }
        }
    }

    /// The output from DescribeStacks; `Ok(None)` when the stack or output
    /// does not exist.
    async fn describe_stack_output(
        &self,
        req: &StackOutputRequest,
        region: &str,
    ) -> Result<Option<String>, AwsError> {
        let out = self
            .clients
            .cloudformation(Some(region))
            .describe_stacks()
            .stack_name(&req.stack_name)
            .send()
            .await;
        let out = match out {
            Ok(out) => out,
            Err(e)
                if error_code(&e) == Some("ValidationError")
                    && e.message().is_some_and(|m| m.contains("does not exist")) =>
            {
                return Ok(None)
            }
            Err(e) => {
                return Err(AwsError::call(
                    "cloudformation",
                    "DescribeStacks",
                    req.stack_name.clone(),
                    &e,
                ))
            }
        };
        Ok(out
            .stacks()
            .iter()
            .flat_map(|s| s.outputs())
            .find(|o| o.output_key() == Some(req.output_name.as_str()))
            .and_then(|o| o.output_value().map(str::to_string)))
    }

    async fn cross_account(
        &self,
        req: &StackOutputRequest,
        region: &str,
        role_arn: &str,
    ) -> Result<StackOutputValue, LookupError> {
        let parts = parse_role_arn(role_arn).map_err(LookupError::Failed)?;
        let assumed = self.assume(role_arn).await?;
        let bucket = default_bucket_name(&parts.account);
        let provider = SharedCredentialsProvider::new(assumed.credentials.clone());
        let bucket_region = self.producer_bucket_region(&bucket, &provider).await?;
        let backend = S3Backend::new(
            self.s3_with(&provider, &bucket_region),
            bucket.clone(),
            self.state.keys().clone(),
        );
        let stack = &req.stack_name;
        let loaded = backend
            .load_for_reading(stack, region)
            .await
            .map_err(|e| LookupError::Failed(format!("cannot read stack '{stack}' ({region}) from {bucket} as {role_arn}: {e}")))?
            .ok_or_else(|| {
                LookupError::Failed(format!(
                    "stack '{stack}' has no cdkd state record in {region} in the producer's bucket {bucket} (read as {role_arn})"
                ))
            })?;
        let value = output_of(&loaded, req, region)?;
        if holds_reference(&value) {
            return Err(LookupError::Failed(format!(
                "output '{}' of stack '{stack}' is a redacted secret reference in account {}: \
                 resolving it with this account's credentials could answer from a same-named \
                 secret in the wrong account, so it is refused (RoleArn {role_arn}). Export a \
                 non-secret value such as the secret's ARN instead",
                req.output_name, parts.account
            )));
        }
        if holds_mask(&value) {
            return Err(LookupError::Failed(format!(
                "output '{}' of stack '{stack}' (read as {role_arn}) is stored as the redaction mask '***' (a NoEcho value) and cannot be read across accounts",
                req.output_name
            )));
        }
        Ok(StackOutputValue {
            value,
            source: OutputSource::CrossAccount {
                account: parts.account,
            },
            producer_region: region.to_string(),
            secrets: SecretsMap::default(),
        })
    }

    /// AssumeRole, cached per role and source identity; concurrent first
    /// callers share one call.
    async fn assume(&self, role_arn: &str) -> Result<Assumed, LookupError> {
        let source = self.source_identity().await;
        let key = (role_arn.to_string(), source);
        let cell = {
            let mut roles = self.roles.lock().unwrap_or_else(|p| p.into_inner());
            let cell = roles.entry(key.clone()).or_default();
            let stale = cell.get().is_some_and(|a: &Assumed| {
                a.expires
                    .is_some_and(|t| t <= SystemTime::now() + REFRESH_MARGIN)
            });
            if stale {
                *cell = Arc::new(OnceCell::new());
            }
            cell.clone()
        };
        cell.get_or_try_init(|| async {
            self.assume_role_calls.fetch_add(1, Ordering::Relaxed);
            let out = self
                .clients
                .sts()
                .assume_role()
                .role_arn(role_arn)
                .role_session_name(SESSION_NAME)
                .send()
                .await
                .map_err(|e| {
                    LookupError::Failed(
                        AwsError::call("sts", "AssumeRole", role_arn.to_string(), &e).to_string(),
                    )
                })?;
            let c = out.credentials.ok_or_else(|| {
                LookupError::Failed(format!("STS AssumeRole {role_arn} returned no credentials"))
            })?;
            let expires = SystemTime::try_from(*c.expiration()).ok();
            Ok(Assumed {
                credentials: Credentials::new(
                    c.access_key_id(),
                    c.secret_access_key(),
                    Some(c.session_token().to_string()),
                    expires,
                    "cdkd-cross-account-state-read",
                ),
                expires,
            })
        })
        .await
        .cloned()
    }

    /// Who the consumer's calls go out as: its access key id (empty when no
    /// credentials resolve; AssumeRole then fails on its own).
    async fn source_identity(&self) -> String {
        let config = self.clients.config(None);
        match config.credentials_provider() {
            Some(p) => match p.provide_credentials().await {
                Ok(c) => c.access_key_id().to_string(),
                Err(_) => String::new(),
            },
            None => String::new(),
        }
    }

    fn s3_with(&self, provider: &SharedCredentialsProvider, region: &str) -> aws_sdk_s3::Client {
        let config = self
            .clients
            .config(Some(region))
            .to_builder()
            .credentials_provider(provider.clone())
            .build();
        let s3 = aws_sdk_s3::config::Builder::from(&config)
            .force_path_style(self.clients.s3_endpoint_overridden())
            .build();
        aws_sdk_s3::Client::from_conf(s3)
    }

    /// The producer bucket's region, probed with the assumed credentials
    /// (cached); a failed probe answers the caller's region.
    async fn producer_bucket_region(
        &self,
        bucket: &str,
        provider: &SharedCredentialsProvider,
    ) -> Result<String, LookupError> {
        let cached = self
            .producer_bucket_regions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(bucket)
            .cloned();
        if let Some(r) = cached {
            return Ok(r);
        }
        let caller = self
            .clients
            .default_region()
            .unwrap_or_else(|| "us-east-1".into());
        let out = self
            .s3_with(provider, &caller)
            .get_bucket_location()
            .bucket(bucket)
            .send()
            .await;
        match out {
            Ok(out) => {
                let region = location_to_region(out.location_constraint().map(|c| c.as_str()));
                self.producer_bucket_regions
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(bucket.to_string(), region.clone());
                Ok(region)
            }
            Err(e) if error_code(&e) == Some("NoSuchBucket") => Err(LookupError::Failed(format!(
                "the producer's state bucket {bucket} does not exist"
            ))),
            Err(e) => {
                tracing::debug!(
                    "GetBucketLocation {bucket} failed ({}); assuming {caller}",
                    AwsError::call("s3", "GetBucketLocation", bucket, &e)
                );
                Ok(caller)
            }
        }
    }
}

/// The requested output out of a loaded record; a record whose `outputs` is
/// not a map is refused by name.
fn output_of(
    loaded: &LoadedState,
    req: &StackOutputRequest,
    region: &str,
) -> Result<Value, LookupError> {
    let stack = &req.stack_name;
    if let Some(e) = loaded
        .parsed
        .defects
        .iter()
        .find(|d| matches!(d, StateError::OutputsMalformed { .. }))
    {
        return Err(LookupError::Failed(format!(
            "the state record of stack '{stack}' ({region}) is malformed, so output '{}' is not read from it: {e}",
            req.output_name
        )));
    }
    let outputs = loaded.parsed.state.outputs.as_ref();
    match outputs.and_then(|o| o.get(&req.output_name)) {
        Some(v) => Ok(v.clone()),
        None => {
            let names: Vec<&str> = outputs
                .map(|o| o.keys().map(String::as_str).collect())
                .unwrap_or_default();
            Err(LookupError::Failed(format!(
                "stack '{stack}' ({region}) has no output '{}' (its outputs: {})",
                req.output_name,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )))
        }
    }
}
