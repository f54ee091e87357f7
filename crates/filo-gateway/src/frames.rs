//! Payloads in OpenClaw's shapes (protocol 4, `../shared/specs/openclaw-gateway.md` §3–§6):
//! `chat` events, session rows, history messages, `agent` results.

use filo_ai::{ContentBlock, Message};
use filo_embed::session_store::SessionEntry;
use filo_session::SessionMessage;
use serde_json::{Value, json};

use crate::outcome::{RunOutcome, RunStatus};

/// The protocol version spoken.
pub const PROTOCOL: u64 = 4;
/// Probes (`openclaw status`) may ask for 3..4.
pub const MIN_PROBE_PROTOCOL: u64 = 3;

fn assistant_message(text: &str, ts: i64) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}], "timestamp": ts})
}

/// `chat` `delta`: the whole reply so far in `message`, what it added in `deltaText`.
pub fn chat_delta(
    run_id: &str,
    key: &str,
    agent: &str,
    seq: u64,
    text: &str,
    delta: &str,
    replace: bool,
) -> Value {
    let mut v = json!({
        "runId": run_id, "sessionKey": key, "agentId": agent, "seq": seq, "state": "delta",
        "deltaText": delta, "message": assistant_message(text, filo_ai::client::now_ms()),
    });
    if replace {
        v["replace"] = Value::Bool(true);
    }
    v
}

/// `chat` `final`, `aborted` or `error` for request `run_id` of `o`.
pub fn chat_terminal(o: &RunOutcome, run_id: &str) -> Value {
    let mut v = json!({
        "runId": run_id, "sessionKey": o.session_key, "agentId": o.agent_id, "seq": o.last_seq,
    });
    match o.status {
        RunStatus::Ok => {
            v["state"] = "final".into();
            v["stopReason"] = o
                .stop_reason
                .clone()
                .unwrap_or_else(|| "stop".into())
                .into();
            v["message"] = assistant_message(&o.text, o.ended_at_ms);
        }
        RunStatus::Aborted => {
            v["state"] = "aborted".into();
            if !o.text.is_empty() {
                v["message"] = assistant_message(&o.text, o.ended_at_ms);
            }
        }
        RunStatus::Error | RunStatus::Timeout => {
            v["state"] = "error".into();
            v["errorMessage"] = o.error.clone().unwrap_or_else(|| o.text.clone()).into();
            if let Some(kind) = o.error_kind() {
                v["errorKind"] = kind.into();
            }
        }
    }
    if o.usage.input.is_some() || o.usage.output.is_some() {
        v["usage"] = usage_json(o);
    }
    // What the run could not keep (a session write, the memory) reaches every client.
    if !o.warnings.is_empty() {
        v["warnings"] = json!(o.warnings);
    }
    v
}

fn usage_json(o: &RunOutcome) -> Value {
    json!({
        "input": o.usage.input.unwrap_or(0), "output": o.usage.output.unwrap_or(0),
        "cacheRead": o.usage.cache_read.unwrap_or(0), "cacheWrite": o.usage.cache_write.unwrap_or(0),
        "total": o.usage.total.unwrap_or(o.usage.input.unwrap_or(0) + o.usage.output.unwrap_or(0)),
    })
}

/// The final `agent` result (`openclaw agent` prints `result.payloads[].text`).
pub fn agent_result(o: &RunOutcome, run_id: &str) -> Value {
    let payloads: Vec<Value> = o
        .payloads
        .iter()
        .map(|p| {
            let mut v = json!({"text": p.text, "mediaUrl": p.media_url()});
            if p.media_urls.len() > 1 {
                v["mediaUrls"] = json!(p.media_urls);
            }
            if p.is_error {
                v["isError"] = Value::Bool(true);
            }
            v
        })
        .collect();
    let summary = match o.status {
        RunStatus::Ok => "completed".to_owned(),
        RunStatus::Aborted => "aborted".to_owned(),
        RunStatus::Error | RunStatus::Timeout => o.error.clone().unwrap_or_else(|| "failed".into()),
    };
    let mut meta = json!({"durationMs": o.duration.as_millis() as u64, "aborted": o.status == RunStatus::Aborted});
    if let (Some(p), Some(m)) = (&o.provider, &o.model) {
        meta["agentMeta"] =
            json!({"sessionId": o.session_id, "provider": p, "model": m, "usage": usage_json(o)});
    }
    if !o.warnings.is_empty() {
        meta["warnings"] = json!(o.warnings);
    }
    json!({
        "runId": run_id, "status": o.status.as_str(), "summary": summary,
        "result": {"payloads": payloads, "meta": meta},
    })
}

/// A `sessions.list` / `sessions.describe` row.
pub fn session_row(key: &str, agent: &str, e: &SessionEntry, active: Option<&str>) -> Value {
    let mut v = json!({
        "key": key, "agentId": agent, "kind": "direct", "sessionId": e.session_id,
        "updatedAt": e.updated_at, "hasActiveRun": active.is_some(),
        "activeRunIds": active.map(|a| vec![a]).unwrap_or_default(),
    });
    let fields = [
        ("model", e.model.clone().map(Value::from)),
        ("modelProvider", e.model_provider.clone().map(Value::from)),
        ("inputTokens", e.input_tokens.map(Value::from)),
        ("outputTokens", e.output_tokens.map(Value::from)),
        ("totalTokens", e.total_tokens.map(Value::from)),
        ("thinkingLevel", e.thinking_level.clone().map(Value::from)),
        ("queueMode", e.queue_mode.clone().map(Value::from)),
        ("label", e.label.clone().map(Value::from)),
        ("abortedLastRun", e.aborted_last_run.map(Value::from)),
    ];
    for (k, val) in fields {
        if let Some(val) = val {
            v[k] = val;
        }
    }
    v
}

/// The user and assistant messages of a transcript branch, as `chat.history` returns them
/// (tool calls, tool results and thinking are left out, as the TUI shows them).
pub fn history_messages(messages: &[SessionMessage]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in messages {
        let SessionMessage::Llm(m) = m else { continue };
        match m {
            Message::User(u) => {
                let content: Vec<Value> = u
                    .content
                    .to_blocks()
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
                        _ => None,
                    })
                    .collect();
                out.push(json!({"role": "user", "content": content, "timestamp": u.timestamp}));
            }
            Message::Assistant(a) => {
                let text = a.text();
                if text.is_empty() {
                    continue;
                }
                let mut v = assistant_message(&text, a.timestamp);
                v["stopReason"] = serde_json::to_value(a.stop_reason).unwrap_or(Value::Null);
                out.push(v);
            }
            Message::ToolResult(_) => {}
        }
    }
    out
}

/// The `defaults` block of `chat.history` and `sessions.list` (the TUI's footer reads it).
pub fn defaults(provider: Option<&str>, model: Option<&str>, context_tokens: u64) -> Value {
    json!({"modelProvider": provider, "model": model, "contextTokens": context_tokens})
}
