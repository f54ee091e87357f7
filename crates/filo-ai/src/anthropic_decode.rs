//! Anthropic Messages stream decoding: `event:`/`data:` pairs. Blocks are keyed by the wire
//! `index`; signatures arrive in `signature_delta`s and are kept byte for byte.

use std::borrow::Cow;

use serde::Deserialize;

use crate::codec::{parse_arguments, parse_frame};
use crate::driver::{DecodeOut, Decoder};
use crate::error::AiError;
use crate::event::AssistantEvent;
use crate::message::{StopReason, ToolCall};

#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct MessageStart {
    message: StartMessage,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default, deserialize_with = "crate::codec::string_or_none")]
    id: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct BlockStart<'a> {
    index: usize,
    #[serde(borrow)]
    content_block: StartBlock<'a>,
}

#[derive(Deserialize)]
struct StartBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    data: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct BlockDelta<'a> {
    index: usize,
    #[serde(borrow)]
    delta: Delta<'a>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct BlockStop {
    index: usize,
}

#[derive(Deserialize)]
struct MessageDelta<'a> {
    #[serde(borrow)]
    delta: StopDelta<'a>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct StopDelta<'a> {
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

/// An open content block: its wire index and our content index.
#[derive(Debug)]
enum Open {
    Text,
    Thinking {
        signature: String,
        redacted: bool,
    },
    Tool {
        id: String,
        name: String,
        args: String,
    },
}

/// Decodes Anthropic `event:`/`data:` frames.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    /// (wire index, content index, block) for blocks not yet stopped.
    open: Vec<(usize, usize, Open)>,
    next_index: usize,
    /// The context's tool names: incoming names are mapped back case-insensitively (OAuth
    /// requests send Claude Code's spelling).
    tool_names: Vec<String>,
}

fn apply_usage(out: &mut DecodeOut, u: &WireUsage) {
    if let Some(v) = u.input_tokens {
        out.usage.input = v;
    }
    if let Some(v) = u.output_tokens {
        out.usage.output = v;
    }
    if let Some(v) = u.cache_read_input_tokens {
        out.usage.cache_read = v;
    }
    if let Some(v) = u.cache_creation_input_tokens {
        out.usage.cache_write = v;
    }
    out.usage.total_tokens =
        out.usage.input + out.usage.output + out.usage.cache_read + out.usage.cache_write;
}

/// Map Anthropic's `stop_reason`.
pub fn map_stop_reason(reason: &str) -> Result<StopReason, AiError> {
    match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => Ok(StopReason::Stop),
        "max_tokens" => Ok(StopReason::Length),
        "tool_use" => Ok(StopReason::ToolUse),
        "refusal" | "sensitive" => Ok(StopReason::Error),
        other => Err(AiError::UnhandledStopReason(other.into())),
    }
}

impl AnthropicDecoder {
    /// A decoder for a context with these tool names.
    pub fn new(tool_names: Vec<String>) -> Self {
        AnthropicDecoder {
            tool_names,
            ..AnthropicDecoder::default()
        }
    }

    fn block_start(&mut self, data: &str, out: &mut DecodeOut) -> Result<(), AiError> {
        let start: BlockStart<'_> = parse_frame(data)?;
        let index = self.next_index;
        self.next_index += 1;
        let block = start.content_block;
        let open = match block.kind.as_ref() {
            "text" => {
                out.events.push(AssistantEvent::TextStart { index });
                Open::Text
            }
            "thinking" => {
                out.events.push(AssistantEvent::ThinkingStart { index });
                Open::Thinking {
                    signature: String::new(),
                    redacted: false,
                }
            }
            "redacted_thinking" => {
                out.events.push(AssistantEvent::ThinkingStart { index });
                out.events.push(AssistantEvent::ThinkingDelta {
                    index,
                    delta: "[Reasoning redacted]".into(),
                });
                Open::Thinking {
                    signature: block.data.map(Cow::into_owned).unwrap_or_default(),
                    redacted: true,
                }
            }
            "tool_use" => {
                let id = block.id.map(Cow::into_owned).unwrap_or_default();
                let wire_name = block.name.unwrap_or_default();
                let name = self
                    .tool_names
                    .iter()
                    .find(|t| t.eq_ignore_ascii_case(&wire_name))
                    .map_or_else(|| wire_name.into_owned(), Clone::clone);
                out.events.push(AssistantEvent::ToolCallStart {
                    index,
                    id: id.clone(),
                    name: name.clone(),
                });
                Open::Tool {
                    id,
                    name,
                    args: String::new(),
                }
            }
            // Server tools and future block kinds are not part of pi's message model.
            _ => {
                self.next_index -= 1;
                return Ok(());
            }
        };
        self.open.push((start.index, index, open));
        Ok(())
    }

