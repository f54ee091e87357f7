//! What a run tells the ones waiting for it: [`RunEvent`]s while it runs, then one
//! [`RunOutcome`].

use std::sync::Arc;
use std::time::Duration;

use filo_embed::run::payloads::ReplyPayload;
use filo_embed::usage::Usage;
use serde_json::Value;
use tokio::sync::mpsc;

/// One step of a run, in order.
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// What the visible reply gained (with `replace`, the text of a new assistant message that
    /// replaces the text so far). Never the whole text: a listener that falls behind holds what
    /// the reply added, not a copy of it per event.
    Delta { delta: Arc<str>, replace: bool },
    /// A lifecycle, tool or compaction event (OpenClaw's `agent` stream).
    Agent { stream: &'static str, data: Value },
    /// The run ended; nothing follows.
    End(Arc<RunOutcome>),
}

/// Where a run's events go.
pub type Listener = mpsc::UnboundedSender<RunEvent>;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Ok,
    Error,
    Aborted,
    Timeout,
}

impl RunStatus {
    /// OpenClaw's status word (`agent` results, `agent.wait`).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Error => "error",
            RunStatus::Aborted => "aborted",
            RunStatus::Timeout => "timeout",
        }
    }
}

/// The end of a run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub run_id: String,
    /// Other requests answered by this run (messages collected into it).
    pub merged_run_ids: Vec<String>,
    pub session_key: String,
    pub agent_id: String,
    pub session_id: Option<String>,
    pub status: RunStatus,
    /// The reply as shown: the payload texts joined by blank lines (error copy included).
    pub text: String,
    pub payloads: Vec<ReplyPayload>,
    /// Why it failed, for `error` and `timeout`.
    pub error: Option<String>,
    pub stop_reason: Option<String>,
    pub usage: Usage,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub duration: Duration,
    /// What could not be kept (session file, memory, store).
    pub warnings: Vec<String>,
    pub ended_at_ms: i64,
    /// The run's last event seq (its `chat`/`agent` events count 1, 2, 3 …).
    pub last_seq: u64,
}

impl RunOutcome {
    /// Every request id this run answers.
    pub fn all_run_ids(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.run_id.as_str()).chain(self.merged_run_ids.iter().map(String::as_str))
    }

    /// OpenClaw's `errorKind` of a failed run.
    pub fn error_kind(&self) -> Option<&'static str> {
        match self.status {
            RunStatus::Timeout => Some("timeout"),
            RunStatus::Error => {
                let e = self.error.as_deref().unwrap_or("").to_lowercase();
                Some(if e.contains("rate limit") || e.contains("429") {
                    "rate_limit"
                } else if e.contains("database") && e.contains("is unavailable") {
                    "store_unavailable"
                } else if e.contains("context overflow") || e.contains("too large") {
                    "context_length"
                } else {
                    "unknown"
                })
            }
            RunStatus::Ok | RunStatus::Aborted => None,
        }
    }

    /// `input + cacheRead` (what OpenAI calls prompt tokens).
    pub fn prompt_tokens(&self) -> u64 {
        self.usage.input.unwrap_or(0) + self.usage.cache_read.unwrap_or(0)
    }

    pub fn completion_tokens(&self) -> u64 {
        self.usage.output.unwrap_or(0)
    }
}
