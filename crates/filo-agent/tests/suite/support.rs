//! Test support: a scripted in-process model client, small tools, event recording.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use filo_agent::{
    Agent, AgentEvent, AgentMessage, AgentOptions, AgentTool, Concurrency, ToolCallContext,
    ToolError, ToolOutput,
};
use filo_ai::{
    Accumulator, AssistantEvent, AssistantMessage, AssistantStream, Context, Message, Model,
    ModelClient, StopReason, StreamOptions, ToolCall, Usage,
};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// One step of a scripted response.
#[derive(Clone)]
pub enum Step {
    Event(Box<AssistantEvent>),
    Delay(Duration),
    /// Wait until notified (or cancelled).
    Wait(Arc<Notify>),
}

/// A scripted response for one model call.
#[derive(Clone)]
pub struct Turn(pub Vec<Step>);

/// What the client was asked.
#[derive(Clone, Debug)]
pub struct Call {
    pub context: Context,
    pub options: StreamOptions,
}

/// A `ModelClient` that plays scripted turns and honours cancellation like a real provider: the
/// stream ends with an `aborted` error message that keeps the partial content.
#[derive(Default)]
pub struct Scripted {
    turns: Mutex<VecDeque<Turn>>,
    pub calls: Mutex<Vec<Call>>,
}

impl Scripted {
    pub fn new(turns: Vec<Turn>) -> Arc<Self> {
        Arc::new(Scripted {
            turns: Mutex::new(turns.into()),
            calls: Mutex::new(Vec::new()),
        })
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// The LLM messages of call `i`, as `role:text` strings.
    pub fn roles(&self, i: usize) -> Vec<String> {
        self.calls()[i]
            .context
            .messages
            .iter()
            .map(|m| format!("{}:{}", m.role(), text_of(m)))
            .collect()
    }
}

pub fn text_of(m: &Message) -> String {
    match m {
        Message::User(u) => u
            .content
            .to_blocks()
            .iter()
            .filter_map(|b| b.as_text().map(str::to_string))
            .collect(),
        Message::Assistant(a) => a.text(),
        Message::ToolResult(r) => r
            .content
            .iter()
            .filter_map(|b| b.as_text().map(str::to_string))
            .collect(),
    }
}

struct Play {
    steps: VecDeque<Step>,
    cancel: CancellationToken,
    acc: Option<Accumulator>,
    done: bool,
}

impl Play {
    fn aborted(&mut self) -> AssistantEvent {
        self.done = true;
        let mut message = self.acc.take().map_or_else(
            || assistant(vec![], StopReason::Stop),
            Accumulator::into_message,
        );
        message.stop_reason = StopReason::Aborted;
        message.error_message = Some("Request was aborted.".into());
        AssistantEvent::Error { message }
    }

    async fn next(&mut self) -> Option<AssistantEvent> {
        if self.done {
            return None;
        }
        loop {
            if self.cancel.is_cancelled() {
                return Some(self.aborted());
            }
            match self.steps.pop_front() {
                None => {
                    self.done = true;
                    return None;
                }
                Some(Step::Delay(d)) => {
                    tokio::select! {
                        () = tokio::time::sleep(d) => {}
                        () = self.cancel.cancelled() => {}
                    }
                }
                Some(Step::Wait(n)) => {
                    tokio::select! {
                        () = n.notified() => {}
                        () = self.cancel.cancelled() => {}
                    }
                }
                Some(Step::Event(e)) => {
                    let e = *e;
                    match &e {
                        AssistantEvent::Start { message } => {
                            self.acc = Some(Accumulator::new(message.clone()));
                        }
                        other => {
                            if let Some(acc) = self.acc.as_mut() {
                                acc.apply(other);
                            }
                        }
                    }
                    if e.is_terminal() {
                        self.done = true;
                    }
                    return Some(e);
                }
            }
        }
    }
}

impl ModelClient for Scripted {
    fn stream(
        &self,
        _model: &Model,
        context: &Context,
        options: &StreamOptions,
        cancel: CancellationToken,
    ) -> AssistantStream {
        self.calls.lock().unwrap().push(Call {
            context: context.clone(),
            options: options.clone(),
        });
        let turn = self.turns.lock().unwrap().pop_front();
        let steps: VecDeque<Step> = match turn {
            Some(t) => t.0.into(),
            None => {
                let mut m = assistant(vec![], StopReason::Error);
                m.error_message = Some("no scripted response left".into());
                vec![Step::Event(Box::new(AssistantEvent::Error { message: m }))].into()
            }
        };
        let play = Play {
            steps,
            cancel,
            acc: None,
            done: false,
        };
        Box::pin(futures::stream::unfold(play, |mut p| async move {
            p.next().await.map(|e| (e, p))
        }))
    }
}

pub fn model() -> Model {
    serde_json::from_value(json!({
        "id": "scripted-1", "name": "Scripted", "api": "scripted", "provider": "test",
        "baseUrl": "http://127.0.0.1:9", "input": ["text", "image"]
    }))
    .unwrap()
}

pub fn assistant(content: Vec<filo_ai::ContentBlock>, stop: StopReason) -> AssistantMessage {
    AssistantMessage {
        content,
        api: "scripted".into(),
        provider: "test".into(),
        model: "scripted-1".into(),
        usage: Usage::default(),
        stop_reason: stop,
        timestamp: 1_000,
        error_message: None,
        error_status: None,
        response_id: None,
    }
}

/// Builds a turn's events, accumulating the final message as it goes.
pub struct TurnBuilder {
    steps: Vec<Step>,
    acc: Accumulator,
    index: usize,
}

impl TurnBuilder {
    pub fn new() -> Self {
        let start = assistant(vec![], StopReason::Stop);
        TurnBuilder {
            steps: vec![Step::Event(Box::new(AssistantEvent::Start {
                message: start.clone(),
            }))],
            acc: Accumulator::new(start),
            index: 0,
        }
    }

