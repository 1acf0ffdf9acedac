//! Custom resources (`AWS::CloudFormation::CustomResource` and `Custom::*`) and the
//! CloudFormation wait-condition types, which CloudFormation itself implements rather than a
//! service API.
//!
//! A custom resource is whatever its handler does: cdkd sends the handler CloudFormation's
//! request envelope (Create / Update / Delete), by invoking the Lambda function or publishing
//! to the SNS topic its ServiceToken names, and waits for the cfn-response the handler PUTs to
//! the envelope's ResponseURL, a presigned URL into the state bucket ([`responses`]). SUCCESS
//! gives the physical id and, from Data, the attributes Fn::GetAtt reads; FAILED is an error
//! carrying the handler's Reason. The CDK provider framework is a Lambda like any other.
//!
//! Where cdkd departs from CloudFormation, it says so here:
//! - the Lambda is invoked synchronously (CloudFormation invokes it asynchronously), so a
//!   handler that crashes without answering fails the operation at once instead of after the
//!   timeout; the answer still comes only through the ResponseURL;
//! - an Update answered with a NEW PhysicalResourceId means the handler replaced the resource;
//!   CloudFormation sends the old one its Delete in the cleanup phase at the end of the stack
//!   update, cdkd sends it right after the Update (a failed cleanup Delete warns, as
//!   CloudFormation's cleanup failures do not fail the update);
//! - a Delete whose function or topic no longer exists is treated as done, with a warning,
//!   instead of waiting an hour for an answer that cannot come;
//! - a NoEcho response has every string in its Data recorded as `***`; the real values stay
//!   in this process only ([`unmasked_data`]), for same-deploy readers.

pub mod envelope;
pub mod responses;
pub mod service_token;
pub mod wait_condition;

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};

use self::envelope::{parse_response, recorded_attributes, Request, RequestType, Response, Status};
use self::responses::{Polling, ResponseBucket};
use self::service_token::{invoke_lambda, publish_sns, Delivered, Target};
use super::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};
use crate::ui;

pub use self::responses::ResponseBucket as CustomResourceResponses;

/// The generic custom-resource type; any `Custom::*` type is one too.
pub const CUSTOM_RESOURCE_TYPE: &str = "AWS::CloudFormation::CustomResource";
/// How long cdkd waits for a handler's answer unless told otherwise (CloudFormation's hour).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);
const FIRST_POLL: Duration = Duration::from_millis(200);
const MAX_POLL: Duration = Duration::from_secs(5);
/// How much longer than the wait the presigned URL stays valid, for a slow handler's PUT.
const URL_GRACE: Duration = Duration::from_secs(900);

/// Whether `resource_type` is a custom resource.
pub fn is_custom_type(resource_type: &str) -> bool {
    resource_type == CUSTOM_RESOURCE_TYPE || resource_type.starts_with("Custom::")
}

/// The custom-resource timeout from `CDKD_CUSTOM_RESOURCE_TIMEOUT` (whole seconds), else
/// [`DEFAULT_TIMEOUT`]; a value that is not a positive number of seconds warns and is ignored.
pub fn timeout_from_env() -> Duration {
    let Ok(raw) = std::env::var(crate::env::CDKD_CUSTOM_RESOURCE_TIMEOUT) else {
        return DEFAULT_TIMEOUT;
    };
    match raw.trim().parse::<u64>() {
        Ok(secs) if secs > 0 => Duration::from_secs(secs),
        _ => {
            ui::warn(format!(
                "{}={raw:?} is not a positive number of seconds; using {} s",
                crate::env::CDKD_CUSTOM_RESOURCE_TIMEOUT,
                DEFAULT_TIMEOUT.as_secs()
            ));
            DEFAULT_TIMEOUT
        }
    }
}

/// Real NoEcho Data by (stack, logical id).
type Vault = Mutex<HashMap<(String, String), Map<String, Value>>>;

