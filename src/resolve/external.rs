//! Reads outside the stack: other stacks' exports and outputs, and the
//! values behind dynamic references.
//!
//! [`ExternalReader`] holds what a deploy shares across its stacks (clients,
//! the state bucket, the exports index, the cross-account credential cache);
//! the per-stack caches live in [`super::PrefetchedLookup`], which calls in
//! here. Everything is async; the resolver reads the results synchronously.
//!
//! - `Fn::ImportValue` ([`ExternalReader::import_values`]): the exports index,
//!   then a scan of every state record of the region (a hit is written through
//!   to the index), then CloudFormation `ListExports` as a weak reference. A
//!   stack never imports from itself.
//! - `Fn::GetStackOutput` ([`ExternalReader::stack_output`]): the producer's
//!   state record in any region, else CloudFormation `DescribeStacks`; with a
//!   `RoleArn`, the producer account's `cdkd-state-{account}` bucket read
//!   under an assumed role.
//! - A producer value that is a `{{resolve:...}}` expression is resolved again
//!   in the producer's region (same account) or refused (cross account).
//! - A producer value stored as the redaction mask `***` (a NoEcho parameter
//!   or custom-resource value) is bridged only when the producer was deployed
//!   by this same process: the deploy hands its plaintext outputs to
//!   [`ExternalReader::remember_run_outputs`], keyed by (stack, region, key),
//!   and the consumer is given that value with its plaintext marked for
//!   masking. Any other run refuses the read.

mod azs;
mod fetch;
mod imports;
mod stack_output;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use serde_json::Value;
use tokio::sync::OnceCell;

use super::dynamic::{
    collect_references, contains_dynamic_reference, substitute_in_region, DynamicLookup, FetchKey,
    Fetched, SecretsMap,
};
use super::error::LookupError;
use crate::aws::Clients;
use crate::state::backend::S3Backend;
use crate::state::exports::ExportIndexStore;

pub use fetch::DynamicCache;
pub use imports::{ImportSource, ImportedValue};
pub use stack_output::{parse_role_arn, OutputSource, RoleArnParts, StackOutputValue};

/// One role's credentials, assumed at most once at a time.
type RoleSlot = Arc<OnceCell<stack_output::Assumed>>;

/// One region's availability zones, described at most once.
type AzSlot = Arc<OnceCell<Result<Vec<String>, LookupError>>>;

/// What the NoEcho / custom-resource redaction persists in place of a value.
pub const REDACTION_MASK: &str = "***";

/// Shared, deploy-wide access to what lies outside one stack.
pub struct ExternalReader {
    clients: Arc<Clients>,
    state: Arc<S3Backend>,
    index: Option<Arc<ExportIndexStore>>,
    cfn_fallback: bool,
    /// (role ARN, source identity) → assumed credentials.
    roles: Mutex<HashMap<(String, String), RoleSlot>>,
    /// Producer bucket → its region.
    producer_bucket_regions: Mutex<HashMap<String, String>>,
    assume_role_calls: AtomicUsize,
    /// Region → its availability zones (`Fn::GetAZs`).
    azs: Mutex<HashMap<String, AzSlot>>,
    /// (producer stack, region, output key or export name) → the plaintext
    /// this process resolved for it (the same-run bridge over `***`).
    run_outputs: Mutex<HashMap<(String, String, String), Value>>,
    /// A preview's reader: no secret is ever fetched ([`Self::withholding_secrets`]).
    withhold_secrets: bool,
}

impl ExternalReader {
    /// `state` is the consumer's own state bucket; `index` its exports index
    /// (`None` skips the index and always scans).
    pub fn new(
        clients: Arc<Clients>,
        state: Arc<S3Backend>,
        index: Option<Arc<ExportIndexStore>>,
    ) -> Self {
        ExternalReader {
            clients,
            state,
            index,
            cfn_fallback: true,
            roles: Mutex::new(HashMap::new()),
            producer_bucket_regions: Mutex::new(HashMap::new()),
            assume_role_calls: AtomicUsize::new(0),
            azs: Mutex::new(HashMap::new()),
            run_outputs: Mutex::new(HashMap::new()),
            withhold_secrets: false,
        }
    }

    /// A reader for a read-only preview (`cdkd diff`, `deploy --dry-run`): Secrets Manager is
    /// never called, SSM parameters are read without decryption, and every lookup's dynamic
    /// references keep their secret-bearing ones as written (the expression state stores), so
    /// nothing secret is fetched, for this stack or through another stack's published value.
    pub fn withholding_secrets(mut self) -> Self {
        self.withhold_secrets = true;
        self
    }

    pub fn withholds_secrets(&self) -> bool {
        self.withhold_secrets
    }

    /// `--no-cfn-fallback`: no CloudFormation `ListExports` / `DescribeStacks`
    /// after a cdkd-state miss.
    pub fn with_cfn_fallback(mut self, enabled: bool) -> Self {
        self.cfn_fallback = enabled;
        self
    }

    pub fn cfn_fallback(&self) -> bool {
        self.cfn_fallback
    }

    pub fn clients(&self) -> &Arc<Clients> {
        &self.clients
    }

    /// How many STS AssumeRole calls this reader has made (one per role and
    /// source identity while the credentials last).
    pub fn assume_role_calls(&self) -> usize {
        self.assume_role_calls
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Keeps the plaintext outputs a deploy of `stack` in `region` resolved
    /// in this process (keyed by output name and by export name, as
    /// `state.outputs` keys them), so a consumer deployed later in the same
    /// run can read an output stored as `***`. Values are never keyed by
    /// themselves: one stack's answer is never served to another's read.
    pub fn remember_run_outputs<'v>(
        &self,
        stack: &str,
        region: &str,
        outputs: impl IntoIterator<Item = (&'v String, &'v Value)>,
    ) {
        let mut run = self.run_outputs.lock().unwrap_or_else(|p| p.into_inner());
        for (key, value) in outputs {
            run.insert(
                (stack.to_string(), region.to_string(), key.clone()),
                value.clone(),
            );
        }
    }

