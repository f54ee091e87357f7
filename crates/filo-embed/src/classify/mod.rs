//! C10 — error classification (design §3 C10, spec §7.1–§7.5): an error text becomes a
//! [`FailoverReason`] (or none), or an overflow / image / compaction verdict.
//!
//! Everything here is a pure function of the text. Matching lower-cases the input; string
//! patterns are substrings, regex patterns are compiled once (see `patterns`).

pub mod copy;
pub mod overflow;
mod patterns;
pub mod thinking;

pub use overflow::{
    extract_observed_overflow_token_count, is_compaction_failure_error, is_context_overflow_error,
    is_likely_context_overflow_error, is_reasoning_constraint_error,
};

use patterns::{
    AUTH, AUTH_PERMANENT, BILLING, BILLING_402, BILLING_HEAD, FORMAT, HTML_CLOSE, HTML_PREFIX,
    HTTP_STATUS_PREFIX, OVERLOADED, Pattern, RATE_LIMIT, TIMEOUT,
};

/// Why a model call failed, as far as rotating keys or models is concerned.
///
/// The first seven are OpenClaw's baseline reasons; the rest exist in later OpenClaw trees and
/// are produced only by callers that know them (status codes, error codes). Every consumer
/// matches exhaustively, so a new reason forces a decision everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailoverReason {
    Auth,
    Format,
    RateLimit,
    Billing,
    Timeout,
    ModelNotFound,
    Unknown,
    Overloaded,
    AuthPermanent,
    SessionExpired,
    ServerError,
    NoErrorDetails,
    EmptyResponse,
    Unclassified,
}

impl FailoverReason {
    /// OpenClaw's wire name of the reason (`rate_limit`, `model_not_found`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auth => "auth",
            Self::Format => "format",
            Self::RateLimit => "rate_limit",
            Self::Billing => "billing",
            Self::Timeout => "timeout",
            Self::ModelNotFound => "model_not_found",
            Self::Unknown => "unknown",
            Self::Overloaded => "overloaded",
            Self::AuthPermanent => "auth_permanent",
            Self::SessionExpired => "session_expired",
            Self::ServerError => "server_error",
            Self::NoErrorDetails => "no_error_details",
            Self::EmptyResponse => "empty_response",
            Self::Unclassified => "unclassified",
        }
    }

    /// The HTTP status a `FailoverError` of this reason reports (spec §1.5,
    /// `resolveFailoverStatus`); `None` where OpenClaw has none.
    pub fn status(self) -> Option<u16> {
        match self {
            Self::Billing => Some(402),
            Self::RateLimit => Some(429),
            Self::Overloaded => Some(503),
            Self::Auth => Some(401),
            Self::AuthPermanent => Some(403),
            Self::Timeout => Some(408),
            Self::Format => Some(400),
            Self::ModelNotFound => Some(404),
            Self::SessionExpired => Some(410),
            Self::ServerError => Some(500),
            Self::Unknown | Self::NoErrorDetails | Self::EmptyResponse | Self::Unclassified => None,
        }
    }
}

