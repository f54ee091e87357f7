//! Anthropic Messages (`anthropic-messages`, pi spec §1.7.1): request building and SSE decoding.

use serde_json::{Map, Value, json};

use crate::client::CacheRetention;
use crate::codec::{RequestInput, is_blank, join_url};
use crate::message::{ContentBlock, Message, UserContent};
use crate::model::{Model, ThinkingLevel, adjust_max_tokens_for_thinking};
use crate::transform::{sanitize_tool_call_id, transform_messages};
use crate::transport::HttpRequest;

const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";

/// Claude Code's tool names; with an OAuth token, tools are sent under these names.
const CLAUDE_CODE_TOOLS: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];

fn is_oauth(key: Option<&str>) -> bool {
    key.is_some_and(|k| k.contains("sk-ant-oat"))
}

/// Adaptive-thinking models take an effort instead of a budget.
fn is_adaptive(model: &Model) -> bool {
    ["opus-4-6", "opus-4.6", "sonnet-4-6", "sonnet-4.6"]
        .iter()
        .any(|n| model.id.contains(n))
}

fn outgoing_tool_name(name: &str, oauth: bool) -> String {
    if !oauth {
        return name.to_string();
    }
    CLAUDE_CODE_TOOLS
        .iter()
        .find(|cc| cc.eq_ignore_ascii_case(name))
        .map_or_else(|| name.to_string(), |cc| (*cc).to_string())
}

fn cache_control(input: &RequestInput<'_>) -> Option<Value> {
    match input.options.cache_retention {
        CacheRetention::None => None,
        CacheRetention::Short => Some(json!({"type": "ephemeral"})),
        CacheRetention::Long if input.model.base_url.contains("api.anthropic.com") => {
            Some(json!({"type": "ephemeral", "ttl": "1h"}))
        }
        CacheRetention::Long => Some(json!({"type": "ephemeral"})),
    }
}

/// Build the `POST {baseUrl}/v1/messages` request.
pub(crate) fn build_request(input: &RequestInput<'_>) -> HttpRequest {
    let model = input.model;
    let oauth = is_oauth(input.api_key);
    let cache = cache_control(input);
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    let mut messages = convert_messages(input, oauth);
    if let Some(cache) = &cache {
        mark_last_user_block(&mut messages, cache);
    }
    body.insert("messages".into(), Value::Array(messages));
    let thinking = model.reasoning && input.options.reasoning != ThinkingLevel::Off;
    let mut max_tokens = input.base_max_tokens();
    let mut thinking_body = None;
    if thinking && is_adaptive(model) {
        let effort = match input.options.reasoning {
            ThinkingLevel::Off | ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh if model.supports_xhigh() => "max",
            ThinkingLevel::Xhigh => "high",
        };
        thinking_body = Some((json!({"type": "adaptive"}), Some(json!({"effort": effort}))));
    } else if thinking {
        let (max, budget) = adjust_max_tokens_for_thinking(
            max_tokens,
            model.max_tokens,
            input.options.reasoning,
            input.options.thinking_budgets.as_ref(),
        );
        max_tokens = max;
        thinking_body = Some((json!({"type": "enabled", "budget_tokens": budget}), None));
    }
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    if let Some(system) = system_blocks(input, oauth, cache.as_ref()) {
        body.insert("system".into(), system);
    }
    if let (Some(t), None) = (input.options.temperature, &thinking_body) {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(tools) = input.context.tools.as_ref().filter(|t| !t.is_empty()) {
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| {
                json!({
                    "name": outgoing_tool_name(&t.name, oauth),
                    "description": t.description,
                    "input_schema": {
                        "type": "object",
                        "properties": t.parameters.get("properties").cloned().unwrap_or_else(|| json!({})),
                        "required": t.parameters.get("required").cloned().unwrap_or_else(|| json!([])),
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some((thinking, output_config)) = thinking_body {
        body.insert("thinking".into(), thinking);
        if let Some(oc) = output_config {
            body.insert("output_config".into(), oc);
        }
    }
    if let Some(user) = &input.options.user_id {
        body.insert("metadata".into(), json!({"user_id": user}));
    }
    let url = join_url(&model.base_url, "v1/messages");
    input.request(url, headers(input, oauth), Value::Object(body))
}

fn headers(input: &RequestInput<'_>, oauth: bool) -> Vec<(String, String)> {
    let mut betas = vec!["fine-grained-tool-streaming-2025-05-14"];
    if !is_adaptive(input.model) {
        betas.push("interleaved-thinking-2025-05-14");
    }
    let mut h: Vec<(String, String)> = vec![
        ("content-type".into(), "application/json".into()),
        ("accept".into(), "application/json".into()),
        ("anthropic-version".into(), "2023-06-01".into()),
        (
            "anthropic-dangerous-direct-browser-access".into(),
            "true".into(),
        ),
    ];
    if oauth {
        betas.insert(0, "claude-code-20250219,oauth-2025-04-20");
        h.push(("user-agent".into(), "claude-cli/2.1.75".into()));
        h.push(("x-app".into(), "cli".into()));
    }
    h.push(("anthropic-beta".into(), betas.join(",")));
    match (input.api_key, oauth) {
        (Some(key), true) => h.push(("authorization".into(), format!("Bearer {key}"))),
        (Some(key), false) => h.push(("x-api-key".into(), key.into())),
        (None, _) => {}
    }
    h
}

fn system_blocks(input: &RequestInput<'_>, oauth: bool, cache: Option<&Value>) -> Option<Value> {
    let mut texts: Vec<&str> = Vec::new();
    if oauth {
        texts.push(CLAUDE_CODE_IDENTITY);
    }
    if let Some(prompt) = input.context.system_prompt.as_deref() {
        texts.push(prompt);
    }
    if texts.is_empty() {
        return None;
    }
    let blocks = texts
        .into_iter()
        .map(|text| {
            let mut b = json!({"type": "text", "text": text});
            if let Some(c) = cache {
                b["cache_control"] = c.clone();
            }
            b
        })
        .collect();
    Some(Value::Array(blocks))
}

/// `cache_control` on the last block of the final message when it is a user message.
fn mark_last_user_block(messages: &mut [Value], cache: &Value) {
    let Some(last) = messages.last_mut() else {
        return;
    };
    if last["role"] != "user" {
        return;
    }
    if let Some(text) = last["content"].as_str() {
        last["content"] = json!([{"type": "text", "text": text}]);
    }
    if let Some(block) = last["content"]
        .as_array_mut()
        .and_then(|blocks| blocks.last_mut())
        && matches!(
            block["type"].as_str(),
            Some("text" | "image" | "tool_result")
        )
    {
        block["cache_control"] = cache.clone();
    }
}

fn image_block(data: &str, mime: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
}

fn user_blocks(blocks: &[ContentBlock], images: bool) -> Vec<Value> {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) if !is_blank(&t.text) => {
                Some(json!({"type": "text", "text": t.text}))
            }
            ContentBlock::Image(i) if images => Some(image_block(&i.data, &i.mime_type)),
            ContentBlock::Text(_)
            | ContentBlock::Image(_)
            | ContentBlock::Thinking(_)
            | ContentBlock::ToolCall(_) => None,
        })
        .collect()
}

fn assistant_blocks(content: &[ContentBlock], oauth: bool) -> Vec<Value> {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) if !is_blank(&t.text) => {
                Some(json!({"type": "text", "text": t.text}))
            }
            ContentBlock::Thinking(t) if t.redacted == Some(true) => Some(
                json!({"type": "redacted_thinking", "data": t.thinking_signature.clone().unwrap_or_default()}),
            ),
            ContentBlock::Thinking(t) if is_blank(&t.thinking) => None,
            ContentBlock::Thinking(t) => match t.thinking_signature.as_deref() {
                Some(sig) if !sig.is_empty() => {
                    Some(json!({"type": "thinking", "thinking": t.thinking, "signature": sig}))
                }
                _ => Some(json!({"type": "text", "text": t.thinking})),
            },
            ContentBlock::ToolCall(tc) => Some(json!({
                "type": "tool_use",
                "id": tc.id,
                "name": outgoing_tool_name(&tc.name, oauth),
                "input": tc.arguments,
            })),
            ContentBlock::Text(_) | ContentBlock::Image(_) => None,
        })
        .collect()
}