    fn push(&mut self, e: AssistantEvent) {
        self.acc.apply(&e);
        self.steps.push(Step::Event(Box::new(e)));
    }

    pub fn step(mut self, s: Step) -> Self {
        self.steps.push(s);
        self
    }

    /// A text block streamed in the given chunks.
    pub fn text(mut self, chunks: &[&str]) -> Self {
        let index = self.index;
        self.index += 1;
        self.push(AssistantEvent::TextStart { index });
        for c in chunks {
            self.push(AssistantEvent::TextDelta {
                index,
                delta: (*c).to_string(),
            });
        }
        self.push(AssistantEvent::TextEnd {
            index,
            signature: None,
        });
        self
    }

    pub fn tool(mut self, id: &str, name: &str, args: Value) -> Self {
        let index = self.index;
        self.index += 1;
        self.push(AssistantEvent::ToolCallStart {
            index,
            id: id.into(),
            name: name.into(),
        });
        self.push(AssistantEvent::ToolCallDelta {
            index,
            delta: args.to_string(),
        });
        self.push(AssistantEvent::ToolCallEnd {
            index,
            tool_call: ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: args,
                thought_signature: None,
            },
        });
        self
    }

    pub fn done(mut self, stop: StopReason) -> Turn {
        let message = self.acc.clone().finish(stop, None);
        self.steps
            .push(Step::Event(Box::new(AssistantEvent::Done { message })));
        Turn(self.steps)
    }

    /// End without a terminal event (the stream just stops).
    pub fn open(self) -> Turn {
        Turn(self.steps)
    }
}

pub fn text_turn(text: &str) -> Turn {
    TurnBuilder::new().text(&[text]).done(StopReason::Stop)
}

pub fn tools_turn(calls: &[(&str, &str, Value)]) -> Turn {
    let mut b = TurnBuilder::new();
    for (id, name, args) in calls {
        b = b.tool(id, name, args.clone());
    }
    b.done(StopReason::ToolUse)
}

/// A configurable test tool. `echo` returns `echo: <text>` with details `{"len": n}`.
pub struct TestTool {
    pub name: &'static str,
    pub concurrency: Concurrency,
    pub delay: Duration,
    /// Progress updates sent before finishing, one per entry, each after `delay / (n+1)`.
    pub updates: usize,
    /// Wait for this before finishing (or cancellation).
    pub gate: Option<Arc<Notify>>,
    /// Ignore cancellation entirely (to test the abort grace).
    pub stubborn: bool,
    pub fail: Option<ToolError>,
    pub running: Arc<AtomicUsize>,
    pub max_running: Arc<AtomicUsize>,
    pub started: Arc<Notify>,
    /// `start <text>` / `end <text>` lines, to check ordering across tools.
    pub log: Arc<Mutex<Vec<String>>>,
}

impl TestTool {
    pub fn new(name: &'static str) -> Self {
        TestTool {
            name,
            concurrency: Concurrency::Shared,
            delay: Duration::ZERO,
            updates: 0,
            gate: None,
            stubborn: false,
            fail: None,
            running: Arc::new(AtomicUsize::new(0)),
            max_running: Arc::new(AtomicUsize::new(0)),
            started: Arc::new(Notify::new()),
            log: Arc::new(Mutex::new(Vec::new())),
        }
    }
}

