//! Asset manifests (`*.assets.json`): the file and container assets a stack needs published
//! before it deploys. Read here; published by the assets layer.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::AssemblyError;

#[derive(Debug, Clone, Deserialize)]
pub struct AssetManifest {
    pub version: String,
    #[serde(default)]
    pub files: Map<String, Value>,
    #[serde(default, rename = "dockerImages")]
    pub docker_images: Map<String, Value>,
}

/// A file asset: a file or directory (zipped) uploaded to each destination.
#[derive(Debug, Clone, PartialEq)]
pub struct FileAsset {
    pub id: String,
    /// Absolute path of the source, inside the assembly directory.
    pub source_path: PathBuf,
    /// `file` or `zip` (a directory published as a zip archive).
    pub packaging: String,
    pub destinations: Vec<FileDestination>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FileDestination {
    pub name: String,
    pub bucket_name: String,
    pub object_key: String,
    pub region: Option<String>,
    pub assume_role_arn: Option<String>,
}

impl AssetManifest {
    pub fn load(file: &Path) -> Result<Self, AssemblyError> {
        let text = std::fs::read_to_string(file).map_err(|source| AssemblyError::ReadManifest {
            file: file.to_owned(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|e| AssemblyError::InvalidJson {
            file: file.to_owned(),
            line: e.line(),
            column: e.column(),
            message: e.to_string().lines().next().unwrap_or_default().to_owned(),
        })
    }

    /// The file assets, with source paths resolved against the manifest's directory.
    pub fn file_assets(&self, manifest_file: &Path) -> Result<Vec<FileAsset>, AssemblyError> {
        let dir = manifest_file.parent().unwrap_or(Path::new("."));
        let mut out = Vec::new();
        for (id, entry) in &self.files {
            let at = |field: &str| format!("files.{id}.{field}");
            let source = entry
                .get("source")
                .ok_or_else(|| AssemblyError::manifest(manifest_file, &at("source"), "missing"))?;
            let path = source.get("path").and_then(Value::as_str).ok_or_else(|| {
                AssemblyError::manifest(manifest_file, &at("source.path"), "expected a string")
            })?;
            let packaging = source
                .get("packaging")
                .and_then(Value::as_str)
                .unwrap_or("file")
                .to_owned();
            let mut destinations = Vec::new();
            if let Some(dests) = entry.get("destinations").and_then(Value::as_object) {
                for (name, d) in dests {
                    let field = |f: &str| d.get(f).and_then(Value::as_str).map(str::to_owned);
                    destinations.push(FileDestination {
                        name: name.clone(),
                        bucket_name: field("bucketName").ok_or_else(|| {
                            AssemblyError::manifest(
                                manifest_file,
                                &at(&format!("destinations.{name}.bucketName")),
                                "expected a string",
                            )
                        })?,
                        object_key: field("objectKey").ok_or_else(|| {
                            AssemblyError::manifest(
                                manifest_file,
                                &at(&format!("destinations.{name}.objectKey")),
                                "expected a string",
                            )
                        })?,
                        region: field("region"),
                        assume_role_arn: field("assumeRoleArn"),
                    });
                }
            }
            out.push(FileAsset {
                id: id.clone(),
                source_path: dir.join(path),
                packaging,
                destinations,
            });
        }
        Ok(out)
    }
}
