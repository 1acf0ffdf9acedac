//! Which bucket holds state, and which region that bucket lives in.
//!
//! Name: `--state-bucket`, then `CDKD_STATE_BUCKET`, then cdk.json (all merged into
//! [`Settings::state_bucket`](crate::config::Settings)), then `cdkd-state-{account}`, then the
//! legacy `cdkd-state-{account}-{region}` with a deprecation warning, else an error that says to
//! run `cdkd bootstrap`.
//!
//! Region: GetBucketLocation (a GET with a body, answered by any regional endpoint of the
//! partition), asked from the caller's region. A successful answer is cached per bucket for the
//! process; a failure is not cached and degrades to the caller's region as a best guess.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::aws::{classify, AwsError, Clients, ErrorKind};
use crate::ui;

/// The state bucket and the region its clients must target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateBucket {
    pub name: String,
    pub region: String,
}

#[derive(Debug, thiserror::Error)]
pub enum BucketError {
    #[error("no state bucket found: neither {default} nor the legacy {legacy} exists; run `cdkd bootstrap` to create {default}, or pass --state-bucket")]
    NotBootstrapped { default: String, legacy: String },
    #[error("state bucket {bucket} does not exist; run `cdkd bootstrap --state-bucket {bucket}` or fix the name")]
    Missing { bucket: String },
    #[error("cannot determine the region for the state bucket: set AWS_REGION or pass --region")]
    NoRegion,
    #[error(transparent)]
    Aws(#[from] AwsError),
}

/// The default bucket name for an account.
pub fn default_bucket_name(account: &str) -> String {
    format!("cdkd-state-{account}")
}

/// The pre-v0.8 default bucket name.
pub fn legacy_bucket_name(account: &str, region: &str) -> String {
    format!("cdkd-state-{account}-{region}")
}

fn region_cache() -> &'static Mutex<HashMap<String, String>> {
    static CACHE: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Maps GetBucketLocation's LocationConstraint to a region name.
pub fn location_to_region(constraint: Option<&str>) -> String {
    match constraint {
        None | Some("") => "us-east-1".to_owned(),
        Some("EU") => "eu-west-1".to_owned(),
        Some(other) => other.to_owned(),
    }
}

/// The region of `bucket`: cached after the first successful probe; a failed probe is not
/// cached and answers with the caller's region, except that a bucket S3 says does not exist is
/// an error naming it.
pub async fn bucket_region(clients: &Clients, bucket: &str) -> Result<String, BucketError> {
    if let Some(region) = lock_cache().get(bucket) {
        return Ok(region.clone());
    }
    let caller = clients
        .default_region()
        .unwrap_or_else(|| "us-east-1".to_owned());
    match clients
        .s3(Some(&caller))
        .get_bucket_location()
        .bucket(bucket)
        .send()
        .await
    {
        Ok(out) => {
            let region = location_to_region(out.location_constraint().map(|c| c.as_str()));
            lock_cache().insert(bucket.to_owned(), region.clone());
            Ok(region)
        }
        Err(e) if crate::aws::error_code(&e) == Some("NoSuchBucket") => Err(BucketError::Missing {
            bucket: bucket.to_owned(),
        }),
        Err(e) => {
            tracing::debug!(
                "GetBucketLocation {bucket} failed ({}); assuming {caller}",
                AwsError::call("s3", "GetBucketLocation", bucket, &e)
            );
            Ok(caller)
        }
    }
}

fn lock_cache() -> std::sync::MutexGuard<'static, HashMap<String, String>> {
    match region_cache().lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

async fn bucket_exists(clients: &Clients, bucket: &str) -> Result<bool, AwsError> {
    let region = clients.default_region();
    match clients
        .s3(region.as_deref())
        .head_bucket()
        .bucket(bucket)
        .send()
        .await
    {
        Ok(_) => Ok(true),
        Err(e) => match classify(&e) {
            ErrorKind::NotFound => Ok(false),
            // A bucket in another region answers HeadBucket with a redirect; it exists.
            _ if e.raw_response().is_some_and(|r| r.status().as_u16() == 301) => Ok(true),
            _ => Err(AwsError::call("s3", "HeadBucket", bucket, &e)),
        },
    }
}

/// Resolves the state bucket's name (see the module docs) and its region.
pub async fn resolve(
    clients: &Clients,
    configured: Option<&str>,
) -> Result<StateBucket, BucketError> {
    let name = match configured {
        Some(name) => name.to_owned(),
        None => {
            let account = clients.account_id().await?;
            let default = default_bucket_name(&account);
            if bucket_exists(clients, &default).await? {
                default
            } else {
                let region = clients.default_region().ok_or(BucketError::NoRegion)?;
                let legacy = legacy_bucket_name(&account, &region);
                if bucket_exists(clients, &legacy).await? {
                    ui::warn(format!(
                        "Using legacy state bucket name '{legacy}'. The default has changed to '{default}'. \
                         To migrate, run: cdkd state migrate --region {region} (add --remove-legacy to delete the \
                         legacy bucket after a successful copy; legacy support will be dropped in a future release.)"
                    ));
                    legacy
                } else {
                    return Err(BucketError::NotBootstrapped { default, legacy });
                }
            }
        }
    };
    let region = bucket_region(clients, &name).await?;
    Ok(StateBucket { name, region })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_constraints_map_to_regions() {
        assert_eq!(location_to_region(None), "us-east-1");
        assert_eq!(location_to_region(Some("")), "us-east-1");
        assert_eq!(location_to_region(Some("EU")), "eu-west-1");
        assert_eq!(location_to_region(Some("ap-south-1")), "ap-south-1");
    }

    #[test]
    fn bucket_names() {
        assert_eq!(
            default_bucket_name("123456789012"),
            "cdkd-state-123456789012"
        );
        assert_eq!(
            legacy_bucket_name("123456789012", "us-east-1"),
            "cdkd-state-123456789012-us-east-1"
        );
    }
}
