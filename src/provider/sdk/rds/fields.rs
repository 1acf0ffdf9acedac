//! The property maps of the database types: each CloudFormation property that is one field
//! of RDS's create or modify request, as a table entry (`field!(int "Iops" => set_iops)`), so
//! an instance and a cluster are their tables plus what is particular (identifiers, logs
//! exports, the managed password's key, waits). An update sends only the properties that
//! moved; one the template dropped is not sent (RDS keeps its live value, and a warning says
//! so: RDS has no "reset to default" for most of these fields).

use crate::provider::props::{changed, Props};
use crate::provider::{ProviderError, ResourceRequest};
use serde_json::{Map, Value};

/// One property: its CloudFormation name and how it sets the request builder `B`.
pub(super) type Field<B> = (
    &'static str,
    for<'p> fn(B, &Props<'p>) -> Result<B, ProviderError>,
);

/// `field!(kind "Name" => setter)`: the property `Name`, read as `kind` (`text`, `int`,
/// `flag`, `list`), into the builder's `setter`.
macro_rules! field {
    ($kind:ident $name:literal => $setter:ident) => {
        ($name, |b, p| {
            Ok(b.$setter($crate::provider::sdk::rds::fields::$kind(p, $name)?))
        })
    };
}
pub(super) use field;

pub(super) fn text(p: &Props<'_>, name: &str) -> Result<Option<String>, ProviderError> {
    p.str(name)
}

pub(super) fn flag(p: &Props<'_>, name: &str) -> Result<Option<bool>, ProviderError> {
    p.bool(name)
}

/// An integer RDS takes as 32 bits (CloudFormation writes many as strings: `"100"`).
pub(super) fn int(p: &Props<'_>, name: &str) -> Result<Option<i32>, ProviderError> {
    p.i64(name)?
        .map(|n| i32::try_from(n).map_err(|_| p.failed(format!("property {name} is out of range"))))
        .transpose()
}

/// A list of strings; `None` when absent or empty.
pub(super) fn list(p: &Props<'_>, name: &str) -> Result<Option<Vec<String>>, ProviderError> {
    let l = p.strings(name)?;
    Ok((!l.is_empty()).then_some(l))
}

/// `MasterUserSecret.KmsKeyId`: the key of the secret RDS manages for the master password.
pub(super) fn secret_key(p: &Props<'_>) -> Result<Option<String>, ProviderError> {
    match p.object("MasterUserSecret")? {
        None => Ok(None),
        Some(o) => Ok(o.get("KmsKeyId").and_then(Value::as_str).map(str::to_owned)),
    }
}

/// Every name of `table`, then `others`.
pub(super) fn names<B>(table: &[Field<B>], others: &[&'static str]) -> Vec<&'static str> {
    table
        .iter()
        .map(|(n, _)| *n)
        .chain(others.iter().copied())
        .collect()
}

/// `builder` with every property of `table` the request sets.
pub(super) fn create<B>(
    req: &ResourceRequest<'_>,
    table: &[Field<B>],
    mut builder: B,
) -> Result<B, ProviderError> {
    let props = Props::new(req);
    for (_, set) in table {
        builder = set(builder, &props)?;
    }
    Ok(builder)
}

/// `builder` with every property of `table` that moved from `previous`, and whether any did.
pub(super) fn modify<B>(
    req: &ResourceRequest<'_>,
    previous: &Map<String, Value>,
    table: &[Field<B>],
    mut builder: B,
) -> Result<(B, bool), ProviderError> {
    let props = Props::new(req);
    let mut any = false;
    for (name, set) in table {
        if !changed(previous, req.properties, name) {
            continue;
        }
        any = true;
        if props.get(name).is_none() {
            crate::ui::warn(format!(
                "{} ({}): {name} was removed from the template; RDS keeps its live value: set \
                 it explicitly to change it",
                req.logical_id, req.resource_type
            ));
        }
        builder = set(builder, &props)?;
    }
    Ok((builder, any))
}

/// What `EnableCloudwatchLogsExports` moved: (log types to enable, log types to disable).
pub(super) fn logs_moved(
    req: &ResourceRequest<'_>,
    previous: &Map<String, Value>,
) -> Result<Option<(Vec<String>, Vec<String>)>, ProviderError> {
    const NAME: &str = "EnableCloudwatchLogsExports";
    if !changed(previous, req.properties, NAME) {
        return Ok(None);
    }
    let before_req = crate::provider::sdk::with_properties(req, previous);
    let before = Props::new(&before_req).strings(NAME)?;
    let after = Props::new(req).strings(NAME)?;
    let enable = after
        .iter()
        .filter(|l| !before.contains(l))
        .cloned()
        .collect();
    let disable = before
        .iter()
        .filter(|l| !after.contains(l))
        .cloned()
        .collect();
    Ok(Some((enable, disable)))
}
