//! One memory database per process (embed design G11): a [`MemoryHub`] owns the database's one
//! SQLite connection and its one background writer thread; each session's [`Playfilo`] is a cheap
//! view over it, with its own head, state and queue position.
//!
//! Lifetime: the writer runs while the hub or any view (or a commit still queued for one) lives.
//! Dropping a view waits for the queue; dropping the last handle lets the writer drain what is
//! queued and waits for it to stop, so nothing queued is lost.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use filo_dag::{DagError, Store};
use filo_session::SessionEntry;

use super::{Playfilo, Shared, State, lock};
use crate::extension::EntryContext;

/// Database-level configuration: the same for every session of a hub.
#[derive(Clone)]
pub struct HubConfig {
    /// The database (`~/.playfilo/playfilo.db` by default).
    pub db_path: PathBuf,
    /// `INCUBATION_SEED.md`, prepended to every session's system prompt when present.
    pub seed_path: Option<PathBuf>,
    /// The wall clock in ms (commit timestamps and ages).
    pub clock: Arc<dyn Fn() -> i64 + Send + Sync>,
    /// How long one SQLite call waits for another process's lock (SQLite's busy timeout).
    pub busy_timeout: Duration,
    /// How long a commit keeps retrying while the database stays locked before the entry is
    /// reported as not in the memory.
    pub lock_patience: Duration,
}

impl HubConfig {
    /// The defaults under a home directory: `<home>/.playfilo/{playfilo.db,INCUBATION_SEED.md}`.
    pub fn under_home(home: &Path) -> Self {
        let dir = home.join(".playfilo");
        HubConfig {
            db_path: dir.join("playfilo.db"),
            seed_path: Some(dir.join("INCUBATION_SEED.md")),
            clock: Arc::new(filo_session::ids::now_ms),
            busy_timeout: Duration::from_secs(30),
            lock_patience: Duration::from_secs(300),
        }
    }
}

/// Work for the background writer, each job naming the session it belongs to.
enum Job {
    /// Commit one entry of this session. The job keeps the session's state alive until it ran.
    Commit(Arc<Shared>, Box<(SessionEntry, EntryContext)>),
    /// Everything queued before this ran: retry this session's waiting entries, then tell.
    Flush(Option<Weak<Shared>>, Sender<()>),
}

/// What the hub and every view share: the connection, the writer, the database-level config.
pub(crate) struct Core {
    pub config: HubConfig,
    pub store: Mutex<Store>,
    /// The seed file's text, read once when the hub opens.
    pub seed: Option<String>,
    /// The writer's queue; `None` only while the core is dropped.
    writer: Option<Sender<Job>>,
    /// Jobs sent to the writer and not yet finished: counted up before a job is sent, down by
    /// the writer once it ran (with `Release`, so a caller that reads 0 sees what the jobs did).
    outstanding: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
    /// Sessions with entries waiting after a failed commit (the database was away or locked):
    /// the writer tries them again every [`RETRY_WAITING`] while there are any, so their
    /// entries reach the memory once it is back, even when no new commit comes.
    waiting: Arc<Mutex<Vec<Weak<Shared>>>>,
    /// Last, so that it runs after the connection above closed.
    _stamp: super::verified::RecordOnClose,
}

