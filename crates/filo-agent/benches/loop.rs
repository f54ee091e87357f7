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
        error_status: None,
        response_id: None,
    }
}

/// Events of one assistant message: `TEXT_DELTAS` text deltas, then `tools` tool calls.
fn script(tools: usize) -> Vec<AssistantEvent> {
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
    for t in 0..tools {
        let (index, id) = (t + 1, format!("call_{t}"));
        events.push(AssistantEvent::ToolCallStart {
            index,
            id: id.clone(),
            name: "noop".into(),
        });
        for part in [r#"{"path":"#, r#""src/lib.rs","#, r#""limit":10}"#] {
            events.push(AssistantEvent::ToolCallDelta {
                index,
                delta: part.into(),
            });
        }
        events.push(AssistantEvent::ToolCallEnd {
            index,
            tool_call: ToolCall {
                id,
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
    let stop = if tools > 0 {
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

fn client(tools: usize) -> Arc<ZeroLatency> {
    Arc::new(ZeroLatency {
        tool_turn: script(tools),
        final_turn: script(0),
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
async fn agent_runs(name: &'static str, runs: usize, json: bool, tools: usize) -> Row {
    let agent = Agent::with_options(
        client(tools),
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
    let config = LoopConfig::new(model(), client(1));
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
        tool_turn: script(1),
        final_turn: script(0),
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
    current.block_on(agent_runs("warm-up", 500, true, 1));
    current.block_on(bare_runs(500));

    println!(
        "filo-agent loop overhead (zero-latency model; 2 turns per run: text + tool call(s), then text)"
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
    best(|| current.block_on(bare_runs(runs))).print();
    let scenarios: [(&'static str, bool, usize, bool); 5] = [
        ("Agent, 1 listener (current-thread rt)", false, 1, false),
        (
            "Agent, 1 listener (multi-thread rt, 2 workers)",
            false,
            1,
            true,
        ),
        (
            "Agent, listener serialises every event to JSON",
            true,
            1,
            false,
        ),
        (
            "Agent, 8 parallel no-op tool calls per turn",
            false,
            8,
            false,
        ),
        ("Agent, 8 tool calls, multi-thread rt", false, 8, true),
    ];
    for (name, json, tools, threaded) in scenarios {
        let rt = if threaded { &multi } else { &current };
        best(|| rt.block_on(agent_runs(name, runs, json, tools))).print();
    }
    best(|| current.block_on(long_conversation(1_000))).print();
    println!();
    println!("(best of {REPEATS} repetitions per row)");
}

const REPEATS: usize = 3;

/// The fastest of `REPEATS` measurements: the machine is shared, so slower ones measure others.
fn best(mut measure: impl FnMut() -> Row) -> Row {
    let mut rows: Vec<Row> = (0..REPEATS).map(|_| measure()).collect();
    rows.sort_by_key(|r| r.elapsed);
    rows.swap_remove(0)
}
