//! Amazon Bedrock (`bedrock-converse-stream`, as pi 0.73.1 sends it through the AWS SDK's
//! `ConverseStreamCommand`): `POST {endpoint}/model/{modelId}/converse-stream` with the Converse
//! JSON body, signed with SigV4 (service `bedrock`) or sent with `AWS_BEARER_TOKEN_BEDROCK`; the
//! answer is an AWS event stream (`eventstream.rs`) decoded in `bedrock_decode.rs`.
//!
//! Where it goes, as pi decides it: a model base URL that is not a standard
//! `bedrock-runtime.{region}.amazonaws.com` URL is always used; a standard one only when neither
//! a region (`AWS_REGION`/`AWS_DEFAULT_REGION`) nor `AWS_PROFILE` is configured. Otherwise the
//! SDK's endpoint: `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, `AWS_ENDPOINT_URL`, else
//! `https://bedrock-runtime.{region}.amazonaws.com`. The region: the configured one, else the
//! standard base URL's, else `us-east-1` without a profile, else the profile's `region`.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value, json};

use crate::CacheRetention;
use crate::aws_credentials::{configured_region, profile_region};
use crate::aws_sigv4::{Credentials, Scope, sign_post, uri_escape};
use crate::codec::RequestInput;
use crate::driver::Prepare;
use crate::env::Env;
use crate::error::AiError;
use crate::message::{ContentBlock, Message, UserContent};
use crate::model::{Model, ThinkingLevel, adjust_max_tokens_for_thinking};
use crate::transform::{sanitize_tool_call_id, transform_messages_borrowed};
use crate::transport::{HttpRequest, request_body};

#[path = "bedrock_decode.rs"]
mod decode;
pub use decode::BedrockDecoder;

/// The lower-cased id and name, each also with runs of spaces, `_`, `.` and `:` made `-`.
fn candidates(model: &Model) -> Vec<String> {
    let mut out = Vec::new();
    for value in [model.id.as_str(), model.name.as_str()]
        .into_iter()
        .filter(|v| !v.is_empty())
    {
        let lower = value.to_lowercase();
        let mut dashed = String::with_capacity(lower.len());
        let mut in_run = false;
        for c in lower.chars() {
            if c.is_whitespace() || matches!(c, '_' | '.' | ':') {
                if !in_run {
                    dashed.push('-');
                }
                in_run = true;
            } else {
                dashed.push(c);
                in_run = false;
            }
        }
        out.push(lower);
        out.push(dashed);
    }
    out
}

/// pi's `isAnthropicClaudeModel`.
pub fn is_claude(model: &Model) -> bool {
    let id = model.id.to_lowercase();
    let name = model.name.to_lowercase();
    id.contains("anthropic.claude")
        || id.contains("anthropic/claude")
        || name.contains("anthropic.claude")
        || name.contains("anthropic/claude")
        || name.contains("claude")
}

fn is_adaptive(model: &Model) -> bool {
    candidates(model)
        .iter()
        .any(|s| s.contains("opus-4-6") || s.contains("opus-4-7") || s.contains("sonnet-4-6"))
}

/// pi's `supportsPromptCaching`: Claude 4.x, 3.7 Sonnet and 3.5 Haiku (or
/// `AWS_BEDROCK_FORCE_CACHE=1` for models whose id names no Claude).
fn caches(model: &Model, env: &Env) -> bool {
    let c = candidates(model);
    if !c.iter().any(|s| s.contains("claude")) {
        return env.get("AWS_BEDROCK_FORCE_CACHE") == Some("1");
    }
    c.iter().any(|s| {
        s.contains("-4-") || s.contains("claude-3-7-sonnet") || s.contains("claude-3-5-haiku")
    })
}

fn cache_point(retention: CacheRetention) -> Value {
    match retention {
        CacheRetention::Long => json!({"cachePoint": {"type": "default", "ttl": "1h"}}),
        CacheRetention::Short | CacheRetention::None => json!({"cachePoint": {"type": "default"}}),
    }
}

/// The region of a standard Bedrock runtime URL.
fn standard_region(base_url: &str) -> Option<String> {
    let url = reqwest::Url::parse(base_url).ok()?;
    let host = url.host_str()?.to_ascii_lowercase();
    let host = host
        .strip_suffix(".amazonaws.com.cn")
        .or_else(|| host.strip_suffix(".amazonaws.com"))?;
    let region = host
        .strip_prefix("bedrock-runtime-fips.")
        .or_else(|| host.strip_prefix("bedrock-runtime."))?;
    (!region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
    .then(|| region.to_string())
}

/// Where a call goes and the region it is signed for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub endpoint: String,
    pub region: String,
}

