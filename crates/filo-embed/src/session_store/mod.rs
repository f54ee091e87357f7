//! The session store `sessions.json` (C4): store key → [`SessionEntry`], one file per agent in
//! `<state_dir>/agents/<agentId>/sessions/`.
//!
//! Writers take an advisory lock on `<file>.lock`, re-read the file, apply their change and
//! replace the file atomically (temporary file in the same directory, then rename), so several
//! handles or processes updating at once lose no update. A file that cannot be parsed is
//! reported with the file name and the offending key and is never written. Entries keep the
//! fields this code does not know.
//!
//! Session files are derived from entries through [`crate::paths`], so nothing a store holds can
//! point outside the sessions directory.

pub mod cache;
mod entry;

use crate::state_file;
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

pub use entry::{OverrideSource, SessionEntry};

use crate::clock::Clock;
use crate::paths::{EmbedPaths, SessionPathError, resolve_session_file};
use crate::session_key::normalize_agent_id;

/// File name of the store inside a sessions directory.
pub const SESSION_STORE_FILE: &str = "sessions.json";

/// Failure to read or write the session store.
#[derive(Debug, thiserror::Error)]
pub enum SessionStoreError {
    /// The file exists but does not hold a valid store; it is left untouched.
    #[error("{}: invalid session store at `{key}`: {reason}", file.display())]
    Malformed {
        file: PathBuf,
        key: String,
        reason: String,
    },
    /// An I/O operation on the store, its lock or its temporary file failed.
    #[error("cannot {op} {}", file.display())]
    Io {
        file: PathBuf,
        op: &'static str,
        #[source]
        source: io::Error,
    },
    /// An entry names a session id or file that is not acceptable.
    #[error("session store entry `{key}`")]
    Path {
        key: String,
        #[source]
        source: SessionPathError,
    },
}

/// The parsed store: entries by store key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionStore {
    pub entries: BTreeMap<String, SessionEntry>,
}

impl SessionStore {
    /// Parses `sessions.json`; `file` is only used in error messages.
    pub fn parse(text: &str, file: &Path) -> Result<Self, SessionStoreError> {
        let malformed = |key: &str, reason: String| SessionStoreError::Malformed {
            file: file.to_path_buf(),
            key: key.to_owned(),
            reason,
        };
        let doc: Value =
            serde_json::from_str(text).map_err(|e| malformed("(document)", e.to_string()))?;
        let Value::Object(map) = doc else {
            return Err(malformed("(document)", "expected a JSON object".into()));
        };
        let mut entries = BTreeMap::new();
        for (key, value) in map {
            let entry = parse_entry(value).map_err(|reason| malformed(&key, reason))?;
            entries.insert(key, entry);
        }
        Ok(Self { entries })
    }

    /// The store as pretty JSON.
    pub fn to_json_string(&self) -> Result<String, serde_json::Error> {
        let mut text = serde_json::to_string_pretty(&self.entries)?;
        text.push('\n');
        Ok(text)
    }

    /// The entry of `key`, created with a new UUID v4 session id when there is none. Returns the
    /// entry and whether it was created.
    pub fn get_or_create(&mut self, key: &str, clock: &dyn Clock) -> (&mut SessionEntry, bool) {
        let created = !self.entries.contains_key(key);
        let entry = self
            .entries
            .entry(key.to_owned())
            .or_insert_with(|| SessionEntry::new(new_session_id(), clock.now_ms()));
        (entry, created)
    }

    /// `/new` and `/reset`: gives `key` a new session id (its old transcript is kept on disk)
    /// and forgets the old transcript path and token counts; settings stay.
    pub fn rotate(&mut self, key: &str, clock: &dyn Clock) -> &mut SessionEntry {
        let (entry, created) = self.get_or_create(key, clock);
        if !created {
            entry.session_id = new_session_id();
            entry.session_file = None;
            entry.input_tokens = None;
            entry.output_tokens = None;
            entry.total_tokens = None;
            entry.context_tokens = None;
            entry.compaction_count = None;
            entry.aborted_last_run = None;
            entry.updated_at = clock.now_ms();
        }
        entry
    }
}

