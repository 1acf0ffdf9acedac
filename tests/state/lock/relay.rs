//! The relay between the SDK and moto that the stack-lock test modules of the `state` binary
//! (`state_lock`, `state_lock_faults`) run their S3 calls through.
#![allow(dead_code)] // each module uses a different subset

use std::net::{Shutdown, TcpListener, TcpStream};
use std::ops::Not;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_s3::Client;

use crate::support;

/// A relay between the SDK and moto, one per test, that also injects the faults the lock must
/// survive.
///
/// moto evaluates If-None-Match / If-Match and then writes without holding a lock in between
/// (werkzeug serves each request on its own thread), so two concurrent conditional PUTs can
/// both succeed there, which S3 never allows. The relay passes writes one at a time (reads stay
/// concurrent), restoring the atomicity the lock relies on. moto answers `Connection: close`,
/// so one connection carries one request.
#[derive(Default)]
pub struct Relay {
    writes: Mutex<()>,
    /// Apply the next PUT, then drop the connection without its answer.
    pub lose_next_put_answer: AtomicBool,
    /// Answer every DELETE carrying If-Match with this status (0: pass it on).
    pub refuse_conditional_deletes: AtomicU16,
    /// Answer every GET with 403.
    pub deny_reads: AtomicBool,
    /// Answer ListObjectVersions with 403.
    pub deny_version_listing: AtomicBool,
    /// Answer DeleteObjects itself, refusing every key: the first with NoSuchVersion, the
    /// rest with AccessDenied (what a missing s3:DeleteObjectVersion looks like).
    pub refuse_version_deletes: AtomicBool,
}

impl Relay {
    pub fn start() -> (Arc<Relay>, String) {
        let upstream = support::emulator_env()
            .into_iter()
            .find(|(k, _)| k == "AWS_ENDPOINT_URL")
            .map(|(_, v)| v)
            .expect("AWS_ENDPOINT_URL");
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let relay = Arc::new(Relay::default());
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay");
        let endpoint = format!("http://{}", listener.local_addr().expect("relay address"));
        let serving = relay.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (relay, upstream) = (serving.clone(), upstream.clone());
                std::thread::spawn(move || relay.serve(client, &upstream));
            }
        });
        (relay, endpoint)
    }

    /// An S3 client that goes through a new relay.
    pub async fn client() -> (Arc<Relay>, Client) {
        let (relay, endpoint) = Relay::start();
        (relay, relay_client(&endpoint).await)
    }

    fn serve(&self, mut client: TcpStream, upstream: &str) -> std::io::Result<()> {
        client.set_nodelay(true)?;
        let head = peek_head(&client)?;
        let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
        let method = text.split(' ').next().unwrap_or("").to_owned();
        let request_line = text.lines().next().unwrap_or("").to_owned();
        if method == "post"
            && request_line.contains("?delete")
            && self.refuse_version_deletes.load(Ordering::SeqCst)
        {
            return refuse_every_delete(client, &head, &text);
        }
        let refuse = match method.as_str() {
            "get"
                if request_line.contains("versions")
                    && self.deny_version_listing.load(Ordering::SeqCst) =>
            {
                403
            }
            "get" if self.deny_reads.load(Ordering::SeqCst) => 403,
            "delete" if text.contains("\r\nif-match:") => {
                self.refuse_conditional_deletes.load(Ordering::SeqCst)
            }
            _ => 0,
        };
        if refuse != 0 {
            std::io::Read::read_exact(&mut client, &mut vec![0; head.len()])?;
            let (code, reason) = match refuse {
                403 => ("AccessDenied", "Forbidden"),
                _ => ("NotImplemented", "Not Implemented"),
            };
            let body = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>injected by the test relay</Message></Error>");
            let answer = format!("HTTP/1.1 {refuse} {reason}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
            std::io::Write::write_all(&mut client, answer.as_bytes())?;
            return client.shutdown(Shutdown::Both);
        }
        let lose_answer =
            method == "put" && self.lose_next_put_answer.swap(false, Ordering::SeqCst);
        let _one_at_a_time = matches!(method.as_str(), "get" | "head")
            .not()
            .then(|| self.writes.lock().unwrap_or_else(|p| p.into_inner()));
        let mut server = TcpStream::connect(upstream)?;
        server.set_nodelay(true)?;
        let (mut request_in, mut request_out) = (client.try_clone()?, server.try_clone()?);
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut request_in, &mut request_out);
            let _ = request_out.shutdown(Shutdown::Write);
        });
        // The answer, until moto closes the connection.
        if lose_answer {
            std::io::copy(&mut server, &mut std::io::sink())?;
            return client.shutdown(Shutdown::Both);
        }
        std::io::copy(&mut server, &mut client)?;
        client.shutdown(Shutdown::Write)
    }
}

pub async fn relay_client(endpoint: &str) -> Client {
    let config = aws_sdk_s3::config::Builder::from(&support::sdk_config().await)
        .force_path_style(true)
        .endpoint_url(endpoint)
        .build();
    Client::from_conf(config)
}

/// Answers a DeleteObjects request with a per-key error for every version it names.
fn refuse_every_delete(mut client: TcpStream, head: &[u8], text: &str) -> std::io::Result<()> {
    let length: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    std::io::Read::read_exact(&mut client, &mut vec![0; head.len()])?;
    let mut body = vec![0; length];
    std::io::Read::read_exact(&mut client, &mut body)?;
    let body = String::from_utf8_lossy(&body);
    let mut errors = String::new();
    for (i, part) in body.split("<Object>").skip(1).enumerate() {
        let field = |name: &str| {
            part.split(&format!("<{name}>"))
                .nth(1)
                .and_then(|rest| rest.split(&format!("</{name}>")).next())
                .unwrap_or("")
                .to_owned()
        };
        let code = if i == 0 {
            "NoSuchVersion"
        } else {
            "AccessDenied"
        };
        errors.push_str(&format!(
            "<Error><Key>{}</Key><VersionId>{}</VersionId><Code>{code}</Code><Message>injected</Message></Error>",
            field("Key"),
            field("VersionId")
        ));
    }
    let answer = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{errors}</DeleteResult>"
    );
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
    std::io::Write::write_all(&mut client, response.as_bytes())?;
    client.shutdown(Shutdown::Both)
}

/// The request line and headers, without consuming them.
fn peek_head(client: &TcpStream) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 16 * 1024];
    let mut seen = 0;
    for _ in 0..200 {
        seen = client.peek(&mut buf)?;
        if seen == 0 {
            break;
        }
        if let Some(end) = buf[..seen].windows(4).position(|w| w == b"\r\n\r\n") {
            return Ok(buf[..end + 4].to_vec());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(buf[..seen].to_vec())
}
