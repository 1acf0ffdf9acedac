//! The create-token ledger (`create-tokens.json` beside `state.json`; state-schema,
//! "Create-token ledger").
//!
//! A create cdkd sends carries a token: the Cloud Control ClientToken, and the seed of the
//! random suffix of a generated physical name. The ledger holds a random nonce folded into
//! those tokens and one sent entry per logical id (the token its latest create sent and when
//! it was first sent), written BEFORE the create is sent. A run interrupted anywhere (during
//! the create, or after it but before state named the resource) is re-run with the same token,
//! so its create answers with the resource the interrupted run made instead of a second one.
//! The ledger holds no secret.

use std::collections::BTreeMap;

use aws_sdk_s3::primitives::ByteStream;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::keys::StateKeys;
use crate::aws::{classify, AwsError, ErrorKind};

/// The newest ledger format this binary reads and writes.
pub const LEDGER_VERSION: u32 = 1;

/// One logical id's latest create token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SentEntry {
    pub token: String,
    /// Epoch milliseconds of the first send of this token.
    pub first_sent_at: u64,
    /// The physical id of the record the create replaces (`None` for a plain create). A
    /// re-run reuses the token only while state still records that same resource, i.e. while
    /// the create's outcome is not recorded yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacing: Option<String>,
}

/// The ledger's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ledger {
    pub version: u32,
    pub nonce: String,
    /// Whether a state record was saved while this ledger existed. A ledger with this set
    /// but no state record was left by a deleted record: a deploy starts a fresh one.
    #[serde(default)]
    pub record_saved: bool,
    #[serde(default)]
    pub sent: BTreeMap<String, SentEntry>,
    /// Fields a later version added, kept for the next write.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Ledger {
    /// A fresh ledger with a new nonce.
    pub fn fresh() -> Self {
        Ledger {
            version: LEDGER_VERSION,
            nonce: random_hex(16),
            record_saved: false,
            sent: BTreeMap::new(),
            extra: Map::new(),
        }
    }

    /// A new token for a create of `logical_id`, folding in the nonce.
    pub fn mint(&self, logical_id: &str) -> String {
        let digest = Sha256::digest(format!("{}/{logical_id}/{}", self.nonce, random_hex(8)));
        hex(&digest[..16])
    }

    /// Replaces the nonce (cdkd let go of a resource it made that still exists).
    pub fn rotate(&mut self) {
        self.nonce = random_hex(16);
    }
}

/// A ledger as read.
#[derive(Debug, Clone)]
pub enum LoadedLedger {
    Missing,
    Found(Ledger),
    /// Unreadable (damaged, or written by a newer cdkd): never overwritten.
    Unreadable(String),
}

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error(transparent)]
    Aws(#[from] AwsError),
}

/// Parses a stored ledger.
pub fn parse_ledger(bytes: &[u8]) -> LoadedLedger {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return LoadedLedger::Unreadable(format!("not JSON: {e}")),
    };
    match value.get("version").and_then(Value::as_u64) {
        Some(v) if v > u64::from(LEDGER_VERSION) => {
            return LoadedLedger::Unreadable(format!(
                "written by a newer cdkd (ledger version {v}; this binary reads up to \
                 {LEDGER_VERSION})"
            ))
        }
        Some(_) => {}
        None => return LoadedLedger::Unreadable("no numeric version field".into()),
    }
    match serde_json::from_value::<Ledger>(value) {
        Ok(l) if !l.nonce.is_empty() => LoadedLedger::Found(l),
        Ok(_) => LoadedLedger::Unreadable("empty nonce".into()),
        Err(e) => LoadedLedger::Unreadable(e.to_string()),
    }
}

/// Reads and writes one bucket's ledgers.
#[derive(Clone)]
pub struct LedgerStore {
    client: aws_sdk_s3::Client,
    bucket: String,
    keys: StateKeys,
}

impl LedgerStore {
    pub fn new(client: aws_sdk_s3::Client, bucket: &str, keys: StateKeys) -> Self {
        LedgerStore {
            client,
            bucket: bucket.to_owned(),
            keys,
        }
    }

