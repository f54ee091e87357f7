//! filo's Playfilo memory for embedded sessions (design G11, issue item 4): on by default, every
//! session id writing its own head (`PI_HEAD:<session id>`, `PI_HEAD` kept for other Playfilo
//! tools), `life` / `recall` / `trace` / `tobe` offered under the tool policy like any other tool.
//! Config `memory {enabled, db}` turns it off or moves the database.
//!
//! Every session of the embedder shares one hub per database (one connection, one writer
//! thread, G11); a session's view is opened per attempt (or kept with its cached session) and
//! flushed before the attempt returns, so what a run
//! answered is in the DAG when the caller sees the answer; entries that could not be committed
//! are named in the run's warnings and mirrored when the session next resumes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use filo_core::playfilo::{HubConfig, MemoryHub, Playfilo, PlayfiloConfig};

use crate::clock::Clock;
use crate::config::MemoryConfig;
use crate::paths::EmbedPaths;

/// The database an embedded run mirrors into: `memory.db` (a relative path is taken under the
/// state directory), else `<home>/.playfilo/playfilo.db`, shared with other Playfilo agents.
pub fn memory_db_path(config: &MemoryConfig, paths: &EmbedPaths) -> PathBuf {
    match config
        .db
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        Some(db) => {
            let p = PathBuf::from(db);
            // A PostgreSQL connection string names a server, not a file under the state dir.
            if p.is_absolute() || filo_dag::is_postgres_url(db) {
                p
            } else {
                paths.state_dir.join(p)
            }
        }
        None => PlayfiloConfig::under_home(&paths.home).db_path,
    }
}

/// One memory hub per database for the whole embedder (G11): one SQLite connection and one
/// writer thread however many sessions run, each session a cheap view with its own head.
#[derive(Default)]
pub(crate) struct MemoryHubs {
    hubs: Mutex<HashMap<PathBuf, MemoryHub>>,
}

impl MemoryHubs {
    /// The hub of `db`, opened on first use. A database that cannot be opened is not remembered:
    /// the next attempt tries again (the file may have been fixed or unlocked meanwhile).
    fn hub(&self, db: PathBuf, home: &Path, clock: Arc<dyn Clock>) -> Result<MemoryHub, String> {
        let mut hubs = self.hubs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(h) = hubs.get(&db) {
            return Ok(h.clone());
        }
        let mut config = HubConfig::under_home(home);
        config.db_path = db.clone();
        config.clock = Arc::new(move || clock.now_ms());
        let hub = MemoryHub::open(config).map_err(|e| filo_dag::redact(&e.to_string()))?;
        hubs.insert(db, hub.clone());
        Ok(hub)
    }

    /// Waits until every queued commit of every session is written.
    pub fn flush(&self) {
        let hubs: Vec<MemoryHub> = self
            .hubs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for h in hubs {
            h.flush();
        }
    }
}

/// The memory of one session for an attempt; `Ok(None)` when the config turns it off. An error
/// is the text of the run warning (the run goes on without the memory, and the database is left
/// untouched).
pub(crate) fn open_memory(
    hubs: &MemoryHubs,
    config: &MemoryConfig,
    paths: &EmbedPaths,
    clock: Arc<dyn Clock>,
) -> Result<Option<Arc<Playfilo>>, String> {
    if !config.enabled {
        return Ok(None);
    }
    let db = memory_db_path(config, paths);
    match hubs.hub(db.clone(), &paths.home, clock) {
        Ok(hub) => Ok(Some(Arc::new(hub.session(None)))),
        // The database may be a connection string: its password never reaches a warning (run
        // warnings go to HTTP and WebSocket clients).
        Err(e) => Err(filo_dag::redact(&format!(
            "memory disabled for this run: {e} (nothing is mirrored; `filo dag --db {} fsck` tells more; memory.enabled=false silences this)",
            db.display()
        ))),
    }
}

/// Waits until every entry the attempt appended is committed, and names those that are not.
pub(crate) fn flush_memory(memory: &Playfilo) -> Vec<String> {
    memory
        .unmirrored()
        .into_iter()
        .map(|u| {
            format!(
                "entry {} is in the session file but not in the memory ({}); it is mirrored when the session resumes",
                u.entry_id, u.cause
            )
        })
        .collect()
}
