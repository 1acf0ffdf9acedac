//! Raw HTTP/1.1 to the emulator, for what no AWS SDK client speaks: the Cloud Control
//! emulator's fault API and moto's own query APIs.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One HTTP/1.1 request to the emulator (host and port from AWS_ENDPOINT_URL); returns the
/// status and the body.
pub fn http(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL");
    let authority = endpoint
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let mut stream = TcpStream::connect(&authority).expect("connect to the emulator");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the response");
    let text = String::from_utf8_lossy(&raw);
    let (head, payload) = text.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status code");
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    (
        status,
        if chunked {
            dechunk(payload)
        } else {
            payload.to_owned()
        },
    )
}

fn dechunk(mut payload: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = payload.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        payload = &rest[size + 2..];
    }
    out
}
