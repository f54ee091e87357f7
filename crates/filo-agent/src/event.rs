//! The agent's event sequence (pi spec §2.2) and its JSON form.
//!
//! Events are emitted in pi's order; [`AgentEvent`]'s `Serialize` impl writes pi 1.6's wire JSON
//! (`type` tags and field names exact, absent fields omitted), which the JSON and RPC modes print
//! as is. On the wire `message_update` is delta-only (pi's `toJsonEvent`): the provider's delta
//! and the message's latest usage, never the message so far, so a stream's size stays linear.
//!
//! `message_update` does not copy the streaming message: it carries a [`PartialMessage`], a shared
//! copy-on-write snapshot of the loop's one [`Accumulator`]. While nobody keeps a snapshot past the
//! event, the loop applies the next delta in place; a subscriber that keeps one gets a frozen view
//! and only then does the next delta copy the message.

use std::sync::Arc;

use filo_ai::{Accumulator, AssistantEvent, AssistantMessage, ContentBlock, ToolResultMessage};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::message::AgentMessage;
use crate::tool::ToolOutput;

/// A shared, copy-on-write view of the assistant message being streamed.
#[derive(Debug, Clone)]
pub struct PartialMessage(Arc<Accumulator>);

impl PartialMessage {
    /// Start from the initial message of a `Start` event.
    pub fn new(initial: AssistantMessage) -> Self {
        PartialMessage(Arc::new(Accumulator::new(initial)))
    }

    /// The message as of this snapshot.
    pub fn message(&self) -> &AssistantMessage {
        self.0.partial()
    }

    /// Apply one stream event; copies the message only if a snapshot is still held elsewhere.
    pub fn apply(&mut self, event: &AssistantEvent) {
        Arc::make_mut(&mut self.0).apply(event);
    }

    /// Content indices of tool calls whose argument text did not end as complete JSON (see
    /// [`Accumulator::incomplete_tool_calls`]).
    pub fn incomplete_tool_calls(&self) -> &[usize] {
        self.0.incomplete_tool_calls()
    }

    /// A weak handle that sees this snapshot until the next delta moves or copies it.
    pub(crate) fn downgrade(&self) -> std::sync::Weak<Accumulator> {
        Arc::downgrade(&self.0)
    }

    /// This snapshot is the one `weak` was made from.
    pub(crate) fn is(&self, weak: &std::sync::Weak<Accumulator>) -> bool {
        std::ptr::eq(Arc::as_ptr(&self.0), weak.as_ptr())
    }
}

/// One event of an agent run.
#[derive(Debug, Clone)]
pub enum AgentEvent {
    AgentStart,
    /// Every message this run produced (prompts, assistant messages, tool results, injected ones).
    /// `will_retry`: the session retries this run's failure automatically (the agent itself
    /// always says `false`; the session sets it before its listeners see the event).
    AgentEnd {
        messages: Vec<AgentMessage>,
        will_retry: bool,
    },
    TurnStart,
    TurnEnd {
        message: AgentMessage,
        tool_results: Vec<ToolResultMessage>,
    },
    MessageStart {
        message: AgentMessage,
    },
    /// The assistant message grew; `event` is the provider's delta, `partial` the message after it.
    MessageUpdate {
        partial: PartialMessage,
        event: AssistantEvent,
    },
    MessageEnd {
        message: AgentMessage,
    },
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Value,
    },
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        partial_result: ToolOutput,
    },
    /// `duration_ms`: how long the tool's `execute` took (monotonic), `None` when it did not run.
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: ToolOutput,
        is_error: bool,
        duration_ms: Option<u64>,
    },
}

impl AgentEvent {
    /// pi's `type` string.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart => "agent_start",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::TurnStart => "turn_start",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
        }
    }
}

/// pi's `AgentToolResult` JSON: `{content, details?}`.
struct ToolResultJson<'a>(&'a ToolOutput);

impl Serialize for ToolResultJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("content", &self.0.content)?;
        if let Some(details) = &self.0.details {
            map.serialize_entry("details", details)?;
        }
        map.end()
    }
}

/// pi 1.6's wire `AssistantMessageEvent` (json.md, "Reconstruct streaming messages"): the
/// delta without the `partial` snapshot; `toolcall_start` names the call (`id`, `toolName`) and
/// the text and thinking ends carry their authoritative content, read from the message so far.
struct AssistantEventJson<'a> {
    event: &'a AssistantEvent,
    partial: &'a AssistantMessage,
}

