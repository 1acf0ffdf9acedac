//! IAM statements and managed-policy attachments read from resource properties (the module
//! doc of `security` lists the types), and their additions and removals.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{multiset_diff, render_value, Sides, Sign};

/// Identities whose `Policies` are inline identity policies and `ManagedPolicyArns` managed
/// attachments.
const IDENTITIES: &[&str] = &["AWS::IAM::Role", "AWS::IAM::User", "AWS::IAM::Group"];

/// Policy resources that apply their `PolicyDocument` to the identities they list.
const IDENTITY_POLICY_RESOURCES: &[&str] = &["AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"];

/// Policy resources that apply their `PolicyDocument` to the resources under the key named.
const RESOURCE_POLICY_RESOURCES: &[(&str, &str)] = &[
    ("AWS::SQS::QueuePolicy", "Queues"),
    ("AWS::SNS::TopicPolicy", "Topics"),
    ("AWS::S3::BucketPolicy", "Bucket"),
];

/// A resource's own policy document, applying to the resource itself (`${Id.Arn}`).
pub(super) const INLINE_RESOURCE_POLICIES: &[(&str, &str)] = &[
    ("AWS::IAM::Role", "AssumeRolePolicyDocument"),
    ("AWS::KMS::Key", "KeyPolicy"),
    ("AWS::ECR::Repository", "RepositoryPolicyText"),
    ("AWS::S3::AccessPoint", "Policy"),
    ("AWS::OpenSearchService::Domain", "AccessPolicies"),
    ("AWS::Elasticsearch::Domain", "AccessPolicies"),
];

const LAMBDA_PERMISSION: &str = "AWS::Lambda::Permission";

pub(super) fn is_scrutinized(t: &str) -> bool {
    IDENTITIES.contains(&t)
        || IDENTITY_POLICY_RESOURCES.contains(&t)
        || RESOURCE_POLICY_RESOURCES.iter().any(|(r, _)| *r == t)
        || INLINE_RESOURCE_POLICIES.iter().any(|(r, _)| *r == t)
        || t == LAMBDA_PERMISSION
}

/// One row of the IAM statement table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatementRow {
    pub sign: Sign,
    pub resource: String,
    pub effect: String,
    pub action: String,
    pub principal: String,
    pub condition: String,
}

/// One row of the managed-policy table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedPolicyRow {
    pub sign: Sign,
    pub resource: String,
    pub managed_policy_arn: String,
}

/// `Action` / `NotAction` and the like: the values as text, sorted, and whether negated.
#[derive(Debug, Clone, PartialEq, Default)]
struct Targets {
    not: bool,
    values: Vec<String>,
}

impl Targets {
    fn read(statement: &Map<String, Value>, positive: &str, negative: &str) -> Targets {
        let (not, value) = match statement.get(negative) {
            Some(v) => (true, Some(v)),
            None => (false, statement.get(positive)),
        };
        let mut values = value.map(texts).unwrap_or_default();
        values.sort();
        Targets { not, values }
    }

    /// An empty or `*` target read as `what` (the identity or resource the policy is on).
    fn default_to(&mut self, what: &str) {
        if self.values.is_empty() {
            self.values.push(what.to_owned());
        }
        for v in &mut self.values {
            if v == "*" {
                *v = what.to_owned();
            }
        }
        self.values.sort();
    }

    fn render(&self) -> String {
        if self.not {
            let negated: Vec<String> = self.values.iter().map(|v| format!("NOT {v}")).collect();
            negated.join("\n")
        } else {
            self.values.join("\n")
        }
    }
}

/// A value as the list of texts a table cell shows: a string is itself, a list its items
/// (a nested list joined by commas), a principal object `Service:sns.amazonaws.com` per value.
fn texts(v: &Value) -> Vec<String> {
    match v {
        Value::Null => Vec::new(),
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().map(|i| texts(i).join(",")).collect(),
        Value::Object(m) if is_intrinsic(m) => vec![render_value(v)],
        Value::Object(m) => m
            .iter()
            .flat_map(|(k, v)| texts(v).into_iter().map(move |s| format!("{k}:{s}")))
            .collect(),
        other => vec![other.to_string()],
    }
}

fn is_intrinsic(m: &Map<String, Value>) -> bool {
    m.len() == 1
        && m.keys()
            .next()
            .is_some_and(|k| k == "Ref" || k.starts_with("Fn::"))
}

