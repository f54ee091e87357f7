//! The provider layer's typed errors and their classification (retryable, retry-after, context
//! overflow). Every classification is an exhaustive `match`, so a new variant forces a decision.

use std::time::{Duration, SystemTime};

use thiserror::Error;

use crate::overflow::message_is_overflow;

/// Why a model call failed. The `Display` text becomes the assistant message's `errorMessage`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AiError {
    /// No key from options, models.json or the environment (pi's exact text).
    #[error("No API key for provider: {provider}")]
    NoApiKey { provider: String },
    /// The model names a wire protocol no codec implements.
    #[error("No API provider registered for api: {api}")]
    UnknownApi { api: String },
    /// The request could not be built (bad header value, bad URL, …).
    #[error("Invalid request: {0}")]
    Request(String),
    /// The server answered with a non-success status; `body` is its text, as the SDKs report it.
    #[error("{status} {body}")]
    Http {
        status: u16,
        body: String,
        retry_after: Option<Duration>,
    },
    /// Connecting, sending or reading failed (refused, reset, closed early).
    #[error("Connection error: {0}")]
    Transport(String),
    /// No bytes arrived for the configured idle timeout.
    #[error("Stream idle timeout: no data received for {} ms", .0.as_millis())]
    IdleTimeout(Duration),
    /// The provider reported an error inside the stream.
    #[error("{0}")]
    Provider(String),
    /// A success status whose body is not an event stream (an HTML login or proxy page, …).
    #[error(
        "Provider answered HTTP {status} with content-type `{content_type}` instead of an event stream; the body starts: {start}"
    )]
    UnexpectedBody {
        status: u16,
        content_type: String,
        /// The first bytes of the body (lossy UTF-8, at most [`BODY_PREVIEW_BYTES`]).
        start: String,
    },
    /// The server asked to wait longer than the configured cap (pi's text); not retried.
    #[error(
        "Server requested {}s retry delay (max: {}s). {last}",
        .requested.as_secs_f64().ceil(),
        .max.as_secs_f64().ceil()
    )]
    RetryDelayTooLong {
        requested: Duration,
        max: Duration,
        /// The response that asked for the delay.
        last: Box<AiError>,
    },
    /// The client retried and every request failed; `last` is the final failure. The session
    /// layer does not retry these again (see [`client_gave_up`]).
    #[error("{last} (gave up after {requests} requests)")]
    GaveUp { requests: u32, last: Box<AiError> },
    /// A frame could not be decoded.
    #[error("Malformed stream data: {0}")]
    Decode(String),
    /// The provider sent a stop reason we do not know.
    #[error("Unhandled stop reason: {0}")]
    UnhandledStopReason(String),
    /// The stream finished without a terminal frame or with an error stop reason.
    #[error("An unknown error occurred")]
    Unknown,
    /// The caller cancelled.
    #[error("Request was aborted")]
    Aborted,
}

impl AiError {
    /// Whether trying the same request again may succeed: rate limits, 408/409, 5xx, overload,
    /// connection failures and silent streams.
    pub fn is_retryable(&self) -> bool {
        match self {
            AiError::Http { status, body, .. } => {
                matches!(*status, 408 | 409 | 429 | 500..=599) || text_is_transient(body)
            }
            AiError::Transport(_) | AiError::IdleTimeout(_) => true,
            AiError::Provider(message) => text_is_transient(message),
            AiError::NoApiKey { .. }
            | AiError::UnexpectedBody { .. }
            | AiError::RetryDelayTooLong { .. }
            | AiError::GaveUp { .. }
            | AiError::UnknownApi { .. }
            | AiError::Request(_)
            | AiError::Decode(_)
            | AiError::UnhandledStopReason(_)
            | AiError::Unknown
            | AiError::Aborted => false,
        }
    }

    /// The delay the server asked for (`retry-after`), if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            AiError::Http { retry_after, .. } => *retry_after,
            AiError::NoApiKey { .. }
            | AiError::UnexpectedBody { .. }
            | AiError::RetryDelayTooLong { .. }
            | AiError::GaveUp { .. }
            | AiError::UnknownApi { .. }
            | AiError::Request(_)
            | AiError::Transport(_)
            | AiError::IdleTimeout(_)
            | AiError::Provider(_)
            | AiError::Decode(_)
            | AiError::UnhandledStopReason(_)
            | AiError::Unknown
            | AiError::Aborted => None,
        }
    }

    /// The HTTP status the server answered with, if the error is one (through retries too).
    pub fn http_status(&self) -> Option<u16> {
        match self {
            AiError::Http { status, .. } | AiError::UnexpectedBody { status, .. } => Some(*status),
            AiError::GaveUp { last, .. } | AiError::RetryDelayTooLong { last, .. } => {
                last.http_status()
            }
            AiError::NoApiKey { .. }
            | AiError::UnknownApi { .. }
            | AiError::Request(_)
            | AiError::Transport(_)
            | AiError::IdleTimeout(_)
            | AiError::Provider(_)
            | AiError::Decode(_)
            | AiError::UnhandledStopReason(_)
            | AiError::Unknown
            | AiError::Aborted => None,
        }
    }

    /// Whether the error says the prompt did not fit the model's context window (pi spec §1.10).
    pub fn is_context_overflow(&self) -> bool {
        match self {
            AiError::Http { .. } | AiError::Provider(_) => message_is_overflow(&self.to_string()),
            AiError::GaveUp { last, .. } | AiError::RetryDelayTooLong { last, .. } => {
                last.is_context_overflow()
            }
            AiError::NoApiKey { .. }
            | AiError::UnexpectedBody { .. }
            | AiError::UnknownApi { .. }
            | AiError::Request(_)
            | AiError::Transport(_)
            | AiError::IdleTimeout(_)
            | AiError::Decode(_)
            | AiError::UnhandledStopReason(_)
            | AiError::Unknown
            | AiError::Aborted => false,
        }
    }
}

