//! Building the model's context from a session path (pi spec §3.5) and turning coding-agent
//! messages into LLM messages (§3.2).

use std::collections::HashMap;

use filo_ai::{ContentBlock, Message, UserContent, UserMessage};

use crate::entry::{EntryKind, SessionEntry, SessionMessage};
use crate::ids::ms_from_iso;

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
    let mut ctx = SessionContext {
        thinking_level: "off".into(),
        ..SessionContext::default()
    };
    let Some(leaf) = leaf else { return ctx };
    let leaf_id = if index.contains_key(leaf) {
        leaf.to_string()
    } else {
        match entries.last() {
            Some(e) => e.id.clone(),
            None => return ctx,
        }
    };
    let path = path_to(entries, index, &leaf_id);
    let mut compaction_at = None;
    for (i, e) in path.iter().enumerate() {
        match &e.kind {
            EntryKind::ThinkingLevelChange { thinking_level } => {
                ctx.thinking_level.clone_from(thinking_level);
            }
            EntryKind::ModelChange { provider, model_id } => {
                ctx.model = Some(ModelRef {
                    provider: provider.clone(),
                    model_id: model_id.clone(),
                });
            }
            EntryKind::Message(SessionMessage::Llm(Message::Assistant(a))) => {
                ctx.model = Some(ModelRef {
                    provider: a.provider.clone(),
                    model_id: a.model.clone(),
                });
            }
            EntryKind::Compaction { .. } => compaction_at = Some(i),
            _ => {}
        }
    }
    match compaction_at {
        None => ctx.messages = path.iter().filter_map(|e| entry_message(e)).collect(),
        Some(ci) => {
            let c = path[ci];
            if let EntryKind::Compaction {
                summary,
                first_kept_entry_id,
                tokens_before,
                ..
            } = &c.kind
            {
                ctx.messages.push(SessionMessage::CompactionSummary {
                    summary: summary.clone(),
                    tokens_before: *tokens_before,
                    timestamp: ms_from_iso(&c.timestamp).unwrap_or(0),
                });
                if let Some(start) = path[..ci].iter().position(|e| &e.id == first_kept_entry_id) {
                    ctx.messages
                        .extend(path[start..ci].iter().filter_map(|e| entry_message(e)));
                }
            }
            ctx.messages
                .extend(path[ci + 1..].iter().filter_map(|e| entry_message(e)));
        }
    }
    ctx
}

/// The message an entry contributes to the context, if any.
fn entry_message(e: &SessionEntry) -> Option<SessionMessage> {
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
    messages
        .iter()
        .filter_map(|m| match m {
            SessionMessage::Llm(m) => Some(m.clone()),
            SessionMessage::BashExecution(b) if b.exclude_from_context == Some(true) => None,
            SessionMessage::BashExecution(b) => {
                Some(user_text(bash_execution_to_text(b), b.timestamp))
            }
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
        })
        .collect()
}
