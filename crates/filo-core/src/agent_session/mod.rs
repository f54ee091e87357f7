//! `AgentSession`: the agent, its tools and its session file as one object (pi spec §3.11–3.12).
//!
//! Created by one builder function, [`AgentSession::create`]. Every message the agent finishes is
//! appended to the session file as it happens (so a crash loses at most the message in flight);
//! after each run the session retries retryable provider errors with backoff and compacts the
//! context when it nears the model's window or overflowed it. Extensions see every step.

mod bash;
mod compact;
mod entries;
mod events;
pub mod export;
mod manage;
mod persist;
mod run;
mod tree;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use filo_agent::{Agent, AgentEvent, AgentOptions, AgentTool};
use filo_ai::{Model, ModelClient, ThinkingLevel};
use filo_session::{EntryKind, SessionManager};
use tokio_util::sync::CancellationToken;

pub use events::{CompactionReason, CompactionResult, SessionEvent};

pub use bash::BashResult;
pub use entries::ClearedQueue;
pub use manage::{CommandInfo, CycleModelResult, ForkMessage, SessionStats};
pub use persist::UnsavedSession;
pub use run::{Disposition, PreflightHook, PromptOptions, StreamingBehavior};
pub use tree::{NavigateOptions, NavigateResult};

use crate::CoreError;
use crate::convert::{convert_to_llm, into_agent};
use crate::extension::{EntryContext, Extension, SessionChange, SessionInfo};
use crate::model_list::ModelList;
use crate::resources::{ContextFile, PromptTemplate, Skill};
use crate::settings::Settings;
use crate::system_prompt::{PromptTool, SystemPromptInput, build_system_prompt};

/// Resolves the API key of a provider (runtime override, auth.json, environment, models.json).
/// Keyless providers (local servers) answer `Some("")`.
pub type ApiKeyResolver = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// A listener for session events. Called in order on the agent's task; must not block.
pub type SessionListener = Arc<dyn Fn(&SessionEvent) + Send + Sync>;

/// Resources the system prompt and the prompt box use.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    pub context_files: Vec<ContextFile>,
    pub skills: Vec<Skill>,
    pub templates: Vec<PromptTemplate>,
    /// `--system-prompt` / SYSTEM.md.
    pub custom_system_prompt: Option<String>,
    /// `--append-system-prompt` / APPEND_SYSTEM.md.
    pub append_system_prompt: Option<String>,
    /// The agent directory user resources were found in (the `baseDir` of their `sourceInfo`).
    pub agent_dir: Option<PathBuf>,
    /// pi's agent directory, when some user resources were read from it instead.
    pub pi_agent_dir: Option<PathBuf>,
}

/// Everything [`AgentSession::create`] needs (pi's `createAgentSession` options).
pub struct AgentSessionOptions {
    pub cwd: PathBuf,
    pub client: Arc<dyn ModelClient>,
    /// Every model the session may switch to (a `Vec` converts with `.into()`).
    pub models: ModelList,
    /// An explicit model; otherwise restored from the session or taken from the settings.
    pub model: Option<Model>,
    pub thinking_level: Option<ThinkingLevel>,
    /// Built-in and custom tools, all active.
    pub tools: Vec<Arc<dyn AgentTool>>,
    pub session: SessionManager,
    pub settings: Settings,
    pub api_key: ApiKeyResolver,
    pub resources: Resources,
    pub extensions: Vec<Arc<dyn Extension>>,
    /// Today as `YYYY-MM-DD` (UTC) for the system prompt.
    pub date: String,
}

