//! Clean-up work the process owes before it exits, but that nothing it does next waits for:
//! the noncurrent-version purges that follow a delete (the lock's after its release, the
//! ledger's and the journal's after a destroy removes them). They are fail-soft by design
//! (state-schema.md, "Noncurrent-version purges"), so nothing is decided by their outcome;
//! running them in the background takes their round trips off the command's critical path
//! (another stack's work, the next step of this one overlap them). [`drain`] awaits them all
//! at the end of the process (lib.rs), so a command never exits with a purge half done.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use tokio::task::JoinHandle;

static TASKS: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// How long the process waits for the outstanding purges before it exits anyway (each is
/// a listing and a batch delete; this bounds a hung connection, not normal work).
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `work` in the background, to be awaited by [`drain`]. Outside a Tokio runtime it
/// cannot be spawned and is dropped (there is no such caller: every command runs in one).
pub fn spawn(work: impl Future<Output = ()> + Send + 'static) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::debug!("no async runtime: a background purge was skipped");
        return;
    };
    let task = handle.spawn(work);
    TASKS.lock().unwrap_or_else(|p| p.into_inner()).push(task);
}

/// Waits for every task [`spawn`] started, including those started while draining, up to
/// [`DRAIN_TIMEOUT`] in all.
pub async fn drain() {
    let all = async {
        loop {
            let tasks = std::mem::take(&mut *TASKS.lock().unwrap_or_else(|p| p.into_inner()));
            if tasks.is_empty() {
                return;
            }
            for task in tasks {
                let _ = task.await;
            }
        }
    };
    if tokio::time::timeout(DRAIN_TIMEOUT, all).await.is_err() {
        tracing::warn!(
            "background version purges still running after {}s; exiting without them (the \
             next command's purge of the same keys removes what they left)",
            DRAIN_TIMEOUT.as_secs()
        );
    }
}
