//! Routing: which provider serves a type, decided once and recorded as `provisionedBy`.

use std::collections::HashMap;
use std::sync::Arc;

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
#[error("{logical_id}: resource type {resource_type} is not supported: cdkd has no SDK provider for it and the Cloud Control API does not list it; nothing was created")]
pub struct UnsupportedType {
    pub logical_id: String,
    pub resource_type: String,
}

/// SDK providers by type, with Cloud Control as the fallback for every type the schema
/// snapshot knows.
#[derive(Default, Clone)]
pub struct Registry {
    sdk: HashMap<&'static str, Arc<dyn Provider>>,
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

    pub fn with_cloud_control(mut self, provider: Arc<dyn Provider>) -> Self {
        self.cloud_control = Some(provider);
        self
    }

    /// The route for a type: SDK first, Cloud Control for any type the registry schemas list
    /// (custom resources are routed by the engine before this is asked).
    pub fn route(&self, logical_id: &str, resource_type: &str) -> Result<Route, UnsupportedType> {
        if self.sdk.contains_key(resource_type) {
            return Ok(Route::Sdk);
        }
        if self.cloud_control.is_some() && schema::schema_for(resource_type).is_some() {
            return Ok(Route::CloudControl);
        }
        Err(UnsupportedType {
            logical_id: logical_id.to_owned(),
            resource_type: resource_type.to_owned(),
        })
    }

    /// The provider for a route; `pin` forces a route recorded in state (`provisionedBy`).
    pub fn provider(&self, resource_type: &str, route: Route) -> Option<Arc<dyn Provider>> {
        match route {
            Route::Sdk => self.sdk.get(resource_type).cloned(),
            Route::CloudControl => self.cloud_control.clone(),
        }
    }

    /// Every type with an SDK provider, sorted (for the routing table in the docs).
    pub fn sdk_types(&self) -> Vec<&'static str> {
        let mut types: Vec<_> = self.sdk.keys().copied().collect();
        types.sort_unstable();
        types
    }
}
