//! The [`Agent`] (pi spec §2.5): state, queues, subscriptions, and one run at a time.
//!
//! A run is spawned on the tokio runtime, so dropping the future returned by
//! [`Agent::prompt`] does not stop it; [`Agent::abort`] does. Events reach listeners
//! synchronously, in order, on the run's task, after the state was updated for them; a listener
//! must not block (use [`Agent::subscribe_channel`] to get events on an unbounded channel instead).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use filo_ai::{Model, ModelClient, StreamOptions, ThinkingLevel};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::config::{
    AfterToolCall, BeforeToolCall, ConvertToLlm, GetApiKey, LoopConfig, MessageSource,
    ToolExecution, TransformContext,
};
use crate::error::AgentError;
use crate::event::AgentEvent;
use crate::message::AgentMessage;
use crate::options::{AgentOptions, Prompt};
use crate::run::{EventSink, LoopContext, Start, failure_message};
use crate::state::{AgentState, MessageQueue, QueueMode, State, lock};
use crate::tool::AgentTool;
use crate::toolset::ToolSet;

/// A listener for agent events.
pub type Listener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// Identifies a subscription, for [`Agent::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubscriptionId(u64);

/// Hooks and per-call options that are not part of pi's `AgentState`.
struct Settings {
    convert_to_llm: ConvertToLlm,
    transform_context: Option<TransformContext>,
    get_api_key: Option<GetApiKey>,
    before_tool_call: Option<BeforeToolCall>,
    after_tool_call: Option<AfterToolCall>,
    stream_options: StreamOptions,
    abort_grace: Duration,
}

struct ActiveRun {
    id: u64,
    cancel: CancellationToken,
}

struct Core {
    state: State,
    settings: Settings,
    run: Option<ActiveRun>,
}

/// The listeners, copied on write: a snapshot stays what it was.
type Listeners = Arc<Vec<(SubscriptionId, Listener)>>;

struct Inner {
    client: Arc<dyn ModelClient>,
    core: Mutex<Core>,
    steering: Mutex<MessageQueue>,
    follow_up: Mutex<MessageQueue>,
    listeners: Mutex<Listeners>,
    /// Bumped (under the `listeners` lock) on every change of `listeners`, so a run's sink
    /// re-reads the list only when it changed.
    listeners_version: AtomicU64,
    next_id: AtomicU64,
    /// `true` while a run's task is alive.
    busy: watch::Sender<bool>,
    /// The root of the cancellation tree: session → run → turn → tool call.
    session: CancellationToken,
}

/// A stateful agent around the loop. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Agent").field(&self.state()).finish()
    }
}

impl Agent {
    /// An agent with default options.
    pub fn new(client: Arc<dyn ModelClient>) -> Self {
        Self::with_options(client, AgentOptions::default())
    }

    pub fn with_options(client: Arc<dyn ModelClient>, options: AgentOptions) -> Self {
        let state = State {
            system_prompt: options.system_prompt,
            model: options.model,
            thinking_level: options.thinking_level,
            tools: Arc::new(ToolSet::new(options.tools)),
            messages: options.messages,
            is_streaming: false,
            stream: None,
            pending_tool_calls: Vec::new(),
            error: None,
            tool_execution: options.tool_execution,
        };
        let settings = Settings {
            convert_to_llm: options.convert_to_llm,
            transform_context: options.transform_context,
            get_api_key: options.get_api_key,
            before_tool_call: options.before_tool_call,
            after_tool_call: options.after_tool_call,
            stream_options: options.stream_options,
            abort_grace: options.abort_grace,
        };
        Agent {
            inner: Arc::new(Inner {
                client,
                core: Mutex::new(Core {
                    state,
                    settings,
                    run: None,
                }),
                steering: Mutex::new(MessageQueue::new(options.steering_mode)),
                follow_up: Mutex::new(MessageQueue::new(options.follow_up_mode)),
                listeners: Mutex::new(Arc::new(Vec::new())),
                listeners_version: AtomicU64::new(0),
                next_id: AtomicU64::new(1),
                busy: watch::Sender::new(false),
                session: CancellationToken::new(),
            }),
        }
    }

    // ----- running -------------------------------------------------------------------------

    /// Run the loop with a prompt; resolves when the run has finished. Errors only when the
    /// prompt was refused; a failed run is recorded in the messages and [`AgentState::error`].
    ///
    /// The run is spawned on the current tokio runtime (calling this outside one panics), so
    /// dropping this future does not stop it; [`Agent::abort`] does.
    pub async fn prompt(&self, prompt: impl Into<Prompt>) -> Result<(), AgentError> {
        let messages = prompt.into().into_messages();
        let handle = self.begin(AgentError::PromptWhileRunning, |_| {
            Ok(Start::Prompts {
                messages,
                poll_steering: true,
            })
        })?;
        self.finish(handle).await
    }

