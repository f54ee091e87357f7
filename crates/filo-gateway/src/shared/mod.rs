//! Several gateway hosts on one PostgreSQL (`filo gateway --store postgres://…`).
//!
//! What is shared, in the schema `filo_gateway`: each session key's entry (what `sessions.json`
//! holds) and each session's transcript, as its JSONL lines in order. A key's lane is a
//! PostgreSQL advisory lock held, on a connection of this host's pool, for the whole run: two
//! hosts never run one session at once, and a host that dies releases its locks with its
//! connections, so the next message is served by another host.
//!
//! A run works on a local copy of the transcript (the file format is pi's, and the agent writes
//! it as usual): under the lock, the copy is brought up to date from the database first; after
//! the run, the lines it appended go to the database in one transaction. A host killed during a
//! run therefore leaves nothing of that run visible; its half-written local copy is set aside
//! (renamed, never deleted) the next time it serves the session.
//!
//! When the memory lives in the same database (the default), the session's head ref
//! (`PI_HEAD:<session id>`) is put back on the node of the last committed transcript entry
//! before a run: a killed run's entries stay in the memory as a branch (nodes are immutable), but
//! no host resumes them into the transcript.
//!
//! Idempotency keys are shared too: a run's key is recorded in the same transaction as its
//! transcript lines, so a request repeated on another host (a client's retry, a load balancer)
//! gets the recorded reply and runs nothing, while a run that died uncommitted runs again.
//!
//! The auth profiles' rotation state (cooldowns, usage, last good profile) is shared as well
//! ([`auth`]); each host keeps its own credentials.
//!
//! A message for a key another host is running waits in a shared queue ([`queue`]): the host
//! holding the lane runs it after its own run, before it lets the lane go.
//!
//! Per host: global concurrency, WebSocket connections, the stream of a run's events (a message
//! answered on another host gets its final reply).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use filo_dag::postgres::Client;
use filo_embed::session_store::SessionEntry;
use tokio::sync::Semaphore;

use crate::core::lock;

pub mod auth;
pub mod queue;

/// The layout version of the `filo_gateway` tables.
pub const LAYOUT_VERSION: i64 = 4;

const MIGRATE_LOCK: i64 = 0x6669_6c6f_6777_6d69;

const MIGRATIONS: &[&str] = &[
    "\
CREATE TABLE filo_gateway.sessions (agent TEXT NOT NULL, key TEXT NOT NULL, entry TEXT NOT NULL, \
  updated_ms BIGINT NOT NULL, PRIMARY KEY (agent, key));
CREATE TABLE filo_gateway.transcript_lines (session_id TEXT NOT NULL, n BIGINT NOT NULL, \
  line TEXT NOT NULL, PRIMARY KEY (session_id, n));",
    "CREATE TABLE filo_gateway.idempotency (key TEXT PRIMARY KEY, session_key TEXT NOT NULL, \
  run_id TEXT NOT NULL, reply TEXT NOT NULL, created_ms BIGINT NOT NULL);",
    "CREATE TABLE filo_gateway.auth_state (agent TEXT PRIMARY KEY, state TEXT NOT NULL, \
  updated_ms BIGINT NOT NULL);",
    "\
CREATE TABLE filo_gateway.queue (id BIGSERIAL PRIMARY KEY, agent TEXT NOT NULL, key TEXT NOT NULL, \
  run_id TEXT NOT NULL, mode TEXT NOT NULL, request TEXT NOT NULL, host TEXT NOT NULL, \
  state TEXT NOT NULL, outcome TEXT, enqueued_ms BIGINT NOT NULL, done_ms BIGINT);
CREATE INDEX queue_by_key ON filo_gateway.queue (agent, key, state, id);",
];

/// A committed run, as an idempotency key recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The run that answered the key first.
    pub run_id: String,
    /// Its reply text.
    pub reply: String,
}

/// What a finished run records with its transcript lines.
#[derive(Debug, Clone)]
pub struct Commit {
    /// The request's idempotency key, if it had one.
    pub idempotency_key: Option<String>,
    pub session_key: String,
    pub run_id: String,
    pub reply: String,
    /// Messages other hosts queued that this run answered: their rows are marked done, with
    /// `outcome`, in the same transaction.
    pub queue_rows: Vec<i64>,
    pub outcome: String,
}

