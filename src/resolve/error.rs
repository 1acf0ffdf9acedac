//! Errors and warnings of the resolver.
//!
//! A [`ResolveError`] always renders as one line:
//! `stack <name>: <path>: <reason>`, where the path starts with the section
//! and the logical id or output name (`Resources.Fn.Properties.Code.S3Key`,
//! `Outputs.QueueUrl.Value`, `Parameters.Env`, `Conditions.IsProd`) and
//! continues through intrinsic arguments (`...QueueName.Fn::Join[1][0]`).

use std::fmt;

/// A failure to resolve part of a template. `Display` is exactly one line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("stack {stack}: {path}: {kind}")]
pub struct ResolveError {
    /// The stack whose template was being resolved.
    pub stack: String,
    /// Where in the template, starting with the section and the logical id
    /// or output name.
    pub path: String,
    /// What went wrong.
    pub kind: ResolveErrorKind,
}

impl ResolveError {
    /// True when the failure only means a value is not known *yet* (a
    /// resource not created, an attribute not recorded, an external lookup
    /// not wired): callers computing a best-effort diff may fall back on
    /// these, but never on template mistakes.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self.kind,
            ResolveErrorKind::ResourceUnavailable { .. }
                | ResolveErrorKind::AttributeUnavailable { .. }
                | ResolveErrorKind::Lookup { .. }
                | ResolveErrorKind::ParameterUnresolved { .. }
        )
    }
}

/// The reason part of a [`ResolveError`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResolveErrorKind {
    /// `Ref` / `Fn::GetAtt` / `${...}` naming nothing this template declares.
    #[error("{function} to unknown logical id '{name}' (not a parameter, pseudo parameter or resource of this template; a resource whose Condition is false is not part of it)")]
    UnknownLogicalId {
        function: &'static str,
        name: String,
    },
    /// A pseudo parameter CloudFormation does not define.
    #[error("unknown pseudo parameter '{0}'")]
    UnknownPseudoParameter(String),
    /// `AWS::AccountId` (or `AWS::StackId`) with no account id known: refused
    /// rather than replaced by a placeholder.
    #[error("{0} needs the AWS account id, which is not known (no credentials resolved it and AWS_ACCOUNT_ID is not set); refusing to substitute a placeholder")]
    AccountIdUnknown(&'static str),
    /// The resource exists in the template but has no physical id yet.
    #[error("Ref to resource '{0}' cannot be resolved: it has no physical id yet")]
    ResourceUnavailable(String),
    /// The resource exists but the attribute is not known.
    #[error("Fn::GetAtt {resource}.{attribute} cannot be resolved: the attribute is not known for this resource")]
    AttributeUnavailable { resource: String, attribute: String },
    /// Conditions may only use parameters, pseudo parameters and mappings.
    #[error("a condition cannot reference resource '{0}'")]
    ResourceInCondition(String),
    /// An intrinsic function with arguments of the wrong shape.
    #[error("{function}: {message}")]
    InvalidArguments {
        function: &'static str,
        message: String,
    },
    /// A value of the wrong type where a string / list / boolean is needed.
    #[error("{function}: expected {expected}, got {got}")]
    WrongType {
        function: &'static str,
        expected: &'static str,
        got: String,
    },
    /// `Fn::Select` past the end of its list.
    #[error("Fn::Select: index {index} is out of range for a list of {len} element(s)")]
    IndexOutOfRange { index: i64, len: usize },
    /// `Fn::FindInMap` with no matching entry and no `DefaultValue`.
    #[error("Fn::FindInMap: {0}")]
    MappingMiss(String),
    /// `Fn::Cidr` asked for subnets that do not fit.
    #[error("Fn::Cidr: {0}")]
    Cidr(String),
    /// An `Fn::*` key the resolver does not implement.
    #[error("unsupported intrinsic function {0}")]
    UnsupportedFunction(String),
    /// `AWS::NoValue` where a value is required.
    #[error("{0} cannot be AWS::NoValue")]
    NoValue(&'static str),
    /// A condition name not in the Conditions section.
    #[error("unknown condition '{0}'")]
    UnknownCondition(String),
    /// Conditions that refer to each other in a loop.
    #[error("conditions refer to each other in a cycle: {0}")]
    ConditionCycle(String),
    /// A condition that does not evaluate to true or false.
    #[error("condition does not evaluate to true or false (got {0})")]
    NotBoolean(String),
    /// Nesting deeper than the resolver follows.
    #[error("value is nested more than {0} levels deep")]
    TooDeep(usize),
    /// A parameter with neither an override nor a Default.
    #[error("parameter has no value: pass one with --parameters {stack}:{name}=VALUE or give it a Default")]
    ParameterMissing { stack: String, name: String },
    /// A parameter value that breaks one of its constraints.
    #[error("{rule}: {message}")]
    ParameterConstraint { rule: &'static str, message: String },
    /// A parameter `Type` the resolver does not know.
    #[error("unsupported parameter type '{0}'")]
    ParameterType(String),
    /// A stack-qualified override naming a parameter the template lacks.
    #[error("--parameters names '{0}', which this stack's template does not declare")]
    UnknownParameterOverride(String),
    /// A parameter whose value could not be looked up (an SSM-typed one).
    #[error("parameter '{name}' has no value: {reason}")]
    ParameterUnresolved { name: String, reason: String },
    /// An external lookup (import, stack output, AZs, SSM) failed.
    #[error("{function}: {error}")]
    Lookup {
        function: &'static str,
        error: LookupError,
    },
}

/// Why an external lookup gave no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// The lookup is not wired into this resolver (the default).
    #[error("{0} is not available here")]
    NotAvailable(String),
    /// The lookup ran and failed (not found, access denied, ...).
    #[error("{0}")]
    Failed(String),
}

/// Something resolved, but not quite as written (e.g. an `Fn::Sub`
/// placeholder kept literally).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveWarning {
    pub stack: String,
    pub path: String,
    pub message: String,
}

impl fmt::Display for ResolveWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stack {}: {}: {}", self.stack, self.path, self.message)
    }
}

/// A short description of a JSON value's type, for messages. Never shows
/// the value itself (it may be a secret).
pub(crate) fn type_name(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(_) => "a number".into(),
        Value::String(_) => "a string".into(),
        Value::Array(a) => format!("a list of {}", a.len()),
        Value::Object(m) => match m.keys().next() {
            Some(k) if m.len() == 1 && (k == "Ref" || k.starts_with("Fn::")) => {
                format!("an unresolved {k}")
            }
            _ => "an object".into(),
        },
    }
}
