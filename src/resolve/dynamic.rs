//! Dynamic references: `{{resolve:ssm:...}}`, `{{resolve:ssm-secure:...}}`
//! and `{{resolve:secretsmanager:...}}`.
//!
//! They are substituted in a post-pass over values the resolver has already
//! produced, so a reference assembled by `Fn::Sub` / `Fn::Join` / `Ref` is
//! found as well as a literal one. A reference may stand inside a longer
//! string, and one string may hold several.
//!
//! A reference is looked up in the region its ARN names, else in the stack's
//! region. Which references count as secret-bearing is decided by type:
//! every `secretsmanager` and `ssm-secure` one, and an `ssm` one whose
//! parameter turns out to be a `SecureString`. Those are recorded in a
//! [`SecretsMap`] (position → the expression to persist, plus the plaintexts
//! for redaction); a `String` / `StringList` parameter is public and stays
//! resolved. Errors name the stack, the position and the reference, never a
//! fetched value.

use std::fmt;

use indexmap::IndexMap;
use serde_json::Value;

use super::context::ResolveContext;
use super::error::{LookupError, ResolveError, ResolveErrorKind};
use crate::redact::MASK;

/// What opens a dynamic reference.
pub const DYNAMIC_REFERENCE_OPENER: &str = "{{resolve:";
const CLOSER: &str = "}}";
/// The `function` errors about a dynamic reference carry.
pub const DYNAMIC_REFERENCE_FUNCTION: &str = "dynamic reference";

/// One parsed dynamic reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicReference {
    /// The reference as written, braces included.
    pub text: String,
    pub target: ReferenceTarget,
}

/// What a reference reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferenceTarget {
    /// `ssm` (`secure == false`) or `ssm-secure`: a parameter name or ARN and
    /// an optional selector: a version number or a parameter label, the two
    /// selectors SSM's `name:selector` accepts.
    Ssm {
        name: String,
        version: Option<SsmSelector>,
        secure: bool,
    },
    /// `secretsmanager`: a secret name or ARN, then the optional
    /// `SecretString`, JSON key, version stage and version id.
    SecretsManager {
        secret_id: String,
        json_key: Option<String>,
        version_stage: Option<String>,
        version_id: Option<String>,
    },
}

/// Which version of an SSM parameter a reference reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SsmSelector {
    /// A version number (1 or more).
    Version(u64),
    /// A parameter label (`prod`, `release-2`).
    Label(String),
}

impl fmt::Display for SsmSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SsmSelector::Version(v) => write!(f, "{v}"),
            SsmSelector::Label(l) => f.write_str(l),
        }
    }
}

impl SsmSelector {
    /// A version number (digits only, at least 1), or a label as SSM allows
    /// one: up to 100 letters, digits, `.`, `-` and `_`, starting with a
    /// letter, and not starting with `aws` or `ssm` in any case.
    pub fn parse(text: &str) -> Result<SsmSelector, String> {
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            return match text.parse::<u64>() {
                Ok(v) if v >= 1 => Ok(SsmSelector::Version(v)),
                _ => Err(format!(
                    "the version '{text}' is not a parameter version (a positive integer)"
                )),
            };
        }
        let lower = text.to_ascii_lowercase();
        let valid_label = text.len() <= 100
            && text.starts_with(|c: char| c.is_ascii_alphabetic())
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            && !lower.starts_with("aws")
            && !lower.starts_with("ssm");
        if valid_label {
            Ok(SsmSelector::Label(text.to_string()))
        } else {
            Err(format!(
                "the version '{text}' is neither a parameter version (a positive integer) nor a \
                 parameter label (letters, digits, '.', '-' and '_', starting with a letter and \
                 not with 'aws' or 'ssm', at most 100 characters)"
            ))
        }
    }
}

/// What to fetch for a reference: one fetch serves every JSON key of a
/// secret version.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FetchKey {
    /// GetParameter (with decryption) of `name` (`name:selector` for a
    /// version or a label).
    Parameter { region: String, name: String },
    /// GetSecretValue.
    Secret {
        region: String,
        secret_id: String,
        version_stage: Option<String>,
        version_id: Option<String>,
    },
}

