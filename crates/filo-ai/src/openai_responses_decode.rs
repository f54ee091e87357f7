//! OpenAI Responses stream decoding: typed `response.*` events. Output items are keyed by item id,
//! so parallel function calls with interleaved argument deltas stay apart.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::codec::{parse_arguments, parse_frame};
use crate::driver::{DecodeOut, Decoder};
use crate::error::AiError;
use crate::event::AssistantEvent;
use crate::message::{StopReason, ToolCall};
use crate::sse::SseFrame;

/// The fields of any Responses event this decoder reads; absent ones stay `None`.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    item_id: Option<Cow<'a, str>>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(default)]
    summary_index: Option<usize>,
}

#[derive(Debug)]
enum Kind {
    Thinking,
    Text,
    Tool {
        id: String,
        name: String,
        args: String,
    },
}

#[derive(Debug)]
struct OpenItem {
    item_id: String,
    index: usize,
    kind: Kind,
}

/// Decodes Responses events.
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    open: Vec<OpenItem>,
    next_index: usize,
    saw_tool_call: bool,
}

fn str_field<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

impl ResponsesDecoder {
    fn item_added(&mut self, item: &Value, out: &mut DecodeOut) {
        let item_id = str_field(item, "id").to_string();
        let index = self.next_index;
        let kind = match str_field(item, "type") {
            "reasoning" => {
                out.events.push(AssistantEvent::ThinkingStart { index });
                Kind::Thinking
            }
            "message" => {
                out.events.push(AssistantEvent::TextStart { index });
                Kind::Text
            }
            "function_call" => {
                let id = format!("{}|{}", str_field(item, "call_id"), item_id);
                let name = str_field(item, "name").to_string();
                out.events.push(AssistantEvent::ToolCallStart {
                    index,
                    id: id.clone(),
                    name: name.clone(),
                });
                self.saw_tool_call = true;
                Kind::Tool {
                    id,
                    name,
                    args: String::new(),
                }
            }
            _ => return,
        };
        self.next_index += 1;
        self.open.push(OpenItem {
            item_id,
            index,
            kind,
        });
    }

    /// The open item a delta belongs to: by item id, else the latest of that kind.
    fn find(&mut self, item_id: Option<&str>, thinking: bool) -> Option<&mut OpenItem> {
        let matches_kind = |o: &OpenItem| match o.kind {
            Kind::Thinking => thinking,
            Kind::Text => !thinking,
            Kind::Tool { .. } => false,
        };
        match item_id {
            Some(id) if self.open.iter().any(|o| o.item_id == id) => {
                self.open.iter_mut().find(|o| o.item_id == id)
            }
            _ => self.open.iter_mut().rev().find(|o| matches_kind(o)),
        }
    }

    fn item_done(&mut self, item: &Value, out: &mut DecodeOut) {
        let item_id = str_field(item, "id");
        let Some(pos) = self.open.iter().position(|o| o.item_id == item_id) else {
            return;
        };
        let open = self.open.remove(pos);
        let index = open.index;
        out.events.push(match open.kind {
            Kind::Thinking => AssistantEvent::ThinkingEnd {
                index,
                signature: Some(item.to_string()),
                redacted: false,
            },
            Kind::Text => {
                let mut sig = json!({"v": 1, "id": item_id});
                if let Some(phase) = item.get("phase").and_then(Value::as_str) {
                    sig["phase"] = json!(phase);
                }
                AssistantEvent::TextEnd {
                    index,
                    signature: Some(sig.to_string()),
                }
            }
            Kind::Tool { id, name, args } => {
                let final_args = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or(&args);
                AssistantEvent::ToolCallEnd {
                    index,
                    tool_call: ToolCall {
                        id,
                        name,
                        arguments: parse_arguments(final_args),
                        thought_signature: None,
                    },
                }
            }
        });
    }

