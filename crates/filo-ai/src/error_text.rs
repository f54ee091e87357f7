//! The text an assistant message carries for a failed call, worded the way pi 0.73's provider
//! SDKs word it, per wire API, for a non-2xx answer:
//!
//! - OpenAI (Chat Completions, Responses): `<status> <error.message>`; a JSON body without an
//!   `error` object gives `<status> status code (no body)`, a body that is not JSON
//!   `<status> <body>`.
//! - Anthropic: `<status> <message>` when the body has a top-level `message`, otherwise
//!   `<status> <the body as compact JSON>`; a body that is not JSON `<status> <body>`.
//! - Google: the body as compact JSON, without the status; a body that is not JSON is wrapped
//!   as `{"error":{"message":…,"code":…,"status":…}}`.
//! - Bedrock: `<exception>: <message>` (`Throttling error: …`), the exception named by the
//!   `x-amzn-errortype` header or the body's `__type`/`code` (`Unknown` when neither).
//!
//! An HTML error page keeps filo's own summary (its start, not the whole markup).

use serde_json::Value;

use crate::codec::WireApi;
use crate::error::AiError;

/// What the driver stores for an empty body.
const NO_BODY: &str = "status code (no body)";

impl AiError {
    /// This error's text for an assistant message of a call made over `api` (pi's wording for
    /// HTTP answers; [`Display`](std::fmt::Display) otherwise).
    pub fn message_for(&self, api: WireApi) -> String {
        match self {
            AiError::Http { status, body, .. } => http_error_text(api, *status, body),
            AiError::GaveUp { requests, last } => {
                format!(
                    "{} (gave up after {requests} requests)",
                    last.message_for(api)
                )
            }
            AiError::RetryDelayTooLong {
                requested,
                max,
                last,
            } => format!(
                "Server requested {}s retry delay (max: {}s). {}",
                requested.as_secs_f64().ceil(),
                max.as_secs_f64().ceil(),
                last.message_for(api)
            ),
            AiError::NoApiKey { .. }
            | AiError::UnknownApi { .. }
            | AiError::Request(_)
            | AiError::Transport(_)
            | AiError::IdleTimeout(_)
            | AiError::Provider(_)
            | AiError::UnexpectedBody { .. }
            | AiError::Decode(_)
            | AiError::UnhandledStopReason(_)
            | AiError::Unknown
            | AiError::Aborted => self.to_string(),
        }
    }
}

/// The SDKs' `message` of an error object: a string as it is, anything else as JSON; `None`
/// when absent or empty (JavaScript's falsy values).
fn sdk_message(error: &Value) -> Option<String> {
    match error.get("message")? {
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s.clone()),
        Value::Null | Value::Bool(false) => None,
        Value::Number(n) if n.as_f64() == Some(0.0) => None,
        other => Some(other.to_string()),
    }
}

/// pi's text for an HTTP error answer over `api` (see the module docs). `body` is the text the
/// driver kept: trimmed, [`NO_BODY`] when empty, a summary for an HTML page.
pub(crate) fn http_error_text(api: WireApi, status: u16, body: &str) -> String {
    let json = serde_json::from_str::<Value>(body).ok();
    if body.starts_with("(HTML page,") && json.is_none() {
        return format!("{status} {body}");
    }
    let empty = body == NO_BODY;
    match api {
        // Azure goes through the OpenAI SDK, so it words errors the same way.
        WireApi::OpenAiCompletions | WireApi::OpenAiResponses | WireApi::AzureOpenAiResponses => {
            let text = match &json {
                Some(v) => match v.get("error") {
                    Some(Value::Null) | None => None,
                    Some(e) => sdk_message(e).or_else(|| Some(e.to_string())),
                },
                None if empty => None,
                None => Some(body.to_string()),
            };
            format!("{status} {}", text.as_deref().unwrap_or(NO_BODY))
        }
        WireApi::AnthropicMessages => {
            let text = match &json {
                Some(Value::Null) => None,
                Some(v) => sdk_message(v).or_else(|| Some(v.to_string())),
                None if empty => None,
                None => Some(body.to_string()),
            };
            format!("{status} {}", text.as_deref().unwrap_or(NO_BODY))
        }
        // pi's Mistral provider: the status and the body (4,000 characters at most).
        WireApi::MistralConversations => {
            let text = if empty {
                String::new()
            } else {
                body.to_string()
            };
            let shown: String = text.chars().take(4000).collect();
            let cut = text.chars().count().saturating_sub(4000);
            if cut > 0 {
                format!("Mistral API error ({status}): {shown}... [truncated {cut} chars]")
            } else {
                format!("Mistral API error ({status}): {shown}")
            }
        }
        // pi's Bedrock provider: the SDK exception's name as pi names it, and its message.
        WireApi::BedrockConverseStream => crate::bedrock::error_text(body),
        // Vertex goes through the same Google SDK as the Gemini API.
        WireApi::GoogleGenerativeAi | WireApi::GoogleVertex => match json {
            Some(v) => v.to_string(),
            None => {
                let reason = reqwest::StatusCode::from_u16(status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("");
                let message = if empty { "" } else { body };
                serde_json::json!({"error": {"message": message, "code": status, "status": reason}})
                    .to_string()
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_wording() {
        let t = |body: &str| http_error_text(WireApi::OpenAiCompletions, 400, body);
        assert_eq!(
            t(r#"{"error":{"message":"bad value","type":"x"}}"#),
            "400 bad value"
        );
        assert_eq!(t(r#"{"error":{"message":{"a":1}}}"#), r#"400 {"a":1}"#);
        assert_eq!(t(r#"{"error":"plain"}"#), r#"400 "plain""#);
        assert_eq!(t(r#"{"detail":"x"}"#), "400 status code (no body)");
        assert_eq!(t("not json"), "400 not json");
        assert_eq!(t(NO_BODY), "400 status code (no body)");
    }

    #[test]
    fn anthropic_and_google_wording() {
        let a = |body: &str| http_error_text(WireApi::AnthropicMessages, 400, body);
        assert_eq!(
            a(r#"{"type": "error", "error": {"type": "t", "message": "m"}}"#),
            r#"400 {"type":"error","error":{"type":"t","message":"m"}}"#
        );
        assert_eq!(a(r#"{"message":"proxy says no"}"#), "400 proxy says no");
        assert_eq!(a("nope"), "400 nope");
        let g = |body: &str| http_error_text(WireApi::GoogleGenerativeAi, 404, body);
        assert_eq!(
            g(r#"{"error": {"code": 404}}"#),
            r#"{"error":{"code":404}}"#
        );
        assert_eq!(
            g("gone"),
            r#"{"error":{"message":"gone","code":404,"status":"Not Found"}}"#
        );
    }

    #[test]
    fn html_pages_keep_filos_summary_and_wrappers_keep_their_text() {
        let html = "(HTML page, 10 bytes, content-type `text/html`) <html>";
        assert_eq!(
            http_error_text(WireApi::OpenAiResponses, 502, html),
            format!("502 {html}")
        );
        let last = AiError::Http {
            status: 429,
            body: r#"{"error":{"message":"slow down"}}"#.into(),
            retry_after: None,
        };
        let gave_up = AiError::GaveUp {
            requests: 3,
            last: Box::new(last),
        };
        assert_eq!(
            gave_up.message_for(WireApi::OpenAiCompletions),
            "429 slow down (gave up after 3 requests)"
        );
    }
}
