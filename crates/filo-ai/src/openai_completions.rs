//! OpenAI Chat Completions (`openai-completions`, pi spec §1.7.2): the protocol of every
//! OpenAI-compatible vendor (xAI, Groq, Cerebras, Mistral, DeepSeek, OpenRouter, Ollama,
//! llama.cpp, vLLM …). Vendor quirks are data: [`Compat`] switches detected from the provider and
//! base URL, overridden field by field by `model.compat`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::codec::{RequestInput, is_blank, join_url};
use crate::error::AiError;
use crate::message::{AssistantMessage, ContentBlock, Message, StopReason, ToolCall, UserContent};
use crate::model::{Model, ThinkingLevel};
use crate::transform::{sanitize_tool_call_id, transform_messages_borrowed};
use crate::transport::HttpRequest;

/// Vendor switches for the Chat Completions protocol (pi's `compat`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compat {
    pub supports_store: bool,
    pub supports_developer_role: bool,
    pub supports_reasoning_effort: bool,
    pub reasoning_effort_map: BTreeMap<String, String>,
    pub supports_usage_in_streaming: bool,
    /// `max_completion_tokens` or `max_tokens`.
    pub max_tokens_field: String,
    pub requires_tool_result_name: bool,
    pub requires_assistant_after_tool_result: bool,
    /// pi 1.6: an assistant message without text sends `""` rather than `null`.
    pub requires_non_null_assistant_content: bool,
    /// pi 1.6: `"tools": []` when no tool is declared but the history has tool calls (pi
    /// 1.5.1 stopped sending it by default; vLLM ≥ 0.20 rejects it).
    pub requires_tools_with_tool_history: bool,
    pub requires_thinking_as_text: bool,
    /// `openai`, `zai`, `qwen` or `qwen-chat-template`.
    pub thinking_format: String,
    pub supports_strict_mode: bool,
    /// Tool-call ids must be exactly 9 ASCII letters or digits (Mistral).
    pub nine_char_tool_call_ids: bool,
}

impl Compat {
    /// pi's `detectCompat` from provider and base URL, then `model.compat` on top.
    pub fn for_model(model: &Model) -> Compat {
        let url = model.base_url.as_str();
        let provider = model.provider.as_str();
        // pi 1.6's `detectCompat` for the switches filo has.
        let is_zai = matches!(provider, "zai" | "zai-coding-cn")
            || url.contains("api.z.ai")
            || url.contains("open.bigmodel.cn");
        let is_together = provider == "together"
            || url.contains("api.together.ai")
            || url.contains("api.together.xyz");
        let is_moonshot =
            matches!(provider, "moonshotai" | "moonshotai-cn") || url.contains("api.moonshot.");
        let is_workers_ai =
            provider == "cloudflare-workers-ai" || url.contains("api.cloudflare.com");
        let is_ai_gateway =
            provider == "cloudflare-ai-gateway" || url.contains("gateway.ai.cloudflare.com");
        let is_nvidia = provider == "nvidia" || url.contains("integrate.api.nvidia.com");
        let is_ant_ling = provider == "ant-ling" || url.contains("api.ant-ling.com");
        let is_cerebras = provider == "cerebras" || url.contains("cerebras.ai");
        let is_deepseek = provider == "deepseek" || url.to_lowercase().contains("deepseek.com");
        let is_grok = provider == "xai" || url.contains("api.x.ai");
        let non_standard = is_nvidia
            || is_cerebras
            || is_grok
            || is_together
            || url.contains("chutes.ai")
            || is_deepseek
            || is_zai
            || is_moonshot
            || provider == "opencode"
            || url.contains("opencode.ai")
            || is_workers_ai
            || is_ai_gateway
            || is_ant_ling;
        let use_max_tokens = url.contains("chutes.ai")
            || is_deepseek
            || is_moonshot
            || is_ai_gateway
            || is_together
            || is_nvidia
            || is_ant_ling
            || is_zai;
        // The developer role is OpenAI's own: other hosts get `system` (pi 1.6.0).
        let is_openai = provider == "openai" || url.contains("api.openai.com");
        let mut effort_map = BTreeMap::new();
        if provider == "groq" && model.id == "qwen/qwen3-32b" {
            for level in ["minimal", "low", "medium", "high", "xhigh", "max"] {
                effort_map.insert(level.to_string(), "default".to_string());
            }
        }
        let mut compat = Compat {
            supports_store: !non_standard,
            supports_developer_role: is_openai,
            supports_reasoning_effort: !(is_grok
                || is_zai
                || is_moonshot
                || is_together
                || is_ai_gateway
                || is_nvidia
                || is_ant_ling),
            reasoning_effort_map: effort_map,
            supports_usage_in_streaming: true,
            max_tokens_field: if use_max_tokens {
                "max_tokens".into()
            } else {
                "max_completion_tokens".into()
            },
            requires_tool_result_name: false,
            requires_assistant_after_tool_result: false,
            requires_non_null_assistant_content: false,
            requires_tools_with_tool_history: false,
            requires_thinking_as_text: false,
            thinking_format: if is_zai {
                "zai".into()
            } else {
                "openai".into()
            },
            // pi 1.6: OpenAI compatibility alone does not mean strict tools; the catalog
            // names the models that take them.
            supports_strict_mode: false,
            nine_char_tool_call_ids: provider == "mistral" || url.contains("api.mistral.ai"),
        };
        if let Some(Value::Object(o)) = &model.compat {
            compat.apply(o);
        }
        compat
    }

