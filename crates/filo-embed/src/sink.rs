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

/// The visible reply so far (cumulative text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialReply {
    pub text: String,
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

/// What the dispatcher delivers: one sink call.
#[derive(Debug, Clone)]
pub(crate) enum SinkCall {
    MessageStart,
    Partial(String),
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
                state.last_partial.clone_from(&shown);
                Some(SinkCall::Partial(shown))
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
            MachineEvent::Agent { stream, data } => {
                Some(SinkCall::Agent(AgentStreamEvent { stream, data }))
            }
        }
    }
}

/// Delivers one call to `sink`.
pub(crate) async fn deliver(sink: &dyn ReplySink, call: SinkCall) {
    match call {
        SinkCall::MessageStart => sink.assistant_message_start(),
        SinkCall::Partial(text) => sink.partial_reply(&PartialReply { text }),
        SinkCall::Block(b) => sink.block_reply(b).await,
        SinkCall::Flush => sink.block_reply_flush().await,
        SinkCall::Reasoning(text) => sink.reasoning_stream(&PartialReply { text }),
        SinkCall::ReasoningEnd => sink.reasoning_end(),
        SinkCall::ToolResult(p) => sink.tool_result(p).await,
        SinkCall::Agent(e) => sink.agent_event(&e),
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