/// Connections kept per host (and so the runs that can hold a lane at once).
const DEFAULT_POOL: usize = 32;

/// This host's connection to the shared database.
pub struct SharedStore {
    url: String,
    /// This process, as the queue's rows name their host.
    host: String,
    shown: String,
    idle: Mutex<Vec<Client>>,
    slots: Arc<Semaphore>,
    /// After a failed connection attempt: why, and when the next one may be made.
    retry: Mutex<Option<Retry>>,
    /// The memory, when it lives in this database (its head refs follow the transcripts).
    memory: Option<Arc<Mutex<filo_dag::Store>>>,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("url", &self.shown)
            .finish()
    }
}

/// How a call on a pooled connection failed.
enum Failed {
    /// The connection broke (the text names the database as unavailable).
    Broken(String),
    /// Anything else: the statement's own error, or no connection could be had.
    Other(String),
}

impl Failed {
    fn text(self) -> String {
        match self {
            Self::Broken(t) | Self::Other(t) => t,
        }
    }
}

/// The backoff after a failed connection attempt: while it runs, calls fail at once with the
/// last cause instead of each trying to connect.
struct Retry {
    cause: String,
    at: std::time::Instant,
    delay: std::time::Duration,
}

const BACKOFF_FIRST: std::time::Duration = std::time::Duration::from_millis(100);
const BACKOFF_MAX: std::time::Duration = std::time::Duration::from_secs(2);
/// A connection attempt that failed after this long (a host that does not answer) starts the
/// backoff; one refused faster does not.
const SLOW_ATTEMPT: std::time::Duration = std::time::Duration::from_secs(1);
/// How long a connection that failed a call gets to answer a probe before it is called broken.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// A session key's lane, held until [`Lease::release`] (or until its connection closes).
pub struct Lease {
    client: Option<Client>,
    store: Arc<SharedStore>,
    lock_key: i64,
    _slot: tokio::sync::OwnedSemaphorePermit,
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(format!("shared store task failed: {e}")))
}

fn pg(e: filo_dag::postgres::Error) -> String {
    filo_dag::DagError::from(e).to_string()
}

