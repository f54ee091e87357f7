//! Whether a JSON text deserializes into a [`UserMessage`](super::UserMessage),
//! [`AssistantMessage`](super::AssistantMessage) or
//! [`ToolResultMessage`](super::ToolResultMessage), answered without building the message (issue 16: a session's open
//! pass checks every message line but keeps none of them).
//!
//! Each check is exact: `accepts_user(s) == serde_json::from_str::<UserMessage>(s).is_ok()`, and
//! likewise for the other two. It parses with serde_json's own parser (so numbers, escapes,
//! surrogates, nesting depth and trailing characters are judged by the same code) into a mirror
//! of the types' shapes whose leaves keep nothing: a string is scanned in place, or unescaped
//! into the parser's one reused scratch buffer, and dropped.
//!
//! The mirror follows what serde does with the types' attributes, and this is where it is
//! subtle:
//! - Plain structs (the messages, [`Usage`], [`Cost`](super::Cost)) use serde's derive here too, with the same
//!   field names, order, defaults and skips, so duplicate and unknown fields, missing fields and
//!   the array form of a struct (`[a, b, …]` by position) behave the same by construction.
//! - [`ContentBlock`](super::ContentBlock) is internally tagged (`type`): serde buffers the whole block as generic
//!   content first (every number range-checked, every string unescaped, nesting counted), then
//!   reads the variant's struct from that buffer. The block may be an object (the tag anywhere
//!   in it, at most once) or an array whose first element is the tag and the rest the variant's
//!   fields by position.
//! - [`UserContent`](super::UserContent) is untagged: the whole value is buffered, then tried as a string, then as an
//!   array of blocks. Blocks read back from a buffer accept a variant index (`0`–`3`) as the tag;
//!   blocks read straight from the text (an assistant's or a tool result's content) only a name.
//! - A [`Value`](serde_json::Value) (a tool call's `arguments`, a result's `details`) accepts any
//!   JSON, except that an object whose first key is serde_json's raw-value token must hold just
//!   that key with a string that itself parses as JSON.
//!
//! [`RoleFirst`] checks a message in place inside a larger document (a session line), in the
//! same pass that reads the document.
//!
//! Changing the serde shape of a message type means changing its mirror here; the differential
//! tests in `filo-session` (`src/line_tests.rs`) compare the two on pi's files and on
//! systematic mutations of every kind of message.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{StopReason, Usage};

/// `serde_json::from_str::<UserMessage>(json).is_ok()`, without building the message.
pub fn accepts_user(json: &str) -> bool {
    serde_json::from_str::<UserShape>(json).is_ok()
}

/// `serde_json::from_str::<AssistantMessage>(json).is_ok()`, without building the message.
pub fn accepts_assistant(json: &str) -> bool {
    serde_json::from_str::<AssistantShape>(json).is_ok()
}

/// `serde_json::from_str::<ToolResultMessage>(json).is_ok()`, without building the message.
pub fn accepts_tool_result(json: &str) -> bool {
    serde_json::from_str::<ToolResultShape>(json).is_ok()
}

/// The role a message object names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    ToolResult,
}

/// A message object read in place inside a larger JSON document (a session line) and checked
/// in the same pass, for an object that names its role first, as pi writes it.
///
/// It deserializes when the object's first key is `role` with a string naming role R, no other
/// key is `role`, and R's typed message deserializes from the object (the `role` key is unknown
/// to it). That is exactly "a `{role: R}` struct and R's message both deserialize from the
/// object's text on its own", with one difference: nested one level deeper, the object meets
/// serde_json's nesting limit one level sooner. A failure therefore proves nothing; the caller
/// decides it from the object's text alone (with the `accepts_*` functions).
pub struct RoleFirst(pub Role);

impl<'de> Deserialize<'de> for RoleFirst {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RoleFirstVisitor)
    }
}

struct RoleFirstVisitor;

