mod context;
mod faults;
mod files;
mod hostile;
mod lazy;
mod pi16;
mod tree;

use filo_ai::{AssistantMessage, ContentBlock, Message, StopReason, UserContent, UserMessage};
use filo_session::SessionMessage;

pub fn user(text: &str) -> SessionMessage {
    SessionMessage::Llm(Message::User(UserMessage {
        content: UserContent::Blocks(vec![ContentBlock::text(text)]),
        timestamp: 1_700_000_000_000,
    }))
}

pub fn assistant(text: &str) -> SessionMessage {
    SessionMessage::Llm(Message::Assistant(AssistantMessage {
        content: vec![ContentBlock::text(text)],
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        usage: Default::default(),
        stop_reason: StopReason::Stop,
        timestamp: 1_700_000_000_001,
        error_message: None,
        error_status: None,
        response_id: None,
    }))
}

/// The texts of the LLM messages of a context, for compact assertions.
pub fn texts(messages: &[SessionMessage]) -> Vec<String> {
    filo_session::convert_to_llm(messages)
        .iter()
        .map(|m| match m {
            Message::User(u) => match &u.content {
                UserContent::Text(t) => t.clone(),
                UserContent::Blocks(b) => b.iter().filter_map(ContentBlock::as_text).collect(),
            },
            Message::Assistant(a) => a.text(),
            Message::ToolResult(t) => t.content.iter().filter_map(ContentBlock::as_text).collect(),
        })
        .collect()
}