impl std::fmt::Display for FailoverReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Classify an error text (baseline order of spec §7.5 plus filo's own texts, design G9):
/// image dimension/size errors → none; transient HTTP 5xx or an HTML error page → timeout;
/// rate limit → rate_limit; overloaded → rate_limit (baseline; later trees say `overloaded`);
/// format → format; billing → billing; timeout → timeout; auth → auth; anything else → none.
///
/// A request filo could not build (`Invalid request: …`) stays unclassified: another key
/// cannot fix it.
pub fn classify_failover_reason(text: &str) -> Option<FailoverReason> {
    if parse_image_dimension_error(text).is_some() || parse_image_size_error(text).is_some() {
        return None;
    }
    if is_transient_http_error(text) || is_cloudflare_or_html_error_page(text) {
        return Some(FailoverReason::Timeout);
    }
    let lower = text.to_lowercase();
    if RATE_LIMIT.matches(&lower) || OVERLOADED.matches(&lower) {
        return Some(FailoverReason::RateLimit);
    }
    if FORMAT.matches(&lower) {
        return Some(FailoverReason::Format);
    }
    if billing_matches(text, &lower) {
        return Some(FailoverReason::Billing);
    }
    if TIMEOUT.matches(&lower) {
        return Some(FailoverReason::Timeout);
    }
    if AUTH.matches(&lower) {
        return Some(FailoverReason::Auth);
    }
    None
}

/// The error text of a failed assistant message (`stopReason == "error"`), if any.
fn assistant_error(message: &filo_ai::AssistantMessage) -> Option<&str> {
    match message.stop_reason {
        filo_ai::StopReason::Error => message.error_message.as_deref(),
        filo_ai::StopReason::Stop
        | filo_ai::StopReason::Length
        | filo_ai::StopReason::ToolUse
        | filo_ai::StopReason::Aborted
        | filo_ai::StopReason::Deferred
        | filo_ai::StopReason::Pending => None,
    }
}

/// `isAuthAssistantError` (spec §7.6): the message failed with an auth error text.
pub fn is_auth_assistant_error(message: &filo_ai::AssistantMessage) -> bool {
    assistant_error(message).is_some_and(is_auth_error_message)
}

/// `isRateLimitAssistantError`.
pub fn is_rate_limit_assistant_error(message: &filo_ai::AssistantMessage) -> bool {
    assistant_error(message).is_some_and(is_rate_limit_error_message)
}

/// `isBillingAssistantError`.
pub fn is_billing_assistant_error(message: &filo_ai::AssistantMessage) -> bool {
    assistant_error(message).is_some_and(is_billing_error_message)
}

/// `isFailoverAssistantError`: the message failed with a text that has a failover reason.
pub fn is_failover_assistant_error(message: &filo_ai::AssistantMessage) -> bool {
    assistant_failover_reason(message).is_some()
}

/// Why an errored assistant message should move on to another profile or model: its text first,
/// then the HTTP status the request failed with (G9, spec §7.5's status path), so a provider
/// whose error body says nothing recognisable is still classified.
pub fn assistant_failover_reason(message: &filo_ai::AssistantMessage) -> Option<FailoverReason> {
    let text = assistant_error(message)?;
    classify_failover_reason(text).or_else(|| {
        let status = message.error_status?;
        let body = leading_http_status(text).map_or(text, |(_, rest)| rest);
        crate::error::classify_failover_status(status, body)
    })
}

/// A daily / weekly / monthly usage limit (spec §7.1). Not part of the baseline order; later
/// OpenClaw trees call it billing when the text is a billing text, else a rate limit.
pub fn is_periodic_usage_limit_error_message(text: &str) -> bool {
    patterns::PERIODIC_USAGE_LIMIT.is_match(text)
}

/// The provider-specific last-resort reason of a text (spec §7.1), if any. Not part of the
/// baseline order, which ends in "none".
pub fn provider_specific_failover_reason(text: &str) -> Option<FailoverReason> {
    patterns::PROVIDER_REASONS
        .iter()
        .find(|(pattern, _)| pattern.is_match(text))
        .map(|(_, reason)| *reason)
}

/// `isFailoverErrorMessage`: the text has a failover reason.
pub fn is_failover_error_message(text: &str) -> bool {
    classify_failover_reason(text).is_some()
}

pub fn is_rate_limit_error_message(text: &str) -> bool {
    !text.is_empty() && RATE_LIMIT.matches(&text.to_lowercase())
}

pub fn is_overloaded_error_message(text: &str) -> bool {
    !text.is_empty() && OVERLOADED.matches(&text.to_lowercase())
}

pub fn is_timeout_error_message(text: &str) -> bool {
    !text.is_empty() && TIMEOUT.matches(&text.to_lowercase())
}

pub fn is_auth_error_message(text: &str) -> bool {
    !text.is_empty() && AUTH.matches(&text.to_lowercase())
}

/// Permanent auth failures (revoked or deactivated keys); a later-tree reason, offered for the
/// auth-profile store which parks such profiles longer.
pub fn is_auth_permanent_error_message(text: &str) -> bool {
    !text.is_empty() && AUTH_PERMANENT.matches(&text.to_lowercase())
}

pub fn is_format_error_message(text: &str) -> bool {
    !text.is_empty() && FORMAT.matches(&text.to_lowercase())
}

/// `isBillingErrorMessage`: texts over 512 chars only count with a hard 402 marker; shorter
/// ones match the billing list, or start like a billing message and mention upgrade, credits,
/// payment or plan.
pub fn is_billing_error_message(text: &str) -> bool {
    !text.is_empty() && billing_matches(text, &text.to_lowercase())
}

fn billing_matches(text: &str, lower: &str) -> bool {
    if BILLING_402.is_match(text) {
        return true;
    }
    // OpenClaw counts UTF-16 units; chars are the same for the ASCII texts providers send.
    if text.chars().count() > 512 {
        return false;
    }
    if BILLING.matches(lower) {
        return true;
    }
    let head = lower.trim_start();
    BILLING_HEAD.is_match(head)
        && ["upgrade", "credits", "payment", "plan"]
            .iter()
            .any(|w| lower.contains(w))
}

/// Status codes that mean "the server had a bad moment" (`TRANSIENT_HTTP_ERROR_CODES`).
const TRANSIENT_HTTP_CODES: [u16; 9] = [500, 502, 503, 504, 521, 522, 523, 524, 529];
/// Cloudflare's origin-error codes, answered with an HTML page.
const CLOUDFLARE_HTML_CODES: [u16; 7] = [521, 522, 523, 524, 525, 526, 530];

/// A leading HTTP status (`"503 …"`, `"HTTP 503 …"`) and the trimmed rest.
pub fn leading_http_status(text: &str) -> Option<(u16, &str)> {
    let caps = HTTP_STATUS_PREFIX.get()?.captures(text)?;
    let code = caps.get(1)?.as_str().parse().ok()?;
    let rest = caps.get(2).map_or("", |m| m.as_str().trim());
    Some((code, rest))
}

/// `isTransientHttpError`: the trimmed text starts with 500/502/503/504/521–524/529.
pub fn is_transient_http_error(text: &str) -> bool {
    leading_http_status(text.trim()).is_some_and(|(code, _)| TRANSIENT_HTTP_CODES.contains(&code))
}

/// `isCloudflareOrHtmlErrorPage`: a 5xx status that is one of Cloudflare's origin errors, or a
/// 5xx status followed by a whole HTML document.
pub fn is_cloudflare_or_html_error_page(text: &str) -> bool {
    let Some((code, rest)) = leading_http_status(text.trim()) else {
        return false;
    };
    if code < 500 {
        return false;
    }
    CLOUDFLARE_HTML_CODES.contains(&code)
        || (code < 600 && HTML_PREFIX.is_match(rest) && HTML_CLOSE.is_match(rest))
}

/// What an Anthropic "image dimensions exceed max allowed size" error says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImageDimensionError {
    pub max_dimension_px: Option<u32>,
    pub message_index: Option<u32>,
    pub content_index: Option<u32>,
}

