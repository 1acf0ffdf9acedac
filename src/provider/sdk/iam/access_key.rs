//! `AWS::IAM::AccessKey`: physical id and `Ref` = the access key id; `Fn::GetAtt
//! SecretAccessKey`. The registry schema has no handlers, so Cloud Control cannot make one: this
//! provider is the only route (a property it does not send is refused before anything is
//! created, by the registry's routing).
//!
//! `SecretAccessKey` exists only in CreateAccessKey's answer. It is declared a secret attribute
//! ([`Provider::secret_attributes`]): the record stores `***` (its reader's properties too) and
//! this run's readers get the real value, as a NoEcho custom-resource answer. A later deploy
//! that has to send it again refuses and says to replace the key (change `Serial`).
//!
//! `Status` changes in place; `UserName` and `Serial` (which is never sent: changing it is how a
//! template asks for a new key) replace it.

use async_trait::async_trait;
use aws_sdk_iam::types::StatusType;
use serde_json::{json, Map, Value};

use super::{client, with_retry};
use crate::provider::props::{changed, Props};
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
use crate::provider::sdk::scaffold::Service;
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const TYPE: &str = "AWS::IAM::AccessKey";
const IAM: Service = Service("iam");

/// The top-level CloudFormation properties this provider handles (`Serial` only by replacing).
const KEY_PROPERTIES: &[&str] = &["UserName", "Status", "Serial"];

/// The attribute whose value is a credential: never stored in plaintext.
const SECRET: &str = "SecretAccessKey";

pub struct AccessKeyProvider;

fn status(p: &Props<'_>) -> Result<StatusType, ProviderError> {
    Ok(match p.str("Status")?.as_deref() {
        Some("Inactive") => StatusType::Inactive,
        _ => StatusType::Active,
    })
}

async fn set_status(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    user: &str,
    key_id: &str,
    status: StatusType,
) -> Result<(), ProviderError> {
    let call = iam
        .update_access_key()
        .user_name(user)
        .access_key_id(key_id)
        .status(status);
    with_retry(|| call.clone().send())
        .await
        .map(drop)
        .map_err(|e| IAM.err(req, "UpdateAccessKey", key_id, &e))
}

async fn delete_key(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    user: &str,
    key_id: &str,
) -> Result<(), ProviderError> {
    let call = iam
        .delete_access_key()
        .user_name(user)
        .access_key_id(key_id);
    IAM.unless_gone(
        with_retry(|| call.clone().send()).await,
        req,
        "DeleteAccessKey",
        key_id,
    )
    .map(drop)
}

/// `key_id`'s status, or `None` when the user or the key is gone.
async fn find(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    user: &str,
    key_id: &str,
) -> Result<Option<String>, ProviderError> {
    let pages = iam
        .list_access_keys()
        .user_name(user)
        .into_paginator()
        .items()
        .send()
        .collect::<Vec<_>>()
        .await;
    for item in pages {
        let Some(key) = IAM.unless_gone(item, req, "ListAccessKeys", user)? else {
            return Ok(None);
        };
        if key.access_key_id() == Some(key_id) {
            let status = key.status().map(|s| s.as_str()).unwrap_or("Active");
            return Ok(Some(status.to_owned()));
        }
    }
    Ok(None)
}

#[async_trait]
impl Provider for AccessKeyProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[TYPE]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(KEY_PROPERTIES.to_vec())
    }

    fn secret_attributes(&self, _resource_type: &str) -> &'static [&'static str] {
        &[SECRET]
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let p = Props::new(req);
        let user = p.required_str("UserName")?;
        let status = status(&p)?;
        let iam = client(ctx);
        let call = iam.create_access_key().user_name(&user);
        let out = with_retry(|| call.clone().send())
            .await
            .map_err(|e| IAM.err(req, "CreateAccessKey", &user, &e))?;
        let key = out.access_key();
        let key_id = IAM.required(req, key.map(|k| k.access_key_id()), "AccessKeyId")?;
        let secret = key.map(|k| k.secret_access_key()).unwrap_or_default();
        // A key without its secret, or one whose status cannot be set, is no use to anyone and
        // would count against the user's two keys: take it away again before failing.
        let finished = if secret.is_empty() {
            Err(ProviderError::failed(
                req,
                "iam returned no SecretAccessKey for the new key",
            ))
        } else if status == StatusType::Inactive {
            set_status(&iam, req, &user, key_id, status).await
        } else {
            Ok(())
        };
        if let Err(e) = finished {
            if let Err(cleanup) = delete_key(&iam, req, &user, key_id).await {
                tracing::warn!(
                    "could not delete the partly created access key {key_id} of {user}: \
                     {cleanup}; delete it with `aws iam delete-access-key`"
                );
            }
            return Err(e);
        }
        Ok(provisioned(
            key_id,
            &[(SECRET, json!(secret)), ("Id", json!(key_id))],
        ))
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        if let Some(replace) = create_only_change(req, previous, &["UserName", "Serial"]) {
            return Ok(replace);
        }
        let p = Props::new(req);
        if changed(previous, req.properties, "Status") {
            let user = p.required_str("UserName")?;
            set_status(&client(ctx), req, &user, physical_id, status(&p)?).await?;
        }
        // No attributes: the recorded ones (the masked secret among them) stay as they are.
        Ok(UpdateOutcome::Updated(provisioned(physical_id, &[])))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        let user = Props::new(req).required_str("UserName")?;
        delete_key(&client(ctx), req, &user, physical_id).await
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let user = Props::new(req).required_str("UserName")?;
        let Some(status) = find(&client(ctx), req, &user, physical_id).await? else {
            return Ok(None);
        };
        let mut props = Map::new();
        props.insert("UserName".into(), json!(user));
        props.insert("Status".into(), json!(status));
        props.insert("Id".into(), json!(physical_id));
        Ok(Some(props))
    }

    /// The secret cannot be had again: an adopted key's `SecretAccessKey` is unknown, so a
    /// reader of it fails until the key is replaced.
    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        let user = Props::new(req).required_str("UserName")?;
        match find(&client(ctx), req, &user, physical_id).await? {
            Some(_) => Ok(provisioned(physical_id, &[("Id", json!(physical_id))])),
            None => Err(ProviderError::failed(
                req,
                format!("access key {physical_id} of user {user} does not exist"),
            )),
        }
    }
}
