//! Settings from flags, files and the environment, merged in one place.
//!
//! The CDK CLI's files are honoured the way it reads them: `~/.cdk.json` (user defaults),
//! `cdk.json` (project: `app`, `output`, `context`, `profile`, `requireApproval`, `outputsFile`,
//! `rollback`, `build`; see [`cdk_json`]), `cdk.context.json` (cached lookups), and
//! `-c key=value` on the command line (always a string, as the CDK CLI passes it). cdkd's own
//! settings live under `context.cdkd.*`. Precedence for every setting: flag, then environment,
//! then cdk.json, then ~/.cdk.json.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::cli::GlobalOptions;
use crate::env;

mod cdk_json;
pub use cdk_json::{approval_level, ConfigFile};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{file}: invalid JSON at line {line} column {column}: {message}; fix the file or remove it"
    )]
    InvalidJson {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}: {path} must be {expected}")]
    WrongShape {
        file: PathBuf,
        path: String,
        expected: &'static str,
    },
    #[error("invalid context `-c {0}`: expected key=value with a non-empty key")]
    InvalidContextArg(String),
    #[error("no app to synthesize: pass --app (a command or a cloud assembly directory), set {var}, or add \"app\" to cdk.json")]
    NoApp { var: &'static str },
}

/// Reads a context cache file such as cdk.context.json: the whole object is context.
pub fn load_context_file(file: &Path) -> Result<Map<String, Value>, ConfigError> {
    match std::fs::read_to_string(file) {
        Ok(text) => parse_json_object(&text, file),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
        Err(source) => Err(ConfigError::Read {
            file: file.to_owned(),
            source,
        }),
    }
}

fn parse_json_object(text: &str, file: &Path) -> Result<Map<String, Value>, ConfigError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::InvalidJson {
        file: file.to_owned(),
        line: e.line(),
        column: e.column(),
        message: first_line(&e.to_string()),
    })?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(wrong_shape(file, "the top level", "a JSON object")),
    }
}

fn expect_string(v: &Value, file: &Path, path: &str) -> Result<String, ConfigError> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| wrong_shape(file, path, "a string"))
}

fn wrong_shape(file: &Path, path: &str, expected: &'static str) -> ConfigError {
    ConfigError::WrongShape {
        file: file.to_owned(),
        path: path.to_owned(),
        expected,
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_owned()
}

/// Parses `-c key=value`. The value is a string, whatever it looks like ("5", "true", "{}"):
/// the CDK CLI and upstream cdkd pass it so, and an app reading `tryGetContext` sees the same.
pub fn parse_context_arg(arg: &str) -> Result<(String, Value), ConfigError> {
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| ConfigError::InvalidContextArg(arg.to_owned()))?;
    let key = key.trim();
    if key.is_empty() {
        return Err(ConfigError::InvalidContextArg(arg.to_owned()));
    }
    Ok((key.to_owned(), Value::String(value.to_owned())))
}

/// The merged settings one command runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The project directory (where cdk.json is read from).
    pub project_dir: PathBuf,
    pub app: Option<String>,
    pub output: PathBuf,
    /// Merged context handed to the app: user < cdk.context.json < cdk.json < command line.
    pub context: Map<String, Value>,
    pub state_bucket: Option<String>,
    pub state_prefix: String,
    pub region: Option<String>,
    pub profile: Option<String>,
    pub role_arn: Option<String>,
    pub verbose: u8,
    pub yes: bool,
    /// Whether missing context is looked up (`--no-lookups` turns it off).
    pub lookups: bool,
    /// cdk.json `requireApproval`, checked to be a level or `broadening` (the flag wins).
    pub require_approval: Option<String>,
    /// cdk.json `outputsFile`, relative to the project (the deploy flag wins).
    pub outputs_file: Option<PathBuf>,
    /// cdk.json `rollback` (`--rollback` / `--no-rollback` win).
    pub rollback: Option<bool>,
    /// cdk.json `build`: a shell command run before the app is synthesized.
    pub build: Option<String>,
}

pub const DEFAULT_STATE_PREFIX: &str = "cdkd";
pub const DEFAULT_OUTPUT: &str = "cdk.out";

/// Where settings come from besides flags: the environment and the files. Injected so tests can
/// run without touching the real process environment or home directory.
pub struct Sources<'a> {
    pub project_dir: PathBuf,
    pub home_dir: Option<PathBuf>,
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

impl Sources<'static> {
    pub fn from_process() -> Result<Self, ConfigError> {
        let project_dir = std::env::current_dir().map_err(|source| ConfigError::Read {
            file: PathBuf::from("."),
            source,
        })?;
        Ok(Sources {
            project_dir,
            home_dir: std::env::var_os("HOME").map(PathBuf::from),
            env: &|name| std::env::var(name).ok().filter(|v| !v.is_empty()),
        })
    }
}

