//! cdkd-owned asset storage: the per-region marker and the redirect it implies.
//!
//! `cdkd-bootstrap/{region}.json` in the state bucket opts a region into cdkd-owned storage;
//! its body names the asset bucket and container repository (`assetBucket`,
//! `containerRepository`; every consumer reads the names from it, never from the naming
//! convention). In that mode the CDK bootstrap's default destinations for the deploy account
//! and region (`cdk-hnb659fds-assets-{account}-{region}`, `cdk-hnb659fds-container-assets-
//! {account}-{region}`) are replaced by the marker's names, both where assets are published
//! and in the templates that reference them, from the same table so the two cannot diverge.
//! User-chosen storage (another qualifier, another account or region) stays as written.
//!
//! The template rewrite is boundary-aware (a name must not continue into a longer one) and
//! covers plain strings, `Fn::Sub` template strings (also spelled with `${AWS::AccountId}` /
//! `${AWS::Region}`), and `Fn::Join` runs of literals and those two pseudo parameters, which
//! are folded to text first.

use serde_json::{Map, Value};

/// The CDK bootstrap's default qualifier: the only one redirected.
const QUALIFIER: &str = "hnb659fds";

/// The newest `assetSupportVersion` this binary reads and writes.
pub const ASSET_SUPPORT_VERSION: u64 = 1;

/// The body of `cdkd-bootstrap/{region}.json`, as upstream cdkd writes it:
/// `{assetBucket, containerRepo, assetSupportVersion, createdAt}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub asset_bucket: String,
    pub container_repository: Option<String>,
    /// Whether the body is in upstream's shape (an older cdkd of ours wrote
    /// `containerRepository` and no `assetSupportVersion`): bootstrap rewrites one that is not.
    pub current_shape: bool,
}

impl Marker {
    /// The marker body bootstrap writes.
    pub fn body(asset_bucket: &str, container_repo: &str, created_at: &str) -> Value {
        serde_json::json!({
            "assetBucket": asset_bucket,
            "containerRepo": container_repo,
            "assetSupportVersion": ASSET_SUPPORT_VERSION,
            "createdAt": created_at,
        })
    }

    /// The `assetSupportVersion` of a marker newer than this binary understands: such a
    /// marker is never used nor rewritten.
    pub fn newer_version(bytes: &[u8]) -> Option<u64> {
        let v: Value = serde_json::from_slice(bytes).ok()?;
        v.get("assetSupportVersion")
            .and_then(Value::as_u64)
            .filter(|n| *n > ASSET_SUPPORT_VERSION)
    }

    pub fn parse(bytes: &[u8]) -> Result<Marker, String> {
        if let Some(n) = Marker::newer_version(bytes) {
            return Err(format!(
                "assetSupportVersion {n} is newer than this cdkd understands \
                 ({ASSET_SUPPORT_VERSION}); upgrade cdkd to deploy in this region"
            ));
        }
        let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        let text = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| v.get(*k).and_then(Value::as_str))
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let asset_bucket = text(&["assetBucket", "bucketName"])
            .ok_or_else(|| "no assetBucket (a string) in the marker".to_owned())?;
        let current_shape = v.get("containerRepo").and_then(Value::as_str).is_some()
            && v.get("assetSupportVersion")
                .and_then(Value::as_u64)
                .is_some();
        Ok(Marker {
            asset_bucket,
            container_repository: text(&["containerRepo", "containerRepository", "repositoryName"]),
            current_shape,
        })
    }
}

/// The legacy → cdkd names for one account and region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub account: String,
    pub region: String,
    pub bucket_from: String,
    pub bucket_to: String,
    pub repository_from: String,
    pub repository_to: Option<String>,
}