impl Core {
    pub(crate) fn store(&self) -> MutexGuard<'_, Store> {
        lock(&self.store)
    }

    fn send(&self, job: Job) -> Result<(), Job> {
        match &self.writer {
            Some(w) => {
                self.outstanding.fetch_add(1, Ordering::AcqRel);
                w.send(job).map_err(|std::sync::mpsc::SendError(job)| {
                    self.outstanding.fetch_sub(1, Ordering::AcqRel);
                    job
                })
            }
            None => Err(job),
        }
    }

    /// Remember `session` as having entries waiting (the writer retries it).
    pub(crate) fn note_waiting(&self, session: &Weak<Shared>) {
        let mut waiting = lock(&self.waiting);
        if !waiting.iter().any(|w| w.ptr_eq(session)) {
            waiting.push(session.clone());
        }
    }

    /// Every job sent to the writer so far has run (and what it did is visible to the caller).
    pub(crate) fn idle(&self) -> bool {
        self.outstanding.load(Ordering::Acquire) == 0
    }

    /// Queue one entry of `session` for the writer. When the writer is gone (it panicked),
    /// the entry is committed here, on the caller's thread.
    pub(crate) fn queue_commit(
        &self,
        session: Arc<Shared>,
        entry: Box<(SessionEntry, EntryContext)>,
    ) {
        if let Err(Job::Commit(session, entry)) = self.send(Job::Commit(session, entry)) {
            session.commit_entry(&entry.0, &entry.1);
        }
    }

    /// Ask the writer to tell when every job queued so far ran (retrying `session`'s waiting
    /// entries last); `None` when there is nothing to wait for: no writer, or (`needs_retry`
    /// false) a writer that already ran every job queued so far, so the flush would only be a
    /// round trip through its thread.
    pub(crate) fn request_flush(
        &self,
        session: Option<Weak<Shared>>,
        needs_retry: impl FnOnce() -> bool,
    ) -> Option<std::sync::mpsc::Receiver<()>> {
        // Idle first, then the session's waiting entries: once idle, they are final for every
        // job queued before this flush.
        if self.idle() && !needs_retry() {
            return None;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        self.send(Job::Flush(session, tx)).is_ok().then_some(rx)
    }
}

impl Drop for Core {
    /// The last handle is gone: close the queue, and wait for the writer to commit what is
    /// still queued (unless this runs on the writer itself, which then drains and stops).
    fn drop(&mut self) {
        self.writer.take();
        if let Some(t) = self.thread.take()
            && t.thread().id() != std::thread::current().id()
        {
            // A writer that panicked has nothing left to finish.
            t.join().unwrap_or(());
        }
    }
}

/// How often the writer tries the waiting entries again while there are any.
const RETRY_WAITING: Duration = Duration::from_secs(1);

fn run_writer(rx: Receiver<Job>, outstanding: &AtomicUsize, waiting: &Mutex<Vec<Weak<Shared>>>) {
    loop {
        let job = if lock(waiting).is_empty() {
            match rx.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        } else {
            match rx.recv_timeout(RETRY_WAITING) {
                Ok(job) => job,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    retry_waiting(waiting);
                    continue;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
            }
        };
        let ack = run_job(job);
        // Counted down before the flush's waiter hears back, so that it finds the writer idle.
        outstanding.fetch_sub(1, Ordering::AcqRel);
        if let Some(ack) = ack {
            // The waiter may have given up (`flush_within`): nothing to tell.
            ack.send(()).unwrap_or(());
        }
    }
}

/// One more attempt for every session with entries waiting; those that have none left (or are
/// gone) are forgotten.
fn retry_waiting(waiting: &Mutex<Vec<Weak<Shared>>>) {
    let sessions: Vec<Weak<Shared>> = std::mem::take(&mut *lock(waiting));
    let mut still = Vec::new();
    for weak in sessions {
        let Some(shared) = weak.upgrade() else {
            continue;
        };
        shared.retry_pending();
        if !lock(&shared.state).pending.is_empty() {
            still.push(weak);
        }
    }
    let mut waiting = lock(waiting);
    for w in still {
        if !waiting.iter().any(|x| x.ptr_eq(&w)) {
            waiting.push(w);
        }
    }
}

/// Run one job; a flush's answer is sent by the caller.
fn run_job(job: Job) -> Option<Sender<()>> {
    match job {
        Job::Commit(shared, job) => {
            shared.commit_entry(&job.0, &job.1);
            None
        }
        Job::Flush(session, ack) => {
            if let Some(shared) = session.and_then(|w| w.upgrade()) {
                shared.retry_pending();
            }
            Some(ack)
        }
    }
}

