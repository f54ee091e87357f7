//! pi 0.73's `convertResponsesMessages` and `convertResponsesTools`: a conversation as Responses
//! `input` items. Used by the Azure OpenAI Responses codec (`azure.rs`), whose requests must equal
//! the ones pi 0.73.1 sends.

use serde_json::{Value, json};

use crate::codec::RequestInput;
use crate::message::{AssistantMessage, ContentBlock, Message, UserContent};
use crate::model::Model;
use crate::openai_responses::short_hash;
use crate::transform::transform_messages_borrowed;

/// pi's `normalizeIdPart`: `[a-zA-Z0-9_-]` only, at most 64 characters, no trailing `_`.
fn normalize_part(part: &str) -> String {
    let cut: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    cut.trim_end_matches('_').to_string()
}

/// Tool-call ids for a target whose provider is in `own_providers` keep their `call|item`
/// shape (a foreign item id is hashed to `fc_…`); every other id is one normalised part.
fn normalize_id(
    id: &str,
    model: &Model,
    source: &AssistantMessage,
    own_providers: &[&str],
) -> String {
    let Some((call, item)) = id
        .split_once('|')
        .filter(|_| own_providers.contains(&model.provider.as_str()))
    else {
        return normalize_part(id);
    };
    let item = item.split('|').next().unwrap_or_default();
    let foreign = source.provider != model.provider || source.api != model.api;
    let mut item_id = if foreign {
        format!("fc_{}", short_hash(item))
            .chars()
            .take(64)
            .collect()
    } else {
        normalize_part(item)
    };
    if !item_id.starts_with("fc_") {
        item_id = normalize_part(&format!("fc_{item_id}"));
    }
    format!("{}|{item_id}", normalize_part(call))
}

fn image_part(data: &str, mime: &str) -> Value {
    json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{mime};base64,{data}")})
}

/// The `input` array for a request.
pub(crate) fn convert_input(input: &RequestInput<'_>, own_providers: &[&str]) -> Vec<Value> {
    let model = input.model;
    let normalize =
        |id: &str, m: &Model, source: &AssistantMessage| normalize_id(id, m, source, own_providers);
    let messages = transform_messages_borrowed(
        &input.context.messages,
        model,
        Some(&normalize),
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
    // pi's `msgIndex`: counts the messages that produced items (a user message without content
    // and an assistant message without items are skipped before it counts).
    let mut index = 0usize;
    for message in &messages {
        match &**message {
            Message::User(u) => {
                let content: Vec<Value> = match &u.content {
                    UserContent::Text(t) => vec![json!({"type": "input_text", "text": t})],
                    UserContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => {
                                Some(json!({"type": "input_text", "text": t.text}))
                            }
                            ContentBlock::Image(i) => Some(image_part(&i.data, &i.mime_type)),
                            ContentBlock::Thinking(_) | ContentBlock::ToolCall(_) => None,
                        })
                        .collect(),
                };
                if content.is_empty() {
                    continue;
                }
                out.push(json!({"role": "user", "content": content}));
            }
            Message::Assistant(a) => {
                let before = out.len();
                assistant_items(a, model, index, &mut out);
                if out.len() == before {
                    continue;
                }
            }
            Message::ToolResult(r) => {
                let text: Vec<&str> = r.content.iter().filter_map(ContentBlock::as_text).collect();
                let text = text.join("\n");
                let has_images = r
                    .content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Image(_)));
                let output = if has_images && model.supports_images() {
                    let mut parts = Vec::new();
                    if !text.is_empty() {
                        parts.push(json!({"type": "input_text", "text": text}));
                    }
                    parts.extend(r.content.iter().filter_map(|b| match b {
                        ContentBlock::Image(i) => Some(image_part(&i.data, &i.mime_type)),
                        ContentBlock::Text(_)
                        | ContentBlock::Thinking(_)
                        | ContentBlock::ToolCall(_) => None,
                    }));
                    Value::Array(parts)
                } else if text.is_empty() {
                    json!("(see attached image)")
                } else {
                    json!(text)
                };
                let call_id = r.tool_call_id.split('|').next().unwrap_or_default();
                out.push(
                    json!({"type": "function_call_output", "call_id": call_id, "output": output}),
                );
            }
        }
        index += 1;
    }
    out
}

