//! `AWS::Route53::HostedZone`: physical id and `Ref` are the zone id without its
//! `/hostedzone/` prefix; `Fn::GetAtt` `Id` (the same) and `NameServers` (the delegation
//! set's, empty for a private zone). `Name` replaces the zone; the comment
//! (`HostedZoneConfig.Comment`, UpdateHostedZoneComment), `HostedZoneTags`
//! (ChangeTagsForResource) and the `VPCs` of a private zone (Associate / Disassociate) change
//! in place.

use aws_sdk_route53::types::{HostedZoneConfig, Tag, TagResourceType, Vpc, VpcRegion};
use aws_sdk_route53::Client;
use serde_json::{json, Map, Value};

use super::{as_written, bare_zone_id, ROUTE53};
use crate::provider::naming;
use crate::provider::props::{changed, Props};
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
use crate::provider::sdk::scaffold::tags;
use crate::provider::sdk::with_properties;
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control).
pub(super) const PROPERTIES: &[&str] = &["HostedZoneConfig", "HostedZoneTags", "Name", "VPCs"];

const TAGS: &str = "HostedZoneTags";

/// The template's `VPCs` as (id, region) pairs, the context's region where one is left out.
fn vpcs(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
) -> Result<Vec<(String, String)>, ProviderError> {
    let Some(items) = Props::new(req).list("VPCs")? else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .map(|v| {
            let id = v["VPCId"]
                .as_str()
                .ok_or_else(|| ProviderError::missing(req, "VPCs.VPCId"))?;
            let region = v["VPCRegion"].as_str().unwrap_or(ctx.region);
            Ok((id.to_owned(), region.to_owned()))
        })
        .collect()
}

fn sdk_vpc((id, region): &(String, String)) -> Vpc {
    Vpc::builder()
        .vpc_id(id)
        .vpc_region(VpcRegion::from(region.as_str()))
        .build()
}

fn comment(req: &ResourceRequest<'_>) -> Option<String> {
    Props::new(req)
        .get("HostedZoneConfig")
        .and_then(|c| c["Comment"].as_str())
        .map(str::to_owned)
}

/// What a create reports, read from Route 53: `None` when the zone does not exist.
pub(super) async fn provisioned_of(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    let id = bare_zone_id(id);
    let Some(out) = ROUTE53.unless_gone(
        client.get_hosted_zone().id(id).send().await,
        req,
        "GetHostedZone",
        id,
    )?
    else {
        return Ok(None);
    };
    let servers = out
        .delegation_set()
        .map(|d| d.name_servers().to_vec())
        .unwrap_or_default();
    Ok(Some(provisioned(
        id,
        &[("Id", json!(id)), ("NameServers", json!(servers))],
    )))
}

async fn change_tags(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    changes: tags::TagChanges,
) -> Result<(), ProviderError> {
    if changes.set.is_empty() && changes.remove.is_empty() {
        return Ok(());
    }
    let add: Vec<Tag> = changes
        .set
        .into_iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect();
    client
        .change_tags_for_resource()
        .resource_type(TagResourceType::Hostedzone)
        .resource_id(id)
        .set_add_tags((!add.is_empty()).then_some(add))
        .set_remove_tag_keys((!changes.remove.is_empty()).then_some(changes.remove))
        .send()
        .await
        .map_err(|e| ROUTE53.err(req, "ChangeTagsForResource", id, &e))?;
    Ok(())
}

async fn associate(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    vpc: &(String, String),
) -> Result<(), ProviderError> {
    client
        .associate_vpc_with_hosted_zone()
        .hosted_zone_id(id)
        .vpc(sdk_vpc(vpc))
        .send()
        .await
        .map_err(|e| ROUTE53.err(req, "AssociateVPCWithHostedZone", id, &e))?;
    Ok(())
}

