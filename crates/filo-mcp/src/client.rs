//! One configured server: connecting over stdio or streamable HTTP (rmcp), its tools and
//! instructions, calls bounded by the server's timeout, and reconnecting with backoff when the
//! connection is gone.
//!
//! A server can only fail its own calls: every request is bounded by the server's `timeout` and
//! the turn's cancellation, an incoming message is capped by rmcp (16 MiB a line or event), and a
//! dead server is reported by name with the tail of its stderr.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::service::{RoleClient, RunningService};
use rmcp::{ServiceExt, model};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::{ResolveError, ServerConfig, Transport, expand_home, resolve_value};

/// How long connecting (spawn, initialize, list tools) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most stderr kept per server (its tail is shown when it fails).
const STDERR_TAIL: usize = 4096;
/// Backoff after consecutive failed connects: 1 s doubling to 30 s.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// The most tools or resources listed from one server.
const MAX_LISTED: usize = 10_000;

/// What went wrong with a server; every variant names it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    #[error("MCP server \"{server}\": {source}")]
    Config {
        server: String,
        #[source]
        source: ResolveError,
    },
    #[error("MCP server \"{server}\" failed to start: {reason}")]
    Spawn { server: String, reason: String },
    #[error("MCP server \"{server}\" failed to connect: {reason}")]
    Connect { server: String, reason: String },
    #[error("MCP server \"{server}\" is disabled")]
    Disabled { server: String },
    #[error("MCP server \"{server}\": {method} timed out after {secs} s")]
    Timeout {
        server: String,
        method: String,
        secs: u64,
    },
    #[error("MCP server \"{server}\": {method} failed: {reason}")]
    Request {
        server: String,
        method: String,
        reason: String,
    },
    #[error("MCP server \"{server}\" disconnected during {method}: {reason}")]
    Disconnected {
        server: String,
        method: String,
        reason: String,
    },
    #[error("MCP server \"{server}\": {method} was cancelled")]
    Cancelled { server: String, method: String },
}

/// Reads the environment variables a configuration names.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// A live connection.
pub struct Connection {
    service: RunningService<RoleClient, model::ClientConfig>,
    pub instructions: Option<String>,
    /// `tools/list` as JSON objects (`name`, `description`, `inputSchema`, …).
    pub tools: Vec<Value>,
    pub has_resources: bool,
}

/// Where a server stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    NotConnected,
    Connected,
    Failed(String),
    Disabled,
}

struct Backoff {
    failures: u32,
    until: Option<Instant>,
    last_error: Option<McpError>,
}

/// One configured server.
pub struct Server {
    pub config: ServerConfig,
    cwd: std::path::PathBuf,
    home: Option<std::path::PathBuf>,
    env: EnvLookup,
    conn: tokio::sync::Mutex<Option<Arc<Connection>>>,
    backoff: Mutex<Backoff>,
    status: Mutex<Status>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Server {
    pub fn new(
        config: ServerConfig,
        cwd: std::path::PathBuf,
        home: Option<std::path::PathBuf>,
        env: EnvLookup,
    ) -> Server {
        let status = if config.enabled {
            Status::NotConnected
        } else {
            Status::Disabled
        };
        Server {
            config,
            cwd,
            home,
            env,
            conn: tokio::sync::Mutex::new(None),
            backoff: Mutex::new(Backoff {
                failures: 0,
                until: None,
                last_error: None,
            }),
            status: Mutex::new(status),
            stderr: Arc::new(Mutex::new(Vec::new())),
        }
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn status(&self) -> Status {
        lock(&self.status).clone()
    }

    /// The last lines the server wrote to stderr (stdio servers).
    pub fn stderr_tail(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stderr))
            .trim()
            .to_string()
    }

    fn name_err(&self) -> String {
        self.config.name.clone()
    }