    /// The plaintext this process resolved for output (or export) `key` of
    /// `stack` in `region`, if it deployed that stack.
    pub fn run_output(&self, stack: &str, region: &str, key: &str) -> Option<Value> {
        self.run_outputs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(stack.to_string(), region.to_string(), key.to_string()))
            .cloned()
    }

    /// Resolves the dynamic references in a value another stack published,
    /// in the producer's region, fetching through `cache`. `key` is the
    /// `state.outputs` key read (output name or export name); `what` names
    /// the read in errors (`export 'X' of stack 'P'`). A masked leaf is
    /// bridged from this run's plaintext (its plaintext returned in the
    /// secrets map with no position, so the consumer stores `***` too) or
    /// refused.
    pub(crate) async fn reresolve(
        &self,
        cache: &DynamicCache,
        value: &Value,
        producer_stack: &str,
        producer_region: &str,
        key: &str,
        what: &str,
    ) -> Result<(Value, SecretsMap), LookupError> {
        let mut masked = Vec::new();
        let bridged;
        let value = if holds_mask(value) {
            let plain = self.run_output(producer_stack, producer_region, key);
            bridged = plain
                .as_ref()
                .and_then(|p| unmask(value, p, &mut masked))
                .ok_or_else(|| mask_refusal(what))?;
            &bridged
        } else {
            value
        };
        let mut refs = Vec::new();
        collect_references(value, &mut refs);
        let (out, mut secrets) = if refs.is_empty() && !holds_reference(value) {
            (value.clone(), SecretsMap::default())
        } else {
            let keys = refs.iter().map(|r| r.fetch_key(producer_region)).collect();
            cache.ensure(self, keys).await;
            substitute_in_region(value, "", producer_stack, producer_region, cache)
                .map_err(|e| LookupError::Failed(format!("{what}: {}", e.kind)))?
        };
        for p in masked {
            secrets.insert_plaintext(p);
        }
        Ok((out, secrets))
    }
}

/// The refusal of a `***` read no run of this process can bridge.
fn mask_refusal(what: &str) -> LookupError {
    LookupError::Failed(format!(
        "{what} is stored as the redaction mask '{REDACTION_MASK}' (a NoEcho parameter or a \
         NoEcho custom-resource value): there is no expression to re-resolve, and its plaintext \
         exists only in the run that deployed the producer, so the read is refused rather than \
         sending '{REDACTION_MASK}' to AWS. Deploy the producer and this stack in one run (with \
         the producer's custom resource actually running: force it to update), or stop marking \
         that value NoEcho"
    ))
}

/// `stored` with each masked leaf replaced by the same leaf of `plain` (the
/// value this run resolved), collecting those plaintexts; `None` when the
/// two do not have the same shape.
fn unmask(stored: &Value, plain: &Value, masked: &mut Vec<String>) -> Option<Value> {
    match (stored, plain) {
        (Value::String(s), p) if s == REDACTION_MASK => {
            if holds_mask(p) {
                return None;
            }
            match p {
                Value::String(t) => masked.push(t.clone()),
                Value::Number(n) => masked.push(n.to_string()),
                Value::Bool(_) | Value::Null => {}
                other => string_texts(other, masked),
            }
            Some(p.clone())
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .map(|(x, y)| unmask(x, y, masked))
            .collect::<Option<Vec<_>>>()
            .map(Value::Array),
        (Value::Object(a), Value::Object(b)) => {
            let mut out = serde_json::Map::new();
            for (k, x) in a {
                out.insert(k.clone(), unmask(x, b.get(k)?, masked)?);
            }
            Some(Value::Object(out))
        }
        (other, _) if !holds_mask(other) => Some(other.clone()),
        _ => None,
    }
}

fn string_texts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|x| string_texts(x, out)),
        Value::Object(m) => m.values().for_each(|x| string_texts(x, out)),
        _ => {}
    }
}

/// Whether any string leaf of `value` is the redaction mask.
pub fn holds_mask(value: &Value) -> bool {
    match value {
        Value::String(s) => s == REDACTION_MASK,
        Value::Array(items) => items.iter().any(holds_mask),
        Value::Object(m) => m.values().any(holds_mask),
        _ => false,
    }
}

/// Whether any string leaf of `value` holds a `{{resolve:` opener.
pub fn holds_reference(value: &Value) -> bool {
    match value {
        Value::String(s) => contains_dynamic_reference(s),
        Value::Array(items) => items.iter().any(holds_reference),
        Value::Object(m) => m.values().any(holds_reference),
        _ => false,
    }
}

/// A boxed future, so futures of different bodies can be joined.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs `futures` concurrently on the current task; outputs in input order.
pub(crate) async fn join_all<T>(futures: Vec<BoxFuture<'_, T>>) -> Vec<T> {
    let mut futures = futures;
    let mut out: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, f) in out.iter_mut().zip(futures.iter_mut()) {
            if slot.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *slot = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

impl DynamicLookup for DynamicCache {
    fn fetched(&self, key: &FetchKey) -> Result<Fetched, LookupError> {
        match self.get(key) {
            Some(r) => r,
            None => Err(LookupError::NotAvailable(format!(
                "the value (it was not fetched before resolution; {} in {})",
                fetch::describe(key),
                key.region()
            ))),
        }
    }

    fn withholds_secrets(&self) -> bool {
        self.withholds()
    }
}
