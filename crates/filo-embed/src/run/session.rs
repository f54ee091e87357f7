//! The `AgentSession` of an attempt: built from the session file, or taken back from the session
//! cache (C5) when the same session ran a moment ago with the same model, credential, thinking
//! level, system prompt, workspace and tools, and nobody else has written its file since.
//!
//! A cached session keeps its parsed transcript, its context and its memory view, so a busy
//! embedder does not re-read and re-parse a growing transcript for every turn. Only a session
//! whose attempt ended cleanly goes back into the cache; anything else is dropped and the next
//! attempt reopens the file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use filo_agent::AgentTool;
use filo_ai::{Model, ThinkingLevel};
use filo_core::builder::SessionBuilder;
use filo_core::extension::ToolCallEvent;
use filo_core::playfilo::Playfilo;
use filo_core::{AgentSession, Extension, Settings};
use filo_session::{SessionLock, SessionManager};
use futures::future::BoxFuture;
use serde_json::json;

use crate::embedder::Inner;
use crate::error::RunError;
use crate::history::guard::{DEFAULT_MAX_TOOL_RESULT_CHARS, GuardOptions, ToolResultGuard};
use crate::history::safeguard::Safeguard;
use crate::session_store::cache::Take;
use crate::sink::SinkCall;
use crate::subscriber::dispatch::BlockDispatcher;

/// Idle embedded sessions, keyed by session file.
pub(crate) type EmbedSessionCache =
    crate::session_store::cache::SessionCache<CachedSession, Fingerprint>;

/// What must be equal for a cached session to serve an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    pub provider: String,
    pub model: String,
    pub context_window: u64,
    pub api_key: String,
    pub think_level: ThinkingLevel,
    pub system_prompt: String,
    pub workspace: PathBuf,
    /// The names of the tools offered (before the memory's).
    pub tools: Vec<String>,
    /// The memory database, when the memory is on.
    pub memory: Option<PathBuf>,
}

/// An idle session with what the next attempt re-wires.
pub(crate) struct CachedSession {
    pub session: AgentSession,
    pub hooks: Arc<EmbedHooks>,
    pub memory: Option<Arc<Playfilo>>,
}

/// The flush-before-tool barrier of an embedded session: every block produced before a tool call
/// is delivered first. The dispatcher is the attempt's, so a cached session is pointed at the
/// new attempt's. (The embedded system prompt is the session's override, G6.)
pub(crate) struct EmbedHooks {
    /// `None` while the session is idle: an idle session keeps no caller's sink alive.
    dispatcher: Mutex<Option<Arc<BlockDispatcher<SinkCall>>>>,
}

impl EmbedHooks {
    pub fn new(dispatcher: Arc<BlockDispatcher<SinkCall>>) -> Self {
        Self {
            dispatcher: Mutex::new(Some(dispatcher)),
        }
    }

    pub fn set_dispatcher(&self, dispatcher: Arc<BlockDispatcher<SinkCall>>) {
        *self
            .dispatcher
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(dispatcher);
    }

