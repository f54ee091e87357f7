//! The session manager: an entry tree with a leaf, persisted append-only like pi (pi spec §3.4).
//!
//! Invariants: every append creates a child of the leaf and moves the leaf to it; nothing is
//! written until the session holds an assistant message, then the header and all entries are
//! appended, then one line per entry; earlier lines are never rewritten (a migration is the one
//! whole-file write, done atomically, after a backup of the original). A file that is not a
//! session file is refused, not truncated.
//!
//! A failed write is never hidden: the entries that did not reach the file stay queued, in order,
//! and every later write retries them first, so the file never gets a child whose parent is
//! missing; [`SessionManager::unsaved_entries`] and [`SessionManager::write_error`] say what is
//! not on disk and why.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use filo_ai::UserContent;
use serde_json::Value;

use crate::entry::{EntryKind, SessionEntry, SessionHeader, SessionMessage};
use crate::file::{LoadWarning, SessionError, index_session_file, read_session_file};
use crate::ids::{file_timestamp, iso_from_ms, new_entry_id, new_session_id, now_ms};
use crate::store::{EntryStore, Item, Role, Shape};
use crate::write::{append_lines, backup_copy, write_atomic};

mod query;
pub use query::Entries;

/// A session: header, entries in file order, an index by id, and the leaf.
///
/// An opened file's message entries are held as positions in the file and parsed when first
/// read (see `crate::store`): the tree, the leaf and the context need only the leaf's branch.
#[derive(Debug, Clone)]
pub struct SessionManager {
    header: SessionHeader,
    entries: EntryStore,
    leaf: Option<String>,
    /// Where new session files go; `None` for an in-memory session.
    session_dir: Option<PathBuf>,
    file: Option<PathBuf>,
    flushed: bool,
    needs_newline: bool,
    warnings: Vec<LoadWarning>,
    /// Skipped lines beyond the warnings kept.
    warnings_dropped: usize,
    /// Lines of entries that a failed write kept out of the file, oldest first.
    pending: Vec<String>,
    /// Why the last write failed, while anything is unsaved.
    write_error: Option<String>,
    /// Where the original of a migrated file was kept.
    backup: Option<PathBuf>,
}

impl SessionManager {
    fn blank(cwd: &str, session_dir: Option<PathBuf>, id: Option<String>) -> Self {
        let timestamp = iso_from_ms(now_ms());
        let header = SessionHeader::new(
            id.unwrap_or_else(new_session_id),
            timestamp,
            cwd.to_string(),
            None,
        );
        let file = session_dir.as_ref().map(|d| {
            d.join(format!(
                "{}_{}.jsonl",
                file_timestamp(&header.timestamp),
                header.id
            ))
        });
        SessionManager {
            header,
            entries: EntryStore::default(),
            leaf: None,
            session_dir,
            file,
            flushed: false,
            needs_newline: false,
            warnings: Vec::new(),
            warnings_dropped: 0,
            pending: Vec::new(),
            write_error: None,
            backup: None,
        }
    }

    /// A session that is never written.
    pub fn in_memory(cwd: &str) -> Self {
        Self::blank(cwd, None, None)
    }

    /// A new session whose file will be created in `session_dir` (at the first assistant message).
    pub fn create(cwd: &str, session_dir: &Path) -> Self {
        Self::blank(cwd, Some(session_dir.to_path_buf()), None)
    }

    /// A new session with a given id.
    pub fn create_with_id(cwd: &str, session_dir: &Path, id: &str) -> Self {
        Self::blank(cwd, Some(session_dir.to_path_buf()), Some(id.to_string()))
    }

    /// Open a session file. A missing file starts a new session at that path; an empty file gets a
    /// fresh header when first written; a file whose first object is not a session header is an
    /// error and is left untouched. Older versions are migrated and rewritten atomically; the
    /// original is kept beside it as `<file name>.v<version>.bak` (never overwriting a file).
    pub fn open(path: &Path, fallback_cwd: &str) -> Result<Self, SessionError> {
        let dir = path.parent().map(Path::to_path_buf);
        if !path.exists() {
            let mut s = Self::blank(fallback_cwd, dir, None);
            s.file = Some(path.to_path_buf());
            return Ok(s);
        }
        let (loaded, items, handle) = index_session_file(path)?;
        let Some(header) = loaded.header else {
            if loaded.empty {
                let mut s = Self::blank(fallback_cwd, dir, None);
                s.file = Some(path.to_path_buf());
                return Ok(s);
            }
            return Err(SessionError::NotASessionFile(path.to_path_buf()));
        };
        let mut backup = None;
        if let (Some(version), Some(text)) = (loaded.migrated_from, &loaded.rewrite) {
            backup = Some(backup_copy(path, &format!("v{version}"))?);
            write_atomic(path, text)?;
        }
        let mut s = SessionManager {
            header,
            entries: EntryStore::default(),
            leaf: None,
            session_dir: dir,
            file: Some(path.to_path_buf()),
            flushed: true,
            needs_newline: loaded.migrated_from.is_none() && !loaded.ends_with_newline,
            warnings: loaded.warnings,
            warnings_dropped: loaded.warnings_dropped,
            pending: Vec::new(),
            write_error: None,
            backup,
        };
        s.entries = EntryStore::over(handle, items.len());
        s.insert_all(items);
        Ok(s)
    }

