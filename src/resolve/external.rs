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
//!   in the producer's region (same account) or refused (cross account); the
//!   NoEcho mask `***` is refused.

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
        }
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

    /// Resolves the dynamic references in a value another stack published,
    /// in the producer's region, fetching through `cache`. `what` names the
    /// read in errors (`export 'X' of stack 'P'`).
    pub(crate) async fn reresolve(
        &self,
        cache: &DynamicCache,
        value: &Value,
        producer_stack: &str,
        producer_region: &str,
        what: &str,
    ) -> Result<(Value, SecretsMap), LookupError> {
        if holds_mask(value) {
            return Err(LookupError::Failed(format!(
                "{what} is stored as the redaction mask '{REDACTION_MASK}' (a NoEcho value): \
                 its plaintext exists only during the run that deployed the producer. Deploy the \
                 producer and this stack in one run, or publish a value that is not NoEcho"
            )));
        }
        let mut refs = Vec::new();
        collect_references(value, &mut refs);
        if refs.is_empty() && !holds_reference(value) {
            return Ok((value.clone(), SecretsMap::default()));
        }
        let keys = refs.iter().map(|r| r.fetch_key(producer_region)).collect();
        cache.ensure(self, keys).await;
        substitute_in_region(value, "", producer_stack, producer_region, cache)
            .map_err(|e| LookupError::Failed(format!("{what}: {}", e.kind)))
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
}