impl FetchKey {
    pub fn region(&self) -> &str {
        match self {
            FetchKey::Parameter { region, .. } | FetchKey::Secret { region, .. } => region,
        }
    }
}

/// A fetched parameter or secret. `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub enum Fetched {
    Parameter { value: String, secure: bool },
    Secret { value: String },
}

impl fmt::Debug for Fetched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fetched::Parameter { secure, .. } => {
                write!(f, "Fetched::Parameter {{ secure: {secure}, .. }}")
            }
            Fetched::Secret { .. } => f.write_str("Fetched::Secret { .. }"),
        }
    }
}

/// A reference that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reference}: {message}")]
pub struct DynamicParseError {
    /// The reference text (or its start, when it is not closed).
    pub reference: String,
    pub message: String,
}

/// A piece of a string: literal text or a reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment<'a> {
    Text(&'a str),
    Reference(DynamicReference),
}

/// The key of the resolver's stand-in for `Fn::Base64` over text holding a dynamic reference.
/// The reference is only substituted by the post-pass, so the encoding waits for it there;
/// a resolved value never holds an intrinsic's key otherwise.
pub const BASE64_PENDING: &str = "Fn::Base64";

/// `Fn::Base64` of `text`, encoded once its references are substituted.
pub fn base64_pending(text: String) -> Value {
    let mut m = serde_json::Map::new();
    m.insert(BASE64_PENDING.to_owned(), Value::String(text));
    Value::Object(m)
}

/// The text a [`base64_pending`] value waits to encode.
pub fn pending_base64_text(v: &Value) -> Option<&str> {
    match v {
        Value::Object(m) if m.len() == 1 => m.get(BASE64_PENDING)?.as_str(),
        _ => None,
    }
}

