//! The one concurrent DAG executor.
//!
//! Each node starts the moment its prerequisites finish (no level barriers), bounded by a
//! concurrency limit. A failed node's dependents, direct or not, are skipped; independent
//! branches keep going. Cancellation (Ctrl-C) stops new starts and lets in-flight work finish,
//! so whatever AWS did is still reported and can be recorded in state.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::JoinSet;

use crate::plan::ReadyTracker;

/// What happened to a node, as it happens (for live progress).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalkEvent {
    Started(String),
    Completed(String),
    Failed(String),
    Skipped(String),
}

/// The end state of every node.
#[derive(Debug)]
pub struct WalkOutcome<T, E> {
    /// In completion order.
    pub completed: Vec<(String, T)>,
    pub failed: Vec<(String, E)>,
    /// Never started because something they depend on failed.
    pub skipped: Vec<String>,
    /// Never started because the walk was cancelled.
    pub cancelled: Vec<String>,
}

impl<T, E> WalkOutcome<T, E> {
    pub fn is_success(&self) -> bool {
        self.failed.is_empty() && self.skipped.is_empty() && self.cancelled.is_empty()
    }
}

/// Options of one walk.
pub struct WalkOptions {
    /// Maximum nodes running at once (at least 1).
    pub concurrency: usize,
    /// Flips to `true` to stop starting nodes.
    pub cancel: Option<watch::Receiver<bool>>,
    pub events: Option<mpsc::UnboundedSender<WalkEvent>>,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            concurrency: 10,
            cancel: None,
            events: None,
        }
    }
}

/// Runs `work` for every node of `tracker`'s graph in dependency order.
pub async fn walk<T, E, F, Fut>(
    mut tracker: ReadyTracker,
    options: WalkOptions,
    work: F,
) -> WalkOutcome<T, E>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Send + 'static,
{
    let permits = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let mut cancel = options.cancel;
    let emit = |event: WalkEvent| {
        if let Some(tx) = &options.events {
            let _ = tx.send(event);
        }
    };
    let is_cancelled =
        |rx: &Option<watch::Receiver<bool>>| rx.as_ref().is_some_and(|r| *r.borrow());

    let mut outcome = WalkOutcome {
        completed: Vec::new(),
        failed: Vec::new(),
        skipped: Vec::new(),
        cancelled: Vec::new(),
    };
    let mut running: JoinSet<(String, Option<Result<T, E>>)> = JoinSet::new();
    let mut queue: Vec<String> = tracker
        .initial_ready()
        .into_iter()
        .map(str::to_owned)
        .collect();
    queue.reverse(); // popped from the end, so the tie-break order is kept

    loop {
        if !is_cancelled(&cancel) {
            while let Some(id) = queue.pop() {
                let permits = permits.clone();
                let fut = work(id.clone());
                let events = options.events.clone();
                let cancel_seen = cancel.clone();
                running.spawn(async move {
                    // The semaphore is never closed, so acquiring cannot fail; if it ever did,
                    // running without a permit is safer than dropping the node.
                    let _permit = permits.acquire_owned().await.ok();
                    if cancel_seen.as_ref().is_some_and(|r| *r.borrow()) {
                        return (id, None);
                    }
                    if let Some(tx) = &events {
                        let _ = tx.send(WalkEvent::Started(id.clone()));
                    }
                    let result = fut.await;
                    (id, Some(result))
                });
            }
        }
        if running.is_empty() {
            break;
        }
        let joined = match &mut cancel {
            Some(rx) if !*rx.borrow() => {
                tokio::select! {
                    joined = running.join_next() => joined,
                    _ = rx.changed() => continue,
                }
            }
            _ => running.join_next().await,
        };
        let Some(joined) = joined else { break };
        match joined {
            Ok((_, None)) => {} // cancelled before it started; reported from the tracker below
            Ok((id, Some(Ok(value)))) => {
                emit(WalkEvent::Completed(id.clone()));
                let mut released = tracker.complete(&id);
                released.reverse();
                queue.splice(0..0, released);
                outcome.completed.push((id, value));
            }
            Ok((id, Some(Err(err)))) => {
                emit(WalkEvent::Failed(id.clone()));
                for skipped in tracker.fail(&id) {
                    queue.retain(|q| q != &skipped);
                    emit(WalkEvent::Skipped(skipped.clone()));
                    outcome.skipped.push(skipped);
                }
                outcome.failed.push((id, err));
            }
            Err(join_error) => {
                // A panicking task is a bug; report it loudly rather than hang the walk.
                tracing::error!("a provisioning task panicked: {join_error}");
            }
        }
    }
    outcome.cancelled = tracker
        .unfinished()
        .into_iter()
        .map(str::to_owned)
        .collect();
    outcome
}

#[cfg(test)]
mod tests;