impl<'de> Visitor<'de> for RoleFirstVisitor {
    type Value = RoleFirst;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a message object with its role first")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RoleFirst, A::Error> {
        if map.next_key_seed(Key)? != Some(Field::Role) {
            return Err(de::Error::custom("the role is not the first key"));
        }
        let role = map.next_value_seed(RoleName)?;
        // The mirrors with a `role` field see it again first, so a second `role` is a duplicate.
        let rest = Replay {
            map,
            state: ReplayState::Key,
        };
        match role {
            Role::User => UserShapeWithRole::deserialize(rest).map(|_| RoleFirst(role)),
            Role::Assistant => AssistantShapeWithRole::deserialize(rest).map(|_| RoleFirst(role)),
            Role::ToolResult => ToolResultShapeWithRole::deserialize(rest).map(|_| RoleFirst(role)),
        }
    }
}

/// A role name, as the `{role: String}` struct reads it.
struct RoleName;

impl<'de> DeserializeSeed<'de> for RoleName {
    type Value = Role;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Role, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for RoleName {
    type Value = Role;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a message role")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Role, E> {
        match s {
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "toolResult" => Ok(Role::ToolResult),
            _ => Err(E::custom("unknown role")),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ReplayState {
    Key,
    Value,
    Rest,
}

/// The rest of a map whose first entry was read, given again as a map that starts with a
/// `role` key (whose value is nothing).
struct Replay<A> {
    map: A,
    state: ReplayState,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Replay<A> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        if self.state == ReplayState::Key {
            self.state = ReplayState::Value;
            return seed
                .deserialize(de::value::BorrowedStrDeserializer::new("role"))
                .map(Some);
        }
        self.map.next_key_seed(seed)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        if self.state == ReplayState::Value {
            self.state = ReplayState::Rest;
            return seed.deserialize(de::value::UnitDeserializer::new());
        }
        self.map.next_value_seed(seed)
    }
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for Replay<A> {
    type Error = A::Error;
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_map(self)
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

// The mirrors of the message structs: same names, order, defaults and skips as in `message.rs`
// (`AssistantMessage::error_status` is `#[serde(skip)]`, so it has no mirror field). Each comes
// twice: as is, and with a `role` field in front for [`RoleFirst`].
macro_rules! shapes {
    ($name:ident, $with_role:ident { $($body:tt)* }) => {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[allow(dead_code)]
        struct $name {
            $($body)*
        }

        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[allow(dead_code)]
        struct $with_role {
            #[serde(default)]
            role: Option<de::IgnoredAny>,
            $($body)*
        }
    };
}

shapes!(
    UserShape,
    UserShapeWithRole {
        content: UserContentShape,
        timestamp: i64,
    }
);

shapes!(AssistantShape, AssistantShapeWithRole {
    content: Blocks,
    api: Str,
    provider: Str,
    model: Str,
    #[serde(default)]
    usage: Usage,
    stop_reason: StopReason,
    timestamp: i64,
    #[serde(default)]
    response_id: Option<Str>,
    #[serde(default)]
    error_message: Option<Str>,
});

shapes!(ToolResultShape, ToolResultShapeWithRole {
    tool_call_id: Str,
    tool_name: Str,
    content: Blocks,
    #[serde(default)]
    details: Option<AnyValue>,
    is_error: bool,
    timestamp: i64,
});

/// A `String`, kept nowhere.
struct Str;

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Str;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Str, E> {
                Ok(Str)
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Str, E> {
                match std::str::from_utf8(v) {
                    Ok(_) => Ok(Str),
                    Err(_) => Err(E::invalid_value(de::Unexpected::Bytes(v), &self)),
                }
            }
        }
        // As `String` does.
        d.deserialize_string(V)
    }
}

/// A `serde_json::Value`, kept nowhere.
struct AnyValue;

impl<'de> Deserialize<'de> for AnyValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let walked = d.deserialize_any(Walk)?;
        if walked.value_ok {
            Ok(AnyValue)
        } else {
            Err(de::Error::custom("not a JSON value"))
        }
    }
}

