//! OpenAI Chat Completions streaming (`POST …/chat/completions`).
//!
//! Every frame is a `data:` `chat.completion.chunk` with one choice: first a role chunk
//! (`{"role":"assistant","content":""}`), then one chunk per word of text (`content`) or
//! thinking, then tool calls, then a chunk with an empty delta and `finish_reason`. When the
//! request set `stream_options.include_usage`, every chunk carries `"usage":null` and a last
//! chunk with empty `choices` carries the usage. The stream ends with `data: [DONE]`.
//!
//! Thinking goes into the delta field its signature names (`reasoning_content`, `reasoning` or
//! `reasoning_text`; any other signature means `reasoning_content`), since that field name is
//! all this protocol carries.
//!
//! A run of consecutive tool calls is streamed in parallel: each call's opening chunk (`index`,
//! `id`, `type`, `function.name`, empty `arguments`) in order, then the argument fragments of
//! all calls of the run interleaved round-robin, each chunk naming its call by `index` only.
//!
//! Empty text or thinking has no chunk (this protocol has no block boundaries to show it).
//!
//! Usage: `prompt_tokens = input + cache_read`, `prompt_tokens_details.cached_tokens =
//! cache_read`, `completion_tokens = output`; `cache_write` has no field and is not sent.

use serde_json::{Value, json};

use crate::frame::{SseFrame, StreamContext, split_fragments, split_words};
use crate::script::{Block, Reply, Stop};

const CREATED: u64 = 1_700_000_000;

/// The frames of a complete reply.
pub(crate) fn frames(reply: &Reply, ctx: &StreamContext) -> Vec<SseFrame> {
    let mut deltas = vec![json!({"role": "assistant", "content": ""})];
    let mut tool_index = 0;
    let mut i = 0;
    while let Some(block) = reply.blocks.get(i) {
        match block {
            Block::Text(text) => {
                deltas.extend(split_words(text).into_iter().map(|w| json!({"content": w})));
                i += 1;
            }
            Block::Thinking { text, signature } => {
                let field = reasoning_field(signature);
                deltas.extend(split_words(text).into_iter().map(|w| {
                    let mut delta = serde_json::Map::new();
                    delta.insert(field.to_owned(), Value::from(w));
                    Value::Object(delta)
                }));
                i += 1;
            }
            Block::ToolCall { .. } | Block::RawToolCall { .. } => {
                let run: Vec<&Block> = reply.blocks[i..]
                    .iter()
                    .take_while(|b| b.tool_call_parts().is_some())
                    .collect();
                i += run.len();
                tool_run_deltas(&run, &mut tool_index, &mut deltas);
            }
        }
    }
    let mut out: Vec<SseFrame> = deltas
        .into_iter()
        .map(|delta| chunk(ctx, delta, Value::Null))
        .collect();
    out.push(chunk(ctx, json!({}), finish_reason(reply.stop).into()));
    if ctx.include_usage {
        let u = reply.usage;
        let prompt = u.input + u.cache_read;
        let mut last = base(ctx);
        last["choices"] = json!([]);
        last["usage"] = json!({
            "prompt_tokens": prompt,
            "completion_tokens": u.output,
            "total_tokens": prompt + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cache_read, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        });
        out.push(SseFrame::json(&last));
    }
    out.push(SseFrame::data("[DONE]"));
    out
}

/// Opening chunks of every call in `run`, then their argument fragments interleaved.
fn tool_run_deltas(run: &[&Block], tool_index: &mut usize, deltas: &mut Vec<Value>) {
    let mut fragments: Vec<(usize, Vec<String>)> = Vec::new();
    for block in run {
        if let Some((id, name, args)) = block.tool_call_parts() {
            let index = *tool_index;
            *tool_index += 1;
            deltas.push(json!({"tool_calls": [{
                "index": index,
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }]}));
            let parts = split_fragments(&args)
                .into_iter()
                .map(str::to_owned)
                .collect();
            fragments.push((index, parts));
        }
    }
    let longest = fragments.iter().map(|(_, p)| p.len()).max().unwrap_or(0);
    for round in 0..longest {
        for (index, parts) in &fragments {
            if let Some(part) = parts.get(round) {
                deltas.push(json!({"tool_calls": [{
                    "index": index,
                    "function": {"arguments": part},
                }]}));
            }
        }
    }
}

fn reasoning_field(signature: &str) -> &'static str {
    match signature {
        "reasoning" => "reasoning",
        "reasoning_text" => "reasoning_text",
        _ => "reasoning_content",
    }
}

fn finish_reason(stop: Stop) -> &'static str {
    match stop {
        Stop::Stop => "stop",
        Stop::Length => "length",
        Stop::ToolUse => "tool_calls",
    }
}

fn base(ctx: &StreamContext) -> Value {
    json!({
        "id": format!("chatcmpl-mock-{}", ctx.request_number),
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": ctx.model,
        "system_fingerprint": "fp_mock",
    })
}

fn chunk(ctx: &StreamContext, delta: Value, finish_reason: Value) -> SseFrame {
    let mut value = base(ctx);
    value["choices"] = json!([{
        "index": 0,
        "delta": delta,
        "logprobs": null,
        "finish_reason": finish_reason,
    }]);
    if ctx.include_usage {
        value["usage"] = Value::Null;
    }
    SseFrame::json(&value)
}

/// The mid-stream error chunk, OpenAI style.
pub(crate) fn error_frame(message: &str) -> SseFrame {
    SseFrame::json(&json!({"error": {
        "message": message,
        "type": "server_error",
        "param": null,
        "code": "server_error",
    }}))
}

/// A chunk whose JSON stops in the middle of a string.
pub(crate) fn malformed_frame() -> SseFrame {
    SseFrame::data(
        r#"{"id":"chatcmpl-mock","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"cut sho"#,
    )
}

/// The JSON body of an HTTP error response (shared with the Responses API).
pub(crate) fn http_error_body(status: u16, message: &str) -> String {
    let (kind, code) = match status {
        400 | 404 | 413 => ("invalid_request_error", Value::Null),
        401 => ("invalid_request_error", json!("invalid_api_key")),
        429 => ("requests", json!("rate_limit_exceeded")),
        _ => ("server_error", Value::Null),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
}
