//! Google Generative AI streaming (`POST …/models/{model}:streamGenerateContent?alt=sse`).
//!
//! Unnamed `data:` frames ended by CRLF line breaks (as Google's front end sends them), each a
//! `GenerateContentResponse` with one candidate holding one part: a text part per word, a
//! `thought: true` part per word of thinking (the last one carrying `thoughtSignature`), or a
//! whole `functionCall` part (`{name, args}`, plus `id` when the script's id is not empty).
//! There is no `[DONE]`: the stream simply ends. The last frame carries `finishReason` (`STOP`,
//! `MAX_TOKENS` on `Length`; tool calls stop with `STOP`, as Gemini does) and the full
//! `usageMetadata`; the frames before it carry the prompt counts only. Empty text (and empty
//! unsigned thinking) has no part; a reply with no part at all sends one frame with an empty
//! text part.
//!
//! Usage: `promptTokenCount = input + cache_read` (Google counts cached tokens inside the
//! prompt), `cachedContentTokenCount = cache_read` (only when non-zero), `candidatesTokenCount =
//! output`; `cache_write` has no field.

use serde_json::{Value, json};

use crate::frame::{SseFrame, StreamContext, split_words};
use crate::script::{Block, Reply, Stop};

/// The frames of a complete reply.
pub(crate) fn frames(reply: &Reply, ctx: &StreamContext) -> Vec<SseFrame> {
    let mut parts: Vec<Value> = Vec::new();
    // Raw argument texts, put into their frames in place of a sentinel string after rendering.
    let mut raw_args: Vec<(String, String)> = Vec::new();
    for block in &reply.blocks {
        match block {
            Block::Text(text) => {
                parts.extend(split_words(text).into_iter().map(|w| json!({"text": w})));
            }
            Block::Thinking { text, signature } => {
                let mut words: Vec<Value> = split_words(text)
                    .into_iter()
                    .map(|w| json!({"text": w, "thought": true}))
                    .collect();
                if words.is_empty() && !signature.is_empty() {
                    words.push(json!({"text": "", "thought": true}));
                }
                if let Some(last) = words.last_mut().filter(|_| !signature.is_empty()) {
                    last["thoughtSignature"] = Value::from(signature.as_str());
                }
                parts.extend(words);
            }
            Block::ToolCall {
                id,
                name,
                arguments,
            } => {
                let mut call = json!({"name": name, "args": arguments});
                if !id.is_empty() {
                    call["id"] = Value::from(id.as_str());
                }
                parts.push(json!({"functionCall": call}));
            }
            Block::RawToolCall {
                id,
                name,
                arguments,
            } => {
                let sentinel = format!("filo-testkit-raw-args-{}", raw_args.len());
                let mut call = json!({"name": name, "args": sentinel});
                if !id.is_empty() {
                    call["id"] = Value::from(id.as_str());
                }
                raw_args.push((Value::from(sentinel).to_string(), arguments.clone()));
                parts.push(json!({"functionCall": call}));
            }
        }
    }
    if parts.is_empty() {
        parts.push(json!({"text": ""}));
    }
    let last = parts.len() - 1;
    parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| {
            let mut candidate = json!({"content": {"parts": [part], "role": "model"}});
            if i == last {
                candidate["finishReason"] = Value::from(finish_reason(reply.stop));
            }
            candidate["index"] = Value::from(0);
            let mut frame = SseFrame::json(&json!({
                "candidates": [candidate],
                "usageMetadata": usage_metadata(reply, i == last),
                "modelVersion": ctx.model,
                "responseId": format!("mock-response-{}", ctx.request_number),
            }));
            for (sentinel, text) in &raw_args {
                frame.data = frame.data.replace(sentinel.as_str(), text);
            }
            frame
        })
        .collect()
}

fn usage_metadata(reply: &Reply, last: bool) -> Value {
    let u = reply.usage;
    let prompt = u.input + u.cache_read;
    let mut meta = json!({"promptTokenCount": prompt});
    if last {
        meta["candidatesTokenCount"] = Value::from(u.output);
    }
    meta["totalTokenCount"] = Value::from(if last { prompt + u.output } else { prompt });
    if u.cache_read > 0 {
        meta["cachedContentTokenCount"] = Value::from(u.cache_read);
    }
    meta
}

fn finish_reason(stop: Stop) -> &'static str {
    match stop {
        Stop::Stop | Stop::ToolUse => "STOP",
        Stop::Length => "MAX_TOKENS",
    }
}

fn status_name(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        500 => "INTERNAL",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "UNKNOWN",
    }
}

/// The mid-stream error chunk: a Google error object (503 `UNAVAILABLE`).
pub(crate) fn error_frame(message: &str) -> SseFrame {
    SseFrame::json(&json!({"error": {"code": 503, "message": message, "status": "UNAVAILABLE"}}))
}

/// A chunk whose JSON stops in the middle of a string.
pub(crate) fn malformed_frame() -> SseFrame {
    SseFrame::data(r#"{"candidates": [{"content": {"parts": [{"text": "cut sho"#)
}

/// The JSON body of an HTTP error response; a 429 with a retry delay also carries a
/// `google.rpc.RetryInfo` detail.
pub(crate) fn http_error_body(status: u16, message: &str, retry_after: Option<u64>) -> String {
    let mut error = json!({"code": status, "message": message, "status": status_name(status)});
    if let Some(secs) = retry_after {
        error["details"] = json!([{
            "@type": "type.googleapis.com/google.rpc.RetryInfo",
            "retryDelay": format!("{secs}s"),
        }]);
    }
    json!({ "error": error }).to_string()
}
