//! The reply callbacks of a run (C19, design §4.3): [`ReplySink`] (OpenClaw's `onPartialReply`,
//! `onBlockReply`, `onToolResult`, `onReasoningStream`, `onAgentEvent` …), its channel form
//! [`ReplyEvent`], and [`SinkAdapter`], which turns the subscriber's reply events into sink calls:
//! reply directives (`[[reply_to_current]]`, `MEDIA:` lines, `NO_REPLY`) are resolved per block,
//! and partial texts never show a directive tag.

use std::sync::Mutex;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::RunError;
use crate::run::params::RunResult;
use crate::run::payloads::ReplyPayload;
use crate::stream::directives::{DirectiveAccumulator, strip_inline_directive_tags_for_display};
use crate::subscriber::machine::ReplyEvent as MachineEvent;

/// The visible reply so far (cumulative text), and what this partial added to the one before
/// it in the same assistant message (a partial only ever extends the last one; a new assistant
/// message starts from nothing, after [`ReplySink::assistant_message_start`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialReply {
    pub text: String,
    pub delta: String,
}

/// One block of the reply, ready for a channel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockReply {
    pub text: Option<String>,
    pub media_urls: Vec<String>,
    pub audio_as_voice: bool,
    pub reply_to_id: Option<String>,
    pub reply_to_tag: bool,
    pub reply_to_current: bool,
}

/// A lifecycle, assistant, tool or compaction event (`onAgentEvent`).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentStreamEvent {
    /// `lifecycle`, `assistant`, `tool` or `compaction`.
    pub stream: &'static str,
    pub data: Value,
}

/// Callbacks of a run. Every method has a default that ignores the call; the async ones are
/// awaited in order (a block is delivered before the next one, and before a tool runs).
pub trait ReplySink: Send + Sync {
    fn assistant_message_start(&self) {}
    fn partial_reply(&self, _p: &PartialReply) {}
    fn block_reply(&self, _b: BlockReply) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn block_reply_flush(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn reasoning_stream(&self, _p: &PartialReply) {}
    fn reasoning_end(&self) {}
    fn tool_result(&self, _p: ReplyPayload) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn agent_event(&self, _e: &AgentStreamEvent) {}
}

/// A sink that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NullSink;

impl ReplySink for NullSink {}

/// The channel form of the callbacks ([`crate::Embedder::run_streaming`]).
#[derive(Debug)]
pub enum ReplyEvent {
    AssistantMessageStart,
    Partial(PartialReply),
    Block(BlockReply),
    BlockFlush,
    Reasoning(PartialReply),
    ReasoningEnd,
    ToolResult(ReplyPayload),
    Agent(AgentStreamEvent),
    Done(Box<Result<RunResult, RunError>>),
}

/// A sink that forwards every callback to a channel.
#[derive(Debug, Clone)]
pub struct ChannelSink(pub mpsc::UnboundedSender<ReplyEvent>);

impl ChannelSink {
    fn send(&self, e: ReplyEvent) {
        // A receiver that went away no longer wants events; the run goes on and is saved.
        let _gone = self.0.send(e);
    }
}

impl ReplySink for ChannelSink {
    fn assistant_message_start(&self) {
        self.send(ReplyEvent::AssistantMessageStart);
    }
    fn partial_reply(&self, p: &PartialReply) {
        self.send(ReplyEvent::Partial(p.clone()));
    }
    fn block_reply(&self, b: BlockReply) -> BoxFuture<'_, ()> {
        self.send(ReplyEvent::Block(b));
        Box::pin(async {})
    }
    fn block_reply_flush(&self) -> BoxFuture<'_, ()> {
        self.send(ReplyEvent::BlockFlush);
        Box::pin(async {})
    }
    fn reasoning_stream(&self, p: &PartialReply) {
        self.send(ReplyEvent::Reasoning(p.clone()));
    }
    fn reasoning_end(&self) {
        self.send(ReplyEvent::ReasoningEnd);
    }
    fn tool_result(&self, p: ReplyPayload) -> BoxFuture<'_, ()> {
        self.send(ReplyEvent::ToolResult(p));
        Box::pin(async {})
    }
    fn agent_event(&self, e: &AgentStreamEvent) {
        self.send(ReplyEvent::Agent(e.clone()));
    }
}