/// The message id and phase a text signature carries (V1 JSON or a legacy plain id).
fn text_signature(signature: &str) -> (String, Option<String>) {
    if signature.starts_with('{')
        && let Ok(v) = serde_json::from_str::<Value>(signature)
        && v.get("v") == Some(&json!(1))
        && let Some(id) = v.get("id").and_then(Value::as_str)
    {
        let phase = v
            .get("phase")
            .and_then(Value::as_str)
            .filter(|p| matches!(*p, "commentary" | "final_answer"));
        return (id.to_string(), phase.map(str::to_string));
    }
    (signature.to_string(), None)
}

fn assistant_items(a: &AssistantMessage, model: &Model, index: usize, out: &mut Vec<Value>) {
    let different_model = a.model != model.id && a.provider == model.provider && a.api == model.api;
    for block in &a.content {
        match block {
            ContentBlock::Thinking(t) => {
                if let Some(item) = t
                    .thinking_signature
                    .as_deref()
                    .filter(|s| !s.is_empty())
                    .and_then(|s| serde_json::from_str::<Value>(s).ok())
                {
                    out.push(item);
                }
            }
            ContentBlock::Text(t) => {
                let (mut id, phase) = t
                    .text_signature
                    .as_deref()
                    .filter(|s| !s.is_empty())
                    .map(text_signature)
                    .unwrap_or_default();
                if id.is_empty() {
                    id = format!("msg_{index}");
                } else if id.chars().count() > 64 {
                    id = format!("msg_{}", short_hash(&id));
                }
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
                let mut parts = tc.id.split('|');
                let call_id = parts.next().unwrap_or_default();
                let item_id = parts
                    .next()
                    .filter(|i| !(different_model && i.starts_with("fc_")));
                let mut item = json!({"type": "function_call"});
                if let Some(i) = item_id {
                    item["id"] = json!(i);
                }
                item["call_id"] = json!(call_id);
                item["name"] = json!(tc.name);
                item["arguments"] = json!(tc.arguments.to_string());
                out.push(item);
            }
            ContentBlock::Image(_) => {}
        }
    }
}

/// pi's `convertResponsesTools` (never strict).
pub(crate) fn convert_tools(input: &RequestInput<'_>) -> Option<Value> {
    let tools = input.context.tools.as_ref().filter(|t| !t.is_empty())?;
    Some(Value::Array(
        tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "strict": false,
                })
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assistant(provider: &str, api: &str) -> AssistantMessage {
        serde_json::from_value(json!({
            "role": "assistant", "content": [], "api": api, "provider": provider, "model": "m",
            "usage": {}, "stopReason": "stop", "timestamp": 1
        }))
        .unwrap()
    }

    #[test]
    fn tool_call_ids_as_pi_normalises_them() {
        let model: Model = serde_json::from_value(json!({
            "id": "gpt-5", "name": "x", "api": "azure-openai-responses",
            "provider": "azure", "baseUrl": ""
        }))
        .unwrap();
        let own = ["azure"];
        let same = assistant("azure", "azure-openai-responses");
        assert_eq!(
            normalize_id("call 1|item.2", &model, &same, &own),
            "call_1|fc_item_2"
        );
        assert_eq!(
            normalize_id("call_1|fc_2", &model, &same, &own),
            "call_1|fc_2"
        );
        let foreign = assistant("openai", "openai-responses");
        assert_eq!(
            normalize_id("call_1|fc_2", &model, &foreign, &own),
            format!("call_1|fc_{}", short_hash("fc_2"))
        );
        assert_eq!(normalize_id("a b__", &model, &same, &[]), "a_b");
        assert_eq!(normalize_id("x|y", &model, &same, &[]), "x_y");
    }

    #[test]
    fn text_signatures_v1_and_legacy() {
        assert_eq!(
            text_signature(r#"{"v":1,"id":"msg_1","phase":"commentary"}"#),
            ("msg_1".to_string(), Some("commentary".to_string()))
        );
        assert_eq!(
            text_signature(r#"{"v":1,"id":"msg_1","phase":"other"}"#),
            ("msg_1".to_string(), None)
        );
        assert_eq!(text_signature("msg_legacy"), ("msg_legacy".into(), None));
    }
}
