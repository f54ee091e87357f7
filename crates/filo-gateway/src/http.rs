//! HTTP on the gateway's port: health probes, `/metrics`, the session routes of design §5, the
//! OpenAI-compatible API (`openai`), and the WebSocket upgrade on `/` (and `/ws`).
//!
//! Every route but the health probes needs `Authorization: Bearer <token>` when a token is set.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;
use serde_json::{Value, json};

use crate::auth;
use crate::core::{Accepted, Core, Submit, SubmitError};
use crate::outcome::{RunEvent, RunOutcome};
use crate::sessions::{self, ApiError};
use crate::ws;

/// The gateway's routes.
pub fn router(core: Arc<Core>) -> Router {
    let limit = core.config.max_payload;
    Router::new()
        .route("/health", get(health))
        .route("/healthz", get(health))
        .route("/ready", get(ready))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics))
        .route("/v1/models", get(crate::openai::models))
        .route(
            "/v1/chat/completions",
            post(crate::openai::chat_completions),
        )
        .route("/v1/responses", post(crate::openai::responses))
        .route("/v1/sessions", get(list_sessions))
        .route(
            "/v1/sessions/{key}",
            axum::routing::patch(patch_session).get(describe_session),
        )
        .route("/v1/sessions/{key}/messages", post(post_message))
        .route("/v1/sessions/{key}/abort", post(abort_session))
        .route("/v1/sessions/{key}/reset", post(reset_session))
        .route("/v1/sessions/{key}/history", get(session_history))
        .route("/", get(upgrade))
        .route("/ws", get(upgrade))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(core)
}

/// A JSON error body (OpenAI's shape, which every client here can read).
pub(crate) fn error(status: StatusCode, kind: &str, message: impl Into<String>) -> Response {
    let body = json!({"error": {"message": message.into(), "type": kind}});
    (status, json_headers(), body.to_string()).into_response()
}

/// A run that ended without telling its outcome (its task failed).
pub(crate) fn no_result() -> Response {
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "the run ended without a result",
    )
}

pub(crate) fn json_headers() -> [(header::HeaderName, HeaderValue); 1] {
    [(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    )]
}

pub(crate) fn json_ok(v: &Value) -> Response {
    (StatusCode::OK, json_headers(), v.to_string()).into_response()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, kind) = match &self {
            ApiError::Invalid(_) => (StatusCode::BAD_REQUEST, "invalid_request_error"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "server_error"),
        };
        error(status, kind, self.to_string())
    }
}

pub(crate) fn submit_error(e: SubmitError) -> Response {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        e.to_string(),
    )
}

/// A request that carried the gateway token (or auth is off).
pub(crate) struct Authed;

impl FromRequestParts<Arc<Core>> for Authed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, core: &Arc<Core>) -> Result<Self, Response> {
        core.metrics.http_requests.fetch_add(1, Ordering::Relaxed);
        let given = auth::bearer(
            parts
                .headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok()),
        );
        match auth::check(core.config.token.as_deref(), given) {
            Ok(()) => Ok(Authed),
            Err(f) => {
                core.metrics.auth_failures.fetch_add(1, Ordering::Relaxed);
                let mut r = error(
                    StatusCode::UNAUTHORIZED,
                    "authentication_error",
                    f.message(),
                );
                r.headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                Err(r)
            }
        }
    }
}

/// Parses a JSON body, or says what is wrong with it.
pub(crate) fn body_json(body: &Bytes) -> Result<Value, Box<Response>> {
    if body.is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|e| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            format!("the body is not valid JSON: {e}"),
        ))
    })
}

async fn health(State(core): State<Arc<Core>>) -> Response {
    let g = core.gauges();
    json_ok(&json!({
        "ok": true, "status": "live", "version": env!("CARGO_PKG_VERSION"),
        "uptimeMs": core.started.elapsed().as_millis() as u64,
        "activeRuns": g.active_runs, "queued": core.queued(),
    }))
}

async fn ready(State(core): State<Arc<Core>>) -> Response {
    let mut failing = Vec::new();
    if core.is_draining() {
        failing.push("draining");
    }
    // With a shared store, a host that cannot reach it cannot serve a turn (what it answers
    // meanwhile is an error naming the database; the cause stays in the run's error, not here).
    if let Some(shared) = &core.shared {
        let probe = tokio::time::timeout(std::time::Duration::from_secs(5), shared.ping());
        if !matches!(probe.await, Ok(Ok(()))) {
            failing.push("store");
        }
    }
    let ready = failing.is_empty();
    let body = json!({"ready": ready, "failing": failing,
        "uptimeMs": core.started.elapsed().as_millis() as u64});
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, json_headers(), body.to_string()).into_response()
}