    /// Continue from the current messages (pi's `continue()`); see the spec for the rules.
    pub async fn continue_run(&self) -> Result<(), AgentError> {
        let inner = Arc::clone(&self.inner);
        let handle = self.begin(AgentError::ContinueWhileRunning, move |core| {
            let Some(last) = core.state.messages.last() else {
                return Err(AgentError::NoMessages);
            };
            if last.as_assistant().is_none() {
                return Ok(Start::Continue);
            }
            let steering = lock(&inner.steering).dequeue();
            if !steering.is_empty() {
                return Ok(Start::Prompts {
                    messages: steering,
                    poll_steering: false,
                });
            }
            let follow_ups = lock(&inner.follow_up).dequeue();
            if !follow_ups.is_empty() {
                return Ok(Start::Prompts {
                    messages: follow_ups,
                    poll_steering: true,
                });
            }
            Err(AgentError::CannotContinueFrom("assistant".into()))
        })?;
        self.finish(handle).await
    }

    /// Check and mark the start of a run under the lock, then spawn it. `decide` runs last, as
    /// it may dequeue queued messages.
    fn begin(
        &self,
        busy: AgentError,
        decide: impl FnOnce(&mut Core) -> Result<Start, AgentError>,
    ) -> Result<tokio::task::JoinHandle<()>, AgentError> {
        let inner = &self.inner;
        let mut core = lock(&inner.core);
        if core.state.is_streaming {
            return Err(busy);
        }
        let Some(model) = core.state.model.clone() else {
            return Err(AgentError::NoModel);
        };
        let start = decide(&mut core)?;
        let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
        let cancel = inner.session.child_token();
        core.run = Some(ActiveRun {
            id,
            cancel: cancel.clone(),
        });
        core.state.is_streaming = true;
        core.state.stream = None;
        core.state.error = None;
        inner.busy.send_replace(true);
        let context = LoopContext {
            system_prompt: Some(core.state.system_prompt.clone()).filter(|s| !s.is_empty()),
            messages: core.state.messages.clone(),
            tools: Arc::clone(&core.state.tools),
        };
        let config = self.loop_config(&core, model);
        drop(core);
        let guard = RunGuard {
            inner: Arc::clone(inner),
            id,
        };
        Ok(tokio::spawn(async move {
            let inner = Arc::clone(&guard.inner);
            let mut sink = AgentSink {
                inner: Arc::clone(&inner),
                listeners: None,
            };
            let result = crate::run::run(start, context, &config, &mut sink, cancel.clone()).await;
            if let Err(error) = result {
                // pi: a loop that throws leaves one synthetic assistant message and `agent_end`.
                let message = failure_message(&config.model, &error, cancel.is_cancelled());
                let message = AgentMessage::from(message);
                {
                    let mut core = lock(&inner.core);
                    core.state.messages.push(message.clone());
                    core.state.error = Some(error.to_string());
                }
                sink.emit(AgentEvent::AgentEnd {
                    messages: vec![message],
                    will_retry: false,
                });
            }
            drop(guard);
        }))
    }

    async fn finish(&self, handle: tokio::task::JoinHandle<()>) -> Result<(), AgentError> {
        handle.await.map_err(|e| AgentError::RunTask(e.to_string()))
    }

    fn loop_config(&self, core: &Core, model: Model) -> LoopConfig {
        let s = &core.settings;
        let steering_inner = Arc::clone(&self.inner);
        let follow_inner = Arc::clone(&self.inner);
        let steering: MessageSource = Arc::new(move || lock(&steering_inner.steering).dequeue());
        let follow_up: MessageSource = Arc::new(move || lock(&follow_inner.follow_up).dequeue());
        LoopConfig {
            model,
            client: Arc::clone(&self.inner.client),
            options: StreamOptions {
                reasoning: core.state.thinking_level,
                ..s.stream_options.clone()
            },
            convert_to_llm: Arc::clone(&s.convert_to_llm),
            transform_context: s.transform_context.clone(),
            get_api_key: s.get_api_key.clone(),
            steering: Some(steering),
            follow_up: Some(follow_up),
            tool_execution: core.state.tool_execution,
            before_tool_call: s.before_tool_call.clone(),
            after_tool_call: s.after_tool_call.clone(),
            abort_grace: s.abort_grace,
        }
    }

    /// Abort the current run, if any: streaming stops, tools are cancelled, the run ends.
    pub fn abort(&self) {
        if let Some(run) = &lock(&self.inner.core).run {
            run.cancel.cancel();
        }
    }

    /// Resolves when no run is active.
    pub async fn wait_for_idle(&self) {
        let mut rx = self.inner.busy.subscribe();
        // The sender lives in `inner`, which `self` keeps alive, so this cannot fail.
        let _ = rx.wait_for(|busy| !*busy).await;
    }

