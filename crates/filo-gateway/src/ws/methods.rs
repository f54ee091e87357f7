//! The methods of the WebSocket protocol (spec §6): what each request answers.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Conn, ErrorShape};
use crate::core::{Accepted, Submit, SubmitError};
use crate::frames;
use crate::hub::EventFrame;
use crate::outcome::RunEvent;
use crate::sessions;

/// Every method served (advertised in `hello-ok`).
pub(crate) const METHODS: &[&str] = &[
    "health",
    "status",
    "system-presence",
    "agents.list",
    "agent",
    "agent.wait",
    "chat.send",
    "chat.abort",
    "chat.history",
    "sessions.subscribe",
    "sessions.unsubscribe",
    "sessions.list",
    "sessions.describe",
    "sessions.reset",
    "sessions.patch",
    "models.list",
    "config.get",
    "commands.list",
    "question.list",
    "plugin.approval.list",
];

const EVENTS: &[&str] = &[
    "connect.challenge",
    "tick",
    "chat",
    "agent",
    "sessions.changed",
    "shutdown",
];

/// `hello-ok` (spec §3.4): no device token, no model-catalog capability.
pub(crate) fn hello_ok(conn: &Conn) -> Value {
    let c = &conn.core;
    json!({
        "type": "hello-ok", "protocol": frames::PROTOCOL,
        "server": {"version": env!("CARGO_PKG_VERSION"), "connId": format!("filo-{}", conn.id)},
        "features": {"methods": METHODS, "events": EVENTS},
        "snapshot": {"presence": [], "health": {}, "stateVersion": {"presence": 0, "health": 0},
            "uptimeMs": c.started.elapsed().as_millis() as u64,
            "sessionDefaults": {"defaultAgentId": c.config.default_agent, "mainKey": "main",
                "mainSessionKey": format!("agent:{}:main", c.config.default_agent), "scope": "per-sender"}},
        "auth": {"method": if c.config.token.is_some() { "token" } else { "none" },
            "role": "operator", "scopes": conn.client.scopes},
        "policy": {"maxPayload": c.config.max_payload, "maxBufferedBytes": c.config.max_buffered_bytes,
            "tickIntervalMs": c.config.tick.as_millis() as u64},
    })
}

fn str_param<'a>(p: &'a Value, name: &str) -> Option<&'a str> {
    p.get(name).and_then(Value::as_str)
}

fn required<'a>(p: &'a Value, name: &str) -> Result<&'a str, ErrorShape> {
    str_param(p, name)
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| ErrorShape::invalid(format!("{name} is required (a non-empty string)")))
}

pub(crate) async fn dispatch(conn: &Conn, id: &str, method: &str, params: Value) {
    let result = match method {
        "agent" => return agent(conn, id, &params).await,
        "chat.send" => chat_send(conn, &params),
        "chat.abort" => chat_abort(conn, &params),
        "chat.history" => chat_history(conn, &params).await,
        "agent.wait" => agent_wait(conn, &params).await,
        "sessions.subscribe" => {
            conn.core.hub.subscribe_sessions(conn.id);
            let non_empty = params.as_object().is_some_and(|o| !o.is_empty());
            if non_empty {
                let agent = conn.core.config.default_agent.clone();
                let limit = params
                    .get("limit")
                    .and_then(Value::as_u64)
                    .map(|n| n as usize);
                sessions::list(&conn.core, &agent, limit)
                    .await
                    .map(|l| json!({"subscribed": true, "list": l}))
                    .map_err(ErrorShape::from)
            } else {
                Ok(json!({"subscribed": true}))
            }
        }
        "sessions.unsubscribe" => Ok(json!({"subscribed": false})),
        "sessions.list" => {
            let agent = agent_of(conn, &params);
            let limit = params
                .get("limit")
                .and_then(Value::as_u64)
                .map(|n| n as usize);
            sessions::list(&conn.core, &agent, limit)
                .await
                .map_err(ErrorShape::from)
        }
        "sessions.describe" => describe(conn, &params).await,
        "sessions.reset" => match key_param(conn, &params, "key") {
            Ok((key, _)) => {
                let reason = str_param(&params, "reason").unwrap_or("reset");
                sessions::reset(&conn.core, &key, reason)
                    .await
                    .map_err(ErrorShape::from)
            }
            Err(e) => Err(e),
        },
        "sessions.patch" => match key_param(conn, &params, "key") {
            Ok((key, _)) => sessions::patch(&conn.core, &key, &params)
                .await
                .map_err(ErrorShape::from),
            Err(e) => Err(e),
        },
        "health" => health(conn).await,
        "status" => Ok(status(conn)),
        "system-presence" => Ok(json!([])),
        "agents.list" => Ok(agents_list(conn)),
        "models.list" => Ok(models_list(conn)),
        "config.get" => Ok(
            json!({"config": {"gateway": {"port": conn.core.config.bind.port(),
            "auth": {"mode": if conn.core.config.token.is_some() { "token" } else { "none" }}}}}),
        ),
        "commands.list" => Ok(json!({"commands": []})),
        "question.list" => Ok(json!({"questions": []})),
        "plugin.approval.list" => Ok(json!([])),
        "connect" => Err(ErrorShape::invalid("already connected")),
        other => Err(ErrorShape::invalid(format!("unknown method: {other}"))),
    };
    conn.respond(id, result);
}

