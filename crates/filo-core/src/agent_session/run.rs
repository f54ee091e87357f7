//! Running prompts: expansion, queueing while streaming, auto-retry and auto-compaction
//! (pi spec §3.12, §5.2).

use std::sync::Arc;
use std::time::Duration;

use filo_agent::{AgentMessage, ResultOverride, ToolCallDecision, ToolCallInfo, ToolCallResult};
use filo_ai::{AssistantMessage, ContentBlock, StopReason};
use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use super::{AgentSession, CompactionReason, SessionEvent, lock};
use crate::CoreError;
use crate::extension::{InputAction, ToolCallEvent};
use crate::resources::{expand_prompt_template, expand_skill_command};

/// How a prompt sent while the agent works is delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamingBehavior {
    Steer,
    FollowUp,
}

/// What happened to a prompt that passed its preflight (pi 1.6's `disposition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// A run started for it.
    Started,
    /// It was queued (steer / follow-up) for the run in progress.
    Queued,
    /// A command or an extension consumed it; no run started.
    Handled,
}

impl Disposition {
    /// pi's string for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Started => "started",
            Disposition::Queued => "queued",
            Disposition::Handled => "handled",
        }
    }
}

/// Told once whether a prompt passed its preflight: `Some(disposition)` when it was accepted,
/// `None` when [`AgentSession::prompt`] is about to return the refusal as its error.
pub type PreflightHook = Arc<dyn Fn(Option<Disposition>) + Send + Sync>;

/// Options of [`AgentSession::prompt`].
#[derive(Clone)]
pub struct PromptOptions {
    /// Expand `/skill:name` and prompt templates (default true).
    pub expand: bool,
    pub images: Vec<ContentBlock>,
    /// Required when the agent is streaming.
    pub streaming_behavior: Option<StreamingBehavior>,
    /// Told once whether the prompt passed its preflight (pi's `preflightResult`): its
    /// [`Disposition`] when it was accepted, `None` when `prompt` is about to return the refusal
    /// as its error.
    pub preflight: Option<PreflightHook>,
}

impl std::fmt::Debug for PromptOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptOptions")
            .field("expand", &self.expand)
            .field("images", &self.images.len())
            .field("streaming_behavior", &self.streaming_behavior)
            .field("preflight", &self.preflight.is_some())
            .finish()
    }
}

impl Default for PromptOptions {
    fn default() -> Self {
        PromptOptions {
            expand: true,
            images: Vec::new(),
            streaming_behavior: None,
            preflight: None,
        }
    }
}

const RETRYABLE: &[&str] = &[
    "overloaded",
    "ratelimit",
    "rate limit",
    "rate-limit",
    "rate_limit",
    "too many requests",
    "429",
    "500",
    "502",
    "503",
    "504",
    "serviceunavailable",
    "service unavailable",
    "service_unavailable",
    "service-unavailable",
    "servererror",
    "server error",
    "server_error",
    "server-error",
    "internalerror",
    "internal error",
    "internal_error",
    "internal-error",
    "connectionerror",
    "connection error",
    "connection_error",
    "connection-error",
    "connectionrefused",
    "connection refused",
    "connection_refused",
    "connection-refused",
    "other side closed",
    "fetch failed",
    "upstreamconnect",
    "upstream connect",
    "upstream_connect",
    "upstream-connect",
    "reset before headers",
    "terminated",
    "retry delay",
];

/// pi's retryable-error test: an `error` stop with a message matching the transient patterns that
/// is not a context overflow.
pub fn is_retryable(m: &AssistantMessage, context_window: u64) -> bool {
    if m.stop_reason != StopReason::Error {
        return false;
    }
    let Some(text) = m.error_message.as_deref() else {
        return false;
    };
    // The client already retried this failure (or the server asked for a wait above the cap):
    // retrying it again here would multiply the requests per failure.
    if filo_ai::error::client_gave_up(text) {
        return false;
    }
    if filo_ai::is_context_overflow(m, Some(context_window)) {
        return false;
    }
    let lower = text.to_lowercase();
    RETRYABLE.iter().any(|p| lower.contains(p))
}