impl Settings {
    pub fn resolve(flags: &GlobalOptions, sources: &Sources<'_>) -> Result<Self, ConfigError> {
        let project = ConfigFile::load(&sources.project_dir.join("cdk.json"))?;
        let user = match &sources.home_dir {
            Some(home) => ConfigFile::load(&home.join(".cdk.json"))?,
            None => ConfigFile::default(),
        };
        let cached = load_context_file(&sources.project_dir.join("cdk.context.json"))?;

        let mut context = user.context.clone();
        context.extend(cached);
        context.extend(project.context.clone());
        for arg in &flags.context {
            let (k, v) = parse_context_arg(arg)?;
            context.insert(k, v);
        }

        let cdkd = context.get("cdkd").and_then(Value::as_object);
        let cdkd_str = |key: &str| {
            cdkd.and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let env = |name: &str| (sources.env)(name);

        let app = flags
            .app
            .clone()
            .or_else(|| env(env::CDKD_APP))
            .or(project.app)
            .or(user.app);
        let output = flags
            .output
            .clone()
            .or_else(|| project.output.or(user.output).map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_OUTPUT));
        let output = if output.is_absolute() {
            output
        } else {
            sources.project_dir.join(output)
        };

        Ok(Settings {
            project_dir: sources.project_dir.clone(),
            app,
            output,
            state_bucket: flags
                .state_bucket
                .clone()
                .or_else(|| env(env::CDKD_STATE_BUCKET))
                .or_else(|| cdkd_str("stateBucket")),
            state_prefix: flags
                .state_prefix
                .clone()
                .or_else(|| env(env::CDKD_STATE_PREFIX))
                .or_else(|| cdkd_str("statePrefix"))
                .unwrap_or_else(|| DEFAULT_STATE_PREFIX.to_owned()),
            region: flags.region.clone(),
            // The SDK reads AWS_PROFILE itself; cdk.json's profile only when neither is given.
            profile: flags
                .profile
                .clone()
                .or_else(|| match env(env::AWS_PROFILE) {
                    Some(_) => None,
                    None => project.profile.clone().or(user.profile.clone()),
                }),
            role_arn: flags.role_arn.clone(),
            verbose: flags.verbose,
            yes: flags.yes,
            lookups: !flags.no_lookups,
            require_approval: project.require_approval.or(user.require_approval),
            outputs_file: project
                .outputs_file
                .or(user.outputs_file)
                .map(|f| sources.project_dir.join(f)),
            rollback: project.rollback.or(user.rollback),
            build: project.build.or(user.build),
            context,
        })
    }

