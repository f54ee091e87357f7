//! Harness: the mock provider as provider `openai`, an embedder over a temp state dir, a
//! gateway on 127.0.0.1:0 with a token, a WebSocket client and a small HTTP/1.1 client.

mod clients;
mod heavy;
mod hostile;
mod http;
mod idle;
mod isolation;
mod memory_cycle;
mod ws;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use filo_ai::{Env, ProviderRegistry};
use filo_embed::clock::SystemClock;
use filo_embed::{EmbedConfig, EmbedDeps, EmbedPaths, Embedder};
use filo_gateway::{Gateway, GatewayConfig, Overrides, RunningGateway};
use filo_testkit::{MockProvider, Protocol, Turn};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

pub const TOKEN: &str = "filo-test-token";

pub struct Gw {
    pub mock: MockProvider,
    pub dir: tempfile::TempDir,
    pub running: Option<RunningGateway>,
    pub addr: std::net::SocketAddr,
}

impl Gw {
    /// A gateway whose config is `config` (the model defaults to the mock's).
    pub async fn start(turns: Vec<Turn>, config: Value) -> Gw {
        let mock = MockProvider::start(turns).await;
        let dir = tempfile::tempdir().unwrap();
        let mut registry = ProviderRegistry::empty();
        let models = json!({"providers": {"openai": {"baseUrl": mock.base_url(Protocol::OpenAiCompletions),
            "api": "openai-completions", "apiKey": "OPENAI_API_KEY",
            "models": [{"id": "mock-model", "contextWindow": 100000, "maxTokens": 1000}]}}});
        registry.apply_models_json(&models.to_string()).unwrap();
        let paths = EmbedPaths::new(
            Some(dir.path().join("state")),
            dir.path().join("home"),
            dir.path().join("tmp"),
        );
        std::fs::create_dir_all(&paths.temp).unwrap();
        let mut config = config;
        if config.pointer("/agents/defaults/model").is_none() {
            config["agents"]["defaults"]["model"] = json!({"primary": "openai/mock-model"});
        }
        // Memory per test directory, never the user's.
        if config.pointer("/memory/db").is_none() {
            config["memory"]["db"] =
                json!(dir.path().join("state/playfilo.db").display().to_string());
        }
        let config = EmbedConfig::from_value(config);
        let (gw_config, _) = GatewayConfig::resolve(
            &config,
            &Overrides {
                bind: Some("127.0.0.1:0".into()),
                token: Some(TOKEN.into()),
                env_token: None,
            },
        )
        .unwrap();
        let embedder = Embedder::new(EmbedDeps {
            config,
            paths,
            registry,
            env: Env::from_vars([("OPENAI_API_KEY", "sk-test")]),
            client: None,
            clock: Arc::new(SystemClock),
            api_key: None,
        })
        .unwrap();
        let running = Gateway::new(embedder, gw_config).start().await.unwrap();
        let addr = running.addr;
        Gw {
            mock,
            dir,
            running: Some(running),
            addr,
        }
    }

    pub fn running(&self) -> &RunningGateway {
        self.running.as_ref().unwrap()
    }

    pub fn ws_url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    pub async fn ws(&self) -> Ws {
        let (ws, hello) = Ws::connect(&self.ws_url(), Some(TOKEN)).await;
        assert_eq!(hello["payload"]["type"], "hello-ok", "{hello}");
        ws
    }

    pub async fn http(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> HttpResponse {
        let mut all = vec![("authorization", format!("Bearer {TOKEN}"))];
        all.extend(headers.iter().map(|(k, v)| (*k, (*v).to_owned())));
        http(self.addr, method, path, body, &all).await
    }

    /// The transcript of `key` (agent main), from `sessions.json`.
    pub fn session_file(&self, key: &str) -> PathBuf {
        let dir = self.dir.path().join("state/agents/main/sessions");
        let store: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("sessions.json")).unwrap())
                .unwrap();
        let id = store[key]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no entry {key} in {store}"));
        dir.join(format!("{id}.jsonl"))
    }

    pub async fn stop(mut self) {
        if let Some(r) = self.running.take() {
            r.drain(Duration::from_secs(5)).await;
        }
        self.mock.shutdown().await;
    }
}

/// A chat message's role and its text (a string, or its parts' texts joined).
fn role_and_text(m: &Value) -> (String, String) {
    let content = match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    };
    (m["role"].as_str().unwrap_or("").to_owned(), content)
}

/// The user/assistant texts of a session file's messages, in order.
pub fn transcript(path: &std::path::Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "message")
        .map(|v| role_and_text(&v["message"]))
        .collect()
}

/// The (role, text) pairs of the chat messages in a recorded request body.
pub fn request_texts(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .map(|ms| ms.iter().map(role_and_text).collect())
        .unwrap_or_default()
}

type WsStream = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

/// A WebSocket client of the OpenClaw protocol.
pub struct Ws {
    pub stream: WsStream,
    next: u64,
    /// Frames read while waiting for something else.
    pub backlog: Vec<Value>,
}

/// How a connection ended, when it did.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    Close(u16),
    Gone,
}