fn vault() -> &'static Vault {
    static VAULT: OnceLock<Vault> = OnceLock::new();
    VAULT.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The real Data of a NoEcho response this process received for `logical_id` in `stack` (its
/// recorded attributes hold `***`).
pub fn unmasked_data(stack: &str, logical_id: &str) -> Option<Map<String, Value>> {
    vault()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&(stack.to_owned(), logical_id.to_owned()))
        .cloned()
}

/// A response placeholder removed in the background when its wait is dropped unfinished
/// (`--resource-timeout` ended it).
struct Placeholder {
    bucket: Option<ResponseBucket>,
    key: String,
}

impl Drop for Placeholder {
    fn drop(&mut self) {
        let Some(bucket) = self.bucket.take() else {
            return;
        };
        let key = std::mem::take(&mut self.key);
        // Awaited before the process exits (lib.rs drains these).
        crate::state::deferred::spawn(async move { bucket.remove(&key).await });
    }
}

/// Lambda- and SNS-backed custom resources.
#[derive(Clone, Debug)]
pub struct CustomResourceProvider {
    responses: Option<ResponseBucket>,
    polling: Polling,
}

/// How a handler answered one request.
enum Reply {
    Answered(Target, Response),
    /// The function or topic does not exist.
    Gone(Target),
}

/// What the response path produced.
enum Answer {
    Body(Vec<u8>),
    Gone,
}

impl CustomResourceProvider {
    /// Handlers answer into `responses` (the state bucket). Without one, into the bucket the
    /// process registered ([`responses::set_process_default`]), else every custom resource is
    /// refused with an error that says so.
    pub fn new(responses: Option<ResponseBucket>) -> Self {
        CustomResourceProvider {
            responses,
            polling: Polling {
                first: FIRST_POLL,
                max: MAX_POLL,
                timeout: DEFAULT_TIMEOUT,
            },
        }
    }

