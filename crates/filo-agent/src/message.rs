//! Agent messages (pi spec §2.1): the LLM messages plus roles that applications add (the coding
//! agent's `bashExecution`, `custom`, `branchSummary`, `compactionSummary`, §3.2).
//!
//! A custom message is kept as its role and the rest of its JSON fields, so the agent loop can carry
//! roles it knows nothing about; `convert_to_llm` decides what the model sees.

use std::time::{SystemTime, UNIX_EPOCH};

use filo_ai::{
    AssistantMessage, ContentBlock, Message, ToolResultMessage, UserContent, UserMessage,
};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A message in the agent's history.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentMessage {
    /// `user`, `assistant` or `toolResult`.
    Llm(Message),
    /// Any other role, carried verbatim.
    Custom(CustomMessage),
}

/// A message with an application-defined role. `fields` holds every JSON field except `role`, in
/// their original order.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomMessage {
    pub role: String,
    pub fields: Map<String, Value>,
}

impl CustomMessage {
    /// A custom message with the given role and fields (a `role` key in `fields` is ignored).
    pub fn new(role: impl Into<String>, mut fields: Map<String, Value>) -> Self {
        fields.shift_remove("role");
        CustomMessage {
            role: role.into(),
            fields,
        }
    }
}

/// Milliseconds since the Unix epoch, as pi stamps messages.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl AgentMessage {
    /// A user message with one text block, stamped now (pi's `prompt(text)`).
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::user_blocks(vec![ContentBlock::text(text)])
    }

    /// A user message with the given text and image blocks, stamped now.
    pub fn user_blocks(content: Vec<ContentBlock>) -> Self {
        AgentMessage::Llm(Message::User(UserMessage {
            content: UserContent::Blocks(content),
            timestamp: now_ms(),
        }))
    }

    /// The role string as pi writes it.
    pub fn role(&self) -> &str {
        match self {
            AgentMessage::Llm(m) => m.role(),
            AgentMessage::Custom(c) => &c.role,
        }
    }

    /// The timestamp in ms, when the message has one.
    pub fn timestamp(&self) -> Option<i64> {
        match self {
            AgentMessage::Llm(m) => Some(m.timestamp()),
            AgentMessage::Custom(c) => c.fields.get("timestamp").and_then(Value::as_i64),
        }
    }

    /// The LLM message, if this is one.
    pub fn as_llm(&self) -> Option<&Message> {
        match self {
            AgentMessage::Llm(m) => Some(m),
            AgentMessage::Custom(_) => None,
        }
    }

    /// The assistant message, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            AgentMessage::Llm(Message::Assistant(a)) => Some(a),
            AgentMessage::Llm(Message::User(_) | Message::ToolResult(_))
            | AgentMessage::Custom(_) => None,
        }
    }

    /// The tool result, if this is one.
    pub fn as_tool_result(&self) -> Option<&ToolResultMessage> {
        match self {
            AgentMessage::Llm(Message::ToolResult(r)) => Some(r),
            AgentMessage::Llm(Message::User(_) | Message::Assistant(_))
            | AgentMessage::Custom(_) => None,
        }
    }
}

impl From<Message> for AgentMessage {
    fn from(m: Message) -> Self {
        AgentMessage::Llm(m)
    }
}

impl From<AssistantMessage> for AgentMessage {
    fn from(m: AssistantMessage) -> Self {
        AgentMessage::Llm(Message::Assistant(m))
    }
}

impl From<ToolResultMessage> for AgentMessage {
    fn from(m: ToolResultMessage) -> Self {
        AgentMessage::Llm(Message::ToolResult(m))
    }
}

impl From<UserMessage> for AgentMessage {
    fn from(m: UserMessage) -> Self {
        AgentMessage::Llm(Message::User(m))
    }
}

impl From<CustomMessage> for AgentMessage {
    fn from(m: CustomMessage) -> Self {
        AgentMessage::Custom(m)
    }
}

/// pi's default `convertToLlm`: keep user, assistant and tool-result messages, drop other roles.
pub fn default_convert_to_llm(messages: &[AgentMessage]) -> Vec<Message> {
    messages
        .iter()
        .filter_map(|m| m.as_llm().cloned())
        .collect()
}

impl Serialize for AgentMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            AgentMessage::Llm(m) => m.serialize(serializer),
            AgentMessage::Custom(c) => {
                let mut map = serializer.serialize_map(Some(c.fields.len() + 1))?;
                map.serialize_entry("role", &c.role)?;
                for (k, v) in c.fields.iter().filter(|(k, _)| k.as_str() != "role") {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(deserializer)?;
        let role = value
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| D::Error::custom("message has no string `role` field"))?;
        match role {
            "user" | "assistant" | "toolResult" => serde_json::from_value(value)
                .map(AgentMessage::Llm)
                .map_err(D::Error::custom),
            _ => {
                let role = role.to_string();
                let Value::Object(fields) = value else {
                    return Err(D::Error::custom("message is not a JSON object"));
                };
                Ok(AgentMessage::Custom(CustomMessage::new(role, fields)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn custom_role_round_trips_with_role_first() {
        let line = r#"{"role":"bashExecution","command":"ls","output":"a","cancelled":false,"truncated":false,"timestamp":7}"#;
        let m: AgentMessage = serde_json::from_str(line).unwrap();
        assert_eq!(m.role(), "bashExecution");
        assert_eq!(m.timestamp(), Some(7));
        assert!(m.as_llm().is_none());
        assert_eq!(serde_json::to_string(&m).unwrap(), line);
    }

    #[test]
    fn llm_roles_parse_as_messages() {
        let m: AgentMessage =
            serde_json::from_value(json!({"role":"user","content":"hi","timestamp":1})).unwrap();
        assert!(matches!(m, AgentMessage::Llm(Message::User(_))));
        let bad = serde_json::from_value::<AgentMessage>(json!({"content":"hi"}));
        assert!(bad.unwrap_err().to_string().contains("role"));
        let bad_user = serde_json::from_value::<AgentMessage>(json!({"role":"user"}));
        assert!(bad_user.is_err());
    }

    #[test]
    fn default_conversion_drops_custom_roles() {
        let msgs = vec![
            AgentMessage::user_text("a"),
            AgentMessage::Custom(CustomMessage::new("note", Map::new())),
        ];
        let llm = default_convert_to_llm(&msgs);
        assert_eq!(llm.len(), 1);
        assert_eq!(llm[0].role(), "user");
    }
}
