//! Vectors of design §3 C10/C11/C13 and spec §7 (OpenClaw's `errors.test.ts`,
//! `*.iscontextoverflowerror.test.ts`, `*.classifyfailoverreason.test.ts`, `thinking.test.ts`,
//! `*.formatassistanterrortext.test.ts`), plus filo's own error texts.

use filo_ai::{AssistantMessage, StopReason};

use super::copy::{self, ErrorCopyContext, format_assistant_error_text, format_error_text};
use super::*;

#[test]
fn every_pattern_compiles() {
    for family in patterns::all_families() {
        assert!(family.compiles());
    }
    let mut all: Vec<&Pattern> = patterns::all_patterns();
    all.extend(overflow::all_patterns());
    all.extend(copy::all_patterns());
    all.extend(thinking::all_patterns());
    for p in all {
        assert!(p.compiles());
    }
}

const OVERFLOW_TRUE: &[&str] = &[
    "request_too_large",
    "Request exceeds the maximum size",
    "context length exceeded",
    "Maximum context length",
    "prompt is too long: 208423 tokens > 200000 maximum",
    "Context overflow: Summarization failed",
    "413 Request Entity Too Large",
    r#"{"type":"error","error":{"type":"invalid_request_error","message":"Request size exceeds model context window"}}"#,
    "The request size exceeds model context window limit",
    "input length and max_tokens exceed context limit: 156321 + 48384 > 200000",
    "exceed context limit: 50000 + 10000 > 50000",
    "maximum context length is 200000 tokens",
    "413 too large",
    "context overflow: something",
    // beyond the quoted vectors: provider-specific and Chinese texts (spec §7.2)
    "ValidationException: Input is too long for requested model",
    "ollama: prompt exceeds context length of 8192",
    "上下文过长，请压缩上下文",
    "error, status code: 400, message: Invalid request: Your request exceeded model token limit: 262144 (requested: 291351)",
];

const OVERFLOW_FALSE: &[&str] = &[
    "rate limit exceeded",
    "request size exceeds upload limit",
    "model not found",
    "authentication failed",
    "invalid api key",
    "Let's investigate the context overflow bug",
    "The mystery context overflow errors are strange",
    "We're debugging context overflow issues",
    "Something is causing context overflow messages",
    "",
    // beyond: TPM and reasoning-constraint exclusions
    "Request too large: tokens per minute limit, prompt is too long",
    "400 Reasoning is mandatory for this endpoint and cannot be disabled.",
];

#[test]
fn context_overflow_vectors() {
    for text in OVERFLOW_TRUE {
        assert!(
            is_context_overflow_error(text),
            "should be overflow: {text:?}"
        );
    }
    for text in OVERFLOW_FALSE {
        assert!(
            !is_context_overflow_error(text),
            "should not be overflow: {text:?}"
        );
    }
}

#[test]
fn pi_overflow_texts_count_too() {
    // filo_ai's own pattern list (pi spec §1.10) is OR'ed in.
    assert!(is_context_overflow_error(
        "This model's input exceeds the context window"
    ));
    assert!(is_context_overflow_error("400 (no body)"));
}

#[test]
fn likely_overflow_vectors() {
    let cases: &[(&str, bool)] = &[
        ("context window too large", true),
        ("input exceeds context limit", true),
        ("request reached organization rate limit", false),
        // beyond the quoted vectors
        ("prompt is too long: 208423 tokens > 200000 maximum", true),
        ("context window is too small, minimum is 16000", false),
        ("insufficient credits for this request", false),
        ("", false),
    ];
    for (text, want) in cases {
        assert_eq!(is_likely_context_overflow_error(text), *want, "{text:?}");
    }
}

#[test]
fn compaction_failure_vectors() {
    let cases: &[(&str, bool)] = &[
        ("summarization failed: context overflow", true),
        ("auto-compaction: context overflow", true),
        ("compaction context overflow", true),
        ("invalid api key", false),
        ("compaction completed", false),
        (
            "compaction failed: prompt is too long: 300000 tokens > 200000 maximum",
            true,
        ),
        ("", false),
    ];
    for (text, want) in cases {
        assert_eq!(is_compaction_failure_error(text), *want, "{text:?}");
    }
}

