//! The Lambda Runtime API for one invocation, on `127.0.0.1:<ephemeral>`.
//!
//! A minimal HTTP/1.1 exchange over `std::net::TcpListener` in one blocking thread, not a
//! server crate: the API has four routes, one client (our own bootstrap), one request per
//! connection (every answer says `Connection: close`), and no new dependency or new tokio /
//! hyper feature was worth recompiling the AWS SDK for.
//!
//! Routes (paths under `/2018-06-01`):
//! - `GET /runtime/invocation/next`: the event, with `Lambda-Runtime-Aws-Request-Id`,
//!   `-Deadline-Ms`, `-Invoked-Function-Arn` and `-Trace-Id`. Asked a second time (the
//!   bootstrap's loop after it answered), it is never answered: the runner stops the process.
//! - `POST /runtime/invocation/{id}/response`: the result (202; 413 past Lambda's 6 MB).
//! - `POST /runtime/invocation/{id}/error`: the function's error document (202).
//! - `POST /runtime/init/error`: the handler could not be loaded (202).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::{ErrorKind, RunnerError};

/// Lambda's limit on a synchronous response payload.
pub const MAX_RESPONSE_BYTES: usize = 6 * 1024 * 1024;
const PREFIX: &str = "/2018-06-01/runtime";

/// What the runtime told the API, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The runtime took the event (the invocation's clock starts).
    Started,
    Response(Vec<u8>),
    Error {
        kind: ErrorKind,
        document: Value,
    },
}

/// The invocation the API hands out.
#[derive(Debug, Clone)]
pub struct Pending {
    pub request_id: String,
    pub function_arn: String,
    pub timeout: Duration,
    pub event: Vec<u8>,
}

