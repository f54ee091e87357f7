//! One attempt (C3, spec §2): build the session for the resolved model and credential, run one
//! prompt under the abort and timeout rules, and report what happened.
//!
//! The attempt opens the session file itself, so a retry after compaction or rotation sees what
//! the previous attempt wrote. It registers in the active-run registry for its duration (steer,
//! abort), and it frees that entry only after the session is idle.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use filo_agent::{AgentMessage, AgentTool};
use filo_ai::{AssistantMessage, Model, ThinkingLevel};
use filo_core::{AgentSession, Extension, PromptOptions};
use tokio_util::sync::CancellationToken;

use crate::embedder::{Inner, ToolContext};
use crate::error::RunError;
use crate::history::limit::{history_limit_from_session_key, limit_history_turns};
use crate::history::policy::{resolve_transcript_policy, sanitize_session_history};
use crate::history::pruning::{
    CACHE_TTL_CUSTOM_TYPE, Pruner, is_cache_ttl_eligible, last_cache_touch, pruning_settings,
};
use crate::memory::{flush_memory, memory_db_path, open_memory};
use crate::registry::RunHandle;
use crate::run::events::{AttemptListener, Observed};
use crate::run::params::{RunParams, Verbose};
use crate::run::prompt_text::embedded_prompt;
use crate::run::session::{
    CachedSession, EmbedHooks, Fingerprint, PersistGuard, SessionSetup, create_session,
    lock_session, open_session, put_cached, safeguard_for, take_cached,
};
use crate::sink::{Deliverer, ReplySink, SinkAdapter, SinkCall};
use crate::stream::chunker::BlockChunker;
use crate::subscriber::dispatch::{BlockDispatcher, DEFAULT_DELIVERY_TIMEOUT, Deliver};
use crate::subscriber::machine::{Chunker, Subscriber, SubscriberConfig};
use crate::subscriber::shaping::TagShaper;
use crate::subscriber::tool_state::LastToolError;
use crate::tools::policy::{is_tool_allowed, normalize_tool_name, pick_tool_policy};
use serde_json::json;

/// A timeout that fires while compacting is extended once by this much (spec §2.2).
pub(crate) const COMPACTION_GRACE: Duration = Duration::from_secs(600);

/// What the loop resolved for this attempt.
pub(crate) struct AttemptSpec<'a> {
    pub inner: &'a Inner,
    pub params: &'a RunParams,
    pub model: Model,
    pub api_key: String,
    pub think_level: ThinkingLevel,
    pub session_file: PathBuf,
    /// The agent's own prompt from the config; else the embedded prompt is built (C27).
    pub custom_prompt: Option<String>,
    pub agent_id: String,
    pub sink: Arc<dyn ReplySink>,
    pub run_token: CancellationToken,
    pub timeout: Duration,
}

/// What one attempt produced.
#[derive(Debug, Default)]
pub(crate) struct AttemptOutcome {
    pub aborted: bool,
    pub timed_out: bool,
    pub timed_out_during_compaction: bool,
    /// `prompt` itself failed (refused, agent error).
    pub prompt_error: Option<String>,
    pub assistant_texts: Vec<String>,
    pub last_tool_error: Option<LastToolError>,
    pub mutating_tool_ran: bool,
    pub observed: Observed,
    pub messages: Vec<AgentMessage>,
    pub session_id: String,
}

impl AttemptOutcome {
    /// The last assistant message of the attempt.
    pub fn last_assistant(&self) -> Option<&AssistantMessage> {
        self.observed.last_assistant.as_ref()
    }
}

/// The attempt ended with an answer: not aborted, no refused prompt, no error stop.
fn answered(outcome: &AttemptOutcome) -> bool {
    !outcome.aborted
        && outcome.prompt_error.is_none()
        && outcome
            .last_assistant()
            .is_some_and(|m| m.stop_reason != filo_ai::StopReason::Error)
}

