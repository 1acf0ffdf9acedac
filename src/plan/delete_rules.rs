//! Implicit delete-order edges.
//!
//! Some AWS deletes fail, or hang until they time out, while a resource that
//! does not reference the one being deleted still uses it: a VPC cannot go
//! while a subnet is in it, an internet gateway cannot be detached while a
//! NAT gateway's public address is mapped in the VPC. CloudFormation users
//! rely on it ordering these deletes anyway, so the graph carries an extra
//! edge for each such pair, used only when deleting.
//!
//! The rules are a small table ([`DELETE_RULES`]): resources of the
//! `first` types are deleted before a resource of the `then` type when the
//! [`Link`] between them holds. Links are derived from the properties:
//! references (`Ref`, `Fn::GetAtt`, `Fn::Sub`) to another resource, a
//! literal equal to another resource's physical id (resolved properties
//! from state), or an equal `VpcId` value.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::refs::references;

/// One implicit delete-order rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeleteRule {
    /// Names the rule on the edges it adds ([`super::Edge::delete_rule`]).
    pub name: &'static str,
    /// Resource types deleted first.
    pub first: &'static [&'static str],
    /// The resource type deleted after them.
    pub then: &'static str,
    pub link: Link,
}

/// When a `first` resource and a `then` resource are related.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Both belong to the same VPC. A resource's VPC is: itself for an
    /// `AWS::EC2::VPC`; the VPC its `VpcId` names (or, for a `VpcId` naming
    /// nothing in the stack, the `VpcId` value itself, so two resources with
    /// the same literal or parameter `VpcId` share a VPC); else the VPC of
    /// the resource a property in [`VPC_VIA`] names (a route through its
    /// route table, a NAT gateway through its subnet); else, for an
    /// `AWS::EC2::EIP`, the VPC of the NAT gateway that uses it.
    SameVpc,
    /// One of these properties of the `first` resource names the `then`
    /// resource (the value, or any element of a list value).
    Names(&'static [&'static str]),
}

const VPC: &str = "AWS::EC2::VPC";

/// The implicit delete rules.
pub const DELETE_RULES: &[DeleteRule] = &[
    // Detaching an internet gateway fails while the VPC has mapped public
    // addresses, and a route through the gateway is left blackholed: routes,
    // NAT gateways and Elastic IPs of the VPC go before the attachment.
    DeleteRule {
        name: "gateway-detach-last",
        first: &["AWS::EC2::Route", "AWS::EC2::NatGateway", "AWS::EC2::EIP"],
        then: "AWS::EC2::VPCGatewayAttachment",
        link: Link::SameVpc,
    },
    // A VPC cannot be deleted while it has dependencies: subnets, route
    // tables, security groups, network ACLs and gateway attachments go first.
    DeleteRule {
        name: "vpc-last",
        first: &[
            "AWS::EC2::Subnet",
            "AWS::EC2::RouteTable",
            "AWS::EC2::SecurityGroup",
            "AWS::EC2::NetworkAcl",
            "AWS::EC2::VPCGatewayAttachment",
        ],
        then: VPC,
        link: Link::SameVpc,
    },
    // A function's permissions, event source mappings, URLs and invoke
    // configs are removed before the function they name.
    DeleteRule {
        name: "lambda-function-last",
        first: &[
            "AWS::Lambda::Permission",
            "AWS::Lambda::EventSourceMapping",
            "AWS::Lambda::EventInvokeConfig",
            "AWS::Lambda::Url",
        ],
        then: "AWS::Lambda::Function",
        link: Link::Names(&["FunctionName", "TargetFunctionArn"]),
    },
    // A role cannot be deleted while a policy or instance profile is
    // attached to it: those that list it in `Roles` go first.
    DeleteRule {
        name: "iam-role-last",
        first: &[
            "AWS::IAM::Policy",
            "AWS::IAM::ManagedPolicy",
            "AWS::IAM::InstanceProfile",
        ],
        then: "AWS::IAM::Role",
        link: Link::Names(&["Roles"]),
    },
    // A subnet or route table with an association cannot be deleted: the
    // association goes first.
    DeleteRule {
        name: "route-table-association-first",
        first: &["AWS::EC2::SubnetRouteTableAssociation"],
        then: "AWS::EC2::Subnet",
        link: Link::Names(&["SubnetId"]),
    },
    DeleteRule {
        name: "route-table-association-first",
        first: &["AWS::EC2::SubnetRouteTableAssociation"],
        then: "AWS::EC2::RouteTable",
        link: Link::Names(&["RouteTableId"]),
    },
];

