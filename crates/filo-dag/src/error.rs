//! The error type of the DAG store.

use std::path::PathBuf;

/// Everything that can go wrong in `filo-dag`.
///
/// Each variant embeds its cause in its message and exposes no `source`, so a cause is printed
/// once whether the error is shown alone or as a chain (`{:#}` in anyhow).
#[derive(Debug, thiserror::Error)]
pub enum DagError {
    /// An SQLite call failed.
    #[error("sqlite: {0}")]
    Sqlite(rusqlite::Error),
    /// Reading the database file failed before SQLite saw it.
    #[error("cannot read {path}: {cause}")]
    Io {
        /// The database path.
        path: PathBuf,
        /// The underlying error.
        cause: std::io::Error,
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
    /// A PostgreSQL call failed (connection, statement or server error).
    #[error("postgres: {0}")]
    Postgres(String),
    /// The PostgreSQL server could not be reached, or the connection broke: the call was not
    /// done (a transaction it was part of is rolled back). A later call reconnects.
    #[error("the PostgreSQL database {url} is unavailable: {cause}")]
    PgUnavailable {
        /// The connection string without its password.
        url: String,
        /// Why (connection refused, closed, timed out …), without any password.
        cause: String,
    },
    /// The PostgreSQL database carries a layout newer than this code understands; untouched.
    #[error(
        "{url} has filo's PostgreSQL layout version {found}, newer than the supported {supported}"
    )]
    PgTooNew {
        /// The connection string without its password.
        url: String,
        /// `playfilo.meta.layout_version` of the database.
        found: i64,
        /// The newest version this code understands.
        supported: i64,
    },
    /// The operation exists for one backend only (e.g. SQLite's integrity check).
    #[error("{0}")]
    Unsupported(String),
    /// A copy between databases was refused (e.g. the destination is not empty).
    #[error("{0}")]
    Copy(String),
    /// A commit in a batch asked for the previous node but is the first of the batch.
    #[error("commit {index} of the batch has no previous node to use as parent")]
    NoPreviousNode {
        /// Position in the batch.
        index: usize,
    },
    /// A walk over the memory met a node twice: the ancestry loops. Node ids are hashes over
    /// their parent's id, so only a forged or damaged database holds a cycle; nothing was read
    /// past it and nothing was changed.
    #[error(
        "the memory's graph loops: node {node} is its own ancestor (a forged or damaged database; \
         `filo dag fsck` lists the nodes whose ids do not match their content)"
    )]
    Cycle {
        /// A node on the cycle.
        node: String,
    },
    /// A walk over the memory went deeper than the bound ([`crate::Store::set_max_depth`]).
    #[error(
        "the lineage of node {start} is deeper than {limit} nodes: the walk stopped at node {node} \
         (a forged or damaged database?)"
    )]
    TooDeep {
        /// Where the walk started.
        start: String,
        /// The node where it stopped.
        node: String,
        /// The bound.
        limit: usize,
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
            | Self::Postgres(_)
            | Self::PgUnavailable { .. }
            | Self::PgTooNew { .. }
            | Self::Unsupported(_)
            | Self::Copy(_)
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
            | Self::Cycle { .. }
            | Self::TooDeep { .. }
            | Self::NoPreviousNode { .. } => false,
        }
    }

    /// True when the memory's graph itself is unusable here (a cycle or an over-deep chain):
    /// the read was refused, nothing was changed.
    pub fn is_bad_graph(&self) -> bool {
        matches!(self, Self::Cycle { .. } | Self::TooDeep { .. })
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
            | Self::Postgres(_)
            | Self::PgUnavailable { .. }
            | Self::PgTooNew { .. }
            | Self::Unsupported(_)
            | Self::Copy(_)
            | Self::Io { .. }
            | Self::Missing(_)
            | Self::NotPlayfilo { .. }
            | Self::TooNew { .. }
            | Self::ReadOnly(_)
            | Self::Damaged { .. }
            | Self::RefConflict { .. }
            | Self::Cycle { .. }
            | Self::TooDeep { .. }
            | Self::NoPreviousNode { .. } => false,
        }
    }
}

impl From<rusqlite::Error> for DagError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sqlite(e)
    }
}

/// Result alias of this crate.
pub type Result<T, E = DagError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of `e` followed by its `source` chain, as anyhow's `{:#}` prints it.
    fn chain(e: &dyn std::error::Error) -> String {
        let mut out = e.to_string();
        let mut next = e.source();
        while let Some(s) = next {
            out.push_str(": ");
            out.push_str(&s.to_string());
            next = s.source();
        }
        out
    }

    #[test]
    fn a_cause_is_printed_once() {
        let dir = tempfile::tempdir().unwrap();
        // An SQLite header over garbage: SQLite itself says "file is not a database".
        let path = dir.path().join("bad.db");
        let mut bytes = b"SQLite format 3\0".to_vec();
        bytes.extend(std::iter::repeat_n(0xA5u8, 8192));
        std::fs::write(&path, &bytes).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        let sqlite = conn
            .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap_err();
        let errors = [
            DagError::from(sqlite),
            DagError::Io {
                path: dir.path().join("x.db"),
                cause: std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied here"),
            },
        ];
        for e in &errors {
            let text = chain(e);
            for cause in ["file is not a database", "denied here"] {
                assert!(text.matches(cause).count() <= 1, "{text}");
            }
            assert_eq!(
                text,
                e.to_string(),
                "the cause is in the message, not a source"
            );
        }
        assert!(chain(&errors[0]).contains("file is not a database"));
    }
}