    fn apply(&mut self, o: &Map<String, Value>) {
        let flag = |key: &str, slot: &mut bool| {
            if let Some(v) = o.get(key).and_then(Value::as_bool) {
                *slot = v;
            }
        };
        flag("supportsStore", &mut self.supports_store);
        flag("supportsDeveloperRole", &mut self.supports_developer_role);
        flag(
            "supportsReasoningEffort",
            &mut self.supports_reasoning_effort,
        );
        flag(
            "supportsUsageInStreaming",
            &mut self.supports_usage_in_streaming,
        );
        flag(
            "requiresToolResultName",
            &mut self.requires_tool_result_name,
        );
        flag(
            "requiresAssistantAfterToolResult",
            &mut self.requires_assistant_after_tool_result,
        );
        flag(
            "requiresNonNullAssistantContent",
            &mut self.requires_non_null_assistant_content,
        );
        flag(
            "requiresToolsWithToolHistory",
            &mut self.requires_tools_with_tool_history,
        );
        flag(
            "requiresThinkingAsText",
            &mut self.requires_thinking_as_text,
        );
        flag("supportsStrictMode", &mut self.supports_strict_mode);
        flag("nineCharToolCallIds", &mut self.nine_char_tool_call_ids);
        if let Some(v) = o.get("maxTokensField").and_then(Value::as_str) {
            self.max_tokens_field = v.into();
        }
        if let Some(v) = o.get("thinkingFormat").and_then(Value::as_str) {
            self.thinking_format = v.into();
        }
        if let Some(Value::Object(m)) = o.get("reasoningEffortMap") {
            for (k, v) in m {
                if let Some(v) = v.as_str() {
                    self.reasoning_effort_map.insert(k.clone(), v.into());
                }
            }
        }
    }
}

/// pi's id normaliser for this protocol: `call|item` ids keep the call half (sanitised, ≤ 40);
/// OpenAI's own endpoint takes at most 40 characters.
fn normalize_id(id: &str, model: &Model, _source: &AssistantMessage) -> String {
    if Compat::for_model(model).nine_char_tool_call_ids {
        return nine_char_id(id);
    }
    if let Some((call, _)) = id.split_once('|') {
        return sanitize_tool_call_id(call, 40);
    }
    if model.provider == "openai" {
        return id.chars().take(40).collect();
    }
    id.to_string()
}

/// Mistral's id rule: kept when already 9 ASCII alphanumerics, else derived from pi's
/// `shortHash` of the id (base-36, so alphanumeric), padded with `0` to 9 characters.
pub fn nine_char_id(id: &str) -> String {
    if id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return id.to_string();
    }
    let mut hash = crate::openai_responses::short_hash(id);
    while hash.len() < 9 {
        hash.push('0');
    }
    hash.chars().take(9).collect()
}

/// Build the `POST {baseUrl}/chat/completions` request.
pub(crate) fn build_request(input: &RequestInput<'_>) -> HttpRequest {
    let model = input.model;
    let compat = Compat::for_model(model);
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    let mut messages = convert_messages(input, &compat);
    if model.provider == "openrouter" && model.id.starts_with("anthropic/") {
        mark_openrouter_cache(&mut messages);
    }
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    if compat.supports_usage_in_streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.supports_store {
        body.insert("store".into(), json!(false));
    }
    body.insert(
        compat.max_tokens_field.clone(),
        json!(input.base_max_tokens()),
    );
    if let Some(t) = input.options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(tools) = tools(input, &compat) {
        body.insert("tools".into(), tools);
    }
    insert_reasoning(&mut body, input, &compat);
    let mut headers = vec![("content-type".into(), "application/json".into())];
    if let Some(key) = input.api_key {
        headers.push(("authorization".into(), format!("Bearer {key}")));
    }
    let url = join_url(&model.base_url, "chat/completions");
    input.request(url, headers, Value::Object(body))
}

