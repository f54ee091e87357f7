//! The model fallback chain (C12, OpenClaw `runWithModelFallback`): the requested model, then the
//! configured fallbacks, then the configured primary, each run through the whole run loop until
//! one answers. A [`FailoverError`] moves on to the next candidate; an abort ends the chain; a
//! context overflow never reaches here (the run loop answers it with compaction or its copy, and
//! a smaller model would fail worse).

use crate::classify::FailoverReason;
use crate::config::EmbedConfig;
use crate::error::{FailoverError, RunError};
use crate::run::params::RunResult;

/// One candidate that did not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FallbackAttempt {
    pub provider: String,
    pub model: String,
    pub error: String,
    pub reason: FailoverReason,
    pub status: Option<u16>,
    pub code: Option<String>,
}

/// What [`crate::Embedder::run_with_fallback`] returns: the answer and who gave it, with the
/// candidates that failed before.
#[derive(Debug, Clone)]
pub struct FallbackResult {
    pub result: RunResult,
    pub provider: String,
    pub model: String,
    pub attempts: Vec<FallbackAttempt>,
    /// `Model "<p>/<m>" not found. Fell back to "<p2>/<m2>".` when the requested model was unknown.
    pub notice: Option<String>,
}

/// A `(provider, model)` candidate.
pub type Candidate = (String, String);

/// `provider/model`, or a bare model of `default_provider`.
fn parse_ref(raw: &str, default_provider: &str) -> Option<Candidate> {
    let raw = raw.trim();
    match raw.split_once('/') {
        Some((p, m)) if !p.trim().is_empty() && !m.trim().is_empty() => {
            Some((p.trim().to_lowercase(), m.trim().to_owned()))
        }
        Some(_) => None,
        None if !raw.is_empty() => Some((default_provider.to_owned(), raw.to_owned())),
        None => None,
    }
}

/// The candidates in order (C12): the requested model; then an explicit override list (even
/// empty) or else the configured fallbacks — only when the requested provider is the primary's
/// or the requested model is itself a configured fallback; then the configured primary unless an
/// override was given. Duplicates are dropped.
pub fn fallback_candidates(
    config: &EmbedConfig,
    requested: Candidate,
    fallbacks_override: Option<&[String]>,
) -> Vec<Candidate> {
    let requested = (
        requested.0.trim().to_lowercase(),
        requested.1.trim().to_owned(),
    );
    let primary = config
        .defaults
        .model
        .primary
        .as_deref()
        .and_then(|p| parse_ref(p, &requested.0));
    let configured: Vec<Candidate> = config
        .defaults
        .model
        .fallbacks
        .iter()
        .filter_map(|f| parse_ref(f, primary.as_ref().map_or(&requested.0, |p| &p.0)))
        .collect();
    let mut out = vec![requested.clone()];
    match fallbacks_override {
        Some(list) => out.extend(list.iter().filter_map(|f| parse_ref(f, &requested.0))),
        None => {
            let same_provider = primary.as_ref().is_some_and(|p| p.0 == requested.0);
            if same_provider || configured.contains(&requested) {
                out.extend(configured);
            }
            out.extend(primary);
        }
    }
    let mut seen: Vec<Candidate> = Vec::new();
    out.retain(|c| {
        let fresh = !seen.contains(c);
        if fresh {
            seen.push(c.clone());
        }
        fresh
    });
    out
}

/// The record of a candidate that failed with `e`.
pub(crate) fn attempt_of(candidate: &Candidate, e: &FailoverError) -> FallbackAttempt {
    FallbackAttempt {
        provider: candidate.0.clone(),
        model: candidate.1.clone(),
        error: e.message.clone(),
        reason: e.reason,
        status: e.status,
        code: e.code.clone(),
    }
}

/// `All models failed (<n>): <p>/<m>: <error> (<reason>) | …`.
pub fn all_failed_message(attempts: &[FallbackAttempt]) -> String {
    let parts: Vec<String> = attempts
        .iter()
        .map(|a| {
            format!(
                "{}/{}: {} ({})",
                a.provider,
                a.model,
                a.error,
                a.reason.as_str()
            )
        })
        .collect();
    format!(
        "All models failed ({}): {}",
        attempts.len(),
        parts.join(" | ")
    )
}

/// What ends the chain at once instead of trying the next candidate.
pub(crate) fn ends_chain(e: &RunError) -> bool {
    e.is_abort() || matches!(e, RunError::Draining)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config(primary: &str, fallbacks: &[&str]) -> EmbedConfig {
        EmbedConfig::from_value(json!({"agents": {"defaults": {"model": {
            "primary": primary, "fallbacks": fallbacks}}}}))
    }

    fn c(p: &str, m: &str) -> Candidate {
        (p.to_owned(), m.to_owned())
    }

    #[test]
    fn the_requested_model_then_fallbacks_then_the_primary() {
        let cfg = config("openai/gpt-main", &["anthropic/claude", "gpt-mini"]);
        assert_eq!(
            fallback_candidates(&cfg, c("openai", "gpt-other"), None),
            vec![
                c("openai", "gpt-other"),
                c("anthropic", "claude"),
                c("openai", "gpt-mini"),
                c("openai", "gpt-main")
            ]
        );
        // The primary itself: no duplicate at the end.
        assert_eq!(
            fallback_candidates(&cfg, c(" OpenAI ", "gpt-main"), None),
            vec![
                c("openai", "gpt-main"),
                c("anthropic", "claude"),
                c("openai", "gpt-mini")
            ]
        );
    }

    #[test]
    fn fallbacks_only_for_the_primary_provider_or_a_configured_fallback() {
        let cfg = config("openai/gpt-main", &["anthropic/claude"]);
        assert_eq!(
            fallback_candidates(&cfg, c("google", "gemini"), None),
            vec![c("google", "gemini"), c("openai", "gpt-main")]
        );
        assert_eq!(
            fallback_candidates(&cfg, c("anthropic", "claude"), None),
            vec![c("anthropic", "claude"), c("openai", "gpt-main")]
        );
    }

    #[test]
    fn an_override_list_replaces_config_and_the_primary_even_when_empty() {
        let cfg = config("openai/gpt-main", &["anthropic/claude"]);
        let none: Vec<String> = Vec::new();
        assert_eq!(
            fallback_candidates(&cfg, c("openai", "x"), Some(&none)),
            vec![c("openai", "x")]
        );
        let list = vec![
            "mock2/other".to_owned(),
            "openai/x".to_owned(),
            "y".to_owned(),
        ];
        assert_eq!(
            fallback_candidates(&cfg, c("openai", "x"), Some(&list)),
            vec![c("openai", "x"), c("mock2", "other"), c("openai", "y")]
        );
    }

    #[test]
    fn the_all_failed_message() {
        let a = |p: &str, e: &str, r| FallbackAttempt {
            provider: p.into(),
            model: "m".into(),
            error: e.into(),
            reason: r,
            status: None,
            code: None,
        };
        let msg = all_failed_message(&[
            a("openai", "rate limited", FailoverReason::RateLimit),
            a("mock2", "LLM request unauthorized.", FailoverReason::Auth),
        ]);
        assert_eq!(
            msg,
            "All models failed (2): openai/m: rate limited (rate_limit) | mock2/m: LLM request unauthorized. (auth)"
        );
    }
}
