//! AWS KMS: customer managed keys and their aliases, one provider for the family (a shared
//! client and error source), one module per type:
//! - [`key`]: `AWS::KMS::Key` (physical id and `Ref` the key id; `Fn::GetAtt` `Arn`, `KeyId`).
//! - [`alias`]: `AWS::KMS::Alias` (physical id and `Ref` the alias name, `alias/...`).
//!
//! Both physical ids are the primary identifiers Cloud Control records for the types, so a
//! resource either route made is addressed by the other the same way.

mod alias;
mod key;

use aws_sdk_kms::Client;

use super::scaffold;
use crate::provider::ProviderContext;

pub(crate) const KEY: &str = "AWS::KMS::Key";
pub(crate) const ALIAS: &str = "AWS::KMS::Alias";

/// Where KMS's errors come from.
const KMS: scaffold::Service = scaffold::Service("kms");

fn client(ctx: &ProviderContext<'_>) -> Client {
    scaffold::regional(ctx, Client::new)
}

scaffold::family::family_provider!(KmsProvider, "KMS", client, {
    KEY => key,
    ALIAS => alias,
});
