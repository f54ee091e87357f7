//! Tool execution for one assistant message (pi spec §2.4).
//!
//! Every call gets `tool_execution_start`, then exactly one result: `tool_execution_end` plus the
//! tool-result message events. Unknown tools, invalid arguments, blocked calls and hook failures
//! become model-facing error results without running anything.
//!
//! Parallel mode prepares in order and then runs the prepared calls in *waves*: consecutive
//! [`Concurrency::Shared`] calls run together; an [`Concurrency::Exclusive`] call waits for every
//! call before it and runs alone, and calls after it wait for it (a FIFO reader-writer lock, made
//! deterministic). Progress updates of concurrent calls interleave as they happen; executed calls
//! are finalised (after-hook, `tool_execution_end`) strictly in assistant order. A call that
//! finished without running (unknown tool, invalid arguments, blocked) gets its end event at once,
//! but every tool-result message is published in assistant order, so the context always lists
//! results in the order the model asked for them (as current pi does). All tool futures are polled inside the loop's task, so
//! dropping the run drops them: no task outlives it.
//!
//! A tool that panics is caught and reported to the model as `Tool <name> panicked: <message>`.
//!
//! After-hooks run on the loop's task: while one runs, the other calls of the wave are not
//! polled (their progress updates wait in the channel).
//!
//! Cancellation is a token tree: run → turn → tool call. On abort a running tool gets
//! [`LoopConfig::abort_grace`](crate::LoopConfig::abort_grace) to return its own result, after
//! which it is dropped and reported as `Operation aborted`.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use filo_ai::{AssistantMessage, ContentBlock, ToolCall, ToolResultMessage};
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::{ToolCallDecision, ToolCallInfo, ToolCallResult, ToolExecution};
use crate::event::AgentEvent;
use crate::message::{AgentMessage, now_ms};
use crate::run::Run;
use crate::tool::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput};

/// pi's text for a call skipped because the user steered.
pub const SKIPPED_TEXT: &str = "Skipped due to queued user message.";
/// The text for a call cut short by an abort.
pub const ABORTED_TEXT: &str = "Operation aborted";
/// The result of a tool call the output token limit cut off mid-arguments: it is not run.
pub const TRUNCATED_TEXT: &str = "Tool call not executed: its arguments were cut off because the response reached the output token limit (stopReason: length), so the call is incomplete. Retry with a smaller call: split large content across several calls (for example write part of a file, then append with edit).";

/// What running the tool calls produced.
#[derive(Debug, Default)]
pub(crate) struct ToolBatch {
    /// Tool results, in the order their messages were emitted.
    pub(crate) results: Vec<ToolResultMessage>,
    /// Steering messages that arrived while the tools ran.
    pub(crate) steering: Option<Vec<AgentMessage>>,
    /// A tool failed fatally: the run must end.
    pub(crate) fatal: Option<String>,
}

/// pi's error result: the message as text, `details: {}`.
fn error_output(text: impl Into<String>) -> ToolOutput {
    ToolOutput::text(text).with_details(json!({}))
}

struct Prepared {
    call: ToolCall,
    tool: Arc<dyn AgentTool>,
    args: Value,
}

enum Preparation {
    /// Finished without running: the error text.
    Immediate(String),
    Ready(Box<Prepared>),
}

struct Executed {
    output: ToolOutput,
    is_error: bool,
    fatal: Option<String>,
    /// How long the tool's `execute` took (monotonic clock); `None` when it did not run.
    duration_ms: Option<u64>,
}

impl Executed {
    fn from_result(result: Result<ToolOutput, ToolError>) -> Self {
        match result {
            Ok(output) => Executed {
                output,
                is_error: false,
                fatal: None,
                duration_ms: None,
            },
            Err(ToolError::Failed(text)) => Executed {
                output: error_output(text),
                is_error: true,
                fatal: None,
                duration_ms: None,
            },
            Err(ToolError::Fatal(text)) => Executed {
                output: error_output(text.clone()),
                is_error: true,
                fatal: Some(text),
                duration_ms: None,
            },
        }
    }
}

