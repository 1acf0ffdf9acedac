//! SDK providers: direct, synchronous service calls for the common resource types, which is
//! where cdkd's speed comes from. Each service module exposes one provider; [`all`] lists them
//! for the registry.
//!
//! Conventions every provider follows: not-found on delete is success; a physical name the
//! template leaves out is generated with [`super::naming`]; `Ref` and `Fn::GetAtt` return what
//! CloudFormation returns; eventual consistency (a new IAM role not yet assumable) is retried
//! with bounded backoff, never slept on blindly.

mod dynamodb;
mod ec2;
mod elbv2;
mod iam;
mod kms;
mod lambda;
mod logs;
mod rds;
mod route53;
mod s3;
mod scaffold;
mod secretsmanager;
mod sns;
mod sqs;
mod ssm;

use std::sync::Arc;

use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::http::Response as HttpResponse;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use serde_json::{Map, Value};

use super::{Provider, ResourceRequest};
use crate::aws::{classify, ErrorKind};

/// Whether a failed call says the resource (or the entity it names) does not exist.
fn is_not_found<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> bool {
    classify(err) == ErrorKind::NotFound
}

/// The same request over another set of properties (the previous ones, on update), without
/// a create token.
fn with_properties<'a>(
    req: &ResourceRequest<'a>,
    properties: &'a Map<String, Value>,
) -> ResourceRequest<'a> {
    ResourceRequest {
        properties,
        client_token: None,
        ..req.clone()
    }
}

/// Every SDK provider, for [`super::Registry::with_sdk`].
pub fn all() -> Vec<Arc<dyn Provider>> {
    vec![
        Arc::new(dynamodb::DynamoDbTableProvider),
        Arc::new(ec2::Ec2NetworkProvider),
        Arc::new(elbv2::Elbv2Provider),
        Arc::new(iam::RoleProvider),
        Arc::new(iam::PolicyProvider),
        Arc::new(iam::ManagedPolicyProvider),
        Arc::new(iam::InstanceProfileProvider),
        Arc::new(iam::AccessKeyProvider),
        Arc::new(kms::KmsProvider),
        Arc::new(lambda::FunctionProvider),
        Arc::new(lambda::PermissionProvider),
        Arc::new(lambda::UrlProvider),
        Arc::new(lambda::VersionProvider),
        Arc::new(lambda::AliasProvider),
        Arc::new(lambda::EventSourceMappingProvider),
        Arc::new(lambda::LayerProvider),
        Arc::new(logs::LogsProvider),
        Arc::new(rds::RdsProvider),
        Arc::new(route53::Route53Provider),
        Arc::new(s3::BucketProvider),
        Arc::new(s3::BucketPolicyProvider),
        Arc::new(sns::SnsProvider),
        Arc::new(sqs::SqsProvider),
        Arc::new(secretsmanager::SecretProvider),
        Arc::new(ssm::ParameterProvider),
    ]
}

#[cfg(test)]
mod tests {
    /// Routing relies on every SDK provider stating what it sends: one that said nothing
    /// would have its unmodelled properties dropped in silence instead of routed around it.
    #[test]
    fn every_sdk_provider_states_the_properties_it_sends() {
        for provider in super::all() {
            for t in provider.resource_types() {
                let mut sent = provider.supported_properties(t).unwrap_or_default();
                assert!(!sent.is_empty(), "{t} states no property");
                let count = sent.len();
                sent.sort_unstable();
                sent.dedup();
                assert_eq!(sent.len(), count, "{t} names a property twice");
            }
        }
    }
}