pub(super) async fn create(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let name = props.required_str("Name")?;
    let vpcs = vpcs(ctx, req)?;
    // The caller reference makes the create idempotent: under the engine's create token a
    // re-run sends the same one, and Route 53 refuses a second zone for it.
    let reference = naming::random_token(req.logical_id);
    let out = client
        .create_hosted_zone()
        .name(&name)
        .caller_reference(reference)
        .hosted_zone_config(
            HostedZoneConfig::builder()
                .set_comment(comment(req))
                .private_zone(!vpcs.is_empty())
                .build(),
        )
        .set_vpc(vpcs.first().map(sdk_vpc))
        .send()
        .await
        .map_err(|e| ROUTE53.err(req, "CreateHostedZone", &name, &e))?;
    let zone = out
        .hosted_zone()
        .ok_or_else(|| ProviderError::failed(req, "route53 returned no hosted zone"))?;
    let id = bare_zone_id(zone.id()).to_owned();
    let servers = out
        .delegation_set()
        .map(|d| d.name_servers().to_vec())
        .unwrap_or_default();
    let finish = async {
        for vpc in vpcs.iter().skip(1) {
            associate(client, req, &id, vpc).await?;
        }
        change_tags(
            client,
            req,
            &id,
            tags::list_changes(&[], &props.tags_at(TAGS)?),
        )
        .await
    };
    if let Err(e) = finish.await {
        // An empty zone is removed again rather than left untracked.
        let _ = client.delete_hosted_zone().id(&id).send().await;
        return Err(e);
    }
    Ok(provisioned(
        &id,
        &[("Id", json!(id)), ("NameServers", json!(servers))],
    ))
}

pub(super) async fn update(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    if let Some(replace) = create_only_change(req, previous, &[]) {
        return Ok(replace);
    }
    let id = bare_zone_id(id);
    let prev_req = with_properties(req, previous);
    if changed(previous, req.properties, "HostedZoneConfig") {
        client
            .update_hosted_zone_comment()
            .id(id)
            .comment(comment(req).unwrap_or_default())
            .send()
            .await
            .map_err(|e| ROUTE53.err(req, "UpdateHostedZoneComment", id, &e))?;
    }
    if changed(previous, req.properties, TAGS) {
        change_tags(client, req, id, tags::moved(req, previous, TAGS)?).await?;
    }
    if changed(previous, req.properties, "VPCs") {
        let (old, new) = (vpcs(ctx, &prev_req)?, vpcs(ctx, req)?);
        // New ones first: a private zone must keep at least one VPC throughout.
        for vpc in new.iter().filter(|v| !old.contains(v)) {
            associate(client, req, id, vpc).await?;
        }
        for vpc in old.iter().filter(|v| !new.contains(v)) {
            client
                .disassociate_vpc_from_hosted_zone()
                .hosted_zone_id(id)
                .vpc(sdk_vpc(vpc))
                .send()
                .await
                .map_err(|e| ROUTE53.err(req, "DisassociateVPCFromHostedZone", id, &e))?;
        }
    }
    provisioned_of(ctx, client, req, id)
        .await?
        .map(UpdateOutcome::Updated)
        .ok_or_else(|| ProviderError::failed(req, format!("hosted zone {id} does not exist")))
}

pub(super) async fn delete(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    let id = bare_zone_id(id);
    ROUTE53
        .unless_gone(
            client.delete_hosted_zone().id(id).send().await,
            req,
            "DeleteHostedZone",
            id,
        )
        .map(|_| ())
}

pub(super) async fn read(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let id = bare_zone_id(id);
    let Some(out) = ROUTE53.unless_gone(
        client.get_hosted_zone().id(id).send().await,
        req,
        "GetHostedZone",
        id,
    )?
    else {
        return Ok(None);
    };
    let zone = out
        .hosted_zone()
        .ok_or_else(|| ProviderError::failed(req, "route53 returned no hosted zone"))?;
    let mut props = Map::new();
    let written = Props::new(req).str("Name")?;
    props.insert(
        "Name".into(),
        json!(as_written(zone.name(), written.as_deref())),
    );
    if let Some(c) = zone
        .config()
        .and_then(|c| c.comment())
        .filter(|c| !c.is_empty())
    {
        props.insert("HostedZoneConfig".into(), json!({"Comment": c}));
    }
    let vpcs: Vec<Value> = out
        .vpcs()
        .iter()
        .filter_map(|v| {
            Some(json!({
                "VPCId": v.vpc_id()?,
                "VPCRegion": v.vpc_region().map(|r| r.as_str()).unwrap_or_default(),
            }))
        })
        .collect();
    if !vpcs.is_empty() {
        props.insert("VPCs".into(), Value::Array(vpcs));
    }
    let listed = client
        .list_tags_for_resource()
        .resource_type(TagResourceType::Hostedzone)
        .resource_id(id)
        .send()
        .await
        .map_err(|e| ROUTE53.err(req, "ListTagsForResource", id, &e))?;
    let live = listed
        .resource_tag_set()
        .map(|s| s.tags())
        .unwrap_or_default();
    tags::read_into(
        &mut props,
        TAGS,
        live.iter().filter_map(|t| {
            Some((
                t.key()?.to_owned(),
                t.value().unwrap_or_default().to_owned(),
            ))
        }),
    );
    Ok(Some(props))
}
