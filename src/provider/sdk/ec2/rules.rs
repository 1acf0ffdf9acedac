//! Security group rules in CloudFormation's shape (one object per peer: `IpProtocol`,
//! `FromPort`, `ToPort`, `CidrIp` / `CidrIpv6` / `Source…` or `Destination…` group or prefix
//! list, `Description`) and in EC2's (`IpPermission`), for the inline rules of
//! `AWS::EC2::SecurityGroup` and the standalone ingress and egress types.
//!
//! Protocols are compared by name (`tcp`, `6` and `TCP` are one rule; `-1` and `all` are
//! every protocol, whose ports mean nothing), so a rule written either way is the same rule.

use aws_sdk_ec2::types::{
    IpPermission, IpRange, Ipv6Range, PrefixListId, SecurityGroupRule, UserIdGroupPair,
};
use serde_json::{json, Map, Value};

use crate::provider::{ProviderError, ResourceRequest};

/// Which way a rule admits traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    Ingress,
    Egress,
}

impl Direction {
    fn group_key(self) -> &'static str {
        match self {
            Direction::Ingress => "SourceSecurityGroupId",
            Direction::Egress => "DestinationSecurityGroupId",
        }
    }

    fn prefix_key(self) -> &'static str {
        match self {
            Direction::Ingress => "SourcePrefixListId",
            Direction::Egress => "DestinationPrefixListId",
        }
    }
}

/// The other end of a rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Peer {
    Cidr(String),
    CidrV6(String),
    Group { id: String, owner: Option<String> },
    PrefixList(String),
}

/// One rule: one protocol and port range to or from one peer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Rule {
    pub protocol: String,
    pub from: Option<i32>,
    pub to: Option<i32>,
    pub peer: Peer,
    pub description: Option<String>,
}

/// A protocol by the name EC2 reports it under.
pub(super) fn protocol(raw: &str) -> String {
    match raw.trim().to_ascii_lowercase().as_str() {
        "-1" | "all" => "-1".into(),
        "6" | "tcp" => "tcp".into(),
        "17" | "udp" => "udp".into(),
        "1" | "icmp" => "icmp".into(),
        "58" | "icmpv6" => "icmpv6".into(),
        other => other.to_owned(),
    }
}

impl Rule {
    fn new(protocol_raw: &str, from: Option<i32>, to: Option<i32>, peer: Peer) -> Rule {
        let protocol = protocol(protocol_raw);
        let every = protocol == "-1";
        Rule {
            from: if every { None } else { from },
            to: if every { None } else { to },
            protocol,
            peer,
            description: None,
        }
    }

    /// Whether two rules grant the same traffic (their descriptions aside).
    pub fn same_grant(&self, other: &Rule) -> bool {
        (&self.protocol, self.from, self.to, &self.peer)
            == (&other.protocol, other.from, other.to, &other.peer)
    }

    /// The rule as the one-peer `IpPermission` EC2 takes.
    pub fn permission(&self) -> IpPermission {
        let d = self.description.clone();
        let b = IpPermission::builder()
            .ip_protocol(&self.protocol)
            .set_from_port(self.from)
            .set_to_port(self.to);
        match &self.peer {
            Peer::Cidr(c) => b.ip_ranges(IpRange::builder().cidr_ip(c).set_description(d).build()),
            Peer::CidrV6(c) => {
                b.ipv6_ranges(Ipv6Range::builder().cidr_ipv6(c).set_description(d).build())
            }
            Peer::Group { id, owner } => b.user_id_group_pairs(
                UserIdGroupPair::builder()
                    .group_id(id)
                    .set_user_id(owner.clone())
                    .set_description(d)
                    .build(),
            ),
            Peer::PrefixList(p) => b.prefix_list_ids(
                PrefixListId::builder()
                    .prefix_list_id(p)
                    .set_description(d)
                    .build(),
            ),
        }
        .build()
    }

