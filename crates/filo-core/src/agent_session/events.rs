//! Session events: the agent's events plus auto-compaction and auto-retry (pi spec §3.12), with
//! pi's JSON shapes for the JSON and RPC modes.

use filo_agent::AgentEvent;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// Why an automatic compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionReason {
    Threshold,
    Overflow,
}

impl CompactionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionReason::Threshold => "threshold",
            CompactionReason::Overflow => "overflow",
        }
    }
}

/// What a compaction produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionResult {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    pub details: serde_json::Value,
}

/// One event of an [`AgentSession`](super::AgentSession).
#[derive(Debug, Clone)]
pub enum SessionEvent {
    Agent(AgentEvent),
    AutoCompactionStart {
        reason: CompactionReason,
    },
    AutoCompactionEnd {
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
    /// Something went wrong that did not stop the session (e.g. a session file write failed).
    Warning {
        message: String,
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
            SessionEvent::AutoCompactionStart { reason } => {
                map.serialize_entry("type", "auto_compaction_start")?;
                map.serialize_entry("reason", reason.as_str())?;
            }
            SessionEvent::AutoCompactionEnd {
                result,
                aborted,
                will_retry,
                error_message,
            } => {
                map.serialize_entry("type", "auto_compaction_end")?;
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
            SessionEvent::Warning { message } => {
                map.serialize_entry("type", "warning")?;
                map.serialize_entry("message", message)?;
            }
        }
        map.end()
    }
}