#[derive(Debug, Clone, PartialEq)]
struct Statement {
    sid: Option<String>,
    effect: String,
    resources: Targets,
    actions: Targets,
    principals: Targets,
    condition: Option<Value>,
    /// A statement written as an intrinsic (an `Fn::If`): shown as its text.
    opaque: Option<String>,
}

impl Statement {
    fn parse(v: &Value) -> Statement {
        match v {
            Value::Object(m) if !is_intrinsic(m) => Statement {
                sid: m.get("Sid").and_then(Value::as_str).map(str::to_owned),
                effect: match m.get("Effect").and_then(Value::as_str) {
                    Some(e @ ("Allow" | "Deny")) => e.to_owned(),
                    _ => "Unknown".to_owned(),
                },
                resources: Targets::read(m, "Resource", "NotResource"),
                actions: Targets::read(m, "Action", "NotAction"),
                principals: Targets::read(m, "Principal", "NotPrincipal"),
                condition: m
                    .get("Condition")
                    .filter(|c| c.as_object().is_some_and(|c| !c.is_empty()))
                    .cloned(),
                opaque: None,
            },
            other => Statement {
                sid: None,
                effect: "Unknown".to_owned(),
                resources: Targets::default(),
                actions: Targets::default(),
                principals: Targets::default(),
                condition: None,
                opaque: Some(render_value(other)),
            },
        }
    }

    /// Negative: it takes permissions away (a Deny, or an Allow of `NotAction` and the like).
    fn is_negative(&self) -> bool {
        let not = self.actions.not || self.principals.not || self.resources.not;
        if self.effect == "Allow" {
            not
        } else {
            !not
        }
    }

    fn row(&self, sign: Sign) -> StatementRow {
        match &self.opaque {
            Some(text) => StatementRow {
                sign,
                resource: text.clone(),
                effect: String::new(),
                action: String::new(),
                principal: self.principals.render(),
                condition: String::new(),
            },
            None => StatementRow {
                sign,
                resource: self.resources.render(),
                effect: self.effect.clone(),
                action: self.actions.render(),
                principal: self.principals.render(),
                condition: render_condition(self.condition.as_ref()),
            },
        }
    }
}

/// The Condition cell: its JSON, pretty-printed, without the outer braces and their indent.
fn render_condition(condition: Option<&Value>) -> String {
    let Some(c) = condition else {
        return String::new();
    };
    let text = serde_json::to_string_pretty(c).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() < 2 {
        return text;
    }
    lines[1..lines.len() - 1]
        .iter()
        .map(|l| l.strip_prefix("  ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A document's statements (a single statement or a list of them).
fn statements(document: Option<&Value>) -> Vec<Statement> {
    match document.and_then(|d| d.get("Statement")) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().map(Statement::parse).collect(),
        Some(one) => vec![Statement::parse(one)],
    }
}

fn with_default_principal(mut s: Vec<Statement>, principal: &str) -> Vec<Statement> {
    for st in &mut s {
        st.principals.default_to(principal);
    }
    s
}

fn with_default_resource(mut s: Vec<Statement>, resource: &str) -> Vec<Statement> {
    for st in &mut s {
        st.resources.default_to(resource);
    }
    s
}

/// The values of a list property as texts (a single value is a list of one).
fn list(v: Option<&Value>) -> Vec<String> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().map(render_value).collect(),
        Some(one) => vec![render_value(one)],
    }
}

/// The statement Lambda adds to a function's policy for an `AWS::Lambda::Permission`.
fn lambda_statement(p: &Map<String, Value>) -> Statement {
    let mut s = Map::new();
    s.insert("Effect".into(), Value::String("Allow".into()));
    if let Some(a) = p.get("Action") {
        s.insert("Action".into(), a.clone());
    }
    if let Some(f) = p.get("FunctionName") {
        s.insert("Resource".into(), f.clone());
    }
    if let Some(principal) = p.get("Principal") {
        let text = render_value(principal);
        let value = if text == "*" {
            Value::String(text)
        } else if text.len() == 12 && text.bytes().all(|b| b.is_ascii_digit()) {
            serde_json::json!({ "AWS": format!("arn:aws:iam::{text}:root") })
        } else if text.starts_with("arn:") {
            serde_json::json!({ "AWS": text })
        } else {
            serde_json::json!({ "Service": text })
        };
        s.insert("Principal".into(), value);
    }
    let mut condition = Map::new();
    if let Some(arn) = p.get("SourceArn") {
        condition.insert(
            "ArnLike".into(),
            serde_json::json!({ "AWS:SourceArn": arn }),
        );
    }
    if let Some(account) = p.get("SourceAccount") {
        condition.insert(
            "StringEquals".into(),
            serde_json::json!({ "AWS:SourceAccount": account }),
        );
    }
    if let Some(token) = p.get("EventSourceToken") {
        condition.insert(
            "StringEquals".into(),
            serde_json::json!({ "lambda:EventSourceToken": token }),
        );
    }
    if !condition.is_empty() {
        s.insert("Condition".into(), Value::Object(condition));
    }
    Statement::parse(&Value::Object(s))
}

