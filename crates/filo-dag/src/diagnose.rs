//! A database SQLite reports as damaged: what can still be read, without writing to it, and
//! whether a database can be written at all.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, MAIN_DB, OpenFlags};

use crate::error::{DagError, Result};
use crate::store::Store;

/// Integrity lines shown at most.
const MAX_LINES: usize = 20;

/// The tables counted in a [`Diagnosis`].
const TABLES: [&str; 4] = ["nodes", "blobs", "refs", "action_log"];

/// What a read-only look at a database found (see [`diagnose`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    /// The database path.
    pub path: PathBuf,
    /// Why the file could not be opened at all, if so.
    pub open_error: Option<String>,
    /// `PRAGMA integrity_check` lines (`["ok"]` when SQLite finds nothing), or the error that
    /// stopped the check, as one line.
    pub integrity: Vec<String>,
    /// Rows per table, or why the table could not be counted.
    pub tables: Vec<(&'static str, std::result::Result<u64, String>)>,
}

impl Diagnosis {
    /// True when SQLite found nothing wrong.
    pub fn is_ok(&self) -> bool {
        self.open_error.is_none() && self.integrity == ["ok"]
    }

    /// How to get the readable rows out, with SQLite's own tool; the damaged file is left as is.
    pub fn recovery_hint(&self) -> String {
        let p = self.path.display();
        format!(
            "to recover what is readable into a new database, leaving this file untouched:\n  \
             sqlite3 '{p}' .recover | sqlite3 recovered.db\n\
             then check it with `filo dag --db recovered.db fsck` and move it into place \
             (keep the damaged file until you are satisfied)"
        )
    }
}

/// Looks at the file at `path` read-only: integrity check and row counts. Never writes to it.
pub fn diagnose(path: &Path) -> Diagnosis {
    let mut d = Diagnosis {
        path: path.to_path_buf(),
        open_error: None,
        integrity: Vec::new(),
        tables: Vec::new(),
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = match Connection::open_with_flags(path, flags) {
        Ok(c) => c,
        Err(e) => {
            d.open_error = Some(e.to_string());
            return d;
        }
    };
    d.integrity = integrity_lines(&conn, "integrity_check");
    for table in TABLES {
        let n = conn
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| u64::try_from(n).unwrap_or(0))
            .map_err(|e| e.to_string());
        d.tables.push((table, n));
    }
    d
}

fn integrity_lines(conn: &Connection, pragma: &str) -> Vec<String> {
    let sql = format!("PRAGMA {pragma}({MAX_LINES})");
    let lines = conn.prepare(&sql).and_then(|mut stmt| {
        stmt.query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()
    });
    lines.unwrap_or_else(|e| vec![e.to_string()])
}

impl Store {
    /// Whether this database can be used for writing: not opened read-only (file permissions)
    /// and SQLite's `quick_check` finds nothing wrong. Cost: one pass over the file (about 0.1 s
    /// for 150 MB).
    pub fn check_writable(&self) -> Result<()> {
        self.check_not_read_only()?;
        let Some(conn) = self.sqlite() else {
            return Ok(());
        };
        let lines = integrity_lines(conn, "quick_check");
        if lines != ["ok"] {
            return Err(DagError::Damaged {
                path: self.path().map(Path::to_path_buf).unwrap_or_default(),
                details: lines.join("; "),
            });
        }
        Ok(())
    }

    /// The cheap half of [`Store::check_writable`]: not opened read-only (file permissions; on
    /// PostgreSQL, not a hot standby), without the pass over the file.
    pub fn check_not_read_only(&self) -> Result<()> {
        let path = self.path().map(Path::to_path_buf).unwrap_or_default();
        let Some(conn) = self.sqlite() else {
            // PostgreSQL keeps its own integrity; a hot standby is the read-only case.
            let q = crate::db::Q {
                sqlite: "",
                pg: "SELECT pg_is_in_recovery()::text",
            };
            let standby = self.first(&q, &[], |r| Ok(r.text(0)? == Some("true")))?;
            if standby == Some(true) {
                return Err(DagError::ReadOnly(PathBuf::from(self.location())));
            }
            return Ok(());
        };
        if conn.is_readonly(MAIN_DB)? {
            return Err(DagError::ReadOnly(path));
        }
        Ok(())
    }
}
