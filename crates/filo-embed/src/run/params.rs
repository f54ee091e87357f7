//! Run parameters and result (C1, spec §1.1–§1.2): the typed contract of
//! [`crate::Embedder::run`] (OpenClaw `runEmbeddedPiAgent`).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use filo_ai::{ContentBlock, ThinkingLevel};
use tokio_util::sync::CancellationToken;

use crate::run::payloads::ReplyPayload;
use crate::stream::chunker::Chunking;
use crate::subscriber::machine::{BlockBreak, ReasoningMode};
use crate::usage::Usage;

/// Who asked for the run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Trigger {
    #[default]
    User,
    Heartbeat,
    Cron,
}

/// Whether the auth profile was chosen by the user (locked) or by rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProfileSource {
    #[default]
    Auto,
    User,
}

/// A requested auth profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthProfileChoice {
    pub id: String,
    pub source: ProfileSource,
}

/// How verbose tool feedback is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verbose {
    #[default]
    Off,
    On,
    Full,
}

/// Block reply settings (`blockReplyBreak`, `blockReplyChunking`).
#[derive(Debug, Clone, Default)]
pub struct BlockReplyConfig {
    pub break_mode: BlockBreak,
    pub chunking: Option<Chunking>,
}

/// The sender of the message (owner-only tools need `is_owner == Some(true)`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sender {
    pub id: Option<String>,
    pub name: Option<String>,
    pub is_owner: Option<bool>,
}

/// Everything one run needs. Build with [`RunParams::new`] and set what differs.
#[derive(Clone)]
pub struct RunParams {
    pub session_id: String,
    /// The transcript; default `<sessions dir of the agent>/<session_id>.jsonl`.
    pub session_file: Option<PathBuf>,
    /// `agent:main:telegram:dm:123`; the session lane is keyed by it (else by the session id).
    pub session_key: Option<String>,
    pub agent_id: Option<String>,
    pub workspace_dir: PathBuf,
    pub prompt: String,
    pub images: Vec<ContentBlock>,
    pub timeout: Option<Duration>,
    pub run_id: String,
    pub trigger: Trigger,
    pub message_channel: Option<String>,
    pub sender: Sender,
    /// `provider` and `model`; empty → the configured default.
    pub provider: Option<String>,
    pub model: Option<String>,
    pub auth_profile: Option<AuthProfileChoice>,
    pub think_level: Option<ThinkingLevel>,
    pub reasoning: ReasoningMode,
    pub verbose: Verbose,
    pub enforce_final_tag: bool,
    pub extra_system_prompt: Option<String>,
    pub owner_numbers: Vec<String>,
    pub disable_tools: bool,
    pub tools_allow: Option<Vec<String>>,
    pub abort: Option<CancellationToken>,
    /// The global lane (default `main`).
    pub lane: Option<String>,
    pub block_reply: Option<BlockReplyConfig>,
    pub has_replied: Arc<AtomicBool>,
    /// Let a same-provider fallback probe a profile in a transient cooldown.
    pub allow_transient_cooldown_probe: bool,
}

impl std::fmt::Debug for RunParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunParams")
            .field("session_id", &self.session_id)
            .field("session_key", &self.session_key)
            .field("run_id", &self.run_id)
            .field("provider", &self.provider)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl RunParams {
    /// A run of `prompt` in session `session_id`, working in `workspace_dir`.
    pub fn new(
        session_id: impl Into<String>,
        workspace_dir: impl Into<PathBuf>,
        prompt: impl Into<String>,
    ) -> Self {
        Self {
            session_id: session_id.into(),
            session_file: None,
            session_key: None,
            agent_id: None,
            workspace_dir: workspace_dir.into(),
            prompt: prompt.into(),
            images: Vec::new(),
            timeout: None,
            run_id: uuid::Uuid::new_v4().to_string(),
            trigger: Trigger::User,
            message_channel: None,
            sender: Sender::default(),
            provider: None,
            model: None,
            auth_profile: None,
            think_level: None,
            reasoning: ReasoningMode::Off,
            verbose: Verbose::Off,
            enforce_final_tag: false,
            extra_system_prompt: None,
            owner_numbers: Vec::new(),
            disable_tools: false,
            tools_allow: None,
            abort: None,
            lane: None,
            block_reply: None,
            has_replied: Arc::new(AtomicBool::new(false)),
            allow_transient_cooldown_probe: false,
        }
    }

    /// The lane key: the trimmed session key, else the session id.
    pub fn lane_key(&self) -> String {
        self.session_key
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .unwrap_or(&self.session_id)
            .to_owned()
    }
}

/// Why a run ended with an error payload instead of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunErrorKind {
    ContextOverflow,
    CompactionFailure,
    RoleOrdering,
    ImageSize,
    RetryLimit,
}

/// The error kind and its message (`meta.error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunErrorInfo {
    pub kind: RunErrorKind,
    pub message: String,
}

/// What the agent did (`meta.agentMeta`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentMeta {
    pub session_id: String,
    pub provider: String,
    pub model: String,
    /// All model calls of the run; `total` is the last call's reported total when present.
    pub usage: Option<Usage>,
    pub last_call_usage: Option<Usage>,
    pub prompt_tokens: Option<u64>,
    /// Compactions during the run (only when > 0).
    pub compaction_count: Option<u32>,
    /// The auth profile that answered.
    pub profile_id: Option<String>,
}

/// A client tool call the caller has to execute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingToolCall {
    pub id: String,
    pub name: String,
    pub arguments_json: String,
}

/// About the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMeta {
    pub duration: Duration,
    pub agent_meta: Option<AgentMeta>,
    pub aborted: bool,
    /// The run hit its time limit (`timeoutSeconds`) before the model answered.
    pub timed_out: bool,
    pub error: Option<RunErrorInfo>,
    pub stop_reason: Option<String>,
    pub pending_tool_calls: Vec<PendingToolCall>,
    /// Characters of the system prompt the run used.
    pub system_prompt_chars: usize,
    /// What the run could not keep: a session write that failed, an entry that did not reach
    /// the memory, a memory that could not be opened. Empty when everything was saved.
    pub warnings: Vec<String>,
}

/// The result of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunResult {
    pub payloads: Vec<ReplyPayload>,
    pub meta: RunMeta,
}
