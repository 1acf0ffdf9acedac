//! One place that builds AWS SDK clients, and one place that classifies AWS errors.
//!
//! Clients come from `aws_config::defaults(..)`, so the standard chain (environment, profiles,
//! SSO, instance metadata) and the endpoint variables (`AWS_ENDPOINT_URL`,
//! `AWS_ENDPOINT_URL_<SERVICE>`) work exactly as in the AWS CLI. No endpoint is ever set in code:
//! that would override the user's. S3 switches to path-style addressing whenever an endpoint is
//! overridden, because emulators and most S3-compatible stores cannot serve virtual-hosted names.

mod diagnose;
pub mod endpoint;
mod errors;
pub mod gate;
pub mod trace;

pub use diagnose::failure as describe_failure;
pub use errors::{classify, error_code, AwsError, ErrorKind, HttpStatus};

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Mutex;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use tokio::sync::OnceCell;

use crate::env;

/// What the user asked for when building clients.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    pub region: Option<String>,
    pub profile: Option<String>,
    pub role_arn: Option<String>,
}

/// Builds and caches clients: one base configuration, re-targeted per region.
pub struct Clients {
    base: SdkConfig,
    per_region: Mutex<HashMap<String, SdkConfig>>,
    /// Service clients already built, by client type and region ("" = the default region).
    built: Mutex<HashMap<(TypeId, String), Box<dyn Any + Send + Sync>>>,
    account: OnceCell<String>,
}

impl Clients {
    /// Loads the default chain once. With `role_arn`, every client assumes that role.
    pub async fn load(options: &ClientOptions) -> Self {
        diagnose::set_profile(options.profile.as_deref());
        let mut loader = aws_config::defaults(BehaviorVersion::latest());
        if let Some(profile) = &options.profile {
            loader = loader.profile_name(profile);
        }
        if let Some(region) = &options.region {
            loader = loader.region(Region::new(region.clone()));
        }
        // One HTTP client shared by every service client (and traced under CDKD_TRACE_FILE).
        // Connection failures name their endpoint (`endpoint`).
        loader = loader.http_client(endpoint::naming(trace::http_client()));
        let mut base = loader.load().await;
        if let Some(role_arn) = &options.role_arn {
            let mut assume = aws_config::sts::AssumeRoleProvider::builder(role_arn)
                .session_name("cdkd")
                .configure(&base);
            if let Some(region) = base.region() {
                assume = assume.region(region.clone());
            }
            let provider = assume.build().await;
            base = base
                .into_builder()
                .credentials_provider(
                    aws_credential_types::provider::SharedCredentialsProvider::new(provider),
                )
                .build();
        }
        Clients {
            base,
            per_region: Mutex::new(HashMap::new()),
            built: Mutex::new(HashMap::new()),
            account: OnceCell::new(),
        }
    }

    /// The region from `--region` or the SDK's chain (AWS_REGION, AWS_DEFAULT_REGION, profile).
    pub fn default_region(&self) -> Option<String> {
        self.base.region().map(|r| r.to_string())
    }

    /// The base configuration targeted at `region` (or the default region when `None`).
    pub fn config(&self, region: Option<&str>) -> SdkConfig {
        let Some(region) = region else {
            return self.base.clone();
        };
        let mut cache = match self.per_region.lock() {
            Ok(cache) => cache,
            Err(poisoned) => poisoned.into_inner(),
        };
        cache
            .entry(region.to_owned())
            .or_insert_with(|| {
                self.base
                    .to_builder()
                    .region(Region::new(region.to_owned()))
                    .build()
            })
            .clone()
    }

