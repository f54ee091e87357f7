//! Load-time transcript repair (C18): drop tool calls a provider would reject, strip tool-result
//! details, and pair every tool call with exactly one result right after its assistant turn.
//!
//! filo messages have a single tool-call block type (`toolCall`), so the foreign block types
//! OpenClaw lists (`toolUse`, `functionCall`, `tool_use`, …) are already mapped to it when a pi or
//! foreign JSONL is imported; here a call is invalid when its arguments are `null`, its id is blank
//! or its name is not an acceptable tool name.
//!
//! Source note: OpenClaw's current `session-transcript-repair.ts` also renames results moved by the
//! pairing repair (trimmed name; a blank name takes the call's name, else `unknown`), which the
//! design brief does not list; filo follows the source. Its `sessions_spawn` attachment redaction
//! is not carried over (subagent tools are out of scope).

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use filo_agent::AgentMessage;
use filo_ai::{AssistantMessage, ContentBlock, Message, StopReason, ToolResultMessage};
use regex::Regex;

/// Longest acceptable tool name.
pub const TOOL_CALL_NAME_MAX_CHARS: usize = 64;
/// Text of a synthetic tool result.
pub const MISSING_TOOL_RESULT_TEXT: &str = "[filo] missing tool result in session history; inserted synthetic error result for transcript repair.";

static TOOL_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[A-Za-z0-9_-]+$")
        .unwrap_or_else(|e| unreachable!("invalid built-in tool name pattern: {e}"))
});

/// An error result for a tool call whose result is missing from the transcript.
pub fn synthetic_tool_result(
    tool_call_id: &str,
    tool_name: Option<&str>,
    now_ms: i64,
) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: tool_call_id.to_owned(),
        tool_name: tool_name
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or("unknown")
            .to_owned(),
        content: vec![ContentBlock::text(MISSING_TOOL_RESULT_TEXT)],
        details: None,
        is_error: true,
        timestamp: now_ms,
    }
}

/// The lower-cased allow set, or None when `allowed` is absent or names nothing.
pub fn normalize_allowed_tool_names(allowed: Option<&[String]>) -> Option<HashSet<String>> {
    let set: HashSet<String> = allowed?
        .iter()
        .map(|n| n.trim().to_lowercase())
        .filter(|n| !n.is_empty())
        .collect();
    (!set.is_empty()).then_some(set)
}

fn acceptable_name(name: &str, allowed: Option<&HashSet<String>>) -> bool {
    let trimmed = name.trim();
    !trimmed.is_empty()
        && trimmed.chars().count() <= TOOL_CALL_NAME_MAX_CHARS
        && TOOL_NAME.is_match(trimmed)
        && allowed.is_none_or(|set| set.contains(&trimmed.to_lowercase()))
}

/// What [`sanitize_assistant`] did to one message.
#[derive(Debug, Clone, PartialEq)]
pub enum SanitizedAssistant {
    /// Nothing to change.
    Unchanged(AssistantMessage),
    /// Names trimmed and/or calls dropped; `dropped` calls removed.
    Changed {
        message: AssistantMessage,
        dropped: usize,
    },
    /// Every block was an invalid call: the message goes.
    Dropped { dropped: usize },
}

/// Drops the invalid tool calls of one assistant message and trims the names of the others.
pub fn sanitize_assistant(
    mut message: AssistantMessage,
    allowed: Option<&HashSet<String>>,
) -> SanitizedAssistant {
    let before = message.content.len();
    let mut renamed = false;
    message.content.retain_mut(|block| match block {
        ContentBlock::ToolCall(call) => {
            let valid = !call.arguments.is_null()
                && !call.id.trim().is_empty()
                && acceptable_name(&call.name, allowed);
            if valid && call.name.trim().len() != call.name.len() {
                call.name = call.name.trim().to_owned();
                renamed = true;
            }
            valid
        }
        _ => true,
    });
    let dropped = before - message.content.len();
    if dropped > 0 && message.content.is_empty() {
        SanitizedAssistant::Dropped { dropped }
    } else if dropped > 0 || renamed {
        SanitizedAssistant::Changed { message, dropped }
    } else {
        SanitizedAssistant::Unchanged(message)
    }
}

/// Result of [`sanitize_tool_call_inputs`].
#[derive(Debug, Clone, PartialEq)]
pub struct InputRepair {
    pub messages: Vec<AgentMessage>,
    pub dropped_tool_calls: usize,
    pub dropped_assistant_messages: usize,
}

/// Drops tool calls without arguments, without an id or with an invalid or unlisted name;
/// trims names; drops assistants left empty.
pub fn sanitize_tool_call_inputs(
    messages: Vec<AgentMessage>,
    allowed: Option<&[String]>,
) -> InputRepair {
    let allowed = normalize_allowed_tool_names(allowed);
    let mut report = InputRepair {
        messages: Vec::with_capacity(messages.len()),
        dropped_tool_calls: 0,
        dropped_assistant_messages: 0,
    };
    for msg in messages {
        let AgentMessage::Llm(Message::Assistant(a)) = msg else {
            report.messages.push(msg);
            continue;
        };
        match sanitize_assistant(a, allowed.as_ref()) {
            SanitizedAssistant::Unchanged(m) => report.messages.push(assistant(m)),
            SanitizedAssistant::Changed { message, dropped } => {
                report.dropped_tool_calls += dropped;
                report.messages.push(assistant(message));
            }
            SanitizedAssistant::Dropped { dropped } => {
                report.dropped_tool_calls += dropped;
                report.dropped_assistant_messages += 1;
            }
        }
    }
    report
}

