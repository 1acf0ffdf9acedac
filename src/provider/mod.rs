//! The provider layer: how cdkd creates, updates, reads and deletes each resource.
//!
//! Every type goes through one [`Provider`]: a dedicated SDK provider when cdkd has one (fast,
//! synchronous calls), the Cloud Control provider otherwise (broad). The [`Registry`] makes that
//! choice once per type and records it as `provisionedBy` (`sdk` or `cc-api`); a type neither
//! can handle is refused before anything is created. [`schema`] holds the registry metadata
//! (identifiers, create-only, write-only, read-only properties) both routes rely on.

pub mod cloudcontrol;
pub mod custom;
pub mod deadline;
pub mod naming;
pub mod non_provisionable;
pub mod props;
pub mod refs;
mod registry;
pub mod routing;
pub mod schema;
pub mod sdk;

pub use registry::{Allowances, Registry, Route, Routed, UnsupportedType};

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::aws::{AwsError, Clients};

/// Where and for whom a resource is provisioned.
pub struct ProviderContext<'a> {
    pub clients: &'a Clients,
    pub stack_name: &'a str,
    pub region: &'a str,
    pub account_id: &'a str,
    pub partition: &'a str,
    /// Skip the long stabilization waits (`--no-wait`).
    pub no_wait: bool,
}

/// One resource as the template declares it, its properties fully resolved.
#[derive(Debug, Clone)]
pub struct ResourceRequest<'a> {
    pub logical_id: &'a str,
    pub resource_type: &'a str,
    pub properties: &'a Map<String, Value>,
    /// Idempotency token for create calls that accept one (Cloud Control's ClientToken).
    pub client_token: Option<&'a str>,
}

/// What a provider reports after creating, updating or importing a resource.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Provisioned {
    /// The id state records: for composite identifiers the parts joined with `|`.
    pub physical_id: String,
    /// The values `Fn::GetAtt` reads, by attribute name (`Arn`, `Endpoint.Address`).
    pub attributes: Map<String, Value>,
}

/// The result of an update request.
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateOutcome {
    Updated(Provisioned),
    /// The change cannot be made in place; the engine replaces the resource.
    NeedsReplacement {
        reason: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("{logical_id} ({resource_type}): {message}")]
    Failed {
        logical_id: String,
        resource_type: String,
        message: String,
    },
    #[error("{logical_id} ({resource_type}): {source}")]
    Aws {
        logical_id: String,
        resource_type: String,
        #[source]
        source: AwsError,
    },
    #[error("{logical_id} ({resource_type}): timed out after {seconds} s: {detail}")]
    Timeout {
        logical_id: String,
        resource_type: String,
        seconds: u64,
        detail: String,
    },
    #[error("{logical_id} ({resource_type}): property {property} is required")]
    MissingProperty {
        logical_id: String,
        resource_type: String,
        property: String,
    },
}

impl ProviderError {
    pub fn failed(req: &ResourceRequest<'_>, message: impl Into<String>) -> Self {
        ProviderError::Failed {
            logical_id: req.logical_id.to_owned(),
            resource_type: req.resource_type.to_owned(),
            message: message.into(),
        }
    }

    pub fn aws(req: &ResourceRequest<'_>, source: AwsError) -> Self {
        ProviderError::Aws {
            logical_id: req.logical_id.to_owned(),
            resource_type: req.resource_type.to_owned(),
            source,
        }
    }

    pub fn missing(req: &ResourceRequest<'_>, property: &str) -> Self {
        ProviderError::MissingProperty {
            logical_id: req.logical_id.to_owned(),
            resource_type: req.resource_type.to_owned(),
            property: property.to_owned(),
        }
    }
}

/// Create, update, delete, read and import for one or more resource types. What `Ref` of a
/// resource returns does not depend on its provider: [`refs::ref_value`] derives it from the
/// recorded physical id, attributes and properties.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The types this provider serves.
    fn resource_types(&self) -> &'static [&'static str];

    /// What CloudFormation's `Ref` returns for a resource recorded with `physical_id` and
    /// `attributes`: [`refs::ref_value`], the same for every provider (the engine calls it
    /// with the record's properties too, through [`refs::of_record`]).
    fn ref_value(
        &self,
        resource_type: &str,
        physical_id: &str,
        attributes: &Map<String, Value>,
    ) -> Value {
        refs::ref_value(resource_type, physical_id, attributes, &Map::new())
    }

    /// The top-level CloudFormation properties this provider sends for `resource_type`, or
    /// `None` when it passes on whatever the template holds (Cloud Control, custom resources).
    /// A resource whose template sets any other property is routed through Cloud Control
    /// instead ([`Registry::route_for`]), so an SDK provider never drops one in silence.
    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        None
    }

    /// The attributes of `resource_type` whose values are credentials (an IAM access key's
    /// `SecretAccessKey`): the engine records them as `***`, like a NoEcho custom-resource
    /// answer, and hands the real value to this run's readers only.
    fn secret_attributes(&self, _resource_type: &str) -> &'static [&'static str] {
        &[]
    }

    /// The least time one operation of this provider may need by design (a custom resource's
    /// handler has up to its response timeout to answer): the global `--resource-timeout`
    /// is raised to it, a per-type `--resource-timeout TYPE=DURATION` is not ([`deadline`]).
    fn min_operation_timeout(&self) -> Option<std::time::Duration> {
        None
    }

    /// Creates the resource and returns its physical id and attributes.
    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError>;

    /// Moves the resource from `previous` properties to `req.properties` in place, or says it
    /// needs replacement.
    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError>;

    /// Deletes the resource; one that is already gone is success.
    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError>;

    /// Reads the resource's current properties as CloudFormation would name them; `None` when
    /// it does not exist.
    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError>;

    /// Adopts an existing resource by physical id: its attributes as a create would report.
    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError>;
}

/// Types that are not resources at all (the CDK's metadata) and are skipped.
pub const NON_RESOURCE_TYPES: &[&str] = &["AWS::CDK::Metadata"];

/// Whether a template entry of this type is skipped rather than provisioned.
pub fn is_skipped_type(resource_type: &str) -> bool {
    NON_RESOURCE_TYPES.contains(&resource_type)
}
