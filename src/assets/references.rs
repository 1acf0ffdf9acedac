//! Which objects of a region's cdkd asset bucket and which images of its container repository a
//! state record still uses, for `cdkd gc`.
//!
//! Deleting is the irreversible direction, so every rule here errs towards keeping:
//! - the whole record is walked (properties, attributes, observed properties, outputs, anything
//!   a later schema adds), each string also once base64-decoded (EC2 user data);
//! - an object whose values include the asset bucket's name (`{S3Bucket, S3Key}`,
//!   `{Bucket, Key}`) protects every sibling string as a key;
//! - `s3://bucket/key` and the virtual-hosted and path-style HTTPS URLs of the bucket protect
//!   their key; an image URI of the repository protects its tag or digest;
//! - any 64-hex-digit token anywhere (cdkd's assets are named by their content hash) protects
//!   every key that starts with it and the image tag it spells.

use std::collections::BTreeSet;

use regex::Regex;
use serde_json::Value;

/// What the records scanned so far reference.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct References {
    /// Keys of the asset bucket, as written.
    pub keys: BTreeSet<String>,
    /// Content hashes (64 lowercase hex digits): a key starting with one, or an image tag equal
    /// to one, is referenced.
    pub hashes: BTreeSet<String>,
    /// Image tags of the repository.
    pub tags: BTreeSet<String>,
    /// Image digests (`sha256:` and 64 hex digits, lowercase).
    pub digests: BTreeSet<String>,
}

impl References {
    /// Whether the asset bucket's `key` is in use.
    pub fn uses_key(&self, key: &str) -> bool {
        self.keys.contains(key) || self.hashes.iter().any(|h| key.starts_with(h.as_str()))
    }

    /// Whether an image with `digest` and `tags` is in use.
    pub fn uses_image(&self, digest: &str, tags: &[String]) -> bool {
        self.digests.contains(&digest.to_ascii_lowercase())
            || tags
                .iter()
                .any(|t| self.tags.contains(t) || self.hashes.contains(t))
    }
}

/// The reference patterns of one region's storage.
pub struct Scanner {
    bucket: String,
    s3_uri: Regex,
    https: Regex,
    image: Regex,
    hash: Regex,
}

/// Characters a key extracted from a URL cannot hold (whitespace, quotes, a query string).
const KEY: &str = r#"[^\s"'?]+"#;

impl Scanner {
    pub fn new(bucket: &str, repository: &str) -> Scanner {
        let b = regex::escape(bucket);
        let r = regex::escape(repository);
        // Regexes built from escaped names and fixed text always compile.
        let re = |p: &str| Regex::new(p).unwrap_or_else(|_| Regex::new("$^").expect("empty"));
        Scanner {
            bucket: bucket.to_owned(),
            s3_uri: re(&format!(r"(?i:s3)://{b}/({KEY})")),
            // Virtual-hosted (the host is case-insensitive) or path-style (the bucket is a path
            // segment, compared exactly); any AWS partition's suffix.
            https: re(&format!(
                r"(?:(?i:https?)://(?i:{b})\.(?i:s3)[^/\s]*\.(?i:amazonaws\.com(?:\.cn)?|c2s\.ic\.gov|sc2s\.sgov\.gov)/({KEY})|(?i:https?)://(?i:s3)[^/\s]*\.(?i:amazonaws\.com(?:\.cn)?|c2s\.ic\.gov|sc2s\.sgov\.gov)/{b}/({KEY}))"
            )),
            image: re(&format!(
                r"(?i:[0-9]{{12}}\.dkr\.ecr\.[a-z0-9-]+\.[a-z0-9.]+)/{r}(?::([A-Za-z0-9_][A-Za-z0-9._-]{{0,127}}))?(?:@((?i:sha256):[0-9a-fA-F]{{64}}))?"
            )),
            hash: re(r"[0-9a-fA-F]{64}"),
        }
    }

