//! Session events: the agent's events plus compaction, auto-retry, the message queues, the
//! session name, the thinking level, the end of all automatic work (`agent_settled`) and user
//! bash output, named and shaped as pi 1.6 emits them for the JSON and RPC modes.

use filo_agent::AgentEvent;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// Why a compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionReason {
    /// `/compact` or RPC `compact`.
    Manual,
    Threshold,
    Overflow,
}

impl CompactionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionReason::Manual => "manual",
            CompactionReason::Threshold => "threshold",
            CompactionReason::Overflow => "overflow",
        }
    }
}

/// What a compaction produced (pi 1.6's `CompactionResult`, key order as pi writes it).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionResult {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    /// A heuristic estimate of the context rebuilt right after the compaction.
    pub estimated_tokens_after: u64,
    /// What the summary requests cost; absent when an extension supplied the summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<filo_ai::Usage>,
    pub details: serde_json::Value,
}

/// One event of an [`AgentSession`](super::AgentSession).
#[derive(Debug, Clone)]
pub enum SessionEvent {
    Agent(AgentEvent),
    CompactionStart {
        reason: CompactionReason,
    },
    CompactionEnd {
        reason: CompactionReason,
        result: Option<CompactionResult>,
        aborted: bool,
        will_retry: bool,
        error_message: Option<String>,
    },
    AutoRetryStart {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
    AutoRetryEnd {
        success: bool,
        attempt: u32,
        final_error: Option<String>,
    },
    /// The steering or follow-up queue changed; both queues as they are now.
    QueueUpdate {
        steering: Vec<String>,
        follow_up: Vec<String>,
    },
    /// The session was (re)named.
    SessionInfoChanged {
        name: Option<String>,
    },
    /// The thinking level changed (after clamping to the model).
    ThinkingLevelChanged {
        level: &'static str,
    },
    /// Something went wrong that did not stop the session (e.g. a session file write failed).
    Warning {
        message: String,
    },
    /// A prompt chain (the run, its retries, compactions, queued messages) has no automatic work
    /// left; `aborted` when it ended because it was aborted (pi 1.6's `agent_settled`).
    AgentSettled {
        aborted: bool,
    },
    /// A chunk of a running user bash command's output; `id` is the RPC command's id, if any.
    BashExecutionUpdate {
        id: Option<serde_json::Value>,
        delta: String,
    },
}

impl Serialize for SessionEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = match self {
            SessionEvent::Agent(e) => return e.serialize(serializer),
            _ => serializer.serialize_map(None)?,
        };
        match self {
            SessionEvent::Agent(_) => {}
            SessionEvent::CompactionStart { reason } => {
                map.serialize_entry("type", "compaction_start")?;
                map.serialize_entry("reason", reason.as_str())?;
            }
            SessionEvent::CompactionEnd {
                reason,
                result,
                aborted,
                will_retry,
                error_message,
            } => {
                map.serialize_entry("type", "compaction_end")?;
                map.serialize_entry("reason", reason.as_str())?;
                if let Some(r) = result {
                    map.serialize_entry("result", r)?;
                }
                map.serialize_entry("aborted", aborted)?;
                map.serialize_entry("willRetry", will_retry)?;
                if let Some(e) = error_message {
                    map.serialize_entry("errorMessage", e)?;
                }
            }
            SessionEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => {
                map.serialize_entry("type", "auto_retry_start")?;
                map.serialize_entry("attempt", attempt)?;
                map.serialize_entry("maxAttempts", max_attempts)?;
                map.serialize_entry("delayMs", delay_ms)?;
                map.serialize_entry("errorMessage", error_message)?;
            }
            SessionEvent::AutoRetryEnd {
                success,
                attempt,
                final_error,
            } => {
                map.serialize_entry("type", "auto_retry_end")?;
                map.serialize_entry("success", success)?;
                map.serialize_entry("attempt", attempt)?;
                if let Some(e) = final_error {
                    map.serialize_entry("finalError", e)?;
                }
            }
            SessionEvent::QueueUpdate {
                steering,
                follow_up,
            } => {
                map.serialize_entry("type", "queue_update")?;
                map.serialize_entry("steering", steering)?;
                map.serialize_entry("followUp", follow_up)?;
            }
            SessionEvent::SessionInfoChanged { name } => {
                map.serialize_entry("type", "session_info_changed")?;
                if let Some(n) = name {
                    map.serialize_entry("name", n)?;
                }
            }
            SessionEvent::ThinkingLevelChanged { level } => {
                map.serialize_entry("type", "thinking_level_changed")?;
                map.serialize_entry("level", level)?;
            }
            SessionEvent::Warning { message } => {
                map.serialize_entry("type", "warning")?;
                map.serialize_entry("message", message)?;
            }
            SessionEvent::AgentSettled { aborted } => {
                map.serialize_entry("type", "agent_settled")?;
                map.serialize_entry("aborted", aborted)?;
            }
            SessionEvent::BashExecutionUpdate { id, delta } => {
                map.serialize_entry("type", "bash_execution_update")?;
                if let Some(id) = id {
                    map.serialize_entry("id", id)?;
                }
                map.serialize_entry("delta", delta)?;
            }
        }
        map.end()
    }
}
