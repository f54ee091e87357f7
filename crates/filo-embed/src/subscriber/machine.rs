//! The subscriber's event state machine (C19, spec §8.1–§8.2, callback table §8.5): agent events
//! in, reply events out, synchronously (it runs inside the session's event listener).
//!
//! Reply events go to a [`super::dispatch::BlockDispatcher`]; a [`ReplyEvent::BlockFlush`] is
//! emitted before every tool start and before compaction waits, after every block produced
//! before it, so the dispatcher's flush barrier delivers them before the tool runs.
//!
//! Text shaping (think/final tag stripping, directives) and block chunking are supplied through
//! [`TextShaper`] and [`Chunker`]: the `stream` modules implement them. [`Verbatim`] shapes
//! nothing (for tag-free models and tests); without a chunker a block is the text of one text
//! block (break `TextEnd`) or of one message (break `MessageEnd`).

use filo_agent::AgentMessage;
use filo_agent::event::AgentEvent;
use filo_ai::{AssistantEvent, ContentBlock, Message};
use serde_json::{Value, json};

use crate::subscriber::tool_events::{
    format_tool_output, is_tool_error, normalize_tool_name, sanitize_tool_output, tool_call_meta,
    tool_output_text,
};
use crate::subscriber::tool_meta::format_tool_aggregate;
use crate::subscriber::tool_state::{FinishedCall, ToolTracker};

/// Below this many bytes of text the partial is worked out on every delta.
pub const SHAPE_EVERY_DELTA_BELOW: usize = 4096;
/// Past it, at least this often while the text grows slowly.
pub const SHAPE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Shapes assistant text for a channel.
pub trait TextShaper: Send {
    /// A new assistant message starts.
    fn reset(&mut self);
    /// The visible partial text of the message's whole text so far (fresh state each call).
    fn visible(&mut self, cumulative: &str) -> String;
    /// The text of one block (state persists across blocks of a message).
    fn block(&mut self, text: &str) -> String;
}

/// Splits streamed text into blocks.
pub trait Chunker: Send {
    fn append(&mut self, text: &str);
    /// Blocks ready to send; `force` empties the buffer.
    fn drain(&mut self, force: bool) -> Vec<String>;
    fn has_buffered(&self) -> bool;
    fn reset(&mut self);
}

/// A shaper that changes nothing but surrounding whitespace of partial text.
#[derive(Debug, Clone, Copy, Default)]
pub struct Verbatim;

impl TextShaper for Verbatim {
    fn reset(&mut self) {}
    fn visible(&mut self, cumulative: &str) -> String {
        cumulative.trim().to_owned()
    }
    fn block(&mut self, text: &str) -> String {
        text.to_owned()
    }
}

/// When reasoning is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReasoningMode {
    #[default]
    Off,
    /// As a block reply at the end of the message.
    On,
    /// Streamed while it is produced.
    Stream,
}

/// When streamed text becomes block replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlockBreak {
    #[default]
    TextEnd,
    MessageEnd,
}

/// Subscriber settings.
#[derive(Debug, Clone, Default)]
pub struct SubscriberConfig {
    pub reasoning: ReasoningMode,
    pub block_reply_break: BlockBreak,
    /// Send a tool summary when a tool starts (verbose on).
    pub tool_summaries: bool,
    /// Send the tool output when it ends (verbose full).
    pub tool_output: bool,
    /// Markdown tool summaries and outputs (else plain).
    pub markdown: bool,
    pub home: Option<std::path::PathBuf>,
}

/// What the subscriber asks the sink to do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyEvent {
    AssistantMessageStart,
    Partial { text: String },
    Block { text: String },
    BlockFlush,
    Reasoning { text: String },
    ReasoningEnd,
    ToolResult { text: String },
    Agent { stream: &'static str, data: Value },
}

/// `"Reasoning:\n"` followed by each non-empty line as `_line_`; empty when there is none.
pub fn format_reasoning(thinking: &str) -> String {
    let lines: Vec<String> = thinking
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| format!("_{l}_"))
        .collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!("Reasoning:\n{}", lines.join("\n"))
    }
}

