//! Session header, entries and the messages stored in them, with pi's JSON shapes (pi spec §3.2,
//! §3.3, §9).
//!
//! Entries are converted to and from `serde_json::Value` by hand so that the key order on disk is
//! exactly pi's (including the odd order of `custom` and `custom_message`), unknown entry types
//! survive a load/save round trip, and unknown fields never make a line unreadable.

use filo_ai::{Message, SystemMessage, UserContent};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The session format version filo writes.
pub const CURRENT_VERSION: u64 = 3;

/// Why a line could not be read as a header or an entry.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EntryError {
    #[error("not a JSON object")]
    NotAnObject,
    #[error("missing or invalid field `{0}`")]
    Field(&'static str),
    #[error("invalid {kind} entry: {message}")]
    Invalid { kind: String, message: String },
}

/// Line 1 of a session file.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionHeader {
    pub version: u64,
    pub id: String,
    pub timestamp: String,
    pub cwd: String,
    pub parent_session: Option<String>,
    /// Legacy keys (v1 `provider`, `modelId`, `thinkingLevel`, `branchedFrom`, …), kept as they were.
    pub extra: Map<String, Value>,
}

impl SessionHeader {
    /// A new v3 header.
    pub fn new(id: String, timestamp: String, cwd: String, parent_session: Option<String>) -> Self {
        SessionHeader {
            version: CURRENT_VERSION,
            id,
            timestamp,
            cwd,
            parent_session,
            extra: Map::new(),
        }
    }

    /// pi's JSON object for the header.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), "session".into());
        m.insert("version".into(), self.version.into());
        m.insert("id".into(), self.id.clone().into());
        m.insert("timestamp".into(), self.timestamp.clone().into());
        m.insert("cwd".into(), self.cwd.clone().into());
        if let Some(p) = &self.parent_session {
            m.insert("parentSession".into(), p.clone().into());
        }
        for (k, v) in &self.extra {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Value::Object(m)
    }

    /// Read a header object. pi requires `type:"session"` and a string `id`.
    pub fn from_value(v: &Value) -> Result<Self, EntryError> {
        let obj = v.as_object().ok_or(EntryError::NotAnObject)?;
        if obj.get("type").and_then(Value::as_str) != Some("session") {
            return Err(EntryError::Field("type"));
        }
        let id = obj
            .get("id")
            .and_then(Value::as_str)
            .ok_or(EntryError::Field("id"))?;
        let known = ["type", "version", "id", "timestamp", "cwd", "parentSession"];
        let extra = obj
            .iter()
            .filter(|(k, _)| !known.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(SessionHeader {
            version: obj.get("version").and_then(Value::as_u64).unwrap_or(1),
            id: id.to_string(),
            timestamp: str_field(obj, "timestamp").unwrap_or_default(),
            cwd: str_field(obj, "cwd").unwrap_or_default(),
            parent_session: str_field(obj, "parentSession"),
            extra,
        })
    }
}

/// A `bashExecution` message (a `!cmd` the user ran).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashExecution {
    pub command: String,
    pub output: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub cancelled: bool,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    pub timestamp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
}

/// A `custom` message injected by an extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    pub custom_type: String,
    pub content: UserContent,
    #[serde(default)]
    pub display: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub timestamp: i64,
}

/// A message as the coding agent keeps it: an LLM message or one of the coding-agent roles.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionMessage {
    /// `user`, `assistant` or `toolResult`.
    Llm(Message),
    BashExecution(BashExecution),
    Custom(CustomMessage),
    BranchSummary {
        summary: String,
        from_id: String,
        timestamp: i64,
    },
    CompactionSummary {
        summary: String,
        tokens_before: u64,
        timestamp: i64,
    },
    /// pi 1.6's prompt-and-tools message (first form or patch): kept in the tree and in the
    /// context's message list, never sent as a turn; replayed into the prompt and tools.
    System(SystemMessage),
}

