//! WebSocket fan-out: each connection's bounded [`Outbox`], and the [`Hub`] that knows which
//! connections want which session's events.
//!
//! A connection receives a session's `chat` and `agent` events when it sent to that session,
//! loaded its history or subscribed to it; `sessions.changed` goes to connections that called
//! `sessions.subscribe`; `shutdown` goes to everyone. (OpenClaw sends every `chat` event to
//! every operator connection; with 1,000 sessions that is a million frames per event round.)
//!
//! Backpressure: events wait in the outbox, never dropped, except that a partial reply replaces
//! the earlier partial reply of the same run (and stream) still waiting: the reply text is
//! cumulative, so nothing is lost, and a slow reader holds one copy of it, not one per event.
//! A connection that stays over the byte budget for the grace period is closed with 1013.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// An event ready to send: its name and its payload, serialised once for every connection.
#[derive(Debug, Clone)]
pub struct EventFrame {
    pub name: Arc<str>,
    pub payload: Arc<str>,
    /// A partial reply of this run: may be replaced by a later one while waiting.
    pub coalesce: Option<Arc<str>>,
}

impl EventFrame {
    pub fn new(name: &str, payload: &serde_json::Value) -> Self {
        Self {
            name: name.into(),
            payload: payload.to_string().into(),
            coalesce: None,
        }
    }
}

/// What the connection's writer sends next.
#[derive(Debug)]
pub enum Out {
    /// A response frame, complete.
    Res(String),
    Event(EventFrame),
}

impl Out {
    fn len(&self) -> usize {
        match self {
            Out::Res(s) => s.len(),
            Out::Event(e) => e.payload.len() + e.name.len() + 48,
        }
    }
}

/// Why the writer must close the socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseReason {
    pub code: u16,
    pub reason: String,
}

#[derive(Default)]
struct OutState {
    frames: VecDeque<Out>,
    bytes: usize,
    over_since: Option<Instant>,
    close: Option<CloseReason>,
}

/// One connection's outbound queue.
pub struct Outbox {
    state: Mutex<OutState>,
    notify: Notify,
    budget: usize,
    grace: Duration,
}

