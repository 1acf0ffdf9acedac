//! `AWS::IAM::Role`: physical id and `Ref` = the role name; `Fn::GetAtt` `Arn` and `RoleId`.

use async_trait::async_trait;
use aws_sdk_iam::types::Tag;
use serde_json::{Map, Value};

use super::{
    aws_error, client, decode_document, invalid_principal, is_not_found, missing_from,
    replacement_reason, strings_value, tag_changes, tags_value, with_properties, with_retry,
    with_retry_when,
};
use crate::provider::naming;
use crate::provider::props::{changed, Props};
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const TYPE: &str = "AWS::IAM::Role";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const ROLE_PROPERTIES: &[&str] = &[
    "AssumeRolePolicyDocument",
    "Description",
    "ManagedPolicyArns",
    "MaxSessionDuration",
    "Path",
    "PermissionsBoundary",
    "Policies",
    "RoleName",
    "Tags",
];
/// IAM's default when `MaxSessionDuration` is not given.
const DEFAULT_MAX_SESSION_SECONDS: i32 = 3600;

pub struct RoleProvider;

/// One entry of `Policies`: an inline policy embedded in the role.
#[derive(Debug, Clone, PartialEq)]
struct InlinePolicy {
    name: String,
    document: Value,
}

impl InlinePolicy {
    fn document_string(&self) -> String {
        match &self.document {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

fn inline_policies(req: &ResourceRequest<'_>) -> Result<Vec<InlinePolicy>, ProviderError> {
    let Some(items) = Props::new(req).list("Policies")? else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .map(|item| {
            let name = item.get("PolicyName").and_then(Value::as_str);
            let document = item.get("PolicyDocument").filter(|d| !d.is_null());
            match (name, document) {
                (Some(name), Some(document)) => Ok(InlinePolicy {
                    name: name.to_owned(),
                    document: document.clone(),
                }),
                _ => Err(ProviderError::failed(
                    req,
                    "property Policies must be a list of {PolicyName, PolicyDocument}",
                )),
            }
        })
        .collect()
}

fn iam_tags(
    req: &ResourceRequest<'_>,
    tags: &[(String, String)],
) -> Result<Vec<Tag>, ProviderError> {
    tags.iter()
        .map(|(k, v)| {
            Tag::builder()
                .key(k)
                .value(v)
                .build()
                .map_err(|e| ProviderError::failed(req, format!("invalid tag {k}: {e}")))
        })
        .collect()
}

fn attributes(arn: &str, role_id: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), Value::String(arn.to_owned()));
    attributes.insert("RoleId".into(), Value::String(role_id.to_owned()));
    attributes
}

impl RoleProvider {
    async fn get_attributes(
        &self,
        iam: &aws_sdk_iam::Client,
        req: &ResourceRequest<'_>,
        name: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        match iam.get_role().role_name(name).send().await {
            Ok(out) => Ok(out.role().map(|r| attributes(r.arn(), r.role_id()))),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(aws_error(req, "iam", "GetRole", name, &e)),
        }
    }

    async fn put_policy(
        &self,
        iam: &aws_sdk_iam::Client,
        req: &ResourceRequest<'_>,
        name: &str,
        policy: &InlinePolicy,
    ) -> Result<(), ProviderError> {
        let document = policy.document_string();
        with_retry(|| {
            iam.put_role_policy()
                .role_name(name)
                .policy_name(&policy.name)
                .policy_document(&document)
                .send()
        })
        .await
        .map_err(|e| {
            aws_error(
                req,
                "iam",
                "PutRolePolicy",
                format!("{name}/{}", policy.name),
                &e,
            )
        })?;
        Ok(())
    }

    async fn attach(
        &self,
        iam: &aws_sdk_iam::Client,
        req: &ResourceRequest<'_>,
        name: &str,
        arn: &str,
    ) -> Result<(), ProviderError> {
        with_retry(|| {
            iam.attach_role_policy()
                .role_name(name)
                .policy_arn(arn)
                .send()
        })
        .await
        .map_err(|e| {
            aws_error(
                req,
                "iam",
                "AttachRolePolicy",
                format!("{name} ({arn})"),
                &e,
            )
        })?;
        Ok(())
    }

