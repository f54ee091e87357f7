//! The gateway's settings: OpenClaw's key names in `filo-embed.json` (`gateway.port`,
//! `gateway.bind`, `gateway.auth.token`, `messages.queue.*` …), with the command line and
//! `FILO_GATEWAY_TOKEN` on top. Values in, no environment reads.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use filo_embed::EmbedConfig;
use filo_embed::queue::{DropPolicy, QueueMode, QueueSettings};
use serde_json::Value;

/// OpenClaw's default port.
pub const DEFAULT_PORT: u16 = 18_789;
/// What a client may send in one frame once it is connected (OpenClaw's `maxPayload`).
pub const DEFAULT_MAX_PAYLOAD: usize = 25 * 1024 * 1024;
/// What a client may send before `connect` has succeeded.
pub const PREAUTH_MAX_PAYLOAD: usize = 64 * 1024;
/// Bytes waiting for a slow client before its partial replies are coalesced.
pub const DEFAULT_MAX_BUFFERED_BYTES: usize = 50 * 1024 * 1024;
/// The shortest token accepted off loopback.
pub const MIN_PUBLIC_TOKEN_CHARS: usize = 16;
/// OpenClaw's tick interval.
pub const DEFAULT_TICK_MS: u64 = 30_000;

/// Everything the gateway needs to know, resolved.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    pub bind: SocketAddr,
    /// The shared secret (`gateway.auth.token`, `--token`, `FILO_GATEWAY_TOKEN`); also accepted
    /// as OpenClaw's `auth.password`. `None` on loopback only: auth is off.
    pub token: Option<String>,
    pub max_payload: usize,
    pub max_buffered_bytes: usize,
    pub tick: Duration,
    /// How long a connection may take to authenticate.
    pub handshake_timeout: Duration,
    /// Connections that have not authenticated yet, at most (more are refused with 503).
    pub max_preauth_connections: usize,
    /// How long a client may stay over `max_buffered_bytes` before it is closed (1013).
    pub slow_client_grace: Duration,
    /// The minimum gap between a `chat.send` ack and its run's terminal event (OpenClaw's TUI
    /// misses a terminal event that arrives in the same read as the ack).
    pub terminal_gap: Duration,
    /// Follow-up queue defaults (`messages.queue.*`); a session entry can override them.
    pub queue: QueueSettings,
    /// How long running turns may take to finish when the gateway is asked to stop.
    pub drain_grace: Duration,
    /// Idempotency keys remembered, at most, and for how long.
    pub idempotency_capacity: usize,
    pub idempotency_ttl: Duration,
    /// The default agent.
    pub default_agent: String,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), DEFAULT_PORT),
            token: None,
            max_payload: DEFAULT_MAX_PAYLOAD,
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
            tick: Duration::from_millis(DEFAULT_TICK_MS),
            handshake_timeout: Duration::from_secs(10),
            max_preauth_connections: 1024,
            slow_client_grace: Duration::from_secs(5),
            terminal_gap: Duration::from_millis(30),
            queue: QueueSettings::default(),
            drain_grace: Duration::from_secs(30),
            idempotency_capacity: 10_000,
            idempotency_ttl: Duration::from_secs(600),
            default_agent: "main".into(),
        }
    }
}

/// A configuration the gateway refuses to start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GatewayConfigError {
    #[error(
        "refusing to listen on {0} without a token: set gateway.auth.token, --token or FILO_GATEWAY_TOKEN (auth may be off on loopback only)"
    )]
    NoTokenOffLoopback(SocketAddr),
    #[error(
        "refusing to listen on {0} with a token shorter than 16 characters: anyone who can reach the port could guess it (e.g. `openssl rand -hex 24`)"
    )]
    WeakToken(SocketAddr),
    #[error("invalid --bind {0:?}: expected host:port, e.g. 127.0.0.1:18789")]
    Bind(String),
    #[error("{key}: {reason}")]
    Value { key: &'static str, reason: String },
}

/// What the command line (and `main`'s environment) says, over the file.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub bind: Option<String>,
    pub token: Option<String>,
    /// `FILO_GATEWAY_TOKEN`, used when neither `--token` nor the file has one.
    pub env_token: Option<String>,
}