    // ----- queues --------------------------------------------------------------------------

    /// Queue a message to be delivered between tool calls / after the current turn.
    pub fn steer(&self, message: impl Into<AgentMessage>) {
        lock(&self.inner.steering).push(message.into());
    }

    /// Queue a message to be delivered when the agent would otherwise stop.
    pub fn follow_up(&self, message: impl Into<AgentMessage>) {
        lock(&self.inner.follow_up).push(message.into());
    }

    pub fn clear_steering_queue(&self) {
        lock(&self.inner.steering).clear();
    }

    pub fn clear_follow_up_queue(&self) {
        lock(&self.inner.follow_up).clear();
    }

    pub fn clear_all_queues(&self) {
        self.clear_steering_queue();
        self.clear_follow_up_queue();
    }

    pub fn has_queued_messages(&self) -> bool {
        !lock(&self.inner.steering).is_empty() || !lock(&self.inner.follow_up).is_empty()
    }

    pub fn set_steering_mode(&self, mode: QueueMode) {
        lock(&self.inner.steering).mode = mode;
    }

    pub fn steering_mode(&self) -> QueueMode {
        lock(&self.inner.steering).mode
    }

    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        lock(&self.inner.follow_up).mode = mode;
    }

    pub fn follow_up_mode(&self) -> QueueMode {
        lock(&self.inner.follow_up).mode
    }

    // ----- subscriptions -------------------------------------------------------------------

    /// Call `listener` for every event from now on.
    pub fn subscribe(
        &self,
        listener: impl Fn(&AgentEvent) + Send + Sync + 'static,
    ) -> SubscriptionId {
        let id = SubscriptionId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let mut listeners = lock(&self.inner.listeners);
        Arc::make_mut(&mut listeners).push((id, Arc::new(listener)));
        self.inner.listeners_version.fetch_add(1, Ordering::Release);
        id
    }

    /// Receive every event from now on on an unbounded channel. Each event is cloned for the
    /// channel; a `message_update` kept in the channel makes the loop copy the partial message on
    /// the next delta.
    pub fn subscribe_channel(&self) -> (SubscriptionId, mpsc::UnboundedReceiver<AgentEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = self.subscribe(move |event| {
            // A dropped receiver just stops listening.
            let _ = tx.send(event.clone());
        });
        (id, rx)
    }

    /// Stop a subscription; `false` if it was not active.
    pub fn unsubscribe(&self, id: SubscriptionId) -> bool {
        let mut listeners = lock(&self.inner.listeners);
        let before = listeners.len();
        Arc::make_mut(&mut listeners).retain(|(i, _)| *i != id);
        self.inner.listeners_version.fetch_add(1, Ordering::Release);
        listeners.len() != before
    }

    // ----- state ---------------------------------------------------------------------------

    /// A snapshot of the whole state.
    pub fn state(&self) -> AgentState {
        lock(&self.inner.core).state.snapshot()
    }

    pub fn messages(&self) -> Vec<AgentMessage> {
        lock(&self.inner.core).state.messages.clone()
    }

    /// The model, without copying the rest of the state.
    pub fn model(&self) -> Option<Model> {
        lock(&self.inner.core).state.model.clone()
    }

    pub fn thinking_level(&self) -> ThinkingLevel {
        lock(&self.inner.core).state.thinking_level
    }

    pub fn system_prompt(&self) -> String {
        lock(&self.inner.core).state.system_prompt.clone()
    }

    /// The active tools (shared handles).
    pub fn tools(&self) -> Vec<Arc<dyn AgentTool>> {
        lock(&self.inner.core)
            .state
            .tools
            .tools()
            .cloned()
            .collect()
    }

    pub fn message_count(&self) -> usize {
        lock(&self.inner.core).state.messages.len()
    }

    /// The newest message for which `pick` returns something, scanning from the end without
    /// copying the history.
    pub fn find_last<T>(&self, pick: impl Fn(&AgentMessage) -> Option<T>) -> Option<T> {
        lock(&self.inner.core)
            .state
            .messages
            .iter()
            .rev()
            .find_map(pick)
    }

    pub fn is_streaming(&self) -> bool {
        lock(&self.inner.core).state.is_streaming
    }

    /// The message being streamed right now, if any.
    pub fn stream_message(&self) -> Option<AgentMessage> {
        lock(&self.inner.core).state.stream_message()
    }

    pub fn error(&self) -> Option<String> {
        lock(&self.inner.core).state.error.clone()
    }

    /// Replace the history with a copy of `messages`.
    pub fn replace_messages(&self, messages: Vec<AgentMessage>) {
        lock(&self.inner.core).state.messages = messages;
    }

    pub fn append_message(&self, message: impl Into<AgentMessage>) {
        lock(&self.inner.core).state.messages.push(message.into());
    }

    pub fn clear_messages(&self) {
        lock(&self.inner.core).state.messages.clear();
    }

    /// Clear messages, queues, streaming flags and the error (pi's `reset()`); does not abort.
    pub fn reset(&self) {
        {
            let mut core = lock(&self.inner.core);
            let s = &mut core.state;
            s.messages.clear();
            s.is_streaming = false;
            s.stream = None;
            s.pending_tool_calls.clear();
            s.error = None;
        }
        self.clear_all_queues();
    }

    pub fn set_system_prompt(&self, prompt: impl Into<String>) {
        lock(&self.inner.core).state.system_prompt = prompt.into();
    }

    pub fn set_model(&self, model: Model) {
        lock(&self.inner.core).state.model = Some(model);
    }

    pub fn set_thinking_level(&self, level: ThinkingLevel) {
        lock(&self.inner.core).state.thinking_level = level;
    }

    /// Replace the tools; validators are compiled anew, lazily.
    pub fn set_tools(&self, tools: Vec<Arc<dyn AgentTool>>) {
        lock(&self.inner.core).state.tools = Arc::new(ToolSet::new(tools));
    }

    pub fn set_tool_execution(&self, mode: ToolExecution) {
        lock(&self.inner.core).state.tool_execution = mode;
    }

    pub fn set_convert_to_llm(&self, hook: ConvertToLlm) {
        lock(&self.inner.core).settings.convert_to_llm = hook;
    }

    pub fn set_transform_context(&self, hook: Option<TransformContext>) {
        lock(&self.inner.core).settings.transform_context = hook;
    }

    pub fn set_get_api_key(&self, hook: Option<GetApiKey>) {
        lock(&self.inner.core).settings.get_api_key = hook;
    }

    pub fn set_before_tool_call(&self, hook: Option<BeforeToolCall>) {
        lock(&self.inner.core).settings.before_tool_call = hook;
    }

    pub fn set_after_tool_call(&self, hook: Option<AfterToolCall>) {
        lock(&self.inner.core).settings.after_tool_call = hook;
    }

    /// The session id forwarded to providers (prompt-cache affinity).
    pub fn set_session_id(&self, id: Option<String>) {
        lock(&self.inner.core).settings.stream_options.session_id = id;
    }

    pub fn session_id(&self) -> Option<String> {
        lock(&self.inner.core)
            .settings
            .stream_options
            .session_id
            .clone()
    }

    pub fn set_thinking_budgets(&self, budgets: Option<BTreeMap<ThinkingLevel, u64>>) {
        lock(&self.inner.core)
            .settings
            .stream_options
            .thinking_budgets = budgets;
    }

    pub fn set_max_retry_delay_ms(&self, ms: Option<u64>) {
        lock(&self.inner.core)
            .settings
            .stream_options
            .max_retry_delay_ms = ms;
    }

    /// Replace the options sent with every model call (`reasoning` still follows the thinking
    /// level).
    pub fn set_stream_options(&self, options: StreamOptions) {
        lock(&self.inner.core).settings.stream_options = options;
    }

    pub fn stream_options(&self) -> StreamOptions {
        lock(&self.inner.core).settings.stream_options.clone()
    }
}

