//! The provider layer's typed errors and their classification (retryable, retry-after, context
//! overflow). Every classification is an exhaustive `match`, so a new variant forces a decision.

use std::time::Duration;

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
            AiError::NoApiKey { .. }
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

/// Parse a `retry-after` header value: delay seconds (possibly fractional) or `retry-after-ms`.
pub fn parse_retry_after(seconds: Option<&str>, millis: Option<&str>) -> Option<Duration> {
    if let Some(ms) = millis.and_then(|v| v.trim().parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let secs = seconds?.trim().parse::<f64>().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
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
        assert_eq!(
            parse_retry_after(Some("2"), None),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            parse_retry_after(Some("0.5"), None),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_retry_after(Some("9"), Some("120")),
            Some(Duration::from_millis(120))
        );
        assert_eq!(parse_retry_after(Some("Wed, 21 Oct"), None), None);
        assert_eq!(parse_retry_after(Some("-1"), None), None);
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
}
