//! One file asset to one S3 destination: skipped when the object is already there (asset keys
//! are content hashes, so an existing object is the same bytes), otherwise packaged (the file
//! as it is, or a directory zipped deterministically) and uploaded.

use std::path::PathBuf;

use aws_sdk_s3::primitives::ByteStream;

use super::zip::zip_directory;
use super::AssetError;
use crate::aws::{classify, AwsError, ErrorKind};

/// A file asset bound to one resolved destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileJob {
    pub asset_id: String,
    /// What the user recognizes (`displayName`, else the asset id).
    pub display: String,
    pub source_path: PathBuf,
    /// `file` or `zip`.
    pub packaging: String,
    pub bucket: String,
    pub key: String,
    pub region: String,
    /// The stacks that need it.
    pub stacks: Vec<String>,
}

/// What publishing one file asset did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOutcome {
    Uploaded,
    AlreadyPresent,
}

pub async fn publish_file(
    s3: &aws_sdk_s3::Client,
    job: &FileJob,
) -> Result<FileOutcome, AssetError> {
    let target = format!("s3://{}/{}", job.bucket, job.key);
    match s3
        .head_object()
        .bucket(&job.bucket)
        .key(&job.key)
        .send()
        .await
    {
        Ok(_) => return Ok(FileOutcome::AlreadyPresent),
        // 404 also when the bucket is missing: the upload below says which.
        Err(e) if classify(&e) == ErrorKind::NotFound => {}
        Err(e) => return Err(AwsError::call("s3", "HeadObject", target, &e).into()),
    }
    let bytes = package(job).await?;
    let content_type = if job.packaging == "zip" {
        "application/zip"
    } else {
        "application/octet-stream"
    };
    match s3
        .put_object()
        .bucket(&job.bucket)
        .key(&job.key)
        .content_type(content_type)
        .body(ByteStream::from(bytes))
        .send()
        .await
    {
        Ok(_) => Ok(FileOutcome::Uploaded),
        Err(e) if crate::aws::error_code(&e) == Some("NoSuchBucket") => {
            Err(AssetError::MissingBucket {
                bucket: job.bucket.clone(),
                region: job.region.clone(),
                asset: job.display.clone(),
            })
        }
        Err(e) => Err(AwsError::call("s3", "PutObject", target, &e).into()),
    }
}

/// The bytes to upload: the file itself, or the directory as a deterministic zip.
async fn package(job: &FileJob) -> Result<Vec<u8>, AssetError> {
    let path = job.source_path.clone();
    let packaging = job.packaging.clone();
    let display = job.display.clone();
    tokio::task::spawn_blocking(move || {
        let meta = std::fs::metadata(&path).map_err(|source| AssetError::Read {
            path: path.clone(),
            source,
        })?;
        match (packaging.as_str(), meta.is_dir()) {
            ("zip", true) => zip_directory(&path),
            // A file asset, or an archive already built (a .zip / .jar) published as it is.
            ("zip", false) | ("file", false) => {
                std::fs::read(&path).map_err(|source| AssetError::Read { path, source })
            }
            ("file", true) => Err(AssetError::Packaging {
                asset: display,
                message: format!(
                    "{} is a directory but the asset's packaging is `file`",
                    path.display()
                ),
            }),
            (other, _) => Err(AssetError::Packaging {
                asset: display,
                message: format!("unknown packaging `{other}` (expected `file` or `zip`)"),
            }),
        }
    })
    .await
    .map_err(|e| AssetError::Packaging {
        asset: job.display.clone(),
        message: format!("packaging stopped: {e}"),
    })?
}
