//! OpenAI Responses streaming (`POST …/responses`).
//!
//! Typed events, each `event:` name equal to its `type`, numbered by `sequence_number`:
//! `response.created`, `response.in_progress`, then per block one output item
//! (`response.output_item.added` … `response.output_item.done`), then `response.completed`
//! (or `response.incomplete` with `incomplete_details.reason = "max_output_tokens"` when the
//! reply stops on `Length`) carrying every output item and the usage.
//!
//! - Thinking → a `reasoning` item: `reasoning_summary_part.added`, one
//!   `reasoning_summary_text.delta` per word, `reasoning_summary_text.done`,
//!   `reasoning_summary_part.done`; the signature is the item's `encrypted_content`.
//! - Text → a `message` item: `content_part.added`, one `output_text.delta` per word,
//!   `output_text.done`, `content_part.done`.
//! - Tool call → a `function_call` item: `function_call_arguments.delta` fragments, then
//!   `function_call_arguments.done`. An id `call|item` gives `call_id = call` and the item id
//!   `item`; any other id is the `call_id` and the item id is generated (`fc_…`).
//!
//! Usage: `input_tokens = input + cache_read`, `input_tokens_details.cached_tokens =
//! cache_read`, `output_tokens = output`; `cache_write` has no field.

use serde_json::{Map, Value, json};

use crate::frame::{SseFrame, StreamContext, split_fragments, split_words};
use crate::script::{Block, Reply, Stop};

const CREATED: u64 = 1_700_000_000;

/// Builds named frames, numbering them.
struct Events {
    out: Vec<SseFrame>,
}

impl Events {
    fn push(&mut self, name: &str, fields: Value) {
        let mut obj = Map::new();
        obj.insert("type".to_owned(), Value::from(name));
        if let Value::Object(fields) = fields {
            obj.extend(fields);
        }
        obj.insert("sequence_number".to_owned(), Value::from(self.out.len()));
        self.out
            .push(SseFrame::named_json(name, &Value::Object(obj)));
    }
}

fn response_object(ctx: &StreamContext, status: &str, output: Vec<Value>, usage: Value) -> Value {
    json!({
        "id": format!("resp_mock_{}", ctx.request_number),
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "error": null,
        "incomplete_details": null,
        "model": ctx.model,
        "output": output,
        "usage": usage,
    })
}

/// The frames of a complete reply.
pub(crate) fn frames(reply: &Reply, ctx: &StreamContext) -> Vec<SseFrame> {
    let mut ev = Events { out: Vec::new() };
    let created = response_object(ctx, "in_progress", Vec::new(), Value::Null);
    ev.push("response.created", json!({"response": created}));
    ev.push("response.in_progress", json!({"response": created}));
    let mut items = Vec::new();
    for (output_index, block) in reply.blocks.iter().enumerate() {
        let item = match block {
            Block::Thinking { text, signature } => {
                let id = format!("rs_mock_{}_{output_index}", ctx.request_number);
                reasoning_item(&mut ev, output_index, &id, text, signature)
            }
            Block::Text(text) => {
                let id = format!("msg_mock_{}_{output_index}", ctx.request_number);
                message_item(&mut ev, output_index, &id, text)
            }
            Block::ToolCall { .. } | Block::RawToolCall { .. } => {
                let (id, name, args) = block.tool_call_parts().unwrap_or_default();
                let (call_id, item_id) = match id.split_once('|') {
                    Some((call, item)) => (call.to_owned(), item.to_owned()),
                    None => (
                        id.to_owned(),
                        format!("fc_mock_{}_{output_index}", ctx.request_number),
                    ),
                };
                function_call_item(&mut ev, output_index, [&item_id, &call_id, name], &args)
            }
        };
        items.push(item);
    }
    let u = reply.usage;
    let usage = json!({
        "input_tokens": u.input + u.cache_read,
        "input_tokens_details": {"cached_tokens": u.cache_read},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.input + u.cache_read + u.output,
    });
    match reply.stop {
        Stop::Stop | Stop::ToolUse => {
            let done = response_object(ctx, "completed", items, usage);
            ev.push("response.completed", json!({"response": done}));
        }
        Stop::Length => {
            let mut done = response_object(ctx, "incomplete", items, usage);
            done["incomplete_details"] = json!({"reason": "max_output_tokens"});
            ev.push("response.incomplete", json!({"response": done}));
        }
    }
    ev.out
}