async fn metrics(_: Authed, State(core): State<Arc<Core>>) -> Response {
    let text = core.metrics.render(&core.gauges());
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        text,
    )
        .into_response()
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "not_found", "no such route")
}

/// `GET /` and `/ws`: the WebSocket upgrade (a plain GET learns what this is).
async fn upgrade(
    State(core): State<Arc<Core>>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let Ok(upgrade) = upgrade else {
        return json_ok(
            &json!({"service": "filo gateway", "protocol": crate::frames::PROTOCOL,
            "websocket": "connect here with the OpenClaw gateway protocol"}),
        );
    };
    if core.is_draining() {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            crate::core::DRAINING,
        );
    }
    let slot = ws::PreauthSlot::take(&core);
    let header_token = auth::bearer(
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok()),
    )
    .map(str::to_owned);
    let limit = core.config.max_payload;
    upgrade
        .max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| ws::serve(core, socket, header_token, slot))
}

/// An error answer of a handler, so handlers can use `?`.
pub(crate) struct Refusal(Box<Response>);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        *self.0
    }
}

impl From<Box<Response>> for Refusal {
    fn from(r: Box<Response>) -> Self {
        Refusal(r)
    }
}

impl From<ApiError> for Refusal {
    fn from(e: ApiError) -> Self {
        Refusal(Box::new(e.into_response()))
    }
}

pub(crate) type Handled = Result<Response, Refusal>;

fn path_key(
    core: &Core,
    key: Result<Path<String>, PathRejection>,
) -> Result<(String, String), Refusal> {
    let Path(raw) = key.map_err(|e| {
        Refusal(Box::new(error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            e.to_string(),
        )))
    })?;
    Ok(sessions::resolve_key(core, Some(&raw), None, None)?)
}

async fn list_sessions(
    _: Authed,
    State(core): State<Arc<Core>>,
    Query(q): Query<HashMap<String, String>>,
) -> Handled {
    let agent = q
        .get("agentId")
        .map(|a| filo_embed::session_key::normalize_agent_id(a))
        .unwrap_or_else(|| core.config.default_agent.clone());
    let limit = q.get("limit").and_then(|l| l.parse().ok());
    Ok(json_ok(&sessions::list(&core, &agent, limit).await?))
}

async fn describe_session(
    _: Authed,
    State(core): State<Arc<Core>>,
    key: Result<Path<String>, PathRejection>,
) -> Handled {
    let (key, agent) = path_key(&core, key)?;
    match sessions::entry(&core, &key).await? {
        Some(e) => Ok(json_ok(&crate::frames::session_row(
            &key,
            &agent,
            &e,
            core.active_run(&key).as_deref(),
        ))),
        None => Ok(error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no session {key}"),
        )),
    }
}

async fn patch_session(
    _: Authed,
    State(core): State<Arc<Core>>,
    key: Result<Path<String>, PathRejection>,
    body: Bytes,
) -> Handled {
    let (key, _) = path_key(&core, key)?;
    let params = body_json(&body)?;
    Ok(json_ok(&sessions::patch(&core, &key, &params).await?))
}

async fn abort_session(
    _: Authed,
    State(core): State<Arc<Core>>,
    key: Result<Path<String>, PathRejection>,
    body: Bytes,
) -> Handled {
    let (key, _) = path_key(&core, key)?;
    let params = body_json(&body)?;
    let ids = core.abort(&key, params.get("runId").and_then(Value::as_str));
    Ok(json_ok(
        &json!({"ok": true, "aborted": !ids.is_empty(), "runIds": ids}),
    ))
}

async fn reset_session(
    _: Authed,
    State(core): State<Arc<Core>>,
    key: Result<Path<String>, PathRejection>,
) -> Handled {
    let (key, _) = path_key(&core, key)?;
    Ok(json_ok(&sessions::reset(&core, &key, "reset").await?))
}

async fn session_history(
    _: Authed,
    State(core): State<Arc<Core>>,
    key: Result<Path<String>, PathRejection>,
    Query(q): Query<HashMap<String, String>>,
) -> Handled {
    let (key, _) = path_key(&core, key)?;
    let limit = q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(200);
    Ok(json_ok(&sessions::history(&core, &key, limit).await?))
}