    /// Adds what `record` (one state record, any schema) references.
    pub fn scan(&self, record: &Value, refs: &mut References) {
        match record {
            Value::String(s) => {
                self.scan_text(s, refs);
                if let Some(decoded) = base64_text(s) {
                    self.scan_text(&decoded, refs);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| self.scan(v, refs)),
            Value::Object(map) => {
                if map
                    .values()
                    .any(|v| v.as_str() == Some(self.bucket.as_str()))
                {
                    for v in map.values().filter_map(Value::as_str) {
                        if v != self.bucket {
                            refs.keys.insert(v.to_owned());
                        }
                    }
                }
                map.values().for_each(|v| self.scan(v, refs));
            }
            _ => {}
        }
    }

    fn scan_text(&self, text: &str, refs: &mut References) {
        for c in self.s3_uri.captures_iter(text) {
            if let Some(k) = c.get(1) {
                refs.keys.insert(k.as_str().to_owned());
            }
        }
        for c in self.https.captures_iter(text) {
            if let Some(k) = c.get(1).or_else(|| c.get(2)) {
                refs.keys.insert(k.as_str().to_owned());
            }
        }
        for c in self.image.captures_iter(text) {
            if let Some(t) = c.get(1) {
                refs.tags.insert(t.as_str().to_owned());
            }
            if let Some(d) = c.get(2) {
                refs.digests.insert(d.as_str().to_ascii_lowercase());
            }
        }
        for m in self.hash.find_iter(text) {
            refs.hashes.insert(m.as_str().to_ascii_lowercase());
        }
    }
}

/// `s` decoded from standard base64 when it is that and the result is UTF-8 text.
fn base64_text(s: &str) -> Option<String> {
    let s = s.trim();
    if s.len() < 8 || s.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let mut buf = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        buf = (buf << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HASH: &str = "fb572e8d8b89ba04eed20c2cd2f29ce81dfb8f032efac2d1545631938d9b018f";
    const BUCKET: &str = "cdkd-assets-123456789012-us-east-1";
    const REPO: &str = "cdkd-container-assets-123456789012-us-east-1";

    fn scanned(record: Value) -> References {
        let mut refs = References::default();
        Scanner::new(BUCKET, REPO).scan(&record, &mut refs);
        refs
    }

    #[test]
    fn a_bucket_and_key_pair_protects_the_key() {
        let refs = scanned(json!({"resources": {"Fn": {"properties": {
            "Code": {"S3Bucket": BUCKET, "S3Key": "handler.zip"}}}}}));
        assert!(refs.uses_key("handler.zip"));
        assert!(!refs.uses_key("other.zip"));
    }

    #[test]
    fn urls_of_the_bucket_protect_their_key_in_every_style() {
        let refs = scanned(json!([
            format!("s3://{BUCKET}/a/one.json"),
            format!(
                "https://{}.s3.us-east-1.amazonaws.com/two.json",
                BUCKET.to_uppercase()
            ),
            format!("https://s3.cn-north-1.amazonaws.com.cn/{BUCKET}/three.json?X-Amz=1"),
            "https://cdkd-assets-123456789012-us-east-1.s3.example.com/lookalike.json",
            format!("s3://{BUCKET}-other/four.json"),
        ]));
        assert!(refs.uses_key("a/one.json"));
        assert!(refs.uses_key("two.json"));
        assert!(refs.uses_key("three.json"));
        assert!(!refs.uses_key("lookalike.json"), "{refs:?}");
        assert!(!refs.uses_key("four.json"), "another bucket's key");
    }

    #[test]
    fn a_content_hash_anywhere_protects_its_objects_and_image() {
        let refs = scanned(json!({"outputs": {"Template": format!("see {HASH} here")}}));
        assert!(refs.uses_key(&format!("{HASH}.zip")));
        assert!(refs.uses_image("sha256:00", &[HASH.to_owned()]));
        // The same hash inside user data only base64 shows.
        let encoded = "ZmI1NzJlOGQ4Yjg5YmEwNGVlZDIwYzJjZDJmMjljZTgxZGZiOGYwMzJlZmFjMmQxNTQ1NjMxOTM4ZDliMDE4Zi56aXA=";
        let refs = scanned(json!({"UserData": encoded}));
        assert!(refs.uses_key(&format!("{HASH}.zip")), "{refs:?}");
    }

    #[test]
    fn image_uris_protect_their_tag_or_digest() {
        let digest = format!("sha256:{}", HASH.to_uppercase());
        let refs = scanned(json!([
            format!("123456789012.dkr.ecr.us-east-1.amazonaws.com/{REPO}:latest"),
            format!("123456789012.DKR.ECR.us-east-1.amazonaws.com/{REPO}@{digest}"),
        ]));
        assert!(refs.uses_image("sha256:11", &["latest".to_owned()]));
        assert!(refs.uses_image(&format!("sha256:{HASH}"), &[]));
        assert!(!refs.uses_image("sha256:22", &["v2".to_owned()]));
    }
}