/// One memory database for a whole process: one SQLite connection, one writer thread, any
/// number of per-session [`Playfilo`] views. Cheap to clone.
#[derive(Clone)]
pub struct MemoryHub {
    core: Arc<Core>,
}

impl MemoryHub {
    /// Open (or create) the database and start its writer. A file that is not a Playfilo
    /// database, cannot be written or is damaged (SQLite's `quick_check`) is an error and is left
    /// untouched. The check's pass over the file is skipped when the file is exactly as a hub
    /// that had checked it left it (see `verified.rs`).
    pub fn open(config: HubConfig) -> Result<MemoryHub, DagError> {
        let location = config.db_path.to_string_lossy();
        let remote = filo_dag::is_postgres_url(&location);
        let store = if remote {
            Store::connect(&location)?
        } else {
            if let Some(dir) = config.db_path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            Store::open(&config.db_path)?
        };
        store.set_busy_timeout(config.busy_timeout)?;
        // Looked at before anything of this process writes the file.
        let trusted = !remote && super::verified::unchanged_since_verified(&config.db_path);
        let checked = if trusted {
            store.check_not_read_only()
        } else {
            store.check_writable()
        };
        if let Err(e) = checked {
            if !remote {
                super::verified::forget(&config.db_path);
            }
            return Err(e);
        }
        let seed = config
            .seed_path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let outstanding = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&outstanding);
        let waiting = Arc::new(Mutex::new(Vec::new()));
        let writer_waiting = Arc::clone(&waiting);
        let thread = std::thread::Builder::new()
            .name("playfilo-writer".into())
            .spawn(move || run_writer(rx, &counter, &writer_waiting))
            .map_err(|e| DagError::Io {
                path: config.db_path.clone(),
                cause: e,
            })?;
        let stamp_db = (!remote).then(|| config.db_path.clone());
        let core = Core {
            config,
            store: Mutex::new(store),
            seed,
            writer: Some(tx),
            outstanding,
            thread: Some(thread),
            waiting,
            _stamp: super::verified::RecordOnClose { db: stamp_db },
        };
        Ok(MemoryHub {
            core: Arc::new(core),
        })
    }

    /// A view for one session, committing through this hub's writer. `head` names the head ref
    /// it writes; `None` = `PI_HEAD:<session id>`, set when the session is prepared.
    pub fn session(&self, head: Option<String>) -> Playfilo {
        let shared = Arc::new_cyclic(|me| Shared {
            me: me.clone(),
            hub: self.core.clone(),
            head,
            state: Mutex::new(State::default()),
            session: Mutex::new(None),
        });
        Playfilo { shared }
    }

    /// Wait until every commit queued so far, by any session, was tried.
    pub fn flush(&self) {
        if let Some(rx) = self.core.request_flush(None, || false) {
            // An error means the writer stopped: nothing is left to wait for.
            rx.recv().unwrap_or(());
        }
    }

    /// The database this hub writes.
    pub fn db_path(&self) -> &Path {
        &self.core.config.db_path
    }

    pub(crate) fn from_core(core: Arc<Core>) -> MemoryHub {
        MemoryHub { core }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use filo_ai::{Message, UserContent, UserMessage};
    use filo_session::{SessionManager, SessionMessage};

    use super::*;
    use crate::extension::SessionInfo;

    fn writer_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.unwrap().path().join("comm")).ok())
            .filter(|name| name.trim() == "playfilo-writer")
            .count()
    }

    fn entry_context(manager: &SessionManager) -> EntryContext {
        EntryContext {
            session: SessionInfo {
                session_id: manager.session_id().to_string(),
                session_file: None,
                cwd: ".".into(),
            },
            model: None,
            thinking_level: filo_ai::ThinkingLevel::default(),
            system_prompt: String::new(),
            tools: Vec::new(),
        }
    }

    /// A hub on `dir/playfilo.db` and one session view whose head ref is `MINE`.
    fn hub_with_view(dir: &Path) -> (MemoryHub, Playfilo) {
        let mut config = HubConfig::under_home(dir);
        config.db_path = dir.join("playfilo.db");
        let hub = MemoryHub::open(config).unwrap();
        let view = hub.session(Some("MINE".into()));
        lock(&view.shared.state).head_ref = "MINE".into();
        (hub, view)
    }

    /// A flush skips the round trip through the writer only when the writer ran every job
    /// queued before it: after a flush (of the view or of the hub) every queued commit is in
    /// the database, seen by another connection, and the writer is idle.
    #[test]
    fn a_flush_returns_only_after_every_queued_commit_landed() {
        let dir = tempfile::tempdir().unwrap();
        let (hub, view) = hub_with_view(dir.path());
        // Idle, nothing waiting: no job, and the flush is done.
        view.flush();
        hub.flush();
        assert!(hub.core.idle());

        let mut manager = SessionManager::create(".", &dir.path().join("sessions"));
        let ctx = entry_context(&manager);
        for round in 0..2 {
            let ids: Vec<String> = (0..40)
                .map(|i| {
                    let msg = SessionMessage::Llm(Message::User(UserMessage {
                        content: UserContent::Text(format!(
                            "round {round} #{i} {}",
                            "x".repeat(20_000)
                        )),
                        timestamp: i,
                    }));
                    manager.append_message(msg).unwrap()
                })
                .collect();
            for id in &ids {
                view.shared
                    .enqueue(manager.entry(id).unwrap().clone(), ctx.clone());
            }
            if round == 0 {
                view.flush();
            } else {
                hub.flush();
            }
            assert!(hub.core.idle(), "round {round}: jobs left after the flush");
            let store = Store::open(dir.path().join("playfilo.db")).unwrap();
            let found = store
                .node_ids_by_external_ids(ids.iter().map(String::as_str))
                .unwrap();
            assert_eq!(
                found.len(),
                ids.len(),
                "round {round}: commits missing after the flush"
            );
            assert_eq!(store.get_ref("MINE").unwrap(), found.get(&ids[39]).cloned());
        }
    }

    /// The last handle can be a queued job: the writer then drops the core itself, commits
    /// what is left and stops, without waiting for itself.
    #[test]
    fn the_last_handle_dropped_on_the_writer_drains_and_stops() {
        if !filo_testkit::alone(
            "playfilo::hub::tests::the_last_handle_dropped_on_the_writer_drains_and_stops",
        ) {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (hub, view) = hub_with_view(dir.path());
        view.flush();
        // The writer names itself once it runs; an idle flush does not wait for it.
        let start = Instant::now();
        while writer_threads() == 0 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(writer_threads(), 1);
        let shared = view.shared.clone();
        drop(hub);
        drop(view);

        let mut manager = SessionManager::create(".", &dir.path().join("sessions"));
        let ctx = entry_context(&manager);
        let ids: Vec<String> = (0..20)
            .map(|i| {
                let msg = SessionMessage::Llm(Message::User(UserMessage {
                    content: UserContent::Text(format!("late #{i}")),
                    timestamp: i,
                }));
                manager.append_message(msg).unwrap()
            })
            .collect();
        for id in &ids {
            shared.enqueue(manager.entry(id).unwrap().clone(), ctx.clone());
        }
        let core = Arc::downgrade(&shared.hub);
        // From here the queued jobs hold the only handles.
        drop(shared);
        let start = Instant::now();
        while (core.strong_count() > 0 || writer_threads() > 0)
            && start.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(core.strong_count(), 0, "the core outlived its last job");
        assert_eq!(writer_threads(), 0, "the writer did not stop");
        let store = Store::open(dir.path().join("playfilo.db")).unwrap();
        let found = store
            .node_ids_by_external_ids(ids.iter().map(String::as_str))
            .unwrap();
        assert_eq!(found.len(), ids.len());
        let head = store.get_ref("MINE").unwrap();
        assert_eq!(head, found.get(&ids[19]).cloned());
    }
}
