//! The shared limit on AWS calls in flight, per service, that adapts to throttling.
//!
//! Every SDK client sends through one HTTP client ([`super::trace::http_client`]); this module
//! wraps its connector so that each request first takes a slot of its service's gate (the
//! service is read from the SigV4 credential scope, `.../us-east-1/sqs/aws4_request`). The
//! walker may start hundreds of resource operations and several stacks at once; what reaches
//! a service at the same time is bounded here, once for the whole process, so independent
//! stacks and wide stacks share one budget instead of each having its own.
//!
//! The limit of each service is an AIMD controller ([`Controller`]): it starts at
//! [`INITIAL_LIMIT`]; a throttling answer (`Throttling`, `ThrottlingException`,
//! `TooManyRequests*`, `RequestLimitExceeded`, `SlowDown`, HTTP 429 / 503) halves it (once per
//! burst: the answers of calls already in flight count once) and pauses the service's new
//! calls for a backoff that doubles with each further throttled burst; every `limit` calls
//! answered without throttling raise it by one, up to [`CEILING`]. The SDK's own retry of
//! the throttled call goes through the gate again. `--concurrency` still caps each stack's
//! resource operations in the walker.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::byte_stream::ByteStream;
use tokio::sync::Notify;

/// Calls in flight per service at the start.
pub const INITIAL_LIMIT: usize = 64;
/// The highest the limit climbs back to.
pub const CEILING: usize = 256;
/// The lowest it goes: one call at a time still makes progress.
pub const FLOOR: usize = 1;
/// The first pause after a throttled burst; each further one doubles, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// How a call ended, as far as the controller cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Answered (success or an error that is not throttling).
    Answered,
    /// The service asked to slow down.
    Throttled,
}

/// The AIMD limit of one service (pure: time is passed in).
#[derive(Debug, Clone)]
pub struct Controller {
    limit: usize,
    /// Calls answered unthrottled since the last change of the limit.
    calm: usize,
    /// Throttled bursts in a row (the backoff's exponent); reset by a raise.
    bursts: u32,
    /// No new call starts before this.
    paused_until: Option<Instant>,
    /// Throttles of calls started before this instant belong to the burst already counted.
    burst_started: Option<Instant>,
}

impl Default for Controller {
    fn default() -> Self {
        Controller::new(INITIAL_LIMIT)
    }
}

impl Controller {
    pub fn new(limit: usize) -> Self {
        Controller {
            limit: limit.clamp(FLOOR, CEILING),
            calm: 0,
            bursts: 0,
            paused_until: None,
            burst_started: None,
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether a new call may start at `now` with `in_flight` calls out; otherwise, when to
    /// look again (`None`: when a call ends).
    pub fn admit(&self, in_flight: usize, now: Instant) -> Result<(), Option<Instant>> {
        if let Some(until) = self.paused_until.filter(|u| *u > now) {
            return Err(Some(until));
        }
        if in_flight < self.limit {
            Ok(())
        } else {
            Err(None)
        }
    }

    /// Records the end of a call that started at `started`.
    pub fn record(&mut self, outcome: Outcome, started: Instant, now: Instant) {
        match outcome {
            Outcome::Throttled => {
                // A call sent before the last decrease was sent at the old rate: its throttle
                // is the same burst, already answered by that decrease.
                if self.burst_started.is_some_and(|b| started < b) {
                    return;
                }
                self.limit = (self.limit / 2).max(FLOOR);
                self.calm = 0;
                let backoff = FIRST_BACKOFF
                    .saturating_mul(1u32 << self.bursts.min(16))
                    .min(MAX_BACKOFF);
                self.bursts = self.bursts.saturating_add(1);
                self.paused_until = Some(now + backoff);
                self.burst_started = Some(now);
            }
            Outcome::Answered => {
                self.calm += 1;
                if self.calm >= self.limit {
                    self.calm = 0;
                    self.bursts = 0;
                    self.limit = (self.limit + 1).min(CEILING);
                }
            }
        }
    }
}

/// One service's gate: its controller and the calls in flight.
#[derive(Default)]
struct Gate {
    state: Mutex<(Controller, usize)>,
    changed: Notify,
}

impl Gate {
    async fn enter(self: &Arc<Self>) -> Slot {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let wait = {
                let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
                let now = Instant::now();
                match st.0.admit(st.1, now) {
                    Ok(()) => {
                        st.1 += 1;
                        return Slot {
                            gate: self.clone(),
                            started: now,
                            outcome: Outcome::Answered,
                        };
                    }
                    Err(wait) => wait,
                }
            };
            match wait {
                Some(until) => tokio::time::sleep_until(until.into()).await,
                None => notified.await,
            }
        }
    }
}

/// A call's place in its service's gate; leaving (drop) records the outcome.
struct Slot {
    gate: Arc<Gate>,
    started: Instant,
    outcome: Outcome,
}

impl Drop for Slot {
    fn drop(&mut self) {
        {
            let mut st = self.gate.state.lock().unwrap_or_else(|p| p.into_inner());
            st.1 = st.1.saturating_sub(1);
            st.0.record(self.outcome, self.started, Instant::now());
        }
        self.gate.changed.notify_waiters();
    }
}

fn gates() -> &'static Mutex<HashMap<String, Arc<Gate>>> {
    static GATES: OnceLock<Mutex<HashMap<String, Arc<Gate>>>> = OnceLock::new();
    GATES.get_or_init(Default::default)
}

