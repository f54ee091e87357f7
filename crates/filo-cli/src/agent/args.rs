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
    Max,
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
            ThinkingArg::Max => ThinkingLevel::Max,
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
    /// Append to the system prompt (text or a file path; may be given several times).
    #[arg(long, value_name = "TEXT|FILE", action = clap::ArgAction::Append)]
    pub append_system_prompt: Vec<String>,
    /// Tools to allow, comma separated: built-in (read,bash,edit,write,grep,find,ls), memory
    /// (life,recall,trace,tobe) and extension tools alike.
    #[arg(short = 't', long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Send no tools at all (`-nt`; `--tools` may allow some back).
    #[arg(long)]
    pub no_tools: bool,
    /// No built-in tools; the memory's and extensions' tools stay (`-nbt`).
    #[arg(long)]
    pub no_builtin_tools: bool,
    /// Scope model cycling (ctrl+p) to these models: comma separated patterns, globs allowed,
    /// each with an optional `:level` (e.g. `anthropic/*,gpt-5:high`).
    #[arg(long, value_name = "PATTERNS", value_delimiter = ',')]
    pub models: Option<Vec<String>>,
    /// Fork a session (path or id prefix) into a new session of this directory.
    #[arg(long, value_name = "PATH|ID")]
    pub fork: Option<String>,
    /// Pick a session to resume at start.
    #[arg(short = 'r', long)]
    pub resume: bool,
    /// Load a skill file or directory (may be given several times).
    #[arg(long, value_name = "PATH", action = clap::ArgAction::Append)]
    pub skill: Vec<PathBuf>,
    /// Discover no skills (`-ns`; `--skill` ones are still loaded).
    #[arg(long)]
    pub no_skills: bool,
    /// Load a prompt template file or directory (may be given several times).
    #[arg(long, value_name = "PATH", action = clap::ArgAction::Append)]
    pub prompt_template: Vec<PathBuf>,
    /// Discover no prompt templates (`-np`; `--prompt-template` ones are still loaded).
    #[arg(long)]
    pub no_prompt_templates: bool,
    /// Load a theme file (may be given several times); `theme` in settings names the one used.
    #[arg(long, value_name = "PATH", action = clap::ArgAction::Append)]
    pub theme: Vec<PathBuf>,
    /// Discover no themes (only the built-in ones and `--theme` files).
    #[arg(long)]
    pub no_themes: bool,
    /// Read no AGENTS.md / CLAUDE.md context files (`-nc`).
    #[arg(long)]
    pub no_context_files: bool,
    /// Say at start what was loaded (context files, skills, templates, scoped models), even with
    /// `quietStartup`.
    #[arg(long)]
    pub verbose: bool,
    /// Make no network calls at start (also `PI_OFFLINE`/`FILO_OFFLINE`); filo makes none anyway.
    #[arg(long)]
    pub offline: bool,
    /// Trust the project's protected files (`.pi/settings.json`, skills, …) for this run (`-a`).
    #[arg(short = 'a', long, conflicts_with = "no_approve")]
    pub approve: bool,
    /// Ignore the project's protected files for this run (`-na`).
    #[arg(long)]
    pub no_approve: bool,
    /// Confine the commands the model runs: read-only, workspace-write or danger-full-access
    /// (default: the `sandbox.mode` setting, else danger-full-access).
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<String>,
    /// Print the version and exit.
    #[arg(short = 'v', long)]
    pub version: bool,
    /// Thinking level: off, minimal, low, medium, high, xhigh, max.
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
    /// Run without MCP: no servers from mcp.json connect, no MCP tools.
    #[arg(long)]
    pub no_mcp: bool,
    /// The DAG head ref this session writes (default `PI_HEAD:<session id>`).
    #[arg(long, value_name = "NAME")]
    pub head: Option<String>,
    /// Messages (`@file` arguments attach files).
    #[arg(value_name = "MESSAGE")]
    pub messages: Vec<String>,
}

/// pi's multi-letter short flags (`-nt`, `-nbt`, …), which no argument parser reads as one
/// flag, spelled as the long flags they stand for; everything after `--` is left alone.
pub fn expand_short_flags(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut out = Vec::new();
    let mut literal = false;
    for a in args {
        if literal {
            out.push(a);
            continue;
        }
        let long = match a.to_str() {
            Some("--") => {
                literal = true;
                None
            }
            Some("-nt") => Some("--no-tools"),
            Some("-nbt") => Some("--no-builtin-tools"),
            Some("-ns") => Some("--no-skills"),
            Some("-np") => Some("--no-prompt-templates"),
            Some("-nc") => Some("--no-context-files"),
            Some("-na") => Some("--no-approve"),
            _ => None,
        };
        out.push(long.map_or(a, std::ffi::OsString::from));
    }
    out
}

impl AgentArgs {
    /// The command line's trust decision: `Some(true)` for `--approve`, `Some(false)` for
    /// `--no-approve`.
    pub fn trust_override(&self) -> Option<bool> {
        match (self.approve, self.no_approve) {
            (true, _) => Some(true),
            (false, true) => Some(false),
            (false, false) => None,
        }
    }

    /// The output mode: `text` for `-p`, else `--mode`, else interactive (`None`).
    pub fn output_mode(&self) -> Option<OutputMode> {
        match (self.mode, self.print) {
            (Some(mode), _) => Some(mode),
            (None, true) => Some(OutputMode::Text),
            (None, false) => None,
        }
    }
}