impl Redirect {
    pub fn new(account: &str, region: &str, marker: &Marker) -> Self {
        Redirect {
            account: account.to_owned(),
            region: region.to_owned(),
            bucket_from: format!("cdk-{QUALIFIER}-assets-{account}-{region}"),
            bucket_to: marker.asset_bucket.clone(),
            repository_from: format!("cdk-{QUALIFIER}-container-assets-{account}-{region}"),
            repository_to: marker.container_repository.clone(),
        }
    }

    /// A publish destination's bucket, redirected when it is the default one.
    pub fn bucket(&self, bucket: &str) -> String {
        if bucket == self.bucket_from {
            self.bucket_to.clone()
        } else {
            bucket.to_owned()
        }
    }

    /// A publish destination's repository, redirected when it is the default one.
    pub fn repository(&self, repository: &str) -> String {
        match &self.repository_to {
            Some(to) if repository == self.repository_from => to.clone(),
            _ => repository.to_owned(),
        }
    }

    /// (from, to) pairs of literal names.
    fn pairs(&self) -> Vec<(String, String)> {
        let mut pairs = vec![(self.bucket_from.clone(), self.bucket_to.clone())];
        if let Some(to) = &self.repository_to {
            pairs.push((self.repository_from.clone(), to.clone()));
        }
        pairs
    }

    /// (from, to) pairs as an `Fn::Sub` template string may spell them.
    fn sub_pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (from, to) in self.pairs() {
            let spelled = [
                from.clone(),
                from.replacen(&self.account, "${AWS::AccountId}", 1),
                from.replacen(&format!("-{}", self.region), "-${AWS::Region}", 1),
                from.replacen(&self.account, "${AWS::AccountId}", 1)
                    .replacen(&format!("-{}", self.region), "-${AWS::Region}", 1),
            ];
            for s in spelled {
                if !out.iter().any(|(f, _)| f == &s) {
                    out.push((s, to.clone()));
                }
            }
        }
        out
    }

    /// Rewrites every reference to the default storage in `template`; the number rewritten.
    pub fn rewrite_template(&self, template: &mut Value) -> usize {
        let pairs = self.pairs();
        let sub_pairs = self.sub_pairs();
        self.rewrite(template, &pairs, &sub_pairs)
    }

    fn rewrite(
        &self,
        v: &mut Value,
        pairs: &[(String, String)],
        sub_pairs: &[(String, String)],
    ) -> usize {
        match v {
            Value::String(s) => replace_all(s, pairs),
            Value::Array(items) => items
                .iter_mut()
                .map(|i| self.rewrite(i, pairs, sub_pairs))
                .sum(),
            Value::Object(m) if m.len() == 1 && m.contains_key("Fn::Sub") => {
                let Some(arg) = m.get_mut("Fn::Sub") else {
                    return 0;
                };
                match arg {
                    Value::String(s) => replace_all(s, sub_pairs),
                    Value::Array(items) => {
                        let mut n = 0;
                        if let Some(Value::String(s)) = items.get_mut(0) {
                            n += replace_all(s, sub_pairs);
                        }
                        for item in items.iter_mut().skip(1) {
                            n += self.rewrite(item, pairs, sub_pairs);
                        }
                        n
                    }
                    other => self.rewrite(other, pairs, sub_pairs),
                }
            }
            Value::Object(m) if m.len() == 1 && m.contains_key("Fn::Join") => {
                let mut n = 0;
                if let Some(Value::Array(args)) = m.get_mut("Fn::Join") {
                    let empty_separator = args.first().and_then(Value::as_str) == Some("");
                    if let Some(Value::Array(parts)) = args.get_mut(1) {
                        if empty_separator {
                            n += self.fold_join_runs(parts, pairs);
                        }
                        n += parts
                            .iter_mut()
                            .map(|p| self.rewrite(p, pairs, sub_pairs))
                            .sum::<usize>();
                    }
                }
                n
            }
            Value::Object(m) => m
                .values_mut()
                .map(|i| self.rewrite(i, pairs, sub_pairs))
                .sum(),
            _ => 0,
        }
    }

    /// Folds each run of literals and `Ref AWS::AccountId` / `Ref AWS::Region` in an
    /// `Fn::Join ["", parts]` to text; a run that then names the default storage is replaced
    /// by its rewritten text (other runs are left exactly as written).
    fn fold_join_runs(&self, parts: &mut Vec<Value>, pairs: &[(String, String)]) -> usize {
        let mut out: Vec<Value> = Vec::with_capacity(parts.len());
        let mut run: Vec<Value> = Vec::new();
        let mut n = 0;
        let flush = |run: &mut Vec<Value>, out: &mut Vec<Value>, n: &mut usize| {
            if run.is_empty() {
                return;
            }
            let mut text: String = run
                .iter()
                .map(|p| self.fold(p).unwrap_or_default())
                .collect();
            let has_pseudo = run.iter().any(|p| !p.is_string());
            let rewritten = replace_all(&mut text, pairs);
            if rewritten > 0 && has_pseudo {
                *n += rewritten;
                out.push(Value::String(text));
                run.clear();
            } else {
                out.append(run);
            }
        };
        for p in parts.drain(..) {
            if self.fold(&p).is_some() {
                run.push(p);
            } else {
                flush(&mut run, &mut out, &mut n);
                out.push(p);
            }
        }
        flush(&mut run, &mut out, &mut n);
        *parts = out;
        n
    }

    /// A literal, or the value of `Ref AWS::AccountId` / `Ref AWS::Region`.
    fn fold(&self, part: &Value) -> Option<String> {
        match part {
            Value::String(s) => Some(s.clone()),
            Value::Object(m) => match single_ref(m)? {
                "AWS::AccountId" => Some(self.account.clone()),
                "AWS::Region" => Some(self.region.clone()),
                _ => None,
            },
            _ => None,
        }
    }
}

