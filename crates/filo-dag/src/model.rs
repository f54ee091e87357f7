//! Rows and write requests: blobs, nodes, refs, actions (spec §3, §4.5).

use serde::Serialize;
use serde_json::{Value, json};

use crate::canon;

/// Blob type tags (spec §3.1). Unknown tags read from other writers are kept verbatim.
pub mod blob_type {
    /// A text part: content is the string.
    pub const TEXT: &str = "text";
    /// A thinking part: content is the thinking text.
    pub const THINKING: &str = "thinking";
    /// `{id, name, arguments}`.
    pub const TOOL_CALL: &str = "tool_call";
    /// `{toolCallId, toolName, content, isError}`.
    pub const TOOL_RESULT: &str = "tool_result";
    /// Other content parts, whole non-message entries, messages with non-array content.
    pub const PI_META: &str = "pi_meta";
    /// Legacy V2: a whole Pi session entry.
    pub const PI_ENTRY: &str = "pi_entry";
    /// The full system prompt text.
    pub const SYSTEM_PROMPT: &str = "system_prompt";
    /// Terminal-side inline data (inferred).
    pub const INLINE_DATA: &str = "inline_data";
    /// playtiss dag-json; the hash column holds a CID.
    pub const PLAYTISS: &str = "playtiss";
}

/// Node roles written by Pi (spec §3.2). Other roles are stored verbatim.
pub mod role {
    /// A user message (and the tobe carryover).
    pub const USER: &str = "user";
    /// An assistant message.
    pub const ASSISTANT: &str = "assistant";
    /// A tool result (and the tobe departure node).
    pub const TOOL_RESULT: &str = "toolResult";
    /// Every non-message Pi entry.
    pub const PI_INTERNAL: &str = "pi_internal";
}

/// Action types of the action log (spec §4.5).
pub mod action_type {
    /// Resume: PI_HEAD set from a session file.
    pub const BOOT: &str = "BOOT";
    /// Session switch in the host.
    pub const SESSION_SWITCH: &str = "SESSION_SWITCH";
    /// A tobe jump.
    pub const INCARNATE: &str = "INCARNATE";
    /// A terminal commit (inferred).
    pub const COMMIT: &str = "COMMIT";
    /// A terminal rehydration (inferred).
    pub const HYDRATE_GHOST: &str = "HYDRATE_GHOST";
}

/// A row of `blobs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blob {
    /// Content address (or a CID for `playtiss`).
    pub hash: String,
    /// Type tag.
    #[serde(rename = "type")]
    pub blob_type: String,
    /// `JSON.stringify(content)` as stored (not canonical).
    pub content: String,
    /// Reserved for terminal thought signatures; round-tripped untouched.
    pub thought_signature: Option<String>,
}

impl Blob {
    /// The parsed content, or `None` when the column is not JSON.
    pub fn value(&self) -> Option<Value> {
        serde_json::from_str(&self.content).ok()
    }
}

/// A row of `nodes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Node {
    /// Node id (64 hex).
    pub id: String,
    /// Parent id, `None` for a root.
    pub parent_id: Option<String>,
    /// Role tag.
    pub role: String,
    /// Blob hashes in part order (parsed from `parts_list`; unparsable text gives an empty list).
    pub parts: Vec<String>,
    /// Commit time, ms since the epoch.
    pub timestamp: i64,
    /// Agent config snapshot, verbatim.
    pub config_json: Option<String>,
    /// Terminal thought signatures, verbatim.
    pub thought_signatures: Option<String>,
    /// Hash of the system prompt blob.
    pub system_prompt_hash: Option<String>,
    /// Pi entry id.
    pub external_id: Option<String>,
}

impl Node {
    /// First 12 hex of the id (the tools' short form).
    pub fn short(&self) -> &str {
        short_id(&self.id)
    }

    /// `pi:<external id>` when the node has one, else the first 12 hex.
    pub fn label(&self) -> String {
        match &self.external_id {
            Some(ext) => format!("pi:{ext}"),
            None => self.short().to_owned(),
        }
    }
}

/// The first 12 characters of an id (fewer if it is shorter).
pub fn short_id(id: &str) -> &str {
    id.char_indices().nth(12).map_or(id, |(i, _)| &id[..i])
}

/// A blob to store: type tag plus JSON content.
#[derive(Debug, Clone, PartialEq)]
pub struct NewBlob {
    /// Type tag (see [`blob_type`]).
    pub blob_type: String,
    /// Content value; hashed canonically, stored as plain `JSON.stringify`.
    pub content: Value,
}

impl NewBlob {
    /// A blob of any type.
    pub fn new(blob_type: impl Into<String>, content: Value) -> Self {
        Self {
            blob_type: blob_type.into(),
            content,
        }
    }