/// A run's outcome as the session routes return it.
pub(crate) fn outcome_json(o: &RunOutcome) -> Value {
    json!({
        "runId": o.run_id, "status": o.status.as_str(), "sessionKey": o.session_key,
        "sessionId": o.session_id, "text": o.text,
        "payloads": o.payloads.iter().map(|p| json!({"text": p.text, "mediaUrls": p.media_urls, "isError": p.is_error})).collect::<Vec<_>>(),
        "error": o.error,
        "meta": {"durationMs": o.duration.as_millis() as u64, "provider": o.provider, "model": o.model,
            "stopReason": o.stop_reason, "warnings": o.warnings,
            "usage": {"input": o.usage.input, "output": o.usage.output, "cacheRead": o.usage.cache_read,
                "cacheWrite": o.usage.cache_write, "total": o.usage.total}},
    })
}

/// Submits and returns the listener's stream of events (ending with `End`).
pub(crate) fn submit_listening(
    core: &Arc<Core>,
    submit: Submit,
) -> Result<(Accepted, tokio::sync::mpsc::UnboundedReceiver<RunEvent>), Box<Response>> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let accepted = core
        .submit(submit, Some(tx))
        .map_err(|e| Box::new(submit_error(e)))?;
    Ok((accepted, rx))
}

/// Waits for the end of the run `rx` listens to (or the finished outcome of a duplicate).
pub(crate) async fn wait_end(
    accepted: &Accepted,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<RunEvent>,
) -> Option<Arc<RunOutcome>> {
    if let Accepted::Duplicate {
        outcome: Some(o), ..
    } = accepted
    {
        return Some(o.clone());
    }
    while let Some(e) = rx.recv().await {
        if let RunEvent::End(o) = e {
            return Some(o);
        }
    }
    None
}

/// `POST /v1/sessions/{key}/messages`.
async fn post_message(
    _: Authed,
    State(core): State<Arc<Core>>,
    key: Result<Path<String>, PathRejection>,
    body: Bytes,
) -> Handled {
    let (key, agent) = path_key(&core, key)?;
    let p = body_json(&body)?;
    let Some(message) = p
        .get("message")
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty())
    else {
        return Ok(error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "message is required (a non-empty string)",
        ));
    };
    let agent = p
        .get("agentId")
        .and_then(Value::as_str)
        .map(filo_embed::session_key::normalize_agent_id)
        .unwrap_or(agent);
    let mut s = Submit::new(key, agent, message);
    if let Some(idem) = p
        .get("idempotencyKey")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
    {
        s.idempotency_key = Some(idem.to_owned());
        s.run_id = idem.to_owned();
    }
    s.model = p.get("model").and_then(Value::as_str).map(str::to_owned);
    s.thinking = p.get("thinking").and_then(Value::as_str).map(str::to_owned);
    s.timeout = p
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .filter(|t| *t > 0)
        .map(std::time::Duration::from_secs);
    let stream = p.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let (accepted, mut rx) = submit_listening(&core, s)?;
    if stream {
        return Ok(Sse::new(reply_events(accepted, rx))
            .keep_alive(KeepAlive::default())
            .into_response());
    }
    Ok(match wait_end(&accepted, &mut rx).await {
        Some(o) => json_ok(&outcome_json(&o)),
        None => no_result(),
    })
}

/// The run's events as SSE: `delta` (`{delta}`: what the reply gained; `{delta, replace:
/// true}`: a new assistant message's text, replacing what came before), `agent` (`{stream,
/// data}`), then `done` (the outcome, with the whole text).
fn reply_events(
    accepted: Accepted,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<RunEvent>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    async_stream(move |tx| async move {
        if let Accepted::Duplicate {
            outcome: Some(o), ..
        } = &accepted
        {
            let _ = tx.send(
                Event::default()
                    .event("done")
                    .data(outcome_json(o).to_string()),
            );
            return;
        }
        while let Some(e) = rx.recv().await {
            let ev = match e {
                RunEvent::Delta { delta, replace } => {
                    let mut v = json!({"delta": &*delta});
                    if replace {
                        v["replace"] = Value::Bool(true);
                    }
                    Event::default().event("delta").data(v.to_string())
                }
                RunEvent::Agent { stream, data } => Event::default()
                    .event("agent")
                    .data(json!({"stream": stream, "data": data}).to_string()),
                RunEvent::End(o) => {
                    let _ = tx.send(
                        Event::default()
                            .event("done")
                            .data(outcome_json(&o).to_string()),
                    );
                    return;
                }
            };
            if tx.send(ev).is_err() {
                return;
            }
        }
    })
}

/// A stream fed by a task (the task ends when the client goes away).
pub(crate) fn async_stream<F, Fut>(f: F) -> impl Stream<Item = Result<Event, Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::UnboundedSender<Event>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(f(tx));
    futures::stream::unfold(
        rx,
        |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
    )
}
