//! The HTTP seam. Codecs build an [`HttpRequest`]; a [`Transport`] sends it and hands back the
//! status, headers and body bytes as a stream. [`ReqwestTransport`] is the real one (rustls with
//! the ring provider, HTTP/2); [`FixtureTransport`] replays canned responses so the real parsers
//! can be driven from bytes in memory (tests, benchmarks, offline replays).

use std::collections::VecDeque;
use std::error::Error as _;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use serde_json::Value;

use crate::error::AiError;

/// A POST with a JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequest {
    pub url: String,
    /// Header names as given; later entries with the same name replace earlier ones when sent.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl HttpRequest {
    /// The last value set for a header (names compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Body bytes as they arrive.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, AiError>> + Send>>;

/// A response whose body has not been read yet.
pub struct HttpResponse {
    pub status: u16,
    /// Lower-cased header names.
    pub headers: Vec<(String, String)>,
    pub body: ByteStream,
}

impl HttpResponse {
    /// A header value by lower-case name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

/// Sends one request. Implementations must not retry; the stream driver owns retry policy.
pub trait Transport: Send + Sync {
    fn send(&self, request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, AiError>>;
}

/// The real transport: reqwest over rustls (ring) with the platform's certificate verifier.
#[derive(Debug, Clone)]
pub struct ReqwestTransport {
    client: reqwest::Client,
}

impl ReqwestTransport {
    /// Build a client with a 30 s connect timeout and no overall timeout (streams are long; the
    /// driver applies an idle timeout instead).
    pub fn new() -> Result<Self, AiError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
            .map_err(|e| AiError::Request(format!("TLS verifier: {e}")))?;
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| AiError::Request(format!("TLS versions: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| AiError::Request(error_chain(&e)))?;
        Ok(ReqwestTransport { client })
    }
}

/// An error's message followed by its sources, so "error sending request" says why.
fn error_chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

impl Transport for ReqwestTransport {
    fn send(&self, request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, AiError>> {
        let client = self.client.clone();
        Box::pin(async move {
            let body =
                serde_json::to_vec(&request.body).map_err(|e| AiError::Request(e.to_string()))?;
            let mut builder = client.post(&request.url).body(body);
            for (name, value) in &request.headers {
                let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|e| AiError::Request(format!("header {name}: {e}")))?;
                let value = reqwest::header::HeaderValue::from_str(value)
                    .map_err(|e| AiError::Request(format!("header {name}: {e}")))?;
                builder = builder.header(name, value);
            }
            let response = builder
                .send()
                .await
                .map_err(|e| AiError::Transport(error_chain(&e)))?;
            let status = response.status().as_u16();
            let headers = response
                .headers()
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_ascii_lowercase(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect();
            let body = response
                .bytes_stream()
                .map(|chunk| chunk.map_err(|e| AiError::Transport(error_chain(&e))));
            Ok(HttpResponse {
                status,
                headers,
                body: Box::pin(body),
            })
        })
    }
}

/// How a canned body ends after its chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FixtureEnd {
    /// The body ends normally.
    Close,
    /// The connection stays open and silent forever.
    Stall,
    /// Reading fails with a connection error carrying this text.
    Reset(String),
}

/// One canned response.
#[derive(Debug, Clone)]
pub struct FixtureResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Bytes>,
    pub end: FixtureEnd,
    /// Time before the status line arrives.
    pub delay: Duration,
}

impl FixtureResponse {
    /// A 200 SSE response whose body arrives in these chunks.
    pub fn sse(chunks: Vec<Bytes>) -> Self {
        FixtureResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks,
            end: FixtureEnd::Close,
            delay: Duration::ZERO,
        }
    }

    /// An error response with a body.
    pub fn status(status: u16, body: &str) -> Self {
        FixtureResponse {
            status,
            headers: Vec::new(),
            chunks: vec![Bytes::copy_from_slice(body.as_bytes())],
            end: FixtureEnd::Close,
            delay: Duration::ZERO,
        }
    }

    /// Answer only after `delay` (a server slow to send its headers).
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Add a header (lower-case name).
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// Change how the body ends.
    pub fn ending(mut self, end: FixtureEnd) -> Self {
        self.end = end;
        self
    }
}

/// Replays canned responses in order and records every request; when none are left, sending
/// fails with a connection error.
#[derive(Debug, Default)]
pub struct FixtureTransport {
    responses: Mutex<VecDeque<FixtureResponse>>,
    requests: Mutex<Vec<HttpRequest>>,
}

impl FixtureTransport {
    pub fn new(responses: Vec<FixtureResponse>) -> Self {
        FixtureTransport {
            responses: Mutex::new(responses.into()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// The requests sent so far.
    pub fn requests(&self) -> Vec<HttpRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Transport for FixtureTransport {
    fn send(&self, request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, AiError>> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
        let next = self
            .responses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        Box::pin(async move {
            let Some(canned) = next else {
                return Err(AiError::Transport("fixture: no response left".into()));
            };
            if !canned.delay.is_zero() {
                tokio::time::sleep(canned.delay).await;
            }
            let chunks = futures::stream::iter(canned.chunks.into_iter().map(Ok));
            let body: ByteStream = match canned.end {
                FixtureEnd::Close => Box::pin(chunks),
                FixtureEnd::Stall => Box::pin(chunks.chain(futures::stream::pending())),
                FixtureEnd::Reset(text) => Box::pin(chunks.chain(futures::stream::once(async {
                    Err(AiError::Transport(text))
                }))),
            };
            Ok(HttpResponse {
                status: canned.status,
                headers: canned.headers,
                body,
            })
        })
    }
}
