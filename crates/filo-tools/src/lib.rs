//! Built-in coding tools: read, write, edit, bash, grep, find, ls, plus output truncation.
//!
//! Owns: the seven tools with pi's parameters, descriptions, limits and texts (byte for byte, since
//! models are used to them); path resolution; truncation helpers; the edit matcher and diff;
//! image sniffing and resizing; process-group handling for bash.
//!
//! Does not own: the agent loop or the tool trait (`filo-agent`), schema validation of arguments
//! (the agent validates before calling), sessions, models, settings files.
//!
//! Invariants: every tool is built for one working directory ([`ToolSettings`]); no tool reads
//! global mutable state; a cancelled call fails with `Operation aborted` (bash: `Command aborted`)
//! and leaves no child process behind; nothing is printed; file contents are read only from
//! regular files and never past [`fileread::MAX_READ_BYTES`]; bash's shell does not inherit
//! provider keys unless [`secrets::KEEP_ENV_VAR`] says so.

pub mod args;
pub mod bash;
pub mod diff;
pub mod edit;
pub mod error;
pub mod fileread;
pub mod find;
pub mod fuzzy;
pub mod grep;
pub mod image;
pub mod ls;
pub mod output;
pub mod paths;
pub mod process;
pub mod read;
pub mod sandbox;
pub mod search;
pub mod secrets;
pub mod settings;
pub mod spill;
mod support;
pub mod truncate;
mod walk;
pub mod write;

pub use bash::BashTool;
pub use edit::EditTool;
pub use error::Error;
pub use find::FindTool;
pub use grep::GrepTool;
pub use ls::LsTool;
pub use read::ReadTool;
pub use settings::ToolSettings;
pub use write::WriteTool;

use std::path::PathBuf;
use std::sync::Arc;

use filo_agent::AgentTool;

/// The names of all built-in tools, in pi's order.
pub const ALL_TOOL_NAMES: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];
/// The default active set (pi: `read, bash, edit, write`).
pub const CODING_TOOL_NAMES: [&str; 4] = ["read", "bash", "edit", "write"];

/// One built-in tool by name, or `None` for an unknown name.
pub fn tool_by_name_with(name: &str, settings: &Arc<ToolSettings>) -> Option<Arc<dyn AgentTool>> {
    let s = Arc::clone(settings);
    let tool: Arc<dyn AgentTool> = match name {
        "read" => Arc::new(ReadTool::with_settings(s)),
        "bash" => Arc::new(BashTool::with_settings(s)),
        "edit" => Arc::new(EditTool::with_settings(s)),
        "write" => Arc::new(WriteTool::with_settings(s)),
        "grep" => Arc::new(GrepTool::with_settings(s)),
        "find" => Arc::new(FindTool::with_settings(s)),
        "ls" => Arc::new(LsTool::with_settings(s)),
        _ => return None,
    };
    Some(tool)
}

/// One built-in tool by name for `cwd` with default settings.
pub fn tool_by_name(name: &str, cwd: impl Into<PathBuf>) -> Option<Arc<dyn AgentTool>> {
    tool_by_name_with(name, &Arc::new(ToolSettings::new(cwd)))
}

fn tools_named(names: &[&str], settings: &Arc<ToolSettings>) -> Vec<Arc<dyn AgentTool>> {
    names
        .iter()
        .filter_map(|name| tool_by_name_with(name, settings))
        .collect()
}

/// pi's default coding tools (read, bash, edit, write) with explicit settings.
pub fn coding_tools_with(settings: &Arc<ToolSettings>) -> Vec<Arc<dyn AgentTool>> {
    tools_named(&CODING_TOOL_NAMES, settings)
}

/// All seven built-in tools with explicit settings.
pub fn all_tools_with(settings: &Arc<ToolSettings>) -> Vec<Arc<dyn AgentTool>> {
    tools_named(&ALL_TOOL_NAMES, settings)
}

/// pi's default coding tools (read, bash, edit, write) for `cwd`.
pub fn coding_tools(cwd: impl Into<PathBuf>) -> Vec<Arc<dyn AgentTool>> {
    coding_tools_with(&Arc::new(ToolSettings::new(cwd)))
}

/// All seven built-in tools (read, bash, edit, write, grep, find, ls) for `cwd`.
pub fn all_tools(cwd: impl Into<PathBuf>) -> Vec<Arc<dyn AgentTool>> {
    all_tools_with(&Arc::new(ToolSettings::new(cwd)))
}
