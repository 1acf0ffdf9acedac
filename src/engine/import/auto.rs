//! Finding a resource's physical id without a mapping: upstream cdkd's auto mode (`cdkd import
//! STACK` with no mapping, or `--auto` beside one for the resources it does not name).
//!
//! Two sources, in this order, as upstream tries them:
//! 1. The CloudFormation stack of the same name, if there is one (`DescribeStackResources`):
//!    what makes a stack `cdk deploy` made, whose names CloudFormation generated, adoptable.
//!    Best effort: no such stack is the usual case and is silent; any other failure warns.
//! 2. The physical name the template gives the resource (`BucketName`, `QueueName`, ...),
//!    turned into the physical id cdkd records for its type (a queue's URL, a topic's ARN).
//!
//! There is no lookup by an `aws:cdk:path` tag: AWS reserves the `aws:` prefix, so no
//! resource carries one (upstream removed that walk for the same reason). Every candidate is
//! then read back through the resource's provider, and one that does not exist is reported
//! as not found, not imported.

use aws_sdk_cloudformation::Client as Cfn;
use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::migrate_cfn::{read_rows, CfnError};
use super::nested::is_nested;
use crate::aws::{AwsError, Clients};
use crate::provider::NON_RESOURCE_TYPES;
use crate::ui;

/// Logical id → physical id of the CloudFormation stack `stack`'s resources (nested-stack
/// rows and the CDK's metadata left out); empty when there is no such stack or it cannot be
/// read (which warns).
pub async fn cloudformation_ids(cfn: &Cfn, stack: &str) -> IndexMap<String, String> {
    match read_rows(cfn, stack).await {
        Ok(rows) => rows
            .into_iter()
            .filter(|(_, r)| {
                !is_nested(&r.resource_type)
                    && !NON_RESOURCE_TYPES.contains(&r.resource_type.as_str())
            })
            .filter_map(|(id, r)| r.physical_id.filter(|p| !p.is_empty()).map(|p| (id, p)))
            .collect(),
        Err(CfnError::Missing(_)) => IndexMap::new(),
        Err(e) => {
            ui::warn(format!(
                "{stack}: could not read the CloudFormation stack of that name to find physical \
                 ids ({e}); resources whose name CloudFormation generated may not be found: \
                 grant cloudformation:DescribeStackResources or pass --resource \
                 LogicalId=physicalId for them"
            ));
            IndexMap::new()
        }
    }
}

/// How a type's physical id follows from the name its template gives it.
enum Derive {
    /// The name is the physical id.
    Name,
    /// `arn:{partition}:sns:{region}:{account}:{name}`.
    SnsArn,
    /// `arn:{partition}:iam::{account}:policy{Path}{name}`.
    ManagedPolicyArn,
    /// `arn:{partition}:states:{region}:{account}:stateMachine:{name}`.
    StateMachineArn,
    /// The queue's URL, asked of SQS (GetQueueUrl).
    QueueUrl,
}

/// The name property of each type whose physical id a name determines.
fn rule(resource_type: &str) -> Option<(&'static str, Derive)> {
    Some(match resource_type {
        "AWS::S3::Bucket" => ("BucketName", Derive::Name),
        "AWS::SQS::Queue" => ("QueueName", Derive::QueueUrl),
        "AWS::SNS::Topic" => ("TopicName", Derive::SnsArn),
        "AWS::IAM::Role" => ("RoleName", Derive::Name),
        "AWS::IAM::User" => ("UserName", Derive::Name),
        "AWS::IAM::Group" => ("GroupName", Derive::Name),
        "AWS::IAM::InstanceProfile" => ("InstanceProfileName", Derive::Name),
        "AWS::IAM::ManagedPolicy" => ("ManagedPolicyName", Derive::ManagedPolicyArn),
        "AWS::Lambda::Function" => ("FunctionName", Derive::Name),
        "AWS::DynamoDB::Table" => ("TableName", Derive::Name),
        "AWS::Logs::LogGroup" => ("LogGroupName", Derive::Name),
        "AWS::SSM::Parameter" => ("Name", Derive::Name),
        "AWS::Kinesis::Stream" => ("Name", Derive::Name),
        "AWS::ECR::Repository" => ("RepositoryName", Derive::Name),
        "AWS::Events::EventBus" => ("Name", Derive::Name),
        "AWS::KMS::Alias" => ("AliasName", Derive::Name),
        "AWS::StepFunctions::StateMachine" => ("StateMachineName", Derive::StateMachineArn),
        _ => return None,
    })
}