#[derive(Default)]
struct RunState {
    retry_attempt: u32,
    retry_cancel: Option<CancellationToken>,
    compaction_cancel: Option<CancellationToken>,
    overflow_attempted: bool,
    persist_errors: u64,
    /// The running user command (`execute_bash`) and its sequence number.
    bash_cancel: Option<(u64, CancellationToken)>,
    bash_seq: u64,
    /// `bashExecution` messages recorded while streaming, appended at the next prompt.
    pending_bash: Vec<filo_session::BashExecution>,
    /// Texts of queued steering / follow-up messages not yet delivered (pi's display lists).
    pending_steer: Vec<String>,
    pending_follow_up: Vec<String>,
    /// A prompt is between its start and the agent run (compaction check, extensions): an abort
    /// then has no run to stop, so it is remembered here and the run is not started.
    in_preflight: bool,
    abort_in_preflight: bool,
    /// `abort` was called while a prompt chain ran (pi's `_agentRunAbortRequested`): reported by
    /// that chain's `agent_settled` and ruling out a retry.
    run_abort_requested: bool,
}

pub(crate) struct Inner {
    agent: Agent,
    client: Arc<dyn ModelClient>,
    cwd: PathBuf,
    models: ModelList,
    /// The models ctrl+p cycles through (`--models`); empty: every model with a key.
    scoped_models: Mutex<Vec<crate::model_resolve::ScopedModel>>,
    store: Mutex<SessionManager>,
    settings: Mutex<Settings>,
    api_key: ApiKeyResolver,
    /// Replaced by `/reload` ([`AgentSession::set_resources`]).
    resources: Mutex<Resources>,
    /// `images.blockImages`, read by every conversion for the model, so a change applies to the
    /// next request.
    block_images: Arc<std::sync::atomic::AtomicBool>,
    extensions: Vec<Arc<dyn Extension>>,
    listeners: Mutex<Arc<Vec<(u64, SessionListener)>>>,
    /// `listeners.len()`, set under the `listeners` lock: an agent event nobody listens to
    /// (every delta in print mode) takes no lock.
    listener_count: std::sync::atomic::AtomicUsize,
    next_listener: AtomicU64,
    state: Mutex<RunState>,
    /// Prompt chains in flight (a run plus its retries, compactions and continuations).
    busy: tokio::sync::watch::Sender<u32>,
    base_system_prompt: Mutex<String>,
    /// Replaces pi's prompt whenever it would be rebuilt (an embedder's own prompt, G6).
    system_prompt_override: Mutex<Option<String>>,
    date: String,
    /// Set when the model could not be restored or none was available.
    model_fallback_message: Option<String>,
    /// What extensions reported while loading the session (e.g. resumed from the DAG).
    notices: Vec<String>,
}

/// A weak handle to a session, for extensions (does not keep the session alive).
#[derive(Clone)]
pub struct SessionHandle(std::sync::Weak<Inner>);

impl SessionHandle {
    /// The session, if it still exists.
    pub fn upgrade(&self) -> Option<AgentSession> {
        self.0.upgrade().map(|inner| AgentSession { inner })
    }
}

/// The SDK's session object. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct AgentSession {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn clamp_level(model: Option<&Model>, level: ThinkingLevel) -> ThinkingLevel {
    match model {
        Some(m) if m.reasoning => m.effort_level(level),
        _ => ThinkingLevel::Off,
    }
}

