//! `AWS::Route53::RecordSet`: one record set of a hosted zone, written with
//! ChangeResourceRecordSets (CREATE on create, so a record someone else owns is never taken
//! over; UPSERT on update; DELETE of the set as Route 53 holds it, which that call requires
//! exactly).
//!
//! Physical id: the primary identifier joined with `|`, `<Name>|<HostedZoneId>|<Type>|<SetIdentifier>`
//! (the last part empty for a simple record); `Ref` is the `Name` part, as the template wrote
//! it. The zone is `HostedZoneId`, or the one zone named `HostedZoneName`. `Name`, `Type`,
//! `SetIdentifier` and the zone replace the record set; the rest changes in place.

use aws_sdk_route53::types::{
    AliasTarget, Change, ChangeAction, ChangeBatch, ResourceRecord, ResourceRecordSet,
    ResourceRecordSetFailover, ResourceRecordSetRegion, RrType,
};
use aws_sdk_route53::Client;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use serde_json::{json, Map, Value};

use super::{as_written, bare_zone_id, canonical_name, ROUTE53};
use crate::aws::error_code;
use crate::provider::props::Props;
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control).
pub(super) const PROPERTIES: &[&str] = &[
    "AliasTarget",
    "Comment",
    "Failover",
    "HealthCheckId",
    "HostedZoneId",
    "HostedZoneName",
    "MultiValueAnswer",
    "Name",
    "Region",
    "ResourceRecords",
    "SetIdentifier",
    "TTL",
    "Type",
    "Weight",
];

/// What names a record set within its zone besides the zone (Route 53 cannot rename one).
const IDENTITY: &[&str] = &["Name", "Type", "SetIdentifier"];

/// A record set's physical id, split.
struct RecordId<'a> {
    name: &'a str,
    zone: &'a str,
    kind: &'a str,
    set_identifier: Option<&'a str>,
}

fn parse_id<'a>(req: &ResourceRequest<'_>, id: &'a str) -> Result<RecordId<'a>, ProviderError> {
    let mut parts = id.splitn(4, '|');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(name), Some(zone), Some(kind), rest) if !name.is_empty() && !zone.is_empty() => {
            Ok(RecordId {
                name,
                zone,
                kind,
                set_identifier: rest.filter(|s| !s.is_empty()),
            })
        }
        _ => Err(ProviderError::failed(
            req,
            format!("{id} is not a record set id (NAME|ZONE|TYPE|SETIDENTIFIER); check the record"),
        )),
    }
}

/// The zone the template names: `HostedZoneId`, or the single zone called `HostedZoneName`.
async fn zone_of(client: &Client, req: &ResourceRequest<'_>) -> Result<String, ProviderError> {
    let props = Props::new(req);
    if let Some(id) = props.str("HostedZoneId")? {
        return Ok(bare_zone_id(&id).to_owned());
    }
    let Some(name) = props.str("HostedZoneName")? else {
        return Err(ProviderError::missing(req, "HostedZoneId"));
    };
    let out = client
        .list_hosted_zones_by_name()
        .dns_name(&name)
        .send()
        .await
        .map_err(|e| ROUTE53.err(req, "ListHostedZonesByName", &name, &e))?;
    let matching: Vec<&str> = out
        .hosted_zones()
        .iter()
        .filter(|z| canonical_name(z.name()) == canonical_name(&name))
        .map(|z| bare_zone_id(z.id()))
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(ProviderError::failed(
            req,
            format!("no hosted zone is named {name}; check HostedZoneName"),
        )),
        many => Err(ProviderError::failed(
            req,
            format!(
                "{} hosted zones are named {name} ({}); give HostedZoneId instead",
                many.len(),
                many.join(", ")
            ),
        )),
    }
}

fn built<T, E: std::fmt::Display>(
    req: &ResourceRequest<'_>,
    r: Result<T, E>,
) -> Result<T, ProviderError> {
    r.map_err(|e| ProviderError::failed(req, format!("invalid record set: {e}")))
}

