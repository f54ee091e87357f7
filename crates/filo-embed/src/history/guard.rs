//! The persist-time tool-result guard (C18): what reaches a session file never leaves a tool call
//! without its result.
//!
//! [`ToolResultGuard::accept`] takes each message the session is about to persist and returns
//! the messages to write instead, in order: assistants are sanitised first (invalid calls
//! dropped), synthetic error results are written for calls left pending when the conversation
//! moves on, oversized tool results are capped, and optional hooks may block or rewrite any
//! message. The guard is a pure state machine; the attempt wires it into persistence.
//!
//! filo-agent already guarantees one result per started tool call (also on abort), so the guard
//! fires on crashed or partial transcripts and on assistants dropped by sanitisation.

use std::collections::HashSet;

use filo_agent::AgentMessage;
use filo_ai::{ContentBlock, Message, StopReason, ToolResultMessage};

use crate::history::repair::{
    SanitizedAssistant, normalize_allowed_tool_names, sanitize_assistant, synthetic_tool_result,
};

/// Default cap on a persisted tool result's text, in chars (the hard maximum of spec §5.6).
pub const DEFAULT_MAX_TOOL_RESULT_CHARS: usize = 16_000;

/// What a `before_message_write` hook decides.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteDecision {
    /// Write the message as it is.
    Keep,
    /// Do not write it.
    Block,
    /// Write this message instead.
    Replace(Box<AgentMessage>),
}

/// Called for every message about to be written.
pub type BeforeWriteHook = Box<dyn Fn(&AgentMessage) -> WriteDecision + Send + Sync>;
/// Called for every tool result about to be written (`synthetic` tells which); returns the
/// result to write.
pub type ToolResultHook = Box<dyn Fn(ToolResultMessage, bool) -> ToolResultMessage + Send + Sync>;

/// Options of a [`ToolResultGuard`].
pub struct GuardOptions {
    /// Write synthetic error results for pending calls (default true).
    pub allow_synthetic_tool_results: bool,
    /// When set, calls to other tools are dropped before persistence.
    pub allowed_tool_names: Option<Vec<String>>,
    /// Cap on a tool result's text, in chars.
    pub max_tool_result_chars: usize,
    pub before_message_write: Option<BeforeWriteHook>,
    pub tool_result_persist: Option<ToolResultHook>,
}

impl Default for GuardOptions {
    fn default() -> Self {
        Self {
            allow_synthetic_tool_results: true,
            allowed_tool_names: None,
            max_tool_result_chars: DEFAULT_MAX_TOOL_RESULT_CHARS,
            before_message_write: None,
            tool_result_persist: None,
        }
    }
}

/// Tracks tool calls persisted without a result yet.
pub struct ToolResultGuard {
    options: GuardOptions,
    allowed: Option<HashSet<String>>,
    /// Pending calls in the order they were persisted: (id, tool name).
    pending: Vec<(String, String)>,
}

impl ToolResultGuard {
    /// A guard with `options`.
    pub fn new(options: GuardOptions) -> Self {
        let allowed = normalize_allowed_tool_names(options.allowed_tool_names.as_deref());
        Self {
            options,
            allowed,
            pending: Vec::new(),
        }
    }

    /// Ids of the calls still waiting for a result.
    pub fn pending_ids(&self) -> Vec<String> {
        self.pending.iter().map(|(id, _)| id.clone()).collect()
    }

    /// Forgets the pending calls without writing anything.
    pub fn clear_pending(&mut self) {
        self.pending.clear();
    }