fn insert_reasoning(body: &mut Map<String, Value>, input: &RequestInput<'_>, compat: &Compat) {
    let model = input.model;
    if !model.reasoning {
        return;
    }
    let level = input.options.reasoning;
    let on = level != ThinkingLevel::Off;
    match compat.thinking_format.as_str() {
        "zai" | "qwen" => {
            body.insert("enable_thinking".into(), json!(on));
        }
        "qwen-chat-template" => {
            body.insert(
                "chat_template_kwargs".into(),
                json!({"enable_thinking": on}),
            );
        }
        _ if on && compat.supports_reasoning_effort => {
            let level = model.effort_level(level);
            let effort = compat
                .reasoning_effort_map
                .get(level.as_str())
                .cloned()
                .unwrap_or_else(|| level.as_str().to_string());
            body.insert("reasoning_effort".into(), json!(effort));
        }
        _ => {}
    }
}

fn tools(input: &RequestInput<'_>, compat: &Compat) -> Option<Value> {
    match input.context.tools.as_ref().filter(|t| !t.is_empty()) {
        Some(tools) => Some(Value::Array(
            tools
                .iter()
                .map(|t| {
                    let mut f = json!({
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    });
                    if compat.supports_strict_mode {
                        f["strict"] = json!(false);
                    }
                    json!({"type": "function", "function": f})
                })
                .collect(),
        )),
        None if compat.requires_tools_with_tool_history => {
            let history_has_tools = input.context.messages.iter().any(|m| match m {
                Message::ToolResult(_) => true,
                Message::Assistant(a) => a.tool_calls().next().is_some(),
                Message::User(_) => false,
            });
            history_has_tools.then(|| json!([]))
        }
        None => None,
    }
}

fn image_part(data: &str, mime: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}})
}

fn convert_messages(input: &RequestInput<'_>, compat: &Compat) -> Vec<Value> {
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
        let role = if model.reasoning && compat.supports_developer_role {
            "developer"
        } else {
            "system"
        };
        out.push(json!({"role": role, "content": prompt}));
    }
    let bridge = json!({"role": "assistant", "content": "I have processed the tool results."});
    let mut i = 0;
    while i < messages.len() {
        match &*messages[i] {
            Message::User(u) => {
                let after_tool = i > 0 && matches!(*messages[i - 1], Message::ToolResult(_));
                let content = match &u.content {
                    UserContent::Text(t) => Some(json!(t)),
                    UserContent::Blocks(blocks) => {
                        let parts: Vec<Value> = blocks
                            .iter()
                            .filter_map(|b| match b {
                                ContentBlock::Text(t) => {
                                    Some(json!({"type": "text", "text": t.text}))
                                }
                                ContentBlock::Image(img) if images => {
                                    Some(image_part(&img.data, &img.mime_type))
                                }
                                ContentBlock::Image(_)
                                | ContentBlock::Thinking(_)
                                | ContentBlock::ToolCall(_) => None,
                            })
                            .collect();
                        (!parts.is_empty()).then_some(Value::Array(parts))
                    }
                };
                if let Some(content) = content {
                    if after_tool && compat.requires_assistant_after_tool_result {
                        out.push(bridge.clone());
                    }
                    out.push(json!({"role": "user", "content": content}));
                }
            }
            Message::Assistant(a) => {
                if let Some(m) = convert_assistant(a, compat) {
                    out.push(m);
                }
            }
            Message::ToolResult(_) => {
                let mut image_parts = Vec::new();
                while let Some(Message::ToolResult(r)) = messages.get(i).map(|m| &**m) {
                    let text: Vec<&str> =
                        r.content.iter().filter_map(ContentBlock::as_text).collect();
                    let mut has_image = false;
                    for b in &r.content {
                        if let ContentBlock::Image(img) = b {
                            has_image = true;
                            if images {
                                image_parts.push(image_part(&img.data, &img.mime_type));
                            }
                        }
                    }
                    let content = if text.is_empty() && has_image {
                        "(see attached image)".to_string()
                    } else {
                        text.join("\n")
                    };
                    let mut m =
                        json!({"role": "tool", "content": content, "tool_call_id": r.tool_call_id});
                    if compat.requires_tool_result_name {
                        m["name"] = json!(r.tool_name);
                    }
                    out.push(m);
                    i += 1;
                }
                if !image_parts.is_empty() {
                    if compat.requires_assistant_after_tool_result {
                        out.push(bridge.clone());
                    }
                    image_parts.insert(
                        0,
                        json!({"type": "text", "text": "Attached image(s) from tool result:"}),
                    );
                    out.push(json!({"role": "user", "content": image_parts}));
                }
                continue;
            }
        }
        i += 1;
    }
    out
}

