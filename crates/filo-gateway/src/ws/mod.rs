//! One WebSocket connection, OpenClaw protocol 4 (`../shared/specs/openclaw-gateway.md`
//! §2–§6): `connect.challenge` → `connect` → `hello-ok`, then requests dispatched concurrently,
//! events with a per-connection `seq` (1, 2, 3 … after filtering), `tick` every interval.
//!
//! Close codes: 1008 for a handshake that is not a valid `connect` (or a wrong token) or that
//! does not come in time, 1002 for a protocol mismatch, 1009 for a frame over the limit (64 KiB
//! before `connect`, `maxPayload` after), 1003 for a binary frame, 1007 for a frame that is not
//! JSON after the handshake, 1013 for a client too slow to read its events, 1012 when the
//! gateway stops.

mod methods;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::auth;
use crate::config::PREAUTH_MAX_PAYLOAD;
use crate::core::Core;
use crate::frames::{MIN_PROBE_PROTOCOL, PROTOCOL};
use crate::hub::{EventFrame, Out, Outbox};

pub(crate) use methods::shutdown_event;

/// The connections waiting to authenticate, oldest first: past `max_preauth_connections` the
/// oldest is let go (closed 1013) to make room, so sockets that never authenticate cannot keep
/// a client that does from connecting; each also has the handshake timeout.
#[derive(Default)]
pub struct Waiting {
    next: u64,
    queue: std::collections::VecDeque<(u64, CancellationToken)>,
}

/// A connection that has not authenticated yet; released on drop.
pub struct PreauthSlot {
    core: Arc<Core>,
    id: u64,
    /// Cancelled when a newer connection needs the room.
    evicted: CancellationToken,
}

impl Drop for PreauthSlot {
    fn drop(&mut self) {
        let mut w = crate::core::lock(&self.core.preauth);
        if let Some(i) = w.queue.iter().position(|(id, _)| *id == self.id) {
            w.queue.remove(i);
        }
    }
}

impl PreauthSlot {
    /// A slot; when `max_preauth_connections` are already waiting, the oldest gives up its own.
    pub fn take(core: &Arc<Core>) -> Self {
        let mut w = crate::core::lock(&core.preauth);
        while w.queue.len() >= core.config.max_preauth_connections.max(1) {
            match w.queue.pop_front() {
                Some((_, oldest)) => {
                    core.metrics.preauth_evicted.fetch_add(1, Ordering::Relaxed);
                    oldest.cancel();
                }
                None => break,
            }
        }
        w.next += 1;
        let id = w.next;
        let evicted = CancellationToken::new();
        w.queue.push_back((id, evicted.clone()));
        PreauthSlot {
            core: core.clone(),
            id,
            evicted,
        }
    }
}

/// What the client said about itself in `connect`.
#[derive(Debug, Clone)]
pub(crate) struct ClientInfo {
    pub scopes: Vec<String>,
    /// The id of the `connect` request, answered by `hello-ok`.
    pub connect_id: String,
}

/// The state a request handler sees.
pub(crate) struct Conn {
    pub core: Arc<Core>,
    pub id: u64,
    pub outbox: Arc<Outbox>,
    pub client: ClientInfo,
}

impl Conn {
    pub fn respond(&self, id: &str, result: Result<Value, ErrorShape>) {
        let frame = match result {
            Ok(payload) => json!({"type": "res", "id": id, "ok": true, "payload": payload}),
            Err(e) => json!({"type": "res", "id": id, "ok": false, "error": e.to_json()}),
        };
        self.outbox.push(Out::Res(frame.to_string()));
    }
}

/// An error response (`{code, message, details?}`).
#[derive(Debug, Clone)]
pub(crate) struct ErrorShape {
    pub code: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ErrorShape {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            code: "INVALID_REQUEST",
            message: message.into(),
            details: None,
        }
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self {
            code: "UNAVAILABLE",
            message: message.into(),
            details: None,
        }
    }

    fn to_json(&self) -> Value {
        let mut v = json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        if self.code == "UNAVAILABLE" {
            v["retryable"] = Value::Bool(true);
        }
        v
    }
}

impl From<crate::sessions::ApiError> for ErrorShape {
    fn from(e: crate::sessions::ApiError) -> Self {
        use crate::sessions::ApiError;
        match e {
            ApiError::Invalid(m) | ApiError::NotFound(m) => ErrorShape::invalid(m),
            ApiError::Unavailable(m) | ApiError::Internal(m) => ErrorShape::unavailable(m),
        }
    }
}

type WsSink = futures::stream::SplitSink<WebSocket, Message>;

