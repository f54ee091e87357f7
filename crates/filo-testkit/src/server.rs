//! The scripted mock provider: an axum router served on 127.0.0.1, one hyper connection task
//! per client, all owned by one server task that dropping the [`MockProvider`] aborts.

use std::collections::VecDeque;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

use crate::frame::{SseFrame, StreamContext};
use crate::google_token::{self, TokenRequest, decode_form, is_token_path};
use crate::protocol::{Protocol, frames, google_model};
use crate::script::{Fault, Turn};

/// The body the mock answers with (HTTP 500) once the script is used up.
pub const EXHAUSTED_BODY: &str = r#"{"error":"mock script exhausted"}"#;

/// A recorded HTTP request, in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The HTTP method, e.g. `POST`.
    pub method: String,
    /// Path and query, e.g. `/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`.
    pub path: String,
    /// Header names lower-cased, values as sent (non-UTF-8 bytes replaced), in arrival order.
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body (`Null` if the body is not JSON).
    pub body: Value,
    /// The body bytes as received (what a SigV4 signature covers).
    pub raw_body: Vec<u8>,
    /// The wire protocol the path selected.
    pub protocol: Protocol,
}

impl RecordedRequest {
    /// The first value of header `name` (matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Default)]
struct Script {
    turns: VecDeque<Turn>,
    requests: Vec<RecordedRequest>,
    token_requests: Vec<TokenRequest>,
}

type Shared = Arc<Mutex<Script>>;

fn lock(script: &Shared) -> MutexGuard<'_, Script> {
    script.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The scripted mock provider: serves all four wire protocols at once on 127.0.0.1 (a random
/// port), chosen by request path (see [`Protocol::from_path`]). Each request consumes the next
/// [`Turn`], whatever its protocol; once the script is used up it answers HTTP 500 with
/// [`EXHAUSTED_BODY`]. A path no protocol serves gets a 404 and is neither recorded nor
/// answered from the script; a recognised path with a method other than `POST` is recorded and
/// gets a 405, and a request that does not ask for a stream (no `"stream": true` in the body;
/// for Google no `alt=sse` in the query) is recorded and gets a 400, neither consuming a turn. Dropping the provider aborts the server task, which
/// closes the listener and every connection (a stalled stream included).
#[derive(Debug)]
pub struct MockProvider {
    addr: SocketAddr,
    script: Shared,
    task: JoinHandle<()>,
}

impl MockProvider {
    /// Start serving `turns`. Must be called inside a tokio runtime.
    ///
    /// # Panics
    /// When no port can be bound on 127.0.0.1 (use [`MockProvider::try_start`] to get the error).
    pub async fn start(turns: Vec<Turn>) -> MockProvider {
        match MockProvider::try_start(turns).await {
            Ok(mock) => mock,
            Err(e) => panic!("filo-testkit: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Start serving `turns`, reporting a failure to bind.
    pub async fn try_start(turns: Vec<Turn>) -> io::Result<MockProvider> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let script: Shared = Arc::new(Mutex::new(Script {
            turns: turns.into(),
            requests: Vec::new(),
            token_requests: Vec::new(),
        }));
        let router = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&script));
        let task = tokio::spawn(serve(listener, router));
        Ok(MockProvider { addr, script, task })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The socket address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL a model of `protocol` uses: [`url`](Self::url) plus `""`, `"/v1"` or
    /// `"/v1beta"`.
    pub fn base_url(&self, protocol: Protocol) -> String {
        format!("{}{}", self.url(), protocol.base_path())
    }

    /// Append a turn to the script.
    pub fn push(&self, turn: impl Into<Turn>) {
        lock(&self.script).turns.push_back(turn.into());
    }

    /// The requests received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.script).requests.clone()
    }

    /// The OAuth token exchanges received so far (see the `token` module), in arrival order.
    pub fn token_requests(&self) -> Vec<TokenRequest> {
        lock(&self.script).token_requests.clone()
    }

    /// The most recent request, if any.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        lock(&self.script).requests.last().cloned()
    }

    /// Turns not yet consumed.
    pub fn remaining(&self) -> usize {
        lock(&self.script).turns.len()
    }

    /// Stop the server and wait until its task (listener and connections) has ended.
    pub async fn shutdown(mut self) {
        self.task.abort();
        // The task's outcome is a cancellation by construction; only its end matters here.
        let _ = (&mut self.task).await;
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Accept connections until aborted; the connection tasks live in a `JoinSet` owned by this
/// task, so aborting it aborts them all.
pub(crate) async fn serve(listener: TcpListener, router: Router) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Frames go out as written, like a real provider's streaming server (with
                    // Nagle, a frame after a pause waits for the client's delayed ACK).
                    let _ = stream.set_nodelay(true);
                    let service = TowerToHyperService::new(router.clone());
                    connections.spawn(async move {
                        // A client hanging up mid-response is normal in fault tests.
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                // Out of file descriptors or similar: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn handle(State(script): State<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let uri_path = parts.uri.path().to_owned();
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| uri_path.clone(), |pq| pq.as_str().to_owned());
    if parts.method == Method::POST && is_token_path(&uri_path) {
        let bytes = axum::body::to_bytes(body, usize::MAX)
            .await
            .unwrap_or_default();
        let request = TokenRequest {
            path,
            content_type: parts
                .headers
                .get(header::CONTENT_TYPE)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
            form: decode_form(&String::from_utf8_lossy(&bytes)),
        };
        let (status, body) = {
            let mut script = lock(&script);
            script.token_requests.push(request.clone());
            google_token::answer(&request, script.token_requests.len())
        };
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
        return json_response(status, body.to_string());
    }
    let Some(protocol) = Protocol::from_path(&uri_path) else {
        let message = format!(
            "mock provider: no wire protocol serves {} {path}",
            parts.method
        );
        return json_response(
            StatusCode::NOT_FOUND,
            json!({ "error": message }).to_string(),
        );
    };
    let raw_body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes.to_vec(),
        Err(e) => {
            let message = format!("mock provider: cannot read the request body: {e}");
            return json_response(
                StatusCode::BAD_REQUEST,
                json!({ "error": message }).to_string(),
            );
        }
    };
    let body: Value = serde_json::from_slice(&raw_body).unwrap_or(Value::Null);
    let model = match protocol {
        Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => {
            google_model(&uri_path).map(str::to_owned)
        }
        Protocol::BedrockConverseStream => crate::bedrock::model_of(&uri_path),
        Protocol::AnthropicMessages
        | Protocol::OpenAiCompletions
        | Protocol::OpenAiResponses
        | Protocol::AzureOpenAiResponses
        | Protocol::MistralConversations => {
            body.get("model").and_then(Value::as_str).map(str::to_owned)
        }
    };
    let include_usage = body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true));
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_ascii_lowercase(), value)
        })
        .collect();
    let (turn, request_number) = {
        let mut script = lock(&script);
        script.requests.push(RecordedRequest {
            method: parts.method.to_string(),
            path,
            headers,
            body,
            raw_body,
            protocol,
        });
        let number = script.requests.len();
        if parts.method != Method::POST {
            let message = format!("mock provider: {uri_path} is served for POST only");
            let body = json!({ "error": message }).to_string();
            return json_response(StatusCode::METHOD_NOT_ALLOWED, body);
        }
        if let Some(message) = not_streaming(protocol, parts.uri.query(), &script.requests) {
            let body = json!({ "error": message }).to_string();
            return json_response(StatusCode::BAD_REQUEST, body);
        }
        (script.turns.pop_front(), number)
    };
    let ctx = StreamContext {
        model: model.unwrap_or_else(|| "mock-model".to_owned()),
        include_usage,
        request_number,
    };
    match turn {
        None => json_response(StatusCode::INTERNAL_SERVER_ERROR, EXHAUSTED_BODY.to_owned()),
        Some(turn) => respond(protocol, turn, &ctx),
    }
}

