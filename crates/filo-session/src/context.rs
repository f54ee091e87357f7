//! Building the model's context from a session path (pi spec §3.5) and turning coding-agent
//! messages into LLM messages (§3.2).

use std::borrow::Cow;
use std::collections::HashMap;

use filo_ai::{ContentBlock, Message, SystemState, UserContent, UserMessage};

use crate::entry::{EntryKind, SessionEntry, SessionMessage};
use crate::ids::ms_from_iso;
use crate::store::{Role, Shape};

pub const COMPACTION_SUMMARY_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// The model a session path last used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    pub provider: String,
    pub model_id: String,
}

/// What a session path gives the agent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionContext {
    pub messages: Vec<SessionMessage>,
    /// Default `"off"`.
    pub thinking_level: String,
    pub model: Option<ModelRef>,
}

impl SessionContext {
    /// The prompt and tools the context's system messages give when replayed in order (pi
    /// 1.6's `getCurrentSystemMessage`); `seen` is false when it holds none (a file written
    /// before pi 0.86, or by filo before it wrote them).
    pub fn system_state(&self) -> SystemState {
        SystemState::replay(self.messages.iter().filter_map(|m| match m {
            SessionMessage::System(s) => Some(s),
            _ => None,
        }))
    }
}

/// The root-first path to `leaf` (walking `parentId`; a missing parent ends the walk).
pub fn path_to<'a>(
    entries: &'a [SessionEntry],
    index: &HashMap<String, usize>,
    leaf: &str,
) -> Vec<&'a SessionEntry> {
    let mut path = Vec::new();
    let mut cursor = index.get(leaf).map(|&i| &entries[i]);
    while let Some(e) = cursor {
        if path.len() > entries.len() {
            break; // a cycle in a corrupt file
        }
        path.push(e);
        cursor = e
            .parent_id
            .as_ref()
            .and_then(|p| index.get(p))
            .map(|&i| &entries[i]);
    }
    path.reverse();
    path
}

/// pi's `buildSessionContext`. `leaf` = `None` means an explicitly reset leaf (empty context);
/// an unknown leaf id falls back to the last entry.
pub fn build_session_context(
    entries: &[SessionEntry],
    index: &HashMap<String, usize>,
    leaf: Option<&str>,
) -> SessionContext {
    let Some(leaf) = leaf else {
        return empty_context();
    };
    let leaf_id = if index.contains_key(leaf) {
        leaf.to_string()
    } else {
        match entries.last() {
            Some(e) => e.id.clone(),
            None => return empty_context(),
        }
    };
    context_of_path(&path_to(entries, index, &leaf_id))
}

/// The context of no path.
pub(crate) fn empty_context() -> SessionContext {
    SessionContext {
        thinking_level: "off".into(),
        ..SessionContext::default()
    }
}

/// A root-first path as the context builder reads it: ids and shapes first, whole entries only
/// for those that give the context something (so a lazily held path parses no more than that).
pub(crate) trait PathView {
    fn len(&self) -> usize;
    fn id(&self, i: usize) -> &str;
    fn shape(&self, i: usize) -> Shape;
    fn entry(&self, i: usize) -> &SessionEntry;
    /// The entry at `i` for taking its message: a view that holds entries lazily gives one it
    /// has not parsed yet as a fresh parse, not kept, so the context does not cost a second
    /// copy of every message it holds.
    fn message_entry(&self, i: usize) -> Cow<'_, SessionEntry> {
        Cow::Borrowed(self.entry(i))
    }
}

impl PathView for Vec<&SessionEntry> {
    fn len(&self) -> usize {
        <[&SessionEntry]>::len(self)
    }
    fn id(&self, i: usize) -> &str {
        &self[i].id
    }
    fn shape(&self, i: usize) -> Shape {
        Shape::of(self[i])
    }
    fn entry(&self, i: usize) -> &SessionEntry {
        self[i]
    }
}

