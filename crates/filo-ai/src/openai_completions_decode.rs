//! Chat Completions stream decoding: `data:` chunks of `choices[0].delta`, `[DONE]` at the end.
//! Parallel tool calls are keyed by their `index` (a new `id` at a used index starts a new call),
//! so interleaved argument fragments land in the right call.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::map_finish_reason;
use crate::codec::{FewVec, parse_arguments, parse_frame};
use crate::driver::{DecodeOut, Decoder};
use crate::error::AiError;
use crate::event::AssistantEvent;
use crate::message::ToolCall;
use crate::sse::SseFrame;

#[path = "openai_completions_fast.rs"]
mod fast;

#[derive(Deserialize)]
struct Chunk<'a> {
    /// The completion's id; every chunk of a stream repeats it.
    #[serde(default, borrow, deserialize_with = "crate::codec::str_or_none")]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: FewVec<Choice<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Box<Value>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<ChunkDelta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct ChunkDelta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    /// Boxed: only tool-call chunks carry it, and inline it would make every chunk costly to
    /// move through the deserializer.
    tool_calls: Option<Box<FewVec<ToolDelta<'a>>>>,
    #[serde(default)]
    reasoning_details: Vec<Value>,
}

#[derive(Deserialize)]
struct ToolDelta<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize, Default)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Debug)]
struct OpenCall {
    wire_index: usize,
    index: usize,
    id: String,
    name: String,
    args: String,
    signature: Option<String>,
}

/// The text or thinking block currently receiving deltas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Current {
    None,
    Text(usize),
    /// Content index and which field the reasoning arrives in.
    Thinking(usize, &'static str),
}

/// Decodes Chat Completions chunks.
#[derive(Debug)]
pub struct CompletionsDecoder {
    current: Current,
    calls: Vec<OpenCall>,
    next_index: usize,
    /// `reasoning.encrypted` details by tool-call id, for calls not yet seen.
    details: Vec<(String, String)>,
    /// Try the plain-chunk fast path before serde (off only in the tests that compare them).
    fast: bool,
    /// The last plain frame's shape around its content (see [`fast::Template`]).
    template: Option<fast::Template>,
}

impl Default for CompletionsDecoder {
    fn default() -> Self {
        CompletionsDecoder {
            current: Current::None,
            calls: Vec::new(),
            next_index: 0,
            details: Vec::new(),
            fast: true,
            template: None,
        }
    }
}

impl CompletionsDecoder {
    /// The chunk read without serde, when its shape allows.
    fn fast_chunk<'a>(&mut self, data: &'a str) -> Option<Chunk<'a>> {
        if !self.fast {
            return None;
        }
        if let Some(chunk) = self.template.as_ref().and_then(|t| t.read(data)) {
            return Some(chunk);
        }
        let (chunk, template) = fast::parse_with_template(data)?;
        if template.is_some() {
            self.template = template;
        }
        Some(chunk)
    }

    fn close_current(&mut self, out: &mut DecodeOut) {
        match std::mem::replace(&mut self.current, Current::None) {
            Current::None => {}
            Current::Text(index) => out.events.push(AssistantEvent::TextEnd {
                index,
                signature: None,
            }),
            Current::Thinking(index, field) => out.events.push(AssistantEvent::ThinkingEnd {
                index,
                signature: Some(field.to_string()),
                redacted: false,
            }),
        }
    }

    fn text(&mut self, delta: Cow<'_, str>, out: &mut DecodeOut) {
        let index = match self.current {
            Current::Text(i) => i,
            Current::None | Current::Thinking(..) => {
                self.close_current(out);
                let i = self.next_index;
                self.next_index += 1;
                self.current = Current::Text(i);
                out.events.push(AssistantEvent::TextStart { index: i });
                i
            }
        };
        out.events.push(AssistantEvent::TextDelta {
            index,
            delta: delta.into_owned(),
        });
    }

    fn thinking(&mut self, field: &'static str, delta: Cow<'_, str>, out: &mut DecodeOut) {
        let index = match self.current {
            Current::Thinking(i, _) => i,
            Current::None | Current::Text(_) => {
                self.close_current(out);
                let i = self.next_index;
                self.next_index += 1;
                self.current = Current::Thinking(i, field);
                out.events.push(AssistantEvent::ThinkingStart { index: i });
                i
            }
        };
        out.events.push(AssistantEvent::ThinkingDelta {
            index,
            delta: delta.into_owned(),
        });
    }

    fn tool(&mut self, position: usize, t: ToolDelta<'_>, out: &mut DecodeOut) {
        let wire_index = t.index.unwrap_or(position);
        let (name, args) = match t.function {
            Some(f) => (f.name, f.arguments),
            None => (None, None),
        };
        let existing = self.calls.iter().position(|c| {
            c.wire_index == wire_index
                && t.id.as_deref().is_none_or(|id| id.is_empty() || id == c.id)
        });
        let pos = match existing {
            Some(pos) => pos,
            None => {
                self.close_current(out);
                let index = self.next_index;
                self.next_index += 1;
                let id =
                    t.id.map(Cow::into_owned)
                        .filter(|id| !id.is_empty())
                        .unwrap_or_else(|| format!("call_{wire_index}"));
                let name = name.map(Cow::into_owned).unwrap_or_default();
                let signature = self
                    .details
                    .iter()
                    .position(|(d, _)| *d == id)
                    .map(|p| self.details.remove(p).1);
                out.events.push(AssistantEvent::ToolCallStart {
                    index,
                    id: id.clone(),
                    name: name.clone(),
                });
                self.calls.push(OpenCall {
                    wire_index,
                    index,
                    id,
                    name,
                    args: String::new(),
                    signature,
                });
                self.calls.len() - 1
            }
        };
        // pi 1.6 reports every tool-call chunk as a delta, an empty one when the chunk carries
        // no argument text (the call's opening chunk).
        let args = args.unwrap_or_default();
        let call = &mut self.calls[pos];
        call.args.push_str(&args);
        out.events.push(AssistantEvent::ToolCallDelta {
            index: call.index,
            delta: args.into_owned(),
        });
    }

    fn reasoning_details(&mut self, details: Vec<Value>) {
        for d in details {
            if d.get("type").and_then(Value::as_str) != Some("reasoning.encrypted") {
                continue;
            }
            let Some(id) = d.get("id").and_then(Value::as_str).map(str::to_string) else {
                continue;
            };
            let text = d.to_string();
            match self.calls.iter_mut().find(|c| c.id == id) {
                Some(call) => call.signature = Some(text),
                None => self.details.push((id, text)),
            }
        }
    }

    fn usage(out: &mut DecodeOut, u: &WireUsage) {
        let cached = u
            .prompt_tokens_details
            .as_ref()
            .map_or(0, |d| d.cached_tokens);
        out.usage.input = u.prompt_tokens.saturating_sub(cached);
        // `completion_tokens` already counts reasoning tokens (OpenAI's usage spec); adding
        // `completion_tokens_details.reasoning_tokens` again would bill them twice.
        out.usage.output = u.completion_tokens;
        out.usage.cache_read = cached;
        out.usage.cache_write = 0;
        out.usage.total_tokens = out.usage.input + out.usage.output + out.usage.cache_read;
    }
}

