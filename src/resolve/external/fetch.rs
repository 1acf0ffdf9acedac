//! Fetching the values behind dynamic references: SSM GetParameter (with
//! decryption) and Secrets Manager GetSecretValue, each in the region its
//! [`FetchKey`] names, cached per key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use super::{join_all, BoxFuture, ExternalReader};
use crate::aws::{classify, error_code, AwsError, ErrorKind};
use crate::resolve::dynamic::{FetchKey, Fetched};
use crate::resolve::error::LookupError;

type Slot = Arc<OnceCell<Result<Fetched, LookupError>>>;

/// Fetched values by key, each fetched once however many references (or
/// concurrent callers) ask. A failure is kept too, so it is reported where
/// the reference is substituted. Keep one per stack: a value another stack
/// of the same run changes is then read fresh.
#[derive(Default)]
pub struct DynamicCache {
    entries: Mutex<HashMap<FetchKey, Slot>>,
    /// A preview's cache: secrets are never fetched (see
    /// [`DynamicLookup::withholds_secrets`]).
    withhold: bool,
}

impl DynamicCache {
    pub fn new() -> Self {
        DynamicCache::default()
    }

    /// A cache that never fetches a secret: `GetSecretValue` is never called and parameters
    /// are read without decryption (a preview's; see [`ExternalReader::withholding_secrets`]).
    pub fn withholding() -> Self {
        DynamicCache {
            withhold: true,
            ..DynamicCache::default()
        }
    }

    pub fn withholds(&self) -> bool {
        self.withhold
    }

    /// Fetches every key not fetched yet, concurrently.
    pub async fn ensure(&self, reader: &ExternalReader, keys: Vec<FetchKey>) {
        let mut futures: Vec<BoxFuture<'_, ()>> = Vec::new();
        let mut seen = Vec::new();
        for key in keys {
            if seen.contains(&key) || (self.withhold && matches!(key, FetchKey::Secret { .. })) {
                continue;
            }
            let slot = self.slot(&key);
            seen.push(key.clone());
            futures.push(Box::pin(async move {
                slot.get_or_init(|| reader.fetch_dynamic(&key)).await;
            }));
        }
        join_all(futures).await;
    }

    /// The fetched value (or failure) for `key`; `None` when not fetched.
    pub fn get(&self, key: &FetchKey) -> Option<Result<Fetched, LookupError>> {
        self.lock().get(key).and_then(|s| s.get().cloned())
    }

    /// Puts a value in (tests, or an engine that already holds one).
    pub fn insert(&self, key: FetchKey, value: Result<Fetched, LookupError>) {
        self.lock()
            .insert(key, Arc::new(OnceCell::new_with(Some(value))));
    }

    fn slot(&self, key: &FetchKey) -> Slot {
        self.lock().entry(key.clone()).or_default().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<FetchKey, Slot>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `SSM parameter '/x'` / `secret 'db' (stage AWSPREVIOUS)`, for messages.
pub(crate) fn describe(key: &FetchKey) -> String {
    match key {
        FetchKey::Parameter { name, .. } => format!("SSM parameter '{name}'"),
        FetchKey::Secret {
            secret_id,
            version_stage,
            version_id,
            ..
        } => {
            let mut s = format!("secret '{secret_id}'");
            if let Some(stage) = version_stage {
                s.push_str(&format!(" (version stage {stage})"));
            }
            if let Some(id) = version_id {
                s.push_str(&format!(" (version id {id})"));
            }
            s
        }
    }
}

impl ExternalReader {
    /// Fetches one key, uncached. Messages never carry the value.
    pub async fn fetch_dynamic(&self, key: &FetchKey) -> Result<Fetched, LookupError> {
        match key {
            FetchKey::Parameter { region, name } => {
                let out = self
                    .clients
                    .ssm(Some(region))
                    .get_parameter()
                    .name(name)
                    .with_decryption(!self.withholds_secrets())
                    .send()
                    .await;
                match out {
                    Ok(out) => {
                        let Some(p) = out.parameter else {
                            return Err(failed(key, "GetParameter returned no parameter"));
                        };
                        let secure = matches!(
                            p.r#type(),
                            Some(aws_sdk_ssm::types::ParameterType::SecureString)
                        );
                        // Read without decryption, a SecureString's value is ciphertext: dropped.
                        let value = match secure && self.withholds_secrets() {
                            true => String::new(),
                            false => p.value.unwrap_or_default(),
                        };
                        Ok(Fetched::Parameter { value, secure })
                    }
                    Err(e) => Err(call_failed(
                        key,
                        classify(&e),
                        error_code(&e),
                        AwsError::call("ssm", "GetParameter", name.clone(), &e),
                    )),
                }
            }
            FetchKey::Secret { .. } if self.withholds_secrets() => Err(LookupError::NotAvailable(
                format!("{} (a preview never reads a secret)", describe(key)),
            )),
            FetchKey::Secret {
                region,
                secret_id,
                version_stage,
                version_id,
            } => {
                let out = self
                    .clients
                    .secretsmanager(Some(region))
                    .get_secret_value()
                    .secret_id(secret_id)
                    .set_version_stage(version_stage.clone())
                    .set_version_id(version_id.clone())
                    .send()
                    .await;
                match out {
                    Ok(out) => match out.secret_string {
                        Some(value) => Ok(Fetched::Secret { value }),
                        None => Err(failed(
                            key,
                            "it holds a binary secret; only SecretString can be referenced",
                        )),
                    },
                    Err(e) => Err(call_failed(
                        key,
                        classify(&e),
                        error_code(&e),
                        AwsError::call("secretsmanager", "GetSecretValue", secret_id.clone(), &e),
                    )),
                }
            }
        }
    }
}

fn failed(key: &FetchKey, why: &str) -> LookupError {
    LookupError::Failed(format!("{} in {}: {why}", describe(key), key.region()))
}

fn call_failed(key: &FetchKey, kind: ErrorKind, code: Option<&str>, err: AwsError) -> LookupError {
    if kind == ErrorKind::NotFound || code == Some("ParameterVersionNotFound") {
        return failed(key, "not found");
    }
    LookupError::Failed(err.to_string())
}
