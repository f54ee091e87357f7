//! The fast path for a session file's commonest line, a `message` entry holding a user,
//! assistant or tool-result message: read straight into the typed message without a JSON tree.

use std::borrow::Cow;

use filo_ai::Message;
use serde::Deserialize;

use crate::entry::{EntryKind, SessionEntry, SessionMessage};
use crate::store::Role;

/// The fields of a session line that every message-line read takes, its `message` as `M`
/// (kept raw, checked in place, or read typed): one struct, so every read accepts the same lines.
#[derive(Deserialize)]
struct LineFields<'a, M> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(rename = "parentId", default, borrow)]
    parent_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    timestamp: Option<Cow<'a, str>>,
    message: Option<M>,
}

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
        verbatim: None,
    })
}

/// [`parse_message_line`] without making the entry: `Some` exactly when it gives one.
pub(crate) fn parse_message_parts(text: &str) -> Option<MessageLine<'_>> {
    let head = parse_head(text)?;
    let message = match head.role {
        Role::User => Message::User(serde_json::from_str(head.raw).ok()?),
        Role::Assistant => Message::Assistant(serde_json::from_str(head.raw).ok()?),
        Role::ToolResult => Message::ToolResult(serde_json::from_str(head.raw).ok()?),
    };
    Some(MessageLine {
        id: head.id,
        parent_id: head.parent_id,
        timestamp: head.timestamp,
        message,
    })
}

/// [`parse_message_line`] for a line the open pass kept (a lazy line read back), in one pass
/// over the line when the message names its role first, as pi writes it: the same entry as
/// [`parse_message_line`], which decides every line this pass does not.
pub(crate) fn read_message_line(text: &str) -> Option<SessionEntry> {
    read_in_one_pass(text).or_else(|| parse_message_line(text))
}

/// The typed message read in place; `Some` only when [`parse_message_line`] gives the same
/// entry: the line has the fields `parse_head` reads (the same struct but for the message), the
/// message's first key is `role` and no other key is (so `parse_head` finds the same role), and
/// that role's typed message deserializes from the other keys (it ignores `role` as an unknown
/// key, so it reads the same from the message's text). Nested one level deeper, the message
/// meets serde_json's nesting limit one level sooner: a failure here decides nothing.
fn read_in_one_pass(text: &str) -> Option<SessionEntry> {
    let line: LineFields<'_, role_first::TypedRoleFirst> = serde_json::from_str(text).ok()?;
    if line.kind != "message" {
        return None;
    }
    let message = line.message?.0;
    Some(SessionEntry {
        id: line.id?.into_owned(),
        parent_id: line.parent_id.map(Cow::into_owned),
        timestamp: line.timestamp.map(Cow::into_owned).unwrap_or_default(),
        kind: EntryKind::Message(SessionMessage::Llm(message)),
        verbatim: None,
    })
}

/// A typed message read in place, its `role` first (see [`read_in_one_pass`]).
mod role_first {
    use std::borrow::Cow;
    use std::fmt;