    /// Open the session file at `path`, or start the session `session_id` there when the file is
    /// missing or empty (an embedder's `<sessions dir>/<session id>.jsonl`, whose header id must
    /// equal the id it was asked for). An existing file is opened as [`SessionManager::open`]
    /// does, whatever its header says.
    pub fn open_or_create(path: &Path, session_id: &str, cwd: &str) -> Result<Self, SessionError> {
        let mut s = Self::open(path, cwd)?;
        // A file with content has a header (or `open` refused it): its id stands.
        let has_content = std::fs::metadata(path).is_ok_and(|m| m.len() > 0);
        if !has_content {
            s.header.id = session_id.to_string();
        }
        Ok(s)
    }

    /// Load a session file without ever writing to it (no migration rewrite; appends stay in
    /// memory). For exports and inspection.
    pub fn open_read_only(path: &Path) -> Result<Self, SessionError> {
        let (loaded, items, handle) = index_session_file(path)?;
        let header = loaded
            .header
            .ok_or_else(|| SessionError::NotASessionFile(path.to_path_buf()))?;
        let mut s = SessionManager {
            header,
            entries: EntryStore::default(),
            leaf: None,
            session_dir: None,
            file: None,
            flushed: false,
            needs_newline: false,
            warnings: loaded.warnings,
            warnings_dropped: loaded.warnings_dropped,
            pending: Vec::new(),
            write_error: None,
            backup: None,
        };
        s.entries = EntryStore::over(handle, items.len());
        s.insert_all(items);
        Ok(s)
    }

    /// Continue the most recently modified valid session in `session_dir`, or start a new one.
    pub fn continue_recent(cwd: &str, session_dir: &Path) -> Result<Self, SessionError> {
        match crate::list::most_recent_session(session_dir) {
            Some(path) => Self::open(&path, cwd),
            None => Ok(Self::create(cwd, session_dir)),
        }
    }

    /// A new session in `session_dir` for `target_cwd` that copies every entry of `source`
    /// (lines written verbatim) and records it as `parentSession`.
    pub fn fork_from(
        source: &Path,
        target_cwd: &str,
        session_dir: &Path,
    ) -> Result<Self, SessionError> {
        let loaded = read_session_file(source)?;
        if loaded.header.is_none() {
            return Err(SessionError::InvalidForkSource(source.to_path_buf()));
        }
        let mut s = Self::create(target_cwd, session_dir);
        s.header.parent_session = Some(source.to_string_lossy().into_owned());
        s.insert_all(
            loaded
                .entries
                .into_iter()
                .map(|e| Item::Entry(Box::new(e)))
                .collect(),
        );
        s.flush_if_ready()?;
        Ok(s)
    }

    /// Insert loaded entries in file order; the leaf is the last line's entry (a later line with
    /// an id seen before replaces that entry and is still the leaf, as in pi).
    fn insert_all(&mut self, items: Vec<Item>) {
        self.entries.reserve(items.len());
        let leaf = items.last().map(|e| e.id().to_string());
        for item in items {
            self.insert_item(item);
        }
        self.leaf = leaf;
    }

    fn insert_entry(&mut self, e: SessionEntry) {
        self.insert_item(Item::Entry(Box::new(e)));
    }

    fn insert_item(&mut self, item: Item) {
        let at = self.entries.insert(item);
        let parent = self
            .entries
            .parent(at)
            .and_then(|p| self.entries.position(p));
        self.entries.set_parent_pos(at, parent);
    }

    fn has_assistant(&self) -> bool {
        (0..self.entries.len())
            .any(|i| self.entries.shape(i) == Shape::Message(Some(Role::Assistant)))
    }

