//! `AWS::KMS::Alias`: physical id and `Ref` are the alias name (`alias/...`); the type has no
//! `Fn::GetAtt` attribute. `AliasName` replaces the alias; `TargetKeyId` moves it to another
//! key in place (UpdateAlias).

use aws_sdk_kms::types::AliasListEntry;
use aws_sdk_kms::Client;
use serde_json::{json, Map, Value};

use super::KMS;
use crate::provider::props::{changed, Props};
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control).
pub(super) const PROPERTIES: &[&str] = &["AliasName", "TargetKeyId"];

/// The alias by name; `None` when it does not exist. KMS lists aliases (there is no get), a
/// page at a time.
async fn find(
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<Option<AliasListEntry>, ProviderError> {
    let mut marker: Option<String> = None;
    loop {
        let page = client
            .list_aliases()
            .set_marker(marker.take())
            .send()
            .await
            .map_err(|e| KMS.err(req, "ListAliases", name, &e))?;
        if let Some(found) = page.aliases().iter().find(|a| a.alias_name() == Some(name)) {
            return Ok(Some(found.clone()));
        }
        match page.next_marker() {
            Some(next) if page.truncated() => marker = Some(next.to_owned()),
            _ => return Ok(None),
        }
    }
}

/// Whether the template's `TargetKeyId` (a key id or a key ARN) names the key `key_id`.
fn names_key(target: &str, key_id: &str) -> bool {
    target == key_id
        || target
            .strip_suffix(key_id)
            .is_some_and(|h| h.ends_with("key/"))
}

pub(super) async fn provisioned_of(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    Ok(find(client, req, name)
        .await?
        .map(|_| provisioned(name, &[])))
}

pub(super) async fn create(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let name = props.required_str("AliasName")?;
    client
        .create_alias()
        .alias_name(&name)
        .target_key_id(props.required_str("TargetKeyId")?)
        .send()
        .await
        .map_err(|e| KMS.err(req, "CreateAlias", &name, &e))?;
    Ok(provisioned(name, &[]))
}

pub(super) async fn update(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    if let Some(replace) = create_only_change(req, previous, &[]) {
        return Ok(replace);
    }
    if changed(previous, req.properties, "TargetKeyId") {
        client
            .update_alias()
            .alias_name(name)
            .target_key_id(Props::new(req).required_str("TargetKeyId")?)
            .send()
            .await
            .map_err(|e| KMS.err(req, "UpdateAlias", name, &e))?;
    }
    Ok(UpdateOutcome::Updated(provisioned(name, &[])))
}

pub(super) async fn delete(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<(), ProviderError> {
    KMS.unless_gone(
        client.delete_alias().alias_name(name).send().await,
        req,
        "DeleteAlias",
        name,
    )
    .map(|_| ())
}

pub(super) async fn read(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(alias) = find(client, req, name).await? else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("AliasName".into(), json!(name));
    if let Some(key) = alias.target_key_id() {
        // KMS answers the key id; a template that named the same key by ARN reads back as
        // written, so a diff after the deploy is clean.
        let target = Props::new(req)
            .str("TargetKeyId")?
            .filter(|t| names_key(t, key))
            .unwrap_or_else(|| key.to_owned());
        props.insert("TargetKeyId".into(), json!(target));
    }
    Ok(Some(props))
}

#[cfg(test)]
mod tests {
    use super::names_key;

    #[test]
    fn a_target_names_a_key_by_id_or_arn() {
        let id = "1234abcd-12ab-34cd-56ef-1234567890ab";
        assert!(names_key(id, id));
        assert!(names_key(
            &format!("arn:aws:kms:us-east-1:123456789012:key/{id}"),
            id
        ));
        assert!(!names_key("alias/other", id));
        assert!(!names_key(&format!("x{id}"), id));
    }
}