/// Applies events to the state, then calls the listeners.
struct AgentSink {
    inner: Arc<Inner>,
    /// The listeners as of `listeners_version` (the list is copied on write, so this stays what
    /// it was): read again only after a change, not locked and cloned per event.
    listeners: Option<(u64, Listeners)>,
}

impl EventSink for AgentSink {
    fn emit(&mut self, event: AgentEvent) {
        lock(&self.inner.core).state.apply(&event);
        let version = self.inner.listeners_version.load(Ordering::Acquire);
        if self.listeners.as_ref().is_none_or(|(v, _)| *v != version) {
            let list = lock(&self.inner.listeners);
            // Read under the lock: the version of exactly this list.
            let version = self.inner.listeners_version.load(Ordering::Acquire);
            self.listeners = Some((version, Arc::clone(&list)));
        }
        if let Some((_, listeners)) = &self.listeners {
            for (_, listener) in listeners.iter() {
                listener(&event);
            }
        }
    }
}

/// Marks the run finished when its task ends, whether it returned, panicked or was cancelled.
struct RunGuard {
    inner: Arc<Inner>,
    id: u64,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        let mut core = lock(&self.inner.core);
        if core.run.as_ref().is_some_and(|r| r.id == self.id) {
            core.run = None;
            core.state.is_streaming = false;
            core.state.stream = None;
            core.state.pending_tool_calls.clear();
            self.inner.busy.send_replace(false);
        }
    }
}
