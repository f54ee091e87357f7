//! The tool trait: what the agent loop knows about a tool (pi spec §2.1, §2.4).
//!
//! Two kinds of failure: [`ToolError::Failed`] is model-facing (it becomes a tool result with
//! `isError: true` and the message as its text, exactly like a pi tool that throws);
//! [`ToolError::Fatal`] must end the turn.

use std::sync::Arc;

use filo_ai::ContentBlock;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What a tool returns: text and image blocks for the model, and details for UIs and sessions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    pub content: Vec<ContentBlock>,
    /// Arbitrary JSON for renderers (diffs, truncation info). `None` is written as absent.
    pub details: Option<Value>,
}

impl ToolOutput {
    /// A result with one text block and no details.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            details: None,
        }
    }

    /// Attach details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// How a tool failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The model can react to this: it becomes the tool result text with `isError: true`.
    #[error("{0}")]
    Failed(String),
    /// The turn cannot go on (e.g. the session's store is gone).
    #[error("fatal tool error: {0}")]
    Fatal(String),
}

impl ToolError {
    /// A model-facing failure.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed(message.into())
    }
}

/// Whether a tool may run beside others. Read-only tools share; mutating ones take an exclusive slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concurrency {
    Shared,
    Exclusive,
}

/// Receives progress updates: each call carries the full accumulated partial result (pi's
/// `onUpdate`), not a delta.
pub type UpdateSink = Arc<dyn Fn(ToolOutput) + Send + Sync>;

/// One execution of a tool.
pub struct ToolCallContext {
    /// The assistant's tool-call id.
    pub call_id: String,
    /// Arguments, already validated against the tool's schema.
    pub args: Value,
    /// Cancelled when the run is aborted; tools must stop promptly and clean up (child processes).
    pub cancel: CancellationToken,
    /// Progress updates, streamed as `tool_execution_update`.
    pub updates: UpdateSink,
}

impl ToolCallContext {
    /// A context with no-op updates and a fresh token; handy for tests and direct callers.
    pub fn new(call_id: impl Into<String>, args: Value) -> Self {
        ToolCallContext {
            call_id: call_id.into(),
            args,
            cancel: CancellationToken::new(),
            updates: Arc::new(|_| {}),
        }
    }
}

/// A tool the agent can call.
pub trait AgentTool: Send + Sync {
    /// The name the model uses.
    fn name(&self) -> &str;
    /// A human label for UIs.
    fn label(&self) -> &str;
    /// The description sent to the model.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments.
    fn parameters(&self) -> Value;
    /// Whether this tool may run concurrently with others.
    fn concurrency(&self) -> Concurrency {
        Concurrency::Exclusive
    }
    /// Run the tool.
    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>>;

    /// Whether this tool's declaration can come and go between model calls: an MCP tool with
    /// `deferred` exposure is callable by name but declared only once `tool_search` loads it.
    /// [`AgentTool::declared`] is asked before every model call of such a tool only.
    fn deferred(&self) -> bool {
        false
    }

    /// Whether the model is told about this tool for its next call (asked of deferred tools).
    fn declared(&self) -> bool {
        true
    }

    /// A compatibility shim applied to the raw arguments before schema validation (pi's
    /// `prepareArguments`): older argument shapes a model may still send become the current one.
    /// The default keeps the arguments as they are.
    fn prepare_arguments(&self, args: Value) -> Value {
        args
    }

    /// The model-facing definition.
    fn definition(&self) -> filo_ai::Tool {
        filo_ai::Tool {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.parameters(),
        }
    }
}
