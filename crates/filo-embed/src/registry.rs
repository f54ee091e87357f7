//! The active-run registry (C7): finds the run of a session to abort it, to steer a message into
//! it, or to wait for it to end.
//!
//! [`ActiveRuns`] is a value owned by the embedder (clones share it). A run registers a
//! [`RunHandle`] under its session id (and optionally its session key) and clears it when it
//! ends; only the handle that is registered may clear the entry, so a late clear from a replaced
//! run does nothing. Waiters watch a per-session `tokio::sync::watch` channel that the clear
//! completes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use filo_agent::AgentMessage;
use tokio::sync::watch;
use tokio::time::Instant;

/// Default timeout of [`ActiveRuns::wait_for_end`] and [`ActiveRuns::wait_for_all`].
pub const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_secs(15);
/// Smallest timeout [`ActiveRuns::wait_for_end`] waits.
pub const WAIT_FOR_END_FLOOR: Duration = Duration::from_millis(100);
/// Default poll interval of [`ActiveRuns::wait_for_all`].
pub const DEFAULT_WAIT_POLL: Duration = Duration::from_millis(250);
/// Smallest poll interval of [`ActiveRuns::wait_for_all`].
pub const WAIT_POLL_FLOOR: Duration = Duration::from_millis(10);

/// What the registry needs from a running attempt.
pub trait RunHandle: Send + Sync {
    /// Steers `text` into the running turn (fire-and-forget).
    fn queue_message(&self, text: &str);
    /// Whether the model is streaming a reply.
    fn is_streaming(&self) -> bool;
    /// Whether the run is compacting its session.
    fn is_compacting(&self) -> bool;
    /// Whether the agent loop is not running (before the first prompt or after the last), when
    /// the handle knows; None falls back to [`RunHandle::is_streaming`].
    fn is_stopped(&self) -> Option<bool> {
        None
    }
    /// Aborts the run.
    fn abort(&self);
}

/// What a run last reported about its transcript (for status and recovery).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSnapshot {
    pub leaf_id: Option<String>,
    pub messages: Option<Vec<AgentMessage>>,
    pub in_flight_prompt: Option<String>,
}

/// Which runs [`ActiveRuns::abort_all`] aborts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbortMode {
    /// Only runs that are compacting.
    Compacting,
    /// Every run.
    All,
}

/// Outcome of [`ActiveRuns::clear`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClearOutcome {
    /// The entry was removed and its waiters woken.
    Cleared,
    /// Another handle (or none) is registered; nothing changed.
    HandleMismatch,
}

/// Result of [`ActiveRuns::wait_for_all`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllDrained {
    pub drained: bool,
}

#[derive(Default)]
struct Inner {
    runs: HashMap<String, Arc<dyn RunHandle>>,
    snapshots: HashMap<String, RunSnapshot>,
    keys: HashMap<String, String>,
    ended: HashMap<String, watch::Sender<bool>>,
}

/// Registry of the runs in progress, keyed by session id.
#[derive(Clone, Default)]
pub struct ActiveRuns {
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for ActiveRuns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActiveRuns")
            .field("active", &self.active_count())
            .finish()
    }
}

impl ActiveRuns {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every critical section is a few map operations that cannot panic half-way.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `handle` as the run of `session_id` (replacing any other) and maps `session_key`
    /// to it.
    pub fn set(&self, session_id: &str, handle: Arc<dyn RunHandle>, session_key: Option<&str>) {
        let mut inner = self.lock();
        inner.runs.insert(session_id.to_owned(), handle);
        if let Some(key) = session_key.map(str::trim).filter(|k| !k.is_empty()) {
            inner.keys.insert(key.to_owned(), session_id.to_owned());
        }
    }

    /// Removes the run of `session_id` when `handle` is the registered one, with its snapshot and
    /// the session keys mapped to it, and wakes its waiters.
    pub fn clear(&self, session_id: &str, handle: &Arc<dyn RunHandle>) -> ClearOutcome {
        let mut inner = self.lock();
        let same = inner
            .runs
            .get(session_id)
            .is_some_and(|h| Arc::ptr_eq(h, handle));
        if !same {
            return ClearOutcome::HandleMismatch;
        }
        inner.runs.remove(session_id);
        inner.snapshots.remove(session_id);
        // Every key that points at this session goes, whether or not the caller names it.
        inner.keys.retain(|_, id| id != session_id);
        if let Some(tx) = inner.ended.remove(session_id) {
            tx.send_replace(true);
        }
        ClearOutcome::Cleared
    }