/// Why the last recorded request does not ask for a stream, if it does not: the mock only
/// streams, and a client that forgot to ask would get a different answer from the real service.
fn not_streaming(
    protocol: Protocol,
    query: Option<&str>,
    requests: &[RecordedRequest],
) -> Option<&'static str> {
    let body = &requests.last()?.body;
    match protocol {
        Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => {
            let sse = query.is_some_and(|q| q.split('&').any(|kv| kv == "alt=sse"));
            (!sse).then_some(
                "mock provider: streamGenerateContent is served as SSE only; add ?alt=sse",
            )
        }
        // The path itself asks for the stream.
        Protocol::BedrockConverseStream => None,
        Protocol::AnthropicMessages
        | Protocol::OpenAiCompletions
        | Protocol::OpenAiResponses
        | Protocol::AzureOpenAiResponses
        | Protocol::MistralConversations => (body.get("stream") != Some(&Value::Bool(true)))
            .then_some(
                "mock provider: only streams are served; the body must set \"stream\": true",
            ),
    }
}

/// The pause before a cut, long enough for hyper to flush the frames sent so far.
const CUT_FLUSH: Duration = Duration::from_millis(10);

/// One step of a streamed body.
enum Step {
    Send(Bytes),
    Pause(Duration),
    Cut,
}

