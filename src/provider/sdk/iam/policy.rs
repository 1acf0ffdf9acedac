//! `AWS::IAM::Policy`: an inline policy embedded in each of the named roles, users and groups
//! (PutRolePolicy / PutUserPolicy / PutGroupPolicy). It has no ARN of its own.
//!
//! Physical id, `Ref` and `Fn::GetAtt Id`: an opaque id generated as CloudFormation generates
//! it for this type, `{first 5 of stack}-{first 5 of logical id}-{RANDOM}` (e.g.
//! `MySta-RoleD-1A2B3C4D5E6F`). IAM never sees it: the policy is addressed by `PolicyName` on
//! each entity, so delete and read work from the recorded properties.

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::{
    aws_error, client, decode_document, is_not_found, strings_value, with_properties, with_retry,
};
use crate::provider::naming;
use crate::provider::props::{changed, Props};
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const TYPE: &str = "AWS::IAM::Policy";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const POLICY_PROPERTIES: &[&str] = &["Groups", "PolicyDocument", "PolicyName", "Roles", "Users"];

pub struct PolicyProvider;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Role,
    User,
    Group,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Role, Kind::User, Kind::Group];

    fn property(self) -> &'static str {
        match self {
            Kind::Role => "Roles",
            Kind::User => "Users",
            Kind::Group => "Groups",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entity {
    kind: Kind,
    name: String,
}

fn entities(req: &ResourceRequest<'_>) -> Result<Vec<Entity>, ProviderError> {
    let p = Props::new(req);
    let mut out = Vec::new();
    for kind in Kind::ALL {
        for name in p.strings(kind.property())? {
            let entity = Entity { kind, name };
            if !out.contains(&entity) {
                out.push(entity);
            }
        }
    }
    Ok(out)
}

/// `{stack}-{logical}-{RANDOM}` with both names cut to five characters, as CloudFormation
/// names inline policies.
fn generate_id(stack_name: &str, logical_id: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .take(5)
            .collect()
    };
    format!(
        "{}-{}-{}",
        clean(stack_name),
        clean(logical_id),
        naming::random_token(logical_id)
    )
}

fn attributes(id: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Id".into(), Value::String(id.to_owned()));
    attributes
}

async fn put(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    entity: &Entity,
    policy: &str,
    document: &str,
) -> Result<(), ProviderError> {
    let target = format!("{}/{policy}", entity.name);
    let name = entity.name.as_str();
    match entity.kind {
        Kind::Role => with_retry(|| {
            iam.put_role_policy()
                .role_name(name)
                .policy_name(policy)
                .policy_document(document)
                .send()
        })
        .await
        .map(drop)
        .map_err(|e| aws_error(req, "iam", "PutRolePolicy", target, &e)),
        Kind::User => with_retry(|| {
            iam.put_user_policy()
                .user_name(name)
                .policy_name(policy)
                .policy_document(document)
                .send()
        })
        .await
        .map(drop)
        .map_err(|e| aws_error(req, "iam", "PutUserPolicy", target, &e)),
        Kind::Group => with_retry(|| {
            iam.put_group_policy()
                .group_name(name)
                .policy_name(policy)
                .policy_document(document)
                .send()
        })
        .await
        .map(drop)
        .map_err(|e| aws_error(req, "iam", "PutGroupPolicy", target, &e)),
    }
}

/// Removes the policy from one entity; an entity or policy that is gone is success.
async fn remove(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    entity: &Entity,
    policy: &str,
) -> Result<(), ProviderError> {
    let target = format!("{}/{policy}", entity.name);
    let name = entity.name.as_str();
    match entity.kind {
        Kind::Role => match with_retry(|| {
            iam.delete_role_policy()
                .role_name(name)
                .policy_name(policy)
                .send()
        })
        .await
        {
            Err(e) if !is_not_found(&e) => {
                Err(aws_error(req, "iam", "DeleteRolePolicy", target, &e))
            }
            _ => Ok(()),
        },
        Kind::User => match with_retry(|| {
            iam.delete_user_policy()
                .user_name(name)
                .policy_name(policy)
                .send()
        })
        .await
        {
            Err(e) if !is_not_found(&e) => {
                Err(aws_error(req, "iam", "DeleteUserPolicy", target, &e))
            }
            _ => Ok(()),
        },
        Kind::Group => match with_retry(|| {
            iam.delete_group_policy()
                .group_name(name)
                .policy_name(policy)
                .send()
        })
        .await
        {
            Err(e) if !is_not_found(&e) => {
                Err(aws_error(req, "iam", "DeleteGroupPolicy", target, &e))
            }
            _ => Ok(()),
        },
    }
}