    /// Removes what a role must not have when it is deleted: its managed policy attachments
    /// and inline policies. Returns false when the role does not exist.
    async fn strip(
        &self,
        iam: &aws_sdk_iam::Client,
        req: &ResourceRequest<'_>,
        name: &str,
    ) -> Result<bool, ProviderError> {
        let attached = match iam
            .list_attached_role_policies()
            .role_name(name)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
        {
            Ok(a) => a,
            Err(e) if is_not_found(&e) => return Ok(false),
            Err(e) => return Err(aws_error(req, "iam", "ListAttachedRolePolicies", name, &e)),
        };
        for policy in attached {
            let Some(arn) = policy.policy_arn() else {
                continue;
            };
            match with_retry(|| {
                iam.detach_role_policy()
                    .role_name(name)
                    .policy_arn(arn)
                    .send()
            })
            .await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => {
                    return Err(aws_error(
                        req,
                        "iam",
                        "DetachRolePolicy",
                        format!("{name} ({arn})"),
                        &e,
                    ))
                }
            }
        }
        let inline = match iam
            .list_role_policies()
            .role_name(name)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
        {
            Ok(names) => names,
            Err(e) if is_not_found(&e) => return Ok(false),
            Err(e) => return Err(aws_error(req, "iam", "ListRolePolicies", name, &e)),
        };
        for policy in inline {
            match with_retry(|| {
                iam.delete_role_policy()
                    .role_name(name)
                    .policy_name(&policy)
                    .send()
            })
            .await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => {
                    return Err(aws_error(
                        req,
                        "iam",
                        "DeleteRolePolicy",
                        format!("{name}/{policy}"),
                        &e,
                    ))
                }
            }
        }
        Ok(true)
    }

    async fn delete_role(
        &self,
        iam: &aws_sdk_iam::Client,
        req: &ResourceRequest<'_>,
        name: &str,
    ) -> Result<(), ProviderError> {
        if !self.strip(iam, req, name).await? {
            return Ok(());
        }
        match with_retry(|| iam.delete_role().role_name(name).send()).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(aws_error(req, "iam", "DeleteRole", name, &e)),
        }
    }

    /// Attaches the managed policies and puts the inline policies of a new role.
    async fn furnish(
        &self,
        iam: &aws_sdk_iam::Client,
        req: &ResourceRequest<'_>,
        name: &str,
    ) -> Result<(), ProviderError> {
        let p = Props::new(req);
        for arn in p.strings("ManagedPolicyArns")? {
            self.attach(iam, req, name, &arn).await?;
        }
        for policy in inline_policies(req)? {
            self.put_policy(iam, req, name, &policy).await?;
        }
        Ok(())
    }
}

