//! Routing: which provider serves a type, decided once and recorded as `provisionedBy`.
//!
//! SDK providers first (by exact type), then the custom-resource provider for
//! `AWS::CloudFormation::CustomResource` and every `Custom::*` type (recorded `sdk`, as the
//! spec says: "not Cloud Control"), then Cloud Control for every type the schema snapshot lists
//! that Cloud Control can provision. Anything else is refused before anything is created.

use std::collections::{HashMap, HashSet};
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

/// A resource neither route can serve, refused before anything is created.
#[derive(Debug, thiserror::Error)]
#[error(
    "{logical_id}: resource type {resource_type} is not supported: {}; nothing was created",
    why(self)
)]
pub struct UnsupportedType {
    pub logical_id: String,
    pub resource_type: String,
    /// The schema snapshot knows the type, but Cloud Control cannot provision it.
    pub non_provisionable: bool,
    /// The type has an SDK provider, but the template sets these properties it does not
    /// send, and Cloud Control (the route that would send them) cannot serve the type.
    pub unmodelled: Vec<String>,
}

fn why(e: &UnsupportedType) -> String {
    let cc = if e.non_provisionable {
        "the Cloud Control API cannot provision it (its registry schema has no handlers)"
    } else {
        "the Cloud Control API does not list it"
    };
    if e.unmodelled.is_empty() {
        format!(
            "cdkd has no SDK provider for it and {cc} (--allow-unsupported-types {} tries \
             Cloud Control anyway)",
            e.resource_type
        )
    } else {
        let tokens: Vec<String> = e
            .unmodelled
            .iter()
            .map(|p| format!("{}:{p}", e.resource_type))
            .collect();
        format!(
            "cdkd's SDK provider does not send property {} and {cc}; remove the property, or \
             pass --allow-unsupported-properties {} to deploy without it",
            e.unmodelled.join(", "),
            tokens.join(",")
        )
    }
}

/// The route chosen for one resource of a template, and why when it is not the type's usual one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    pub route: Route,
    /// The properties the type's SDK provider does not send, which sent this resource through
    /// Cloud Control instead (empty when the route is the type's usual one).
    pub unmodelled: Vec<String>,
}

/// SDK providers by type, with Cloud Control as the fallback for every type the schema
/// snapshot knows.
#[derive(Default, Clone)]
pub struct Registry {
    sdk: HashMap<&'static str, Arc<dyn Provider>>,
    custom: Option<Arc<dyn Provider>>,
    cloud_control: Option<Arc<dyn Provider>>,
    allowed: Allowances,
}

/// Upstream cdkd's escape hatches, per type or per `Type:Property`, so each is acknowledged
/// by name: `--allow-unsupported-types` sends a type neither route serves through Cloud
/// Control anyway; `--allow-unsupported-properties` keeps a resource on its SDK provider even
/// though that provider does not send the property (it is not applied in AWS).
#[derive(Debug, Default, Clone)]
pub struct Allowances {
    pub types: HashSet<String>,
    /// `AWS::Service::Type:Property`.
    pub properties: HashSet<String>,
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

    /// The escape hatches of this run ([`Allowances`]).
    pub fn with_allowances(mut self, allowed: Allowances) -> Self {
        self.allowed = allowed;
        self
    }

    /// The properties of a `resource_type` resource that its SDK provider does not send and
    /// `--allow-unsupported-properties` accepts as not sent.
    pub fn dropped_by_allowance(&self, resource_type: &str, properties: &[&str]) -> Vec<String> {
        self.unmodelled(resource_type, properties)
            .into_iter()
            .filter(|p| self.allows_property(resource_type, p))
            .collect()
    }

    fn allows_property(&self, resource_type: &str, property: &str) -> bool {
        self.allowed
            .properties
            .contains(&format!("{resource_type}:{property}"))
    }

    /// The route for a type: SDK (custom resources included) first, Cloud Control for any
    /// provisionable type the registry schemas list.
    pub fn route(&self, logical_id: &str, resource_type: &str) -> Result<Route, UnsupportedType> {
        self.route_for(logical_id, resource_type, &[])
            .map(|r| r.route)
    }

