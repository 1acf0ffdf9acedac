//! Reading a cloud assembly: manifest.json, its stack artifacts, asset manifests, nested
//! assemblies (Stages) and the context the app said it was missing.
//!
//! The manifest is walked by hand rather than deserialized into rigid types so that every error
//! names the exact place (`artifacts.MyStack.properties.templateFile`) and so fields the CDK adds
//! in later schema versions never break a read.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::environment::Environment;
use super::AssemblyError;

pub const STACK_TYPE: &str = "aws:cloudformation:stack";
pub const ASSET_MANIFEST_TYPE: &str = "cdk:asset-manifest";
pub const NESTED_ASSEMBLY_TYPE: &str = "cdk:cloud-assembly";

/// Severity of a construct annotation the app attached to a stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    Info,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Annotation {
    pub severity: Severity,
    /// The construct path the annotation is attached to (`/MyStack/Bucket`).
    pub path: String,
    pub message: String,
}

/// A context value the app needed and did not have (a lookup the CLI must perform).
#[derive(Debug, Clone, PartialEq)]
pub struct MissingContext {
    pub key: String,
    pub provider: String,
    /// The provider's query (account, region, lookupRoleArn and the provider's own fields),
    /// exactly as the app wrote it; an empty object when the manifest gave none.
    pub props: Map<String, Value>,
}

/// One CloudFormation stack of the app.
#[derive(Debug, Clone)]
pub struct StackArtifact {
    /// The artifact id in its manifest (unique within that assembly).
    pub artifact_id: String,
    /// The deployed stack name (`properties.stackName`, else the artifact id).
    pub stack_name: String,
    /// The path users select by, e.g. `MyStage/Api` (the CDK's hierarchical id).
    pub display_name: String,
    pub environment: Environment,
    pub template_file: PathBuf,
    /// Artifact ids of the stacks this one depends on (resolved through non-stack artifacts).
    pub dependencies: Vec<String>,
    /// Construct path -> logical id, from `aws:cdk:logicalId` metadata.
    pub logical_ids: Vec<(String, String)>,
    pub annotations: Vec<Annotation>,
    /// Asset manifests this stack's deployment needs.
    pub asset_manifests: Vec<PathBuf>,
    pub termination_protection: bool,
    pub tags: Map<String, Value>,
    /// The stack's raw `properties` object, for fields read by later layers.
    pub properties: Map<String, Value>,
    /// The directory of the (possibly nested) assembly holding the stack.
    pub assembly_dir: PathBuf,
}

/// A loaded cloud assembly, nested assemblies flattened into one list of stacks.
#[derive(Debug, Clone)]
pub struct CloudAssembly {
    pub dir: PathBuf,
    pub version: String,
    /// Stacks in manifest order (outer assembly first, nested assemblies where they appear).
    pub stacks: Vec<StackArtifact>,
    pub missing: Vec<MissingContext>,
}

impl CloudAssembly {
    /// Reads `dir/manifest.json` and every nested assembly below it.
    pub fn load(dir: &Path) -> Result<Self, AssemblyError> {
        let mut stacks = Vec::new();
        let mut missing = Vec::new();
        let version = load_into(dir, 0, &mut stacks, &mut missing)?;
        Ok(CloudAssembly {
            dir: dir.to_owned(),
            version,
            stacks,
            missing,
        })
    }

    pub fn stack_by_artifact_id(&self, id: &str) -> Option<&StackArtifact> {
        self.stacks.iter().find(|s| s.artifact_id == id)
    }
}

const MAX_NESTING: usize = 16;

