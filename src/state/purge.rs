//! Purging a key's noncurrent versions from the (versioned) state bucket.
//!
//! A plain DeleteObject on a versioned bucket only writes a delete marker:
//! every earlier version stays readable through GetObject with a VersionId.
//! Wherever cdkd deletes (or keeps rewriting) an object that is transient by
//! design, it also removes that key's noncurrent versions and noncurrent
//! delete markers. The CURRENT version (a live body or the marker that hides a
//! stale one) is never touched: only entries whose `IsLatest` is false go.
//!
//! The purge runs on cleanup paths and never fails the operation it follows:
//! [`purge_noncurrent_versions`] returns a [`PurgeOutcome`] rather than an
//! error, and [`render_purge_warning`] turns failed outcomes into the one-line
//! warning naming the keys and the two IAM actions the purge needs
//! (`s3:ListBucketVersions`, `s3:DeleteObjectVersion`).
//!
//! After a purge that removed a body (or could not tell whether one was
//! there), [`ReplicationProbe`] asks GetBucketReplication once per bucket per
//! run whether a replication rule covers the purged keys: S3 never replicates
//! a version-id delete, so the replica still holds the versions.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::types::{Delete, ObjectIdentifier, ReplicationRuleStatus};
use aws_sdk_s3::Client;
use aws_smithy_runtime_api::http::Response as HttpResponse;
use tokio::sync::OnceCell;

use crate::aws::{classify, error_code, ErrorKind};

/// The IAM action ListObjectVersions needs.
pub const LIST_VERSIONS_ACTION: &str = "s3:ListBucketVersions";
/// The IAM action a version-id delete needs.
pub const DELETE_VERSION_ACTION: &str = "s3:DeleteObjectVersion";
/// The IAM action the replication probe needs (diagnostic only).
pub const GET_REPLICATION_ACTION: &str = "s3:GetReplicationConfiguration";

/// The warning's per-object parenthetical for the stack lock.
pub const LOCK_OBJECT_DESCRIPTION: &str =
    "the stack lock, which carries only owner, timestamp, expiresAt and operation";

/// How many keys a warning names before it appends `(and N more)`.
const NAMED_KEYS_LIMIT: usize = 5;
/// DeleteObjects takes at most 1000 keys per request.
const DELETE_BATCH: usize = 1000;

/// Why (part of) a purge did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurgeFailure {
    /// The S3 error code (`AccessDenied`, ...), or a short description when
    /// the service sent none.
    pub code: String,
    /// The IAM action the failed request needed.
    pub action: &'static str,
    /// The versions (bodies and markers) left behind by failed deletes.
    pub versions_left: usize,
    /// True when the listing failed or stopped early, so what remains under
    /// the key is not known.
    pub listing_incomplete: bool,
}

/// The result of one key's purge. Never an error: read `failure`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PurgeOutcome {
    pub key: String,
    /// Noncurrent bodies removed (a per-key NoSuchVersion counts as removed).
    pub versions_deleted: usize,
    /// Noncurrent delete markers removed.
    pub markers_deleted: usize,
    pub failure: Option<PurgeFailure>,
}

impl PurgeOutcome {
    fn new(key: &str) -> Self {
        PurgeOutcome {
            key: key.to_owned(),
            ..PurgeOutcome::default()
        }
    }

    /// No failure of any kind.
    pub fn is_clean(&self) -> bool {
        self.failure.is_none()
    }

    /// Whether a replication check is due: a body was removed, or the listing
    /// failed so nobody knows whether there was one. Removing only delete
    /// markers (which carry no body) does not trigger it.
    pub fn needs_replication_check(&self) -> bool {
        self.versions_deleted > 0 || self.failure.as_ref().is_some_and(|f| f.listing_incomplete)
    }

    /// `key (Code: s3:Action)`, the form the warning lists.
    pub fn failure_description(&self) -> Option<String> {
        let failure = self.failure.as_ref()?;
        Some(format!(
            "{} ({}: {})",
            self.key, failure.code, failure.action
        ))
    }