fn user_message(text: String, images: Vec<ContentBlock>) -> AgentMessage {
    let mut blocks = vec![ContentBlock::text(text)];
    blocks.extend(images);
    AgentMessage::user_blocks(blocks)
}

/// Marks a prompt's preflight (before the agent run starts); leaving it forgets an abort that
/// did not find its run (the prompt ended another way).
struct PreflightGuard<'a>(&'a AgentSession);

impl<'a> PreflightGuard<'a> {
    fn enter(session: &'a AgentSession) -> Self {
        let mut st = lock(&session.inner.state);
        st.in_preflight = true;
        st.abort_in_preflight = false;
        drop(st);
        PreflightGuard(session)
    }
}

impl Drop for PreflightGuard<'_> {
    fn drop(&mut self) {
        let mut st = lock(&self.0.inner.state);
        st.in_preflight = false;
        st.abort_in_preflight = false;
    }
}

impl AgentSession {
    fn expand(&self, text: &str) -> String {
        let r = lock(&self.inner.resources);
        let t = expand_skill_command(text, &r.skills);
        expand_prompt_template(&t, &r.templates)
    }

    pub(super) fn last_assistant(&self) -> Option<AssistantMessage> {
        self.inner.agent.find_last(|m| m.as_assistant().cloned())
    }

    /// Send a prompt and run the agent until it is idle, including retries and compaction.
    pub async fn prompt(&self, text: &str, mut opts: PromptOptions) -> Result<(), CoreError> {
        let preflight = opts.preflight.take();
        let told = std::sync::atomic::AtomicBool::new(false);
        let tell = |d: Option<Disposition>| {
            if let Some(hook) = &preflight
                && !told.swap(true, std::sync::atomic::Ordering::SeqCst)
            {
                hook(d);
            }
        };
        let result = self.prompt_inner(text, opts, &tell).await;
        // A success the hook was not told about was handled without a run (an extension's
        // command); a failure before acceptance is the refusal. Once told, this does nothing.
        tell(result.is_ok().then_some(Disposition::Handled));
        result
    }

    async fn prompt_inner(
        &self,
        text: &str,
        opts: PromptOptions,
        accepted: &(dyn Fn(Option<Disposition>) + Sync),
    ) -> Result<(), CoreError> {
        if opts.expand && text.starts_with('/') {
            let name = text[1..].split_whitespace().next().unwrap_or("");
            for ext in &self.inner.extensions {
                if let Some(cmd) = ext.commands().into_iter().find(|c| c.name == name) {
                    let args = text[1 + name.len()..].trim().to_string();
                    return (cmd.run)(args).await.map_err(|source| CoreError::Command {
                        name: cmd.name.clone(),
                        source,
                    });
                }
            }
        }
        let mut text = text.to_string();
        for ext in &self.inner.extensions {
            match ext.input(&text) {
                InputAction::Continue => {}
                InputAction::Transform(t) => text = t,
                InputAction::Handled => {
                    accepted(Some(Disposition::Handled));
                    return Ok(());
                }
            }
        }
        if opts.expand {
            text = self.expand(&text);
        }
        if self.inner.agent.is_streaming() {
            return match opts.streaming_behavior {
                Some(StreamingBehavior::Steer) => {
                    lock(&self.inner.state).pending_steer.push(text.clone());
                    self.emit_queue_update();
                    self.inner.agent.steer(user_message(text, opts.images));
                    accepted(Some(Disposition::Queued));
                    Ok(())
                }
                Some(StreamingBehavior::FollowUp) => {
                    lock(&self.inner.state).pending_follow_up.push(text.clone());
                    self.emit_queue_update();
                    self.inner.agent.follow_up(user_message(text, opts.images));
                    accepted(Some(Disposition::Queued));
                    Ok(())
                }
                None => Err(CoreError::Refused(
                    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
                        .into(),
                )),
            };
        }
        self.flush_pending_bash();
        let _preflight = PreflightGuard::enter(self);
        let model = self.model().ok_or_else(|| {
            CoreError::Refused(
                "No model selected. Set an API key or start a local model, then choose a model."
                    .into(),
            )
        })?;
        if (self.inner.api_key)(&model.provider).is_none() {
            return Err(CoreError::Refused(format!(
                "No API key found for {}. Set an API key environment variable or add it to auth.json.",
                model.provider
            )));
        }
        self.check_compaction(false).await;
        let base = lock(&self.inner.base_system_prompt).clone();
        let mut system_prompt = base.clone();
        let mut messages = vec![user_message(text.clone(), opts.images)];
        for ext in &self.inner.extensions {
            let r = ext.before_agent_start(&text, &system_prompt).await;
            if let Some(sp) = r.system_prompt {
                system_prompt = sp;
            }
            messages.extend(r.messages);
        }
        self.inner.agent.set_system_prompt(system_prompt);
        lock(&self.inner.state).overflow_attempted = false;
        let _busy = BusyGuard::enter(&self.inner.busy);
        {
            let mut st = lock(&self.inner.state);
            st.in_preflight = false;
            st.run_abort_requested = false;
            if std::mem::take(&mut st.abort_in_preflight) {
                // Aborted before the run existed: nothing is sent, nothing is recorded; the
                // prompt was accepted and its chain ends here, aborted.
                drop(st);
                self.inner.agent.set_system_prompt(base);
                accepted(Some(Disposition::Started));
                self.emit(&SessionEvent::AgentSettled { aborted: true });
                return Ok(());
            }
        }
        accepted(Some(Disposition::Started));
        let result = self.inner.agent.prompt(messages).await;
        if result.is_ok() {
            self.after_run().await;
        }
        self.inner.agent.set_system_prompt(base);
        self.emit_settled();
        result.map_err(CoreError::Agent)
    }