    /// The live connection if there is one now (without connecting or waiting).
    pub fn connection_now(&self) -> Option<Arc<Connection>> {
        self.conn.try_lock().ok().and_then(|c| c.clone())
    }

    /// The live connection, connecting (or reconnecting after the backoff) when there is none.
    pub async fn connection(&self) -> Result<Arc<Connection>, McpError> {
        if !self.config.enabled {
            return Err(McpError::Disabled {
                server: self.name_err(),
            });
        }
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref() {
            if !c.service.is_closed() {
                return Ok(c.clone());
            }
            *slot = None;
        }
        {
            let b = lock(&self.backoff);
            if let (Some(until), Some(err)) = (b.until, &b.last_error)
                && Instant::now() < until
            {
                return Err(err.clone());
            }
        }
        match self.connect().await {
            Ok(c) => {
                let c = Arc::new(c);
                *slot = Some(c.clone());
                *lock(&self.backoff) = Backoff {
                    failures: 0,
                    until: None,
                    last_error: None,
                };
                *lock(&self.status) = Status::Connected;
                Ok(c)
            }
            Err(e) => {
                let mut b = lock(&self.backoff);
                let wait = Duration::from_secs(1u64 << b.failures.min(5)).min(BACKOFF_MAX);
                b.failures = b.failures.saturating_add(1);
                b.until = Some(Instant::now() + wait);
                b.last_error = Some(e.clone());
                *lock(&self.status) = Status::Failed(self.describe(&e));
                Err(e)
            }
        }
    }

    /// The error with the tail of the server's stderr, for the user.
    pub fn describe(&self, e: &McpError) -> String {
        let tail = self.stderr_tail();
        if tail.is_empty() {
            e.to_string()
        } else {
            let last: Vec<&str> = tail.lines().rev().take(5).collect();
            let last: Vec<&str> = last.into_iter().rev().collect();
            format!("{e}\n  stderr: {}", last.join("\n  stderr: "))
        }
    }

    async fn connect(&self) -> Result<Connection, McpError> {
        let limit = CONNECT_TIMEOUT.min(self.config.timeout.max(Duration::from_secs(10)));
        match tokio::time::timeout(limit, self.connect_inner()).await {
            Ok(r) => r,
            Err(_) => Err(McpError::Timeout {
                server: self.name_err(),
                method: "initialize".into(),
                secs: limit.as_secs(),
            }),
        }
    }

    fn resolve(&self, value: &str, what: &str) -> Result<String, McpError> {
        let env = self.env.clone();
        resolve_value(value, what, &move |k| env(k)).map_err(|source| McpError::Config {
            server: self.name_err(),
            source,
        })
    }

