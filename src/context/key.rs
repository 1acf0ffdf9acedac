//! `key-provider`: the key id a KMS alias points at (`Key.fromLookup`).

use aws_config::SdkConfig;
use serde_json::{json, Value};

use super::query::{LookupError, Query};

pub async fn lookup(config: &SdkConfig, query: Query<'_>) -> Result<Value, LookupError> {
    let alias = query.str("aliasName")?;
    let kms = aws_sdk_kms::Client::new(config);
    let mut marker = None;
    loop {
        let out = kms
            .list_aliases()
            .set_marker(marker)
            .send()
            .await
            .map_err(|e| LookupError::call("kms", "ListAliases", alias, &e))?;
        if let Some(found) = out.aliases().iter().find(|a| a.alias_name() == Some(alias)) {
            return match found.target_key_id() {
                Some(id) => Ok(json!({ "keyId": id })),
                None => Err(not_found(alias)),
            };
        }
        marker = out.next_marker.filter(|m| !m.is_empty());
        if marker.is_none() || !out.truncated {
            return Err(not_found(alias));
        }
    }
}

fn not_found(alias: &str) -> LookupError {
    LookupError::not_found(format!("Could not find any key with alias named {alias}"))
}
