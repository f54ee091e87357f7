//! Routing a message (design §5): session key → its state here → a run now, or the follow-up
//! queue (steer, followup, collect, interrupt) when a run is active for the key; idempotency
//! keys; aborts. Every transport (WebSocket, HTTP, OpenAI-compatible) submits through
//! [`Core::submit`].

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use filo_ai::Message;
use filo_embed::Embedder;
use filo_embed::queue::{FollowupQueue, QueueMode, QueueSettings};
use tokio_util::sync::CancellationToken;

use crate::config::GatewayConfig;
use crate::hub::Hub;
use crate::metrics::{Gauges, Metrics};
use crate::outcome::{Listener, RunEvent, RunOutcome};

/// The refusal when the gateway is stopping (OpenClaw's text).
pub const DRAINING: &str = "Gateway is draining for restart; new tasks are not accepted";

/// A message for a session.
#[derive(Clone)]
pub struct Submit {
    /// The store key (`agent:main:…`), validated.
    pub key: String,
    pub agent_id: String,
    pub message: String,
    /// The run id: the idempotency key when there is one.
    pub run_id: String,
    pub idempotency_key: Option<String>,
    /// `provider/model` for this run.
    pub model: Option<String>,
    pub thinking: Option<String>,
    pub timeout: Option<Duration>,
    pub extra_system_prompt: Option<String>,
    /// The session id a new entry gets (OpenClaw's `sessionId`).
    pub session_id: Option<String>,
    /// What to do when a run is active (default: the session's, else the config's mode).
    pub mode: Option<QueueMode>,
    /// Messages a new session starts from (the OpenAI API's earlier messages).
    pub history: Vec<Message>,
    /// Leave at least the configured gap between the ack and the terminal event.
    pub gap_after_ack: bool,
}

impl Submit {
    pub fn new(
        key: impl Into<String>,
        agent_id: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            key: key.into(),
            agent_id: agent_id.into(),
            message: message.into(),
            run_id: uuid::Uuid::new_v4().to_string(),
            idempotency_key: None,
            model: None,
            thinking: None,
            timeout: None,
            extra_system_prompt: None,
            session_id: None,
            mode: None,
            history: Vec::new(),
            gap_after_ack: false,
        }
    }
}

/// A run waiting or running: its request(s), listeners and abort token.
#[derive(Clone)]
pub struct Pending {
    pub submit: Submit,
    /// Requests merged into this run (collect mode), answered by its outcome.
    pub merged: Vec<String>,
    pub listeners: Arc<Mutex<Vec<Listener>>>,
    pub abort: CancellationToken,
    pub accepted_at: Instant,
}

impl Pending {
    pub(crate) fn new(submit: Submit, listener: Option<Listener>) -> Self {
        Self {
            submit,
            merged: Vec::new(),
            listeners: Arc::new(Mutex::new(listener.into_iter().collect())),
            abort: CancellationToken::new(),
            accepted_at: Instant::now(),
        }
    }

    /// Sends `e` to every listener still there.
    pub fn emit(&self, e: &RunEvent) {
        lock(&self.listeners).retain(|l| l.send(e.clone()).is_ok());
    }

    fn answers(&self, run_id: &str) -> bool {
        self.submit.run_id == run_id || self.merged.iter().any(|m| m == run_id)
    }
}

/// The run in progress for a key.
pub(crate) struct Active {
    pub pending: Pending,
    /// Known once the store entry is resolved (steering needs it).
    pub session_id: Option<String>,
}

pub(crate) struct KeyState {
    pub active: Option<Active>,
    pub queue: FollowupQueue<Pending>,
    pub last_enqueue: Instant,
}

/// What happened to a submitted message.
#[derive(Debug, Clone)]
pub enum Accepted {
    /// A run started for it.
    Started { run_id: String },
    /// It waits behind the active run (followup, collect, interrupt).
    Queued { run_id: String },
    /// It was handed to the active run, whose id this is.
    Steered { run_id: String },
    /// The idempotency key was seen before: its run, and its outcome if it ended.
    Duplicate {
        run_id: String,
        outcome: Option<Arc<RunOutcome>>,
    },
}

impl Accepted {
    pub fn run_id(&self) -> &str {
        match self {
            Accepted::Started { run_id }
            | Accepted::Queued { run_id }
            | Accepted::Steered { run_id }
            | Accepted::Duplicate { run_id, .. } => run_id,
        }
    }
}

/// Why a message was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    #[error("{DRAINING}")]
    Draining,
    #[error("the follow-up queue of {0} is full (drop policy: new)")]
    QueueFull(String),
}