/// What the dispatcher delivers: one sink call. Partial texts travel as what they add (the
/// queue never holds a copy of the whole reply per event: a long reply behind a slow sink would
/// cost the square of its size); the deliverer keeps the one cumulative text.
#[derive(Debug, Clone)]
pub(crate) enum SinkCall {
    MessageStart,
    /// What the visible partial text added.
    Partial(String),
    /// An `assistant` agent event: what its `text` added (`reset`: `added` is the whole text),
    /// and its `delta`.
    AssistantText {
        added: String,
        delta: String,
        reset: bool,
    },
    Block(BlockReply),
    Flush,
    Reasoning(String),
    ReasoningEnd,
    ToolResult(ReplyPayload),
    Agent(AgentStreamEvent),
}

/// Per-run state between the subscriber and the sink: the directive accumulator of the current
/// message and the last partial shown.
#[derive(Default)]
pub(crate) struct SinkAdapter {
    state: Mutex<AdapterState>,
    current_message_id: Option<String>,
}

#[derive(Default)]
struct AdapterState {
    directives: DirectiveAccumulator,
    last_partial: String,
    /// The `text` of the last `assistant` agent event of the message.
    last_assistant: String,
}

impl SinkAdapter {
    pub(crate) fn new(current_message_id: Option<String>) -> Self {
        Self {
            state: Mutex::default(),
            current_message_id,
        }
    }

    /// The sink calls for one subscriber event (none when it shows nothing).
    pub(crate) fn calls(&self, event: MachineEvent) -> Option<SinkCall> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match event {
            MachineEvent::AssistantMessageStart => {
                state.directives.reset();
                state.last_partial.clear();
                state.last_assistant.clear();
                Some(SinkCall::MessageStart)
            }
            MachineEvent::Partial { text } => {
                let shown = partial_without_directives(&text);
                // Only ever extend what was shown (a tag being typed is held back).
                if shown.is_empty()
                    || shown == state.last_partial
                    || !shown.starts_with(&state.last_partial)
                {
                    return None;
                }
                let added = shown[state.last_partial.len()..].to_owned();
                state.last_partial = shown;
                Some(SinkCall::Partial(added))
            }
            MachineEvent::Block { text } => {
                let parsed =
                    state
                        .directives
                        .consume(&text, true, self.current_message_id.as_deref())?;
                let text = parsed.text.trim().to_owned();
                Some(SinkCall::Block(BlockReply {
                    text: (!text.is_empty()).then_some(text),
                    media_urls: parsed.media_urls,
                    audio_as_voice: parsed.audio_as_voice,
                    reply_to_id: parsed.reply_to_id,
                    reply_to_tag: parsed.reply_to_tag,
                    reply_to_current: parsed.reply_to_current,
                }))
            }
            MachineEvent::BlockFlush => Some(SinkCall::Flush),
            MachineEvent::Reasoning { text } => Some(SinkCall::Reasoning(text)),
            MachineEvent::ReasoningEnd => Some(SinkCall::ReasoningEnd),
            MachineEvent::ToolResult { text } => Some(SinkCall::ToolResult(ReplyPayload {
                text: Some(text),
                ..ReplyPayload::default()
            })),
            MachineEvent::Agent {
                stream: "assistant",
                data,
            } => {
                let text = data.get("text").and_then(Value::as_str).unwrap_or("");
                let delta = data.get("delta").and_then(Value::as_str).unwrap_or("");
                let call = match text.strip_prefix(state.last_assistant.as_str()) {
                    Some(added) => SinkCall::AssistantText {
                        added: added.to_owned(),
                        delta: delta.to_owned(),
                        reset: false,
                    },
                    None => SinkCall::AssistantText {
                        added: text.to_owned(),
                        delta: delta.to_owned(),
                        reset: true,
                    },
                };
                state.last_assistant = text.to_owned();
                Some(call)
            }
            MachineEvent::Agent { stream, data } => {
                Some(SinkCall::Agent(AgentStreamEvent { stream, data }))
            }
        }
    }
}

