//! Reading a context query (the `props` of a manifest's `missing` entry) and the one error type
//! every provider returns.
//!
//! The query is kept as the JSON the app wrote, not a typed struct per provider: the CDK adds
//! fields over time, and a provider reads only the fields it needs, so an unknown field never
//! breaks a lookup. Each accessor names the field it wanted when it is absent or mistyped.

use aws_sdk_s3::error::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use serde_json::{Map, Value};

use crate::aws::{AwsError, ErrorKind, HttpStatus};

/// Why a lookup gave no answer. The message reaches the app as the lookup's error value
/// (`$providerError`), so it says what was asked for and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// Nothing in the account matched the query. The CDK lets a query with
    /// `ignoreErrorOnMissingContext` turn exactly this into its `dummyValue`.
    #[error("{0}")]
    NotFound(String),
    /// The query could not be answered (bad query, AWS error, credentials).
    #[error("{0}")]
    Failed(String),
}

impl LookupError {
    pub fn failed(message: impl Into<String>) -> Self {
        LookupError::Failed(message.into())
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        LookupError::NotFound(message.into())
    }

    /// A failed SDK call, classified: a not-found answer stays a [`LookupError::NotFound`].
    pub fn call<E, R>(
        service: &'static str,
        operation: &'static str,
        target: impl Into<String>,
        err: &SdkError<E, R>,
    ) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: HttpStatus + std::fmt::Debug + 'static,
    {
        let err = AwsError::call(service, operation, target, err);
        match err.kind() {
            ErrorKind::NotFound => LookupError::NotFound(err.to_string()),
            _ => LookupError::Failed(err.to_string()),
        }
    }
}

/// A query, with accessors that name the field and the provider in their errors.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    pub provider: &'a str,
    pub props: &'a Map<String, Value>,
}

impl<'a> Query<'a> {
    pub fn new(provider: &'a str, props: &'a Map<String, Value>) -> Self {
        Query { provider, props }
    }

    pub fn get(&self, field: &str) -> Option<&'a Value> {
        self.props.get(field).filter(|v| !v.is_null())
    }

    /// An optional string field; present with another type is an error.
    pub fn opt_str(&self, field: &str) -> Result<Option<&'a str>, LookupError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(self.wrong(field, "a string")),
        }
    }

    pub fn str(&self, field: &str) -> Result<&'a str, LookupError> {
        self.opt_str(field)?.ok_or_else(|| self.absent(field))
    }

    pub fn opt_bool(&self, field: &str) -> Result<Option<bool>, LookupError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.wrong(field, "true or false")),
        }
    }

    pub fn opt_object(&self, field: &str) -> Result<Option<&'a Map<String, Value>>, LookupError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Object(o)) => Ok(Some(o)),
            Some(_) => Err(self.wrong(field, "an object")),
        }
    }

    /// An optional list of strings.
    pub fn opt_strings(&self, field: &str) -> Result<Option<Vec<String>>, LookupError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(Some)
                .ok_or_else(|| self.wrong(field, "a list of strings")),
            Some(_) => Err(self.wrong(field, "a list of strings")),
        }
    }

    pub fn account(&self) -> Result<&'a str, LookupError> {
        self.str("account")
    }

    pub fn region(&self) -> Result<&'a str, LookupError> {
        self.str("region")
    }

    /// The whole query as compact JSON, for messages that quote it as the CDK does.
    pub fn json(&self) -> String {
        Value::Object(self.props.clone()).to_string()
    }

    fn absent(&self, field: &str) -> LookupError {
        LookupError::failed(format!(
            "the {} lookup query has no `{field}`; the construct library and cdkd disagree on the query format",
            self.provider
        ))
    }

    fn wrong(&self, field: &str, expected: &str) -> LookupError {
        LookupError::failed(format!(
            "the {} lookup query's `{field}` must be {expected}",
            self.provider
        ))
    }
}

/// The partition a region belongs to (for `${AWS::Partition}` in a lookup role ARN).
pub fn partition_of(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else if region.starts_with("us-isob-") {
        "aws-iso-b"
    } else if region.starts_with("us-iso-") {
        "aws-iso"
    } else if region.starts_with("eu-isoe-") {
        "aws-iso-e"
    } else if region.starts_with("us-isof-") {
        "aws-iso-f"
    } else {
        "aws"
    }
}

/// Replaces the placeholders the CDK writes into role ARNs with the query's environment.
pub fn resolve_placeholders(text: &str, account: &str, region: &str) -> String {
    text.replace("${AWS::AccountId}", account)
        .replace("${AWS::Region}", region)
        .replace("${AWS::Partition}", partition_of(region))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn role_arn_placeholders_take_the_query_environment() {
        let arn = "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/cdk-lookup-${AWS::Region}";
        assert_eq!(
            resolve_placeholders(arn, "111122223333", "eu-west-1"),
            "arn:aws:iam::111122223333:role/cdk-lookup-eu-west-1"
        );
        assert_eq!(
            resolve_placeholders(arn, "1", "cn-north-1"),
            "arn:aws-cn:iam::1:role/cdk-lookup-cn-north-1"
        );
        assert_eq!(partition_of("us-gov-west-1"), "aws-us-gov");
    }

    #[test]
    fn accessors_name_the_field_and_the_provider() {
        let props = json!({"a": "x", "n": 5, "l": ["p", "q"], "bad": [1]});
        let props = props.as_object().unwrap();
        let q = Query::new("ssm", props);
        assert_eq!(q.str("a").unwrap(), "x");
        let msg = q.str("parameterName").unwrap_err().to_string();
        assert!(
            msg.contains("ssm") && msg.contains("parameterName"),
            "{msg}"
        );
        let msg = q.str("n").unwrap_err().to_string();
        assert!(msg.contains("`n` must be a string"), "{msg}");
        assert_eq!(q.opt_strings("l").unwrap().unwrap(), ["p", "q"]);
        assert!(q.opt_strings("bad").is_err());
        assert_eq!(q.opt_bool("missing").unwrap(), None);
    }
}