/// The advisory lock of one session key (stable across hosts and builds: FNV-1a, not std's
/// randomly seeded hasher).
fn lane_lock_key(agent: &str, key: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in agent.bytes().chain([0x1f]).chain(key.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_ne_bytes(h.to_ne_bytes())
}

impl SharedStore {
    /// Connects, creates or migrates the tables (refusing a newer layout). `memory_here`: the
    /// runs' memory is this database too.
    pub async fn connect(url: &str, memory_here: bool) -> Result<Arc<Self>, String> {
        let memory = if memory_here {
            let u = url.to_owned();
            let store =
                blocking(move || filo_dag::Store::connect(&u).map_err(|e| e.to_string())).await?;
            Some(Arc::new(Mutex::new(store)))
        } else {
            None
        };
        let store = Arc::new(Self {
            url: url.to_owned(),
            host: format!("pid {} {}", std::process::id(), uuid::Uuid::new_v4()),
            shown: filo_dag::redact(url),
            idle: Mutex::new(Vec::new()),
            slots: Arc::new(Semaphore::new(DEFAULT_POOL)),
            retry: Mutex::new(None),
            memory,
        });
        let mut client = store.open().await?;
        let shown = store.shown.clone();
        let client = blocking(move || {
            migrate(&mut client, &shown)?;
            queue::sweep(&mut client)?;
            Ok(client)
        })
        .await?;
        store.give_back(client);
        Ok(store)
    }

    /// The connection string (with its password: for this host's own connections).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The connection string without its password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// "The shared store … is unavailable: …", the error of every call made while the
    /// database cannot be reached.
    fn unavailable(&self, cause: &str) -> String {
        filo_dag::DagError::PgUnavailable {
            url: self.shown.clone(),
            cause: filo_dag::redact(cause),
        }
        .to_string()
    }

    async fn open(&self) -> Result<Client, String> {
        if let Some(r) = lock(&self.retry).as_ref()
            && std::time::Instant::now() < r.at
        {
            return Err(self.unavailable(&r.cause));
        }
        let url = self.url.clone();
        let tried = std::time::Instant::now();
        let opened = blocking(move || {
            filo_dag::connect_client(&url).map_err(|e| match e {
                filo_dag::DagError::PgUnavailable { cause, .. } => cause,
                other => other.to_string(),
            })
        })
        .await;
        let mut retry = lock(&self.retry);
        match opened {
            Ok(c) => {
                *retry = None;
                Ok(c)
            }
            Err(cause) if tried.elapsed() < SLOW_ATTEMPT => {
                // Refused at once: the next call tries again (and finds the server back).
                *retry = None;
                Err(self.unavailable(&cause))
            }
            Err(cause) => {
                let delay = retry
                    .as_ref()
                    .map_or(BACKOFF_FIRST, |r| (r.delay * 2).min(BACKOFF_MAX));
                *retry = Some(Retry {
                    cause: cause.clone(),
                    at: std::time::Instant::now() + delay,
                    delay,
                });
                Err(self.unavailable(&cause))
            }
        }
    }

    async fn client(&self) -> Result<Client, String> {
        let idle = lock(&self.idle).pop();
        match idle {
            Some(c) if !c.is_closed() => Ok(c),
            Some(closed) => {
                close_off_runtime(closed);
                self.open().await
            }
            None => self.open().await,
        }
    }

    /// Back into the pool; a closed client is closed off the async workers (closing blocks on
    /// the client's own runtime, which panics on a runtime thread).
    fn give_back(&self, client: Client) {
        if client.is_closed() {
            close_off_runtime(client);
        } else {
            lock(&self.idle).push(client);
        }
    }

    /// Runs `f` on a pooled connection, off the async workers. A connection that fails a call
    /// and then a probe is broken: it is closed there, the pool's other connections (opened
    /// before the same outage) with it, and the error says the database is unavailable. When
    /// the broken connection came from the pool (it had been working: the server restarted
    /// since), `f` is made once more on a new connection: its first statement failed before
    /// the server saw it.
    async fn with<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl Fn(&mut Client) -> Result<T, String> + Send + Sync + 'static,
    ) -> Result<T, String> {
        let f = Arc::new(f);
        let pooled = !lock(&self.idle).is_empty();
        match self.with_once(f.clone()).await {
            Ok(v) => Ok(v),
            Err(Failed::Broken(_)) if pooled => self.with_once(f).await.map_err(Failed::text),
            Err(e) => Err(e.text()),
        }
    }

    async fn with_once<T: Send + 'static>(
        self: &Arc<Self>,
        f: Arc<impl Fn(&mut Client) -> Result<T, String> + Send + Sync + 'static>,
    ) -> Result<T, Failed> {
        let mut client = self.client().await.map_err(Failed::Other)?;
        let (client, out) = blocking(move || {
            let out = f(&mut client);
            if out.is_err() && !alive(&mut client) {
                drop(client);
                return Ok((None, out));
            }
            Ok((Some(client), out))
        })
        .await
        .map_err(Failed::Other)?;
        match client {
            Some(client) => {
                self.give_back(client);
                out.map_err(Failed::Other)
            }
            None => {
                self.forget_idle();
                Err(Failed::Broken(
                    self.unavailable(&out.err().unwrap_or_default()),
                ))
            }
        }
    }

    /// Closes every idle connection (after one was found broken: they went with it).
    fn forget_idle(&self) {
        let idle: Vec<Client> = std::mem::take(&mut *lock(&self.idle));
        if !idle.is_empty() {
            close_off_runtime_all(idle);
        }
    }

    /// One round trip to the database (for `/ready`): `Err` names why it cannot be reached.
    pub async fn ping(self: &Arc<Self>) -> Result<(), String> {
        self.with(|c| c.simple_query("SELECT 1").map(|_| ()).map_err(pg))
            .await
    }

    /// Takes `key`'s lane when no host holds it; `None` when another host (or another run on
    /// this one) is running the key.
    pub async fn try_lease(
        self: &Arc<Self>,
        agent: &str,
        key: &str,
    ) -> Result<Option<Lease>, String> {
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let lock_key = lane_lock_key(agent, key);
        // A pooled connection may be one the server dropped when it restarted: then once more
        // on a new one.
        let mut tries = if lock(&self.idle).is_empty() { 1 } else { 2 };
        let (client, got) = loop {
            tries -= 1;
            let mut client = self.client().await?;
            let taken = blocking(move || {
                // On an error the client is dropped here, off the async workers.
                let got: bool = client
                    .query_one("SELECT pg_try_advisory_lock($1)", &[&lock_key])
                    .map_err(pg)?
                    .get(0);
                Ok((client, got))
            })
            .await;
            match taken {
                Ok(taken) => break taken,
                Err(e) => {
                    self.forget_idle();
                    if tries == 0 {
                        return Err(self.unavailable(&e));
                    }
                }
            }
        };
        if !got {
            self.give_back(client);
            return Ok(None);
        }
        Ok(Some(Lease {
            client: Some(client),
            store: self.clone(),
            lock_key,
            _slot: slot,
        }))
    }

    /// The shared entry of `key`, if any host created one.
    pub async fn load_entry(
        self: &Arc<Self>,
        agent: &str,
        key: &str,
    ) -> Result<Option<SessionEntry>, String> {
        let (agent, key) = (agent.to_owned(), key.to_owned());
        let text: Option<String> = self
            .with(move |c| {
                let row = c
                    .query_opt(
                        "SELECT entry FROM filo_gateway.sessions WHERE agent = $1 AND key = $2",
                        &[&agent, &key],
                    )
                    .map_err(pg)?;
                Ok(row.map(|r| r.get(0)))
            })
            .await?;
        text.map(|t| serde_json::from_str(&t).map_err(|e| format!("a shared session entry: {e}")))
            .transpose()
    }

    /// Writes `key`'s entry for every host.
    pub async fn save_entry(
        self: &Arc<Self>,
        agent: &str,
        key: &str,
        entry: &SessionEntry,
    ) -> Result<(), String> {
        let text = serde_json::to_string(entry).map_err(|e| e.to_string())?;
        let (agent, key) = (agent.to_owned(), key.to_owned());
        let now = crate::run::now_ms();
        self.with(move |c| {
            c.execute(
                "INSERT INTO filo_gateway.sessions (agent, key, entry, updated_ms) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (agent, key) \
                 DO UPDATE SET entry = EXCLUDED.entry, updated_ms = EXCLUDED.updated_ms",
                &[&agent, &key, &text, &now],
            )
            .map_err(pg)?;
            Ok(())
        })
        .await
    }

    /// The transcript of `session_id` as its lines, in order.
    pub async fn transcript(self: &Arc<Self>, session_id: &str) -> Result<Vec<String>, String> {
        let id = session_id.to_owned();
        self.with(move |c| {
            let rows = c
                .query(
                    "SELECT line FROM filo_gateway.transcript_lines WHERE session_id = $1 \
                     ORDER BY n",
                    &[&id],
                )
                .map_err(pg)?;
            Ok(rows.into_iter().map(|r| r.get(0)).collect())
        })
        .await
    }

    /// Brings the local copy `file` up to the shared transcript; returns its line count. A
    /// local copy that differs (a run this host did not finish) is renamed aside, not deleted.
    pub async fn sync_down(
        self: &Arc<Self>,
        session_id: &str,
        file: &Path,
    ) -> Result<usize, String> {
        let lines = self.transcript(session_id).await?;
        let last_entry = lines.iter().rev().find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            (v.get("type")? != "session")
                .then(|| v.get("id")?.as_str().map(str::to_owned))
                .flatten()
        });
        if let (Some(memory), Some(entry)) = (&self.memory, last_entry) {
            let memory = memory.clone();
            let head = format!("PI_HEAD:{session_id}");
            blocking(move || align_head(&lock(&memory), &head, &entry)).await?;
        }
        let file = file.to_path_buf();
        blocking(move || write_copy(&file, &lines).map(|()| lines.len())).await
    }

    /// The run an idempotency key already answered, on any host.
    pub async fn recorded(self: &Arc<Self>, key: &str) -> Result<Option<Recorded>, String> {
        let key = key.to_owned();
        self.with(move |c| {
            let row = c
                .query_opt(
                    "SELECT run_id, reply FROM filo_gateway.idempotency WHERE key = $1",
                    &[&key],
                )
                .map_err(pg)?;
            Ok(row.map(|r| Recorded {
                run_id: r.get(0),
                reply: r.get(1),
            }))
        })
        .await
    }

    /// Sends the lines `file` gained past the first `known` to the shared transcript, and the
    /// run's idempotency key, in one transaction; returns how many lines.
    pub async fn sync_up(
        self: &Arc<Self>,
        session_id: &str,
        file: &Path,
        known: usize,
        commit: Commit,
    ) -> Result<usize, String> {
        let path = file.to_path_buf();
        let lines = blocking(move || read_lines(&path)).await?;
        if lines.len() < known {
            return Err(format!(
                "{} has {} lines, fewer than the {known} it was given",
                file.display(),
                lines.len()
            ));
        }
        let new: Vec<String> = lines.into_iter().skip(known).collect();
        let count = new.len();
        if count == 0 && commit.idempotency_key.is_none() && commit.queue_rows.is_empty() {
            return Ok(0);
        }
        let id = session_id.to_owned();
        let now = crate::run::now_ms();
        self.with(move |c| {
            let mut tx = c.transaction().map_err(pg)?;
            let stmt = tx
                .prepare(
                    "INSERT INTO filo_gateway.transcript_lines (session_id, n, line) \
                     VALUES ($1, $2, $3)",
                )
                .map_err(pg)?;
            for (i, line) in new.iter().enumerate() {
                let n = i64::try_from(known + i).unwrap_or(i64::MAX);
                tx.execute(&stmt, &[&id, &n, line]).map_err(pg)?;
            }
            if let Some(key) = &commit.idempotency_key {
                tx.execute(
                    "INSERT INTO filo_gateway.idempotency \
                     (key, session_key, run_id, reply, created_ms) VALUES ($1, $2, $3, $4, $5) \
                     ON CONFLICT (key) DO NOTHING",
                    &[
                        key,
                        &commit.session_key,
                        &commit.run_id,
                        &commit.reply,
                        &now,
                    ],
                )
                .map_err(pg)?;
            }
            if !commit.queue_rows.is_empty() {
                tx.execute(
                    "UPDATE filo_gateway.queue SET state = 'done', outcome = $2, done_ms = $3 \
                     WHERE id = ANY($1)",
                    &[&commit.queue_rows, &commit.outcome, &now],
                )
                .map_err(pg)?;
            }
            tx.commit().map_err(pg)?;
            Ok(count)
        })
        .await
    }
}

