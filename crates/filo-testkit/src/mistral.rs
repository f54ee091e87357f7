//! Mistral chat streaming (`POST …/v1/chat/completions` under the mock's `/mistral` prefix),
//! what pi 0.73's `mistral-conversations` API reads through the Mistral SDK.
//!
//! `data:` `chat.completion.chunk` frames with one choice, then `data: [DONE]`: a role chunk
//! (`{"role":"assistant","content":""}`); one chunk per word of thinking whose `content` is an
//! array `[{"type":"thinking","thinking":[{"type":"text","text":word}]}]` (Mistral carries no
//! thinking signature, so the script's is not sent); one chunk per word of text (`content` a
//! string); one chunk per tool call holding the whole call (`id`, `type`, `index`,
//! `function.name`, `function.arguments` as text), as Mistral sends them; a last chunk with
//! `finish_reason` and `usage`. Empty text or thinking has no chunk.
//!
//! Usage: `prompt_tokens = input + cache_read`, `completion_tokens = output`; Mistral reports no
//! cache figures.

use serde_json::{Value, json};

use crate::frame::{SseFrame, StreamContext, split_words};
use crate::script::{Block, Reply, Stop};

const CREATED: u64 = 1_700_000_000;

/// The frames of a complete reply.
pub(crate) fn frames(reply: &Reply, ctx: &StreamContext) -> Vec<SseFrame> {
    let mut deltas = vec![json!({"role": "assistant", "content": ""})];
    let mut tool_index = 0;
    for block in &reply.blocks {
        match block {
            Block::Text(text) => {
                deltas.extend(split_words(text).into_iter().map(|w| json!({"content": w})));
            }
            Block::Thinking { text, .. } => {
                deltas.extend(split_words(text).into_iter().map(|w| {
                    json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": w}]}]})
                }));
            }
            Block::ToolCall { .. } | Block::RawToolCall { .. } => {
                if let Some((id, name, args)) = block.tool_call_parts() {
                    deltas.push(json!({"tool_calls": [{
                        "id": id,
                        "type": "function",
                        "index": tool_index,
                        "function": {"name": name, "arguments": args},
                    }]}));
                    tool_index += 1;
                }
            }
        }
    }
    let mut out: Vec<SseFrame> = deltas
        .into_iter()
        .map(|delta| chunk(ctx, delta, Value::Null, None))
        .collect();
    let u = reply.usage;
    let prompt = u.input + u.cache_read;
    let usage = json!({
        "prompt_tokens": prompt,
        "completion_tokens": u.output,
        "total_tokens": prompt + u.output,
    });
    out.push(chunk(
        ctx,
        json!({"content": ""}),
        finish_reason(reply.stop).into(),
        Some(usage),
    ));
    out.push(SseFrame::data("[DONE]"));
    out
}

fn finish_reason(stop: Stop) -> &'static str {
    match stop {
        Stop::Stop => "stop",
        Stop::Length => "length",
        Stop::ToolUse => "tool_calls",
    }
}

fn chunk(ctx: &StreamContext, delta: Value, finish: Value, usage: Option<Value>) -> SseFrame {
    let mut value = json!({
        "id": format!("mistral-mock-{}", ctx.request_number),
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": ctx.model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    if let Some(usage) = usage {
        value["usage"] = usage;
    }
    SseFrame::json(&value)
}

/// The mid-stream failure: a Mistral error object in place of a chunk.
pub(crate) fn error_frame(message: &str) -> SseFrame {
    SseFrame::json(&json!({
        "object": "error",
        "message": message,
        "type": "service_unavailable",
        "param": null,
        "code": "3505",
    }))
}

/// A chunk whose JSON stops in the middle of a string.
pub(crate) fn malformed_frame() -> SseFrame {
    SseFrame::data(
        r#"{"id":"mistral-mock","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"cut sho"#,
    )
}

/// The JSON body of an HTTP error response, Mistral's error object.
pub(crate) fn http_error_body(status: u16, message: &str) -> String {
    let kind = match status {
        400 | 404 | 422 => "invalid_request_error",
        401 | 403 => "unauthorized",
        429 => "rate_limited",
        _ => "internal_server_error",
    };
    json!({"object": "error", "message": message, "type": kind, "param": null, "code": null})
        .to_string()
}