/// The context a root-first path gives (the body of pi's `buildSessionContext`): the last
/// thinking-level change, the last model (a model change or an assistant message), and the
/// messages from the last compaction's first kept entry on (all of them without a compaction).
pub(crate) fn context_of_path(path: &impl PathView) -> SessionContext {
    let mut ctx = empty_context();
    let n = path.len();
    let last_of = |want: &dyn Fn(Shape) -> bool| (0..n).rev().find(|&i| want(path.shape(i)));
    if let Some(i) = last_of(&|s| s == Shape::ThinkingLevelChange)
        && let EntryKind::ThinkingLevelChange { thinking_level } = &path.entry(i).kind
    {
        ctx.thinking_level.clone_from(thinking_level);
    }
    let model_at = last_of(&|s| {
        matches!(
            s,
            Shape::ModelChange | Shape::Message(Some(Role::Assistant))
        )
    });
    ctx.model = model_at.and_then(|i| match &path.entry(i).kind {
        EntryKind::ModelChange { provider, model_id } => Some(ModelRef {
            provider: provider.clone(),
            model_id: model_id.clone(),
        }),
        EntryKind::Message(SessionMessage::Llm(Message::Assistant(a))) => Some(ModelRef {
            provider: a.provider.clone(),
            model_id: a.model.clone(),
        }),
        _ => None,
    });
    let entries = context_entries(path);
    let mut edits: HashMap<&str, Option<&serde_json::Value>> = HashMap::new();
    for &i in &entries {
        if path.shape(i) == Shape::Other
            && let EntryKind::ContextEdit {
                target_id,
                replacement,
            } = &path.entry(i).kind
        {
            edits.insert(target_id.as_str(), replacement.as_ref());
        }
    }
    for (pos, &i) in entries.iter().enumerate() {
        let edit = edits.get(path.id(i)).copied();
        if edit == Some(None) {
            continue; // omitted by a context edit
        }
        match path.shape(i) {
            Shape::ThinkingLevelChange | Shape::ModelChange | Shape::Label | Shape::SessionInfo => {
            }
            // Only the newest compaction (first of the context entries) gives a checkpoint and
            // a summary; an older one inside its kept range gives nothing.
            Shape::Compaction if pos > 0 => {}
            Shape::Compaction => {
                let c = path.entry(i);
                if let EntryKind::Compaction {
                    summary,
                    tokens_before,
                    system_message,
                    ..
                } = &c.kind
                {
                    if let Some(sm) = system_message {
                        ctx.messages.push(SessionMessage::System((**sm).clone()));
                    }
                    ctx.messages.push(SessionMessage::CompactionSummary {
                        summary: summary.clone(),
                        tokens_before: *tokens_before,
                        timestamp: ms_from_iso(&c.timestamp).unwrap_or(0),
                    });
                }
            }
            Shape::Message(_) | Shape::Other => {
                if let Some(m) = entry_message(path.message_entry(i)) {
                    ctx.messages.push(match edit.flatten() {
                        Some(replacement) => replace_content(m, replacement),
                        None => m,
                    });
                }
            }
        }
    }
    ctx
}

/// pi 1.6's `buildContextEntries`: the path, or with a compaction on it the newest compaction,
/// then the kept entries before it from its `firstKeptEntryId` on (system messages left out:
/// the compaction's checkpoint stands for them; none for a retain-none compaction, which names
/// itself), then every entry after it. Indices into the path.
fn context_entries(path: &impl PathView) -> Vec<usize> {
    let n = path.len();
    let Some(ci) = (0..n).rev().find(|&i| path.shape(i) == Shape::Compaction) else {
        return (0..n).collect();
    };
    let mut out = vec![ci];
    if let EntryKind::Compaction {
        first_kept_entry_id,
        ..
    } = &path.entry(ci).kind
        && let Some(start) = (0..ci).find(|&i| path.id(i) == first_kept_entry_id)
    {
        out.extend((start..ci).filter(|&i| !is_system_message(path, i)));
    }
    out.extend(ci + 1..n);
    out
}

fn is_system_message(path: &impl PathView, i: usize) -> bool {
    path.shape(i) == Shape::Message(None)
        && matches!(
            path.entry(i).kind,
            EntryKind::Message(SessionMessage::System(_))
        )
}

