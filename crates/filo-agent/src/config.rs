//! What one run of the loop needs (pi's `AgentLoopConfig`, spec §2.3) and the hook types.
//!
//! Hooks are plain `Arc<dyn Fn>` values returning boxed futures, so an application can capture
//! whatever state it needs; each receives the run's cancellation token.

use std::sync::Arc;
use std::time::Duration;

use filo_ai::{
    AssistantMessage, ContentBlock, Message, Model, ModelClient, StreamOptions, ToolCall,
};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::HookError;
use crate::message::AgentMessage;
use crate::tool::ToolOutput;

/// Turns agent messages into what the model sees (pi's `convertToLlm`).
///
/// Contract: the conversion works message by message, so converting a list in two parts gives
/// the same result as converting it whole (`f(a ++ b) == f(a) ++ f(b)`; mapping, dropping or
/// expanding single messages is fine). Without a `transform_context` hook the loop relies on this
/// and converts only the messages added since the previous model call, instead of the whole
/// history every turn. Rewrites that look across messages belong in `transform_context`.
pub type ConvertToLlm = Arc<dyn Fn(&[AgentMessage]) -> Vec<Message> + Send + Sync>;

/// Rewrites the context before each model call (pruning, injection); runs before `convert_to_llm`.
pub type TransformContext = Arc<
    dyn Fn(
            Vec<AgentMessage>,
            CancellationToken,
        ) -> BoxFuture<'static, Result<Vec<AgentMessage>, HookError>>
        + Send
        + Sync,
>;

/// Resolves an API key for a provider before each model call (for expiring tokens).
pub type GetApiKey =
    Arc<dyn Fn(String) -> BoxFuture<'static, Result<Option<String>, HookError>> + Send + Sync>;

/// Called after a tool call's arguments validated; may block the call.
pub type BeforeToolCall = Arc<
    dyn Fn(
            ToolCallInfo,
            CancellationToken,
        ) -> BoxFuture<'static, Result<ToolCallDecision, HookError>>
        + Send
        + Sync,
>;

/// Called after a tool ran; may override parts of the result.
pub type AfterToolCall = Arc<
    dyn Fn(
            ToolCallInfo,
            ToolCallResult,
            CancellationToken,
        ) -> BoxFuture<'static, Result<ResultOverride, HookError>>
        + Send
        + Sync,
>;

/// Drains queued messages (steering or follow-up); returns an empty list when none are queued.
pub type MessageSource = Arc<dyn Fn() -> Vec<AgentMessage> + Send + Sync>;

/// What a tool hook sees about the call.
#[derive(Debug, Clone)]
pub struct ToolCallInfo {
    /// The assistant message that made the call.
    pub assistant_message: Arc<AssistantMessage>,
    pub tool_call: ToolCall,
    /// Arguments after validation and type coercion.
    pub args: Value,
    /// The run's context as it stood when the tools started (shared, not copied).
    pub context: Arc<Vec<AgentMessage>>,
}

/// The outcome the after-hook sees.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallResult {
    pub result: ToolOutput,
    pub is_error: bool,
}

/// The before-hook's answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolCallDecision {
    #[default]
    Allow,
    /// Do not run the tool; the model gets `reason` (or `Tool execution was blocked`) as an error.
    Block { reason: Option<String> },
}

/// Field-wise replacements from the after-hook (`None` keeps the tool's value; no deep merge).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResultOverride {
    pub content: Option<Vec<ContentBlock>>,
    pub details: Option<Value>,
    pub is_error: Option<bool>,
}

/// How the tool calls of one assistant message run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolExecution {
    /// Prepare in order, execute concurrently (respecting [`Concurrency`](crate::Concurrency)),
    /// finalise in assistant order.
    #[default]
    Parallel,
    /// Prepare, execute and finalise one call at a time, polling steering after each.
    Sequential,
}

/// Everything one run of the loop needs besides the context.
#[derive(Clone)]
pub struct LoopConfig {
    pub model: Model,
    pub client: Arc<dyn ModelClient>,
    /// Options for every model call; `api_key` is replaced by `get_api_key`'s answer when it has one.
    pub options: StreamOptions,
    pub convert_to_llm: ConvertToLlm,
    pub transform_context: Option<TransformContext>,
    pub get_api_key: Option<GetApiKey>,
    pub steering: Option<MessageSource>,
    pub follow_up: Option<MessageSource>,
    pub tool_execution: ToolExecution,
    pub before_tool_call: Option<BeforeToolCall>,
    pub after_tool_call: Option<AfterToolCall>,
    /// After an abort, how long a running tool may take to return its own (aborted) result before
    /// it is dropped and reported as `Operation aborted`.
    pub abort_grace: Duration,
}

/// The default [`LoopConfig::abort_grace`].
pub const DEFAULT_ABORT_GRACE: Duration = Duration::from_secs(2);

impl LoopConfig {
    /// A config with pi's defaults: default conversion, parallel tools, no hooks, no queues.
    pub fn new(model: Model, client: Arc<dyn ModelClient>) -> Self {
        LoopConfig {
            model,
            client,
            options: StreamOptions::default(),
            convert_to_llm: Arc::new(crate::message::default_convert_to_llm),
            transform_context: None,
            get_api_key: None,
            steering: None,
            follow_up: None,
            tool_execution: ToolExecution::Parallel,
            before_tool_call: None,
            after_tool_call: None,
            abort_grace: DEFAULT_ABORT_GRACE,
        }
    }

    pub(crate) fn poll_steering(&self) -> Vec<AgentMessage> {
        self.steering.as_ref().map(|f| f()).unwrap_or_default()
    }

    pub(crate) fn poll_follow_up(&self) -> Vec<AgentMessage> {
        self.follow_up.as_ref().map(|f| f()).unwrap_or_default()
    }
}
