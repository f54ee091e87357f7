//! Mistral stream decoding, as pi 0.73.1 reads the SDK's chunks: `delta.content` is a string
//! (text) or an array of text and `thinking` chunks; every string, even an empty one, belongs to
//! a text block (so the role chunk's `""` opens one, as it does in pi); tool calls are keyed by
//! `id:index` and all end when the stream does; `finish_reason` maps as pi maps it.

use serde::Deserialize;
use serde_json::Value;

use crate::codec::{FewVec, parse_arguments, parse_frame};
use crate::driver::{DecodeOut, Decoder};
use crate::error::AiError;
use crate::event::AssistantEvent;
use crate::message::{StopReason, ToolCall};
use crate::sse::SseFrame;

#[derive(Deserialize)]
struct Chunk {
    #[serde(default, deserialize_with = "crate::codec::string_or_none")]
    id: Option<String>,
    #[serde(default)]
    choices: FewVec<Choice>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    #[serde(default, deserialize_with = "crate::codec::string_or_none")]
    object: Option<String>,
    #[serde(default)]
    message: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default, deserialize_with = "crate::codec::string_or_none")]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Deserialize)]
struct CallDelta {
    #[serde(default, deserialize_with = "crate::codec::string_or_none")]
    id: Option<String>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default, deserialize_with = "crate::codec::string_or_none")]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text(usize),
    Thinking(usize),
}

#[derive(Debug)]
struct Call {
    key: String,
    index: usize,
    id: String,
    name: String,
    args: String,
}

/// Decodes Mistral chat chunks.
#[derive(Debug, Default)]
pub struct MistralDecoder {
    open: Option<Open>,
    next_index: usize,
    calls: Vec<Call>,
}

/// pi's `mapChatStopReason`.
fn map_finish_reason(reason: &str) -> StopReason {
    match reason {
        "length" | "model_length" => StopReason::Length,
        "tool_calls" => StopReason::ToolUse,
        "error" => StopReason::Error,
        _ => StopReason::Stop,
    }
}

impl MistralDecoder {
    fn close(&mut self, out: &mut DecodeOut) {
        match self.open.take() {
            Some(Open::Text(index)) => out.events.push(AssistantEvent::TextEnd {
                index,
                signature: None,
            }),
            Some(Open::Thinking(index)) => out.events.push(AssistantEvent::ThinkingEnd {
                index,
                signature: None,
                redacted: false,
            }),
            None => {}
        }
    }

    fn text(&mut self, delta: &str, out: &mut DecodeOut) {
        let index = match self.open {
            Some(Open::Text(index)) => index,
            _ => {
                self.close(out);
                let index = self.next_index;
                self.next_index += 1;
                out.events.push(AssistantEvent::TextStart { index });
                self.open = Some(Open::Text(index));
                index
            }
        };
        out.events.push(AssistantEvent::TextDelta {
            index,
            delta: delta.to_string(),
        });
    }

    fn thinking(&mut self, delta: String, out: &mut DecodeOut) {
        if delta.is_empty() {
            return;
        }
        let index = match self.open {
            Some(Open::Thinking(index)) => index,
            _ => {
                self.close(out);
                let index = self.next_index;
                self.next_index += 1;
                out.events.push(AssistantEvent::ThinkingStart { index });
                self.open = Some(Open::Thinking(index));
                index
            }
        };
        out.events
            .push(AssistantEvent::ThinkingDelta { index, delta });
    }

    fn content(&mut self, content: &Value, out: &mut DecodeOut) {
        match content {
            Value::String(s) => self.text(s, out),
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::String(s) => self.text(s, out),
                        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                            Some("thinking") => {
                                let text: String = o
                                    .get("thinking")
                                    .and_then(Value::as_array)
                                    .into_iter()
                                    .flatten()
                                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                                    .collect();
                                self.thinking(text, out);
                            }
                            Some("text") => {
                                let text = o.get("text").and_then(Value::as_str).unwrap_or("");
                                self.text(text, out);
                            }
                            _ => {}
                        },
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    fn tool_call(&mut self, call: CallDelta, out: &mut DecodeOut) {
        self.close(out);
        let position = call.index.unwrap_or(0);
        let id = call
            .id
            .filter(|id| !id.is_empty() && id != "null")
            .unwrap_or_else(|| {
                crate::mistral::derive_tool_call_id(&format!("toolcall:{position}"), 0)
            });
        let key = format!("{id}:{position}");
        let function = call.function;
        let delta = match function.as_ref().and_then(|f| f.arguments.as_ref()) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => "{}".to_string(),
        };
        let index = match self.calls.iter_mut().find(|c| c.key == key) {
            Some(open) => {
                open.args.push_str(&delta);
                open.index
            }
            None => {
                let index = self.next_index;
                self.next_index += 1;
                let name = function.and_then(|f| f.name).unwrap_or_default();
                out.events.push(AssistantEvent::ToolCallStart {
                    index,
                    id: id.clone(),
                    name: name.clone(),
                });
                self.calls.push(Call {
                    key,
                    index,
                    id,
                    name,
                    args: delta.clone(),
                });
                index
            }
        };
        out.events
            .push(AssistantEvent::ToolCallDelta { index, delta });
    }
}

impl Decoder for MistralDecoder {
    fn frame(&mut self, frame: &SseFrame, out: &mut DecodeOut) -> Result<(), AiError> {
        let data = frame.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            out.stop.get_or_insert(StopReason::Stop);
            out.ended = true;
            return Ok(());
        }
        let chunk: Chunk = parse_frame(data)?;
        if chunk.object.as_deref() == Some("error")
            || (chunk.choices.is_empty() && chunk.message.is_some())
        {
            let message = match &chunk.message {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => "unknown error".to_string(),
            };
            return Err(AiError::Provider(format!(
                "Mistral stream error: {message}"
            )));
        }
        if out.response_id.is_none() {
            out.response_id = chunk.id.filter(|id| !id.is_empty());
        }
        if let Some(u) = &chunk.usage {
            out.usage.input = u.prompt_tokens;
            out.usage.output = u.completion_tokens;
            out.usage.cache_read = 0;
            out.usage.cache_write = 0;
            out.usage.total_tokens = if u.total_tokens > 0 {
                u.total_tokens
            } else {
                u.prompt_tokens + u.completion_tokens
            };
        }
        let Some(choice) = chunk.choices.into_first() else {
            return Ok(());
        };
        if let Some(reason) = &choice.finish_reason {
            out.stop = Some(map_finish_reason(reason));
        }
        if let Some(delta) = choice.delta {
            if let Some(content) = delta.content.as_ref().filter(|c| !c.is_null()) {
                self.content(content, out);
            }
            for call in delta.tool_calls.into_iter().flatten() {
                self.tool_call(call, out);
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut DecodeOut) -> Result<(), AiError> {
        self.close(out);
        for call in self.calls.drain(..) {
            out.events.push(AssistantEvent::ToolCallEnd {
                index: call.index,
                tool_call: ToolCall {
                    id: call.id,
                    name: call.name,
                    arguments: parse_arguments(&call.args),
                    thought_signature: None,
                },
            });
        }
        Ok(())
    }
}