/// pi's text for an error chunk: the message, plus OpenRouter's `metadata.raw` on a new line.
fn error_text(error: &Value) -> String {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_string);
    match error
        .get("metadata")
        .and_then(|m| m.get("raw"))
        .and_then(Value::as_str)
    {
        Some(raw) => format!("{message}\n{raw}"),
        None => message,
    }
}

impl Decoder for CompletionsDecoder {
    fn frame(&mut self, frame: &SseFrame, out: &mut DecodeOut) -> Result<(), AiError> {
        let data = frame.data.trim();
        if data == "[DONE]" {
            out.ended = true;
            if out.stop.is_none() {
                out.stop = Some(if self.calls.is_empty() {
                    crate::message::StopReason::Stop
                } else {
                    crate::message::StopReason::ToolUse
                });
            }
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk<'_> = match self.fast_chunk(data) {
            Some(chunk) => chunk,
            None => parse_frame(data)?,
        };
        if let Some(error) = &chunk.error {
            return Err(AiError::Provider(error_text(error)));
        }
        if out.response_id.is_none() {
            out.response_id = chunk.id.filter(|id| !id.is_empty()).map(Cow::into_owned);
        }
        if let Some(u) = &chunk.usage {
            Self::usage(out, u);
        }
        if let Some(choice) = chunk.choices.into_first() {
            if let Some(u) = &choice.usage {
                Self::usage(out, u);
            }
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    self.text(text, out);
                }
                let reasoning = [
                    ("reasoning_content", delta.reasoning_content),
                    ("reasoning", delta.reasoning),
                    ("reasoning_text", delta.reasoning_text),
                ]
                .into_iter()
                .find_map(|(field, v)| v.filter(|v| !v.is_empty()).map(|v| (field, v)));
                if let Some((field, text)) = reasoning {
                    self.thinking(field, text, out);
                }
                let calls = delta.tool_calls.map(|b| *b).unwrap_or_default();
                for (position, t) in calls.into_iter().enumerate() {
                    self.tool(position, t, out);
                }
                if !delta.reasoning_details.is_empty() {
                    self.reasoning_details(delta.reasoning_details);
                }
            }
            if let Some(reason) = choice.finish_reason.as_deref() {
                out.stop = Some(map_finish_reason(reason)?);
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut DecodeOut) -> Result<(), AiError> {
        self.close_current(out);
        for call in self.calls.drain(..) {
            out.events.push(AssistantEvent::ToolCallEnd {
                index: call.index,
                tool_call: ToolCall {
                    id: call.id,
                    name: call.name,
                    arguments: parse_arguments(&call.args),
                    thought_signature: call.signature,
                },
            });
        }
        Ok(())
    }
}
