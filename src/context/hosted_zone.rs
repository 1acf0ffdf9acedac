//! `hosted-zone`: the one Route 53 zone named `domainName` (`HostedZone.fromLookup`), public
//! or private (and then associated with `vpcId` when the query names one). The answer is
//! `{Id, Name}` as Route 53 spells them (`/hostedzone/Z…`, `example.com.`).

use aws_config::SdkConfig;
use serde_json::{json, Value};

use super::query::{LookupError, Query};

pub async fn lookup(config: &SdkConfig, query: Query<'_>) -> Result<Value, LookupError> {
    let domain = query.str("domainName")?;
    let private = query.opt_bool("privateZone")?.unwrap_or(false);
    let vpc_id = query.opt_str("vpcId")?;
    let r53 = aws_sdk_route53::Client::new(config);
    let out = r53
        .list_hosted_zones_by_name()
        .dns_name(domain)
        .send()
        .await
        .map_err(|e| LookupError::call("route53", "ListHostedZonesByName", domain, &e))?;
    let wanted = if domain.ends_with('.') {
        domain.to_owned()
    } else {
        format!("{domain}.")
    };
    let mut candidates: Vec<(String, String)> = out
        .hosted_zones()
        .iter()
        .filter(|z| z.name() == wanted)
        .filter(|z| z.config().is_some_and(|c| c.private_zone()) == private)
        .map(|z| (z.id().to_owned(), z.name().to_owned()))
        .collect();
    if let Some(vpc_id) = vpc_id {
        let mut in_vpc = Vec::new();
        for (id, name) in candidates {
            let zone = r53
                .get_hosted_zone()
                .id(&id)
                .send()
                .await
                .map_err(|e| LookupError::call("route53", "GetHostedZone", id.clone(), &e))?;
            if zone.vpcs().iter().any(|v| v.vpc_id() == Some(vpc_id)) {
                in_vpc.push((id, name));
            }
        }
        candidates = in_vpc;
    }
    match candidates.as_slice() {
        [(id, name)] => Ok(json!({"Id": id, "Name": name})),
        found => {
            let listed: Vec<Value> = found
                .iter()
                .map(|(id, name)| json!({"Id": id, "Name": name}))
                .collect();
            let message = format!(
                "Found zones: {} for dns:{domain}, privateZone:{private}, vpcId:{}, but wanted exactly 1 zone",
                Value::Array(listed),
                vpc_id.unwrap_or("undefined")
            );
            Err(if found.is_empty() {
                LookupError::NotFound(message)
            } else {
                LookupError::Failed(message)
            })
        }
    }
}