/// Resolve the endpoint and region (see the module docs).
pub fn target(model: &Model, env: &Env) -> Result<Target, AiError> {
    let configured = configured_region(env);
    let profile = env.get("AWS_PROFILE").is_some();
    let base = model.base_url.trim();
    let std_region = standard_region(base);
    let explicit = !base.is_empty() && (std_region.is_none() || (configured.is_none() && !profile));
    let region = match (configured, &std_region) {
        (Some(r), _) => r.to_string(),
        (None, Some(r)) if explicit => r.clone(),
        (None, _) if !profile => "us-east-1".to_string(),
        (None, _) => profile_region(env)?.ok_or_else(|| {
            AiError::Request(format!(
                "Region is missing: AWS profile `{}` has no region; set AWS_REGION",
                crate::aws_credentials::profile_name(env)
            ))
        })?,
    };
    let endpoint = if explicit {
        base.to_string()
    } else if let Some(url) = env.first(&["AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"]) {
        url.to_string()
    } else if region.starts_with("cn-") {
        format!("https://bedrock-runtime.{region}.amazonaws.com.cn")
    } else {
        format!("https://bedrock-runtime.{region}.amazonaws.com")
    };
    Ok(Target { endpoint, region })
}

/// The bearer token pi uses instead of SigV4 (`AWS_BEARER_TOKEN_BEDROCK`, unless
/// `AWS_BEDROCK_SKIP_AUTH=1`).
fn bearer_token(env: &Env) -> Option<&str> {
    env.get("AWS_BEARER_TOKEN_BEDROCK")
        .filter(|_| env.get("AWS_BEDROCK_SKIP_AUTH") != Some("1"))
}

/// Build the request (unsigned: [`prepare`] signs it before each attempt).
pub(crate) fn build_request(input: &RequestInput<'_>) -> Result<HttpRequest, AiError> {
    let model = input.model;
    let opts = input.options;
    let env = input.env;
    let target = target(model, env)?;
    let retention = opts.cache_retention;
    let cache = retention != CacheRetention::None && caches(model, env);
    let mut body = Map::new();
    let mut messages = convert_messages(input)?;
    if cache
        && let Some(last) = messages.last_mut()
        && last["role"] == "user"
        && let Some(content) = last["content"].as_array_mut()
    {
        content.push(cache_point(retention));
    }
    body.insert("messages".into(), Value::Array(messages));
    if let Some(prompt) = input
        .context
        .system_prompt
        .as_deref()
        .filter(|p| !p.is_empty())
    {
        let mut system = vec![json!({"text": prompt})];
        if cache {
            system.push(cache_point(retention));
        }
        body.insert("system".into(), Value::Array(system));
    }
    let level = opts.reasoning;
    let base_max = opts
        .max_tokens
        .or((model.max_tokens > 0).then(|| model.max_tokens.min(32000)));
    let mut max_tokens = base_max;
    let mut additional = None;
    if level != ThinkingLevel::Off && model.reasoning && is_claude(model) {
        let display = !is_gov_cloud(model, env);
        if is_adaptive(model) {
            let mut thinking = json!({"type": "adaptive"});
            if display {
                thinking["display"] = json!("summarized");
            }
            additional = Some(
                json!({"thinking": thinking, "output_config": {"effort": effort(model, level)}}),
            );
        } else {
            let (max, budget) = adjust_max_tokens_for_thinking(
                base_max.unwrap_or(0),
                model.max_tokens,
                level,
                opts.thinking_budgets.as_ref(),
            );
            max_tokens = Some(max);
            let mut thinking = json!({"type": "enabled", "budget_tokens": budget});
            if display {
                thinking["display"] = json!("summarized");
            }
            additional = Some(
                json!({"thinking": thinking, "anthropic_beta": ["interleaved-thinking-2025-05-14"]}),
            );
        }
    }
    let mut inference = Map::new();
    if let Some(max) = max_tokens {
        inference.insert("maxTokens".into(), json!(max));
    }
    if let Some(t) = opts.temperature {
        inference.insert("temperature".into(), json!(t));
    }
    body.insert("inferenceConfig".into(), Value::Object(inference));
    if let Some(tools) = input.context.tools.as_ref().filter(|t| !t.is_empty()) {
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| {
                json!({"toolSpec": {
                    "name": t.name, "inputSchema": {"json": t.parameters}, "description": t.description,
                }})
            })
            .collect();
        body.insert("toolConfig".into(), json!({"tools": tools}));
    }
    if let Some(fields) = additional {
        body.insert("additionalModelRequestFields".into(), fields);
    }
    let url = format!(
        "{}/model/{}/converse-stream",
        target.endpoint.trim_end_matches('/'),
        uri_escape(&model.id)
    );
    let mut headers = vec![("content-type".into(), "application/json".into())];
    if let Some(token) = bearer_token(env) {
        headers.push(("authorization".into(), format!("Bearer {token}")));
    }
    Ok(input.request(url, headers, Value::Object(body)))
}