fn load_into(
    dir: &Path,
    depth: usize,
    stacks: &mut Vec<StackArtifact>,
    missing: &mut Vec<MissingContext>,
) -> Result<String, AssemblyError> {
    let file = dir.join("manifest.json");
    if depth > MAX_NESTING {
        return Err(AssemblyError::manifest(
            &file,
            "artifacts",
            "nested assemblies deeper than 16 levels",
        ));
    }
    let root = read_json(&file)?;
    let root = root
        .as_object()
        .ok_or_else(|| AssemblyError::manifest(&file, "(top level)", "expected a JSON object"))?;
    let version = match root.get("version") {
        Some(Value::String(v)) => v.clone(),
        Some(_) => {
            return Err(AssemblyError::manifest(
                &file,
                "version",
                "expected a string",
            ))
        }
        None => {
            return Err(AssemblyError::manifest(
                &file,
                "version",
                "missing; this is not a cloud assembly manifest",
            ))
        }
    };

    if let Some(m) = root.get("missing") {
        let list = m
            .as_array()
            .ok_or_else(|| AssemblyError::manifest(&file, "missing", "expected a list"))?;
        for (i, entry) in list.iter().enumerate() {
            let path = format!("missing[{i}]");
            let key = str_field(entry, "key").ok_or_else(|| {
                AssemblyError::manifest(&file, &format!("{path}.key"), "expected a string")
            })?;
            let provider = str_field(entry, "provider").unwrap_or("unknown").to_owned();
            let props = match entry.get("props") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(p)) => p.clone(),
                Some(_) => {
                    return Err(AssemblyError::manifest(
                        &file,
                        &format!("{path}.props"),
                        "expected an object",
                    ))
                }
            };
            missing.push(MissingContext {
                key: key.to_owned(),
                provider,
                props,
            });
        }
    }

    let artifacts = match root.get("artifacts") {
        None => return Ok(version),
        Some(Value::Object(a)) => a,
        Some(_) => {
            return Err(AssemblyError::manifest(
                &file,
                "artifacts",
                "expected an object",
            ))
        }
    };
    for (id, artifact) in artifacts {
        let path = format!("artifacts.{id}");
        let artifact = artifact
            .as_object()
            .ok_or_else(|| AssemblyError::manifest(&file, &path, "expected an object"))?;
        let kind = artifact
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                AssemblyError::manifest(&file, &format!("{path}.type"), "expected a string")
            })?;
        match kind {
            STACK_TYPE => stacks.push(read_stack(dir, &file, id, artifact, artifacts)?),
            NESTED_ASSEMBLY_TYPE => {
                let props = properties(artifact, &file, &path)?;
                let sub = props
                    .get("directoryName")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        AssemblyError::manifest(
                            &file,
                            &format!("{path}.properties.directoryName"),
                            "expected a string",
                        )
                    })?;
                let sub_dir = safe_join(dir, sub).ok_or_else(|| {
                    AssemblyError::manifest(
                        &file,
                        &format!("{path}.properties.directoryName"),
                        "must be a relative path inside the assembly",
                    )
                })?;
                load_into(&sub_dir, depth + 1, stacks, missing)?;
            }
            _ => {}
        }
    }
    Ok(version)
}

fn read_stack(
    dir: &Path,
    file: &Path,
    id: &str,
    artifact: &Map<String, Value>,
    all: &Map<String, Value>,
) -> Result<StackArtifact, AssemblyError> {
    let path = format!("artifacts.{id}");
    let props = properties(artifact, file, &path)?;
    let template = props
        .get("templateFile")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            AssemblyError::manifest(
                file,
                &format!("{path}.properties.templateFile"),
                "expected a string",
            )
        })?;
    let template_file = safe_join(dir, template).ok_or_else(|| {
        AssemblyError::manifest(
            file,
            &format!("{path}.properties.templateFile"),
            "must be a relative path inside the assembly",
        )
    })?;
    let environment = match artifact.get("environment") {
        Some(Value::String(e)) => Environment::parse(e).ok_or_else(|| {
            AssemblyError::manifest(
                file,
                &format!("{path}.environment"),
                "expected aws://ACCOUNT/REGION",
            )
        })?,
        None => Environment::unknown(),
        Some(_) => {
            return Err(AssemblyError::manifest(
                file,
                &format!("{path}.environment"),
                "expected a string",
            ))
        }
    };
    let stack_name = match props.get("stackName") {
        Some(Value::String(n)) if !n.is_empty() => n.clone(),
        Some(Value::String(_)) | None => id.to_owned(),
        Some(_) => {
            return Err(AssemblyError::manifest(
                file,
                &format!("{path}.properties.stackName"),
                "expected a string",
            ))
        }
    };
    let display_name = match artifact.get("displayName") {
        Some(Value::String(n)) if !n.is_empty() => n.clone(),
        Some(Value::String(_)) | None => id.to_owned(),
        Some(_) => {
            return Err(AssemblyError::manifest(
                file,
                &format!("{path}.displayName"),
                "expected a string",
            ))
        }
    };

    let direct = string_list(
        artifact.get("dependencies"),
        file,
        &format!("{path}.dependencies"),
    )?;
    let mut dependencies = Vec::new();
    let mut asset_manifests = Vec::new();
    let mut queue = direct;
    let mut seen = std::collections::HashSet::new();
    while let Some(dep) = queue.pop() {
        if !seen.insert(dep.clone()) {
            continue;
        }
        let Some(dep_artifact) = all.get(&dep).and_then(Value::as_object) else {
            continue; // a dependency outside this assembly: nothing to order against here
        };
        match dep_artifact.get("type").and_then(Value::as_str) {
            Some(STACK_TYPE) => dependencies.push(dep),
            Some(ASSET_MANIFEST_TYPE) => {
                if let Some(f) = dep_artifact
                    .get("properties")
                    .and_then(|p| p.get("file"))
                    .and_then(Value::as_str)
                    .and_then(|f| safe_join(dir, f))
                {
                    asset_manifests.push(f);
                }
                queue.extend(string_list(
                    dep_artifact.get("dependencies"),
                    file,
                    &format!("artifacts.{dep}.dependencies"),
                )?);
            }
            _ => queue.extend(string_list(
                dep_artifact.get("dependencies"),
                file,
                &format!("artifacts.{dep}.dependencies"),
            )?),
        }
    }
    dependencies.sort();
    asset_manifests.sort();

    let (mut logical_ids, mut annotations) =
        read_metadata(artifact.get("metadata"), file, &format!("{path}.metadata"))?;
    // Newer CDK versions move the metadata to a side file named by `additionalMetadataFile`.
    if let Some(extra) = artifact.get("additionalMetadataFile") {
        let field = format!("{path}.additionalMetadataFile");
        let name = extra
            .as_str()
            .ok_or_else(|| AssemblyError::manifest(file, &field, "expected a string"))?;
        let side = safe_join(dir, name).ok_or_else(|| {
            AssemblyError::manifest(file, &field, "must be a relative path inside the assembly")
        })?;
        let value = read_json(&side)?;
        let (ids, notes) = read_metadata(Some(&value), &side, "(top level)")?;
        logical_ids.extend(ids);
        annotations.extend(notes);
    }
    let tags = match props.get("tags") {
        Some(Value::Object(t)) => t.clone(),
        _ => Map::new(),
    };
    Ok(StackArtifact {
        artifact_id: id.to_owned(),
        stack_name,
        display_name,
        environment,
        template_file,
        dependencies,
        logical_ids,
        annotations,
        asset_manifests,
        termination_protection: props
            .get("terminationProtection")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        tags,
        properties: props.clone(),
        assembly_dir: dir.to_owned(),
    })
}