impl AgentSession {
    /// Build a session (pi spec §3.11): restore or choose the model and thinking level, load the
    /// session's context into the agent, and record the first `model_change` /
    /// `thinking_level_change` entries of a new session.
    pub fn create(mut options: AgentSessionOptions) -> Result<AgentSession, CoreError> {
        let mut notices = persist::load_notices(&options.session);
        for ext in &options.extensions {
            notices.extend(ext.prepare_session(&mut options.session));
        }
        notices.extend(persist::unsaved_notice(&options.session));
        let ctx = options.session.build_context();
        let has_existing = !ctx.messages.is_empty();
        let key_ok = |m: &Model| (options.api_key)(&m.provider).is_some();
        let mut fallback = None;
        let model = match options.model.clone() {
            Some(m) => Some(m),
            None => {
                let restored = ctx.model.as_ref().and_then(|r| {
                    let found = options.models.find(&r.provider, &r.model_id);
                    if found.is_none_or(|m| !key_ok(m)) {
                        fallback = Some(format!(
                            "Could not restore model {}/{}",
                            r.provider, r.model_id
                        ));
                    }
                    found.filter(|m| key_ok(m)).cloned()
                });
                restored.or_else(|| initial_model(&options.models, &options.settings, &key_ok))
            }
        };
        if model.is_none() && fallback.is_none() {
            fallback = Some("No models available. Set an API key environment variable (for example ANTHROPIC_API_KEY or OPENAI_API_KEY), or run a local model with scripts/local-model.sh and use --provider llamacpp. Then select a model.".to_string());
        }
        let branch_has_level = options
            .session
            .last_on_branch(None, "thinking_level_change")
            .is_some();
        let settings_level = options.settings.values().default_thinking_level();
        let wanted = options.thinking_level.unwrap_or_else(|| {
            if has_existing && branch_has_level {
                ThinkingLevel::parse(&ctx.thinking_level).unwrap_or(settings_level)
            } else {
                settings_level
            }
        });
        let thinking = clamp_level(model.as_ref(), wanted);
        let block_images = Arc::new(std::sync::atomic::AtomicBool::new(
            options.settings.values().block_images(),
        ));
        let blocked = block_images.clone();
        let steering = options.settings.values().steering_mode();
        let follow_up = options.settings.values().follow_up_mode();
        let messages = ctx.messages.into_iter().map(into_agent).collect();
        let resolver = options.api_key.clone();
        let get_api_key: filo_agent::GetApiKey = Arc::new(move |provider: String| {
            let key = resolver(&provider).filter(|k| !k.is_empty());
            Box::pin(async move { Ok(key) })
        });
        let agent = Agent::with_options(
            options.client.clone(),
            AgentOptions {
                model: model.clone(),
                thinking_level: thinking,
                messages,
                convert_to_llm: Arc::new(move |ms| {
                    convert_to_llm(ms, blocked.load(std::sync::atomic::Ordering::Relaxed))
                }),
                steering_mode: steering,
                follow_up_mode: follow_up,
                stream_options: provider_stream_options(
                    &options.settings,
                    options.session.session_id().to_string(),
                ),
                get_api_key: Some(get_api_key),
                ..AgentOptions::default()
            },
        );
        let info = SessionInfo {
            session_id: options.session.session_id().to_string(),
            session_file: options
                .session
                .session_file()
                .map(std::path::Path::to_path_buf),
            cwd: options.cwd.clone(),
        };
        let mut tools = options.tools;
        for ext in &options.extensions {
            tools.extend(ext.tools(&info));
        }
        agent.set_tools(tools);
        let session = AgentSession {
            inner: Arc::new(Inner {
                agent,
                client: options.client,
                cwd: options.cwd,
                models: options.models,
                scoped_models: Mutex::new(Vec::new()),
                store: Mutex::new(options.session),
                settings: Mutex::new(options.settings),
                api_key: options.api_key,
                resources: Mutex::new(options.resources),
                block_images,
                extensions: options.extensions,
                listeners: Mutex::new(Arc::new(Vec::new())),
                listener_count: std::sync::atomic::AtomicUsize::new(0),
                next_listener: AtomicU64::new(1),
                state: Mutex::new(RunState::default()),
                busy: tokio::sync::watch::Sender::new(0),
                base_system_prompt: Mutex::new(String::new()),
                system_prompt_override: Mutex::new(None),
                date: options.date,
                model_fallback_message: fallback,
                notices,
            }),
        };
        for ext in &session.inner.extensions {
            ext.attach(SessionHandle(Arc::downgrade(&session.inner)));
        }
        session.rebuild_system_prompt();
        session.install_hooks();
        if has_existing {
            if !branch_has_level {
                session.append_entry(EntryKind::ThinkingLevelChange {
                    thinking_level: thinking.as_str().into(),
                });
            }
        } else {
            if let Some(m) = &model {
                session.append_entry(EntryKind::ModelChange {
                    provider: m.provider.clone(),
                    model_id: m.id.clone(),
                });
            }
            session.append_entry(EntryKind::ThinkingLevelChange {
                thinking_level: thinking.as_str().into(),
            });
        }
        for ext in &session.inner.extensions {
            ext.session_changed(SessionChange::Start, &session.info());
        }
        Ok(session)
    }