/// A map that keeps its newest `capacity` entries for at most `ttl` (idempotency keys → run
/// ids; run ids → outcomes, for duplicates and `agent.wait`).
struct Recent<V> {
    map: HashMap<String, (V, Instant)>,
    order: VecDeque<String>,
    capacity: usize,
    ttl: Duration,
}

impl<V: Clone> Recent<V> {
    fn new(capacity: usize, ttl: Duration) -> Self {
        Self {
            map: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
            ttl,
        }
    }

    fn get(&mut self, key: &str) -> Option<V> {
        self.expire();
        self.map.get(key).map(|(v, _)| v.clone())
    }

    fn insert(&mut self, key: String, value: V) {
        self.expire();
        if self
            .map
            .insert(key.clone(), (value, Instant::now()))
            .is_none()
        {
            self.order.push_back(key);
        }
        while self.map.len() > self.capacity {
            match self.order.pop_front() {
                Some(old) => {
                    self.map.remove(&old);
                }
                None => break,
            }
        }
    }

    fn expire(&mut self) {
        while let Some(front) = self.order.front() {
            match self.map.get(front) {
                Some((_, at)) if at.elapsed() < self.ttl => break,
                _ => {
                    if let Some(k) = self.order.pop_front() {
                        self.map.remove(&k);
                    }
                }
            }
        }
    }
}

/// The gateway's state, shared by every connection and request.
pub struct Core {
    pub embedder: Embedder,
    pub config: GatewayConfig,
    pub hub: Hub,
    pub metrics: Metrics,
    pub started: Instant,
    /// Working directory of each agent's runs.
    pub(crate) workspace: Box<dyn Fn(&str) -> PathBuf + Send + Sync>,
    draining: AtomicBool,
    /// WebSocket connections that have not authenticated yet.
    pub(crate) preauth: Mutex<crate::ws::Waiting>,
    pub(crate) keys: Mutex<HashMap<String, KeyState>>,
    idempotency: Mutex<Recent<String>>,
    finished: Mutex<Recent<Arc<RunOutcome>>>,
    /// The agents' `sessions.json`, in memory, written by group commit.
    pub stores: crate::store::Stores,
    /// The database several hosts share (`--store postgres://…`): lanes, entries, transcripts.
    pub shared: Option<Arc<crate::shared::SharedStore>>,
}

