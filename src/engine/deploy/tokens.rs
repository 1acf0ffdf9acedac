//! The create-token ledger in a deploy: which token each create sends, so that a run killed
//! anywhere is re-run with the same tokens and takes over what it made.
//!
//! Before the walk, one ledger write records a sent entry for every create the plan will send
//! (never one write per resource). A create runs under its token: the Cloud Control ClientToken
//! is the token itself, and a generated physical name's random suffix is derived from it
//! (`naming::with_create_token`), so the re-run sends the same name and the same ClientToken.
//! Cloud Control answers a reused ClientToken with the original request; an SDK create answers
//! AlreadyExists, and the engine adopts the resource by name, but only for a logical id whose
//! entry was inherited from an earlier run (otherwise the name belongs to someone else).
//!
//! An inherited entry is reused only while state still records what it recorded when the
//! entry was written (`replacing`: the physical id the create replaces, or none): once state
//! names the created resource, the entry is spent and a new create gets a new token, so a
//! token never reaches a second resource. Spent entries are pruned with the next ledger write.

use std::collections::{HashMap, HashSet};

use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::Mutex;

use super::plan::Planned;
use crate::plan::ChangeKind;
use crate::state::ledger::{Ledger, LedgerError, LedgerStore, LoadedLedger, SentEntry};
use crate::state::StackState;
use crate::ui;

/// Types whose create token the service binds to the resource for its whole life.
const TOKEN_BOUND_TYPES: &[&str] = &[
    "AWS::EFS::FileSystem",
    "AWS::FSx::FileSystem",
    "AWS::CloudFront::CloudFrontOriginAccessIdentity",
];

/// A create's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub value: String,
    /// Sent by an earlier, interrupted run: what answers to it may be adopted.
    pub inherited: bool,
}

struct Inner {
    /// `None` when the ledger cannot be read or written (creates go without durable tokens).
    ledger: Option<Ledger>,
    unavailable: Option<String>,
    inherited: HashSet<String>,
    /// Ids this run let go of while their resource still exists (a retain).
    released: Vec<String>,
    /// Spent entries were dropped in memory and the ledger on disk still has them.
    pruned: bool,
}

pub(crate) struct Tokens {
    store: LedgerStore,
    stack: String,
    region: String,
    inner: Mutex<Inner>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Whether an entry is still unspent against the current record of its id.
fn reusable(entry: &SentEntry, state: &StackState, id: &str) -> bool {
    let recorded = state
        .resources
        .get(id)
        .and_then(|r| r.physical_id.as_deref());
    recorded == entry.replacing.as_deref()
}

impl Tokens {
    /// The ledger as read beside the state record. `state` is the record as loaded;
    /// `record_exists` whether one was stored.
    pub fn from_loaded(
        store: LedgerStore,
        stack: &str,
        region: &str,
        loaded: Result<LoadedLedger, LedgerError>,
        state: &StackState,
        record_exists: bool,
    ) -> Tokens {
        let (ledger, unavailable) = match loaded {
            Ok(LoadedLedger::Missing) => (Some(Ledger::fresh()), None),
            Ok(LoadedLedger::Found(l)) if l.record_saved && !record_exists => {
                // The record this ledger served was deleted (an earlier cdkd left the ledger):
                // resuming would take over resources that deployment kept.
                (Some(Ledger::fresh()), None)
            }
            Ok(LoadedLedger::Found(l)) => (Some(l), None),
            Ok(LoadedLedger::Unreadable(why)) => (None, Some(why)),
            Err(e) => (None, Some(e.to_string())),
        };
        if let Some(why) = &unavailable {
            ui::warn(format!(
                "{stack}: the create-token ledger {} cannot be read ({why}); it is left as it \
                 is, and creates in this deploy cannot be resumed by a re-run if interrupted",
                store_key(stack, region)
            ));
        }
        let mut inherited = HashSet::new();
        let mut pruned = false;
        let ledger = ledger.map(|mut l| {
            let before = l.sent.len();
            l.sent.retain(|id, e| reusable(e, state, id));
            pruned = l.sent.len() != before;
            inherited.extend(l.sent.keys().cloned());
            l
        });
        Tokens {
            store,
            stack: stack.to_owned(),
            region: region.to_owned(),
            inner: Mutex::new(Inner {
                ledger,
                unavailable,
                inherited,
                released: Vec::new(),
                pruned,
            }),
        }
    }

