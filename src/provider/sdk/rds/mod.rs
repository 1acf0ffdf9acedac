//! Amazon RDS: one family provider on the shared scaffold, one module per type:
//! - [`subnet_group`]: `AWS::RDS::DBSubnetGroup` (physical id and `Ref` the group name as RDS
//!   spells it, lower case; `Fn::GetAtt` `DBSubnetGroupArn`).
//! - [`instance`]: `AWS::RDS::DBInstance` (physical id and `Ref` the instance identifier).
//! - [`cluster`]: `AWS::RDS::DBCluster` (physical id and `Ref` the cluster identifier).
//!
//! Each physical id is the primary identifier Cloud Control records for the type, so either
//! route addresses a resource the other made. Shared here: tags (on the resource's ARN), the
//! not-found rule, the identifiers RDS generates names for, and the database types'
//! property tables ([`fields`]). A final snapshot (`DeletionPolicy: Snapshot`) is the
//! engine's step before the delete (`engine::policy::snapshot`), so deletes here always skip
//! theirs.

mod cluster;
mod database;
mod fields;
mod instance;
mod subnet_group;

use std::time::Duration;

use aws_sdk_rds::types::Tag;
use aws_sdk_rds::Client;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::http::Response as HttpResponse;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use serde_json::{Map, Value};

use super::scaffold;
use super::scaffold::tags;
use crate::provider::naming;
use crate::provider::props::Props;
use crate::provider::{ProviderContext, ProviderError, ResourceRequest};

pub(crate) const DB_SUBNET_GROUP: &str = "AWS::RDS::DBSubnetGroup";
pub(crate) const DB_INSTANCE: &str = "AWS::RDS::DBInstance";
pub(crate) const DB_CLUSTER: &str = "AWS::RDS::DBCluster";

/// Where RDS's errors come from.
const RDS: scaffold::Service = scaffold::Service("rds");

/// How long a database may take to become `available` (or to be gone) on AWS.
const DATABASE_LIMIT: Duration = Duration::from_secs(90 * 60);

/// Database identifiers: a letter first, then at most 63 lower-case letters, digits and
/// hyphens, as CloudFormation generates them for an unnamed instance or cluster.
const IDENTIFIER_RULES: naming::NameRules = naming::NameRules {
    max_len: 63,
    lowercase: true,
    extra_chars: "-",
    suffix: "",
};

fn client(ctx: &ProviderContext<'_>) -> Client {
    scaffold::regional(ctx, Client::new)
}

/// A call's answer, or `None` when RDS says what it names does not exist: RDS names its
/// not-found errors per kind (`DBInstanceNotFound`, `DBClusterNotFoundFault`,
/// `DBSubnetGroupNotFoundFault`), with HTTP 400 or 404.
fn unless_gone<T, E>(
    result: Result<T, SdkError<E, HttpResponse>>,
    req: &ResourceRequest<'_>,
    operation: &'static str,
    target: &str,
) -> Result<Option<T>, ProviderError>
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    RDS.unless_gone_coded(
        result,
        req,
        operation,
        target,
        &["NotFound", "NotFoundFault"],
    )
}

/// The identifier property `name` as RDS keeps it (lower case), or one generated as
/// CloudFormation does when the template gives none.
fn identifier(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<String, ProviderError> {
    Ok(match Props::new(req).str(name)? {
        Some(n) => n.to_ascii_lowercase(),
        None => {
            let mut generated = naming::single_hyphens(naming::generate(
                ctx.stack_name,
                req.logical_id,
                IDENTIFIER_RULES,
            ));
            // A letter first (a stack name may start with a digit).
            if !generated.starts_with(|c: char| c.is_ascii_alphabetic()) {
                generated = format!("db{generated}");
                generated.truncate(IDENTIFIER_RULES.max_len);
            }
            generated
        }
    })
}

/// The identifier property `name` as read back: as the template wrote it when RDS holds the
/// same name in lower case.
fn identifier_read(
    req: &ResourceRequest<'_>,
    name: &str,
    live: &str,
) -> Result<String, ProviderError> {
    Ok(Props::new(req)
        .str(name)?
        .filter(|w| w.eq_ignore_ascii_case(live))
        .unwrap_or_else(|| live.to_owned()))
}

fn sdk_tags(pairs: impl IntoIterator<Item = (String, String)>) -> Option<Vec<Tag>> {
    let tags: Vec<Tag> = pairs
        .into_iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect();
    (!tags.is_empty()).then_some(tags)
}

/// The request's `Tags`, for a create call (`None` when there are none).
fn create_tags(req: &ResourceRequest<'_>) -> Result<Option<Vec<Tag>>, ProviderError> {
    Ok(sdk_tags(Props::new(req).tags()?))
}

/// Moves the resource's tags from `previous` to the request's, when they changed.
async fn update_tags(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    previous: &Map<String, Value>,
) -> Result<(), ProviderError> {
    tags::update(
        req,
        previous,
        "Tags",
        |keys| async move {
            client
                .remove_tags_from_resource()
                .resource_name(arn)
                .set_tag_keys(Some(keys))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| RDS.err(req, "RemoveTagsFromResource", arn, &e))
        },
        |set| async move {
            client
                .add_tags_to_resource()
                .resource_name(arn)
                .set_tags(sdk_tags(set))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| RDS.err(req, "AddTagsToResource", arn, &e))
        },
    )
    .await
}

/// The resource's tags into `props` as CloudFormation lists them.
async fn read_tags(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    props: &mut Map<String, Value>,
) -> Result<(), ProviderError> {
    let listed = client
        .list_tags_for_resource()
        .resource_name(arn)
        .send()
        .await
        .map_err(|e| RDS.err(req, "ListTagsForResource", arn, &e))?;
    tags::read_into(
        props,
        "Tags",
        listed.tag_list().iter().filter_map(|t| {
            Some((
                t.key()?.to_owned(),
                t.value().unwrap_or_default().to_owned(),
            ))
        }),
    );
    Ok(())
}

scaffold::family::family_provider!(RdsProvider, "RDS", client, {
    DB_SUBNET_GROUP => subnet_group,
    DB_INSTANCE => instance,
    DB_CLUSTER => cluster,
});
