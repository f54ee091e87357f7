//! The run loop (C2, spec §1.3–§1.7): attempts until one answers, recovering on the way —
//! compaction after a context overflow (C14), the next auth profile after a rate limit, an auth
//! or billing failure (C9), a lower thinking level when the provider names the supported ones
//! (C13) — and a [`FailoverError`] for the model fallback chain when nothing else helps.

use std::sync::Arc;
use std::time::{Duration, Instant};

use filo_ai::ThinkingLevel;
use tokio_util::sync::CancellationToken;

use crate::classify::copy::{
    CONTEXT_OVERFLOW_COPY, ErrorCopyContext, billing_copy, format_error_text,
};
use crate::classify::thinking::{
    UnsupportedWithoutList, normalize_think_level, pick_fallback_thinking_level,
};
use crate::classify::{
    FailoverReason, assistant_failover_reason, classify_failover_reason,
    is_compaction_failure_error, is_failover_assistant_error, is_likely_context_overflow_error,
    parse_image_size_error,
};
use crate::embedder::Inner;
use crate::error::{FailoverError, RunError};
use crate::run::attempt::{AttemptOutcome, AttemptSpec, run_attempt};
use crate::run::compact::compact_file;
use crate::run::params::{AgentMeta, RunErrorInfo, RunErrorKind, RunMeta, RunParams, RunResult};
use crate::run::payloads::{PayloadInputs, ReplyPayload, ToolFailure, build_run_payloads};
use crate::run::resolve::{Resolved, recordable_failure, resolve_run};
use crate::sink::ReplySink;
use crate::subscriber::tool_meta::format_tool_aggregate;
use crate::usage::RunUsage;

/// Overflow compactions per run (`MAX_OVERFLOW_COMPACTION_ATTEMPTS`).
pub const MAX_OVERFLOW_COMPACTION_ATTEMPTS: u32 = 3;
/// Copy when the loop gave up.
pub const RETRY_LIMIT_COPY: &str = "Request failed after repeated internal retries. Please try again, or use /new to start a fresh session.";
/// Copy when a run timed out before any reply.
pub const TIMEOUT_COPY: &str = "Request timed out before a response was generated. Please try again, or increase `agents.defaults.timeoutSeconds` in your config.";
/// Copy for a message-ordering rejection.
pub const ROLE_ORDERING_COPY: &str = "Message ordering conflict - please try again. If this persists, use /new to start a fresh session.";
/// Copy when the model stopped without answering.
pub const INCOMPLETE_COPY: &str = "⚠️ Agent couldn't generate a response. Please try again.";
/// The same after a tool that changes things ran.
pub const INCOMPLETE_MUTATING_COPY: &str = "⚠️ Agent couldn't generate a response. Note: some tool actions may have already been executed — please verify before retrying.";

const MAGIC_REFUSAL: &str = "ANTHROPIC_MAGIC_STRING_TRIGGER_REFUSAL";
const MAGIC_REFUSAL_REDACTED: &str = "ANTHROPIC MAGIC STRING TRIGGER REFUSAL (redacted)";

/// Iterations before the loop gives up: `min(160, max(32, 24 + max(1, candidates) × 8))`.
pub fn max_iterations(candidates: usize) -> usize {
    (24 + candidates.max(1) * 8).clamp(32, 160)
}

/// Loop state carried between attempts.
struct LoopState {
    candidate: usize,
    think: ThinkingLevel,
    initial_think: ThinkingLevel,
    attempted: Vec<ThinkingLevel>,
    usage: RunUsage,
    compactions: u32,
    overflow_attempts: u32,
    /// What the attempts could not keep (a failed session write, the memory).
    warnings: Vec<String>,
}