    /// The route for one resource whose template sets the top-level `properties`: its type's
    /// SDK provider when that provider sends every one of them, otherwise Cloud Control, which
    /// sends the whole property bag (a property is never dropped in silence). A type Cloud
    /// Control cannot serve either is refused, naming the properties.
    pub fn route_for(
        &self,
        logical_id: &str,
        resource_type: &str,
        properties: &[&str],
    ) -> Result<Routed, UnsupportedType> {
        let known = schema::schema_for(resource_type).is_some();
        let non_provisionable = known && is_non_provisionable(resource_type);
        let cloud_control_serves = self.cloud_control.is_some() && known && !non_provisionable;
        let refused = |unmodelled: Vec<String>| UnsupportedType {
            logical_id: logical_id.to_owned(),
            resource_type: resource_type.to_owned(),
            non_provisionable,
            unmodelled,
        };
        if let Some(sdk) = self.sdk_provider(resource_type) {
            let mut unmodelled = unmodelled(sdk.as_ref(), resource_type, properties);
            unmodelled.retain(|p| !self.allows_property(resource_type, p));
            return match (unmodelled.is_empty(), cloud_control_serves) {
                (true, _) => Ok(Routed {
                    route: Route::Sdk,
                    unmodelled,
                }),
                (false, true) => Ok(Routed {
                    route: Route::CloudControl,
                    unmodelled,
                }),
                (false, false) => Err(refused(unmodelled)),
            };
        }
        let allowed = self.cloud_control.is_some() && self.allowed.types.contains(resource_type);
        if cloud_control_serves || allowed {
            return Ok(Routed {
                route: Route::CloudControl,
                unmodelled: Vec::new(),
            });
        }
        Err(refused(Vec::new()))
    }

    /// The properties of `properties` the type's SDK provider does not send (empty for a type
    /// without one).
    pub fn unmodelled(&self, resource_type: &str, properties: &[&str]) -> Vec<String> {
        self.sdk_provider(resource_type)
            .map(|p| unmodelled(p.as_ref(), resource_type, properties))
            .unwrap_or_default()
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

/// The names in `properties` that `provider` does not send for `resource_type`, sorted.
fn unmodelled(provider: &dyn Provider, resource_type: &str, properties: &[&str]) -> Vec<String> {
    let Some(supported) = provider.supported_properties(resource_type) else {
        return Vec::new();
    };
    let mut out: Vec<String> = properties
        .iter()
        .filter(|p| !supported.contains(p))
        .map(|p| (*p).to_owned())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use serde_json::Map;

    use super::*;
    use crate::provider::{
        ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
    };

    /// A provider that only states what it serves and sends; routing never calls it.
    struct Sends(&'static [&'static str], &'static [&'static str]);

    fn never(req: &ResourceRequest<'_>) -> ProviderError {
        ProviderError::failed(req, "not called by routing")
    }