    /// Subscribe to the agent and route its events: persistence first, then listeners.
    fn install_hooks(&self) {
        let weak = Arc::downgrade(&self.inner);
        self.inner.agent.subscribe(move |ev: &AgentEvent| {
            if let Some(inner) = weak.upgrade() {
                let s = AgentSession { inner };
                s.on_agent_event(ev);
            }
        });
        self.install_tool_hooks();
    }

    fn on_agent_event(&self, ev: &AgentEvent) {
        self.track_delivered(ev);
        if let AgentEvent::MessageEnd { message } = ev {
            self.persist_message(message);
        }
        // Most deltas reach no session listener (print mode has none): clone only for some.
        if self.inner.listener_count.load(Ordering::Acquire) == 0 {
            return;
        }
        let listeners = lock(&self.inner.listeners).clone();
        if listeners.is_empty() {
            return;
        }
        let ev = match ev {
            AgentEvent::AgentEnd { messages, .. } => SessionEvent::Agent(AgentEvent::AgentEnd {
                messages: messages.clone(),
                will_retry: self.will_retry_after(messages),
            }),
            other => SessionEvent::Agent(other.clone()),
        };
        for (_, l) in listeners.iter() {
            l(&ev);
        }
    }

    fn persist_message(&self, message: &filo_agent::AgentMessage) {
        if self.inner.extensions.is_empty() {
            return self.persist_one(message);
        }
        let mut messages = vec![message.clone()];
        for ext in &self.inner.extensions {
            messages = messages
                .into_iter()
                .flat_map(|m| ext.before_persist(m))
                .collect();
        }
        for m in &messages {
            self.persist_one(m);
        }
    }

    fn persist_one(&self, message: &filo_agent::AgentMessage) {
        let kind = match message {
            filo_agent::AgentMessage::Llm(m) => {
                EntryKind::Message(filo_session::SessionMessage::Llm(m.clone()))
            }
            filo_agent::AgentMessage::Custom(c) if c.role == "custom" => {
                match crate::convert::to_session(message) {
                    Some(filo_session::SessionMessage::Custom(cm)) => EntryKind::CustomMessage {
                        custom_type: cm.custom_type,
                        content: cm.content,
                        display: cm.display,
                        details: cm.details,
                    },
                    _ => return,
                }
            }
            filo_agent::AgentMessage::Custom(_) => return,
        };
        self.append_entry(kind);
    }

    fn entry_context(&self) -> EntryContext {
        let agent = &self.inner.agent;
        EntryContext {
            session: self.info(),
            model: agent.model(),
            thinking_level: agent.thinking_level(),
            system_prompt: agent.system_prompt(),
            tools: agent
                .tools()
                .iter()
                .map(|t| (t.name().to_string(), t.description().to_string()))
                .collect(),
        }
    }

    /// Facts about the session for extensions.
    pub fn info(&self) -> SessionInfo {
        let store = lock(&self.inner.store);
        SessionInfo {
            session_id: store.session_id().to_string(),
            session_file: store.session_file().map(std::path::Path::to_path_buf),
            cwd: self.inner.cwd.clone(),
        }
    }

    pub(crate) fn emit(&self, ev: &SessionEvent) {
        let listeners = lock(&self.inner.listeners).clone();
        for (_, l) in listeners.iter() {
            l(ev);
        }
    }

    /// Listen to session events; returns an id for [`AgentSession::unsubscribe`].
    pub fn subscribe(&self, listener: SessionListener) -> u64 {
        let id = self.inner.next_listener.fetch_add(1, Ordering::Relaxed);
        let mut l = lock(&self.inner.listeners);
        let mut v = (**l).clone();
        v.push((id, listener));
        self.inner.listener_count.store(v.len(), Ordering::Release);
        *l = Arc::new(v);
        id
    }

