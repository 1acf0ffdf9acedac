//! The security-relevant part of a change: IAM statements, managed-policy attachments and
//! security-group rules a deploy adds or removes, as the CDK CLI's `cdk diff` tables show them,
//! and whether the change *broadens* permissions (what `--require-approval broadening` asks
//! about).
//!
//! Pure: the input is each changing resource's properties before (the state record's, what
//! cdkd sent last) and after (what this deploy sends; a value it cannot know yet is shown as
//! `${Logical.Attr}`), the output is rows. Which types and properties count:
//!
//! - identity policies: `AWS::IAM::Role` / `User` / `Group` `Policies`, and the
//!   `AWS::IAM::Policy` / `ManagedPolicy` resources (their `PolicyDocument`, applying to each of
//!   `Roles`, `Users`, `Groups`): an empty or `*` principal reads as the identity;
//! - resource policies: `AssumeRolePolicyDocument`, `KeyPolicy` and the other inline policy
//!   documents of [`iam::INLINE_RESOURCE_POLICIES`], and the `AWS::SQS::QueuePolicy`,
//!   `AWS::SNS::TopicPolicy`, `AWS::S3::BucketPolicy` resources: an empty or `*` resource reads
//!   as the resource the policy is on;
//! - `AWS::Lambda::Permission`: the statement Lambda adds to the function's policy;
//! - managed policies: `ManagedPolicyArns` of a role, user or group;
//! - security groups: `AWS::EC2::SecurityGroup` `SecurityGroupIngress` / `SecurityGroupEgress`
//!   and the `AWS::EC2::SecurityGroupIngress` / `Egress` resources.
//!
//! A statement, attachment or rule counts as added when the after side holds it and the
//! before side holds no equal one (and the other way round for removed). Broadening: an
//! allowing statement added, a denying one removed, a managed policy attached, a
//! security-group rule added.

mod groups;
mod iam;
pub mod render;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use groups::RuleRow;
pub use iam::{ManagedPolicyRow, StatementRow};

/// One changing resource's two sides (`None`: created, or deleted).
pub struct Sides<'a> {
    pub logical_id: &'a str,
    pub resource_type: &'a str,
    pub old: Option<&'a Map<String, Value>>,
    pub new: Option<&'a Map<String, Value>>,
}

/// `+` or `-`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Sign {
    Added,
    Removed,
}

impl Sign {
    pub fn mark(self) -> &'static str {
        match self {
            Sign::Added => "+",
            Sign::Removed => "-",
        }
    }
}

/// The security changes of one stack's deploy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecurityChanges {
    /// IAM statements, sorted by resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statements: Vec<StatementRow>,
    /// Managed policies attached to or detached from an identity, sorted by resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_policies: Vec<ManagedPolicyRow>,
    /// Security-group rules, sorted by group, ingress first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_groups: Vec<RuleRow>,
    /// Whether permissions are broadened (see the module doc).
    #[serde(default)]
    pub broadening: bool,
}

impl SecurityChanges {
    pub fn is_empty(&self) -> bool {
        self.statements.is_empty()
            && self.managed_policies.is_empty()
            && self.security_groups.is_empty()
    }
}

/// Whether `resource_type` can carry a security change (so a caller knows which resources'
/// sides to gather).
pub fn is_scrutinized(resource_type: &str) -> bool {
    iam::is_scrutinized(resource_type) || groups::is_scrutinized(resource_type)
}

/// The security changes of the given resources.
pub fn analyze<'a>(resources: impl IntoIterator<Item = Sides<'a>>) -> SecurityChanges {
    let mut statements = iam::Collected::default();
    let mut rules = groups::Collected::default();
    for sides in resources {
        statements.read(&sides);
        rules.read(&sides);
    }
    let (statement_rows, managed_rows, iam_broadens) = statements.finish();
    let (rule_rows, rules_added) = rules.finish();
    SecurityChanges {
        broadening: iam_broadens || rules_added,
        statements: statement_rows,
        managed_policies: managed_rows,
        security_groups: rule_rows,
    }
}

/// The items of `new` without an equal one in `old`, and the other way round (each item
/// matched once, so two equal statements where there was one is an addition).
fn multiset_diff<T: PartialEq + Clone>(old: &[T], new: &[T]) -> (Vec<T>, Vec<T>) {
    let mut unmatched_old: Vec<Option<&T>> = old.iter().map(Some).collect();
    let mut added = Vec::new();
    for item in new {
        match unmatched_old
            .iter_mut()
            .find(|o| o.is_some_and(|o| o == item))
        {
            Some(slot) => *slot = None,
            None => added.push(item.clone()),
        }
    }
    let removed = unmatched_old.into_iter().flatten().cloned().collect();
    (added, removed)
}

/// A value as table text, the way `cdk diff` shows template values: `{"Ref": "X"}` as
/// `${X}`, `{"Fn::GetAtt": ["X", "Arn"]}` as `${X.Arn}`, `Fn::Join` joined, `Fn::Sub` as
/// its string; anything else as compact JSON.
pub(crate) fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(_) | Value::Number(_) => v.to_string(),
        Value::Object(m) if m.len() == 1 => {
            let (key, arg) = m.iter().next().expect("one entry");
            match (key.as_str(), arg) {
                ("Ref", Value::String(id)) => format!("${{{id}}}"),
                ("Fn::GetAtt", Value::Array(parts)) => {
                    let parts: Vec<String> = parts.iter().map(render_value).collect();
                    format!("${{{}}}", parts.join("."))
                }
                ("Fn::GetAtt", Value::String(path)) => format!("${{{path}}}"),
                ("Fn::Join", Value::Array(parts)) if parts.len() == 2 => {
                    let sep = parts[0].as_str().unwrap_or("");
                    match &parts[1] {
                        Value::Array(items) => {
                            items.iter().map(render_value).collect::<Vec<_>>().join(sep)
                        }
                        other => render_value(other),
                    }
                }
                ("Fn::Sub", Value::String(s)) => s.clone(),
                ("Fn::Sub", Value::Array(parts)) if !parts.is_empty() => render_value(&parts[0]),
                _ => v.to_string(),
            }
        }
        _ => v.to_string(),
    }
}

#[cfg(test)]
mod tests;
