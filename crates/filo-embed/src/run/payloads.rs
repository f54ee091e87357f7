//! C11 — reply payloads of a finished run (design §3 C11, spec §1.7 `buildEmbeddedRunPayloads`):
//! the error item, the reasoning item, the answer texts through the reply directives, the last
//! tool error when nothing else answers the user, and the final clean-up. Pure: everything comes
//! in as arguments.
//!
//! Inline tool summaries (spec §1.7 step 2) are not built: the runner always passes
//! `inlineToolResultsAllowed = false` in OpenClaw.

use filo_ai::{AssistantMessage, ContentBlock, StopReason};

use crate::classify::copy::{
    ErrorCopyContext, GENERIC_ERROR_COPY, format_assistant_error_text, is_raw_api_error_payload,
};
use crate::stream::directives::parse_reply_directives;
use crate::stream::reasoning::extract_assistant_text;
use crate::stream::silent::{SILENT_REPLY_TOKEN, is_silent_reply_text};

/// One reply to deliver.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyPayload {
    pub text: Option<String>,
    pub media_urls: Vec<String>,
    pub reply_to_id: Option<String>,
    pub audio_as_voice: bool,
    pub is_error: bool,
}

impl ReplyPayload {
    /// The first media URL (`mediaUrl`).
    pub fn media_url(&self) -> Option<&str> {
        self.media_urls.first().map(String::as_str)
    }
}

/// The last tool that failed during the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    /// The tool summary (`formatToolAggregate`), e.g. `🛠️ Exec`.
    pub summary: String,
    pub error: Option<String>,
}

/// What payload building needs from the run.
#[derive(Clone, Copy)]
pub struct PayloadInputs<'a> {
    /// Texts the subscriber collected as the answer (block replies), in order.
    pub assistant_texts: &'a [String],
    pub last_assistant: Option<&'a AssistantMessage>,
    pub last_tool_error: Option<&'a ToolFailure>,
    /// `reasoningLevel == "on"`: send the model's thinking as its own item.
    pub reasoning_on: bool,
    pub current_message_id: Option<&'a str>,
    pub error_copy: ErrorCopyContext<'a>,
}

/// Words that mark a tool error the model can fix by itself (not shown to the user).
const RECOVERABLE_HINTS: [&str; 7] = [
    "required",
    "missing",
    "invalid",
    "must be",
    "must have",
    "needs",
    "requires",
];

/// A tool error the model can fix by retrying with other arguments.
pub fn is_recoverable_tool_error(error: Option<&str>) -> bool {
    let lower = error.unwrap_or("").to_lowercase();
    RECOVERABLE_HINTS.iter().any(|hint| lower.contains(hint))
}

/// `formatReasoningMessage`: `Reasoning:` and each non-empty line in italics (per line: chat
/// italics cannot span lines); empty input gives an empty string.
pub fn format_reasoning_message(text: &str) -> String {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = trimmed
        .lines()
        .map(|line| {
            if line.trim().is_empty() {
                String::new()
            } else {
                format!("_{line}_")
            }
        })
        .collect();
    format!("Reasoning:\n{}", lines.join("\n"))
}