fn gate_for(service: &str) -> Arc<Gate> {
    let mut all = gates().lock().unwrap_or_else(|p| p.into_inner());
    all.entry(service.to_owned()).or_default().clone()
}

/// The current limit of `service`'s gate (for diagnostics and tests).
pub fn current_limit(service: &str) -> usize {
    let gate = gate_for(service);
    let st = gate.state.lock().unwrap_or_else(|p| p.into_inner());
    st.0.limit()
}

/// The signing name from a SigV4 `Authorization` header (`Credential=AK/date/region/svc/...`).
pub fn service_of(authorization: Option<&str>) -> Option<&str> {
    let scope = authorization?.split("Credential=").nth(1)?;
    let scope = scope.split([',', ' ']).next()?;
    scope.split('/').nth(3).filter(|s| !s.is_empty())
}

/// Whether an error code means "slow down".
pub fn is_throttling_code(code: &str) -> bool {
    // `Code:http://internal...` (x-amzn-ErrorType) or `namespace#Code` (awsJson `__type`).
    let code = code.split(':').next().unwrap_or(code);
    let code = code.rsplit('#').next().unwrap_or(code).trim();
    matches!(
        code,
        "Throttling"
            | "ThrottlingException"
            | "ThrottledException"
            | "TooManyRequests"
            | "TooManyRequestsException"
            | "RequestLimitExceeded"
            | "RequestThrottled"
            | "RequestThrottledException"
            | "SlowDown"
            | "PriorRequestNotComplete"
            | "ProvisionedThroughputExceededException"
            | "TransactionInProgressException"
            | "EC2ThrottledException"
            | "BandwidthLimitExceeded"
    )
}

/// Whether an error body (XML `<Code>` or JSON `__type` / `code`) names a throttling code.
pub fn body_says_throttled(body: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(body) else {
        return false;
    };
    if let Some(rest) = text.split("<Code>").nth(1) {
        if let Some(code) = rest.split("</Code>").next() {
            return is_throttling_code(code);
        }
    }
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(text) {
        for field in ["__type", "code", "Code"] {
            if let Some(code) = map.get(field).and_then(|v| v.as_str()) {
                return is_throttling_code(code);
            }
        }
    }
    false
}

/// Wraps `inner` so every request passes its service's gate.
pub fn gated(inner: SharedHttpClient) -> SharedHttpClient {
    SharedHttpClient::new(GatedClient { inner })
}

#[derive(Debug)]
struct GatedClient {
    inner: SharedHttpClient,
}

impl HttpClient for GatedClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(GatedConnector {
            inner: self.inner.http_connector(settings, components),
        })
    }
}

#[derive(Debug)]
struct GatedConnector {
    inner: SharedHttpConnector,
}

impl HttpConnector for GatedConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let service = service_of(request.headers().get("authorization"))
            .unwrap_or("unsigned")
            .to_owned();
        let inner = self.inner.clone();
        HttpConnectorFuture::new(async move {
            let mut slot = gate_for(&service).enter().await;
            let mut response = inner.call(request).await?;
            let status = response.status().as_u16();
            let throttled = match status {
                429 | 503 => true,
                400..=499 => {
                    let header = response
                        .headers()
                        .get("x-amzn-errortype")
                        .or_else(|| response.headers().get("x-amz-error-code"));
                    match header {
                        Some(code) => is_throttling_code(code),
                        None => {
                            // Query / XML protocols name the code in the (small) body only:
                            // read it here and hand the SDK the same bytes.
                            let body = response.take_body();
                            match ByteStream::new(body).collect().await {
                                Ok(bytes) => {
                                    let bytes = bytes.into_bytes();
                                    let throttled = body_says_throttled(&bytes);
                                    *response.body_mut() = SdkBody::from(bytes);
                                    throttled
                                }
                                Err(e) => {
                                    tracing::debug!("reading an error body failed: {e}");
                                    false
                                }
                            }
                        }
                    }
                }
                _ => false,
            };
            if throttled {
                slot.outcome = Outcome::Throttled;
                tracing::debug!("{service}: throttled (HTTP {status}); lowering its limit");
            }
            drop(slot);
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests;