impl AgentTool for TestTool {
    fn name(&self) -> &str {
        self.name
    }
    fn label(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "a test tool"
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer"}},"required":["text"]})
    }
    fn concurrency(&self) -> Concurrency {
        self.concurrency
    }
    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_running.fetch_max(now, Ordering::SeqCst);
            self.started.notify_one();
            let text = ctx.args["text"].as_str().unwrap_or_default().to_string();
            self.log.lock().unwrap().push(format!("start {text}"));
            let result = self.work(&ctx, &text).await;
            self.log.lock().unwrap().push(format!("end {text}"));
            self.running.fetch_sub(1, Ordering::SeqCst);
            result
        })
    }
}

impl TestTool {
    async fn work(&self, ctx: &ToolCallContext, text: &str) -> Result<ToolOutput, ToolError> {
        let slice = self.delay / u32::try_from(self.updates + 1).unwrap();
        for i in 0..self.updates {
            self.pause(ctx, slice).await?;
            (ctx.updates)(ToolOutput::text(format!("{text} {}", i + 1)));
        }
        self.pause(ctx, slice).await?;
        if let Some(gate) = &self.gate {
            if self.stubborn {
                gate.notified().await;
            } else {
                tokio::select! {
                    () = gate.notified() => {}
                    () = ctx.cancel.cancelled() => return Err(ToolError::failed("Operation aborted")),
                }
            }
        }
        if let Some(e) = &self.fail {
            return Err(e.clone());
        }
        Ok(ToolOutput::text(format!("echo: {text}")).with_details(json!({"len": text.len()})))
    }

    async fn pause(&self, ctx: &ToolCallContext, d: Duration) -> Result<(), ToolError> {
        if d.is_zero() {
            return Ok(());
        }
        if self.stubborn {
            tokio::time::sleep(d).await;
            return Ok(());
        }
        tokio::select! {
            () = tokio::time::sleep(d) => Ok(()),
            () = ctx.cancel.cancelled() => Err(ToolError::failed("Operation aborted")),
        }
    }
}

/// Records every event an agent emits.
#[derive(Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<AgentEvent>>>);

impl Recorder {
    pub fn attach(agent: &Agent) -> Self {
        let r = Recorder::default();
        let sink = r.clone();
        agent.subscribe(move |e| sink.0.lock().unwrap().push(e.clone()));
        r
    }

    pub fn events(&self) -> Vec<AgentEvent> {
        self.0.lock().unwrap().clone()
    }

    /// Event kinds, with the role for message events and the call id for tool events.
    pub fn kinds(&self) -> Vec<String> {
        self.events().iter().map(label).collect()
    }
}

pub fn label(e: &AgentEvent) -> String {
    match e {
        AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
            format!("{}({})", e.kind(), message.role())
        }
        AgentEvent::ToolExecutionStart { tool_call_id, .. }
        | AgentEvent::ToolExecutionUpdate { tool_call_id, .. }
        | AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
            format!("{}({tool_call_id})", e.kind())
        }
        _ => e.kind().to_string(),
    }
}

/// Collapse runs of `message_update` into one `message_update*`.
pub fn squash(kinds: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for k in kinds {
        if k == "message_update" {
            if out.last().is_some_and(|l| l == "message_update*") {
                continue;
            }
            out.push("message_update*".into());
        } else {
            out.push(k);
        }
    }
    out
}

pub fn agent_with(client: Arc<Scripted>, tools: Vec<Arc<dyn AgentTool>>) -> Agent {
    Agent::with_options(
        client,
        AgentOptions {
            model: Some(model()),
            system_prompt: "be brief".into(),
            tools,
            ..AgentOptions::default()
        },
    )
}

/// The roles of the agent's messages, with their text, e.g. `toolResult!:echo: a` for an error.
pub fn history(agent: &Agent) -> Vec<String> {
    agent.messages().iter().map(describe).collect()
}

pub fn describe(m: &AgentMessage) -> String {
    match m {
        AgentMessage::Llm(Message::ToolResult(r)) => {
            let mark = if r.is_error { "!" } else { "" };
            format!(
                "toolResult{mark}:{}",
                text_of(&Message::ToolResult(r.clone()))
            )
        }
        AgentMessage::Llm(Message::Assistant(a)) => {
            format!("assistant[{:?}]:{}", a.stop_reason, a.text())
        }
        AgentMessage::Llm(l) => format!("{}:{}", l.role(), text_of(l)),
        AgentMessage::Custom(c) => format!("{}:custom", c.role),
    }
}

/// Wait (bounded) until `f` holds, polling; for conditions set by another task.
pub async fn eventually(mut f: impl FnMut() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("condition not reached within 2.5 s");
}
