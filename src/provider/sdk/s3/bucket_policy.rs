//! `AWS::S3::BucketPolicy`: physical id and `Ref` = the bucket name (the type's primary
//! identifier); no `Fn::GetAtt` attributes. `PolicyDocument` updates in place; another
//! `Bucket` replaces the policy.

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::super::iam::{
    aws_error, decode_document, invalid_principal, is_not_found, replacement_reason,
    with_retry_when,
};
use super::not_configured;
use crate::provider::props::{changed, Props};
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const TYPE: &str = "AWS::S3::BucketPolicy";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const BUCKET_POLICY_PROPERTIES: &[&str] = &["Bucket", "PolicyDocument"];

pub struct BucketPolicyProvider;

async fn put(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    bucket: &str,
) -> Result<(), ProviderError> {
    let document = Props::new(req)
        .json_document("PolicyDocument")?
        .ok_or_else(|| ProviderError::missing(req, "PolicyDocument"))?;
    let s3 = ctx.clients.s3(Some(ctx.region));
    // A principal created moments ago (a new role) is "invalid" to S3 until it propagates.
    with_retry_when(
        || {
            s3.put_bucket_policy()
                .bucket(bucket)
                .policy(&document)
                .send()
        },
        invalid_principal,
    )
    .await
    .map(drop)
    .map_err(|e| aws_error(req, "s3", "PutBucketPolicy", bucket, &e))
}

#[async_trait]
impl Provider for BucketPolicyProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[TYPE]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(BUCKET_POLICY_PROPERTIES.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let bucket = Props::new(req).required_str("Bucket")?;
        put(ctx, req, &bucket).await?;
        Ok(Provisioned {
            physical_id: bucket,
            attributes: Map::new(),
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
        if changed(previous, req.properties, "PolicyDocument") {
            put(ctx, req, physical_id).await?;
        }
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: Map::new(),
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        let s3 = ctx.clients.s3(Some(ctx.region));
        match s3.delete_bucket_policy().bucket(physical_id).send().await {
            Err(e) if !is_not_found(&e) && !not_configured(&e) => {
                Err(aws_error(req, "s3", "DeleteBucketPolicy", physical_id, &e))
            }
            _ => Ok(()),
        }
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let s3 = ctx.clients.s3(Some(ctx.region));
        let policy = match s3.get_bucket_policy().bucket(physical_id).send().await {
            Ok(out) => out.policy,
            Err(e) if is_not_found(&e) || not_configured(&e) => None,
            Err(e) => return Err(aws_error(req, "s3", "GetBucketPolicy", physical_id, &e)),
        };
        Ok(policy.map(|doc| {
            let mut props = Map::new();
            props.insert("Bucket".into(), Value::String(physical_id.to_owned()));
            props.insert("PolicyDocument".into(), decode_document(&doc));
            props
        }))
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
                format!("bucket {physical_id} has no bucket policy"),
            ));
        }
        Ok(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: Map::new(),
        })
    }
}
