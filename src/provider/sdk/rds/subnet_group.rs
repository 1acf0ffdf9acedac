//! `AWS::RDS::DBSubnetGroup`: physical id and `Ref` are the group name, which RDS keeps in
//! lower case (generated as CloudFormation does when the template gives none); `Fn::GetAtt`
//! `DBSubnetGroupArn`. `DBSubnetGroupName` replaces the group; the description and the
//! subnets change in place (ModifyDBSubnetGroup), tags through Add / RemoveTagsFromResource
//! on the group's ARN.

use aws_sdk_rds::types::{DbSubnetGroup, Tag};
use aws_sdk_rds::Client;
use serde_json::{json, Map, Value};

use super::{unless_gone, RDS};
use crate::provider::naming;
use crate::provider::props::{changed, Props};
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
use crate::provider::sdk::scaffold::tags;
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control).
pub(super) const PROPERTIES: &[&str] = &[
    "DBSubnetGroupDescription",
    "DBSubnetGroupName",
    "SubnetIds",
    "Tags",
];

/// RDS names: at most 255 characters of lower-case letters, digits and hyphens.
const NAME_RULES: naming::NameRules = naming::NameRules {
    max_len: 255,
    lowercase: true,
    extra_chars: "-",
    suffix: "",
};

async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<Option<DbSubnetGroup>, ProviderError> {
    Ok(unless_gone(
        client
            .describe_db_subnet_groups()
            .db_subnet_group_name(name)
            .send()
            .await,
        req,
        "DescribeDBSubnetGroups",
        name,
    )?
    .and_then(|out| out.db_subnet_groups().first().cloned()))
}

fn reported(name: &str, group: &DbSubnetGroup) -> Provisioned {
    let arn = group.db_subnet_group_arn().unwrap_or_default();
    provisioned(name, &[("DBSubnetGroupArn", json!(arn))])
}

pub(super) async fn provisioned_of(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    Ok(describe(client, req, name)
        .await?
        .map(|g| reported(name, &g)))
}

fn sdk_tags(pairs: impl IntoIterator<Item = (String, String)>) -> Vec<Tag> {
    pairs
        .into_iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect()
}

pub(super) async fn create(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let name = match props.str("DBSubnetGroupName")? {
        Some(n) => n.to_ascii_lowercase(),
        None => naming::generate(ctx.stack_name, req.logical_id, NAME_RULES),
    };
    let list = props.tags()?;
    let out = client
        .create_db_subnet_group()
        .db_subnet_group_name(&name)
        .db_subnet_group_description(props.required_str("DBSubnetGroupDescription")?)
        .set_subnet_ids(Some(props.strings("SubnetIds")?))
        .set_tags((!list.is_empty()).then(|| sdk_tags(list)))
        .send()
        .await
        .map_err(|e| RDS.err(req, "CreateDBSubnetGroup", &name, &e))?;
    let group = out
        .db_subnet_group()
        .ok_or_else(|| ProviderError::failed(req, "rds returned no subnet group"))?;
    let name = RDS.required(req, group.db_subnet_group_name(), "subnet group name")?;
    Ok(reported(name, group))
}

pub(super) async fn update(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    if let Some(replace) = create_only_change(req, previous, &[]) {
        return Ok(replace);
    }
    let props = Props::new(req);
    let moved = |n: &str| changed(previous, req.properties, n);
    if moved("DBSubnetGroupDescription") || moved("SubnetIds") {
        client
            .modify_db_subnet_group()
            .db_subnet_group_name(name)
            .db_subnet_group_description(props.required_str("DBSubnetGroupDescription")?)
            .set_subnet_ids(Some(props.strings("SubnetIds")?))
            .send()
            .await
            .map_err(|e| RDS.err(req, "ModifyDBSubnetGroup", name, &e))?;
    }
    let made = provisioned_of(ctx, client, req, name)
        .await?
        .ok_or_else(|| ProviderError::failed(req, format!("subnet group {name} does not exist")))?;
    if moved("Tags") {
        let arn = made.attributes["DBSubnetGroupArn"]
            .as_str()
            .unwrap_or_default();
        let tags::TagChanges { set, remove } = tags::moved(req, previous, "Tags")?;
        if !remove.is_empty() {
            client
                .remove_tags_from_resource()
                .resource_name(arn)
                .set_tag_keys(Some(remove))
                .send()
                .await
                .map_err(|e| RDS.err(req, "RemoveTagsFromResource", arn, &e))?;
        }
        if !set.is_empty() {
            client
                .add_tags_to_resource()
                .resource_name(arn)
                .set_tags(Some(sdk_tags(set)))
                .send()
                .await
                .map_err(|e| RDS.err(req, "AddTagsToResource", arn, &e))?;
        }
    }
    Ok(UpdateOutcome::Updated(made))
}

pub(super) async fn delete(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<(), ProviderError> {
    unless_gone(
        client
            .delete_db_subnet_group()
            .db_subnet_group_name(name)
            .send()
            .await,
        req,
        "DeleteDBSubnetGroup",
        name,
    )
    .map(|_| ())
}

pub(super) async fn read(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(group) = describe(client, req, name).await? else {
        return Ok(None);
    };
    let mut props = Map::new();
    let written = Props::new(req).str("DBSubnetGroupName")?;
    // RDS lower-cases the name; a template that wrote it otherwise reads back as written.
    let shown = written
        .filter(|w| w.eq_ignore_ascii_case(name))
        .unwrap_or_else(|| name.to_owned());
    props.insert("DBSubnetGroupName".into(), json!(shown));
    if let Some(d) = group.db_subnet_group_description() {
        props.insert("DBSubnetGroupDescription".into(), json!(d));
    }
    // RDS lists subnets in its own order: the template's order when they are the same set.
    let mut live: Vec<String> = group
        .subnets()
        .iter()
        .filter_map(|s| s.subnet_identifier().map(str::to_owned))
        .collect();
    let asked = Props::new(req).strings("SubnetIds")?;
    let mut sorted = asked.clone();
    sorted.sort();
    live.sort();
    props.insert(
        "SubnetIds".into(),
        json!(if sorted == live { asked } else { live }),
    );
    if let Some(arn) = group.db_subnet_group_arn() {
        let listed = client
            .list_tags_for_resource()
            .resource_name(arn)
            .send()
            .await
            .map_err(|e| RDS.err(req, "ListTagsForResource", arn, &e))?;
        tags::read_into(
            &mut props,
            "Tags",
            listed.tag_list().iter().filter_map(|t| {
                Some((
                    t.key()?.to_owned(),
                    t.value().unwrap_or_default().to_owned(),
                ))
            }),
        );
    }
    Ok(Some(props))
}
