//! The filo SDK: AgentSession, settings, auth, model registry, resources, system prompt,
//! compaction, DAG mirroring, time-travel tools.
//!
//! Owns: wiring the agent loop, tools, sessions and the DAG into one `AgentSession`; the config
//! files shared with pi (`settings.json`, `auth.json`), resources (AGENTS.md, skills, prompt
//! templates) and the system prompt; the read-only fallback to pi's agent directory.
//!
//! Does not own: the terminal UI, the CLI's argument parsing, the gateway; wire protocols
//! (filo-ai), the session file format (filo-session), the DAG schema (filo-dag).
//!
//! Invariants: no global state — paths, environment values and clocks are passed in; a config file
//! that could not be parsed is never written.

use std::path::{Path, PathBuf};

pub mod agent_dirs;
pub mod agent_session;
pub mod auth;
pub mod builder;
pub mod compaction;
pub mod convert;
pub mod extension;
pub mod glob;
mod json_file;
pub mod loader;
pub mod model_list;
pub mod model_resolve;
pub mod playfilo;
pub mod resource_paths;
pub mod resources;
pub mod settings;
pub mod system_prompt;
pub mod trust;
pub mod ui_settings;

pub use agent_dirs::{AgentDirs, AgentItem};
pub use agent_session::{
    AgentSession, AgentSessionOptions, ApiKeyResolver, ClearedQueue, Disposition, NavigateOptions,
    NavigateResult, PromptOptions, Resources, SessionEvent, SessionListener, SessionStats,
    StreamingBehavior, UnsavedSession,
};
pub use auth::AuthStorage;
pub use extension::Extension;
pub use settings::Settings;

/// Errors of the SDK layer. Each variant either says everything in its own message or names its
/// cause as `source` (printed by the caller's error chain), never both.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// A file or directory could not be read or written.
    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A config file is not valid JSON.
    #[error("{}: invalid JSON", path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A config file holds valid JSON that is not an object.
    #[error("{}: expected a JSON object", path.display())]
    NotAnObject { path: PathBuf },
    /// A config file that could not be read at load is never written (it would be replaced).
    #[error("{}: not writing {what} to a file that could not be read", path.display())]
    UnreadableNotWritten { path: PathBuf, what: &'static str },
    /// The session file layer failed.
    #[error(transparent)]
    Session(#[from] filo_session::SessionError),
    /// A tool (user `!bash`) failed.
    #[error(transparent)]
    Tool(#[from] filo_tools::Error),
    /// The agent refused or failed a run.
    #[error(transparent)]
    Agent(#[from] filo_agent::AgentError),
    /// A branch summary could not be made.
    #[error(transparent)]
    Summary(#[from] compaction::SummaryError),
    /// An extension's slash command failed.
    #[error("/{name}")]
    Command {
        name: String,
        #[source]
        source: extension::CommandError,
    },
    /// The request was refused; the message says why (no underlying error).
    #[error("{0}")]
    Refused(String),
}

/// An error and its causes, joined with `": "` (like anyhow's `{:#}`), for messages shown to
/// the user from inside the SDK (warnings, load problems).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cur = c.source();
    }
    out
}

impl CoreError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        CoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