/// Where an idempotency key (or a run id) is remembered: per session key, which names the agent.
/// (`\u{1f}` cannot occur in a validated session key, and a database text may hold it.)
pub(crate) fn idempotency_scope(key: &str, idem: &str) -> String {
    format!("{key}\u{1f}{idem}")
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Core {
    pub fn new(
        embedder: Embedder,
        config: GatewayConfig,
        workspace: Box<dyn Fn(&str) -> PathBuf + Send + Sync>,
        shared: Option<Arc<crate::shared::SharedStore>>,
    ) -> Arc<Self> {
        let capacity = config.idempotency_capacity;
        let ttl = config.idempotency_ttl;
        Arc::new(Self {
            stores: crate::store::Stores::new(embedder.paths().clone()),
            embedder,
            hub: Hub::default(),
            metrics: Metrics::default(),
            started: Instant::now(),
            workspace,
            draining: AtomicBool::new(false),
            preauth: Mutex::default(),
            keys: Mutex::new(HashMap::new()),
            idempotency: Mutex::new(Recent::new(capacity, ttl)),
            finished: Mutex::new(Recent::new(capacity, ttl)),
            config,
            shared,
        })
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    pub(crate) fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// The queue settings of `key`: the config's, with its session entry's overrides.
    pub(crate) fn queue_settings(&self, key: &str) -> QueueSettings {
        let mut s = self.config.queue;
        let agent = filo_embed::session_key::agent_id_from_session_key(key);
        if let Some(e) = self.stores.agent(&agent).peek(key) {
            let mode = e
                .queue_mode
                .as_deref()
                .and_then(QueueMode::parse)
                .unwrap_or(s.mode);
            s.apply(
                mode,
                e.queue_debounce_ms.map(|v| v as f64),
                e.queue_cap.map(|v| v as f64),
                e.queue_drop
                    .as_deref()
                    .and_then(filo_embed::queue::DropPolicy::parse),
            );
        }
        s
    }

    /// Accepts a message: starts its run, queues it behind the active one, hands it to the
    /// active one, or recognises a repeated idempotency key. `listener` gets the events of the
    /// run that answers it.
    pub fn submit(
        self: &Arc<Self>,
        submit: Submit,
        listener: Option<Listener>,
    ) -> Result<Accepted, SubmitError> {
        // A key names a message of one session: the same key on another session (or agent,
        // which the session key names) is another message.
        let scope = submit
            .idempotency_key
            .as_deref()
            .map(|idem| idempotency_scope(&submit.key, idem));
        if let Some(scope) = &scope
            && let Some(run_id) = lock(&self.idempotency).get(scope)
        {
            let outcome = self.finished_outcome_of(&submit.key, &run_id);
            if let (None, Some(l)) = (&outcome, listener) {
                self.attach(&submit.key, &run_id, l);
            }
            return Ok(Accepted::Duplicate { run_id, outcome });
        }
        if self.is_draining() {
            return Err(SubmitError::Draining);
        }
        let settings = self.queue_settings(&submit.key);
        let mode = submit.mode.unwrap_or(settings.mode);
        let key = submit.key.clone();
        let run_id = submit.run_id.clone();
        let text = submit.message.clone();
        let mut keys = lock(&self.keys);
        let state = keys.entry(key.clone()).or_insert_with(|| KeyState {
            active: None,
            queue: FollowupQueue::new(settings),
            last_enqueue: Instant::now(),
        });
        state.queue.settings = settings;
        let accepted = match &state.active {
            None => {
                let pending = Pending::new(submit, listener);
                state.active = Some(Active {
                    pending: pending.clone(),
                    session_id: None,
                });
                drop(keys);
                self.metrics.runs_started.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(crate::run::drive(self.clone(), key, pending));
                Accepted::Started { run_id }
            }
            Some(active) => {
                let steered = mode == QueueMode::Steer
                    && active
                        .session_id
                        .as_deref()
                        .is_some_and(|sid| self.embedder.runs().queue_message(sid, &text));
                if steered {
                    let run_id = active.pending.submit.run_id.clone();
                    if let Some(l) = listener {
                        lock(&active.pending.listeners).push(l);
                    }
                    Accepted::Steered { run_id }
                } else {
                    if mode == QueueMode::Interrupt {
                        active.pending.abort.cancel();
                        if let Some(sid) = &active.session_id {
                            self.embedder.runs().abort(sid);
                        }
                    }
                    let admission = state.queue.admit(|p| p.submit.message.clone(), None);
                    if !admission.admitted {
                        return Err(SubmitError::QueueFull(key));
                    }
                    for dropped in admission.dropped {
                        self.end_unrun(&dropped, crate::run::dropped_outcome(&dropped));
                    }
                    // The mode it was queued in decides whether it may be merged later.
                    let mut submit = submit;
                    submit.mode = Some(mode);
                    state
                        .queue
                        .push(Pending::new(submit, listener), mode == QueueMode::Interrupt);
                    state.last_enqueue = Instant::now();
                    Accepted::Queued { run_id }
                }
            }
        };
        if let Some(scope) = scope {
            lock(&self.idempotency).insert(scope, accepted.run_id().to_owned());
        }
        Ok(accepted)
    }

    /// Adds `listener` to the waiting or running run `run_id` of `key`.
    fn attach(&self, key: &str, run_id: &str, listener: Listener) {
        let keys = lock(&self.keys);
        let Some(state) = keys.get(key) else { return };
        if let Some(a) = state.active.as_ref().filter(|a| a.pending.answers(run_id)) {
            lock(&a.pending.listeners).push(listener);
            return;
        }
        if let Some(q) = state.queue.items.iter().find(|q| q.item.answers(run_id)) {
            lock(&q.item.listeners).push(listener);
        }
    }

    /// Aborts the active run of `key` (only when it answers `run_id`, if given); returns the
    /// request ids it answers.
    pub fn abort(&self, key: &str, run_id: Option<&str>) -> Vec<String> {
        let mut keys = lock(&self.keys);
        let Some(state) = keys.get_mut(key) else {
            return Vec::new();
        };
        // A message still waiting behind the active run: it is removed and ends aborted.
        if let Some(r) = run_id
            && let Some(i) = state.queue.items.iter().position(|q| q.item.answers(r))
            && !state.queue.in_flight.contains(&state.queue.items[i].id)
        {
            let p = state.queue.items.remove(i).item;
            drop(keys);
            self.end_unrun(&p, crate::run::aborted_before_start(&p));
            let mut ids = vec![p.submit.run_id.clone()];
            ids.extend(p.merged.iter().cloned());
            return ids;
        }
        let Some(active) = state.active.as_ref() else {
            return Vec::new();
        };
        if run_id.is_some_and(|r| !active.pending.answers(r)) {
            return Vec::new();
        }
        active.pending.abort.cancel();
        if let Some(sid) = &active.session_id {
            self.embedder.runs().abort(sid);
        }
        let mut ids = vec![active.pending.submit.run_id.clone()];
        ids.extend(active.pending.merged.iter().cloned());
        ids
    }

    /// Drops what waits behind `key`'s active run; the waiting requests end as aborted.
    pub fn clear_queue(&self, key: &str) -> usize {
        let items: Vec<Pending> = {
            let mut keys = lock(&self.keys);
            let Some(state) = keys.get_mut(key) else {
                return 0;
            };
            let items = state.queue.items.drain(..).map(|q| q.item).collect();
            state.queue.in_flight.clear();
            items
        };
        for p in &items {
            self.end_unrun(p, crate::run::aborted_before_start(p));
        }
        items.len()
    }

    /// Ends a message that never ran (dropped, aborted or reset while queued): its outcome is
    /// recorded, its listeners told, and the connections watching its key get the terminal
    /// `chat` event for each request it answers.
    pub(crate) fn end_unrun(&self, p: &Pending, outcome: Arc<RunOutcome>) {
        self.record_finished(&outcome);
        p.emit(&RunEvent::End(outcome.clone()));
        for run_id in outcome.all_run_ids() {
            let frame = crate::hub::EventFrame::new(
                "chat",
                &crate::frames::chat_terminal(&outcome, run_id),
            );
            self.hub.publish(&outcome.session_key, &frame);
        }
    }

    /// Whether `key` has a run in progress, and its request id.
    pub fn active_run(&self, key: &str) -> Option<String> {
        lock(&self.keys)
            .get(key)
            .and_then(|s| s.active.as_ref())
            .map(|a| a.pending.submit.run_id.clone())
    }

    pub(crate) fn set_session_id(&self, key: &str, session_id: &str) {
        if let Some(a) = lock(&self.keys)
            .get_mut(key)
            .and_then(|s| s.active.as_mut())
        {
            a.session_id = Some(session_id.to_owned());
        }
    }

    pub(crate) fn record_finished(&self, outcome: &Arc<RunOutcome>) {
        let mut f = lock(&self.finished);
        for id in outcome.all_run_ids() {
            f.insert(id.to_owned(), outcome.clone());
            // Run ids are idempotency keys, which two sessions may share: a repeated message
            // finds its own session's outcome under this one.
            f.insert(idempotency_scope(&outcome.session_key, id), outcome.clone());
        }
    }

    /// The outcome of a finished run (the last one to end, when two sessions used its id).
    pub fn finished_outcome(&self, run_id: &str) -> Option<Arc<RunOutcome>> {
        lock(&self.finished).get(run_id)
    }

    /// The outcome of the finished run `run_id` of session `key`.
    pub fn finished_outcome_of(&self, key: &str, run_id: &str) -> Option<Arc<RunOutcome>> {
        lock(&self.finished).get(&idempotency_scope(key, run_id))
    }

    /// Waits for run `run_id` of `key` to end, up to `timeout`.
    pub async fn wait(
        &self,
        key: Option<&str>,
        run_id: &str,
        timeout: Duration,
    ) -> Option<Arc<RunOutcome>> {
        let finished = |run_id: &str| match key {
            Some(k) => self.finished_outcome_of(k, run_id),
            None => self.finished_outcome(run_id),
        };
        if let Some(o) = finished(run_id) {
            return Some(o);
        }
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let keys: Vec<String> = match key {
            Some(k) => vec![k.to_owned()],
            None => lock(&self.keys).keys().cloned().collect(),
        };
        for k in &keys {
            self.attach(k, run_id, tx.clone());
        }
        drop(tx);
        // It may have ended between the first look and attaching.
        if let Some(o) = finished(run_id) {
            return Some(o);
        }
        let ended = async {
            while let Some(e) = rx.recv().await {
                if let RunEvent::End(o) = e {
                    return Some(o);
                }
            }
            finished(run_id)
        };
        tokio::time::timeout(timeout, ended).await.ok().flatten()
    }

    /// Active runs, queue depths and known keys, for `/metrics` and `health`.
    pub fn gauges(&self) -> Gauges {
        let keys = lock(&self.keys);
        let followup: usize = keys.values().map(|s| s.queue.pending()).sum();
        let active = keys.values().filter(|s| s.active.is_some()).count();
        let known = keys.len();
        drop(keys);
        let lanes = self.embedder.lanes();
        Gauges {
            active_runs: active,
            queue_depth: vec![
                (
                    "main".into(),
                    lanes.queue_size(filo_embed::lanes::MAIN_LANE),
                ),
                ("all".into(), lanes.total_queue_size()),
                ("followup".into(), followup),
            ],
            sessions_known: known,
        }
    }

    /// Messages waiting behind running turns, in all sessions.
    pub fn queued(&self) -> usize {
        lock(&self.keys).values().map(|s| s.queue.pending()).sum()
    }

    /// Session keys with a run or a queue in this process (for leak checks).
    pub fn live_keys(&self) -> usize {
        lock(&self.keys).len()
    }
}