/// Cache-TTL context pruning (C16) for a provider with a prompt cache, when the config asks for
/// it; the last cache touch comes from the session's own entries. Returns whether it is on.
fn install_pruning(spec: &AttemptSpec<'_>, session: &AgentSession) -> bool {
    let config = spec.inner.config();
    let m = &spec.model;
    let settings = pruning_settings(&config.defaults.context_pruning)
        .filter(|_| is_cache_ttl_eligible(&m.provider, &m.api, &m.id));
    let Some(settings) = settings else {
        session.agent().set_transform_context(None);
        return false;
    };
    let last = last_cache_touch(session.session_manager().entries());
    let pruner = Arc::new(Pruner::new(
        settings,
        m.context_window,
        last,
        spec.inner.clock.clone(),
    ));
    session
        .agent()
        .set_transform_context(Some(pruner.transform()));
    true
}

/// The system prompt for this attempt with `tools` offered.
fn prompt_for(spec: &AttemptSpec<'_>, tools: &[Arc<dyn AgentTool>]) -> String {
    match &spec.custom_prompt {
        Some(p) => p.clone(),
        None => embedded_prompt(spec, tools),
    }
}

/// What a cached session must match to serve this attempt.
fn fingerprint_of(spec: &AttemptSpec<'_>, tools: &[Arc<dyn AgentTool>]) -> Fingerprint {
    let config = spec.inner.config();
    Fingerprint {
        provider: spec.model.provider.clone(),
        model: spec.model.id.clone(),
        context_window: spec.model.context_window,
        api_key: spec.api_key.clone(),
        think_level: spec.think_level,
        system_prompt: prompt_for(spec, tools),
        workspace: spec.params.workspace_dir.clone(),
        tools: tools.iter().map(|t| t.name().to_owned()).collect(),
        memory: config
            .memory
            .enabled
            .then(|| memory_db_path(&config.memory, &spec.inner.paths)),
    }
}

/// A session opened from its file, with the memory (when on) and the embedded hooks; the
/// memory's tools (`life`, `recall`, `trace`, `tobe`) are under the same policy as the rest.
async fn build_session(
    spec: &AttemptSpec<'_>,
    tools: Vec<Arc<dyn AgentTool>>,
    dispatcher: Arc<BlockDispatcher<SinkCall>>,
    warnings: &mut Vec<String>,
) -> Result<CachedSession, RunError> {
    let (inner, p) = (spec.inner, spec.params);
    let cwd = p.workspace_dir.to_string_lossy().into_owned();
    let manager = open_session(spec.session_file.clone(), Some(p.session_id.clone()), cwd).await?;
    let memory = match open_memory(
        &inner.memory,
        &inner.config().memory,
        &inner.paths,
        inner.clock.clone(),
    ) {
        Ok(m) => m,
        Err(w) => {
            warnings.push(w);
            None
        }
    };
    let hooks = Arc::new(EmbedHooks::new(dispatcher));
    let guard = PersistGuard::new(spec.model.context_window, inner.clock.clone());
    let mut extensions: Vec<Arc<dyn Extension>> = vec![hooks.clone(), Arc::new(guard)];
    extensions.extend(safeguard_for(inner, &spec.model));
    extensions.extend(memory.iter().map(|m| m.clone() as Arc<dyn Extension>));
    let session = create_session(
        inner,
        SessionSetup {
            workspace: p.workspace_dir.clone(),
            model: spec.model.clone(),
            api_key: spec.api_key.clone(),
            think_level: spec.think_level,
            tools,
            manager,
            extensions,
        },
    )?;
    let offered = restrict_tools(spec, session.agent().tools());
    session.agent().set_tools(offered);
    Ok(CachedSession {
        session,
        hooks,
        memory,
    })
}

/// The registry's view of a running attempt.
struct AttemptHandle {
    session: AgentSession,
    token: CancellationToken,
}