    use filo_ai::Message;
    use serde::Deserialize;
    use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};

    pub(super) struct TypedRoleFirst(pub Message);

    impl<'de> Deserialize<'de> for TypedRoleFirst {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_map(TypedRoleFirstVisitor)
        }
    }

    struct TypedRoleFirstVisitor;

    impl<'de> Visitor<'de> for TypedRoleFirstVisitor {
        type Value = TypedRoleFirst;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a message object with its role first")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TypedRoleFirst, A::Error> {
            let first = map.next_key_seed(Text)?;
            if first.as_deref() != Some("role") {
                return Err(de::Error::custom("the role is not the first key"));
            }
            let role = map.next_value_seed(Text)?;
            let rest = WithoutRole { map };
            let d = de::value::MapAccessDeserializer::new(rest);
            let message = match role.as_ref() {
                "user" => Message::User(Deserialize::deserialize(d)?),
                "assistant" => Message::Assistant(Deserialize::deserialize(d)?),
                "toolResult" => Message::ToolResult(Deserialize::deserialize(d)?),
                _ => return Err(de::Error::custom("unknown role")),
            };
            Ok(TypedRoleFirst(message))
        }
    }

    /// A string, borrowed from the input when it has no escapes (a key or the role's value).
    struct Text;

    impl<'de> DeserializeSeed<'de> for Text {
        type Value = Cow<'de, str>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
            d.deserialize_str(self)
        }
    }

    impl<'de> Visitor<'de> for Text {
        type Value = Cow<'de, str>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Cow<'de, str>, E> {
            Ok(Cow::Borrowed(s))
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Cow<'de, str>, E> {
            Ok(Cow::Owned(s.to_owned()))
        }
    }

    /// The rest of the message's keys; a second `role` (however spelled) is refused, as the
    /// `{role}` struct `parse_head` reads would refuse the duplicate.
    struct WithoutRole<A> {
        map: A,
    }

    impl<'de, A: MapAccess<'de>> MapAccess<'de> for WithoutRole<A> {
        type Error = A::Error;
        fn next_key_seed<K: DeserializeSeed<'de>>(
            &mut self,
            seed: K,
        ) -> Result<Option<K::Value>, A::Error> {
            let Some(key) = self.map.next_key_seed(Text)? else {
                return Ok(None);
            };
            if key == "role" {
                return Err(de::Error::custom("a second role"));
            }
            match key {
                Cow::Borrowed(k) => seed
                    .deserialize(de::value::BorrowedStrDeserializer::new(k))
                    .map(Some),
                Cow::Owned(k) => seed.deserialize(k.into_deserializer()).map(Some),
            }
        }
        fn next_value_seed<V: DeserializeSeed<'de>>(
            &mut self,
            seed: V,
        ) -> Result<V::Value, A::Error> {
            self.map.next_value_seed(seed)
        }
        fn size_hint(&self) -> Option<usize> {
            self.map.size_hint()
        }
    }
}

/// What the open pass keeps of a plain message line: `Some` exactly when
/// [`parse_message_parts`] gives one (the message is checked, not built: see
/// `filo_ai::message::check`).
pub(crate) struct IndexedLine<'a> {
    pub id: Cow<'a, str>,
    pub parent_id: Option<Cow<'a, str>>,
    pub role: Role,
}

pub(crate) fn index_message_line(text: &str) -> Option<IndexedLine<'_>> {
    match index_in_one_pass(text) {
        Ok(indexed) => indexed,
        Err(NotDecided) => index_in_two_passes(text),
    }
}

/// The one-pass check found nothing that settles the line.
struct NotDecided;

/// [`index_message_line`] in one pass over the line, for the line as pi writes it (the message's
/// role first); `Err` when that pass cannot decide (it then leaves nothing settled).
fn index_in_one_pass(text: &str) -> Result<Option<IndexedLine<'_>>, NotDecided> {
    use filo_ai::message::check::{self, RoleFirst};

    // A line this reads is read the same by `parse_head` but for its message, which `RoleFirst`
    // accepts only where the two-pass check does too; so an accepted line is decided, and so is a
    // line that reads but is not a message entry. Anything else is left to the two passes.
    let line: LineFields<'_, RoleFirst> = serde_json::from_str(text).map_err(|_| NotDecided)?;
    if line.kind != "message" {
        return Ok(None);
    }
    let (Some(id), Some(RoleFirst(role))) = (line.id, line.message) else {
        return Ok(None);
    };
    let role = match role {
        check::Role::User => Role::User,
        check::Role::Assistant => Role::Assistant,
        check::Role::ToolResult => Role::ToolResult,
    };
    Ok(Some(IndexedLine {
        id,
        parent_id: line.parent_id,
        role,
    }))
}

fn index_in_two_passes(text: &str) -> Option<IndexedLine<'_>> {
    use filo_ai::message::check;
    let head = parse_head(text)?;
    let ok = match head.role {
        Role::User => check::accepts_user(head.raw),
        Role::Assistant => check::accepts_assistant(head.raw),
        Role::ToolResult => check::accepts_tool_result(head.raw),
    };
    ok.then_some(IndexedLine {
        id: head.id,
        parent_id: head.parent_id,
        role: head.role,
    })
}

/// A `message` line's fields and its message's role and text, before the message is read.
struct Head<'a> {
    id: Cow<'a, str>,
    parent_id: Option<Cow<'a, str>>,
    timestamp: Option<Cow<'a, str>>,
    role: Role,
    raw: &'a str,
}

