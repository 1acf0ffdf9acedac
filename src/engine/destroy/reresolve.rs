//! A custom resource's Delete under `cdkd destroy` with the app: its record holds `***` where
//! a NoEcho parameter filled a property, and its handler must not receive the mask, so each
//! such position is re-resolved from today's template, in memory only (state-schema, "Custom
//! resources that read a NoEcho parameter").
//!
//! cdkd re-resolves only what it can prove stands for the same value: the record names the
//! position in `noEchoLeaves`, today's template still has the resource (same logical id and
//! type, no Transform) and reads, at exactly that position, a `Ref` to one of its NoEcho
//! parameters whose value destroy can bind (its Default: destroy takes no parameter values).
//! Anything else (an expression around the parameter, a masked-property fingerprint destroy
//! cannot recompute, a position the record does not name) leaves the delete skipped, as
//! before.

use serde_json::{Map, Value};

use crate::redact::positions::{get_at, get_at_mut};
use crate::redact::MASK;
use crate::state::{PathSegment, ResourceState};
use crate::template::Template;

/// `rec` with every masked position filled from `template`, or why that cannot be done.
pub(super) fn reresolve(
    template: &Template,
    id: &str,
    rec: &ResourceState,
) -> Result<ResourceState, String> {
    let Some(res) = template.resources.get(id) else {
        return Err("the app's template no longer holds it".into());
    };
    if res.type_ != rec.resource_type {
        return Err(format!(
            "the app's template declares it as {}, not {}",
            res.type_, rec.resource_type
        ));
    }
    if template.transform.is_some() {
        return Err("the template carries a Transform, which destroy does not expand".into());
    }
    let named: &[Vec<PathSegment>] = rec.no_echo_leaves.as_deref().unwrap_or_default();
    let mut properties = Value::Object(rec.properties.clone());
    let mut masked = Vec::new();
    masked_leaves(&properties, &mut Vec::new(), &mut masked);
    let template_props = Value::Object(res.properties.clone());
    for leaf in masked {
        if !named.contains(&leaf) {
            return Err(
                "the record holds '***' at a position its noEchoLeaves does not name".into(),
            );
        }
        let top = match leaf.first() {
            Some(PathSegment::Key(k)) => k.as_str(),
            _ => return Err("a masked position is not under a property".into()),
        };
        let hashed =
            |m: Option<&indexmap::IndexMap<String, String>>| m.is_some_and(|m| m.contains_key(top));
        if hashed(rec.masked_property_fingerprints())
            || hashed(rec.masked_property_input_fingerprints())
        {
            return Err(format!(
                "the record holds fingerprints of {top} that destroy cannot recompute"
            ));
        }
        let value = bound_no_echo_ref(template, get_at(&template_props, &leaf))?;
        let Some(slot) = get_at_mut(&mut properties, &leaf) else {
            return Err("a masked position is missing from the record".into());
        };
        *slot = Value::String(value);
    }
    let mut out = rec.clone();
    out.properties = match properties {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    Ok(out)
}

/// The value of the NoEcho parameter `at` reads with a plain `Ref`, bound as destroy can
/// bind it (the parameter's Default).
fn bound_no_echo_ref(template: &Template, at: Option<&Value>) -> Result<String, String> {
    let name = at
        .and_then(Value::as_object)
        .filter(|m| m.len() == 1)
        .and_then(|m| m.get("Ref"))
        .and_then(Value::as_str)
        .ok_or("today's template does not read a NoEcho parameter by a plain Ref there")?;
    let param = template
        .parameters
        .get(name)
        .filter(|p| p.no_echo)
        .ok_or_else(|| format!("{name}, read there, is not a NoEcho parameter of the template"))?;
    match &param.default {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        _ => Err(format!(
            "the NoEcho parameter {name} has no Default, and destroy takes no parameter values"
        )),
    }
}

/// The paths of the string leaves of `v` that are exactly the mask.
fn masked_leaves(v: &Value, at: &mut Vec<PathSegment>, out: &mut Vec<Vec<PathSegment>>) {
    match v {
        Value::String(s) if s == MASK => out.push(at.clone()),
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                at.push(PathSegment::Index(i as u64));
                masked_leaves(x, at, out);
                at.pop();
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                at.push(PathSegment::Key(k.clone()));
                masked_leaves(x, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(default: Value, read: Value) -> Template {
        let t = json!({
            "Parameters": {"Pass": {"Type": "String", "NoEcho": true, "Default": default}},
            "Resources": {"Keeper": {"Type": "Custom::Keeper", "Properties": {
                "ServiceToken": "arn:aws:lambda:us-east-1:1:function:f", "Password": read}}}
        });
        crate::template::parse_template(&t.to_string(), std::path::Path::new("t.json"))
            .expect("template")
    }

    fn record(leaves: Value) -> ResourceState {
        serde_json::from_value(json!({
            "resourceType": "Custom::Keeper", "physicalId": "k-1",
            "properties": {"ServiceToken": "arn:aws:lambda:us-east-1:1:function:f",
                "Password": "***"},
            "noEchoLeaves": leaves
        }))
        .expect("record")
    }

    #[test]
    fn a_named_ref_position_is_filled_from_the_default_and_nothing_else_is() {
        let t = template(json!("hunter22"), json!({"Ref": "Pass"}));
        let got = reresolve(&t, "Keeper", &record(json!([["Password"]]))).expect("resolved");
        assert_eq!(got.properties["Password"], json!("hunter22"));
        assert_eq!(got.physical_id.as_deref(), Some("k-1"));

        let unnamed = reresolve(&t, "Keeper", &record(json!([]))).unwrap_err();
        assert!(unnamed.contains("noEchoLeaves does not name"), "{unnamed}");

        let t = template(json!("hunter22"), json!({"Fn::Sub": "p=${Pass}"}));
        let expr = reresolve(&t, "Keeper", &record(json!([["Password"]]))).unwrap_err();
        assert!(expr.contains("plain Ref"), "{expr}");

        let mut other = record(json!([["Password"]]));
        other.resource_type = "Custom::Other".into();
        let t = template(json!("hunter22"), json!({"Ref": "Pass"}));
        assert!(reresolve(&t, "Keeper", &other)
            .unwrap_err()
            .contains("declares it as Custom::Keeper"));
        assert!(reresolve(&t, "Gone", &record(json!([["Password"]])))
            .unwrap_err()
            .contains("no longer holds it"));
    }
}
