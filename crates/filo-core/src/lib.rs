//! The filo SDK: AgentSession, settings, auth, model registry, resources, system prompt,
//! compaction, DAG mirroring, time-travel tools.
//!
//! Owns: wiring the agent loop, tools, sessions and the DAG into one `AgentSession`; the config
//! files shared with pi (`settings.json`, `auth.json`), resources (AGENTS.md, skills, prompt
//! templates) and the system prompt.
//!
//! Does not own: the terminal UI, the CLI's argument parsing, the gateway; wire protocols
//! (filo-ai), the session file format (filo-session), the DAG schema (filo-dag).
//!
//! Invariants: no global state — paths, environment values and clocks are passed in; a config file
//! that could not be parsed is never written.

use std::path::{Path, PathBuf};

pub mod agent_session;
pub mod auth;
pub mod compaction;
pub mod convert;
pub mod extension;
mod json_file;
pub mod loader;
pub mod model_resolve;
pub mod playfilo;
pub mod resources;
pub mod settings;
pub mod system_prompt;

pub use agent_session::{
    AgentSession, AgentSessionOptions, ApiKeyResolver, NavigateOptions, NavigateResult,
    PromptOptions, Resources, SessionEvent, SessionListener, SessionStats, StreamingBehavior,
    UnsavedSession,
};
pub use auth::AuthStorage;
pub use extension::Extension;
pub use settings::Settings;

/// Errors of the SDK layer.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Refused(String),
}

impl CoreError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        CoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