fn block_text(partial: &AssistantMessage, index: usize) -> &str {
    match partial.content.get(index) {
        Some(ContentBlock::Text(t)) => &t.text,
        Some(ContentBlock::Thinking(t)) => &t.thinking,
        Some(ContentBlock::Image(_) | ContentBlock::ToolCall(_)) | None => "",
    }
}

impl Serialize for AssistantEventJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.event.kind())?;
        match self.event {
            AssistantEvent::Start { .. } => {}
            AssistantEvent::TextStart { index } | AssistantEvent::ThinkingStart { index } => {
                map.serialize_entry("contentIndex", index)?;
            }
            AssistantEvent::ToolCallStart { index, id, name } => {
                map.serialize_entry("contentIndex", index)?;
                map.serialize_entry("id", id)?;
                map.serialize_entry("toolName", name)?;
            }
            AssistantEvent::TextDelta { index, delta }
            | AssistantEvent::ThinkingDelta { index, delta }
            | AssistantEvent::ToolCallDelta { index, delta } => {
                map.serialize_entry("contentIndex", index)?;
                map.serialize_entry("delta", delta)?;
            }
            AssistantEvent::TextEnd { index, .. } | AssistantEvent::ThinkingEnd { index, .. } => {
                map.serialize_entry("contentIndex", index)?;
                map.serialize_entry("content", block_text(self.partial, *index))?;
            }
            AssistantEvent::ToolCallEnd { index, tool_call } => {
                map.serialize_entry("contentIndex", index)?;
                map.serialize_entry("toolCall", &ToolCallJson(tool_call))?;
            }
            AssistantEvent::Done { message } => {
                map.serialize_entry("reason", &message.stop_reason)?;
                map.serialize_entry("message", &AssistantJson(message))?;
            }
            AssistantEvent::Error { message } => {
                map.serialize_entry("reason", &message.stop_reason)?;
                map.serialize_entry("error", &AssistantJson(message))?;
            }
        }
        map.end()
    }
}

/// A tool call written as the content block it is (`type: "toolCall"` first), as pi's
/// `toolcall_end` carries it.
struct ToolCallJson<'a>(&'a filo_ai::ToolCall);

impl Serialize for ToolCallJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tagged<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            #[serde(flatten)]
            call: &'a filo_ai::ToolCall,
        }
        Tagged {
            kind: "toolCall",
            call: self.0,
        }
        .serialize(serializer)
    }
}

/// An assistant message written with its `role` tag, as pi's message objects are.
struct AssistantJson<'a>(&'a AssistantMessage);

impl Serialize for AssistantJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Serialize through a borrowed view to keep pi's key order: role first.
        #[derive(Serialize)]
        struct Tagged<'a> {
            role: &'static str,
            #[serde(flatten)]
            message: &'a AssistantMessage,
        }
        Tagged {
            role: "assistant",
            message: self.0,
        }
        .serialize(serializer)
    }
}

