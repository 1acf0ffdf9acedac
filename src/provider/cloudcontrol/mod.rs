//! The Cloud Control provider: every type without a dedicated SDK provider.
//!
//! Create and update are asynchronous in Cloud Control: a request returns a token and the
//! outcome is polled. The poll starts fast (most resources finish in about a second) and backs
//! off to a cap; the SDK's generated waiters poll every 5 to 120 seconds, which would make fast
//! resources slow. After create and update, GetResource fills the attributes Fn::GetAtt reads
//! from the type's read-only properties.

mod patch;

pub use patch::{strip_nulls, update_patch};

use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_sdk_cloudcontrol::types::{OperationStatus, ProgressEvent};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::schema::{self, TypeSchema};
use super::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};
use crate::aws::{classify, AwsError, ErrorKind};

/// Poll timing for asynchronous requests.
#[derive(Debug, Clone)]
pub struct PollPolicy {
    pub first_interval: Duration,
    pub max_interval: Duration,
    /// Total time one request may take before the resource fails.
    pub timeout: Duration,
    /// How often a long request says it is still running.
    pub notice_every: Duration,
}

impl Default for PollPolicy {
    fn default() -> Self {
        PollPolicy {
            first_interval: Duration::from_millis(200),
            max_interval: Duration::from_secs(5),
            timeout: Duration::from_secs(30 * 60),
            notice_every: Duration::from_secs(60),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct CloudControlProvider {
    pub poll: PollPolicy,
}

impl CloudControlProvider {
    pub fn new() -> Self {
        CloudControlProvider::default()
    }

    fn client(ctx: &ProviderContext<'_>) -> aws_sdk_cloudcontrol::Client {
        ctx.clients.cloudcontrol(Some(ctx.region))
    }

    /// Polls a request until it succeeds or fails, within the timeout.
    async fn wait(
        &self,
        client: &aws_sdk_cloudcontrol::Client,
        req: &ResourceRequest<'_>,
        first: ProgressEvent,
    ) -> Result<ProgressEvent, ProviderError> {
        let started = Instant::now();
        let mut last_notice = started;
        let mut interval = self.poll.first_interval;
        let mut event = first;
        loop {
            match event.operation_status() {
                Some(OperationStatus::Success) => return Ok(event),
                Some(OperationStatus::Failed) | Some(OperationStatus::CancelComplete) => {
                    let code = event
                        .error_code()
                        .map(|c| c.as_str().to_owned())
                        .unwrap_or_else(|| "Failed".into());
                    let message = event.status_message().unwrap_or("no message").to_owned();
                    return Err(ProviderError::failed(
                        req,
                        format!("Cloud Control {code}: {message}"),
                    ));
                }
                _ => {}
            }
            let Some(token) = event.request_token().map(str::to_owned) else {
                return Err(ProviderError::failed(
                    req,
                    "Cloud Control returned no request token to poll",
                ));
            };
            if started.elapsed() >= self.poll.timeout {
                return Err(ProviderError::Timeout {
                    logical_id: req.logical_id.to_owned(),
                    resource_type: req.resource_type.to_owned(),
                    seconds: self.poll.timeout.as_secs(),
                    detail: format!(
                        "Cloud Control request {token} still {:?}",
                        event.operation_status()
                    ),
                });
            }
            if last_notice.elapsed() >= self.poll.notice_every {
                last_notice = Instant::now();
                crate::ui::info(format!(
                    "{} ({}) still running after {} s",
                    req.logical_id,
                    req.resource_type,
                    started.elapsed().as_secs()
                ));
            }
            let wait = event
                .retry_after()
                .and_then(|at| {
                    let secs = at.secs()
                        - aws_smithy_types::DateTime::from(std::time::SystemTime::now()).secs();
                    u64::try_from(secs).ok().map(Duration::from_secs)
                })
                .map_or(interval, |d| d.min(self.poll.max_interval).max(interval));
            tokio::time::sleep(wait).await;
            interval = (interval * 3 / 2).min(self.poll.max_interval);
            match client
                .get_resource_request_status()
                .request_token(&token)
                .send()
                .await
            {
                Ok(out) => match out.progress_event {
                    Some(next) => event = next,
                    None => {
                        return Err(ProviderError::failed(
                            req,
                            "Cloud Control returned no progress event",
                        ))
                    }
                },
                // Throttled polls just wait longer; the request itself is still running.
                Err(e) if classify(&e) == ErrorKind::Throttled => {
                    interval = (interval * 2).min(self.poll.max_interval)
                }
                Err(e) => {
                    return Err(ProviderError::aws(
                        req,
                        AwsError::call(
                            "cloudcontrol",
                            "GetResourceRequestStatus",
                            token.clone(),
                            &e,
                        ),
                    ))
                }
            }
        }
    }

    /// GetResource: the live properties, `None` when the resource does not exist.
    async fn get(
        &self,
        client: &aws_sdk_cloudcontrol::Client,
        req: &ResourceRequest<'_>,
        identifier: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let out = match client
            .get_resource()
            .type_name(req.resource_type)
            .identifier(identifier)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if classify(&e) == ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(ProviderError::aws(
                    req,
                    AwsError::call("cloudcontrol", "GetResource", identifier, &e),
                ))
            }
        };
        let text = out
            .resource_description()
            .and_then(|d| d.properties())
            .unwrap_or("{}");
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(Some(map)),
            _ => Err(ProviderError::failed(
                req,
                "Cloud Control GetResource returned properties that are not a JSON object",
            )),
        }
    }