fn reasoning_item(ev: &mut Events, idx: usize, id: &str, text: &str, signature: &str) -> Value {
    ev.push(
        "response.output_item.added",
        json!({"output_index": idx, "item": {"id": id, "type": "reasoning", "summary": []}}),
    );
    let mut summary = Vec::new();
    if !text.is_empty() {
        let loc = json!({"item_id": id, "output_index": idx, "summary_index": 0});
        let part = |text: &str| json!({"type": "summary_text", "text": text});
        ev.push(
            "response.reasoning_summary_part.added",
            with(&loc, "part", part("")),
        );
        for word in split_words(text) {
            ev.push(
                "response.reasoning_summary_text.delta",
                with(&loc, "delta", word.into()),
            );
        }
        ev.push(
            "response.reasoning_summary_text.done",
            with(&loc, "text", text.into()),
        );
        ev.push(
            "response.reasoning_summary_part.done",
            with(&loc, "part", part(text)),
        );
        summary.push(part(text));
    }
    let item =
        json!({"id": id, "type": "reasoning", "encrypted_content": signature, "summary": summary});
    ev.push(
        "response.output_item.done",
        json!({"output_index": idx, "item": item}),
    );
    item
}

fn message_item(ev: &mut Events, idx: usize, id: &str, text: &str) -> Value {
    let open = json!({"id": id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"});
    ev.push(
        "response.output_item.added",
        json!({"output_index": idx, "item": open}),
    );
    let loc = json!({"item_id": id, "output_index": idx, "content_index": 0});
    let part = |text: &str| json!({"type": "output_text", "annotations": [], "logprobs": [], "text": text});
    ev.push("response.content_part.added", with(&loc, "part", part("")));
    for word in split_words(text) {
        let mut delta = with(&loc, "delta", word.into());
        delta["logprobs"] = json!([]);
        ev.push("response.output_text.delta", delta);
    }
    let mut done = with(&loc, "text", text.into());
    done["logprobs"] = json!([]);
    ev.push("response.output_text.done", done);
    ev.push("response.content_part.done", with(&loc, "part", part(text)));
    let item = json!({"id": id, "type": "message", "status": "completed", "content": [part(text)], "role": "assistant"});
    ev.push(
        "response.output_item.done",
        json!({"output_index": idx, "item": item}),
    );
    item
}

/// `ids` = [item id, call id, tool name].
fn function_call_item(ev: &mut Events, idx: usize, ids: [&str; 3], args: &str) -> Value {
    let [id, call_id, name] = ids;
    let item = |status: &str, arguments: &str| json!({"id": id, "type": "function_call", "status": status, "arguments": arguments, "call_id": call_id, "name": name});
    ev.push(
        "response.output_item.added",
        json!({"output_index": idx, "item": item("in_progress", "")}),
    );
    let loc = json!({"item_id": id, "output_index": idx});
    for fragment in split_fragments(args) {
        ev.push(
            "response.function_call_arguments.delta",
            with(&loc, "delta", fragment.into()),
        );
    }
    ev.push(
        "response.function_call_arguments.done",
        with(&loc, "arguments", args.into()),
    );
    let done = item("completed", args);
    ev.push(
        "response.output_item.done",
        json!({"output_index": idx, "item": done}),
    );
    done
}

/// `base` (an object) with one more field.
fn with(base: &Value, key: &str, value: Value) -> Value {
    let mut v = base.clone();
    v[key] = value;
    v
}

/// The mid-stream failure: a `response.failed` event carrying the error.
pub(crate) fn error_frame(message: &str, ctx: &StreamContext, sequence_number: usize) -> SseFrame {
    let mut failed = response_object(ctx, "failed", Vec::new(), Value::Null);
    failed["error"] = json!({"code": "server_error", "message": message});
    SseFrame::named_json(
        "response.failed",
        &json!({"type": "response.failed", "response": failed, "sequence_number": sequence_number}),
    )
}

/// A text delta event whose JSON stops in the middle of a string.
pub(crate) fn malformed_frame() -> SseFrame {
    SseFrame::named(
        "response.output_text.delta",
        r#"{"type":"response.output_text.delta","item_id":"msg_mock","output_index":0,"content_index":0,"delta":"cut sho"#,
    )
}
