//! The agent loop: the [`Agent`], its events, the tool trait, abort / steer / follow-up.
//!
//! Owns: the Agent state machine and its queues, the [`AgentEvent`] sequence and its pi JSON form,
//! the loop (stream an assistant message, run its tool calls, repeat), tool execution in parallel
//! and sequential modes with argument validation, the hooks around model and tool calls, and
//! cancellation (a token tree: session → run → turn → tool call).
//!
//! Does not own: concrete tools (`filo-tools`), providers and wire formats (`filo-ai`, reached only
//! through [`filo_ai::ModelClient`]), session files, compaction.
//!
//! Invariants: events follow pi's order (spec §2.2); every tool call that got
//! `tool_execution_start` gets exactly one result, also on abort; tool results are finalised in
//! assistant order; the streaming message lives in one accumulator and is never copied per delta
//! unless a subscriber keeps a snapshot; a run leaves no task behind.

pub mod agent;
pub mod config;
pub mod error;
pub mod event;
mod exec;
pub mod message;
pub mod options;
pub mod run;
pub mod state;
pub mod tool;
pub mod toolset;

pub use agent::{Agent, Listener, SubscriptionId};
pub use config::{
    AfterToolCall, BeforeToolCall, ConvertToLlm, DEFAULT_ABORT_GRACE, GetApiKey, LoopConfig,
    MessageSource, ResultOverride, ToolCallDecision, ToolCallInfo, ToolCallResult, ToolExecution,
    TransformContext,
};
pub use error::{AgentError, ArgumentsError, HookError};
pub use event::{AgentEvent, PartialMessage};
pub use exec::{ABORTED_TEXT, SKIPPED_TEXT, TRUNCATED_TEXT};
pub use message::{AgentMessage, CustomMessage, default_convert_to_llm, now_ms};
pub use options::{AgentOptions, Prompt};
pub use run::{EventSink, LoopContext, agent_loop, agent_loop_continue};
pub use state::{AgentState, QueueMode};
pub use tool::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput, UpdateSink};
pub use toolset::ToolSet;
