//! `load-balancer` and `load-balancer-listener`: an Application or Network Load Balancer (and
//! one of its listeners) found by ARN or by tags (`ApplicationLoadBalancer.fromLookup`,
//! `ApplicationListener.fromLookup`, and the network ones).

use aws_config::SdkConfig;
use aws_sdk_elasticloadbalancingv2::types::{Listener, LoadBalancer};
use aws_sdk_elasticloadbalancingv2::Client;
use serde_json::{json, Value};

use super::query::{LookupError, Query};

/// DescribeTags takes at most 20 ARNs per call.
const TAG_BATCH: usize = 20;

pub async fn lookup_load_balancer(
    config: &SdkConfig,
    query: Query<'_>,
) -> Result<Value, LookupError> {
    if query.get("loadBalancerArn").is_none() && query.get("loadBalancerTags").is_none() {
        return Err(LookupError::failed(
            "The load balancer lookup query must specify either `loadBalancerArn` or `loadBalancerTags`.",
        ));
    }
    let client = Client::new(config);
    let found = load_balancers(&client, query).await?;
    let lb = match found.as_slice() {
        [] => {
            return Err(LookupError::not_found(format!(
                "No load balancers found matching {}",
                query.json()
            )))
        }
        [one] => one,
        _ => {
            return Err(LookupError::failed(format!(
                "Multiple load balancers found matching {} - please provide more specific criteria",
                query.json()
            )))
        }
    };
    let ip_type = match lb.ip_address_type().map(|t| t.as_str()) {
        Some("ipv4") => "ipv4",
        Some("dualstack-without-public-ipv4") => "dualstack-without-public-ipv4",
        _ => "dualstack",
    };
    Ok(json!({
        "loadBalancerArn": lb.load_balancer_arn().unwrap_or_default(),
        "loadBalancerCanonicalHostedZoneId": lb.canonical_hosted_zone_id().unwrap_or_default(),
        "loadBalancerDnsName": lb.dns_name().unwrap_or_default(),
        "vpcId": lb.vpc_id().unwrap_or_default(),
        "securityGroupIds": lb.security_groups(),
        "ipAddressType": ip_type,
    }))
}

pub async fn lookup_listener(config: &SdkConfig, query: Query<'_>) -> Result<Value, LookupError> {
    let listener_arn = query.opt_str("listenerArn")?;
    if listener_arn.is_none()
        && query.get("loadBalancerArn").is_none()
        && query.get("loadBalancerTags").is_none()
    {
        return Err(LookupError::failed(
            "The load balancer listener query must specify at least one of: `listenerArn`, `loadBalancerArn` or `loadBalancerTags`",
        ));
    }
    let client = Client::new(config);
    if let Some(arn) = listener_arn {
        let listener = client
            .describe_listeners()
            .listener_arns(arn)
            .send()
            .await
            .ok()
            .and_then(|out| out.listeners.unwrap_or_default().into_iter().next())
            .ok_or_else(|| {
                LookupError::not_found(format!(
                    "No load balancer listeners found matching arn {arn}"
                ))
            })?;
        let lb_arn = listener.load_balancer_arn().unwrap_or_default();
        let groups = client
            .describe_load_balancers()
            .load_balancer_arns(lb_arn)
            .send()
            .await
            .map_err(|e| {
                LookupError::call("elasticloadbalancing", "DescribeLoadBalancers", lb_arn, &e)
            })?
            .load_balancers()
            .first()
            .map(|lb| lb.security_groups().to_vec())
            .unwrap_or_default();
        return Ok(listener_answer(&listener, &groups));
    }
    let lbs = load_balancers(&client, query).await?;
    if lbs.is_empty() {
        return Err(LookupError::not_found(format!(
            "No associated load balancers found for load balancer listener query {}",
            query.json()
        )));
    }
    let port = match query.get("listenerPort") {
        None => None,
        Some(v) => Some(v.as_i64().ok_or_else(|| {
            LookupError::failed(
                "the load-balancer-listener lookup query's `listenerPort` must be a number",
            )
        })?),
    };
    let protocol = query.opt_str("listenerProtocol")?;
    let mut matching = Vec::new();
    for lb in &lbs {
        for listener in listeners_of(&client, lb.load_balancer_arn().unwrap_or_default()).await? {
            let port_ok = port.is_none_or(|p| listener.port().map(i64::from) == Some(p));
            let protocol_ok =
                protocol.is_none_or(|p| listener.protocol().map(|x| x.as_str()) == Some(p));
            if port_ok && protocol_ok {
                matching.push((listener, lb));
            }
        }
    }
    match matching.as_slice() {
        [] => Err(LookupError::not_found(format!(
            "No load balancer listeners found matching {}",
            query.json()
        ))),
        [(listener, lb)] => Ok(listener_answer(listener, lb.security_groups())),
        _ => Err(LookupError::failed(format!(
            "Multiple load balancer listeners found matching {} - please provide more specific criteria",
            query.json()
        ))),
    }
}