impl SessionMessage {
    /// The `role` string.
    pub fn role(&self) -> &'static str {
        match self {
            SessionMessage::Llm(m) => m.role(),
            SessionMessage::BashExecution(_) => "bashExecution",
            SessionMessage::Custom(_) => "custom",
            SessionMessage::BranchSummary { .. } => "branchSummary",
            SessionMessage::CompactionSummary { .. } => "compactionSummary",
            SessionMessage::System(_) => "system",
        }
    }

    /// pi's JSON object for the message.
    pub fn to_value(&self) -> Value {
        let body = match self {
            SessionMessage::Llm(m) => return serde_json::to_value(m).unwrap_or(Value::Null),
            SessionMessage::BashExecution(b) => serde_json::to_value(b),
            SessionMessage::System(m) => serde_json::to_value(m),
            SessionMessage::Custom(c) => serde_json::to_value(c),
            SessionMessage::BranchSummary {
                summary,
                from_id,
                timestamp,
            } => Ok(serde_json::json!({
                "summary": summary, "fromId": from_id, "timestamp": timestamp
            })),
            SessionMessage::CompactionSummary {
                summary,
                tokens_before,
                timestamp,
            } => Ok(serde_json::json!({
                "summary": summary, "tokensBefore": tokens_before, "timestamp": timestamp
            })),
        };
        let mut m = Map::new();
        m.insert("role".into(), self.role().into());
        if let Ok(Value::Object(fields)) = body {
            m.extend(fields);
        }
        Value::Object(m)
    }

    /// Read a message object by its `role`.
    pub fn from_value(v: &Value) -> Result<Self, EntryError> {
        let role = v
            .get("role")
            .and_then(Value::as_str)
            .ok_or(EntryError::Field("role"))?;
        let invalid = |e: serde_json::Error| EntryError::Invalid {
            kind: format!("{role} message"),
            message: e.to_string(),
        };
        Ok(match role {
            "user" | "assistant" | "toolResult" => {
                SessionMessage::Llm(Message::deserialize(v).map_err(invalid)?)
            }
            "bashExecution" => {
                SessionMessage::BashExecution(BashExecution::deserialize(v).map_err(invalid)?)
            }
            "custom" | "hookMessage" => {
                SessionMessage::Custom(CustomMessage::deserialize(v).map_err(invalid)?)
            }
            "system" => SessionMessage::System(SystemMessage::deserialize(v).map_err(invalid)?),
            "branchSummary" => SessionMessage::BranchSummary {
                summary: str_req(v, "summary")?,
                from_id: str_req(v, "fromId")?,
                timestamp: v.get("timestamp").and_then(Value::as_i64).unwrap_or(0),
            },
            "compactionSummary" => SessionMessage::CompactionSummary {
                summary: str_req(v, "summary")?,
                tokens_before: v.get("tokensBefore").and_then(Value::as_u64).unwrap_or(0),
                timestamp: v.get("timestamp").and_then(Value::as_i64).unwrap_or(0),
            },
            other => {
                return Err(EntryError::Invalid {
                    kind: "message".into(),
                    message: format!("unknown role `{other}`"),
                });
            }
        })
    }
}

/// What an entry records.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    Message(SessionMessage),
    ThinkingLevelChange {
        thinking_level: String,
    },
    ModelChange {
        provider: String,
        model_id: String,
    },
    /// A compaction. pi 1.6 adds `usage` (the summary call's, counted in the session's totals)
    /// and `systemMessage`, the replayed prompt and tools at the boundary: it leads the
    /// compacted context, and system messages among the kept entries are dropped for it. A
    /// retain-none compaction names itself as `firstKeptEntryId`.
    Compaction {
        summary: String,
        first_kept_entry_id: String,
        tokens_before: u64,
        details: Option<Value>,
        from_hook: Option<bool>,
        usage: Option<Value>,
        system_message: Option<Box<SystemMessage>>,
    },
    BranchSummary {
        from_id: String,
        summary: String,
        details: Option<Value>,
        from_hook: Option<bool>,
        /// pi 1.6 (0.81): the summary call's usage.
        usage: Option<Value>,
    },
    /// pi 1.6's append-only edit of an earlier context-producing entry (0.87): `None` omits the
    /// target from the model's context, a replacement (`{"content": …}`) replaces its content.
    /// The latest edit on the active path wins; the target itself is never changed.
    ContextEdit {
        target_id: String,
        replacement: Option<Value>,
    },
    Custom {
        custom_type: String,
        data: Option<Value>,
    },
    CustomMessage {
        custom_type: String,
        content: UserContent,
        display: bool,
        details: Option<Value>,
    },
    Label {
        target_id: String,
        label: Option<String>,
    },
    SessionInfo {
        name: String,
    },
    /// An entry type this version does not know; its fields are kept so it can be written back.
    Unknown {
        entry_type: String,
        fields: Map<String, Value>,
    },
}

