//! Between the agent's messages and the session file's: both are pi's JSON, so the bridge is the
//! JSON form itself — nothing is lost either way.

use filo_agent::{AgentMessage, CustomMessage};
use filo_session::SessionMessage;
use serde_json::Value;

/// A session message as the agent carries it.
pub fn to_agent(m: &SessionMessage) -> AgentMessage {
    match m {
        SessionMessage::Llm(msg) => AgentMessage::Llm(msg.clone()),
        other => match other.to_value() {
            Value::Object(fields) => AgentMessage::Custom(CustomMessage::new(other.role(), fields)),
            _ => AgentMessage::Custom(CustomMessage::new(other.role(), Default::default())),
        },
    }
}

/// [`to_agent`] of a message no longer needed: an LLM message is moved, not copied.
pub fn into_agent(m: SessionMessage) -> AgentMessage {
    match m {
        SessionMessage::Llm(msg) => AgentMessage::Llm(msg),
        other => to_agent(&other),
    }
}

/// An agent message as the session keeps it; `None` for roles the session does not know.
pub fn to_session(m: &AgentMessage) -> Option<SessionMessage> {
    match m {
        AgentMessage::Llm(msg) => Some(SessionMessage::Llm(msg.clone())),
        AgentMessage::Custom(c) => {
            let mut fields = c.fields.clone();
            fields.insert("role".into(), c.role.clone().into());
            SessionMessage::from_value(&Value::Object(fields)).ok()
        }
    }
}

/// The coding agent's `convertToLlm` over agent messages (coding-agent roles become user
/// messages; unknown roles are dropped). With `block_images`, every image becomes the text
/// `Image reading is disabled.` (consecutive duplicates collapsed).
pub fn convert_to_llm(messages: &[AgentMessage], block_images: bool) -> Vec<filo_ai::Message> {
    // An LLM message converts to itself: cloned once, not through a session message.
    let mut out: Vec<filo_ai::Message> = messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::Llm(msg) => Some(msg.clone()),
            custom => to_session(custom).and_then(|s| filo_session::message_to_llm(&s)),
        })
        .collect();
    if block_images {
        for m in &mut out {
            let blocks = match m {
                filo_ai::Message::User(u) => match &mut u.content {
                    filo_ai::UserContent::Blocks(b) => b,
                    filo_ai::UserContent::Text(_) => continue,
                },
                filo_ai::Message::ToolResult(t) => &mut t.content,
                filo_ai::Message::Assistant(_) => continue,
            };
            let mut replaced: Vec<filo_ai::ContentBlock> = Vec::with_capacity(blocks.len());
            for b in blocks.drain(..) {
                let b = match b {
                    filo_ai::ContentBlock::Image(_) => {
                        filo_ai::ContentBlock::text("Image reading is disabled.")
                    }
                    other => other,
                };
                let dup = matches!((&b, replaced.last()), (filo_ai::ContentBlock::Text(t), Some(filo_ai::ContentBlock::Text(p)))
                    if t.text == "Image reading is disabled." && p.text == t.text);
                if !dup {
                    replaced.push(b);
                }
            }
            *blocks = replaced;
        }
    }
    out
}
