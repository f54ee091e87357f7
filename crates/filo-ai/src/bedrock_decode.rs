//! ConverseStream decoding, as pi 0.73.1 reads the SDK's events: `messageStart` (must be the
//! assistant's); `contentBlockStart` opens tool calls only; a `contentBlockDelta` with `text` or
//! `reasoningContent` opens a text or thinking block for its `contentBlockIndex` when none is open
//! there; tool input arrives as JSON text in `toolUse.input`; thinking signatures arrive in
//! pieces and are joined; `contentBlockStop` closes the block at that index (a later delta for
//! the same index opens a new one); `messageStop` carries the stop reason and `metadata` the
//! usage. Bedrock sends no response id. Exceptions inside the stream are turned into errors by
//! the event-stream framer (`eventstream.rs`).

use serde::Deserialize;
use serde_json::Value;

use crate::codec::{parse_arguments, parse_frame};
use crate::driver::{DecodeOut, Decoder};
use crate::error::AiError;
use crate::event::AssistantEvent;
use crate::message::{StopReason, ToolCall};
use crate::sse::SseFrame;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStart {
    #[serde(default)]
    content_block_index: u64,
    #[serde(default)]
    start: Option<StartBody>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StartBody {
    #[serde(default)]
    tool_use: Option<ToolUseStart>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolUseStart {
    #[serde(default, deserialize_with = "crate::codec::string_or_none")]
    tool_use_id: Option<String>,
    #[serde(default, deserialize_with = "crate::codec::string_or_none")]
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockDelta {
    #[serde(default)]
    content_block_index: u64,
    #[serde(default)]
    delta: Option<DeltaBody>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeltaBody {
    #[serde(default, deserialize_with = "crate::codec::string_or_none")]
    text: Option<String>,
    #[serde(default)]
    tool_use: Option<Value>,
    #[serde(default)]
    reasoning_content: Option<Reasoning>,
}

#[derive(Deserialize)]
struct Reasoning {
    #[serde(default, deserialize_with = "crate::codec::string_or_none")]
    text: Option<String>,
    #[serde(default, deserialize_with = "crate::codec::string_or_none")]
    signature: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStop {
    #[serde(default)]
    content_block_index: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageStop {
    #[serde(default, deserialize_with = "crate::codec::string_or_none")]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct Metadata {
    #[serde(default)]
    usage: Option<MetaUsage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_write_input_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
}

#[derive(Debug)]
enum Kind {
    Text,
    Thinking {
        signature: String,
    },
    Tool {
        id: String,
        name: String,
        args: String,
    },
}

/// An open block: Bedrock's index, ours, and what it is.
#[derive(Debug)]
struct Open {
    wire: u64,
    index: usize,
    kind: Kind,
}

/// Decodes ConverseStream events.
#[derive(Debug, Default)]
pub struct BedrockDecoder {
    open: Vec<Open>,
    next_index: usize,
}

/// pi's `mapStopReason`.
fn map_stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" | "stop_sequence" => StopReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => StopReason::Length,
        "tool_use" => StopReason::ToolUse,
        _ => StopReason::Error,
    }
}

impl BedrockDecoder {
    fn open(&mut self, wire: u64, kind: Kind) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        self.open.push(Open { wire, index, kind });
        index
    }

    fn find(&mut self, wire: u64) -> Option<&mut Open> {
        self.open.iter_mut().find(|o| o.wire == wire)
    }

    fn delta(&mut self, d: BlockDelta, out: &mut DecodeOut) {
        let wire = d.content_block_index;
        let Some(delta) = d.delta else { return };
        if let Some(text) = delta.text {
            if self.find(wire).is_none() {
                let index = self.open(wire, Kind::Text);
                out.events.push(AssistantEvent::TextStart { index });
            }
            if let Some(Open {
                index,
                kind: Kind::Text,
                ..
            }) = self.find(wire)
            {
                let index = *index;
                out.events
                    .push(AssistantEvent::TextDelta { index, delta: text });
            }
        } else if let Some(tool) = delta.tool_use {
            if let Some(Open {
                index,
                kind: Kind::Tool { args, .. },
                ..
            }) = self.find(wire)
            {
                let input = tool
                    .get("input")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                args.push_str(input);
                let index = *index;
                out.events.push(AssistantEvent::ToolCallDelta {
                    index,
                    delta: input.to_string(),
                });
            }
        } else if let Some(reasoning) = delta.reasoning_content {
            if self.find(wire).is_none() {
                let index = self.open(
                    wire,
                    Kind::Thinking {
                        signature: String::new(),
                    },
                );
                out.events.push(AssistantEvent::ThinkingStart { index });
            }
            if let Some(Open {
                index,
                kind: Kind::Thinking { signature },
                ..
            }) = self.find(wire)
            {
                let index = *index;
                if let Some(piece) = reasoning.signature.filter(|s| !s.is_empty()) {
                    signature.push_str(&piece);
                }
                if let Some(text) = reasoning.text.filter(|t| !t.is_empty()) {
                    out.events
                        .push(AssistantEvent::ThinkingDelta { index, delta: text });
                }
            }
        }
    }

    fn close(open: Open, out: &mut DecodeOut) {
        let index = open.index;
        out.events.push(match open.kind {
            Kind::Text => AssistantEvent::TextEnd {
                index,
                signature: None,
            },
            Kind::Thinking { signature } => AssistantEvent::ThinkingEnd {
                index,
                signature: Some(signature),
                redacted: false,
            },
            Kind::Tool { id, name, args } => AssistantEvent::ToolCallEnd {
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

impl Decoder for BedrockDecoder {
    fn frame(&mut self, frame: &SseFrame, out: &mut DecodeOut) -> Result<(), AiError> {
        match frame.event.as_str() {
            "messageStart" => {
                let value: Value = parse_frame(&frame.data)?;
                let role = value.get("role").and_then(Value::as_str);
                if role.is_some_and(|r| r != "assistant") {
                    return Err(AiError::Provider(
                        "Unexpected assistant message start but got user message start instead"
                            .into(),
                    ));
                }
            }
            "contentBlockStart" => {
                let start: BlockStart = parse_frame(&frame.data)?;
                if let Some(tool) = start.start.and_then(|s| s.tool_use) {
                    let id = tool.tool_use_id.unwrap_or_default();
                    let name = tool.name.unwrap_or_default();
                    let index = self.open(
                        start.content_block_index,
                        Kind::Tool {
                            id: id.clone(),
                            name: name.clone(),
                            args: String::new(),
                        },
                    );
                    out.events
                        .push(AssistantEvent::ToolCallStart { index, id, name });
                }
            }
            "contentBlockDelta" => {
                let delta: BlockDelta = parse_frame(&frame.data)?;
                self.delta(delta, out);
            }
            "contentBlockStop" => {
                let stop: BlockStop = parse_frame(&frame.data)?;
                if let Some(at) = self
                    .open
                    .iter()
                    .position(|o| o.wire == stop.content_block_index)
                {
                    let open = self.open.remove(at);
                    Self::close(open, out);
                }
            }
            "messageStop" => {
                let stop: MessageStop = parse_frame(&frame.data)?;
                out.stop = Some(map_stop_reason(stop.stop_reason.as_deref().unwrap_or("")));
            }
            "metadata" => {
                let meta: Metadata = parse_frame(&frame.data)?;
                if let Some(u) = meta.usage {
                    out.usage.input = u.input_tokens;
                    out.usage.output = u.output_tokens;
                    out.usage.cache_read = u.cache_read_input_tokens;
                    out.usage.cache_write = u.cache_write_input_tokens;
                    out.usage.total_tokens = if u.total_tokens > 0 {
                        u.total_tokens
                    } else {
                        u.input_tokens + u.output_tokens
                    };
                }
            }
            // Events a newer API may add are not errors.
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut DecodeOut) -> Result<(), AiError> {
        for open in std::mem::take(&mut self.open) {
            Self::close(open, out);
        }
        Ok(())
    }
}