impl EntryKind {
    /// The entry's `type` string.
    pub fn type_name(&self) -> &str {
        match self {
            EntryKind::Message(_) => "message",
            EntryKind::ThinkingLevelChange { .. } => "thinking_level_change",
            EntryKind::ModelChange { .. } => "model_change",
            EntryKind::Compaction { .. } => "compaction",
            EntryKind::BranchSummary { .. } => "branch_summary",
            EntryKind::ContextEdit { .. } => "context_edit",
            EntryKind::Custom { .. } => "custom",
            EntryKind::CustomMessage { .. } => "custom_message",
            EntryKind::Label { .. } => "label",
            EntryKind::SessionInfo { .. } => "session_info",
            EntryKind::Unknown { entry_type, .. } => entry_type,
        }
    }
}

/// One line of a session file after the header.
#[derive(Debug, Clone)]
pub struct SessionEntry {
    pub id: String,
    pub parent_id: Option<String>,
    /// ISO-8601 time, as pi writes it.
    pub timestamp: String,
    pub kind: EntryKind,
    /// The line as it was read, for an entry whose typed form would not write it back
    /// the same (pi 1.6's `thinkingLevel`, `durationMs`, `rawStopReason`, `usage.reasoning`, a
    /// tool call's `namespace`, a `deferred` handle, …): [`SessionEntry::to_line`] writes it
    /// back untouched while the entry keeps the id and parent it was read with.
    pub verbatim: Option<Verbatim>,
}

/// A line kept as read, with the id and parent it had (see [`SessionEntry::verbatim`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Verbatim {
    id: String,
    parent_id: Option<String>,
    line: std::sync::Arc<str>,
}

/// Entries are equal when what they record is: the kept line is how one was read, not what.
impl PartialEq for SessionEntry {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.parent_id == other.parent_id
            && self.timestamp == other.timestamp
            && self.kind == other.kind
    }
}

impl SessionEntry {
    /// The stored message, if this is a `message` entry.
    pub fn message(&self) -> Option<&SessionMessage> {
        match &self.kind {
            EntryKind::Message(m) => Some(m),
            _ => None,
        }
    }

    /// An entry without a kept line.
    pub fn new(id: String, parent_id: Option<String>, timestamp: String, kind: EntryKind) -> Self {
        SessionEntry {
            id,
            parent_id,
            timestamp,
            kind,
            verbatim: None,
        }
    }

    /// The kept line, while the entry still has the id and parent it was read with.
    pub fn verbatim_line(&self) -> Option<&str> {
        self.verbatim
            .as_ref()
            .filter(|v| v.id == self.id && v.parent_id == self.parent_id)
            .map(|v| &*v.line)
    }

    /// Keep `line` (the text this entry was read from) when the typed entry would
    /// write something else: fields filo does not model survive a rewrite of the file.
    pub(crate) fn keeping_line(mut self, line: &str) -> Self {
        self.verbatim = None;
        if self.to_line() != line {
            self.verbatim = Some(Verbatim {
                id: self.id.clone(),
                parent_id: self.parent_id.clone(),
                line: line.into(),
            });
        }
        self
    }

