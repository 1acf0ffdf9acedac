//! Security-group rules read from `AWS::EC2::SecurityGroup` (inline ingress and egress) and
//! the `AWS::EC2::SecurityGroupIngress` / `Egress` resources, and their additions and removals.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{multiset_diff, render_value, Sides, Sign};

const GROUP: &str = "AWS::EC2::SecurityGroup";
const INGRESS: &str = "AWS::EC2::SecurityGroupIngress";
const EGRESS: &str = "AWS::EC2::SecurityGroupEgress";

pub(super) fn is_scrutinized(t: &str) -> bool {
    t == GROUP || t == INGRESS || t == EGRESS
}

/// One row of the security-group table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleRow {
    pub sign: Sign,
    pub group: String,
    /// `In` or `Out`.
    pub direction: String,
    pub protocol: String,
    pub peer: String,
}

#[derive(Debug, Clone, PartialEq)]
struct Rule {
    group: String,
    protocol: String,
    from: Option<String>,
    to: Option<String>,
    /// (kind, value): `cidr`, `group` or `prefix-list`.
    peer: Option<(&'static str, String)>,
}

impl Rule {
    fn parse(r: &Map<String, Value>, inline_group: Option<&str>) -> Rule {
        let text = |k: &str| r.get(k).filter(|v| !v.is_null()).map(render_value);
        let first = |keys: &[&str]| keys.iter().find_map(|k| text(k));
        let peer = first(&["CidrIp", "CidrIpv6"])
            .map(|ip| ("cidr", ip))
            .or_else(|| {
                first(&["DestinationSecurityGroupId", "SourceSecurityGroupId"])
                    .map(|g| ("group", g))
            })
            .or_else(|| {
                first(&["DestinationPrefixListId", "SourcePrefixListId"])
                    .map(|p| ("prefix-list", p))
            });
        Rule {
            group: text("GroupId")
                .or_else(|| inline_group.map(str::to_owned))
                .unwrap_or_else(|| "*unknown*".to_owned()),
            protocol: text("IpProtocol").unwrap_or_else(|| "*unknown*".to_owned()),
            from: text("FromPort"),
            to: text("ToPort"),
            peer,
        }
    }

    fn describe_protocol(&self) -> String {
        if self.protocol == "-1" {
            return "Everything".to_owned();
        }
        let protocol = self.protocol.to_uppercase();
        match (&self.from, &self.to) {
            (Some(f), _) if f == "-1" => format!("All {protocol}"),
            (Some(f), Some(t)) if f == t => format!("{protocol} {f}"),
            (Some(f), Some(t)) => format!("{protocol} {f}-{t}"),
            (Some(f), None) => format!("{protocol} {f}"),
            (None, _) => protocol,
        }
    }

    fn describe_peer(&self) -> String {
        match &self.peer {
            Some(("cidr", ip)) if ip == "0.0.0.0/0" => "Everyone (IPv4)".to_owned(),
            Some(("cidr", ip)) if ip == "::/0" => "Everyone (IPv6)".to_owned(),
            Some((_, v)) => v.clone(),
            None => "?".to_owned(),
        }
    }

    fn row(&self, sign: Sign, direction: &str) -> RuleRow {
        RuleRow {
            sign,
            group: self.group.clone(),
            direction: direction.to_owned(),
            protocol: self.describe_protocol(),
            peer: self.describe_peer(),
        }
    }
}

fn inline(rules: Option<&Value>, group: &str) -> Vec<Rule> {
    match rules {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_object)
            .map(|r| Rule::parse(r, Some(group)))
            .collect(),
        _ => Vec::new(),
    }
}

/// (ingress, egress) of one side of a resource.
fn extract(t: &str, id: &str, p: &Map<String, Value>) -> (Vec<Rule>, Vec<Rule>) {
    match t {
        GROUP => {
            let group = format!("${{{id}.GroupId}}");
            (
                inline(p.get("SecurityGroupIngress"), &group),
                inline(p.get("SecurityGroupEgress"), &group),
            )
        }
        INGRESS => (vec![Rule::parse(p, None)], Vec::new()),
        EGRESS => (Vec::new(), vec![Rule::parse(p, None)]),
        _ => (Vec::new(), Vec::new()),
    }
}

#[derive(Default)]
pub(super) struct Collected {
    old_in: Vec<Rule>,
    new_in: Vec<Rule>,
    old_out: Vec<Rule>,
    new_out: Vec<Rule>,
}

impl Collected {
    pub fn read(&mut self, sides: &Sides<'_>) {
        if !is_scrutinized(sides.resource_type) {
            return;
        }
        if let Some(p) = sides.old {
            let (i, o) = extract(sides.resource_type, sides.logical_id, p);
            self.old_in.extend(i);
            self.old_out.extend(o);
        }
        if let Some(p) = sides.new {
            let (i, o) = extract(sides.resource_type, sides.logical_id, p);
            self.new_in.extend(i);
            self.new_out.extend(o);
        }
    }

    /// The rows (by group, ingress first) and whether a rule was added.
    pub fn finish(self) -> (Vec<RuleRow>, bool) {
        let (in_added, in_removed) = multiset_diff(&self.old_in, &self.new_in);
        let (out_added, out_removed) = multiset_diff(&self.old_out, &self.new_out);
        let added = !in_added.is_empty() || !out_added.is_empty();
        let mut rows: Vec<RuleRow> = in_added
            .iter()
            .map(|r| r.row(Sign::Added, "In"))
            .chain(out_added.iter().map(|r| r.row(Sign::Added, "Out")))
            .chain(in_removed.iter().map(|r| r.row(Sign::Removed, "In")))
            .chain(out_removed.iter().map(|r| r.row(Sign::Removed, "Out")))
            .collect();
        rows.sort_by(|a, b| {
            (a.group.as_str(), a.direction != "In").cmp(&(b.group.as_str(), b.direction != "In"))
        });
        (rows, added)
    }
}
