//! SDK providers: direct, synchronous service calls for the common resource types, which is
//! where cdkd's speed comes from. Each service module exposes one provider; [`all`] lists them
//! for the registry.
//!
//! Conventions every provider follows: not-found on delete is success; a physical name the
//! template leaves out is generated with [`super::naming`]; `Ref` and `Fn::GetAtt` return what
//! CloudFormation returns; eventual consistency (a new IAM role not yet assumable) is retried
//! with bounded backoff, never slept on blindly.

use std::sync::Arc;

use super::Provider;

/// Every SDK provider, for [`super::Registry::with_sdk`].
pub fn all() -> Vec<Arc<dyn Provider>> {
    vec![]
}