#[test]
fn observed_overflow_token_count() {
    let cases: &[(&str, Option<u64>)] = &[
        (
            "prompt is too long: 208423 tokens > 200000 maximum",
            Some(208_423),
        ),
        (
            "prompt is too long: 208,423 tokens > 200,000 maximum",
            Some(208_423),
        ),
        ("you requested 150000 tokens", Some(150_000)),
        ("this resulted in 1,234 tokens", Some(1_234)),
        ("requested 0 tokens", None),
        ("context length exceeded", None),
    ];
    for (text, want) in cases {
        assert_eq!(
            extract_observed_overflow_token_count(text),
            *want,
            "{text:?}"
        );
    }
}

#[test]
fn classify_baseline_vectors() {
    use FailoverReason::*;
    let cases: &[(&str, Option<FailoverReason>)] = &[
        ("invalid api key", Some(Auth)),
        ("no credentials found", Some(Auth)),
        ("no api key found", Some(Auth)),
        ("429 too many requests", Some(RateLimit)),
        ("resource has been exhausted", Some(RateLimit)),
        ("rate limit exceeded", Some(RateLimit)),
        (
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            Some(RateLimit),
        ),
        ("service is overloaded", Some(RateLimit)),
        ("invalid request format", Some(Format)),
        ("string should match pattern", Some(Format)),
        ("credit balance too low", Some(Billing)),
        ("payment required", Some(Billing)),
        ("deadline exceeded", Some(Timeout)),
        ("request timed out", Some(Timeout)),
        ("500 internal server error", Some(Timeout)),
        ("502 bad gateway", Some(Timeout)),
        ("503 service unavailable", Some(Timeout)),
        (
            "You have hit your ChatGPT usage limit (plus plan)",
            Some(RateLimit),
        ),
        ("bad request", None),
        ("hello world", None),
        ("file does not exist", None),
        (
            "messages.84.content.1.image.source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels",
            None,
        ),
        ("image exceeds 5 MB maximum", None),
        // filo's own texts (design G9)
        (
            "Stream idle timeout: no data received for 60000 ms",
            Some(Timeout),
        ),
        ("Connection error: connection refused", Some(Timeout)),
        ("No API key for provider: openai", Some(Auth)),
        (
            r#"429 {"error":{"message":"Rate limit reached"}}"#,
            Some(RateLimit),
        ),
        ("Invalid request: tool schema could not be encoded", None),
        // beyond the quoted vectors
        ("521 Origin Down <html>", Some(Timeout)),
        ("HTTP 402 Payment Required", Some(Billing)),
        (
            "tool call id was abc but must be alphanumeric",
            Some(Format),
        ),
        ("connect ECONNREFUSED 127.0.0.1:443", Some(Timeout)),
        ("401 unauthorized", Some(Auth)),
    ];
    for (text, want) in cases {
        assert_eq!(classify_failover_reason(text), *want, "{text:?}");
        assert_eq!(is_failover_error_message(text), want.is_some(), "{text:?}");
    }
}

#[test]
fn helper_vectors() {
    for t in [
        "429 Too Many Requests",
        "exceeded your current quota",
        "quota exceeded",
    ] {
        assert!(is_rate_limit_error_message(t), "{t}");
    }
    for t in ["invalid api key", ""] {
        assert!(!is_rate_limit_error_message(t), "{t}");
    }
    for t in [
        "request timed out",
        "deadline exceeded",
        "context deadline exceeded",
        "stop reason: abort",
        "unhandled stop reason: abort",
    ] {
        assert!(is_timeout_error_message(t), "{t}");
    }
    for t in [
        "payment required",
        "insufficient credits",
        "credit balance low",
        "402 payment required",
        r#"{"code": 402}"#,
    ] {
        assert!(is_billing_error_message(t), "{t}");
    }
    assert!(!is_billing_error_message("rate limit exceeded"));
    for t in [
        "authentication failed",
        "unauthorized",
        "401 unauthorized",
        "403 forbidden",
        "token has expired",
    ] {
        assert!(is_auth_error_message(t), "{t}");
    }
    for t in ["overloaded_error", "service is overloaded"] {
        assert!(is_overloaded_error_message(t), "{t}");
    }
    assert!(is_auth_permanent_error_message("API key revoked"));
    assert!(!is_auth_permanent_error_message("unauthorized"));
    assert!(is_format_error_message(
        "messages.1.content.1.tool_use.id: bad"
    ));
}

