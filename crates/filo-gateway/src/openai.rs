//! The OpenAI-compatible API: `POST /v1/chat/completions` and `POST /v1/responses` (streaming
//! SSE and not), `GET /v1/models`, so any OpenAI SDK can use a filo agent as its model.
//!
//! `model` names an agent (`filo`, `filo:<agent>`, `openclaw`, `openclaw/<agent>`,
//! `agent:<agent>`) or a `provider/model` of the catalog for this turn. The session is the
//! `x-filo-session-key` (or `x-openclaw-session-key`) header, else the `user` field, else a
//! fresh one per request. The last user message is the prompt; for a new session the earlier
//! messages become its history, for an existing one they are already in it and are ignored.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use filo_ai::{ContentBlock, Message, UserContent, UserMessage};
use futures::Stream;
use serde_json::{Value, json};

use crate::core::{Accepted, Core, Submit};
use crate::http::{
    Authed, Handled, async_stream, body_json, error, json_ok, no_result, submit_listening, wait_end,
};
use crate::outcome::{RunEvent, RunOutcome, RunStatus};
use crate::sessions;

/// The agent and model override a `model` field names.
fn target(core: &Core, model: Option<&str>) -> (String, Option<String>) {
    let default = core.config.default_agent.clone();
    let Some(m) = model.map(str::trim).filter(|m| !m.is_empty()) else {
        return (default, None);
    };
    let agent_of = |a: &str| filo_embed::session_key::normalize_agent_id(a);
    for prefix in ["filo:", "filo/", "openclaw:", "openclaw/", "agent:"] {
        if let Some(a) = m.strip_prefix(prefix) {
            return (agent_of(a), None);
        }
    }
    if m == "filo" || m == "openclaw" || m == "default" {
        return (default, None);
    }
    if m.contains('/') {
        return (default, Some(m.to_owned()));
    }
    (default, None)
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.trim().is_empty())
}

/// The session key of a request: header, else `user`, else a fresh one.
fn session_key(
    core: &Core,
    h: &HeaderMap,
    body: &Value,
    agent: &str,
) -> Result<(String, String), Box<Response>> {
    let raw = header(h, "x-filo-session-key")
        .or_else(|| header(h, "x-openclaw-session-key"))
        .map(str::to_owned)
        .or_else(|| {
            body.get("user")
                .and_then(Value::as_str)
                .filter(|u| !u.trim().is_empty())
                .map(|u| format!("openai-user:{u}"))
        })
        .unwrap_or_else(|| format!("openai:{}", uuid::Uuid::new_v4()));
    let agent = header(h, "x-filo-agent-id")
        .or_else(|| header(h, "x-openclaw-agent-id"))
        .unwrap_or(agent);
    sessions::resolve_key(core, Some(&raw), Some(agent), None)
        .map_err(|e| Box::new(e.into_response()))
}

/// The text of a message's `content` (a string or parts with `text`).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The prompt (last user message), the system text, and the earlier messages as history.
fn split_messages(messages: &[Value]) -> Result<(String, Option<String>, Vec<Message>), String> {
    let last_user = messages
        .iter()
        .rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .ok_or("messages must contain a user message")?;
    let prompt = content_text(&messages[last_user]["content"]);
    if prompt.trim().is_empty() {
        return Err("the last user message has no text".into());
    }
    let mut system = Vec::new();
    let mut history = Vec::new();
    let now = filo_ai::client::now_ms();
    for m in &messages[..last_user] {
        let text = content_text(&m["content"]);
        match m.get("role").and_then(Value::as_str) {
            Some("system" | "developer") => system.push(text),
            Some("user") if !text.is_empty() => history.push(Message::User(UserMessage {
                content: UserContent::Text(text),
                timestamp: now,
            })),
            Some("assistant") if !text.is_empty() => {
                history.push(Message::Assistant(filo_ai::AssistantMessage {
                    content: vec![ContentBlock::text(text)],
                    api: "openai-completions".into(),
                    provider: "client".into(),
                    model: "client".into(),
                    usage: filo_ai::Usage::default(),
                    stop_reason: filo_ai::StopReason::Stop,
                    timestamp: now,
                    response_id: None,
                    error_message: None,
                    error_status: None,
                }))
            }
            _ => {}
        }
    }
    for m in &messages[last_user + 1..] {
        if m.get("role").and_then(Value::as_str) == Some("system") {
            system.push(content_text(&m["content"]));
        }
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    Ok((prompt, system, history))
}

fn usage(o: &RunOutcome) -> Value {
    let prompt = o.prompt_tokens();
    let completion = o.completion_tokens();
    let total = (prompt + completion).max(o.usage.total.unwrap_or(0));
    let mut u =
        json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total});
    if let Some(c) = o.usage.cache_read.filter(|c| *c > 0) {
        u["prompt_tokens_details"] = json!({"cached_tokens": c});
    }
    u
}