fn is_gov_cloud(model: &Model, env: &Env) -> bool {
    if configured_region(env).is_some_and(|r| r.to_ascii_lowercase().starts_with("us-gov-")) {
        return true;
    }
    let id = model.id.to_ascii_lowercase();
    id.starts_with("us-gov.") || id.starts_with("arn:aws-us-gov:")
}

/// pi's `mapThinkingLevelToEffort`.
fn effort(model: &Model, level: ThinkingLevel) -> String {
    if level == ThinkingLevel::Xhigh && candidates(model).iter().any(|s| s.contains("opus-4-7")) {
        return "xhigh".into();
    }
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
    .into()
}

fn image_block(mime: &str, data: &str) -> Result<Value, AiError> {
    let format = match mime {
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => return Err(AiError::Request(format!("Unknown image type: {other}"))),
    };
    Ok(json!({"image": {"format": format, "source": {"bytes": data}}}))
}

fn tool_result(r: &crate::message::ToolResultMessage) -> Result<Value, AiError> {
    let content = r
        .content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Image(i) => Some(image_block(&i.mime_type, &i.data)),
            ContentBlock::Text(t) => Some(Ok(json!({"text": t.text}))),
            ContentBlock::Thinking(_) | ContentBlock::ToolCall(_) => None,
        })
        .collect::<Result<Vec<_>, _>>()?;
    let status = if r.is_error { "error" } else { "success" };
    Ok(json!({"toolResult": {"toolUseId": r.tool_call_id, "content": content, "status": status}}))
}

fn convert_messages(input: &RequestInput<'_>) -> Result<Vec<Value>, AiError> {
    let model = input.model;
    let normalize =
        |id: &str, _: &Model, _: &crate::message::AssistantMessage| sanitize_tool_call_id(id, 64);
    let messages = transform_messages_borrowed(
        &input.context.messages,
        model,
        Some(&normalize),
        input.now_ms,
    );
    let signatures = is_claude(model);
    let mut out: Vec<Value> = Vec::new();
    let mut merging_results = false;
    for message in &messages {
        match &**message {
            Message::User(u) => {
                merging_results = false;
                let content = match &u.content {
                    UserContent::Text(t) => vec![json!({"text": t})],
                    UserContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(Ok(json!({"text": t.text}))),
                            ContentBlock::Image(i) => Some(image_block(&i.mime_type, &i.data)),
                            ContentBlock::Thinking(_) | ContentBlock::ToolCall(_) => None,
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                };
                out.push(json!({"role": "user", "content": content}));
            }
            Message::Assistant(a) => {
                merging_results = false;
                let mut content = Vec::new();
                for block in &a.content {
                    match block {
                        ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                            content.push(json!({"text": t.text}));
                        }
                        ContentBlock::ToolCall(tc) => content.push(json!({"toolUse": {
                            "toolUseId": tc.id, "name": tc.name, "input": tc.arguments,
                        }})),
                        ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => {
                            let signature = t
                                .thinking_signature
                                .as_deref()
                                .filter(|s| !s.trim().is_empty());
                            content.push(match (signatures, signature) {
                                (true, None) => json!({"text": t.thinking}),
                                (true, Some(sig)) => json!({"reasoningContent": {"reasoningText": {"text": t.thinking, "signature": sig}}}),
                                (false, _) => json!({"reasoningContent": {"reasoningText": {"text": t.thinking}}}),
                            });
                        }
                        ContentBlock::Text(_)
                        | ContentBlock::Thinking(_)
                        | ContentBlock::Image(_) => {}
                    }
                }
                if !content.is_empty() {
                    out.push(json!({"role": "assistant", "content": content}));
                }
            }
            Message::ToolResult(r) => {
                let item = tool_result(r)?;
                match out.last_mut().and_then(|m| m["content"].as_array_mut()) {
                    Some(content) if merging_results => content.push(item),
                    _ => out.push(json!({"role": "user", "content": [item]})),
                }
                merging_results = true;
            }
        }
    }
    Ok(out)
}

