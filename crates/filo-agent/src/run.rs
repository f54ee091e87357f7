//! The loop itself (pi spec §2.3): turns of "stream one assistant message, run its tool calls",
//! steering polled between turns, follow-ups after the inner loop.
//!
//! The loop owns its context for the run and emits every event through an [`EventSink`]; it never
//! touches the [`Agent`](crate::Agent)'s state, so it can also be driven directly.

use std::sync::Arc;

use filo_ai::{AssistantEvent, AssistantMessage, ContentBlock, Context, StopReason, Usage};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::config::LoopConfig;
use crate::error::AgentError;
use crate::event::{AgentEvent, PartialMessage};
use crate::exec::ToolBatch;
use crate::message::{AgentMessage, now_ms};
use crate::toolset::ToolSet;

/// Receives the events of a run, in order.
pub trait EventSink: Send {
    fn emit(&mut self, event: AgentEvent);
}

impl<F: FnMut(AgentEvent) + Send> EventSink for F {
    fn emit(&mut self, event: AgentEvent) {
        self(event);
    }
}

/// What the loop starts from (pi's `AgentContext`).
#[derive(Debug, Clone, Default)]
pub struct LoopContext {
    pub system_prompt: Option<String>,
    pub messages: Vec<AgentMessage>,
    pub tools: Arc<ToolSet>,
}

/// How a run begins.
pub(crate) enum Start {
    /// New messages; `poll_steering` is false when they already are dequeued steering messages.
    Prompts {
        messages: Vec<AgentMessage>,
        poll_steering: bool,
    },
    /// Go on from the context as it is (its last message is not an assistant message).
    Continue,
}

/// Run the loop with new prompt messages (pi's `agentLoop`). Returns every message the run
/// produced. On `Err` (a hook failed, a tool failed fatally) no `agent_end` was emitted.
pub async fn agent_loop(
    prompts: Vec<AgentMessage>,
    context: LoopContext,
    config: &LoopConfig,
    sink: &mut dyn EventSink,
    cancel: CancellationToken,
) -> Result<Vec<AgentMessage>, AgentError> {
    let start = Start::Prompts {
        messages: prompts,
        poll_steering: true,
    };
    run(start, context, config, sink, cancel).await
}

/// Run the loop from the existing context (pi's `agentLoopContinue`).
pub async fn agent_loop_continue(
    context: LoopContext,
    config: &LoopConfig,
    sink: &mut dyn EventSink,
    cancel: CancellationToken,
) -> Result<Vec<AgentMessage>, AgentError> {
    run(Start::Continue, context, config, sink, cancel).await
}

/// Check that a context can be continued.
pub(crate) fn check_continue(messages: &[AgentMessage]) -> Result<(), AgentError> {
    match messages.last() {
        None => Err(AgentError::EmptyContext),
        Some(m) if m.as_assistant().is_some() => {
            Err(AgentError::CannotContinueFrom("assistant".into()))
        }
        Some(_) => Ok(()),
    }
}

pub(crate) async fn run(
    start: Start,
    context: LoopContext,
    config: &LoopConfig,
    sink: &mut dyn EventSink,
    cancel: CancellationToken,
) -> Result<Vec<AgentMessage>, AgentError> {
    if matches!(start, Start::Continue) {
        check_continue(&context.messages)?;
    }
    let definitions = context.tools.definitions();
    let llm = Context {
        system_prompt: context.system_prompt,
        messages: Vec::new(),
        tools: (!definitions.is_empty()).then(|| definitions.to_vec()),
    };
    let mut run = Run {
        config,
        sink,
        llm,
        converted: 0,
        tools: context.tools,
        messages: Arc::new(context.messages),
        produced: Vec::new(),
        cancel,
    };
    run.execute(start).await
}

/// The state of one run.
pub(crate) struct Run<'a> {
    pub(crate) config: &'a LoopConfig,
    sink: &'a mut dyn EventSink,
    /// The model's context: system prompt, tool definitions, and (without `transform_context`)
    /// the converted messages, extended turn by turn.
    llm: Context,
    /// How many of `messages` are converted into `llm.messages`.
    converted: usize,
    pub(crate) tools: Arc<ToolSet>,
    /// The context; shared with tool hooks, copied only if a hook keeps it.
    pub(crate) messages: Arc<Vec<AgentMessage>>,
    produced: Vec<AgentMessage>,
    cancel: CancellationToken,
}

