//! The public entry point (design §4.3): one [`Embedder`] value owns the config, paths, the
//! shared model client, the lanes, the active-run registry and the auth stores. No global state;
//! clones share everything.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use filo_ai::{Client, Env, ModelClient, ProviderRegistry, RetryPolicy};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::auth::AuthProfileStore;
use crate::auth::store::AuthProfileFile;
use crate::classify::FailoverReason;
use crate::clock::Clock;
use crate::config::{DEFAULT_MAX_CONCURRENT, EmbedConfig};
use crate::error::RunError;
use crate::failover::{
    FallbackAttempt, FallbackResult, all_failed_message, attempt_of, ends_chain,
    fallback_candidates,
};
use crate::lanes::{
    CommandQueue, EnqueueOptions, MAIN_LANE, resolve_global_lane, resolve_session_lane,
};
use crate::memory::MemoryHubs;
use crate::paths::EmbedPaths;
use crate::registry::ActiveRuns;
use crate::run::compact::{CompactResult, compact_file};
use crate::run::params::{RunParams, RunResult};
use crate::run::resolve::{requested_candidate, resolve_run};
use crate::run::run_loop::run_loop;
use crate::run::session::EmbedSessionCache;
use crate::session_store::cache::{DEFAULT_CACHE_CAPACITY, DEFAULT_CACHE_TTL_MS};
use crate::sink::{ChannelSink, ReplyEvent, ReplySink};

/// What an [`Embedder`] is built from. Nothing is read from the process environment: the
/// binary that embeds filo passes what it wants the runner to see.
pub struct EmbedDeps {
    pub config: EmbedConfig,
    pub paths: EmbedPaths,
    /// Providers and models (the built-in catalog plus `models.json`).
    pub registry: ProviderRegistry,
    /// Variables API keys are looked up in.
    pub env: Env,
    /// The model client; default: one shared [`Client`] without transport retries (rotation and
    /// fallback replace them).
    pub client: Option<Arc<dyn ModelClient>>,
    pub clock: Arc<dyn Clock>,
    /// Keys for runs without an auth profile, before the environment and `models.json` (e.g.
    /// filo's `auth.json` through `filo_core::loader::api_key_resolver`); `None`: environment
    /// and `models.json` only.
    pub api_key: Option<filo_core::agent_session::ApiKeyResolver>,
}

pub(crate) struct Inner {
    config: RwLock<Arc<EmbedConfig>>,
    pub paths: EmbedPaths,
    pub registry: Arc<ProviderRegistry>,
    pub env: Arc<Env>,
    pub client: Arc<dyn ModelClient>,
    pub clock: Arc<dyn Clock>,
    pub api_key: Option<filo_core::agent_session::ApiKeyResolver>,
    pub lanes: CommandQueue,
    pub runs: ActiveRuns,
    pub shutdown: CancellationToken,
    auth: Mutex<HashMap<String, AuthProfileStore>>,
    auth_backing: RwLock<Option<AuthBacking>>,
    pub tool_factories: RwLock<Vec<ToolFactory>>,
    /// Idle sessions kept between turns (C5).
    pub sessions: EmbedSessionCache,
    /// The memory: one hub per database for every session (G11).
    pub memory: MemoryHubs,
    /// The environment bash's shell starts from: the embedder's variables, built once.
    pub shell_env: Arc<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
}

/// Makes the backing of an agent's auth profile store from the agent id and the file it would
/// otherwise use (see [`Embedder::set_auth_backing`]).
pub type AuthBacking =
    Arc<dyn Fn(&str, AuthProfileFile) -> Arc<dyn crate::auth::ProfileBacking> + Send + Sync>;

/// What a tool factory knows about the run it makes tools for.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub session_id: String,
    pub session_key: Option<String>,
    pub workspace_dir: PathBuf,
}

/// Makes an embedder's own tools for a run (offered beside filo's built-ins, under the same
/// tool policy).
pub type ToolFactory =
    Arc<dyn Fn(&ToolContext) -> Vec<Arc<dyn filo_agent::AgentTool>> + Send + Sync>;