#[test]
fn billing_long_texts_need_a_hard_402_marker() {
    let filler = "x".repeat(600);
    assert!(!is_billing_error_message(&format!(
        "payment required {filler}"
    )));
    assert!(is_billing_error_message(&format!("HTTP 402 {filler}")));
    // the billing head rule: starts like a billing message and names a billing word
    assert!(is_billing_error_message("Billing error: please upgrade"));
    assert!(!is_billing_error_message("Billing: hello"));
}

#[test]
fn image_error_parsing() {
    assert_eq!(
        parse_image_dimension_error(
            "image dimensions exceed max allowed size for many-image requests: 4096 pixels (messages.1.content.2.image)"
        ),
        Some(ImageDimensionError {
            max_dimension_px: Some(4096),
            message_index: Some(1),
            content_index: Some(2),
        })
    );
    assert_eq!(parse_image_dimension_error("bad request"), None);
    assert_eq!(
        parse_image_size_error("image exceeds 10.5 mb"),
        Some(ImageSizeError { max_mb: Some(10.5) })
    );
    assert_eq!(
        parse_image_size_error("Image exceeds the MB limit"),
        Some(ImageSizeError { max_mb: None })
    );
    assert_eq!(parse_image_size_error("image too big"), None);
}

#[test]
fn transient_and_html_pages() {
    assert!(is_transient_http_error("521 origin down"));
    assert!(!is_transient_http_error("400 bad request"));
    assert!(is_transient_http_error("HTTP 529 overloaded"));
    assert!(is_cloudflare_or_html_error_page("521 Origin Down <html>"));
    assert!(!is_cloudflare_or_html_error_page(
        "500 Internal Server Error"
    ));
    assert!(is_cloudflare_or_html_error_page(
        "502 <!DOCTYPE html><html><body>bad gateway</body></html>"
    ));
    assert!(!is_cloudflare_or_html_error_page(
        "429 <!DOCTYPE html><html><body>quota</body></html>"
    ));
}

#[test]
fn reason_names_and_statuses_cover_every_variant() {
    use FailoverReason::*;
    let all = [
        (Auth, "auth", Some(401)),
        (Format, "format", Some(400)),
        (RateLimit, "rate_limit", Some(429)),
        (Billing, "billing", Some(402)),
        (Timeout, "timeout", Some(408)),
        (ModelNotFound, "model_not_found", Some(404)),
        (Unknown, "unknown", None),
        (Overloaded, "overloaded", Some(503)),
        (AuthPermanent, "auth_permanent", Some(403)),
        (SessionExpired, "session_expired", Some(410)),
        (ServerError, "server_error", Some(500)),
        (NoErrorDetails, "no_error_details", None),
        (EmptyResponse, "empty_response", None),
        (Unclassified, "unclassified", None),
    ];
    for (reason, name, status) in all {
        assert_eq!(reason.as_str(), name);
        assert_eq!(reason.to_string(), name);
        assert_eq!(reason.status(), status);
    }
}

fn failed(error: &str) -> AssistantMessage {
    AssistantMessage {
        content: Vec::new(),
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "test-model".into(),
        usage: Default::default(),
        stop_reason: StopReason::Error,
        timestamp: 0,
        error_message: Some(error.into()),
        error_status: None,
        response_id: None,
    }
}