fn convert_assistant(a: &AssistantMessage, compat: &Compat) -> Option<Value> {
    let mut text = String::new();
    let thinking: Vec<&crate::message::ThinkingContent> = a
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Thinking(t) if !is_blank(&t.thinking) => Some(t),
            ContentBlock::Thinking(_)
            | ContentBlock::Text(_)
            | ContentBlock::Image(_)
            | ContentBlock::ToolCall(_) => None,
        })
        .collect();
    if compat.requires_thinking_as_text {
        for t in &thinking {
            text.push_str(&t.thinking);
        }
    }
    for b in &a.content {
        if let ContentBlock::Text(t) = b
            && !is_blank(&t.text)
        {
            text.push_str(&t.text);
        }
    }
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    let content = if !text.is_empty() {
        json!(text)
    } else if compat.requires_assistant_after_tool_result
        || compat.requires_non_null_assistant_content
    {
        json!("")
    } else {
        Value::Null
    };
    m.insert("content".into(), content);
    if !compat.requires_thinking_as_text {
        let field = thinking
            .first()
            .and_then(|t| t.thinking_signature.as_deref())
            .filter(|s| !s.is_empty());
        if let Some(field) = field {
            let joined: Vec<&str> = thinking.iter().map(|t| t.thinking.as_str()).collect();
            m.insert(field.to_string(), json!(joined.join("\n")));
        }
    }
    let calls: Vec<&ToolCall> = a.tool_calls().collect();
    if !calls.is_empty() {
        let tool_calls: Vec<Value> = calls
            .iter()
            .map(|tc| {
                json!({
                    "id": tc.id,
                    "type": "function",
                    "function": {"name": tc.name, "arguments": tc.arguments.to_string()},
                })
            })
            .collect();
        m.insert("tool_calls".into(), Value::Array(tool_calls));
        let details: Vec<Value> = calls
            .iter()
            .filter_map(|tc| tc.thought_signature.as_deref())
            .filter_map(|s| serde_json::from_str(s).ok())
            .collect();
        if !details.is_empty() {
            m.insert("reasoning_details".into(), Value::Array(details));
        }
    }
    // Like pi, a turn with neither content nor tool calls is not sent (reasoning alone is not
    // enough).
    (!text.is_empty() || !calls.is_empty()).then_some(Value::Object(m))
}

/// OpenRouter's Anthropic models: `cache_control` on the last text part of the last
/// user/assistant message.
fn mark_openrouter_cache(messages: &mut [Value]) {
    let Some(m) = messages
        .iter_mut()
        .rev()
        .find(|m| m["role"] == "user" || m["role"] == "assistant")
    else {
        return;
    };
    if let Some(text) = m["content"].as_str() {
        m["content"] = json!([{"type": "text", "text": text}]);
    }
    if let Some(part) = m["content"]
        .as_array_mut()
        .and_then(|parts| parts.iter_mut().rev().find(|p| p["type"] == "text"))
    {
        part["cache_control"] = json!({"type": "ephemeral"});
    }
}

#[path = "openai_completions_decode.rs"]
mod decode;
pub use decode::CompletionsDecoder;

#[cfg(test)]
#[path = "openai_completions_tests.rs"]
mod tests;

/// Used by the decoder module.
pub(crate) fn map_finish_reason(reason: &str) -> Result<StopReason, AiError> {
    match reason {
        "stop" | "end" => Ok(StopReason::Stop),
        "length" => Ok(StopReason::Length),
        "function_call" | "tool_calls" => Ok(StopReason::ToolUse),
        "content_filter" => Ok(StopReason::Error),
        other => Err(AiError::UnhandledStopReason(other.into())),
    }
}
