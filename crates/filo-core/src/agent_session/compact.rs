//! Compaction in the session: the threshold check after runs and before prompts, automatic
//! compaction with its events, and `/compact` (pi spec §5.2).

use tokio_util::sync::CancellationToken;

use super::{AgentSession, CompactionReason, CompactionResult, SessionEvent, lock};
use crate::CoreError;
use crate::compaction::{CompactionSettings, estimate_context_tokens, should_compact};
use crate::convert::to_session;
use crate::extension::{CompactionContext, CompactionDecision};
use filo_ai::StopReason;

impl AgentSession {
    pub(super) fn compaction_settings(&self) -> CompactionSettings {
        lock(&self.inner.settings).values().compaction()
    }

    /// Threshold check on the last assistant message; compacts when needed. Returns true when a
    /// compaction ran.
    pub(super) async fn check_compaction(&self, after_run: bool) -> bool {
        let settings = self.compaction_settings();
        let Some(model) = self.model() else {
            return false;
        };
        let Some(last) = self.last_assistant() else {
            return false;
        };
        if !settings.enabled || (after_run && last.stop_reason == StopReason::Aborted) {
            return false;
        }
        let last_compaction_ms = {
            let store = lock(&self.inner.store);
            store
                .on_branch_nearest_first(None, "compaction")
                .find_map(|e| filo_session::ids::ms_from_iso(&e.timestamp))
        };
        if last_compaction_ms.is_some_and(|c| last.timestamp <= c) {
            return false;
        }
        let tokens = if last.stop_reason == StopReason::Error {
            let session: Vec<_> = self.messages().iter().filter_map(to_session).collect();
            estimate_context_tokens(&session)
        } else {
            crate::compaction::calculate_context_tokens(&last.usage)
        };
        if tokens == 0 || !should_compact(tokens, model.context_window, &settings) {
            return false;
        }
        self.auto_compact(CompactionReason::Threshold, false).await
    }

    /// Run an automatic compaction with its start/end events. Returns true on success.
    pub(super) async fn auto_compact(&self, reason: CompactionReason, will_retry: bool) -> bool {
        self.emit(&SessionEvent::CompactionStart { reason });
        match self.compact_inner(None).await {
            Ok(result) => {
                self.emit(&SessionEvent::CompactionEnd {
                    reason,
                    result: Some(result),
                    aborted: false,
                    will_retry,
                    error_message: None,
                });
                true
            }
            Err(CompactError::Cancelled) => {
                self.emit(&SessionEvent::CompactionEnd {
                    reason,
                    result: None,
                    aborted: true,
                    will_retry: false,
                    error_message: None,
                });
                false
            }
            Err(CompactError::Failed(msg)) => {
                let prefix = match reason {
                    CompactionReason::Overflow => "Context overflow recovery failed",
                    CompactionReason::Threshold => "Auto-compaction failed",
                    CompactionReason::Manual => "Compaction failed",
                };
                self.emit(&SessionEvent::CompactionEnd {
                    reason,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error_message: Some(format!("{prefix}: {msg}")),
                });
                false
            }
            Err(CompactError::NotPossible(_)) => {
                self.emit(&SessionEvent::CompactionEnd {
                    reason,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error_message: None,
                });
                false
            }
        }
    }

    /// Compact the session now (pi's `/compact`): aborts a running turn first.
    pub async fn compact(
        &self,
        custom_instructions: Option<&str>,
    ) -> Result<CompactionResult, CoreError> {
        self.abort().await;
        let reason = CompactionReason::Manual;
        self.emit(&SessionEvent::CompactionStart { reason });
        let outcome = self.compact_inner(custom_instructions).await;
        let (result, aborted, error_message) = match &outcome {
            Ok(r) => (Some(r.clone()), false, None),
            Err(CompactError::Cancelled) => (None, true, None),
            Err(CompactError::Failed(m) | CompactError::NotPossible(m)) => {
                (None, false, Some(format!("Compaction failed: {m}")))
            }
        };
        self.emit(&SessionEvent::CompactionEnd {
            reason,
            result,
            aborted,
            will_retry: false,
            error_message,
        });
        outcome.map_err(|e| match e {
            CompactError::Cancelled => CoreError::Refused("Compaction cancelled".into()),
            CompactError::Failed(m) | CompactError::NotPossible(m) => CoreError::Refused(m),
        })
    }

