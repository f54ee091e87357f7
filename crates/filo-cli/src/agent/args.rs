//! The agent's command-line flags (pi spec §6.1, the ones that apply outside the TUI).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use filo_ai::ThinkingLevel;

/// `--mode`: how the agent talks to its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputMode {
    /// Print the final answer (what `-p` selects).
    Text,
    /// Stream every session event as a JSON line.
    Json,
    /// JSON-lines commands on stdin, responses and events on stdout.
    Rpc,
}

/// `--thinking`: the reasoning level asked of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ThinkingArg {
    Off,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
}

impl ThinkingArg {
    /// The level this flag value names.
    pub fn level(self) -> ThinkingLevel {
        match self {
            ThinkingArg::Off => ThinkingLevel::Off,
            ThinkingArg::Minimal => ThinkingLevel::Minimal,
            ThinkingArg::Low => ThinkingLevel::Low,
            ThinkingArg::Medium => ThinkingLevel::Medium,
            ThinkingArg::High => ThinkingLevel::High,
            ThinkingArg::Xhigh => ThinkingLevel::Xhigh,
        }
    }
}

/// Flags for running the agent.
#[derive(Debug, Clone, Default, Args)]
pub struct AgentArgs {
    /// Output mode: text, json or rpc.
    #[arg(long, value_name = "MODE", value_enum)]
    pub mode: Option<OutputMode>,
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
    #[arg(long, value_name = "LEVEL", value_enum)]
    pub thinking: Option<ThinkingArg>,
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
    pub fn output_mode(&self) -> Option<OutputMode> {
        match (self.mode, self.print) {
            (Some(mode), _) => Some(mode),
            (None, true) => Some(OutputMode::Text),
            (None, false) => None,
        }
    }
}
