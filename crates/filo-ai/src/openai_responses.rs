//! OpenAI Responses (`openai-responses`, pi spec §1.7.3): request building. Stream decoding is in
//! `openai_responses_decode.rs`.

use serde_json::{Map, Value, json};

use crate::client::CacheRetention;
use crate::codec::{RequestInput, is_blank, join_url};
use crate::message::{AssistantMessage, ContentBlock, Message, UserContent};
use crate::model::{Model, ThinkingLevel};
use crate::transform::{is_same_model, sanitize_tool_call_id, transform_messages_borrowed};
use crate::transport::HttpRequest;

#[path = "openai_responses_decode.rs"]
mod decode;
pub use decode::ResponsesDecoder;

/// pi's `shortHash`: two 32-bit FNV-like lanes over UTF-16 code units, base-36 encoded.
pub fn short_hash(text: &str) -> String {
    let mut h1: u32 = 0xdead_beef;
    let mut h2: u32 = 0x41c6_ce57;
    for unit in text.encode_utf16() {
        let ch = u32::from(unit);
        h1 = (h1 ^ ch).wrapping_mul(2_654_435_761);
        h2 = (h2 ^ ch).wrapping_mul(1_597_334_677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h2 ^ (h2 >> 13)).wrapping_mul(3_266_489_909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h1 ^ (h1 >> 13)).wrapping_mul(3_266_489_909);
    format!("{}{}", base36(h2), base36(h1))
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

/// pi's id normaliser for OpenAI's own Responses endpoints: both halves of `call|item`
/// sanitised, the item prefixed `fc_` when needed, each ≤ 64 characters without trailing `_`.
fn normalize_id(id: &str, model: &Model, _source: &AssistantMessage) -> String {
    if !matches!(
        model.provider.as_str(),
        "openai" | "openai-codex" | "opencode" | "azure"
    ) {
        return id.to_string();
    }
    let Some((call, item)) = id.split_once('|') else {
        return id.to_string();
    };
    let call = sanitize_tool_call_id(call, 64);
    let mut item = sanitize_tool_call_id(item, usize::MAX);
    if !item.starts_with("fc") {
        item = format!("fc_{item}");
    }
    let item: String = item.chars().take(64).collect();
    format!(
        "{}|{}",
        call.trim_end_matches('_'),
        item.trim_end_matches('_')
    )
}

/// Build the `POST {baseUrl}/responses` request.
pub(crate) fn build_request(input: &RequestInput<'_>) -> HttpRequest {
    let model = input.model;
    let opts = input.options;
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    let mut items = convert_input(input);
    let effort = (model.reasoning && opts.reasoning != ThinkingLevel::Off)
        .then(|| model.effort_level(opts.reasoning));
    if model.reasoning && effort.is_none() && model.name.starts_with("gpt-5") {
        items.push(json!({"role": "developer", "content": "# Juice: 0 !important"}));
    }
    body.insert("input".into(), Value::Array(items));
    body.insert("stream".into(), json!(true));
    let key_mode = model
        .compat
        .as_ref()
        .and_then(|c| c.get("promptCacheKeyMode"))
        .and_then(Value::as_str);
    if opts.cache_retention != CacheRetention::None {
        if let Some(session) = opts
            .session_id
            .as_ref()
            .filter(|_| key_mode != Some("disabled"))
        {
            body.insert("prompt_cache_key".into(), json!(session));
        }
        if opts.cache_retention == CacheRetention::Long && model.base_url.contains("api.openai.com")
        {
            body.insert("prompt_cache_retention".into(), json!("24h"));
        }
    }
    body.insert("store".into(), json!(false));
    let compat = model.compat.as_ref();
    let compat_flag = |key: &str| compat.and_then(|c| c.get(key)).and_then(Value::as_bool);
    // pi 1.6's `compat.supportsMaxOutputTokens` (default true).
    if compat_flag("supportsMaxOutputTokens") != Some(false) {
        body.insert("max_output_tokens".into(), json!(input.base_max_tokens()));
    }
    if let Some(t) = opts.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(tier) = &opts.service_tier {
        body.insert("service_tier".into(), json!(tier));
    }
    if let Some(tools) = input.context.tools.as_ref().filter(|t| !t.is_empty()) {
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| {
                let mut tool = json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                });
                // pi 1.6 sends `strict` only where `compat.supportsStrictMode` says so.
                if compat_flag("supportsStrictMode") == Some(true) {
                    tool["strict"] = json!(false);
                }
                tool
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(level) = effort {
        body.insert(
            "reasoning".into(),
            json!({"effort": model.effort_name(level), "summary": "auto"}),
        );
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    let mut headers = vec![("content-type".into(), "application/json".into())];
    if let Some(key) = input.api_key {
        headers.push(("authorization".into(), format!("Bearer {key}")));
    }
    // pi 1.6's session affinity headers (`compat.sessionAffinityFormat`, detected as
    // `openrouter` for OpenRouter, else `openai`), sent when the prompt cache is on.
    if let Some(session) = opts
        .session_id
        .as_ref()
        .filter(|_| opts.cache_retention != CacheRetention::None)
    {
        let format = compat
            .and_then(|c| c.get("sessionAffinityFormat"))
            .and_then(Value::as_str)
            .unwrap_or(
                if model.provider == "openrouter" || model.base_url.contains("openrouter.ai") {
                    "openrouter"
                } else {
                    "openai"
                },
            );
        if format == "openrouter" {
            headers.push(("x-session-id".into(), session.clone()));
        } else {
            if format == "openai" {
                headers.push(("session-id".into(), session.clone()));
            }
            headers.push(("x-client-request-id".into(), session.clone()));
        }
    }
    input.request(
        join_url(&model.base_url, "responses"),
        headers,
        Value::Object(body),
    )
}

fn data_url(data: &str, mime: &str) -> String {
    format!("data:{mime};base64,{data}")
}

fn convert_input(input: &RequestInput<'_>) -> Vec<Value> {
    let model = input.model;
    let images = model.supports_images();
    let messages = transform_messages_borrowed(
        &input.context.messages,
        model,
        Some(&normalize_id),
        input.now_ms,
    );
    let mut out = Vec::new();
    if let Some(prompt) = &input.context.system_prompt {
        let role = if model.reasoning {
            "developer"
        } else {
            "system"
        };
        out.push(json!({"role": role, "content": prompt}));
    }
    let mut message_counter = 0usize;
    for message in &messages {
        match &**message {
            Message::User(u) => {
                let blocks = match &u.content {
                    UserContent::Text(t) => vec![ContentBlock::text(t.clone())],
                    UserContent::Blocks(b) => b.clone(),
                };
                let parts: Vec<Value> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => {
                            Some(json!({"type": "input_text", "text": t.text}))
                        }
                        ContentBlock::Image(i) if images => Some(json!({
                            "type": "input_image",
                            "detail": "auto",
                            "image_url": data_url(&i.data, &i.mime_type),
                        })),
                        ContentBlock::Image(_)
                        | ContentBlock::Thinking(_)
                        | ContentBlock::ToolCall(_) => None,
                    })
                    .collect();
                if !parts.is_empty() {
                    out.push(json!({"role": "user", "content": parts}));
                }
            }
            Message::Assistant(a) => convert_assistant(a, model, &mut message_counter, &mut out),
            Message::ToolResult(r) => {
                let call_id = r.tool_call_id.split('|').next().unwrap_or_default();
                let text: Vec<&str> = r.content.iter().filter_map(ContentBlock::as_text).collect();
                let has_images = images
                    && r.content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::Image(_)));
                let output = if has_images {
                    let parts: Vec<Value> = r
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => {
                                Some(json!({"type": "input_text", "text": t.text}))
                            }
                            ContentBlock::Image(i) => Some(json!({
                                "type": "input_image",
                                "detail": "auto",
                                "image_url": data_url(&i.data, &i.mime_type),
                            })),
                            ContentBlock::Thinking(_) | ContentBlock::ToolCall(_) => None,
                        })
                        .collect();
                    Value::Array(parts)
                } else {
                    json!(text.join("\n"))
                };
                out.push(
                    json!({"type": "function_call_output", "call_id": call_id, "output": output}),
                );
            }
        }
    }
    out
}

