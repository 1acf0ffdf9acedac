//! Waiting on a service, only where a dependent needs it (a NAT gateway before a route to it,
//! a database's endpoint before what connects to it): short-first polling (200 ms, growing by
//! half up to 5 s, as the Cloud Control provider polls), so a fast answer is seen at once and
//! a slow one costs few calls. Never a blind sleep.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::provider::{ProviderError, ResourceRequest};

/// The first interval between polls.
pub const FIRST: Duration = Duration::from_millis(200);
/// The longest interval between polls.
pub const MAX: Duration = Duration::from_secs(5);

/// The interval after `interval`: half as long again, at most [`MAX`].
pub fn next(interval: Duration) -> Duration {
    (interval * 3 / 2).min(MAX)
}

/// What one poll saw.
pub enum Poll<T> {
    Done(T),
    /// Not yet; the text says what was seen (it goes into a timeout's message).
    Pending(String),
}

/// Polls `check` until it is done, or fails the resource after `limit`.
pub async fn until<T, F, Fut>(
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
                interval = next(interval);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_start_short_and_grow_by_half_to_the_cap() {
        assert_eq!(next(FIRST), Duration::from_millis(300));
        assert_eq!(next(Duration::from_secs(4)), MAX);
        assert_eq!(next(MAX), MAX);
    }
}
