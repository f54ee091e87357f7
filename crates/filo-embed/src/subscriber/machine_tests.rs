use filo_agent::{PartialMessage, ToolOutput};
use filo_ai::{AssistantMessage, StopReason, ThinkingContent, ToolCall, Usage};

use super::*;

fn empty_assistant() -> AssistantMessage {
    AssistantMessage {
        content: Vec::new(),
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude".into(),
        usage: Usage::default(),
        stop_reason: StopReason::Stop,
        timestamp: 0,
        error_message: None,
        error_status: None,
        response_id: None,
    }
}

/// Drives a subscriber through one streamed assistant message.
pub(crate) struct Stream {
    partial: PartialMessage,
}

impl Stream {
    pub(crate) fn start(sub: &mut Subscriber, log: &mut Vec<ReplyEvent>) -> Self {
        let initial = empty_assistant();
        log.extend(sub.handle(&AgentEvent::MessageStart {
            message: AgentMessage::Llm(Message::Assistant(initial.clone())),
        }));
        let mut partial = PartialMessage::new(initial.clone());
        partial.apply(&AssistantEvent::Start { message: initial });
        Stream { partial }
    }

    pub(crate) fn send(
        &mut self,
        sub: &mut Subscriber,
        log: &mut Vec<ReplyEvent>,
        event: AssistantEvent,
    ) {
        self.partial.apply(&event);
        log.extend(sub.handle(&AgentEvent::MessageUpdate {
            partial: self.partial.clone(),
            event,
        }));
    }

    pub(crate) fn text(
        &mut self,
        sub: &mut Subscriber,
        log: &mut Vec<ReplyEvent>,
        index: usize,
        deltas: &[&str],
    ) {
        self.send(sub, log, AssistantEvent::TextStart { index });
        for d in deltas {
            let delta = (*d).to_owned();
            self.send(sub, log, AssistantEvent::TextDelta { index, delta });
        }
        self.send(
            sub,
            log,
            AssistantEvent::TextEnd {
                index,
                signature: None,
            },
        );
    }

    pub(crate) fn end(
        self,
        sub: &mut Subscriber,
        log: &mut Vec<ReplyEvent>,
        extra: Vec<ContentBlock>,
    ) {
        let mut message = self.partial.message().clone();
        message.content.extend(extra);
        log.extend(sub.handle(&AgentEvent::MessageEnd {
            message: AgentMessage::Llm(Message::Assistant(message)),
        }));
    }
}

fn subscriber(config: SubscriberConfig) -> Subscriber {
    Subscriber::new(config, Box::new(Verbatim), None)
}

pub(crate) fn replies(log: &[ReplyEvent]) -> Vec<ReplyEvent> {
    log.iter()
        .filter(|e| !matches!(e, ReplyEvent::Agent { .. }))
        .cloned()
        .collect()
}

pub(crate) fn block(text: &str) -> ReplyEvent {
    ReplyEvent::Block { text: text.into() }
}

pub(crate) fn partial(text: &str) -> ReplyEvent {
    ReplyEvent::Partial { text: text.into() }
}

#[test]
fn partials_grow_and_text_end_emits_a_block() {
    let mut sub = subscriber(SubscriberConfig::default());
    let mut log = Vec::new();
    let mut s = Stream::start(&mut sub, &mut log);
    s.text(&mut sub, &mut log, 0, &["Hello", " ", "world"]);
    s.end(&mut sub, &mut log, vec![]);
    assert_eq!(
        replies(&log),
        [
            ReplyEvent::AssistantMessageStart,
            partial("Hello"),
            partial("Hello world"),
            block("Hello world"),
        ]
    );
    assert_eq!(sub.assistant_texts, ["Hello world"]);
    assert!(log.contains(&ReplyEvent::Agent {
        stream: "assistant",
        data: json!({"text": "Hello world", "delta": "world"})
    }));
}

