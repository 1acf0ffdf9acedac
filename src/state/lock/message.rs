//! What the lock says: [`LockError`] and its one-line messages, the holder
//! description, and the times in them.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::aws::AwsError;
use crate::state::record::LockInfo;

/// A failed lock operation, as one line naming the stack, region and remedy.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock (`holder` is the last read of it;
    /// `None` when none could be read).
    #[error("{}", held_message(.stack, .region, .holder.as_ref()))]
    Held {
        stack: String,
        region: String,
        holder: Option<LockInfo>,
    },
    /// An S3 call of the lock failed.
    #[error("Could not {action} the lock of stack {stack} ({region}): {source}")]
    Aws {
        stack: String,
        region: String,
        action: &'static str,
        source: AwsError,
    },
    /// An expired lock could not be removed with its conditional delete.
    #[error(
        "Stack {stack} ({region}) has an expired lock from {owner} that could not be removed: \
         {source}; clear it with `cdkd force-unlock {stack}`"
    )]
    Reap {
        stack: String,
        region: String,
        owner: String,
        source: AwsError,
    },
    /// The conditional release was not evaluated and ownership could not be
    /// re-checked, so nothing was deleted.
    #[error(
        "Did not release the lock of stack {stack} ({region}): the conditional delete was \
         refused ({refused}) and re-reading the lock to confirm it is still ours failed \
         ({source}); it lapses at its expiry, or run `cdkd force-unlock {stack}`"
    )]
    ReleaseUnverified {
        stack: String,
        region: String,
        refused: String,
        source: AwsError,
    },
}

impl LockError {
    pub(super) fn aws(stack: &str, region: &str, action: &'static str, source: AwsError) -> Self {
        LockError::Aws {
            stack: stack.to_owned(),
            region: region.to_owned(),
            action,
            source,
        }
    }
}

fn held_message(stack: &str, region: &str, holder: Option<&LockInfo>) -> String {
    match holder {
        Some(h) => format!(
            "Stack {stack} ({region}) is locked by {}; wait for it, or run `cdkd force-unlock \
             {stack}` if that process is gone",
            describe_holder(h)
        ),
        None => format!(
            "Could not acquire the lock of stack {stack} ({region}): another process holds or \
             is taking it, and no lock could be read; retry, or run `cdkd force-unlock {stack}` \
             if this persists"
        ),
    }
}

/// `owner (operation) until <ISO time>`.
pub fn describe_holder(info: &LockInfo) -> String {
    let owner = if info.owner.is_empty() {
        "an unknown owner"
    } else {
        info.owner.as_str()
    };
    let operation = info
        .operation
        .as_deref()
        .map(|op| format!(" ({op})"))
        .unwrap_or_default();
    let until = match info.expires_at {
        Some(ms) => format!("until {}", iso8601_ms(ms)),
        None => "with no valid expiry".to_owned(),
    };
    format!("{owner}{operation} {until}")
}

/// Unix milliseconds now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// `new Date(ms).toISOString()`: `2024-03-19T08:00:00.000Z`.
pub fn iso8601_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let millis = ms % 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}