    /// `agent_settled`: the chain that just ended has no automatic work left.
    fn emit_settled(&self) {
        let aborted = std::mem::take(&mut lock(&self.inner.state).run_abort_requested);
        self.emit(&SessionEvent::AgentSettled { aborted });
    }

    /// pi's `willRetry` for an `agent_end` carrying `messages`: not aborted, retries enabled and
    /// left, and the run's last assistant message failed in a retryable way.
    pub(super) fn will_retry_after(&self, messages: &[AgentMessage]) -> bool {
        let (aborted, attempt) = {
            let st = lock(&self.inner.state);
            (st.run_abort_requested, st.retry_attempt)
        };
        if aborted {
            return false;
        }
        let (enabled, max) = {
            let s = lock(&self.inner.settings);
            (s.values().retry_enabled(), s.values().retry_max_retries())
        };
        if !enabled || attempt >= max {
            return false;
        }
        let window = self.model().map_or(0, |m| m.context_window);
        messages
            .iter()
            .rev()
            .find_map(AgentMessage::as_assistant)
            .is_some_and(|a| is_retryable(a, window))
    }

    /// Continue from the current context without a new prompt (e.g. after a jump the user made:
    /// the context ends with the carryover), with retries and compaction as after a prompt.
    pub async fn continue_run(&self) -> Result<(), CoreError> {
        let _busy = BusyGuard::enter(&self.inner.busy);
        lock(&self.inner.state).run_abort_requested = false;
        let result = self.inner.agent.continue_run().await;
        if result.is_ok() {
            self.after_run().await;
        }
        self.emit_settled();
        result.map_err(CoreError::Agent)
    }

    /// Wait until no prompt chain is running: the run, its retries, compactions and any
    /// continuation an extension started (e.g. after `tobe`) are all covered.
    pub async fn wait_for_idle(&self) {
        loop {
            let mut rx = self.inner.busy.subscribe();
            let _ = rx.wait_for(|n| *n == 0).await;
            self.inner.agent.wait_for_idle().await;
            if *self.inner.busy.borrow() == 0 {
                return;
            }
        }
    }