    fn fail(&mut self, code: String, action: &'static str, left: usize, listing: bool) {
        match &mut self.failure {
            Some(f) => {
                f.versions_left += left;
                f.listing_incomplete |= listing;
            }
            None => {
                self.failure = Some(PurgeFailure {
                    code,
                    action,
                    versions_left: left,
                    listing_incomplete: listing,
                })
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    Body,
    Marker,
}

/// Removes every noncurrent version and noncurrent delete marker of exactly
/// `key` (the listing uses the key as a prefix and drops longer keys). The
/// current version is never touched. Never fails: see [`PurgeOutcome`].
pub async fn purge_noncurrent_versions(client: &Client, bucket: &str, key: &str) -> PurgeOutcome {
    let mut outcome = PurgeOutcome::new(key);
    let mut noncurrent: Vec<(String, Entry)> = Vec::new();

    let mut key_marker: Option<String> = None;
    let mut version_marker: Option<String> = None;
    loop {
        let page = client
            .list_object_versions()
            .bucket(bucket)
            .prefix(key)
            .set_key_marker(key_marker.clone())
            .set_version_id_marker(version_marker.clone())
            .send()
            .await;
        let page = match page {
            Ok(page) => page,
            Err(err) => {
                outcome.fail(code_of(&err), LIST_VERSIONS_ACTION, 0, true);
                break;
            }
        };
        for v in page.versions() {
            if v.key() == Some(key) && v.is_latest() == Some(false) {
                if let Some(id) = v.version_id() {
                    noncurrent.push((id.to_owned(), Entry::Body));
                }
            }
        }
        for m in page.delete_markers() {
            if m.key() == Some(key) && m.is_latest() == Some(false) {
                if let Some(id) = m.version_id() {
                    noncurrent.push((id.to_owned(), Entry::Marker));
                }
            }
        }
        if page.is_truncated() != Some(true) {
            break;
        }
        // Keys sort after `key` once the listing has moved past it.
        let next_key = page.next_key_marker().map(str::to_owned);
        let next_version = page.next_version_id_marker().map(str::to_owned);
        if next_key.is_none() && next_version.is_none() {
            outcome.fail(
                "TruncatedWithoutMarker".into(),
                LIST_VERSIONS_ACTION,
                0,
                true,
            );
            break;
        }
        if next_key.as_deref().is_some_and(|k| k != key) {
            break;
        }
        key_marker = next_key;
        version_marker = next_version;
    }

    for batch in noncurrent.chunks(DELETE_BATCH) {
        delete_batch(client, bucket, key, batch, &mut outcome).await;
    }
    outcome
}

async fn delete_batch(
    client: &Client,
    bucket: &str,
    key: &str,
    batch: &[(String, Entry)],
    outcome: &mut PurgeOutcome,
) {
    let objects: Vec<ObjectIdentifier> = batch
        .iter()
        .filter_map(|(id, _)| {
            ObjectIdentifier::builder()
                .key(key)
                .version_id(id)
                .build()
                .ok()
        })
        .collect();
    let delete = match Delete::builder()
        .set_objects(Some(objects))
        .quiet(true)
        .build()
    {
        Ok(delete) => delete,
        Err(err) => {
            outcome.fail(err.to_string(), DELETE_VERSION_ACTION, batch.len(), false);
            return;
        }
    };
    let response = client
        .delete_objects()
        .bucket(bucket)
        .delete(delete)
        .send()
        .await;
    let response = match response {
        Ok(response) => response,
        Err(err) => {
            outcome.fail(code_of(&err), DELETE_VERSION_ACTION, batch.len(), false);
            return;
        }
    };
    // Quiet mode reports only the refusals; everything else was deleted.
    let mut refused: HashMap<&str, String> = HashMap::new();
    for e in response.errors() {
        let code = e.code().unwrap_or("UnknownError");
        if code == "NoSuchVersion" {
            continue; // already gone: the state the purge exists to produce
        }
        if let Some(id) = e.version_id() {
            refused.insert(id, code.to_owned());
        }
    }
    for (id, kind) in batch {
        match refused.get(id.as_str()) {
            Some(code) => outcome.fail(code.clone(), DELETE_VERSION_ACTION, 1, false),
            None if *kind == Entry::Body => outcome.versions_deleted += 1,
            None => outcome.markers_deleted += 1,
        }
    }
}

/// The error code the warning shows for a failed call.
pub(crate) fn code_of<E>(err: &SdkError<E, HttpResponse>) -> String
where
    E: aws_smithy_types::error::metadata::ProvideErrorMetadata,
{
    if let Some(code) = error_code(err) {
        return code.to_owned();
    }
    match classify(err) {
        ErrorKind::AccessDenied => "AccessDenied".into(),
        ErrorKind::NotFound => "NotFound".into(),
        ErrorKind::Throttled => "Throttled".into(),
        ErrorKind::ServiceUnavailable => "ServiceUnavailable".into(),
        ErrorKind::NotImplemented => "NotImplemented".into(),
        _ => match err {
            SdkError::TimeoutError(_) => "Timeout".into(),
            SdkError::DispatchFailure(_) => "NetworkError".into(),
            _ => "Error".into(),
        },
    }
}

/// The warning for the failed outcomes among `outcomes` (None when every one
/// is clean): how many keys, which objects they are (`object_description`,
/// the per-object parenthetical), the two IAM actions, and up to five keys
/// with what failed on each.
pub fn render_purge_warning(
    bucket: &str,
    object_description: &str,
    outcomes: &[PurgeOutcome],
) -> Option<String> {
    let failed: Vec<String> = outcomes
        .iter()
        .filter_map(PurgeOutcome::failure_description)
        .collect();
    if failed.is_empty() {
        return None;
    }
    let mut named = failed
        .iter()
        .take(NAMED_KEYS_LIMIT)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if failed.len() > NAMED_KEYS_LIMIT {
        named.push_str(&format!(" (and {} more)", failed.len() - NAMED_KEYS_LIMIT));
    }
    Some(format!(
        "Could not purge noncurrent versions of {} key(s) in s3://{bucket}. Their previous \
         versions survive and remain readable via GetObject with a VersionId \
         ({object_description}). Grant {LIST_VERSIONS_ACTION} and {DELETE_VERSION_ACTION} on \
         the state bucket, or purge the key(s) by hand. Failures: {named}",
        failed.len()
    ))
}

/// One replication destination covering purged keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReplicationDestination {
    /// The destination bucket's name (taken from its ARN).
    pub bucket: String,
    /// The covering rule is Disabled: it copies nothing new, but what it
    /// already copied is still there.
    pub disabled: bool,
}

/// What GetBucketReplication says about a set of purged keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicationCheck {
    /// No replication configuration, or no rule covers the keys.
    NotCovered,
    /// These destinations may hold copies of the purged versions.
    Covered(Vec<ReplicationDestination>),
    /// The probe was denied or failed (`code`): nothing is known.
    Unknown { code: String },
}

/// A replication rule reduced to what coverage needs.
#[derive(Debug, Clone)]
struct RuleSummary {
    /// None: the rule filters on tags and so is treated as covering every key.
    prefix: Option<String>,
    destination: String,
    disabled: bool,
}

type FetchedRules = Result<Vec<RuleSummary>, String>;

async fn fetch_rules(client: &Client, bucket: &str) -> FetchedRules {
    match client.get_bucket_replication().bucket(bucket).send().await {
        Ok(out) => Ok(out
            .replication_configuration()
            .map(|c| c.rules().iter().map(summarize_rule).collect())
            .unwrap_or_default()),
        Err(err) => {
            if error_code(&err) == Some("ReplicationConfigurationNotFoundError") {
                Ok(Vec::new())
            } else {
                Err(code_of(&err))
            }
        }
    }
}

#[allow(deprecated)] // V1 rules still carry the top-level Prefix
fn summarize_rule(rule: &aws_sdk_s3::types::ReplicationRule) -> RuleSummary {
    let (prefix, tagged) = match rule.filter() {
        Some(filter) => {
            if let Some(and) = filter.and() {
                (
                    and.prefix().unwrap_or("").to_owned(),
                    !and.tags().is_empty(),
                )
            } else {
                (
                    filter.prefix().unwrap_or("").to_owned(),
                    filter.tag().is_some(),
                )
            }
        }
        None => (rule.prefix().unwrap_or("").to_owned(), false),
    };
    let destination = rule
        .destination()
        .map(|d| {
            let arn = d.bucket();
            arn.strip_prefix("arn:aws:s3:::")
                .or_else(|| arn.rsplit(":::").next())
                .unwrap_or(arn)
                .to_owned()
        })
        .unwrap_or_else(|| "(unknown destination)".to_owned());
    RuleSummary {
        prefix: (!tagged).then_some(prefix),
        destination,
        disabled: *rule.status() == ReplicationRuleStatus::Disabled,
    }
}

fn coverage(rules: &[RuleSummary], keys: &[&str]) -> Vec<ReplicationDestination> {
    let mut out: Vec<ReplicationDestination> = Vec::new();
    for rule in rules {
        let covers = match &rule.prefix {
            None => true,
            Some(p) => keys.iter().any(|k| k.starts_with(p.as_str())),
        };
        if !covers {
            continue;
        }
        match out.iter_mut().find(|d| d.bucket == rule.destination) {
            // An enabled rule to the same destination outranks a disabled one.
            Some(existing) => existing.disabled &= rule.disabled,
            None => out.push(ReplicationDestination {
                bucket: rule.destination.clone(),
                disabled: rule.disabled,
            }),
        }
    }
    out.sort();
    out
}

/// One GetBucketReplication on `bucket` (uncached) and whether a rule covers
/// any of `keys`. A rule filtering on tags counts as covering everything; a
/// Disabled rule is reported, flagged.
pub async fn check_replication(client: &Client, bucket: &str, keys: &[&str]) -> ReplicationCheck {
    match fetch_rules(client, bucket).await {
        Ok(rules) => check_from(&rules, keys),
        Err(code) => ReplicationCheck::Unknown { code },
    }
}

fn check_from(rules: &[RuleSummary], keys: &[&str]) -> ReplicationCheck {
    let covered = coverage(rules, keys);
    if covered.is_empty() {
        ReplicationCheck::NotCovered
    } else {
        ReplicationCheck::Covered(covered)
    }
}

/// The replication warning for `destinations`.
pub fn render_replication_warning(
    bucket: &str,
    object_description: &str,
    destinations: &[ReplicationDestination],
) -> String {
    let names = destinations
        .iter()
        .map(|d| {
            if d.disabled {
                format!("{} (rule disabled; earlier copies remain)", d.bucket)
            } else {
                d.bucket.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "S3 replication is enabled on s3://{bucket} and covers the key(s) cdkd just purged. S3 \
         NEVER replicates a version-id delete, so the purge removed those versions from THIS \
         bucket only — the copies in the destination bucket survive and remain readable there \
         via GetObject with a VersionId ({object_description}). cdkd cannot delete them. Remove \
         them in the destination bucket yourself (aws s3api list-object-versions, then \
         delete-object --version-id), or narrow the replication rule so it excludes the \
         prefixes cdkd purges under. Destination(s): {names}"
    )
}

/// The run-wide replication check: one GetBucketReplication per bucket per
/// run, and one warning per (object kind, destination set); repeats, a denied
/// probe and uncovered keys go to debug.
#[derive(Default)]
pub struct ReplicationProbe {
    rules: Mutex<HashMap<String, Arc<OnceCell<FetchedRules>>>>,
    reported: Mutex<HashSet<(String, Vec<ReplicationDestination>)>>,
}

impl ReplicationProbe {
    pub fn new() -> Self {
        ReplicationProbe::default()
    }

    /// The process-wide probe ("cached for the rest of the run").
    pub fn shared() -> Arc<ReplicationProbe> {
        static SHARED: OnceLock<Arc<ReplicationProbe>> = OnceLock::new();
        SHARED
            .get_or_init(|| Arc::new(ReplicationProbe::new()))
            .clone()
    }

    /// Checks whether replication covers `keys`, asking S3 at most once per
    /// bucket over this probe's life.
    pub async fn check(&self, client: &Client, bucket: &str, keys: &[&str]) -> ReplicationCheck {
        let cell = {
            let mut map = self.rules.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(bucket.to_owned()).or_default().clone()
        };
        let fetched = cell.get_or_init(|| fetch_rules(client, bucket)).await;
        match fetched {
            Ok(rules) => check_from(rules, keys),
            Err(code) => ReplicationCheck::Unknown { code: code.clone() },
        }
    }

    /// Starts reading `bucket`'s replication rules in the background (once per bucket, as
    /// [`Self::check`] does), so the check after a later purge finds them read.
    pub fn prefetch(self: &Arc<Self>, client: Client, bucket: &str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (probe, bucket) = (self.clone(), bucket.to_owned());
        runtime.spawn(async move {
            probe.check(&client, &bucket, &[]).await;
        });
    }

    /// Runs the check after `outcomes` when one of them calls for it, and
    /// returns the warning to show, once per (`object_kind`, destinations).
    /// Everything it does not return it logs at debug.
    pub async fn after_purge(
        &self,
        client: &Client,
        bucket: &str,
        object_kind: &str,
        object_description: &str,
        outcomes: &[PurgeOutcome],
    ) -> Option<String> {
        let keys: Vec<&str> = outcomes
            .iter()
            .filter(|o| o.needs_replication_check())
            .map(|o| o.key.as_str())
            .collect();
        if keys.is_empty() {
            return None;
        }
        match self.check(client, bucket, &keys).await {
            ReplicationCheck::NotCovered => None,
            ReplicationCheck::Unknown { code } => {
                tracing::debug!(
                    "could not read the replication configuration of s3://{bucket} ({code}: \
                     {GET_REPLICATION_ACTION}); skipping the replica check after the purge"
                );
                None
            }
            ReplicationCheck::Covered(destinations) => {
                let text = render_replication_warning(bucket, object_description, &destinations);
                let first = self
                    .reported
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert((object_kind.to_owned(), destinations));
                if first {
                    Some(text)
                } else {
                    tracing::debug!("{text}");
                    None
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(key: &str, code: &str, action: &'static str) -> PurgeOutcome {
        let mut o = PurgeOutcome::new(key);
        o.fail(code.into(), action, 1, action == LIST_VERSIONS_ACTION);
        o
    }

    #[test]
    fn the_warning_names_keys_and_actions() {
        assert_eq!(
            render_purge_warning("b", "x", &[PurgeOutcome::new("k")]),
            None
        );
        let text = render_purge_warning(
            "cdkd-state-bucket",
            LOCK_OBJECT_DESCRIPTION,
            &[failed(
                "cdkd/MyStack/us-east-1/lock.json",
                "AccessDenied",
                LIST_VERSIONS_ACTION,
            )],
        )
        .unwrap();
        assert!(text.starts_with(
            "Could not purge noncurrent versions of 1 key(s) in s3://cdkd-state-bucket."
        ));
        assert!(text.contains("Grant s3:ListBucketVersions and s3:DeleteObjectVersion"));
        assert!(text.ends_with(
            "Failures: cdkd/MyStack/us-east-1/lock.json (AccessDenied: s3:ListBucketVersions)"
        ));
        assert!(!text.contains('\n'));
    }

    #[test]
    fn the_warning_names_five_keys_then_counts() {
        let five: Vec<_> = (0..5)
            .map(|i| failed(&format!("k{i}"), "AccessDenied", DELETE_VERSION_ACTION))
            .collect();
        assert!(!render_purge_warning("b", "x", &five)
            .unwrap()
            .contains("more)"));
        let mut six = five.clone();
        six.push(failed("k5", "AccessDenied", DELETE_VERSION_ACTION));
        let text = render_purge_warning("b", "x", &six).unwrap();
        assert!(text.contains("of 6 key(s)"));
        assert!(text.ends_with("k4 (AccessDenied: s3:DeleteObjectVersion) (and 1 more)"));
        assert!(!text.contains("k5"));
    }

    #[test]
    fn replication_is_checked_after_bodies_or_unknown_listings_only() {
        let mut o = PurgeOutcome::new("k");
        assert!(!o.needs_replication_check());
        o.markers_deleted = 3;
        assert!(!o.needs_replication_check());
        o.versions_deleted = 1;
        assert!(o.needs_replication_check());
        assert!(failed("k", "AccessDenied", LIST_VERSIONS_ACTION).needs_replication_check());
        assert!(!failed("k", "AccessDenied", DELETE_VERSION_ACTION).needs_replication_check());
    }

    #[test]
    fn coverage_errs_toward_warning() {
        let rules = vec![
            RuleSummary {
                prefix: Some("other/".into()),
                destination: "a".into(),
                disabled: false,
            },
            RuleSummary {
                prefix: Some("cdkd/".into()),
                destination: "b".into(),
                disabled: true,
            },
            RuleSummary {
                prefix: None,
                destination: "c".into(),
                disabled: false,
            },
        ];
        assert_eq!(
            check_from(&rules, &["cdkd/S/r/lock.json"]),
            ReplicationCheck::Covered(vec![
                ReplicationDestination {
                    bucket: "b".into(),
                    disabled: true
                },
                ReplicationDestination {
                    bucket: "c".into(),
                    disabled: false
                },
            ])
        );
        assert_eq!(
            check_from(&rules[..2], &["x/lock.json"]),
            ReplicationCheck::NotCovered
        );
        let text = render_replication_warning(
            "cdkd-state-bucket",
            "d",
            &[ReplicationDestination {
                bucket: "cdkd-state-replica".into(),
                disabled: false,
            }],
        );
        assert!(text.ends_with("Destination(s): cdkd-state-replica"));
    }
}