/// How a resource without a `VpcId` of its own reaches its VPC: through the
/// resource this property names.
pub const VPC_VIA: &[(&str, &str)] = &[
    ("AWS::EC2::Route", "RouteTableId"),
    ("AWS::EC2::NatGateway", "SubnetId"),
    ("AWS::EC2::SubnetRouteTableAssociation", "SubnetId"),
    ("AWS::EC2::SubnetRouteTableAssociation", "RouteTableId"),
];

/// A resource whose VPC is that of the resource naming it: (type, type of
/// the referrer, the referrer's property).
const VPC_OF_REFERRER: &[(&str, &str, &str)] =
    &[("AWS::EC2::EIP", "AWS::EC2::NatGateway", "AllocationId")];

/// What the rules see of one resource.
#[derive(Debug, Clone, Copy)]
pub(super) struct RuleNode<'a> {
    pub id: &'a str,
    pub type_: &'a str,
    pub properties: Option<&'a Map<String, Value>>,
    pub physical_id: Option<&'a str>,
}

/// `first` must be deleted before `then` (positions in the node list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ImplicitEdge {
    pub first: usize,
    pub then: usize,
    pub rule: &'static str,
}

#[derive(Debug, Clone, PartialEq)]
enum VpcKey {
    Node(usize),
    Value(Value),
}

struct Rules<'n, 'a> {
    nodes: &'n [RuleNode<'a>],
    by_id: HashMap<&'a str, usize>,
    by_physical: HashMap<&'a str, usize>,
}

/// The implicit edges among `nodes`, rule by rule, in node order.
pub(super) fn implicit_edges(nodes: &[RuleNode]) -> Vec<ImplicitEdge> {
    let r = Rules {
        nodes,
        by_id: nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect(),
        by_physical: nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.physical_id.map(|p| (p, i)))
            .collect(),
    };
    let vpcs: Vec<Option<VpcKey>> = (0..nodes.len()).map(|i| r.vpc_of(i, 0)).collect();
    let mut out = Vec::new();
    for rule in DELETE_RULES {
        for (f, first) in nodes.iter().enumerate() {
            if !rule.first.contains(&first.type_) {
                continue;
            }
            for (t, then) in nodes.iter().enumerate() {
                if then.type_ != rule.then || f == t {
                    continue;
                }
                let linked = match rule.link {
                    Link::SameVpc => vpcs[f].is_some() && vpcs[f] == vpcs[t],
                    Link::Names(props) => props.iter().any(|p| r.named_by(f, p).contains(&t)),
                };
                if linked {
                    out.push(ImplicitEdge {
                        first: f,
                        then: t,
                        rule: rule.name,
                    });
                }
            }
        }
    }
    out
}

/// Chains longer than this (route → route table → ...) are not followed.
const MAX_HOPS: usize = 8;

impl Rules<'_, '_> {
    fn prop(&self, i: usize, name: &str) -> Option<&Value> {
        self.nodes[i].properties?.get(name)
    }

    /// The resources property `name` of node `i` names: references, or
    /// literal strings equal to a physical id.
    fn named_by(&self, i: usize, name: &str) -> Vec<usize> {
        self.prop(i, name)
            .map(|v| self.named_in(v))
            .unwrap_or_default()
    }

    fn named_in(&self, value: &Value) -> Vec<usize> {
        let mut out: Vec<usize> = references(value)
            .iter()
            .filter_map(|r| self.by_id.get(r.target.as_str()).copied())
            .collect();
        let literals: Vec<&str> = match value {
            Value::String(s) => vec![s.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        out.extend(
            literals
                .iter()
                .filter_map(|s| self.by_physical.get(s).copied()),
        );
        out
    }

    fn vpc_of(&self, i: usize, hops: usize) -> Option<VpcKey> {
        if hops > MAX_HOPS {
            return None;
        }
        let node = &self.nodes[i];
        if node.type_ == VPC {
            return Some(VpcKey::Node(i));
        }
        if let Some(v) = self.prop(i, "VpcId") {
            let named = self.named_in(v);
            return Some(match named.iter().find(|&&n| self.nodes[n].type_ == VPC) {
                Some(&n) => VpcKey::Node(n),
                None => VpcKey::Value(v.clone()),
            });
        }
        for (type_, prop) in VPC_VIA {
            if node.type_ != *type_ {
                continue;
            }
            for n in self.named_by(i, prop) {
                if let Some(k) = self.vpc_of(n, hops + 1) {
                    return Some(k);
                }
            }
        }
        for (type_, referrer, prop) in VPC_OF_REFERRER {
            if node.type_ != *type_ {
                continue;
            }
            for (j, other) in self.nodes.iter().enumerate() {
                if other.type_ == *referrer && self.named_by(j, prop).contains(&i) {
                    if let Some(k) = self.vpc_of(j, hops + 1) {
                        return Some(k);
                    }
                }
            }
        }
        None
    }
}