    fn flush_if_ready(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        if self.flushed {
            return self.write_pending();
        }
        if !self.has_assistant() {
            return Ok(());
        }
        let mut text = self.header.to_value().to_string();
        text.push('\n');
        for e in self.entries() {
            text.push_str(&e.to_line());
            text.push('\n');
        }
        let written = append_lines(&path, &text);
        self.record(written)?;
        self.flushed = true;
        self.pending.clear();
        Ok(())
    }

    /// Write the queued lines (a failed earlier write and the new line) in one append.
    fn write_pending(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.file.clone() else {
            self.pending.clear();
            return Ok(());
        };
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut text = String::new();
        if self.needs_newline {
            text.push('\n');
        }
        for line in &self.pending {
            text.push_str(line);
            text.push('\n');
        }
        let written = append_lines(&path, &text);
        if matches!(written, Err(SessionError::TornAppend { .. })) {
            // The file may now end in a partial line: the next write starts a new one.
            self.needs_newline = true;
        }
        self.record(written)?;
        self.pending.clear();
        self.needs_newline = false;
        Ok(())
    }

    /// Remember (or clear) why writing failed.
    fn record(&mut self, written: Result<(), SessionError>) -> Result<(), SessionError> {
        match written {
            Ok(()) => {
                self.write_error = None;
                Ok(())
            }
            Err(e) => {
                // The session file is named by whoever reports this; another path stays.
                self.write_error = Some(match &e {
                    SessionError::Io { path, cause } if self.file.as_ref() == Some(path) => {
                        cause.to_string()
                    }
                    other => other.to_string(),
                });
                Err(e)
            }
        }
    }

    /// Try again to write what a failed write left out of the file.
    pub fn retry_unsaved(&mut self) -> Result<(), SessionError> {
        self.flush_if_ready()
    }

    /// How many entries are in the session but not in its file because a write failed (0 for an
    /// in-memory session, and before the first assistant message, when nothing is due yet).
    pub fn unsaved_entries(&self) -> usize {
        if self.file.is_none() {
            return 0;
        }
        if self.flushed {
            self.pending.len()
        } else if self.has_assistant() {
            self.entries.len()
        } else {
            0
        }
    }

    /// Why the last write failed, while entries are unsaved (the system's reason, with the path
    /// when it is not the session file itself).
    pub fn write_error(&self) -> Option<&str> {
        self.write_error.as_deref()
    }

    /// Where the original of a file migrated on open was kept.
    pub fn migration_backup(&self) -> Option<&Path> {
        self.backup.as_deref()
    }

    /// Append an entry of `kind` as a child of the leaf; returns its id.
    pub fn append(&mut self, mut kind: EntryKind) -> Result<String, SessionError> {
        // pi 1.6 checkpoints the replayed prompt and tools at a compaction, so the compacted
        // context still starts from them (the kept range's system messages are left out).
        if let EntryKind::Compaction {
            system_message: checkpoint @ None,
            ..
        } = &mut kind
        {
            *checkpoint = self
                .build_context()
                .system_state()
                .to_message(now_ms())
                .map(Box::new);
        }
        let entry = SessionEntry {
            id: new_entry_id(|x| self.entries.contains(x)),
            parent_id: self.leaf.clone(),
            timestamp: iso_from_ms(now_ms()),
            kind,
            verbatim: None,
        };
        let id = entry.id.clone();
        if self.flushed && self.file.is_some() {
            self.pending.push(entry.to_line());
        }
        self.insert_entry(entry);
        self.leaf = Some(id.clone());
        self.flush_if_ready()?;
        Ok(id)
    }

    pub fn append_message(&mut self, message: SessionMessage) -> Result<String, SessionError> {
        self.append(EntryKind::Message(message))
    }

    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<String, SessionError> {
        self.append(EntryKind::ThinkingLevelChange {
            thinking_level: level.to_string(),
        })
    }

    pub fn append_model_change(
        &mut self,
        provider: &str,
        model_id: &str,
    ) -> Result<String, SessionError> {
        self.append(EntryKind::ModelChange {
            provider: provider.to_string(),
            model_id: model_id.to_string(),
        })
    }

    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept_entry_id: &str,
        tokens_before: u64,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String, SessionError> {
        self.append(EntryKind::Compaction {
            summary: summary.to_string(),
            first_kept_entry_id: first_kept_entry_id.to_string(),
            tokens_before,
            details,
            from_hook,
            usage: None,
            system_message: None,
        })
    }

    pub fn append_custom_entry(
        &mut self,
        custom_type: &str,
        data: Option<Value>,
    ) -> Result<String, SessionError> {
        self.append(EntryKind::Custom {
            custom_type: custom_type.to_string(),
            data,
        })
    }