#[test]
fn copy_vectors() {
    let ctx = ErrorCopyContext::default();
    let cases: &[(&str, &str)] = &[
        ("", copy::UNKNOWN_ERROR_COPY),
        ("   ", copy::UNKNOWN_ERROR_COPY),
        ("request_too_large", copy::CONTEXT_OVERFLOW_COPY),
        (
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"Request size exceeds model context window"}}"#,
            copy::CONTEXT_OVERFLOW_COPY,
        ),
        (
            r#"Ollama API error 400: {"StatusCode":400,"Status":"400 Bad Request","error":"prompt too long; exceeded max context length by 4 tokens"}"#,
            copy::CONTEXT_OVERFLOW_COPY,
        ),
        (
            "400 Reasoning is mandatory for this endpoint and cannot be disabled.",
            copy::REASONING_REQUIRED_COPY,
        ),
        (
            r#"messages: roles must alternate between "user" and "assistant""#,
            copy::ROLE_ORDERING_COPY,
        ),
        (
            r#"{"error":{"message":"400 Incorrect role information"}}"#,
            copy::ROLE_ORDERING_COPY,
        ),
        (
            "tool_use.input: Field required",
            copy::MISSING_TOOL_INPUT_COPY,
        ),
        (
            r#"{"type":"error","error":{"details":null,"type":"overloaded_error","message":"Overloaded"},"request_id":"req_123"}"#,
            copy::OVERLOADED_COPY,
        ),
        ("429 Too Many Requests", copy::RATE_LIMIT_COPY),
        (
            "request ended without sending any chunks",
            copy::TIMEOUT_COPY,
        ),
        (
            "Stream idle timeout: no data received for 60000 ms",
            copy::TIMEOUT_COPY,
        ),
        ("Connection error: connection refused", copy::TIMEOUT_COPY),
        (
            r#"{"type":"error","error":{"message":"Something exploded","type":"server_error"}}"#,
            "LLM error server_error: Something exploded",
        ),
        (
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"tools.0: \"name\" too long"}}"#,
            "LLM request rejected: tools.0: \"name\" too long",
        ),
        (
            "No API key for provider: openai",
            "No API key for provider: openai",
        ),
    ];
    for (raw, want) in cases {
        assert_eq!(format_error_text(raw, &ctx), *want, "{raw:?}");
    }
    let billing = copy::billing_copy(None);
    for raw in [
        "Your credit balance is too low to access the Anthropic API.",
        "HTTP 402 Payment Required",
        "insufficient credits",
    ] {
        assert_eq!(format_error_text(raw, &ctx), billing, "{raw:?}");
    }
    assert!(billing.contains("API provider"));
}

#[test]
fn billing_copy_names_the_provider() {
    let ctx = ErrorCopyContext {
        provider: Some("Anthropic"),
        ..Default::default()
    };
    let text = format_error_text("insufficient credits", &ctx);
    assert_eq!(text, copy::billing_copy(Some("Anthropic")));
    assert!(text.starts_with("⚠️ Anthropic returned a billing error — "));
    assert!(text.contains("Check your Anthropic billing dashboard"));
    assert!(!text.contains("API provider"));
}

#[test]
fn long_raw_errors_are_truncated_to_600_chars() {
    let raw = "é".repeat(700);
    let text = format_error_text(&raw, &ErrorCopyContext::default());
    assert_eq!(text.chars().count(), 601);
    assert!(text.ends_with('…'));
    let short = "something odd happened";
    assert_eq!(
        format_error_text(short, &ErrorCopyContext::default()),
        short
    );
}

