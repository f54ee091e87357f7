//! Context-overflow verdicts (spec §7.2–§7.4): exact overflow, likely overflow, compaction
//! failure, and the token count an overflow error reports.

use super::patterns::{PROVIDER_OVERFLOW, Pattern};
use super::{is_billing_error_message, is_rate_limit_error_message};

static TPM_HINT: Pattern = Pattern::new(r"(?i)(?-u:\b)tpm(?-u:\b)");
static CONTEXT_WINDOW_TOO_SMALL: Pattern =
    Pattern::new(r"(?i)context window.*(?:too small|minimum is)");
static RATE_LIMIT_HINT: Pattern = Pattern::new(
    r"(?i)rate limit|too many requests|requests per (?:minute|hour|day)|quota|throttl|429(?-u:\b)|tokens per day",
);
static LIKELY_OVERFLOW: Pattern = Pattern::new(
    r"(?i)context.*overflow|context window.*(?:too (?:large|long)|exceed|over|limit|max(?:imum)?|requested|sent|tokens)|prompt.*(?:too (?:large|long)|exceed|over|limit|max(?:imum)?)|(?:request|input).*(?:context|window|length|token).*(?:too (?:large|long)|exceed|over|limit|max(?:imum)?)",
);
static OBSERVED_TOKENS: [Pattern; 3] = [
    Pattern::new(r"(?i)prompt is too long:\s*([\d,]+)\s+tokens\s*>\s*[\d,]+\s+maximum"),
    Pattern::new(r"(?i)requested\s+([\d,]+)\s+tokens"),
    Pattern::new(r"(?i)resulted in\s+([\d,]+)\s+tokens"),
];

fn has_tpm_hint(lower: &str) -> bool {
    TPM_HINT.is_match(lower) || lower.contains("tokens per minute")
}

/// A model that refuses to run without reasoning — not an overflow, even when it says
/// "required".
pub fn is_reasoning_constraint_error(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains("reasoning is mandatory")
        || lower.contains("reasoning is required")
        || lower.contains("requires reasoning")
        || (lower.contains("reasoning") && lower.contains("cannot be disabled"))
}

/// `isContextOverflowError` (spec §7.2), OR'ed with pi's own overflow texts
/// (`filo_ai::overflow::message_is_overflow`) so every text filo-ai already treats as overflow
/// counts here too.
pub fn is_context_overflow_error(text: &str) -> bool {
    if text.is_empty() {
        return false;
    }
    let lower = text.to_lowercase();
    if has_tpm_hint(&lower) || is_reasoning_constraint_error(text) {
        return false;
    }
    let has = |s: &str| lower.contains(s);
    let simple = [
        "request_too_large",
        "request exceeds the maximum size",
        "context length exceeded",
        "maximum context length",
        "prompt is too long",
        "prompt too long",
        "exceeds model context window",
        "model token limit",
        "context overflow:",
        "exceed context limit",
        "exceeds the model's maximum context",
        "context_window_exceeded",
        "上下文过长",
        "上下文超出",
        "上下文长度超",
        "超出最大上下文",
        "请压缩上下文",
    ];
    simple.iter().any(|s| has(s))
        || (has("invalid_argument") && has("maximum number of tokens"))
        || (has("input exceeds") && has("maximum number of tokens"))
        || (has("request size exceeds")
            && (has("context window") || has("context length") || has("maximum context length")))
        || (has("max_tokens") && has("exceed") && has("context"))
        || (has("input length") && has("exceed") && has("context"))
        || (has("413") && has("too large"))
        || PROVIDER_OVERFLOW.matches(&lower)
        || filo_ai::overflow::message_is_overflow(text)
}

/// `isLikelyContextOverflowError` (spec §7.3): exact overflow, or an overflow-looking text that
/// is not about rate limits, billing or a too-small window.
pub fn is_likely_context_overflow_error(text: &str) -> bool {
    if text.is_empty() {
        return false;
    }
    let lower = text.to_lowercase();
    if has_tpm_hint(&lower)
        || is_reasoning_constraint_error(text)
        || is_billing_error_message(text)
        || CONTEXT_WINDOW_TOO_SMALL.is_match(text)
        || is_rate_limit_error_message(text)
    {
        return false;
    }
    if is_context_overflow_error(text) {
        return true;
    }
    if RATE_LIMIT_HINT.is_match(text) {
        return false;
    }
    LIKELY_OVERFLOW.is_match(text)
}

/// `isCompactionFailureError` (spec §7.4): a compaction text that is (likely) an overflow.
pub fn is_compaction_failure_error(text: &str) -> bool {
    if text.is_empty() {
        return false;
    }
    let lower = text.to_lowercase();
    let compaction = [
        "summarization failed",
        "auto-compaction",
        "compaction failed",
        "compaction",
    ]
    .iter()
    .any(|t| lower.contains(t));
    if !compaction {
        return false;
    }
    is_likely_context_overflow_error(text) || lower.contains("context overflow")
}

/// `extractObservedOverflowTokenCount`: the prompt size an overflow error reports, if any.
pub fn extract_observed_overflow_token_count(text: &str) -> Option<u64> {
    OBSERVED_TOKENS.iter().find_map(|pattern| {
        let caps = pattern.get()?.captures(text)?;
        let digits: String = caps
            .get(1)?
            .as_str()
            .chars()
            .filter(|c| *c != ',')
            .collect();
        digits.parse::<u64>().ok().filter(|n| *n > 0)
    })
}

#[cfg(test)]
pub(crate) fn all_patterns() -> Vec<&'static Pattern> {
    let mut all = vec![
        &TPM_HINT,
        &CONTEXT_WINDOW_TOO_SMALL,
        &RATE_LIMIT_HINT,
        &LIKELY_OVERFLOW,
    ];
    all.extend(OBSERVED_TOKENS.iter());
    all
}