#[test]
fn a_long_text_is_not_shaped_on_every_delta_and_its_end_catches_up() {
    let mut sub = subscriber(SubscriberConfig::default());
    let mut log = Vec::new();
    let mut s = Stream::start(&mut sub, &mut log);
    let words: Vec<String> = (0..4000).map(|i| format!("word{i} ")).collect();
    let deltas: Vec<&str> = words.iter().map(String::as_str).collect();
    s.text(&mut sub, &mut log, 0, &deltas);
    let full = words.concat();
    let partials: Vec<&str> = log
        .iter()
        .filter_map(|e| match e {
            ReplyEvent::Partial { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // Every delta below 4 KiB, then a sixteenth of growth (or 50 ms) at a time.
    assert!(partials.len() < 1500, "{} partials", partials.len());
    assert_eq!(partials.last().copied(), Some(full.trim()));
    // The `assistant` events' deltas add up to the text.
    let said: String = log
        .iter()
        .filter_map(|e| match e {
            ReplyEvent::Agent { stream, data } if *stream == "assistant" => {
                data["delta"].as_str().map(str::to_owned)
            }
            _ => None,
        })
        .collect();
    assert_eq!(said.trim(), full.trim());
}

#[test]
fn reasoning_on_with_message_end_break_comes_before_the_answer() {
    let mut sub = subscriber(SubscriberConfig {
        reasoning: ReasoningMode::On,
        block_reply_break: BlockBreak::MessageEnd,
        ..SubscriberConfig::default()
    });
    let mut log = Vec::new();
    let s = Stream::start(&mut sub, &mut log);
    // A non-streaming provider: everything arrives with message_end.
    s.end(
        &mut sub,
        &mut log,
        vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking: "Because it helps".into(),
                thinking_signature: None,
                redacted: None,
            }),
            ContentBlock::text("Final answer"),
        ],
    );
    assert_eq!(
        replies(&log),
        [
            ReplyEvent::AssistantMessageStart,
            block("Reasoning:\n_Because it helps_"),
            block("Final answer"),
        ]
    );
}

#[test]
fn streamed_reasoning_and_its_end() {
    let mut sub = subscriber(SubscriberConfig {
        reasoning: ReasoningMode::Stream,
        ..SubscriberConfig::default()
    });
    let mut log = Vec::new();
    let mut s = Stream::start(&mut sub, &mut log);
    s.send(
        &mut sub,
        &mut log,
        AssistantEvent::ThinkingStart { index: 0 },
    );
    for d in ["Step one", "\nstep two"] {
        s.send(
            &mut sub,
            &mut log,
            AssistantEvent::ThinkingDelta {
                index: 0,
                delta: d.into(),
            },
        );
    }
    for _ in 0..2 {
        // Providers may repeat the end event; it is reported once.
        s.send(
            &mut sub,
            &mut log,
            AssistantEvent::ThinkingEnd {
                index: 0,
                signature: None,
                redacted: false,
            },
        );
    }
    assert_eq!(
        replies(&log),
        [
            ReplyEvent::AssistantMessageStart,
            ReplyEvent::Reasoning {
                text: "Reasoning:\n_Step one_".into()
            },
            ReplyEvent::Reasoning {
                text: "Reasoning:\n_Step one_\n_step two_".into()
            },
            ReplyEvent::ReasoningEnd,
        ]
    );
}