impl RunHandle for AttemptHandle {
    fn queue_message(&self, text: &str) {
        self.session.steer(text, Vec::new());
    }
    fn is_streaming(&self) -> bool {
        self.session.is_streaming()
    }
    fn is_compacting(&self) -> bool {
        self.session.is_compacting()
    }
    fn abort(&self) {
        self.token.cancel();
    }
}

/// The tools the attempt offers: filo's built-ins, filtered by the config's tool policy and the
/// run's allow list (`disable_tools` offers none).
pub(crate) fn attempt_tools(spec: &AttemptSpec<'_>) -> Vec<Arc<dyn AgentTool>> {
    let p = spec.params;
    if p.disable_tools {
        return Vec::new();
    }
    let inner = spec.inner;
    // The shell starts from the variables the embedding program passed (secrets removed by the
    // default policy), never from this process's environment (G12).
    let settings = Arc::new(
        filo_tools::ToolSettings::from_env(
            p.workspace_dir.clone(),
            Some(inner.paths.home.clone().into_os_string()),
            inner.paths.temp.clone(),
        )
        .with_shell_env(inner.shell_env.clone()),
    );
    let context = ToolContext {
        session_id: p.session_id.clone(),
        session_key: p.session_key.clone(),
        workspace_dir: p.workspace_dir.clone(),
    };
    let own: Vec<Arc<dyn AgentTool>> = inner
        .tool_factories
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .flat_map(|f| f(&context))
        .collect();
    let tools: Vec<Arc<dyn AgentTool>> = filo_tools::all_tools_with(&settings)
        .into_iter()
        .chain(own)
        .collect();
    restrict_tools(spec, tools)
}

/// The tools of `tools` the config's tool policy and the run's allow list let through
/// (`disable_tools` lets none through). Applied to the built-ins and the embedder's own tools,
/// and again to the session's full list, which adds the memory's tools.
pub(crate) fn restrict_tools(
    spec: &AttemptSpec<'_>,
    tools: Vec<Arc<dyn AgentTool>>,
) -> Vec<Arc<dyn AgentTool>> {
    let p = spec.params;
    if p.disable_tools {
        return Vec::new();
    }
    let config = spec.inner.config();
    let policy = pick_tool_policy(Some(&config.tools));
    let allow: Option<Vec<String>> = p
        .tools_allow
        .as_ref()
        .map(|names| names.iter().map(|n| normalize_tool_name(n)).collect());
    tools
        .into_iter()
        .filter(|t| {
            let name = normalize_tool_name(t.name());
            is_tool_allowed(&name, policy.as_ref())
                && allow.as_ref().is_none_or(|a| a.contains(&name))
        })
        .collect()
}

fn subscriber_for(params: &RunParams, inner: &Inner) -> Subscriber {
    let block = params.block_reply.clone().unwrap_or_default();
    let config = SubscriberConfig {
        reasoning: params.reasoning,
        block_reply_break: block.break_mode,
        tool_summaries: params.verbose != Verbose::Off,
        tool_output: params.verbose == Verbose::Full,
        markdown: true,
        home: Some(inner.paths.home.clone()),
    };
    let chunker: Option<Box<dyn Chunker>> = block
        .chunking
        .map(|c| Box::new(BlockChunker::new(c)) as Box<dyn Chunker>);
    Subscriber::new(
        config,
        Box::new(TagShaper::new(params.enforce_final_tag)),
        chunker,
    )
}

fn dispatcher_for(sink: Arc<dyn ReplySink>) -> Arc<BlockDispatcher<SinkCall>> {
    let deliverer = Arc::new(Deliverer::new(sink));
    let deliver_fn: Deliver<SinkCall> = Arc::new(move |call| {
        let deliverer = deliverer.clone();
        Box::pin(async move { deliverer.deliver(call).await })
    });
    Arc::new(BlockDispatcher::new(deliver_fn, DEFAULT_DELIVERY_TIMEOUT))
}

