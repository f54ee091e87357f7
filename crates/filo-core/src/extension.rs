//! Extensions as a Rust API (pi spec §7): hooks on the session's life and the agent's work, plus
//! tools and commands they register. filo's own features (the Playfilo memory, the embedded
//! runner) are built on this, not beside it.

use std::sync::Arc;

use filo_agent::{AgentMessage, AgentTool, ToolOutput};
use filo_session::{SessionEntry, SessionManager};

use crate::agent_session::SessionHandle;
use futures::future::BoxFuture;
use serde_json::Value;

/// What `before_agent_start` may change for one prompt.
#[derive(Debug, Clone, Default)]
pub struct BeforeAgentStart {
    /// Replace the system prompt for this run.
    pub system_prompt: Option<String>,
    /// Messages to add after the user's prompt (role `custom` in pi).
    pub messages: Vec<AgentMessage>,
}

/// What a compaction about to run has at hand (pi's `session_before_compact` event): the model
/// and credential of the session, so an extension can summarise in its own way.
#[derive(Clone)]
pub struct CompactionContext {
    pub client: Arc<dyn filo_ai::ModelClient>,
    pub model: filo_ai::Model,
    pub api_key: Option<String>,
    /// The session's `compaction.reserveTokens`.
    pub reserve_tokens: u64,
    /// `/compact <instructions>`.
    pub custom_instructions: Option<String>,
    /// Cancelled when the compaction is (an abort, a shutdown).
    pub cancel: tokio_util::sync::CancellationToken,
    /// The session's thinking level, at which pi sends its summary requests.
    pub thinking_level: filo_ai::ThinkingLevel,
}

/// What `before_compact` decided instead of pi's own summary.
#[derive(Debug, Clone, PartialEq)]
pub enum CompactionDecision {
    /// Write this compaction (the entry is marked `fromHook`).
    Replace {
        summary: String,
        first_kept_entry_id: String,
        tokens_before: u64,
        details: Option<Value>,
    },
    /// Do not compact; the history stays as it is.
    Cancel { reason: String },
}

/// What the `input` hook decided.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum InputAction {
    #[default]
    Continue,
    /// Use this text instead.
    Transform(String),
    /// The extension handled the input; nothing is sent to the model.
    Handled,
}

/// Why the session changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionChange {
    Start,
    New,
    Resume,
    Fork,
    Shutdown,
}

/// A tool call as extensions see it.
#[derive(Debug, Clone)]
pub struct ToolCallEvent {
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Value,
}

impl ToolCallEvent {
    pub(crate) fn from_info(info: &filo_agent::ToolCallInfo) -> Self {
        ToolCallEvent {
            tool_call_id: info.tool_call.id.clone(),
            tool_name: info.tool_call.name.clone(),
            args: info.args.clone(),
        }
    }
}

/// What the session tells an extension about itself.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub session_id: String,
    pub session_file: Option<std::path::PathBuf>,
    pub cwd: std::path::PathBuf,
}

/// The session's live state when an entry is appended (for mirrors such as the Playfilo DAG).
#[derive(Debug, Clone)]
pub struct EntryContext {
    pub session: SessionInfo,
    pub model: Option<filo_ai::Model>,
    pub thinking_level: filo_ai::ThinkingLevel,
    pub system_prompt: String,
    /// Active tools: name and description.
    pub tools: Vec<(String, String)>,
}

/// Why an extension's slash command failed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The arguments were not what the command takes; the message says how to call it.
    #[error("{0}")]
    Usage(String),
    /// The command ran and failed with an error of its own.
    #[error("{context}")]
    Failed {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// What a command's `run` returns.
pub type CommandFuture = BoxFuture<'static, Result<(), CommandError>>;

/// A slash command an extension registers (`/name args`).
pub struct Command {
    pub name: String,
    pub description: String,
    pub run: Arc<dyn Fn(String) -> CommandFuture + Send + Sync>,
}

/// An extension. Every hook has a do-nothing default.
pub trait Extension: Send + Sync {
    /// A short name for diagnostics.
    fn name(&self) -> &str;

    /// Called once when the session is built, with a weak handle to it (for tools that must act
    /// on the session, such as time travel).
    fn attach(&self, _session: SessionHandle) {}

    /// A session file was loaded (at start or on a switch), before its context is built: the
    /// extension may rebuild the tree (e.g. from the Playfilo DAG). Returns notices for the user.
    fn prepare_session(&self, _manager: &mut SessionManager) -> Vec<String> {
        Vec::new()
    }

    /// A run of the agent ended. Returning messages replaces the agent's context and continues
    /// the agent at once (before retry and compaction), e.g. in a new timeline after `tobe`.
    fn run_finished(&self) -> Option<Vec<AgentMessage>> {
        None
    }

    /// Tools this extension adds to every session.
    fn tools(&self, _session: &SessionInfo) -> Vec<Arc<dyn AgentTool>> {
        Vec::new()
    }

    /// Commands this extension adds.
    fn commands(&self) -> Vec<Command> {
        Vec::new()
    }

    /// The session started, was replaced, or is shutting down.
    fn session_changed(&self, _change: SessionChange, _session: &SessionInfo) {}

    /// The user's input before it is expanded and sent.
    fn input(&self, _text: &str) -> InputAction {
        InputAction::Continue
    }

    /// Before a prompt runs: may replace the system prompt and inject messages.
    fn before_agent_start(
        &self,
        _prompt: &str,
        _system_prompt: &str,
    ) -> BoxFuture<'_, BeforeAgentStart> {
        Box::pin(async { BeforeAgentStart::default() })
    }

    /// Before a tool runs: `Some(reason)` blocks it (the model gets the reason as an error).
    fn tool_call(&self, _call: &ToolCallEvent) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }

    /// After a tool ran: may replace its result.
    fn tool_result(
        &self,
        _call: &ToolCallEvent,
        _result: &ToolOutput,
        _is_error: bool,
    ) -> Option<(ToolOutput, bool)> {
        None
    }

    /// Failures this extension absorbed so far (shown in session stats).
    fn error_count(&self) -> u64 {
        0
    }

    /// A compaction was prepared and is about to be summarised: `Some` replaces pi's summary with
    /// the extension's, or cancels the compaction. The first extension that decides wins.
    fn before_compact<'a>(
        &'a self,
        _prep: &'a crate::compaction::CompactionPreparation,
        _ctx: &'a CompactionContext,
    ) -> BoxFuture<'a, Option<CompactionDecision>> {
        Box::pin(async { None })
    }

    /// A message of a run is about to be written to the session (OpenClaw's
    /// `before_message_write` / `tool_result_persist`): returns what to write instead. Nothing
    /// drops it, several are written in order (a synthetic result before it, say); the agent's
    /// context for the running turn is not changed. Each extension sees what the one before it
    /// returned.
    fn before_persist(&self, message: AgentMessage) -> Vec<AgentMessage> {
        vec![message]
    }

    /// An entry was appended to the session (already written to the file when persisted).
    fn entry_appended(&self, _entry: &SessionEntry, _ctx: &EntryContext) {}
}
