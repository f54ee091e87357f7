//! The agent loop: Agent, events, tool trait, abort / steer / follow-up.
//!
//! Owns: the Agent state machine, the AgentEvent sequence, the tool trait and tool execution (parallel and sequential), cancellation.
//!
//! Does not own: concrete tools, providers' wire formats, session files.

pub mod tool;

pub use tool::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput, UpdateSink};