/// The thinking blocks of a message, trimmed and joined by `\n` (`extractAssistantThinking`).
pub fn extract_assistant_thinking(message: &AssistantMessage) -> String {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Thinking(t) => Some(t.thinking.trim()),
            ContentBlock::Text(_) | ContentBlock::ToolCall(_) | ContentBlock::Image(_) => None,
        })
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Only an `error` stop shows error copy (OpenClaw's `lastAssistantErrored`): an aborted
/// message also carries an error message ("Request was aborted"), and a timed-out run answers
/// with the timeout copy instead.
fn errored(message: &AssistantMessage) -> bool {
    match message.stop_reason {
        StopReason::Error => true,
        StopReason::Stop
        | StopReason::Length
        | StopReason::ToolUse
        | StopReason::Aborted
        | StopReason::Deferred
        | StopReason::Pending => false,
    }
}

/// `buildEmbeddedRunPayloads`.
pub fn build_run_payloads(inputs: &PayloadInputs<'_>) -> Vec<ReplyPayload> {
    let mut items: Vec<ReplyPayload> = Vec::new();
    let last = inputs.last_assistant;
    let error_copy = last
        .filter(|m| errored(m))
        .and_then(|m| format_assistant_error_text(m, &inputs.error_copy));
    if let Some(copy) = &error_copy {
        items.push(ReplyPayload {
            text: Some(copy.clone()),
            is_error: true,
            ..ReplyPayload::default()
        });
    }
    if inputs.reasoning_on {
        let reasoning = last.map(extract_assistant_thinking).unwrap_or_default();
        let formatted = format_reasoning_message(&reasoning);
        if !formatted.is_empty() {
            items.push(ReplyPayload {
                text: Some(formatted),
                ..ReplyPayload::default()
            });
        }
    }
    let answers: Vec<String> = if inputs.assistant_texts.is_empty() {
        last.map(extract_assistant_text)
            .filter(|t| !t.is_empty())
            .into_iter()
            .collect()
    } else {
        inputs.assistant_texts.to_vec()
    };
    let raw_error = last.and_then(|m| m.error_message.as_deref()).map(str::trim);
    let mut answered = false;
    for text in answers {
        if error_copy.is_some() {
            let t = text.trim();
            let echoes_error = Some(t) == raw_error
                || Some(t) == error_copy.as_deref()
                || t == GENERIC_ERROR_COPY
                || is_raw_api_error_payload(t);
            if echoes_error {
                continue;
            }
        }
        let parsed = parse_reply_directives(&text, inputs.current_message_id, None);
        if !parsed.is_renderable() {
            continue;
        }
        answered = true;
        items.push(ReplyPayload {
            text: Some(parsed.text),
            media_urls: parsed.media_urls,
            reply_to_id: parsed.reply_to_id,
            audio_as_voice: parsed.audio_as_voice,
            is_error: false,
        });
    }
    if let Some(item) = tool_failure_item(inputs, answered) {
        items.push(item);
    }
    finalize(items)
}

/// The last tool error, shown only when nothing answers the user (no answer, or the model was
/// still calling tools) and the model could not fix it itself.
fn tool_failure_item(inputs: &PayloadInputs<'_>, answered: bool) -> Option<ReplyPayload> {
    let failure = inputs.last_tool_error?;
    let still_working = inputs
        .last_assistant
        .is_some_and(|m| m.tool_calls().next().is_some() || m.stop_reason == StopReason::ToolUse);
    if (answered && !still_working) || is_recoverable_tool_error(failure.error.as_deref()) {
        return None;
    }
    let detail = failure
        .error
        .as_deref()
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    Some(ReplyPayload {
        text: Some(format!("⚠️ {} failed{detail}", failure.summary)),
        is_error: true,
        ..ReplyPayload::default()
    })
}

/// Trim texts, spread the voice flag to every item with media when any item had it, drop empty
/// items and silent-token items.
fn finalize(items: Vec<ReplyPayload>) -> Vec<ReplyPayload> {
    let any_voice = items.iter().any(|i| i.audio_as_voice);
    items
        .into_iter()
        .filter_map(|mut item| {
            item.text = item
                .text
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty());
            item.audio_as_voice = item.audio_as_voice || (any_voice && !item.media_urls.is_empty());
            if item.text.is_none() && item.media_urls.is_empty() {
                return None;
            }
            if item
                .text
                .as_deref()
                .is_some_and(|t| is_silent_reply_text(Some(t), SILENT_REPLY_TOKEN))
            {
                return None;
            }
            Some(item)
        })
        .collect()
}

#[cfg(test)]
#[path = "payloads_tests.rs"]
mod payloads_tests;