    fn block_delta(&mut self, data: &str, out: &mut DecodeOut) -> Result<(), AiError> {
        let d: BlockDelta<'_> = parse_frame(data)?;
        let Some((_, index, open)) = self.open.iter_mut().find(|(w, _, _)| *w == d.index) else {
            return Ok(());
        };
        let index = *index;
        match (d.delta.kind.as_ref(), open) {
            ("text_delta", Open::Text) => out.events.push(AssistantEvent::TextDelta {
                index,
                delta: d.delta.text.map(Cow::into_owned).unwrap_or_default(),
            }),
            ("thinking_delta", Open::Thinking { .. }) => {
                out.events.push(AssistantEvent::ThinkingDelta {
                    index,
                    delta: d.delta.thinking.map(Cow::into_owned).unwrap_or_default(),
                });
            }
            ("signature_delta", Open::Thinking { signature, .. }) => {
                signature.push_str(d.delta.signature.as_deref().unwrap_or_default());
            }
            ("input_json_delta", Open::Tool { args, .. }) => {
                let fragment = d.delta.partial_json.unwrap_or_default();
                args.push_str(&fragment);
                out.events.push(AssistantEvent::ToolCallDelta {
                    index,
                    delta: fragment.into_owned(),
                });
            }
            _ => {}
        }
        Ok(())
    }

    fn close(index: usize, open: Open, out: &mut DecodeOut) {
        out.events.push(match open {
            Open::Text => AssistantEvent::TextEnd {
                index,
                signature: None,
            },
            Open::Thinking {
                signature,
                redacted,
            } => AssistantEvent::ThinkingEnd {
                index,
                signature: (!signature.is_empty()).then_some(signature),
                redacted,
            },
            Open::Tool { id, name, args } => AssistantEvent::ToolCallEnd {
                index,
                tool_call: ToolCall {
                    id,
                    name,
                    arguments: parse_arguments(&args),
                    thought_signature: None,
                },
            },
        });
    }
}

impl Decoder for AnthropicDecoder {
    fn frame(&mut self, frame: &crate::sse::SseFrame, out: &mut DecodeOut) -> Result<(), AiError> {
        let data = frame.data.as_str();
        match frame.event.as_str() {
            "message_start" => {
                let start: MessageStart = parse_frame(data)?;
                out.response_id = start.message.id;
                if let Some(u) = &start.message.usage {
                    apply_usage(out, u);
                }
            }
            "content_block_start" => self.block_start(data, out)?,
            "content_block_delta" => self.block_delta(data, out)?,
            "content_block_stop" => {
                let stop: BlockStop = parse_frame(data)?;
                if let Some(pos) = self.open.iter().position(|(w, _, _)| *w == stop.index) {
                    let (_, index, open) = self.open.remove(pos);
                    Self::close(index, open, out);
                }
            }
            "message_delta" => {
                let delta: MessageDelta<'_> = parse_frame(data)?;
                if let Some(reason) = delta.delta.stop_reason.as_deref() {
                    out.stop = Some(map_stop_reason(reason)?);
                }
                if let Some(u) = &delta.usage {
                    apply_usage(out, u);
                }
            }
            "message_stop" => out.ended = true,
            "error" => return Err(AiError::Provider(data.to_string())),
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut DecodeOut) -> Result<(), AiError> {
        Ok(())
    }
}
