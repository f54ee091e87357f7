//! What the [`Agent`](crate::Agent) starts from and what it can be prompted with.

use std::sync::Arc;
use std::time::Duration;

use filo_ai::{ContentBlock, Model, StreamOptions, ThinkingLevel};

use crate::config::{
    AfterToolCall, BeforeToolCall, ConvertToLlm, DEFAULT_ABORT_GRACE, GetApiKey, ToolExecution,
    TransformContext,
};
use crate::message::{AgentMessage, default_convert_to_llm};
use crate::state::QueueMode;
use crate::tool::AgentTool;

/// What to prompt with.
#[derive(Debug, Clone)]
pub enum Prompt {
    Text(String),
    /// Text followed by image blocks, as one user message.
    TextWithImages(String, Vec<ContentBlock>),
    Messages(Vec<AgentMessage>),
}

impl From<&str> for Prompt {
    fn from(s: &str) -> Self {
        Prompt::Text(s.to_string())
    }
}

impl From<String> for Prompt {
    fn from(s: String) -> Self {
        Prompt::Text(s)
    }
}

impl From<AgentMessage> for Prompt {
    fn from(m: AgentMessage) -> Self {
        Prompt::Messages(vec![m])
    }
}

impl From<Vec<AgentMessage>> for Prompt {
    fn from(ms: Vec<AgentMessage>) -> Self {
        Prompt::Messages(ms)
    }
}

impl Prompt {
    pub(crate) fn into_messages(self) -> Vec<AgentMessage> {
        match self {
            Prompt::Text(text) => vec![AgentMessage::user_text(text)],
            Prompt::TextWithImages(text, images) => {
                let mut blocks = vec![ContentBlock::text(text)];
                blocks.extend(images);
                vec![AgentMessage::user_blocks(blocks)]
            }
            Prompt::Messages(ms) => ms,
        }
    }
}

/// How an [`Agent`](crate::Agent) starts out (pi's constructor options).
#[derive(Clone)]
pub struct AgentOptions {
    pub system_prompt: String,
    /// pi defaults to a Gemini model from its catalog; filo has none built in, so `None` here
    /// means prompts fail with `No model configured` until one is set.
    pub model: Option<Model>,
    pub thinking_level: ThinkingLevel,
    pub tools: Vec<Arc<dyn AgentTool>>,
    pub messages: Vec<AgentMessage>,
    pub convert_to_llm: ConvertToLlm,
    pub transform_context: Option<TransformContext>,
    pub get_api_key: Option<GetApiKey>,
    pub before_tool_call: Option<BeforeToolCall>,
    pub after_tool_call: Option<AfterToolCall>,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    pub tool_execution: ToolExecution,
    /// Options for every model call (session id, thinking budgets, retry cap, cache retention,
    /// temperature, headers …); `reasoning` is always taken from `thinking_level`.
    pub stream_options: StreamOptions,
    pub abort_grace: Duration,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            system_prompt: String::new(),
            model: None,
            thinking_level: ThinkingLevel::Off,
            tools: Vec::new(),
            messages: Vec::new(),
            convert_to_llm: Arc::new(default_convert_to_llm),
            transform_context: None,
            get_api_key: None,
            before_tool_call: None,
            after_tool_call: None,
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            tool_execution: ToolExecution::Parallel,
            stream_options: StreamOptions::default(),
            abort_grace: DEFAULT_ABORT_GRACE,
        }
    }
}