/// What the run could not keep (a session write, the memory, the store): filo's own field,
/// beside OpenAI's, so a client that reads it knows the turn was not fully saved.
fn warnings(o: &RunOutcome) -> Value {
    json!(o.warnings)
}

fn finish_reason(o: &RunOutcome) -> &'static str {
    match (o.status, o.stop_reason.as_deref()) {
        (RunStatus::Ok, Some("length")) => "length",
        _ => "stop",
    }
}

async fn prepare(
    core: &Arc<Core>,
    headers: &HeaderMap,
    body: &Value,
    prompt: String,
    system: Option<String>,
    history: Vec<Message>,
) -> Result<(Submit, String), Box<Response>> {
    let (agent, model) = target(core, body.get("model").and_then(Value::as_str));
    let (key, agent) = session_key(core, headers, body, &agent)?;
    let mut s = Submit::new(key, agent, prompt);
    s.model = header(headers, "x-filo-model")
        .or_else(|| header(headers, "x-openclaw-model"))
        .map(str::to_owned)
        .or(model);
    s.extra_system_prompt = system;
    s.history = history;
    // A request waits for its own turn, whatever the session's queue mode.
    s.mode = Some(filo_embed::queue::QueueMode::Followup);
    let shown = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("filo")
        .to_owned();
    Ok((s, shown))
}

/// `POST /v1/chat/completions`.
pub(crate) async fn chat_completions(
    _: Authed,
    State(core): State<Arc<Core>>,
    headers: HeaderMap,
    body: Bytes,
) -> Handled {
    let body = body_json(&body)?;
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Ok(error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "messages is required (an array)",
        ));
    };
    let (prompt, system, history) = match split_messages(messages) {
        Ok(x) => x,
        Err(e) => return Ok(error(StatusCode::BAD_REQUEST, "invalid_request_error", e)),
    };
    let (submit, model) = prepare(&core, &headers, &body, prompt, system, history).await?;
    let (accepted, mut rx) = submit_listening(&core, submit)?;
    let id = format!("chatcmpl-{}", uuid::Uuid::new_v4().simple());
    let created = filo_ai::client::now_ms() / 1000;
    if body.get("stream").and_then(Value::as_bool).unwrap_or(false) {
        return Ok(
            Sse::new(completion_chunks(accepted, rx, id, model, created))
                .keep_alive(KeepAlive::default())
                .into_response(),
        );
    }
    let Some(o) = wait_end(&accepted, &mut rx).await else {
        return Ok(no_result());
    };
    if let Some(r) = failure(&o) {
        return Ok(r);
    }
    let mut body = json!({
        "id": id, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": o.text},
            "finish_reason": finish_reason(&o)}],
        "usage": usage(&o),
    });
    if !o.warnings.is_empty() {
        body["warnings"] = warnings(&o);
    }
    Ok(json_ok(&body))
}

/// An error answer for a run that did not answer (HTTP 502 for a model failure, 504 for a
/// timeout, 409 for an aborted turn).
fn failure(o: &RunOutcome) -> Option<Response> {
    let (status, kind) = match o.status {
        RunStatus::Ok => return None,
        RunStatus::Error => (StatusCode::BAD_GATEWAY, "api_error"),
        RunStatus::Timeout => (StatusCode::GATEWAY_TIMEOUT, "timeout"),
        RunStatus::Aborted => (StatusCode::CONFLICT, "aborted"),
    };
    let message = o.error.clone().unwrap_or_else(|| match o.status {
        RunStatus::Aborted => "the turn was aborted".into(),
        _ => o.text.clone(),
    });
    Some(error(status, kind, message))
}

