//! Starting a stack before the stacks it depends on have finished.
//!
//! A deploy of many stacks used to start a stack only once every stack it depends on had
//! deployed, so a chain of N stacks paid N times the fixed calls (lock, reads, release)
//! even when nothing changed. Now every stack starts at once: it takes its own lock, reads
//! its own record and plans against what its producers have stored. Then it waits for them
//! ([`Producers::settled`]):
//! - all of them deployed with no change: what it read from them is final, and a plan with
//!   no change is the answer (a no-change chain costs one stack's fixed calls, not N);
//! - any of them changed something, or its own plan has changes: it plans again, from the
//!   record it already holds under its lock, now that the producers' outputs (and this run's
//!   plaintext of their `***` outputs) are final; nothing was sent to AWS before that;
//! - one of them failed or was skipped: it is skipped, as before, having changed nothing.
//!
//! The lock is taken before the read as always; holding a consumer's lock while its
//! producers deploy changes nothing for them (each stack has its own).

use tokio::sync::watch;

/// How the stacks a stack depends on ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Every one deployed and changed nothing.
    Unchanged,
    /// Every one deployed; at least one changed something.
    Changed,
    /// This one (named) failed, was skipped or did not start.
    Failed(String),
}

/// The handle a speculatively started stack waits on.
#[derive(Clone)]
pub struct Producers {
    rx: watch::Receiver<Option<Settled>>,
}

impl Producers {
    /// A handle and the sender the scheduler answers it through (once).
    pub fn channel() -> (watch::Sender<Option<Settled>>, Producers) {
        let (tx, rx) = watch::channel(None);
        (tx, Producers { rx })
    }

    /// Waits until the scheduler says how the producers ended. A scheduler gone without an
    /// answer counts as a failure (the stack changes nothing).
    pub async fn settled(&self) -> Settled {
        let mut rx = self.rx.clone();
        let settled = match rx.wait_for(Option::is_some).await {
            Ok(value) => value.clone(),
            Err(_) => None,
        };
        settled.unwrap_or_else(|| Settled::Failed("the scheduler".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_for_the_answer_and_a_dropped_sender_is_a_failure() {
        let (tx, producers) = Producers::channel();
        let waiting = tokio::spawn({
            let p = producers.clone();
            async move { p.settled().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        tx.send_replace(Some(Settled::Changed));
        assert_eq!(waiting.await.unwrap(), Settled::Changed);
        assert_eq!(producers.settled().await, Settled::Changed);

        let (tx, producers) = Producers::channel();
        drop(tx);
        assert!(matches!(producers.settled().await, Settled::Failed(_)));
    }
}