async fn close(sink: &mut WsSink, code: u16, reason: &str) {
    let frame = CloseFrame {
        code,
        reason: Utf8Bytes::from(reason),
    };
    if sink.send(Message::Close(Some(frame))).await.is_err() {
        // After the peer's own close frame nothing more may be sent, but tungstenite has
        // queued the echo that completes the closing handshake (without it the client sees
        // 1006); a flush writes it. The peer may also be gone: nobody left to tell.
        let _gone = sink.flush().await;
    }
}

async fn send_json(sink: &mut WsSink, v: &Value) -> bool {
    sink.send(Message::Text(v.to_string().into())).await.is_ok()
}

/// Serves one upgraded socket until it closes. `header_token` is a bearer token sent with the
/// upgrade request (accepted like `auth.token`).
pub async fn serve(
    core: Arc<Core>,
    socket: WebSocket,
    header_token: Option<String>,
    slot: PreauthSlot,
) {
    let (mut sink, mut stream) = socket.split();
    let nonce = uuid::Uuid::new_v4().to_string();
    let challenge = json!({"type": "event", "event": "connect.challenge",
        "payload": {"nonce": nonce, "ts": filo_ai::client::now_ms()}});
    if !send_json(&mut sink, &challenge).await {
        return;
    }
    let evicted = slot.evicted.clone();
    let shaken = tokio::select! {
        c = handshake(&core, &mut sink, &mut stream, header_token.as_deref()) => c,
        () = evicted.cancelled() => {
            close(&mut sink, 1013, "too many connections waiting to authenticate; try again").await;
            None
        }
    };
    let Some(client) = shaken else {
        return;
    };
    drop(slot);
    let outbox = Arc::new(Outbox::new(
        core.config.max_buffered_bytes,
        core.config.slow_client_grace,
    ));
    let id = core.hub.register(outbox.clone());
    core.metrics.ws_connections.fetch_add(1, Ordering::Relaxed);
    let conn = Arc::new(Conn {
        core: core.clone(),
        id,
        outbox: outbox.clone(),
        client,
    });
    conn.respond(&conn.client.connect_id, Ok(methods::hello_ok(&conn)));
    let done = CancellationToken::new();
    let mut writer = tokio::spawn(write_loop(core.clone(), outbox.clone(), sink, done.clone()));
    read_loop(conn.clone(), &mut stream, done.clone()).await;
    // A close asked for while reading (its code) wins over this one.
    outbox.close(1000, "bye");
    core.hub.unregister(id);
    core.metrics.ws_connections.fetch_sub(1, Ordering::Relaxed);
    // The writer sends what is queued and the close frame, unless the peer stopped reading.
    if tokio::time::timeout(std::time::Duration::from_secs(2), &mut writer)
        .await
        .is_err()
    {
        done.cancel();
        let _ended = writer.await;
    }
}

/// Reads the first frame: it must be `connect` with an acceptable protocol and token.
async fn handshake(
    core: &Arc<Core>,
    sink: &mut WsSink,
    stream: &mut futures::stream::SplitStream<WebSocket>,
    header_token: Option<&str>,
) -> Option<ClientInfo> {
    let first = tokio::time::timeout(core.config.handshake_timeout, stream.next()).await;
    let text = match first {
        Err(_) => {
            close(sink, 1008, "handshake timeout: send connect").await;
            return None;
        }
        Ok(None) | Ok(Some(Err(_))) => return None,
        Ok(Some(Ok(Message::Text(t)))) => t,
        Ok(Some(Ok(Message::Binary(_)))) => {
            close(sink, 1003, "binary frames are not accepted").await;
            return None;
        }
        Ok(Some(Ok(_))) => {
            close(
                sink,
                1008,
                "invalid handshake: first frame must be a connect request",
            )
            .await;
            return None;
        }
    };
    if text.len() > PREAUTH_MAX_PAYLOAD {
        close(sink, 1009, "frame too large before connect (64 KiB)").await;
        return None;
    }
    let frame: Value = match serde_json::from_str(text.as_str()) {
        Ok(v) => v,
        Err(_) => {
            close(sink, 1008, "invalid handshake: not JSON").await;
            return None;
        }
    };
    let id = frame
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let refuse = |code: &'static str, message: String, details: Option<Value>| {
        let e = ErrorShape {
            code,
            message,
            details,
        };
        json!({"type": "res", "id": id, "ok": false, "error": e.to_json()})
    };
    if frame.get("type").and_then(Value::as_str) != Some("req")
        || frame.get("method").and_then(Value::as_str) != Some("connect")
        || id.is_empty()
    {
        let msg = "invalid handshake: first request must be connect".to_owned();
        send_json(sink, &refuse("INVALID_REQUEST", msg, None)).await;
        close(sink, 1008, "invalid handshake").await;
        return None;
    }
    let params = frame.get("params").cloned().unwrap_or(Value::Null);
    let min = params
        .get("minProtocol")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let max = params
        .get("maxProtocol")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let probe = params.pointer("/client/mode").and_then(Value::as_str) == Some("probe");
    let fits = min <= PROTOCOL && PROTOCOL <= max;
    let probe_fits = probe && MIN_PROBE_PROTOCOL <= max && min <= PROTOCOL;
    if !fits && !probe_fits {
        let details = json!({"code": "PROTOCOL_MISMATCH", "clientMinProtocol": min,
            "clientMaxProtocol": max, "expectedProtocol": PROTOCOL, "minimumProbeProtocol": MIN_PROBE_PROTOCOL});
        let r = refuse("INVALID_REQUEST", "protocol mismatch".into(), Some(details));
        send_json(sink, &r).await;
        close(sink, 1002, "protocol mismatch").await;
        return None;
    }
    let given = params
        .pointer("/auth/token")
        .or_else(|| params.pointer("/auth/password"))
        .and_then(Value::as_str)
        .or(header_token);
    if let Err(f) = auth::check(core.config.token.as_deref(), given) {
        core.metrics.auth_failures.fetch_add(1, Ordering::Relaxed);
        let r = refuse(
            "INVALID_REQUEST",
            f.message().into(),
            Some(json!({"code": f.code()})),
        );
        send_json(sink, &r).await;
        close(sink, 1008, f.message()).await;
        return None;
    }
    let scopes: Vec<String> = params
        .get("scopes")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_else(|| vec!["operator.admin".into()]);
    Some(ClientInfo {
        scopes,
        connect_id: id,
    })
}

