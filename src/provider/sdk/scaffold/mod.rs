//! What every SDK provider shares, so a new one is mostly its tables plus what is truly
//! particular to its API.
//!
//! How to add a provider for a type (one module per type or close family under `sdk/`):
//! 1. Its property map: which top-level CloudFormation properties it sends and how. Properties
//!    that are service attributes of one string each (SQS, SNS) are an [`attributes`] table:
//!    name, [`attributes::Kind`] and the default that restores the service's value when the
//!    template drops the property. `Provider::supported_properties` returns the table's names
//!    plus the properties the module handles itself, and nothing else: a template setting any
//!    other property is routed through Cloud Control instead (never dropped).
//! 2. Calls: its client through [`regional`], every failure through [`Service::err`] (one
//!    typed error naming the resource, the operation and its target), not-found through
//!    `sdk::is_not_found` (deleting what is gone is success; reading it answers `None`).
//! 3. Tags: [`tags::changes`] gives what to set and what to remove on update; [`tags::value`]
//!    reads them back as CloudFormation lists them.
//! 4. Update: [`lifecycle::create_only_change`] answers `UpdateOutcome::NeedsReplacement`
//!    when a create-only property (the schema snapshot says which) moved;
//!    `props::changed_properties` names the rest, which are applied. [`lifecycle`] also has
//!    the record a create reports and the not-found-is-gone rule (`Service::unless_gone`,
//!    `Service::unless_gone_coded` for services that name not-found per kind).
//! 7. Waits only where a dependent needs them, through [`wait::until`] (short-first polling,
//!    a typed timeout); nested read-back in the template's shape through [`readback`].
//! 5. A family of types on one client (KMS keys and aliases) is one provider written by
//!    [`family::family_provider`] from its table of types, one module per type.
//! 6. Read and import return what create reports, so a diff after a deploy is clean; the
//!    provider's tests in `tests/providers/provider_<service>.rs` drive create / update /
//!    replace / delete / read / import against the emulator.

pub mod attributes;
pub mod family;
pub mod lifecycle;
pub mod nested;
pub mod readback;
pub mod tags;
pub mod wait;

use aws_config::SdkConfig;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::http::Response as HttpResponse;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use crate::aws::AwsError;
use crate::provider::{ProviderContext, ProviderError, ResourceRequest};

/// A service's client for the context's region, built once per run and shared.
pub fn regional<C: Clone + Send + Sync + 'static>(
    ctx: &ProviderContext<'_>,
    build: impl FnOnce(&SdkConfig) -> C,
) -> C {
    ctx.clients.cached(Some(ctx.region), build)
}

/// A service, by the name its errors carry (`sqs`, `sns`): the typed error of every failed call.
#[derive(Debug, Clone, Copy)]
pub struct Service(pub &'static str);

impl Service {
    /// A failed call of `operation` on `target`, as the resource's error.
    pub fn err<E>(
        self,
        req: &ResourceRequest<'_>,
        operation: &'static str,
        target: &str,
        err: &SdkError<E, HttpResponse>,
    ) -> ProviderError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        ProviderError::aws(req, AwsError::call(self.0, operation, target, err))
    }
}