/// A `Vec<ContentBlock>` read straight from the text.
struct Blocks;

impl<'de> Deserialize<'de> for Blocks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Blocks;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Blocks, A::Error> {
                while seq.next_element_seed(Block { buffered: false })?.is_some() {}
                Ok(Blocks)
            }
        }
        d.deserialize_seq(V)
    }
}

/// A `UserContent`: buffered whole, then a string or an array of (buffered) blocks.
struct UserContentShape;

impl<'de> Deserialize<'de> for UserContentShape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = UserContentShape;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(UserContentShape)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element_seed(Block { buffered: true })?.is_some() {}
                Ok(UserContentShape)
            }
        }
        d.deserialize_any(V)
    }
}

/// What a value was, as far as the content blocks' fields care.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Null,
    Bool,
    Number,
    Str,
    Seq,
    Map,
}

/// A value buffered the way serde buffers untagged and internally tagged content.
#[derive(Clone, Copy)]
struct Walked {
    kind: Kind,
    /// A `serde_json::Value` can be read from it (see the module's note on the raw-value token).
    value_ok: bool,
}

impl Walked {
    fn leaf(kind: Kind) -> Walked {
        Walked {
            kind,
            value_ok: true,
        }
    }
}

/// Walks any value with `deserialize_any`, as serde's content buffer does.
#[derive(Clone, Copy)]
struct Walk;

impl<'de> DeserializeSeed<'de> for Walk {
    type Value = Walked;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Walked, D::Error> {
        d.deserialize_any(self)
    }
}

macro_rules! leaf {
    ($name:ident, $t:ty, $kind:expr) => {
        fn $name<E: de::Error>(self, _: $t) -> Result<Walked, E> {
            Ok(Walked::leaf($kind))
        }
    };
}

impl<'de> Visitor<'de> for Walk {
    type Value = Walked;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    leaf!(visit_bool, bool, Kind::Bool);
    leaf!(visit_i64, i64, Kind::Number);
    leaf!(visit_u64, u64, Kind::Number);
    leaf!(visit_f64, f64, Kind::Number);
    leaf!(visit_str, &str, Kind::Str);
    fn visit_unit<E: de::Error>(self) -> Result<Walked, E> {
        Ok(Walked::leaf(Kind::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Walked, A::Error> {
        let mut value_ok = true;
        while let Some(w) = seq.next_element_seed(Walk)? {
            value_ok &= w.value_ok;
        }
        Ok(Walked {
            kind: Kind::Seq,
            value_ok,
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Walked, A::Error> {
        let Some(first) = map.next_key_seed(Key)? else {
            return Ok(Walked {
                kind: Kind::Map,
                value_ok: true,
            });
        };
        let mut value_ok = if first == Field::RawValueToken {
            // `Value` reads this key's string as JSON text and expects nothing after it.
            map.next_value_seed(RawValuePayload)?
        } else {
            map.next_value_seed(Walk)?.value_ok
        };
        let mut entries = 1usize;
        while map.next_key_seed(Key)?.is_some() {
            value_ok &= map.next_value_seed(Walk)?.value_ok;
            entries += 1;
        }
        if first == Field::RawValueToken && entries > 1 {
            value_ok = false;
        }
        Ok(Walked {
            kind: Kind::Map,
            value_ok,
        })
    }
}

/// The value under the raw-value token: whether it is a string holding valid JSON. Rare enough
/// to parse that JSON for real.
struct RawValuePayload;

impl<'de> DeserializeSeed<'de> for RawValuePayload {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = bool;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<bool, E> {
                Ok(serde_json::from_str::<serde_json::Value>(s).is_ok())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
                Walk.visit_seq(seq).map(|_| false)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
                Walk.visit_map(map).map(|_| false)
            }
        }
        d.deserialize_any(V)
    }
}

/// The keys a content block's variants know, and the tag.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Field {
    Type,
    Text,
    TextSignature,
    Thinking,
    ThinkingSignature,
    Redacted,
    Data,
    MimeType,
    Id,
    Name,
    Arguments,
    ThoughtSignature,
    /// serde_json's private key for a raw value inside a `Value`.
    RawValueToken,
    /// A message's role (only looked for by [`RoleFirst`]).
    Role,
    Other,
}

const FIELDS: usize = Field::Other as usize;
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

impl Field {
    fn of(key: &str) -> Field {
        match key {
            "type" => Field::Type,
            "text" => Field::Text,
            "textSignature" => Field::TextSignature,
            "thinking" => Field::Thinking,
            "thinkingSignature" => Field::ThinkingSignature,
            "redacted" => Field::Redacted,
            "data" => Field::Data,
            "mimeType" => Field::MimeType,
            "id" => Field::Id,
            "name" => Field::Name,
            "arguments" => Field::Arguments,
            "thoughtSignature" => Field::ThoughtSignature,
            RAW_VALUE_TOKEN => Field::RawValueToken,
            "role" => Field::Role,
            _ => Field::Other,
        }
    }
}

/// A map key (always a string in JSON), classified.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Field;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Field, D::Error> {
        d.deserialize_any(self)
    }
}

impl Visitor<'_> for Key {
    type Value = Field;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Field, E> {
        Ok(Field::of(s))
    }
}

