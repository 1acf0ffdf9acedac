//! Waiting on EC2, only where a dependent needs it: short-first polling (200 ms, growing by
//! half up to 5 s, as the Cloud Control provider polls) so a fast answer is seen at once and
//! a slow one costs few calls.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::provider::{ProviderError, ResourceRequest};

const FIRST: Duration = Duration::from_millis(200);
const MAX: Duration = Duration::from_secs(5);

/// What one poll saw.
pub(super) enum Poll<T> {
    Done(T),
    /// Not yet; the text says what was seen (it goes into a timeout's message).
    Pending(String),
}

/// Polls `check` until it is done, or fails the resource after `limit`.
pub(super) async fn until<T, F, Fut>(
    req: &ResourceRequest<'_>,
    limit: Duration,
    mut check: F,
) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Poll<T>, ProviderError>>,
{
    let started = Instant::now();
    let mut interval = FIRST;
    loop {
        match check().await? {
            Poll::Done(v) => return Ok(v),
            Poll::Pending(seen) if started.elapsed() + interval > limit => {
                return Err(ProviderError::Timeout {
                    logical_id: req.logical_id.to_owned(),
                    resource_type: req.resource_type.to_owned(),
                    seconds: limit.as_secs(),
                    detail: seen,
                })
            }
            Poll::Pending(_) => {
                tokio::time::sleep(interval).await;
                interval = (interval * 3 / 2).min(MAX);
            }
        }
    }
}

/// How long a delete keeps retrying while EC2 says something still depends on the resource
/// (a NAT gateway's network interface still detaching from its subnet, the interfaces a
/// Lambda function left in a security group, which AWS removes on its own time).
pub(super) const DEPENDENCY_LIMIT: Duration = Duration::from_secs(20 * 60);

/// Runs `call` again, polling short-first, while it fails with `DependencyViolation`, up to
/// [`DEPENDENCY_LIMIT`]; returns its last result.
pub(super) async fn while_dependent<T, E, F, Fut>(
    mut call: F,
) -> Result<
    T,
    aws_smithy_runtime_api::client::result::SdkError<E, aws_smithy_runtime_api::http::Response>,
>
where
    E: aws_smithy_types::error::metadata::ProvideErrorMetadata,
    F: FnMut() -> Fut,
    Fut: Future<
        Output = Result<
            T,
            aws_smithy_runtime_api::client::result::SdkError<
                E,
                aws_smithy_runtime_api::http::Response,
            >,
        >,
    >,
{
    let started = Instant::now();
    let mut interval = FIRST;
    loop {
        match call().await {
            Err(e)
                if crate::aws::error_code(&e) == Some("DependencyViolation")
                    && started.elapsed() + interval < DEPENDENCY_LIMIT =>
            {
                tracing::debug!("still in use (DependencyViolation); retrying in {interval:?}");
                tokio::time::sleep(interval).await;
                interval = (interval * 3 / 2).min(MAX);
            }
            other => return other,
        }
    }
}