/// Follows a run's partial replies, calling `add` with what each one adds to the text shown so
/// far (a rewrite cannot be unsent, so it waits for the new text to extend what was shown);
/// returns the outcome and the text shown, or `None` when `add` says the client is gone or the
/// run vanished.
async fn follow_text(
    accepted: &Accepted,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<RunEvent>,
    mut add: impl FnMut(&str) -> bool,
) -> Option<(Arc<RunOutcome>, String)> {
    let mut shown = String::new();
    // The reply's text when it no longer extends what was shown (a new assistant message).
    let mut rewritten: Option<String> = None;
    if let Accepted::Duplicate {
        outcome: Some(o), ..
    } = accepted
    {
        return Some((o.clone(), shown));
    }
    loop {
        match rx.recv().await? {
            RunEvent::Delta { delta, replace } => {
                let extra = match (replace, rewritten.as_mut()) {
                    (false, None) => delta.to_string(),
                    (true, _) => {
                        let text = rewritten.insert(delta.to_string());
                        match text.strip_prefix(shown.as_str()) {
                            Some(rest) => rest.to_owned(),
                            None => continue,
                        }
                    }
                    (false, Some(text)) => {
                        text.push_str(&delta);
                        match text.strip_prefix(shown.as_str()) {
                            Some(rest) => rest.to_owned(),
                            None => continue,
                        }
                    }
                };
                if rewritten.is_some() {
                    rewritten = None;
                }
                if !extra.is_empty() {
                    if !add(&extra) {
                        return None;
                    }
                    shown.push_str(&extra);
                }
            }
            RunEvent::Agent { .. } => {}
            RunEvent::End(o) => return Some((o, shown)),
        }
    }
}

fn chunk(id: &str, model: &str, created: i64, delta: Value, finish: Option<&str>) -> Event {
    let v = json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    Event::default().data(v.to_string())
}

fn completion_chunks(
    accepted: Accepted,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<RunEvent>,
    id: String,
    model: String,
    created: i64,
) -> impl Stream<Item = Result<Event, Infallible>> {
    async_stream(move |tx| async move {
        let send = |e: Event| tx.send(e).is_ok();
        if !send(chunk(
            &id,
            &model,
            created,
            json!({"role": "assistant", "content": ""}),
            None,
        )) {
            return;
        }
        let followed = follow_text(&accepted, &mut rx, |add| {
            send(chunk(&id, &model, created, json!({"content": add}), None))
        })
        .await;
        let Some((o, shown)) = followed else { return };
        if o.status != RunStatus::Ok {
            let msg = o
                .error
                .clone()
                .unwrap_or_else(|| o.status.as_str().to_owned());
            let _ =
                send(Event::default().data(
                    json!({"error": {"message": msg, "type": o.status.as_str()}}).to_string(),
                ));
            let _ = send(Event::default().data("[DONE]"));
            return;
        }
        // What the final text adds beyond the partials (a reply without streamed partials).
        if let Some(rest) = o
            .text
            .strip_prefix(shown.as_str())
            .filter(|r| !r.is_empty())
        {
            let _ = send(chunk(&id, &model, created, json!({"content": rest}), None));
        }
        let mut last = json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason(&o)}]});
        last["usage"] = usage(&o);
        if !o.warnings.is_empty() {
            last["warnings"] = warnings(&o);
        }
        let _ = send(Event::default().data(last.to_string()));
        let _ = send(Event::default().data("[DONE]"));
    })
}

