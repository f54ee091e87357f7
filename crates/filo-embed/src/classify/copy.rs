//! C11 — user-facing error copy (design §3 C11, spec §7.6): what a chat user reads when the
//! model call failed. Raw provider errors never reach the user when a better sentence exists.
//!
//! Strings are OpenClaw's, byte for byte (none of them names the product).

use filo_ai::{AssistantMessage, StopReason};

use super::patterns::Pattern;
use super::{
    is_billing_error_message, is_context_overflow_error, is_overloaded_error_message,
    is_rate_limit_error_message, is_reasoning_constraint_error, is_timeout_error_message,
};

pub const UNKNOWN_ERROR_COPY: &str = "LLM request failed with an unknown error.";
pub const CONTEXT_OVERFLOW_COPY: &str = "Context overflow: prompt too large for the model. Try /reset (or /new) to start a fresh session, or use a larger-context model.";
pub const REASONING_REQUIRED_COPY: &str = "Reasoning is required for this model endpoint. Use /think minimal (or any non-off level) and try again.";
pub const ROLE_ORDERING_COPY: &str = "Message ordering conflict - please try again. If this persists, use /new to start a fresh session.";
pub const MISSING_TOOL_INPUT_COPY: &str = "Session history looks corrupted (tool call input missing). Use /new to start a fresh session. If this keeps happening, reset the session or delete the corrupted session transcript.";
pub const RATE_LIMIT_COPY: &str = "⚠️ API rate limit reached. Please try again later.";
pub const OVERLOADED_COPY: &str =
    "The AI service is temporarily overloaded. Please try again in a moment.";
pub const TIMEOUT_COPY: &str = "LLM request timed out.";
/// The generic text some providers stream as the answer of a failed call; payload building
/// drops it next to a real error item.
pub const GENERIC_ERROR_COPY: &str = "The AI service returned an error. Please try again.";

/// How many chars of an unrecognised raw error are shown.
const RAW_ERROR_MAX_CHARS: usize = 600;

/// The billing copy; with a provider name it names the provider twice.
///
/// (from source) The design marked the named form as only partly seen; OpenClaw's
/// `formatBillingErrorMessage(provider)` reads "⚠️ <P> returned a billing error — … Check your
/// <P> billing dashboard …". Newer trees add " (<model>)" after the first <P>; this is the
/// provider-only form of the tree the rest of this module follows.
pub fn billing_copy(provider: Option<&str>) -> String {
    match provider.map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) => format!(
            "⚠️ {p} returned a billing error — your API key has run out of credits or has an insufficient balance. Check your {p} billing dashboard and top up or switch to a different API key."
        ),
        None => "⚠️ API provider returned a billing error — your API key has run out of credits or has an insufficient balance. Check your provider's billing dashboard and top up or switch to a different API key.".to_owned(),
    }
}

/// Given a tool name from an "unknown tool" error, the explanation to show when the sandbox
/// policy blocks that tool (`None`: not blocked).
pub type SandboxExplainer<'a> = &'a dyn Fn(&str) -> Option<String>;

/// What the copy may know besides the error text.
#[derive(Default, Clone, Copy)]
pub struct ErrorCopyContext<'a> {
    /// Provider name used by the billing copy.
    pub provider: Option<&'a str>,
    /// Given a tool name from an "unknown tool" error, the explanation to show when the
    /// sandbox policy blocks that tool (`None`: not blocked, keep classifying).
    pub sandbox_blocked_tool: Option<SandboxExplainer<'a>>,
}