    /// Session events on an unbounded channel.
    pub fn subscribe_channel(&self) -> (u64, tokio::sync::mpsc::UnboundedReceiver<SessionEvent>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let id = self.subscribe(Arc::new(move |ev| {
            let _ = tx.send(ev.clone());
        }));
        (id, rx)
    }

    pub fn unsubscribe(&self, id: u64) -> bool {
        let mut l = lock(&self.inner.listeners);
        let before = l.len();
        let v: Vec<_> = l.iter().filter(|(i, _)| *i != id).cloned().collect();
        self.inner.listener_count.store(v.len(), Ordering::Release);
        *l = Arc::new(v);
        l.len() != before
    }

    /// Use `prompt` as the session's system prompt instead of pi's (OpenClaw's
    /// `applySystemPromptOverrideToSession`): it is the base every prompt starts from and what a
    /// rebuild yields; extensions' `before_agent_start` still apply on top. `None` goes back to
    /// pi's prompt.
    pub fn set_system_prompt_override(&self, prompt: Option<String>) {
        *lock(&self.inner.system_prompt_override) = prompt;
        self.rebuild_system_prompt();
    }

    /// Keep only the active tools named in `names` (built-in and extension tools alike, as pi's
    /// `--tools` / `--no-tools` allowlist), then rebuild the system prompt. Returns the names
    /// that matched no tool.
    pub fn retain_tools(&self, names: &[String]) -> Vec<String> {
        let tools = self.inner.agent.tools();
        let unknown = names
            .iter()
            .filter(|n| !tools.iter().any(|t| t.name() == n.as_str()))
            .cloned()
            .collect();
        let kept = tools
            .into_iter()
            .filter(|t| names.iter().any(|n| n == t.name()))
            .collect();
        self.inner.agent.set_tools(kept);
        self.rebuild_system_prompt();
        unknown
    }

    /// Rebuild the system prompt from the active tools and resources (or the override).
    pub fn rebuild_system_prompt(&self) {
        if let Some(prompt) = lock(&self.inner.system_prompt_override).clone() {
            *lock(&self.inner.base_system_prompt) = prompt.clone();
            self.inner.agent.set_system_prompt(prompt);
            return;
        }
        let tools: Vec<PromptTool> = self
            .inner
            .agent
            .tools()
            .iter()
            .map(|t| PromptTool {
                name: t.name().to_string(),
                snippet: None,
                guidelines: Vec::new(),
            })
            .collect();
        let r = lock(&self.inner.resources).clone();
        let cwd = self.inner.cwd.to_string_lossy();
        let prompt = build_system_prompt(&SystemPromptInput {
            custom: r.custom_system_prompt.as_deref(),
            append: r.append_system_prompt.as_deref(),
            tools: Some(&tools),
            context_files: &r.context_files,
            skills: &r.skills,
            date: &self.inner.date,
            cwd: &cwd,
        });
        *lock(&self.inner.base_system_prompt) = prompt.clone();
        self.inner.agent.set_system_prompt(prompt);
    }

