//! The agent's typed errors. Texts of the caller-facing variants are pi's, verbatim.

/// Why an agent call or run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error(
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    )]
    PromptWhileRunning,
    #[error("Agent is already processing. Wait for completion before continuing.")]
    ContinueWhileRunning,
    #[error("No model configured")]
    NoModel,
    #[error("No messages to continue from")]
    NoMessages,
    /// The loop cannot continue from an empty context.
    #[error("Cannot continue: no messages in context")]
    EmptyContext,
    /// The last message has this role, and nothing is queued.
    #[error("Cannot continue from message role: {0}")]
    CannotContinueFrom(String),
    /// A hook (`transform_context`, `get_api_key`) failed; the run ends.
    #[error("{0}")]
    Hook(String),
    /// A tool failed in a way that must end the turn.
    #[error("{0}")]
    ToolFatal(String),
    /// The task running the loop panicked or was cancelled by the runtime.
    #[error("agent run task failed: {0}")]
    RunTask(String),
}

impl AgentError {
    /// Whether the call was refused before any run started (the agent's state is unchanged).
    pub fn is_refused(&self) -> bool {
        match self {
            AgentError::PromptWhileRunning
            | AgentError::ContinueWhileRunning
            | AgentError::NoModel
            | AgentError::NoMessages
            | AgentError::EmptyContext
            | AgentError::CannotContinueFrom(_) => true,
            AgentError::Hook(_) | AgentError::ToolFatal(_) | AgentError::RunTask(_) => false,
        }
    }
}

/// A hook failed. Its message becomes a tool result (tool hooks) or ends the run (context hooks).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HookError(pub String);

impl HookError {
    pub fn new(message: impl Into<String>) -> Self {
        HookError(message.into())
    }
}

/// Why a tool call's arguments were refused before the tool ran. The text is pi's, and it is
/// what the model reads in the error result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentsError {
    /// The tool's own parameter schema does not compile.
    #[error("Invalid JSON Schema for tool \"{tool}\": {reason}")]
    Schema { tool: String, reason: String },
    /// The arguments do not match the schema.
    #[error(
        "Validation failed for tool \"{tool}\":\n{}\n\nReceived arguments:\n{received}",
        .problems.join("\n")
    )]
    Invalid {
        tool: String,
        /// One line per problem: `  - <path>: <message>`.
        problems: Vec<String>,
        /// The arguments as received, pretty-printed.
        received: String,
    },
}