static UNKNOWN_TOOL: [Pattern; 2] = [
    Pattern::new(r#"(?i)unknown tool[:\s]+["']?([a-z0-9_-]+)["']?"#),
    Pattern::new(r#"(?i)tool\s+["']?([a-z0-9_-]+)["']?\s+(?:not found|is not available)"#),
];
static ROLE_ORDERING: Pattern = Pattern::new(
    r#"(?i)incorrect role information|roles must alternate|400.*role|"message".*role.*information"#,
);
static MISSING_TOOL_INPUT: Pattern = Pattern::new(
    r"(?i)tool_(?:use|call)\.(?:input|arguments).*?(?:field required|required)|messages\.\d+\.content\.\d+\.tool_(?:use|call)\.(?:input|arguments)",
);
static INVALID_REQUEST: Pattern = Pattern::new(
    r#"(?s)"type"\s*:\s*"invalid_request_error".*?"message"\s*:\s*"((?:[^"\\]|\\.)*)""#,
);
static INVALID_REQUEST_MESSAGE_FIRST: Pattern = Pattern::new(
    r#"(?s)"message"\s*:\s*"((?:[^"\\]|\\.)*)".*?"type"\s*:\s*"invalid_request_error""#,
);

/// `formatAssistantErrorText`: the copy for a failed assistant message, `None` when the message
/// did not fail.
pub fn format_assistant_error_text(
    message: &AssistantMessage,
    context: &ErrorCopyContext<'_>,
) -> Option<String> {
    let failed = match message.stop_reason {
        StopReason::Error => true,
        StopReason::Stop
        | StopReason::Length
        | StopReason::ToolUse
        | StopReason::Aborted
        | StopReason::Deferred
        | StopReason::Pending => false,
    };
    if !failed && message.error_message.is_none() {
        return None;
    }
    Some(format_error_text(
        message.error_message.as_deref().unwrap_or(""),
        context,
    ))
}

/// The copy for a raw error text (the body of [`format_assistant_error_text`]).
pub fn format_error_text(raw: &str, context: &ErrorCopyContext<'_>) -> String {
    let raw = raw.trim();
    if raw.is_empty() {
        return UNKNOWN_ERROR_COPY.to_owned();
    }
    if let Some(explanation) = sandbox_explanation(raw, context) {
        return explanation;
    }
    if is_context_overflow_error(raw) {
        return CONTEXT_OVERFLOW_COPY.to_owned();
    }
    if is_reasoning_constraint_error(raw) {
        return REASONING_REQUIRED_COPY.to_owned();
    }
    if ROLE_ORDERING.is_match(raw) {
        return ROLE_ORDERING_COPY.to_owned();
    }
    if MISSING_TOOL_INPUT.is_match(raw) {
        return MISSING_TOOL_INPUT_COPY.to_owned();
    }
    if let Some(message) = invalid_request_message(raw) {
        return format!("LLM request rejected: {message}");
    }
    if is_rate_limit_error_message(raw) {
        return RATE_LIMIT_COPY.to_owned();
    }
    if is_overloaded_error_message(raw) {
        return OVERLOADED_COPY.to_owned();
    }
    if is_timeout_error_message(raw) {
        return TIMEOUT_COPY.to_owned();
    }
    if is_billing_error_message(raw) {
        return billing_copy(context.provider);
    }
    if let Some(info) = parse_api_error_payload(raw) {
        return match info.kind {
            Some(kind) => format!("LLM error {kind}: {}", info.message),
            None => format!("LLM error: {}", info.message),
        };
    }
    truncate_chars(raw, RAW_ERROR_MAX_CHARS)
}

fn sandbox_explanation(raw: &str, context: &ErrorCopyContext<'_>) -> Option<String> {
    let explain = context.sandbox_blocked_tool?;
    let tool = UNKNOWN_TOOL.iter().find_map(|p| {
        let caps = p.get()?.captures(raw)?;
        Some(caps.get(1)?.as_str().to_owned())
    })?;
    explain(&tool)
}

fn invalid_request_message(raw: &str) -> Option<String> {
    let caps = INVALID_REQUEST
        .get()
        .and_then(|re| re.captures(raw))
        .or_else(|| INVALID_REQUEST_MESSAGE_FIRST.get()?.captures(raw))?;
    let escaped = caps.get(1)?.as_str();
    // The capture is a JSON string body; decode its escapes, or show it as is.
    let decoded = serde_json::from_str::<String>(&format!("\"{escaped}\""))
        .unwrap_or_else(|_| escaped.to_owned());
    Some(decoded)
}

/// A provider's JSON error body: `{"type":"error","error":{"type":T,"message":M}}`, possibly
/// after a leading HTTP status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiErrorInfo {
    pub kind: Option<String>,
    pub message: String,
}

/// Parse a raw API error payload (`isRawApiErrorPayload` / `parseApiErrorInfo`).
pub fn parse_api_error_payload(raw: &str) -> Option<ApiErrorInfo> {
    let trimmed = raw.trim();
    let body = match super::leading_http_status(trimmed) {
        Some((_, rest)) if rest.starts_with('{') => rest,
        _ => trimmed,
    };
    if !(body.starts_with('{') && body.ends_with('}')) {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let error = value.get("error")?;
    let message = error.get("message")?.as_str()?.to_owned();
    let kind = error
        .get("type")
        .and_then(|t| t.as_str())
        .map(str::to_owned);
    Some(ApiErrorInfo { kind, message })
}

/// Whether a text is a raw API error payload (payload building drops such answer texts).
pub fn is_raw_api_error_payload(raw: &str) -> bool {
    parse_api_error_payload(raw).is_some()
}

/// The first `max` chars of `text`, plus `…` when something was cut.
pub fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
pub(crate) fn all_patterns() -> Vec<&'static Pattern> {
    let mut all = vec![
        &ROLE_ORDERING,
        &MISSING_TOOL_INPUT,
        &INVALID_REQUEST,
        &INVALID_REQUEST_MESSAGE_FIRST,
    ];
    all.extend(UNKNOWN_TOOL.iter());
    all
}