/// A running Runtime API; stops when dropped.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds a loopback port and serves `pending` on it, reporting to `events`.
    pub fn start(pending: Pending, events: Sender<Event>) -> Result<Server, RunnerError> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| RunnerError::io("binding the Runtime API on 127.0.0.1", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| RunnerError::io("reading the Runtime API's address", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| RunnerError::io("configuring the Runtime API socket", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("lambda-runtime-api".into())
            .spawn(move || serve(listener, pending, events, flag))
            .map_err(|e| RunnerError::io("starting the Runtime API thread", e))?;
        Ok(Server {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// `host:port`, the value of AWS_LAMBDA_RUNTIME_API.
    pub fn address(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(listener: TcpListener, pending: Pending, events: Sender<Event>, stop: Arc<AtomicBool>) {
    let mut delivered = false;
    // Connections asking for a second event: held open, unanswered, until the end.
    let mut parked: Vec<TcpStream> = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(e) => {
                tracing::debug!("Runtime API accept: {e}");
                continue;
            }
        };
        if let Err(e) = exchange(stream, &pending, &mut delivered, &events, &mut parked) {
            tracing::debug!("Runtime API exchange: {e}");
        }
    }
}

/// One request, one answer.
fn exchange(
    stream: TcpStream,
    pending: &Pending,
    delivered: &mut bool,
    events: &Sender<Event>,
    parked: &mut Vec<TcpStream>,
) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let request = read_request(&stream)?;
    let mut stream = stream;
    let path = request.path.split('?').next().unwrap_or("").to_owned();
    let Some(route) = path.strip_prefix(PREFIX) else {
        return answer(&mut stream, 404, &[], br#"{"errorType":"NotFound"}"#);
    };
    match (request.method.as_str(), route) {
        ("GET", "/invocation/next") => {
            if *delivered {
                parked.push(stream);
                return Ok(());
            }
            *delivered = true;
            let deadline = SystemTime::now()
                .checked_add(pending.timeout)
                .unwrap_or_else(SystemTime::now)
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0);
            let _ = events.send(Event::Started);
            let trace = format!(
                "Root=1-{}-{};Sampled=0",
                &pending.request_id[..8.min(pending.request_id.len())],
                pending.request_id.replace('-', "")
            );
            answer(
                &mut stream,
                200,
                &[
                    ("Lambda-Runtime-Aws-Request-Id", pending.request_id.as_str()),
                    ("Lambda-Runtime-Deadline-Ms", &deadline.to_string()),
                    (
                        "Lambda-Runtime-Invoked-Function-Arn",
                        pending.function_arn.as_str(),
                    ),
                    ("Lambda-Runtime-Trace-Id", trace.as_str()),
                    ("Content-Type", "application/json"),
                ],
                &pending.event,
            )
        }
        ("POST", "/init/error") => {
            let document = error_document(&request);
            let _ = events.send(Event::Error {
                kind: ErrorKind::Init,
                document,
            });
            answer(&mut stream, 202, &[], br#"{"status":"OK"}"#)
        }
        ("POST", route) => {
            let Some((id, what)) = route
                .strip_prefix("/invocation/")
                .and_then(|rest| rest.split_once('/'))
            else {
                return answer(&mut stream, 404, &[], br#"{"errorType":"NotFound"}"#);
            };
            if id != pending.request_id {
                return answer(
                    &mut stream,
                    400,
                    &[],
                    br#"{"errorType":"InvalidRequestID","errorMessage":"no such invocation"}"#,
                );
            }
            match what {
                "response" if request.body.len() > MAX_RESPONSE_BYTES => {
                    let document = serde_json::json!({
                        "errorType": "Function.ResponseSizeTooLarge",
                        "errorMessage": format!(
                            "Response payload size ({} bytes) exceeded maximum allowed payload size ({MAX_RESPONSE_BYTES} bytes).",
                            request.body.len()
                        ),
                    });
                    let _ = events.send(Event::Error {
                        kind: ErrorKind::Function,
                        document,
                    });
                    answer(
                        &mut stream,
                        413,
                        &[],
                        br#"{"errorType":"RequestEntityTooLarge"}"#,
                    )
                }
                "response" => {
                    let _ = events.send(Event::Response(request.body));
                    answer(&mut stream, 202, &[], br#"{"status":"OK"}"#)
                }
                "error" => {
                    let document = error_document(&request);
                    let _ = events.send(Event::Error {
                        kind: ErrorKind::Function,
                        document,
                    });
                    answer(&mut stream, 202, &[], br#"{"status":"OK"}"#)
                }
                _ => answer(&mut stream, 404, &[], br#"{"errorType":"NotFound"}"#),
            }
        }
        _ => answer(&mut stream, 405, &[], b""),
    }
}

/// The error document a runtime posted; a body that is not a JSON object becomes one, typed
/// by the `Lambda-Runtime-Function-Error-Type` header.
fn error_document(request: &Request) -> Value {
    let header_type = request.header("lambda-runtime-function-error-type");
    match serde_json::from_slice::<Value>(&request.body) {
        Ok(Value::Object(mut map)) => {
            if !map.contains_key("errorType") {
                if let Some(t) = header_type {
                    map.insert("errorType".into(), Value::String(t.to_owned()));
                }
            }
            Value::Object(map)
        }
        _ => serde_json::json!({
            "errorType": header_type.unwrap_or("Unhandled"),
            "errorMessage": String::from_utf8_lossy(&request.body),
        }),
    }
}

#[derive(Debug)]
struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_request(stream: &TcpStream) -> std::io::Result<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 {
            break;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let mut request = Request {
        method,
        path,
        headers,
        body: Vec::new(),
    };
    if let Some(length) = request
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        request.body = body;
    } else if request
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        request.body = read_chunked(&mut reader)?;
    }
    Ok(request)
}

fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.read_line(&mut size_line)?;
        let size_text = size_line.trim().split(';').next().unwrap_or("");
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "bad chunk size"))?;
        if size == 0 {
            // Trailers end at an empty line.
            loop {
                let mut trailer = String::new();
                if reader.read_line(&mut trailer)? == 0 || trailer.trim().is_empty() {
                    break;
                }
            }
            return Ok(body);
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = [0u8; 2];
        reader.read_exact(&mut crlf)?;
    }
}

fn answer(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        _ => "Status",
    };
    let mut head = format!("HTTP/1.1 {status} {reason}\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn call(addr: &str, request: &str) -> String {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).unwrap();
        out
    }

    fn pending() -> Pending {
        Pending {
            request_id: "11111111-2222-3333-4444-555555555555".into(),
            function_arn: "arn:aws:lambda:us-east-1:123456789012:function:f".into(),
            timeout: Duration::from_secs(3),
            event: br#"{"k":"v"}"#.to_vec(),
        }
    }

    #[test]
    fn next_hands_out_the_event_with_the_runtime_headers_then_the_response_is_reported() {
        let (tx, rx) = mpsc::channel();
        let server = Server::start(pending(), tx).unwrap();
        let addr = server.address();
        let next = call(
            &addr,
            "GET /2018-06-01/runtime/invocation/next HTTP/1.1\r\nHost: x\r\n\r\n",
        );
        assert!(next.starts_with("HTTP/1.1 200 OK\r\n"), "{next}");
        assert!(
            next.contains(
                "Lambda-Runtime-Aws-Request-Id: 11111111-2222-3333-4444-555555555555\r\n"
            ),
            "{next}"
        );
        assert!(next.contains("Lambda-Runtime-Invoked-Function-Arn: arn:aws:lambda:us-east-1:123456789012:function:f\r\n"));
        assert!(next.contains("Lambda-Runtime-Deadline-Ms: "));
        assert!(next.contains("Lambda-Runtime-Trace-Id: Root=1-"));
        assert!(next.ends_with("\r\n\r\n{\"k\":\"v\"}"), "{next}");
        assert_eq!(rx.recv().unwrap(), Event::Started);

        let wrong = call(&addr, "POST /2018-06-01/runtime/invocation/other/response HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}");
        assert!(wrong.starts_with("HTTP/1.1 400"), "{wrong}");

        let done = call(&addr, "POST /2018-06-01/runtime/invocation/11111111-2222-3333-4444-555555555555/response HTTP/1.1\r\nContent-Length: 4\r\n\r\n\"ok\"");
        assert!(done.starts_with("HTTP/1.1 202 Accepted\r\n"), "{done}");
        assert_eq!(rx.recv().unwrap(), Event::Response(b"\"ok\"".to_vec()));
    }

    #[test]
    fn a_chunked_error_post_is_reported_with_its_document() {
        let (tx, rx) = mpsc::channel();
        let server = Server::start(pending(), tx).unwrap();
        let addr = server.address();
        call(
            &addr,
            "GET /2018-06-01/runtime/invocation/next HTTP/1.1\r\n\r\n",
        );
        let body = r#"{"errorType":"Error","errorMessage":"boom"}"#;
        let request = format!(
            "POST /2018-06-01/runtime/invocation/11111111-2222-3333-4444-555555555555/error HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
            body.len()
        );
        assert!(call(&addr, &request).starts_with("HTTP/1.1 202"));
        assert_eq!(rx.recv().unwrap(), Event::Started);
        assert_eq!(
            rx.recv().unwrap(),
            Event::Error {
                kind: ErrorKind::Function,
                document: serde_json::json!({"errorType": "Error", "errorMessage": "boom"}),
            }
        );
    }

    #[test]
    fn an_init_error_without_a_json_body_is_typed_by_its_header() {
        let (tx, rx) = mpsc::channel();
        let server = Server::start(pending(), tx).unwrap();
        let answer = call(
            &server.address(),
            "POST /2018-06-01/runtime/init/error HTTP/1.1\r\nLambda-Runtime-Function-Error-Type: Runtime.ImportModuleError\r\nContent-Length: 7\r\n\r\nno file",
        );
        assert!(answer.starts_with("HTTP/1.1 202"));
        assert_eq!(
            rx.recv().unwrap(),
            Event::Error {
                kind: ErrorKind::Init,
                document: serde_json::json!({"errorType": "Runtime.ImportModuleError", "errorMessage": "no file"}),
            }
        );
    }

    #[test]
    fn a_second_next_is_left_unanswered_and_unknown_paths_are_404() {
        let (tx, _rx) = mpsc::channel();
        let server = Server::start(pending(), tx).unwrap();
        let addr = server.address();
        call(
            &addr,
            "GET /2018-06-01/runtime/invocation/next HTTP/1.1\r\n\r\n",
        );
        let mut second = TcpStream::connect(&addr).unwrap();
        second
            .write_all(b"GET /2018-06-01/runtime/invocation/next HTTP/1.1\r\n\r\n")
            .unwrap();
        second
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut buf = [0u8; 16];
        let read = second.read(&mut buf);
        assert!(read.is_err(), "no answer to a second next: {read:?}");
        assert!(call(&addr, "GET /elsewhere HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
    }
}