#[async_trait]
impl Provider for RoleProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[TYPE]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(ROLE_PROPERTIES.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let p = Props::new(req);
        let assume = p
            .json_document("AssumeRolePolicyDocument")?
            .ok_or_else(|| ProviderError::missing(req, "AssumeRolePolicyDocument"))?;
        let name = match p.str("RoleName")? {
            Some(n) => n,
            None => naming::generate(ctx.stack_name, req.logical_id, naming::IAM_NAME),
        };
        let iam = client(ctx);
        let mut call = iam
            .create_role()
            .role_name(&name)
            .assume_role_policy_document(assume)
            .set_path(p.str("Path")?)
            .set_description(p.str("Description")?)
            .set_permissions_boundary(p.str("PermissionsBoundary")?)
            .set_tags(Some(iam_tags(req, &p.tags()?)?).filter(|t| !t.is_empty()));
        if let Some(seconds) = p.i64("MaxSessionDuration")? {
            let seconds = i32::try_from(seconds).map_err(|_| {
                ProviderError::failed(req, "property MaxSessionDuration is out of range")
            })?;
            call = call.max_session_duration(seconds);
        }
        // A trust policy naming a principal created moments ago fails until it propagates.
        let out = with_retry_when(|| call.clone().send(), invalid_principal)
            .await
            .map_err(|e| aws_error(req, "iam", "CreateRole", &name, &e))?;
        let role = out.role().ok_or_else(|| {
            ProviderError::failed(req, format!("IAM CreateRole returned no role for {name}"))
        })?;
        let attributes = attributes(role.arn(), role.role_id());
        if let Err(err) = self.furnish(&iam, req, &name).await {
            // Do not leave a half-made role behind: nothing recorded it.
            if let Err(cleanup) = self.delete_role(&iam, req, &name).await {
                tracing::warn!("could not remove the partly created role {name}: {cleanup}");
            }
            return Err(err);
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
        let desired = req.properties;
        let p = Props::new(req);
        let prev_req = with_properties(req, previous);
        let prev = Props::new(&prev_req);

        if changed(previous, desired, "AssumeRolePolicyDocument") {
            let doc = p
                .json_document("AssumeRolePolicyDocument")?
                .ok_or_else(|| ProviderError::missing(req, "AssumeRolePolicyDocument"))?;
            with_retry_when(
                || {
                    iam.update_assume_role_policy()
                        .role_name(name)
                        .policy_document(&doc)
                        .send()
                },
                invalid_principal,
            )
            .await
            .map_err(|e| aws_error(req, "iam", "UpdateAssumeRolePolicy", name, &e))?;
        }

        if changed(previous, desired, "Description")
            || changed(previous, desired, "MaxSessionDuration")
        {
            let seconds = match p.i64("MaxSessionDuration")? {
                Some(s) => i32::try_from(s).map_err(|_| {
                    ProviderError::failed(req, "property MaxSessionDuration is out of range")
                })?,
                None => DEFAULT_MAX_SESSION_SECONDS,
            };
            let description = p.str("Description")?.unwrap_or_default();
            with_retry(|| {
                iam.update_role()
                    .role_name(name)
                    .description(&description)
                    .max_session_duration(seconds)
                    .send()
            })
            .await
            .map_err(|e| aws_error(req, "iam", "UpdateRole", name, &e))?;
        }

        if changed(previous, desired, "PermissionsBoundary") {
            match p.str("PermissionsBoundary")? {
                Some(arn) => {
                    with_retry(|| {
                        iam.put_role_permissions_boundary()
                            .role_name(name)
                            .permissions_boundary(&arn)
                            .send()
                    })
                    .await
                    .map_err(|e| aws_error(req, "iam", "PutRolePermissionsBoundary", name, &e))?;
                }
                None => match with_retry(|| {
                    iam.delete_role_permissions_boundary()
                        .role_name(name)
                        .send()
                })
                .await
                {
                    Ok(_) => {}
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => {
                        return Err(aws_error(
                            req,
                            "iam",
                            "DeleteRolePermissionsBoundary",
                            name,
                            &e,
                        ))
                    }
                },
            }
        }

        if changed(previous, desired, "ManagedPolicyArns") {
            let before = prev.strings("ManagedPolicyArns")?;
            let after = p.strings("ManagedPolicyArns")?;
            for arn in missing_from(&before, &after) {
                self.attach(&iam, req, name, arn).await?;
            }
            for arn in missing_from(&after, &before) {
                match with_retry(|| {
                    iam.detach_role_policy()
                        .role_name(name)
                        .policy_arn(arn)
                        .send()
                })
                .await
                {
                    Ok(_) => {}
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => {
                        return Err(aws_error(
                            req,
                            "iam",
                            "DetachRolePolicy",
                            format!("{name} ({arn})"),
                            &e,
                        ))
                    }
                }
            }
        }

        if changed(previous, desired, "Policies") {
            let before = inline_policies(&prev_req)?;
            let after = inline_policies(req)?;
            for policy in after.iter().filter(|p| !before.contains(p)) {
                self.put_policy(&iam, req, name, policy).await?;
            }
            for old in before
                .iter()
                .filter(|b| !after.iter().any(|a| a.name == b.name))
            {
                match with_retry(|| {
                    iam.delete_role_policy()
                        .role_name(name)
                        .policy_name(&old.name)
                        .send()
                })
                .await
                {
                    Ok(_) => {}
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => {
                        return Err(aws_error(
                            req,
                            "iam",
                            "DeleteRolePolicy",
                            format!("{name}/{}", old.name),
                            &e,
                        ))
                    }
                }
            }
        }

        if changed(previous, desired, "Tags") {
            let (remove, set) = tag_changes(&prev.tags()?, &p.tags()?);
            if !remove.is_empty() {
                with_retry(|| {
                    iam.untag_role()
                        .role_name(name)
                        .set_tag_keys(Some(remove.clone()))
                        .send()
                })
                .await
                .map_err(|e| aws_error(req, "iam", "UntagRole", name, &e))?;
            }
            if !set.is_empty() {
                let tags = iam_tags(req, &set)?;
                with_retry(|| {
                    iam.tag_role()
                        .role_name(name)
                        .set_tags(Some(tags.clone()))
                        .send()
                })
                .await
                .map_err(|e| aws_error(req, "iam", "TagRole", name, &e))?;
            }
        }

        let attributes = self
            .get_attributes(&iam, req, name)
            .await?
            .ok_or_else(|| ProviderError::failed(req, format!("role {name} does not exist")))?;
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: name.to_owned(),
            attributes,
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        self.delete_role(&client(ctx), req, physical_id).await
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let iam = client(ctx);
        let name = physical_id;
        let out = match iam.get_role().role_name(name).send().await {
            Ok(out) => out,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(aws_error(req, "iam", "GetRole", name, &e)),
        };
        let Some(role) = out.role() else {
            return Ok(None);
        };
        let mut props = Map::new();
        props.insert(
            "RoleName".into(),
            Value::String(role.role_name().to_owned()),
        );
        props.insert("Path".into(), Value::String(role.path().to_owned()));
        if let Some(doc) = role.assume_role_policy_document() {
            props.insert("AssumeRolePolicyDocument".into(), decode_document(doc));
        }
        if let Some(d) = role.description().filter(|d| !d.is_empty()) {
            props.insert("Description".into(), Value::String(d.to_owned()));
        }
        if let Some(s) = role.max_session_duration() {
            props.insert("MaxSessionDuration".into(), Value::from(s));
        }
        if let Some(arn) = role
            .permissions_boundary()
            .and_then(|b| b.permissions_boundary_arn())
        {
            props.insert("PermissionsBoundary".into(), Value::String(arn.to_owned()));
        }

        let attached = iam
            .list_attached_role_policies()
            .role_name(name)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| aws_error(req, "iam", "ListAttachedRolePolicies", name, &e))?;
        let arns: Vec<&str> = attached.iter().filter_map(|a| a.policy_arn()).collect();
        if !arns.is_empty() {
            props.insert("ManagedPolicyArns".into(), strings_value(arns));
        }

        let inline = iam
            .list_role_policies()
            .role_name(name)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| aws_error(req, "iam", "ListRolePolicies", name, &e))?;
        let mut policies = Vec::new();
        for policy in inline {
            let doc = iam
                .get_role_policy()
                .role_name(name)
                .policy_name(&policy)
                .send()
                .await
                .map_err(|e| {
                    aws_error(req, "iam", "GetRolePolicy", format!("{name}/{policy}"), &e)
                })?;
            policies.push(serde_json::json!({
                "PolicyName": policy,
                "PolicyDocument": decode_document(doc.policy_document()),
            }));
        }
        if !policies.is_empty() {
            props.insert("Policies".into(), Value::Array(policies));
        }

        let tags = iam
            .list_role_tags()
            .role_name(name)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| aws_error(req, "iam", "ListRoleTags", name, &e))?;
        if !tags.is_empty() {
            props.insert(
                "Tags".into(),
                tags_value(tags.into_iter().map(|t| (t.key, t.value))),
            );
        }
        props.insert("Arn".into(), Value::String(role.arn().to_owned()));
        props.insert("RoleId".into(), Value::String(role.role_id().to_owned()));
        Ok(Some(props))
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        let attributes = self
            .get_attributes(&client(ctx), req, physical_id)
            .await?
            .ok_or_else(|| {
                ProviderError::failed(req, format!("role {physical_id} does not exist"))
            })?;
        Ok(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes,
        })
    }
}
