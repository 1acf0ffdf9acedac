//! One invocation end to end: the code's task root, the bootstrap, the Runtime API, the
//! child process with Lambda's environment, the timeout, the logs.

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::api::{Event, Pending, Server};
use super::bootstrap::{self, Interpreter};
use super::code::{self, Scratch};
use super::{Ending, Invocation, Language, Outcome, RunnerError};

/// How long a runtime may take to load the handler and ask for its event (Lambda's init
/// phase limit).
const INIT_LIMIT: Duration = Duration::from_secs(10);
/// How often the runner looks at the child while it waits for the API.
const TICK: Duration = Duration::from_millis(20);

/// Runs `invocation` to its end (result, error, timeout or exit of the runtime).
pub fn run(invocation: &Invocation) -> Result<Outcome, RunnerError> {
    let language =
        Language::parse(&invocation.runtime).ok_or_else(|| RunnerError::Unsupported {
            runtime: invocation.runtime.clone(),
        })?;
    let interpreter = Interpreter::find(&invocation.runtime, language)?;
    let (task_root, _extracted) = code::task_root(&invocation.code)?;
    let scratch = Scratch::new("bootstrap")?;
    let script = bootstrap::write(language, scratch.path())?;
    let request_id = request_id();

    let (tx, rx) = mpsc::channel();
    let server = Server::start(
        Pending {
            request_id: request_id.clone(),
            function_arn: invocation.function_arn.clone(),
            timeout: invocation.timeout,
            event: invocation.event.clone(),
        },
        tx,
    )?;

    let mut command = Command::new(&interpreter.program);
    command
        .arg(&script)
        .current_dir(&task_root)
        .env_clear()
        .envs(environment(
            invocation,
            language,
            &task_root,
            &server.address(),
            scratch.path(),
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|e| {
        RunnerError::io(
            format!(
                "starting {} for {}",
                interpreter.program, invocation.runtime
            ),
            e,
        )
    })?;
    let logs = Arc::new(Mutex::new(Vec::new()));
    let readers = [
        child.stdout.take().map(|s| reader(s, logs.clone())),
        child.stderr.take().map(|s| reader(s, logs.clone())),
    ];

    let started = Instant::now();
    let ending = wait(&mut child, &rx, invocation.timeout, started);
    let _ = child.kill();
    let _ = child.wait();
    drop(server);
    // The pipes close with the process; a grandchild holding them open is not waited for.
    let until = Instant::now() + Duration::from_millis(500);
    for handle in readers.into_iter().flatten() {
        while !handle.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        if handle.is_finished() {
            let _ = handle.join();
        }
    }
    let duration = started.elapsed();
    let output = logs.lock().map(|l| l.clone()).unwrap_or_default();
    let logs = frame_logs(
        &request_id,
        &String::from_utf8_lossy(&output),
        duration,
        invocation,
        &ending,
    );
    let mut interpreter_text = format!("{} {}", interpreter.program, interpreter.version);
    if let Some(note) = interpreter.mismatch(&invocation.runtime, language) {
        interpreter_text = note;
    }
    Ok(Outcome {
        ending,
        logs,
        duration,
        request_id,
        interpreter: interpreter_text,
    })
}

/// Waits for the runtime's answer, its exit, or the end of the init phase or the timeout.
fn wait(
    child: &mut Child,
    rx: &mpsc::Receiver<Event>,
    timeout: Duration,
    spawned: Instant,
) -> Ending {
    let mut deadline = spawned + INIT_LIMIT;
    let mut invoked_at: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ending::Timeout(match invoked_at {
                Some(at) => now.saturating_duration_since(at).min(timeout),
                None => INIT_LIMIT,
            });
        }
        match rx.recv_timeout(TICK.min(deadline - now)) {
            Ok(Event::Started) => {
                let at = Instant::now();
                invoked_at = Some(at);
                deadline = at + timeout;
            }
            Ok(Event::Response(bytes)) => return Ending::Success(bytes),
            Ok(Event::Error { kind, document }) => return Ending::Error { kind, document },
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {}
        }
        if let Ok(Some(status)) = child.try_wait() {
            // An answer posted just before the exit is still in the channel.
            if let Ok(event) = rx.recv_timeout(Duration::from_millis(50)) {
                match event {
                    Event::Response(bytes) => return Ending::Success(bytes),
                    Event::Error { kind, document } => return Ending::Error { kind, document },
                    Event::Started => {}
                }
            }
            return Ending::Exited {
                code: status.code(),
            };
        }
    }
}

