//! Session entries as Playfilo nodes, the way the canonical (Filo) shim writes them
//! (playfilo spec §4.2), so the rows are readable by the reference.
//!
//! Deliberate differences, all keeping the row shapes: a string user content is stored as a
//! `text` blob (the reference wraps the whole message in `pi_meta`, which its loader cannot read
//! back, §10.3 #13), and `config_json` names `"agent":"filo"` (not hashed; the reference only
//! checks that the key is truthy).

use filo_ai::{ContentBlock, Message, UserContent};
use filo_dag::{NewBlob, NodeCommit, Parent, role};
use filo_session::{EntryKind, SessionEntry, SessionMessage};
use serde_json::{Map, Value, json};

use crate::extension::EntryContext;

fn block_blob(b: &ContentBlock) -> NewBlob {
    match b {
        ContentBlock::Text(t) => NewBlob::text(t.text.clone()),
        ContentBlock::Thinking(t) => NewBlob::thinking(t.thinking.clone()),
        ContentBlock::ToolCall(tc) => {
            NewBlob::tool_call(&tc.id, &tc.name, Some(tc.arguments.clone()))
        }
        ContentBlock::Image(_) => NewBlob::pi_meta(serde_json::to_value(b).unwrap_or(Value::Null)),
    }
}

/// Role and parts of an entry.
pub fn entry_parts(entry: &SessionEntry) -> (String, Vec<NewBlob>) {
    match &entry.kind {
        EntryKind::Message(SessionMessage::Llm(Message::ToolResult(t))) => {
            let content = serde_json::to_value(&t.content).unwrap_or(Value::Array(vec![]));
            (
                role::TOOL_RESULT.into(),
                vec![NewBlob::tool_result(
                    &t.tool_call_id,
                    &t.tool_name,
                    content,
                    t.is_error,
                )],
            )
        }
        EntryKind::Message(SessionMessage::Llm(Message::User(u))) => {
            let parts = match &u.content {
                UserContent::Text(s) => vec![NewBlob::text(s.clone())],
                UserContent::Blocks(b) => b.iter().map(block_blob).collect(),
            };
            (role::USER.into(), parts)
        }
        EntryKind::Message(SessionMessage::Llm(Message::Assistant(a))) => (
            role::ASSISTANT.into(),
            a.content.iter().map(block_blob).collect(),
        ),
        EntryKind::Message(other) => (
            other.role().to_string(),
            vec![NewBlob::pi_meta(other.to_value())],
        ),
        _ => (
            role::PI_INTERNAL.into(),
            vec![NewBlob::pi_meta(entry.to_value())],
        ),
    }
}

/// The provider signatures of an assistant's blocks, aligned with its parts (one part per block):
/// `{"parts":[null | {"thinkingSignature"|"textSignature"|"thoughtSignature"|"redacted": …}]}`,
/// or `None` when there is none. Kept outside the hash, in `nodes.thought_signatures`, so a
/// conversation resumed from the DAG alone can still be replayed to Anthropic or Gemini.
pub fn signatures(entry: &SessionEntry) -> Option<String> {
    let EntryKind::Message(SessionMessage::Llm(Message::Assistant(a))) = &entry.kind else {
        return None;
    };
    let parts: Vec<Value> = a
        .content
        .iter()
        .map(|b| {
            let mut m = Map::new();
            match b {
                ContentBlock::Text(t) => {
                    if let Some(s) = &t.text_signature {
                        m.insert("textSignature".into(), s.clone().into());
                    }
                }
                ContentBlock::Thinking(t) => {
                    if let Some(s) = &t.thinking_signature {
                        m.insert("thinkingSignature".into(), s.clone().into());
                    }
                    if let Some(r) = t.redacted {
                        m.insert("redacted".into(), r.into());
                    }
                }
                ContentBlock::ToolCall(tc) => {
                    if let Some(s) = &tc.thought_signature {
                        m.insert("thoughtSignature".into(), s.clone().into());
                    }
                }
                ContentBlock::Image(_) => {}
            }
            if m.is_empty() {
                Value::Null
            } else {
                Value::Object(m)
            }
        })
        .collect();
    parts
        .iter()
        .any(|p| !p.is_null())
        .then(|| json!({ "parts": parts }).to_string())
}

/// The unified `config_json` (§3.3), keys in the reference's order.
pub fn config_json(ctx: &EntryContext) -> String {
    let mut m = Map::new();
    m.insert("agent".into(), "filo".into());
    m.insert(
        "model".into(),
        ctx.model
            .as_ref()
            .map_or(Value::Null, |m| json!({"provider": m.provider, "id": m.id})),
    );
    m.insert("thinkingLevel".into(), ctx.thinking_level.as_str().into());
    let tools: Vec<Value> = ctx
        .tools
        .iter()
        .map(|(n, d)| json!({"name": n, "description": d}))
        .collect();
    m.insert("tools".into(), Value::Array(tools));
    Value::Object(m).to_string()
}

/// The commit for one appended entry.
pub fn entry_commit(
    entry: &SessionEntry,
    ctx: &EntryContext,
    parent: Option<&str>,
    now_ms: i64,
) -> NodeCommit {
    let (role, parts) = entry_parts(entry);
    let mut c = NodeCommit::new(role, now_ms)
        .parent(parent.map_or(Parent::Root, |p| Parent::Node(p.to_string())))
        .external_id(entry.id.clone())
        .config_json(config_json(ctx));
    c.parts = parts;
    c.thought_signatures = signatures(entry);
    if !ctx.system_prompt.is_empty() {
        c = c.system_prompt(ctx.system_prompt.clone());
    }
    c
}

/// The tool-call ids of an assistant entry.
pub fn tool_call_ids(entry: &SessionEntry) -> Vec<String> {
    match entry.message() {
        Some(SessionMessage::Llm(Message::Assistant(a))) => {
            a.tool_calls().map(|t| t.id.clone()).collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An assistant entry as pi 0.73 writes it, with or without its `responseId`.
    fn assistant_entry(response_id: Option<&str>) -> SessionEntry {
        let mut message = json!({
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm", "thinkingSignature": "c2ln"},
                {"type": "text", "text": "Running it."},
                {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls"}}
            ],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
            "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "toolUse", "timestamp": 1_700_000_000_001_i64
        });
        if let Some(id) = response_id {
            message["responseId"] = id.into();
        }
        SessionEntry::from_value(&json!({
            "type": "message", "id": "e5f6a7b8", "parentId": null,
            "timestamp": "2026-01-01T00:00:00.000Z", "message": message
        }))
        .unwrap()
    }

    #[test]
    fn the_response_id_is_not_part_of_what_is_hashed() {
        let with = assistant_entry(Some("msg_01XFDUDYJgAACzvnptvVoYEL"));
        let without = assistant_entry(None);
        assert!(
            with.to_line()
                .contains(r#""responseId":"msg_01XFDUDYJgAACzvnptvVoYEL""#)
        );
        let hashes = |e: &SessionEntry| {
            let (role, parts) = entry_parts(e);
            let hashes: Vec<String> = parts.iter().map(NewBlob::hash).collect();
            (role, hashes, signatures(e))
        };
        let (role, parts, sigs) = hashes(&with);
        assert_eq!((role.as_str(), parts.len()), ("assistant", 3));
        assert_eq!(
            (role, parts, sigs),
            hashes(&without),
            "parts, their hashes and the signatures are the same with and without the id"
        );
    }
}
