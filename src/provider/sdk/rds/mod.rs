//! Amazon RDS: the subnet groups a database is placed in ([`subnet_group`]:
//! `AWS::RDS::DBSubnetGroup`, physical id and `Ref` the group name as RDS spells it, lower
//! case; `Fn::GetAtt` `DBSubnetGroupArn`). One family provider on the shared scaffold, so the
//! database types can join it.

mod subnet_group;

use aws_sdk_rds::Client;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::http::Response as HttpResponse;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use super::scaffold;
use crate::aws::error_code;
use crate::provider::{ProviderContext, ProviderError, ResourceRequest};

pub(crate) const DB_SUBNET_GROUP: &str = "AWS::RDS::DBSubnetGroup";

/// Where RDS's errors come from.
const RDS: scaffold::Service = scaffold::Service("rds");

fn client(ctx: &ProviderContext<'_>) -> Client {
    scaffold::regional(ctx, Client::new)
}

/// A call's answer, or `None` when RDS says what it names does not exist: RDS names its
/// not-found errors per kind (`DBSubnetGroupNotFoundFault`), with HTTP 400 or 404.
fn unless_gone<T, E>(
    result: Result<T, SdkError<E, HttpResponse>>,
    req: &ResourceRequest<'_>,
    operation: &'static str,
    target: &str,
) -> Result<Option<T>, ProviderError>
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    match result {
        Err(e) if error_code(&e).is_some_and(|c| c.ends_with("NotFoundFault")) => Ok(None),
        other => RDS.unless_gone(other, req, operation, target),
    }
}

scaffold::family::family_provider!(RdsProvider, "RDS", client, {
    DB_SUBNET_GROUP => subnet_group,
});