async fn read_loop(
    conn: Arc<Conn>,
    stream: &mut futures::stream::SplitStream<WebSocket>,
    done: CancellationToken,
) {
    let mut tasks = JoinSet::new();
    loop {
        let msg = tokio::select! {
            () = done.cancelled() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            m = stream.next() => m,
        };
        let text = match msg {
            None => break,
            Some(Err(e)) => {
                let e = e.to_string();
                if e.contains("too long") || e.contains("too big") {
                    conn.outbox.close(1009, "frame larger than maxPayload");
                }
                break;
            }
            Some(Ok(Message::Text(t))) => t,
            Some(Ok(Message::Binary(_))) => {
                conn.outbox.close(1003, "binary frames are not accepted");
                break;
            }
            Some(Ok(Message::Close(_))) => break,
            Some(Ok(_)) => continue,
        };
        let frame: Value = match serde_json::from_str(text.as_str()) {
            Ok(v) => v,
            Err(_) => {
                conn.outbox.close(1007, "frames must be JSON");
                break;
            }
        };
        let id = frame
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let method = frame
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if frame.get("type").and_then(Value::as_str) != Some("req")
            || id.is_empty()
            || method.is_empty()
        {
            conn.respond(
                &id,
                Err(ErrorShape::invalid(
                    "invalid request frame: expected {type:\"req\", id, method, params?}",
                )),
            );
            continue;
        }
        let params = frame.get("params").cloned().unwrap_or_else(|| json!({}));
        let c = conn.clone();
        tasks.spawn(async move { methods::dispatch(&c, &id, &method, params).await });
    }
    // Requests still waiting (an `agent` final) go with the connection; their runs go on.
    tasks.abort_all();
}

async fn write_loop(
    core: Arc<Core>,
    outbox: Arc<Outbox>,
    mut sink: WsSink,
    done: CancellationToken,
) {
    let mut seq: u64 = 0;
    let mut tick = tokio::time::interval(core.config.tick);
    tick.tick().await;
    loop {
        let text = tokio::select! {
            biased;
            next = outbox.next() => match next {
                Ok(Out::Res(s)) => s,
                Ok(Out::Event(e)) => {
                    seq += 1;
                    event_text(&e, seq)
                }
                Err(c) => {
                    close(&mut sink, c.code, &c.reason).await;
                    break;
                }
            },
            _ = tick.tick() => {
                seq += 1;
                let e = EventFrame::new("tick", &json!({"ts": filo_ai::client::now_ms()}));
                event_text(&e, seq)
            }
            () = done.cancelled() => break,
        };
        if sink.send(Message::Text(text.into())).await.is_err() {
            break;
        }
    }
    // A send fails once the peer has sent its close frame; the echo tungstenite queued for it
    // still goes out with a flush (unless the peer stopped reading: then `done` ends this).
    tokio::select! {
        _flushed = sink.flush() => {}
        () = done.cancelled() => {}
    }
    done.cancel();
}

fn event_text(e: &EventFrame, seq: u64) -> String {
    let name = serde_json::to_string(&*e.name).unwrap_or_else(|_| "\"\"".into());
    format!(
        "{{\"type\":\"event\",\"event\":{name},\"payload\":{},\"seq\":{seq}}}",
        e.payload
    )
}