/// The record set the template describes.
fn desired(req: &ResourceRequest<'_>) -> Result<ResourceRecordSet, ProviderError> {
    let props = Props::new(req);
    let alias = match props.object("AliasTarget")? {
        Some(a) => {
            let text = |k: &str| a.get(k).and_then(Value::as_str).map(str::to_owned);
            let evaluate = match a.get("EvaluateTargetHealth") {
                Some(Value::Bool(b)) => *b,
                Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
                _ => false,
            };
            Some(built(
                req,
                AliasTarget::builder()
                    .set_dns_name(text("DNSName"))
                    .set_hosted_zone_id(text("HostedZoneId"))
                    .evaluate_target_health(evaluate)
                    .build(),
            )?)
        }
        None => None,
    };
    let records = props
        .strings("ResourceRecords")?
        .into_iter()
        .map(|v| built(req, ResourceRecord::builder().value(v).build()))
        .collect::<Result<Vec<_>, _>>()?;
    built(
        req,
        ResourceRecordSet::builder()
            .name(props.required_str("Name")?)
            .r#type(RrType::from(props.required_str("Type")?.as_str()))
            .set_ttl(props.i64("TTL")?)
            .set_resource_records((!records.is_empty()).then_some(records))
            .set_alias_target(alias)
            .set_set_identifier(props.str("SetIdentifier")?)
            .set_weight(props.i64("Weight")?)
            .set_region(
                props
                    .str("Region")?
                    .map(|r| ResourceRecordSetRegion::from(r.as_str())),
            )
            .set_failover(
                props
                    .str("Failover")?
                    .map(|f| ResourceRecordSetFailover::from(f.as_str())),
            )
            .set_multi_value_answer(props.bool("MultiValueAnswer")?)
            .set_health_check_id(props.str("HealthCheckId")?)
            .build(),
    )
}

/// One change of one record set, with the template's `Comment`.
fn batch(
    req: &ResourceRequest<'_>,
    action: ChangeAction,
    set: ResourceRecordSet,
) -> Result<ChangeBatch, ProviderError> {
    let one = built(
        req,
        Change::builder()
            .action(action)
            .resource_record_set(set)
            .build(),
    )?;
    built(
        req,
        ChangeBatch::builder()
            .changes(one)
            .set_comment(Props::new(req).str("Comment")?)
            .build(),
    )
}

/// The record set as Route 53 holds it; `None` when it does not exist (or its zone does not).
async fn live(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &RecordId<'_>,
) -> Result<Option<ResourceRecordSet>, ProviderError> {
    let listed = ROUTE53.unless_gone(
        client
            .list_resource_record_sets()
            .hosted_zone_id(id.zone)
            .start_record_name(id.name)
            .start_record_type(RrType::from(id.kind))
            .set_start_record_identifier(id.set_identifier.map(str::to_owned))
            .max_items(100)
            .send()
            .await,
        req,
        "ListResourceRecordSets",
        id.zone,
    )?;
    Ok(listed.and_then(|out| {
        out.resource_record_sets()
            .iter()
            .find(|s| {
                canonical_name(s.name()) == canonical_name(id.name)
                    && s.r#type().as_str() == id.kind
                    && s.set_identifier() == id.set_identifier
            })
            .cloned()
    }))
}

fn physical_id(req: &ResourceRequest<'_>, zone: &str) -> Result<String, ProviderError> {
    let props = Props::new(req);
    Ok(format!(
        "{}|{zone}|{}|{}",
        props.required_str("Name")?,
        props.required_str("Type")?,
        props.str("SetIdentifier")?.unwrap_or_default()
    ))
}

pub(super) async fn provisioned_of(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    let parsed = parse_id(req, id)?;
    Ok(live(client, req, &parsed)
        .await?
        .map(|_| provisioned(id, &[])))
}

pub(super) async fn create(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let zone = zone_of(client, req).await?;
    let id = physical_id(req, &zone)?;
    client
        .change_resource_record_sets()
        .hosted_zone_id(&zone)
        .change_batch(batch(req, ChangeAction::Create, desired(req)?)?)
        .send()
        .await
        .map_err(|e| ROUTE53.err(req, "ChangeResourceRecordSets", &id, &e))?;
    Ok(provisioned(id, &[]))
}

