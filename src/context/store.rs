//! `cdk.context.json`, the project's cache of lookup answers, as the CDK CLI keeps it: one JSON
//! object in the app's directory, merged with what is already there (answers are added, nothing
//! else is touched), keys sorted so a commit diff shows only what changed, two-space indent.
//!
//! Transient answers (an object with `"$dontSaveContext": true`, which is how a failed lookup is
//! handed to the app) are never written: they live for one synthesis only.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::{load_context_file, ConfigError};

/// The file name the CDK CLI reads and writes in the project directory.
pub const CONTEXT_FILE: &str = "cdk.context.json";
/// Marks a context value that must not be saved (the CDK's TRANSIENT_CONTEXT_KEY).
pub const TRANSIENT_KEY: &str = "$dontSaveContext";
/// Carries a lookup's error to the app (the CDK's PROVIDER_ERROR_KEY).
pub const PROVIDER_ERROR_KEY: &str = "$providerError";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Read(#[from] ConfigError),
    #[error("{file}: cannot write the context cache: {source}")]
    Write {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "no context value number {number}: the listing has {count}; run `cdkd context` to see them"
    )]
    NoSuchNumber { number: usize, count: usize },
    #[error("context value `{key}` is not in {file}: only cached lookups can be reset (a value from cdk.json, ~/.cdk.json or -c is changed there); pass --force to ignore this")]
    NotCached { key: String, file: PathBuf },
}

/// The value a failed lookup hands to the app for one synthesis.
pub fn provider_error(message: &str) -> Value {
    let mut m = Map::new();
    m.insert(PROVIDER_ERROR_KEY.into(), Value::String(message.to_owned()));
    m.insert(TRANSIENT_KEY.into(), Value::Bool(true));
    Value::Object(m)
}

/// Whether `value` is for this synthesis only.
pub fn is_transient(value: &Value) -> bool {
    value
        .as_object()
        .and_then(|m| m.get(TRANSIENT_KEY))
        .is_some_and(|v| v == &Value::Bool(true))
}

/// The context cache of one project directory.
#[derive(Debug, Clone)]
pub struct ContextFile {
    pub path: PathBuf,
}

impl ContextFile {
    pub fn in_dir(project_dir: &Path) -> Self {
        ContextFile {
            path: project_dir.join(CONTEXT_FILE),
        }
    }

    /// What the file holds now (empty when it does not exist).
    pub fn load(&self) -> Result<Map<String, Value>, StoreError> {
        Ok(load_context_file(&self.path)?)
    }

    /// Adds `answers` (transient ones skipped) to what the file holds now and writes it back.
    /// Returns how many values were written anew or changed.
    pub fn merge(&self, answers: &Map<String, Value>) -> Result<usize, StoreError> {
        let mut current = self.load()?;
        let mut changed = 0;
        for (key, value) in answers {
            if is_transient(value) {
                continue;
            }
            if current.get(key) != Some(value) {
                current.insert(key.clone(), value.clone());
                changed += 1;
            }
        }
        if changed > 0 {
            self.write(&current)?;
        }
        Ok(changed)
    }

    /// Writes `values` (transient ones dropped), keys sorted, through a temporary file so a
    /// crash never leaves half a file.
    pub fn write(&self, values: &Map<String, Value>) -> Result<(), StoreError> {
        let mut keys: Vec<&String> = values
            .iter()
            .filter(|(_, v)| !is_transient(v))
            .map(|(k, _)| k)
            .collect();
        keys.sort();
        let sorted: Map<String, Value> = keys
            .into_iter()
            .map(|k| (k.clone(), values[k].clone()))
            .collect();
        let mut text = serde_json::to_string_pretty(&Value::Object(sorted))
            .unwrap_or_else(|_| "{}".to_owned());
        text.push('\n');
        let tmp = self.path.with_extension("json.tmp");
        let write_err = |source| StoreError::Write {
            file: self.path.clone(),
            source,
        };
        std::fs::write(&tmp, text).map_err(write_err)?;
        std::fs::rename(&tmp, &self.path).map_err(|source| {
            let _ = std::fs::remove_file(&tmp);
            StoreError::Write {
                file: self.path.clone(),
                source,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn answers_merge_sorted_and_transient_ones_are_not_saved() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = ContextFile::in_dir(dir.path());
        std::fs::write(&file.path, r#"{"z": 1, "hand-written": {"b": 2, "a": 1}}"#).unwrap();
        let answers = obj(json!({
            "ssm:account=1:parameterName=/p:region=r": "v",
            "b:failed": provider_error("boom"),
            "a:azs": ["r-1a", "r-1b"],
        }));
        assert_eq!(file.merge(&answers).unwrap(), 2);
        let text = std::fs::read_to_string(&file.path).unwrap();
        let keys: Vec<String> = obj(serde_json::from_str(&text).unwrap())
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            keys,
            [
                "a:azs",
                "hand-written",
                "ssm:account=1:parameterName=/p:region=r",
                "z"
            ]
        );
        assert!(!text.contains("boom"), "{text}");
        assert!(text.ends_with("}\n"));
        // A value object keeps its own key order; merging the same answers again writes nothing.
        assert!(text.contains("\"b\": 2,\n    \"a\": 1"), "{text}");
        let before = std::fs::metadata(&file.path).unwrap().modified().unwrap();
        assert_eq!(file.merge(&answers).unwrap(), 0);
        assert_eq!(
            std::fs::metadata(&file.path).unwrap().modified().unwrap(),
            before
        );
    }

    #[test]
    fn a_missing_file_is_created_and_a_malformed_one_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = ContextFile::in_dir(dir.path());
        assert!(file.load().unwrap().is_empty());
        file.merge(&obj(json!({"k": true}))).unwrap();
        assert_eq!(file.load().unwrap()["k"], true);
        std::fs::write(&file.path, "not json").unwrap();
        let msg = file.merge(&obj(json!({"k": 1}))).unwrap_err().to_string();
        assert!(
            msg.contains("cdk.context.json") && msg.contains("invalid JSON"),
            "{msg}"
        );
        assert_eq!(std::fs::read_to_string(&file.path).unwrap(), "not json");
    }

    #[test]
    fn provider_errors_are_transient() {
        let v = provider_error("no such parameter");
        assert!(is_transient(&v));
        assert_eq!(v[PROVIDER_ERROR_KEY], "no such parameter");
        assert!(!is_transient(&json!({"$dontSaveContext": false})));
        assert!(!is_transient(&json!("x")));
    }
}