fn single_ref(m: &Map<String, Value>) -> Option<&str> {
    if m.len() == 1 {
        m.get("Ref")?.as_str()
    } else {
        None
    }
}

/// Replaces each whole-name occurrence of a `from` in `s` (not preceded or followed by a
/// character a name continues with); the number replaced.
fn replace_all(s: &mut String, pairs: &[(String, String)]) -> usize {
    let mut count = 0;
    for (from, to) in pairs {
        if from.is_empty() || !s.contains(from.as_str()) {
            continue;
        }
        let mut out = String::with_capacity(s.len());
        let mut rest = s.as_str();
        let mut before: Option<char> = None;
        while let Some(at) = rest.find(from.as_str()) {
            let prev = rest[..at].chars().last().or(before);
            let next = rest[at + from.len()..].chars().next();
            let bounded = !prev.is_some_and(continues_name) && !next.is_some_and(continues_name);
            out.push_str(&rest[..at]);
            if bounded {
                out.push_str(to);
                count += 1;
            } else {
                out.push_str(from);
            }
            before = from.chars().last();
            rest = &rest[at + from.len()..];
        }
        out.push_str(rest);
        *s = out;
    }
    count
}

fn continues_name(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redirect() -> Redirect {
        Redirect::new(
            "123456789012",
            "us-east-1",
            &Marker {
                asset_bucket: "cdkd-assets-123456789012-us-east-1".into(),
                container_repository: Some("cdkd-container-assets-123456789012-us-east-1".into()),
                current_shape: true,
            },
        )
    }

    #[test]
    fn the_marker_parses() {
        let m = Marker::parse(br#"{"assetBucket":"b","containerRepository":"r"}"#).unwrap();
        assert_eq!(m.asset_bucket, "b");
        assert_eq!(m.container_repository.as_deref(), Some("r"));
        assert!(Marker::parse(b"{}").is_err());
        let up =
            br#"{"assetBucket":"b","containerRepo":"r","assetSupportVersion":1,"createdAt":"t"}"#;
        let m = Marker::parse(up).unwrap();
        assert_eq!(m.container_repository.as_deref(), Some("r"));
        assert!(m.current_shape);
        let newer = br#"{"assetBucket":"b","containerRepo":"r","assetSupportVersion":2}"#;
        assert!(Marker::parse(newer)
            .unwrap_err()
            .contains("assetSupportVersion 2"));
        assert_eq!(Marker::newer_version(newer), Some(2));
        assert!(Marker::parse(b"nope").is_err());
    }

    #[test]
    fn publish_destinations_redirect_only_the_default_storage() {
        let r = redirect();
        assert_eq!(
            r.bucket("cdk-hnb659fds-assets-123456789012-us-east-1"),
            "cdkd-assets-123456789012-us-east-1"
        );
        assert_eq!(r.bucket("my-own-bucket"), "my-own-bucket");
        assert_eq!(
            r.bucket("cdk-hnb659fds-assets-123456789012-eu-west-1"),
            "cdk-hnb659fds-assets-123456789012-eu-west-1"
        );
        assert_eq!(
            r.repository("cdk-hnb659fds-container-assets-123456789012-us-east-1"),
            "cdkd-container-assets-123456789012-us-east-1"
        );
    }

    #[test]
    fn templates_are_rewritten_in_every_spelling() {
        let r = redirect();
        let mut t = json!({
            "Resources": {
                "Fn": {"Properties": {"Code": {
                    "S3Bucket": {"Fn::Sub": "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"},
                    "S3Key": "abc.zip"
                }}},
                "Plain": {"Properties": {"B": "cdk-hnb659fds-assets-123456789012-us-east-1"}},
                "Longer": {"Properties": {"B": "cdk-hnb659fds-assets-123456789012-us-east-1-extra"}},
                "Other": {"Properties": {"B": "cdk-custom-assets-123456789012-us-east-1"}},
                "Join": {"Properties": {"U": {"Fn::Join": ["", [
                    "s3://cdk-hnb659fds-assets-", {"Ref": "AWS::AccountId"}, "-",
                    {"Ref": "AWS::Region"}, "/k.json"
                ]]}}},
                "Image": {"Properties": {"I": {"Fn::Sub":
                    "${AWS::AccountId}.dkr.ecr.${AWS::Region}.${AWS::URLSuffix}/cdk-hnb659fds-container-assets-${AWS::AccountId}-${AWS::Region}:tag"}}}
            }
        });
        assert_eq!(r.rewrite_template(&mut t), 4);
        let res = &t["Resources"];
        assert_eq!(
            res["Fn"]["Properties"]["Code"]["S3Bucket"],
            json!({"Fn::Sub": "cdkd-assets-123456789012-us-east-1"})
        );
        assert_eq!(
            res["Plain"]["Properties"]["B"],
            "cdkd-assets-123456789012-us-east-1"
        );
        assert_eq!(
            res["Longer"]["Properties"]["B"],
            "cdk-hnb659fds-assets-123456789012-us-east-1-extra"
        );
        assert_eq!(
            res["Other"]["Properties"]["B"],
            "cdk-custom-assets-123456789012-us-east-1"
        );
        assert_eq!(
            res["Join"]["Properties"]["U"],
            json!({"Fn::Join": ["", ["s3://cdkd-assets-123456789012-us-east-1/k.json"]]})
        );
        assert_eq!(
            res["Image"]["Properties"]["I"],
            json!({"Fn::Sub": "${AWS::AccountId}.dkr.ecr.${AWS::Region}.${AWS::URLSuffix}/cdkd-container-assets-123456789012-us-east-1:tag"})
        );
    }

    #[test]
    fn a_join_without_the_name_is_left_as_written() {
        let r = redirect();
        let original = json!({"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::", {"Ref": "AWS::Region"}]]});
        let mut t = original.clone();
        assert_eq!(r.rewrite_template(&mut t), 0);
        assert_eq!(t, original);
    }
}
