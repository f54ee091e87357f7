//! The pattern families of OpenClaw's failover matcher (spec §7.1) plus filo's own error texts
//! (design G9). Every family matches a **lower-cased** text: a string pattern by substring, a
//! regex pattern by search. Regexes are compiled once, on first use, into immutable sets.

use std::sync::OnceLock;

use regex::RegexSet;

pub(crate) use crate::pattern::Pattern;

/// A family of substrings and regexes; matching any member matches the family.
pub(crate) struct Family {
    substrings: &'static [&'static str],
    regexes: &'static [&'static str],
    cell: OnceLock<Option<RegexSet>>,
}

impl Family {
    const fn new(substrings: &'static [&'static str], regexes: &'static [&'static str]) -> Self {
        Self {
            substrings,
            regexes,
            cell: OnceLock::new(),
        }
    }

    /// Whether the lower-cased `lower` matches any member.
    pub(crate) fn matches(&self, lower: &str) -> bool {
        if self.substrings.iter().any(|s| lower.contains(s)) {
            return true;
        }
        if self.regexes.is_empty() {
            return false;
        }
        self.cell
            .get_or_init(|| RegexSet::new(self.regexes).ok())
            .as_ref()
            .is_some_and(|set| set.is_match(lower))
    }

    #[cfg(test)]
    pub(crate) fn compiles(&self) -> bool {
        RegexSet::new(self.regexes).is_ok()
    }
}

pub(crate) static RATE_LIMIT: Family = Family::new(
    &[
        "model_cooldown",
        "exceeded your current quota",
        "resource has been exhausted",
        "quota exceeded",
        "resource_exhausted",
        "usage limit",
        "tokens per minute",
        "tokens per day",
    ],
    &[
        r"rate[_ ]limit|too many requests|429",
        r"(?-u:\b)tpm(?-u:\b)",
    ],
);

pub(crate) static OVERLOADED: Family = Family::new(
    &["overloaded", "high demand"],
    &[
        r#"overloaded_error|"type"\s*:\s*"overloaded_error""#,
        r"service[_ ]unavailable.*(?:overload|capacity|high[_ ]demand)|(?:overload|capacity|high[_ ]demand).*service[_ ]unavailable",
    ],
);

pub(crate) static TIMEOUT: Family = Family::new(
    &[
        "timeout",
        "timed out",
        "service unavailable",
        "deadline exceeded",
        "context deadline exceeded",
        "connection error",
        "network error",
        "network request failed",
        "fetch failed",
        "socket hang up",
        // filo's own texts (design G9): `filo_ai::AiError` renders an idle stream as
        // "Stream idle timeout: no data received for N ms" and a transport failure as
        // "Connection error: …". Both are already covered by "timeout" / "connection error";
        // they are listed so the intent survives an edit of the generic entries.
        "stream idle timeout",
        "connection error:",
    ],
    &[
        r"(?-u:\b)econn(?:refused|reset|aborted)(?-u:\b)",
        r"(?-u:\b)enetunreach(?-u:\b)",
        r"(?-u:\b)ehostunreach(?-u:\b)",
        r"(?-u:\b)ehostdown(?-u:\b)",
        r"(?-u:\b)enetreset(?-u:\b)",
        r"(?-u:\b)etimedout(?-u:\b)",
        r"(?-u:\b)esockettimedout(?-u:\b)",
        r"(?-u:\b)epipe(?-u:\b)",
        r"(?-u:\b)enotfound(?-u:\b)",
        r"(?-u:\b)eai_again(?-u:\b)",
        r"without sending (?:any )?chunks?",
        r"(?-u:\b)stop reason:\s*(?:abort|error|malformed_response|network_error)(?-u:\b)",
        r"(?-u:\b)reason:\s*(?:abort|error|malformed_response|network_error)(?-u:\b)",
        r"(?-u:\b)unhandled stop reason:\s*(?:abort|error|malformed_response|network_error)(?-u:\b)",
        r"(?-u:\b)provider returned error(?-u:\b)",
    ],
);

/// The hard 402 markers: the only billing signal looked for in texts over 512 chars.
pub(crate) static BILLING_402: Pattern = Pattern::new(
    r#"(?i)["']?(?:status|code)["']?\s*[:=]\s*402(?-u:\b)|(?-u:\b)http\s*402(?-u:\b)|(?-u:\b)error(?:\s+code)?\s*[:=]?\s*402(?-u:\b)|(?-u:\b)(?:got|returned|received)\s+(?:a\s+)?402(?-u:\b)|^\s*402\s+payment"#,
);

pub(crate) static BILLING: Family = Family::new(
    &[
        "payment required",
        "insufficient credits",
        "credit balance",
        "plans & billing",
        "insufficient balance",
        "insufficient usd or diem balance",
    ],
    &[r"insufficient[_ ]quota", r"requires?\s+more\s+credits"],
);

/// A text that starts like a billing message; counts only together with a billing word.
pub(crate) static BILLING_HEAD: Pattern = Pattern::new(
    r"(?i)^(?:error[:\s-]+)?billing(?:\s+error)?(?:[:\s-]+|$)|^(?:error[:\s-]+)?(?:credit balance|insufficient credits?|payment required|http\s*402(?-u:\b))",
);

pub(crate) static AUTH_PERMANENT: Family = Family::new(
    &[
        "invalid_api_key",
        "key has been disabled",
        "key has been revoked",
        "account has been deactivated",
        "permission_error",
        "not allowed for this organization",
    ],
    &[
        r"api[_ ]?key[_ ]?(?:revoked|invalid|deactivated|deleted)",
        r"could not (?:authenticate|validate).*(?:api[_ ]?key|credentials)",
    ],
);

