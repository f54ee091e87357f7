//! Context-overflow detection (pi spec §1.10): provider error texts that mean "the prompt is too
//! long", and the silent overflow of servers that truncate instead of failing.

use std::sync::OnceLock;

use regex::RegexSet;

use crate::message::{AssistantMessage, StopReason};

/// Every pattern pi recognises, matched case-insensitively.
const PATTERNS: &[&str] = &[
    r"prompt is too long",
    r"input is too long for requested model",
    r"exceeds the context window",
    r"input token count.*exceeds the maximum",
    r"maximum prompt length is \d+",
    r"reduce the length of the messages",
    r"maximum context length is \d+ tokens",
    r"exceeds the limit of \d+",
    r"exceeds the available context size",
    r"greater than the context length",
    r"context window exceeds limit",
    r"exceeded model token limit",
    r"too large for model with \d+ maximum context length",
    r"model_context_window_exceeded",
    r"context[_ ]length[_ ]exceeded",
    r"too many tokens",
    r"token limit exceeded",
    // Cerebras answers a too-long prompt with an empty 400/413.
    r"^4(00|13)\s*(status code)?\s*\(no body\)",
];

fn patterns() -> Option<&'static RegexSet> {
    static SET: OnceLock<Option<RegexSet>> = OnceLock::new();
    SET.get_or_init(|| RegexSet::new(PATTERNS.iter().map(|p| format!("(?i){p}"))).ok())
        .as_ref()
}

/// Whether an error text says the context window was exceeded.
pub fn message_is_overflow(text: &str) -> bool {
    patterns().is_some_and(|set| set.is_match(text))
}

/// pi's `isContextOverflow`: an error message matching a known overflow text, or (when the
/// context window is known) a successful answer whose input already exceeded the window.
pub fn is_context_overflow(message: &AssistantMessage, context_window: Option<u64>) -> bool {
    match message.stop_reason {
        StopReason::Error => message
            .error_message
            .as_deref()
            .is_some_and(message_is_overflow),
        StopReason::Stop => context_window.is_some_and(|window| {
            message.usage.input.saturating_add(message.usage.cache_read) > window
        }),
        StopReason::Length
        | StopReason::ToolUse
        | StopReason::Aborted
        | StopReason::Deferred
        | StopReason::Pending => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Usage;

    fn msg(stop: StopReason, error: Option<&str>, input: u64) -> AssistantMessage {
        AssistantMessage {
            content: vec![],
            api: "a".into(),
            provider: "p".into(),
            model: "m".into(),
            usage: Usage {
                input,
                ..Usage::default()
            },
            stop_reason: stop,
            timestamp: 0,
            error_message: error.map(str::to_string),
            error_status: None,
            response_id: None,
        }
    }

    #[test]
    fn every_pattern_matches_a_real_text() {
        let texts = [
            "400 prompt is too long: 213462 tokens > 200000 maximum",
            "Input is too long for requested model.",
            "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).",
            "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
            "Please reduce the length of the messages or completion.",
            "This model's maximum context length is 128000 tokens. However",
            "Requested tokens exceeds the limit of 8192",
            "the request exceeds the available context size, try increasing it",
            "prompt length is greater than the context length",
            "Your input exceeds the context window of this model",
            "context window exceeds limit",
            "Exceeded model token limit",
            "prompt too large for model with 4096 maximum context length",
            "model_context_window_exceeded",
            "context_length_exceeded",
            "Context length exceeded",
            "Too many tokens in request",
            "token limit exceeded",
            "400 status code (no body)",
            "413 (no body)",
        ];
        for t in texts {
            assert!(message_is_overflow(t), "{t}");
            assert!(is_context_overflow(
                &msg(StopReason::Error, Some(t), 0),
                None
            ));
        }
        assert!(!message_is_overflow("rate limit exceeded"));
        assert!(!message_is_overflow("got 400 status code (no body)"));
    }

    #[test]
    fn silent_overflow_needs_window() {
        let m = msg(StopReason::Stop, None, 5000);
        assert!(is_context_overflow(&m, Some(4000)));
        assert!(!is_context_overflow(&m, Some(6000)));
        assert!(!is_context_overflow(&m, None));
        let err = msg(StopReason::Error, Some("prompt is too long"), 0);
        assert!(is_context_overflow(&err, None));
        let aborted = msg(StopReason::Aborted, Some("prompt is too long"), 0);
        assert!(!is_context_overflow(&aborted, None));
    }
}
