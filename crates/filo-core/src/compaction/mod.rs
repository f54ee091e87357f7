//! Context compaction and branch summarization (pi spec §5): token accounting, choosing what to
//! summarize and what to keep, and asking the model for the summary.

mod branch;
mod summary;

use std::collections::BTreeSet;

use filo_ai::{ContentBlock, Message, StopReason, Usage, UserContent};
use filo_session::{EntryKind, SessionEntry, SessionMessage};

pub use branch::{BranchPreparation, collect_entries_for_branch_summary, prepare_branch_entries};
pub use summary::{
    SUMMARIZATION_SYSTEM_PROMPT, SummaryError, SummaryRequest, generate_branch_summary,
    generate_summary, generate_summary_at, generate_summary_with_usage, serialize_conversation,
};

/// Compaction settings (`compaction.*` in settings.json).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionSettings {
    pub enabled: bool,
    pub reserve_tokens: u64,
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}

/// `totalTokens`, or the sum of the four counts when it is missing.
pub fn calculate_context_tokens(usage: &Usage) -> u64 {
    if usage.total_tokens > 0 {
        usage.total_tokens
    } else {
        usage.input + usage.output + usage.cache_read + usage.cache_write
    }
}

fn blocks_chars(blocks: &[ContentBlock]) -> usize {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.chars().count(),
            ContentBlock::Image(_) => 4800,
            ContentBlock::Thinking(t) => t.thinking.chars().count(),
            ContentBlock::ToolCall(tc) => {
                tc.name.chars().count() + tc.arguments.to_string().chars().count()
            }
        })
        .sum()
}

fn content_chars(c: &UserContent) -> usize {
    match c {
        UserContent::Text(s) => s.chars().count(),
        UserContent::Blocks(b) => blocks_chars(b),
    }
}

/// pi's `estimateTokens`: characters / 4, rounded up.
pub fn estimate_tokens(m: &SessionMessage) -> u64 {
    let chars = match m {
        SessionMessage::Llm(Message::User(u)) => content_chars(&u.content),
        SessionMessage::Llm(Message::Assistant(a)) => blocks_chars(&a.content),
        SessionMessage::Llm(Message::ToolResult(t)) => blocks_chars(&t.content),
        SessionMessage::Custom(c) => content_chars(&c.content),
        SessionMessage::BashExecution(b) => b.command.chars().count() + b.output.chars().count(),
        SessionMessage::BranchSummary { summary, .. }
        | SessionMessage::CompactionSummary { summary, .. } => summary.chars().count(),
        SessionMessage::System(s) => {
            s.content_text().chars().count()
                + s.sections
                    .iter()
                    .flatten()
                    .filter_map(|(_, v)| v.as_str())
                    .map(|t| t.chars().count())
                    .sum::<usize>()
        }
    };
    (chars as u64).div_ceil(4)
}

/// The usage of the last assistant message that was neither aborted nor an error, and its index.
pub fn last_assistant_usage(messages: &[SessionMessage]) -> Option<(usize, Usage)> {
    messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| match m {
            SessionMessage::Llm(Message::Assistant(a))
                if !matches!(a.stop_reason, StopReason::Aborted | StopReason::Error) =>
            {
                Some((i, a.usage))
            }
            _ => None,
        })
}

/// pi's `estimateContextTokens`: the last good assistant's reported context plus estimates of
/// everything after it; without one, the sum of estimates.
pub fn estimate_context_tokens(messages: &[SessionMessage]) -> u64 {
    match last_assistant_usage(messages) {
        Some((i, usage)) => {
            calculate_context_tokens(&usage)
                + messages[i + 1..].iter().map(estimate_tokens).sum::<u64>()
        }
        None => messages.iter().map(estimate_tokens).sum(),
    }
}

/// Whether a context of `tokens` should be compacted for a window of `window`.
pub fn should_compact(tokens: u64, window: u64, s: &CompactionSettings) -> bool {
    s.enabled && tokens > window.saturating_sub(s.reserve_tokens)
}