    /// The refusal of a create that must not go without the ledger's token.
    pub async fn refusal(&self, logical_id: &str, resource_type: &str) -> Option<String> {
        let inner = self.inner.lock().await;
        let why = inner.unavailable.as_ref()?;
        TOKEN_BOUND_TYPES.contains(&resource_type).then(|| {
            format!(
                "refused: {} binds its create token to the resource, and the create-token \
                 ledger of {} cannot be used ({why}); re-run once {} is readable ({logical_id})",
                resource_type,
                self.stack,
                store_key(&self.stack, &self.region)
            )
        })
    }

    /// Records a sent entry for every create in `creates` (logical id, the physical id it
    /// replaces) in ONE ledger write, before any of them is sent. Entries inherited for the
    /// same create are kept as they are.
    pub async fn prepare(&self, creates: &[(String, Option<String>)], record_exists: bool) {
        let mut inner = self.inner.lock().await;
        let Some(ledger) = inner.ledger.as_mut() else {
            return;
        };
        let mut changed = false;
        for (id, replacing) in creates {
            let keep = ledger
                .sent
                .get(id)
                .is_some_and(|e| &e.replacing == replacing);
            if !keep {
                let token = ledger.mint(id);
                ledger.sent.insert(
                    id.clone(),
                    SentEntry {
                        token,
                        first_sent_at: now_ms(),
                        replacing: replacing.clone(),
                    },
                );
                changed = true;
            }
        }
        if record_exists && !ledger.record_saved {
            ledger.record_saved = true;
            changed = true;
        }
        if changed {
            self.write(&mut inner).await;
            inner.pruned = false;
        }
    }

    /// The token of the create of `id` (replacing `replacing`); a create the plan did not
    /// foresee gets a new entry, written before it is returned. `None` without a ledger.
    pub async fn token_for(&self, id: &str, replacing: Option<&str>) -> Option<Token> {
        let mut inner = self.inner.lock().await;
        let inherited = inner.inherited.contains(id);
        let ledger = inner.ledger.as_mut()?;
        if let Some(e) = ledger.sent.get(id) {
            if e.replacing.as_deref() == replacing {
                return Some(Token {
                    value: e.token.clone(),
                    inherited,
                });
            }
        }
        let token = ledger.mint(id);
        ledger.sent.insert(
            id.to_owned(),
            SentEntry {
                token: token.clone(),
                first_sent_at: now_ms(),
                replacing: replacing.map(str::to_owned),
            },
        );
        inner.inherited.remove(id);
        if !self.write(&mut inner).await {
            return None;
        }
        Some(Token {
            value: token,
            inherited: false,
        })
    }

    /// The create of `id` ended with a definite answer that it made nothing (the service
    /// refused it): its token is spent, since a reused token gets the same answer back (Cloud
    /// Control returns the original, failed request). The drop is written with the next
    /// ledger write ([`Self::write_pending`] at the end of a failed deploy).
    pub async fn spend(&self, id: &str) {
        let mut inner = self.inner.lock().await;
        if let Some(ledger) = inner.ledger.as_mut() {
            if ledger.sent.remove(id).is_some() {
                inner.pruned = true;
            }
        }
        inner.inherited.remove(id);
    }

    /// Writes spent and pruned entries' removal, if any (the end of a failed deploy).
    pub async fn write_pending(&self) {
        let mut inner = self.inner.lock().await;
        if std::mem::take(&mut inner.pruned) {
            self.write(&mut inner).await;
        }
    }

    /// cdkd let go of `id`'s resource while it still exists (a retain): the nonce is rotated
    /// and the entry dropped with the next ledger write ([`Self::settle`]).
    pub async fn release(&self, id: &str) {
        self.inner.lock().await.released.push(id.to_owned());
    }

    /// Drops the entries of `ids` (their resources were deleted by a rollback).
    pub async fn forget(&self, ids: &[String]) {
        let mut inner = self.inner.lock().await;
        let Some(ledger) = inner.ledger.as_mut() else {
            return;
        };
        let before = ledger.sent.len();
        ledger.sent.retain(|id, _| !ids.contains(id));
        if ledger.sent.len() != before {
            self.write(&mut inner).await;
        }
    }