/// The statements and managed attachments one side of a resource holds.
fn extract(t: &str, id: &str, p: &Map<String, Value>) -> (Vec<Statement>, Vec<(String, String)>) {
    let mut out = Vec::new();
    let mut managed = Vec::new();
    if IDENTITIES.contains(&t) {
        let principal = format!("AWS:${{{id}}}");
        if let Some(Value::Array(policies)) = p.get("Policies") {
            for policy in policies {
                let parsed = match policy.get("PolicyDocument") {
                    Some(doc) if doc.get("Statement").is_some() => statements(Some(doc)),
                    _ => vec![Statement::parse(policy)],
                };
                out.extend(with_default_principal(parsed, &principal));
            }
        }
        for arn in list(p.get("ManagedPolicyArns")) {
            managed.push((format!("${{{id}}}"), arn));
        }
    }
    if IDENTITY_POLICY_RESOURCES.contains(&t) {
        let identities = [
            list(p.get("Groups")),
            list(p.get("Users")),
            list(p.get("Roles")),
        ]
        .concat();
        for identity in identities {
            let parsed = statements(p.get("PolicyDocument"));
            out.extend(with_default_principal(parsed, &format!("AWS:{identity}")));
        }
    }
    if let Some((_, key)) = RESOURCE_POLICY_RESOURCES.iter().find(|(r, _)| *r == t) {
        for resource in list(p.get(*key)) {
            out.extend(with_default_resource(
                statements(p.get("PolicyDocument")),
                &resource,
            ));
        }
    }
    for (_, key) in INLINE_RESOURCE_POLICIES.iter().filter(|(r, _)| *r == t) {
        let doc = p.get(*key);
        out.extend(with_default_resource(
            statements(doc),
            &format!("${{{id}.Arn}}"),
        ));
    }
    if t == LAMBDA_PERMISSION {
        out.push(lambda_statement(p));
    }
    (out, managed)
}

/// Both sides of every resource read, then compared.
#[derive(Default)]
pub(super) struct Collected {
    old: Vec<Statement>,
    new: Vec<Statement>,
    old_managed: Vec<(String, String)>,
    new_managed: Vec<(String, String)>,
}

impl Collected {
    pub fn read(&mut self, sides: &Sides<'_>) {
        if !is_scrutinized(sides.resource_type) {
            return;
        }
        if let Some(p) = sides.old {
            let (s, m) = extract(sides.resource_type, sides.logical_id, p);
            self.old.extend(s);
            self.old_managed.extend(m);
        }
        if let Some(p) = sides.new {
            let (s, m) = extract(sides.resource_type, sides.logical_id, p);
            self.new.extend(s);
            self.new_managed.extend(m);
        }
    }

    /// The statement rows, the managed-policy rows, and whether they broaden permissions.
    pub fn finish(self) -> (Vec<StatementRow>, Vec<ManagedPolicyRow>, bool) {
        let (added, removed) = multiset_diff(&self.old, &self.new);
        let broadening =
            added.iter().any(|s| !s.is_negative()) || removed.iter().any(Statement::is_negative);
        let mut rows: Vec<StatementRow> = added
            .iter()
            .map(|s| s.row(Sign::Added))
            .chain(removed.iter().map(|s| s.row(Sign::Removed)))
            .collect();
        rows.sort_by(|a, b| a.resource.cmp(&b.resource));
        let (attached, detached) = multiset_diff(&self.old_managed, &self.new_managed);
        let mut managed: Vec<ManagedPolicyRow> = attached
            .iter()
            .map(|a| (Sign::Added, a))
            .chain(detached.iter().map(|d| (Sign::Removed, d)))
            .map(|(sign, (resource, arn))| ManagedPolicyRow {
                sign,
                resource: resource.clone(),
                managed_policy_arn: arn.clone(),
            })
            .collect();
        managed.sort_by(|a, b| a.resource.cmp(&b.resource));
        (rows, managed, broadening || !attached.is_empty())
    }
}