    /// Queue a steering message (delivered after the current tool calls).
    pub fn steer(&self, text: &str, images: Vec<ContentBlock>) {
        let t = self.expand(text);
        lock(&self.inner.state).pending_steer.push(t.clone());
        self.emit_queue_update();
        self.inner.agent.steer(user_message(t, images));
    }

    /// Queue a follow-up message (delivered when the agent would stop).
    pub fn follow_up(&self, text: &str, images: Vec<ContentBlock>) {
        let t = self.expand(text);
        lock(&self.inner.state).pending_follow_up.push(t.clone());
        self.emit_queue_update();
        self.inner.agent.follow_up(user_message(t, images));
    }

    /// Abort the run, a pending retry and a running compaction; wait until idle.
    pub async fn abort(&self) {
        let running = *self.inner.busy.borrow() > 0;
        {
            let mut st = lock(&self.inner.state);
            if st.in_preflight {
                st.abort_in_preflight = true;
            }
            if running {
                st.run_abort_requested = true;
            }
            if let Some(c) = &st.retry_cancel {
                c.cancel();
            }
            if let Some(c) = &st.compaction_cancel {
                c.cancel();
            }
        }
        self.inner.agent.abort();
        self.inner.agent.wait_for_idle().await;
    }

    /// Drop the trailing error message from the agent's state (it stays in the session file).
    fn drop_trailing_error(&self) {
        let mut ms = self.inner.agent.messages();
        if ms
            .last()
            .and_then(AgentMessage::as_assistant)
            .is_some_and(|a| a.stop_reason == StopReason::Error)
        {
            ms.pop();
            self.inner.agent.replace_messages(ms);
        }
    }

    /// After a run: retry transient errors, recover from overflow, compact on threshold.
    async fn after_run(&self) {
        loop {
            if self.run_extension_continuation().await {
                continue;
            }
            let Some(last) = self.last_assistant() else {
                break;
            };
            let window = self.model().map_or(0, |m| m.context_window);
            let retry_enabled = self
                .inner
                .settings
                .lock()
                .map_or(true, |s| s.values().retry_enabled());
            if retry_enabled && is_retryable(&last, window) {
                if self.retry_once(&last).await {
                    continue;
                }
                break;
            }
            self.finish_retry_chain(&last);
            let same_model = self
                .model()
                .is_some_and(|m| m.provider == last.provider && m.id == last.model);
            if same_model && filo_ai::is_context_overflow(&last, Some(window)) {
                let attempted =
                    std::mem::replace(&mut lock(&self.inner.state).overflow_attempted, true);
                if attempted {
                    self.emit(&SessionEvent::CompactionEnd {
                        reason: CompactionReason::Overflow,
                        result: None,
                        aborted: false,
                        will_retry: false,
                        error_message: Some("Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.".into()),
                    });
                    break;
                }
                self.drop_trailing_error();
                if self.auto_compact(CompactionReason::Overflow, true).await {
                    // The compaction rebuilt the context from the session, where the failed
                    // answer is kept; the retry continues from the user's message (pi 0.73).
                    self.drop_trailing_error();
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if self.inner.agent.continue_run().await.is_ok() {
                        continue;
                    }
                }
                break;
            }
            if self.check_compaction(true).await && self.inner.agent.has_queued_messages() {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if self.inner.agent.continue_run().await.is_ok() {
                    continue;
                }
            }
            break;
        }
    }

    /// Ask extensions whether the finished run continues elsewhere (pi's tobe auto-continue):
    /// replace the context and continue at once, retrying while the agent is still busy.
    async fn run_extension_continuation(&self) -> bool {
        let next = self.inner.extensions.iter().find_map(|e| e.run_finished());
        let Some(messages) = next else { return false };
        self.inner.agent.replace_messages(messages);
        for _ in 0..5 {
            match self.inner.agent.continue_run().await {
                Err(filo_agent::AgentError::ContinueWhileRunning) => {
                    self.inner.agent.wait_for_idle().await
                }
                _ => return true,
            }
        }
        false
    }