/// Runs the loop for one run (already inside its lanes).
pub(crate) async fn run_loop(
    inner: &Inner,
    params: RunParams,
    sink: Arc<dyn ReplySink>,
    fallback_configured: bool,
) -> Result<RunResult, RunError> {
    let started = Instant::now();
    let resolved = resolve_run(inner, &params)?;
    let config = inner.config();
    let initial_think = params
        .think_level
        .or_else(|| {
            config
                .defaults
                .thinking_default
                .as_deref()
                .and_then(normalize_think_level)
        })
        .unwrap_or(ThinkingLevel::Off);
    let mut st = LoopState {
        candidate: resolved.initial()?,
        think: initial_think,
        initial_think,
        attempted: Vec::new(),
        usage: RunUsage::default(),
        compactions: 0,
        overflow_attempts: 0,
        warnings: Vec::new(),
    };
    let run_token = inner.shutdown.child_token();
    let _link = params.abort.as_ref().map(|a| link_abort(a, &run_token));
    let timeout = params.timeout.unwrap_or_else(|| config.timeout());
    let custom_prompt = inner.custom_system_prompt(&resolved.agent_id);
    let max_iter = max_iterations(resolved.candidates.len());
    let mut iterations = 0;
    loop {
        if iterations >= max_iter {
            let message =
                format!("Exceeded retry limit after {iterations} attempts (max={max_iter}).");
            return Ok(finish(
                &resolved,
                &st,
                &params,
                started,
                error_result(RETRY_LIMIT_COPY, RunErrorKind::RetryLimit, message),
            ));
        }
        iterations += 1;
        st.attempted.push(st.think);
        let mut attempt_params = params.clone();
        if resolved.provider == "anthropic" {
            attempt_params.prompt = attempt_params
                .prompt
                .replace(MAGIC_REFUSAL, MAGIC_REFUSAL_REDACTED);
        }
        let outcome = run_attempt(AttemptSpec {
            inner,
            params: &attempt_params,
            model: resolved.model.clone(),
            api_key: resolved.key(inner, st.candidate)?,
            think_level: st.think,
            session_file: resolved.session_file.clone(),
            custom_prompt: custom_prompt.clone(),
            agent_id: resolved.agent_id.clone(),
            sink: sink.clone(),
            run_token: run_token.clone(),
            timeout,
        })
        .await?;
        for (u, cost) in &outcome.observed.calls {
            st.usage.add_call(u, *cost);
        }
        st.compactions += outcome.observed.compactions;
        for w in &outcome.observed.warnings {
            warn(&mut st, w.clone());
        }
        match next_step(
            inner,
            &resolved,
            &mut st,
            &params,
            &outcome,
            fallback_configured,
        )
        .await?
        {
            Step::Retry => continue,
            Step::Done(result) => {
                if !outcome.aborted && result.meta.error.is_none() {
                    mark_success(&resolved, &mut st);
                }
                let mut result = finish(&resolved, &st, &params, started, *result);
                result.meta.aborted = outcome.aborted;
                result.meta.timed_out = outcome.timed_out && !outcome.timed_out_during_compaction;
                return Ok(result);
            }
        }
    }
}

enum Step {
    Retry,
    Done(Box<RunResult>),
}

impl Step {
    fn done(result: RunResult) -> Self {
        Step::Done(Box::new(result))
    }
}

fn error_result(text: &str, kind: RunErrorKind, message: String) -> RunResult {
    RunResult {
        payloads: vec![ReplyPayload {
            text: Some(text.to_owned()),
            is_error: true,
            ..ReplyPayload::default()
        }],
        meta: RunMeta {
            error: Some(RunErrorInfo { kind, message }),
            ..RunMeta::default()
        },
    }
}