fn listener_answer(listener: &Listener, security_groups: &[String]) -> Value {
    json!({
        "listenerArn": listener.listener_arn().unwrap_or_default(),
        "listenerPort": listener.port().unwrap_or_default(),
        "securityGroupIds": security_groups,
    })
}

/// The load balancers of the query's type, by ARN when it names one, filtered by its tags.
async fn load_balancers(
    client: &Client,
    query: Query<'_>,
) -> Result<Vec<LoadBalancer>, LookupError> {
    let kind = query.str("loadBalancerType")?;
    let arn = query.opt_str("loadBalancerArn")?;
    let mut all = Vec::new();
    let mut marker = None;
    loop {
        let out = client
            .describe_load_balancers()
            .set_load_balancer_arns(arn.map(|a| vec![a.to_owned()]))
            .set_marker(marker)
            .send()
            .await
            .map_err(|e| {
                LookupError::call(
                    "elasticloadbalancing",
                    "DescribeLoadBalancers",
                    query.json(),
                    &e,
                )
            })?;
        all.extend(out.load_balancers.unwrap_or_default());
        marker = out.next_marker.filter(|m| !m.is_empty());
        if marker.is_none() {
            break;
        }
    }
    all.retain(|lb| lb.r#type().map(|t| t.as_str()) == Some(kind));
    let Some(tags) = query.get("loadBalancerTags") else {
        return Ok(all);
    };
    let wanted = parse_tags(tags)?;
    let arns: Vec<String> = all
        .iter()
        .filter_map(|lb| lb.load_balancer_arn().map(str::to_owned))
        .collect();
    let mut keep = Vec::new();
    for batch in arns.chunks(TAG_BATCH) {
        let out = client
            .describe_tags()
            .set_resource_arns(Some(batch.to_vec()))
            .send()
            .await
            .map_err(|e| {
                LookupError::call("elasticloadbalancing", "DescribeTags", batch.join(","), &e)
            })?;
        for description in out.tag_descriptions() {
            let has_all = wanted.iter().all(|(k, v)| {
                description
                    .tags()
                    .iter()
                    .any(|t| t.key() == Some(k.as_str()) && t.value() == Some(v.as_str()))
            });
            if has_all {
                keep.extend(description.resource_arn().map(str::to_owned));
            }
        }
    }
    all.retain(|lb| {
        lb.load_balancer_arn()
            .is_some_and(|a| keep.iter().any(|k| k == a))
    });
    Ok(all)
}

/// `[{key, value}]` as the query writes tags.
fn parse_tags(tags: &Value) -> Result<Vec<(String, String)>, LookupError> {
    let bad = || {
        LookupError::failed(
            "the load balancer lookup query's `loadBalancerTags` must be a list of {key, value}",
        )
    };
    tags.as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|t| {
            Some((
                t.get("key")?.as_str()?.to_owned(),
                t.get("value")?.as_str()?.to_owned(),
            ))
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(bad)
}

async fn listeners_of(client: &Client, lb_arn: &str) -> Result<Vec<Listener>, LookupError> {
    let mut all = Vec::new();
    let mut marker = None;
    loop {
        let out = client
            .describe_listeners()
            .load_balancer_arn(lb_arn)
            .set_marker(marker)
            .send()
            .await
            .map_err(|e| {
                LookupError::call("elasticloadbalancing", "DescribeListeners", lb_arn, &e)
            })?;
        all.extend(out.listeners.unwrap_or_default());
        marker = out.next_marker.filter(|m| !m.is_empty());
        if marker.is_none() {
            return Ok(all);
        }
    }
}