/// Delivers the calls of one attempt to its sink, in order, rebuilding the cumulative texts the
/// sink is given from what each call added (only the newest is kept).
pub(crate) struct Deliverer {
    sink: std::sync::Arc<dyn ReplySink>,
    texts: Mutex<DeliveredTexts>,
}

#[derive(Default)]
struct DeliveredTexts {
    partial: String,
    assistant: String,
}

impl Deliverer {
    pub(crate) fn new(sink: std::sync::Arc<dyn ReplySink>) -> Self {
        Self {
            sink,
            texts: Mutex::default(),
        }
    }

    fn texts(&self) -> std::sync::MutexGuard<'_, DeliveredTexts> {
        self.texts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Delivers one call.
    pub(crate) async fn deliver(&self, call: SinkCall) {
        let sink = self.sink.as_ref();
        match call {
            SinkCall::MessageStart => {
                *self.texts() = DeliveredTexts::default();
                sink.assistant_message_start();
            }
            SinkCall::Partial(delta) => {
                let text = {
                    let mut t = self.texts();
                    t.partial.push_str(&delta);
                    t.partial.clone()
                };
                sink.partial_reply(&PartialReply { text, delta });
            }
            SinkCall::AssistantText {
                added,
                delta,
                reset,
            } => {
                let data = {
                    let mut t = self.texts();
                    if reset {
                        t.assistant.clear();
                    }
                    t.assistant.push_str(&added);
                    serde_json::json!({"text": t.assistant, "delta": delta})
                };
                sink.agent_event(&AgentStreamEvent {
                    stream: "assistant",
                    data,
                });
            }
            SinkCall::Block(b) => sink.block_reply(b).await,
            SinkCall::Flush => sink.block_reply_flush().await,
            SinkCall::Reasoning(text) => sink.reasoning_stream(&PartialReply {
                text,
                delta: String::new(),
            }),
            SinkCall::ReasoningEnd => sink.reasoning_end(),
            SinkCall::ToolResult(p) => sink.tool_result(p).await,
            SinkCall::Agent(e) => sink.agent_event(&e),
        }
    }
}

/// Partial text with directive tags taken out; an unfinished `[[…` at the end is held back.
fn partial_without_directives(text: &str) -> String {
    let held = match text.rfind("[[") {
        Some(open) if !text[open..].contains("]]") => &text[..open],
        _ => text,
    };
    let (shown, _) = strip_inline_directive_tags_for_display(held);
    shown.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partials_hold_back_an_unfinished_tag_and_drop_finished_ones() {
        assert_eq!(partial_without_directives("Hi [[reply_to"), "Hi");
        assert_eq!(partial_without_directives("[[reply_to_current]] Hi"), "Hi");
        assert_eq!(partial_without_directives("plain"), "plain");
    }

    #[test]
    fn a_block_resolves_its_directives_and_silence() {
        let adapter = SinkAdapter::new(Some("m1".into()));
        let Some(SinkCall::Block(b)) = adapter.calls(MachineEvent::Block {
            text: "[[reply_to_current]] Intro.".into(),
        }) else {
            panic!("no block");
        };
        assert_eq!(b.text.as_deref(), Some("Intro."));
        assert!(b.reply_to_current);
        assert_eq!(b.reply_to_id.as_deref(), Some("m1"));
        assert!(
            adapter
                .calls(MachineEvent::Block {
                    text: "NO_REPLY".into()
                })
                .is_none()
        );
    }
}