/// A context edit's replacement applied to a message (pi's `projectContextEntry`): user, custom,
/// assistant and tool-result messages take the replacement's `content` (a string becomes one
/// text block for the two that hold blocks); other roles, or content filo cannot read, are
/// left as they are.
fn replace_content(m: SessionMessage, replacement: &serde_json::Value) -> SessionMessage {
    let Some(content) = replacement.get("content") else {
        return m;
    };
    let user: Option<UserContent> = serde_json::from_value(content.clone()).ok();
    let Some(user) = user else {
        return m;
    };
    match m {
        SessionMessage::Llm(Message::User(mut u)) => {
            u.content = user;
            SessionMessage::Llm(Message::User(u))
        }
        SessionMessage::Llm(Message::Assistant(mut a)) => {
            a.content = user.to_blocks();
            SessionMessage::Llm(Message::Assistant(a))
        }
        SessionMessage::Llm(Message::ToolResult(mut t)) => {
            t.content = user.to_blocks();
            SessionMessage::Llm(Message::ToolResult(t))
        }
        SessionMessage::Custom(mut c) => {
            c.content = user;
            SessionMessage::Custom(c)
        }
        other => other,
    }
}

/// The message an entry contributes to the context, if any (moved out of an entry given owned).
fn entry_message(e: Cow<'_, SessionEntry>) -> Option<SessionMessage> {
    let e = match e {
        Cow::Owned(SessionEntry {
            kind: EntryKind::Message(m),
            ..
        }) => return Some(m),
        e => e,
    };
    match &e.kind {
        EntryKind::Message(m) => Some(m.clone()),
        EntryKind::CustomMessage {
            custom_type,
            content,
            display,
            details,
        } => Some(SessionMessage::Custom(crate::entry::CustomMessage {
            custom_type: custom_type.clone(),
            content: content.clone(),
            display: *display,
            details: details.clone(),
            timestamp: ms_from_iso(&e.timestamp).unwrap_or(0),
        })),
        EntryKind::BranchSummary {
            from_id, summary, ..
        } if !summary.is_empty() => Some(SessionMessage::BranchSummary {
            summary: summary.clone(),
            from_id: from_id.clone(),
            timestamp: ms_from_iso(&e.timestamp).unwrap_or(0),
        }),
        _ => None,
    }
}

/// pi's `bashExecutionToText`.
pub fn bash_execution_to_text(b: &crate::entry::BashExecution) -> String {
    let mut s = format!("Ran `{}`\n", b.command);
    if b.output.is_empty() {
        s.push_str("(no output)");
    } else {
        s.push_str(&format!("```\n{}\n```", b.output));
    }
    if b.cancelled {
        s.push_str("\n\n(command cancelled)");
    } else if let Some(code) = b.exit_code.filter(|c| *c != 0) {
        s.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if b.truncated
        && let Some(p) = &b.full_output_path
    {
        s.push_str(&format!("\n\n[Output truncated. Full output: {p}]"));
    }
    s
}

fn user_text(text: String, timestamp: i64) -> Message {
    Message::User(UserMessage {
        content: UserContent::Blocks(vec![ContentBlock::text(text)]),
        timestamp,
    })
}

/// pi's coding-agent `convertToLlm`: coding-agent roles become user messages; a bash execution
/// marked `excludeFromContext` is dropped.
pub fn convert_to_llm(messages: &[SessionMessage]) -> Vec<Message> {
    messages.iter().filter_map(message_to_llm).collect()
}

/// [`convert_to_llm`] of one message.
pub fn message_to_llm(m: &SessionMessage) -> Option<Message> {
    match m {
        SessionMessage::Llm(m) => Some(m.clone()),
        // Replayed into the prompt and tools (see [`SessionContext::system_state`]), never a turn.
        SessionMessage::System(_) => None,
        SessionMessage::BashExecution(b) if b.exclude_from_context == Some(true) => None,
        SessionMessage::BashExecution(b) => Some(user_text(bash_execution_to_text(b), b.timestamp)),
        SessionMessage::Custom(c) => Some(Message::User(UserMessage {
            content: UserContent::Blocks(c.content.to_blocks()),
            timestamp: c.timestamp,
        })),
        SessionMessage::BranchSummary {
            summary, timestamp, ..
        } => Some(user_text(
            format!("{BRANCH_SUMMARY_PREFIX}{summary}{BRANCH_SUMMARY_SUFFIX}"),
            *timestamp,
        )),
        SessionMessage::CompactionSummary {
            summary, timestamp, ..
        } => Some(user_text(
            format!("{COMPACTION_SUMMARY_PREFIX}{summary}{COMPACTION_SUMMARY_SUFFIX}"),
            *timestamp,
        )),
    }
}