impl Ws {
    /// Opens a socket and reads `connect.challenge`.
    pub async fn open(url: &str) -> Ws {
        let (stream, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        let mut ws = Ws {
            stream,
            next: 0,
            backlog: Vec::new(),
        };
        let challenge = ws.recv().await.expect("challenge");
        assert_eq!(challenge["event"], "connect.challenge", "{challenge}");
        assert!(
            challenge["payload"]["nonce"]
                .as_str()
                .is_some_and(|n| !n.is_empty())
        );
        assert!(challenge.get("seq").is_none());
        ws
    }

    /// Opens and connects like `openclaw agent`; returns the `connect` response.
    pub async fn connect(url: &str, token: Option<&str>) -> (Ws, Value) {
        let mut ws = Ws::open(url).await;
        let mut params = json!({"minProtocol": 4, "maxProtocol": 4,
            "client": {"id": "cli", "version": "2026.9.6", "platform": "linux", "mode": "cli"},
            "caps": [], "role": "operator", "scopes": ["operator.admin"]});
        if let Some(t) = token {
            params["auth"] = json!({"token": t});
        }
        let id = ws.send("connect", params).await;
        let res = ws.until_res(&id).await;
        (ws, res)
    }

    pub async fn send_text(&mut self, text: String) {
        self.stream.send(Message::Text(text.into())).await.unwrap();
    }

    /// Sends a request; returns its id.
    pub async fn send(&mut self, method: &str, params: Value) -> String {
        self.next += 1;
        let id = format!("{}:{}", self.next, uuid::Uuid::new_v4());
        let frame = json!({"type": "req", "id": id, "method": method, "params": params});
        self.send_text(frame.to_string()).await;
        id
    }

    /// Sends `chat.send` with `params` and returns its ack.
    pub async fn chat_send(&mut self, params: Value) -> Value {
        let id = self.send("chat.send", params).await;
        self.until_res(&id).await
    }

    /// The next JSON frame (10 s at most), or `None` when the socket ended.
    pub async fn recv(&mut self) -> Option<Value> {
        self.recv_raw().await.ok()
    }

    async fn recv_raw(&mut self) -> Result<Value, Ended> {
        loop {
            let next = tokio::time::timeout(Duration::from_secs(10), self.stream.next())
                .await
                .expect("no frame within 10 s");
            match next {
                Some(Ok(Message::Text(t))) => return Ok(serde_json::from_str(t.as_str()).unwrap()),
                Some(Ok(Message::Close(c))) => {
                    return Err(Ended::Close(c.map(|c| u16::from(c.code)).unwrap_or(1005)));
                }
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return Err(Ended::Gone),
            }
        }
    }

    /// Reads until the socket closes; returns the close code.
    pub async fn closed(&mut self) -> Ended {
        loop {
            match self.recv_raw().await {
                Ok(v) => self.backlog.push(v),
                Err(e) => return e,
            }
        }
    }

    /// Reads until a response with `id` (events are kept in the backlog).
    pub async fn until_res(&mut self, id: &str) -> Value {
        if let Some(i) = self
            .backlog
            .iter()
            .position(|v| v["type"] == "res" && v["id"] == id)
        {
            return self.backlog.remove(i);
        }
        loop {
            let v = self.recv().await.expect("socket ended before the response");
            if v["type"] == "res" && v["id"] == id {
                return v;
            }
            self.backlog.push(v);
        }
    }

    /// Reads until an event that `pred` accepts.
    pub async fn until_event(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self
            .backlog
            .iter()
            .position(|v| v["type"] == "event" && pred(v))
        {
            return self.backlog.remove(i);
        }
        loop {
            let v = self.recv().await.expect("socket ended before the event");
            if v["type"] == "event" && pred(&v) {
                return v;
            }
            self.backlog.push(v);
        }
    }

    /// Every `chat` event of `run_id` up to and including its terminal one.
    pub async fn chat_until_terminal(&mut self, run_id: &str) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let e = self
                .until_event(|v| v["event"] == "chat" && v["payload"]["runId"] == run_id)
                .await;
            let terminal = e["payload"]["state"] != "delta";
            out.push(e);
            if terminal {
                return out;
            }
        }
    }
}

pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpResponse {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `data:` payloads of an SSE body, in order.
    pub fn sse_data(&self) -> Vec<String> {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:").map(|d| d.trim_start().to_owned()))
            .collect()
    }

    /// `(event, data)` of an SSE body.
    pub fn sse_events(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut event = String::from("message");
        for l in self.body.lines() {
            if let Some(e) = l.strip_prefix("event:") {
                event = e.trim().to_owned();
            } else if let Some(d) = l.strip_prefix("data:") {
                out.push((event.clone(), d.trim_start().to_owned()));
                event = "message".into();
            }
        }
        out
    }
}

/// One HTTP/1.1 request with `Connection: close`, the whole response read (chunked decoded).
pub async fn http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
    headers: &[(&str, String)],
) -> HttpResponse {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut raw))
        .await
        .expect("response within 20 s")
        .unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    HttpResponse {
        status,
        headers,
        body,
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n..];
        s = s.strip_prefix("\r\n").unwrap_or(s);
    }
    out
}