impl GatewayConfig {
    /// The gateway settings of `config` (its `gateway` and `messages.queue` sections) with the
    /// overrides applied; warnings name the key of a value that was ignored.
    pub fn resolve(
        config: &EmbedConfig,
        overrides: &Overrides,
    ) -> Result<(Self, Vec<String>), GatewayConfigError> {
        let mut warnings = Vec::new();
        let mut out = GatewayConfig::default();
        let raw = &config.raw;
        let port = match raw.pointer("/gateway/port") {
            None | Some(Value::Null) => DEFAULT_PORT,
            Some(v) => v
                .as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .ok_or_else(|| GatewayConfigError::Value {
                    key: "gateway.port",
                    reason: format!("expected a port number, got {v}"),
                })?,
        };
        let host = match raw.pointer("/gateway/bind").and_then(Value::as_str) {
            // OpenClaw's modes: loopback (default), lan, tailnet, auto, custom.
            None | Some("loopback") | Some("auto") => IpAddr::V4(Ipv4Addr::LOCALHOST),
            Some("lan") => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            Some(other) => other.parse().unwrap_or_else(|_| {
                warnings.push(format!(
                    "gateway.bind: {other:?} is not loopback, lan or an IP address; using loopback"
                ));
                IpAddr::V4(Ipv4Addr::LOCALHOST)
            }),
        };
        out.bind = SocketAddr::new(host, port);
        if let Some(b) = &overrides.bind {
            out.bind = parse_bind(b)?;
        }
        let file_token = raw
            .pointer("/gateway/auth/token")
            .or_else(|| raw.pointer("/gateway/auth/password"))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        out.token = overrides
            .token
            .clone()
            .or(file_token)
            .or_else(|| overrides.env_token.clone())
            .filter(|t| !t.is_empty());
        if !out.bind.ip().is_loopback() {
            match &out.token {
                None => return Err(GatewayConfigError::NoTokenOffLoopback(out.bind)),
                Some(t) if t.chars().count() < MIN_PUBLIC_TOKEN_CHARS => {
                    return Err(GatewayConfigError::WeakToken(out.bind));
                }
                Some(_) => {}
            }
        }
        let mut number = |key: &'static str, pointer: &str| -> Option<u64> {
            let v = raw.pointer(pointer)?;
            let n = v.as_u64();
            if n.is_none() && !v.is_null() {
                warnings.push(format!(
                    "{key}: expected a positive number, got {v}; ignored"
                ));
            }
            n
        };
        if let Some(n) = number("gateway.maxPayload", "/gateway/maxPayload") {
            out.max_payload = (n as usize).max(1024);
        }
        if let Some(n) = number("gateway.maxBufferedBytes", "/gateway/maxBufferedBytes") {
            out.max_buffered_bytes = (n as usize).max(64 * 1024);
        }
        if let Some(n) = number("gateway.tickIntervalMs", "/gateway/tickIntervalMs") {
            out.tick = Duration::from_millis(n.max(100));
        }
        if let Some(n) = number("gateway.handshakeTimeoutMs", "/gateway/handshakeTimeoutMs") {
            out.handshake_timeout = Duration::from_millis(n.max(10));
        }
        if let Some(n) = number(
            "gateway.maxPreauthConnections",
            "/gateway/maxPreauthConnections",
        ) {
            out.max_preauth_connections = n as usize;
        }
        if let Some(n) = number("gateway.drainGraceMs", "/gateway/drainGraceMs") {
            out.drain_grace = Duration::from_millis(n);
        }
        if let Some(n) = number("gateway.terminalGapMs", "/gateway/terminalGapMs") {
            out.terminal_gap = Duration::from_millis(n);
        }
        out.queue = queue_settings(raw.pointer("/messages/queue"), &mut warnings);
        if let Some(id) = config.agents.first().map(|a| a.id.clone()) {
            out.default_agent = filo_embed::session_key::normalize_agent_id(&id);
        }
        Ok((out, warnings))
    }
}

