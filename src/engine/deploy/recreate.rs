//! `--recreate-via-cc-api` / `--recreate-via-sdk-provider` (upstream cdkd's flags): move a
//! recorded resource between its SDK provider and Cloud Control by deleting it and creating it
//! again through the other route, so its record's `provisionedBy` flips (a record stays on
//! the route that made it otherwise: route.rs). Each resource is named by logical id, and the
//! move is refused before anything changes when it cannot be what the user meant: no record
//! (a new resource takes its usual route), already on that route, a route that cannot serve
//! it, or both directions named. A stateful type also needs `--force-stateful-recreation`
//! (plan.rs), since its data goes with the old resource.

use std::collections::BTreeSet;

use super::DeployError;
use crate::provider::{schema, Registry, Route};
use crate::state::StackState;
use crate::template::Template;

/// The logical ids named by each flag.
#[derive(Debug, Clone, Default)]
pub struct Recreate {
    pub to_cloud_control: Vec<String>,
    pub to_sdk: Vec<String>,
}

pub const TO_CLOUD_CONTROL: &str = "--recreate-via-cc-api";
pub const TO_SDK: &str = "--recreate-via-sdk-provider";

impl Recreate {
    pub fn is_empty(&self) -> bool {
        self.to_cloud_control.is_empty() && self.to_sdk.is_empty()
    }

    /// The route `id` moves to and the flag that asked, when it is named.
    pub fn target(&self, id: &str) -> Option<(Route, &'static str)> {
        if self.to_cloud_control.iter().any(|t| t == id) {
            Some((Route::CloudControl, TO_CLOUD_CONTROL))
        } else if self.to_sdk.iter().any(|t| t == id) {
            Some((Route::Sdk, TO_SDK))
        } else {
            None
        }
    }
}

/// Refuses the named moves of this stack that cannot be made. A name this stack's template
/// does not hold is left to the other selected stacks.
pub(super) fn check(
    recreate: &Recreate,
    template: &Template,
    state: &StackState,
    registry: &Registry,
) -> Result<(), DeployError> {
    let mut refused = Vec::new();
    let both: BTreeSet<&String> = recreate
        .to_cloud_control
        .iter()
        .filter(|id| recreate.to_sdk.contains(id))
        .collect();
    for id in &both {
        refused.push(format!(
            "{id}: named by both {TO_CLOUD_CONTROL} and {TO_SDK}; pick one"
        ));
    }
    let named = recreate.to_cloud_control.iter().chain(&recreate.to_sdk);
    let mut seen = BTreeSet::new();
    for id in named.filter(|id| !both.contains(id)) {
        if !seen.insert(id) {
            continue;
        }
        let (Some(res), Some((route, flag))) = (template.resources.get(id), recreate.target(id))
        else {
            continue;
        };
        let Some(rec) = state.resources.get(id) else {
            refused.push(format!(
                "{flag} {id}: the stack has no record of {id}, so there is nothing to recreate \
                 (a new resource takes its type's usual route); remove the flag"
            ));
            continue;
        };
        let t = rec.resource_type.as_str();
        if rec.resource_type != res.type_ {
            refused.push(format!(
                "{flag} {id}: its Type changes from {t} to {}, which replaces it anyway; remove \
                 the flag",
                res.type_
            ));
            continue;
        }
        let on_cloud_control = rec.is_pinned_to_cloud_control();
        match route {
            Route::CloudControl if on_cloud_control => refused.push(format!(
                "{flag} {id} ({t}): it is already provisioned through Cloud Control"
            )),
            Route::CloudControl
                if schema::schema_for(t).is_none()
                    || crate::provider::non_provisionable::is_non_provisionable(t) =>
            {
                refused.push(format!(
                    "{flag} {id} ({t}): the Cloud Control API cannot provision this type"
                ))
            }
            Route::Sdk if !on_cloud_control => refused.push(format!(
                "{flag} {id} ({t}): it is already provisioned through its SDK provider"
            )),
            Route::Sdk if registry.provider(t, Route::Sdk).is_none() => refused.push(format!(
                "{flag} {id} ({t}): cdkd has no SDK provider for this type"
            )),
            Route::Sdk => {
                let names: Vec<&str> = res.properties.keys().map(String::as_str).collect();
                let accepted = registry.dropped_by_allowance(t, &names);
                let mut unsent = registry.unmodelled(t, &names);
                unsent.retain(|p| !accepted.contains(p));
                if !unsent.is_empty() {
                    refused.push(format!(
                        "{flag} {id} ({t}): its SDK provider does not send property {}, which \
                         the template sets; remove the property first (or accept it not being \
                         sent with --allow-unsupported-properties)",
                        unsent.join(", ")
                    ));
                }
            }
            Route::CloudControl => {}
        }
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(DeployError::Refused(format!(
            "{}; nothing was changed",
            refused.join("; ")
        )))
    }
}