fn agent_of(conn: &Conn, params: &Value) -> String {
    str_param(params, "agentId")
        .filter(|a| !a.trim().is_empty())
        .map(filo_embed::session_key::normalize_agent_id)
        .unwrap_or_else(|| conn.core.config.default_agent.clone())
}

fn key_param(conn: &Conn, params: &Value, name: &str) -> Result<(String, String), ErrorShape> {
    let raw = required(params, name)?;
    sessions::resolve_key(&conn.core, Some(raw), str_param(params, "agentId"), None)
        .map_err(ErrorShape::from)
}

fn submit_of(params: &Value, key: String, agent: String, message: &str) -> Submit {
    let mut s = Submit::new(key, agent, message);
    if let Some(idem) = str_param(params, "idempotencyKey").filter(|k| !k.is_empty()) {
        s.idempotency_key = Some(idem.to_owned());
        s.run_id = idem.to_owned();
    }
    s.model = str_param(params, "model").map(str::to_owned);
    s.thinking = str_param(params, "thinking").map(str::to_owned);
    s.extra_system_prompt = str_param(params, "extraSystemPrompt").map(str::to_owned);
    s.session_id = str_param(params, "sessionId").map(str::to_owned);
    s.timeout = params
        .get("timeoutMs")
        .and_then(Value::as_u64)
        .map(Duration::from_millis)
        .or_else(|| {
            params
                .get("timeout")
                .and_then(Value::as_u64)
                .map(Duration::from_secs)
        })
        .or_else(|| {
            params
                .get("timeoutSeconds")
                .and_then(Value::as_u64)
                .map(Duration::from_secs)
        })
        .filter(|d| !d.is_zero());
    s
}

fn submit_error(e: SubmitError) -> ErrorShape {
    match e {
        SubmitError::Draining => ErrorShape::unavailable(e.to_string()),
        SubmitError::QueueFull(_) => ErrorShape::unavailable(e.to_string()),
    }
}

/// `chat.send`: the ack now (`runId` = the idempotency key), events to the connection later.
fn chat_send(conn: &Conn, params: &Value) -> Result<Value, ErrorShape> {
    let message = str_param(params, "message")
        .ok_or_else(|| ErrorShape::invalid("message is required (a string)"))?;
    if message.trim().is_empty() {
        return Err(ErrorShape::invalid("message must not be empty"));
    }
    let (key, agent) = key_param(conn, params, "sessionKey")?;
    required(params, "idempotencyKey")?;
    let mut s = submit_of(params, key.clone(), agent, message);
    s.gap_after_ack = true;
    conn.core.hub.watch(conn.id, &key);
    let accepted = conn.core.submit(s, None).map_err(submit_error)?;
    Ok(match accepted {
        Accepted::Started { run_id } | Accepted::Queued { run_id } => {
            json!({"runId": run_id, "status": "started"})
        }
        Accepted::Steered { .. } => {
            let own = str_param(params, "idempotencyKey").unwrap_or_default();
            json!({"runId": own, "status": "ok", "steered": true})
        }
        Accepted::Duplicate { run_id, outcome } => match outcome {
            None => json!({"runId": run_id, "status": "in_flight"}),
            Some(o) => json!({"runId": run_id, "status": o.status.as_str()}),
        },
    })
}

fn chat_abort(conn: &Conn, params: &Value) -> Result<Value, ErrorShape> {
    let (key, _) = key_param(conn, params, "sessionKey")?;
    let ids = conn.core.abort(&key, str_param(params, "runId"));
    Ok(json!({"ok": true, "aborted": !ids.is_empty(), "runIds": ids}))
}

async fn chat_history(conn: &Conn, params: &Value) -> Result<Value, ErrorShape> {
    let (key, _) = key_param(conn, params, "sessionKey")?;
    conn.core.hub.watch(conn.id, &key);
    let limit = params
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(200)
        .min(1000) as usize;
    Ok(sessions::history(&conn.core, &key, limit).await?)
}

async fn describe(conn: &Conn, params: &Value) -> Result<Value, ErrorShape> {
    let (key, agent) = key_param(conn, params, "key")?;
    let entry = sessions::entry(&conn.core, &key).await?;
    Ok(
        json!({"session": entry.map(|e| frames::session_row(&key, &agent, &e, conn.core.active_run(&key).as_deref()))}),
    )
}

/// `agent`: `accepted` now, the result on the same id when the run ends.
async fn agent(conn: &Conn, id: &str, params: &Value) {
    let result = agent_inner(conn, id, params).await;
    if let Err(e) = result {
        conn.respond(id, Err(e));
    }
}