    pub fn append_custom_message_entry(
        &mut self,
        custom_type: &str,
        content: UserContent,
        display: bool,
        details: Option<Value>,
    ) -> Result<String, SessionError> {
        self.append(EntryKind::CustomMessage {
            custom_type: custom_type.to_string(),
            content,
            display,
            details,
        })
    }

    /// Name the session (trimmed).
    pub fn append_session_info(&mut self, name: &str) -> Result<String, SessionError> {
        self.append(EntryKind::SessionInfo {
            name: name.trim().to_string(),
        })
    }

    /// Set (or, with `None` or an empty label, clear) the label of an entry.
    pub fn append_label_change(
        &mut self,
        target_id: &str,
        label: Option<&str>,
    ) -> Result<String, SessionError> {
        if !self.entries.contains(target_id) {
            return Err(SessionError::EntryNotFound(target_id.to_string()));
        }
        self.append(EntryKind::Label {
            target_id: target_id.to_string(),
            label: label.filter(|l| !l.is_empty()).map(str::to_string),
        })
    }

    /// Put entries rebuilt from another store (the Playfilo DAG) into the tree. An entry whose id
    /// exists replaces it in memory only; an entry the session lacks is also appended to the file
    /// (parents come before children in `entries`), so nothing written later refers to a parent
    /// the file does not hold. A failed write is kept queued and reported like any other (see
    /// [`SessionManager::unsaved_entries`]).
    pub fn merge_in_memory(&mut self, entries: Vec<SessionEntry>) {
        let mut added = false;
        for e in entries {
            if self.flushed && self.file.is_some() && !self.entries.contains(e.id.as_str()) {
                self.pending.push(e.to_line());
                added = true;
            }
            self.insert_entry(e);
        }
        if added {
            // Recorded in `write_error` / `unsaved_entries` when it fails.
            let _queued = self.flush_if_ready();
        }
    }

    /// Move the leaf to an existing entry; the next append branches from there.
    pub fn branch(&mut self, id: &str) -> Result<(), SessionError> {
        if !self.entries.contains(id) {
            return Err(SessionError::EntryNotFound(id.to_string()));
        }
        self.leaf = Some(id.to_string());
        Ok(())
    }

    /// Clear the leaf: the next append starts a new root.
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
    }

    /// Move the leaf to `from_id` (or the root) and append a `branch_summary` there.
    pub fn branch_with_summary(
        &mut self,
        from_id: Option<&str>,
        summary: &str,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String, SessionError> {
        match from_id {
            Some(id) => self.branch(id)?,
            None => self.reset_leaf(),
        }
        self.append(EntryKind::BranchSummary {
            from_id: from_id.unwrap_or("root").to_string(),
            summary: summary.to_string(),
            details,
            from_hook,
            usage: None,
        })
    }

    /// Start a fresh session in the same directory (new id and header, no entries).
    pub fn new_session(&mut self, id: Option<&str>, parent_session: Option<String>) {
        let mut s = Self::blank(
            &self.header.cwd,
            self.session_dir.clone(),
            id.map(str::to_string),
        );
        s.header.parent_session = parent_session;
        *self = s;
    }

    /// Move to a new session holding the path to `leaf_id` (labels dropped, then re-created for
    /// targets on the path). Written at once when the path has an assistant message.
    pub fn create_branched_session(&mut self, leaf_id: &str) -> Result<(), SessionError> {
        let path: Vec<SessionEntry> = self
            .branch_path(Some(leaf_id))
            .into_iter()
            .filter(|e| !matches!(e.kind, EntryKind::Label { .. }))
            .cloned()
            .collect();
        if path.is_empty() {
            return Err(SessionError::EntryNotFound(leaf_id.to_string()));
        }
        let on_path: HashSet<&str> = path.iter().map(|e| e.id.as_str()).collect();
        let labels: Vec<(String, String)> = path
            .iter()
            .filter_map(|e| self.label(&e.id).map(|l| (e.id.clone(), l.to_string())))
            .filter(|(id, _)| on_path.contains(id.as_str()))
            .collect();
        let parent = self.file.as_ref().map(|p| p.to_string_lossy().into_owned());
        self.new_session(None, parent);
        for e in path {
            self.insert_entry(e);
        }
        let last = self.entry_ids().next_back().map(str::to_string);
        self.leaf = last;
        for (target, label) in labels {
            self.append_label_change(&target, Some(&label))?;
        }
        self.flush_if_ready()
    }
}
