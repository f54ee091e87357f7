//! Google Generative AI (`google-generative-ai`, pi spec §1.7.5): request building for
//! `streamGenerateContent?alt=sse`. Stream decoding is in `google_decode.rs`.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::{Map, Value, json};

use crate::codec::{RequestInput, is_blank, join_url};
use crate::message::{AssistantMessage, ContentBlock, Message, UserContent};
use crate::model::{Model, ThinkingLevel};
use crate::transform::{is_same_model, sanitize_tool_call_id, transform_messages_borrowed};
use crate::transport::HttpRequest;

/// Gemini 3 wants every function call signed; this sentinel skips the check for replayed calls.
const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

fn is_gemini3(model: &Model) -> bool {
    model.id.contains("gemini-3")
}

/// Models served through Gemini's API that need explicit function-call ids.
fn needs_call_ids(model: &Model) -> bool {
    model.id.starts_with("claude-") || model.id.starts_with("gpt-oss-")
}

fn is_base64_signature(s: &str) -> bool {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    s.len().is_multiple_of(4)
        && RE
            .get_or_init(|| Regex::new(r"^[A-Za-z0-9+/]+={0,2}$").ok())
            .as_ref()
            .is_some_and(|re| re.is_match(s))
}

pub(crate) fn thinking_config(input: &RequestInput<'_>) -> Option<Value> {
    let model = input.model;
    let level = input.options.reasoning;
    if !model.reasoning || level == ThinkingLevel::Off {
        return None;
    }
    let id = model.id.as_str();
    static PRO: OnceLock<Option<Regex>> = OnceLock::new();
    static FLASH: OnceLock<Option<Regex>> = OnceLock::new();
    let family = |kind: &str| {
        let cell = if kind == "pro" { &PRO } else { &FLASH };
        cell.get_or_init(|| Regex::new(&format!(r"gemini-3(\.\d+)?-{kind}")).ok())
            .as_ref()
            .is_some_and(|re| re.is_match(id))
    };
    let level_name = |l: &str| json!({"includeThoughts": true, "thinkingLevel": l});
    if family("pro") {
        return Some(level_name(match level {
            ThinkingLevel::Off | ThinkingLevel::Minimal | ThinkingLevel::Low => "LOW",
            ThinkingLevel::Medium
            | ThinkingLevel::High
            | ThinkingLevel::Xhigh
            | ThinkingLevel::Max => "HIGH",
        }));
    }
    if family("flash") {
        return Some(level_name(match level {
            ThinkingLevel::Off | ThinkingLevel::Minimal => "MINIMAL",
            ThinkingLevel::Low => "LOW",
            ThinkingLevel::Medium => "MEDIUM",
            ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => "HIGH",
        }));
    }
    let level = level.clamped();
    let table: Option<[i64; 4]> = if id.contains("2.5-pro") {
        Some([128, 2048, 8192, 32768])
    } else if id.contains("2.5-flash") {
        Some([128, 2048, 8192, 24576])
    } else {
        None
    };
    let custom = input
        .options
        .thinking_budgets
        .as_ref()
        .and_then(|b| b.get(&level))
        .and_then(|b| i64::try_from(*b).ok());
    let slot = match level {
        ThinkingLevel::Off | ThinkingLevel::Minimal => 0,
        ThinkingLevel::Low => 1,
        ThinkingLevel::Medium => 2,
        ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => 3,
    };
    let budget = custom.unwrap_or_else(|| table.map_or(-1, |t| t[slot]));
    Some(json!({"includeThoughts": true, "thinkingBudget": budget}))
}

/// Build the `POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse` request.
pub(crate) fn build_request(input: &RequestInput<'_>) -> HttpRequest {
    let model = input.model;
    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(convert_contents(input)));
    if let Some(prompt) = &input.context.system_prompt {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": prompt}]}),
        );
    }
    let mut config = Map::new();
    if let Some(t) = input.options.temperature {
        config.insert("temperature".into(), json!(t));
    }
    config.insert("maxOutputTokens".into(), json!(input.base_max_tokens()));
    if let Some(thinking) = thinking_config(input) {
        config.insert("thinkingConfig".into(), thinking);
    }
    body.insert("generationConfig".into(), Value::Object(config));
    if let Some(tools) = input.context.tools.as_ref().filter(|t| !t.is_empty()) {
        let decls: Vec<Value> = tools
            .iter()
            .map(|t| {
                json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters})
            })
            .collect();
        body.insert("tools".into(), json!([{"functionDeclarations": decls}]));
    }
    let mut headers = vec![("content-type".into(), "application/json".into())];
    if let Some(key) = input.api_key {
        headers.push(("x-goog-api-key".into(), key.into()));
    }
    let url = join_url(
        &model.base_url,
        &format!("models/{}:streamGenerateContent?alt=sse", model.id),
    );
    input.request(url, headers, Value::Object(body))
}

