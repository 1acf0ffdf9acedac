//! An optional trace of every AWS call, for the benchmark: with `CDKD_TRACE_FILE` set, each
//! HTTP request the SDK sends is written as one JSON line (start and end in ms since the
//! process started, the operation, the status, and the stack / logical id of the resource
//! operation that made it), and so is each finished resource operation (with its
//! dependencies). Calls are attributed through a task-local set around each resource
//! operation, and counted by wrapping the SDK's HTTP client, so no provider needs to know.
//!
//! Without the variable nothing is wrapped and [`scoped`] is a plain await. Either way every
//! SDK client shares one HTTP client ([`http_client`]).

use std::fs::File;
use std::future::Future;
use std::io::Write as _;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use aws_smithy_http_client::proxy::ProxyConfig;
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use serde_json::{json, Value};

use crate::engine::deploy::Done;
use crate::env;

tokio::task_local! {
    /// (stack, logical id) of the resource operation running in this task.
    static RESOURCE: (String, String);
}

struct Tracer {
    file: Mutex<File>,
    epoch: Instant,
}

static TRACER: OnceLock<Option<Tracer>> = OnceLock::new();

fn tracer() -> Option<&'static Tracer> {
    TRACER
        .get_or_init(|| {
            let path = std::env::var_os(env::CDKD_TRACE_FILE).filter(|p| !p.is_empty())?;
            match File::options().create(true).append(true).open(&path) {
                Ok(file) => Some(Tracer {
                    file: Mutex::new(file),
                    epoch: Instant::now(),
                }),
                Err(e) => {
                    crate::ui::warn(format!(
                        "{}={}: cannot open the trace file ({e}); no trace is written",
                        env::CDKD_TRACE_FILE,
                        path.to_string_lossy()
                    ));
                    None
                }
            }
        })
        .as_ref()
}

/// Whether `CDKD_TRACE_FILE` names a writable file.
pub fn enabled() -> bool {
    tracer().is_some()
}

fn ms(t: &Tracer, at: Instant) -> f64 {
    at.saturating_duration_since(t.epoch).as_secs_f64() * 1000.0
}

fn write(t: &Tracer, line: Value) {
    let mut text = line.to_string();
    text.push('\n');
    let mut file = t.file.lock().unwrap_or_else(|p| p.into_inner());
    // A trace is a diagnostic: a failed write never fails the deploy.
    let _ = file.write_all(text.as_bytes());
}

/// Runs `fut` with its AWS calls attributed to `stack` / `id` in the trace.
pub async fn scoped<F: Future>(stack: &str, id: &str, fut: F) -> F::Output {
    if enabled() {
        RESOURCE.scope((stack.to_owned(), id.to_owned()), fut).await
    } else {
        fut.await
    }
}

/// Records a finished resource operation.
pub fn resource(stack: &str, done: &Done, dependencies: &[String]) {
    let Some(t) = tracer() else { return };
    let (Some(start), Some(end)) = (done.started, done.finished) else {
        return;
    };
    write(
        t,
        json!({
            "event": "resource",
            "stack": stack,
            "id": done.logical_id,
            "type": done.resource_type,
            "action": format!("{:?}", done.action),
            "startMs": ms(t, start),
            "endMs": ms(t, end),
            "dependencies": dependencies,
        }),
    );
}

/// Records a named event with free-form fields (e.g. the walk of a stack starting).
pub fn event(name: &str, fields: Value) {
    let Some(t) = tracer() else { return };
    let mut line = json!({ "event": name, "atMs": ms(t, Instant::now()) });
    if let (Some(obj), Value::Object(extra)) = (line.as_object_mut(), fields) {
        obj.extend(extra);
    }
    write(t, line);
}

/// Marks the start or end of a stack's deploy walk with the CPU time the process has used so
/// far, so the benchmark can tell the engine's CPU while it provisions from start-up costs
/// (configuration, root certificates) and the state round trips around the walk.
pub fn walk_mark(stack: &str, phase: &str) {
    if tracer().is_none() {
        return;
    }
    event(
        "walk",
        json!({ "stack": stack, "phase": phase, "cpuMs": process_cpu_ms() }),
    );
}

/// CPU time every live thread of this process has used, in ms: the sum of the first field
/// (ns on a CPU) of each `/proc/self/task/*/schedstat`. `None` where /proc has no such file.
/// A thread that already exited is not counted; within one walk none of the runtime's do.
fn process_cpu_ms() -> Option<f64> {
    let mut ns: u64 = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let text = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
        ns += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(ns as f64 / 1e6)
}

/// The one HTTP client every SDK client shares: the SDK's default (hyper 1.x, rustls with
/// aws-lc, the proxy from the environment), built once, so its connectors (and the root
/// certificates they load) are cached across the many short-lived service clients the
/// providers build; wrapped so each request is written to the trace when tracing is on, and
/// so each passes its service's limit on calls in flight ([`super::gate`]).
pub fn http_client() -> SharedHttpClient {
    let inner =
        aws_smithy_http_client::Builder::new().build_with_connector_fn(|settings, components| {
            let mut builder = aws_smithy_http_client::Connector::builder()
                .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc));
            builder.set_connector_settings(settings.cloned());
            if let Some(components) = components {
                builder.set_sleep_impl(components.sleep_impl());
            }
            builder.set_proxy_config(Some(ProxyConfig::from_env()));
            builder.build()
        });
    let client = if tracer().is_some() {
        SharedHttpClient::new(TracingClient { inner })
    } else {
        inner
    };
    // Outside the trace, so a call's traced time is its round trip, not its wait for a slot.
    super::gate::gated(client)
}

#[derive(Debug)]
struct TracingClient {
    inner: SharedHttpClient,
}

impl HttpClient for TracingClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(TracingConnector {
            inner: self.inner.http_connector(settings, components),
        })
    }
}

#[derive(Debug)]
struct TracingConnector {
    inner: SharedHttpConnector,
}

/// `SQS.CreateQueue` from X-Amz-Target, `CreateTopic` from a query body's Action, else
/// `PUT /bucket/key`.
fn operation(request: &HttpRequest) -> String {
    if let Some(target) = request.headers().get("x-amz-target") {
        return target.to_owned();
    }
    if let Some(body) = request.body().bytes() {
        if let Ok(text) = std::str::from_utf8(body) {
            if let Some(action) = text.split('&').find_map(|kv| kv.strip_prefix("Action=")) {
                return action.to_owned();
            }
        }
    }
    let uri = request.uri();
    let path = uri.split('?').next().unwrap_or(uri);
    let path = path
        .split_once("://")
        .map_or(path, |(_, rest)| rest.find('/').map_or("/", |i| &rest[i..]));
    format!("{} {path}", request.method())
}

impl HttpConnector for TracingConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let Some(t) = tracer() else {
            return self.inner.call(request);
        };
        let owner = RESOURCE.try_with(|r| r.clone()).ok();
        let op = operation(&request);
        let start = Instant::now();
        let fut = self.inner.call(request);
        HttpConnectorFuture::new(async move {
            let result = fut.await;
            let status = match &result {
                Ok(response) => json!(response.status().as_u16()),
                Err(_) => json!("error"),
            };
            write(
                t,
                json!({
                    "event": "call",
                    "stack": owner.as_ref().map(|o| o.0.as_str()),
                    "id": owner.as_ref().map(|o| o.1.as_str()),
                    "op": op,
                    "status": status,
                    "startMs": ms(t, start),
                    "endMs": ms(t, Instant::now()),
                }),
            );
            result
        })
    }
}