impl Inner {
    /// The current config.
    pub fn config(&self) -> Arc<EmbedConfig> {
        self.config
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Today (UTC) as `YYYY-MM-DD`.
    pub fn today(&self) -> String {
        civil_date(self.clock.now_ms())
    }

    /// The auth profile store of an agent (opened once, shared by its runs).
    pub fn auth_store(&self, agent_id: &str) -> Result<AuthProfileStore, RunError> {
        let mut stores = self.auth.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = stores.get(agent_id) {
            return Ok(s.clone());
        }
        let file = AuthProfileFile::in_agent_dir(&self.paths.agent_dir(agent_id));
        let backing: Arc<dyn crate::auth::ProfileBacking> = match &*self
            .auth_backing
            .read()
            .unwrap_or_else(PoisonError::into_inner)
        {
            Some(make) => make(agent_id, file),
            None => Arc::new(file),
        };
        let store = AuthProfileStore::open_backing(
            backing,
            self.clock.clone(),
            Arc::new(self.config().auth.clone()),
        )
        .map_err(|e| RunError::Config(e.to_string()))?;
        stores.insert(agent_id.to_owned(), store.clone());
        Ok(store)
    }

    /// The agent's own system prompt from the config, when it has one (else each attempt builds
    /// the embedded prompt from the tools it offers).
    pub fn custom_system_prompt(&self, agent_id: &str) -> Option<String> {
        self.config()
            .agent(agent_id)
            .and_then(|a| a.system_prompt.clone())
            .filter(|p| !p.trim().is_empty())
    }
}

/// The embedded runner. Cheap to clone.
#[derive(Clone)]
pub struct Embedder {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("state_dir", &self.inner.paths.state_dir)
            .finish_non_exhaustive()
    }
}

/// A run started by [`Embedder::run_streaming`].
pub type RunTask = tokio::task::JoinHandle<()>;

/// What [`Embedder::compact`] compacts.
#[derive(Debug, Clone)]
pub struct CompactParams {
    pub session_id: String,
    pub session_key: Option<String>,
    pub session_file: Option<PathBuf>,
    pub agent_id: Option<String>,
    pub workspace_dir: PathBuf,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub custom_instructions: Option<String>,
}

impl Embedder {
    /// An embedder; needs a tokio runtime only when runs start.
    pub fn new(deps: EmbedDeps) -> Result<Self, RunError> {
        let client: Arc<dyn ModelClient> = match deps.client {
            Some(c) => c,
            None => Arc::new(
                Client::new(deps.registry.clone(), deps.env.clone())
                    .map_err(|e| RunError::Config(format!("model client: {e}")))?
                    .with_retry(RetryPolicy {
                        max_retries: 0,
                        base_delay: Duration::from_millis(1),
                        max_delay: Duration::from_millis(1),
                    }),
            ),
        };
        let shell_env = Arc::new(deps.env.vars().map(|(k, v)| (k.into(), v.into())).collect());
        let lanes = CommandQueue::new();
        lanes.set_concurrency(
            MAIN_LANE,
            deps.config
                .defaults
                .max_concurrent
                .unwrap_or(DEFAULT_MAX_CONCURRENT),
        );
        Ok(Self {
            inner: Arc::new(Inner {
                config: RwLock::new(Arc::new(deps.config)),
                paths: deps.paths,
                registry: Arc::new(deps.registry),
                env: Arc::new(deps.env),
                client,
                clock: deps.clock.clone(),
                api_key: deps.api_key,
                lanes,
                runs: ActiveRuns::new(),
                shutdown: CancellationToken::new(),
                auth: Mutex::new(HashMap::new()),
                auth_backing: RwLock::new(None),
                tool_factories: RwLock::new(Vec::new()),
                sessions: EmbedSessionCache::new(
                    DEFAULT_CACHE_CAPACITY,
                    DEFAULT_CACHE_TTL_MS,
                    deps.clock.clone(),
                ),
                memory: MemoryHubs::default(),
                shell_env,
            }),
        })
    }

    /// The config in use.
    pub fn config(&self) -> Arc<EmbedConfig> {
        self.inner.config()
    }

    /// Replaces the config (hot reload); runs in progress keep the one they started with.
    pub fn set_config(&self, config: EmbedConfig) {
        // Idle sessions were built under the old config (compaction reserve, tools, memory).
        self.inner.sessions.clear();
        if let Some(n) = config.defaults.max_concurrent {
            self.inner.lanes.set_concurrency(MAIN_LANE, n);
        }
        self.inner
            .auth
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        *self
            .inner
            .config
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(config);
    }