impl Run<'_> {
    pub(crate) fn emit(&mut self, event: AgentEvent) {
        self.sink.emit(event);
    }

    fn record(&mut self, message: AgentMessage) {
        Arc::make_mut(&mut self.messages).push(message.clone());
        self.produced.push(message);
    }

    /// Emit `message_start` / `message_end` for a message and add it to the context.
    fn announce(&mut self, message: AgentMessage) {
        self.emit(AgentEvent::MessageStart {
            message: message.clone(),
        });
        self.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        });
        self.record(message);
    }

    async fn execute(&mut self, start: Start) -> Result<Vec<AgentMessage>, AgentError> {
        self.emit(AgentEvent::AgentStart);
        self.emit(AgentEvent::TurnStart);
        let mut pending = match start {
            Start::Prompts {
                messages,
                poll_steering,
            } => {
                for m in messages {
                    self.announce(m);
                }
                if poll_steering {
                    self.config.poll_steering()
                } else {
                    Vec::new()
                }
            }
            Start::Continue => self.config.poll_steering(),
        };
        let mut first_turn = true;
        loop {
            let mut more_tool_calls = true;
            while more_tool_calls || !pending.is_empty() {
                if !first_turn {
                    self.emit(AgentEvent::TurnStart);
                }
                first_turn = false;
                for m in std::mem::take(&mut pending) {
                    self.announce(m);
                }
                let turn = self.cancel.child_token();
                let (assistant, cut) = self.stream_assistant(&turn).await?;
                let assistant = Arc::new(assistant);
                if matches!(
                    assistant.stop_reason,
                    StopReason::Error | StopReason::Aborted
                ) {
                    self.emit(AgentEvent::TurnEnd {
                        message: AgentMessage::from((*assistant).clone()),
                        tool_results: Vec::new(),
                    });
                    let produced = self.produced.clone();
                    self.emit(AgentEvent::AgentEnd {
                        messages: produced.clone(),
                        will_retry: false,
                    });
                    return Ok(produced);
                }
                // pi runs every tool call of a `length` message; filo does not run the ones the
                // limit cut off mid-arguments (`cut`): they get an error result instead.
                more_tool_calls = assistant.tool_calls().next().is_some();
                let batch = if more_tool_calls {
                    crate::exec::execute_tool_calls(self, Arc::clone(&assistant), &cut, &turn).await
                } else {
                    ToolBatch::default()
                };
                for r in &batch.results {
                    self.record(AgentMessage::from(r.clone()));
                }
                self.emit(AgentEvent::TurnEnd {
                    message: AgentMessage::from((*assistant).clone()),
                    tool_results: batch.results,
                });
                if let Some(fatal) = batch.fatal {
                    return Err(AgentError::ToolFatal(fatal));
                }
                pending = match batch.steering {
                    Some(steering) => steering,
                    None => self.config.poll_steering(),
                };
            }
            let follow_ups = self.config.poll_follow_up();
            if follow_ups.is_empty() {
                break;
            }
            pending = follow_ups;
        }
        let produced = self.produced.clone();
        self.emit(AgentEvent::AgentEnd {
            messages: produced.clone(),
            will_retry: false,
        });
        Ok(produced)
    }

    /// Stream one assistant message, emitting its events; returns the final message and the
    /// content indices of tool calls truncated by the output limit (`stopReason: length` while
    /// their argument JSON was still open).
    async fn stream_assistant(
        &mut self,
        turn: &CancellationToken,
    ) -> Result<(AssistantMessage, Vec<usize>), AgentError> {
        let config = self.config;
        // A tool `tool_search` loaded in this run is declared from the next call on.
        if self.tools.has_deferred() {
            let definitions = self.tools.declared_definitions();
            self.llm.tools = (!definitions.is_empty()).then_some(definitions);
        }
        // pi's order: transform, convert, then the API key.
        let transformed = match &config.transform_context {
            Some(transform) => {
                let messages = (*self.messages).clone();
                let transformed = transform(messages, turn.clone())
                    .await
                    .map_err(|e| AgentError::Hook(e.0))?;
                Some(Context {
                    system_prompt: self.llm.system_prompt.clone(),
                    messages: (config.convert_to_llm)(&transformed),
                    tools: self.llm.tools.clone(),
                })
            }
            None => {
                // Only the messages added since the last call are converted (see `ConvertToLlm`).
                let fresh = (config.convert_to_llm)(&self.messages[self.converted..]);
                self.llm.messages.extend(fresh);
                self.converted = self.messages.len();
                None
            }
        };
        let mut options = config.options.clone();
        if let Some(get_key) = &config.get_api_key {
            let key = get_key(config.model.provider.clone())
                .await
                .map_err(|e| AgentError::Hook(e.0))?;
            if key.is_some() {
                options.api_key = key;
            }
        }
        let context = transformed.as_ref().unwrap_or(&self.llm);
        let mut stream = config
            .client
            .stream(&config.model, context, &options, turn.clone());
        drop(transformed);
        let mut partial: Option<PartialMessage> = None;
        // One cancellation watch for the whole stream: a fresh future per event would register
        // with (and leave) the token's waiters every time the stream waits for a chunk, and the
        // token's own future locks the token on every poll; the watch polls it again only after
        // it woke.
        let cancelled = filo_ai::CancelWatch::new(turn);
        tokio::pin!(cancelled);
        let last = loop {
            let next = tokio::select! {
                biased;
                event = stream.next() => event,
                () = &mut cancelled => None,
            };
            match next {
                Some(AssistantEvent::Start { message }) => {
                    // pi announces the message before the response's first frame arrives, so
                    // its `message_start` has no `responseId` yet; the updates and the end do.
                    // Until it ends, the message's stop reason is `pending` (pi 1.6).
                    let mut announced = message.clone();
                    announced.response_id = None;
                    announced.stop_reason = StopReason::Pending;
                    self.emit(AgentEvent::MessageStart {
                        message: AgentMessage::from(announced),
                    });
                    partial = Some(PartialMessage::new(message));
                }
                Some(AssistantEvent::Done { message } | AssistantEvent::Error { message }) => {
                    break message;
                }
                Some(event) => {
                    if let Some(p) = partial.as_mut() {
                        p.apply(&event);
                        let partial = p.clone();
                        self.emit(AgentEvent::MessageUpdate { partial, event });
                    }
                }
                None => break self.unfinished(partial.as_ref(), turn.is_cancelled()),
            }
        };
        let cut = match (&partial, last.stop_reason) {
            (Some(p), StopReason::Length) => p.incomplete_tool_calls().to_vec(),
            _ => Vec::new(),
        };
        let message = AgentMessage::from(last.clone());
        if partial.is_none() {
            self.emit(AgentEvent::MessageStart {
                message: message.clone(),
            });
        }
        drop(partial);
        self.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        });
        self.record(message);
        Ok((last, cut))
    }

    /// The message for a stream that stopped without a terminal event: aborted if the run was
    /// cancelled (the client did not answer the cancellation), an error otherwise.
    fn unfinished(&self, partial: Option<&PartialMessage>, aborted: bool) -> AssistantMessage {
        let model = &self.config.model;
        let mut message = partial.map_or_else(
            || AssistantMessage {
                content: Vec::new(),
                api: model.api.clone(),
                provider: model.provider.clone(),
                model: model.id.clone(),
                usage: Usage::default(),
                stop_reason: StopReason::Stop,
                timestamp: now_ms(),
                error_message: None,
                error_status: None,
                response_id: None,
            },
            |p| p.message().clone(),
        );
        let (reason, text) = if aborted {
            (StopReason::Aborted, "Request was aborted")
        } else {
            (StopReason::Error, "Stream ended without a final event")
        };
        message.stop_reason = reason;
        message.error_message = Some(text.to_string());
        message
    }
}

/// pi's synthetic message for a run whose loop failed: empty text, `error` or `aborted`.
pub(crate) fn failure_message(
    model: &filo_ai::Model,
    error: &AgentError,
    aborted: bool,
) -> AssistantMessage {
    AssistantMessage {
        content: vec![ContentBlock::text("")],
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        usage: Usage::default(),
        stop_reason: if aborted {
            StopReason::Aborted
        } else {
            StopReason::Error
        },
        timestamp: now_ms(),
        error_message: Some(error.to_string()),
        error_status: None,
        response_id: None,
    }
}