/// The message id and phase a text signature carries (V1 JSON or a legacy plain id).
fn text_signature_parts(signature: &str) -> (String, Option<String>) {
    if signature.starts_with('{')
        && let Ok(v) = serde_json::from_str::<Value>(signature)
    {
        let id = v.get("id").and_then(Value::as_str).unwrap_or_default();
        let phase = v.get("phase").and_then(Value::as_str).map(str::to_string);
        return (id.to_string(), phase);
    }
    (signature.to_string(), None)
}

fn convert_assistant(
    a: &AssistantMessage,
    model: &Model,
    counter: &mut usize,
    out: &mut Vec<Value>,
) {
    let same_family = a.provider == model.provider && a.api == model.api;
    let same_model = is_same_model(a, model);
    for block in &a.content {
        match block {
            ContentBlock::Thinking(t) => {
                let item = t
                    .thinking_signature
                    .as_deref()
                    .and_then(|s| serde_json::from_str::<Value>(s).ok());
                if let Some(item) = item.filter(|i| i.is_object()) {
                    out.push(item);
                }
            }
            ContentBlock::Text(t) if !is_blank(&t.text) => {
                let (mut id, phase) = t
                    .text_signature
                    .as_deref()
                    .map(text_signature_parts)
                    .unwrap_or_default();
                if id.is_empty() {
                    id = format!("msg_{counter}");
                } else if id.len() > 64 {
                    id = format!("msg_{}", short_hash(&id));
                }
                *counter += 1;
                let mut item = json!({
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": t.text, "annotations": []}],
                    "status": "completed",
                    "id": id,
                });
                if let Some(phase) = phase {
                    item["phase"] = json!(phase);
                }
                out.push(item);
            }
            ContentBlock::ToolCall(tc) => {
                let (call_id, item_id) = match tc.id.split_once('|') {
                    Some((c, i)) => (c, Some(i)),
                    None => (tc.id.as_str(), None),
                };
                let mut item = json!({"type": "function_call"});
                let keep_item =
                    item_id.filter(|i| !(same_family && !same_model && i.starts_with("fc_")));
                if let Some(i) = keep_item {
                    item["id"] = json!(i);
                }
                item["call_id"] = json!(call_id);
                item["name"] = json!(tc.name);
                item["arguments"] = json!(tc.arguments.to_string());
                out.push(item);
            }
            ContentBlock::Text(_) | ContentBlock::Image(_) => {}
        }
    }
}

#[cfg(test)]
#[path = "openai_responses_tests.rs"]
mod tests;
