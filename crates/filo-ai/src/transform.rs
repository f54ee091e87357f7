//! Cross-provider handoff (pi spec §1.9): rewrite a conversation so the target model can accept it.
//! Thinking from another model becomes text, signatures from another model are dropped, tool-call
//! ids are normalised where the target API needs it, failed assistant turns are dropped and
//! orphaned tool calls get a `No result provided` error result.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::message::{
    AssistantMessage, ContentBlock, Message, StopReason, TextContent, ToolCall, ToolResultMessage,
};
use crate::model::Model;

/// Maps a tool-call id from another model to one the target API accepts.
pub type IdNormalizer<'a> = &'a dyn Fn(&str, &Model, &AssistantMessage) -> String;

/// Whether `message` was produced by exactly this model (provider, api and id all equal).
pub fn is_same_model(message: &AssistantMessage, model: &Model) -> bool {
    message.provider == model.provider && message.api == model.api && message.model == model.id
}

/// Replace every character outside `[a-zA-Z0-9_-]` by `_` and cut to `max` characters.
pub fn sanitize_tool_call_id(id: &str, max: usize) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(max)
        .collect()
}

/// pi's `transformMessages`. `normalize` is applied to tool-call ids of messages from another model.
pub fn transform_messages(
    messages: &[Message],
    model: &Model,
    normalize: Option<IdNormalizer<'_>>,
    now_ms: i64,
) -> Vec<Message> {
    transform_messages_borrowed(messages, model, normalize, now_ms)
        .into_iter()
        .map(Cow::into_owned)
        .collect()
}

/// [`transform_messages`] without copying the messages it leaves as they are (user messages,
/// tool results whose id is not remapped, assistant messages of this model with no blank
/// thinking to drop): a request built from a long session borrows its history.
pub fn transform_messages_borrowed<'m>(
    messages: &'m [Message],
    model: &Model,
    normalize: Option<IdNormalizer<'_>>,
    now_ms: i64,
) -> Vec<Cow<'m, Message>> {
    let mut id_map: HashMap<String, String> = HashMap::new();
    let converted: Vec<Cow<'m, Message>> = messages
        .iter()
        .map(|m| match m {
            Message::User(_) => Cow::Borrowed(m),
            Message::ToolResult(r) => match id_map.get(&r.tool_call_id) {
                Some(new_id) => Cow::Owned(Message::ToolResult(ToolResultMessage {
                    tool_call_id: new_id.clone(),
                    ..r.clone()
                })),
                None => Cow::Borrowed(m),
            },
            Message::Assistant(a) if unchanged(a, model) => Cow::Borrowed(m),
            Message::Assistant(a) => Cow::Owned(Message::Assistant(convert_assistant(
                a,
                model,
                normalize,
                &mut id_map,
            ))),
        })
        .collect();
    repair_order(converted, now_ms)
}

/// Whether [`convert_assistant`] gives `a` back as it is: a message of this model (whose tool
/// calls keep their ids) that has no blank, unsigned, unredacted thinking to drop.
fn unchanged(a: &AssistantMessage, model: &Model) -> bool {
    is_same_model(a, model)
        && !a.content.iter().any(|b| match b {
            ContentBlock::Thinking(t) => {
                t.redacted != Some(true)
                    && t.thinking_signature.as_deref().is_none_or(str::is_empty)
                    && t.thinking.trim().is_empty()
            }
            ContentBlock::Text(_) | ContentBlock::ToolCall(_) | ContentBlock::Image(_) => false,
        })
}

fn convert_assistant(
    a: &AssistantMessage,
    model: &Model,
    normalize: Option<IdNormalizer<'_>>,
    id_map: &mut HashMap<String, String>,
) -> AssistantMessage {
    let same = is_same_model(a, model);
    let content = a
        .content
        .iter()
        .filter_map(|block| match block {
            // pi 1.6 (1.3.0) drops thinking from another model: its signatures only hold for
            // that model, and as text the new model would take it for its visible reply.
            ContentBlock::Thinking(_) if !same => None,
            ContentBlock::Thinking(t) => {
                let signed = t
                    .thinking_signature
                    .as_deref()
                    .is_some_and(|s| !s.is_empty());
                if t.redacted == Some(true) || signed || !t.thinking.trim().is_empty() {
                    Some(block.clone())
                } else {
                    None
                }
            }
            ContentBlock::Text(t) if !same => Some(ContentBlock::Text(TextContent {
                text: t.text.clone(),
                text_signature: None,
            })),
            ContentBlock::ToolCall(tc) if !same => {
                let id = match normalize {
                    Some(f) => f(&tc.id, model, a),
                    None => tc.id.clone(),
                };
                if id != tc.id {
                    id_map.insert(tc.id.clone(), id.clone());
                }
                Some(ContentBlock::ToolCall(ToolCall {
                    id,
                    name: tc.name.clone(),
                    arguments: tc.arguments.clone(),
                    thought_signature: None,
                }))
            }
            ContentBlock::Text(_) | ContentBlock::ToolCall(_) | ContentBlock::Image(_) => {
                Some(block.clone())
            }
        })
        .collect();
    AssistantMessage {
        content,
        ..a.clone()
    }
}

/// Pass 2: drop failed assistant turns; give every unanswered tool call a synthetic error result
/// before the next assistant or user message.
fn repair_order(messages: Vec<Cow<'_, Message>>, now_ms: i64) -> Vec<Cow<'_, Message>> {
    let mut out: Vec<Cow<'_, Message>> = Vec::with_capacity(messages.len());
    let mut pending: Vec<(String, String)> = Vec::new();
    for message in messages {
        match &*message {
            Message::Assistant(a)
                if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) =>
            {
                continue;
            }
            Message::Assistant(a) => {
                flush_orphans(&mut out, &mut pending, now_ms);
                pending = a
                    .tool_calls()
                    .map(|tc| (tc.id.clone(), tc.name.clone()))
                    .collect();
            }
            Message::User(_) => flush_orphans(&mut out, &mut pending, now_ms),
            Message::ToolResult(r) => pending.retain(|(id, _)| *id != r.tool_call_id),
        }
        out.push(message);
    }
    out
}

fn flush_orphans(
    out: &mut Vec<Cow<'_, Message>>,
    pending: &mut Vec<(String, String)>,
    now_ms: i64,
) {
    for (id, name) in pending.drain(..) {
        out.push(Cow::Owned(Message::ToolResult(ToolResultMessage {
            tool_call_id: id,
            tool_name: name,
            content: vec![ContentBlock::text("No result provided")],
            details: None,
            is_error: true,
            timestamp: now_ms,
        })));
    }
}

#[cfg(test)]
#[path = "transform_tests.rs"]
mod tests;
