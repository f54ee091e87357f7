//! filo's Playfilo memory for embedded sessions (design G11, issue item 4): on by default, every
//! session id writing its own head (`PI_HEAD:<session id>`, `PI_HEAD` kept for other Playfilo
//! tools), `life` / `recall` / `trace` / `tobe` offered under the tool policy like any other tool.
//! Config `memory {enabled, db}` turns it off or moves the database.
//!
//! The memory is opened per attempt and flushed before the attempt returns, so what a run
//! answered is in the DAG when the caller sees the answer; entries that could not be committed
//! are named in the run's warnings and mirrored when the session next resumes.

use std::path::PathBuf;
use std::sync::Arc;

use filo_core::playfilo::{Playfilo, PlayfiloConfig};

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
            if p.is_absolute() {
                p
            } else {
                paths.state_dir.join(p)
            }
        }
        None => PlayfiloConfig::under_home(&paths.home).db_path,
    }
}

/// Opens the memory for one attempt; `Ok(None)` when the config turns it off. An error is the
/// text of the run warning (the run goes on without the memory, and the database is untouched).
pub(crate) fn open_memory(
    config: &MemoryConfig,
    paths: &EmbedPaths,
    clock: Arc<dyn Clock>,
) -> Result<Option<Arc<Playfilo>>, String> {
    if !config.enabled {
        return Ok(None);
    }
    let mut pf = PlayfiloConfig::under_home(&paths.home);
    pf.db_path = memory_db_path(config, paths);
    pf.clock = Arc::new(move || clock.now_ms());
    let db = pf.db_path.clone();
    Playfilo::open(pf).map(|p| Some(Arc::new(p))).map_err(|e| {
        format!(
            "memory disabled for this run: {e} (nothing is mirrored; `filo dag --db {} fsck` tells more; memory.enabled=false silences this)",
            db.display()
        )
    })
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