/// Decides what follows an attempt (spec §1.5 steps 5–14).
async fn next_step(
    inner: &Inner,
    resolved: &Resolved,
    st: &mut LoopState,
    params: &RunParams,
    o: &AttemptOutcome,
    fallback_configured: bool,
) -> Result<Step, RunError> {
    let last = o.last_assistant();
    let assistant_error = last
        .filter(|m| m.stop_reason == filo_ai::StopReason::Error)
        .and_then(|m| m.error_message.as_deref())
        .map(str::trim)
        .filter(|t| !t.is_empty());
    // Step 7: context overflow → compaction → retry.
    if !o.aborted {
        let prompt_overflow = o
            .prompt_error
            .as_deref()
            .filter(|e| is_likely_context_overflow_error(e));
        let source = match (&o.prompt_error, prompt_overflow) {
            (_, Some(e)) => Some(e),
            (Some(_), None) => None,
            (None, None) => assistant_error.filter(|e| is_likely_context_overflow_error(e)),
        };
        if let Some(text) = source {
            return overflow_step(inner, resolved, st, params, o, text).await;
        }
    }
    // Step 8: the prompt itself failed.
    if let (Some(err), false) = (&o.prompt_error, o.aborted) {
        if is_role_ordering(err) {
            return Ok(Step::done(error_result(
                ROLE_ORDERING_COPY,
                RunErrorKind::RoleOrdering,
                err.clone(),
            )));
        }
        if let Some(size) = parse_image_size_error(err) {
            let max = size
                .max_mb
                .map(|mb| format!(" (max {mb}MB)"))
                .unwrap_or_default();
            let text = format!(
                "Image too large for the model{max}. Please compress or resize the image and try again."
            );
            return Ok(Step::done(error_result(
                &text,
                RunErrorKind::ImageSize,
                err.clone(),
            )));
        }
        let reason = classify_failover_reason(err);
        record_failure(resolved, st, reason);
        if reason.is_some_and(|r| r != FailoverReason::Timeout) && rotate(resolved, st) {
            return Ok(Step::Retry);
        }
        if let Some(next) = pick_fallback_thinking_level(
            Some(err),
            &st.attempted,
            UnsupportedWithoutList::NoFallback,
        ) {
            st.think = next;
            return Ok(Step::Retry);
        }
        if fallback_configured {
            return Err(failover(
                resolved,
                st,
                reason.unwrap_or(FailoverReason::Unknown),
                err.clone(),
            ));
        }
        return Err(RunError::Session(err.clone()));
    }
    // Step 9: the provider named the thinking levels it supports.
    if let Some(next) = pick_fallback_thinking_level(
        assistant_error,
        &st.attempted,
        UnsupportedWithoutList::NoFallback,
    ) {
        st.think = next;
        return Ok(Step::Retry);
    }
    // Steps 10–11: rotate the profile, or hand over to the fallback chain.
    let failover_failure = last.is_some_and(is_failover_assistant_error);
    let reason = last.and_then(assistant_failover_reason);
    let timed_out = o.timed_out && !o.timed_out_during_compaction;
    if (!o.aborted && failover_failure) || timed_out {
        if !timed_out {
            record_failure(resolved, st, reason);
        }
        if rotate(resolved, st) {
            if reason == Some(FailoverReason::Overloaded) {
                overload_backoff(st.attempted.len()).await;
            }
            return Ok(Step::Retry);
        }
        if fallback_configured {
            let (reason, message) = match (timed_out, reason, assistant_error) {
                (true, _, _) => (FailoverReason::Timeout, "LLM request timed out.".to_owned()),
                (false, r, Some(raw)) => (
                    r.unwrap_or(FailoverReason::Unknown),
                    format_error_text(raw, &copy_context(resolved)),
                ),
                (false, Some(FailoverReason::RateLimit), None) => (
                    FailoverReason::RateLimit,
                    "LLM request rate limited.".to_owned(),
                ),
                (false, Some(FailoverReason::Billing), None) => (
                    FailoverReason::Billing,
                    billing_copy(Some(&resolved.provider)),
                ),
                (false, Some(FailoverReason::Auth), None) => {
                    (FailoverReason::Auth, "LLM request unauthorized.".to_owned())
                }
                (false, r, None) => (
                    r.unwrap_or(FailoverReason::Unknown),
                    "LLM request failed.".to_owned(),
                ),
            };
            return Err(failover(resolved, st, reason, message));
        }
    }
    // Steps 12–14: the answer.
    Ok(Step::done(answer(resolved, o)))
}

