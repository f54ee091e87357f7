//! Typed errors of the embedding layer. So far: [`FailoverError`] (spec §1.6), the error a run
//! raises when another auth profile or model should be tried, and the resolution of a failover
//! reason from any error chain (design §3 C10).

use std::error::Error as StdError;

use filo_ai::AiError;

use crate::classify::{
    FailoverReason, classify_failover_reason, is_auth_permanent_error_message,
    is_billing_error_message, is_context_overflow_error, is_overloaded_error_message,
    is_rate_limit_error_message,
};

/// A model call failed in a way another profile or model may fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FailoverError {
    pub message: String,
    pub reason: FailoverReason,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub profile_id: Option<String>,
    /// The HTTP status (given, or [`FailoverReason::status`]).
    pub status: Option<u16>,
    pub code: Option<String>,
    /// The provider's raw error text, when the message is a rewrite of it.
    pub raw: Option<String>,
    pub session_id: Option<String>,
    pub lane: Option<String>,
}

impl FailoverError {
    /// An error with `reason` and `message`; the status is the reason's (spec §1.5
    /// `resolveFailoverStatus`).
    pub fn new(reason: FailoverReason, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            reason,
            provider: None,
            model: None,
            profile_id: None,
            status: reason.status(),
            code: None,
            raw: None,
            session_id: None,
            lane: None,
        }
    }
}

/// How deep [`resolve_failover_reason`] follows `source()` (OpenClaw: 25, cycle-safe).
const MAX_CHAIN_DEPTH: usize = 25;