    /// pi's JSON object for the entry, keys in pi's write order.
    pub fn to_value(&self) -> Value {
        if let Some(line) = self.verbatim_line()
            && let Ok(v) = serde_json::from_str::<Value>(line)
        {
            return v;
        }
        let mut m = Map::new();
        m.insert("type".into(), self.kind.type_name().into());
        let base_first = !matches!(
            self.kind,
            EntryKind::Custom { .. } | EntryKind::CustomMessage { .. }
        );
        if base_first {
            self.push_base(&mut m);
        }
        match &self.kind {
            EntryKind::Message(msg) => {
                m.insert("message".into(), msg.to_value());
            }
            EntryKind::ThinkingLevelChange { thinking_level } => {
                m.insert("thinkingLevel".into(), thinking_level.clone().into());
            }
            EntryKind::ModelChange { provider, model_id } => {
                m.insert("provider".into(), provider.clone().into());
                m.insert("modelId".into(), model_id.clone().into());
            }
            EntryKind::Compaction {
                summary,
                first_kept_entry_id,
                tokens_before,
                details,
                from_hook,
                usage,
                system_message,
            } => {
                m.insert("summary".into(), summary.clone().into());
                m.insert(
                    "firstKeptEntryId".into(),
                    first_kept_entry_id.clone().into(),
                );
                m.insert("tokensBefore".into(), (*tokens_before).into());
                put_opt(&mut m, "details", details.clone());
                put_opt(&mut m, "usage", usage.clone());
                put_opt(&mut m, "fromHook", from_hook.map(Value::Bool));
                if let Some(sm) = system_message {
                    m.insert(
                        "systemMessage".into(),
                        SessionMessage::System((**sm).clone()).to_value(),
                    );
                }
            }
            EntryKind::BranchSummary {
                from_id,
                summary,
                details,
                from_hook,
                usage,
            } => {
                m.insert("fromId".into(), from_id.clone().into());
                m.insert("summary".into(), summary.clone().into());
                put_opt(&mut m, "details", details.clone());
                put_opt(&mut m, "usage", usage.clone());
                put_opt(&mut m, "fromHook", from_hook.map(Value::Bool));
            }
            EntryKind::ContextEdit {
                target_id,
                replacement,
            } => {
                m.insert("targetId".into(), target_id.clone().into());
                m.insert(
                    "replacement".into(),
                    replacement.clone().unwrap_or(Value::Null),
                );
            }
            EntryKind::Custom { custom_type, data } => {
                m.insert("customType".into(), custom_type.clone().into());
                put_opt(&mut m, "data", data.clone());
            }
            EntryKind::CustomMessage {
                custom_type,
                content,
                display,
                details,
            } => {
                m.insert("customType".into(), custom_type.clone().into());
                m.insert(
                    "content".into(),
                    serde_json::to_value(content).unwrap_or(Value::Null),
                );
                m.insert("display".into(), (*display).into());
                put_opt(&mut m, "details", details.clone());
            }
            EntryKind::Label { target_id, label } => {
                m.insert("targetId".into(), target_id.clone().into());
                put_opt(&mut m, "label", label.clone().map(Value::String));
            }
            EntryKind::SessionInfo { name } => {
                m.insert("name".into(), name.clone().into());
            }
            EntryKind::Unknown { fields, .. } => {
                for (k, v) in fields {
                    m.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        if !base_first {
            self.push_base(&mut m);
        }
        Value::Object(m)
    }

    fn push_base(&self, m: &mut Map<String, Value>) {
        m.insert("id".into(), self.id.clone().into());
        m.insert(
            "parentId".into(),
            self.parent_id.clone().map_or(Value::Null, Value::String),
        );
        m.insert("timestamp".into(), self.timestamp.clone().into());
    }

    /// The compact JSON line (without the newline): `to_value().to_string()`. A user,
    /// assistant or tool-result message entry, nearly every line written, is serialized
    /// straight from its typed message instead of through a JSON tree (the same text: the
    /// message types serialize their fields in order, with no duplicate key).
    pub fn to_line(&self) -> String {
        if let Some(line) = self.verbatim_line() {
            return line.to_string();
        }
        if let EntryKind::Message(SessionMessage::Llm(m)) = &self.kind
            && let Some(line) = self.message_line(m)
        {
            return line;
        }
        self.to_value().to_string()
    }

    /// `{"type":"message","id":…,"parentId":…,"timestamp":…,"message":…}` written directly.
    fn message_line(&self, m: &Message) -> Option<String> {
        let mut out: Vec<u8> = Vec::with_capacity(256);
        out.extend_from_slice(br#"{"type":"message","id":"#);
        serde_json::to_writer(&mut out, &self.id).ok()?;
        out.extend_from_slice(br#","parentId":"#);
        serde_json::to_writer(&mut out, &self.parent_id).ok()?;
        out.extend_from_slice(br#","timestamp":"#);
        serde_json::to_writer(&mut out, &self.timestamp).ok()?;
        out.extend_from_slice(br#","message":"#);
        serde_json::to_writer(&mut out, m).ok()?;
        out.push(b'}');
        String::from_utf8(out).ok()
    }

    /// Read an entry from its JSON line: the entry [`SessionEntry::from_value`] gives for the
    /// parsed line, a plain message line (user, assistant, tool result) read straight into its
    /// typed message without the JSON tree, as a session file's lines are read.
    pub fn from_line(line: &str) -> Result<Self, EntryError> {
        // serde_json's raw-value token is read as a raw value from text but as a plain key
        // from a `Value`: a line naming it (none but a forged one does) takes the `Value` path.
        const RAW_VALUE_TOKEN: &[u8] = b"$serde_json::private::RawValue";
        let forged = memchr::memmem::find(line.as_bytes(), RAW_VALUE_TOKEN).is_some();
        if !forged && let Some(entry) = crate::line::parse_message_line(line) {
            return Ok(entry.keeping_line(line));
        }
        let v: Value = serde_json::from_str(line).map_err(|e| EntryError::Invalid {
            kind: "entry".into(),
            message: e.to_string(),
        })?;
        Self::from_value(&v).map(|e| e.keeping_line(line))
    }

    /// An entry object [`SessionEntry::from_value`] refuses, kept as it is: an entry of its
    /// `type` whose fields are held unread (so its children keep their parent and the line is
    /// written back unchanged). `None` when it has no string `type` and `id`.
    pub fn opaque(v: &Value) -> Option<Self> {
        let obj = v.as_object()?;
        let entry_type = obj.get("type")?.as_str()?;
        let id = obj.get("id")?.as_str()?;
        let parent_id = match obj.get("parentId") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return None,
        };
        let fields = obj
            .iter()
            .filter(|(k, _)| !["type", "id", "parentId", "timestamp"].contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Some(SessionEntry::new(
            id.to_string(),
            parent_id,
            str_field(obj, "timestamp").unwrap_or_default(),
            EntryKind::Unknown {
                entry_type: entry_type.to_string(),
                fields,
            },
        ))
    }

    /// Read an entry object.
    pub fn from_value(v: &Value) -> Result<Self, EntryError> {
        let obj = v.as_object().ok_or(EntryError::NotAnObject)?;
        let entry_type = obj
            .get("type")
            .and_then(Value::as_str)
            .ok_or(EntryError::Field("type"))?;
        let id = obj
            .get("id")
            .and_then(Value::as_str)
            .ok_or(EntryError::Field("id"))?;
        let parent_id = match obj.get("parentId") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(EntryError::Field("parentId")),
        };
        let timestamp = str_field(obj, "timestamp").unwrap_or_default();
        let kind = parse_kind(entry_type, obj, v)?;
        let entry = SessionEntry::new(id.to_string(), parent_id, timestamp, kind);
        Ok(entry.keeping_line(&v.to_string()))
    }
}

fn parse_kind(
    entry_type: &str,
    obj: &Map<String, Value>,
    v: &Value,
) -> Result<EntryKind, EntryError> {
    Ok(match entry_type {
        "message" => {
            let msg = obj.get("message").ok_or(EntryError::Field("message"))?;
            EntryKind::Message(SessionMessage::from_value(msg)?)
        }
        "thinking_level_change" => EntryKind::ThinkingLevelChange {
            thinking_level: str_req(v, "thinkingLevel")?,
        },
        "model_change" => EntryKind::ModelChange {
            provider: str_req(v, "provider")?,
            model_id: str_req(v, "modelId")?,
        },
        "compaction" => EntryKind::Compaction {
            summary: str_req(v, "summary")?,
            first_kept_entry_id: str_field(obj, "firstKeptEntryId").unwrap_or_default(),
            tokens_before: obj.get("tokensBefore").and_then(Value::as_u64).unwrap_or(0),
            details: obj.get("details").cloned(),
            from_hook: obj.get("fromHook").and_then(Value::as_bool),
            usage: obj.get("usage").cloned(),
            system_message: match obj.get("systemMessage") {
                None | Some(Value::Null) => None,
                Some(sm) => Some(Box::new(SystemMessage::deserialize(sm).map_err(|e| {
                    EntryError::Invalid {
                        kind: "compaction".into(),
                        message: format!("systemMessage: {e}"),
                    }
                })?)),
            },
        },
        "branch_summary" => EntryKind::BranchSummary {
            from_id: str_field(obj, "fromId").unwrap_or_default(),
            summary: str_field(obj, "summary").unwrap_or_default(),
            details: obj.get("details").cloned(),
            from_hook: obj.get("fromHook").and_then(Value::as_bool),
            usage: obj.get("usage").cloned(),
        },
        "context_edit" => EntryKind::ContextEdit {
            target_id: str_req(v, "targetId")?,
            replacement: obj.get("replacement").filter(|r| !r.is_null()).cloned(),
        },
        "custom" => EntryKind::Custom {
            custom_type: str_req(v, "customType")?,
            data: obj.get("data").cloned(),
        },
        "custom_message" => EntryKind::CustomMessage {
            custom_type: str_req(v, "customType")?,
            content: obj
                .get("content")
                .cloned()
                .map(serde_json::from_value)
                .transpose()
                .map_err(|e| EntryError::Invalid {
                    kind: "custom_message".into(),
                    message: e.to_string(),
                })?
                .unwrap_or(UserContent::Text(String::new())),
            display: obj.get("display").and_then(Value::as_bool).unwrap_or(false),
            details: obj.get("details").cloned(),
        },
        "label" => EntryKind::Label {
            target_id: str_req(v, "targetId")?,
            label: str_field(obj, "label"),
        },
        "session_info" => EntryKind::SessionInfo {
            name: str_field(obj, "name").unwrap_or_default(),
        },
        other => EntryKind::Unknown {
            entry_type: other.to_string(),
            fields: obj
                .iter()
                .filter(|(k, _)| !["type", "id", "parentId", "timestamp"].contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        },
    })
}

fn put_opt(m: &mut Map<String, Value>, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        m.insert(key.into(), v);
    }
}

fn str_field(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_string)
}

fn str_req(v: &Value, key: &'static str) -> Result<String, EntryError> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or(EntryError::Field(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(line: &str) {
        let v: Value = serde_json::from_str(line).unwrap();
        let e = SessionEntry::from_value(&v).unwrap();
        assert_eq!(e.to_line(), line);
    }

    #[test]
    fn every_entry_type_round_trips_byte_for_byte() {
        round_trip(
            r#"{"type":"model_change","id":"a1b2c3d4","parentId":null,"timestamp":"2025-12-09T00:53:29.825Z","provider":"anthropic","modelId":"claude-opus-4-6"}"#,
        );
        round_trip(
            r#"{"type":"thinking_level_change","id":"b","parentId":"a1b2c3d4","timestamp":"2025-12-09T00:53:29.825Z","thinkingLevel":"medium"}"#,
        );
        round_trip(
            r#"{"type":"message","id":"c","parentId":"b","timestamp":"2025-12-09T00:53:29.825Z","message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1733234567890}}"#,
        );
        round_trip(
            r#"{"type":"compaction","id":"d","parentId":"c","timestamp":"t","summary":"s","firstKeptEntryId":"c","tokensBefore":100,"details":{"readFiles":[],"modifiedFiles":[]},"fromHook":false}"#,
        );
        round_trip(
            r#"{"type":"branch_summary","id":"e","parentId":"c","timestamp":"t","fromId":"c","summary":"s"}"#,
        );
        round_trip(
            r#"{"type":"custom","customType":"x","data":{"k":1},"id":"f","parentId":"e","timestamp":"t"}"#,
        );
        round_trip(
            r#"{"type":"custom_message","customType":"x","content":"hello","display":true,"id":"g","parentId":"f","timestamp":"t"}"#,
        );
        round_trip(
            r#"{"type":"label","id":"h","parentId":"g","timestamp":"t","targetId":"c","label":"start"}"#,
        );
        round_trip(r#"{"type":"label","id":"i","parentId":"h","timestamp":"t","targetId":"c"}"#);
        round_trip(
            r#"{"type":"session_info","id":"j","parentId":"i","timestamp":"t","name":"my session"}"#,
        );
        round_trip(
            r#"{"type":"future_thing","id":"k","parentId":"j","timestamp":"t","payload":[1,2]}"#,
        );
        round_trip(
            r#"{"type":"message","id":"l","parentId":"k","timestamp":"t","message":{"role":"bashExecution","command":"ls","output":"a","exitCode":0,"cancelled":false,"truncated":false,"timestamp":5}}"#,
        );
    }

    #[test]
    fn header_keeps_legacy_keys() {
        let line = r#"{"type":"session","id":"u","timestamp":"t","cwd":"/p","provider":"anthropic","modelId":"m"}"#;
        let h = SessionHeader::from_value(&serde_json::from_str(line).unwrap()).unwrap();
        assert_eq!(h.version, 1);
        assert_eq!(h.extra.len(), 2);
        let numeric_id: Value = serde_json::from_str(r#"{"type":"session","id":5}"#).unwrap();
        assert_eq!(
            SessionHeader::from_value(&numeric_id),
            Err(EntryError::Field("id"))
        );
    }
}
