//! `AWS::IAM::InstanceProfile`: physical id and `Ref` = the instance profile name;
//! `Fn::GetAtt Arn`. `Roles` (at most one role) changes in place; the name and path replace.

use async_trait::async_trait;
use aws_sdk_iam::types::InstanceProfile;
use serde_json::{Map, Value};

use super::{
    aws_error, client, is_not_found, missing_from, replacement_reason, strings_value,
    with_properties, with_retry,
};
use crate::provider::naming;
use crate::provider::props::{changed, Props};
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const TYPE: &str = "AWS::IAM::InstanceProfile";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const PROFILE_PROPERTIES: &[&str] = &["InstanceProfileName", "Path", "Roles"];

pub struct InstanceProfileProvider;

fn attributes(profile: &InstanceProfile) -> Map<String, Value> {
    let mut a = Map::new();
    a.insert("Arn".into(), Value::String(profile.arn().to_owned()));
    a
}

async fn get(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<Option<InstanceProfile>, ProviderError> {
    match iam
        .get_instance_profile()
        .instance_profile_name(name)
        .send()
        .await
    {
        Ok(out) => Ok(out.instance_profile),
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => Err(aws_error(req, "iam", "GetInstanceProfile", name, &e)),
    }
}

async fn add_role(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    name: &str,
    role: &str,
) -> Result<(), ProviderError> {
    with_retry(|| {
        iam.add_role_to_instance_profile()
            .instance_profile_name(name)
            .role_name(role)
            .send()
    })
    .await
    .map(drop)
    .map_err(|e| {
        aws_error(
            req,
            "iam",
            "AddRoleToInstanceProfile",
            format!("{name} ({role})"),
            &e,
        )
    })
}

async fn remove_role(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    name: &str,
    role: &str,
) -> Result<(), ProviderError> {
    match with_retry(|| {
        iam.remove_role_from_instance_profile()
            .instance_profile_name(name)
            .role_name(role)
            .send()
    })
    .await
    {
        Err(e) if !is_not_found(&e) => Err(aws_error(
            req,
            "iam",
            "RemoveRoleFromInstanceProfile",
            format!("{name} ({role})"),
            &e,
        )),
        _ => Ok(()),
    }
}

async fn delete_profile(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<(), ProviderError> {
    let Some(profile) = get(iam, req, name).await? else {
        return Ok(());
    };
    for role in profile.roles() {
        remove_role(iam, req, name, role.role_name()).await?;
    }
    match with_retry(|| {
        iam.delete_instance_profile()
            .instance_profile_name(name)
            .send()
    })
    .await
    {
        Err(e) if !is_not_found(&e) => {
            Err(aws_error(req, "iam", "DeleteInstanceProfile", name, &e))
        }
        _ => Ok(()),
    }
}

async fn current_attributes(
    iam: &aws_sdk_iam::Client,
    req: &ResourceRequest<'_>,
    name: &str,
) -> Result<Map<String, Value>, ProviderError> {
    let profile = get(iam, req, name).await?.ok_or_else(|| {
        ProviderError::failed(req, format!("instance profile {name} does not exist"))
    })?;
    Ok(attributes(&profile))
}

#[async_trait]
impl Provider for InstanceProfileProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[TYPE]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(PROFILE_PROPERTIES.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let p = Props::new(req);
        let roles = p.strings("Roles")?;
        // Instance profile names allow up to 128 characters of the IAM policy-name set.
        let name = match p.str("InstanceProfileName")? {
            Some(n) => n,
            None => naming::generate(ctx.stack_name, req.logical_id, naming::IAM_POLICY_NAME),
        };
        let iam = client(ctx);
        let call = iam
            .create_instance_profile()
            .instance_profile_name(&name)
            .set_path(p.str("Path")?);
        let out = with_retry(|| call.clone().send())
            .await
            .map_err(|e| aws_error(req, "iam", "CreateInstanceProfile", &name, &e))?;
        let mut attributes = out.instance_profile().map(attributes).unwrap_or_default();
        for role in &roles {
            if let Err(err) = add_role(&iam, req, &name, role).await {
                if let Err(cleanup) = delete_profile(&iam, req, &name).await {
                    tracing::warn!(
                        "could not remove the partly created instance profile {name}: {cleanup}"
                    );
                }
                return Err(err);
            }
        }
        if attributes.is_empty() {
            attributes = current_attributes(&iam, req, &name).await?;
        }
        Ok(Provisioned {
            physical_id: name,
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
        let name = physical_id;
        if changed(previous, req.properties, "Roles") {
            let prev_req = with_properties(req, previous);
            let before = Props::new(&prev_req).strings("Roles")?;
            let after = Props::new(req).strings("Roles")?;
            // Remove first: an instance profile holds a single role.
            for role in missing_from(&after, &before) {
                remove_role(&iam, req, name, role).await?;
            }
            for role in missing_from(&before, &after) {
                add_role(&iam, req, name, role).await?;
            }
        }
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: name.to_owned(),
            attributes: current_attributes(&iam, req, name).await?,
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        delete_profile(&client(ctx), req, physical_id).await
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let Some(profile) = get(&client(ctx), req, physical_id).await? else {
            return Ok(None);
        };
        let mut props = Map::new();
        props.insert(
            "InstanceProfileName".into(),
            Value::String(profile.instance_profile_name().to_owned()),
        );
        props.insert("Path".into(), Value::String(profile.path().to_owned()));
        props.insert(
            "Roles".into(),
            strings_value(profile.roles().iter().map(|r| r.role_name())),
        );
        props.extend(attributes(&profile));
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
