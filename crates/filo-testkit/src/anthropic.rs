//! Anthropic Messages streaming (`POST /v1/messages`).
//!
//! Frames: `message_start` (usage: input, cache read, cache creation, output 1), per block
//! `content_block_start` / `content_block_delta`… / `content_block_stop`, one `ping` right after
//! the first `content_block_start` (after `message_start` when there is no block),
//! `message_delta` (stop reason, `usage.output_tokens`), `message_stop`.
//! Thinking blocks end with one `signature_delta`; tool-use blocks start with an empty
//! `input_json_delta` followed by small fragments, as the real API does.

use serde_json::{Value, json};

use crate::frame::{SseFrame, StreamContext, split_fragments, split_words};
use crate::script::{Block, Reply, Stop};

/// The frames of a complete reply.
pub(crate) fn frames(reply: &Reply, ctx: &StreamContext) -> Vec<SseFrame> {
    let u = reply.usage;
    let mut out = vec![SseFrame::named_json(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": format!("msg_mock_{}", ctx.request_number),
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": {
                "input_tokens": u.input,
                "cache_creation_input_tokens": u.cache_write,
                "cache_read_input_tokens": u.cache_read,
                "output_tokens": u.output.min(1),
            },
        }}),
    )];
    if reply.blocks.is_empty() {
        out.push(ping());
    }
    for (index, block) in reply.blocks.iter().enumerate() {
        let (start, deltas) = block_parts(block);
        out.push(block_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        if index == 0 {
            out.push(ping());
        }
        for delta in deltas {
            out.push(block_event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        out.push(block_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    out.push(SseFrame::named_json(
        "message_delta",
        &json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(reply.stop), "stop_sequence": null},
            "usage": {"output_tokens": u.output}}),
    ));
    out.push(SseFrame::named_json(
        "message_stop",
        &json!({"type": "message_stop"}),
    ));
    out
}

fn block_event(name: &str, value: Value) -> SseFrame {
    SseFrame::named_json(name, &value)
}

fn ping() -> SseFrame {
    SseFrame::named_json("ping", &json!({"type": "ping"}))
}

/// The `content_block` of `content_block_start` and the deltas that follow it.
fn block_parts(block: &Block) -> (Value, Vec<Value>) {
    match block {
        Block::Text(text) => (
            json!({"type": "text", "text": ""}),
            split_words(text)
                .into_iter()
                .map(|w| json!({"type": "text_delta", "text": w}))
                .collect(),
        ),
        Block::Thinking { text, signature } => {
            let mut deltas: Vec<Value> = split_words(text)
                .into_iter()
                .map(|w| json!({"type": "thinking_delta", "thinking": w}))
                .collect();
            if !signature.is_empty() {
                deltas.push(json!({"type": "signature_delta", "signature": signature}));
            }
            (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                deltas,
            )
        }
        Block::ToolCall { .. } | Block::RawToolCall { .. } => {
            let (id, name, args) = block.tool_call_parts().unwrap_or_default();
            let deltas = std::iter::once("")
                .chain(split_fragments(&args))
                .map(|f| json!({"type": "input_json_delta", "partial_json": f}))
                .collect();
            (
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                deltas,
            )
        }
    }
}

fn stop_reason(stop: Stop) -> &'static str {
    match stop {
        Stop::Stop => "end_turn",
        Stop::Length => "max_tokens",
        Stop::ToolUse => "tool_use",
    }
}

/// The mid-stream error event (always `overloaded_error`, as the real API sends it).
pub(crate) fn error_frame(message: &str) -> SseFrame {
    SseFrame::named_json(
        "error",
        &json!({"type": "error", "error": {"type": "overloaded_error", "message": message}}),
    )
}

/// A content-block delta whose JSON stops in the middle of a string.
pub(crate) fn malformed_frame() -> SseFrame {
    SseFrame::named(
        "content_block_delta",
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"cut sho"#,
    )
}

/// The JSON body of an HTTP error response.
pub(crate) fn http_error_body(status: u16, message: &str) -> String {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_mock"})
        .to_string()
}