/// `value` with every pending `Fn::Base64` encoded as written (references unsubstituted):
/// what a caller with nothing fetched sends, as before the encoding waited.
pub fn encode_pending_as_written(value: &Value) -> Value {
    if let Some(text) = pending_base64_text(value) {
        return Value::String(super::functions::base64(text.as_bytes()));
    }
    match value {
        Value::Array(items) => Value::Array(items.iter().map(encode_pending_as_written).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), encode_pending_as_written(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether `text` holds a dynamic-reference opener.
pub fn contains_dynamic_reference(text: &str) -> bool {
    text.contains(DYNAMIC_REFERENCE_OPENER)
}

/// Splits `text` into literal text and references. An opener with no `}}`
/// after it, an unknown service or a malformed reference is an error.
pub fn split_references(text: &str) -> Result<Vec<Segment<'_>>, DynamicParseError> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(DYNAMIC_REFERENCE_OPENER) {
        if open > 0 {
            out.push(Segment::Text(&rest[..open]));
        }
        let after = &rest[open..];
        let Some(close) = after.find(CLOSER) else {
            return Err(DynamicParseError {
                reference: after.chars().take(60).collect(),
                message: "the reference is not closed with '}}'".into(),
            });
        };
        let whole = &after[..close + CLOSER.len()];
        out.push(Segment::Reference(DynamicReference::parse(whole)?));
        rest = &after[close + CLOSER.len()..];
    }
    if !rest.is_empty() {
        out.push(Segment::Text(rest));
    }
    Ok(out)
}

/// The references in `text`, in order.
pub fn find_references(text: &str) -> Result<Vec<DynamicReference>, DynamicParseError> {
    Ok(split_references(text)?
        .into_iter()
        .filter_map(|s| match s {
            Segment::Reference(r) => Some(r),
            Segment::Text(_) => None,
        })
        .collect())
}

/// Every reference in the string leaves of `value` (map keys are not read).
/// References that do not parse are skipped (the post-pass reports them);
/// the well-formed ones beside them are still collected.
pub fn collect_references(value: &Value, out: &mut Vec<DynamicReference>) {
    match value {
        Value::String(s) if contains_dynamic_reference(s) => match find_references(s) {
            Ok(refs) => out.extend(refs),
            Err(_) => {
                let mut rest = s.as_str();
                while let Some(open) = rest.find(DYNAMIC_REFERENCE_OPENER) {
                    let after = &rest[open..];
                    let Some(close) = after.find(CLOSER) else {
                        break;
                    };
                    if let Ok(r) = DynamicReference::parse(&after[..close + CLOSER.len()]) {
                        out.push(r);
                    }
                    rest = &after[close + CLOSER.len()..];
                }
            }
        },
        Value::Array(items) => items.iter().for_each(|v| collect_references(v, out)),
        Value::Object(m) => m.values().for_each(|v| collect_references(v, out)),
        _ => {}
    }
}

impl DynamicReference {
    /// Parses one whole reference, `{{resolve:service:...}}`.
    pub fn parse(text: &str) -> Result<DynamicReference, DynamicParseError> {
        let fail = |message: &str| DynamicParseError {
            reference: text.to_string(),
            message: message.to_string(),
        };
        let inner = text
            .strip_prefix(DYNAMIC_REFERENCE_OPENER)
            .and_then(|t| t.strip_suffix(CLOSER))
            .ok_or_else(|| fail("not a {{resolve:...}} reference"))?;
        if inner.contains(['{', '}']) {
            return Err(fail("the reference contains a brace"));
        }
        let (service, rest) = inner.split_once(':').unwrap_or((inner, ""));
        let target = match service {
            "ssm" => parse_ssm(rest, false),
            "ssm-secure" => parse_ssm(rest, true),
            "secretsmanager" => parse_secret(rest),
            _ => Err(format!(
                "unsupported service '{service}' (expected ssm, ssm-secure or secretsmanager)"
            )),
        }
        .map_err(|m| fail(&m))?;
        Ok(DynamicReference {
            text: text.to_string(),
            target,
        })
    }

    /// The region an ARN spelling names, if any.
    pub fn arn_region(&self) -> Option<&str> {
        let id = match &self.target {
            ReferenceTarget::Ssm { name, .. } => name,
            ReferenceTarget::SecretsManager { secret_id, .. } => secret_id,
        };
        if !id.starts_with("arn:") {
            return None;
        }
        id.split(':').nth(3).filter(|r| !r.is_empty())
    }

    /// What to fetch, looked up in the ARN's region or else `default_region`.
    pub fn fetch_key(&self, default_region: &str) -> FetchKey {
        let region = self.arn_region().unwrap_or(default_region).to_string();
        match &self.target {
            ReferenceTarget::Ssm { name, version, .. } => FetchKey::Parameter {
                region,
                name: match version {
                    Some(v) => format!("{name}:{v}"),
                    None => name.clone(),
                },
            },
            ReferenceTarget::SecretsManager {
                secret_id,
                version_stage,
                version_id,
                ..
            } => FetchKey::Secret {
                region,
                secret_id: secret_id.clone(),
                version_stage: version_stage.clone(),
                version_id: version_id.clone(),
            },
        }
    }

    /// Secret-bearing whatever the fetch says (`ssm-secure`, `secretsmanager`).
    pub fn is_secret_by_kind(&self) -> bool {
        !matches!(self.target, ReferenceTarget::Ssm { secure: false, .. })
    }

    /// The text this reference stands for, out of what was fetched for it,
    /// and whether it is secret-bearing.
    pub fn value_from(&self, fetched: &Fetched) -> Result<(String, bool), String> {
        match (&self.target, fetched) {
            (ReferenceTarget::Ssm { secure, .. }, Fetched::Parameter { value, secure: ss }) => {
                Ok((value.clone(), *secure || *ss))
            }
            (ReferenceTarget::SecretsManager { json_key, .. }, Fetched::Secret { value }) => {
                let Some(key) = json_key else {
                    return Ok((value.clone(), true));
                };
                let parsed: Value = serde_json::from_str(value).map_err(|_| {
                    format!("the secret is not a JSON object, so JSON key '{key}' cannot be read")
                })?;
                let Value::Object(map) = parsed else {
                    return Err(format!(
                        "the secret is not a JSON object, so JSON key '{key}' cannot be read"
                    ));
                };
                match map.get(key) {
                    Some(Value::String(s)) => Ok((s.clone(), true)),
                    Some(other) => Ok((other.to_string(), true)),
                    None => Err(format!("the secret has no JSON key '{key}'")),
                }
            }
            _ => Err("the lookup returned the wrong kind of value".into()),
        }
    }
}

fn parse_ssm(rest: &str, secure: bool) -> Result<ReferenceTarget, String> {
    let (name, version) = if rest.starts_with("arn:") {
        let parts: Vec<&str> = rest.split(':').collect();
        if parts.len() < 6 || parts.len() > 7 || parts[2] != "ssm" {
            return Err("expected an SSM parameter ARN, arn:PARTITION:ssm:REGION:ACCOUNT:parameter/NAME[:VERSION]".into());
        }
        if !parts[5].starts_with("parameter/") || parts[5].len() <= "parameter/".len() {
            return Err("the ARN names no parameter".into());
        }
        (parts[..6].join(":"), parts.get(6).copied())
    } else {
        match rest.split_once(':') {
            Some((n, v)) => (n.to_string(), Some(v)),
            None => (rest.to_string(), None),
        }
    };
    if name.is_empty() {
        return Err("the parameter name is empty".into());
    }
    if !name.starts_with("arn:")
        && !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c))
    {
        return Err(format!("'{name}' is not a valid SSM parameter name"));
    }
    let version = match version {
        None => None,
        Some(v) => Some(SsmSelector::parse(v)?),
    };
    Ok(ReferenceTarget::Ssm {
        name,
        version,
        secure,
    })
}