    /// The underlying agent.
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// The session file manager (locked).
    pub fn session_manager(&self) -> MutexGuard<'_, SessionManager> {
        lock(&self.inner.store)
    }

    /// The settings (locked).
    pub fn settings(&self) -> MutexGuard<'_, Settings> {
        lock(&self.inner.settings)
    }

    pub fn model(&self) -> Option<Model> {
        self.inner.agent.model()
    }

    pub fn thinking_level(&self) -> ThinkingLevel {
        self.inner.agent.thinking_level()
    }

    pub fn is_streaming(&self) -> bool {
        self.inner.agent.is_streaming()
    }

    pub fn messages(&self) -> Vec<filo_agent::AgentMessage> {
        self.inner.agent.messages()
    }

    /// A copy of the last message of the history (without copying the rest).
    pub fn last_message(&self) -> Option<filo_agent::AgentMessage> {
        self.inner.agent.find_last(|m| Some(m.clone()))
    }

    pub fn system_prompt(&self) -> String {
        self.inner.agent.system_prompt()
    }

    pub fn session_id(&self) -> String {
        lock(&self.inner.store).session_id().to_string()
    }

    pub fn session_file(&self) -> Option<PathBuf> {
        lock(&self.inner.store)
            .session_file()
            .map(std::path::Path::to_path_buf)
    }

    pub fn session_name(&self) -> Option<String> {
        lock(&self.inner.store).session_name().map(str::to_string)
    }

    /// What extensions reported while loading the session.
    pub fn notices(&self) -> &[String] {
        &self.inner.notices
    }

    /// Why the model could not be restored or chosen, if so.
    pub fn model_fallback_message(&self) -> Option<&str> {
        self.inner.model_fallback_message.as_deref()
    }

    /// All models the session knows.
    pub fn models(&self) -> &[Model] {
        self.inner.models.all()
    }

    /// Prompt templates loaded for this session.
    pub fn prompt_templates(&self) -> Vec<PromptTemplate> {
        lock(&self.inner.resources).templates.clone()
    }

    /// The resources (context files, skills, templates, SYSTEM.md) now in use.
    pub fn resources(&self) -> Resources {
        lock(&self.inner.resources).clone()
    }

    /// Use freshly loaded resources (`/reload`): the system prompt is rebuilt from them, and
    /// templates and skills expand from them from the next prompt on.
    pub fn set_resources(&self, resources: Resources) {
        *lock(&self.inner.resources) = resources;
        self.rebuild_system_prompt();
    }

    /// The text of the last assistant message.
    pub fn last_assistant_text(&self) -> Option<String> {
        self.inner
            .agent
            .find_last(|m| m.as_assistant().map(filo_ai::AssistantMessage::text))
    }
}

/// pi's `findInitialModel` without scopes: the settings default when it has a key, else the first
/// model with a key.
fn initial_model(
    models: &ModelList,
    settings: &Settings,
    key_ok: &dyn Fn(&Model) -> bool,
) -> Option<Model> {
    let provider = settings.values().default_provider.as_deref();
    let id = settings.values().default_model.as_deref();
    if let (Some(p), Some(i)) = (provider, id)
        && let Some(m) = models.find(p, i).filter(|m| key_ok(m))
    {
        return Some(m.clone());
    }
    models.all().iter().find(|m| key_ok(m)).cloned()
}

/// The provider-call options the settings control (pi 0.73's `retry.provider.*`):
/// `retry.provider.timeoutMs` (the idle timeout: no byte for this long ends the attempt),
/// `retry.provider.maxRetries` (client retries of a failure before anything streamed) and
/// `retry.provider.maxRetryDelayMs` (the older `retry.maxDelayMs` is read when it is absent).
/// Unset values keep the client's defaults (120 s, 2 retries, 60 s).
fn provider_stream_options(settings: &Settings, session_id: String) -> filo_ai::StreamOptions {
    let values = settings.values();
    // `retry.provider.idleTimeoutMs` is filo's own key; pi 0.73's `retry.provider.timeoutMs` (its
    // per-request timeout) stands in for it when only that one is set.
    let idle_ms = values
        .provider_idle_timeout_ms()
        .or_else(|| values.provider_timeout_ms())
        .filter(|ms| *ms > 0);
    filo_ai::StreamOptions {
        session_id: Some(session_id),
        max_retry_delay_ms: Some(values.provider_max_retry_delay_ms()),
        max_retries: values.provider_max_retries(),
        idle_timeout: idle_ms.map(std::time::Duration::from_millis),
        thinking_budgets: values.thinking_budgets(),
        ..filo_ai::StreamOptions::default()
    }
}