    /// How long to wait for a handler's answer.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.polling.timeout = timeout;
        self
    }

    /// The first poll interval and the most it backs off to.
    pub fn with_polling(mut self, first: Duration, max: Duration) -> Self {
        self.polling.first = first;
        self.polling.max = max.max(first);
        self
    }

    /// Sends one request and returns the handler's parsed answer (`None`: the handler is gone).
    async fn send(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        request_type: RequestType,
        physical_id: Option<&str>,
        old_properties: Option<&Map<String, Value>>,
    ) -> Result<Reply, ProviderError> {
        let token = req
            .properties
            .get("ServiceToken")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ProviderError::missing(req, "ServiceToken"))?;
        let target = Target::parse(token).ok_or_else(|| {
            ProviderError::failed(
                req,
                format!(
                    "ServiceToken {token} is neither a Lambda function ARN nor an SNS topic ARN"
                ),
            )
        })?;
        let fallback;
        let bucket = match &self.responses {
            Some(b) => b,
            None => {
                fallback = responses::process_default().ok_or_else(|| {
                    ProviderError::failed(
                        req,
                        "no state bucket is configured for custom-resource responses (a cdkd \
                         bug when it happens in a command that connects to the state bucket)",
                    )
                })?;
                &fallback
            }
        };
        let request_id = envelope::new_request_id(req.logical_id);
        let key = bucket.key(&request_id);
        let url = bucket
            .prepare(&key, self.polling.timeout + URL_GRACE)
            .await
            .map_err(|e| ProviderError::aws(req, e))?;
        let stack_id =
            envelope::stack_id(ctx.partition, ctx.region, ctx.account_id, ctx.stack_name);
        let payload = Request {
            request_type,
            service_token: token,
            response_url: &url,
            stack_id: &stack_id,
            request_id: &request_id,
            resource_type: req.resource_type,
            logical_id: req.logical_id,
            physical_id,
            properties: req.properties,
            old_properties,
        }
        .to_json()
        .to_string();
        tracing::debug!(
            "{}: {} request {request_id} to {}",
            req.logical_id,
            request_type.as_str(),
            target.describe()
        );

        // A wait cut short by `--resource-timeout` drops this future: the guard still
        // removes the placeholder then.
        let mut placeholder = Placeholder {
            bucket: Some(bucket.clone()),
            key: key.clone(),
        };
        let answer = self
            .deliver_and_wait(ctx, req, &target, bucket, &key, &payload)
            .await;
        placeholder.bucket = None;
        bucket.remove(&key).await;
        let answer = match answer? {
            Some(Answer::Body(body)) => body,
            Some(Answer::Gone) => return Ok(Reply::Gone(target)),
            None => {
                return Err(ProviderError::Timeout {
                    logical_id: req.logical_id.to_owned(),
                    resource_type: req.resource_type.to_owned(),
                    seconds: self.polling.timeout.as_secs(),
                    detail: format!(
                        "the handler ({}) sent no response to its ResponseURL ({}) for the {} \
                         request; check the handler's logs, or set {} to wait longer",
                        target.describe(),
                        bucket.s3_url(&key),
                        request_type.as_str(),
                        crate::env::CDKD_CUSTOM_RESOURCE_TIMEOUT
                    ),
                })
            }
        };
        let response = parse_response(&answer, &request_id)
            .map_err(|e| ProviderError::failed(req, format!("{e} ({})", target.describe())))?;
        if response.status == Status::Failed {
            return Err(ProviderError::failed(
                req,
                format!(
                    "the {} request failed: the handler ({}) answered FAILED: {}",
                    request_type.as_str(),
                    target.describe(),
                    response.reason.as_deref().unwrap_or("(no Reason given)")
                ),
            ));
        }
        Ok(Reply::Answered(target, response))
    }

    /// Delivers `payload` and waits for the answer; `Ok(None)` on timeout.
    async fn deliver_and_wait(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        target: &Target,
        bucket: &ResponseBucket,
        key: &str,
        payload: &str,
    ) -> Result<Option<Answer>, ProviderError> {
        let aws = |e| ProviderError::aws(req, e);
        let waiting = bucket.wait(key, self.polling);
        tokio::pin!(waiting);
        match target {
            Target::Sns { arn, region } => {
                let delivered = publish_sns(ctx.clients, arn, region, payload)
                    .await
                    .map_err(aws)?;
                if delivered == Delivered::Gone {
                    return Ok(Some(Answer::Gone));
                }
                Ok(waiting.await.map_err(aws)?.map(Answer::Body))
            }
            Target::Lambda { arn, region } => {
                let delivering = invoke_lambda(ctx.clients, arn, region, payload.as_bytes());
                tokio::pin!(delivering);
                let mut delivered = false;
                loop {
                    tokio::select! {
                        d = &mut delivering, if !delivered => {
                            delivered = true;
                            match d.map_err(aws)? {
                                Delivered::Sent => continue,
                                Delivered::Gone => return Ok(Some(Answer::Gone)),
                                Delivered::FunctionError { kind, detail } => {
                                    // It may have answered before it failed.
                                    if let Some(body) = bucket.read(key).await.map_err(aws)? {
                                        return Ok(Some(Answer::Body(body)));
                                    }
                                    return Err(ProviderError::failed(
                                        req,
                                        format!(
                                            "the handler ({}) failed without answering: \
                                             {kind}: {detail}",
                                            target.describe()
                                        ),
                                    ));
                                }
                            }
                        }
                        w = &mut waiting => return Ok(w.map_err(aws)?.map(Answer::Body)),
                    }
                }
            }
        }
    }

    /// The attributes to record, keeping NoEcho Data's real values in this process only.
    fn attributes(
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        response: &Response,
    ) -> Map<String, Value> {
        let key = (ctx.stack_name.to_owned(), req.logical_id.to_owned());
        let mut vault = vault().lock().unwrap_or_else(|p| p.into_inner());
        if response.no_echo {
            vault.insert(key, response.data.clone());
        } else {
            vault.remove(&key);
        }
        recorded_attributes(response)
    }
}