fn parse_secret(rest: &str) -> Result<ReferenceTarget, String> {
    let parts: Vec<&str> = rest.split(':').collect();
    let id_len = if rest.starts_with("arn:") {
        if parts.len() < 7 || parts[2] != "secretsmanager" || parts[5] != "secret" {
            return Err(
                "expected a secret ARN, arn:PARTITION:secretsmanager:REGION:ACCOUNT:secret:NAME"
                    .into(),
            );
        }
        7
    } else {
        1
    };
    let secret_id = parts[..id_len].join(":");
    if secret_id.is_empty() || parts[id_len - 1].is_empty() {
        return Err("the secret id is empty".into());
    }
    let fields = &parts[id_len..];
    if fields.len() > 4 {
        return Err(
            "too many segments (expected secret-id:SecretString:json-key:version-stage:version-id)"
                .into(),
        );
    }
    let field = |i: usize| {
        fields
            .get(i)
            .filter(|s| !s.is_empty())
            .map(|s| s.to_string())
    };
    if let Some(kind) = field(0) {
        if kind != "SecretString" {
            return Err(format!(
                "'{kind}' is not supported (only SecretString can be referenced)"
            ));
        }
    }
    let (version_stage, version_id) = (field(2), field(3));
    if version_stage.is_some() && version_id.is_some() {
        return Err("give a version stage or a version id, not both".into());
    }
    Ok(ReferenceTarget::SecretsManager {
        secret_id,
        json_key: field(1),
        version_stage,
        version_id,
    })
}

/// Fetched values by [`FetchKey`]: what the post-pass reads. The engine
/// fetches first (the resolver is synchronous), so a key it did not fetch
/// answers [`LookupError::NotAvailable`].
pub trait DynamicLookup {
    fn fetched(&self, key: &FetchKey) -> Result<Fetched, LookupError>;

    /// A lookup for a read-only preview (`cdkd diff`, `deploy --dry-run`): secret-bearing
    /// references are never fetched, and the post-pass keeps them as written, which is the
    /// expression state stores at their position, so a preview compares expression with
    /// expression. Public ones are still substituted, exactly as a deploy substitutes them.
    fn withholds_secrets(&self) -> bool {
        false
    }
}

/// One position holding a secret-bearing reference.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretPosition {
    /// What state persists there: the leaf with its secret-bearing references
    /// kept as written and its public ones substituted.
    pub expression: String,
    /// The secret-bearing references at the position, in order.
    pub references: Vec<String>,
}

