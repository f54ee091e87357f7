//! What one attempt observes while it runs: the session's events go through the subscriber
//! (C19) to the reply dispatcher, and the facts the run loop needs afterwards (usage per model
//! call, compactions, the last assistant message) are recorded here.

use std::sync::{Arc, Mutex, PoisonError};

use filo_agent::AgentMessage;
use filo_agent::event::AgentEvent;
use filo_ai::AssistantMessage;
use filo_core::agent_session::{CompactionReason, SessionEvent};

use crate::sink::{SinkAdapter, SinkCall};
use crate::subscriber::dispatch::BlockDispatcher;
use crate::subscriber::machine::Subscriber;
use crate::usage::Usage;

/// Facts recorded during an attempt.
#[derive(Debug, Default, Clone)]
pub(crate) struct Observed {
    /// Usage and cost of each model call, in order.
    pub calls: Vec<(Usage, f64)>,
    /// Compactions that produced a result.
    pub compactions: u32,
    /// A compaction for an overflow produced a result (filo-core retried the turn itself).
    pub overflow_compacted: bool,
    /// The error of a failed compaction (`Context overflow recovery failed: …`).
    pub compaction_error: Option<String>,
    pub last_assistant: Option<AssistantMessage>,
    /// What the session could not keep (a failed session write, an entry not in the memory).
    pub warnings: Vec<String>,
}

/// The listener state of one attempt.
pub(crate) struct AttemptListener {
    pub machine: Mutex<Subscriber>,
    pub adapter: SinkAdapter,
    pub dispatcher: Arc<BlockDispatcher<SinkCall>>,
    pub observed: Mutex<Observed>,
}

impl AttemptListener {
    /// Handles one session event (synchronously, inside the session's listener).
    pub fn on_event(&self, event: &SessionEvent) {
        let replies = {
            let mut machine = self.machine.lock().unwrap_or_else(PoisonError::into_inner);
            match event {
                SessionEvent::Agent(agent) => {
                    self.record(agent);
                    machine.handle(agent)
                }
                SessionEvent::CompactionStart { .. } => machine.compaction_start(),
                SessionEvent::CompactionEnd {
                    reason,
                    result,
                    will_retry,
                    error_message,
                    ..
                } => {
                    let mut o = self.observed.lock().unwrap_or_else(PoisonError::into_inner);
                    if result.is_some() {
                        o.compactions += 1;
                        if *reason == CompactionReason::Overflow {
                            o.overflow_compacted = true;
                        }
                    }
                    if let Some(e) = error_message {
                        o.compaction_error = Some(e.clone());
                    }
                    drop(o);
                    machine.compaction_end(*will_retry)
                }
                SessionEvent::AutoRetryStart { .. }
                | SessionEvent::AutoRetryEnd { .. }
                | SessionEvent::QueueUpdate { .. }
                | SessionEvent::SessionInfoChanged { .. }
                | SessionEvent::ThinkingLevelChanged { .. }
                | SessionEvent::AgentSettled { .. }
                | SessionEvent::BashExecutionUpdate { .. } => Vec::new(),
                SessionEvent::Warning { message } => {
                    let mut o = self.observed.lock().unwrap_or_else(PoisonError::into_inner);
                    if !o.warnings.contains(message) {
                        o.warnings.push(message.clone());
                    }
                    Vec::new()
                }
            }
        };
        for reply in replies {
            if let Some(call) = self.adapter.calls(reply) {
                // A failed sink is reported by `flush` at the end of the attempt.
                let _reported_later = self.dispatcher.send(call);
            }
        }
    }

    fn record(&self, event: &AgentEvent) {
        let AgentEvent::MessageEnd {
            message: AgentMessage::Llm(filo_ai::Message::Assistant(a)),
        } = event
        else {
            return;
        };
        let mut o = self.observed.lock().unwrap_or_else(PoisonError::into_inner);
        let u = &a.usage;
        let call = Usage {
            input: Some(u.input),
            output: Some(u.output),
            cache_read: Some(u.cache_read),
            cache_write: Some(u.cache_write),
            reasoning: None,
            total: (u.total_tokens > 0).then_some(u.total_tokens),
        };
        o.calls.push((call, u.cost.total));
        o.last_assistant = Some(a.clone());
    }
}