/// Step 7 (C14): retry after the attempt's own compaction, else compact here, else give up
/// with the overflow copy.
async fn overflow_step(
    inner: &Inner,
    resolved: &Resolved,
    st: &mut LoopState,
    params: &RunParams,
    o: &AttemptOutcome,
    text: &str,
) -> Result<Step, RunError> {
    let failure = is_compaction_failure_error(text)
        || o.observed
            .compaction_error
            .as_deref()
            .is_some_and(is_compaction_failure_error);
    if !failure && st.overflow_attempts < MAX_OVERFLOW_COMPACTION_ATTEMPTS {
        st.overflow_attempts += 1;
        if o.observed.overflow_compacted {
            return Ok(Step::Retry);
        }
        let compacted = compact_file(
            inner,
            resolved.session_file.clone(),
            params.workspace_dir.clone(),
            resolved.model.clone(),
            resolved.key(inner, st.candidate)?,
            None,
        )
        .await?;
        for w in compacted.warnings {
            warn(st, w);
        }
        if compacted.compacted {
            st.compactions += 1;
            return Ok(Step::Retry);
        }
    }
    let kind = if failure {
        RunErrorKind::CompactionFailure
    } else {
        RunErrorKind::ContextOverflow
    };
    Ok(Step::done(error_result(
        CONTEXT_OVERFLOW_COPY,
        kind,
        text.to_owned(),
    )))
}

/// Steps 12–13: payloads, the timeout copy, the incomplete-turn copy.
fn answer(resolved: &Resolved, o: &AttemptOutcome) -> RunResult {
    let tool_failure = o.last_tool_error.as_ref().map(|e| ToolFailure {
        summary: format_tool_aggregate(&e.tool_name, &[], false, None),
        error: e.error.clone(),
    });
    let payloads = build_run_payloads(&PayloadInputs {
        assistant_texts: &o.assistant_texts,
        last_assistant: o.last_assistant(),
        last_tool_error: tool_failure.as_ref(),
        reasoning_on: false,
        current_message_id: None,
        error_copy: copy_context(resolved),
    });
    let mut result = RunResult {
        payloads,
        meta: RunMeta {
            stop_reason: o
                .last_assistant()
                .map(|m| stop_reason_name(m.stop_reason).to_owned()),
            ..RunMeta::default()
        },
    };
    if result.payloads.is_empty() {
        if o.timed_out && !o.timed_out_during_compaction {
            result.payloads.push(error_payload(TIMEOUT_COPY));
        } else if !o.aborted
            && o.last_tool_error.is_none()
            && o.last_assistant().is_some_and(|m| {
                matches!(
                    m.stop_reason,
                    filo_ai::StopReason::ToolUse | filo_ai::StopReason::Error
                )
            })
        {
            let copy = if o.mutating_tool_ran {
                INCOMPLETE_MUTATING_COPY
            } else {
                INCOMPLETE_COPY
            };
            result.payloads.push(error_payload(copy));
        }
    }
    result
}

fn error_payload(text: &str) -> ReplyPayload {
    ReplyPayload {
        text: Some(text.to_owned()),
        is_error: true,
        ..ReplyPayload::default()
    }
}

fn stop_reason_name(r: filo_ai::StopReason) -> &'static str {
    match r {
        filo_ai::StopReason::Stop => "stop",
        filo_ai::StopReason::Length => "length",
        filo_ai::StopReason::ToolUse => "toolUse",
        filo_ai::StopReason::Error => "error",
        filo_ai::StopReason::Aborted => "aborted",
        filo_ai::StopReason::Deferred => "deferred",
        filo_ai::StopReason::Pending => "pending",
    }
}