/// The policy's document on one entity, or `None` when the entity or the policy is gone.
async fn get(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    entity: &Entity,
    policy: &str,
) -> Result<Option<Value>, ProviderError> {
    let target = format!("{}/{policy}", entity.name);
    let name = entity.name.as_str();
    match entity.kind {
        Kind::Role => match iam
            .get_role_policy()
            .role_name(name)
            .policy_name(policy)
            .send()
            .await
        {
            Ok(out) => Ok(Some(decode_document(out.policy_document()))),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(aws_error(req, "iam", "GetRolePolicy", target, &e)),
        },
        Kind::User => match iam
            .get_user_policy()
            .user_name(name)
            .policy_name(policy)
            .send()
            .await
        {
            Ok(out) => Ok(Some(decode_document(out.policy_document()))),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(aws_error(req, "iam", "GetUserPolicy", target, &e)),
        },
        Kind::Group => match iam
            .get_group_policy()
            .group_name(name)
            .policy_name(policy)
            .send()
            .await
        {
            Ok(out) => Ok(Some(decode_document(out.policy_document()))),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(aws_error(req, "iam", "GetGroupPolicy", target, &e)),
        },
    }
}

fn require_entities(req: &ResourceRequest<'_>, entities: &[Entity]) -> Result<(), ProviderError> {
    if entities.is_empty() {
        return Err(ProviderError::failed(
            req,
            "at least one of Roles, Users or Groups is required",
        ));
    }
    Ok(())
}

#[async_trait]
impl Provider for PolicyProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[TYPE]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(POLICY_PROPERTIES.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let p = Props::new(req);
        let policy = p.required_str("PolicyName")?;
        let document = p
            .json_document("PolicyDocument")?
            .ok_or_else(|| ProviderError::missing(req, "PolicyDocument"))?;
        let targets = entities(req)?;
        require_entities(req, &targets)?;
        let iam = client(ctx);
        for (i, entity) in targets.iter().enumerate() {
            if let Err(err) = put(&iam, req, entity, &policy, &document).await {
                for done in &targets[..i] {
                    if let Err(cleanup) = remove(&iam, req, done, &policy).await {
                        tracing::warn!("could not undo a partial policy create: {cleanup}");
                    }
                }
                return Err(err);
            }
        }
        let id = generate_id(ctx.stack_name, req.logical_id);
        Ok(Provisioned {
            attributes: attributes(&id),
            physical_id: id,
        })
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        let p = Props::new(req);
        let policy = p.required_str("PolicyName")?;
        let document = p
            .json_document("PolicyDocument")?
            .ok_or_else(|| ProviderError::missing(req, "PolicyDocument"))?;
        let after = entities(req)?;
        require_entities(req, &after)?;
        let prev_req = with_properties(req, previous);
        let before = entities(&prev_req)?;
        let old_policy = Props::new(&prev_req).str("PolicyName")?;
        let content_changed = changed(previous, req.properties, "PolicyName")
            || changed(previous, req.properties, "PolicyDocument");

        let iam = client(ctx);
        for entity in &after {
            if content_changed || !before.contains(entity) {
                put(&iam, req, entity, &policy, &document).await?;
            }
        }
        if let Some(old) = old_policy {
            for entity in &before {
                let kept = old == policy && after.contains(entity);
                if !kept {
                    remove(&iam, req, entity, &old).await?;
                }
            }
        }
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: attributes(physical_id),
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        _physical_id: &str,
    ) -> Result<(), ProviderError> {
        let Some(policy) = Props::new(req).str("PolicyName")? else {
            // Without a name there is nothing IAM could be asked to remove.
            return Ok(());
        };
        let iam = client(ctx);
        for entity in entities(req)? {
            remove(&iam, req, &entity, &policy).await?;
        }
        Ok(())
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        _physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let policy = Props::new(req).required_str("PolicyName")?;
        let iam = client(ctx);
        let mut document = None;
        let mut found: Vec<Entity> = Vec::new();
        for entity in entities(req)? {
            if let Some(doc) = get(&iam, req, &entity, &policy).await? {
                document.get_or_insert(doc);
                found.push(entity);
            }
        }
        let Some(document) = document else {
            return Ok(None);
        };
        let mut props = Map::new();
        props.insert("PolicyName".into(), Value::String(policy));
        props.insert("PolicyDocument".into(), document);
        for kind in Kind::ALL {
            let names: Vec<&str> = found
                .iter()
                .filter(|e| e.kind == kind)
                .map(|e| e.name.as_str())
                .collect();
            if !names.is_empty() {
                props.insert(kind.property().into(), strings_value(names));
            }
        }
        Ok(Some(props))
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        if self.read(ctx, req, physical_id).await?.is_none() {
            return Err(ProviderError::failed(
                req,
                format!("inline policy {physical_id} is not embedded in any of the entities the template names"),
            ));
        }
        Ok(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: attributes(physical_id),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_look_like_cloudformation_ones() {
        let id = generate_id("My-Stack", "RoleDefaultPolicy1234");
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(parts.len(), 3, "{id}");
        assert_eq!(parts[0], "MySta");
        assert_eq!(parts[1], "RoleD");
        assert_eq!(parts[2].len(), 12);
    }
}