/// The step that authorises each attempt: SigV4 over the body as sent (fresh `x-amz-date`), or
/// nothing when a bearer token is in the headers already. Credentials are read now, so a
/// missing or unsupported source fails the call before anything is sent.
pub(crate) fn prepare(model: &Model, env: &Env) -> Result<Option<Prepare>, AiError> {
    if bearer_token(env).is_some() {
        return Ok(None);
    }
    let credentials = if env.get("AWS_BEDROCK_SKIP_AUTH") == Some("1") {
        Credentials {
            access_key_id: "dummy-access-key".into(),
            secret_access_key: "dummy-secret-key".into(),
            session_token: None,
        }
    } else {
        crate::aws_credentials::resolve(env)?
    };
    let region = target(model, env)?.region;
    let credentials = Arc::new(credentials);
    Ok(Some(Arc::new(
        move |mut request: HttpRequest, _transport| {
            let credentials = credentials.clone();
            let region = region.clone();
            Box::pin(async move {
                let body = request_body(&request)?;
                let scope = Scope {
                    credentials: &credentials,
                    region: &region,
                    service: "bedrock",
                    time: SystemTime::now(),
                };
                sign_post(&request.url.clone(), &mut request.headers, &body, &scope)?;
                Ok(request)
            })
        },
    )))
}

/// pi's names for Bedrock's exceptions (`formatBedrockError`).
fn prefix(kind: &str) -> &str {
    match kind {
        "InternalServerException" => "Internal server error",
        "ModelStreamErrorException" => "Model stream error",
        "ValidationException" => "Validation error",
        "ThrottlingException" => "Throttling error",
        "ServiceUnavailableException" => "Service unavailable",
        other => other,
    }
}

/// The error type of an AWS answer: the `x-amzn-errortype` header, else the body's `code` or
/// `__type`, without a `:…` suffix or a `…#` namespace (the SDK's `sanitizeErrorCode`).
pub fn error_type(header: Option<&str>, body: &Value) -> Option<String> {
    let raw = header.map(str::to_string).or_else(|| {
        ["code", "__type"]
            .iter()
            .find_map(|k| body.get(*k).and_then(Value::as_str).map(str::to_string))
    })?;
    let mut kind = raw.as_str();
    if let Some((head, _)) = kind.split_once(',') {
        kind = head;
    }
    if let Some((head, _)) = kind.split_once(':') {
        kind = head;
    }
    if let Some((_, tail)) = kind.rsplit_once('#') {
        kind = tail;
    }
    Some(kind.trim().to_string())
}

/// The body the driver keeps for a Bedrock HTTP error: the JSON body with the error type from
/// `x-amzn-errortype` as `__type`, so the message can be worded as pi words it.
pub(crate) fn error_body(header: Option<&str>, body: String) -> String {
    let Some(header) = header else { return body };
    let mut value = serde_json::from_str::<Value>(&body).unwrap_or_else(|_| json!({}));
    if let (Some(kind), Some(map)) = (error_type(Some(header), &value), value.as_object_mut()) {
        map.insert("__type".into(), json!(kind));
    }
    value.to_string()
}

/// pi's text for a Bedrock error answer: `<prefix>: <message>`.
pub(crate) fn error_text(body: &str) -> String {
    let value = serde_json::from_str::<Value>(body).unwrap_or(Value::Null);
    let kind = error_type(None, &value).unwrap_or_else(|| "Unknown".into());
    let message = ["message", "Message"]
        .iter()
        .find_map(|k| value.get(*k).and_then(Value::as_str))
        .unwrap_or("UnknownError");
    format!("{}: {message}", prefix(&kind))
}

#[cfg(test)]
#[path = "bedrock_tests.rs"]
mod tests;