/// Where the resource lives, for the ids that embed it.
pub(super) struct Place<'a> {
    pub clients: &'a Clients,
    pub region: &'a str,
    pub account: &'a str,
    pub partition: &'a str,
}

/// The physical id the template's name for the resource implies, if its type has a name
/// property and the template (resolved) gives it one; `None` otherwise (and for a queue SQS
/// does not know). The caller reads the resource back to see that it exists.
pub(super) async fn by_name(
    place: &Place<'_>,
    resource_type: &str,
    properties: &Map<String, Value>,
) -> Result<Option<String>, AwsError> {
    let Some((key, derive)) = rule(resource_type) else {
        return Ok(None);
    };
    let Some(name) = properties
        .get(key)
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    else {
        return Ok(None);
    };
    let Place {
        region,
        account,
        partition,
        ..
    } = place;
    Ok(Some(match derive {
        Derive::Name => name.to_owned(),
        Derive::SnsArn => format!("arn:{partition}:sns:{region}:{account}:{name}"),
        Derive::ManagedPolicyArn => {
            let path = properties
                .get("Path")
                .and_then(Value::as_str)
                .unwrap_or("/");
            format!("arn:{partition}:iam::{account}:policy{path}{name}")
        }
        Derive::StateMachineArn => {
            format!("arn:{partition}:states:{region}:{account}:stateMachine:{name}")
        }
        Derive::QueueUrl => {
            let sqs = place.clients.cached(Some(region), aws_sdk_sqs::Client::new);
            match sqs.get_queue_url().queue_name(name).send().await {
                Ok(out) => match out.queue_url {
                    Some(url) => url,
                    None => return Ok(None),
                },
                Err(e) if crate::aws::classify(&e) == crate::aws::ErrorKind::NotFound => {
                    return Ok(None)
                }
                Err(e) => return Err(AwsError::call("sqs", "GetQueueUrl", name, &e)),
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_name_becomes_the_id_cdkd_records_for_its_type() {
        let clients = Clients::load(&Default::default()).await;
        let place = Place {
            clients: &clients,
            region: "eu-west-1",
            account: "123456789012",
            partition: "aws",
        };
        let props = |v: Value| v.as_object().cloned().unwrap_or_default();
        let cases = [
            ("AWS::S3::Bucket", json_props("BucketName", "b"), Some("b")),
            (
                "AWS::SNS::Topic",
                json_props("TopicName", "t"),
                Some("arn:aws:sns:eu-west-1:123456789012:t"),
            ),
            (
                "AWS::IAM::ManagedPolicy",
                props(serde_json::json!({"ManagedPolicyName": "p", "Path": "/x/"})),
                Some("arn:aws:iam::123456789012:policy/x/p"),
            ),
            (
                "AWS::IAM::ManagedPolicy",
                json_props("ManagedPolicyName", "p"),
                Some("arn:aws:iam::123456789012:policy/p"),
            ),
            (
                "AWS::SSM::Parameter",
                json_props("Name", "/a/b"),
                Some("/a/b"),
            ),
            // No name given, a name that did not resolve, a type with no name property.
            ("AWS::S3::Bucket", Map::new(), None),
            (
                "AWS::S3::Bucket",
                props(serde_json::json!({"BucketName": {"Ref": "X"}})),
                None,
            ),
            ("AWS::EC2::VPC", json_props("Name", "v"), None),
        ];
        for (t, p, want) in cases {
            let got = by_name(&place, t, &p).await.unwrap();
            assert_eq!(got.as_deref(), want, "{t} {p:?}");
        }
    }

    fn json_props(k: &str, v: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(k.into(), Value::String(v.into()));
        m
    }
}