fn parse_head(text: &str) -> Option<Head<'_>> {
    use serde_json::value::RawValue;

    #[derive(Deserialize)]
    struct RoleField<'a> {
        #[serde(borrow)]
        role: Cow<'a, str>,
    }
    let line: LineFields<'_, &RawValue> = serde_json::from_str(text).ok()?;
    if line.kind != "message" {
        return None;
    }
    let raw = line.message?.get();
    let role = match leading_role(raw) {
        Some(r) => Cow::Borrowed(r),
        None => serde_json::from_str::<RoleField<'_>>(raw).ok()?.role,
    };
    let role = match role.as_ref() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "toolResult" => Role::ToolResult,
        _ => return None,
    };
    Some(Head {
        id: line.id?,
        parent_id: line.parent_id,
        timestamp: line.timestamp,
        role,
        raw,
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

    #[test]
    fn the_index_keeps_exactly_the_lines_the_typed_path_keeps() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../filo-cli/tests/fixtures/pi073");
        let mut lines = Vec::new();
        for name in ["edit", "branch", "filo"] {
            let text = std::fs::read_to_string(dir.join(format!("{name}.session.jsonl"))).unwrap();
            lines.extend(text.lines().map(String::from));
        }
        let user = r#"{"role":"user","content":"x","timestamp":1}"#;
        let base = format!(
            r#"{{"type":"message","id":"a","parentId":"p","timestamp":"t","message":{user}}}"#
        );
        lines.push(base.clone());
        // The line's own fields: wrong types, missing, null, escaped, duplicated, the array form.
        for (from, to) in [
            (r#""id":"a""#, r#""id":null"#),
            (r#""id":"a""#, r#""id":1"#),
            (r#""id":"a","#, ""),
            (r#""id":"a""#, r#""id":"a""#),
            (r#""id":"a""#, r#""id":"a","id":"b""#),
            (r#""parentId":"p""#, r#""parentId":null"#),
            (r#""parentId":"p""#, r#""parentId":false"#),
            (r#""parentId":"p","#, ""),
            (r#""timestamp":"t""#, r#""timestamp":5"#),
            (r#""timestamp":"t","#, ""),
            (r#""timestamp":"t","#, r#""timestamp":"t","message":null,"#),
            (
                r#""timestamp":"t","#,
                r#""timestamp":"t","zz":[1e400,"\ud800"],"#,
            ),
            (r#""type":"message""#, r#""type":"messages""#),
            (r#""type":"message""#, r#""type":"message""#),
            (
                r#""type":"message""#,
                r#""type":"message","type":"message""#,
            ),
            (r#""role":"user""#, r#""role":"users""#),
            (r#""role":"user""#, r#""role":"assistant""#),
            (r#""role":"user""#, r#""role":"toolResult""#),
            (r#""role":"user""#, r#""role":"user""#),
            (r#""role":"user","#, ""),
            (r#""role":"user""#, r#""role":"user","role":"user""#),
            (r#""timestamp":1"#, r#""timestamp":1,"role":"assistant""#),
            (r#""timestamp":1"#, r#""timestamp":1.0"#),
            (r#""content":"x""#, r#""content":7"#),
        ] {
            assert!(base.contains(from), "{from}");
            lines.push(base.replacen(from, to, 1));
        }
        lines.push(format!(r#"["message","a","p","t",{user}]"#));
        lines.push(format!(r#"["message","a","p",{user}]"#));
        lines.push(format!(r#"{{"type":"message","id":"a","message":{user}}}"#));
        lines.push(r#"{"type":"message","id":"a","message":["user"]}"#.to_string());
        lines.push(r#"{"type":"message","id":"a","message":null}"#.to_string());
        lines.push(format!(r#" {base} "#));
        lines.push(format!(r#"{base}x"#));
        let mut kept = 0;
        for line in &lines {
            let (typed, checked) = super::tests_diff::both(line);
            assert_eq!(checked, typed, "{line}");
            super::tests_diff::assert_read_agrees(line);
            kept += usize::from(typed.is_some());
        }
        assert!(kept > 20 && kept < lines.len(), "{kept} of {}", lines.len());
    }
}

#[cfg(test)]
#[path = "line_tests.rs"]
mod tests_diff;