    async fn connect_inner(&self) -> Result<Connection, McpError> {
        let info: model::ClientConfig = serde_json::from_value(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "filo", "version": env!("CARGO_PKG_VERSION")}
        }))
        .map_err(|e| self.connect_err(e))?;
        let service = match &self.config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut resolved = BTreeMap::new();
                for (k, v) in env {
                    resolved.insert(k.clone(), self.resolve(v, &format!("env \"{k}\""))?);
                }
                let home = self.home.as_deref();
                let mut cmd = tokio::process::Command::new(expand_home(command, home));
                cmd.args(args.iter().map(|a| expand_home(a, home)));
                cmd.envs(&resolved);
                let dir = match cwd {
                    Some(c) => self.cwd.join(expand_home(c, home)),
                    None => self.cwd.clone(),
                };
                cmd.current_dir(dir);
                let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
                wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
                wrapped.wrap(process_wrap::tokio::KillOnDrop);
                let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(wrapped)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| McpError::Spawn {
                        server: self.name_err(),
                        reason: format!("{}: {e}", command),
                    })?;
                if let Some(stderr) = stderr {
                    lock(&self.stderr).clear();
                    tokio::spawn(keep_tail(stderr, self.stderr.clone()));
                }
                info.serve(transport)
                    .await
                    .map_err(|e| self.connect_err(e))?
            }
            Transport::Http { url, headers } => {
                let mut map = std::collections::HashMap::new();
                for (k, v) in headers {
                    let value = self.resolve(v, &format!("header \"{k}\""))?;
                    let name = http::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|e| self.connect_err(format!("header \"{k}\": {e}")))?;
                    let value = http::HeaderValue::from_str(&value)
                        .map_err(|e| self.connect_err(format!("header \"{k}\": {e}")))?;
                    map.insert(name, value);
                }
                let config =
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                        url.as_str(),
                    )
                    .custom_headers(map);
                let client = http_client().map_err(|e| self.connect_err(e))?;
                let transport =
                    rmcp::transport::StreamableHttpClientTransport::with_client(client, config);
                info.serve(transport)
                    .await
                    .map_err(|e| self.connect_err(e))?
            }
        };
        let peer_info = service.peer_info();
        let instructions = peer_info.as_ref().and_then(|i| i.instructions.clone());
        let has_resources = peer_info
            .as_ref()
            .is_some_and(|i| i.capabilities.resources.is_some());
        let tools = match tokio::time::timeout(self.config.timeout, service.peer().list_all_tools())
            .await
        {
            Ok(Ok(tools)) => tools
                .into_iter()
                .take(MAX_LISTED)
                .filter_map(|t| serde_json::to_value(t).ok())
                .collect(),
            Ok(Err(e)) => return Err(self.connect_err(format!("tools/list: {e}"))),
            Err(_) => {
                return Err(McpError::Timeout {
                    server: self.name_err(),
                    method: "tools/list".into(),
                    secs: self.config.timeout.as_secs(),
                });
            }
        };
        Ok(Connection {
            service,
            instructions,
            tools,
            has_resources,
        })
    }

    fn connect_err(&self, e: impl std::fmt::Display) -> McpError {
        McpError::Connect {
            server: self.name_err(),
            reason: e.to_string(),
        }
    }

    /// Send one request through the live connection, bounded by the timeout and `cancel`; a
    /// connection found closed afterwards is dropped so the next call reconnects.
    pub async fn request<T, F, Fut>(
        &self,
        method: &str,
        cancel: &CancellationToken,
        make: F,
    ) -> Result<T, McpError>
    where
        F: FnOnce(rmcp::Peer<RoleClient>) -> Fut,
        Fut: std::future::Future<Output = Result<T, rmcp::ServiceError>>,
    {
        let conn = self.connection().await?;
        let peer = conn.service.peer().clone();
        let secs = self.config.timeout.as_secs();
        let outcome = tokio::select! {
            () = cancel.cancelled() => Err(McpError::Cancelled { server: self.name_err(), method: method.into() }),
            r = tokio::time::timeout(self.config.timeout, make(peer)) => match r {
                Err(_) => Err(McpError::Timeout { server: self.name_err(), method: method.into(), secs }),
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(self.classify(method, &conn, e)),
            },
        };
        if conn.service.is_closed() || matches!(outcome, Err(McpError::Disconnected { .. })) {
            self.drop_connection(&conn).await;
        }
        outcome
    }

    fn classify(&self, method: &str, conn: &Connection, e: rmcp::ServiceError) -> McpError {
        let closed = conn.service.is_closed()
            || matches!(
                e,
                rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
            );
        if closed {
            *lock(&self.status) = Status::Failed(format!("disconnected: {e}"));
            McpError::Disconnected {
                server: self.name_err(),
                method: method.into(),
                reason: self.with_stderr(e.to_string()),
            }
        } else {
            McpError::Request {
                server: self.name_err(),
                method: method.into(),
                reason: e.to_string(),
            }
        }
    }

    fn with_stderr(&self, reason: String) -> String {
        let tail = self.stderr_tail();
        match tail.lines().last() {
            Some(line) if !line.is_empty() => format!("{reason} (stderr: {line})"),
            _ => reason,
        }
    }

    async fn drop_connection(&self, conn: &Arc<Connection>) {
        let mut slot = self.conn.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn))
            && let Some(c) = slot.take()
        {
            c.service.cancellation_token().cancel();
        }
    }

    /// Close the connection (a stdio server is stopped: stdin closed, then its process group
    /// killed).
    pub async fn close(&self) {
        let taken = self.conn.lock().await.take();
        if let Some(c) = taken {
            c.service.cancellation_token().cancel();
        }
    }

    /// `tools/call`: the raw `CallToolResult` as JSON.
    pub async fn call_tool(
        &self,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
    ) -> Result<Value, McpError> {
        let params: model::CallToolRequestParams = serde_json::from_value(json!({
            "name": tool,
            "arguments": if args.is_object() { args } else { json!({}) },
        }))
        .map_err(|e| McpError::Request {
            server: self.name_err(),
            method: "tools/call".into(),
            reason: e.to_string(),
        })?;
        let r = self
            .request("tools/call", cancel, |peer| async move {
                peer.call_tool(params).await
            })
            .await?;
        serde_json::to_value(r).map_err(|e| McpError::Request {
            server: self.name_err(),
            method: "tools/call".into(),
            reason: e.to_string(),
        })
    }

    /// A paginated list method (`resources/list`, `resources/templates/list`) as JSON.
    pub async fn list_page(
        &self,
        method: &str,
        cursor: Option<String>,
        cancel: &CancellationToken,
    ) -> Result<Value, McpError> {
        let params: Option<model::PaginatedRequestParams> = cursor
            .map(|c| serde_json::from_value(json!({"cursor": c})))
            .transpose()
            .map_err(|e| McpError::Request {
                server: self.name_err(),
                method: method.into(),
                reason: e.to_string(),
            })?;
        let templates = method == "resources/templates/list";
        let v = self
            .request(method, cancel, |peer| async move {
                if templates {
                    peer.list_resource_templates(params)
                        .await
                        .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
                } else {
                    peer.list_resources(params)
                        .await
                        .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
                }
            })
            .await?;
        Ok(v)
    }

    /// Every page of a list method, up to [`MAX_LISTED`] items.
    pub async fn list_all(
        &self,
        method: &str,
        key: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<Value>, McpError> {
        let mut items = Vec::new();
        let mut cursor = None;
        for _ in 0..1000 {
            let page = self.list_page(method, cursor.take(), cancel).await?;
            items.extend(
                page.get(key)
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            );
            cursor = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_string);
            if cursor.is_none() || items.len() >= MAX_LISTED {
                break;
            }
        }
        items.truncate(MAX_LISTED);
        Ok(items)
    }

    /// `resources/read` as JSON.
    pub async fn read_resource(
        &self,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<Value, McpError> {
        let params: model::ReadResourceRequestParams = serde_json::from_value(json!({"uri": uri}))
            .map_err(|e| McpError::Request {
                server: self.name_err(),
                method: "resources/read".into(),
                reason: e.to_string(),
            })?;
        self.request("resources/read", cancel, |peer| async move {
            peer.read_resource(params)
                .await
                .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
        })
        .await
    }
}

/// Keep the last [`STDERR_TAIL`] bytes a server writes to stderr.
async fn keep_tail(mut stderr: tokio::process::ChildStderr, tail: Arc<Mutex<Vec<u8>>>) {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut t = lock(&tail);
        t.extend_from_slice(&buf[..n]);
        if t.len() > STDERR_TAIL {
            let cut = t.len() - STDERR_TAIL;
            t.drain(..cut);
        }
    }
}

/// The HTTP client for remote servers: reqwest over rustls with ring and the platform's
/// verifier, the same stack as filo-ai (no second TLS library).
fn http_client() -> Result<reqwest::Client, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
        .map_err(|e| format!("TLS verifier: {e}"))?;
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS versions: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())
}
