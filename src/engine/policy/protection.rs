//! `--remove-protection`: the resource-level deletion protection flags AWS refuses a delete
//! under, turned off just before the delete.
//!
//! [`PROTECTION_FLAGS`] names each flag as the type's CloudFormation property. The flip is an
//! ordinary update through the provider that serves the resource (its recorded route), from the
//! record with the flag on to the record with it off, so it is sent even when the record says
//! the flag is already off (protection turned on outside cdkd) and touches nothing else: both
//! routes send only what differs. A flip that fails is reported and the delete still runs, so
//! AWS's own answer says why the resource stays.

use serde_json::{json, Map, Value};

use crate::provider::{Provider, ProviderContext, ResourceRequest};
use crate::state::ResourceState;
use crate::ui;

/// How a flag is written on and off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// A boolean property: `true` protects.
    Bool,
    /// Cognito's `ACTIVE` / `INACTIVE`.
    ActiveInactive,
    /// Verified Permissions' `{Mode: ENABLED | DISABLED}`.
    Mode,
    /// Auto Scaling's `prevent-all-deletion` / `none`.
    AsgDeletion,
    /// The `deletion_protection.enabled` entry of `LoadBalancerAttributes`.
    LoadBalancerAttribute,
}

/// Every resource-level deletion protection `--remove-protection` turns off: type, property.
pub const PROTECTION_FLAGS: &[(&str, &str, Flag)] = &[
    (
        "AWS::Logs::LogGroup",
        "DeletionProtectionEnabled",
        Flag::Bool,
    ),
    ("AWS::RDS::DBInstance", "DeletionProtection", Flag::Bool),
    ("AWS::RDS::DBCluster", "DeletionProtection", Flag::Bool),
    ("AWS::RDS::GlobalCluster", "DeletionProtection", Flag::Bool),
    ("AWS::DocDB::DBCluster", "DeletionProtection", Flag::Bool),
    (
        "AWS::DocDB::GlobalCluster",
        "DeletionProtection",
        Flag::Bool,
    ),
    ("AWS::Neptune::DBCluster", "DeletionProtection", Flag::Bool),
    ("AWS::Neptune::DBInstance", "DeletionProtection", Flag::Bool),
    ("AWS::NeptuneGraph::Graph", "DeletionProtection", Flag::Bool),
    (
        "AWS::DynamoDB::Table",
        "DeletionProtectionEnabled",
        Flag::Bool,
    ),
    (
        "AWS::DynamoDB::GlobalTable",
        "DeletionProtectionEnabled",
        Flag::Bool,
    ),
    ("AWS::EC2::Instance", "DisableApiTermination", Flag::Bool),
    (
        "AWS::DSQL::Cluster",
        "DeletionProtectionEnabled",
        Flag::Bool,
    ),
    ("AWS::EKS::Cluster", "DeletionProtection", Flag::Bool),
    (
        "AWS::SMSVOICE::ProtectConfiguration",
        "DeletionProtectionEnabled",
        Flag::Bool,
    ),
    (
        "AWS::Cognito::UserPool",
        "DeletionProtection",
        Flag::ActiveInactive,
    ),
    (
        "AWS::VerifiedPermissions::PolicyStore",
        "DeletionProtection",
        Flag::Mode,
    ),
    (
        "AWS::AutoScaling::AutoScalingGroup",
        "DeletionProtection",
        Flag::AsgDeletion,
    ),
    (
        "AWS::ElasticLoadBalancingV2::LoadBalancer",
        "LoadBalancerAttributes",
        Flag::LoadBalancerAttribute,
    ),
];

const LB_KEY: &str = "deletion_protection.enabled";

/// The protection property and its kind for a type, if it has one.
pub fn flag(resource_type: &str) -> Option<(&'static str, Flag)> {
    PROTECTION_FLAGS
        .iter()
        .find(|(t, _, _)| *t == resource_type)
        .map(|(_, p, f)| (*p, *f))
}

impl Flag {
    fn value(self, on: bool) -> Value {
        match self {
            Flag::Bool => Value::Bool(on),
            Flag::ActiveInactive => json!(if on { "ACTIVE" } else { "INACTIVE" }),
            Flag::Mode => json!({"Mode": if on { "ENABLED" } else { "DISABLED" }}),
            Flag::AsgDeletion => json!(if on { "prevent-all-deletion" } else { "none" }),
            Flag::LoadBalancerAttribute => json!(if on { "true" } else { "false" }),
        }
    }
}

/// `properties` with the flag set on or off.
pub fn with_flag(
    properties: &Map<String, Value>,
    property: &str,
    flag: Flag,
    on: bool,
) -> Map<String, Value> {
    let mut out = properties.clone();
    let value = flag.value(on);
    if flag == Flag::LoadBalancerAttribute {
        let mut attributes: Vec<Value> = out
            .get(property)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        attributes.retain(|a| a.get("Key").and_then(Value::as_str) != Some(LB_KEY));
        attributes.push(json!({"Key": LB_KEY, "Value": value}));
        out.insert(property.to_owned(), Value::Array(attributes));
    } else {
        out.insert(property.to_owned(), value);
    }
    out
}