    /// The client of one service for `region`, built by `build` the first time and shared
    /// after: a client is a handle (an `Arc` inside), and building one (its runtime plugins,
    /// interceptors, endpoint resolver) costs more CPU than a call made with it, which the
    /// providers would otherwise pay once per resource operation.
    pub fn cached<C: Clone + Send + Sync + 'static>(
        &self,
        region: Option<&str>,
        build: impl FnOnce(&SdkConfig) -> C,
    ) -> C {
        let key = (TypeId::of::<C>(), region.unwrap_or_default().to_owned());
        if let Some(client) = self
            .built_lock()
            .get(&key)
            .and_then(|c| c.downcast_ref::<C>())
        {
            return client.clone();
        }
        let client = build(&self.config(region));
        self.built_lock()
            .entry(key)
            .or_insert_with(|| Box::new(client.clone()));
        client
    }

    fn built_lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(TypeId, String), Box<dyn Any + Send + Sync>>> {
        self.built.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True when S3 requests go to an overridden endpoint (emulator, S3-compatible store).
    pub fn s3_endpoint_overridden(&self) -> bool {
        self.base.endpoint_url().is_some()
            || std::env::var_os(env::AWS_ENDPOINT_URL_S3).is_some_and(|v| !v.is_empty())
            || std::env::var_os(env::AWS_ENDPOINT_URL).is_some_and(|v| !v.is_empty())
    }

    pub fn s3(&self, region: Option<&str>) -> aws_sdk_s3::Client {
        let path_style = self.s3_endpoint_overridden();
        self.cached(region, |config| {
            let s3_config = aws_sdk_s3::config::Builder::from(config)
                .force_path_style(path_style)
                .build();
            aws_sdk_s3::Client::from_conf(s3_config)
        })
    }

    pub fn sts(&self) -> aws_sdk_sts::Client {
        self.cached(None, aws_sdk_sts::Client::new)
    }

    pub fn cloudformation(&self, region: Option<&str>) -> aws_sdk_cloudformation::Client {
        self.cached(region, aws_sdk_cloudformation::Client::new)
    }

    pub fn ssm(&self, region: Option<&str>) -> aws_sdk_ssm::Client {
        self.cached(region, aws_sdk_ssm::Client::new)
    }

    pub fn secretsmanager(&self, region: Option<&str>) -> aws_sdk_secretsmanager::Client {
        self.cached(region, aws_sdk_secretsmanager::Client::new)
    }

    /// EC2, for `Fn::GetAZs` (DescribeAvailabilityZones) and EBS volumes' final snapshots.
    pub fn ec2(&self, region: Option<&str>) -> aws_sdk_ec2::Client {
        self.cached(region, aws_sdk_ec2::Client::new)
    }

    /// ECR, for container assets (the image-exists check, the login token) and bootstrap.
    pub fn ecr(&self, region: Option<&str>) -> aws_sdk_ecr::Client {
        self.cached(region, aws_sdk_ecr::Client::new)
    }

    /// RDS (also Neptune and DocumentDB clusters, which share its API): final snapshots.
    pub fn rds(&self, region: Option<&str>) -> aws_sdk_rds::Client {
        self.cached(region, aws_sdk_rds::Client::new)
    }

    /// ElastiCache: final snapshots of cache clusters and replication groups.
    pub fn elasticache(&self, region: Option<&str>) -> aws_sdk_elasticache::Client {
        self.cached(region, aws_sdk_elasticache::Client::new)
    }

    /// Redshift: final snapshots of clusters.
    pub fn redshift(&self, region: Option<&str>) -> aws_sdk_redshift::Client {
        self.cached(region, aws_sdk_redshift::Client::new)
    }

    pub fn cloudcontrol(&self, region: Option<&str>) -> aws_sdk_cloudcontrol::Client {
        self.cached(region, aws_sdk_cloudcontrol::Client::new)
    }

    /// The caller's account id from STS GetCallerIdentity, asked once per process; when STS
    /// cannot answer, a 12-digit `AWS_ACCOUNT_ID`; otherwise the STS error (never a placeholder).
    pub async fn account_id(&self) -> Result<String, AwsError> {
        self.account
            .get_or_try_init(|| async {
                let sts = self
                    .sts()
                    .get_caller_identity()
                    .send()
                    .await
                    .map_err(|e| {
                        AwsError::call("sts", "GetCallerIdentity", "the caller's identity", &e)
                    })
                    .and_then(|out| {
                        out.account.filter(|a| !a.is_empty()).ok_or_else(|| {
                            AwsError::Unexpected("STS GetCallerIdentity returned no account".into())
                        })
                    });
                match sts {
                    Ok(account) => Ok(account),
                    Err(e) => {
                        match account_from_env(std::env::var(env::AWS_ACCOUNT_ID).ok().as_deref()) {
                            Some(account) => {
                                tracing::warn!(
                                    "STS could not tell the account ({e}); using {}={account}",
                                    env::AWS_ACCOUNT_ID
                                );
                                Ok(account)
                            }
                            None => Err(e),
                        }
                    }
                }
            })
            .await
            .cloned()
    }
}

/// A usable `AWS_ACCOUNT_ID`: exactly 12 ASCII digits.
pub fn account_from_env(value: Option<&str>) -> Option<String> {
    let v = value?.trim();
    (v.len() == 12 && v.bytes().all(|b| b.is_ascii_digit())).then(|| v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::{account_from_env, ClientOptions, Clients};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[tokio::test]
    async fn a_client_is_built_once_per_type_and_region() {
        let options = ClientOptions {
            region: Some("eu-west-1".into()),
            ..Default::default()
        };
        let clients = Clients::load(&options).await;
        let builds = AtomicUsize::new(0);
        let build = |config: &aws_config::SdkConfig| {
            builds.fetch_add(1, Ordering::SeqCst);
            Arc::new(config.region().map(|r| r.to_string()))
        };
        let first = clients.cached(Some("us-west-2"), build);
        let again = clients.cached(Some("us-west-2"), build);
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(first.as_deref(), Some("us-west-2"));
        let default = clients.cached(None, build);
        assert_eq!(default.as_deref(), Some("eu-west-1"));
        assert_eq!(builds.load(Ordering::SeqCst), 2);
        // Another client type for the same region is built apart.
        let other = clients.cached(Some("us-west-2"), |_| 7u8);
        assert_eq!(other, 7);
    }

    #[test]
    fn only_a_twelve_digit_account_id_is_used() {
        assert_eq!(
            account_from_env(Some("123456789012")).as_deref(),
            Some("123456789012")
        );
        for bad in [
            None,
            Some(""),
            Some("12345678901"),
            Some("1234567890123"),
            Some("12345678901x"),
            Some("unknown-account"),
        ] {
            assert_eq!(account_from_env(bad), None, "{bad:?}");
        }
    }
}
