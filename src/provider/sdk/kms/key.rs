//! `AWS::KMS::Key`: physical id and `Ref` are the key id; `Fn::GetAtt` `Arn` and `KeyId`.
//!
//! `Description` (UpdateKeyDescription), `KeyPolicy` (PutKeyPolicy), `Enabled`
//! (EnableKey / DisableKey), `EnableKeyRotation` with `RotationPeriodInDays` and `Tags` change
//! in place. `KeySpec`, `KeyUsage` and `MultiRegion` cannot change on a live key, so a change
//! replaces it (CloudFormation does the same although the registry schema does not mark them
//! create-only). A key is never deleted at once: delete schedules its deletion after
//! `PendingWindowInDays` (CloudFormation's default, 30), and a key pending deletion counts as
//! gone for reads and deletes.

use aws_sdk_kms::types::{KeySpec, KeyState, KeyUsageType, Tag};
use aws_sdk_kms::Client;
use serde_json::{json, Map, Value};

use super::KMS;
use crate::provider::props::{changed, Props};
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
use crate::provider::sdk::scaffold::tags;
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control).
pub(super) const PROPERTIES: &[&str] = &[
    "BypassPolicyLockoutSafetyCheck",
    "Description",
    "EnableKeyRotation",
    "Enabled",
    "KeyPolicy",
    "KeySpec",
    "KeyUsage",
    "MultiRegion",
    "PendingWindowInDays",
    "RotationPeriodInDays",
    "Tags",
];

/// Properties KMS cannot change on an existing key.
const REPLACING: &[&str] = &["KeySpec", "KeyUsage", "MultiRegion"];
/// The only key policy name KMS has.
const POLICY_NAME: &str = "default";
/// CloudFormation's waiting period before a deleted key is gone, in days.
const DEFAULT_PENDING_WINDOW: i32 = 30;

/// The key policy KMS gives a key created without one (the account may use the key through
/// IAM): what removing `KeyPolicy` from the template restores.
fn default_policy(ctx: &ProviderContext<'_>) -> String {
    json!({
        "Version": "2012-10-17",
        "Id": "key-default-1",
        "Statement": [{
            "Sid": "Enable IAM User Permissions",
            "Effect": "Allow",
            "Principal": {"AWS": format!("arn:{}:iam::{}:root", ctx.partition, ctx.account_id)},
            "Action": "kms:*",
            "Resource": "*",
        }],
    })
    .to_string()
}

fn sdk_tags(
    req: &ResourceRequest<'_>,
    pairs: Vec<(String, String)>,
) -> Result<Vec<Tag>, ProviderError> {
    pairs
        .into_iter()
        .map(|(k, v)| {
            Tag::builder()
                .tag_key(k)
                .tag_value(v)
                .build()
                .map_err(|e| ProviderError::failed(req, format!("property Tags: {e}")))
        })
        .collect()
}

/// The key's metadata; `None` when it does not exist or is pending deletion (what a deleted
/// key is until its waiting period ends).
async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<aws_sdk_kms::types::KeyMetadata>, ProviderError> {
    let out = KMS.unless_gone(
        client.describe_key().key_id(id).send().await,
        req,
        "DescribeKey",
        id,
    )?;
    Ok(out.and_then(|o| o.key_metadata).filter(|m| {
        !matches!(
            m.key_state(),
            Some(KeyState::PendingDeletion | KeyState::PendingReplicaDeletion)
        )
    }))
}

/// What a create reports, read from KMS: `None` when the key is gone.
pub(super) async fn provisioned_of(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    let Some(meta) = describe(client, req, id).await? else {
        return Ok(None);
    };
    let arn = KMS.required(req, meta.arn(), "key ARN")?;
    Ok(Some(provisioned(
        meta.key_id(),
        &[("Arn", json!(arn)), ("KeyId", json!(meta.key_id()))],
    )))
}