    /// After a successful deploy, once its final state save is done: applies retains (a new
    /// nonce) and marks the ledger as serving a saved record. Writes only when one of those
    /// changes (a first deploy, a retain).
    pub async fn settle(&self, final_state: &StackState) {
        let mut inner = self.inner.lock().await;
        let released = std::mem::take(&mut inner.released);
        // A spent entry left on disk would be read as unspent once its logical id leaves
        // state (a resource removed, then added back), so the prune is written here.
        let mut changed = std::mem::take(&mut inner.pruned);
        let Some(ledger) = inner.ledger.as_mut() else {
            return;
        };
        if !released.is_empty() {
            ledger.rotate();
            ledger.sent.retain(|id, _| !released.contains(id));
            changed = true;
        }
        // Entries this deploy spent are dropped here only when the ledger is written anyway;
        // otherwise the next deploy drops them on load (and writes that prune at its end):
        // while state names their resources they cannot be reused, and a write of its own
        // would sit at the end of every deploy that created something.
        ledger.sent.retain(|id, e| reusable(e, final_state, id));
        if !ledger.record_saved {
            ledger.record_saved = true;
            changed = true;
        }
        if changed {
            self.write(&mut inner).await;
        }
    }

    /// Deletes the ledger (a rolled-back first deploy, before its state record goes).
    pub async fn delete(&self) -> Result<(), String> {
        let inner = self.inner.lock().await;
        if inner.unavailable.is_some() {
            return Err(format!(
                "the create-token ledger {} is unreadable and is left in place",
                store_key(&self.stack, &self.region)
            ));
        }
        self.store
            .delete(&self.stack, &self.region)
            .await
            .map_err(|e| e.to_string())
    }

    /// Writes the ledger; on failure the ledger is given up for this run (with a warning).
    async fn write(&self, inner: &mut Inner) -> bool {
        let Some(ledger) = inner.ledger.as_ref() else {
            return false;
        };
        match self.store.save(&self.stack, &self.region, ledger).await {
            Ok(()) => true,
            Err(e) => {
                ui::warn(format!(
                    "{}: could not write the create-token ledger: {e}; creates in this deploy \
                     cannot be resumed by a re-run if interrupted",
                    self.stack
                ));
                inner.ledger = None;
                inner.unavailable = Some(e.to_string());
                false
            }
        }
    }
}

/// The creates a plan foresees: (logical id, the physical id each replaces).
pub(super) fn planned_creates(
    planned: &HashMap<String, Planned>,
    state: &StackState,
) -> Vec<(String, Option<String>)> {
    let mut creates: Vec<(String, Option<String>)> = planned
        .iter()
        .filter_map(|(id, p)| match p.change.kind {
            ChangeKind::Create => Some((id.clone(), None)),
            // A replacement the walk decides again (it reads what this run moves) may turn
            // out an update: its token is minted when its create is sent.
            ChangeKind::Replace if !p.deferred => Some((
                id.clone(),
                state.resources.get(id).and_then(|r| r.physical_id.clone()),
            )),
            _ => None,
        })
        .collect();
    creates.sort();
    creates
}

fn store_key(stack: &str, region: &str) -> String {
    format!("create-tokens.json of {stack} ({region})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ResourceState;

    #[test]
    fn an_entry_is_spent_once_state_records_its_outcome() {
        let mut state = StackState::new("S", "r");
        let fresh = SentEntry {
            token: "t".into(),
            first_sent_at: 0,
            replacing: None,
        };
        assert!(reusable(&fresh, &state, "Q"), "nothing recorded yet");
        state.resources.insert(
            "Q".into(),
            ResourceState {
                physical_id: Some("q-1".into()),
                ..ResourceState::default()
            },
        );
        assert!(!reusable(&fresh, &state, "Q"), "the create was recorded");
        let replacing = SentEntry {
            replacing: Some("q-1".into()),
            ..fresh.clone()
        };
        assert!(reusable(&replacing, &state, "Q"), "still the old resource");
        state.resources["Q"].physical_id = Some("q-2".into());
        assert!(
            !reusable(&replacing, &state, "Q"),
            "the replacement was recorded"
        );
    }

    #[tokio::test]
    async fn a_generated_name_follows_the_create_token() {
        use crate::provider::naming::{generate, with_create_token, SQS_QUEUE};
        let (a, seen) = with_create_token("tok", async { generate("S", "Q", SQS_QUEUE) }).await;
        let (b, _) = with_create_token("tok", async { generate("S", "Q", SQS_QUEUE) }).await;
        let (c, _) = with_create_token("other", async { generate("S", "Q", SQS_QUEUE) }).await;
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(seen.as_deref(), Some(a.as_str()));
        assert_ne!(generate("S", "Q", SQS_QUEUE), generate("S", "Q", SQS_QUEUE));
    }
}
