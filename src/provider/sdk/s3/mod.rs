//! S3: buckets (`AWS::S3::Bucket`) and bucket policies (`AWS::S3::BucketPolicy`).
//!
//! Clients come from [`crate::aws::Clients::s3`], which switches to path-style addressing
//! when the endpoint is overridden (emulators, S3-compatible stores).

mod bucket;
mod bucket_policy;
mod convert;
pub mod empty;
mod json;
mod read;

pub use bucket::BucketProvider;
pub use bucket_policy::BucketPolicyProvider;

use aws_sdk_s3::error::ProvideErrorMetadata;

use super::iam::Sdk;
use crate::aws::{classify, error_code, ErrorKind};

/// A Get call's "this configuration is not set" answer (S3 says so with an error), or an
/// API an S3-compatible store does not implement.
fn not_configured<E: ProvideErrorMetadata>(err: &Sdk<E>) -> bool {
    const CODES: &[&str] = &[
        "NoSuchTagSet",
        "NoSuchLifecycleConfiguration",
        "NoSuchCORSConfiguration",
        "NoSuchWebsiteConfiguration",
        "NoSuchBucketPolicy",
        "NoSuchPublicAccessBlockConfiguration",
        "ServerSideEncryptionConfigurationNotFoundError",
        "OwnershipControlsNotFoundError",
        "ObjectLockConfigurationNotFoundError",
        "ReplicationConfigurationNotFoundError",
        "NoSuchConfiguration",
    ];
    error_code(err).is_some_and(|c| CODES.contains(&c))
        || classify(err) == ErrorKind::NotImplemented
}