/// The child's environment: the caller's pass-through variables, the function's own, then
/// the ones Lambda reserves.
fn environment(
    invocation: &Invocation,
    language: Language,
    task_root: &std::path::Path,
    api: &str,
    scratch: &std::path::Path,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for key in ["PATH", "LANG", "HOME", "TZ", "SYSTEMROOT", "TMPDIR"] {
        if let Ok(value) = std::env::var(key) {
            env.insert(key.to_owned(), value);
        }
    }
    env.extend(invocation.passthrough.clone());
    env.extend(invocation.environment.clone());
    let root = task_root.display().to_string();
    let name = &invocation.function_name;
    let reserved = [
        ("AWS_LAMBDA_RUNTIME_API", api.to_owned()),
        ("AWS_LAMBDA_FUNCTION_NAME", name.clone()),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".to_owned()),
        (
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
            invocation.memory_mb.to_string(),
        ),
        ("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}")),
        ("AWS_LAMBDA_LOG_STREAM_NAME", "cdkd-local".to_owned()),
        (
            "AWS_EXECUTION_ENV",
            format!("AWS_Lambda_{}", invocation.runtime),
        ),
        ("AWS_REGION", invocation.region.clone()),
        ("AWS_DEFAULT_REGION", invocation.region.clone()),
        ("_HANDLER", invocation.handler.clone()),
        ("LAMBDA_TASK_ROOT", root.clone()),
        ("LAMBDA_RUNTIME_DIR", scratch.display().to_string()),
    ];
    for (k, v) in reserved {
        env.insert(k.to_owned(), v);
    }
    if let Some(host_port) = env
        .get("AWS_ENDPOINT_URL")
        .and_then(|u| plain_http_authority(u))
    {
        env.insert("CDKD_LAMBDA_HTTPS_LOOPBACK".into(), host_port);
    }
    match language {
        Language::Node { .. } => {
            let mut paths = vec![format!("{root}/node_modules")];
            if let Some(extra) = &invocation.node_path {
                paths.push(extra.display().to_string());
            }
            env.insert("NODE_PATH".into(), paths.join(":"));
        }
        Language::Python { .. } => {
            env.insert("PYTHONPATH".into(), root);
        }
    }
    env
}

/// `host:port` of a plain `http://` endpoint URL (an emulator), else `None`. The Node.js
/// bootstrap sends https requests to that host there (bootstrap/node.cjs explains why).
fn plain_http_authority(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split('/').next()?;
    if authority.is_empty() {
        return None;
    }
    Some(if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    })
}

fn reader(mut source: impl Read + Send + 'static, sink: Arc<Mutex<Vec<u8>>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match source.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if let Ok(mut out) = sink.lock() {
                        out.extend_from_slice(&buf[..n]);
                    }
                }
            }
        }
    })
}

/// The captured output between Lambda's START and END / REPORT lines.
fn frame_logs(
    request_id: &str,
    output: &str,
    duration: Duration,
    invocation: &Invocation,
    ending: &Ending,
) -> String {
    let mut logs = format!("START RequestId: {request_id} Version: $LATEST\n");
    logs.push_str(output);
    if !output.is_empty() && !output.ends_with('\n') {
        logs.push('\n');
    }
    if let Ending::Timeout(after) = ending {
        logs.push_str(&format!(
            "{request_id} Task timed out after {:.2} seconds\n",
            after.as_secs_f64()
        ));
    }
    logs.push_str(&format!("END RequestId: {request_id}\n"));
    logs.push_str(&format!(
        "REPORT RequestId: {request_id}\tDuration: {:.2} ms\tMemory Size: {} MB\n",
        duration.as_secs_f64() * 1000.0,
        invocation.memory_mb
    ));
    logs
}

/// A v4-shaped random request id, from the clock and a counter (no RNG dependency needed:
/// it only has to be unique per invocation).
fn request_id() -> String {
    use sha2::{Digest, Sha256};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let seed = format!(
        "{nanos}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let hex: String = Sha256::digest(seed.as_bytes())
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_uuid_shaped_and_distinct() {
        let a = request_id();
        let b = request_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(a.matches('-').count(), 4);
    }

    #[test]
    fn reserved_variables_win_over_the_functions_and_the_callers() {
        let invocation = Invocation {
            code: "/x".into(),
            runtime: "python3.12".into(),
            handler: "app.handler".into(),
            environment: BTreeMap::from([
                ("AWS_REGION".to_owned(), "eu-west-9".to_owned()),
                ("GREETING".to_owned(), "hi".to_owned()),
            ]),
            passthrough: BTreeMap::from([
                (
                    "AWS_ENDPOINT_URL".to_owned(),
                    "http://127.0.0.1:1".to_owned(),
                ),
                ("GREETING".to_owned(), "caller".to_owned()),
            ]),
            timeout: Duration::from_secs(3),
            memory_mb: 256,
            function_name: "fn".into(),
            function_arn: "arn".into(),
            region: "us-east-1".into(),
            node_path: None,
            event: Vec::new(),
        };
        let env = environment(
            &invocation,
            Language::Python { minor: 12 },
            std::path::Path::new("/task"),
            "127.0.0.1:9",
            std::path::Path::new("/rt"),
        );
        assert_eq!(env["AWS_REGION"], "us-east-1");
        assert_eq!(env["GREETING"], "hi");
        assert_eq!(env["AWS_ENDPOINT_URL"], "http://127.0.0.1:1");
        assert_eq!(env["AWS_LAMBDA_RUNTIME_API"], "127.0.0.1:9");
        assert_eq!(env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"], "256");
        assert_eq!(env["_HANDLER"], "app.handler");
        assert_eq!(env["LAMBDA_TASK_ROOT"], "/task");
        assert_eq!(env["CDKD_LAMBDA_HTTPS_LOOPBACK"], "127.0.0.1:1");
        assert_eq!(plain_http_authority("https://s3.amazonaws.com"), None);
        assert_eq!(
            plain_http_authority("http://localhost/"),
            Some("localhost:80".into())
        );
    }
}
