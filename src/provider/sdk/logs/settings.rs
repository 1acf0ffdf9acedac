//! The per-property calls that set a log group's retention and policies after creation and
//! on update.

use aws_sdk_cloudwatchlogs::Client;

use super::{is_not_found, API};
use crate::provider::{ProviderError, ResourceRequest};

pub(super) async fn put_retention(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
    days: Option<i64>,
) -> Result<(), ProviderError> {
    match days {
        Some(days) => {
            let days = i32::try_from(days).map_err(|_| {
                ProviderError::failed(req, format!("RetentionInDays {days} is out of range"))
            })?;
            client
                .put_retention_policy()
                .log_group_name(name)
                .retention_in_days(days)
                .send()
                .await
                .map_err(|e| API.err(req, "PutRetentionPolicy", name, &e))?;
        }
        None => {
            client
                .delete_retention_policy()
                .log_group_name(name)
                .send()
                .await
                .map_err(|e| API.err(req, "DeleteRetentionPolicy", name, &e))?;
        }
    }
    Ok(())
}

pub(super) async fn put_data_protection(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
    doc: Option<String>,
) -> Result<(), ProviderError> {
    match doc {
        Some(doc) => client
            .put_data_protection_policy()
            .log_group_identifier(name)
            .policy_document(doc)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| API.err(req, "PutDataProtectionPolicy", name, &e)),
        None => match client
            .delete_data_protection_policy()
            .log_group_identifier(name)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(API.err(req, "DeleteDataProtectionPolicy", name, &e)),
        },
    }
}

pub(super) async fn put_index(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
    doc: Option<String>,
) -> Result<(), ProviderError> {
    match doc {
        Some(doc) => client
            .put_index_policy()
            .log_group_identifier(name)
            .policy_document(doc)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| API.err(req, "PutIndexPolicy", name, &e)),
        None => match client
            .delete_index_policy()
            .log_group_identifier(name)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(API.err(req, "DeleteIndexPolicy", name, &e)),
        },
    }
}

pub(super) async fn put_resource_policy(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    doc: Option<String>,
) -> Result<(), ProviderError> {
    match doc {
        Some(doc) => client
            .put_resource_policy()
            .resource_arn(arn)
            .policy_document(doc)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| API.err(req, "PutResourcePolicy", arn, &e)),
        None => match client
            .delete_resource_policy()
            .resource_arn(arn)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(API.err(req, "DeleteResourcePolicy", arn, &e)),
        },
    }
}

pub(super) async fn put_deletion_protection(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
    on: bool,
) -> Result<(), ProviderError> {
    client
        .put_log_group_deletion_protection()
        .log_group_identifier(name)
        .deletion_protection_enabled(on)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| API.err(req, "PutLogGroupDeletionProtection", name, &e))
}

pub(super) async fn put_bearer_token(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
    on: bool,
) -> Result<(), ProviderError> {
    client
        .put_bearer_token_authentication()
        .log_group_identifier(name)
        .bearer_token_authentication_enabled(on)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| API.err(req, "PutBearerTokenAuthentication", name, &e))
}