async fn agent_inner(conn: &Conn, id: &str, params: &Value) -> Result<(), ErrorShape> {
    let message = required(params, "message")?;
    required(params, "idempotencyKey")?;
    let (key, agent) = sessions::resolve_key(
        &conn.core,
        str_param(params, "sessionKey"),
        str_param(params, "agentId"),
        str_param(params, "sessionId"),
    )?;
    let s = submit_of(params, key.clone(), agent.clone(), message);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let accepted = conn.core.submit(s, Some(tx)).map_err(submit_error)?;
    let run_id = accepted.run_id().to_owned();
    match &accepted {
        Accepted::Duplicate {
            outcome: Some(o), ..
        } => {
            conn.respond(id, Ok(frames::agent_result(o, &run_id)));
            return Ok(());
        }
        Accepted::Duplicate { outcome: None, .. } => {
            conn.respond(
                id,
                Ok(json!({"runId": run_id, "status": "in_flight", "summary": "in flight"})),
            );
            return Ok(());
        }
        Accepted::Started { .. } | Accepted::Queued { .. } | Accepted::Steered { .. } => {}
    }
    conn.respond(
        id,
        Ok(
            json!({"runId": run_id, "sessionKey": key, "agentId": agent, "status": "accepted",
            "acceptedAt": filo_ai::client::now_ms()}),
        ),
    );
    while let Some(e) = rx.recv().await {
        if let RunEvent::End(o) = e {
            conn.respond(id, Ok(frames::agent_result(&o, &run_id)));
            return Ok(());
        }
    }
    Err(ErrorShape::unavailable("the run ended without a result"))
}

async fn agent_wait(conn: &Conn, params: &Value) -> Result<Value, ErrorShape> {
    let run_id = required(params, "runId")?;
    let timeout = Duration::from_millis(
        params
            .get("timeoutMs")
            .and_then(Value::as_u64)
            .unwrap_or(30_000),
    );
    match conn.core.wait(None, run_id, timeout).await {
        Some(o) => {
            let mut v = frames::agent_result(&o, run_id);
            v["error"] = o.error.clone().map(Value::from).unwrap_or(Value::Null);
            Ok(v)
        }
        None => Ok(json!({"runId": run_id, "status": "timeout"})),
    }
}

/// `health`: the default agent's session store as `openclaw health` prints it.
async fn health(conn: &Conn) -> Result<Value, ErrorShape> {
    let c = &conn.core;
    let g = c.gauges();
    let sessions = sessions::health_summary(c, &c.config.default_agent).await?;
    Ok(json!({
        "ok": true, "ts": filo_ai::client::now_ms(), "durationMs": 0,
        "defaultAgentId": c.config.default_agent,
        "agents": [{"agentId": c.config.default_agent, "isDefault": true,
            "heartbeat": {"enabled": false, "every": "off", "everyMs": null, "prompt": "", "target": "none", "ackMaxChars": 0},
            "sessions": sessions}],
        "sessions": sessions, "activeRuns": g.active_runs, "queued": c.queued(),
    }))
}

fn status(conn: &Conn) -> Value {
    let c = &conn.core;
    let g = c.gauges();
    json!({
        "runtimeVersion": format!("filo {}", env!("CARGO_PKG_VERSION")),
        "heartbeat": {"defaultAgentId": c.config.default_agent, "agents": []},
        "channelSummary": [], "queuedSystemEvents": [],
        "sessions": {"count": g.sessions_known, "active": g.active_runs},
        "uptimeMs": c.started.elapsed().as_millis() as u64,
    })
}

fn agents_list(conn: &Conn) -> Value {
    let config = conn.core.embedder.config();
    let mut agents: Vec<Value> = vec![json!({"id": conn.core.config.default_agent,
        "model": {"primary": config.defaults.model.primary}})];
    for a in &config.agents {
        let id = filo_embed::session_key::normalize_agent_id(&a.id);
        if id != conn.core.config.default_agent {
            let primary = a.model.as_ref().and_then(|m| m.primary.clone()).or(config
                .defaults
                .model
                .primary
                .clone());
            agents.push(json!({"id": id, "model": {"primary": primary}}));
        }
    }
    json!({"defaultId": conn.core.config.default_agent, "mainKey": "main", "scope": "per-sender", "agents": agents})
}

fn models_list(conn: &Conn) -> Value {
    let config = conn.core.embedder.config();
    let models: Vec<Value> = config
        .defaults
        .model
        .primary
        .iter()
        .chain(config.defaults.model.fallbacks.iter())
        .filter_map(|m| m.split_once('/'))
        .map(|(p, m)| json!({"id": m, "name": m, "provider": p}))
        .collect();
    json!({"models": models})
}

/// Tells every connection the gateway is stopping.
pub(crate) fn shutdown_event(hub: &crate::hub::Hub, reason: &str) {
    hub.broadcast(&EventFrame::new("shutdown", &json!({"reason": reason})));
}
