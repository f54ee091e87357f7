//! Playfilo memory in the agent (playfilo spec §4–§9): every appended session entry is mirrored
//! into the shared DAG, a session resumes from the DAG, and the model gets `life`, `recall`,
//! `trace` and `tobe`. Built as an [`Extension`] of the SDK.
//!
//! A process opens a database once, as a [`MemoryHub`] (one SQLite connection, one background
//! writer thread); each session's [`Playfilo`] is a view over it with its own head and state.
//! [`Playfilo::open`] is a hub of one session.
//!
//! Deliberate differences from the reference, each for a bug in playfilo spec §10:
//! - each session has its own head ref (`PI_HEAD:<session id>`, or `--head`), and `PI_HEAD` is
//!   still written for other Playfilo tools, by compare-and-set: a conflict is reported, never
//!   clobbered (§10.3 #18);
//! - `tobe` skips the aborted turn's entries by identity, not by a count, keeps its state per
//!   session, knows its calling assistant explicitly, refuses targets providers would reject, keeps
//!   steering typed during the jump, and continues in the new timeline before the session reports
//!   idle (§10.4 #21–26);
//! - resume scans back for the last mirrored entry (§10.3 #19), bounds boot inheritance at the
//!   session's first entry (§10.3 #17), and keeps the session file's full-fidelity copy of each
//!   entry (usage, signatures, stop reasons) where it has one, taking only the lineage from the DAG
//!   (§10.3 #16);
//! - DB failures are reported as warnings and counted, not swallowed (§10.3 #20).

mod catchup;
mod commit;
mod hub;
mod mirror;
mod resume;
mod tobe;
mod tools;
mod verified;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use filo_agent::{AgentMessage, AgentTool};
use filo_dag::{NewAction, Store};
use filo_session::{SessionEntry, SessionManager, SessionMessage};
use futures::future::BoxFuture;

use crate::agent_session::{SessionEvent, SessionHandle};
use crate::extension::{BeforeAgentStart, EntryContext, Extension, SessionChange, SessionInfo};

pub use commit::Unmirrored;
pub use hub::{HubConfig, MemoryHub};
pub use mirror::{config_json, entry_commit, entry_parts};
pub use tobe::TravelError;
pub use tools::{SystemZone, read_only_tool_specs, render_read_only};

/// Where the memory lives and how this session names its head: a [`HubConfig`] plus the head,
/// for [`Playfilo::open`] (a hub of one session).
#[derive(Clone)]
pub struct PlayfiloConfig {
    /// The database (`~/.playfilo/playfilo.db` by default).
    pub db_path: PathBuf,
    /// The head ref; `None` = `PI_HEAD:<session id>`.
    pub head: Option<String>,
    /// `INCUBATION_SEED.md`, prepended to the system prompt when present.
    pub seed_path: Option<PathBuf>,
    /// The wall clock in ms (commit timestamps and ages).
    pub clock: Arc<dyn Fn() -> i64 + Send + Sync>,
    /// How long one SQLite call waits for another process's lock (SQLite's busy timeout).
    pub busy_timeout: std::time::Duration,
    /// How long a commit keeps retrying while the database stays locked before the entry is
    /// reported as not in the memory.
    pub lock_patience: std::time::Duration,
}

impl PlayfiloConfig {
    /// The defaults under a home directory: `<home>/.playfilo/{playfilo.db,INCUBATION_SEED.md}`.
    pub fn under_home(home: &Path) -> Self {
        let hub = HubConfig::under_home(home);
        PlayfiloConfig {
            db_path: hub.db_path,
            head: None,
            seed_path: hub.seed_path,
            clock: hub.clock,
            busy_timeout: hub.busy_timeout,
            lock_patience: hub.lock_patience,
        }
    }

    /// The database-level part and the head.
    pub fn split(self) -> (HubConfig, Option<String>) {
        let hub = HubConfig {
            db_path: self.db_path,
            seed_path: self.seed_path,
            clock: self.clock,
            busy_timeout: self.busy_timeout,
            lock_patience: self.lock_patience,
        };
        (hub, self.head)
    }
}

/// The jump in progress between `tobe` and the end of the aborted run.
pub(crate) struct Window {
    /// Tool calls of the assistant that called `tobe`: their results stay out of the DAG.
    pub call_ids: HashSet<String>,
    /// The new context: target lineage + carryover.
    pub context: Vec<AgentMessage>,
    /// The carryover's entry id: the session leaf once the run ends.
    pub carryover_entry: String,
    /// User messages typed during the jump, re-sent in the new timeline.
    pub steering: Vec<AgentMessage>,
}