/// `messages.queue` (`mode`, `debounceMs`, `cap`, `drop`) over OpenClaw's defaults.
fn queue_settings(section: Option<&Value>, warnings: &mut Vec<String>) -> QueueSettings {
    let mut settings = QueueSettings::default();
    let Some(section) = section else {
        return settings;
    };
    let mode = match section.get("mode").and_then(Value::as_str) {
        None => settings.mode,
        Some(m) => QueueMode::parse(m).unwrap_or_else(|| {
            warnings.push(format!(
                "messages.queue.mode: {m:?} is not steer, followup, collect or interrupt; using collect"
            ));
            QueueMode::Collect
        }),
    };
    let drop = section.get("drop").and_then(Value::as_str).and_then(|d| {
        let p = DropPolicy::parse(d);
        if p.is_none() {
            warnings.push(format!(
                "messages.queue.drop: {d:?} is not old, new or summarize; ignored"
            ));
        }
        p
    });
    settings.apply(
        mode,
        section.get("debounceMs").and_then(Value::as_f64),
        section.get("cap").and_then(Value::as_f64),
        drop,
    );
    settings
}

/// `host:port` (`localhost` is loopback; a bare port binds loopback).
pub fn parse_bind(text: &str) -> Result<SocketAddr, GatewayConfigError> {
    let err = || GatewayConfigError::Bind(text.to_owned());
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Some(port) = text.strip_prefix("localhost:") {
        let port = port.parse().map_err(|_| err())?;
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    text.parse().map_err(|_| err())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resolve(raw: Value, o: Overrides) -> Result<GatewayConfig, GatewayConfigError> {
        GatewayConfig::resolve(&EmbedConfig::from_value(raw), &o).map(|(c, _)| c)
    }

    #[test]
    fn openclaw_keys_and_overrides() {
        let c = resolve(
            json!({"gateway": {"port": 19000, "auth": {"token": "file"}},
                   "messages": {"queue": {"mode": "steer", "debounceMs": 0, "cap": 3}}}),
            Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.bind, "127.0.0.1:19000".parse().unwrap());
        assert_eq!(c.token.as_deref(), Some("file"));
        assert_eq!(c.queue.mode, QueueMode::Steer);
        assert_eq!((c.queue.debounce_ms, c.queue.cap), (0, 3));
        let c = resolve(
            json!({"gateway": {"auth": {"token": "file"}}}),
            Overrides {
                bind: Some("127.0.0.1:0".into()),
                token: Some("flag".into()),
                env_token: Some("env".into()),
            },
        )
        .unwrap();
        assert_eq!(c.token.as_deref(), Some("flag"));
        assert_eq!(c.bind.port(), 0);
        let c = resolve(
            json!({}),
            Overrides {
                env_token: Some("env".into()),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert_eq!(c.token.as_deref(), Some("env"));
    }

    #[test]
    fn no_token_off_loopback_refuses() {
        let e = resolve(
            json!({}),
            Overrides {
                bind: Some("0.0.0.0:18789".into()),
                ..Overrides::default()
            },
        )
        .unwrap_err();
        assert!(matches!(e, GatewayConfigError::NoTokenOffLoopback(_)));
        assert!(e.to_string().contains("without a token"), "{e}");
        let e = resolve(
            json!({}),
            Overrides {
                bind: Some("0.0.0.0:18789".into()),
                token: Some("x".into()),
                ..Overrides::default()
            },
        )
        .unwrap_err();
        assert!(matches!(e, GatewayConfigError::WeakToken(_)), "{e}");
        assert!(e.to_string().contains("16 characters"), "{e}");
        let strong = Overrides {
            bind: Some("0.0.0.0:18789".into()),
            token: Some("0123456789abcdef".into()),
            ..Overrides::default()
        };
        assert!(resolve(json!({}), strong).is_ok());
        // Loopback keeps any token (tests and local tools use short ones).
        let local = Overrides {
            token: Some("x".into()),
            ..Overrides::default()
        };
        assert!(resolve(json!({}), local).is_ok());
        let e = resolve(json!({"gateway": {"bind": "lan"}}), Overrides::default()).unwrap_err();
        assert!(matches!(e, GatewayConfigError::NoTokenOffLoopback(_)));
        assert!(resolve(json!({"gateway": {"port": "x"}}), Overrides::default()).is_err());
        assert!(parse_bind("nonsense").is_err());
        assert_eq!(parse_bind("8080").unwrap().port(), 8080);
    }
}