    #[async_trait]
    impl Provider for Sends {
        fn resource_types(&self) -> &'static [&'static str] {
            self.0
        }
        fn supported_properties(&self, _t: &str) -> Option<Vec<&'static str>> {
            Some(self.1.to_vec())
        }
        async fn create(
            &self,
            _: &ProviderContext<'_>,
            r: &ResourceRequest<'_>,
        ) -> Result<Provisioned, ProviderError> {
            Err(never(r))
        }
        async fn update(
            &self,
            _: &ProviderContext<'_>,
            r: &ResourceRequest<'_>,
            _: &str,
            _: &Map<String, serde_json::Value>,
        ) -> Result<UpdateOutcome, ProviderError> {
            Err(never(r))
        }
        async fn delete(
            &self,
            _: &ProviderContext<'_>,
            r: &ResourceRequest<'_>,
            _: &str,
        ) -> Result<(), ProviderError> {
            Err(never(r))
        }
        async fn read(
            &self,
            _: &ProviderContext<'_>,
            r: &ResourceRequest<'_>,
            _: &str,
        ) -> Result<Option<Map<String, serde_json::Value>>, ProviderError> {
            Err(never(r))
        }
        async fn import(
            &self,
            _: &ProviderContext<'_>,
            r: &ResourceRequest<'_>,
            _: &str,
        ) -> Result<Provisioned, ProviderError> {
            Err(never(r))
        }
    }

    fn registry() -> Registry {
        Registry::new()
            .with_sdk(Arc::new(Sends(
                &["AWS::SQS::Queue"],
                &["QueueName", "Tags"],
            )))
            // A type Cloud Control cannot provision, served by an SDK provider.
            .with_sdk(Arc::new(Sends(&["AWS::CodeBuild::Project"], &["Name"])))
            .with_cloud_control(Arc::new(Sends(&[], &[])))
    }

    #[test]
    fn a_property_the_sdk_provider_does_not_send_routes_through_cloud_control() {
        let r = registry();
        let sdk = r
            .route_for("Q", "AWS::SQS::Queue", &["QueueName", "Tags"])
            .expect("routed");
        assert_eq!(sdk.route, Route::Sdk);
        assert!(sdk.unmodelled.is_empty());
        let cc = r
            .route_for("Q", "AWS::SQS::Queue", &["Tags", "Zeta", "Alpha"])
            .expect("routed");
        assert_eq!(cc.route, Route::CloudControl);
        assert_eq!(cc.unmodelled, ["Alpha", "Zeta"]);
        assert_eq!(r.unmodelled("AWS::SQS::Queue", &["Zeta"]), ["Zeta"]);
        assert!(r.unmodelled("AWS::Events::Rule", &["Zeta"]).is_empty());
    }

    #[test]
    fn a_type_cloud_control_cannot_serve_is_refused_naming_the_property() {
        let r = registry();
        assert_eq!(
            r.route_for("P", "AWS::CodeBuild::Project", &["Name"])
                .expect("routed")
                .route,
            Route::Sdk
        );
        let err = r
            .route_for("P", "AWS::CodeBuild::Project", &["Name", "Artifacts"])
            .expect_err("refused");
        assert_eq!(
            err.to_string(),
            "P: resource type AWS::CodeBuild::Project is not supported: cdkd's SDK provider \
             does not send property Artifacts and the Cloud Control API cannot provision it \
             (its registry schema has no handlers); remove the property, or pass \
             --allow-unsupported-properties AWS::CodeBuild::Project:Artifacts to deploy without \
             it; nothing was created"
        );
    }

    #[test]
    fn the_escape_hatches_route_what_would_be_refused() {
        let mut allowed = Allowances::default();
        allowed.types.insert("Test::Not::Known".into());
        allowed
            .properties
            .insert("AWS::CodeBuild::Project:Artifacts".into());
        allowed.properties.insert("AWS::SQS::Queue:Zeta".into());
        let r = registry().with_allowances(allowed);
        let p = r
            .route_for("P", "AWS::CodeBuild::Project", &["Name", "Artifacts"])
            .expect("allowed");
        assert_eq!((p.route, p.unmodelled.len()), (Route::Sdk, 0));
        assert_eq!(
            r.dropped_by_allowance("AWS::CodeBuild::Project", &["Name", "Artifacts"]),
            ["Artifacts"]
        );
        // Allowed, the property keeps the resource on its SDK provider, as upstream's flag
        // means; one not allowed still sends it through Cloud Control.
        let q = r
            .route_for("Q", "AWS::SQS::Queue", &["Zeta"])
            .expect("allowed");
        assert_eq!(q.route, Route::Sdk);
        let q = r
            .route_for("Q", "AWS::SQS::Queue", &["Zeta", "Alpha"])
            .expect("routed");
        assert_eq!(
            (q.route, q.unmodelled.clone()),
            (Route::CloudControl, vec!["Alpha".to_owned()])
        );
        let t = r.route_for("T", "Test::Not::Known", &[]).expect("allowed");
        assert_eq!(t.route, Route::CloudControl);
        let err = registry()
            .route_for("T", "Test::Not::Known", &[])
            .expect_err("refused");
        assert!(
            err.to_string()
                .contains("--allow-unsupported-types Test::Not::Known"),
            "{err}"
        );
    }
}
