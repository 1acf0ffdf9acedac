//! `AWS::CloudFormation::WaitConditionHandle` and `AWS::CloudFormation::WaitCondition`, which
//! CloudFormation implements itself (no service API, no Cloud Control handler).
//!
//! A handle's physical id (and Ref) has the shape of CloudFormation's presigned wait-condition
//! URL, so templates that pass it around (user data, CDK's asset hashes) keep working; nothing
//! listens at it. A WaitCondition without a Count (or with Count 0), the way the CDK uses one,
//! is created at once with empty Data. One that waits for signals is refused, naming the
//! limitation, because no signal sent to the handle can reach cdkd.

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::envelope::stack_id;
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

pub const WAIT_CONDITION_HANDLE_TYPE: &str = "AWS::CloudFormation::WaitConditionHandle";
pub const WAIT_CONDITION_TYPE: &str = "AWS::CloudFormation::WaitCondition";

/// The handle URL CloudFormation would hand out for `logical_id` in this stack.
pub fn handle_url(ctx: &ProviderContext<'_>, logical_id: &str) -> String {
    let stack = stack_id(ctx.partition, ctx.region, ctx.account_id, ctx.stack_name);
    let host = match ctx.partition {
        "aws-cn" => format!(
            "cloudformation-waitcondition-{}.s3.{}.amazonaws.com.cn",
            ctx.region, ctx.region
        ),
        _ => format!(
            "cloudformation-waitcondition-{}.s3.{}.amazonaws.com",
            ctx.region, ctx.region
        ),
    };
    format!("https://{host}/{}/{logical_id}", encode(&stack))
}

/// Percent-encodes everything but unreserved characters, as the ARN appears in the URL path.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// WaitConditionHandle: a URL, nothing in AWS.
#[derive(Debug, Default, Clone)]
pub struct WaitConditionHandleProvider;

#[async_trait]
impl Provider for WaitConditionHandleProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[WAIT_CONDITION_HANDLE_TYPE]
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        Ok(Provisioned {
            physical_id: handle_url(ctx, req.logical_id),
            attributes: Map::new(),
        })
    }

    async fn update(
        &self,
        _ctx: &ProviderContext<'_>,
        _req: &ResourceRequest<'_>,
        physical_id: &str,
        _previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: Map::new(),
        }))
    }

    async fn delete(
        &self,
        _ctx: &ProviderContext<'_>,
        _req: &ResourceRequest<'_>,
        _physical_id: &str,
    ) -> Result<(), ProviderError> {
        Ok(())
    }

    async fn read(
        &self,
        _ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        _physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        Ok(Some(req.properties.clone()))
    }

    async fn import(
        &self,
        _ctx: &ProviderContext<'_>,
        _req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        Ok(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: Map::new(),
        })
    }
}

/// WaitCondition: a no-op unless it waits for signals, which cdkd cannot receive.
#[derive(Debug, Default, Clone)]
pub struct WaitConditionProvider;

impl WaitConditionProvider {
    fn check(req: &ResourceRequest<'_>) -> Result<(), ProviderError> {
        let count = match req.properties.get("Count") {
            None | Some(Value::Null) => 0,
            Some(Value::Number(n)) => n.as_u64().unwrap_or(0),
            Some(Value::String(s)) => s.trim().parse::<u64>().map_err(|_| {
                ProviderError::failed(req, format!("Count {s:?} is not a whole number"))
            })?,
            Some(other) => {
                return Err(ProviderError::failed(
                    req,
                    format!("Count {other} is not a whole number"),
                ))
            }
        };
        if count > 0 {
            return Err(ProviderError::failed(
                req,
                format!(
                    "it waits for {count} signal(s) sent to its handle, and no signal can reach \
                     cdkd (there is no CloudFormation stack behind the handle URL); remove Count \
                     or the wait condition"
                ),
            ));
        }
        Ok(())
    }

    fn provisioned(ctx: &ProviderContext<'_>, req: &ResourceRequest<'_>) -> Provisioned {
        let mut attributes = Map::new();
        // Fn::GetAtt Data: the signals' data as a JSON object, here none.
        attributes.insert("Data".into(), Value::String("{}".into()));
        Provisioned {
            physical_id: format!(
                "{}/{}",
                stack_id(ctx.partition, ctx.region, ctx.account_id, ctx.stack_name),
                req.logical_id
            ),
            attributes,
        }
    }
}

#[async_trait]
impl Provider for WaitConditionProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[WAIT_CONDITION_TYPE]
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        Self::check(req)?;
        Ok(Self::provisioned(ctx, req))
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        _physical_id: &str,
        _previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        Self::check(req)?;
        Ok(UpdateOutcome::Updated(Self::provisioned(ctx, req)))
    }

    async fn delete(
        &self,
        _ctx: &ProviderContext<'_>,
        _req: &ResourceRequest<'_>,
        _physical_id: &str,
    ) -> Result<(), ProviderError> {
        Ok(())
    }

    async fn read(
        &self,
        _ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        _physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        Ok(Some(req.properties.clone()))
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        _physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        Ok(Self::provisioned(ctx, req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arns_are_percent_encoded_in_the_handle_path() {
        assert_eq!(
            encode("arn:aws:cloudformation:us-east-1:1:stack/S/x"),
            "arn%3Aaws%3Acloudformation%3Aus-east-1%3A1%3Astack%2FS%2Fx"
        );
    }
}