static IMAGE_DIMENSION_PX: Pattern = Pattern::new(r"(?i)(\d+)\s*pixels");
static IMAGE_LOCATION: Pattern = Pattern::new(r"(?i)messages\.(\d+)\.content\.(\d+)\.image");
static IMAGE_SIZE_MB: Pattern = Pattern::new(r"(?i)image exceeds\s*(\d+(?:\.\d+)?)\s*mb");

/// `parseImageDimensionError`: `None` unless the text says the image dimensions exceed the
/// maximum; then the pixel limit and the message/content indices where the text names them.
pub fn parse_image_dimension_error(text: &str) -> Option<ImageDimensionError> {
    let lower = text.to_lowercase();
    if !lower.contains("image dimensions exceed max allowed size") {
        return None;
    }
    let max_dimension_px = IMAGE_DIMENSION_PX
        .get()
        .and_then(|re| re.captures(text))
        .and_then(|c| c.get(1)?.as_str().parse().ok());
    let location = IMAGE_LOCATION.get().and_then(|re| re.captures(text));
    let index = |i: usize| -> Option<u32> { location.as_ref()?.get(i)?.as_str().parse().ok() };
    Some(ImageDimensionError {
        max_dimension_px,
        message_index: index(1),
        content_index: index(2),
    })
}

/// `parseImageSizeError`: `None` unless the text says the image exceeds a size in MB; then the
/// limit in MB when the text gives a number.
pub fn parse_image_size_error(text: &str) -> Option<ImageSizeError> {
    let lower = text.to_lowercase();
    if !(lower.contains("image exceeds") && lower.contains("mb")) {
        return None;
    }
    let max_mb = IMAGE_SIZE_MB
        .get()
        .and_then(|re| re.captures(&lower))
        .and_then(|c| c.get(1)?.as_str().parse::<f64>().ok())
        .filter(|mb| mb.is_finite());
    Some(ImageSizeError { max_mb })
}

/// What an "image exceeds N MB" error says.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ImageSizeError {
    pub max_mb: Option<f64>,
}

#[cfg(test)]
mod classify_tests;