pub(crate) static AUTH: Family = Family::new(
    &[
        "incorrect api key",
        "invalid token",
        "authentication",
        "re-authenticate",
        "oauth token refresh failed",
        "unauthorized",
        "forbidden",
        "access denied",
        "insufficient permissions",
        "insufficient permission",
        "expired",
        "token has expired",
        "no credentials found",
        "no api key found",
        // filo's own text (design G9): filo-core's key resolver fails with
        // "No API key for provider: <p>"; rotating to another profile can fix it.
        "no api key for provider",
    ],
    &[
        r"invalid[_ ]?api[_ ]?key",
        r"missing scopes?:",
        r"(?-u:\b)401(?-u:\b)",
        r"(?-u:\b)403(?-u:\b)",
    ],
);

pub(crate) static FORMAT: Family = Family::new(
    &[
        "string should match pattern",
        "tool_use.id",
        "tool_use_id",
        "messages.1.content.1.tool_use.id",
        "invalid request format",
    ],
    &[r"tool call id was.*must be"],
);

/// Daily / weekly / monthly usage limits (spec §7.1 "periodic usage limit").
pub(crate) static PERIODIC_USAGE_LIMIT: Pattern = Pattern::new(
    r"(?i)(?-u:\b)(?:daily|weekly|monthly)(?:/(?:daily|weekly|monthly))* (?:usage )?limits?(?: (?:exhausted|reached|exceeded))?(?-u:\b)",
);

/// Last-resort reasons of particular providers (spec §7.1 "provider-specific reasons"), in
/// order: Google `INVALID_ARGUMENT` size errors → format; Bedrock throttling → rate limit; a model
/// not ready → overloaded; a deactivated model → model not found; concurrency limits and
/// Cloudflare Workers AI limits → rate limit.
pub(crate) static PROVIDER_REASONS: [(Pattern, super::FailoverReason); 6] = [
    (
        Pattern::new(
            r"(?i)INVALID_ARGUMENT.*(?:exceeds? the (?:maximum|max)|input.*too (?:long|large))",
        ),
        super::FailoverReason::Format,
    ),
    (
        Pattern::new(r"(?i)ThrottlingException|Too many concurrent requests"),
        super::FailoverReason::RateLimit,
    ),
    (
        Pattern::new(r"(?i)ModelNotReadyException|model is not ready"),
        super::FailoverReason::Overloaded,
    ),
    (
        Pattern::new(r"(?i)model(?:_is)?_deactivated|model has been deactivated"),
        super::FailoverReason::ModelNotFound,
    ),
    (
        Pattern::new(r"(?i)(?-u:\b)concurrency limit(?-u:\b).*(?-u:\b)reached(?-u:\b)"),
        super::FailoverReason::RateLimit,
    ),
    (
        Pattern::new(r"(?i)(?-u:\b)workers?_ai(?-u:\b).*(?-u:\b)(?:rate|limit|quota)(?-u:\b)"),
        super::FailoverReason::RateLimit,
    ),
];

/// Context-overflow texts of particular providers (spec §7.1, `provider-error-patterns.ts`).
pub(crate) static PROVIDER_OVERFLOW: Family = Family::new(
    &[],
    &[
        r"(?i)validationexception.*(?:input is too long|max input token|input token.*exceed)",
        r"(?i)validationexception.*(?:exceeds? the (?:maximum|max) (?:number of )?(?:input )?tokens)",
        r"(?i)modelstreamerrorexception.*(?:input is too long|too many input tokens)",
        r"(?i)content_filter.*(?:prompt|input).*(?:too long|exceed)",
        r"(?i)(?-u:\b)ollama(?-u:\b).*(?:context length|too many tokens|context window)",
        r"(?i)(?-u:\b)truncating input(?-u:\b).*(?-u:\b)too long(?-u:\b)",
        r"(?i)(?-u:\b)mistral(?-u:\b).*(?:input.*too long|token limit.*exceeded)",
        r"(?i)(?-u:\b)total tokens?.*exceeds? (?:the )?(?:model(?:'s)? )?(?:max|maximum|limit)",
        r"(?i)(?-u:\b)deepseek(?-u:\b).*(?:input.*too long|context.*exceed)",
        r"(?i)(?-u:\b)input (?:is )?too long for (?:the )?model(?-u:\b)",
    ],
);

/// Leading HTTP status of an error text: `"[http ]NNN[ rest]"`.
pub(crate) static HTTP_STATUS_PREFIX: Pattern =
    Pattern::new(r"(?is)^(?:http\s*)?(\d{3})(?:\s+(.+))?$");

pub(crate) static HTML_PREFIX: Pattern =
    Pattern::new(r"(?i)^\s*(?:<!doctype\s+html(?-u:\b)|<html(?-u:\b))");

pub(crate) static HTML_CLOSE: Pattern = Pattern::new(r"(?i)</html>");

#[cfg(test)]
pub(crate) fn all_families() -> [&'static Family; 8] {
    [
        &RATE_LIMIT,
        &OVERLOADED,
        &TIMEOUT,
        &BILLING,
        &AUTH_PERMANENT,
        &AUTH,
        &FORMAT,
        &PROVIDER_OVERFLOW,
    ]
}

#[cfg(test)]
pub(crate) fn all_patterns() -> Vec<&'static Pattern> {
    let mut all = vec![
        &BILLING_402,
        &BILLING_HEAD,
        &HTTP_STATUS_PREFIX,
        &HTML_PREFIX,
        &HTML_CLOSE,
        &PERIODIC_USAGE_LIMIT,
    ];
    all.extend(PROVIDER_REASONS.iter().map(|(p, _)| p));
    all
}
