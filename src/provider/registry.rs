//! Routing: which provider serves a type, decided once and recorded as `provisionedBy`.
//!
//! SDK providers first (by exact type), then the custom-resource provider for
//! `AWS::CloudFormation::CustomResource` and every `Custom::*` type (recorded `sdk`, as the
//! spec says: "not Cloud Control"), then Cloud Control for every type the schema snapshot lists
//! that Cloud Control can provision. Anything else is refused before anything is created.

use std::collections::HashMap;
use std::sync::Arc;

use super::custom::is_custom_type;
use super::non_provisionable::is_non_provisionable;
use super::schema;
use super::Provider;

/// How a type is provisioned, with the spelling state records use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Sdk,
    CloudControl,
}

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Sdk => "sdk",
            Route::CloudControl => "cc-api",
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{logical_id}: resource type {resource_type} is not supported: cdkd has no SDK provider for it and {}; nothing was created", why(*.non_provisionable))]
pub struct UnsupportedType {
    pub logical_id: String,
    pub resource_type: String,
    /// The schema snapshot knows the type, but Cloud Control cannot provision it.
    pub non_provisionable: bool,
}

fn why(non_provisionable: bool) -> &'static str {
    if non_provisionable {
        "the Cloud Control API cannot provision it (its registry schema has no handlers)"
    } else {
        "the Cloud Control API does not list it"
    }
}

/// SDK providers by type, with Cloud Control as the fallback for every type the schema
/// snapshot knows.
#[derive(Default, Clone)]
pub struct Registry {
    sdk: HashMap<&'static str, Arc<dyn Provider>>,
    custom: Option<Arc<dyn Provider>>,
    cloud_control: Option<Arc<dyn Provider>>,
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// Registers an SDK provider for every type it names.
    pub fn with_sdk(mut self, provider: Arc<dyn Provider>) -> Self {
        for t in provider.resource_types() {
            self.sdk.insert(t, provider.clone());
        }
        self
    }

    /// Registers the provider of `AWS::CloudFormation::CustomResource` and `Custom::*`.
    pub fn with_custom(mut self, provider: Arc<dyn Provider>) -> Self {
        self.custom = Some(provider);
        self
    }

    pub fn with_cloud_control(mut self, provider: Arc<dyn Provider>) -> Self {
        self.cloud_control = Some(provider);
        self
    }

    /// The route for a type: SDK (custom resources included) first, Cloud Control for any
    /// provisionable type the registry schemas list.
    pub fn route(&self, logical_id: &str, resource_type: &str) -> Result<Route, UnsupportedType> {
        if self.sdk_provider(resource_type).is_some() {
            return Ok(Route::Sdk);
        }
        let known = schema::schema_for(resource_type).is_some();
        let non_provisionable = known && is_non_provisionable(resource_type);
        if self.cloud_control.is_some() && known && !non_provisionable {
            return Ok(Route::CloudControl);
        }
        Err(UnsupportedType {
            logical_id: logical_id.to_owned(),
            resource_type: resource_type.to_owned(),
            non_provisionable,
        })
    }

    fn sdk_provider(&self, resource_type: &str) -> Option<Arc<dyn Provider>> {
        match self.sdk.get(resource_type) {
            Some(p) => Some(p.clone()),
            None if is_custom_type(resource_type) => self.custom.clone(),
            None => None,
        }
    }

    /// The provider for a route; `pin` forces a route recorded in state (`provisionedBy`).
    pub fn provider(&self, resource_type: &str, route: Route) -> Option<Arc<dyn Provider>> {
        match route {
            Route::Sdk => self.sdk_provider(resource_type),
            Route::CloudControl => self.cloud_control.clone(),
        }
    }

    /// Whether custom resources have a provider.
    pub fn serves_custom_resources(&self) -> bool {
        self.custom.is_some()
    }

    /// Every type with an SDK provider, sorted (for the routing table in the docs).
    pub fn sdk_types(&self) -> Vec<&'static str> {
        let mut types: Vec<_> = self.sdk.keys().copied().collect();
        types.sort_unstable();
        types
    }
}
