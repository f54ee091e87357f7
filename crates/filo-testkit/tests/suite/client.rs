//! A tiny HTTP/1.1 client over a raw `TcpStream`, so the tests see the exact bytes the mock
//! sends (status line, headers, chunked framing, whether the body was terminated).

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response as read off the wire.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body as text (lossy: Bedrock's event stream is binary).
    pub body: String,
    /// The body bytes.
    pub bytes: Vec<u8>,
    /// The body ended properly (chunked terminator or full content-length); false after a cut.
    pub complete: bool,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("JSON body")
    }
}

/// The request text for `POST path` with a JSON body and extra headers.
pub fn request_text(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> String {
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        req.push_str(&format!("{name}: {value}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    req
}

/// Send a request and return the open connection.
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.expect("connect to the mock");
    stream
        .write_all(request_text(addr, method, path, headers, body).as_bytes())
        .await
        .expect("write request");
    stream
}

/// Read until the server closes the connection (or resets it) and parse the response.
pub async fn read_all(stream: &mut TcpStream) -> RawResponse {
    parse(&read_raw(stream).await)
}

/// Every byte until the server closes the connection (or resets it).
pub async fn read_raw(stream: &mut TcpStream) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return raw,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
}

pub async fn post(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> RawResponse {
    let mut stream = send(addr, "POST", path, headers, body).await;
    tokio::time::timeout(Duration::from_secs(10), read_all(&mut stream))
        .await
        .expect("response within 10 s")
}

/// Parse raw response bytes (head, then a chunked or content-length body).
pub fn parse(raw: &[u8]) -> RawResponse {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete response head");
    let head = std::str::from_utf8(&raw[..split]).expect("UTF-8 head");
    let rest = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').expect("header line");
            (n.trim().to_ascii_lowercase(), v.trim().to_owned())
        })
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let (body, complete) = if chunked {
        dechunk(rest)
    } else {
        let len: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(rest.len());
        (rest[..len.min(rest.len())].to_vec(), rest.len() >= len)
    };
    RawResponse {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        bytes: body,
        complete,
    }
}

/// Decode a chunked body; `complete` is whether the terminating zero-size chunk arrived.
fn dechunk(mut rest: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (body, false);
        };
        let size_text = std::str::from_utf8(&rest[..eol]).expect("chunk size line");
        let size = usize::from_str_radix(size_text.trim(), 16).expect("hex chunk size");
        rest = &rest[eol + 2..];
        if size == 0 {
            return (body, true);
        }
        if rest.len() < size + 2 {
            body.extend_from_slice(&rest[..size.min(rest.len())]);
            return (body, false);
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}
