//! `AWS::IAM::ManagedPolicy`: physical id and `Ref` = the policy ARN. `Fn::GetAtt`:
//! `PolicyArn`, `PolicyId`, `AttachmentCount`, `CreateDate`, `DefaultVersionId`,
//! `IsAttachable`, `PermissionsBoundaryUsageCount`, `UpdateDate`.
//!
//! A document change publishes a new default policy version (deleting the oldest
//! non-default version when IAM's limit of five is reached); `Roles`, `Users` and `Groups`
//! changes attach and detach.

use async_trait::async_trait;
use aws_sdk_iam::types::Policy;
use serde_json::{Map, Value};

use super::{
    aws_error, client, decode_document, is_not_found, missing_from, replacement_reason,
    strings_value, timestamp, with_properties, with_retry,
};
use crate::provider::naming;
use crate::provider::props::{changed, Props};
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const TYPE: &str = "AWS::IAM::ManagedPolicy";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const MANAGED_PROPERTIES: &[&str] = &[
    "Description",
    "Groups",
    "ManagedPolicyName",
    "Path",
    "PolicyDocument",
    "Roles",
    "Users",
];
/// IAM keeps at most this many versions of a managed policy.
const MAX_VERSIONS: usize = 5;

pub struct ManagedPolicyProvider;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Role,
    User,
    Group,
}

const KINDS: [(Kind, &str); 3] = [
    (Kind::Role, "Roles"),
    (Kind::User, "Users"),
    (Kind::Group, "Groups"),
];

fn attributes(policy: &Policy) -> Map<String, Value> {
    let mut a = Map::new();
    let s = |v: Option<&str>| {
        v.map(|s| Value::String(s.to_owned()))
            .unwrap_or(Value::Null)
    };
    a.insert("PolicyArn".into(), s(policy.arn()));
    a.insert("PolicyId".into(), s(policy.policy_id()));
    a.insert(
        "AttachmentCount".into(),
        policy
            .attachment_count()
            .map(Value::from)
            .unwrap_or(Value::Null),
    );
    a.insert("CreateDate".into(), timestamp(policy.create_date()));
    a.insert("DefaultVersionId".into(), s(policy.default_version_id()));
    a.insert("IsAttachable".into(), Value::Bool(policy.is_attachable()));
    a.insert(
        "PermissionsBoundaryUsageCount".into(),
        policy
            .permissions_boundary_usage_count()
            .map(Value::from)
            .unwrap_or(Value::Null),
    );
    a.insert("UpdateDate".into(), timestamp(policy.update_date()));
    a
}

async fn attach(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    kind: Kind,
    name: &str,
    arn: &str,
) -> Result<(), ProviderError> {
    let target = format!("{name} ({arn})");
    match kind {
        Kind::Role => with_retry(|| {
            iam.attach_role_policy()
                .role_name(name)
                .policy_arn(arn)
                .send()
        })
        .await
        .map(drop)
        .map_err(|e| aws_error(req, "iam", "AttachRolePolicy", target, &e)),
        Kind::User => with_retry(|| {
            iam.attach_user_policy()
                .user_name(name)
                .policy_arn(arn)
                .send()
        })
        .await
        .map(drop)
        .map_err(|e| aws_error(req, "iam", "AttachUserPolicy", target, &e)),
        Kind::Group => with_retry(|| {
            iam.attach_group_policy()
                .group_name(name)
                .policy_arn(arn)
                .send()
        })
        .await
        .map(drop)
        .map_err(|e| aws_error(req, "iam", "AttachGroupPolicy", target, &e)),
    }
}

/// Detaches; an entity or attachment that is gone is success.
async fn detach(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    kind: Kind,
    name: &str,
    arn: &str,
) -> Result<(), ProviderError> {
    let target = format!("{name} ({arn})");
    match kind {
        Kind::Role => match with_retry(|| {
            iam.detach_role_policy()
                .role_name(name)
                .policy_arn(arn)
                .send()
        })
        .await
        {
            Err(e) if !is_not_found(&e) => {
                Err(aws_error(req, "iam", "DetachRolePolicy", target, &e))
            }
            _ => Ok(()),
        },
        Kind::User => match with_retry(|| {
            iam.detach_user_policy()
                .user_name(name)
                .policy_arn(arn)
                .send()
        })
        .await
        {
            Err(e) if !is_not_found(&e) => {
                Err(aws_error(req, "iam", "DetachUserPolicy", target, &e))
            }
            _ => Ok(()),
        },
        Kind::Group => match with_retry(|| {
            iam.detach_group_policy()
                .group_name(name)
                .policy_arn(arn)
                .send()
        })
        .await
        {
            Err(e) if !is_not_found(&e) => {
                Err(aws_error(req, "iam", "DetachGroupPolicy", target, &e))
            }
            _ => Ok(()),
        },
    }
}

