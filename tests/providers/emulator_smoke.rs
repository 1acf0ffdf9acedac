//! The test harness itself: the local emulator answers the real AWS SDK clients the way
//! cdkd needs (identity, S3 versioning, S3 conditional writes).

use crate::support;

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};

#[tokio::test]
async fn sts_reports_the_emulator_account() {
    let identity = support::sts_client()
        .await
        .get_caller_identity()
        .send()
        .await
        .expect("GetCallerIdentity");
    assert_eq!(identity.account(), Some("123456789012"));
}

/// (HTTP status, error code) of a failed S3 call.
fn status_and_code<E: ProvideErrorMetadata>(
    err: &aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> (Option<u16>, Option<String>) {
    (
        err.raw_response().map(|r| r.status().as_u16()),
        err.code().map(str::to_owned),
    )
}

#[tokio::test]
async fn s3_versioning_and_conditional_writes() {
    let s3 = support::s3_client().await;
    let bucket = support::unique_name("cdkd-smoke");

    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("CreateBucket");
    s3.get_bucket_location()
        .bucket(&bucket)
        .send()
        .await
        .expect("GetBucketLocation");

    s3.put_bucket_versioning()
        .bucket(&bucket)
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .expect("PutBucketVersioning");
    // No GetBucketVersioning here: moto 5.2.5 answers it with the XML root
    // <GetBucketVersioningResponse> instead of <VersioningConfiguration>, which the Rust SDK
    // refuses to decode. The version ids below and ListObjectVersions prove versioning instead.

    // Create-only write: the first one wins, a second one is refused.
    let key = "state/stack.json";
    let created = s3
        .put_object()
        .bucket(&bucket)
        .key(key)
        .if_none_match("*")
        .body(ByteStream::from_static(b"{\"v\":1}"))
        .send()
        .await
        .expect("first PutObject with If-None-Match: *");
    assert!(
        created.version_id().is_some(),
        "versioned bucket returns a version id"
    );
    let etag = created
        .e_tag()
        .expect("PutObject returns an ETag")
        .to_owned();

    let err = s3
        .put_object()
        .bucket(&bucket)
        .key(key)
        .if_none_match("*")
        .body(ByteStream::from_static(b"{\"v\":2}"))
        .send()
        .await
        .expect_err("second PutObject with If-None-Match: * must fail");
    assert_eq!(
        status_and_code(&err),
        (Some(412), Some("PreconditionFailed".to_owned())),
        "{err:?}"
    );

    // Compare-and-swap: a stale ETag is refused, the current one is accepted.
    let err = s3
        .put_object()
        .bucket(&bucket)
        .key(key)
        .if_match("\"00000000000000000000000000000000\"")
        .body(ByteStream::from_static(b"{\"v\":2}"))
        .send()
        .await
        .expect_err("PutObject with a wrong If-Match must fail");
    assert_eq!(
        status_and_code(&err),
        (Some(412), Some("PreconditionFailed".to_owned())),
        "{err:?}"
    );

    let updated = s3
        .put_object()
        .bucket(&bucket)
        .key(key)
        .if_match(&etag)
        .body(ByteStream::from_static(b"{\"v\":2}"))
        .send()
        .await
        .expect("PutObject with the current If-Match");
    assert_ne!(updated.version_id(), created.version_id());

    let versions = s3
        .list_object_versions()
        .bucket(&bucket)
        .prefix(key)
        .send()
        .await
        .expect("ListObjectVersions");
    assert_eq!(versions.versions().len(), 2, "{versions:?}");

    let body = s3
        .get_object()
        .bucket(&bucket)
        .key(key)
        .send()
        .await
        .expect("GetObject")
        .body
        .collect()
        .await
        .expect("read body")
        .into_bytes();
    assert_eq!(&body[..], b"{\"v\":2}");
}

#[test]
fn unique_names_are_bucket_safe_and_distinct() {
    let a = support::unique_name("Some_Prefix.That-is-rather-LONG-for-a-bucket-name-really");
    let b = support::unique_name("Some_Prefix.That-is-rather-LONG-for-a-bucket-name-really");
    assert_ne!(a, b);
    for name in [&a, &b] {
        assert!((3..=63).contains(&name.len()), "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{name}"
        );
        assert!(!name.starts_with('-') && !name.ends_with('-'), "{name}");
    }
}
