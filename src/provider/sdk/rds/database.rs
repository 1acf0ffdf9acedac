//! The steps a DB instance and a DB cluster take the same way, over what each module tells
//! them about its type ([`Database`]): the record a create reports once the database is
//! `available` (its endpoint exists only then, and whatever connects to it needs that), the
//! record an update reports after its tags move, and the wait until a deleted database is
//! gone (its subnet group and security groups cannot be deleted before). Waits poll
//! short-first (`scaffold::wait`) and are skipped under `--no-wait` where nothing depends on
//! them; the delete's is not, since the deletes after it would fail.

use std::future::Future;

use aws_sdk_rds::types::CloudwatchLogsExportConfiguration;
use aws_sdk_rds::Client;
use serde_json::{Map, Value};

use super::fields;
use super::{update_tags, DATABASE_LIMIT, RDS};
use crate::provider::sdk::scaffold::wait::{self, Poll};
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// What the shared steps need to know of a database type.
pub(super) trait Database {
    /// What RDS describes it as.
    type Live: Send + Sync;
    /// How a message names one ("DB instance").
    const KIND: &'static str;
    fn describe<'a>(
        client: &'a Client,
        req: &'a ResourceRequest<'a>,
        id: &'a str,
    ) -> impl Future<Output = Result<Option<Self::Live>, ProviderError>> + Send + 'a;
    fn id(live: &Self::Live) -> Option<&str>;
    fn status(live: &Self::Live) -> Option<&str>;
    fn arn(live: &Self::Live) -> Option<&str>;
    /// What a create reports (physical id and `Fn::GetAtt` attributes).
    fn reported(id: &str, live: &Self::Live) -> Provisioned;
}

/// Statuses a database never leaves on its own: waiting on them would only time out.
const STUCK: &[&str] = &[
    "failed",
    "inaccessible-encryption-credentials",
    "incompatible-network",
    "incompatible-option-group",
    "incompatible-parameters",
    "incompatible-restore",
    "restore-error",
    "storage-full",
];

/// Polls until the database is `available`; a status it never leaves on its own is the
/// resource's error.
pub(super) async fn until_available<D: Database>(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<D::Live, ProviderError> {
    wait::until(req, DATABASE_LIMIT, move || async move {
        let db = D::describe(client, req, id)
            .await?
            .ok_or_else(|| ProviderError::failed(req, format!("{} {id} vanished", D::KIND)))?;
        Ok(match D::status(&db) {
            Some("available") | None => Poll::Done(db),
            Some(s) if STUCK.contains(&s) => {
                return Err(ProviderError::failed(
                    req,
                    format!("{} {id} is {s}; check it in the RDS console", D::KIND),
                ))
            }
            Some(s) => Poll::Pending(format!("{} {id} is {s}", D::KIND)),
        })
    })
    .await
}

/// What a create reports, from the database its create call returned: waited on until it is
/// `available` unless `--no-wait`.
pub(super) async fn created<D: Database>(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    made: Option<&D::Live>,
) -> Result<Provisioned, ProviderError> {
    let made =
        made.ok_or_else(|| ProviderError::failed(req, format!("rds returned no {}", D::KIND)))?;
    let id = RDS
        .required(req, D::id(made), &format!("{} identifier", D::KIND))?
        .to_owned();
    if ctx.no_wait {
        return Ok(D::reported(&id, made));
    }
    let live = until_available::<D>(client, req, &id).await?;
    Ok(D::reported(&id, &live))
}

/// The logs exports `EnableCloudwatchLogsExports` moved, as Modify* takes them.
pub(super) fn logs_change(
    req: &ResourceRequest<'_>,
    previous: &Map<String, Value>,
) -> Result<Option<CloudwatchLogsExportConfiguration>, ProviderError> {
    Ok(fields::logs_moved(req, previous)?.map(|(enable, disable)| {
        CloudwatchLogsExportConfiguration::builder()
            .set_enable_log_types(Some(enable))
            .set_disable_log_types(Some(disable))
            .build()
    }))
}

/// What an update reports once its modify (if any) was sent: the database waited on until
/// `available` when `settle` (the endpoint moved with the port; never under `--no-wait`),
/// else as it is now, with its tags moved on its ARN.
pub(super) async fn updated<D: Database>(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
    settle: bool,
) -> Result<UpdateOutcome, ProviderError> {
    let db = if settle && !ctx.no_wait {
        until_available::<D>(client, req, id).await?
    } else {
        D::describe(client, req, id)
            .await?
            .ok_or_else(|| ProviderError::failed(req, format!("{} {id} does not exist", D::KIND)))?
    };
    if let Some(arn) = D::arn(&db) {
        update_tags(client, req, arn, previous).await?;
    }
    Ok(UpdateOutcome::Updated(D::reported(id, &db)))
}

/// After a delete call RDS accepted: polls until the database is gone.
pub(super) async fn until_gone<D: Database>(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    wait::until(req, DATABASE_LIMIT, move || async move {
        Ok(match D::describe(client, req, id).await? {
            None => Poll::Done(()),
            Some(db) => Poll::Pending(format!(
                "{} {id} is {}",
                D::KIND,
                D::status(&db).unwrap_or("still there")
            )),
        })
    })
    .await
}
