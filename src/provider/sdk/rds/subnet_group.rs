//! `AWS::RDS::DBSubnetGroup`: physical id and `Ref` are the group name, which RDS keeps in
//! lower case (generated as CloudFormation does when the template gives none); `Fn::GetAtt`
//! `DBSubnetGroupArn`. `DBSubnetGroupName` replaces the group; the description and the
//! subnets change in place (ModifyDBSubnetGroup), tags through Add / RemoveTagsFromResource
//! on the group's ARN.

use aws_sdk_rds::types::DbSubnetGroup;
use aws_sdk_rds::Client;
use serde_json::{json, Map, Value};

use super::{create_tags, identifier_read, read_tags, unless_gone, update_tags, RDS};
use crate::provider::naming;
use crate::provider::props::{changed, Props};
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
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
    let out = client
        .create_db_subnet_group()
        .db_subnet_group_name(&name)
        .db_subnet_group_description(props.required_str("DBSubnetGroupDescription")?)
        .set_subnet_ids(Some(props.strings("SubnetIds")?))
        .set_tags(create_tags(req)?)
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
    let arn = made
        .attributes
        .get("DBSubnetGroupArn")
        .and_then(Value::as_str)
        .unwrap_or_default();
    update_tags(client, req, arn, previous).await?;
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
    // RDS lower-cases the name; a template that wrote it otherwise reads back as written.
    props.insert(
        "DBSubnetGroupName".into(),
        json!(identifier_read(req, "DBSubnetGroupName", name)?),
    );
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
        read_tags(client, req, arn, &mut props).await?;
    }
    Ok(Some(props))
}