    fn handle(&self, session_id: &str) -> Option<Arc<dyn RunHandle>> {
        self.lock().runs.get(session_id).cloned()
    }

    /// Steers `text` into the run of `session_id`. False when there is no run, it is compacting
    /// or stopped, or (a handle that cannot tell whether it is stopped) it is not streaming: a
    /// message the loop would not pick up must not be accepted.
    pub fn queue_message(&self, session_id: &str, text: &str) -> bool {
        let Some(handle) = self.handle(session_id) else {
            return false;
        };
        if handle.is_compacting() {
            return false;
        }
        match handle.is_stopped() {
            Some(true) => return false,
            Some(false) => {}
            None if !handle.is_streaming() => return false,
            None => {}
        }
        handle.queue_message(text);
        true
    }

    /// Aborts the run of `session_id`; false when there is none.
    pub fn abort(&self, session_id: &str) -> bool {
        match self.handle(session_id) {
            Some(handle) => {
                handle.abort();
                true
            }
            None => false,
        }
    }

    /// Aborts the runs `mode` selects; returns how many.
    pub fn abort_all(&self, mode: AbortMode) -> usize {
        let handles: Vec<Arc<dyn RunHandle>> = self.lock().runs.values().cloned().collect();
        let mut n = 0;
        for h in handles {
            if mode == AbortMode::All || h.is_compacting() {
                h.abort();
                n += 1;
            }
        }
        n
    }

    /// Whether `session_id` has a run.
    pub fn is_active(&self, session_id: &str) -> bool {
        self.lock().runs.contains_key(session_id)
    }

    /// Whether the run of `session_id` is streaming.
    pub fn is_streaming(&self, session_id: &str) -> bool {
        self.handle(session_id).is_some_and(|h| h.is_streaming())
    }

    /// The session id registered for `session_key`.
    pub fn session_id_for_key(&self, session_key: &str) -> Option<String> {
        self.lock().keys.get(session_key.trim()).cloned()
    }

    /// Removes the run of `session_id` without waiting for it to end (the second phase of an
    /// abort that takes too long); its own later clear is then a no-op. Wakes the waiters.
    pub fn force_detach(&self, session_id: &str) -> bool {
        let handle = self.handle(session_id);
        match handle {
            Some(h) => self.clear(session_id, &h) == ClearOutcome::Cleared,
            None => false,
        }
    }

    /// Number of runs.
    pub fn active_count(&self) -> usize {
        self.lock().runs.len()
    }

    /// Records what the run of `session_id` last reported (ignored when it has no run).
    pub fn set_snapshot(&self, session_id: &str, snapshot: RunSnapshot) {
        let mut inner = self.lock();
        if inner.runs.contains_key(session_id) {
            inner.snapshots.insert(session_id.to_owned(), snapshot);
        }
    }

    /// The last snapshot of the run of `session_id`.
    pub fn snapshot(&self, session_id: &str) -> Option<RunSnapshot> {
        self.lock().snapshots.get(session_id).cloned()
    }

    /// Waits until the run of `session_id` ends: true at once when there is none, false when
    /// `timeout` (at least 100 ms) passes first.
    pub async fn wait_for_end(&self, session_id: &str, timeout: Duration) -> bool {
        let mut rx = {
            let mut inner = self.lock();
            if session_id.is_empty() || !inner.runs.contains_key(session_id) {
                return true;
            }
            inner
                .ended
                .entry(session_id.to_owned())
                .or_insert_with(|| watch::channel(false).0)
                .subscribe()
        };
        let ended =
            tokio::time::timeout(timeout.max(WAIT_FOR_END_FLOOR), rx.wait_for(|ended| *ended))
                .await;
        matches!(ended, Ok(Ok(_)))
    }

    /// Waits until no run is active, polling every `poll` (at least 10 ms), at most `timeout`
    /// (at least one poll interval).
    pub async fn wait_for_all(&self, timeout: Duration, poll: Duration) -> AllDrained {
        let poll = poll.max(WAIT_POLL_FLOOR);
        let deadline = Instant::now() + timeout.max(poll);
        loop {
            if self.active_count() == 0 {
                return AllDrained { drained: true };
            }
            let now = Instant::now();
            if now >= deadline {
                return AllDrained { drained: false };
            }
            tokio::time::sleep(poll.min(deadline - now)).await;
        }
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
