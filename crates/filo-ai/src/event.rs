//! The stream contract (pi spec §1.5) in delta-only form, and the one accumulator that turns events
//! into the final message.
//!
//! A stream yields [`AssistantEvent::Start`] first, then block events, then exactly one terminal
//! [`AssistantEvent::Done`] or [`AssistantEvent::Error`]. A call that fails before the provider
//! answers with a stream (an HTTP refusal, no connection, a missing key) yields the
//! [`AssistantEvent::Error`] alone, as pi's providers do (they push `start` once the response is
//! there). Events carry deltas only; whoever needs
//! the live partial message applies the events to an [`Accumulator`] (pi's `partial`), so no event
//! copies the whole message.

use std::pin::Pin;

use futures::Stream;
use serde_json::Value;

use crate::message::{AssistantMessage, ContentBlock, StopReason, ThinkingContent, ToolCall};

/// One event of an assistant stream.
#[derive(Debug, Clone, PartialEq)]
pub enum AssistantEvent {
    /// The stream began; `message` is the empty initial message (api, provider, model, timestamp).
    Start {
        message: AssistantMessage,
    },
    TextStart {
        index: usize,
    },
    TextDelta {
        index: usize,
        delta: String,
    },
    /// The text block is complete; `signature` is set when the provider sent one.
    TextEnd {
        index: usize,
        signature: Option<String>,
    },
    ThinkingStart {
        index: usize,
    },
    ThinkingDelta {
        index: usize,
        delta: String,
    },
    ThinkingEnd {
        index: usize,
        signature: Option<String>,
        redacted: bool,
    },
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// A fragment of the tool call's JSON arguments.
    ToolCallDelta {
        index: usize,
        delta: String,
    },
    /// The tool call is complete, arguments parsed.
    ToolCallEnd {
        index: usize,
        tool_call: ToolCall,
    },
    /// Terminal: the stream ended normally (`stop`, `length`, `toolUse`).
    Done {
        message: AssistantMessage,
    },
    /// Terminal: `stopReason` is `error` or `aborted`, `errorMessage` set; partial content kept.
    Error {
        message: AssistantMessage,
    },
}

impl AssistantEvent {
    /// pi's event `type` string.
    pub fn kind(&self) -> &'static str {
        match self {
            AssistantEvent::Start { .. } => "start",
            AssistantEvent::TextStart { .. } => "text_start",
            AssistantEvent::TextDelta { .. } => "text_delta",
            AssistantEvent::TextEnd { .. } => "text_end",
            AssistantEvent::ThinkingStart { .. } => "thinking_start",
            AssistantEvent::ThinkingDelta { .. } => "thinking_delta",
            AssistantEvent::ThinkingEnd { .. } => "thinking_end",
            AssistantEvent::ToolCallStart { .. } => "toolcall_start",
            AssistantEvent::ToolCallDelta { .. } => "toolcall_delta",
            AssistantEvent::ToolCallEnd { .. } => "toolcall_end",
            AssistantEvent::Done { .. } => "done",
            AssistantEvent::Error { .. } => "error",
        }
    }

    /// Whether this event ends the stream.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            AssistantEvent::Done { .. } | AssistantEvent::Error { .. }
        )
    }
}

/// A boxed stream of assistant events.
pub type AssistantStream = Pin<Box<dyn Stream<Item = AssistantEvent> + Send>>;

/// Builds the assistant message from events. Tool-call argument text is kept per block until the
/// call ends; the partial message shows the best parse so far.
#[derive(Debug, Clone)]
pub struct Accumulator {
    message: AssistantMessage,
    /// Per open tool call: content index, argument text so far, its length at the last parse.
    partial_args: Vec<(usize, String, usize)>,
    /// Content indices of ended tool calls whose streamed argument text was not complete JSON.
    incomplete_args: Vec<usize>,
}

/// Arguments up to this size are re-parsed on every delta; longer ones only after growing by an
/// eighth, which keeps the total parsing work linear in the argument size (a large `write` call
/// would otherwise cost O(n²)).
const ALWAYS_REPARSE_BELOW: usize = 4096;

impl Accumulator {
    /// Start from the initial message of a `Start` event.
    pub fn new(initial: AssistantMessage) -> Self {
        Accumulator {
            message: initial,
            partial_args: Vec::new(),
            incomplete_args: Vec::new(),
        }
    }