fn assistant(m: AssistantMessage) -> AgentMessage {
    AgentMessage::Llm(Message::Assistant(m))
}

fn tool_result(m: ToolResultMessage) -> AgentMessage {
    AgentMessage::Llm(Message::ToolResult(m))
}

/// Removes `details` from every tool result (they are for the UI, never for the model).
pub fn strip_tool_result_details(mut messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
    for m in &mut messages {
        if let AgentMessage::Llm(Message::ToolResult(r)) = m {
            r.details = None;
        }
    }
    messages
}

/// Result of [`repair_tool_use_result_pairing`].
#[derive(Debug, Clone, PartialEq)]
pub struct PairingRepair {
    pub messages: Vec<AgentMessage>,
    /// Synthetic results inserted for calls without one.
    pub added: Vec<ToolResultMessage>,
    pub dropped_duplicate_count: usize,
    pub dropped_orphan_count: usize,
    /// Whether anything changed (moved, added, dropped or renamed).
    pub moved: bool,
}

/// Pairs tool calls and results: after each assistant with tool calls (not errored or aborted),
/// its results follow in call order (first one wins, later duplicates are dropped), missing
/// ones are synthesised, results of other calls are dropped as orphans, and the other messages
/// of the span come after the results. Results that follow no such assistant are dropped.
pub fn repair_tool_use_result_pairing(messages: Vec<AgentMessage>, now_ms: i64) -> PairingRepair {
    let mut out = PairingRepair {
        messages: Vec::with_capacity(messages.len()),
        added: Vec::new(),
        dropped_duplicate_count: 0,
        dropped_orphan_count: 0,
        moved: false,
    };
    let mut seen: HashSet<String> = HashSet::new();
    let mut iter = messages.into_iter().peekable();
    while let Some(msg) = iter.next() {
        let AgentMessage::Llm(Message::Assistant(a)) = msg else {
            if matches!(msg, AgentMessage::Llm(Message::ToolResult(_))) {
                out.dropped_orphan_count += 1;
                out.moved = true;
            } else {
                out.messages.push(msg);
            }
            continue;
        };
        let skip = matches!(a.stop_reason, StopReason::Error | StopReason::Aborted);
        let calls: Vec<(String, String)> = a
            .tool_calls()
            .map(|c| (c.id.clone(), c.name.clone()))
            .collect();
        out.messages.push(assistant(a));
        if skip || calls.is_empty() {
            continue;
        }
        let names: HashMap<&str, &str> = calls
            .iter()
            .map(|(id, name)| (id.as_str(), name.as_str()))
            .collect();
        let mut found: HashMap<String, ToolResultMessage> = HashMap::new();
        let mut remainder = Vec::new();
        while let Some(next) = iter.next_if(|m| m.role() != "assistant") {
            let AgentMessage::Llm(Message::ToolResult(r)) = next else {
                remainder.push(next);
                continue;
            };
            let Some(call_name) = names.get(r.tool_call_id.as_str()) else {
                out.dropped_orphan_count += 1;
                out.moved = true;
                continue;
            };
            if seen.contains(&r.tool_call_id) || found.contains_key(&r.tool_call_id) {
                out.dropped_duplicate_count += 1;
                out.moved = true;
                continue;
            }
            let r = normalize_result_name(r, call_name, &mut out.moved);
            found.insert(r.tool_call_id.clone(), r);
        }
        if !found.is_empty() && !remainder.is_empty() {
            out.moved = true;
        }
        for (id, name) in &calls {
            if !seen.insert(id.clone()) {
                // The same id was answered after an earlier assistant: a second result would be
                // a duplicate.
                if found.remove(id).is_some() {
                    out.dropped_duplicate_count += 1;
                }
                out.moved = true;
                continue;
            }
            match found.remove(id) {
                Some(r) => out.messages.push(tool_result(r)),
                None => {
                    let r = synthetic_tool_result(id, Some(name), now_ms);
                    out.added.push(r.clone());
                    out.moved = true;
                    out.messages.push(tool_result(r));
                }
            }
        }
        out.messages.extend(remainder);
    }
    out
}

fn normalize_result_name(
    mut r: ToolResultMessage,
    call_name: &str,
    changed: &mut bool,
) -> ToolResultMessage {
    let trimmed = r.tool_name.trim();
    let name = if !trimmed.is_empty() {
        trimmed
    } else if !call_name.trim().is_empty() {
        call_name.trim()
    } else {
        "unknown"
    };
    if name != r.tool_name {
        r.tool_name = name.to_owned();
        *changed = true;
    }
    r
}

#[cfg(test)]
#[path = "repair_tests.rs"]
mod tests;