    async fn compact_inner(&self, custom: Option<&str>) -> Result<CompactionResult, CompactError> {
        let model = self
            .model()
            .ok_or(CompactError::NotPossible("No model selected".into()))?;
        let key = (self.inner.api_key)(&model.provider).ok_or_else(|| {
            CompactError::NotPossible(format!("No API key for {}", model.provider))
        })?;
        let settings = self.compaction_settings();
        let prep = {
            let store = lock(&self.inner.store);
            let path = store.branch_path(None);
            if matches!(
                path.last().map(|e| &e.kind),
                Some(filo_session::EntryKind::Compaction { .. })
            ) {
                return Err(CompactError::NotPossible("Already compacted".into()));
            }
            crate::compaction::prepare_compaction(&path, &settings)
        };
        // pi 1.6: a history that all fits in `keepRecentTokens` leaves nothing to summarise.
        let prep = prep
            .filter(|p| !(p.messages_to_summarize.is_empty() && p.turn_prefix_messages.is_empty()))
            .ok_or(CompactError::NotPossible(
                "Nothing to compact (session too small)".into(),
            ))?;
        let cancel = CancellationToken::new();
        lock(&self.inner.state).compaction_cancel = Some(cancel.clone());
        let hook_ctx = CompactionContext {
            client: self.inner.client.clone(),
            model: model.clone(),
            api_key: Some(key.clone()).filter(|k| !k.is_empty()),
            reserve_tokens: settings.reserve_tokens,
            custom_instructions: custom.map(str::to_owned),
            cancel: cancel.clone(),
            thinking_level: self.thinking_level(),
        };
        for ext in &self.inner.extensions {
            match ext.before_compact(&prep, &hook_ctx).await {
                None => continue,
                Some(decision) => {
                    lock(&self.inner.state).compaction_cancel = None;
                    return self.apply_compaction_decision(decision);
                }
            }
        }
        // pi 0.73 asks for the summary at the session's thinking level.
        let request = crate::compaction::SummaryRequest {
            api_key: Some(key).filter(|k| !k.is_empty()),
            reserve_tokens: settings.reserve_tokens,
            thinking: hook_ctx.thinking_level,
        };
        let summary = crate::compaction::generate_summary_with_usage(
            self.inner.client.as_ref(),
            &model,
            &request,
            &prep,
            custom,
            cancel,
        )
        .await;
        lock(&self.inner.state).compaction_cancel = None;
        let (summary, usage) = summary.map_err(|e| match e {
            crate::compaction::SummaryError::Cancelled => CompactError::Cancelled,
            // pi's texts keep the summarizer's prefix ("Summarization failed: …").
            e @ (crate::compaction::SummaryError::Failed(_)
            | crate::compaction::SummaryError::PrefixFailed(_)) => {
                CompactError::Failed(e.to_string())
            }
        })?;
        let details = serde_json::json!({
            "readFiles": prep.read_files.iter().collect::<Vec<_>>(),
            "modifiedFiles": prep.modified_files.iter().collect::<Vec<_>>(),
        });
        self.append_entry(filo_session::EntryKind::Compaction {
            summary: summary.clone(),
            first_kept_entry_id: prep.first_kept_entry_id.clone(),
            tokens_before: prep.tokens_before,
            details: Some(details.clone()),
            from_hook: Some(false),
            usage: None,
            system_message: None,
        });
        self.reload_messages_from_session();
        Ok(CompactionResult {
            summary,
            first_kept_entry_id: prep.first_kept_entry_id,
            tokens_before: prep.tokens_before,
            estimated_tokens_after: self.estimated_context_tokens(),
            usage: Some(usage),
            details,
        })
    }
}

impl AgentSession {
    /// An extension's compaction (written with `fromHook: true`), or its cancel.
    fn apply_compaction_decision(
        &self,
        decision: CompactionDecision,
    ) -> Result<CompactionResult, CompactError> {
        let (summary, first_kept_entry_id, tokens_before, details) = match decision {
            CompactionDecision::Cancel { .. } => return Err(CompactError::Cancelled),
            CompactionDecision::Replace {
                summary,
                first_kept_entry_id,
                tokens_before,
                details,
            } => (summary, first_kept_entry_id, tokens_before, details),
        };
        self.append_entry(filo_session::EntryKind::Compaction {
            summary: summary.clone(),
            first_kept_entry_id: first_kept_entry_id.clone(),
            tokens_before,
            details: details.clone(),
            from_hook: Some(true),
            usage: None,
            system_message: None,
        });
        self.reload_messages_from_session();
        Ok(CompactionResult {
            summary,
            first_kept_entry_id,
            tokens_before,
            estimated_tokens_after: self.estimated_context_tokens(),
            usage: None,
            details: details.unwrap_or(serde_json::Value::Null),
        })
    }

    /// pi 1.6's `estimatedTokensAfter`: the character estimate of every message in the context
    /// as it is now (no provider usage).
    fn estimated_context_tokens(&self) -> u64 {
        self.messages()
            .iter()
            .filter_map(to_session)
            .map(|m| crate::compaction::estimate_tokens(&m))
            .sum()
    }
}

enum CompactError {
    Cancelled,
    Failed(String),
    NotPossible(String),
}