/// A content block's variant.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    Text,
    Thinking,
    Image,
    ToolCall,
}

/// A content block's tag, as the variant identifier reads it: by name, or by index when read
/// back from a buffer (straight from JSON text an identifier is only ever a string).
struct Tag {
    buffered: bool,
}

impl<'de> DeserializeSeed<'de> for Tag {
    type Value = Variant;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Variant, D::Error> {
        if self.buffered {
            // Buffered first (any value must buffer), then read as an identifier.
            d.deserialize_any(self)
        } else {
            d.deserialize_identifier(self)
        }
    }
}

impl<'de> Visitor<'de> for Tag {
    type Value = Variant;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a content block type")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Variant, E> {
        match s {
            "text" => Ok(Variant::Text),
            "thinking" => Ok(Variant::Thinking),
            "image" => Ok(Variant::Image),
            "toolCall" => Ok(Variant::ToolCall),
            _ => Err(E::custom("unknown content block type")),
        }
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Variant, E> {
        match v {
            0 => Ok(Variant::Text),
            1 => Ok(Variant::Thinking),
            2 => Ok(Variant::Image),
            3 => Ok(Variant::ToolCall),
            _ => Err(E::custom("variant index out of range")),
        }
    }
}

/// What a variant's field must be.
#[derive(Clone, Copy)]
enum Want {
    Str,
    OptStr,
    OptBool,
    Value,
}

impl Want {
    fn accepts(self, w: Walked) -> bool {
        match self {
            Want::Str => w.kind == Kind::Str,
            Want::OptStr => matches!(w.kind, Kind::Null | Kind::Str),
            Want::OptBool => matches!(w.kind, Kind::Null | Kind::Bool),
            Want::Value => w.value_ok,
        }
    }

    /// Optional fields have `#[serde(default)]`: they may be missing, or short in the array form.
    fn optional(self) -> bool {
        matches!(self, Want::OptStr | Want::OptBool)
    }
}

impl Variant {
    /// The variant struct's fields, in declaration order.
    fn fields(self) -> &'static [(Field, Want)] {
        match self {
            Variant::Text => &[
                (Field::Text, Want::Str),
                (Field::TextSignature, Want::OptStr),
            ],
            Variant::Thinking => &[
                (Field::Thinking, Want::Str),
                (Field::ThinkingSignature, Want::OptStr),
                (Field::Redacted, Want::OptBool),
            ],
            Variant::Image => &[(Field::Data, Want::Str), (Field::MimeType, Want::Str)],
            Variant::ToolCall => &[
                (Field::Id, Want::Str),
                (Field::Name, Want::Str),
                (Field::Arguments, Want::Value),
                (Field::ThoughtSignature, Want::OptStr),
            ],
        }
    }
}