/// The failover reason of an error and its causes: the first of them that is a
/// [`FailoverError`], a classifiable [`AiError`], or whose text classifies.
pub fn resolve_failover_reason(error: &(dyn StdError + 'static)) -> Option<FailoverReason> {
    let mut current = Some(error);
    for _ in 0..MAX_CHAIN_DEPTH {
        let err = current?;
        if let Some(failover) = err.downcast_ref::<FailoverError>() {
            return Some(failover.reason);
        }
        let reason = match err.downcast_ref::<AiError>() {
            Some(ai) => classify_ai_error(ai),
            None => classify_failover_reason(&err.to_string()),
        };
        if reason.is_some() {
            return reason;
        }
        current = err.source();
    }
    None
}

/// Classify filo-ai's typed error: its text first (it is what OpenClaw classifies), then the
/// HTTP status when the text says nothing. An abort, a request filo could not build, an unknown
/// wire protocol or an undecodable frame is not a failover: another key cannot fix it.
pub fn classify_ai_error(error: &AiError) -> Option<FailoverReason> {
    match error {
        AiError::NoApiKey { .. } => Some(FailoverReason::Auth),
        AiError::Transport(_) | AiError::IdleTimeout(_) => Some(FailoverReason::Timeout),
        AiError::Http { status, body, .. } => classify_failover_reason(&error.to_string())
            .or_else(|| classify_failover_status(*status, body)),
        AiError::Provider(_) | AiError::UnhandledStopReason(_) => {
            classify_failover_reason(&error.to_string())
        }
        // The client's own retries ended: what decides is the last failure.
        AiError::GaveUp { last, .. } | AiError::RetryDelayTooLong { last, .. } => {
            classify_ai_error(last)
        }
        // A 200 whose body is an HTML page or not an event stream (a proxy, a captive portal):
        // like OpenClaw's HTML error pages, transient unless the text says more.
        AiError::UnexpectedBody { .. } => {
            classify_failover_reason(&error.to_string()).or(Some(FailoverReason::Timeout))
        }
        AiError::UnknownApi { .. }
        | AiError::Request(_)
        | AiError::Decode(_)
        | AiError::Unknown
        | AiError::Aborted => None,
    }
}

/// The status-code path of spec §7.5 (later trees): what an HTTP status says, refined by the
/// message where OpenClaw does.
pub fn classify_failover_status(status: u16, message: &str) -> Option<FailoverReason> {
    use FailoverReason::*;
    let from_message = || classify_failover_reason(message);
    match status {
        402 if is_rate_limit_error_message(message) => Some(RateLimit),
        402 => Some(Billing),
        429 => Some(RateLimit),
        401 | 403 if is_auth_permanent_error_message(message) => Some(AuthPermanent),
        401 | 403 if is_billing_error_message(message) => Some(Billing),
        401 | 403 => Some(Auth),
        408 => Some(Timeout),
        410 => from_message()
            .filter(|r| matches!(r, Billing | Auth))
            .or(Some(Timeout)),
        404 if is_context_overflow_error(message) => None,
        404 => from_message()
            .filter(|r| matches!(r, Billing | Auth))
            .or(Some(ModelNotFound)),
        499 | 503 if is_overloaded_error_message(message) => Some(Overloaded),
        499 | 503 | 500 | 502 | 504 => Some(Timeout),
        529 => Some(Overloaded),
        400 | 422 if message.trim().is_empty() => None,
        400 | 422 => from_message().or(Some(Format)),
        _ => from_message(),
    }
}

/// Provider error codes (spec §7.5): rate limits, deactivated workspaces, overload, network
/// failures.
pub fn classify_error_code(code: &str) -> Option<FailoverReason> {
    let reason = match code.trim().to_ascii_uppercase().as_str() {
        "RESOURCE_EXHAUSTED"
        | "RATE_LIMIT"
        | "RATE_LIMITED"
        | "RATE_LIMIT_EXCEEDED"
        | "TOO_MANY_REQUESTS"
        | "THROTTLED"
        | "THROTTLING"
        | "THROTTLINGEXCEPTION"
        | "THROTTLING_EXCEPTION" => FailoverReason::RateLimit,
        "DEACTIVATED_WORKSPACE" => FailoverReason::AuthPermanent,
        "OVERLOADED" | "OVERLOADED_ERROR" => FailoverReason::Overloaded,
        "ETIMEDOUT" | "ESOCKETTIMEDOUT" | "ECONNRESET" | "ECONNABORTED" | "ECONNREFUSED"
        | "ENETUNREACH" | "EHOSTUNREACH" | "EHOSTDOWN" | "ENETRESET" | "EPIPE" | "EAI_AGAIN" => {
            FailoverReason::Timeout
        }
        _ => return None,
    };
    Some(reason)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("turn failed")]
    struct Wrapper(#[source] Box<dyn StdError + Send + Sync>);

    #[test]
    fn failover_error_displays_its_message_and_carries_the_reason_status() {
        let err = FailoverError::new(FailoverReason::RateLimit, "LLM request rate limited.");
        assert_eq!(err.to_string(), "LLM request rate limited.");
        assert_eq!(err.status, Some(429));
        assert!(err.source().is_none());
    }

    #[test]
    fn reasons_resolve_through_source_chains() {
        let inner = FailoverError::new(FailoverReason::Billing, "no credits");
        let wrapped = Wrapper(Box::new(Wrapper(Box::new(inner))));
        assert_eq!(
            resolve_failover_reason(&wrapped),
            Some(FailoverReason::Billing)
        );
        let ai = Wrapper(Box::new(AiError::IdleTimeout(Duration::from_secs(60))));
        assert_eq!(resolve_failover_reason(&ai), Some(FailoverReason::Timeout));
        let plain = Wrapper(Box::new(std::io::Error::other("disk exploded")));
        assert_eq!(resolve_failover_reason(&plain), None);
    }

    #[test]
    fn chains_deeper_than_25_are_not_followed() {
        let mut err: Box<dyn StdError + Send + Sync> =
            Box::new(FailoverError::new(FailoverReason::Auth, "bad key"));
        for _ in 0..30 {
            err = Box::new(Wrapper(err));
        }
        assert_eq!(resolve_failover_reason(err.as_ref()), None);
    }

    #[test]
    fn ai_errors_classify_by_text_then_status() {
        let http = |status: u16, body: &str| AiError::Http {
            status,
            body: body.into(),
            retry_after: None,
        };
        let cases = [
            (http(429, "slow down"), Some(FailoverReason::RateLimit)),
            (http(401, "nope"), Some(FailoverReason::Auth)),
            (http(402, "{}"), Some(FailoverReason::Billing)),
            (
                http(404, "no such thing"),
                Some(FailoverReason::ModelNotFound),
            ),
            (http(400, "bad"), Some(FailoverReason::Format)),
            (http(503, "down"), Some(FailoverReason::Timeout)),
            (
                AiError::NoApiKey {
                    provider: "openai".into(),
                },
                Some(FailoverReason::Auth),
            ),
            (
                AiError::Transport("reset".into()),
                Some(FailoverReason::Timeout),
            ),
            (AiError::Request("bad header".into()), None),
            (AiError::Aborted, None),
            (AiError::Unknown, None),
            (
                AiError::UnhandledStopReason("abort".into()),
                Some(FailoverReason::Timeout),
            ),
            (
                AiError::Provider("overloaded_error".into()),
                Some(FailoverReason::RateLimit),
            ),
            (
                AiError::GaveUp {
                    requests: 3,
                    last: Box::new(http(401, "nope")),
                },
                Some(FailoverReason::Auth),
            ),
            (
                AiError::RetryDelayTooLong {
                    requested: std::time::Duration::from_secs(3600),
                    max: std::time::Duration::from_secs(60),
                    last: Box::new(http(429, "slow down")),
                },
                Some(FailoverReason::RateLimit),
            ),
            (
                AiError::UnexpectedBody {
                    status: 200,
                    content_type: "text/html".into(),
                    start: "<html><body>Sign in to the network</body></html>".into(),
                },
                Some(FailoverReason::Timeout),
            ),
        ];
        for (err, want) in cases {
            assert_eq!(classify_ai_error(&err), want, "{err:?}");
        }
    }

    #[test]
    fn status_path() {
        use FailoverReason::*;
        let cases: &[(u16, &str, Option<FailoverReason>)] = &[
            (402, "rate limit reached", Some(RateLimit)),
            (402, "pay up", Some(Billing)),
            (403, "API key revoked", Some(AuthPermanent)),
            (403, "insufficient credits", Some(Billing)),
            (410, "gone", Some(Timeout)),
            (404, "prompt is too long", None),
            (503, "service is overloaded", Some(Overloaded)),
            (529, "", Some(Overloaded)),
            (422, "", None),
            (422, "string should match pattern", Some(Format)),
            (418, "teapot", None),
        ];
        for (status, message, want) in cases {
            assert_eq!(
                classify_failover_status(*status, message),
                *want,
                "{status} {message}"
            );
        }
    }

    #[test]
    fn error_codes() {
        assert_eq!(
            classify_error_code("resource_exhausted"),
            Some(FailoverReason::RateLimit)
        );
        assert_eq!(
            classify_error_code("ECONNRESET"),
            Some(FailoverReason::Timeout)
        );
        assert_eq!(
            classify_error_code("OVERLOADED_ERROR"),
            Some(FailoverReason::Overloaded)
        );
        assert_eq!(
            classify_error_code("DEACTIVATED_WORKSPACE"),
            Some(FailoverReason::AuthPermanent)
        );
        assert_eq!(classify_error_code("E_SOMETHING"), None);
    }
}

/// Why [`crate::Embedder::run`] returned no result (design §4.3). Errors the user should see as
/// a reply (overflow, timeouts, rate limits without fallbacks) are payloads, not these.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Another auth profile or model should be tried (the fallback chain catches it).
    #[error(transparent)]
    Failover(Box<FailoverError>),
    /// The caller's abort token ended the run while it was waiting to back off.
    #[error("run aborted")]
    Aborted,
    /// The run was aborted while still queued in its lane.
    #[error("run aborted while queued in lane \"{lane}\"")]
    LaneAborted { lane: String },
    /// The embedder is shutting down and accepts no new runs.
    #[error("the embedder is draining; new runs are not accepted")]
    Draining,
    /// The queued run was removed by a lane clear.
    #[error("lane \"{lane}\" was cleared")]
    LaneCleared { lane: String },
    /// The run task itself failed (panicked or was dropped).
    #[error("{0}")]
    Lane(String),
    #[error("configuration: {0}")]
    Config(String),
    #[error("session: {0}")]
    Session(String),
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Core(#[from] filo_core::CoreError),
    /// The reply sink failed (panicked or timed out); the turn itself was saved.
    #[error("reply sink: {0}")]
    Sink(#[from] crate::subscriber::dispatch::DispatchError),
    /// Another process kept the session file locked for the whole wait (G2).
    #[error(transparent)]
    Locked(#[from] filo_session::LockError),
    /// Every candidate of the fallback chain failed (C12).
    #[error("{message}")]
    AllModelsFailed {
        message: String,
        attempts: Vec<crate::failover::FallbackAttempt>,
    },
}

impl RunError {
    /// Whether the run ended because it was aborted.
    pub fn is_abort(&self) -> bool {
        match self {
            RunError::Aborted | RunError::LaneAborted { .. } | RunError::LaneCleared { .. } => true,
            RunError::Failover(_)
            | RunError::Draining
            | RunError::Lane(_)
            | RunError::Config(_)
            | RunError::Session(_)
            | RunError::Io { .. }
            | RunError::Core(_)
            | RunError::Sink(_)
            | RunError::Locked(_)
            | RunError::AllModelsFailed { .. } => false,
        }
    }

    /// The failover reason, when this is a failover error.
    pub fn failover_reason(&self) -> Option<FailoverReason> {
        match self {
            RunError::Failover(f) => Some(f.reason),
            RunError::Aborted
            | RunError::LaneAborted { .. }
            | RunError::LaneCleared { .. }
            | RunError::Draining
            | RunError::Lane(_)
            | RunError::Config(_)
            | RunError::Session(_)
            | RunError::Io { .. }
            | RunError::Core(_)
            | RunError::Sink(_)
            | RunError::Locked(_)
            | RunError::AllModelsFailed { .. } => None,
        }
    }
}

impl From<FailoverError> for RunError {
    fn from(e: FailoverError) -> Self {
        RunError::Failover(Box::new(e))
    }
}

impl From<crate::lanes::LaneError> for RunError {
    fn from(e: crate::lanes::LaneError) -> Self {
        use crate::lanes::LaneError;
        match e {
            LaneError::Draining => RunError::Draining,
            LaneError::LaneAborted { lane } => RunError::LaneAborted { lane },
            LaneError::Cleared { lane } => RunError::LaneCleared { lane },
            e @ (LaneError::Dropped { .. } | LaneError::Panicked { .. }) => {
                RunError::Lane(e.to_string())
            }
        }
    }
}
