//! Mistral (`mistral-conversations`, as pi 0.73.1 sends it through the Mistral SDK's
//! `chat.stream`): `POST {baseUrl}/v1/chat/completions` with a bearer key, the SDK's snake_case
//! body (assistant messages carry `prefix: false`, tool calls `index: 0`), `prompt_mode:
//! "reasoning"` or `reasoning_effort` when thinking is on, and the session id as `x-affinity`.
//! Stream decoding is in `mistral_decode.rs`.

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::codec::{RequestInput, join_url};
use crate::message::{AssistantMessage, ContentBlock, Message, UserContent};
use crate::model::{Model, ThinkingLevel};
use crate::openai_responses::short_hash;
use crate::transform::transform_messages_borrowed;
use crate::transport::HttpRequest;

#[path = "mistral_decode.rs"]
mod decode;
pub use decode::MistralDecoder;

/// Mistral's tool-call ids are nine letters and digits.
const ID_LENGTH: usize = 9;

/// pi's `deriveMistralToolCallId`.
pub fn derive_tool_call_id(id: &str, attempt: u32) -> String {
    let alnum: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    if attempt == 0 && alnum.chars().count() == ID_LENGTH {
        return alnum;
    }
    let seed_base = if alnum.is_empty() { id } else { &alnum };
    let seed = if attempt == 0 {
        seed_base.to_string()
    } else {
        format!("{seed_base}:{attempt}")
    };
    short_hash(&seed)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(ID_LENGTH)
        .collect()
}

/// pi's per-request normaliser: a derived id per original id, never two originals on one id.
#[derive(Default)]
struct IdMap {
    by_id: HashMap<String, String>,
    owner: HashMap<String, String>,
}

impl IdMap {
    fn normalize(&mut self, id: &str) -> String {
        if let Some(known) = self.by_id.get(id) {
            return known.clone();
        }
        let mut attempt = 0;
        loop {
            let candidate = derive_tool_call_id(id, attempt);
            match self.owner.get(&candidate) {
                Some(owner) if owner != id => attempt += 1,
                _ => {
                    self.by_id.insert(id.into(), candidate.clone());
                    self.owner.insert(candidate.clone(), id.into());
                    return candidate;
                }
            }
        }
    }
}

/// Models that take `reasoning_effort` rather than `prompt_mode`.
fn uses_reasoning_effort(model: &Model) -> bool {
    matches!(
        model.id.as_str(),
        "mistral-small-2603" | "mistral-small-latest" | "mistral-medium-3.5"
    )
}