fn tool_result_block(r: &crate::message::ToolResultMessage, images: bool) -> Value {
    let texts: Vec<&str> = r.content.iter().filter_map(ContentBlock::as_text).collect();
    let has_images = images
        && r.content
            .iter()
            .any(|b| matches!(b, ContentBlock::Image(_)));
    let content = if has_images {
        let mut blocks = Vec::new();
        if texts.is_empty() {
            blocks.push(json!({"type": "text", "text": "(see attached image)"}));
        }
        for b in &r.content {
            match b {
                ContentBlock::Text(t) => blocks.push(json!({"type": "text", "text": t.text})),
                ContentBlock::Image(i) => blocks.push(image_block(&i.data, &i.mime_type)),
                ContentBlock::Thinking(_) | ContentBlock::ToolCall(_) => {}
            }
        }
        Value::Array(blocks)
    } else {
        json!(texts.join("\n"))
    };
    json!({"type": "tool_result", "tool_use_id": r.tool_call_id, "content": content, "is_error": r.is_error})
}

fn convert_messages(input: &RequestInput<'_>, oauth: bool) -> Vec<Value> {
    let normalize =
        |id: &str, _: &Model, _: &crate::message::AssistantMessage| sanitize_tool_call_id(id, 64);
    let messages = transform_messages(
        &input.context.messages,
        input.model,
        Some(&normalize),
        input.now_ms,
    );
    let images = input.model.supports_images();
    let mut out: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            Message::User(u) => match &u.content {
                UserContent::Text(t) if !is_blank(t) => {
                    out.push(json!({"role": "user", "content": t}));
                }
                UserContent::Text(_) => {}
                UserContent::Blocks(blocks) => {
                    let blocks = user_blocks(blocks, images);
                    if !blocks.is_empty() {
                        out.push(json!({"role": "user", "content": blocks}));
                    }
                }
            },
            Message::Assistant(a) => {
                let blocks = assistant_blocks(&a.content, oauth);
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            Message::ToolResult(_) => {
                let mut blocks = Vec::new();
                while let Some(Message::ToolResult(r)) = messages.get(i) {
                    blocks.push(tool_result_block(r, images));
                    i += 1;
                }
                out.push(json!({"role": "user", "content": blocks}));
                continue;
            }
        }
        i += 1;
    }
    out
}

#[path = "anthropic_decode.rs"]
mod decode;
pub use decode::{AnthropicDecoder, map_stop_reason};

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