impl Serialize for AgentEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.kind())?;
        match self {
            AgentEvent::AgentStart | AgentEvent::TurnStart => {}
            AgentEvent::AgentEnd {
                messages,
                will_retry,
            } => {
                map.serialize_entry("messages", messages)?;
                map.serialize_entry("willRetry", will_retry)?;
            }
            AgentEvent::TurnEnd {
                message,
                tool_results,
            } => {
                map.serialize_entry("message", message)?;
                let tagged: Vec<AgentMessage> = tool_results
                    .iter()
                    .map(|r| AgentMessage::from(r.clone()))
                    .collect();
                map.serialize_entry("toolResults", &tagged)?;
            }
            AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                map.serialize_entry("message", message)?;
            }
            AgentEvent::MessageUpdate { partial, event } => {
                let partial = partial.message();
                map.serialize_entry("usage", &partial.usage)?;
                map.serialize_entry(
                    "assistantMessageEvent",
                    &AssistantEventJson { event, partial },
                )?;
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                map.serialize_entry("toolCallId", tool_call_id)?;
                map.serialize_entry("toolName", tool_name)?;
                map.serialize_entry("args", args)?;
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args,
                partial_result,
            } => {
                map.serialize_entry("toolCallId", tool_call_id)?;
                map.serialize_entry("toolName", tool_name)?;
                map.serialize_entry("args", args)?;
                map.serialize_entry("partialResult", &ToolResultJson(partial_result))?;
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                duration_ms,
            } => {
                map.serialize_entry("toolCallId", tool_call_id)?;
                map.serialize_entry("toolName", tool_name)?;
                map.serialize_entry("result", &ToolResultJson(result))?;
                map.serialize_entry("isError", is_error)?;
                if let Some(ms) = duration_ms {
                    map.serialize_entry("durationMs", ms)?;
                }
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use filo_ai::{StopReason, Usage};

    fn initial() -> AssistantMessage {
        AssistantMessage {
            content: vec![],
            api: "test-api".into(),
            provider: "test".into(),
            model: "m".into(),
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            timestamp: 1,
            error_message: None,
            error_status: None,
            response_id: None,
        }
    }

    #[test]
    fn partial_is_copied_only_when_a_snapshot_is_held() {
        let mut p = PartialMessage::new(initial());
        p.apply(&AssistantEvent::TextStart { index: 0 });
        let before = Arc::as_ptr(&p.0);
        p.apply(&AssistantEvent::TextDelta {
            index: 0,
            delta: "a".into(),
        });
        assert_eq!(Arc::as_ptr(&p.0), before, "no copy without a held snapshot");
        let held = p.clone();
        p.apply(&AssistantEvent::TextDelta {
            index: 0,
            delta: "b".into(),
        });
        assert_eq!(held.message().text(), "a");
        assert_eq!(p.message().text(), "ab");
    }

    #[test]
    fn message_update_json_is_pi_16s_delta_with_usage() {
        let mut p = PartialMessage::new(initial());
        p.apply(&AssistantEvent::TextStart { index: 0 });
        let event = AssistantEvent::TextDelta {
            index: 0,
            delta: "hi".into(),
        };
        p.apply(&event);
        let json = serde_json::to_string(&AgentEvent::MessageUpdate { partial: p, event }).unwrap();
        let usage = r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
        assert_eq!(
            json,
            format!(
                r#"{{"type":"message_update","usage":{usage},"assistantMessageEvent":{{"type":"text_delta","contentIndex":0,"delta":"hi"}}}}"#
            )
        );
    }

    #[test]
    fn toolcall_start_names_the_call() {
        let mut p = PartialMessage::new(initial());
        let start = AssistantEvent::ToolCallStart {
            index: 0,
            id: "call_1".into(),
            name: "bash".into(),
        };
        p.apply(&start);
        let json = serde_json::to_value(AgentEvent::MessageUpdate {
            partial: p,
            event: start,
        })
        .unwrap();
        assert_eq!(
            json["assistantMessageEvent"],
            serde_json::json!({"type": "toolcall_start", "contentIndex": 0, "id": "call_1", "toolName": "bash"})
        );
    }

    #[test]
    fn block_end_events_carry_pis_fields() {
        let mut p = PartialMessage::new(initial());
        for e in [
            AssistantEvent::ThinkingStart { index: 0 },
            AssistantEvent::ThinkingDelta {
                index: 0,
                delta: "hmm".into(),
            },
        ] {
            p.apply(&e);
        }
        let end = AssistantEvent::ThinkingEnd {
            index: 0,
            signature: Some("sig".into()),
            redacted: false,
        };
        p.apply(&end);
        let json = serde_json::to_value(AgentEvent::MessageUpdate {
            partial: p.clone(),
            event: end,
        })
        .unwrap();
        let ev = &json["assistantMessageEvent"];
        assert_eq!(ev["type"], "thinking_end");
        assert_eq!(ev["contentIndex"], 0);
        assert_eq!(ev["content"], "hmm");
        assert!(ev.get("partial").is_none());
        assert!(json.get("message").is_none());
        let mut done = initial();
        done.stop_reason = StopReason::Aborted;
        done.error_message = Some("Request was aborted".into());
        let json = serde_json::to_value(AgentEvent::MessageUpdate {
            partial: p,
            event: AssistantEvent::Error { message: done },
        })
        .unwrap();
        let ev = &json["assistantMessageEvent"];
        assert_eq!(ev["reason"], "aborted");
        assert_eq!(ev["error"]["errorMessage"], "Request was aborted");
        assert_eq!(ev["error"]["role"], "assistant");
        assert!(ev.get("partial").is_none());
    }

    #[test]
    fn tool_end_json_omits_absent_details() {
        let e = AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "ls".into(),
            result: ToolOutput::text("x"),
            is_error: false,
            duration_ms: None,
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"tool_execution_end","toolCallId":"c1","toolName":"ls","result":{"content":[{"type":"text","text":"x"}]},"isError":false}"#
        );
        let timed = AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "ls".into(),
            result: ToolOutput::text("x"),
            is_error: false,
            duration_ms: Some(7),
        };
        assert!(
            serde_json::to_string(&timed)
                .unwrap()
                .ends_with(r#""isError":false,"durationMs":7}"#)
        );
    }
}
