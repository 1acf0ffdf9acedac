//! Keeping the lock: the background task that re-writes `expiresAt` with
//! `If-Match`, and the read-back that tells a renewal whose answer was lost
//! from a lock that was lost.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::held::Entry;
use super::s3::{Cond, Ctx};
use super::{describe_holder, iso8601_ms, now_ms};
use crate::aws::ErrorKind;
use crate::state::record::LockInfo;

/// Bodies kept for the lost-response check (written, response not seen).
const UNCONFIRMED_LIMIT: usize = 16;

pub(super) async fn renew_loop(
    ctx: Arc<Ctx>,
    entry: Arc<Entry>,
    mut stop: watch::Receiver<bool>,
    interval: Duration,
) {
    loop {
        tokio::select! {
            biased;
            _ = stop.wait_for(|stopped| *stopped) => return,
            _ = tokio::time::sleep(interval) => {}
        }
        if *stop.borrow() || !renew_once(&ctx, &entry).await {
            return;
        }
    }
}

/// One renewal; false when renewing should stop (released or lost).
async fn renew_once(ctx: &Ctx, entry: &Entry) -> bool {
    let ttl_ms = u64::try_from(entry.ttl.as_millis()).unwrap_or(u64::MAX);
    let (etag, info, body) = {
        let mut st = entry.state();
        if st.released || st.lost {
            return false;
        }
        let mut info = st.info.clone();
        info.expires_at = Some(now_ms().saturating_add(ttl_ms));
        let body = info.to_json_bytes();
        if st.unconfirmed.len() >= UNCONFIRMED_LIMIT {
            st.unconfirmed.remove(0);
        }
        st.unconfirmed.push(body.clone());
        (st.etag.clone(), info, body)
    };
    let result = ctx.put(&entry.key, &body, Cond::IfMatch(&etag)).await;
    let failure = match result {
        Ok(Some(new_etag)) if !new_etag.is_empty() => {
            let mut st = entry.state();
            st.etag = new_etag;
            st.body = body;
            st.info = info;
            st.unconfirmed.clear();
            st.lapse_warned = false;
            return true;
        }
        // No ETag in the answer: find it by reading back, as after a 412.
        Ok(_) => None,
        Err(e) if e.kind() == ErrorKind::PreconditionFailed => None,
        Err(e) => Some(e),
    };
    if let Some(e) = failure {
        warn_if_lapsed(entry, &e.to_string());
        return true;
    }
    // One read decides: our own write (answer lost) or somebody else's lock.
    match ctx.get(&entry.key).await {
        Ok(Some((bytes, current))) if entry.is_own_body(&bytes) => {
            let mut st = entry.state();
            if let Some(adopted) = LockInfo::parse(&bytes) {
                st.info = adopted;
            }
            st.etag = current;
            st.body = bytes;
            st.unconfirmed.clear();
            st.lapse_warned = false;
            tracing::debug!(
                "adopted the renewal of the lock of stack {} ({}) whose answer was lost",
                entry.stack,
                entry.region
            );
            true
        }
        Ok(current) => {
            let holder = current.and_then(|(bytes, _)| LockInfo::parse(&bytes));
            let already = {
                let mut st = entry.state();
                std::mem::replace(&mut st.lost, true)
            };
            if !already {
                let what = match &holder {
                    Some(h) => format!("it is now held by {}", describe_holder(h)),
                    None => "it was removed (cdkd force-unlock?)".to_owned(),
                };
                tracing::warn!(
                    "Lost the lock of stack {} ({}) while this process still runs: {what}; \
                     another process may now be writing this stack's state",
                    entry.stack,
                    entry.region
                );
            }
            false
        }
        Err(e) => {
            warn_if_lapsed(entry, &e.to_string());
            true
        }
    }
}

/// Warns once when renewals keep failing past the lock's deadline.
fn warn_if_lapsed(entry: &Entry, error: &str) {
    tracing::debug!(
        "renewing the lock of stack {} ({}) failed (retrying next tick): {error}",
        entry.stack,
        entry.region
    );
    let deadline = {
        let mut st = entry.state();
        let lapsed = st.info.is_expired(now_ms());
        if !lapsed || st.lapse_warned {
            return;
        }
        st.lapse_warned = true;
        st.info.expires_at
    };
    tracing::warn!(
        "Could not renew the lock of stack {} ({}) and it expired at {}: another cdkd process \
         may take it over while this one still runs (last error: {error})",
        entry.stack,
        entry.region,
        deadline.map_or_else(|| "an unknown time".to_owned(), iso8601_ms)
    );
}