impl Drop for SharedStore {
    fn drop(&mut self) {
        // Closing a client blocks on its own runtime: never on an async worker.
        let idle: Vec<Client> = std::mem::take(&mut *lock(&self.idle));
        if !idle.is_empty() {
            let closer = std::thread::spawn(move || drop(idle));
            let _ = closer.join();
        }
    }
}

impl Lease {
    /// Gives the lane back. (Dropped without this, the connection is closed instead, which
    /// releases the lock too.)
    pub async fn release(mut self) {
        let Some(mut client) = self.client.take() else {
            return;
        };
        let key = self.lock_key;
        let back = blocking(move || {
            client
                .execute("SELECT pg_advisory_unlock($1)", &[&key])
                .map_err(pg)?;
            Ok(client)
        })
        .await;
        // (A client that failed to unlock was dropped on the blocking thread: its lock went
        // with its connection.)
        if let Ok(client) = back {
            self.store.give_back(client);
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Not released: close the connection (off the async workers), which frees the lock.
        if let Some(client) = self.client.take() {
            std::thread::spawn(move || drop(client));
        }
    }
}

/// Closes a client on a plain thread (never on an async worker, where closing panics).
fn close_off_runtime(client: Client) {
    close_off_runtime_all(vec![client]);
}

fn close_off_runtime_all(clients: Vec<Client>) {
    // Detached: a close waits for the server's answer, which may never come.
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => drop(rt.spawn_blocking(move || drop(clients))),
        Err(_) => drop(clients),
    }
}