    /// Runs one turn (`runEmbeddedPiAgent`): queued in the session's lane, then in the global
    /// lane, then the run loop. Replies go to `sink` as they are produced.
    pub async fn run(
        &self,
        params: RunParams,
        sink: Arc<dyn ReplySink>,
    ) -> Result<RunResult, RunError> {
        let fallback_configured = !self.config().defaults.model.fallbacks.is_empty();
        self.run_in_lanes(params, sink, fallback_configured).await
    }

    /// Runs one turn through the model fallback chain (C12, `runWithModelFallback`): the run's
    /// model, then the fallbacks (`fallbacks_override`, even empty, replaces the configured
    /// ones and the primary), until one answers. Each candidate is a whole run (lanes, profile
    /// rotation, compaction); a candidate whose profiles are all cooling down fails at once,
    /// without a request.
    pub async fn run_with_fallback(
        &self,
        params: RunParams,
        sink: Arc<dyn ReplySink>,
        fallbacks_override: Option<Vec<String>>,
    ) -> Result<FallbackResult, RunError> {
        let requested = requested_candidate(&self.inner, &params)?;
        let candidates =
            fallback_candidates(&self.config(), requested, fallbacks_override.as_deref());
        let mut attempts: Vec<FallbackAttempt> = Vec::new();
        let mut last_error = None;
        let count = candidates.len();
        for (i, candidate) in candidates.iter().enumerate() {
            let mut p = params.clone();
            p.provider = Some(candidate.0.clone());
            p.model = Some(candidate.1.clone());
            match self.run_in_lanes(p, sink.clone(), true).await {
                Ok(result) => {
                    let notice = attempts
                        .first()
                        .filter(|a| a.reason == FailoverReason::ModelNotFound)
                        .map(|a| {
                            format!(
                                "Model \"{}/{}\" not found. Fell back to \"{}/{}\".",
                                a.provider, a.model, candidate.0, candidate.1
                            )
                        });
                    return Ok(FallbackResult {
                        result,
                        provider: candidate.0.clone(),
                        model: candidate.1.clone(),
                        attempts,
                        notice,
                    });
                }
                Err(e) if ends_chain(&e) => return Err(e),
                Err(RunError::Failover(f)) => {
                    attempts.push(attempt_of(candidate, &f));
                    last_error = Some(RunError::Failover(f));
                }
                Err(e) if i + 1 == count => return Err(e),
                Err(e) => {
                    attempts.push(FallbackAttempt {
                        provider: candidate.0.clone(),
                        model: candidate.1.clone(),
                        error: e.to_string(),
                        reason: FailoverReason::Unknown,
                        status: None,
                        code: None,
                    });
                    last_error = Some(e);
                }
            }
        }
        match (attempts.len(), last_error) {
            (0 | 1, Some(e)) => Err(e),
            _ => Err(RunError::AllModelsFailed {
                message: all_failed_message(&attempts),
                attempts,
            }),
        }
    }

    pub(crate) async fn run_in_lanes(
        &self,
        params: RunParams,
        sink: Arc<dyn ReplySink>,
        fallback_configured: bool,
    ) -> Result<RunResult, RunError> {
        let session_lane = resolve_session_lane(&params.lane_key());
        let global_lane = resolve_global_lane(params.lane.as_deref());
        let options = EnqueueOptions {
            abort: params.abort.clone(),
            ..EnqueueOptions::default()
        };
        let this = self.clone();
        let inner_options = options.clone();
        let outcome = self
            .inner
            .lanes
            .enqueue_with(
                &session_lane,
                move || async move {
                    let lanes = this.inner.lanes.clone();
                    lanes
                        .enqueue_with(
                            &global_lane,
                            move || async move {
                                run_loop(&this.inner, params, sink, fallback_configured).await
                            },
                            inner_options,
                        )
                        .await
                },
                options,
            )
            .await;
        outcome??
    }