    /// A `text` blob.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(blob_type::TEXT, Value::String(text.into()))
    }

    /// A `thinking` blob.
    pub fn thinking(text: impl Into<String>) -> Self {
        Self::new(blob_type::THINKING, Value::String(text.into()))
    }

    /// A `tool_call` blob `{id, name, arguments}`; `arguments` is omitted when `None`.
    pub fn tool_call(id: &str, name: &str, arguments: Option<Value>) -> Self {
        let mut content = json!({ "id": id, "name": name });
        if let (Some(args), Value::Object(map)) = (arguments, &mut content) {
            map.insert("arguments".into(), args);
        }
        Self::new(blob_type::TOOL_CALL, content)
    }

    /// A `tool_result` blob `{toolCallId, toolName, content, isError}`.
    pub fn tool_result(
        tool_call_id: &str,
        tool_name: &str,
        content: Value,
        is_error: bool,
    ) -> Self {
        Self::new(
            blob_type::TOOL_RESULT,
            json!({ "toolCallId": tool_call_id, "toolName": tool_name, "content": content, "isError": is_error }),
        )
    }

    /// The tool result of a tobe departure node (§6.2 step 3): the jump's dead-end marker.
    pub fn departure(target_id: &str) -> Self {
        Self::tool_result(
            "tobe_departure",
            "tobe",
            json!([{ "type": "text", "text": format!("Incarnation initiated → {}", short_id(target_id)) }]),
            false,
        )
    }

    /// A `pi_meta` blob.
    pub fn pi_meta(value: Value) -> Self {
        Self::new(blob_type::PI_META, value)
    }

    /// A `system_prompt` blob.
    pub fn system_prompt(text: impl Into<String>) -> Self {
        Self::new(blob_type::SYSTEM_PROMPT, Value::String(text.into()))
    }

    /// The content address `H({type, content})`.
    pub fn hash(&self) -> String {
        canon::blob_hash(&self.blob_type, &self.content)
    }
}

/// Where a new node hangs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parent {
    /// A root node (`parent_id` NULL).
    Root,
    /// An explicit parent id.
    Node(String),
    /// Whatever the named ref points to, read inside the commit transaction (root if unset).
    Ref(String),
    /// The node committed just before this one in the same batch.
    Previous,
}

/// What a ref must hold for a compare-and-set to succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// No check: a plain upsert.
    Any,
    /// The ref must currently hold this value (`None` = no ref).
    Value(Option<String>),
    /// The ref must currently point at the new node's parent (`None` for a root).
    Parent,
}

/// A ref to move to the new node in the same transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefMove {
    /// Ref name.
    pub name: String,
    /// Compare-and-set condition.
    pub expect: Expect,
}

/// A node to commit: blobs + node row (+ ref moves), written atomically.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeCommit {
    /// Where the node hangs.
    pub parent: Parent,
    /// Role tag.
    pub role: String,
    /// Parts in order; each is stored as a blob.
    pub parts: Vec<NewBlob>,
    /// Commit time in ms; the caller owns the clock.
    pub timestamp: i64,
    /// Pi entry id; part of the hash when set.
    pub external_id: Option<String>,
    /// Full system prompt text; stored as a blob, its hash joins the node hash when non-empty.
    pub system_prompt: Option<String>,
    /// Agent config snapshot, not hashed.
    pub config_json: Option<String>,
    /// Provider signatures of the parts (`{"parts":[null | {field: value}, …]}` aligned with the
    /// parts), not hashed; the loader puts them back on the content blocks.
    pub thought_signatures: Option<String>,
    /// Refs to move to the new node.
    pub refs: Vec<RefMove>,
}

impl NodeCommit {
    /// A node with no parts, root parent, no metadata.
    pub fn new(role: impl Into<String>, timestamp: i64) -> Self {
        Self {
            parent: Parent::Root,
            role: role.into(),
            parts: Vec::new(),
            timestamp,
            external_id: None,
            system_prompt: None,
            config_json: None,
            thought_signatures: None,
            refs: Vec::new(),
        }
    }

    /// Sets the parent.
    pub fn parent(mut self, parent: Parent) -> Self {
        self.parent = parent;
        self
    }

    /// Appends a part.
    pub fn part(mut self, blob: NewBlob) -> Self {
        self.parts.push(blob);
        self
    }

    /// Sets the external (Pi entry) id.
    pub fn external_id(mut self, id: impl Into<String>) -> Self {
        self.external_id = Some(id.into());
        self
    }

    /// Sets the system prompt text.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the config snapshot.
    pub fn config_json(mut self, config: impl Into<String>) -> Self {
        self.config_json = Some(config.into());
        self
    }

    /// Sets the parts' provider signatures (see [`NodeCommit::thought_signatures`]).
    pub fn thought_signatures(mut self, signatures: impl Into<String>) -> Self {
        self.thought_signatures = Some(signatures.into());
        self
    }

    /// Moves `name` to the new node.
    pub fn move_ref(mut self, name: impl Into<String>, expect: Expect) -> Self {
        self.refs.push(RefMove {
            name: name.into(),
            expect,
        });
        self
    }
}

/// The outcome of one node commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The node id.
    pub id: String,
    /// The parent actually used.
    pub parent_id: Option<String>,
    /// False when an identical node already existed (`INSERT OR IGNORE`).
    pub inserted: bool,
}

/// A row of `action_log`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Action {
    /// Autoincrement id.
    pub id: i64,
    /// ms since the epoch.
    pub timestamp: i64,
    /// Type tag (see [`action_type`]).
    pub action_type: String,
    /// Source node.
    pub from_node: Option<String>,
    /// Destination node.
    pub to_node: Option<String>,
    /// Free text (JSON or raw string).
    pub metadata: Option<String>,
}

/// An action to log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAction {
    /// ms since the epoch; the caller owns the clock.
    pub timestamp: i64,
    /// Type tag.
    pub action_type: String,
    /// Source node.
    pub from_node: Option<String>,
    /// Destination node.
    pub to_node: Option<String>,
    /// Free text.
    pub metadata: Option<String>,
}

/// The carryover text tobe commits and sends (§6.3), byte for byte, no trailing newline.
pub fn carryover_text(message: &str) -> String {
    format!(
        "[SYSTEM / INCARNATION NOTE]: {message}\n[SYSTEM WARNING]: State transitioned. The file \
         system (World) may not match your memory. Check the environment before executing tasks."
    )
}