/// The prompt of a Responses request: `input` as a string, or the last user item's text; the
/// earlier items become history for a new session.
fn responses_input(body: &Value) -> Result<(String, Option<String>, Vec<Message>), String> {
    let instructions = body
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_owned);
    match body.get("input") {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok((s.clone(), instructions, Vec::new())),
        Some(Value::Array(items)) => {
            let as_messages: Vec<Value> = items
                .iter()
                .filter(|i| i.get("type").and_then(Value::as_str).is_none_or(|t| t == "message"))
                .map(|i| {
                    let content = match &i["content"] {
                        Value::Array(parts) => Value::Array(
                            parts
                                .iter()
                                .map(|p| json!({"text": p.get("text").cloned().unwrap_or(Value::Null)}))
                                .collect(),
                        ),
                        other => other.clone(),
                    };
                    json!({"role": i.get("role").cloned().unwrap_or(json!("user")), "content": content})
                })
                .collect();
            let (prompt, system, history) = split_messages(&as_messages)?;
            let system = match (instructions, system) {
                (Some(a), Some(b)) => Some(format!("{a}\n\n{b}")),
                (a, b) => a.or(b),
            };
            Ok((prompt, system, history))
        }
        _ => Err("input is required (a string or an array of messages)".into()),
    }
}

/// `POST /v1/responses`.
pub(crate) async fn responses(
    _: Authed,
    State(core): State<Arc<Core>>,
    headers: HeaderMap,
    body: Bytes,
) -> Handled {
    let body = body_json(&body)?;
    let (prompt, system, history) = match responses_input(&body) {
        Ok(x) => x,
        Err(e) => return Ok(error(StatusCode::BAD_REQUEST, "invalid_request_error", e)),
    };
    let (submit, model) = prepare(&core, &headers, &body, prompt, system, history).await?;
    let (accepted, mut rx) = submit_listening(&core, submit)?;
    let ids = ResponseIds::new(model);
    if body.get("stream").and_then(Value::as_bool).unwrap_or(false) {
        return Ok(Sse::new(response_events(accepted, rx, ids))
            .keep_alive(KeepAlive::default())
            .into_response());
    }
    let Some(o) = wait_end(&accepted, &mut rx).await else {
        return Ok(no_result());
    };
    if let Some(r) = failure(&o) {
        return Ok(r);
    }
    Ok(json_ok(&ids.response("completed", Some(&o), &o.text)))
}

struct ResponseIds {
    response: String,
    item: String,
    model: String,
    created: i64,
}

impl ResponseIds {
    fn new(model: String) -> Self {
        Self {
            response: format!("resp_{}", uuid::Uuid::new_v4().simple()),
            item: format!("msg_{}", uuid::Uuid::new_v4().simple()),
            model,
            created: filo_ai::client::now_ms() / 1000,
        }
    }