fn respond(protocol: Protocol, turn: Turn, ctx: &StreamContext) -> Response {
    let send = |frames: &[SseFrame]| -> Vec<Step> {
        frames
            .iter()
            .map(|f| Step::Send(Bytes::from(protocol.encode_frame(f))))
            .collect()
    };
    let steps = match turn {
        Turn::Reply(reply) => send(&frames(protocol, &reply, ctx)),
        Turn::Fault(Fault::Http {
            status,
            retry_after,
            body,
        }) => return http_fault(protocol, status, retry_after, body),
        Turn::Fault(Fault::Raw {
            status,
            headers,
            body,
        }) => return raw_response(status, headers, body),
        Turn::Fault(Fault::ErrorEvent {
            after_events,
            reply,
            message,
        }) => {
            let all = frames(protocol, &reply, ctx);
            let n = after_events.min(all.len());
            let mut steps = send(&all[..n]);
            steps.extend(send(&[protocol.error_frame(&message, ctx, n)]));
            steps
        }
        Turn::Fault(Fault::Cut {
            after_events,
            reply,
        }) => {
            let all = frames(protocol, &reply, ctx);
            let mut steps = send(&all[..after_events.min(all.len())]);
            // hyper drops what it has buffered when a body fails: pause first so it flushes.
            steps.push(Step::Pause(CUT_FLUSH));
            steps.push(Step::Cut);
            steps
        }
        Turn::Fault(Fault::Stall {
            after_events,
            reply,
            stall,
        }) => {
            let all = frames(protocol, &reply, ctx);
            let n = after_events.min(all.len());
            let mut steps = send(&all[..n]);
            steps.push(Step::Pause(stall));
            steps.extend(send(&all[n..]));
            steps
        }
        Turn::Fault(Fault::Malformed {
            after_events,
            reply,
        }) => {
            let all = frames(protocol, &reply, ctx);
            let n = after_events.min(all.len());
            let mut steps = send(&all[..n]);
            steps.extend(send(&[protocol.malformed_frame()]));
            steps.extend(send(&all[n..]));
            steps
        }
    };
    stream_response(protocol, steps, ctx)
}

fn stream_response(protocol: Protocol, steps: Vec<Step>, ctx: &StreamContext) -> Response {
    let body = futures::stream::unfold(VecDeque::from(steps), |mut steps| async move {
        loop {
            match steps.pop_front()? {
                Step::Send(bytes) => return Some((Ok(bytes), steps)),
                Step::Pause(d) => tokio::time::sleep(d).await,
                Step::Cut => {
                    steps.clear();
                    let cut = io::Error::new(io::ErrorKind::ConnectionAborted, "mock cut");
                    return Some((Err(cut), steps));
                }
            }
        }
    });
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(protocol.stream_content_type()),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(id) = HeaderValue::from_str(&format!("req_mock_{}", ctx.request_number)) {
        headers.insert("x-request-id", id);
    }
    response
}

fn http_fault(
    protocol: Protocol,
    status: u16,
    retry_after: Option<u64>,
    body: Option<String>,
) -> Response {
    let Ok(code) = StatusCode::from_u16(status) else {
        let message = format!("mock provider: the script asks for invalid HTTP status {status}");
        return json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({ "error": message }).to_string(),
        );
    };
    let body = body.unwrap_or_else(|| protocol.http_error_body(status, retry_after));
    let mut response = json_response(code, body);
    for (name, value) in protocol.http_error_headers(status) {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(name, value);
        }
    }
    if let Some(secs) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

fn raw_response(status: u16, headers: Vec<(String, String)>, body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    match StatusCode::from_u16(status) {
        Ok(code) => *response.status_mut() = code,
        Err(_) => {
            let message =
                format!("mock provider: the script asks for invalid HTTP status {status}");
            return json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({ "error": message }).to_string(),
            );
        }
    }
    for (name, value) in headers {
        let parsed = (
            header::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        );
        let (Ok(name), Ok(value)) = parsed else {
            let message =
                format!("mock provider: the script asks for invalid header {name}: {value}");
            return json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({ "error": message }).to_string(),
            );
        };
        response.headers_mut().append(name, value);
    }
    response
}

pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