/// The message an entry stands for in compaction (pi's entry → message mapping).
pub fn entry_as_message(e: &SessionEntry) -> Option<SessionMessage> {
    match &e.kind {
        EntryKind::Message(m) => Some(m.clone()),
        EntryKind::CustomMessage {
            custom_type,
            content,
            display,
            details,
        } => Some(SessionMessage::Custom(filo_session::CustomMessage {
            custom_type: custom_type.clone(),
            content: content.clone(),
            display: *display,
            details: details.clone(),
            timestamp: 0,
        })),
        EntryKind::BranchSummary {
            summary, from_id, ..
        } => Some(SessionMessage::BranchSummary {
            summary: summary.clone(),
            from_id: from_id.clone(),
            timestamp: 0,
        }),
        EntryKind::Compaction {
            summary,
            tokens_before,
            ..
        } => Some(SessionMessage::CompactionSummary {
            summary: summary.clone(),
            tokens_before: *tokens_before,
            timestamp: 0,
        }),
        _ => None,
    }
}

fn is_valid_cut(e: &SessionEntry) -> bool {
    match &e.kind {
        EntryKind::Message(SessionMessage::Llm(Message::ToolResult(_))) => false,
        EntryKind::Message(_)
        | EntryKind::BranchSummary { .. }
        | EntryKind::CustomMessage { .. } => true,
        _ => false,
    }
}

fn is_turn_start(e: &SessionEntry) -> bool {
    matches!(
        &e.kind,
        EntryKind::Message(SessionMessage::Llm(Message::User(_)))
            | EntryKind::Message(SessionMessage::BashExecution(_))
            | EntryKind::BranchSummary { .. }
            | EntryKind::CustomMessage { .. }
    )
}

/// Where to cut: the index of the first kept entry, and the start of its turn when the cut splits
/// a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutPoint {
    pub first_kept: usize,
    pub turn_start: Option<usize>,
}

/// pi's `findCutPoint` over `entries[start..end]`.
pub fn find_cut_point(
    entries: &[&SessionEntry],
    start: usize,
    end: usize,
    keep_recent: u64,
) -> CutPoint {
    let valid: Vec<usize> = (start..end).filter(|&i| is_valid_cut(entries[i])).collect();
    let Some(&first_valid) = valid.first() else {
        return CutPoint {
            first_kept: start,
            turn_start: None,
        };
    };
    let mut sum = 0u64;
    let mut cut = first_valid;
    for i in (start..end).rev() {
        if let EntryKind::Message(m) = &entries[i].kind {
            sum += estimate_tokens(m);
        }
        if sum >= keep_recent {
            cut = valid
                .iter()
                .copied()
                .find(|&v| v >= i)
                .unwrap_or(first_valid);
            break;
        }
    }
    while cut > start {
        let prev = entries[cut - 1];
        if matches!(
            prev.kind,
            EntryKind::Compaction { .. } | EntryKind::Message(_)
        ) {
            break;
        }
        cut -= 1;
    }
    let is_user = matches!(
        entries[cut].kind,
        EntryKind::Message(SessionMessage::Llm(Message::User(_)))
    );
    let turn_start = if is_user {
        None
    } else {
        (start..=cut).rev().find(|&i| is_turn_start(entries[i]))
    };
    CutPoint {
        first_kept: cut,
        turn_start,
    }
}

/// What a compaction will summarize.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPreparation {
    pub first_kept_entry_id: String,
    pub messages_to_summarize: Vec<SessionMessage>,
    pub turn_prefix_messages: Vec<SessionMessage>,
    pub is_split_turn: bool,
    pub tokens_before: u64,
    pub previous_summary: Option<String>,
    pub read_files: BTreeSet<String>,
    pub modified_files: BTreeSet<String>,
}