    /// [`Embedder::run`] with the callbacks as events on a channel; the last event is
    /// [`ReplyEvent::Done`].
    pub fn run_streaming(
        &self,
        params: RunParams,
    ) -> (RunTask, mpsc::UnboundedReceiver<ReplyEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let this = self.clone();
        let task = tokio::spawn(async move {
            let sink = Arc::new(ChannelSink(tx.clone()));
            let result = this.run(params, sink).await;
            // The receiver may be gone; the run is saved either way.
            let _gone = tx.send(ReplyEvent::Done(Box::new(result)));
        });
        (task, rx)
    }

    /// Compacts a session now, queued in its lane like a run.
    pub async fn compact(&self, params: CompactParams) -> CompactResult {
        let key = params
            .session_key
            .clone()
            .filter(|k| !k.trim().is_empty())
            .unwrap_or_else(|| params.session_id.clone());
        let lane = resolve_session_lane(&key);
        let this = self.clone();
        let queued = self
            .inner
            .lanes
            .enqueue(&lane, move || async move { this.compact_now(params).await })
            .await;
        match queued {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => CompactResult::failed(e.to_string()),
            Err(e) => CompactResult::failed(e.to_string()),
        }
    }

    async fn compact_now(&self, c: CompactParams) -> Result<CompactResult, RunError> {
        let mut p = RunParams::new(c.session_id, c.workspace_dir.clone(), "");
        p.session_key = c.session_key;
        p.session_file = c.session_file;
        p.agent_id = c.agent_id;
        p.provider = c.provider;
        p.model = c.model;
        let resolved = resolve_run(&self.inner, &p)?;
        let candidate = resolved.initial()?;
        let key = resolved.key(&self.inner, candidate)?;
        compact_file(
            &self.inner,
            resolved.session_file.clone(),
            c.workspace_dir,
            resolved.model.clone(),
            key,
            c.custom_instructions.as_deref(),
        )
        .await
    }

    /// The active runs: queue a message into a run, abort it, wait for it.
    pub fn runs(&self) -> &ActiveRuns {
        &self.inner.runs
    }

    /// The lanes: concurrency, clearing, draining.
    pub fn lanes(&self) -> &CommandQueue {
        &self.inner.lanes
    }

    /// The auth profile store of an agent.
    pub fn auth(&self, agent_id: &str) -> Result<AuthProfileStore, RunError> {
        self.inner.auth_store(agent_id)
    }

    /// Keeps every agent's auth profile store in what `backing` makes instead of its
    /// `auth-profiles.json` (stores opened before are reopened on their next use).
    pub fn set_auth_backing(&self, backing: AuthBacking) {
        *self
            .inner
            .auth_backing
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(backing);
        self.inner
            .auth
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Adds tools of the embedding program to every later run.
    pub fn register_tool_factory(&self, factory: ToolFactory) {
        self.inner
            .tool_factories
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(factory);
    }

    /// The paths the embedder uses.
    pub fn paths(&self) -> &EmbedPaths {
        &self.inner.paths
    }

    /// Stops accepting runs, lets the running ones finish for up to `grace`, then aborts the
    /// rest and waits for them to end.
    /// Idle sessions kept for their next turn (C5): a session that ended its turn cleanly is
    /// kept, with its parsed transcript and memory, until it idles past 45 s, another writer
    /// touches its file, or its next turn asks for another model, key, prompt or tool set.
    pub fn cached_sessions(&self) -> usize {
        self.inner.sessions.len()
    }

    pub async fn shutdown(&self, grace: Duration) {
        self.inner.lanes.mark_draining();
        let drained = self.inner.lanes.wait_for_active(grace).await;
        if !drained.drained {
            self.inner.shutdown.cancel();
            let _ended = self
                .inner
                .lanes
                .wait_for_active(Duration::from_secs(30))
                .await;
        }
        self.inner.sessions.clear();
        self.inner.memory.flush();
    }
}

/// `YYYY-MM-DD` of a Unix time in milliseconds (UTC).
fn civil_date(ms: i64) -> String {
    let iso = filo_session::ids::iso_from_ms(ms);
    iso.get(..10).unwrap_or(&iso).to_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn civil_dates() {
        assert_eq!(super::civil_date(0), "1970-01-01");
        assert_eq!(super::civil_date(1_796_083_200_000), "2026-12-01");
        assert_eq!(super::civil_date(951_782_400_000), "2000-02-29");
    }
}