/// Provider texts that mean "try again later".
fn text_is_transient(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    [
        "overloaded",
        "rate limit",
        "rate_limit",
        "service unavailable",
        "service_unavailable",
        "resource_exhausted",
        "resource exhausted",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

impl From<crate::sse::FrameTooLarge> for AiError {
    fn from(e: crate::sse::FrameTooLarge) -> Self {
        AiError::Decode(e.to_string())
    }
}

/// How many bytes of an unexpected body an [`AiError::UnexpectedBody`] quotes.
pub const BODY_PREVIEW_BYTES: usize = 200;

/// The delay a response asks for: `retry-after-ms` (milliseconds) wins over `retry-after`, which
/// is delay seconds (possibly fractional) or an HTTP-date (RFC 9110 §10.2.3; a date in the past
/// means "now"). Unparseable or negative values are ignored.
pub fn parse_retry_after(
    seconds: Option<&str>,
    millis: Option<&str>,
    now: SystemTime,
) -> Option<Duration> {
    if let Some(ms) = millis.and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = seconds?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The suffix [`AiError::GaveUp`] ends with, without its count.
const GAVE_UP_MARK: &str = " (gave up after ";

/// Whether an assistant error message is final at the client: the client already retried it
/// ([`AiError::GaveUp`]) or the server asked for a delay above the cap
/// ([`AiError::RetryDelayTooLong`]). A session-level retry of such a message would multiply the
/// requests per failure, so the session leaves it alone.
pub fn client_gave_up(error_message: &str) -> bool {
    let gave_up = error_message
        .rfind(GAVE_UP_MARK)
        .map(|at| &error_message[at + GAVE_UP_MARK.len()..])
        .and_then(|rest| rest.strip_suffix(" requests)"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    gave_up
        || (error_message.starts_with("Server requested ")
            && error_message.contains("s retry delay (max: "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, body: &str) -> AiError {
        AiError::Http {
            status,
            body: body.into(),
            retry_after: None,
        }
    }

    #[test]
    fn classifies_retryable() {
        assert!(http(429, "{}").is_retryable());
        assert!(http(503, "").is_retryable());
        assert!(http(529, "overloaded").is_retryable());
        assert!(!http(400, "bad request").is_retryable());
        assert!(!http(401, "unauthorized").is_retryable());
        assert!(AiError::Transport("connection reset".into()).is_retryable());
        assert!(AiError::Provider("Overloaded".into()).is_retryable());
        assert!(!AiError::Provider("invalid tool schema".into()).is_retryable());
        assert!(!AiError::Aborted.is_retryable());
        assert!(!AiError::Decode("x".into()).is_retryable());
    }

    #[test]
    fn retry_after_parsing() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let parse = |s, ms| parse_retry_after(s, ms, now);
        assert_eq!(parse(Some("2"), None), Some(Duration::from_secs(2)));
        assert_eq!(parse(Some("0.5"), None), Some(Duration::from_millis(500)));
        assert_eq!(
            parse(Some("9"), Some("120")),
            Some(Duration::from_millis(120))
        );
        assert_eq!(parse(Some("Wed, 21 Oct"), None), None);
        assert_eq!(parse(Some("-1"), None), None);
        // 1_445_412_480 is Wed, 21 Oct 2015 07:28:00 GMT.
        assert_eq!(
            parse(Some("Wed, 21 Oct 2015 07:28:30 GMT"), None),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse(Some("Wed, 21 Oct 2015 07:00:00 GMT"), None),
            Some(Duration::ZERO)
        );
        let e = AiError::Http {
            status: 429,
            body: String::new(),
            retry_after: Some(Duration::from_secs(3)),
        };
        assert_eq!(e.retry_after(), Some(Duration::from_secs(3)));
    }

    #[test]
    fn messages_match_pi() {
        assert_eq!(
            AiError::NoApiKey {
                provider: "openai".into()
            }
            .to_string(),
            "No API key for provider: openai"
        );
        assert_eq!(
            http(400, r#"{"type":"error"}"#).to_string(),
            r#"400 {"type":"error"}"#
        );
        assert!(http(400, "prompt is too long: 210000 tokens").is_context_overflow());
        assert!(!http(400, "bad").is_context_overflow());
    }

    #[test]
    fn gave_up_marks_are_recognised() {
        let last = Box::new(http(429, "rate limited"));
        let gave_up = AiError::GaveUp {
            requests: 3,
            last: last.clone(),
        }
        .to_string();
        assert_eq!(gave_up, "429 rate limited (gave up after 3 requests)");
        assert!(client_gave_up(&gave_up));
        let capped = AiError::RetryDelayTooLong {
            requested: Duration::from_secs(3600),
            max: Duration::from_secs(60),
            last,
        }
        .to_string();
        assert_eq!(
            capped,
            "Server requested 3600s retry delay (max: 60s). 429 rate limited"
        );
        assert!(client_gave_up(&capped));
        assert!(!client_gave_up("429 rate limited"));
        assert!(!client_gave_up("x (gave up after many requests)"));
    }
}