/// The protection property the record shows turned on, if any: AWS refuses the delete of
/// such a resource unless `--remove-protection` turns it off first.
pub fn recorded_on(rec: &ResourceState) -> Option<&'static str> {
    let (property, flag) = flag(&rec.resource_type)?;
    let value = rec.properties.get(property)?;
    let on = flag.value(true);
    let text = |v: &Value| match v {
        Value::String(s) => s.to_ascii_lowercase(),
        other => other.to_string().to_ascii_lowercase(),
    };
    let is_on = match flag {
        Flag::LoadBalancerAttribute => value.as_array().is_some_and(|entries| {
            entries.iter().any(|e| {
                e.get("Key").and_then(Value::as_str) == Some(LB_KEY)
                    && e.get("Value").is_some_and(|v| text(v) == "true")
            })
        }),
        Flag::Mode => value.get("Mode").and_then(Value::as_str) == Some("ENABLED"),
        _ => text(value) == text(&on),
    };
    is_on.then_some(property)
}

/// Turns the resource's deletion protection off, when its type has one. Never fails: the
/// delete that follows reports what AWS still refuses.
pub async fn turn_off(
    provider: &dyn Provider,
    ctx: &ProviderContext<'_>,
    logical_id: &str,
    rec: &ResourceState,
    physical_id: &str,
) {
    let Some((property, flag)) = flag(&rec.resource_type) else {
        return;
    };
    let on = with_flag(&rec.properties, property, flag, true);
    let off = with_flag(&rec.properties, property, flag, false);
    let req = ResourceRequest {
        logical_id,
        resource_type: &rec.resource_type,
        properties: &off,
        client_token: None,
    };
    match provider.update(ctx, &req, physical_id, &on).await {
        Ok(_) => ui::info(format!(
            "  {logical_id}: {property} turned off (--remove-protection)"
        )),
        Err(e) => ui::warn(format!(
            "{logical_id}: could not turn {property} off before the delete ({e}); deleting anyway"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_has_one_flag() {
        for (t, _, _) in PROTECTION_FLAGS {
            assert_eq!(
                PROTECTION_FLAGS.iter().filter(|(x, _, _)| x == t).count(),
                1,
                "{t}"
            );
        }
        assert_eq!(
            flag("AWS::RDS::DBInstance"),
            Some(("DeletionProtection", Flag::Bool))
        );
        assert_eq!(flag("AWS::SQS::Queue"), None);
    }

    #[test]
    fn the_flag_is_written_on_and_off_in_the_types_spelling() {
        let props = json!({"UserPoolName": "p"}).as_object().unwrap().clone();
        let off = with_flag(&props, "DeletionProtection", Flag::ActiveInactive, false);
        assert_eq!(off["DeletionProtection"], json!("INACTIVE"));
        assert_eq!(off["UserPoolName"], json!("p"));
        let on = with_flag(&props, "DeletionProtection", Flag::Mode, true);
        assert_eq!(on["DeletionProtection"], json!({"Mode": "ENABLED"}));
    }

    #[test]
    fn protection_the_record_shows_on_is_found() {
        let rec = |t: &str, props: Value| {
            ResourceState::new("p", t, props.as_object().cloned().unwrap_or_default())
        };
        let db = rec(
            "AWS::RDS::DBInstance",
            json!({"DeletionProtection": "true"}),
        );
        assert_eq!(recorded_on(&db), Some("DeletionProtection"));
        let off = rec("AWS::RDS::DBInstance", json!({"DeletionProtection": false}));
        assert_eq!(recorded_on(&off), None);
        let pool = rec(
            "AWS::Cognito::UserPool",
            json!({"DeletionProtection": "ACTIVE"}),
        );
        assert_eq!(recorded_on(&pool), Some("DeletionProtection"));
        let lb = rec(
            "AWS::ElasticLoadBalancingV2::LoadBalancer",
            json!({"LoadBalancerAttributes": [{"Key": "deletion_protection.enabled", "Value": "true"}]}),
        );
        assert_eq!(recorded_on(&lb), Some("LoadBalancerAttributes"));
        assert_eq!(recorded_on(&rec("AWS::SQS::Queue", json!({}))), None);
    }

    #[test]
    fn a_load_balancer_keeps_its_other_attributes() {
        let props = json!({"LoadBalancerAttributes": [
            {"Key": "idle_timeout.timeout_seconds", "Value": "60"},
            {"Key": "deletion_protection.enabled", "Value": "true"}
        ]})
        .as_object()
        .unwrap()
        .clone();
        let off = with_flag(
            &props,
            "LoadBalancerAttributes",
            Flag::LoadBalancerAttribute,
            false,
        );
        assert_eq!(
            off["LoadBalancerAttributes"],
            json!([
                {"Key": "idle_timeout.timeout_seconds", "Value": "60"},
                {"Key": "deletion_protection.enabled", "Value": "false"}
            ])
        );
    }
}
