//! The loop's own overhead per turn, with a zero-latency in-process model client.
//!
//! Each run is two turns: the model streams a short text and one tool call (a no-op tool), then a
//! short final text. Nothing sleeps, so the time measured is the loop, the Agent's state updates,
//! event fan-out and tool dispatch. Prints a table; run with
//! `cargo bench -p filo-agent --bench loop`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use filo_agent::{
    Agent, AgentEvent, AgentMessage, AgentOptions, AgentTool, Concurrency, LoopConfig, LoopContext,
    ToolCallContext, ToolError, ToolOutput, ToolSet, agent_loop,
};
use filo_ai::{
    Accumulator, AssistantEvent, AssistantMessage, AssistantStream, Context, Model, ModelClient,
    StopReason, StreamOptions, ToolCall, Usage,
};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const TEXT_DELTAS: usize = 10;

fn initial() -> AssistantMessage {
    AssistantMessage {
        content: vec![],
        api: "bench".into(),
        provider: "bench".into(),
        model: "zero".into(),
        usage: Usage::default(),
        stop_reason: StopReason::Stop,
        timestamp: 0,
        error_message: None,
    }
}

/// Events of one assistant message: `TEXT_DELTAS` text deltas, then optionally one tool call.
fn script(with_tool: bool) -> Vec<AssistantEvent> {
    let mut events = vec![AssistantEvent::Start { message: initial() }];
    events.push(AssistantEvent::TextStart { index: 0 });
    for i in 0..TEXT_DELTAS {
        events.push(AssistantEvent::TextDelta {
            index: 0,
            delta: format!("word{i} "),
        });
    }
    events.push(AssistantEvent::TextEnd {
        index: 0,
        signature: None,
    });
    if with_tool {
        events.push(AssistantEvent::ToolCallStart {
            index: 1,
            id: "call_1".into(),
            name: "noop".into(),
        });
        for part in [r#"{"path":"#, r#""src/lib.rs","#, r#""limit":10}"#] {
            events.push(AssistantEvent::ToolCallDelta {
                index: 1,
                delta: part.into(),
            });
        }
        events.push(AssistantEvent::ToolCallEnd {
            index: 1,
            tool_call: ToolCall {
                id: "call_1".into(),
                name: "noop".into(),
                arguments: json!({"path": "src/lib.rs", "limit": 10}),
                thought_signature: None,
            },
        });
    }
    let mut acc = Accumulator::new(initial());
    for e in &events {
        acc.apply(e);
    }
    let stop = if with_tool {
        StopReason::ToolUse
    } else {
        StopReason::Stop
    };
    events.push(AssistantEvent::Done {
        message: acc.finish(stop, None),
    });
    events
}

/// Answers with a tool call when the last message is a user message, with text otherwise.
struct ZeroLatency {
    tool_turn: Vec<AssistantEvent>,
    final_turn: Vec<AssistantEvent>,
}

impl ModelClient for ZeroLatency {
    fn stream(
        &self,
        _model: &Model,
        context: &Context,
        _options: &StreamOptions,
        _cancel: CancellationToken,
    ) -> AssistantStream {
        let asked_by_user = context.messages.last().is_some_and(|m| m.role() == "user");
        let events = if asked_by_user {
            self.tool_turn.clone()
        } else {
            self.final_turn.clone()
        };
        Box::pin(futures::stream::iter(events))
    }
}

struct Noop;

impl AgentTool for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn label(&self) -> &str {
        "No-op"
    }
    fn description(&self) -> &str {
        "Does nothing."
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"]})
    }
    fn concurrency(&self) -> Concurrency {
        Concurrency::Shared
    }
    fn execute(&self, _ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async { Ok(ToolOutput::text("ok")) })
    }
}

fn model() -> Model {
    serde_json::from_value(json!({
        "id": "zero", "name": "Zero", "api": "bench", "provider": "bench", "baseUrl": "http://127.0.0.1:9"
    }))
    .unwrap()
}

fn client() -> Arc<ZeroLatency> {
    Arc::new(ZeroLatency {
        tool_turn: script(true),
        final_turn: script(false),
    })
}

struct Row {
    name: &'static str,
    turns: usize,
    events: usize,
    elapsed: Duration,
}

impl Row {
    fn print(&self) {
        let us = self.elapsed.as_secs_f64() * 1e6;
        println!(
            "| {:<48} | {:>7} | {:>8} | {:>10.2} | {:>11.3} |",
            self.name,
            self.turns,
            self.events,
            us / self.turns as f64,
            us / self.events as f64,
        );
    }
}