    fn completed(&mut self, response: &Value, out: &mut DecodeOut) {
        if let Some(u) = response.get("usage") {
            let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
            let cached = n(u
                .get("input_tokens_details")
                .and_then(|d| d.get("cached_tokens")));
            out.usage.input = n(u.get("input_tokens")).saturating_sub(cached);
            out.usage.output = n(u.get("output_tokens"));
            out.usage.cache_read = cached;
            out.usage.cache_write = 0;
            out.usage.total_tokens = n(u.get("total_tokens"));
        }
        out.cost_multiplier = match str_field(response, "service_tier") {
            "flex" => Some(0.5),
            "priority" => Some(2.0),
            _ => None,
        };
        let stop = match str_field(response, "status") {
            "incomplete" => StopReason::Length,
            "failed" | "cancelled" => StopReason::Error,
            _ => StopReason::Stop,
        };
        out.stop = Some(if stop == StopReason::Stop && self.saw_tool_call {
            StopReason::ToolUse
        } else {
            stop
        });
        out.ended = true;
    }
}

/// The `id` of a response object, when it is a non-empty string.
fn response_id(response: &Value) -> Option<String> {
    Some(str_field(response, "id"))
        .filter(|id| !id.is_empty())
        .map(str::to_string)
}

/// pi's text for a `response.failed` event.
fn failed_text(response: Option<&Value>) -> String {
    let error = response
        .and_then(|r| r.get("error"))
        .filter(|e| !e.is_null());
    if let Some(e) = error {
        let code = e.get("code").map_or_else(String::new, |c| match c {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        return format!("{code}: {}", str_field(e, "message"));
    }
    if let Some(reason) = response
        .and_then(|r| r.get("incomplete_details"))
        .and_then(|d| d.get("reason"))
        .and_then(Value::as_str)
    {
        return format!("incomplete: {reason}");
    }
    "Unknown error (no error details in response)".into()
}

impl Decoder for ResponsesDecoder {
    fn frame(&mut self, frame: &SseFrame, out: &mut DecodeOut) -> Result<(), AiError> {
        let data = frame.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let event: Event<'_> = parse_frame(data)?;
        match event.kind.as_ref() {
            "response.created" => {
                out.response_id = event.response.as_ref().and_then(response_id);
            }
            "response.output_item.added" => {
                if let Some(item) = &event.item {
                    self.item_added(item, out);
                }
            }
            "response.reasoning_summary_part.added" if event.summary_index.unwrap_or(0) > 0 => {
                if let Some(o) = self.find(event.item_id.as_deref(), true) {
                    let index = o.index;
                    out.events.push(AssistantEvent::ThinkingDelta {
                        index,
                        delta: "\n\n".into(),
                    });
                }
            }
            "response.reasoning_summary_text.delta" => {
                if let Some(o) = self.find(event.item_id.as_deref(), true) {
                    let index = o.index;
                    out.events.push(AssistantEvent::ThinkingDelta {
                        index,
                        delta: event.delta.unwrap_or_default().into_owned(),
                    });
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(o) = self.find(event.item_id.as_deref(), false) {
                    let index = o.index;
                    out.events.push(AssistantEvent::TextDelta {
                        index,
                        delta: event.delta.unwrap_or_default().into_owned(),
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                let id = event.item_id.as_deref().unwrap_or_default();
                if let Some(o) = self.open.iter_mut().find(|o| o.item_id == id)
                    && let Kind::Tool { args, .. } = &mut o.kind
                {
                    let delta = event.delta.unwrap_or_default();
                    args.push_str(&delta);
                    out.events.push(AssistantEvent::ToolCallDelta {
                        index: o.index,
                        delta: delta.into_owned(),
                    });
                }
            }
            "response.output_item.done" => {
                if let Some(item) = &event.item {
                    self.item_done(item, out);
                }
            }
            "response.completed" | "response.done" | "response.incomplete" => {
                if let Some(r) = &event.response {
                    if let Some(id) = response_id(r) {
                        out.response_id = Some(id);
                    }
                    self.completed(r, out);
                }
            }
            "response.failed" => {
                return Err(AiError::Provider(failed_text(event.response.as_ref())));
            }
            "error" => {
                let code = match &event.code {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                return Err(AiError::Provider(format!(
                    "Error Code {code}: {}",
                    event.message.as_deref().unwrap_or_default()
                )));
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut DecodeOut) -> Result<(), AiError> {
        Ok(())
    }
}