/// Runs one attempt.
pub(crate) async fn run_attempt(spec: AttemptSpec<'_>) -> Result<AttemptOutcome, RunError> {
    let p = spec.params;
    let inner = spec.inner;
    std::fs::create_dir_all(&p.workspace_dir).map_err(|source| RunError::Io {
        path: p.workspace_dir.clone(),
        source,
    })?;
    // One writer per session file across processes, for the whole attempt.
    let _lock = lock_session(inner, &spec.session_file, spec.timeout).await?;
    let tools = attempt_tools(&spec);
    let dispatcher = dispatcher_for(spec.sink.clone());
    let listener = Arc::new(AttemptListener {
        machine: Mutex::new(subscriber_for(p, inner)),
        adapter: SinkAdapter::new(None),
        dispatcher: dispatcher.clone(),
        observed: Mutex::new(Observed::default()),
    });
    let mut warnings = Vec::new();
    let fingerprint = fingerprint_of(&spec, &tools);
    let hit = take_cached(inner, &spec.session_file, &fingerprint);
    let was_cached = hit.is_some();
    let cached = match hit {
        Some(cached) => {
            cached.hooks.set_dispatcher(dispatcher.clone());
            let mut all = tools;
            if let Some(m) = &cached.memory {
                all.extend(m.tools(&cached.session.info()));
            }
            cached.session.agent().set_tools(restrict_tools(&spec, all));
            cached
        }
        None => build_session(&spec, tools, dispatcher.clone(), &mut warnings).await?,
    };
    let session = cached.session.clone();
    // The prompt lists the tools actually offered, the memory's included.
    session.set_system_prompt_override(Some(prompt_for(&spec, &session.agent().tools())));
    let allowed: Vec<String> = session
        .agent()
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    // A cached session's context was prepared by its last turn for this same model, and that
    // turn ended cleanly: only a history limit still has to drop the oldest turn.
    let limit = history_limit_from_session_key(p.session_key.as_deref(), &inner.config().channels);
    if !was_cached || limit.is_some() {
        prepare_history(&session, p, &spec.model, &allowed, inner);
    }
    let pruning = install_pruning(&spec, &session);
    let listener_for_session = listener.clone();
    let sub = session.subscribe(Arc::new(move |e| listener_for_session.on_event(e)));
    let token = spec.run_token.child_token();
    let handle: Arc<dyn RunHandle> = Arc::new(AttemptHandle {
        session: session.clone(),
        token: token.clone(),
    });
    inner
        .runs
        .set(&p.session_id, handle.clone(), p.session_key.as_deref());
    let mut outcome = drive_prompt(&session, p, token, spec.timeout).await;
    // The sink sees every block before the run returns (and before compaction waits).
    let _sent = dispatcher.send(SinkCall::Flush);
    let flushed = dispatcher.flush().await;
    session.unsubscribe(sub);
    session.wait_for_idle().await;
    inner.runs.clear(&p.session_id, &handle);
    {
        let machine = listener
            .machine
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        outcome.assistant_texts = machine.assistant_texts.clone();
        outcome.last_tool_error = machine.tools.last_tool_error.clone();
        outcome.mutating_tool_ran = machine
            .tools
            .last_tool_error
            .as_ref()
            .is_some_and(|e| e.mutating_action);
    }
    outcome.observed = listener
        .observed
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    outcome.messages = session.messages();
    outcome.session_id = session.session_id();
    if pruning && answered(&outcome) {
        // The provider's prompt cache was touched: the next pruning waits a whole TTL from now.
        // A failed write shows in `unsaved` below.
        let data = json!({"timestamp": inner.clock.now_ms(), "provider": spec.model.provider, "modelId": spec.model.id});
        session.append_custom_entry(CACHE_TTL_CUSTOM_TYPE, Some(data));
    }
    // Whatever the session file could not take this turn (the listener saw the first failure;
    // this also covers writes after it unsubscribed).
    if let Some(u) = session.unsaved() {
        warnings.push(u.to_string());
    }
    if let Some(m) = &cached.memory {
        warnings.extend(flush_memory(m));
    }
    for w in warnings {
        if !outcome.observed.warnings.contains(&w) {
            outcome.observed.warnings.push(w);
        }
    }
    // Only a cleanly ended attempt leaves a session the next one can trust without re-reading.
    let clean = flushed.is_ok() && answered(&outcome) && outcome.observed.warnings.is_empty();
    cached.hooks.release_dispatcher();
    if clean {
        put_cached(inner, &spec.session_file, cached, fingerprint);
    }
    flushed?;
    Ok(outcome)
}