/// The entities the policy is attached to, per kind; `None` when the policy does not exist.
async fn attached_entities(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<Vec<(Kind, String)>>, ProviderError> {
    let pages = match iam
        .list_entities_for_policy()
        .policy_arn(arn)
        .into_paginator()
        .send()
        .try_collect()
        .await
    {
        Ok(pages) => pages,
        Err(e) if is_not_found(&e) => return Ok(None),
        Err(e) => return Err(aws_error(req, "iam", "ListEntitiesForPolicy", arn, &e)),
    };
    let mut out = Vec::new();
    for page in &pages {
        out.extend(
            page.policy_roles()
                .iter()
                .filter_map(|r| r.role_name())
                .map(|n| (Kind::Role, n.to_owned())),
        );
        out.extend(
            page.policy_users()
                .iter()
                .filter_map(|u| u.user_name())
                .map(|n| (Kind::User, n.to_owned())),
        );
        out.extend(
            page.policy_groups()
                .iter()
                .filter_map(|g| g.group_name())
                .map(|n| (Kind::Group, n.to_owned())),
        );
    }
    Ok(Some(out))
}

async fn get_policy(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<Policy>, ProviderError> {
    match iam.get_policy().policy_arn(arn).send().await {
        Ok(out) => Ok(out.policy),
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => Err(aws_error(req, "iam", "GetPolicy", arn, &e)),
    }
}

async fn delete_policy(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<(), ProviderError> {
    let Some(entities) = attached_entities(iam, req, arn).await? else {
        return Ok(());
    };
    for (kind, name) in entities {
        detach(iam, req, kind, &name, arn).await?;
    }
    let versions = match iam
        .list_policy_versions()
        .policy_arn(arn)
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
    {
        Ok(v) => v,
        Err(e) if is_not_found(&e) => return Ok(()),
        Err(e) => return Err(aws_error(req, "iam", "ListPolicyVersions", arn, &e)),
    };
    for version in versions.iter().filter(|v| !v.is_default_version()) {
        let Some(id) = version.version_id() else {
            continue;
        };
        match with_retry(|| {
            iam.delete_policy_version()
                .policy_arn(arn)
                .version_id(id)
                .send()
        })
        .await
        {
            Err(e) if !is_not_found(&e) => {
                return Err(aws_error(
                    req,
                    "iam",
                    "DeletePolicyVersion",
                    format!("{arn} {id}"),
                    &e,
                ))
            }
            _ => {}
        }
    }
    match with_retry(|| iam.delete_policy().policy_arn(arn).send()).await {
        Err(e) if !is_not_found(&e) => Err(aws_error(req, "iam", "DeletePolicy", arn, &e)),
        _ => Ok(()),
    }
}

/// Publishes `document` as the new default version, making room first when IAM's version
/// limit is reached.
async fn publish_version(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    document: &str,
) -> Result<(), ProviderError> {
    let mut versions = iam
        .list_policy_versions()
        .policy_arn(arn)
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .map_err(|e| aws_error(req, "iam", "ListPolicyVersions", arn, &e))?;
    if versions.len() >= MAX_VERSIONS {
        versions.retain(|v| !v.is_default_version());
        versions.sort_by_key(|v| v.create_date().map(|d| (d.secs(), d.subsec_nanos())));
        if let Some(id) = versions.first().and_then(|v| v.version_id()) {
            with_retry(|| {
                iam.delete_policy_version()
                    .policy_arn(arn)
                    .version_id(id)
                    .send()
            })
            .await
            .map_err(|e| aws_error(req, "iam", "DeletePolicyVersion", format!("{arn} {id}"), &e))?;
        }
    }
    with_retry(|| {
        iam.create_policy_version()
            .policy_arn(arn)
            .policy_document(document)
            .set_as_default(true)
            .send()
    })
    .await
    .map_err(|e| aws_error(req, "iam", "CreatePolicyVersion", arn, &e))?;
    Ok(())
}

async fn attach_all(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<(), ProviderError> {
    let p = Props::new(req);
    for (kind, property) in KINDS {
        for name in p.strings(property)? {
            attach(iam, req, kind, &name, arn).await?;
        }
    }
    Ok(())
}

async fn current_attributes(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Map<String, Value>, ProviderError> {
    let policy = get_policy(iam, req, arn).await?.ok_or_else(|| {
        ProviderError::failed(req, format!("managed policy {arn} does not exist"))
    })?;
    Ok(attributes(&policy))
}

#[async_trait]
impl Provider for ManagedPolicyProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[TYPE]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(MANAGED_PROPERTIES.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let p = Props::new(req);
        let document = p
            .json_document("PolicyDocument")?
            .ok_or_else(|| ProviderError::missing(req, "PolicyDocument"))?;
        let name = match p.str("ManagedPolicyName")? {
            Some(n) => n,
            None => naming::generate(ctx.stack_name, req.logical_id, naming::IAM_POLICY_NAME),
        };
        let iam = client(ctx);
        let call = iam
            .create_policy()
            .policy_name(&name)
            .policy_document(document)
            .set_path(p.str("Path")?)
            .set_description(p.str("Description")?);
        let out = with_retry(|| call.clone().send())
            .await
            .map_err(|e| aws_error(req, "iam", "CreatePolicy", &name, &e))?;
        let arn = out
            .policy()
            .and_then(|p| p.arn())
            .map(str::to_owned)
            .ok_or_else(|| {
                ProviderError::failed(req, format!("IAM CreatePolicy returned no ARN for {name}"))
            })?;
        if let Err(err) = attach_all(&iam, req, &arn).await {
            if let Err(cleanup) = delete_policy(&iam, req, &arn).await {
                tracing::warn!(
                    "could not remove the partly created managed policy {arn}: {cleanup}"
                );
            }
            return Err(err);
        }
        let attributes = current_attributes(&iam, req, &arn).await?;
        Ok(Provisioned {
            physical_id: arn,
            attributes,
        })
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        if let Some(reason) = replacement_reason(TYPE, previous, req.properties) {
            return Ok(UpdateOutcome::NeedsReplacement { reason });
        }
        let iam = client(ctx);
        let arn = physical_id;
        let p = Props::new(req);
        let prev_req = with_properties(req, previous);
        let prev = Props::new(&prev_req);
        if changed(previous, req.properties, "PolicyDocument") {
            let document = p
                .json_document("PolicyDocument")?
                .ok_or_else(|| ProviderError::missing(req, "PolicyDocument"))?;
            publish_version(&iam, req, arn, &document).await?;
        }
        for (kind, property) in KINDS {
            if !changed(previous, req.properties, property) {
                continue;
            }
            let before = prev.strings(property)?;
            let after = p.strings(property)?;
            for name in missing_from(&before, &after) {
                attach(&iam, req, kind, name, arn).await?;
            }
            for name in missing_from(&after, &before) {
                detach(&iam, req, kind, name, arn).await?;
            }
        }
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: arn.to_owned(),
            attributes: current_attributes(&iam, req, arn).await?,
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        delete_policy(&client(ctx), req, physical_id).await
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let iam = client(ctx);
        let arn = physical_id;
        let Some(policy) = get_policy(&iam, req, arn).await? else {
            return Ok(None);
        };
        let mut props = Map::new();
        if let Some(name) = policy.policy_name() {
            props.insert("ManagedPolicyName".into(), Value::String(name.to_owned()));
        }
        if let Some(path) = policy.path() {
            props.insert("Path".into(), Value::String(path.to_owned()));
        }
        if let Some(d) = policy.description().filter(|d| !d.is_empty()) {
            props.insert("Description".into(), Value::String(d.to_owned()));
        }
        if let Some(version) = policy.default_version_id() {
            let out = iam
                .get_policy_version()
                .policy_arn(arn)
                .version_id(version)
                .send()
                .await
                .map_err(|e| {
                    aws_error(
                        req,
                        "iam",
                        "GetPolicyVersion",
                        format!("{arn} {version}"),
                        &e,
                    )
                })?;
            if let Some(doc) = out.policy_version().and_then(|v| v.document()) {
                props.insert("PolicyDocument".into(), decode_document(doc));
            }
        }
        let entities = attached_entities(&iam, req, arn).await?.unwrap_or_default();
        for (kind, property) in KINDS {
            let names: Vec<&str> = entities
                .iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, n)| n.as_str())
                .collect();
            if !names.is_empty() {
                props.insert(property.into(), strings_value(names));
            }
        }
        props.extend(attributes(&policy));
        Ok(Some(props))
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        Ok(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: current_attributes(&client(ctx), req, physical_id).await?,
        })
    }
}