pub(crate) fn collect_file_ops(
    messages: &[SessionMessage],
    read: &mut BTreeSet<String>,
    edited: &mut BTreeSet<String>,
) {
    for m in messages {
        let SessionMessage::Llm(Message::Assistant(a)) = m else {
            continue;
        };
        for tc in a.tool_calls() {
            let Some(path) = tc.arguments.get("path").and_then(|p| p.as_str()) else {
                continue;
            };
            match tc.name.as_str() {
                "read" => {
                    read.insert(path.to_string());
                }
                "write" | "edit" => {
                    edited.insert(path.to_string());
                }
                _ => {}
            }
        }
    }
}

pub(crate) fn details_files(details: &Option<serde_json::Value>, key: &str) -> Vec<String> {
    details
        .as_ref()
        .and_then(|d| d.get(key))
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// pi's `prepareCompaction` over the current branch path. `None` when the path already ends in a
/// compaction or holds nothing to keep an id for.
pub fn prepare_compaction(
    path: &[&SessionEntry],
    s: &CompactionSettings,
) -> Option<CompactionPreparation> {
    if matches!(path.last()?.kind, EntryKind::Compaction { .. }) {
        return None;
    }
    let prev = path
        .iter()
        .rposition(|e| matches!(e.kind, EntryKind::Compaction { .. }));
    let boundary_start = prev.map_or(0, |p| p + 1);
    let end = path.len();
    let from = prev.unwrap_or(0);
    let context: Vec<SessionMessage> = path[from..]
        .iter()
        .filter_map(|e| entry_as_message(e))
        .collect();
    let tokens_before = estimate_context_tokens(&context);
    let cut = find_cut_point(path, boundary_start, end, s.keep_recent_tokens);
    let first_kept_entry_id = path.get(cut.first_kept)?.id.clone();
    let summarize_end = cut.turn_start.unwrap_or(cut.first_kept);
    let to_messages = |range: &[&SessionEntry]| -> Vec<SessionMessage> {
        range.iter().filter_map(|e| entry_as_message(e)).collect()
    };
    let messages_to_summarize = to_messages(&path[boundary_start..summarize_end]);
    let turn_prefix_messages = match cut.turn_start {
        Some(ts) => to_messages(&path[ts..cut.first_kept]),
        None => Vec::new(),
    };
    let (mut read, mut edited) = (BTreeSet::new(), BTreeSet::new());
    let mut previous_summary = None;
    if let Some(p) = prev
        && let EntryKind::Compaction {
            summary,
            details,
            from_hook,
            ..
        } = &path[p].kind
    {
        previous_summary = Some(summary.clone());
        if *from_hook != Some(true) {
            read.extend(details_files(details, "readFiles"));
            edited.extend(details_files(details, "modifiedFiles"));
        }
    }
    collect_file_ops(&messages_to_summarize, &mut read, &mut edited);
    collect_file_ops(&turn_prefix_messages, &mut read, &mut edited);
    let read_files = read.difference(&edited).cloned().collect();
    Some(CompactionPreparation {
        first_kept_entry_id,
        messages_to_summarize,
        turn_prefix_messages,
        is_split_turn: cut.turn_start.is_some(),
        tokens_before,
        previous_summary,
        read_files,
        modified_files: edited,
    })
}

/// `<read-files>` / `<modified-files>` sections appended to a summary ("" when both are empty).
pub fn format_file_lists(read: &BTreeSet<String>, modified: &BTreeSet<String>) -> String {
    let mut parts = Vec::new();
    if !read.is_empty() {
        parts.push(format!(
            "<read-files>\n{}\n</read-files>",
            read.iter().cloned().collect::<Vec<_>>().join("\n")
        ));
    }
    if !modified.is_empty() {
        parts.push(format!(
            "<modified-files>\n{}\n</modified-files>",
            modified.iter().cloned().collect::<Vec<_>>().join("\n")
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", parts.join("\n\n"))
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