#[test]
fn blocks_are_flushed_before_a_tool_starts_and_narration_is_not_the_answer() {
    let mut sub = subscriber(SubscriberConfig {
        tool_summaries: true,
        tool_output: true,
        markdown: true,
        ..SubscriberConfig::default()
    });
    let mut log = Vec::new();
    let mut s = Stream::start(&mut sub, &mut log);
    s.send(&mut sub, &mut log, AssistantEvent::TextStart { index: 0 });
    s.send(
        &mut sub,
        &mut log,
        AssistantEvent::TextDelta {
            index: 0,
            delta: "Let me look.".into(),
        },
    );
    let call = ContentBlock::ToolCall(ToolCall {
        id: "c1".into(),
        name: "read".into(),
        arguments: json!({"path": "/src/a.rs"}),
        thought_signature: None,
    });
    s.end(&mut sub, &mut log, vec![call]);
    log.extend(sub.handle(&AgentEvent::ToolExecutionStart {
        tool_call_id: "c1".into(),
        tool_name: "read".into(),
        args: json!({"path": "/src/a.rs"}),
    }));
    log.extend(sub.handle(&AgentEvent::ToolExecutionEnd {
        tool_call_id: "c1".into(),
        tool_name: "read".into(),
        result: ToolOutput::text("fn main() {}\n"),
        is_error: false,
        duration_ms: None,
    }));
    let r = replies(&log);
    assert_eq!(
        r,
        [
            ReplyEvent::AssistantMessageStart,
            partial("Let me look."),
            block("Let me look."),
            ReplyEvent::BlockFlush,
            ReplyEvent::ToolResult {
                text: "📖 Read: `/src/a.rs`".into()
            },
            ReplyEvent::ToolResult {
                text: "📖 Read\n```txt\nfn main() {}\n```".into()
            },
        ]
    );
    let flush = r.iter().position(|e| *e == ReplyEvent::BlockFlush).unwrap();
    let last_block = r
        .iter()
        .rposition(|e| matches!(e, ReplyEvent::Block { .. }))
        .unwrap();
    assert!(last_block < flush, "every block precedes the flush");
    assert!(
        sub.assistant_texts.is_empty(),
        "narration is not the answer"
    );
    assert_eq!(
        sub.tools.tool_metas,
        [("read".to_owned(), Some("/src/a.rs".to_owned()))]
    );
}

#[test]
fn a_failed_write_is_remembered_with_its_fingerprint() {
    let mut sub = subscriber(SubscriberConfig::default());
    sub.handle(&AgentEvent::ToolExecutionStart {
        tool_call_id: "w".into(),
        tool_name: "write".into(),
        args: json!({"path": "/a"}),
    });
    let mut out = ToolOutput::text("EACCES: denied");
    out.details = Some(json!({"status": "error"}));
    sub.handle(&AgentEvent::ToolExecutionEnd {
        tool_call_id: "w".into(),
        tool_name: "write".into(),
        result: out,
        is_error: false,
        duration_ms: None,
    });
    let err = sub.tools.last_tool_error.clone().unwrap();
    assert_eq!(
        err.action_fingerprint.as_deref(),
        Some("tool=write|path=/a")
    );
    assert_eq!(err.error.as_deref(), Some("EACCES: denied"));
}

#[test]
fn compaction_retry_forgets_the_turn() {
    let mut sub = subscriber(SubscriberConfig::default());
    let mut log = Vec::new();
    let mut s = Stream::start(&mut sub, &mut log);
    s.text(&mut sub, &mut log, 0, &["partial answer"]);
    s.end(&mut sub, &mut log, vec![]);
    assert_eq!(sub.assistant_texts.len(), 1);
    let start = sub.compaction_start();
    assert!(sub.is_compacting);
    assert!(start.contains(&ReplyEvent::Agent {
        stream: "compaction",
        data: json!({"phase": "start"})
    }));
    sub.compaction_end(true);
    assert!(!sub.is_compacting);
    assert_eq!((sub.compaction_count, sub.pending_retries), (1, 1));
    assert!(sub.assistant_texts.is_empty());
    sub.compaction_end(false);
    assert_eq!((sub.compaction_count, sub.pending_retries), (2, 1));
}

#[test]
fn lifecycle_events_and_final_drain() {
    let mut sub = subscriber(SubscriberConfig {
        block_reply_break: BlockBreak::MessageEnd,
        ..SubscriberConfig::default()
    });
    let start = sub.handle(&AgentEvent::AgentStart);
    assert_eq!(
        start,
        [ReplyEvent::Agent {
            stream: "lifecycle",
            data: json!({"phase": "start"})
        }]
    );
    let mut log = Vec::new();
    let mut s = Stream::start(&mut sub, &mut log);
    s.text(&mut sub, &mut log, 0, &["Answer"]);
    s.end(&mut sub, &mut log, vec![]);
    assert_eq!(
        replies(&log),
        [
            ReplyEvent::AssistantMessageStart,
            partial("Answer"),
            block("Answer")
        ]
    );
    let end = sub.handle(&AgentEvent::AgentEnd {
        messages: vec![],
        will_retry: false,
    });
    assert_eq!(
        end,
        [ReplyEvent::Agent {
            stream: "lifecycle",
            data: json!({"phase": "end"})
        }]
    );
}