/// One `ContentBlock`; `buffered` when it is read back from an untagged enum's buffer.
#[derive(Clone, Copy)]
struct Block {
    buffered: bool,
}

impl<'de> DeserializeSeed<'de> for Block {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Block {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("internally tagged enum ContentBlock")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut tag = None;
        // Per known key: how often it came, and what its first value was.
        let mut seen: [(u8, Option<Walked>); FIELDS] = [(0, None); FIELDS];
        while let Some(key) = map.next_key_seed(Key)? {
            if key == Field::Type {
                if tag.is_some() {
                    return Err(de::Error::duplicate_field("type"));
                }
                tag = Some(map.next_value_seed(Tag {
                    buffered: self.buffered,
                })?);
                continue;
            }
            let value = map.next_value_seed(Walk)?;
            if let Some(slot) = seen.get_mut(key as usize) {
                slot.0 = slot.0.saturating_add(1);
                slot.1.get_or_insert(value);
            }
        }
        let Some(variant) = tag else {
            return Err(de::Error::missing_field("type"));
        };
        for &(field, want) in variant.fields() {
            let ok = match seen[field as usize] {
                (0, _) => want.optional(),
                (1, Some(w)) => want.accepts(w),
                _ => false,
            };
            if !ok {
                return Err(de::Error::custom("invalid content block"));
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some(variant) = seq.next_element_seed(Tag {
            buffered: self.buffered,
        })?
        else {
            return Err(de::Error::missing_field("type"));
        };
        // The rest is buffered whole, then read as the variant's fields by position.
        let fields = variant.fields();
        let mut ok = true;
        let mut n = 0;
        while let Some(w) = seq.next_element_seed(Walk)? {
            ok &= fields.get(n).is_some_and(|(_, want)| want.accepts(w));
            n += 1;
        }
        ok &= fields.iter().skip(n).all(|(_, want)| want.optional());
        if ok {
            Ok(())
        } else {
            Err(de::Error::custom("invalid content block"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AssistantMessage, ToolResultMessage, UserMessage};

    fn same(json: &str) {
        assert_eq!(
            accepts_user(json),
            serde_json::from_str::<UserMessage>(json).is_ok(),
            "user: {json}"
        );
        assert_eq!(
            accepts_assistant(json),
            serde_json::from_str::<AssistantMessage>(json).is_ok(),
            "assistant: {json}"
        );
        assert_eq!(
            accepts_tool_result(json),
            serde_json::from_str::<ToolResultMessage>(json).is_ok(),
            "toolResult: {json}"
        );
    }

    #[test]
    fn the_quirks_the_module_names_are_mirrored() {
        for json in [
            r#"{"content":"hi","timestamp":1}"#,
            r#"{"content":[{"type":0,"text":"by index"}],"timestamp":1}"#,
            r#"{"content":[["text","by position"]],"timestamp":1}"#,
            r#"{"content":[{"text":"tag last","type":"text"}],"timestamp":1}"#,
            r#"{"content":[{"type":"text","text":"x","n":1e400}],"timestamp":1}"#,
            r#"{"content":[{"type":"text","text":"x"}],"api":"a","provider":"p","model":"m","stopReason":{"stop":null},"timestamp":1}"#,
            r#"{"content":[{"type":0,"text":"x"}],"api":"a","provider":"p","model":"m","stopReason":"stop","timestamp":1}"#,
            r#"{"toolCallId":"c","toolName":"t","content":[],"details":{"$serde_json::private::RawValue":"[1]"},"isError":false,"timestamp":1}"#,
            r#"{"toolCallId":"c","toolName":"t","content":[],"details":{"$serde_json::private::RawValue":"[1"},"isError":false,"timestamp":1}"#,
            r#"{"toolCallId":"c","toolName":"t","content":[],"details":{"$serde_json::private::RawValue":"1","b":2},"isError":false,"timestamp":1}"#,
            r#"["c","t",[],null,false,1]"#,
        ] {
            same(json);
        }
    }
}
