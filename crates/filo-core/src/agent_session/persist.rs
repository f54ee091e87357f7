//! How the session file's faults reach the user: lines skipped on load, a migration's backup, and
//! writes that failed. Nothing here hides an error: a failed write is a `warning` event at once
//! (shown by the TUI, the JSON and RPC streams), and [`AgentSession::ensure_saved`] tells print
//! mode whether the turn it answered is in the file.

use std::path::PathBuf;

use filo_session::{EntryKind, SessionManager};

use super::{AgentSession, SessionEvent, lock};

/// At most this many skipped-line warnings are listed one by one; the rest are counted.
const LISTED_WARNINGS: usize = 10;

/// Entries of a session that a failed write kept out of its file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the session was not saved: {count} entries are not in {} ({cause})", file.display())]
pub struct UnsavedSession {
    pub file: PathBuf,
    pub count: usize,
    /// The last write error, naming the file and the system's reason.
    pub cause: String,
}

/// Notices about loading the session file: every skipped line (up to a bound, then a count) and
/// where a migrated file's original was kept.
pub(super) fn load_notices(session: &SessionManager) -> Vec<String> {
    let Some(file) = session.session_file() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let warnings = session.warnings();
    for w in warnings.iter().take(LISTED_WARNINGS) {
        out.push(format!("session file {}: {w}", file.display()));
    }
    let more = warnings.len().saturating_sub(LISTED_WARNINGS) + session.warnings_dropped();
    if more > 0 {
        out.push(format!(
            "session file {}: {more} more lines skipped",
            file.display()
        ));
    }
    if let Some(backup) = session.migration_backup() {
        out.push(format!(
            "session file {} was migrated to version 3; the original is kept at {}",
            file.display(),
            backup.display()
        ));
    }
    out
}

/// A notice when entries are not in the file (e.g. entries restored from the memory could not be
/// written back).
pub(super) fn unsaved_notice(session: &SessionManager) -> Option<String> {
    unsaved(session).map(|u| u.to_string())
}

fn unsaved(session: &SessionManager) -> Option<UnsavedSession> {
    let count = session.unsaved_entries();
    if count == 0 {
        return None;
    }
    Some(UnsavedSession {
        file: session.session_file()?.to_path_buf(),
        count,
        cause: session
            .write_error()
            .unwrap_or("an earlier write failed")
            .to_string(),
    })
}

impl AgentSession {
    /// Append an entry and tell extensions (the memory mirrors it even when the file write
    /// failed: the entry is in the session). A failed write is counted and sent to listeners as a
    /// warning naming the file, the cause and how many entries are not in the file.
    pub(crate) fn append_entry(&self, kind: EntryKind) -> Option<String> {
        let (result, entry, missing) = {
            let mut store = lock(&self.inner.store);
            let before = store.leaf_id().map(str::to_string);
            let result = store.append(kind);
            // The new entry is the leaf whether or not it reached the file.
            let entry = store
                .leaf_entry()
                .filter(|e| Some(&e.id) != before.as_ref())
                .cloned();
            (result, entry, unsaved(&store))
        };
        if let Some(entry) = &entry
            && !self.inner.extensions.is_empty()
        {
            let ctx = self.entry_context();
            for ext in &self.inner.extensions {
                ext.entry_appended(entry, &ctx);
            }
        }
        match result {
            Ok(id) => Some(id),
            Err(e) => {
                lock(&self.inner.state).persist_errors += 1;
                let message = match missing {
                    Some(u) => u.to_string(),
                    None => format!("the session was not saved ({e})"),
                };
                self.emit(&SessionEvent::Warning { message });
                entry.map(|e| e.id)
            }
        }
    }

    /// Append a `custom` entry (pi's `appendCustomEntry`): application state that is saved in the
    /// session and mirrored like every entry, but never sent to the model. `None` only when the
    /// entry could not be added at all; a failed file write is a warning, as for every entry.
    pub fn append_custom_entry(
        &self,
        custom_type: &str,
        data: Option<serde_json::Value>,
    ) -> Option<String> {
        self.append_entry(EntryKind::Custom {
            custom_type: custom_type.to_string(),
            data,
        })
    }

    /// What failed writes kept out of the session file, if anything (no retry; see
    /// [`AgentSession::ensure_saved`]).
    pub fn unsaved(&self) -> Option<UnsavedSession> {
        unsaved(&lock(&self.inner.store))
    }

    /// Leaving this session (new, switch, fork) would drop entries its file does not hold:
    /// refused, with the reason, until they are written.
    pub(super) fn refuse_to_leave_unsaved(&self) -> Result<(), crate::CoreError> {
        self.ensure_saved().map_err(|u| {
            crate::CoreError::Refused(format!(
                "{u}; staying in this session so they are not lost (free space or fix the file's permissions, then try again)"
            ))
        })
    }

    /// Retry what failed writes left out of the session file, then say whether everything the
    /// session holds is in it. Print and JSON modes fail the run when it is not.
    pub fn ensure_saved(&self) -> Result<(), UnsavedSession> {
        let mut store = lock(&self.inner.store);
        if store.unsaved_entries() > 0 {
            // A failure is what `unsaved` reports just below.
            let _retried = store.retry_unsaved();
        }
        match unsaved(&store) {
            Some(u) => Err(u),
            None => Ok(()),
        }
    }
}