/// The subscriber of one attempt.
pub struct Subscriber {
    config: SubscriberConfig,
    shaper: Box<dyn TextShaper>,
    chunker: Option<Box<dyn Chunker>>,
    out: Vec<ReplyEvent>,
    // Per message.
    cumulative: String,
    /// The length of `cumulative` when the partial text was last worked out, and when; the
    /// raw deltas since.
    shaped_len: usize,
    shaped_at: Option<std::time::Instant>,
    unshaped: String,
    pending_block: String,
    last_partial: String,
    last_block: Option<String>,
    blocks_in_message: usize,
    texts_at_message_start: usize,
    reasoning_ended: bool,
    saw_delta: bool,
    // Per run.
    pub assistant_texts: Vec<String>,
    pub tools: ToolTracker,
    pub compaction_count: u32,
    pub is_compacting: bool,
    pub pending_retries: u32,
    /// Arguments and meta of started calls, by call id, until they end.
    started: std::collections::HashMap<String, (Value, Option<String>)>,
}

impl Subscriber {
    pub fn new(
        config: SubscriberConfig,
        shaper: Box<dyn TextShaper>,
        chunker: Option<Box<dyn Chunker>>,
    ) -> Self {
        Self {
            config,
            shaper,
            chunker,
            out: Vec::new(),
            cumulative: String::new(),
            shaped_len: 0,
            shaped_at: None,
            unshaped: String::new(),
            pending_block: String::new(),
            last_partial: String::new(),
            last_block: None,
            blocks_in_message: 0,
            texts_at_message_start: 0,
            reasoning_ended: false,
            saw_delta: false,
            assistant_texts: Vec::new(),
            tools: ToolTracker::default(),
            compaction_count: 0,
            is_compacting: false,
            pending_retries: 0,
            started: std::collections::HashMap::new(),
        }
    }

