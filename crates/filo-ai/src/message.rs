//! Messages and content blocks with pi's exact JSON shapes (pi spec §1.1–1.3).
//!
//! Field names and write order follow pi; optional fields are omitted when absent; unknown fields are
//! tolerated on read (serde ignores them), so files written by newer pi versions still load.
//!
//! [`check`] mirrors the serde shapes of the three message structs to check a message without
//! building it: a change to a `#[serde]` attribute or a field here must be made there too.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod check;

/// Plain text. `text_signature` carries an OpenAI Responses message id or a Gemini thought signature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    pub text: String,
    #[serde(
        rename = "textSignature",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub text_signature: Option<String>,
}

/// Model reasoning. The signature is kept byte for byte so it can be replayed to the same provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkingContent {
    pub thinking: String,
    #[serde(
        rename = "thinkingSignature",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub thinking_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<bool>,
}

/// An image: base64 data without a `data:` prefix, and its MIME type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageContent {
    pub data: String,
    #[serde(rename = "mimeType")]
    pub mime_type: String,
}

/// A tool call made by the assistant. `arguments` is the parsed JSON object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
    #[serde(
        rename = "thoughtSignature",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub thought_signature: Option<String>,
}

/// Any content block, tagged by `type` as pi writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    #[serde(rename = "text")]
    Text(TextContent),
    #[serde(rename = "thinking")]
    Thinking(ThinkingContent),
    #[serde(rename = "image")]
    Image(ImageContent),
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
}

impl ContentBlock {
    /// A text block without a signature.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })
    }

    /// An image block.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
        })
    }

    /// The text of a text block, if this is one.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

/// User content: pi accepts a bare string or an array of text and image blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

impl UserContent {
    /// The content as blocks (a bare string becomes one text block).
    pub fn to_blocks(&self) -> Vec<ContentBlock> {
        match self {
            UserContent::Text(s) => vec![ContentBlock::text(s.clone())],
            UserContent::Blocks(b) => b.clone(),
        }
    }
}

/// Token cost in USD, per category.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    #[serde(default, serialize_with = "js_number")]
    pub input: f64,
    #[serde(default, serialize_with = "js_number")]
    pub output: f64,
    #[serde(default, serialize_with = "js_number")]
    pub cache_read: f64,
    #[serde(default, serialize_with = "js_number")]
    pub cache_write: f64,
    #[serde(default, serialize_with = "js_number")]
    pub total: f64,
}

/// Writes a float the way JavaScript's `JSON.stringify` does for integral values (`0`, not `0.0`),
/// so files we write read the same as pi's.
pub fn js_number<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if v.is_finite() && v.fract() == 0.0 && v.abs() <= MAX_SAFE {
        // Exact: the value is integral and within i64's safe range.
        #[allow(clippy::cast_possible_truncation)]
        s.serialize_i64(*v as i64)
    } else if v.is_finite() {
        s.serialize_f64(*v)
    } else {
        s.serialize_unit()
    }
}

/// Token usage of one assistant message. Old sessions may lack `totalTokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
    #[serde(default)]
    pub total_tokens: u64,
    #[serde(default)]
    pub cost: Cost,
}

/// Why an assistant message ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    #[default]
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
    /// pi 1.6 (0.83): the provider accepted the request and will answer later; the message's
    /// `deferred` handle (kept verbatim by the session layer) says where to fetch it.
    Deferred,
    /// pi 1.6 (0.84): a partial message while it streams; pi never persists it.
    Pending,
}

/// A user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    pub content: UserContent,
    pub timestamp: i64,
}

/// An assistant message, as every provider builds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<ContentBlock>,
    pub api: String,
    pub provider: String,
    pub model: String,
    #[serde(default)]
    pub usage: Usage,
    pub stop_reason: StopReason,
    pub timestamp: i64,
    /// The provider's id for this response, as pi 0.73 records it: Anthropic's message id, the
    /// Responses API's response id, the Chat Completions chunk id, Gemini's `responseId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The HTTP status of a failed request, when there was one (G9: classification by status).
    /// filo's own field: never written to sessions or events, so pi reads filo's files as before.
    #[serde(skip)]
    pub error_status: Option<u16>,
}

impl AssistantMessage {
    /// The tool calls of this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolCall(tc) => Some(tc),
            _ => None,
        })
    }

    /// All text blocks joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect()
    }
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub is_error: bool,
    pub timestamp: i64,
}

/// A message in an LLM context, tagged by `role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role")]
pub enum Message {
    #[serde(rename = "user")]
    User(UserMessage),
    #[serde(rename = "assistant")]
    Assistant(AssistantMessage),
    #[serde(rename = "toolResult")]
    ToolResult(ToolResultMessage),
}

impl Message {
    /// pi's role string.
    pub fn role(&self) -> &'static str {
        match self {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
        }
    }

    /// The message's timestamp in ms since the epoch.
    pub fn timestamp(&self) -> i64 {
        match self {
            Message::User(m) => m.timestamp,
            Message::Assistant(m) => m.timestamp,
            Message::ToolResult(m) => m.timestamp,
        }
    }
}

/// A tool as the model sees it: name, description and a JSON Schema for the arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// Everything one model call needs besides the model and options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assistant_round_trips_with_pi_field_order() {
        let line = r#"{"role":"assistant","content":[{"type":"thinking","thinking":"hm","thinkingSignature":"sig"},{"type":"text","text":"hi"},{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"ls"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.5,"output":0.25,"cacheRead":0,"cacheWrite":0,"total":0.75}},"stopReason":"toolUse","timestamp":1700000000000}"#;
        let msg: Message = serde_json::from_str(line).unwrap();
        let Message::Assistant(a) = &msg else {
            panic!("not assistant")
        };
        assert_eq!(a.stop_reason, StopReason::ToolUse);
        assert_eq!(a.tool_calls().count(), 1);
        let back = serde_json::to_value(&msg).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(line).unwrap());
        let keys: Vec<_> = back.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "role",
                "content",
                "api",
                "provider",
                "model",
                "usage",
                "stopReason",
                "timestamp"
            ]
        );
    }

    #[test]
    fn user_string_content_and_unknown_fields() {
        let v = json!({"role":"user","content":"hello","timestamp":5,"extra":true});
        let msg: Message = serde_json::from_value(v).unwrap();
        let Message::User(u) = msg else {
            panic!("not user")
        };
        assert_eq!(u.content, UserContent::Text("hello".into()));
        let block: ContentBlock = serde_json::from_value(
            json!({"type":"toolCall","id":"a","name":"b","arguments":{},"partialJson":"{"}),
        )
        .unwrap();
        assert!(matches!(block, ContentBlock::ToolCall(_)));
    }

    #[test]
    fn tool_result_omits_absent_details() {
        let m = Message::ToolResult(ToolResultMessage {
            tool_call_id: "c".into(),
            tool_name: "ls".into(),
            content: vec![ContentBlock::text("x")],
            details: None,
            is_error: false,
            timestamp: 1,
        });
        let s = serde_json::to_string(&m).unwrap();
        assert_eq!(
            s,
            r#"{"role":"toolResult","toolCallId":"c","toolName":"ls","content":[{"type":"text","text":"x"}],"isError":false,"timestamp":1}"#
        );
    }
}
