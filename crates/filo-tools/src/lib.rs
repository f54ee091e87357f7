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
//! and leaves no child process behind; nothing is printed.

pub mod args;
pub mod bash;
pub mod diff;
pub mod edit;
pub mod error;
pub mod fuzzy;
pub mod image;
pub mod ls;
pub mod output;
pub mod paths;
pub mod process;
pub mod read;
pub mod settings;
mod support;
pub mod truncate;
pub mod write;

pub use bash::BashTool;
pub use edit::EditTool;
pub use error::Error;
pub use ls::LsTool;
pub use read::ReadTool;
pub use settings::ToolSettings;
pub use write::WriteTool;