    /// One retry step. Returns true when the agent ran again.
    async fn retry_once(&self, last: &AssistantMessage) -> bool {
        let (max, base) = {
            let s = lock(&self.inner.settings);
            (
                s.values().retry_max_retries(),
                s.values().retry_base_delay_ms(),
            )
        };
        let attempt = {
            let mut st = lock(&self.inner.state);
            st.retry_attempt += 1;
            st.retry_attempt
        };
        let error_message = last.error_message.clone().unwrap_or_default();
        if attempt > max {
            lock(&self.inner.state).retry_attempt = 0;
            self.emit(&SessionEvent::AutoRetryEnd {
                success: false,
                attempt: attempt - 1,
                final_error: Some(error_message),
            });
            return false;
        }
        let delay_ms = base.saturating_mul(1u64 << (attempt - 1).min(20));
        self.emit(&SessionEvent::AutoRetryStart {
            attempt,
            max_attempts: max,
            delay_ms,
            error_message,
        });
        self.drop_trailing_error();
        let cancel = CancellationToken::new();
        lock(&self.inner.state).retry_cancel = Some(cancel.clone());
        let cancelled = tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(delay_ms)) => false,
            () = cancel.cancelled() => true,
        };
        lock(&self.inner.state).retry_cancel = None;
        if cancelled {
            lock(&self.inner.state).retry_attempt = 0;
            self.emit(&SessionEvent::AutoRetryEnd {
                success: false,
                attempt,
                final_error: Some("Retry cancelled".into()),
            });
            return false;
        }
        self.inner.agent.continue_run().await.is_ok()
    }

    fn finish_retry_chain(&self, last: &AssistantMessage) {
        let attempt = std::mem::take(&mut lock(&self.inner.state).retry_attempt);
        if attempt > 0 && last.stop_reason != StopReason::Error {
            self.emit(&SessionEvent::AutoRetryEnd {
                success: true,
                attempt,
                final_error: None,
            });
        }
    }

    /// Replace the agent's messages with the session's context at its leaf.
    pub(crate) fn reload_messages_from_session(&self) {
        let ctx = lock(&self.inner.store).build_context();
        self.inner.agent.replace_messages(
            ctx.messages
                .into_iter()
                .map(crate::convert::into_agent)
                .collect(),
        );
    }

    /// Route the agent's tool hooks through the extensions.
    pub(super) fn install_tool_hooks(&self) {
        if self.inner.extensions.is_empty() {
            return;
        }
        let exts = self.inner.extensions.clone();
        self.inner
            .agent
            .set_before_tool_call(Some(Arc::new(move |info: ToolCallInfo, _c| {
                let exts = exts.clone();
                async move {
                    let ev = ToolCallEvent::from_info(&info);
                    for e in &exts {
                        if let Some(reason) = e.tool_call(&ev).await {
                            return Ok(ToolCallDecision::Block {
                                reason: Some(reason),
                            });
                        }
                    }
                    Ok(ToolCallDecision::Allow)
                }
                .boxed()
            })));
        let exts = self.inner.extensions.clone();
        self.inner.agent.set_after_tool_call(Some(Arc::new(
            move |info: ToolCallInfo, result: ToolCallResult, _c| {
                let exts = exts.clone();
                async move {
                    let ev = ToolCallEvent::from_info(&info);
                    let mut out = ResultOverride::default();
                    let (mut cur, mut is_err) = (result.result, result.is_error);
                    for e in &exts {
                        if let Some((r, err)) = e.tool_result(&ev, &cur, is_err) {
                            out.content = Some(r.content.clone());
                            out.details = r.details.clone();
                            out.is_error = Some(err);
                            cur = r;
                            is_err = err;
                        }
                    }
                    Ok(out)
                }
                .boxed()
            },
        )));
    }
}

/// Counts a prompt chain as running until dropped.
struct BusyGuard<'a>(&'a tokio::sync::watch::Sender<u32>);

impl<'a> BusyGuard<'a> {
    fn enter(busy: &'a tokio::sync::watch::Sender<u32>) -> Self {
        busy.send_modify(|n| *n += 1);
        BusyGuard(busy)
    }
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}
