//! Message builders for the history tests.

use filo_agent::AgentMessage;
use filo_ai::{
    AssistantMessage, ContentBlock, Message, StopReason, ToolCall, ToolResultMessage, Usage,
    UserContent, UserMessage,
};
use serde_json::{Value, json};

pub fn user(text: &str) -> AgentMessage {
    AgentMessage::Llm(Message::User(UserMessage {
        content: UserContent::Text(text.into()),
        timestamp: 1,
    }))
}

pub fn assistant_blocks(content: Vec<ContentBlock>, stop: StopReason) -> AssistantMessage {
    AssistantMessage {
        content,
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude".into(),
        usage: Usage::default(),
        stop_reason: stop,
        timestamp: 2,
        error_message: None,
        error_status: None,
        response_id: None,
    }
}

pub fn text(t: &str) -> AgentMessage {
    AgentMessage::Llm(Message::Assistant(assistant_blocks(
        vec![ContentBlock::text(t)],
        StopReason::Stop,
    )))
}

pub fn call_block(id: &str, name: &str, args: Value) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
        thought_signature: None,
    })
}

pub fn calls_with(ids: &[(&str, &str)], stop: StopReason) -> AgentMessage {
    let blocks = ids
        .iter()
        .map(|(id, name)| call_block(id, name, json!({})))
        .collect();
    AgentMessage::Llm(Message::Assistant(assistant_blocks(blocks, stop)))
}

pub fn calls(ids: &[(&str, &str)]) -> AgentMessage {
    calls_with(ids, StopReason::ToolUse)
}

pub fn result(id: &str, name: &str, t: &str) -> AgentMessage {
    AgentMessage::Llm(Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: name.into(),
        content: vec![ContentBlock::text(t)],
        details: None,
        is_error: false,
        timestamp: 3,
    }))
}

pub fn roles(msgs: &[AgentMessage]) -> Vec<&str> {
    msgs.iter().map(AgentMessage::role).collect()
}

pub fn as_result(m: &AgentMessage) -> &ToolResultMessage {
    match m {
        AgentMessage::Llm(Message::ToolResult(r)) => r,
        other => panic!("not a tool result: {other:?}"),
    }
}

pub fn result_text(m: &AgentMessage) -> String {
    as_result(m)
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}