    /// Handles one agent event; returns the reply events it produced, in order.
    pub fn handle(&mut self, event: &AgentEvent) -> Vec<ReplyEvent> {
        match event {
            AgentEvent::AgentStart => self.agent_event("lifecycle", json!({"phase": "start"})),
            AgentEvent::AgentEnd { .. } => {
                self.flush_blocks();
                self.agent_event("lifecycle", json!({"phase": "end"}));
            }
            AgentEvent::MessageStart { message } if message.role() == "assistant" => {
                self.start_message();
            }
            AgentEvent::MessageUpdate { event, partial } => self.update(event, partial.message()),
            AgentEvent::MessageEnd { message } => self.end_message(message),
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => self.tool_start(tool_call_id, tool_name, args),
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                ..
            } => self.agent_event(
                "tool",
                json!({"phase": "update", "name": normalize_tool_name(tool_name), "toolCallId": tool_call_id}),
            ),
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                ..
            } => self.tool_end(tool_call_id, tool_name, result, *is_error),
            AgentEvent::MessageStart { .. } | AgentEvent::TurnStart | AgentEvent::TurnEnd { .. } => {}
        }
        std::mem::take(&mut self.out)
    }

    /// Auto-compaction started: blocks so far are flushed first.
    pub fn compaction_start(&mut self) -> Vec<ReplyEvent> {
        self.flush_blocks();
        self.is_compacting = true;
        self.agent_event("compaction", json!({"phase": "start"}));
        std::mem::take(&mut self.out)
    }

    /// Auto-compaction ended; with `will_retry` the turn runs again, so everything collected for
    /// it is forgotten.
    pub fn compaction_end(&mut self, will_retry: bool) -> Vec<ReplyEvent> {
        self.is_compacting = false;
        self.compaction_count += 1;
        if will_retry {
            self.pending_retries += 1;
            self.assistant_texts.clear();
            self.tools.reset();
        }
        self.agent_event(
            "compaction",
            json!({"phase": "end", "willRetry": will_retry}),
        );
        std::mem::take(&mut self.out)
    }

    fn agent_event(&mut self, stream: &'static str, data: Value) {
        self.out.push(ReplyEvent::Agent { stream, data });
    }

    fn start_message(&mut self) {
        self.cumulative.clear();
        self.shaped_len = 0;
        self.shaped_at = None;
        self.unshaped.clear();
        self.pending_block.clear();
        self.last_partial.clear();
        self.last_block = None;
        self.blocks_in_message = 0;
        self.texts_at_message_start = self.assistant_texts.len();
        self.reasoning_ended = false;
        self.saw_delta = false;
        self.shaper.reset();
        if let Some(c) = &mut self.chunker {
            c.reset();
        }
        self.out.push(ReplyEvent::AssistantMessageStart);
    }

    fn update(&mut self, event: &AssistantEvent, partial: &filo_ai::AssistantMessage) {
        match event {
            AssistantEvent::ThinkingDelta { .. }
                if self.config.reasoning == ReasoningMode::Stream =>
            {
                let thinking = thinking_text(&partial.content);
                let text = format_reasoning(&thinking);
                if !text.is_empty() {
                    self.out.push(ReplyEvent::Reasoning { text });
                }
            }
            AssistantEvent::ThinkingEnd { .. } if !self.reasoning_ended => {
                self.reasoning_ended = true;
                self.out.push(ReplyEvent::ReasoningEnd);
            }
            AssistantEvent::TextDelta { delta, .. } => self.text_delta(delta),
            AssistantEvent::TextEnd { .. } => {
                self.catch_up_partial();
                if self.config.block_reply_break == BlockBreak::TextEnd {
                    self.flush_blocks();
                }
            }
            _ => {}
        }
    }

    /// Whether the partial text is worked out again after a delta. Shaping reads the whole
    /// text, so doing it on every token of a long reply would cost the square of its length:
    /// past [`SHAPE_EVERY_DELTA_BELOW`] bytes it waits until the text grew by a sixteenth or
    /// [`SHAPE_INTERVAL`] went by (the end of the text catches up).
    fn shape_due(&self) -> bool {
        let len = self.cumulative.len();
        len < SHAPE_EVERY_DELTA_BELOW
            || len - self.shaped_len >= self.shaped_len / 16
            || self
                .shaped_at
                .is_none_or(|at| at.elapsed() >= SHAPE_INTERVAL)
    }

    /// Works out the partial text now; emits it (and the `assistant` agent event with the raw
    /// deltas since the last one) when it extends what was shown.
    fn shape_partial(&mut self) {
        self.shaped_len = self.cumulative.len();
        self.shaped_at = Some(std::time::Instant::now());
        let delta = std::mem::take(&mut self.unshaped);
        let visible = self.shaper.visible(&self.cumulative);
        if visible.len() > self.last_partial.len() && visible.starts_with(&self.last_partial) {
            self.last_partial.clone_from(&visible);
            self.out.push(ReplyEvent::Partial {
                text: visible.clone(),
            });
            self.agent_event("assistant", json!({"text": visible, "delta": delta}));
        }
    }

    /// The text's end: a partial that waited is worked out.
    fn catch_up_partial(&mut self) {
        if self.cumulative.len() > self.shaped_len {
            self.shape_partial();
        }
    }

    fn text_delta(&mut self, delta: &str) {
        self.saw_delta = true;
        self.cumulative.push_str(delta);
        self.unshaped.push_str(delta);
        self.pending_block.push_str(delta);
        if let Some(c) = &mut self.chunker {
            c.append(delta);
        }
        if self.shape_due() {
            self.shape_partial();
        }
        if self.config.block_reply_break == BlockBreak::TextEnd
            && let Some(c) = &mut self.chunker
        {
            for block in c.drain(false) {
                self.emit_block(&block);
            }
            self.pending_block.clear();
        }
    }

    /// Emits everything buffered as blocks.
    fn flush_blocks(&mut self) {
        let forced = match &mut self.chunker {
            Some(c) if c.has_buffered() => Some(c.drain(true)),
            _ => None,
        };
        match forced {
            Some(blocks) => {
                for b in blocks {
                    self.emit_block(&b);
                }
            }
            None if !self.pending_block.trim().is_empty() => {
                let text = self.pending_block.clone();
                self.emit_block(&text);
            }
            None => {}
        }
        self.pending_block.clear();
    }

    fn emit_block(&mut self, text: &str) {
        let shaped = self.shaper.block(text);
        let shaped = shaped.trim_end();
        if shaped.trim().is_empty() || self.last_block.as_deref() == Some(shaped) {
            return;
        }
        self.last_block = Some(shaped.to_owned());
        self.blocks_in_message += 1;
        self.assistant_texts.push(shaped.to_owned());
        self.out.push(ReplyEvent::Block {
            text: shaped.to_owned(),
        });
    }

    fn end_message(&mut self, message: &AgentMessage) {
        let AgentMessage::Llm(Message::Assistant(a)) = message else {
            return;
        };
        self.catch_up_partial();
        let has_tool_call = a.tool_calls().next().is_some();
        let reasoning = match self.config.reasoning {
            ReasoningMode::On => format_reasoning(&reasoning_text(a)),
            ReasoningMode::Off | ReasoningMode::Stream => String::new(),
        };
        let reasoning_first =
            self.config.block_reply_break == BlockBreak::MessageEnd && self.blocks_in_message == 0;
        if reasoning_first && !reasoning.is_empty() {
            self.emit_block(&reasoning);
        }
        if has_tool_call {
            // Text before a tool call is narration, not the answer.
            self.flush_blocks();
            self.assistant_texts.truncate(self.texts_at_message_start);
        } else if self.config.block_reply_break == BlockBreak::MessageEnd || !self.saw_delta {
            if self.chunker.as_ref().is_some_and(|c| c.has_buffered()) {
                self.flush_blocks();
            } else {
                self.pending_block.clear();
                let text = a.text();
                self.emit_block(&text);
            }
        } else {
            self.flush_blocks();
        }
        if !reasoning_first && !reasoning.is_empty() {
            self.emit_block(&reasoning);
        }
    }

    fn tool_start(&mut self, tool_call_id: &str, tool_name: &str, args: &Value) {
        self.flush_blocks();
        self.out.push(ReplyEvent::BlockFlush);
        let name = normalize_tool_name(tool_name);
        self.agent_event(
            "tool",
            json!({"phase": "start", "name": name, "toolCallId": tool_call_id, "args": args}),
        );
        let meta = tool_call_meta(&name, args);
        self.started
            .insert(tool_call_id.to_owned(), (args.clone(), meta.clone()));
        if self.config.tool_summaries {
            let metas: Vec<&str> = meta.as_deref().into_iter().collect();
            let text = format_tool_aggregate(
                &name,
                &metas,
                self.config.markdown,
                self.config.home.as_deref(),
            );
            self.out.push(ReplyEvent::ToolResult { text });
        }
    }

    fn tool_end(
        &mut self,
        tool_call_id: &str,
        tool_name: &str,
        result: &filo_agent::tool::ToolOutput,
        flagged: bool,
    ) {
        let name = normalize_tool_name(tool_name);
        let is_error = is_tool_error(flagged, result);
        let output = tool_output_text(result);
        let (args, meta) = self.started.remove(tool_call_id).unwrap_or_default();
        self.tools.finish(FinishedCall {
            tool_name: &name,
            args: &args,
            meta: meta.as_deref(),
            is_error,
            output_text: &output,
        });
        self.agent_event(
            "tool",
            json!({"phase": "result", "name": name, "toolCallId": tool_call_id,
                   "isError": is_error, "result": sanitize_tool_output(result)}),
        );
        if self.config.tool_output {
            let summary = format_tool_aggregate(&name, &[], self.config.markdown, None);
            let text = format_tool_output(&summary, &output, self.config.markdown);
            self.out.push(ReplyEvent::ToolResult { text });
        }
    }
}

/// The message's thinking blocks, then what its text holds inside thinking tags (a provider that
/// streams `<think>…</think>` as text: spec §8.3, "promote leading think into thinking").
fn reasoning_text(a: &filo_ai::AssistantMessage) -> String {
    let mut thinking = thinking_text(&a.content);
    let tagged = crate::stream::tags::strip_block_tags(&a.text(), false).thinking;
    let tagged = tagged.trim();
    if !tagged.is_empty() {
        if !thinking.is_empty() {
            thinking.push('\n');
        }
        thinking.push_str(tagged);
    }
    thinking
}

fn thinking_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Thinking(t) => Some(t.thinking.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
#[path = "machine_tests.rs"]
pub(crate) mod tests;
