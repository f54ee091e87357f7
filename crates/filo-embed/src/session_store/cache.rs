//! The session cache (C5): a bounded LRU of idle sessions keyed by session file, so a busy
//! embedder does not reopen and re-parse a transcript for every turn.
//!
//! OpenClaw only pre-reads 4 KiB of a transcript within a 45 s TTL to warm the page cache; filo
//! keeps the opened session itself, with the same TTL and the same "≤ 0 disables" rule. The
//! rules that keep this safe:
//! - an entry is moved out by [`SessionCache::take`] (only the holder of the session lane takes
//!   it, so one session is never used twice at once) and moved back by [`SessionCache::put`];
//! - it is refused when the file's (length, modification time) differs from what the session
//!   last wrote (another writer touched it), when the attempt's fingerprint (model, auth profile,
//!   system prompt, tool set) differs, or when it sat idle longer than the TTL;
//! - after any error the holder calls [`SessionCache::invalidate`] (or simply does not put it
//!   back).
//!
//! The cache is generic over the session type so it can hold an `AgentSession` (the attempt) or
//! anything else with the same lifecycle.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use crate::clock::Clock;

/// Default number of idle sessions kept.
pub const DEFAULT_CACHE_CAPACITY: usize = 256;
/// Default idle time-to-live in ms (OpenClaw's session-manager cache TTL).
pub const DEFAULT_CACHE_TTL_MS: i64 = 45_000;
/// Environment variable naming the TTL (read by `filo gateway` only, passed in as a value).
pub const CACHE_TTL_ENV: &str = "FILO_SESSION_MANAGER_CACHE_TTL_MS";

/// What identifies a session file's content without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub len: u64,
    pub modified: Option<SystemTime>,
}

impl FileStamp {
    /// The stamp of `path`, None when it does not exist.
    pub fn of(path: &Path) -> io::Result<Option<Self>> {
        match fs::metadata(path) {
            Ok(m) => Ok(Some(Self {
                len: m.len(),
                modified: m.modified().ok(),
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Why [`SessionCache::take`] found nothing usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// Nothing cached for this file (or the cache is disabled).
    Absent,
    /// Idle longer than the TTL.
    Expired,
    /// The file changed since the session last wrote it.
    FileChanged,
    /// Model, profile, system prompt or tools differ from the new attempt's.
    FingerprintChanged,
}

/// Outcome of [`SessionCache::take`].
#[derive(Debug, PartialEq)]
pub enum Take<S> {
    Hit(S),
    Miss(Miss),
}

struct Entry<S, F> {
    session: S,
    fingerprint: F,
    stamp: Option<FileStamp>,
    idle_since_ms: i64,
    tick: u64,
}

struct State<S, F> {
    entries: HashMap<PathBuf, Entry<S, F>>,
    tick: u64,
}

/// Bounded LRU of idle sessions by session file. `F` is the attempt fingerprint.
pub struct SessionCache<S, F> {
    state: Mutex<State<S, F>>,
    capacity: usize,
    ttl_ms: i64,
    clock: Arc<dyn Clock>,
}

impl<S, F: PartialEq> SessionCache<S, F> {
    /// A cache of at most `capacity` sessions idle at most `ttl_ms`; a TTL ≤ 0 or a capacity of
    /// 0 disables it.
    pub fn new(capacity: usize, ttl_ms: i64, clock: Arc<dyn Clock>) -> Self {
        Self {
            state: Mutex::new(State {
                entries: HashMap::new(),
                tick: 0,
            }),
            capacity,
            ttl_ms,
            clock,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<S, F>> {
        // Map updates cannot panic half-way; user code never runs under the lock.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn enabled(&self) -> bool {
        self.ttl_ms > 0 && self.capacity > 0
    }

    /// Number of idle sessions held.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Returns an idle session to the cache after a successful turn. `file` is its transcript;
    /// its current stamp is recorded as "what the session last wrote". Returns the session back
    /// when the cache is disabled or the file cannot be inspected.
    pub fn put(&self, file: &Path, session: S, fingerprint: F) -> Result<(), S> {
        if !self.enabled() {
            return Err(session);
        }
        let Ok(stamp) = FileStamp::of(file) else {
            return Err(session);
        };
        let now = self.clock.now_ms();
        let mut state = self.lock();
        state.tick += 1;
        let tick = state.tick;
        state.entries.insert(
            file.to_path_buf(),
            Entry {
                session,
                fingerprint,
                stamp,
                idle_since_ms: now,
                tick,
            },
        );
        while state.entries.len() > self.capacity {
            let oldest = state
                .entries
                .iter()
                .min_by_key(|(_, e)| e.tick)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => drop(state.entries.remove(&k)),
                None => break,
            }
        }
        Ok(())
    }

    /// Takes the idle session of `file` for an attempt with `fingerprint`. Whatever the outcome,
    /// the entry leaves the cache.
    pub fn take(&self, file: &Path, fingerprint: &F) -> Take<S> {
        let Some(entry) = self.lock().entries.remove(file) else {
            return Take::Miss(Miss::Absent);
        };
        if self.clock.now_ms() - entry.idle_since_ms > self.ttl_ms {
            return Take::Miss(Miss::Expired);
        }
        if entry.fingerprint != *fingerprint {
            return Take::Miss(Miss::FingerprintChanged);
        }
        match FileStamp::of(file) {
            Ok(stamp) if stamp == entry.stamp => Take::Hit(entry.session),
            _ => Take::Miss(Miss::FileChanged),
        }
    }

    /// Drops the idle session of `file` (after an error, or when the file is rotated).
    pub fn invalidate(&self, file: &Path) -> bool {
        self.lock().entries.remove(file).is_some()
    }

    /// Drops every idle session (a new config, a shutdown).
    pub fn clear(&self) {
        let drained: Vec<S> = self
            .lock()
            .entries
            .drain()
            .map(|(_, e)| e.session)
            .collect();
        // Sessions are dropped outside the lock: dropping one may wait for its writes.
        drop(drained);
    }

    /// Drops every session idle longer than the TTL; returns how many.
    pub fn evict_expired(&self) -> usize {
        let now = self.clock.now_ms();
        let mut state = self.lock();
        let before = state.entries.len();
        state
            .entries
            .retain(|_, e| now - e.idle_since_ms <= self.ttl_ms);
        before - state.entries.len()
    }
}

/// The TTL from the value of [`CACHE_TTL_ENV`]: a number of ms, else the default.
pub fn ttl_from_env_value(value: Option<&str>) -> i64 {
    value
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(DEFAULT_CACHE_TTL_MS)
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