/// Rotation as the properties ask: on (with its period when given) or off.
async fn set_rotation(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    let props = Props::new(req);
    if props.bool("EnableKeyRotation")?.unwrap_or(false) {
        let period = props
            .i64("RotationPeriodInDays")?
            .map(|d| {
                i32::try_from(d).map_err(|_| {
                    ProviderError::failed(req, "property RotationPeriodInDays is out of range")
                })
            })
            .transpose()?;
        client
            .enable_key_rotation()
            .key_id(id)
            .set_rotation_period_in_days(period)
            .send()
            .await
            .map_err(|e| KMS.err(req, "EnableKeyRotation", id, &e))?;
    } else {
        client
            .disable_key_rotation()
            .key_id(id)
            .send()
            .await
            .map_err(|e| KMS.err(req, "DisableKeyRotation", id, &e))?;
    }
    Ok(())
}

async fn set_enabled(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    enabled: bool,
) -> Result<(), ProviderError> {
    if enabled {
        client
            .enable_key()
            .key_id(id)
            .send()
            .await
            .map_err(|e| KMS.err(req, "EnableKey", id, &e))?;
    } else {
        client
            .disable_key()
            .key_id(id)
            .send()
            .await
            .map_err(|e| KMS.err(req, "DisableKey", id, &e))?;
    }
    Ok(())
}

pub(super) async fn create(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let list = props.tags()?;
    let tags = (!list.is_empty())
        .then(|| sdk_tags(req, list))
        .transpose()?;
    let out = client
        .create_key()
        .set_policy(props.json_document("KeyPolicy")?)
        .set_description(props.str("Description")?)
        .set_key_usage(
            props
                .str("KeyUsage")?
                .map(|u| KeyUsageType::from(u.as_str())),
        )
        .set_key_spec(props.str("KeySpec")?.map(|s| KeySpec::from(s.as_str())))
        .set_multi_region(props.bool("MultiRegion")?)
        .set_bypass_policy_lockout_safety_check(props.bool("BypassPolicyLockoutSafetyCheck")?)
        .set_tags(tags)
        .send()
        .await
        .map_err(|e| KMS.err(req, "CreateKey", req.logical_id, &e))?;
    let meta = out
        .key_metadata()
        .ok_or_else(|| ProviderError::failed(req, "kms returned no key metadata"))?;
    let id = meta.key_id().to_owned();
    let arn = KMS.required(req, meta.arn(), "key ARN")?.to_owned();
    let finish = async {
        // A new key has rotation off and is enabled: only a different ask is sent.
        if props.bool("EnableKeyRotation")?.unwrap_or(false) {
            set_rotation(client, req, &id).await?;
        }
        if !props.bool("Enabled")?.unwrap_or(true) {
            set_enabled(client, req, &id, false).await?;
        }
        Ok::<(), ProviderError>(())
    };
    if let Err(e) = finish.await {
        // Never leave a half-configured key behind: it is scheduled for deletion at once.
        let _ = client
            .schedule_key_deletion()
            .key_id(&id)
            .pending_window_in_days(7)
            .send()
            .await;
        return Err(e);
    }
    Ok(provisioned(
        &id,
        &[("Arn", json!(arn)), ("KeyId", json!(id))],
    ))
}

pub(super) async fn update(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    if let Some(replace) = create_only_change(req, previous, REPLACING) {
        return Ok(replace);
    }
    let props = Props::new(req);
    let moved = |name: &str| changed(previous, req.properties, name);
    let enabled = props.bool("Enabled")?.unwrap_or(true);
    // A disabled key refuses most changes: it is enabled first and disabled last.
    if moved("Enabled") && enabled {
        set_enabled(client, req, id, true).await?;
    }
    if moved("Description") {
        client
            .update_key_description()
            .key_id(id)
            .description(props.str("Description")?.unwrap_or_default())
            .send()
            .await
            .map_err(|e| KMS.err(req, "UpdateKeyDescription", id, &e))?;
    }
    if moved("KeyPolicy") {
        let policy = props
            .json_document("KeyPolicy")?
            .unwrap_or_else(|| default_policy(ctx));
        client
            .put_key_policy()
            .key_id(id)
            .policy_name(POLICY_NAME)
            .policy(policy)
            .set_bypass_policy_lockout_safety_check(props.bool("BypassPolicyLockoutSafetyCheck")?)
            .send()
            .await
            .map_err(|e| KMS.err(req, "PutKeyPolicy", id, &e))?;
    }
    if moved("EnableKeyRotation") || moved("RotationPeriodInDays") {
        set_rotation(client, req, id).await?;
    }
    if moved("Tags") {
        update_tags(client, req, id, previous).await?;
    }
    if moved("Enabled") && !enabled {
        set_enabled(client, req, id, false).await?;
    }
    provisioned_of(ctx, client, req, id)
        .await?
        .map(UpdateOutcome::Updated)
        .ok_or_else(|| ProviderError::failed(req, format!("key {id} does not exist in KMS")))
}

