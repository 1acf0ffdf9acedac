//! cdk.json and ~/.cdk.json, read as the CDK CLI reads them.
//!
//! The keys cdkd acts on: `app`, `output`, `context`, `profile`, `requireApproval`,
//! `outputsFile`, `rollback` and `build`. Every other key is accepted (a project's cdk.json is
//! written for the CDK CLI, which defines many more): one `--verbose` line says it is ignored,
//! never an error, so a file that works with `cdk` works with cdkd. A key cdkd uses with the
//! wrong type is an error naming the file and the key.

use std::path::Path;

use serde_json::{Map, Value};

use super::{expect_string, parse_json_object, wrong_shape, ConfigError};
use crate::cli::RequireApproval;

/// The keys cdkd reads.
const USED: &[&str] = &[
    "app",
    "output",
    "context",
    "profile",
    "requireApproval",
    "outputsFile",
    "rollback",
    "build",
];

/// The CDK CLI's other cdk.json settings: accepted, with nothing for cdkd to do.
const CDK_ONLY: &[&str] = &[
    "$schema",
    "language",
    "watch",
    "plugin",
    "toolkitStackName",
    "toolkitBucket",
    "toolkitBucketName",
    "versionReporting",
    "pathMetadata",
    "assetMetadata",
    "staging",
    "hotswap",
    "lookups",
    "debug",
    "notices",
    "ci",
    "progress",
    "browser",
    "caBundlePath",
    "ec2creds",
    "proxy",
    "roleArn",
    "tags",
    "fail",
    "strict",
    "ignoreErrors",
    "json",
    "verbose",
    "trace",
    "assetParallelism",
    "assetPrebuild",
    "concurrency",
    "exclusively",
    "force",
    "method",
    "unstable",
    "bootstrapKmsKeyId",
    "features",
    "requireApprovalForCli",
    "cliTelemetry",
];

/// One JSON configuration file, as the CDK CLI reads it.
#[derive(Debug, Default, Clone)]
pub struct ConfigFile {
    pub app: Option<String>,
    pub output: Option<String>,
    pub context: Map<String, Value>,
    pub profile: Option<String>,
    /// `never`, `any-change`, `destructive` (cdkd's) or `broadening` (the CDK's default).
    pub require_approval: Option<String>,
    pub outputs_file: Option<String>,
    pub rollback: Option<bool>,
    pub build: Option<String>,
}

impl ConfigFile {
    /// Reads `file` if it exists; a missing file is an empty configuration.
    pub fn load(file: &Path) -> Result<Self, ConfigError> {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(ConfigError::Read {
                    file: file.to_owned(),
                    source,
                })
            }
        };
        Self::parse(&text, file)
    }

    pub fn parse(text: &str, file: &Path) -> Result<Self, ConfigError> {
        let value = parse_json_object(text, file)?;
        let string = |key: &str| {
            value
                .get(key)
                .map(|v| expect_string(v, file, &format!("\"{key}\"")))
                .transpose()
        };
        let mut out = ConfigFile {
            app: string("app")?,
            output: string("output")?,
            profile: string("profile")?,
            outputs_file: string("outputsFile")?,
            build: string("build")?,
            require_approval: string("requireApproval")?,
            ..ConfigFile::default()
        };
        if let Some(level) = &out.require_approval {
            if approval_level(level).is_none() {
                return Err(wrong_shape(
                    file,
                    "\"requireApproval\"",
                    "one of never, any-change, broadening, destructive",
                ));
            }
        }
        if let Some(rollback) = value.get("rollback") {
            out.rollback = Some(
                rollback
                    .as_bool()
                    .ok_or_else(|| wrong_shape(file, "\"rollback\"", "true or false"))?,
            );
        }
        if let Some(context) = value.get("context") {
            out.context = context
                .as_object()
                .cloned()
                .ok_or_else(|| wrong_shape(file, "\"context\"", "an object"))?;
        }
        for key in value.keys().filter(|k| !USED.contains(&k.as_str())) {
            if CDK_ONLY.contains(&key.as_str()) {
                tracing::info!(
                    "{}: \"{key}\" is a CDK CLI setting cdkd has no use for; ignored",
                    file.display()
                );
            } else {
                tracing::info!(
                    "{}: \"{key}\" is not a setting cdkd or the CDK CLI reads; ignored",
                    file.display()
                );
            }
        }
        Ok(out)
    }
}

/// The level a `requireApproval` value names (`never`, `any-change`, `broadening`,
/// `destructive`).
pub fn approval_level(value: &str) -> Option<RequireApproval> {
    <RequireApproval as clap::ValueEnum>::from_str(value, false).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(text, Path::new("cdk.json"))
    }

    #[test]
    fn the_keys_cdkd_uses_are_read() {
        let f = parse(
            r#"{"app":"node a.js","profile":"p","requireApproval":"any-change",
                "outputsFile":"o.json","rollback":false,"build":"npm run build"}"#,
        )
        .expect("parses");
        assert_eq!(f.profile.as_deref(), Some("p"));
        assert_eq!(f.require_approval.as_deref(), Some("any-change"));
        assert_eq!(f.outputs_file.as_deref(), Some("o.json"));
        assert_eq!(f.rollback, Some(false));
        assert_eq!(f.build.as_deref(), Some("npm run build"));
        assert_eq!(
            approval_level("any-change"),
            Some(RequireApproval::AnyChange)
        );
        assert_eq!(
            approval_level("broadening"),
            Some(RequireApproval::Broadening)
        );
    }

    #[test]
    fn other_keys_are_accepted_and_wrong_types_are_errors() {
        let f = parse(r#"{"app":"x","watch":{"include":["**"]},"language":"typescript","zzz":1}"#)
            .expect("unknown keys are not errors");
        assert_eq!(f.app.as_deref(), Some("x"));
        assert!(parse(r#"{"requireApproval":"broadening"}"#).is_ok());
        for (text, needle) in [
            (r#"{"rollback":"no"}"#, "\"rollback\" must be true or false"),
            (r#"{"profile":5}"#, "\"profile\" must be a string"),
            (r#"{"build":["npm"]}"#, "\"build\" must be a string"),
            (
                r#"{"requireApproval":"sometimes"}"#,
                "\"requireApproval\" must be one of",
            ),
        ] {
            let err = parse(text).expect_err(text).to_string();
            assert!(err.contains(needle) && err.contains("cdk.json"), "{err}");
        }
    }
}
