//! `AWS::EC2::SecurityGroup`: physical id and `Ref` are the group id (`sg-…`); `Fn::GetAtt`
//! `GroupId`, `VpcId`. Name, description and VPC replace the group; inline rules and tags
//! change in place.
//!
//! Egress as CloudFormation defines it: a group whose template lists no `SecurityGroupEgress`
//! keeps the allow-all rule EC2 gives every new VPC group; a list replaces it. An update
//! revokes the rules the previous template had and the new one does not, then authorizes
//! the new ones, so rules added by standalone `SecurityGroupIngress` / `Egress` resources
//! (which the template does not list inline) are never touched.

use std::collections::BTreeSet;

use aws_sdk_ec2::types::{IpPermission, ResourceType, SecurityGroup};
use aws_sdk_ec2::Client;
use serde_json::{json, Map, Value};

use super::rules::{self, default_egress, Direction, Rule};
use super::{is_not_found, provisioned, tags, unless_gone, wait, EC2};
use crate::aws::error_code;
use crate::provider::naming::{self, NameRules};
use crate::provider::props::Props;
use crate::provider::sdk::with_properties;
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

pub(super) const PROPERTIES: &[&str] = &[
    "GroupDescription",
    "GroupName",
    "SecurityGroupEgress",
    "SecurityGroupIngress",
    "Tags",
    "VpcId",
];

/// EC2 group names: up to 255 characters.
const GROUP_NAME: NameRules = NameRules {
    max_len: 255,
    lowercase: false,
    extra_chars: "-_",
    suffix: "",
};

async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<SecurityGroup>, ProviderError> {
    Ok(unless_gone(
        client.describe_security_groups().group_ids(id).send().await,
        req,
        "DescribeSecurityGroups",
        id,
    )?
    .and_then(|out| out.security_groups().first().cloned()))
}

fn made(id: &str, vpc: &str) -> Provisioned {
    provisioned(id, &[("GroupId", json!(id)), ("VpcId", json!(vpc))])
}

pub(super) async fn provisioned_of(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    Ok(describe(client, req, id)
        .await?
        .map(|g| made(id, g.vpc_id().unwrap_or_default())))
}

/// The rules a template's properties ask for, each direction as a set. Egress is the
/// default allow-all rule when the template lists none.
fn wanted(req: &ResourceRequest<'_>) -> Result<(BTreeSet<Rule>, BTreeSet<Rule>), ProviderError> {
    let ingress = rules::list_from_cfn(
        req,
        req.properties.get("SecurityGroupIngress"),
        Direction::Ingress,
    )?;
    let mut egress = rules::list_from_cfn(
        req,
        req.properties.get("SecurityGroupEgress"),
        Direction::Egress,
    )?;
    if egress.is_empty() {
        egress.push(default_egress());
    }
    Ok((ingress.into_iter().collect(), egress.into_iter().collect()))
}

/// Authorizes `rules` on the group: one call, or one per rule when EC2 says one of them is
/// already there (a duplicate in the batch fails all of it), skipping those.
async fn authorize(
    client: &Client,
    req: &ResourceRequest<'_>,
    group: &str,
    dir: Direction,
    rules: &[&Rule],
) -> Result<(), ProviderError> {
    if rules.is_empty() {
        return Ok(());
    }
    let perms: Vec<IpPermission> = rules.iter().map(|r| r.permission()).collect();
    match send_authorize(client, group, dir, perms).await {
        Ok(()) => return Ok(()),
        Err(e) if error_code(&e) != Some("InvalidPermission.Duplicate") => {
            return Err(EC2.err(req, op(dir, true), group, &e))
        }
        Err(_) => {}
    }
    for r in rules {
        match send_authorize(client, group, dir, vec![r.permission()]).await {
            Ok(()) => {}
            Err(e) if error_code(&e) == Some("InvalidPermission.Duplicate") => {}
            Err(e) => return Err(EC2.err(req, op(dir, true), group, &e)),
        }
    }
    Ok(())
}

fn op(dir: Direction, grant: bool) -> &'static str {
    match (dir, grant) {
        (Direction::Ingress, true) => "AuthorizeSecurityGroupIngress",
        (Direction::Egress, true) => "AuthorizeSecurityGroupEgress",
        (Direction::Ingress, false) => "RevokeSecurityGroupIngress",
        (Direction::Egress, false) => "RevokeSecurityGroupEgress",
    }
}

type AnyErr = aws_smithy_runtime_api::client::result::SdkError<
    aws_sdk_ec2::Error,
    aws_smithy_runtime_api::http::Response,
>;

fn any<E>(
    e: aws_smithy_runtime_api::client::result::SdkError<E, aws_smithy_runtime_api::http::Response>,
) -> AnyErr
where
    aws_sdk_ec2::Error: From<E>,
{
    e.map_service_error(aws_sdk_ec2::Error::from)
}

async fn send_authorize(
    client: &Client,
    group: &str,
    dir: Direction,
    perms: Vec<IpPermission>,
) -> Result<(), AnyErr> {
    match dir {
        Direction::Ingress => client
            .authorize_security_group_ingress()
            .group_id(group)
            .set_ip_permissions(Some(perms))
            .send()
            .await
            .map(|_| ())
            .map_err(any),
        Direction::Egress => client
            .authorize_security_group_egress()
            .group_id(group)
            .set_ip_permissions(Some(perms))
            .send()
            .await
            .map(|_| ())
            .map_err(any),
    }
}