fn read_json(file: &Path) -> Result<Value, AssemblyError> {
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

type Metadata = (Vec<(String, String)>, Vec<Annotation>);

fn read_metadata(meta: Option<&Value>, file: &Path, path: &str) -> Result<Metadata, AssemblyError> {
    let mut logical_ids = Vec::new();
    let mut annotations = Vec::new();
    let Some(meta) = meta else {
        return Ok((logical_ids, annotations));
    };
    let meta = meta
        .as_object()
        .ok_or_else(|| AssemblyError::manifest(file, path, "expected an object"))?;
    for (construct_path, entries) in meta {
        let entries = entries.as_array().ok_or_else(|| {
            AssemblyError::manifest(file, &format!("{path}.{construct_path}"), "expected a list")
        })?;
        for entry in entries {
            let kind = str_field(entry, "type").unwrap_or_default();
            let data = entry.get("data");
            let text = || match data {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let severity = match kind {
                "aws:cdk:logicalId" => {
                    if let Some(Value::String(lid)) = data {
                        logical_ids.push((construct_path.clone(), lid.clone()));
                    }
                    continue;
                }
                "aws:cdk:error" => Severity::Error,
                "aws:cdk:warning" => Severity::Warning,
                "aws:cdk:info" => Severity::Info,
                _ => continue,
            };
            annotations.push(Annotation {
                severity,
                path: construct_path.clone(),
                message: text(),
            });
        }
    }
    Ok((logical_ids, annotations))
}

fn properties<'a>(
    artifact: &'a Map<String, Value>,
    file: &Path,
    path: &str,
) -> Result<&'a Map<String, Value>, AssemblyError> {
    artifact
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            AssemblyError::manifest(file, &format!("{path}.properties"), "expected an object")
        })
}

fn string_list(v: Option<&Value>, file: &Path, path: &str) -> Result<Vec<String>, AssemblyError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str().map(str::to_owned).ok_or_else(|| {
                    AssemblyError::manifest(file, path, "expected a list of strings")
                })
            })
            .collect(),
        Some(_) => Err(AssemblyError::manifest(
            file,
            path,
            "expected a list of strings",
        )),
    }
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Joins a manifest-supplied relative path, refusing absolute paths and `..` escapes.
fn safe_join(dir: &Path, relative: &str) -> Option<PathBuf> {
    let rel = Path::new(relative);
    let escapes = rel.components().any(|c| {
        !matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    });
    (!relative.is_empty() && !escapes).then(|| dir.join(rel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_join_refuses_escapes() {
        let d = Path::new("/a");
        assert_eq!(safe_join(d, "x/y.json"), Some(PathBuf::from("/a/x/y.json")));
        assert_eq!(safe_join(d, "../y.json"), None);
        assert_eq!(safe_join(d, "/etc/passwd"), None);
        assert_eq!(safe_join(d, ""), None);
    }
}