impl fmt::Debug for SecretPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretPosition")
            .field("expression", &self.expression)
            .field("references", &self.references)
            .finish()
    }
}

/// The secret-bearing positions of a value and the plaintexts behind them.
/// `Debug` shows the positions and only the number of plaintexts.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretsMap {
    positions: IndexMap<String, SecretPosition>,
    plaintexts: Vec<String>,
}

impl fmt::Debug for SecretsMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretsMap")
            .field("positions", &self.positions)
            .field(
                "plaintexts",
                &format_args!("<{} hidden>", self.plaintexts.len()),
            )
            .finish()
    }
}

impl SecretsMap {
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty() && self.plaintexts.is_empty()
    }

    /// Position path (`Resources.Db.Properties.MasterUserPassword`,
    /// `...Tags[0].Value`) → what to persist there.
    pub fn positions(&self) -> impl Iterator<Item = (&str, &SecretPosition)> {
        self.positions.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn get(&self, path: &str) -> Option<&SecretPosition> {
        self.positions.get(path)
    }

    /// The resolved secret values (each once), for redaction.
    pub fn plaintexts(&self) -> impl Iterator<Item = &str> {
        self.plaintexts.iter().map(String::as_str)
    }

    pub fn insert_position(&mut self, path: impl Into<String>, position: SecretPosition) {
        self.positions.insert(path.into(), position);
    }

    /// Records a plaintext (empty ones are not recorded).
    pub fn insert_plaintext(&mut self, plaintext: impl Into<String>) {
        let p = plaintext.into();
        if !p.is_empty() && !self.plaintexts.contains(&p) {
            self.plaintexts.push(p);
        }
    }

    /// Adds everything `other` holds (its positions win).
    pub fn merge(&mut self, other: SecretsMap) {
        self.positions.extend(other.positions);
        for p in other.plaintexts {
            self.insert_plaintext(p);
        }
    }
}

/// Replaces every dynamic reference in the string leaves of `value` (a
/// resolved value at template position `path`) with its value, looked up in
/// the ARN's region or else the stack's. Returns the substituted value and
/// the secret-bearing positions.
pub fn substitute_dynamic_references(
    value: &Value,
    path: &str,
    ctx: &ResolveContext,
    lookup: &dyn DynamicLookup,
) -> Result<(Value, SecretsMap), ResolveError> {
    substitute_in_region(value, path, ctx.stack_name(), ctx.region(), lookup)
}

/// [`substitute_dynamic_references`] with the default region given
/// explicitly (a producer's, when re-resolving another stack's output).
pub fn substitute_in_region(
    value: &Value,
    path: &str,
    stack: &str,
    region: &str,
    lookup: &dyn DynamicLookup,
) -> Result<(Value, SecretsMap), ResolveError> {
    let mut pass = Pass {
        stack,
        region,
        lookup,
        secrets: SecretsMap::default(),
        path: path.to_string(),
    };
    let out = pass.walk(value)?;
    Ok((out, pass.secrets))
}

struct Pass<'a> {
    stack: &'a str,
    region: &'a str,
    lookup: &'a dyn DynamicLookup,
    secrets: SecretsMap,
    path: String,
}

