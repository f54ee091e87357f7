//! Gemini stream decoding: `data:` chunks of `candidates[0].content.parts`. Text parts switch
//! between thinking and text on `thought`; function calls arrive whole; the last non-empty
//! `thoughtSignature` of a block is kept byte for byte.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::codec::{FewVec, parse_frame};
use crate::driver::{DecodeOut, Decoder};
use crate::error::AiError;
use crate::event::AssistantEvent;
use crate::message::{StopReason, ToolCall};
use crate::model::Model;
use crate::sse::SseFrame;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk<'a> {
    #[serde(default, borrow, deserialize_with = "crate::codec::str_or_none")]
    response_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    candidates: FewVec<Candidate<'a>>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    error: Option<Box<Value>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(default, borrow)]
    content: Option<CandidateContent<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct CandidateContent<'a> {
    #[serde(default, borrow)]
    parts: FewVec<Part<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default, borrow)]
    thought_signature: Option<Cow<'a, str>>,
    /// Boxed: rare, and large enough to make every part costly to move.
    #[serde(default)]
    function_call: Option<Box<FunctionCall>>,
}

#[derive(Deserialize)]
struct FunctionCall {
    #[serde(default)]
    name: String,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    id: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
    #[serde(default)]
    cached_content_token_count: u64,
    #[serde(default)]
    total_token_count: u64,
}

/// The text or thinking block receiving parts, with its last non-empty signature.
#[derive(Debug)]
struct Current {
    index: usize,
    thinking: bool,
    signature: Option<String>,
}

/// Decodes Gemini `data:` chunks.
#[derive(Debug)]
pub struct GoogleDecoder {
    current: Option<Current>,
    next_index: usize,
    call_ids: Vec<String>,
    counter: u64,
    started_ms: i64,
}

impl GoogleDecoder {
    pub fn new(_model: &Model) -> Self {
        GoogleDecoder {
            current: None,
            next_index: 0,
            call_ids: Vec::new(),
            counter: 0,
            started_ms: crate::client::now_ms(),
        }
    }

    fn close(&mut self, out: &mut DecodeOut) {
        if let Some(c) = self.current.take() {
            out.events.push(if c.thinking {
                AssistantEvent::ThinkingEnd {
                    index: c.index,
                    signature: c.signature,
                    redacted: false,
                }
            } else {
                AssistantEvent::TextEnd {
                    index: c.index,
                    signature: c.signature,
                }
            });
        }
    }

    fn text_part(
        &mut self,
        text: Cow<'_, str>,
        thinking: bool,
        sig: Option<Cow<'_, str>>,
        out: &mut DecodeOut,
    ) {
        if self.current.as_ref().is_none_or(|c| c.thinking != thinking) {
            self.close(out);
            let index = self.next_index;
            self.next_index += 1;
            out.events.push(if thinking {
                AssistantEvent::ThinkingStart { index }
            } else {
                AssistantEvent::TextStart { index }
            });
            self.current = Some(Current {
                index,
                thinking,
                signature: None,
            });
        }
        if let Some(c) = self.current.as_mut() {
            if let Some(sig) = sig.filter(|s| !s.is_empty()) {
                c.signature = Some(sig.into_owned());
            }
            if !text.is_empty() {
                let index = c.index;
                out.events.push(if thinking {
                    AssistantEvent::ThinkingDelta {
                        index,
                        delta: text.into_owned(),
                    }
                } else {
                    AssistantEvent::TextDelta {
                        index,
                        delta: text.into_owned(),
                    }
                });
            }
        }
    }

    fn call_part(&mut self, call: FunctionCall, sig: Option<Cow<'_, str>>, out: &mut DecodeOut) {
        self.close(out);
        let index = self.next_index;
        self.next_index += 1;
        let id = match call
            .id
            .filter(|id| !id.is_empty() && !self.call_ids.contains(id))
        {
            Some(id) => id,
            None => {
                self.counter += 1;
                format!("{}_{}_{}", call.name, self.started_ms, self.counter)
            }
        };
        self.call_ids.push(id.clone());
        let args = call.args.unwrap_or_else(|| json!({}));
        out.events.push(AssistantEvent::ToolCallStart {
            index,
            id: id.clone(),
            name: call.name.clone(),
        });
        out.events.push(AssistantEvent::ToolCallDelta {
            index,
            delta: args.to_string(),
        });
        out.events.push(AssistantEvent::ToolCallEnd {
            index,
            tool_call: ToolCall {
                id,
                name: call.name,
                arguments: args,
                thought_signature: sig.filter(|s| !s.is_empty()).map(Cow::into_owned),
            },
        });
    }
}

/// Map Gemini's `finishReason`.
fn map_finish_reason(reason: &str) -> StopReason {
    match reason {
        "STOP" => StopReason::Stop,
        "MAX_TOKENS" => StopReason::Length,
        _ => StopReason::Error,
    }
}

fn error_text(error: &Value) -> String {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_string);
    match error.get("code").and_then(Value::as_u64) {
        Some(code) => format!("{code} {message}"),
        None => message,
    }
}

impl Decoder for GoogleDecoder {
    fn frame(&mut self, frame: &SseFrame, out: &mut DecodeOut) -> Result<(), AiError> {
        let data = frame.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk<'_> = parse_frame(data)?;
        if let Some(error) = &chunk.error {
            return Err(AiError::Provider(error_text(error)));
        }
        if out.response_id.is_none() {
            out.response_id = chunk
                .response_id
                .filter(|id| !id.is_empty())
                .map(Cow::into_owned);
        }
        if let Some(candidate) = chunk.candidates.into_first() {
            for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
                if let Some(call) = part.function_call {
                    self.call_part(*call, part.thought_signature, out);
                } else if let Some(text) = part.text {
                    let thinking = part.thought == Some(true);
                    self.text_part(text, thinking, part.thought_signature, out);
                }
            }
            if let Some(reason) = candidate.finish_reason.as_deref() {
                let stop = map_finish_reason(reason);
                out.stop = Some(if self.call_ids.is_empty() {
                    stop
                } else {
                    StopReason::ToolUse
                });
            }
        }
        if let Some(u) = &chunk.usage_metadata {
            // Gemini counts cached tokens inside the prompt; pi's code reports them apart.
            out.usage.input = u
                .prompt_token_count
                .saturating_sub(u.cached_content_token_count);
            out.usage.output = u.candidates_token_count + u.thoughts_token_count;
            out.usage.cache_read = u.cached_content_token_count;
            out.usage.cache_write = 0;
            out.usage.total_tokens = u.total_token_count;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut DecodeOut) -> Result<(), AiError> {
        self.close(out);
        Ok(())
    }
}
