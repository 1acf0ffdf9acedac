//! A function's `Code`: an S3 object, a container image, or inline source (`ZipFile`) that
//! CloudFormation packages into a zip holding one file, `index.js` for Node.js runtimes and
//! `index.py` for Python ones. The archive is built in memory, deterministically (fixed
//! timestamps), so the same source always yields the same `CodeSha256`.

use std::io::{Cursor, Write};

use aws_sdk_lambda::operation::update_function_code::builders::UpdateFunctionCodeFluentBuilder;
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::{FunctionCode, S3ObjectStorageMode};

use super::Obj;
use crate::provider::ProviderError;

/// The deployment package a template's `Code` describes.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct CodeSpec {
    pub zip: Option<Vec<u8>>,
    pub s3_bucket: Option<String>,
    pub s3_key: Option<String>,
    pub s3_object_version: Option<String>,
    pub s3_object_storage_mode: Option<String>,
    pub image_uri: Option<String>,
    pub source_kms_key_arn: Option<String>,
}

impl CodeSpec {
    /// Reads `Code`; `runtime` decides the file name of inline source.
    pub fn from_props(root: &Obj<'_>, runtime: Option<&str>) -> Result<Self, ProviderError> {
        let Some(code) = root.object("Code")? else {
            return Err(ProviderError::missing(root.req, "Code"));
        };
        let mut spec = CodeSpec {
            s3_bucket: code.str("S3Bucket")?,
            s3_key: code.str("S3Key")?,
            s3_object_version: code.str("S3ObjectVersion")?,
            s3_object_storage_mode: code.str("S3ObjectStorageMode")?,
            image_uri: code.str("ImageUri")?,
            source_kms_key_arn: code.str("SourceKMSKeyArn")?,
            zip: None,
        };
        if let Some(source) = code.str("ZipFile")? {
            let file = inline_file_name(runtime).ok_or_else(|| {
                ProviderError::failed(
                    root.req,
                    format!(
                        "Code.ZipFile needs a Node.js or Python runtime, not {}",
                        runtime.unwrap_or("none")
                    ),
                )
            })?;
            let bytes = inline_zip(&source, file).map_err(|e| {
                ProviderError::failed(root.req, format!("packaging Code.ZipFile failed: {e}"))
            })?;
            spec.zip = Some(bytes);
        }
        let sources = [
            spec.zip.is_some(),
            spec.s3_bucket.is_some() || spec.s3_key.is_some(),
            spec.image_uri.is_some(),
        ];
        match sources.iter().filter(|s| **s).count() {
            1 => {}
            0 => {
                return Err(ProviderError::failed(
                    root.req,
                    "Code needs one of ZipFile, S3Bucket with S3Key, or ImageUri",
                ))
            }
            _ => {
                return Err(ProviderError::failed(
                    root.req,
                    "Code takes only one of ZipFile, S3Bucket/S3Key and ImageUri",
                ))
            }
        }
        if spec.s3_bucket.is_some() != spec.s3_key.is_some() {
            return Err(ProviderError::failed(
                root.req,
                "Code.S3Bucket and Code.S3Key go together",
            ));
        }
        Ok(spec)
    }

    /// The `Code` of CreateFunction.
    pub fn function_code(&self) -> FunctionCode {
        FunctionCode::builder()
            .set_zip_file(self.zip.clone().map(Blob::new))
            .set_s3_bucket(self.s3_bucket.clone())
            .set_s3_key(self.s3_key.clone())
            .set_s3_object_version(self.s3_object_version.clone())
            .set_s3_object_storage_mode(
                self.s3_object_storage_mode
                    .as_deref()
                    .map(S3ObjectStorageMode::from),
            )
            .set_image_uri(self.image_uri.clone())
            .set_source_kms_key_arn(self.source_kms_key_arn.clone())
            .build()
    }

    /// The same package on an UpdateFunctionCode request.
    pub fn apply(&self, b: UpdateFunctionCodeFluentBuilder) -> UpdateFunctionCodeFluentBuilder {
        b.set_zip_file(self.zip.clone().map(Blob::new))
            .set_s3_bucket(self.s3_bucket.clone())
            .set_s3_key(self.s3_key.clone())
            .set_s3_object_version(self.s3_object_version.clone())
            .set_s3_object_storage_mode(
                self.s3_object_storage_mode
                    .as_deref()
                    .map(S3ObjectStorageMode::from),
            )
            .set_image_uri(self.image_uri.clone())
            .set_source_kms_key_arn(self.source_kms_key_arn.clone())
    }
}

/// The file CloudFormation writes inline source to, by runtime family.
pub(super) fn inline_file_name(runtime: Option<&str>) -> Option<&'static str> {
    let runtime = runtime?;
    if runtime.starts_with("nodejs") {
        Some("index.js")
    } else if runtime.starts_with("python") {
        Some("index.py")
    } else {
        None
    }
}

/// A zip archive holding `source` as `file_name` (deflated, mode 0644, 1980-01-01 timestamp).
pub(super) fn inline_zip(source: &str, file_name: &str) -> Result<Vec<u8>, zip::result::ZipError> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::default())
        .unix_permissions(0o644);
    writer.start_file(file_name, options)?;
    writer.write_all(source.as_bytes())?;
    Ok(writer.finish()?.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn inline_source_is_zipped_under_the_runtime_file_name() {
        assert_eq!(inline_file_name(Some("nodejs20.x")), Some("index.js"));
        assert_eq!(inline_file_name(Some("python3.12")), Some("index.py"));
        assert_eq!(inline_file_name(Some("java21")), None);
        assert_eq!(inline_file_name(None), None);

        let source = "exports.handler = async () => 'hi';\n";
        let bytes = inline_zip(source, "index.js").expect("zip");
        assert_eq!(
            bytes,
            inline_zip(source, "index.js").expect("zip"),
            "deterministic"
        );
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).expect("readable");
        assert_eq!(archive.len(), 1);
        let mut file = archive.by_name("index.js").expect("index.js");
        assert_eq!(file.compression(), zip::CompressionMethod::Deflated);
        assert_eq!(file.unix_mode().map(|m| m & 0o777), Some(0o644));
        let mut text = String::new();
        file.read_to_string(&mut text).expect("utf-8");
        assert_eq!(text, source);
    }
}
