//! A cloud assembly of hand-written stacks in a temp dir, with its own bootstrapped state
//! bucket: the harness the deploy and secrets tests drive `cdkd` through.

use serde_json::{json, Value};
use tempfile::TempDir;

use super::{cdkd, s3_client, unique_name};

pub struct App {
    pub dir: TempDir,
    pub bucket: String,
}

impl App {
    /// A temp dir and a fresh state bucket (`cdkd bootstrap`) named after `prefix`.
    pub fn new(prefix: &str) -> App {
        let app = App {
            dir: tempfile::tempdir().expect("temp dir"),
            bucket: unique_name(prefix),
        };
        let out = cdkd()
            .args(["bootstrap", "--state-bucket", &app.bucket])
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        app
    }

    /// Writes the assembly: (stack name, template, the artifact ids it depends on).
    pub fn write_stacks(&self, stacks: &[(&str, &Value, &[&str])]) {
        let mut artifacts = serde_json::Map::new();
        for (name, template, deps) in stacks {
            let file = format!("{name}.template.json");
            artifacts.insert(
                name.to_string(),
                json!({
                    "type": "aws:cloudformation:stack",
                    "environment": "aws://unknown-account/unknown-region",
                    "properties": {"templateFile": file},
                    "dependencies": deps
                }),
            );
            let text = serde_json::to_string_pretty(template).expect("template json");
            std::fs::write(self.dir.path().join(&file), text).expect("template");
        }
        let manifest = json!({"version": "36.0.0", "artifacts": artifacts});
        std::fs::write(self.dir.path().join("manifest.json"), manifest.to_string())
            .expect("manifest");
    }

    /// `cdkd deploy --app DIR --state-bucket B ...`: (exit code, stdout, stderr).
    pub fn deploy(&self, extra: &[&str]) -> (i32, String, String) {
        self.deploy_env(extra, &[])
    }

    /// [`App::deploy`] with extra environment variables.
    pub fn deploy_env(&self, extra: &[&str], envs: &[(&str, &str)]) -> (i32, String, String) {
        let dir = self.dir.path();
        let out = cdkd()
            .current_dir(dir)
            .env("CDKD_PROGRESS", "plain")
            .envs(envs.iter().copied())
            .arg("deploy")
            .args(["--app", dir.to_str().expect("utf-8 path")])
            .args(["--state-bucket", &self.bucket])
            .args(extra)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        eprintln!("--- cdkd deploy {extra:?}\n{stderr}");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr,
        )
    }

    /// The state record of `stack` (`cdkd state show --json`, unwrapped).
    pub fn record(&self, stack: &str) -> Value {
        let out = cdkd()
            .args(["state", "show", stack, "--json"])
            .args(["--state-bucket", &self.bucket])
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let shown: Value = serde_json::from_slice(&out.stdout).expect("state json");
        match shown.get("state") {
            Some(s) if s.is_object() => s.clone(),
            _ => shown,
        }
    }

    /// Every version of every object in the state bucket: (`key@version`, body).
    pub async fn every_object_version(&self) -> Vec<(String, String)> {
        every_object_version(&self.bucket).await
    }
}

/// Every version of every object in `bucket`: (`key@version`, body), sorted.
pub async fn every_object_version(bucket: &str) -> Vec<(String, String)> {
    let s3 = s3_client().await;
    let mut out = Vec::new();
    let mut key_marker: Option<String> = None;
    let mut version_marker: Option<String> = None;
    loop {
        let page = s3
            .list_object_versions()
            .bucket(bucket)
            .set_key_marker(key_marker.clone())
            .set_version_id_marker(version_marker.clone())
            .send()
            .await
            .expect("list versions");
        for v in page.versions() {
            let (Some(key), Some(id)) = (v.key(), v.version_id()) else {
                continue;
            };
            let body = s3
                .get_object()
                .bucket(bucket)
                .key(key)
                .version_id(id)
                .send()
                .await
                .expect("get version")
                .body
                .collect()
                .await
                .expect("body")
                .into_bytes();
            out.push((
                format!("{key}@{id}"),
                String::from_utf8_lossy(&body).into_owned(),
            ));
        }
        if page.is_truncated() != Some(true) {
            break;
        }
        key_marker = page.next_key_marker().map(str::to_owned);
        version_marker = page.next_version_id_marker().map(str::to_owned);
    }
    out.sort();
    out
}