/// The history pipeline before prompting (C3 step 15, C18): a trailing user message without an
/// answer (a crashed run) is branched away; the transcript is sanitised for the provider (tool
/// results paired, thinking dropped where the provider needs it) and limited to the channel's
/// history size. The session file keeps its entries; only the context sent changes.
fn prepare_history(
    session: &AgentSession,
    p: &RunParams,
    model: &Model,
    allowed: &[String],
    inner: &Inner,
) {
    let mut messages = session.messages();
    if messages.last().is_some_and(|m| m.role() == "user") {
        let mut sm = session.session_manager();
        let parent = sm.leaf_entry().and_then(|e| e.parent_id.clone());
        match parent {
            Some(id) => {
                // The parent exists (it is the leaf's parent), so branching cannot fail.
                let _parent_exists = sm.branch(&id);
            }
            None => sm.reset_leaf(),
        }
        drop(sm);
        messages.pop();
    }
    let policy = resolve_transcript_policy(&model.api, &model.provider, &model.id);
    let sanitized =
        sanitize_session_history(messages, &policy, Some(allowed), inner.clock.now_ms()).messages;
    let config = inner.config();
    let limit = history_limit_from_session_key(p.session_key.as_deref(), &config.channels);
    let limited = limit_history_turns(&sanitized, limit, |m| m.role() == "user").to_vec();
    session.agent().replace_messages(limited);
}

/// Runs the prompt, racing the run's abort token and the timeout (spec §2.2).
async fn drive_prompt(
    session: &AgentSession,
    p: &RunParams,
    token: CancellationToken,
    timeout: Duration,
) -> AttemptOutcome {
    let mut outcome = AttemptOutcome::default();
    let opts = PromptOptions {
        expand: false,
        images: p.images.clone(),
        ..PromptOptions::default()
    };
    let prompt = session.prompt(&p.prompt, opts);
    tokio::pin!(prompt);
    let timer = tokio::time::sleep(timeout.max(Duration::from_millis(1)));
    tokio::pin!(timer);
    let mut grace_used = false;
    let prompt_done = CancellationToken::new();
    let _stop_aborting = prompt_done.clone().drop_guard();
    let result = loop {
        tokio::select! {
            r = &mut prompt => break r,
            () = token.cancelled(), if !outcome.aborted => {
                outcome.aborted = true;
                abort_in_background(session, prompt_done.clone());
            }
            () = &mut timer, if !outcome.timed_out => {
                if session.is_compacting() && !grace_used {
                    grace_used = true;
                    timer.as_mut().reset(tokio::time::Instant::now() + COMPACTION_GRACE);
                } else {
                    outcome.timed_out = true;
                    outcome.timed_out_during_compaction = session.is_compacting();
                    outcome.aborted = true;
                    token.cancel();
                    abort_in_background(session, prompt_done.clone());
                }
            }
        }
    };
    if let Err(e) = result {
        outcome.prompt_error = Some(e.to_string());
    }
    outcome
}

/// `session.abort()` waits until the run is idle, which needs the prompt future polled: it runs
/// on its own task. An abort that lands while the prompt is still setting up (before the agent
/// run exists) finds nothing to stop, so it is repeated until the prompt has returned.
fn abort_in_background(session: &AgentSession, prompt_done: CancellationToken) {
    let session = session.clone();
    tokio::spawn(async move {
        while !prompt_done.is_cancelled() {
            session.abort().await;
            tokio::select! {
                () = prompt_done.cancelled() => {}
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
    });
}