async fn update_tags(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let tags::TagChanges { set, remove } = tags::moved(req, previous, "Tags")?;
    if !remove.is_empty() {
        client
            .untag_resource()
            .key_id(id)
            .set_tag_keys(Some(remove))
            .send()
            .await
            .map_err(|e| KMS.err(req, "UntagResource", id, &e))?;
    }
    if !set.is_empty() {
        client
            .tag_resource()
            .key_id(id)
            .set_tags(Some(sdk_tags(req, set.into_iter().collect())?))
            .send()
            .await
            .map_err(|e| KMS.err(req, "TagResource", id, &e))?;
    }
    Ok(())
}

pub(super) async fn delete(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<(), ProviderError> {
    if describe(client, req, id).await?.is_none() {
        return Ok(());
    }
    let window = Props::new(req)
        .i64("PendingWindowInDays")?
        .and_then(|d| i32::try_from(d).ok())
        .unwrap_or(DEFAULT_PENDING_WINDOW);
    KMS.unless_gone(
        client
            .schedule_key_deletion()
            .key_id(id)
            .pending_window_in_days(window)
            .send()
            .await,
        req,
        "ScheduleKeyDeletion",
        id,
    )
    .map(|_| ())
}

pub(super) async fn read(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(meta) = describe(client, req, id).await? else {
        return Ok(None);
    };
    let mut props = Map::new();
    if let Some(d) = meta.description().filter(|d| !d.is_empty()) {
        props.insert("Description".into(), json!(d));
    }
    props.insert("Enabled".into(), json!(meta.enabled()));
    if let Some(u) = meta.key_usage() {
        props.insert("KeyUsage".into(), json!(u.as_str()));
    }
    if let Some(s) = meta.key_spec() {
        props.insert("KeySpec".into(), json!(s.as_str()));
    }
    if let Some(m) = meta.multi_region() {
        props.insert("MultiRegion".into(), json!(m));
    }
    let policy = client
        .get_key_policy()
        .key_id(id)
        .policy_name(POLICY_NAME)
        .send()
        .await
        .map_err(|e| KMS.err(req, "GetKeyPolicy", id, &e))?;
    if let Some(text) = policy.policy() {
        let doc = serde_json::from_str(text).unwrap_or_else(|_| json!(text));
        props.insert("KeyPolicy".into(), doc);
    }
    // Rotation exists only for symmetric encryption keys; others do not answer.
    if meta
        .key_spec()
        .is_none_or(|s| *s == KeySpec::SymmetricDefault)
    {
        let rotation = client
            .get_key_rotation_status()
            .key_id(id)
            .send()
            .await
            .map_err(|e| KMS.err(req, "GetKeyRotationStatus", id, &e))?;
        props.insert(
            "EnableKeyRotation".into(),
            json!(rotation.key_rotation_enabled()),
        );
        if let Some(p) = rotation
            .rotation_period_in_days()
            .filter(|_| rotation.key_rotation_enabled())
        {
            props.insert("RotationPeriodInDays".into(), json!(p));
        }
    }
    let listed = client
        .list_resource_tags()
        .key_id(id)
        .send()
        .await
        .map_err(|e| KMS.err(req, "ListResourceTags", id, &e))?;
    tags::read_into(
        &mut props,
        "Tags",
        listed
            .tags()
            .iter()
            .map(|t| (t.tag_key().to_owned(), t.tag_value().to_owned())),
    );
    Ok(Some(props))
}
