//! `AWS::EC2::SecurityGroupIngress` and `AWS::EC2::SecurityGroupEgress`: one rule of a group,
//! made outside the group's own template entry (CDK writes one for a rule that names
//! another group, so the two groups do not depend on each other). Physical id, `Ref` and
//! `Fn::GetAtt Id` are the rule id (`sgr-…`), as CloudFormation reports it. Only the
//! description changes in place; everything else replaces the rule.

use aws_sdk_ec2::types::{Filter, SecurityGroupRule};
use aws_sdk_ec2::Client;
use serde_json::{json, Map, Value};

use super::rules::{self, Direction, Rule};
use super::{is_not_found, provisioned, unless_gone, EC2, SECURITY_GROUP_EGRESS};
use crate::provider::props::{changed, Props};
use crate::provider::{ProviderError, Provisioned, ResourceRequest, UpdateOutcome};

pub(super) const INGRESS_PROPERTIES: &[&str] = &[
    "CidrIp",
    "CidrIpv6",
    "Description",
    "FromPort",
    "GroupId",
    "IpProtocol",
    "SourcePrefixListId",
    "SourceSecurityGroupId",
    "SourceSecurityGroupOwnerId",
    "ToPort",
];
pub(super) const EGRESS_PROPERTIES: &[&str] = &[
    "CidrIp",
    "CidrIpv6",
    "Description",
    "DestinationPrefixListId",
    "DestinationSecurityGroupId",
    "FromPort",
    "GroupId",
    "IpProtocol",
    "ToPort",
];

fn direction(req: &ResourceRequest<'_>) -> Direction {
    if req.resource_type == SECURITY_GROUP_EGRESS {
        Direction::Egress
    } else {
        Direction::Ingress
    }
}

fn made(id: &str) -> Provisioned {
    provisioned(id, &[("Id", json!(id))])
}

fn wanted(req: &ResourceRequest<'_>) -> Result<(String, Rule), ProviderError> {
    let group = Props::new(req).required_str("GroupId")?;
    Ok((group, rules::from_cfn(req, req.properties, direction(req))?))
}

/// The group's rules in this direction, as DescribeSecurityGroupRules reports them.
async fn group_rules(
    client: &Client,
    req: &ResourceRequest<'_>,
    group: &str,
) -> Result<Vec<SecurityGroupRule>, ProviderError> {
    let egress = direction(req) == Direction::Egress;
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let page = client
            .describe_security_group_rules()
            .filters(Filter::builder().name("group-id").values(group).build())
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| EC2.err(req, "DescribeSecurityGroupRules", group, &e))?;
        out.extend(
            page.security_group_rules()
                .iter()
                .filter(|r| r.is_egress() == Some(egress))
                .cloned(),
        );
        match page.next_token() {
            Some(t) if !t.is_empty() => token = Some(t.to_owned()),
            _ => return Ok(out),
        }
    }
}

pub(super) async fn create(
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let (group, rule) = wanted(req)?;
    let reported = match direction(req) {
        Direction::Ingress => client
            .authorize_security_group_ingress()
            .group_id(&group)
            .ip_permissions(rule.permission())
            .send()
            .await
            .map_err(|e| EC2.err(req, "AuthorizeSecurityGroupIngress", &group, &e))?
            .security_group_rules
            .unwrap_or_default(),
        Direction::Egress => client
            .authorize_security_group_egress()
            .group_id(&group)
            .ip_permissions(rule.permission())
            .send()
            .await
            .map_err(|e| EC2.err(req, "AuthorizeSecurityGroupEgress", &group, &e))?
            .security_group_rules
            .unwrap_or_default(),
    };
    let id = match reported.iter().find_map(|r| r.security_group_rule_id()) {
        Some(id) => id.to_owned(),
        // An older API answer carries no rule ids: find the rule just made.
        None => group_rules(client, req, &group)
            .await?
            .iter()
            .find(|r| rules::from_rule(r).is_some_and(|x| x.same_grant(&rule)))
            .and_then(|r| r.security_group_rule_id().map(str::to_owned))
            .ok_or_else(|| {
                ProviderError::failed(req, format!("the new rule of {group} is not listed"))
            })?,
    };
    Ok(made(&id))
}

pub(super) async fn update(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    if changed(previous, req.properties, "Description") {
        let (group, rule) = wanted(req)?;
        // An absent description is cleared, not kept.
        let mut rule = rule;
        rule.description.get_or_insert_with(String::new);
        let perm = rule.permission();
        match direction(req) {
            Direction::Ingress => client
                .update_security_group_rule_descriptions_ingress()
                .group_id(&group)
                .ip_permissions(perm)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| EC2.err(req, "UpdateSecurityGroupRuleDescriptionsIngress", id, &e))?,
            Direction::Egress => client
                .update_security_group_rule_descriptions_egress()
                .group_id(&group)
                .ip_permissions(perm)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| EC2.err(req, "UpdateSecurityGroupRuleDescriptionsEgress", id, &e))?,
        }
    }
    Ok(UpdateOutcome::Updated(made(id)))
}

async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<SecurityGroupRule>, ProviderError> {
    Ok(unless_gone(
        client
            .describe_security_group_rules()
            .security_group_rule_ids(id)
            .send()
            .await,
        req,
        "DescribeSecurityGroupRules",
        id,
    )?
    .and_then(|out| out.security_group_rules().first().cloned()))
}

pub(super) async fn delete(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    let group = match Props::new(req).str("GroupId")? {
        Some(g) => g,
        None => match describe(client, req, id)
            .await?
            .and_then(|r| r.group_id().map(str::to_owned))
        {
            Some(g) => g,
            None => return Ok(()),
        },
    };
    let sent = match direction(req) {
        Direction::Ingress => client
            .revoke_security_group_ingress()
            .group_id(&group)
            .security_group_rule_ids(id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                (
                    is_not_found(&e),
                    EC2.err(req, "RevokeSecurityGroupIngress", id, &e),
                )
            }),
        Direction::Egress => client
            .revoke_security_group_egress()
            .group_id(&group)
            .security_group_rule_ids(id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                (
                    is_not_found(&e),
                    EC2.err(req, "RevokeSecurityGroupEgress", id, &e),
                )
            }),
    };
    match sent {
        Ok(()) | Err((true, _)) => Ok(()),
        Err((false, e)) => Err(e),
    }
}

pub(super) async fn read(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(r) = describe(client, req, id).await? else {
        return Ok(None);
    };
    let Some(rule) = rules::from_rule(&r) else {
        return Ok(None);
    };
    let mut props = rule.to_cfn(direction(req));
    if let Some(g) = r.group_id() {
        props.insert("GroupId".into(), json!(g));
    }
    Ok(Some(props))
}

pub(super) async fn provisioned_of(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    Ok(describe(client, req, id).await?.map(|_| made(id)))
}