#[derive(Default)]
pub(crate) struct State {
    /// The session's head node (mirrors the head ref).
    pub head: Option<String>,
    /// The last `PI_HEAD` value this session wrote or read (for compare-and-set).
    pub pi_head_seen: Option<String>,
    pub head_ref: String,
    /// The last mirrored assistant: entry id, node id, its tool-call ids.
    pub last_assistant: Option<(String, String, Vec<String>)>,
    pub window: Option<Window>,
    pub errors: u64,
    pub warned_pi_head: bool,
    /// The head before the last session load (for SESSION_SWITCH).
    pub switched_from: Option<String>,
    /// Results of an assistant message that calls `tobe`, held back until the jump resolves.
    pub held: Option<Held>,
    /// Session entry id → its node, so a new entry hangs under its session parent's node (the
    /// session tree can move: tree navigation, forks, jumps).
    pub nodes: std::collections::HashMap<String, String>,
    /// A brand-new session continues the shared life from `PI_HEAD` (boot inheritance); a
    /// session resumed from a file the DAG never saw starts its own root instead.
    pub inherit: bool,
    /// Entries that could not be committed yet (and their descendants), in order.
    pub pending: Vec<commit::Pending>,
}

/// Tool results held back while a `tobe` call of the same assistant message is pending: dropped
/// when the jump happens, committed when it does not.
pub(crate) struct Held {
    pub call_ids: HashSet<String>,
    pub entries: Vec<(SessionEntry, EntryContext)>,
}

/// One session's memory: its state over the hub's connection and writer.
pub(crate) struct Shared {
    /// This value itself, for the jobs it queues.
    me: Weak<Shared>,
    /// The database, its connection and the writer; commits run on the writer thread, off the
    /// agent's path, and `flush` waits for them.
    pub hub: Arc<hub::Core>,
    /// The configured head ref; `None` = `PI_HEAD:<session id>`.
    head: Option<String>,
    pub state: Mutex<State>,
    pub session: Mutex<Option<SessionHandle>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn now(&self) -> i64 {
        (self.hub.config.clock)()
    }

