//! What the resolver reads about this stack's resources: a snapshot of physical ids and
//! attributes, taken from the state record (and, during the walk, from what this run has
//! recorded so far), and the synchronous resolution calls built over it.
//!
//! The resolver is synchronous and not `Send`, so it is built where it is used, over an owned
//! snapshot, and dropped before the next await.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::plan::references;
use crate::provider::{schema, Provider, Registry, Route};
use crate::resolve::{
    BoundParameters, ConditionVerdicts, ExternalLookup, ResolveContext, ResolveError,
    ResolvedOutput, Resolver, ResourceLookup,
};
use crate::state::{ProvisionedBy, ResourceState};
use crate::template::Template;

/// One resource as references see it.
#[derive(Debug, Clone)]
pub(super) struct Known {
    pub ref_value: Value,
    pub attributes: Map<String, Value>,
}

/// Physical ids and attributes by logical id.
#[derive(Debug, Clone, Default)]
pub(super) struct Snapshot {
    entries: HashMap<String, Known>,
}

impl Snapshot {
    /// The snapshot of `records` (every record that has a physical id).
    pub fn from_records<'a>(
        registry: &Registry,
        records: impl IntoIterator<Item = (&'a String, &'a ResourceState)>,
    ) -> Self {
        let entries = records
            .into_iter()
            .filter_map(|(id, rec)| Some((id.clone(), known(registry, id, rec)?)))
            .collect();
        Snapshot { entries }
    }
}

impl ResourceLookup for Snapshot {
    fn ref_value(&self, logical_id: &str) -> Option<Value> {
        self.entries.get(logical_id).map(|k| k.ref_value.clone())
    }

    fn get_att(&self, logical_id: &str, attribute: &str) -> Option<Value> {
        self.entries
            .get(logical_id)?
            .attributes
            .get(attribute)
            .cloned()
    }
}

/// How a record is served: its recorded `provisionedBy: cc-api` pins Cloud Control; otherwise
/// the SDK provider when cdkd has one, else Cloud Control for a type the schemas know.
pub(super) fn record_provider(
    registry: &Registry,
    rec: &ResourceState,
) -> Option<(Route, Arc<dyn Provider>)> {
    let t = rec.resource_type.as_str();
    let route = if rec.is_pinned_to_cloud_control() {
        Route::CloudControl
    } else if registry.provider(t, Route::Sdk).is_some() {
        Route::Sdk
    } else if schema::schema_for(t).is_some() {
        Route::CloudControl
    } else {
        return None;
    };
    registry.provider(t, route).map(|p| (route, p))
}

pub(super) fn provisioned_by(route: Route) -> ProvisionedBy {
    match route {
        Route::Sdk => ProvisionedBy::Sdk,
        Route::CloudControl => ProvisionedBy::CcApi,
    }
}

fn known(registry: &Registry, _id: &str, rec: &ResourceState) -> Option<Known> {
    let physical_id = rec.physical_id.as_deref()?;
    let attributes = rec.attributes.clone().unwrap_or_default();
    let ref_value = match record_provider(registry, rec) {
        Some((_, provider)) => provider.ref_value(&rec.resource_type, physical_id, &attributes),
        None => Value::String(physical_id.to_owned()),
    };
    Some(Known {
        ref_value,
        attributes,
    })
}

/// The logical ids `value` names through `Ref`, `Fn::GetAtt` and `Fn::Sub`.
pub(super) fn referenced_ids(value: &Map<String, Value>) -> Vec<String> {
    let mut ids: Vec<String> = references(&Value::Object(value.clone()))
        .into_iter()
        .map(|r| r.target)
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Everything resolution needs besides the resource snapshot; shared by the plan, the walk
/// and the outputs.
pub(super) struct Resolution {
    pub template: Arc<Template>,
    pub ctx: ResolveContext,
    pub params: BoundParameters,
    pub verdicts: ConditionVerdicts,
    pub external: Arc<dyn ExternalLookup + Send + Sync>,
}

impl Resolution {
    fn resolver<'a>(&'a self, snapshot: &'a Snapshot) -> Resolver<'a> {
        Resolver::new(
            &self.template,
            &self.ctx,
            &self.params,
            snapshot,
            self.external.as_ref(),
        )
        .with_conditions(&self.verdicts)
    }

    /// The resolved properties of `logical_id`.
    pub fn properties(
        &self,
        snapshot: &Snapshot,
        logical_id: &str,
    ) -> Result<Map<String, Value>, ResolveError> {
        let mut resolver = self.resolver(snapshot);
        let resolved = resolver.resolve_properties(logical_id);
        for w in resolver.take_warnings() {
            crate::ui::warn(w.to_string());
        }
        resolved
    }

    /// The resolved properties of `logical_id`, property by property: a property whose value
    /// is not known yet (a resource not created, an attribute not recorded) is listed in the
    /// second half instead of failing the whole resource. Template mistakes still fail.
    pub fn properties_lenient(
        &self,
        snapshot: &Snapshot,
        logical_id: &str,
    ) -> Result<(Map<String, Value>, Vec<String>), ResolveError> {
        let Some(resource) = self.template.resources.get(logical_id) else {
            return Ok((Map::new(), Vec::new()));
        };
        let mut resolver = self.resolver(snapshot);
        let mut out = Map::new();
        let mut unknown = Vec::new();
        for (key, value) in &resource.properties {
            let path = format!("Resources.{logical_id}.Properties.{key}");
            match resolver.resolve_value(value, &path) {
                Ok(Some(v)) => {
                    out.insert(key.clone(), v);
                }
                Ok(None) => {}
                Err(e) if e.is_unavailable() => unknown.push(key.clone()),
                Err(e) => return Err(e),
            }
        }
        Ok((out, unknown))
    }

    /// Output `name`, or `None` when its Condition is false.
    pub fn output(
        &self,
        snapshot: &Snapshot,
        name: &str,
    ) -> Result<Option<ResolvedOutput>, ResolveError> {
        self.resolver(snapshot).resolve_output(name)
    }
}
