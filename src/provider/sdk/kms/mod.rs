//! AWS KMS: customer managed keys and their aliases, one provider for the family (a shared
//! client and error source), one module per type:
//! - [`key`]: `AWS::KMS::Key` (physical id and `Ref` the key id; `Fn::GetAtt` `Arn`, `KeyId`).
//! - [`alias`]: `AWS::KMS::Alias` (physical id and `Ref` the alias name, `alias/...`).
//!
//! Both physical ids are the primary identifiers Cloud Control records for the types, so a
//! resource either route made is addressed by the other the same way.

mod alias;
mod key;

use async_trait::async_trait;
use aws_sdk_kms::Client;
use serde_json::{Map, Value};

use super::scaffold;
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

pub(crate) const KEY: &str = "AWS::KMS::Key";
pub(crate) const ALIAS: &str = "AWS::KMS::Alias";

/// Where KMS's errors come from.
const KMS: scaffold::Service = scaffold::Service("kms");

fn client(ctx: &ProviderContext<'_>) -> Client {
    scaffold::regional(ctx, Client::new)
}

/// The SDK provider for KMS keys and aliases.
pub struct KmsProvider;

#[async_trait]
impl Provider for KmsProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[KEY, ALIAS]
    }

    fn supported_properties(&self, resource_type: &str) -> Option<Vec<&'static str>> {
        match resource_type {
            KEY => Some(key::PROPERTIES.to_vec()),
            ALIAS => Some(alias::PROPERTIES.to_vec()),
            _ => None,
        }
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let c = client(ctx);
        match req.resource_type {
            KEY => key::create(&c, req).await,
            _ => alias::create(&c, req).await,
        }
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        let c = client(ctx);
        match req.resource_type {
            KEY => key::update(ctx, &c, req, physical_id, previous).await,
            _ => alias::update(&c, req, physical_id, previous).await,
        }
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        let c = client(ctx);
        match req.resource_type {
            KEY => key::delete(&c, req, physical_id).await,
            _ => alias::delete(&c, req, physical_id).await,
        }
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let c = client(ctx);
        match req.resource_type {
            KEY => key::read(&c, req, physical_id).await,
            _ => alias::read(&c, req, physical_id).await,
        }
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        let c = client(ctx);
        let found = match req.resource_type {
            KEY => key::provisioned_of(&c, req, physical_id).await?,
            _ => alias::provisioned_of(&c, req, physical_id).await?,
        };
        found.ok_or_else(|| {
            ProviderError::failed(
                req,
                format!("{physical_id} does not exist in KMS; check the id"),
            )
        })
    }
}