    fn key(&self, stack: &str, region: &str) -> String {
        self.keys.create_tokens(stack, region)
    }

    pub async fn load(&self, stack: &str, region: &str) -> Result<LoadedLedger, LedgerError> {
        let key = self.key(stack, region);
        let out = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(&key)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if classify(&e) == ErrorKind::NotFound => return Ok(LoadedLedger::Missing),
            Err(e) => return Err(AwsError::call("s3", "GetObject", self.describe(&key), &e).into()),
        };
        let body = out.body.collect().await.map_err(|e| {
            AwsError::Unexpected(format!("reading {} failed: {e}", self.describe(&key)))
        })?;
        Ok(parse_ledger(&body.into_bytes()))
    }

    pub async fn save(
        &self,
        stack: &str,
        region: &str,
        ledger: &Ledger,
    ) -> Result<(), LedgerError> {
        let key = self.key(stack, region);
        let body = serde_json::to_vec_pretty(ledger)
            .map_err(|e| AwsError::Unexpected(format!("serializing the ledger failed: {e}")))?;
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(&key)
            .content_type("application/json")
            .body(ByteStream::from(body))
            .send()
            .await
            .map_err(|e| AwsError::call("s3", "PutObject", self.describe(&key), &e))?;
        Ok(())
    }

    /// Deletes the ledger (before its state record is deleted).
    pub async fn delete(&self, stack: &str, region: &str) -> Result<(), LedgerError> {
        let key = self.key(stack, region);
        match self
            .client
            .delete_object()
            .bucket(&self.bucket)
            .key(&key)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if classify(&e) == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(AwsError::call("s3", "DeleteObject", self.describe(&key), &e).into()),
        }
    }

    fn describe(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }
}

/// The random suffix of a generated name created with `token`: twelve upper-case letters and
/// digits derived from the token and the seed the name generator passes.
pub fn name_suffix(token: &str, seed: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    Sha256::digest(format!("{token}/{seed}"))
        .iter()
        .take(12)
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `len` random bytes as hex: unique per call (clock, process, counter), not a secret.
fn random_hex(len: usize) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let mut h = Sha256::new();
        h.update(nanos.to_le_bytes());
        h.update(std::process::id().to_le_bytes());
        h.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
        out.extend_from_slice(&h.finalize());
    }
    hex(&out[..len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_entries_and_unknown_fields() {
        let mut l = Ledger::fresh();
        let token = l.mint("Queue");
        assert_eq!(token.len(), 32);
        assert_ne!(token, l.mint("Queue"), "each create gets a new token");
        l.sent.insert(
            "Queue".into(),
            SentEntry {
                token: token.clone(),
                first_sent_at: 5,
                replacing: None,
            },
        );
        l.extra.insert("later".into(), Value::Bool(true));
        let text = serde_json::to_string(&l).unwrap();
        assert!(text.contains("\"firstSentAt\":5"), "{text}");
        assert!(text.contains("\"recordSaved\":false"), "{text}");
        match parse_ledger(text.as_bytes()) {
            LoadedLedger::Found(back) => assert_eq!(back, l),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn newer_or_damaged_ledgers_are_unreadable() {
        for bad in [
            r#"{"version": 2, "nonce": "n", "sent": {}}"#,
            r#"{"nonce": "n"}"#,
            r#"[1]"#,
            r#"{"version": 1, "nonce": "", "sent": {}}"#,
            r#"{"version": 1, "nonce": "n", "sent": {"Q": 3}}"#,
        ] {
            assert!(
                matches!(parse_ledger(bad.as_bytes()), LoadedLedger::Unreadable(_)),
                "{bad}"
            );
        }
    }

    #[test]
    fn name_suffix_is_stable_per_token_and_seed() {
        let a = name_suffix("t1", "Queue");
        assert_eq!(a, name_suffix("t1", "Queue"));
        assert_ne!(a, name_suffix("t2", "Queue"));
        assert_ne!(a, name_suffix("t1", "Topic"));
        assert_eq!(a.len(), 12);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()));
    }
}
