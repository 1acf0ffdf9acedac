//! Delivering a request envelope to the handler a ServiceToken names: a Lambda function
//! (invoked) or an SNS topic (published to), each in the region of its ARN.

use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;

use crate::aws::{classify, AwsError, Clients, ErrorKind};

/// What a ServiceToken names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Lambda { arn: String, region: String },
    Sns { arn: String, region: String },
}

impl Target {
    /// Parses `arn:{partition}:lambda:{region}:{account}:function:{name}[:{qualifier}]` or
    /// `arn:{partition}:sns:{region}:{account}:{topic}`.
    pub fn parse(token: &str) -> Option<Target> {
        let parts: Vec<&str> = token.splitn(6, ':').collect();
        let [arn, _partition, service, region, _account, resource] = parts.as_slice() else {
            return None;
        };
        if *arn != "arn" || region.is_empty() || resource.is_empty() {
            return None;
        }
        match *service {
            "lambda" if resource.starts_with("function:") && resource.len() > 9 => {
                Some(Target::Lambda {
                    arn: token.to_owned(),
                    region: (*region).to_owned(),
                })
            }
            "sns" if !resource.contains(':') => Some(Target::Sns {
                arn: token.to_owned(),
                region: (*region).to_owned(),
            }),
            _ => None,
        }
    }

    pub fn arn(&self) -> &str {
        match self {
            Target::Lambda { arn, .. } | Target::Sns { arn, .. } => arn,
        }
    }

    /// `function arn:...` / `topic arn:...`, for messages.
    pub fn describe(&self) -> String {
        match self {
            Target::Lambda { arn, .. } => format!("function {arn}"),
            Target::Sns { arn, .. } => format!("topic {arn}"),
        }
    }
}

/// How a delivery went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    /// The handler has the request.
    Sent,
    /// The function or topic does not exist.
    Gone,
    /// The function ran and failed (Lambda's FunctionError), with what it returned.
    FunctionError { kind: String, detail: String },
}

/// Invokes the function synchronously with the envelope (the answer still comes through the
/// ResponseURL; the synchronous call only lets a crashing handler fail fast).
pub async fn invoke_lambda(
    clients: &Clients,
    arn: &str,
    region: &str,
    payload: &[u8],
) -> Result<Delivered, AwsError> {
    let client = clients.cached(Some(region), aws_sdk_lambda::Client::new);
    match client
        .invoke()
        .function_name(arn)
        .invocation_type(InvocationType::RequestResponse)
        .payload(Blob::new(payload.to_vec()))
        .send()
        .await
    {
        Ok(out) => match out.function_error() {
            Some(kind) => {
                let detail = out
                    .payload()
                    .map(|p| String::from_utf8_lossy(p.as_ref()).into_owned())
                    .unwrap_or_default();
                Ok(Delivered::FunctionError {
                    kind: kind.to_owned(),
                    detail: one_line(&detail, 500),
                })
            }
            None => Ok(Delivered::Sent),
        },
        Err(e) if classify(&e) == ErrorKind::NotFound => Ok(Delivered::Gone),
        Err(e) => Err(AwsError::call("lambda", "Invoke", arn, &e)),
    }
}

/// Publishes the envelope to the topic.
pub async fn publish_sns(
    clients: &Clients,
    arn: &str,
    region: &str,
    payload: &str,
) -> Result<Delivered, AwsError> {
    let client = clients.cached(Some(region), aws_sdk_sns::Client::new);
    match client
        .publish()
        .topic_arn(arn)
        .message(payload)
        .send()
        .await
    {
        Ok(_) => Ok(Delivered::Sent),
        Err(e) if classify(&e) == ErrorKind::NotFound => Ok(Delivered::Gone),
        Err(e) => Err(AwsError::call("sns", "Publish", arn, &e)),
    }
}

fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        joined
    } else {
        let cut: String = joined.chars().take(max).collect();
        format!("{cut}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_tokens_parse_to_lambda_or_sns() {
        assert_eq!(
            Target::parse("arn:aws:lambda:eu-west-1:123456789012:function:handler"),
            Some(Target::Lambda {
                arn: "arn:aws:lambda:eu-west-1:123456789012:function:handler".into(),
                region: "eu-west-1".into()
            })
        );
        assert!(matches!(
            Target::parse("arn:aws:lambda:eu-west-1:123456789012:function:handler:live"),
            Some(Target::Lambda { .. })
        ));
        assert_eq!(
            Target::parse("arn:aws-cn:sns:cn-north-1:123456789012:topic"),
            Some(Target::Sns {
                arn: "arn:aws-cn:sns:cn-north-1:123456789012:topic".into(),
                region: "cn-north-1".into()
            })
        );
        assert_eq!(Target::parse("handler"), None);
        assert_eq!(Target::parse("arn:aws:sqs:us-east-1:1:q"), None);
        assert_eq!(Target::parse("arn:aws:lambda:us-east-1:1:layer:x"), None);
        assert_eq!(Target::parse("arn:aws:lambda::1:function:x"), None);
    }
}