/// Build the `POST {baseUrl}/v1/chat/completions` request.
pub(crate) fn build_request(input: &RequestInput<'_>) -> HttpRequest {
    let model = input.model;
    let opts = input.options;
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("stream".into(), json!(true));
    let mut messages = Vec::new();
    if let Some(prompt) = &input.context.system_prompt {
        messages.push(json!({"role": "system", "content": prompt}));
    }
    messages.extend(convert_messages(input));
    body.insert("messages".into(), Value::Array(messages));
    if let Some(tools) = input.context.tools.as_ref().filter(|t| !t.is_empty()) {
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "strict": false,
                    "parameters": t.parameters,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(t) = opts.temperature {
        body.insert("temperature".into(), json!(t));
    }
    let max_tokens = opts
        .max_tokens
        .or((model.max_tokens > 0).then(|| model.max_tokens.min(32000)));
    if let Some(max) = max_tokens {
        body.insert("max_tokens".into(), json!(max));
    }
    let level = model.clamp_thinking_level(opts.reasoning);
    if model.reasoning && level != ThinkingLevel::Off {
        if uses_reasoning_effort(model) {
            let effort = model
                .thinking_level_map
                .as_ref()
                .and_then(|m| m.value(level))
                .unwrap_or("high");
            body.insert("reasoning_effort".into(), json!(effort));
        } else {
            body.insert("prompt_mode".into(), json!("reasoning"));
        }
    }
    let mut headers = vec![
        ("content-type".into(), "application/json".into()),
        ("accept".into(), "text/event-stream".into()),
    ];
    if let Some(key) = input.api_key {
        headers.push(("authorization".into(), format!("Bearer {key}")));
    }
    let has_affinity = input
        .provider_headers
        .keys()
        .chain(model.headers.iter().flat_map(|h| h.keys()))
        .chain(opts.headers.keys())
        .any(|k| k.eq_ignore_ascii_case("x-affinity"));
    if let Some(session) = opts.session_id.as_ref().filter(|_| !has_affinity) {
        headers.push(("x-affinity".into(), session.clone()));
    }
    input.request(
        join_url(&model.base_url, "v1/chat/completions"),
        headers,
        Value::Object(body),
    )
}

fn image_url(data: &str, mime: &str) -> Value {
    json!({"type": "image_url", "image_url": format!("data:{mime};base64,{data}")})
}

/// pi's `buildToolResultText`.
fn tool_result_text(text: &str, has_images: bool, images: bool, is_error: bool) -> String {
    let trimmed = text.trim();
    let prefix = if is_error { "[tool error] " } else { "" };
    if !trimmed.is_empty() {
        let suffix = if has_images && !images {
            "\n[tool image omitted: model does not support images]"
        } else {
            ""
        };
        return format!("{prefix}{trimmed}{suffix}");
    }
    match (has_images, images) {
        (true, true) => format!("{prefix}(see attached image)"),
        (true, false) => format!("{prefix}(image omitted: model does not support images)"),
        (false, _) => format!("{prefix}(no tool output)"),
    }
}

fn convert_messages(input: &RequestInput<'_>) -> Vec<Value> {
    let model = input.model;
    let images = model.supports_images();
    let ids = RefCell::new(IdMap::default());
    let normalize = |id: &str, _: &Model, _: &AssistantMessage| ids.borrow_mut().normalize(id);
    let messages = transform_messages_borrowed(
        &input.context.messages,
        model,
        Some(&normalize),
        input.now_ms,
    );
    let mut out = Vec::new();
    for message in &messages {
        match &**message {
            Message::User(u) => match &u.content {
                UserContent::Text(t) => out.push(json!({"role": "user", "content": t})),
                UserContent::Blocks(blocks) => {
                    let had_images = blocks.iter().any(|b| matches!(b, ContentBlock::Image(_)));
                    let content: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
                            ContentBlock::Image(i) if images => {
                                Some(image_url(&i.data, &i.mime_type))
                            }
                            ContentBlock::Image(_)
                            | ContentBlock::Thinking(_)
                            | ContentBlock::ToolCall(_) => None,
                        })
                        .collect();
                    if !content.is_empty() {
                        out.push(json!({"role": "user", "content": content}));
                    } else if had_images && !images {
                        out.push(json!({"role": "user", "content": "(image omitted: model does not support images)"}));
                    }
                }
            },
            Message::Assistant(a) => {
                let mut content = Vec::new();
                let mut calls = Vec::new();
                for block in &a.content {
                    match block {
                        ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                            content.push(json!({"type": "text", "text": t.text}));
                        }
                        ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => {
                            content.push(json!({"type": "thinking", "thinking": [{"type": "text", "text": t.thinking}]}));
                        }
                        ContentBlock::ToolCall(tc) => calls.push(json!({
                            "id": tc.id, "type": "function",
                            "function": {"name": tc.name, "arguments": tc.arguments.to_string()},
                            "index": 0,
                        })),
                        ContentBlock::Text(_)
                        | ContentBlock::Thinking(_)
                        | ContentBlock::Image(_) => {}
                    }
                }
                if content.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut item = json!({"role": "assistant"});
                if !content.is_empty() {
                    item["content"] = Value::Array(content);
                }
                if !calls.is_empty() {
                    item["tool_calls"] = Value::Array(calls);
                }
                item["prefix"] = json!(false);
                out.push(item);
            }
            Message::ToolResult(r) => {
                let text: Vec<&str> = r.content.iter().filter_map(ContentBlock::as_text).collect();
                let has_images = r
                    .content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Image(_)));
                let mut content = vec![
                    json!({"type": "text", "text": tool_result_text(&text.join("\n"), has_images, images, r.is_error)}),
                ];
                if images {
                    content.extend(r.content.iter().filter_map(|b| match b {
                        ContentBlock::Image(i) => Some(image_url(&i.data, &i.mime_type)),
                        ContentBlock::Text(_)
                        | ContentBlock::Thinking(_)
                        | ContentBlock::ToolCall(_) => None,
                    }));
                }
                out.push(json!({
                    "role": "tool", "content": content,
                    "tool_call_id": r.tool_call_id, "name": r.tool_name,
                }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_ids_are_nine_alphanumerics_without_collisions() {
        assert_eq!(derive_tool_call_id("abc-123-XYZ", 0), "abc123XYZ");
        let long = derive_tool_call_id("toolu_01ABCDEFGHIJ", 0);
        assert_eq!(long.len(), 9);
        assert!(long.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(long, derive_tool_call_id("toolu_01ABCDEFGHIJ", 0));
        assert_ne!(long, derive_tool_call_id("toolu_01ABCDEFGHIJ", 1));
        let mut ids = IdMap::default();
        let a = ids.normalize("call-1|fc-1");
        assert_eq!(ids.normalize("call-1|fc-1"), a);
        // Two originals that strip to the same nine characters get different ids.
        let x = ids.normalize("abc_123_XYZ");
        let y = ids.normalize("abc-123-XYZ");
        assert_eq!(x, "abc123XYZ");
        assert_ne!(x, y);
    }

    #[test]
    fn tool_result_texts_as_pi_writes_them() {
        assert_eq!(tool_result_text(" ok ", false, true, false), "ok");
        assert_eq!(
            tool_result_text("bad", false, true, true),
            "[tool error] bad"
        );
        assert_eq!(
            tool_result_text("x", true, false, false),
            "x\n[tool image omitted: model does not support images]"
        );
        assert_eq!(
            tool_result_text("", true, true, true),
            "[tool error] (see attached image)"
        );
        assert_eq!(tool_result_text("", false, true, false), "(no tool output)");
    }
}
