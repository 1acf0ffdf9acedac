//! The `{Key, Value}` attribute lists of ELBv2 (`LoadBalancerAttributes`,
//! `TargetGroupAttributes`, `ListenerAttributes`), set through each type's own
//! Modify*Attributes call. That call changes only the keys it is sent, so an update sends the
//! new and changed keys plus, for each key the template dropped, the default AWS documents
//! for it; a dropped key with no single documented default keeps its live value (a warning
//! says so) rather than being set to a guess. Read-back lists the keys the template sets, in
//! its order, with their live values: AWS reports every attribute, most of them defaults.

use std::collections::HashMap;

use aws_sdk_elasticloadbalancingv2::types::{
    ListenerAttribute, LoadBalancerAttribute, Tag, TargetGroupAttribute,
};
use serde_json::{json, Map, Value};

use crate::provider::props::Props;
use crate::provider::sdk::scaffold::tags;
use crate::provider::sdk::with_properties;
use crate::provider::{ProviderError, ResourceRequest};

/// ELBv2's key / value shapes: each type's attributes, and tags.
pub(super) trait Pair {
    fn of(key: String, value: String) -> Self;
    fn key(&self) -> Option<&str>;
    fn value(&self) -> Option<&str>;
}

macro_rules! pair {
    ($($ty:ty),+) => {$(
        impl Pair for $ty {
            fn of(key: String, value: String) -> Self {
                <$ty>::builder().key(key).value(value).build()
            }
            fn key(&self) -> Option<&str> {
                <$ty>::key(self)
            }
            fn value(&self) -> Option<&str> {
                <$ty>::value(self)
            }
        }
    )+};
}
pair!(
    LoadBalancerAttribute,
    TargetGroupAttribute,
    ListenerAttribute,
    Tag
);

/// `(key, value)` pairs as ELBv2's request shape `P`.
pub(super) fn built<P: Pair>(pairs: impl IntoIterator<Item = (String, String)>) -> Vec<P> {
    pairs.into_iter().map(|(k, v)| P::of(k, v)).collect()
}

/// What a Describe* call answered, as `(key, value)` pairs.
pub(super) fn pairs_of<'a, P: Pair + 'a>(
    items: impl IntoIterator<Item = &'a P>,
) -> Vec<(String, String)> {
    items
        .into_iter()
        .filter_map(|p| {
            Some((
                p.key()?.to_owned(),
                p.value().unwrap_or_default().to_owned(),
            ))
        })
        .collect()
}

/// `$call` (a Modify*Attributes request on one resource) sent with `$pairs`, when there are
/// any: the one shape of the three attribute calls.
macro_rules! modify {
    ($req:expr, $arn:expr, $op:literal, $pairs:expr, $call:expr) => {{
        let pairs: Vec<(String, String)> = $pairs;
        if !pairs.is_empty() {
            $call
                .set_attributes(Some($crate::provider::sdk::elbv2::attributes::built(pairs)))
                .send()
                .await
                .map_err(|e| $crate::provider::sdk::elbv2::ELBV2.err($req, $op, $arn, &e))?;
        }
    }};
}
pub(super) use modify;

/// Documented defaults by attribute key.
pub(super) type Defaults = &'static [(&'static str, &'static str)];

/// Load balancer attributes with one documented default whatever the load balancer's type.
pub(super) const LOAD_BALANCER_DEFAULTS: Defaults = &[
    ("access_logs.s3.enabled", "false"),
    ("deletion_protection.enabled", "false"),
    ("idle_timeout.timeout_seconds", "60"),
    ("routing.http.desync_mitigation_mode", "defensive"),
    ("routing.http.drop_invalid_header_fields.enabled", "false"),
    ("routing.http.preserve_host_header.enabled", "false"),
    (
        "routing.http.x_amzn_tls_version_and_cipher_suite.enabled",
        "false",
    ),
    ("routing.http.xff_client_port.enabled", "false"),
    ("routing.http.xff_header_processing.mode", "append"),
    ("routing.http2.enabled", "true"),
    ("waf.fail_open.enabled", "false"),
    ("client_keep_alive.seconds", "3600"),
];

/// Target group attributes with one documented default whatever the target type.
pub(super) const TARGET_GROUP_DEFAULTS: Defaults = &[
    ("deregistration_delay.timeout_seconds", "300"),
    ("stickiness.enabled", "false"),
    ("stickiness.lb_cookie.duration_seconds", "86400"),
    ("stickiness.app_cookie.duration_seconds", "86400"),
    ("load_balancing.algorithm.type", "round_robin"),
    ("slow_start.duration_seconds", "0"),
    ("lambda.multi_value_headers.enabled", "false"),
    ("proxy_protocol_v2.enabled", "false"),
];

/// Listener attributes with a documented default.
pub(super) const LISTENER_DEFAULTS: Defaults = &[("routing.http.response.server.enabled", "true")];

/// The pairs the template sets under `name`, for a create.
pub(super) fn asked(
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<Vec<(String, String)>, ProviderError> {
    Props::new(req).tags_at(name)
}

/// The pairs an update sends to move `name` from `previous` to the request's.
pub(super) fn to_send(
    req: &ResourceRequest<'_>,
    previous: &Map<String, Value>,
    name: &str,
    defaults: Defaults,
) -> Result<Vec<(String, String)>, ProviderError> {
    let before = with_properties(req, previous);
    let tags::TagChanges { set, remove } =
        tags::list_changes(&Props::new(&before).tags_at(name)?, &asked(req, name)?);
    let mut out: Vec<(String, String)> = set.into_iter().collect();
    for key in remove {
        match defaults.iter().find(|(k, _)| *k == key) {
            Some((_, default)) => out.push((key, (*default).to_owned())),
            None => crate::ui::warn(format!(
                "{} ({}): {name} {key} was removed from the template but has no single \
                 documented default, so its live value is kept; set it explicitly to change it",
                req.logical_id, req.resource_type
            )),
        }
    }
    Ok(out)
}

/// The keys the template sets under `name`, with their `live` values, into `props`.
pub(super) fn read_into(
    props: &mut Map<String, Value>,
    req: &ResourceRequest<'_>,
    name: &str,
    live: impl IntoIterator<Item = (String, String)>,
) -> Result<(), ProviderError> {
    let live: HashMap<String, String> = live.into_iter().collect();
    let listed: Vec<Value> = asked(req, name)?
        .into_iter()
        .filter_map(|(k, _)| live.get(&k).map(|v| json!({"Key": k, "Value": v})))
        .collect();
    if !listed.is_empty() {
        props.insert(name.to_owned(), Value::Array(listed));
    }
    Ok(())
}