    /// The hub's one connection.
    pub(crate) fn store(&self) -> MutexGuard<'_, Store> {
        self.hub.store()
    }

    pub(crate) fn session(&self) -> Option<crate::AgentSession> {
        lock(&self.session)
            .as_ref()
            .and_then(SessionHandle::upgrade)
    }

    /// Report a DB failure: counted, and shown as a warning event.
    pub(crate) fn fail(&self, what: &str, err: &dyn std::fmt::Display) {
        lock(&self.state).errors += 1;
        if let Some(s) = self.session() {
            s.emit(&SessionEvent::Warning {
                message: format!("Playfilo: {what} failed: {err}"),
            });
        }
    }

    /// Move this session's head to `node`, and `PI_HEAD` too unless another agent moved it.
    /// Move this session's head to an existing `node` (a jump or a resume), and `PI_HEAD` too
    /// unless another agent moved it since this session last saw it.
    pub(crate) fn move_heads(&self, node: &str) {
        let (head_ref, seen) = {
            let st = lock(&self.state);
            (st.head_ref.clone(), st.pi_head_seen.clone())
        };
        let result = {
            let store = self.store();
            store.set_ref(&head_ref, node).and_then(|()| {
                let current = store.get_ref("PI_HEAD")?;
                let ours = current.is_none() || current == seen;
                if ours {
                    store.compare_and_set_ref("PI_HEAD", current.as_deref(), Some(node))?;
                }
                Ok(ours)
            })
        };
        lock(&self.state).head = Some(node.to_string());
        match result {
            Ok(true) => lock(&self.state).pi_head_seen = Some(node.to_string()),
            Ok(false) => self.warn_pi_head_moved(),
            Err(e) => self.fail("moving the heads", &e),
        }
    }

    pub(crate) fn log(
        &self,
        action: &str,
        from: Option<&str>,
        to: Option<&str>,
        metadata: Option<String>,
    ) {
        let a = NewAction {
            timestamp: self.now(),
            action_type: action.into(),
            from_node: from.map(str::to_string),
            to_node: to.map(str::to_string),
            metadata,
        };
        let r = self.store().log_action(&a);
        if let Err(e) = r {
            self.fail("logging an action", &e);
        }
    }

    /// Mirror one entry (unless the tobe window skips it or a pending tobe holds it). Decided
    /// here, in event order; the commit itself is queued for the writer.
    fn mirror(&self, entry: &SessionEntry, ctx: &EntryContext) {
        if self.skipped_by_window(entry) {
            return;
        }
        match entry.message() {
            Some(SessionMessage::Llm(filo_ai::Message::ToolResult(t))) => {
                let mut st = lock(&self.state);
                if let Some(h) = st
                    .held
                    .as_mut()
                    .filter(|h| h.call_ids.contains(&t.tool_call_id))
                {
                    h.entries.push((entry.clone(), ctx.clone()));
                    return;
                }
            }
            Some(SessionMessage::Llm(filo_ai::Message::Assistant(a)))
                if a.tool_calls().any(|t| t.name == "tobe") =>
            {
                let call_ids = a.tool_calls().map(|t| t.id.clone()).collect();
                lock(&self.state).held = Some(Held {
                    call_ids,
                    entries: Vec::new(),
                });
            }
            _ => {}
        }
        self.enqueue(entry.clone(), ctx.clone());
    }

    fn enqueue(&self, entry: SessionEntry, ctx: EntryContext) {
        let job = Box::new((entry, ctx));
        match self.me.upgrade() {
            Some(me) => self.hub.queue_commit(me, job),
            // Only while this session's state is dropped: commit here.
            None => self.commit_entry(&job.0, &job.1),
        }
    }

    /// Wait until every queued commit was tried (this session's, and what other sessions of the
    /// hub queued before).
    pub(crate) fn flush(&self) {
        if let Some(rx) = self.request_flush() {
            // An error means the writer stopped: nothing is left to wait for.
            rx.recv().unwrap_or(());
        }
    }

    /// [`Shared::flush`] for at most `timeout`; false when commits were still pending.
    pub(crate) fn flush_within(&self, timeout: std::time::Duration) -> bool {
        self.request_flush().is_none_or(|rx| {
            !matches!(
                rx.recv_timeout(timeout),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
            )
        })
    }

    fn request_flush(&self) -> Option<std::sync::mpsc::Receiver<()>> {
        self.hub.request_flush(Some(self.me.clone()), || {
            !lock(&self.state).pending.is_empty()
        })
    }

    /// Commit what a pending `tobe` held back (the jump did not happen).
    pub(crate) fn release_held(&self) {
        let held = lock(&self.state).held.take();
        for (entry, ctx) in held.map(|h| h.entries).unwrap_or_default() {
            self.enqueue(entry, ctx);
        }
    }

    fn warn_pi_head_moved(&self) {
        let first = {
            let mut st = lock(&self.state);
            !std::mem::replace(&mut st.warned_pi_head, true)
        };
        if first && let Some(s) = self.session() {
            s.emit(&SessionEvent::Warning {
                    message: "Playfilo: PI_HEAD was moved by another agent; this session keeps its own head and leaves PI_HEAD alone".into(),
                });
        }
    }

    /// While a jump is in flight: the calling assistant's tool results, the aborted assistant and
    /// user messages typed meanwhile stay out of the DAG (the latter are re-sent afterwards).
    fn skipped_by_window(&self, entry: &SessionEntry) -> bool {
        let mut st = lock(&self.state);
        let Some(w) = st.window.as_mut() else {
            return false;
        };
        match entry.message() {
            Some(SessionMessage::Llm(filo_ai::Message::ToolResult(t))) => {
                w.call_ids.contains(&t.tool_call_id)
            }
            Some(SessionMessage::Llm(filo_ai::Message::Assistant(a))) => {
                a.stop_reason == filo_ai::StopReason::Aborted
            }
            Some(SessionMessage::Llm(m @ filo_ai::Message::User(_))) => {
                w.steering.push(AgentMessage::Llm(m.clone()));
                true
            }
            _ => false,
        }
    }
}

/// The Playfilo extension for one session: a view over a [`MemoryHub`].
pub struct Playfilo {
    shared: Arc<Shared>,
}

impl Drop for Playfilo {
    /// Nothing queued is lost: wait for the writer. It stops once the last view and the hub are
    /// gone.
    fn drop(&mut self) {
        self.shared.flush();
    }
}

impl Playfilo {
    /// Open (or create) the database for one session: a hub of one (see [`MemoryHub::open`]).
    /// A file that is not a Playfilo database, cannot be written or is damaged (SQLite's
    /// `quick_check`) is an error and is left untouched.
    pub fn open(config: PlayfiloConfig) -> Result<Playfilo, filo_dag::DagError> {
        let (hub, head) = config.split();
        Ok(MemoryHub::open(hub)?.session(head))
    }

    /// The hub this view commits through (for more sessions over the same database).
    pub fn hub(&self) -> MemoryHub {
        MemoryHub::from_core(self.shared.hub.clone())
    }

