//! The fast path for a session file's commonest line, a `message` entry holding a user,
//! assistant or tool-result message: read straight into the typed message without a JSON tree.

use std::borrow::Cow;

use filo_ai::Message;
use serde::Deserialize;

use crate::entry::{EntryKind, SessionEntry, SessionMessage};

/// A plain message line, its fields borrowed from the line where they need no unescaping.
pub(crate) struct MessageLine<'a> {
    pub id: Cow<'a, str>,
    pub parent_id: Option<Cow<'a, str>>,
    pub timestamp: Option<Cow<'a, str>>,
    pub message: Message,
}

/// The fast path for the commonest line, a `message` entry holding a user, assistant or tool-result
/// message: deserialized straight into the typed message, without building a JSON tree for the
/// line. `None` sends the line down the general path (which also reports what is wrong).
pub(crate) fn parse_message_line(text: &str) -> Option<SessionEntry> {
    let line = parse_message_parts(text)?;
    Some(SessionEntry {
        id: line.id.into_owned(),
        parent_id: line.parent_id.map(Cow::into_owned),
        timestamp: line.timestamp.map(Cow::into_owned).unwrap_or_default(),
        kind: EntryKind::Message(SessionMessage::Llm(line.message)),
    })
}

/// [`parse_message_line`] without making the entry: `Some` exactly when it gives one.
pub(crate) fn parse_message_parts(text: &str) -> Option<MessageLine<'_>> {
    use serde_json::value::RawValue;

    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
        #[serde(borrow)]
        id: Option<Cow<'a, str>>,
        #[serde(rename = "parentId", default, borrow)]
        parent_id: Option<Cow<'a, str>>,
        #[serde(default, borrow)]
        timestamp: Option<Cow<'a, str>>,
        #[serde(borrow)]
        message: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Role<'a> {
        #[serde(borrow)]
        role: Cow<'a, str>,
    }
    let line: Line<'_> = serde_json::from_str(text).ok()?;
    if line.kind != "message" {
        return None;
    }
    let raw = line.message?.get();
    let role = match leading_role(raw) {
        Some(r) => Cow::Borrowed(r),
        None => serde_json::from_str::<Role<'_>>(raw).ok()?.role,
    };
    let message = match role.as_ref() {
        "user" => Message::User(serde_json::from_str(raw).ok()?),
        "assistant" => Message::Assistant(serde_json::from_str(raw).ok()?),
        "toolResult" => Message::ToolResult(serde_json::from_str(raw).ok()?),
        _ => return None,
    };
    Some(MessageLine {
        id: line.id?,
        parent_id: line.parent_id,
        timestamp: line.timestamp,
        message,
    })
}

/// The role of a message object that starts with it as pi writes it (`{"role":"user",…`) and has
/// no other `"role"` (nor any `\u` escape that could spell one): what deserializing its `role`
/// field would give, without a pass over the whole object. `None` leaves it to that pass.
fn leading_role(raw: &str) -> Option<&'static str> {
    const ROLES: [(&str, &str); 3] = [
        (r#"{"role":"user""#, "user"),
        (r#"{"role":"assistant""#, "assistant"),
        (r#"{"role":"toolResult""#, "toolResult"),
    ];
    let (prefix, role) = ROLES.into_iter().find(|(p, _)| raw.starts_with(p))?;
    let rest = raw.as_bytes().get(prefix.len()..)?;
    let another = memchr::memmem::find(rest, br#""role""#).is_some()
        || memchr::memmem::find(rest, br"\u").is_some();
    (!another).then_some(role)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_role_is_taken_only_when_nothing_else_could_name_one() {
        assert_eq!(
            leading_role(r#"{"role":"user","content":"x"}"#),
            Some("user")
        );
        assert_eq!(leading_role(r#"{"role":"toolResult"}"#), Some("toolResult"));
        assert_eq!(leading_role(r#"{"role":"users","content":"x"}"#), None);
        assert_eq!(leading_role(r#"{"content":"x","role":"user"}"#), None);
        assert_eq!(leading_role(r#"{"role":"user","role":"assistant"}"#), None);
        assert_eq!(
            leading_role(r#"{"role":"user","\u0072ole":"assistant"}"#),
            None
        );
        // The same line through the full path: a duplicate `role` is not a message line.
        let dup = r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","role":"user","content":"x","timestamp":1}}"#;
        assert_eq!(parse_message_line(dup), None);
    }
}