/// Revokes `rules`; a rule already gone is not an error.
async fn revoke(
    client: &Client,
    req: &ResourceRequest<'_>,
    group: &str,
    dir: Direction,
    rules: &[&Rule],
) -> Result<(), ProviderError> {
    for r in rules {
        let perm = r.permission();
        let sent = match dir {
            Direction::Ingress => client
                .revoke_security_group_ingress()
                .group_id(group)
                .ip_permissions(perm)
                .send()
                .await
                .map(|_| ())
                .map_err(any),
            Direction::Egress => client
                .revoke_security_group_egress()
                .group_id(group)
                .ip_permissions(perm)
                .send()
                .await
                .map(|_| ())
                .map_err(any),
        };
        match sent {
            Ok(()) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(EC2.err(req, op(dir, false), group, &e)),
        }
    }
    Ok(())
}

pub(super) async fn create(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let description = props.required_str("GroupDescription")?;
    let name = match props.str("GroupName")? {
        Some(n) => n,
        None => naming::generate(ctx.stack_name, req.logical_id, GROUP_NAME),
    };
    let out = client
        .create_security_group()
        .group_name(&name)
        .description(&description)
        .set_vpc_id(props.str("VpcId")?)
        .set_tag_specifications(
            tags::specification(req, ResourceType::SecurityGroup)?.map(|s| vec![s]),
        )
        .send()
        .await
        .map_err(|e| EC2.err(req, "CreateSecurityGroup", &name, &e))?;
    let id = EC2
        .required(req, out.group_id(), "security group id")?
        .to_owned();
    let (ingress, egress) = wanted(req)?;
    let ingress: Vec<&Rule> = ingress.iter().collect();
    authorize(client, req, &id, Direction::Ingress, &ingress).await?;
    if !egress.iter().all(|r| *r == default_egress()) {
        revoke(client, req, &id, Direction::Egress, &[&default_egress()]).await?;
        let egress: Vec<&Rule> = egress.iter().collect();
        authorize(client, req, &id, Direction::Egress, &egress).await?;
    }
    let vpc = match props.str("VpcId")? {
        Some(v) => v,
        // No VPC named: EC2 put the group in the default one.
        None => describe(client, req, &id)
            .await?
            .and_then(|g| g.vpc_id().map(str::to_owned))
            .unwrap_or_default(),
    };
    Ok(made(&id, &vpc))
}

pub(super) async fn update(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    let prev_req = with_properties(req, previous);
    let (old_in, old_out) = wanted(&prev_req)?;
    let (new_in, new_out) = wanted(req)?;
    for (dir, old, new) in [
        (Direction::Ingress, &old_in, &new_in),
        (Direction::Egress, &old_out, &new_out),
    ] {
        let gone: Vec<&Rule> = old.difference(new).collect();
        let added: Vec<&Rule> = new.difference(old).collect();
        revoke(client, req, id, dir, &gone).await?;
        authorize(client, req, id, dir, &added).await?;
    }
    tags::update(client, req, id, previous).await?;
    provisioned_of(client, req, id)
        .await?
        .map(UpdateOutcome::Updated)
        .ok_or_else(|| ProviderError::failed(req, format!("security group {id} does not exist")))
}

pub(super) async fn delete(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    // Network interfaces a Lambda function left in the group go on AWS's own time; until
    // then the delete answers DependencyViolation.
    unless_gone(
        wait::while_dependent(|| client.delete_security_group().group_id(id).send()).await,
        req,
        "DeleteSecurityGroup",
        id,
    )
    .map(|_| ())
}

pub(super) async fn read(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(g) = describe(client, req, id).await? else {
        return Ok(None);
    };
    let mut props = Map::new();
    if let Some(d) = g.description() {
        props.insert("GroupDescription".into(), json!(d));
    }
    // A generated name is shown only where the template names it.
    if let Some(n) = g
        .group_name()
        .filter(|_| req.properties.contains_key("GroupName"))
    {
        props.insert("GroupName".into(), json!(n));
    }
    if let Some(v) = g.vpc_id() {
        props.insert("VpcId".into(), json!(v));
    }
    let list = |rules: Vec<Rule>, dir: Direction| {
        let mut sorted = rules;
        sorted.sort();
        Value::Array(
            sorted
                .iter()
                .map(|r| Value::Object(r.to_cfn(dir)))
                .collect(),
        )
    };
    let ingress = rules::from_permissions(g.ip_permissions());
    if !ingress.is_empty() {
        props.insert(
            "SecurityGroupIngress".into(),
            list(ingress, Direction::Ingress),
        );
    }
    let egress = rules::from_permissions(g.ip_permissions_egress());
    let only_default = egress.len() == 1 && egress[0].same_grant(&default_egress());
    if !egress.is_empty() && !(only_default && !req.properties.contains_key("SecurityGroupEgress"))
    {
        props.insert(
            "SecurityGroupEgress".into(),
            list(egress, Direction::Egress),
        );
    }
    tags::read_into(&mut props, g.tags());
    Ok(Some(props))
}
