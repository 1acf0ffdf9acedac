//! EC2 tags: sent with the create call (a `TagSpecification`, so a resource is never seen
//! untagged), changed on update with CreateTags / DeleteTags, read back as CloudFormation
//! lists them.

use aws_sdk_ec2::types::{ResourceType, Tag, TagSpecification};
use aws_sdk_ec2::Client;
use serde_json::{Map, Value};

use super::EC2;
use crate::provider::props::{changed, Props};
use crate::provider::sdk::scaffold::tags;
use crate::provider::{ProviderError, ResourceRequest};

/// The template's `Tags` as a create call's tag specification; `None` when there are none.
pub(super) fn specification(
    req: &ResourceRequest<'_>,
    kind: ResourceType,
) -> Result<Option<TagSpecification>, ProviderError> {
    let list = Props::new(req).tags()?;
    if list.is_empty() {
        return Ok(None);
    }
    let mut spec = TagSpecification::builder().resource_type(kind);
    for (k, v) in list {
        spec = spec.tags(Tag::builder().key(k).value(v).build());
    }
    Ok(Some(spec.build()))
}

/// Moves the resource's tags from `previous`'s to the request's (nothing when `Tags` did
/// not change).
pub(super) async fn update(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
    previous: &Map<String, Value>,
) -> Result<(), ProviderError> {
    if !changed(previous, req.properties, "Tags") {
        return Ok(());
    }
    let tags::TagChanges { set, remove } = tags::moved(req, previous, "Tags")?;
    if !remove.is_empty() {
        let keys = remove.into_iter().map(|k| Tag::builder().key(k).build());
        client
            .delete_tags()
            .resources(id)
            .set_tags(Some(keys.collect()))
            .send()
            .await
            .map_err(|e| EC2.err(req, "DeleteTags", id, &e))?;
    }
    if !set.is_empty() {
        let pairs = set
            .into_iter()
            .map(|(k, v)| Tag::builder().key(k).value(v).build());
        client
            .create_tags()
            .resources(id)
            .set_tags(Some(pairs.collect()))
            .send()
            .await
            .map_err(|e| EC2.err(req, "CreateTags", id, &e))?;
    }
    Ok(())
}

/// A described resource's tags as CloudFormation lists them, into `props` (nothing when the
/// resource has none besides the reserved `aws:` ones).
pub(super) fn read_into(props: &mut Map<String, Value>, live: &[Tag]) {
    tags::read_into(
        props,
        "Tags",
        live.iter().filter_map(|t| {
            Some((
                t.key()?.to_owned(),
                t.value().unwrap_or_default().to_owned(),
            ))
        }),
    );
}