    /// Lets go of the attempt's dispatcher (and with it the caller's sink) when the turn ends.
    pub fn release_dispatcher(&self) {
        self.dispatcher
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    fn dispatcher(&self) -> Option<Arc<BlockDispatcher<SinkCall>>> {
        self.dispatcher
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Extension for EmbedHooks {
    fn name(&self) -> &str {
        "filo-embed"
    }

    fn tool_call(&self, _call: &ToolCallEvent) -> BoxFuture<'_, Option<String>> {
        let dispatcher = self.dispatcher();
        Box::pin(async move {
            // A failed sink does not block the tool: the run reports the sink error at its end.
            if let Some(d) = dispatcher {
                let _reported_later = d.flush().await;
            }
            None
        })
    }
}

/// The persist-time tool-result guard (C18, G7): what an embedded session writes never leaves a
/// tool call without its result, and no tool result over the live cap reaches the file (the
/// running turn still sees it whole).
pub(crate) struct PersistGuard {
    guard: Mutex<ToolResultGuard>,
    clock: Arc<dyn crate::clock::Clock>,
}

impl PersistGuard {
    /// A guard capping results at `min(floor(window × 0.3) × 4, 16 000)` chars (at least 2 000).
    pub fn new(context_window: u64, clock: Arc<dyn crate::clock::Clock>) -> Self {
        let live = (context_window as f64 * 0.3).floor() as usize * 4;
        let cap = live.clamp(2_000, DEFAULT_MAX_TOOL_RESULT_CHARS);
        Self {
            guard: Mutex::new(ToolResultGuard::new(GuardOptions {
                max_tool_result_chars: cap,
                ..GuardOptions::default()
            })),
            clock,
        }
    }
}

impl Extension for PersistGuard {
    fn name(&self) -> &str {
        "tool-result-guard"
    }

    fn before_persist(&self, message: filo_agent::AgentMessage) -> Vec<filo_agent::AgentMessage> {
        let now = self.clock.now_ms();
        self.guard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .accept(message, now)
    }
}

/// The compaction safeguard (C15) when `agents.defaults.compaction.mode` is `safeguard`.
pub(crate) fn safeguard_for(inner: &Inner, model: &Model) -> Option<Arc<dyn Extension>> {
    let config = inner.config();
    let c = &config.defaults.compaction;
    (c.mode.trim() == "safeguard").then(|| {
        let share = if c.max_history_share.is_finite() && c.max_history_share > 0.0 {
            c.max_history_share.min(1.0)
        } else {
            0.5
        };
        Arc::new(Safeguard {
            max_history_share: share,
            context_window: model.context_window,
        }) as Arc<dyn Extension>
    })
}

/// What an embedded session is built from.
pub(crate) struct SessionSetup {
    pub workspace: PathBuf,
    pub model: Model,
    pub api_key: String,
    pub think_level: ThinkingLevel,
    pub tools: Vec<Arc<dyn AgentTool>>,
    pub manager: SessionManager,
    pub extensions: Vec<Arc<dyn Extension>>,
}

/// An `AgentSession` for an embedded run: one model, one credential, settings in memory with
/// the session's own retries off (rotation and fallback replace them, G3/G4) and the
/// compaction reserve raised to the embedded floor.
pub(crate) fn create_session(inner: &Inner, s: SessionSetup) -> Result<AgentSession, RunError> {
    let config = inner.config();
    let reserve = config.defaults.compaction.reserve_tokens_floor.max(16_384);
    let key = s.api_key;
    let mut builder = SessionBuilder::new(s.workspace, inner.client.clone(), inner.today())
        .models(Vec::new(), Some(s.model))
        .thinking(Some(s.think_level))
        .tools(s.tools)
        .session(s.manager)
        .settings(Settings::in_memory(json!({
            "retry": {"enabled": false},
            "compaction": {"reserveTokens": reserve},
        })))
        .api_key(Arc::new(move |_| Some(key.clone())));
    for e in s.extensions {
        builder = builder.extension(e);
    }
    Ok(builder.build()?)
}

/// Opens the session file (blocking IO off the runtime's threads). With a session id, a missing
/// or empty file starts that session (its header id is the run's session id, G1).
pub(crate) async fn open_session(
    path: PathBuf,
    session_id: Option<String>,
    cwd: String,
) -> Result<SessionManager, RunError> {
    tokio::task::spawn_blocking(move || match session_id {
        Some(id) => SessionManager::open_or_create(&path, &id, &cwd),
        None => SessionManager::open(&path, &cwd),
    })
    .await
    .map_err(|e| RunError::Session(format!("opening the session panicked: {e}")))?
    .map_err(|e| RunError::Session(e.to_string()))
}

/// Takes the cross-process lock of the session file (G2) for a turn, waiting up to `wait` while
/// another process (a second gateway, the CLI) writes it.
pub(crate) async fn lock_session(
    inner: &Inner,
    file: &Path,
    wait: std::time::Duration,
) -> Result<SessionLock, RunError> {
    let (file, now) = (file.to_path_buf(), inner.clock.now_ms());
    tokio::task::spawn_blocking(move || SessionLock::acquire(&file, wait, now))
        .await
        .map_err(|e| RunError::Session(format!("locking the session panicked: {e}")))?
        .map_err(RunError::from)
}

/// The cached session of `file` when it still fits `fingerprint`.
pub(crate) fn take_cached(
    inner: &Inner,
    file: &Path,
    fingerprint: &Fingerprint,
) -> Option<CachedSession> {
    match inner.sessions.take(file, fingerprint) {
        Take::Hit(c) => Some(c),
        Take::Miss(_) => None,
    }
}

/// Returns an idle session to the cache (dropped when the cache is off).
pub(crate) fn put_cached(
    inner: &Inner,
    file: &Path,
    cached: CachedSession,
    fingerprint: Fingerprint,
) {
    // A disabled cache hands the session back; dropping it flushes its memory.
    let _dropped = inner.sessions.put(file, cached, fingerprint);
}