/// True when `client` still answers (a statement error leaves it usable; a closed or cut
/// connection does not). Called off the async workers.
pub(super) fn alive(client: &mut Client) -> bool {
    if client.is_closed() {
        return false;
    }
    match client.is_valid(PROBE_TIMEOUT) {
        Ok(()) => true,
        // The server answered with an error of its own: it is there.
        Err(e) => e.as_db_error().is_some(),
    }
}

/// Points `head` at the node of the committed entry `entry` when it points elsewhere (a run
/// that was never committed moved it). Nothing to do when the entry has no node.
fn align_head(memory: &filo_dag::Store, head: &str, entry: &str) -> Result<(), String> {
    let Some(node) = memory
        .node_id_by_external_id(entry)
        .map_err(|e| e.to_string())?
    else {
        return Ok(());
    };
    let current = memory.get_ref(head).map_err(|e| e.to_string())?;
    if current.is_none() || current.as_deref() == Some(node.as_str()) {
        return Ok(());
    }
    memory
        .compare_and_set_ref(head, current.as_deref(), Some(&node))
        .map_err(|e| format!("memory head {head}: {e}"))
}

fn migrate(client: &mut Client, shown: &str) -> Result<(), String> {
    let mut tx = client.transaction().map_err(pg)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_LOCK])
        .map_err(pg)?;
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS filo_gateway; \
         CREATE TABLE IF NOT EXISTS filo_gateway.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    )
    .map_err(pg)?;
    let found: i64 = tx
        .query_opt(
            "SELECT value FROM filo_gateway.meta WHERE key = 'layout_version'",
            &[],
        )
        .map_err(pg)?
        .and_then(|r| r.get::<_, String>(0).parse().ok())
        .unwrap_or(0);
    if found > LAYOUT_VERSION {
        return Err(format!(
            "{shown} has the gateway's layout version {found}, newer than the supported \
             {LAYOUT_VERSION}"
        ));
    }
    for (i, step) in MIGRATIONS.iter().enumerate() {
        if i64::try_from(i).unwrap_or(i64::MAX) >= found {
            tx.batch_execute(step).map_err(pg)?;
        }
    }
    tx.execute(
        "INSERT INTO filo_gateway.meta (key, value) VALUES ('layout_version', $1) \
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        &[&LAYOUT_VERSION.to_string()],
    )
    .map_err(pg)?;
    tx.commit().map_err(pg)
}