/// Run the tool calls of `assistant`. `cut` lists the content indices of calls the output limit
/// truncated: they are answered with [`TRUNCATED_TEXT`] and never run.
pub(crate) async fn execute_tool_calls(
    run: &mut Run<'_>,
    assistant: Arc<AssistantMessage>,
    cut: &[usize],
    turn: &CancellationToken,
) -> ToolBatch {
    let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();
    let truncated = assistant
        .content
        .iter()
        .enumerate()
        .filter(|(_, b)| matches!(b, ContentBlock::ToolCall(_)))
        .map(|(i, _)| cut.contains(&i))
        .collect();
    let mut exec = Executor {
        truncated,
        context: Arc::clone(&run.messages),
        run,
        assistant,
        turn: turn.clone(),
        batch: ToolBatch::default(),
        outbox: calls.iter().map(|_| None).collect(),
        cursor: 0,
        hold_messages: false,
    };
    match exec.run.config.tool_execution {
        ToolExecution::Parallel => {
            // pi 0.73: each end event when its call finishes, then every tool-result message
            // in assistant order once the whole batch is done.
            exec.hold_messages = true;
            exec.parallel(&calls).await;
            exec.hold_messages = false;
            exec.publish_ready();
        }
        ToolExecution::Sequential => exec.sequential(&calls).await,
    }
    exec.batch
}

struct Executor<'r, 'a> {
    run: &'r mut Run<'a>,
    assistant: Arc<AssistantMessage>,
    context: Arc<Vec<AgentMessage>>,
    turn: CancellationToken,
    batch: ToolBatch,
    /// Tool-result messages by assistant position, published in that order.
    outbox: Vec<Option<ToolResultMessage>>,
    cursor: usize,
    /// Parallel mode: tool-result messages wait for the end of the batch.
    hold_messages: bool,
    /// Per tool call, in assistant order: cut off by the output limit (never run).
    truncated: Vec<bool>,
}