pub(super) async fn update(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    if let Some(replace) = create_only_change(req, previous, IDENTITY) {
        return Ok(replace);
    }
    let zone = parse_id(req, id)?.zone.to_owned();
    client
        .change_resource_record_sets()
        .hosted_zone_id(&zone)
        .change_batch(batch(req, ChangeAction::Upsert, desired(req)?)?)
        .send()
        .await
        .map_err(|e| ROUTE53.err(req, "ChangeResourceRecordSets", id, &e))?;
    Ok(UpdateOutcome::Updated(provisioned(id, &[])))
}

pub(super) async fn delete(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    let parsed = parse_id(req, id)?;
    let Some(set) = live(client, req, &parsed).await? else {
        return Ok(());
    };
    let sent = client
        .change_resource_record_sets()
        .hosted_zone_id(parsed.zone)
        .change_batch(batch(req, ChangeAction::Delete, set)?)
        .send()
        .await;
    match sent {
        // Gone between the read and the delete: Route 53 says the set "was not found".
        Err(e)
            if error_code(&e) == Some("InvalidChangeBatch")
                && e.as_service_error()
                    .and_then(ProvideErrorMetadata::message)
                    .is_some_and(|m| m.contains("not found")) =>
        {
            Ok(())
        }
        other => ROUTE53
            .unless_gone(other, req, "ChangeResourceRecordSets", id)
            .map(|_| ()),
    }
}

pub(super) async fn read(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let parsed = parse_id(req, id)?;
    let Some(set) = live(client, req, &parsed).await? else {
        return Ok(None);
    };
    let template = req.properties;
    let mut props = Map::new();
    let written = |k: &str| template.get(k).and_then(Value::as_str);
    props.insert(
        "Name".into(),
        json!(as_written(set.name(), written("Name"))),
    );
    props.insert("Type".into(), json!(set.r#type().as_str()));
    match (written("HostedZoneName"), written("HostedZoneId")) {
        (Some(n), None) => props.insert("HostedZoneName".into(), json!(n)),
        (_, Some(z)) if bare_zone_id(z) == parsed.zone => {
            props.insert("HostedZoneId".into(), json!(z))
        }
        _ => props.insert("HostedZoneId".into(), json!(parsed.zone)),
    };
    if let Some(ttl) = set.ttl() {
        // CloudFormation types TTL as a string; it reads back in the template's JSON type.
        let value = if template.get("TTL").is_some_and(Value::is_string) {
            json!(ttl.to_string())
        } else {
            json!(ttl)
        };
        props.insert("TTL".into(), value);
    }
    let records: Vec<&str> = set.resource_records().iter().map(|r| r.value()).collect();
    if !records.is_empty() {
        props.insert("ResourceRecords".into(), json!(records));
    }
    if let Some(a) = set.alias_target() {
        let asked = template.get("AliasTarget");
        let dns = as_written(a.dns_name(), asked.and_then(|t| t["DNSName"].as_str()));
        props.insert(
            "AliasTarget".into(),
            json!({"DNSName": dns, "HostedZoneId": a.hosted_zone_id(), "EvaluateTargetHealth": a.evaluate_target_health()}),
        );
    }
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            props.insert(k.to_owned(), v);
        }
    };
    put("SetIdentifier", set.set_identifier().map(|s| json!(s)));
    put("Weight", set.weight().map(|w| json!(w)));
    put("Region", set.region().map(|r| json!(r.as_str())));
    put("Failover", set.failover().map(|f| json!(f.as_str())));
    put(
        "MultiValueAnswer",
        set.multi_value_answer().map(|m| json!(m)),
    );
    put("HealthCheckId", set.health_check_id().map(|h| json!(h)));
    // `Comment` is write-only: the record keeps what was sent.
    put("Comment", template.get("Comment").cloned());
    Ok(Some(props))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_name_zone_type_and_set_identifier() {
        let props = Map::new();
        let req = ResourceRequest {
            logical_id: "R",
            resource_type: "AWS::Route53::RecordSet",
            properties: &props,
            client_token: None,
        };
        let id = parse_id(&req, "www.example.com.|Z1|A|").expect("parsed");
        assert_eq!(
            (id.name, id.zone, id.kind, id.set_identifier),
            ("www.example.com.", "Z1", "A", None)
        );
        let id = parse_id(&req, "a.example.com|Z1|CNAME|blue").expect("parsed");
        assert_eq!(id.set_identifier, Some("blue"));
        assert!(parse_id(&req, "www.example.com").is_err());
    }
}
