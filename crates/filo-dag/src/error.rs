//! The error type of the DAG store.

use std::path::PathBuf;

/// Everything that can go wrong in `filo-dag`.
#[derive(Debug, thiserror::Error)]
pub enum DagError {
    /// An SQLite call failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Reading the database file failed before SQLite saw it.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The database path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The database file does not exist and creation was not requested.
    #[error("no Playfilo database at {0}")]
    Missing(PathBuf),
    /// The file exists but is not a Playfilo database; it was left untouched.
    #[error("{path} is not a Playfilo database: {reason}")]
    NotPlayfilo {
        /// The database path.
        path: PathBuf,
        /// What gave it away.
        reason: String,
    },
    /// The file carries a schema version newer than this code understands; left untouched.
    #[error("{path} has Playfilo schema version {found}, newer than the supported {supported}")]
    TooNew {
        /// The database path.
        path: PathBuf,
        /// `PRAGMA user_version` of the file.
        found: i64,
        /// The newest version this code understands.
        supported: i64,
    },
    /// The database can only be read (file or directory permissions).
    #[error("{0} is read-only")]
    ReadOnly(PathBuf),
    /// SQLite's integrity check found damage.
    #[error("{path} is damaged: {details}")]
    Damaged {
        /// The database path.
        path: PathBuf,
        /// The first lines of the integrity check.
        details: String,
    },
    /// No node matches (the reference's text, without the `Error: ` prefix).
    #[error("Node not found for \"{0}\".")]
    NotFound(String),
    /// A hash prefix matches several nodes (the reference's text).
    #[error("Ambiguous hash prefix \"{prefix}\" matches {count} nodes.")]
    Ambiguous {
        /// The prefix as given.
        prefix: String,
        /// How many node ids start with it.
        count: u64,
    },
    /// life was asked for HEAD but the ref is unset (the reference's text).
    #[error("No HEAD set and no focus_hash provided.")]
    NoHeadNoFocus,
    /// recall was asked for HEAD but the ref is unset (the reference's text).
    #[error("No HEAD set.")]
    NoHead,
    /// The resolved node row is missing (the reference's text, first 12 characters of the id).
    #[error("Node {0} not found.")]
    NodeMissing(String),
    /// A compare-and-set on a ref found another value; nothing was written.
    #[error("ref {name} moved: expected {expected:?}, found {actual:?}")]
    RefConflict {
        /// The ref name.
        name: String,
        /// The value the caller expected (`None` = no ref).
        expected: Option<String>,
        /// The value found.
        actual: Option<String>,
    },
    /// A commit in a batch asked for the previous node but is the first of the batch.
    #[error("commit {index} of the batch has no previous node to use as parent")]
    NoPreviousNode {
        /// Position in the batch.
        index: usize,
    },
}

impl DagError {
    /// True when another connection held the lock for longer than the busy timeout: trying
    /// again later may succeed.
    pub fn is_busy(&self) -> bool {
        match self {
            Self::Sqlite(e) => matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            ),
            Self::Io { .. }
            | Self::Missing(_)
            | Self::NotPlayfilo { .. }
            | Self::TooNew { .. }
            | Self::ReadOnly(_)
            | Self::Damaged { .. }
            | Self::NotFound(_)
            | Self::Ambiguous { .. }
            | Self::NoHeadNoFocus
            | Self::NoHead
            | Self::NodeMissing(_)
            | Self::RefConflict { .. }
            | Self::NoPreviousNode { .. } => false,
        }
    }

    /// True for the "a node reference did not resolve" errors that tools show to the model.
    pub fn is_resolution(&self) -> bool {
        match self {
            Self::NotFound(_)
            | Self::Ambiguous { .. }
            | Self::NoHeadNoFocus
            | Self::NoHead
            | Self::NodeMissing(_) => true,
            Self::Sqlite(_)
            | Self::Io { .. }
            | Self::Missing(_)
            | Self::NotPlayfilo { .. }
            | Self::TooNew { .. }
            | Self::ReadOnly(_)
            | Self::Damaged { .. }
            | Self::RefConflict { .. }
            | Self::NoPreviousNode { .. } => false,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = DagError> = std::result::Result<T, E>;