    /// The rule as CloudFormation writes it, for a read-back.
    pub fn to_cfn(&self, dir: Direction) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("IpProtocol".into(), json!(self.protocol));
        if let Some(f) = self.from {
            m.insert("FromPort".into(), json!(f));
        }
        if let Some(t) = self.to {
            m.insert("ToPort".into(), json!(t));
        }
        match &self.peer {
            Peer::Cidr(c) => m.insert("CidrIp".into(), json!(c)),
            Peer::CidrV6(c) => m.insert("CidrIpv6".into(), json!(c)),
            Peer::Group { id, .. } => m.insert(dir.group_key().into(), json!(id)),
            Peer::PrefixList(p) => m.insert(dir.prefix_key().into(), json!(p)),
        };
        if let Some(d) = &self.description {
            m.insert("Description".into(), json!(d));
        }
        m
    }
}

/// Egress a new VPC security group starts with, and keeps while the template lists none.
pub(super) fn default_egress() -> Rule {
    Rule::new("-1", None, None, Peer::Cidr("0.0.0.0/0".into()))
}

fn port(
    req: &ResourceRequest<'_>,
    rule: &Map<String, Value>,
    key: &str,
) -> Result<Option<i32>, ProviderError> {
    match rule.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| ProviderError::failed(req, format!("{key} must be a port number"))),
        Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| {
            ProviderError::failed(req, format!("{key} must be a port number, not {s:?}"))
        }),
        Some(_) => Err(ProviderError::failed(
            req,
            format!("{key} must be a port number"),
        )),
    }
}

fn text(rule: &Map<String, Value>, key: &str) -> Option<String> {
    match rule.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

/// One CloudFormation rule object (an inline list item, or a standalone rule's properties).
pub(super) fn from_cfn(
    req: &ResourceRequest<'_>,
    rule: &Map<String, Value>,
    dir: Direction,
) -> Result<Rule, ProviderError> {
    let peer = if let Some(c) = text(rule, "CidrIp") {
        Peer::Cidr(c)
    } else if let Some(c) = text(rule, "CidrIpv6") {
        Peer::CidrV6(c)
    } else if let Some(g) = text(rule, dir.group_key()) {
        let owner = text(rule, "SourceSecurityGroupOwnerId");
        Peer::Group { id: g, owner }
    } else if let Some(p) = text(rule, dir.prefix_key()) {
        Peer::PrefixList(p)
    } else {
        return Err(ProviderError::failed(
            req,
            format!(
                "a security group rule needs a peer: CidrIp, CidrIpv6, {} or {}",
                dir.group_key(),
                dir.prefix_key()
            ),
        ));
    };
    let proto =
        text(rule, "IpProtocol").ok_or_else(|| ProviderError::missing(req, "IpProtocol"))?;
    let mut r = Rule::new(
        &proto,
        port(req, rule, "FromPort")?,
        port(req, rule, "ToPort")?,
        peer,
    );
    r.description = text(rule, "Description");
    Ok(r)
}

/// An inline rule list property (`SecurityGroupIngress` / `SecurityGroupEgress`).
pub(super) fn list_from_cfn(
    req: &ResourceRequest<'_>,
    value: Option<&Value>,
    dir: Direction,
) -> Result<Vec<Rule>, ProviderError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = value else {
        return Err(ProviderError::failed(
            req,
            "security group rules must be a list",
        ));
    };
    items
        .iter()
        .map(|item| match item {
            Value::Object(m) => from_cfn(req, m, dir),
            _ => Err(ProviderError::failed(
                req,
                "each security group rule must be an object",
            )),
        })
        .collect()
}

