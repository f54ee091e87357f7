//! The Agent's state and how each event updates it (pi spec §2.5), plus the message queues.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use filo_ai::{Accumulator, Model, ThinkingLevel};

use crate::config::ToolExecution;
use crate::event::AgentEvent;
use crate::message::AgentMessage;
use crate::tool::AgentTool;
use crate::toolset::ToolSet;

/// Lock a mutex; a panic elsewhere while holding it leaves data that is still consistent (every
/// update is a single assignment or push), so poisoning is ignored.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How queued steering / follow-up messages are handed to the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueMode {
    /// One message per poll (pi's `"one-at-a-time"`).
    #[default]
    OneAtATime,
    /// Everything queued, at once.
    All,
}

/// A queue of messages waiting for the loop.
#[derive(Debug, Default)]
pub(crate) struct MessageQueue {
    pub(crate) mode: QueueMode,
    items: VecDeque<AgentMessage>,
}

impl MessageQueue {
    pub(crate) fn new(mode: QueueMode) -> Self {
        MessageQueue {
            mode,
            items: VecDeque::new(),
        }
    }

    pub(crate) fn push(&mut self, m: AgentMessage) {
        self.items.push_back(m);
    }

    pub(crate) fn dequeue(&mut self) -> Vec<AgentMessage> {
        match self.mode {
            QueueMode::OneAtATime => self.items.pop_front().into_iter().collect(),
            QueueMode::All => self.items.drain(..).collect(),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.items.clear();
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// The message being streamed, as the state sees it.
#[derive(Debug, Clone)]
pub(crate) enum StreamView {
    /// A message whose `message_start` was seen.
    Started(Box<AgentMessage>),
    /// The live partial of the last `message_update`. A weak handle, so the loop can keep
    /// applying deltas in place; it reads as gone for the instant between a delta and its event.
    Live(Weak<Accumulator>),
}

/// A snapshot of the agent's state (pi's `AgentState`).
#[derive(Clone)]
pub struct AgentState {
    pub system_prompt: String,
    pub model: Option<Model>,
    pub thinking_level: ThinkingLevel,
    pub tools: Vec<Arc<dyn AgentTool>>,
    pub messages: Vec<AgentMessage>,
    pub is_streaming: bool,
    /// The message being streamed, if any.
    pub stream_message: Option<AgentMessage>,
    /// Ids of tool calls that started and have not ended, in start order.
    pub pending_tool_calls: Vec<String>,
    /// The error text of the last failed turn or run.
    pub error: Option<String>,
    pub tool_execution: ToolExecution,
}

impl std::fmt::Debug for AgentState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentState")
            .field("system_prompt", &self.system_prompt)
            .field("model", &self.model.as_ref().map(|m| &m.id))
            .field("thinking_level", &self.thinking_level)
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("messages", &self.messages.len())
            .field("is_streaming", &self.is_streaming)
            .field("pending_tool_calls", &self.pending_tool_calls)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

/// The mutable core behind the Agent's mutex.
pub(crate) struct State {
    pub(crate) system_prompt: String,
    pub(crate) model: Option<Model>,
    pub(crate) thinking_level: ThinkingLevel,
    pub(crate) tools: Arc<ToolSet>,
    pub(crate) messages: Vec<AgentMessage>,
    pub(crate) is_streaming: bool,
    pub(crate) stream: Option<StreamView>,
    pub(crate) pending_tool_calls: Vec<String>,
    pub(crate) error: Option<String>,
    pub(crate) tool_execution: ToolExecution,
}

impl State {
    /// Update the state for one event, before listeners see it.
    pub(crate) fn apply(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageStart { message } => {
                self.stream = Some(StreamView::Started(Box::new(message.clone())));
            }
            AgentEvent::MessageUpdate { partial, .. } => {
                // The same partial as the last delta's (the loop applies deltas in place): the
                // weak handle already sees it.
                if !matches!(&self.stream, Some(StreamView::Live(w)) if partial.is(w)) {
                    self.stream = Some(StreamView::Live(partial.downgrade()));
                }
            }
            AgentEvent::MessageEnd { message } => {
                self.stream = None;
                self.messages.push(message.clone());
            }
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                if !self.pending_tool_calls.contains(tool_call_id) {
                    self.pending_tool_calls.push(tool_call_id.clone());
                }
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                self.pending_tool_calls.retain(|id| id != tool_call_id);
            }
            AgentEvent::TurnEnd { message, .. } => {
                if let Some(text) = message.as_assistant().and_then(|a| a.error_message.clone()) {
                    self.error = Some(text);
                }
            }
            AgentEvent::AgentEnd { .. } => {
                self.is_streaming = false;
                self.stream = None;
            }
            AgentEvent::AgentStart
            | AgentEvent::TurnStart
            | AgentEvent::ToolExecutionUpdate { .. } => {}
        }
    }

    pub(crate) fn stream_message(&self) -> Option<AgentMessage> {
        match self.stream.as_ref()? {
            StreamView::Started(m) => Some((**m).clone()),
            StreamView::Live(weak) => weak
                .upgrade()
                .map(|acc| AgentMessage::from(acc.partial().clone())),
        }
    }

    pub(crate) fn snapshot(&self) -> AgentState {
        AgentState {
            system_prompt: self.system_prompt.clone(),
            model: self.model.clone(),
            thinking_level: self.thinking_level,
            tools: self.tools.tools().cloned().collect(),
            messages: self.messages.clone(),
            is_streaming: self.is_streaming,
            stream_message: self.stream_message(),
            pending_tool_calls: self.pending_tool_calls.clone(),
            error: self.error.clone(),
            tool_execution: self.tool_execution,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_modes() {
        let mut q = MessageQueue::default();
        q.push(AgentMessage::user_text("a"));
        q.push(AgentMessage::user_text("b"));
        assert_eq!(q.dequeue().len(), 1);
        q.push(AgentMessage::user_text("c"));
        q.mode = QueueMode::All;
        assert_eq!(q.dequeue().len(), 2);
        assert!(q.is_empty());
        assert!(q.dequeue().is_empty());
    }
}