    /// The resource as recorded: its identifier and the read-only properties as attributes.
    async fn provisioned(
        &self,
        client: &aws_sdk_cloudcontrol::Client,
        req: &ResourceRequest<'_>,
        identifier: &str,
    ) -> Result<Provisioned, ProviderError> {
        let properties = self.get(client, req, identifier).await?.unwrap_or_default();
        Ok(Provisioned {
            physical_id: identifier.to_owned(),
            attributes: attributes_from(&properties, schema::schema_for(req.resource_type)),
        })
    }
}

/// The attributes of a read, named as Fn::GetAtt names them (`Endpoint.Address`): the
/// read-only properties, and the further properties CloudFormation lets `Fn::GetAtt` read
/// (`AWS::EC2::VPC`'s `CidrBlock`) unless their value is a list of objects, which
/// `Fn::GetAtt` cannot return.
pub fn attributes_from(
    properties: &Map<String, Value>,
    schema: Option<&TypeSchema>,
) -> Map<String, Value> {
    let mut attributes = Map::new();
    let Some(schema) = schema else {
        return attributes;
    };
    // Never a write-only property (a password), whatever a read returns.
    let extra = schema
        .getatt_extra
        .iter()
        .filter(|p| !schema.write_only.contains(p))
        .map(|p| (p, true));
    for (path, checked) in schema.read_only.iter().map(|p| (p, false)).chain(extra) {
        let segments = path.segments();
        if segments.is_empty() || segments.iter().any(|s| s == "*") {
            continue;
        }
        let mut cursor = properties.get(&segments[0]);
        for segment in &segments[1..] {
            cursor = cursor.and_then(|v| v.get(segment));
        }
        let Some(value) = cursor else { continue };
        let nested = |v: &Value| v.is_array() || v.is_object();
        if checked
            && value
                .as_array()
                .is_some_and(|items| items.iter().any(nested))
        {
            continue;
        }
        attributes.insert(segments.join("."), value.clone());
    }
    attributes
}

/// A ClientToken for a create: stable for one logical id within one deploy attempt.
pub fn client_token(stack: &str, logical_id: &str, nonce: &str) -> String {
    let digest = Sha256::digest(format!("{stack}/{logical_id}/{nonce}").as_bytes());
    digest.iter().take(24).map(|b| format!("{b:02x}")).collect()
}