    /// The app, or the error that tells the user how to name one.
    pub fn require_app(&self) -> Result<&str, ConfigError> {
        self.app
            .as_deref()
            .ok_or(ConfigError::NoApp { var: env::CDKD_APP })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).expect("write fixture");
    }

    fn resolve(
        dir: &Path,
        flags: &GlobalOptions,
        vars: &[(&str, &str)],
    ) -> Result<Settings, ConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let lookup = move |name: &str| vars.get(name).cloned();
        let sources = Sources {
            project_dir: dir.to_owned(),
            home_dir: None,
            env: &lookup,
        };
        Settings::resolve(flags, &sources)
    }

    #[test]
    fn flag_beats_environment_beats_cdk_json() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            dir.path(),
            "cdk.json",
            r#"{"app":"node a.js","context":{"cdkd":{"stateBucket":"from-file","statePrefix":"pf"}}}"#,
        );
        let none = GlobalOptions::default();
        let s = resolve(dir.path(), &none, &[]).expect("resolves");
        assert_eq!(s.app.as_deref(), Some("node a.js"));
        assert_eq!(s.state_bucket.as_deref(), Some("from-file"));
        assert_eq!(s.state_prefix, "pf");

        let env = [
            ("CDKD_APP", "node env.js"),
            ("CDKD_STATE_BUCKET", "from-env"),
            ("CDKD_STATE_PREFIX", "pe"),
        ];
        let s = resolve(dir.path(), &none, &env).expect("resolves");
        assert_eq!(s.app.as_deref(), Some("node env.js"));
        assert_eq!(s.state_bucket.as_deref(), Some("from-env"));
        assert_eq!(s.state_prefix, "pe");

        let flags = GlobalOptions {
            app: Some("cdk.out".into()),
            state_bucket: Some("from-flag".into()),
            state_prefix: Some("px".into()),
            ..Default::default()
        };
        let s = resolve(dir.path(), &flags, &env).expect("resolves");
        assert_eq!(s.app.as_deref(), Some("cdk.out"));
        assert_eq!(s.state_bucket.as_deref(), Some("from-flag"));
        assert_eq!(s.state_prefix, "px");
    }

    #[test]
    fn cdk_json_settings_below_flags_and_environment() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            dir.path(),
            "cdk.json",
            r#"{"profile":"json","requireApproval":"any-change","outputsFile":"o.json",
                "rollback":false,"build":"make"}"#,
        );
        let none = GlobalOptions::default();
        let s = resolve(dir.path(), &none, &[]).expect("resolves");
        assert_eq!(s.profile.as_deref(), Some("json"));
        assert_eq!(s.require_approval.as_deref(), Some("any-change"));
        assert_eq!(s.outputs_file, Some(dir.path().join("o.json")));
        assert_eq!(s.rollback, Some(false));
        assert_eq!(s.build.as_deref(), Some("make"));
        // AWS_PROFILE (read by the SDK) beats cdk.json; --profile beats both.
        let s = resolve(dir.path(), &none, &[("AWS_PROFILE", "env")]).expect("resolves");
        assert_eq!(s.profile, None);
        let flags = GlobalOptions {
            profile: Some("flag".into()),
            ..Default::default()
        };
        let s = resolve(dir.path(), &flags, &[("AWS_PROFILE", "env")]).expect("resolves");
        assert_eq!(s.profile.as_deref(), Some("flag"));
    }

    #[test]
    fn defaults_when_nothing_is_configured() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = resolve(dir.path(), &GlobalOptions::default(), &[]).expect("resolves");
        assert_eq!(s.app, None);
        assert_eq!(s.state_prefix, "cdkd");
        assert_eq!(s.output, dir.path().join("cdk.out"));
        assert!(matches!(s.require_app(), Err(ConfigError::NoApp { .. })));
    }

    #[test]
    fn context_precedence_command_line_over_cdk_json_over_cache() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            dir.path(),
            "cdk.json",
            r#"{"context":{"a":"json","b":"json"}}"#,
        );
        write(
            dir.path(),
            "cdk.context.json",
            r#"{"a":"cache","b":"cache","c":"cache"}"#,
        );
        let flags = GlobalOptions {
            context: vec!["b=cli".into(), "n=5".into(), "o={\"x\":true}".into()],
            ..Default::default()
        };
        let s = resolve(dir.path(), &flags, &[]).expect("resolves");
        assert_eq!(s.context["a"], "json");
        assert_eq!(s.context["b"], "cli");
        assert_eq!(s.context["c"], "cache");
        // -c values are strings, as the CDK CLI passes them.
        assert_eq!(s.context["n"], "5");
        assert_eq!(s.context["o"], "{\"x\":true}");
    }

    #[test]
    fn malformed_cdk_json_is_one_line_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), "cdk.json", "{\"app\": ");
        let err = resolve(dir.path(), &GlobalOptions::default(), &[]).expect_err("malformed");
        let msg = err.to_string();
        assert!(msg.contains("cdk.json") && msg.contains("line 1"), "{msg}");
        assert!(!msg.contains('\n'));

        write(dir.path(), "cdk.json", r#"{"app": 5}"#);
        let msg = resolve(dir.path(), &GlobalOptions::default(), &[])
            .expect_err("wrong type")
            .to_string();
        assert!(msg.contains("\"app\" must be a string"), "{msg}");

        write(dir.path(), "cdk.json", r#"{"context": []}"#);
        let msg = resolve(dir.path(), &GlobalOptions::default(), &[])
            .expect_err("wrong type")
            .to_string();
        assert!(msg.contains("\"context\" must be an object"), "{msg}");

        write(dir.path(), "cdk.json", "[1]");
        assert!(resolve(dir.path(), &GlobalOptions::default(), &[]).is_err());
    }

    #[test]
    fn context_args_must_have_a_key_and_equals() {
        for bad in ["novalue", "=x", " =x", ""] {
            assert!(parse_context_arg(bad).is_err(), "{bad:?} should be refused");
        }
        assert_eq!(
            parse_context_arg("k=").expect("empty value ok").1,
            Value::String(String::new())
        );
        assert_eq!(parse_context_arg("k=a=b").expect("ok").1, "a=b");
        assert_eq!(parse_context_arg("k=true").expect("ok").1, "true");
        assert_eq!(parse_context_arg("k=5").expect("ok").1, "5");
        assert_eq!(parse_context_arg("k=\"q\"").expect("ok").1, "\"q\"");
        assert_eq!(parse_context_arg("k=null").expect("ok").1, "null");
    }
}
