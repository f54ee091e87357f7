//! The agent's command-line flags (pi spec §6.1, the ones that apply outside the TUI).

use std::path::PathBuf;

use clap::Args;

/// Flags for running the agent.
#[derive(Debug, Clone, Default, Args)]
pub struct AgentArgs {
    /// Output mode: text, json or rpc.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
    /// Process the prompts and exit (text output).
    #[arg(short = 'p', long)]
    pub print: bool,
    /// Continue the most recent session of this directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,
    /// Open a session file (path) or a session by id prefix.
    #[arg(long, value_name = "PATH|ID")]
    pub session: Option<String>,
    /// Where sessions are stored and looked up.
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,
    /// Keep the session in memory only.
    #[arg(long)]
    pub no_session: bool,
    /// Provider of the model (anthropic, openai, google, llamacpp, ollama, …).
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id or pattern (`provider/id`, optional `:thinking` suffix).
    #[arg(long)]
    pub model: Option<String>,
    /// API key for the selected provider (this run only).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// Replace the system prompt (text or a file path).
    #[arg(long, value_name = "TEXT|FILE")]
    pub system_prompt: Option<String>,
    /// Append to the system prompt (text or a file path).
    #[arg(long, value_name = "TEXT|FILE")]
    pub append_system_prompt: Option<String>,
    /// Built-in tools to enable, comma separated (read,bash,edit,write,grep,find,ls).
    #[arg(long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Disable the built-in tools (`--tools` may add some back).
    #[arg(long)]
    pub no_tools: bool,
    /// Thinking level: off, minimal, low, medium, high, xhigh.
    #[arg(long, value_name = "LEVEL")]
    pub thinking: Option<String>,
    /// List the known models (optionally matching a search) and exit.
    #[arg(long, value_name = "SEARCH", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,
    /// Export a session file to HTML and exit: `--export <session.jsonl> [out.html]`.
    #[arg(long, value_name = "FILE", num_args = 1..=2)]
    pub export: Option<Vec<String>>,
    /// The Playfilo memory database (default `~/.playfilo/playfilo.db`, env `PLAYFILO_DB`).
    #[arg(long, value_name = "PATH", env = "PLAYFILO_DB")]
    pub dag: Option<PathBuf>,
    /// Run without the Playfilo memory (no mirroring, no life/recall/trace/tobe tools).
    #[arg(long)]
    pub no_dag: bool,
    /// The DAG head ref this session writes (default `PI_HEAD:<session id>`).
    #[arg(long, value_name = "NAME")]
    pub head: Option<String>,
    /// Messages (`@file` arguments attach files).
    #[arg(value_name = "MESSAGE")]
    pub messages: Vec<String>,
}

impl AgentArgs {
    /// The output mode: `text` for `-p`, else `--mode`, else interactive (`None`).
    pub fn output_mode(&self) -> Option<&str> {
        match self.mode.as_deref() {
            Some(m @ ("text" | "json" | "rpc")) => Some(m),
            _ if self.print => Some("text"),
            _ => None,
        }
    }
}