    /// Synthetic results for every pending call (when allowed; else just forgets them).
    pub fn flush_pending(&mut self, now_ms: i64) -> Vec<AgentMessage> {
        let pending = std::mem::take(&mut self.pending);
        if !self.options.allow_synthetic_tool_results {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (id, name) in pending {
            let result = synthetic_tool_result(&id, Some(&name), now_ms);
            self.write_tool_result(result, true, &mut out);
        }
        out
    }

    /// The messages to write, in order, for `message` about to be persisted.
    pub fn accept(&mut self, message: AgentMessage, now_ms: i64) -> Vec<AgentMessage> {
        match message {
            AgentMessage::Llm(Message::Assistant(a)) => {
                let a = match sanitize_assistant(a, self.allowed.as_ref()) {
                    SanitizedAssistant::Unchanged(m)
                    | SanitizedAssistant::Changed { message: m, .. } => m,
                    SanitizedAssistant::Dropped { .. } => return self.flush_pending(now_ms),
                };
                let records = !matches!(a.stop_reason, StopReason::Aborted | StopReason::Error);
                let calls: Vec<(String, String)> = if records {
                    a.tool_calls()
                        .map(|c| (c.id.clone(), c.name.clone()))
                        .collect()
                } else {
                    Vec::new()
                };
                // The conversation moved on (or a new batch of calls starts): older calls will
                // never get a result.
                let mut out = self.flush_pending(now_ms);
                let written = self.write(AgentMessage::Llm(Message::Assistant(a)), &mut out);
                if written {
                    self.pending = calls;
                }
                out
            }
            AgentMessage::Llm(Message::ToolResult(r)) => {
                let mut out = Vec::new();
                let r = self.take_result(r);
                self.write_tool_result(r, false, &mut out);
                out
            }
            other => {
                let mut out = self.flush_pending(now_ms);
                self.write(other, &mut out);
                out
            }
        }
    }

    fn take_result(&mut self, mut r: ToolResultMessage) -> ToolResultMessage {
        if let Some(pos) = self
            .pending
            .iter()
            .position(|(id, _)| *id == r.tool_call_id)
        {
            let (_, name) = self.pending.remove(pos);
            if r.tool_name.trim().is_empty() {
                r.tool_name = name;
            }
        }
        cap_tool_result(&mut r, self.options.max_tool_result_chars);
        r
    }

    fn write_tool_result(
        &self,
        r: ToolResultMessage,
        synthetic: bool,
        out: &mut Vec<AgentMessage>,
    ) {
        let r = match &self.options.tool_result_persist {
            Some(hook) => hook(r, synthetic),
            None => r,
        };
        self.write(AgentMessage::Llm(Message::ToolResult(r)), out);
    }

    /// Applies the write hook; true when something was written.
    fn write(&self, message: AgentMessage, out: &mut Vec<AgentMessage>) -> bool {
        let decision = match &self.options.before_message_write {
            Some(hook) => hook(&message),
            None => WriteDecision::Keep,
        };
        match decision {
            WriteDecision::Keep => out.push(message),
            WriteDecision::Block => return false,
            WriteDecision::Replace(m) => out.push(*m),
        }
        true
    }
}

/// Caps the text of a tool result at `max_chars` chars in total: text blocks beyond the budget
/// are cut and the last kept one ends `[... <n> more characters truncated]` (pi style).
pub fn cap_tool_result(r: &mut ToolResultMessage, max_chars: usize) {
    let total: usize = r
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.chars().count(),
            _ => 0,
        })
        .sum();
    if total <= max_chars {
        return;
    }
    let mut budget = max_chars;
    let mut marked = false;
    for block in &mut r.content {
        let ContentBlock::Text(t) = block else {
            continue;
        };
        let len = t.text.chars().count();
        if len <= budget {
            budget -= len;
            continue;
        }
        let cut = t
            .text
            .char_indices()
            .nth(budget)
            .map_or(t.text.len(), |(i, _)| i);
        t.text.truncate(cut);
        if !marked {
            t.text.push_str(&format!(
                "\n\n[... {} more characters truncated]",
                total - max_chars
            ));
            marked = true;
        }
        budget = 0;
    }
    r.content
        .retain(|b| !matches!(b, ContentBlock::Text(t) if t.text.is_empty()));
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