/// The answer of a Create or Update, whose handler must exist.
fn answered(req: &ResourceRequest<'_>, reply: Reply) -> Result<(Target, Response), ProviderError> {
    match reply {
        Reply::Answered(target, response) => Ok((target, response)),
        Reply::Gone(target) => Err(ProviderError::failed(
            req,
            format!("its handler ({}) does not exist", target.describe()),
        )),
    }
}

fn gone_warning(req: &ResourceRequest<'_>, target: &Target) {
    ui::warn(format!(
        "{}: the custom resource's handler ({}) no longer exists; treating the Delete as done \
         (whatever the handler managed is left as it is)",
        req.logical_id,
        target.describe()
    ));
}

#[async_trait]
impl Provider for CustomResourceProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[CUSTOM_RESOURCE_TYPE]
    }

    /// A handler has the whole response timeout to answer (plus the delivery), so the global
    /// `--resource-timeout` does not cut it short; `--resource-timeout Custom::X=...` does.
    fn min_operation_timeout(&self) -> Option<Duration> {
        Some(self.polling.timeout + Duration::from_secs(60))
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let (target, response) = answered(
            req,
            self.send(ctx, req, RequestType::Create, None, None).await?,
        )?;
        let Some(physical_id) = response.physical_id.clone() else {
            return Err(ProviderError::failed(
                req,
                format!(
                    "the handler ({}) answered SUCCESS without a PhysicalResourceId",
                    target.describe()
                ),
            ));
        };
        Ok(Provisioned {
            physical_id,
            attributes: Self::attributes(ctx, req, &response),
        })
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        let old_token = previous.get("ServiceToken").and_then(Value::as_str);
        let new_token = req.properties.get("ServiceToken").and_then(Value::as_str);
        if let (Some(old), Some(new)) = (old_token, new_token) {
            if old != new {
                return Err(ProviderError::failed(
                    req,
                    format!(
                        "its ServiceToken changed from {old} to {new}; CloudFormation does not \
                         allow modifying a service token either: keep the old one, or give the \
                         resource a new logical id so it is replaced"
                    ),
                ));
            }
        }
        let (target, response) = answered(
            req,
            self.send(
                ctx,
                req,
                RequestType::Update,
                Some(physical_id),
                Some(previous),
            )
            .await?,
        )?;
        let new_id = response
            .physical_id
            .clone()
            .unwrap_or_else(|| physical_id.to_owned());
        let attributes = Self::attributes(ctx, req, &response);
        if new_id != physical_id {
            ui::info(format!(
                "{}: the handler ({}) replaced {physical_id} with {new_id}; sending Delete for \
                 the old one",
                req.logical_id,
                target.describe()
            ));
            let old_req = ResourceRequest {
                properties: previous,
                ..req.clone()
            };
            if let Err(e) = self.delete(ctx, &old_req, physical_id).await {
                ui::warn(format!(
                    "{}: cleanup Delete of the replaced physical resource {physical_id} failed \
                     ({e}); the update stands, delete what the handler manages by hand",
                    req.logical_id
                ));
            }
        }
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: new_id,
            attributes,
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        match self
            .send(ctx, req, RequestType::Delete, Some(physical_id), None)
            .await?
        {
            Reply::Answered(..) => Ok(()),
            Reply::Gone(target) => {
                gone_warning(req, &target);
                Ok(())
            }
        }
    }

    async fn read(
        &self,
        _ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        _physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        // There is nothing to read: a custom resource is what its handler was last told.
        Ok(Some(req.properties.clone()))
    }

    async fn import(
        &self,
        _ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        _physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        Err(ProviderError::failed(
            req,
            "a custom resource cannot be imported (CloudFormation cannot import one either); \
             deploy it so its handler runs",
        ))
    }
}