    /// Travel to an earlier node now, as the `tobe` tool would, for a user (the `/life` view):
    /// the session must be idle; afterwards its context is the target lineage plus the carryover
    /// and [`AgentSession::continue_run`](crate::AgentSession::continue_run) lets the agent answer
    /// in the new timeline.
    pub fn travel(&self, target: &str, carryover: &str) -> Result<(), TravelError> {
        tobe::travel(&self.shared, target, carryover)
    }

    /// Wait until every mirrored entry is committed.
    pub fn flush(&self) {
        self.shared.flush();
    }

    /// The head ref this session writes.
    pub fn head_ref(&self) -> String {
        lock(&self.shared.state).head_ref.clone()
    }

    /// The session's head node (after every queued commit landed).
    pub fn head(&self) -> Option<String> {
        self.shared.flush();
        lock(&self.shared.state).head.clone()
    }

    /// Entries of the session that are not in the memory (after every queued commit was tried),
    /// with the cause: a database that stayed locked, or failed. They stay in the session file
    /// and are mirrored when the session resumes.
    pub fn unmirrored(&self) -> Vec<Unmirrored> {
        self.shared.flush();
        lock(&self.shared.state)
            .pending
            .iter()
            .map(|p| Unmirrored {
                entry_id: p.entry.id.clone(),
                cause: p.cause.clone(),
            })
            .collect()
    }

    /// Wait up to `timeout` for the queued commits (for a signal handler about to exit: it must
    /// not hang on a locked database). True when every queued commit was tried in time.
    pub fn flush_within(&self, timeout: std::time::Duration) -> bool {
        self.shared.flush_within(timeout)
    }

    /// DB failures so far.
    pub fn error_count(&self) -> u64 {
        self.shared.flush();
        lock(&self.shared.state).errors
    }

    fn set_head_ref_for(&self, session_id: &str) {
        // Entries still queued belong to the previous head.
        self.shared.flush();
        let name = self
            .shared
            .head
            .clone()
            .unwrap_or_else(|| format!("PI_HEAD:{session_id}"));
        let head = self.shared.store().get_ref(&name).ok().flatten();
        let mut st = lock(&self.shared.state);
        st.head_ref = name;
        st.head = head;
    }
}

impl Extension for Playfilo {
    fn name(&self) -> &str {
        "playfilo"
    }

    fn attach(&self, session: SessionHandle) {
        *lock(&self.shared.session) = Some(session);
    }

    fn prepare_session(&self, manager: &mut SessionManager) -> Vec<String> {
        {
            let mut st = lock(&self.shared.state);
            st.switched_from = st.head.clone();
        }
        self.set_head_ref_for(manager.session_id());
        lock(&self.shared.state).inherit = manager.is_empty();
        resume::resume_from_dag(&self.shared, manager)
    }

    fn run_finished(&self) -> Option<Vec<AgentMessage>> {
        tobe::finish_jump(&self.shared)
    }

    fn tools(&self, _session: &SessionInfo) -> Vec<Arc<dyn AgentTool>> {
        tools::all(&self.shared)
    }

    fn session_changed(&self, change: SessionChange, session: &SessionInfo) {
        match change {
            SessionChange::New | SessionChange::Fork => {
                self.set_head_ref_for(&session.session_id);
                lock(&self.shared.state).inherit = change == SessionChange::New;
            }
            SessionChange::Resume => {
                let before = lock(&self.shared.state).switched_from.clone();
                let after = self.head();
                if after.is_some() || before.is_some() {
                    let path = session
                        .session_file
                        .as_ref()
                        .map(|p| p.to_string_lossy().into_owned());
                    let meta = serde_json::json!({"trigger": "human", "session": path.unwrap_or_default()});
                    self.shared.log(
                        filo_dag::action_type::SESSION_SWITCH,
                        before.as_deref(),
                        after.as_deref(),
                        Some(meta.to_string()),
                    );
                }
            }
            SessionChange::Shutdown => self.shared.flush(),
            SessionChange::Start => {}
        }
    }

    fn before_agent_start(
        &self,
        _prompt: &str,
        system_prompt: &str,
    ) -> BoxFuture<'_, BeforeAgentStart> {
        let out = BeforeAgentStart {
            system_prompt: self
                .shared
                .hub
                .seed
                .as_ref()
                .map(|seed| format!("{seed}\n\n{system_prompt}")),
            messages: Vec::new(),
        };
        Box::pin(async move { out })
    }

    fn entry_appended(&self, entry: &SessionEntry, ctx: &EntryContext) {
        self.shared.mirror(entry, ctx);
    }

    fn error_count(&self) -> u64 {
        Playfilo::error_count(self)
    }
}
