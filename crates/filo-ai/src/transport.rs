//! The HTTP seam. Codecs build an [`HttpRequest`]; a [`Transport`] sends it and hands back the
//! status, headers and body bytes as a stream. [`ReqwestTransport`] is the real one (rustls with
//! the ring provider, HTTP/2). With the `testing` feature (tests and benchmarks only),
//! `FixtureTransport` replays canned responses so the real parsers can be driven from bytes in
//! memory.

use std::error::Error as _;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use serde_json::Value;

use crate::error::AiError;

/// A POST with a JSON body; with `content-type: application/x-www-form-urlencoded` the body is
/// an object of strings sent as a form (OAuth token exchanges).
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

/// The bytes a request's body is sent as: JSON, or a form when the content type says so.
pub fn request_body(request: &HttpRequest) -> Result<Vec<u8>, AiError> {
    let form = request
        .header("content-type")
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    match (&request.body, form) {
        (Value::Object(fields), true) => {
            let pairs: Option<Vec<(&str, &str)>> = fields
                .iter()
                .map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
                .collect();
            let pairs =
                pairs.ok_or_else(|| AiError::Request("a form body holds strings only".into()))?;
            Ok(crate::form::encode_pairs(pairs).into_bytes())
        }
        (_, true) => Err(AiError::Request("a form body must be an object".into())),
        (body, false) => serde_json::to_vec(body).map_err(|e| AiError::Request(e.to_string())),
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
/// The request is borrowed (the driver keeps it for a retry; a large context is not copied per
/// attempt), so what the returned future needs is taken from it before the future is made.
pub trait Transport: Send + Sync {
    fn send(&self, request: &HttpRequest) -> BoxFuture<'static, Result<HttpResponse, AiError>>;
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
        let verifier = LazyVerifier {
            provider: provider.clone(),
            inner: std::sync::OnceLock::new(),
        };
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

/// The platform's certificate verifier, made on the first TLS handshake rather than with the
/// client: making it reads every certificate of the system's store, which a run that only talks
/// plain HTTP (a local model, the benchmark's mock) never needs. A store that cannot be read fails
/// that handshake with the reason.
#[derive(Debug)]
struct LazyVerifier {
    provider: Arc<rustls::crypto::CryptoProvider>,
    inner: std::sync::OnceLock<Result<rustls_platform_verifier::Verifier, String>>,
}

impl LazyVerifier {
    fn get(&self) -> Result<&rustls_platform_verifier::Verifier, rustls::Error> {
        self.inner
            .get_or_init(|| {
                rustls_platform_verifier::Verifier::new(self.provider.clone())
                    .map_err(|e| format!("TLS verifier: {e}"))
            })
            .as_ref()
            .map_err(|e| rustls::Error::General(e.clone()))
    }
}

impl rustls::client::danger::ServerCertVerifier for LazyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        self.get()?
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.get()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.get()?.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        // What the crypto provider can check; the platform verifier reports the same list.
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// An error's message followed by its sources, so "error sending request" says why. A source
/// whose text the chain already holds (an error that embeds its cause and also exposes it) is
/// not repeated.
fn error_chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !part.is_empty() && !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// `builder` with `headers` added; a name or value HTTP cannot carry is a request error.
fn with_headers(
    mut builder: reqwest::RequestBuilder,
    headers: &[(String, String)],
) -> Result<reqwest::RequestBuilder, AiError> {
    for (name, value) in headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| AiError::Request(format!("header {name}: {e}")))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|e| AiError::Request(format!("header {name}: {e}")))?;
        builder = builder.header(name, value);
    }
    Ok(builder)
}

impl Transport for ReqwestTransport {
    fn send(&self, request: &HttpRequest) -> BoxFuture<'static, Result<HttpResponse, AiError>> {
        let builder = request_body(request).and_then(|body| {
            with_headers(self.client.post(&request.url).body(body), &request.headers)
        });
        Box::pin(async move {
            let response = builder?
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

/// A one-shot exchange with a small answer (OAuth token endpoints and the like), outside the
/// streaming driver: no retry, the whole body read as text.
#[derive(Debug, Clone, PartialEq)]
pub struct PlainRequest {
    /// `GET` when `body` is `None`, otherwise `POST`.
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// The limit for the whole exchange.
    pub timeout: Duration,
}

/// The answer to a [`PlainRequest`].
#[derive(Debug, Clone, PartialEq)]
pub struct PlainResponse {
    pub status: u16,
    pub body: String,
}

impl ReqwestTransport {
    /// Send `request` and read the whole answer. A non-success status is an answer, not an
    /// error; errors are failures to build, connect, send or read (and the time limit).
    pub async fn fetch(&self, request: PlainRequest) -> Result<PlainResponse, AiError> {
        let mut builder = match request.body {
            Some(body) => self.client.post(&request.url).body(body),
            None => self.client.get(&request.url),
        };
        builder = with_headers(builder.timeout(request.timeout), &request.headers)?;
        let response = builder
            .send()
            .await
            .map_err(|e| AiError::Transport(error_chain(&e)))?;
        let status = response.status().as_u16();
        let body = response
            .text()
            .await
            .map_err(|e| AiError::Transport(error_chain(&e)))?;
        Ok(PlainResponse { status, body })
    }
}

#[cfg(any(test, feature = "testing"))]
#[path = "transport_fixture.rs"]
mod fixture;
#[cfg(any(test, feature = "testing"))]
pub use fixture::{FixtureEnd, FixtureResponse, FixtureTransport};