impl Pass<'_> {
    fn walk(&mut self, v: &Value) -> Result<Value, ResolveError> {
        if let Some(text) = pending_base64_text(v) {
            return self.base64_leaf(text).map(Value::String);
        }
        match v {
            Value::String(s) if contains_dynamic_reference(s) => self.leaf(s).map(Value::String),
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, x) in items.iter().enumerate() {
                    let mark = self.path.len();
                    self.path.push_str(&format!("[{i}]"));
                    let r = self.walk(x);
                    self.path.truncate(mark);
                    out.push(r?);
                }
                Ok(Value::Array(out))
            }
            Value::Object(m) => {
                let mut out = serde_json::Map::new();
                for (k, x) in m {
                    let mark = self.path.len();
                    if !self.path.is_empty() {
                        self.path.push('.');
                    }
                    self.path.push_str(k);
                    let r = self.walk(x);
                    self.path.truncate(mark);
                    out.insert(k.clone(), r?);
                }
                Ok(Value::Object(out))
            }
            other => Ok(other.clone()),
        }
    }

    fn fail(&self, message: String) -> ResolveError {
        ResolveError {
            stack: self.stack.to_string(),
            path: self.path.clone(),
            kind: ResolveErrorKind::Lookup {
                function: DYNAMIC_REFERENCE_FUNCTION,
                error: LookupError::Failed(message),
            },
        }
    }

    fn leaf(&mut self, text: &str) -> Result<String, ResolveError> {
        let done = self.substitute(text)?;
        if !done.secret_refs.is_empty() {
            self.record(done.expression, done.secret_refs, done.plaintexts);
        }
        Ok(done.resolved)
    }

    /// `Fn::Base64` over `text`: encoded after substitution. An encoding that carries a
    /// secret decodes straight back to it, so state cannot record it as a reference: the
    /// position is stored as `***` (the encoding itself joins the plaintexts to redact).
    /// A preview that withholds the secret has nothing to encode and shows the mask too.
    fn base64_leaf(&mut self, text: &str) -> Result<String, ResolveError> {
        let done = self.substitute(text)?;
        if done.secret_refs.is_empty() {
            return Ok(super::functions::base64(done.resolved.as_bytes()));
        }
        if done.withheld {
            self.record(MASK.to_owned(), done.secret_refs, Vec::new());
            return Ok(MASK.to_owned());
        }
        let encoded = super::functions::base64(done.resolved.as_bytes());
        let mut plaintexts = done.plaintexts;
        plaintexts.push(encoded.clone());
        self.record(MASK.to_owned(), done.secret_refs, plaintexts);
        Ok(encoded)
    }

    fn record(&mut self, expression: String, references: Vec<String>, plaintexts: Vec<String>) {
        self.secrets.insert_position(
            self.path.clone(),
            SecretPosition {
                expression,
                references,
            },
        );
        plaintexts
            .into_iter()
            .for_each(|p| self.secrets.insert_plaintext(p));
    }

    /// Substitutes the references of one string.
    fn substitute(&mut self, text: &str) -> Result<Substituted, ResolveError> {
        let segments = split_references(text).map_err(|e| self.fail(e.to_string()))?;
        let mut done = Substituted {
            resolved: String::with_capacity(text.len()),
            expression: String::with_capacity(text.len()),
            secret_refs: Vec::new(),
            plaintexts: Vec::new(),
            withheld: false,
        };
        for segment in segments {
            let r = match segment {
                Segment::Text(t) => {
                    done.resolved.push_str(t);
                    done.expression.push_str(t);
                    continue;
                }
                Segment::Reference(r) => r,
            };
            let withhold = self.lookup.withholds_secrets();
            if withhold && r.is_secret_by_kind() {
                // Never fetched: kept as written on both sides.
                done.keep(r.text);
                continue;
            }
            let key = r.fetch_key(self.region);
            let fetched = self.lookup.fetched(&key).map_err(|e| {
                self.fail(format!("{} (looked up in {}): {e}", r.text, key.region()))
            })?;
            let (value, secret) = r
                .value_from(&fetched)
                .map_err(|m| self.fail(format!("{}: {m}", r.text)))?;
            if secret && withhold {
                // A SecureString behind a plain `ssm` reference, read without decryption.
                done.keep(r.text);
                continue;
            }
            done.resolved.push_str(&value);
            if secret {
                done.expression.push_str(&r.text);
                done.secret_refs.push(r.text);
                done.plaintexts.push(value);
            } else {
                done.expression.push_str(&value);
            }
        }
        Ok(done)
    }
}

/// One string's references substituted.
struct Substituted {
    /// What AWS receives.
    resolved: String,
    /// What state persists: secret references as written, public ones substituted.
    expression: String,
    secret_refs: Vec<String>,
    plaintexts: Vec<String>,
    /// A secret reference was kept as written (a preview never fetches one).
    withheld: bool,
}

impl Substituted {
    fn keep(&mut self, reference: String) {
        self.resolved.push_str(&reference);
        self.expression.push_str(&reference);
        self.secret_refs.push(reference);
        self.withheld = true;
    }
}