/// The complete lines of `file` (a missing file has none; a torn last line is left out).
fn read_lines(file: &Path) -> Result<Vec<String>, String> {
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let text = String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8", file.display()))?;
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => return Ok(Vec::new()),
    };
    Ok(complete.split('\n').map(str::to_owned).collect())
}

/// Makes `file` hold exactly `lines`: kept when it already does; else an existing copy is
/// renamed to `<file>.unsynced-<hash>` and the shared lines are written (temp file + rename).
fn write_copy(file: &Path, lines: &[String]) -> Result<(), String> {
    let mut want = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        want.push_str(l);
        want.push('\n');
    }
    match std::fs::read(file) {
        Ok(have) if have == want.as_bytes() => return Ok(()),
        Ok(have) => {
            let mut h = DefaultHasher::new();
            have.hash(&mut h);
            let aside = PathBuf::from(format!("{}.unsynced-{:016x}", file.display(), h.finish()));
            std::fs::rename(file, &aside)
                .map_err(|e| format!("cannot set {} aside: {e}", file.display()))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    }
    if lines.is_empty() {
        return Ok(());
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let tmp = PathBuf::from(format!("{}.sync-tmp", file.display()));
    std::fs::write(&tmp, want.as_bytes()).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, file).map_err(|e| format!("{}: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_keys_are_stable_and_distinct() {
        assert_eq!(lane_lock_key("main", "k1"), lane_lock_key("main", "k1"));
        assert_ne!(lane_lock_key("main", "k1"), lane_lock_key("main", "k2"));
        assert_ne!(lane_lock_key("a", "bc"), lane_lock_key("ab", "c"));
    }

    #[test]
    fn a_local_copy_that_differs_is_set_aside_not_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jsonl");
        let lines = vec!["{\"a\":1}".to_owned(), "{\"b\":2}".to_owned()];
        write_copy(&file, &lines).unwrap();
        assert_eq!(read_lines(&file).unwrap(), lines);
        // Unchanged: kept as it is.
        write_copy(&file, &lines).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // A run that was not synced left a line (and a torn one).
        std::fs::write(&file, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"to").unwrap();
        assert_eq!(read_lines(&file).unwrap().len(), 3);
        write_copy(&file, &lines).unwrap();
        assert_eq!(read_lines(&file).unwrap(), lines);
        let aside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.contains(".unsynced-"))
            .collect();
        assert_eq!(aside.len(), 1);
        let kept = std::fs::read_to_string(dir.path().join(&aside[0])).unwrap();
        assert!(kept.contains("{\"c\":3}"));
    }
}