/// `runs` prompts of two turns each through the Agent; the history is cleared between runs.
async fn agent_runs(name: &'static str, runs: usize, json: bool) -> Row {
    let agent = Agent::with_options(
        client(),
        AgentOptions {
            model: Some(model()),
            tools: vec![Arc::new(Noop)],
            ..AgentOptions::default()
        },
    );
    let events = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&events);
    let bytes = Arc::new(AtomicUsize::new(0));
    let written = Arc::clone(&bytes);
    agent.subscribe(move |e| {
        counter.fetch_add(1, Ordering::Relaxed);
        if json {
            let line = serde_json::to_vec(e).unwrap();
            written.fetch_add(line.len(), Ordering::Relaxed);
        }
    });
    let start = Instant::now();
    for _ in 0..runs {
        agent.prompt("go").await.unwrap();
        agent.clear_messages();
    }
    Row {
        name,
        turns: runs * 2,
        events: events.load(Ordering::Relaxed),
        elapsed: start.elapsed(),
    }
}

/// The bare loop function, no Agent: a counting sink.
async fn bare_runs(runs: usize) -> Row {
    let config = LoopConfig::new(model(), client());
    let tools = Arc::new(ToolSet::new(vec![Arc::new(Noop)]));
    let mut events = 0usize;
    let start = Instant::now();
    for _ in 0..runs {
        let context = LoopContext {
            system_prompt: None,
            messages: Vec::new(),
            tools: Arc::clone(&tools),
        };
        let mut sink = |_e: AgentEvent| events += 1;
        agent_loop(
            vec![AgentMessage::user_text("go")],
            context,
            &config,
            &mut sink,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    }
    Row {
        name: "agent_loop() alone, counting sink",
        turns: runs * 2,
        events,
        elapsed: start.elapsed(),
    }
}

/// One run whose history grows: every turn asks for a tool again, `turns` times.
async fn long_conversation(turns: usize) -> Row {
    struct Repeat {
        tool_turn: Vec<AssistantEvent>,
        final_turn: Vec<AssistantEvent>,
        turns: usize,
    }
    impl ModelClient for Repeat {
        fn stream(
            &self,
            _model: &Model,
            context: &Context,
            _options: &StreamOptions,
            _cancel: CancellationToken,
        ) -> AssistantStream {
            let done = context.messages.len() >= self.turns * 2;
            let events = if done {
                self.final_turn.clone()
            } else {
                self.tool_turn.clone()
            };
            Box::pin(futures::stream::iter(events))
        }
    }
    let client = Arc::new(Repeat {
        tool_turn: script(true),
        final_turn: script(false),
        turns,
    });
    let agent = Agent::with_options(
        client,
        AgentOptions {
            model: Some(model()),
            tools: vec![Arc::new(Noop)],
            ..AgentOptions::default()
        },
    );
    let events = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&events);
    agent.subscribe(move |_| {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    let start = Instant::now();
    agent.prompt("go").await.unwrap();
    Row {
        name: "one run of 1,000 tool turns, history grows",
        turns: turns + 1,
        events: events.load(Ordering::Relaxed),
        elapsed: start.elapsed(),
    }
}

fn main() {
    let runs = 5_000;
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Warm-up: allocator, validator compilation, code paths.
    current.block_on(agent_runs("warm-up", 500, true));
    current.block_on(bare_runs(500));

    println!(
        "filo-agent loop overhead (zero-latency model; 2 turns per run: text + tool call, then text)"
    );
    println!();
    println!(
        "| {:<48} |   turns |   events |    µs/turn |    µs/event |",
        "scenario"
    );
    println!(
        "|{}|--------:|---------:|-----------:|------------:|",
        "-".repeat(50)
    );
    current.block_on(bare_runs(runs)).print();
    current
        .block_on(agent_runs(
            "Agent, 1 listener (current-thread rt)",
            runs,
            false,
        ))
        .print();
    multi
        .block_on(agent_runs(
            "Agent, 1 listener (multi-thread rt, 2 workers)",
            runs,
            false,
        ))
        .print();
    current
        .block_on(agent_runs(
            "Agent, listener serialises every event to JSON",
            runs,
            true,
        ))
        .print();
    current.block_on(long_conversation(1_000)).print();
}