fn copy_context(resolved: &Resolved) -> ErrorCopyContext<'_> {
    ErrorCopyContext {
        provider: Some(&resolved.provider),
        sandbox_blocked_tool: None,
    }
}

fn is_role_ordering(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains("incorrect role information") || lower.contains("roles must alternate")
}

fn failover(
    resolved: &Resolved,
    st: &LoopState,
    reason: FailoverReason,
    message: String,
) -> RunError {
    let mut e = FailoverError::new(reason, message);
    e.provider = Some(resolved.provider.clone());
    e.model = Some(resolved.model.id.clone());
    e.profile_id = resolved.profile(st.candidate).map(str::to_owned);
    RunError::from(e)
}

/// Records a failed call on the current profile (never for timeouts or unknown reasons). A
/// failed write of the profile state does not end the run, but it is named in the result's
/// warnings: the cooldown it should have started is not in the file.
fn record_failure(resolved: &Resolved, st: &mut LoopState, reason: Option<FailoverReason>) {
    let (Some(id), Some(r)) = (
        resolved.profile(st.candidate),
        reason.and_then(recordable_failure),
    ) else {
        return;
    };
    if let Err(e) = resolved.store.mark_failure(id, r, None) {
        warn(
            st,
            format!("the failure of auth profile {id} was not recorded: {e}"),
        );
    }
}

fn mark_success(resolved: &Resolved, st: &mut LoopState) {
    let Some(id) = resolved.profile(st.candidate).map(str::to_owned) else {
        return;
    };
    let written = resolved
        .store
        .mark_good(&id)
        .and_then(|()| resolved.store.mark_used(&id, None));
    if let Err(e) = written {
        warn(
            st,
            format!("the use of auth profile {id} was not recorded: {e}"),
        );
    }
}

fn warn(st: &mut LoopState, warning: String) {
    if !st.warnings.contains(&warning) {
        st.warnings.push(warning);
    }
}

/// `advance_auth_profile`: the next profile, with the thinking level reset.
fn rotate(resolved: &Resolved, st: &mut LoopState) -> bool {
    match resolved.advance(st.candidate) {
        Some(next) => {
            st.candidate = next;
            st.think = st.initial_think;
            st.attempted.clear();
            true
        }
        None => false,
    }
}

/// Overload backoff: 250 ms × 2ⁿ, at most 1.5 s.
async fn overload_backoff(attempt: usize) {
    let exp = u32::try_from(attempt.saturating_sub(1))
        .unwrap_or(u32::MAX)
        .min(8);
    let ms = (250u64 << exp).min(1_500);
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Cancels `run` when `abort` is cancelled (and stops watching when the run ends).
fn link_abort(abort: &CancellationToken, run: &CancellationToken) -> tokio_util::sync::DropGuard {
    let done = CancellationToken::new();
    let (abort, run2, done2) = (abort.clone(), run.clone(), done.clone());
    tokio::spawn(async move {
        tokio::select! {
            () = abort.cancelled() => run2.cancel(),
            () = done2.cancelled() => {}
        }
    });
    done.drop_guard()
}

fn finish(
    resolved: &Resolved,
    st: &LoopState,
    params: &RunParams,
    started: Instant,
    mut r: RunResult,
) -> RunResult {
    r.meta.duration = started.elapsed();
    r.meta.warnings.clone_from(&st.warnings);
    r.meta.agent_meta = Some(AgentMeta {
        session_id: params.session_id.clone(),
        provider: resolved.provider.clone(),
        model: resolved.model.id.clone(),
        usage: st.usage.totals(),
        last_call_usage: st.usage.last_call,
        prompt_tokens: st.usage.prompt_tokens(),
        compaction_count: (st.compactions > 0).then_some(st.compactions),
        profile_id: resolved.profile(st.candidate).map(str::to_owned),
    });
    r
}