fn inline(data: &str, mime: &str) -> Value {
    json!({"inlineData": {"mimeType": mime, "data": data}})
}

fn normalize_id(id: &str, model: &Model, _source: &AssistantMessage) -> String {
    if needs_call_ids(model) {
        sanitize_tool_call_id(id, 64)
    } else {
        id.to_string()
    }
}

pub(crate) fn convert_contents(input: &RequestInput<'_>) -> Vec<Value> {
    let model = input.model;
    let images = model.supports_images();
    let messages = transform_messages_borrowed(
        &input.context.messages,
        model,
        Some(&normalize_id),
        input.now_ms,
    );
    let mut out = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match &*messages[i] {
            Message::User(u) => {
                let parts: Vec<Value> = match &u.content {
                    UserContent::Text(t) => vec![json!({"text": t})],
                    UserContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(json!({"text": t.text})),
                            ContentBlock::Image(img) if images => {
                                Some(inline(&img.data, &img.mime_type))
                            }
                            ContentBlock::Image(_)
                            | ContentBlock::Thinking(_)
                            | ContentBlock::ToolCall(_) => None,
                        })
                        .collect(),
                };
                if !parts.is_empty() {
                    out.push(json!({"role": "user", "parts": parts}));
                }
            }
            Message::Assistant(a) => {
                let parts = assistant_parts(a, model);
                if !parts.is_empty() {
                    out.push(json!({"role": "model", "parts": parts}));
                }
            }
            Message::ToolResult(_) => {
                let mut parts = Vec::new();
                let mut image_parts = Vec::new();
                while let Some(Message::ToolResult(r)) = messages.get(i).map(|m| &**m) {
                    let text: Vec<&str> =
                        r.content.iter().filter_map(ContentBlock::as_text).collect();
                    let imgs: Vec<Value> = r
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Image(img) if images => {
                                Some(inline(&img.data, &img.mime_type))
                            }
                            ContentBlock::Image(_)
                            | ContentBlock::Text(_)
                            | ContentBlock::Thinking(_)
                            | ContentBlock::ToolCall(_) => None,
                        })
                        .collect();
                    let value = if !text.is_empty() {
                        text.join("\n")
                    } else if !imgs.is_empty() {
                        "(see attached image)".to_string()
                    } else {
                        String::new()
                    };
                    let key = if r.is_error { "error" } else { "output" };
                    let mut response = json!({"name": r.tool_name, "response": {key: value}});
                    if !imgs.is_empty() && is_gemini3(model) {
                        response["parts"] = Value::Array(imgs);
                    } else {
                        image_parts.extend(imgs);
                    }
                    if needs_call_ids(model) {
                        response["id"] = json!(r.tool_call_id);
                    }
                    parts.push(json!({"functionResponse": response}));
                    i += 1;
                }
                out.push(json!({"role": "user", "parts": parts}));
                if !image_parts.is_empty() {
                    image_parts.insert(0, json!({"text": "Tool result image:"}));
                    out.push(json!({"role": "user", "parts": image_parts}));
                }
                continue;
            }
        }
        i += 1;
    }
    out
}

fn assistant_parts(a: &AssistantMessage, model: &Model) -> Vec<Value> {
    let same = is_same_model(a, model);
    let valid_sig = |s: &Option<String>| {
        s.as_deref()
            .filter(|s| same && is_base64_signature(s))
            .map(str::to_string)
    };
    a.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) if !is_blank(&t.text) => {
                let mut p = json!({"text": t.text});
                if let Some(sig) = valid_sig(&t.text_signature) {
                    p["thoughtSignature"] = json!(sig);
                }
                Some(p)
            }
            ContentBlock::Thinking(t) if same && !is_blank(&t.thinking) => {
                let mut p = json!({"thought": true, "text": t.thinking});
                if let Some(sig) = valid_sig(&t.thinking_signature) {
                    p["thoughtSignature"] = json!(sig);
                }
                Some(p)
            }
            ContentBlock::Thinking(t) if !is_blank(&t.thinking) => {
                Some(json!({"text": t.thinking}))
            }
            ContentBlock::ToolCall(tc) => {
                let mut call = json!({"name": tc.name, "args": tc.arguments});
                if needs_call_ids(model) {
                    call["id"] = json!(tc.id);
                }
                let mut p = json!({"functionCall": call});
                match valid_sig(&tc.thought_signature) {
                    Some(sig) => p["thoughtSignature"] = json!(sig),
                    None if is_gemini3(model) => p["thoughtSignature"] = json!(SKIP_SIGNATURE),
                    None => {}
                }
                Some(p)
            }
            ContentBlock::Text(_) | ContentBlock::Thinking(_) | ContentBlock::Image(_) => None,
        })
        .collect()
}

#[path = "google_decode.rs"]
mod decode;
pub use decode::GoogleDecoder;

#[cfg(test)]
#[path = "google_tests.rs"]
mod tests;
