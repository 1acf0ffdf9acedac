//! A non-empty bucket at delete time, as CloudFormation treats one: the delete fails with an
//! actionable "bucket is not empty" error and the bucket and its data survive, unless the
//! template opted in to emptying it. The CDK's `autoDeleteObjects: true` opts in by tagging the
//! bucket `aws-cdk:auto-delete-objects: true`; cdkd then removes every object version and
//! delete marker itself (so a versioned bucket goes too) and deletes the bucket. The CDK's
//! `Custom::S3AutoDeleteObjects` resource is sent its Delete like any custom resource (it is
//! deleted before the bucket it names), so its handler empties the bucket first, as under
//! CloudFormation; emptying here covers a handler that is gone (a Delete whose function no
//! longer exists is done, with a warning) or left objects behind.

use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use serde_json::{Map, Value};

use super::super::iam::aws_error;
use crate::provider::{ProviderError, ResourceRequest};

/// The tag the CDK puts on a bucket declared with `autoDeleteObjects: true`.
pub const AUTO_DELETE_TAG: &str = "aws-cdk:auto-delete-objects";

/// S3 deletes at most this many keys per DeleteObjects call.
const BATCH: usize = 1000;

/// Listing rounds before giving up (each round removes up to a full listing page).
const MAX_ROUNDS: usize = 10_000;

/// Whether the bucket's properties carry the auto-delete tag with the value `true`.
pub fn opted_in(properties: &Map<String, Value>) -> bool {
    properties
        .get("Tags")
        .and_then(Value::as_array)
        .is_some_and(|tags| {
            tags.iter().any(|t| {
                t.get("Key").and_then(Value::as_str) == Some(AUTO_DELETE_TAG)
                    && t.get("Value")
                        .and_then(Value::as_str)
                        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
            })
        })
}

/// The error of a delete refused because the bucket still holds objects.
pub fn not_empty_error(req: &ResourceRequest<'_>, bucket: &str) -> ProviderError {
    ProviderError::failed(
        req,
        format!(
            "bucket {bucket} is not empty (S3 BucketNotEmpty), so it was not deleted and its \
             objects are kept; empty it (every object version and delete marker) and re-run, \
             or opt in with the CDK's autoDeleteObjects: true (the {AUTO_DELETE_TAG} tag) so \
             cdkd empties it, or keep it with RemovalPolicy.RETAIN"
        ),
    )
}

/// Removes every object version and delete marker of `bucket`; returns how many it removed.
pub async fn empty_bucket(
    s3: &aws_sdk_s3::Client,
    req: &ResourceRequest<'_>,
    bucket: &str,
) -> Result<usize, ProviderError> {
    let mut removed = 0;
    for _ in 0..MAX_ROUNDS {
        let page = s3
            .list_object_versions()
            .bucket(bucket)
            .max_keys(BATCH as i32)
            .send()
            .await
            .map_err(|e| aws_error(req, "s3", "ListObjectVersions", bucket, &e))?;
        let mut ids: Vec<ObjectIdentifier> = Vec::new();
        let versions = page.versions().iter().map(|v| (v.key(), v.version_id()));
        let markers = page
            .delete_markers()
            .iter()
            .map(|m| (m.key(), m.version_id()));
        for (key, version) in versions.chain(markers) {
            let Some(key) = key else { continue };
            let mut id = ObjectIdentifier::builder().key(key);
            if let Some(v) = version {
                id = id.version_id(v);
            }
            match id.build() {
                Ok(id) => ids.push(id),
                Err(e) => return Err(ProviderError::failed(req, e.to_string())),
            }
        }
        if ids.is_empty() {
            return Ok(removed);
        }
        for chunk in ids.chunks(BATCH) {
            let delete = Delete::builder()
                .set_objects(Some(chunk.to_vec()))
                .quiet(true)
                .build()
                .map_err(|e| ProviderError::failed(req, e.to_string()))?;
            let out = s3
                .delete_objects()
                .bucket(bucket)
                .delete(delete)
                .send()
                .await
                .map_err(|e| aws_error(req, "s3", "DeleteObjects", bucket, &e))?;
            if let Some(err) = out.errors().first() {
                return Err(ProviderError::failed(
                    req,
                    format!(
                        "emptying bucket {bucket} failed: {} of its objects could not be \
                         deleted (first: {}: {}); the bucket was kept",
                        out.errors().len(),
                        err.key().unwrap_or("?"),
                        err.message().or(err.code()).unwrap_or("no message")
                    ),
                ));
            }
            removed += chunk.len();
        }
    }
    Err(ProviderError::failed(
        req,
        format!("emptying bucket {bucket} did not finish; the bucket was kept: re-run"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn opt_in_is_the_cdk_tag_set_to_true() {
        let with = |tags: Value| {
            let mut m = Map::new();
            m.insert("Tags".into(), tags);
            opted_in(&m)
        };
        assert!(with(json!([{"Key": AUTO_DELETE_TAG, "Value": "true"}])));
        assert!(with(
            json!([{"Key": "a", "Value": "b"}, {"Key": AUTO_DELETE_TAG, "Value": "TRUE"}])
        ));
        assert!(!with(json!([{"Key": AUTO_DELETE_TAG, "Value": "false"}])));
        assert!(!with(json!([{"Key": "other", "Value": "true"}])));
        assert!(!with(json!("aws-cdk:auto-delete-objects")));
        assert!(!opted_in(&Map::new()));
    }
}