    fn message(&self, status: &str, text: &str) -> Value {
        json!({"type": "message", "id": self.item, "status": status, "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]})
    }

    fn response(&self, status: &str, o: Option<&RunOutcome>, text: &str) -> Value {
        let output = if o.is_some() {
            vec![self.message("completed", text)]
        } else {
            vec![]
        };
        let mut v = json!({"id": self.response, "object": "response", "created_at": self.created,
            "status": status, "model": self.model, "output": output});
        if let Some(o) = o {
            let (i, out) = (o.prompt_tokens(), o.completion_tokens());
            v["usage"] = json!({"input_tokens": i, "output_tokens": out, "total_tokens": i + out});
            if !o.warnings.is_empty() {
                v["warnings"] = warnings(o);
            }
        }
        v
    }
}

fn named(name: &str, v: Value) -> Event {
    Event::default().event(name).data(v.to_string())
}

fn response_events(
    accepted: Accepted,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<RunEvent>,
    ids: ResponseIds,
) -> impl Stream<Item = Result<Event, Infallible>> {
    async_stream(move |tx| async move {
        let send = |e: Event| tx.send(e).is_ok();
        let mut seq = 0u64;
        let mut next = || {
            seq += 1;
            seq
        };
        let created = ids.response("in_progress", None, "");
        if !send(named(
            "response.created",
            json!({"type": "response.created", "sequence_number": next(), "response": created}),
        )) {
            return;
        }
        let _ = send(named(
            "response.output_item.added",
            json!({"type": "response.output_item.added",
            "sequence_number": next(), "output_index": 0, "item": {"type": "message", "id": ids.item,
            "status": "in_progress", "role": "assistant", "content": []}}),
        ));
        let _ = send(named(
            "response.content_part.added",
            json!({"type": "response.content_part.added",
            "sequence_number": next(), "item_id": ids.item, "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []}}),
        ));
        let followed = follow_text(&accepted, &mut rx, |add| {
            send(named(
                "response.output_text.delta",
                json!({"type": "response.output_text.delta", "sequence_number": next(),
                    "item_id": ids.item, "output_index": 0, "content_index": 0, "delta": add}),
            ))
        })
        .await;
        let Some((o, shown)) = followed else { return };
        if o.status != RunStatus::Ok {
            let msg = o
                .error
                .clone()
                .unwrap_or_else(|| o.status.as_str().to_owned());
            let mut failed = ids.response("failed", None, "");
            failed["error"] = json!({"code": o.status.as_str(), "message": msg});
            let _ = send(named(
                "response.failed",
                json!({"type": "response.failed", "sequence_number": next(), "response": failed}),
            ));
            return;
        }
        if let Some(rest) = o
            .text
            .strip_prefix(shown.as_str())
            .filter(|r| !r.is_empty())
        {
            let _ = send(named(
                "response.output_text.delta",
                json!({"type": "response.output_text.delta",
                "sequence_number": next(), "item_id": ids.item, "output_index": 0, "content_index": 0, "delta": rest}),
            ));
        }
        let _ = send(named(
            "response.output_text.done",
            json!({"type": "response.output_text.done",
            "sequence_number": next(), "item_id": ids.item, "output_index": 0, "content_index": 0, "text": o.text}),
        ));
        let _ = send(named(
            "response.content_part.done",
            json!({"type": "response.content_part.done",
            "sequence_number": next(), "item_id": ids.item, "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": o.text, "annotations": []}}),
        ));
        let _ = send(named(
            "response.output_item.done",
            json!({"type": "response.output_item.done",
            "sequence_number": next(), "output_index": 0, "item": ids.message("completed", &o.text)}),
        ));
        let done = ids.response("completed", Some(&o), &o.text);
        let _ = send(named(
            "response.completed",
            json!({"type": "response.completed", "sequence_number": next(), "response": done}),
        ));
    })
}

/// `GET /v1/models`: the agents, as models.
pub(crate) async fn models(_: Authed, State(core): State<Arc<Core>>) -> Response {
    let config = core.embedder.config();
    let mut ids = vec![
        "filo".to_owned(),
        format!("filo:{}", core.config.default_agent),
    ];
    ids.extend(config.agents.iter().map(|a| {
        format!(
            "filo:{}",
            filo_embed::session_key::normalize_agent_id(&a.id)
        )
    }));
    ids.dedup();
    let data: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "filo"}))
        .collect();
    json_ok(&json!({"object": "list", "data": data}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_user_message_is_the_prompt() {
        let msgs = vec![
            json!({"role": "system", "content": "be brief"}),
            json!({"role": "user", "content": "one"}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "two"}]}),
            json!({"role": "user", "content": [{"type": "text", "text": "three"}]}),
        ];
        let (prompt, system, history) = split_messages(&msgs).unwrap();
        assert_eq!(prompt, "three");
        assert_eq!(system.as_deref(), Some("be brief"));
        assert_eq!(history.len(), 2);
        assert!(split_messages(&[json!({"role": "assistant", "content": "x"})]).is_err());
        let (p, _, h) = responses_input(&json!({"input": "hi"})).unwrap();
        assert_eq!((p.as_str(), h.len()), ("hi", 0));
        let (p, s, h) = responses_input(&json!({"instructions": "sys", "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "a"}]},
            {"role": "assistant", "content": [{"type": "output_text", "text": "b"}]},
            {"role": "user", "content": "c"}]}))
        .unwrap();
        assert_eq!((p.as_str(), s.as_deref(), h.len()), ("c", Some("sys"), 2));
    }
}