impl Executor<'_, '_> {
    fn emit_start(&mut self, call: &ToolCall) {
        self.run.emit(AgentEvent::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
        });
    }

    fn poll_steering(&self) -> Option<Vec<AgentMessage>> {
        let steering = self.run.config.poll_steering();
        (!steering.is_empty()).then_some(steering)
    }

    async fn sequential(&mut self, calls: &[ToolCall]) {
        for (i, call) in calls.iter().enumerate() {
            self.emit_start(call);
            match self.prepare(i, call).await {
                Preparation::Immediate(text) => self.finalize(i, call, error_output(text), true),
                Preparation::Ready(prepared) => self.execute(vec![(i, *prepared)]).await,
            }
            if let Some(steering) = self.poll_steering() {
                self.skip_rest(calls, i + 1);
                self.batch.steering = Some(steering);
                return;
            }
        }
    }

    /// Calls from `from` on get a start event and the skip result.
    fn skip_rest(&mut self, calls: &[ToolCall], from: usize) {
        for (i, call) in calls.iter().enumerate().skip(from) {
            self.emit_start(call);
            self.finalize(i, call, error_output(SKIPPED_TEXT), true);
        }
    }

    async fn parallel(&mut self, calls: &[ToolCall]) {
        let mut ready = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            self.emit_start(call);
            match self.prepare(i, call).await {
                Preparation::Immediate(text) => self.finalize(i, call, error_output(text), true),
                Preparation::Ready(prepared) => ready.push((i, *prepared)),
            }
            if let Some(steering) = self.poll_steering() {
                // Prepared calls already had their start event: no second one.
                for (j, prepared) in &ready {
                    self.finalize(*j, &prepared.call, error_output(SKIPPED_TEXT), true);
                }
                self.skip_rest(calls, i + 1);
                self.batch.steering = Some(steering);
                return;
            }
        }
        self.execute(ready).await;
        self.batch.steering = self.poll_steering();
    }

    fn info(&self, call: &ToolCall, args: &Value) -> ToolCallInfo {
        ToolCallInfo {
            assistant_message: Arc::clone(&self.assistant),
            tool_call: call.clone(),
            args: args.clone(),
            context: Arc::clone(&self.context),
        }
    }

    async fn prepare(&mut self, position: usize, call: &ToolCall) -> Preparation {
        if self.truncated.get(position).copied().unwrap_or(false) {
            return Preparation::Immediate(TRUNCATED_TEXT.into());
        }
        let tools = Arc::clone(&self.run.tools);
        let Some(entry) = tools.get(&call.name) else {
            return Preparation::Immediate(format!("Tool {} not found", call.name));
        };
        let prepared = entry.tool().prepare_arguments(call.arguments.clone());
        let args = match entry.validate(&prepared) {
            Ok(args) => args,
            Err(e) => return Preparation::Immediate(e.to_string()),
        };
        if let Some(before) = self.run.config.before_tool_call.clone() {
            let decision = before(self.info(call, &args), self.turn.clone()).await;
            if self.turn.is_cancelled() {
                return Preparation::Immediate(ABORTED_TEXT.into());
            }
            match decision {
                Ok(ToolCallDecision::Allow) => {}
                Ok(ToolCallDecision::Block { reason }) => {
                    return Preparation::Immediate(
                        reason.unwrap_or_else(|| "Tool execution was blocked".into()),
                    );
                }
                Err(e) => return Preparation::Immediate(e.0),
            }
        }
        if self.turn.is_cancelled() {
            return Preparation::Immediate(ABORTED_TEXT.into());
        }
        Preparation::Ready(Box::new(Prepared {
            call: call.clone(),
            tool: Arc::clone(entry.tool()),
            args,
        }))
    }

    /// Run prepared calls wave by wave, stream their updates, finalise in order.
    async fn execute(&mut self, prepared: Vec<(usize, Prepared)>) {
        let waves = plan_waves(&prepared);
        let mut slots: Vec<Option<(usize, Prepared)>> = prepared.into_iter().map(Some).collect();
        let (tx, mut rx) = mpsc::unbounded_channel::<(usize, ToolOutput)>();
        for wave in waves {
            let mut running: FuturesUnordered<_> = wave
                .map(|i| {
                    let p = slots[i].as_ref().map(|(_, p)| p);
                    self.launch(i, p, tx.clone())
                })
                .collect();
            loop {
                tokio::select! {
                    biased;
                    Some((i, partial)) = rx.recv() => self.update(&slots, i, partial),
                    finished = running.next() => {
                        let Some((i, executed)) = finished else { break };
                        // Updates sent before the call returned come before its end event.
                        while let Ok((j, partial)) = rx.try_recv() {
                            self.update(&slots, j, partial);
                        }
                        if let Some(fatal) = &executed.fatal {
                            self.turn.cancel();
                            self.batch.fatal.get_or_insert_with(|| fatal.clone());
                        }
                        // Finalised as it finishes (pi's completion order); the messages
                        // keep assistant order.
                        if let Some((position, p)) = slots[i].take() {
                            self.finalize_executed(position, p, executed).await;
                        }
                    }
                }
            }
        }
    }

    fn launch(
        &self,
        index: usize,
        prepared: Option<&Prepared>,
        tx: mpsc::UnboundedSender<(usize, ToolOutput)>,
    ) -> BoxFuture<'static, (usize, Executed)> {
        let Some(p) = prepared else {
            return Box::pin(async move {
                (
                    index,
                    Executed::from_result(Err(ToolError::failed(ABORTED_TEXT))),
                )
            });
        };
        let cancel = self.turn.child_token();
        let grace = self.run.config.abort_grace;
        let tool = Arc::clone(&p.tool);
        let ctx = ToolCallContext {
            call_id: p.call.id.clone(),
            args: p.args.clone(),
            cancel: cancel.clone(),
            updates: Arc::new(move |partial| {
                // The receiver lives until the batch is done; a late update is dropped.
                let _ = tx.send((index, partial));
            }),
        };
        Box::pin(async move {
            if cancel.is_cancelled() {
                return (
                    index,
                    Executed::from_result(Err(ToolError::failed(ABORTED_TEXT))),
                );
            }
            let name = tool.name().to_string();
            let started = std::time::Instant::now();
            let run = AssertUnwindSafe(with_grace(tool.execute(ctx), &cancel, grace));
            let result = run.catch_unwind().await.unwrap_or_else(|panic| {
                Err(ToolError::failed(format!(
                    "Tool {name} panicked: {}",
                    panic_text(panic.as_ref())
                )))
            });
            let mut executed = Executed::from_result(result);
            executed.duration_ms =
                Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
            (index, executed)
        })
    }

    fn update(&mut self, slots: &[Option<(usize, Prepared)>], index: usize, partial: ToolOutput) {
        // Updates after a call's end (from a task the tool left behind) are ignored, as in pi.
        if let Some(Some((_, p))) = slots.get(index) {
            self.run.emit(AgentEvent::ToolExecutionUpdate {
                tool_call_id: p.call.id.clone(),
                tool_name: p.call.name.clone(),
                args: p.call.arguments.clone(),
                partial_result: partial,
            });
        }
    }

    async fn finalize_executed(&mut self, position: usize, prepared: Prepared, executed: Executed) {
        let Executed {
            mut output,
            mut is_error,
            duration_ms,
            ..
        } = executed;
        if let Some(after) = self.run.config.after_tool_call.clone() {
            let result = ToolCallResult {
                result: output.clone(),
                is_error,
            };
            let info = self.info(&prepared.call, &prepared.args);
            match after(info, result, self.turn.clone()).await {
                Ok(over) => {
                    if let Some(content) = over.content {
                        output.content = content;
                    }
                    if let Some(details) = over.details {
                        output.details = Some(details);
                    }
                    if let Some(flag) = over.is_error {
                        is_error = flag;
                    }
                }
                Err(e) => {
                    output = error_output(e.0);
                    is_error = true;
                }
            }
        }
        self.finalize_timed(position, &prepared.call, output, is_error, duration_ms);
    }

    /// Emit the end event now; the tool-result message follows once every earlier call's has.
    fn finalize(&mut self, position: usize, call: &ToolCall, output: ToolOutput, is_error: bool) {
        self.finalize_timed(position, call, output, is_error, None);
    }

    /// [`Executor::finalize`] for a call whose tool ran for `duration_ms`.
    fn finalize_timed(
        &mut self,
        position: usize,
        call: &ToolCall,
        output: ToolOutput,
        is_error: bool,
        duration_ms: Option<u64>,
    ) {
        self.run.emit(AgentEvent::ToolExecutionEnd {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            result: output.clone(),
            is_error,
            duration_ms,
        });
        let message = ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: output.content,
            details: output.details,
            is_error,
            timestamp: now_ms(),
        };
        if let Some(slot) = self.outbox.get_mut(position) {
            *slot = Some(message);
        }
        if !self.hold_messages {
            self.publish_ready();
        }
    }

    /// Emit the tool-result messages whose turn has come, in assistant order.
    fn publish_ready(&mut self) {
        while let Some(message) = self.outbox.get_mut(self.cursor).and_then(Option::take) {
            self.run.emit(AgentEvent::MessageStart {
                message: AgentMessage::from(message.clone()),
            });
            self.run.emit(AgentEvent::MessageEnd {
                message: AgentMessage::from(message.clone()),
            });
            self.batch.results.push(message);
            self.cursor += 1;
        }
    }
}

/// Index ranges that may run together: runs of shared calls, and each exclusive call alone.
fn plan_waves(prepared: &[(usize, Prepared)]) -> Vec<std::ops::Range<usize>> {
    let mut waves: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, (_, p)) in prepared.iter().enumerate() {
        let shared = p.tool.concurrency() == Concurrency::Shared;
        match waves.last_mut() {
            Some(last)
                if shared
                    && last.end == i
                    && prepared[last.start].1.tool.concurrency() == Concurrency::Shared =>
            {
                last.end = i + 1;
            }
            _ => waves.push(i..i + 1),
        }
    }
    waves
}

/// The message of a panic payload.
fn panic_text(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("unknown panic")
}

/// Await a tool; once `cancel` fires, give it `grace` to return on its own.
async fn with_grace(
    mut fut: BoxFuture<'_, Result<ToolOutput, ToolError>>,
    cancel: &CancellationToken,
    grace: Duration,
) -> Result<ToolOutput, ToolError> {
    tokio::select! {
        biased;
        result = &mut fut => result,
        () = cancel.cancelled() => match tokio::time::timeout(grace, fut).await {
            Ok(result) => result,
            Err(_) => Err(ToolError::failed(ABORTED_TEXT)),
        },
    }
}