    /// Content indices of the tool calls whose streamed argument text did not parse as a
    /// complete JSON value when the call ended (its `arguments` are then a best-effort repair).
    /// With `stopReason: length` these are calls the output limit cut off mid-arguments.
    pub fn incomplete_tool_calls(&self) -> &[usize] {
        &self.incomplete_args
    }

    /// The message as it stands.
    pub fn partial(&self) -> &AssistantMessage {
        &self.message
    }

    /// Mutable access for codecs that set usage, stop reason or error text.
    pub fn message_mut(&mut self) -> &mut AssistantMessage {
        &mut self.message
    }

    /// Take the message out.
    pub fn into_message(self) -> AssistantMessage {
        self.message
    }

    fn block_mut(&mut self, index: usize) -> Option<&mut ContentBlock> {
        self.message.content.get_mut(index)
    }

    fn place(&mut self, index: usize, block: ContentBlock) {
        if index < self.message.content.len() {
            self.message.content[index] = block;
        } else {
            while self.message.content.len() < index {
                self.message.content.push(ContentBlock::text(""));
            }
            self.message.content.push(block);
        }
    }

    /// Apply one event. Terminal events replace the message with the final one.
    pub fn apply(&mut self, event: &AssistantEvent) {
        match event {
            AssistantEvent::Start { message } => self.message = message.clone(),
            AssistantEvent::TextStart { index } => self.place(*index, ContentBlock::text("")),
            AssistantEvent::TextDelta { index, delta } => {
                if let Some(ContentBlock::Text(t)) = self.block_mut(*index) {
                    t.text.push_str(delta);
                }
            }
            AssistantEvent::TextEnd { index, signature } => {
                if let Some(ContentBlock::Text(t)) = self.block_mut(*index)
                    && signature.is_some()
                {
                    t.text_signature.clone_from(signature);
                }
            }
            AssistantEvent::ThinkingStart { index } => self.place(
                *index,
                ContentBlock::Thinking(ThinkingContent {
                    thinking: String::new(),
                    thinking_signature: None,
                    redacted: None,
                }),
            ),
            AssistantEvent::ThinkingDelta { index, delta } => {
                if let Some(ContentBlock::Thinking(t)) = self.block_mut(*index) {
                    t.thinking.push_str(delta);
                }
            }
            AssistantEvent::ThinkingEnd {
                index,
                signature,
                redacted,
            } => {
                if let Some(ContentBlock::Thinking(t)) = self.block_mut(*index) {
                    if signature.is_some() {
                        t.thinking_signature.clone_from(signature);
                    }
                    if *redacted {
                        t.redacted = Some(true);
                    }
                }
            }
            AssistantEvent::ToolCallStart { index, id, name } => {
                self.place(
                    *index,
                    ContentBlock::ToolCall(ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: Value::Object(Default::default()),
                        thought_signature: None,
                    }),
                );
                self.partial_args.push((*index, String::new(), 0));
            }
            AssistantEvent::ToolCallDelta { index, delta } => {
                let Some(pos) = self.partial_args.iter().position(|(i, _, _)| i == index) else {
                    return;
                };
                let (_, text, parsed_len) = &mut self.partial_args[pos];
                text.push_str(delta);
                let len = text.len();
                if len > ALWAYS_REPARSE_BELOW && len - *parsed_len < len / 8 {
                    return;
                }
                *parsed_len = len;
                let parsed = crate::partial_json::parse_partial(text);
                if let (Some(v), Some(ContentBlock::ToolCall(tc))) =
                    (parsed, self.block_mut(*index))
                {
                    tc.arguments = v;
                }
            }
            AssistantEvent::ToolCallEnd { index, tool_call } => {
                if let Some(pos) = self.partial_args.iter().position(|(i, _, _)| i == index) {
                    let (_, text, _) = self.partial_args.swap_remove(pos);
                    let complete = text.trim().is_empty()
                        || serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok();
                    if !complete {
                        self.incomplete_args.push(*index);
                    }
                }
                self.place(*index, ContentBlock::ToolCall(tool_call.clone()));
            }
            AssistantEvent::Done { message } | AssistantEvent::Error { message } => {
                self.message = message.clone();
            }
        }
    }

    /// Finish with a stop reason (for codecs): returns the final message.
    pub fn finish(mut self, stop_reason: StopReason, error: Option<String>) -> AssistantMessage {
        self.message.stop_reason = stop_reason;
        self.message.error_message = error;
        self.message
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Usage;
    use serde_json::json;

    fn initial() -> AssistantMessage {
        AssistantMessage {
            content: vec![],
            api: "a".into(),
            provider: "p".into(),
            model: "m".into(),
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            timestamp: 0,
            error_message: None,
            error_status: None,
            response_id: None,
        }
    }

    fn call(index: usize, id: &str, args_text: &[&str]) -> Vec<AssistantEvent> {
        let mut events = vec![AssistantEvent::ToolCallStart {
            index,
            id: id.into(),
            name: "bash".into(),
        }];
        events.extend(args_text.iter().map(|d| AssistantEvent::ToolCallDelta {
            index,
            delta: (*d).into(),
        }));
        events.push(AssistantEvent::ToolCallEnd {
            index,
            tool_call: ToolCall {
                id: id.into(),
                name: "bash".into(),
                arguments: crate::codec::parse_arguments(&args_text.concat()),
                thought_signature: None,
            },
        });
        events
    }

    #[test]
    fn tool_calls_whose_argument_text_did_not_complete_are_reported() {
        let mut acc = Accumulator::new(initial());
        let events = [
            call(0, "a", &[r#"{"command":"#, r#""ls"}"#]),
            call(1, "b", &[r#"{"command":"rm -rf /tmp/x"#]),
            call(2, "c", &[]),
            call(3, "d", &["  "]),
        ];
        for e in events.iter().flatten() {
            acc.apply(e);
        }
        assert_eq!(acc.incomplete_tool_calls(), &[1]);
    }

    #[test]
    fn builds_blocks_from_deltas() {
        let mut acc = Accumulator::new(initial());
        let events = [
            AssistantEvent::ThinkingStart { index: 0 },
            AssistantEvent::ThinkingDelta {
                index: 0,
                delta: "hm".into(),
            },
            AssistantEvent::ThinkingEnd {
                index: 0,
                signature: Some("s".into()),
                redacted: false,
            },
            AssistantEvent::TextStart { index: 1 },
            AssistantEvent::TextDelta {
                index: 1,
                delta: "a".into(),
            },
            AssistantEvent::TextDelta {
                index: 1,
                delta: "b".into(),
            },
            AssistantEvent::ToolCallStart {
                index: 2,
                id: "c".into(),
                name: "ls".into(),
            },
            AssistantEvent::ToolCallDelta {
                index: 2,
                delta: "{\"p\":\"x".into(),
            },
        ];
        for e in &events {
            acc.apply(e);
        }
        let m = acc.partial();
        assert_eq!(m.content[1], ContentBlock::text("ab"));
        let ContentBlock::Thinking(t) = &m.content[0] else {
            panic!()
        };
        assert_eq!(t.thinking_signature.as_deref(), Some("s"));
        let ContentBlock::ToolCall(tc) = &m.content[2] else {
            panic!()
        };
        assert_eq!(tc.arguments, json!({"p": "x"}));
    }

    #[test]
    fn long_arguments_reparse_geometrically() {
        let mut acc = Accumulator::new(initial());
        acc.apply(&AssistantEvent::ToolCallStart {
            index: 0,
            id: "c".into(),
            name: "write".into(),
        });
        acc.apply(&AssistantEvent::ToolCallDelta {
            index: 0,
            delta: "{\"content\":\"".into(),
        });
        let mut reparses = 0;
        let mut last = Value::Null;
        for _ in 0..20_000 {
            acc.apply(&AssistantEvent::ToolCallDelta {
                index: 0,
                delta: "abcdefg".into(),
            });
            let ContentBlock::ToolCall(tc) = &acc.partial().content[0] else {
                panic!()
            };
            if tc.arguments != last {
                reparses += 1;
                last = tc.arguments.clone();
            }
        }
        // Every delta below 4 KiB, then only every eighth of growth: far fewer than 20,000.
        assert!(reparses < 700, "{reparses}");
        let ContentBlock::ToolCall(tc) = &acc.partial().content[0] else {
            panic!()
        };
        let shown = tc.arguments["content"].as_str().unwrap().len();
        assert!(
            shown * 8 >= 140_000 * 7 - 8 * 20,
            "partial view lags by at most an eighth: {shown}"
        );
    }
}
