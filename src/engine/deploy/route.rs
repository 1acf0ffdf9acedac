//! Which provider serves each resource of a plan: the registry's choice for the type and the
//! template's properties, bounded by what the resource's record says.
//!
//! - A resource without a record (or whose type changed) takes [`Registry::route_for`]: its
//!   SDK provider unless the template sets a property that provider does not send, then Cloud
//!   Control, which sends the whole bag. One progress line names the property. A type Cloud
//!   Control cannot serve either is refused before anything is created.
//! - A record pinned to Cloud Control (`provisionedBy: cc-api`) stays there, as the spec
//!   requires: moving it would change the API that addresses a live resource. The exception
//!   is a type in [`SAME_ID_ON_BOTH_ROUTES`], whose SDK provider addresses the resource by the
//!   very id Cloud Control recorded: it returns to the SDK provider on the first deploy where
//!   neither the template nor the record carries a property that provider does not send. The
//!   record counts because a property Cloud Control applied and the template has since
//!   dropped still needs Cloud Control to unset it, so the return waits one deploy.
//! - A record made through the SDK provider whose template now sets a property that provider
//!   does not send moves to Cloud Control when its type is in [`SAME_ID_ON_BOTH_ROUTES`];
//!   otherwise Cloud Control could not address it, and the deploy is refused naming the
//!   property (never applied without it).

use serde_json::Value;

use super::DeployError;
use crate::provider::{Registry, Route};
use crate::resolve::ConditionVerdicts;
use crate::state::ResourceState;
use crate::template::Resource;

/// Types whose SDK provider's physical id is the identifier Cloud Control records (so either
/// route can address a resource the other made). Each entry needs a test through the binary
/// that moves a live resource across (tests/lifecycle/deploy_routing.rs,
/// `a_property_the_sdk_provider_does_not_send_goes_through_cloud_control_and_back`; the KMS
/// key: tests/lifecycle/kms_layer_dns.rs,
/// `a_kms_key_recorded_through_cloud_control_returns_to_the_sdk_provider`; the DB instance:
/// tests/lifecycle/alb_rds.rs,
/// `a_db_instance_recorded_through_cloud_control_returns_to_the_sdk_provider`).
pub const SAME_ID_ON_BOTH_ROUTES: &[&str] = &[
    "AWS::Lambda::Function",
    "AWS::KMS::Key",
    "AWS::RDS::DBInstance",
];

/// The route of one resource, and the progress line saying why when it is not the usual one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Choice {
    pub route: Route,
    pub note: Option<String>,
}

/// The top-level properties a template sets: an explicit `AWS::NoValue` sets nothing, and
/// neither does an `Fn::If` whose condition's verdict picks one (CDK writes optional
/// properties that way), so such a property never sends a resource to Cloud Control.
fn template_names<'a>(res: &'a Resource, verdicts: &ConditionVerdicts) -> Vec<&'a str> {
    res.properties
        .iter()
        .filter(|(_, v)| !is_no_value(v, verdicts))
        .map(|(k, _)| k.as_str())
        .collect()
}

/// Whether `v` comes to nothing: null, `AWS::NoValue`, or a decided `Fn::If` whose chosen
/// branch does. An `Fn::If` over a condition without a verdict counts as set.
fn is_no_value(v: &Value, verdicts: &ConditionVerdicts) -> bool {
    if v.is_null() || v.get("Ref").and_then(Value::as_str) == Some("AWS::NoValue") {
        return true;
    }
    let Some([cond, then, otherwise]) = v
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get("Fn::If"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    else {
        return false;
    };
    match cond.as_str().and_then(|c| verdicts.get(c)) {
        Some(true) => is_no_value(then, verdicts),
        Some(false) => is_no_value(otherwise, verdicts),
        None => false,
    }
}

/// The route for resource `id` of type `res.type_`, given its record in state (if any).
pub(super) fn choose(
    registry: &Registry,
    id: &str,
    res: &Resource,
    rec: Option<&ResourceState>,
    verdicts: &ConditionVerdicts,
) -> Result<Choice, DeployError> {
    let rec = rec.filter(|r| r.resource_type == res.type_);
    let names = template_names(res, verdicts);
    let movable = SAME_ID_ON_BOTH_ROUTES.contains(&res.type_.as_str());
    if let Some(r) = rec.filter(|r| r.is_pinned_to_cloud_control()) {
        let recorded: Vec<&str> = r.properties.keys().map(String::as_str).collect();
        let returns = movable
            && registry.provider(&res.type_, Route::Sdk).is_some()
            && registry.unmodelled(&res.type_, &names).is_empty()
            && registry.unmodelled(&res.type_, &recorded).is_empty();
        return Ok(if returns {
            Choice {
                route: Route::Sdk,
                note: Some(format!(
                    "{id} ({}): returns to its SDK provider from Cloud Control (every property \
                     it sets is one the SDK provider sends)",
                    res.type_
                )),
            }
        } else {
            Choice {
                route: Route::CloudControl,
                note: None,
            }
        });
    }
    let routed = registry.route_for(id, &res.type_, &names)?;
    if routed.unmodelled.is_empty() {
        let dropped = match routed.route {
            Route::Sdk => registry.dropped_by_allowance(&res.type_, &names),
            Route::CloudControl => Vec::new(),
        };
        return Ok(Choice {
            route: routed.route,
            note: (!dropped.is_empty()).then(|| {
                format!(
                    "{id} ({}): property {} is not sent to AWS (--allow-unsupported-properties; \
                     cdkd's SDK provider does not send it)",
                    res.type_,
                    dropped.join(", ")
                )
            }),
        });
    }
    if rec.is_some() && !movable {
        return Err(DeployError::Refused(format!(
            "{id} ({}): cdkd's SDK provider does not send property {}, and this resource was \
             made through that provider, which addresses it by an id Cloud Control does not \
             use; remove the property, or give the resource a new logical id so it is created \
             through Cloud Control; nothing was changed",
            res.type_,
            routed.unmodelled.join(", ")
        )));
    }
    Ok(Choice {
        route: routed.route,
        note: Some(format!(
            "{id} ({}): through Cloud Control: cdkd's SDK provider does not send property {}",
            res.type_,
            routed.unmodelled.join(", ")
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resource(properties: Value) -> Resource {
        Resource {
            type_: "AWS::Lambda::Function".to_owned(),
            properties: properties.as_object().cloned().unwrap_or_default(),
            ..Resource::default()
        }
    }

    #[test]
    fn a_property_that_resolves_to_no_value_is_not_set() {
        let verdicts: ConditionVerdicts = [("On".to_owned(), true), ("Off".to_owned(), false)]
            .into_iter()
            .collect();
        let none = json!({"Ref": "AWS::NoValue"});
        let res = resource(json!({
            "Handler": "index.handler",
            "Explicit": none,
            "OffPicksNoValue": {"Fn::If": ["Off", "x", none]},
            "OnPicksNoValue": {"Fn::If": ["On", none, "x"]},
            "Nested": {"Fn::If": ["On", {"Fn::If": ["Off", "x", none]}, "y"]},
            "OnPicksValue": {"Fn::If": ["On", "x", none]},
            "Undecided": {"Fn::If": ["Unknown", none, none]},
        }));
        let mut names = template_names(&res, &verdicts);
        names.sort();
        assert_eq!(names, ["Handler", "OnPicksValue", "Undecided"]);
    }
}