fn parse_entry(value: Value) -> Result<SessionEntry, String> {
    let Value::Object(fields) = value else {
        return Err("expected an object".into());
    };
    // Name the first known field with a wrong type, which serde's message does not.
    let probe: Map<String, Value> = fields.clone();
    serde_json::from_value::<SessionEntry>(Value::Object(fields)).map_err(|e| {
        let bad = probe.iter().find(|(name, v)| {
            let mut one = Map::new();
            one.insert("sessionId".into(), Value::String(String::new()));
            one.insert("updatedAt".into(), Value::from(0));
            one.insert((*name).clone(), (*v).clone());
            serde_json::from_value::<SessionEntry>(Value::Object(one)).is_err()
        });
        match bad {
            Some((name, _)) => format!("field `{name}`: {e}"),
            None => e.to_string(),
        }
    })
}

fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The store file path: `template` (config `session.store`, `{agentId}` and a leading `~`
/// expanded) or `<state_dir>/agents/<agentId>/sessions/sessions.json`.
pub fn store_path(paths: &EmbedPaths, agent_id: &str, template: Option<&str>) -> PathBuf {
    let agent = normalize_agent_id(agent_id);
    match template.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => {
            let t = t.replace("{agentId}", &agent);
            if t == "~" {
                paths.home.clone()
            } else if let Some(rest) = t.strip_prefix("~/") {
                paths.home.join(rest)
            } else {
                PathBuf::from(t)
            }
        }
        None => paths.session_store_file(&agent),
    }
}

/// A `sessions.json` file shared by every handle and process that names the same path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStoreFile {
    path: PathBuf,
}

impl SessionStoreFile {
    /// The default store of `agent_id`.
    pub fn for_agent(paths: &EmbedPaths, agent_id: &str) -> Self {
        Self::at(paths.session_store_file(agent_id))
    }

    /// The store at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The store's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// The transcript of `key`'s entry: its stored `sessionFile` when that stays inside the
    /// store's directory, else `<sessionId>.jsonl` there; an invalid session id is an error.
    pub fn transcript_path(
        &self,
        key: &str,
        entry: &SessionEntry,
    ) -> Result<PathBuf, SessionStoreError> {
        resolve_session_file(&entry.session_id, entry.session_file.as_deref(), self.dir()).map_err(
            |source| SessionStoreError::Path {
                key: key.to_owned(),
                source,
            },
        )
    }

    fn io(&self, op: &'static str, file: &Path) -> impl FnOnce(io::Error) -> SessionStoreError {
        let file = file.to_path_buf();
        move |source| SessionStoreError::Io { file, op, source }
    }

    /// Reads the store; a missing file is an empty store. Readers need no lock: writers replace
    /// the file by rename.
    pub fn load(&self) -> Result<SessionStore, SessionStoreError> {
        Ok(self.read()?.unwrap_or_default())
    }

    fn read(&self) -> Result<Option<SessionStore>, SessionStoreError> {
        match fs::read_to_string(&self.path) {
            Ok(text) => SessionStore::parse(&text, &self.path).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io("read", &self.path)(e)),
        }
    }

    /// Applies `change` to the current on-disk store under the cross-process lock and writes
    /// the result atomically; returns `change`'s value and the store as written. An unchanged
    /// existing store is not rewritten.
    pub fn update<R>(
        &self,
        change: impl FnOnce(&mut SessionStore) -> R,
    ) -> Result<(R, SessionStore), SessionStoreError> {
        state_file::with_lock(&self.path, || {
            let before = self.read()?;
            let mut store = before.clone().unwrap_or_default();
            let value = change(&mut store);
            if before.as_ref() == Some(&store) {
                return Ok((value, store));
            }
            let text = store
                .to_json_string()
                .map_err(|e| SessionStoreError::Malformed {
                    file: self.path.clone(),
                    key: "(document)".into(),
                    reason: e.to_string(),
                })?;
            state_file::replace_atomically(&self.path, &text)?;
            Ok((value, store))
        })
    }
}

impl From<state_file::StateIoError> for SessionStoreError {
    fn from(e: state_file::StateIoError) -> Self {
        SessionStoreError::Io {
            file: e.file,
            op: e.op,
            source: e.source,
        }
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