/// The one-peer rules of EC2's permissions.
pub(super) fn from_permissions(perms: &[IpPermission]) -> Vec<Rule> {
    let mut out = Vec::new();
    for p in perms {
        let proto = p.ip_protocol().unwrap_or("-1");
        let make = |peer: Peer, d: Option<&str>| {
            let mut r = Rule::new(proto, p.from_port(), p.to_port(), peer);
            r.description = d.filter(|d| !d.is_empty()).map(str::to_owned);
            r
        };
        for r in p.ip_ranges() {
            if let Some(c) = r.cidr_ip() {
                out.push(make(Peer::Cidr(c.into()), r.description()));
            }
        }
        for r in p.ipv6_ranges() {
            if let Some(c) = r.cidr_ipv6() {
                out.push(make(Peer::CidrV6(c.into()), r.description()));
            }
        }
        for g in p.user_id_group_pairs() {
            if let Some(id) = g.group_id() {
                let peer = Peer::Group {
                    id: id.into(),
                    owner: None,
                };
                out.push(make(peer, g.description()));
            }
        }
        for l in p.prefix_list_ids() {
            if let Some(id) = l.prefix_list_id() {
                out.push(make(Peer::PrefixList(id.into()), l.description()));
            }
        }
    }
    out
}

/// A rule as DescribeSecurityGroupRules reports it.
pub(super) fn from_rule(r: &SecurityGroupRule) -> Option<Rule> {
    let peer = if let Some(c) = r.cidr_ipv4() {
        Peer::Cidr(c.into())
    } else if let Some(c) = r.cidr_ipv6() {
        Peer::CidrV6(c.into())
    } else if let Some(g) = r.referenced_group_info().and_then(|g| g.group_id()) {
        Peer::Group {
            id: g.into(),
            owner: None,
        }
    } else {
        Peer::PrefixList(r.prefix_list_id()?.into())
    };
    let mut rule = Rule::new(
        r.ip_protocol().unwrap_or("-1"),
        r.from_port(),
        r.to_port(),
        peer,
    );
    rule.description = r.description().filter(|d| !d.is_empty()).map(str::to_owned);
    Some(rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(m: &Map<String, Value>) -> ResourceRequest<'_> {
        ResourceRequest {
            logical_id: "Sg",
            resource_type: "AWS::EC2::SecurityGroup",
            properties: m,
            client_token: None,
        }
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn a_rule_written_either_way_is_one_rule() {
        let empty = Map::new();
        let r = req(&empty);
        let a = from_cfn(&r, &obj(json!({"IpProtocol": "6", "FromPort": "443", "ToPort": 443, "CidrIp": "10.0.0.0/8"})), Direction::Ingress).expect("rule");
        let b = from_cfn(&r, &obj(json!({"IpProtocol": "TCP", "FromPort": 443, "ToPort": 443, "CidrIp": "10.0.0.0/8"})), Direction::Ingress).expect("rule");
        assert_eq!(a, b);
        let all = from_cfn(
            &r,
            &obj(json!({"IpProtocol": "-1", "FromPort": -1, "ToPort": -1, "CidrIp": "0.0.0.0/0"})),
            Direction::Egress,
        )
        .expect("rule");
        assert!(all.same_grant(&default_egress()));
        let back = from_permissions(&[a.permission()]);
        assert_eq!(back, [a.clone()]);
        assert_eq!(
            Value::Object(a.to_cfn(Direction::Ingress)),
            json!({"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "10.0.0.0/8"})
        );
    }

    #[test]
    fn a_group_peer_is_named_by_direction_and_a_rule_without_a_peer_is_refused() {
        let empty = Map::new();
        let r = req(&empty);
        let out = from_cfn(&r, &obj(json!({"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "DestinationSecurityGroupId": "sg-1", "Description": "d"})), Direction::Egress).expect("rule");
        assert_eq!(
            out.peer,
            Peer::Group {
                id: "sg-1".into(),
                owner: None
            }
        );
        assert_eq!(
            out.to_cfn(Direction::Egress)["DestinationSecurityGroupId"],
            json!("sg-1")
        );
        let err = from_cfn(&r, &obj(json!({"IpProtocol": "tcp"})), Direction::Ingress)
            .expect_err("no peer");
        assert!(err.to_string().contains("needs a peer"), "{err}");
    }
}