#[async_trait]
impl Provider for CloudControlProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[]
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let client = Self::client(ctx);
        let desired = strip_nulls(&Value::Object(req.properties.clone()));
        let token = match req.client_token {
            Some(t) => t.to_owned(),
            None => client_token(
                ctx.stack_name,
                req.logical_id,
                &crate::provider::naming::random_token(req.logical_id),
            ),
        };
        let out = client
            .create_resource()
            .type_name(req.resource_type)
            .desired_state(desired.to_string())
            .client_token(token)
            .send()
            .await
            .map_err(|e| {
                ProviderError::aws(
                    req,
                    AwsError::call("cloudcontrol", "CreateResource", req.logical_id, &e),
                )
            })?;
        let first = out.progress_event.ok_or_else(|| {
            ProviderError::failed(req, "Cloud Control returned no progress event")
        })?;
        let done = self.wait(&client, req, first).await?;
        let identifier = done.identifier().map(str::to_owned).ok_or_else(|| {
            ProviderError::failed(req, "Cloud Control reported success without an identifier")
        })?;
        self.provisioned(&client, req, &identifier).await
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        let schema = schema::schema_for(req.resource_type);
        if let Some(schema) = schema {
            for path in &schema.create_only {
                let top = path.top_level();
                if path.is_top_level()
                    && crate::provider::props::changed(previous, req.properties, top)
                {
                    return Ok(UpdateOutcome::NeedsReplacement {
                        reason: format!("{top} is create-only"),
                    });
                }
            }
        }
        let client = Self::client(ctx);
        let patch = update_patch(previous, req.properties, schema);
        if !patch.0.is_empty() {
            let document = serde_json::to_string(&patch).map_err(|e| {
                ProviderError::failed(req, format!("cannot encode the JSON patch: {e}"))
            })?;
            let out = client
                .update_resource()
                .type_name(req.resource_type)
                .identifier(physical_id)
                .patch_document(document)
                .send()
                .await
                .map_err(|e| {
                    ProviderError::aws(
                        req,
                        AwsError::call("cloudcontrol", "UpdateResource", physical_id, &e),
                    )
                })?;
            let first = out.progress_event.ok_or_else(|| {
                ProviderError::failed(req, "Cloud Control returned no progress event")
            })?;
            self.wait(&client, req, first).await?;
        }
        Ok(UpdateOutcome::Updated(
            self.provisioned(&client, req, physical_id).await?,
        ))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        let client = Self::client(ctx);
        let out = match client
            .delete_resource()
            .type_name(req.resource_type)
            .identifier(physical_id)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if classify(&e) == ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(ProviderError::aws(
                    req,
                    AwsError::call("cloudcontrol", "DeleteResource", physical_id, &e),
                ))
            }
        };
        let Some(first) = out.progress_event else {
            return Ok(());
        };
        match self.wait(&client, req, first).await {
            Ok(_) => Ok(()),
            Err(ProviderError::Failed { message, .. })
                if message.starts_with("Cloud Control NotFound") =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        self.get(&Self::client(ctx), req, physical_id).await
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        let client = Self::client(ctx);
        match self.get(&client, req, physical_id).await? {
            Some(properties) => Ok(Provisioned {
                physical_id: physical_id.to_owned(),
                attributes: attributes_from(&properties, schema::schema_for(req.resource_type)),
            }),
            None => Err(ProviderError::failed(
                req,
                format!("{physical_id} does not exist"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn attributes_are_named_as_get_att_names_them() {
        let read = map(json!({"Name": "api", "RestApiId": "a1", "RootResourceId": "r1"}));
        let got = attributes_from(&read, schema::schema_for("AWS::ApiGateway::RestApi"));
        assert_eq!(got, map(json!({"RestApiId": "a1", "RootResourceId": "r1"})));
        let read = map(
            json!({"DBInstanceIdentifier": "db", "Endpoint": {"Address": "h", "Port": "5432"}}),
        );
        let got = attributes_from(&read, schema::schema_for("AWS::RDS::DBInstance"));
        assert_eq!(got["Endpoint.Address"], "h");
        assert_eq!(got["Endpoint.Port"], "5432");
    }

    #[test]
    fn properties_get_att_also_reads_are_attributes_but_lists_of_objects_are_not() {
        let read = map(json!({
            "VpcId": "vpc-1", "CidrBlock": "10.0.0.0/16", "EnableDnsSupport": true,
            "Tags": [{"Key": "k", "Value": "v"}], "Ipv6CidrBlocks": ["::/56"]
        }));
        let got = attributes_from(&read, schema::schema_for("AWS::EC2::VPC"));
        assert_eq!(got["CidrBlock"], "10.0.0.0/16");
        assert_eq!(got["EnableDnsSupport"], true);
        assert_eq!(got["VpcId"], "vpc-1");
        assert_eq!(got["Ipv6CidrBlocks"], json!(["::/56"]));
        assert!(!got.contains_key("Tags"), "{got:?}");
        let read = map(
            json!({"DBInstanceIdentifier": "db", "MasterUserPassword": "hunter2", "Port": "3306"}),
        );
        let got = attributes_from(&read, schema::schema_for("AWS::RDS::DBInstance"));
        assert_eq!(got["Port"], "3306");
        assert!(
            !got.contains_key("MasterUserPassword"),
            "a write-only property: {got:?}"
        );
    }
}
