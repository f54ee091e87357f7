//! Anthropic Messages (`anthropic-messages`, pi spec §1.7.1): request building and SSE decoding.

use serde_json::{Map, Value, json};

use crate::client::CacheRetention;
use crate::codec::{RequestInput, is_blank, join_url};
use crate::message::{ContentBlock, Message, UserContent};
use crate::model::{Model, ThinkingLevel, adjust_max_tokens_for_thinking};
use crate::transform::{sanitize_tool_call_id, transform_messages_borrowed};
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

const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";

/// pi's default `thinkingDisplay`: summaries, as older Claude 4 models give by default.
const THINKING_DISPLAY: &str = "summarized";

/// Adaptive-thinking models (Opus 4.6 / 4.7, Sonnet 4.6) take an effort instead of a budget and
/// think interleaved without the beta.
fn is_adaptive(model: &Model) -> bool {
    [
        "opus-4-6",
        "opus-4.6",
        "opus-4-7",
        "opus-4.7",
        "sonnet-4-6",
        "sonnet-4.6",
    ]
    .iter()
    .any(|n| model.id.contains(n))
}

/// An Anthropic `compat` switch; every one defaults to on.
fn compat_flag(model: &Model, name: &str) -> bool {
    model
        .compat
        .as_ref()
        .and_then(|c| c.get(name))
        .and_then(Value::as_bool)
        .unwrap_or(true)
}

/// Tools stream their input eagerly (`eager_input_streaming`) unless the model says it cannot;
/// then the fine-grained streaming beta does the same job.
fn eager_tool_streaming(model: &Model) -> bool {
    compat_flag(model, "supportsEagerToolInputStreaming")
}

fn has_tools(input: &RequestInput<'_>) -> bool {
    input.context.tools.as_ref().is_some_and(|t| !t.is_empty())
}

/// pi's `mapThinkingLevelToEffort`: the model's `thinkingLevelMap` when it names a string,
/// else low / medium / high.
fn adaptive_effort(model: &Model, level: ThinkingLevel) -> String {
    if let Some(mapped) = model
        .thinking_level_map
        .as_ref()
        .and_then(|m| m.value(level))
    {
        return mapped.to_string();
    }
    match level {
        ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::Off | ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => {
            "high"
        }
    }
    .to_string()
}

/// The `thinking` field, an `output_config` for adaptive models, and the adjusted `max_tokens`.
/// A reasoning model with thinking off is told so (`disabled`); other models get nothing.
fn thinking_fields(
    input: &RequestInput<'_>,
    max_tokens: u64,
) -> (Option<Value>, Option<Value>, u64) {
    let model = input.model;
    let level = input.options.reasoning;
    if !model.reasoning {
        return (None, None, max_tokens);
    }
    if level == ThinkingLevel::Off {
        return (Some(json!({"type": "disabled"})), None, max_tokens);
    }
    if is_adaptive(model) {
        let thinking = json!({"type": "adaptive", "display": THINKING_DISPLAY});
        let effort = json!({"effort": adaptive_effort(model, level)});
        return (Some(thinking), Some(effort), max_tokens);
    }
    let (max, budget) = adjust_max_tokens_for_thinking(
        max_tokens,
        model.max_tokens,
        level,
        input.options.thinking_budgets.as_ref(),
    );
    let thinking = json!({"type": "enabled", "budget_tokens": budget, "display": THINKING_DISPLAY});
    (Some(thinking), None, max)
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
        CacheRetention::Long if compat_flag(input.model, "supportsLongCacheRetention") => {
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
    let thinking_on = model.reasoning && input.options.reasoning != ThinkingLevel::Off;
    let (thinking, output_config, max_tokens) = thinking_fields(input, input.base_max_tokens());
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    if let Some(system) = system_blocks(input, oauth, cache.as_ref()) {
        body.insert("system".into(), system);
    }
    if let (Some(t), false) = (input.options.temperature, thinking_on) {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(tools) = convert_tools(input, oauth, cache.as_ref()) {
        body.insert("tools".into(), tools);
    }
    if let Some(thinking) = thinking {
        body.insert("thinking".into(), thinking);
    }
    if let Some(oc) = output_config {
        body.insert("output_config".into(), oc);
    }
    if let Some(user) = &input.options.user_id {
        body.insert("metadata".into(), json!({"user_id": user}));
    }
    let url = join_url(&model.base_url, "v1/messages");
    input.request(url, headers(input, oauth), Value::Object(body))
}

/// The tool list; `cache_control` goes on the last tool.
fn convert_tools(input: &RequestInput<'_>, oauth: bool, cache: Option<&Value>) -> Option<Value> {
    let tools = input.context.tools.as_ref().filter(|t| !t.is_empty())?;
    let eager = eager_tool_streaming(input.model);
    let last = tools.len() - 1;
    let tools = tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut tool = Map::new();
            tool.insert("name".into(), json!(outgoing_tool_name(&t.name, oauth)));
            tool.insert("description".into(), json!(t.description));
            if eager {
                tool.insert("eager_input_streaming".into(), json!(true));
            }
            let field = |k: &str, empty: Value| t.parameters.get(k).cloned().unwrap_or(empty);
            tool.insert(
                "input_schema".into(),
                json!({
                    "type": "object",
                    "properties": field("properties", json!({})),
                    "required": field("required", json!([])),
                }),
            );
            if let (Some(c), true) = (cache, i == last) {
                tool.insert("cache_control".into(), c.clone());
            }
            Value::Object(tool)
        })
        .collect();
    Some(Value::Array(tools))
}

fn headers(input: &RequestInput<'_>, oauth: bool) -> Vec<(String, String)> {
    let mut betas = Vec::new();
    if has_tools(input) && !eager_tool_streaming(input.model) {
        betas.push(FINE_GRAINED_TOOL_STREAMING_BETA);
    }
    if !is_adaptive(input.model) {
        betas.push(INTERLEAVED_THINKING_BETA);
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
    if !betas.is_empty() {
        h.push(("anthropic-beta".into(), betas.join(",")));
    }
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
    let messages = transform_messages_borrowed(
        &input.context.messages,
        input.model,
        Some(&normalize),
        input.now_ms,
    );
    let images = input.model.supports_images();
    let mut out: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match &*messages[i] {
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
                while let Some(Message::ToolResult(r)) = messages.get(i).map(|m| &**m) {
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