impl Outbox {
    pub fn new(budget: usize, grace: Duration) -> Self {
        Self {
            state: Mutex::new(OutState::default()),
            notify: Notify::new(),
            budget,
            grace,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OutState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a frame (see the module docs for what happens when the client is slow).
    pub fn push(&self, out: Out) {
        let mut st = self.lock();
        if st.close.is_some() {
            return;
        }
        if let Out::Event(e) = &out
            && let Some(key) = &e.coalesce
            && let Some(i) = st
                .frames
                .iter()
                .rposition(|f| matches!(f, Out::Event(x) if x.coalesce.as_ref() == Some(key)))
            && let Some(old) = st.frames.remove(i)
        {
            // The newer partial goes where the older one would have been overtaken by it.
            st.bytes = st.bytes.saturating_sub(old.len());
        }
        if st.bytes > self.budget {
            let since = *st.over_since.get_or_insert_with(Instant::now);
            if since.elapsed() > self.grace {
                st.close = Some(CloseReason {
                    code: 1013,
                    reason: "client too slow: outbound buffer full".into(),
                });
                st.frames.clear();
                st.bytes = 0;
                drop(st);
                self.notify.notify_one();
                return;
            }
        } else {
            st.over_since = None;
        }
        st.bytes += out.len();
        st.frames.push_back(out);
        drop(st);
        self.notify.notify_one();
    }

    /// Asks the writer to close with `code` once what is queued has been sent.
    pub fn close(&self, code: u16, reason: &str) {
        let mut st = self.lock();
        if st.close.is_none() {
            st.close = Some(CloseReason {
                code,
                reason: reason.to_owned(),
            });
        }
        drop(st);
        self.notify.notify_one();
    }

    /// The next frame, or the close reason when the queue is empty and a close was asked for.
    pub async fn next(&self) -> Result<Out, CloseReason> {
        loop {
            {
                let mut st = self.lock();
                if let Some(out) = st.frames.pop_front() {
                    st.bytes = st.bytes.saturating_sub(out.len());
                    return Ok(out);
                }
                if let Some(c) = &st.close {
                    return Err(c.clone());
                }
            }
            self.notify.notified().await;
        }
    }

    /// Bytes waiting.
    pub fn queued_bytes(&self) -> usize {
        self.lock().bytes
    }
}

#[derive(Default)]
struct HubState {
    conns: HashMap<u64, Arc<Outbox>>,
    /// Session key → connections that want its events.
    interest: HashMap<String, HashSet<u64>>,
    /// Connection → the keys it is in `interest` for (to clean up).
    keys_of: HashMap<u64, HashSet<String>>,
    /// Connections that called `sessions.subscribe`.
    session_subscribers: HashSet<u64>,
}

/// Every open, authenticated WebSocket connection.
#[derive(Default)]
pub struct Hub {
    state: Mutex<HubState>,
    next_id: AtomicU64,
}

impl Hub {
    fn lock(&self) -> std::sync::MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a connection; returns its id.
    pub fn register(&self, outbox: Arc<Outbox>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        self.lock().conns.insert(id, outbox);
        id
    }

    /// Removes a connection and everything it was interested in.
    pub fn unregister(&self, id: u64) {
        let mut st = self.lock();
        st.conns.remove(&id);
        st.session_subscribers.remove(&id);
        if let Some(keys) = st.keys_of.remove(&id) {
            for k in keys {
                if let Some(set) = st.interest.get_mut(&k) {
                    set.remove(&id);
                    if set.is_empty() {
                        st.interest.remove(&k);
                    }
                }
            }
        }
    }

    /// Connection `id` wants the events of `key`.
    pub fn watch(&self, id: u64, key: &str) {
        let mut st = self.lock();
        if !st.conns.contains_key(&id) {
            return;
        }
        st.interest.entry(key.to_owned()).or_default().insert(id);
        st.keys_of.entry(id).or_default().insert(key.to_owned());
    }

    /// Connection `id` wants `sessions.changed`.
    pub fn subscribe_sessions(&self, id: u64) {
        let mut st = self.lock();
        if st.conns.contains_key(&id) {
            st.session_subscribers.insert(id);
        }
    }

    /// Whether anyone wants `key`'s events (so a run can skip building frames).
    pub fn has_watchers(&self, key: &str) -> bool {
        self.lock().interest.contains_key(key)
    }

    fn targets(&self, key: Option<&str>, subscribers: bool) -> Vec<Arc<Outbox>> {
        let st = self.lock();
        let mut ids: HashSet<u64> = HashSet::new();
        if let Some(set) = key.and_then(|k| st.interest.get(k)) {
            ids.extend(set.iter().copied());
        }
        if subscribers {
            ids.extend(st.session_subscribers.iter().copied());
        }
        ids.iter()
            .filter_map(|i| st.conns.get(i).cloned())
            .collect()
    }

    /// Sends `frame` to the connections watching `key`.
    pub fn publish(&self, key: &str, frame: &EventFrame) {
        for o in self.targets(Some(key), false) {
            o.push(Out::Event(frame.clone()));
        }
    }

    /// Sends `sessions.changed` (or a like event) to subscribers and to `key`'s watchers.
    pub fn publish_session_change(&self, key: &str, frame: &EventFrame) {
        for o in self.targets(Some(key), true) {
            o.push(Out::Event(frame.clone()));
        }
    }

    /// Sends `frame` to every connection.
    pub fn broadcast(&self, frame: &EventFrame) {
        let all: Vec<Arc<Outbox>> = self.lock().conns.values().cloned().collect();
        for o in all {
            o.push(Out::Event(frame.clone()));
        }
    }

    /// Closes every connection with `code`.
    pub fn close_all(&self, code: u16, reason: &str) {
        let all: Vec<Arc<Outbox>> = self.lock().conns.values().cloned().collect();
        for o in all {
            o.close(code, reason);
        }
    }

    /// Open connections.
    pub fn len(&self) -> usize {
        self.lock().conns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Session keys someone watches (for leak checks).
    pub fn watched_keys(&self) -> usize {
        self.lock().interest.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(run: &str, text: &str) -> Out {
        Out::Event(EventFrame {
            name: "chat".into(),
            payload: format!("{{\"t\":\"{text}\"}}").into(),
            coalesce: Some(run.into()),
        })
    }

    fn payload(o: Out) -> String {
        match o {
            Out::Event(e) => e.payload.to_string(),
            Out::Res(s) => s,
        }
    }

    #[tokio::test]
    async fn a_waiting_partial_is_replaced_by_the_next_and_nothing_else_drops() {
        let o = Outbox::new(100, Duration::from_secs(60));
        o.push(delta("r1", "a"));
        assert_eq!(payload(o.next().await.unwrap()), "{\"t\":\"a\"}");
        o.push(delta("r1", "ab"));
        o.push(Out::Res("x".repeat(200)));
        o.push(delta("r1", "abc"));
        o.push(delta("r2", "z"));
        o.push(delta("r1", "abcde"));
        o.push(Out::Res("final".into()));
        let mut got = Vec::new();
        for _ in 0..4 {
            got.push(payload(o.next().await.unwrap()));
        }
        assert_eq!(got[0].len(), 200);
        assert_eq!(got[1], "{\"t\":\"z\"}");
        assert_eq!(got[2], "{\"t\":\"abcde\"}");
        assert_eq!(got[3], "final");
        assert_eq!(o.queued_bytes(), 0);
    }

    #[tokio::test]
    async fn a_client_over_budget_past_the_grace_is_closed_1013() {
        let o = Outbox::new(10, Duration::ZERO);
        o.push(Out::Res("x".repeat(20)));
        o.push(Out::Res("y".into()));
        std::thread::sleep(Duration::from_millis(2));
        o.push(Out::Res("z".into()));
        assert_eq!(o.next().await.unwrap_err().code, 1013);
    }

    #[test]
    fn interest_is_cleaned_up_with_the_connection() {
        let hub = Hub::default();
        let a = hub.register(Arc::new(Outbox::new(1 << 20, Duration::from_secs(5))));
        let b = hub.register(Arc::new(Outbox::new(1 << 20, Duration::from_secs(5))));
        hub.watch(a, "k1");
        hub.watch(b, "k1");
        hub.watch(a, "k2");
        assert!(hub.has_watchers("k2"));
        hub.unregister(a);
        assert!(!hub.has_watchers("k2"));
        assert!(hub.has_watchers("k1"));
        hub.unregister(b);
        assert_eq!((hub.watched_keys(), hub.len()), (0, 0));
    }
}
