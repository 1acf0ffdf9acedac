//! `security-group`: one security group by id or by name (and VPC), and whether it allows all
//! outbound traffic (all protocols to both 0.0.0.0/0 and ::/0), which `SecurityGroup.fromLookup*`
//! needs to know.

use aws_config::SdkConfig;
use aws_sdk_ec2::types::{Filter, SecurityGroup};
use serde_json::{json, Value};

use super::query::{LookupError, Query};

pub async fn lookup(config: &SdkConfig, query: Query<'_>) -> Result<Value, LookupError> {
    let id = query.opt_str("securityGroupId")?;
    let name = query.opt_str("securityGroupName")?;
    match (id, name) {
        (Some(_), Some(_)) => {
            return Err(LookupError::failed(
                "'securityGroupId' and 'securityGroupName' can not be specified both when looking up a security group",
            ))
        }
        (None, None) => {
            return Err(LookupError::failed(
                "'securityGroupId' or 'securityGroupName' must be specified to look up a security group",
            ))
        }
        _ => {}
    }
    let mut filters = Vec::new();
    if let Some(vpc) = query.opt_str("vpcId")? {
        filters.push(Filter::builder().name("vpc-id").values(vpc).build());
    }
    if let Some(name) = name {
        filters.push(Filter::builder().name("group-name").values(name).build());
    }
    let groups = aws_sdk_ec2::Client::new(config)
        .describe_security_groups()
        .set_group_ids(id.map(|i| vec![i.to_owned()]))
        .set_filters((!filters.is_empty()).then_some(filters))
        .send()
        .await
        .map_err(|e| LookupError::call("ec2", "DescribeSecurityGroups", query.json(), &e))?
        .security_groups
        .unwrap_or_default();
    match groups.as_slice() {
        [] => Err(LookupError::not_found(format!(
            "No security groups found matching {}",
            query.json()
        ))),
        [group] => Ok(json!({
            "securityGroupId": group.group_id().unwrap_or_default(),
            "allowAllOutbound": allows_all_outbound(group),
        })),
        _ => Err(LookupError::failed(format!(
            "More than one security groups found matching {}",
            query.json()
        ))),
    }
}

pub fn allows_all_outbound(group: &SecurityGroup) -> bool {
    let all = |p: &&aws_sdk_ec2::types::IpPermission| p.ip_protocol() == Some("-1");
    let egress = group.ip_permissions_egress();
    let v4 = egress.iter().filter(all).any(|p| {
        p.ip_ranges()
            .iter()
            .any(|r| r.cidr_ip() == Some("0.0.0.0/0"))
    });
    let v6 = egress.iter().filter(all).any(|p| {
        p.ipv6_ranges()
            .iter()
            .any(|r| r.cidr_ipv6() == Some("::/0"))
    });
    v4 && v6
}