/// Splits at blank lines once at least `min` chars are buffered (a stand-in for the block
/// chunker, enough to drive the subscriber's use of the trait).
struct Paragraphs {
    buf: String,
    min: usize,
}

impl Chunker for Paragraphs {
    fn append(&mut self, text: &str) {
        self.buf.push_str(text);
    }
    fn drain(&mut self, force: bool) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(pos) = self.buf.find("\n\n") {
            if pos < self.min {
                break;
            }
            out.push(self.buf[..pos].to_owned());
            self.buf.drain(..pos + 2);
        }
        if force && !self.buf.trim().is_empty() {
            out.push(std::mem::take(&mut self.buf));
        }
        out
    }
    fn has_buffered(&self) -> bool {
        !self.buf.is_empty()
    }
    fn reset(&mut self) {
        self.buf.clear();
    }
}

#[test]
fn a_chunker_splits_blocks_while_streaming() {
    let chunker = Paragraphs {
        buf: String::new(),
        min: 5,
    };
    let mut sub = Subscriber::new(
        SubscriberConfig::default(),
        Box::new(Verbatim),
        Some(Box::new(chunker)),
    );
    let mut log = Vec::new();
    let mut s = Stream::start(&mut sub, &mut log);
    s.text(
        &mut sub,
        &mut log,
        0,
        &["First block line\n\n", "Second block line"],
    );
    s.end(&mut sub, &mut log, vec![]);
    let blocks: Vec<ReplyEvent> = replies(&log)
        .into_iter()
        .filter(|e| matches!(e, ReplyEvent::Block { .. }))
        .collect();
    assert_eq!(
        blocks,
        [block("First block line"), block("Second block line")]
    );
}

#[test]
fn reasoning_format() {
    let cases = [
        ("", ""),
        ("  \n ", ""),
        ("one", "Reasoning:\n_one_"),
        ("a\n\n b ", "Reasoning:\n_a_\n_b_"),
    ];
    for (input, want) in cases {
        assert_eq!(format_reasoning(input), want, "{input:?}");
    }
}

/// The flush-before-tool guarantee end to end: the subscriber's events go through the ordered
/// dispatcher to a slow sink; the barrier a tool hook awaits returns only after every block
/// produced before the tool start has been delivered.
#[tokio::test]
async fn the_barrier_delivers_every_block_before_the_tool_runs() {
    use std::sync::{Arc, Mutex};

    use crate::subscriber::dispatch::{BlockDispatcher, DEFAULT_DELIVERY_TIMEOUT, Deliver};

    let delivered: Arc<Mutex<Vec<ReplyEvent>>> = Arc::default();
    let sink = delivered.clone();
    let deliver: Deliver<ReplyEvent> = Arc::new(move |e| {
        let sink = sink.clone();
        Box::pin(async move {
            // A slow channel: each delivery takes a few scheduler turns.
            for _ in 0..5 {
                tokio::task::yield_now().await;
            }
            sink.lock().unwrap().push(e);
        })
    });
    let dispatcher = BlockDispatcher::new(deliver, DEFAULT_DELIVERY_TIMEOUT);
    let mut sub = subscriber(SubscriberConfig::default());
    let mut log = Vec::new();
    let mut s = Stream::start(&mut sub, &mut log);
    s.text(&mut sub, &mut log, 0, &["one"]);
    s.text(&mut sub, &mut log, 1, &["two"]);
    s.end(&mut sub, &mut log, vec![]);
    log.extend(sub.handle(&AgentEvent::ToolExecutionStart {
        tool_call_id: "c".into(),
        tool_name: "exec".into(),
        args: json!({"command": "ls"}),
    }));
    for e in log {
        dispatcher.send(e).unwrap();
    }
    dispatcher.flush().await.unwrap();
    let seen = delivered.lock().unwrap().clone();
    let blocks: Vec<&ReplyEvent> = seen
        .iter()
        .filter(|e| matches!(e, ReplyEvent::Block { .. }))
        .collect();
    assert_eq!(blocks, [&block("one"), &block("two")]);
    assert!(seen.contains(&ReplyEvent::BlockFlush));
}