#[test]
fn unknown_tool_gets_the_sandbox_explanation_only_when_blocked() {
    let explain =
        |tool: &str| (tool == "browser").then(|| format!("{tool} is blocked by sandbox policy"));
    let ctx = ErrorCopyContext {
        provider: None,
        sandbox_blocked_tool: Some(&explain),
    };
    assert_eq!(
        format_error_text("Unknown tool: browser", &ctx),
        "browser is blocked by sandbox policy"
    );
    assert_eq!(
        format_error_text(r#"tool "browser" not found"#, &ctx),
        "browser is blocked by sandbox policy"
    );
    assert_eq!(
        format_error_text("Unknown tool: read", &ctx),
        "Unknown tool: read"
    );
}

#[test]
fn assistant_error_text_needs_a_failure() {
    let ctx = ErrorCopyContext::default();
    let mut ok = failed("x");
    ok.stop_reason = StopReason::Stop;
    ok.error_message = None;
    assert_eq!(format_assistant_error_text(&ok, &ctx), None);
    let mut empty = failed("");
    empty.error_message = None;
    assert_eq!(
        format_assistant_error_text(&empty, &ctx).as_deref(),
        Some(copy::UNKNOWN_ERROR_COPY)
    );
    assert_eq!(
        format_assistant_error_text(&failed("request_too_large"), &ctx).as_deref(),
        Some(copy::CONTEXT_OVERFLOW_COPY)
    );
}

#[test]
fn assistant_error_predicates_need_an_error_stop() {
    let rate = failed("429 Too Many Requests");
    assert!(is_rate_limit_assistant_error(&rate));
    assert!(is_failover_assistant_error(&rate));
    assert!(!is_auth_assistant_error(&rate));
    assert!(is_auth_assistant_error(&failed("invalid api key")));
    assert!(is_billing_assistant_error(&failed("payment required")));
    assert!(!is_failover_assistant_error(&failed("hello world")));
    let mut stopped = failed("429 Too Many Requests");
    stopped.stop_reason = StopReason::Stop;
    assert!(!is_rate_limit_assistant_error(&stopped));
    assert!(!is_failover_assistant_error(&stopped));
}

#[test]
fn periodic_usage_limits_and_provider_reasons() {
    for t in [
        "You have reached your daily usage limit",
        "weekly limit exceeded",
        "Monthly/weekly limits reached",
    ] {
        assert!(is_periodic_usage_limit_error_message(t), "{t}");
    }
    assert!(!is_periodic_usage_limit_error_message(
        "daily standup notes"
    ));
    use FailoverReason::*;
    let cases: &[(&str, Option<FailoverReason>)] = &[
        ("400 INVALID_ARGUMENT: input is too long", Some(Format)),
        ("ThrottlingException: slow down", Some(RateLimit)),
        ("model is not ready, try later", Some(Overloaded)),
        ("model_is_deactivated", Some(ModelNotFound)),
        ("the concurrency limit has been reached", Some(RateLimit)),
        ("workers_ai quota hit", Some(RateLimit)),
        ("hello world", None),
    ];
    for (text, want) in cases {
        assert_eq!(provider_specific_failover_reason(text), *want, "{text}");
    }
}

#[test]
fn an_assistant_error_is_classified_by_its_text_then_its_http_status() {
    let mut m = filo_ai::AssistantMessage {
        content: Vec::new(),
        api: "openai-completions".into(),
        provider: "p".into(),
        model: "m".into(),
        usage: filo_ai::Usage::default(),
        stop_reason: filo_ai::StopReason::Error,
        timestamp: 0,
        error_message: Some("402 the upstream said no".into()),
        error_status: None,
        response_id: None,
    };
    assert_eq!(
        super::assistant_failover_reason(&m),
        None,
        "nothing in the text"
    );
    m.error_status = Some(402);
    assert_eq!(
        super::assistant_failover_reason(&m),
        Some(FailoverReason::Billing)
    );
    assert!(super::is_failover_assistant_error(&m));
    m.error_message = Some("429 rate limit reached".into());
    assert_eq!(
        super::assistant_failover_reason(&m),
        Some(FailoverReason::RateLimit),
        "the text wins"
    );
    m.stop_reason = filo_ai::StopReason::Stop;
    assert_eq!(
        super::assistant_failover_reason(&m),
        None,
        "only an error stop"
    );
}
