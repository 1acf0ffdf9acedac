//! Waiting on EC2, only where a dependent needs it: the scaffold's short-first polling
//! ([`until`]), and the retry of a delete while something still depends on the resource.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::provider::sdk::scaffold::wait::{next, FIRST};
pub(super) use crate::provider::sdk::scaffold::wait::{until, Poll};

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
                interval = next(interval);
            }
            other => return other,
        }
    }
}
