//! Opening a Playfilo database: checks, connection settings, schema V4 and migrations (spec §1).

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::db::{Db, TxDepth};
use crate::error::{DagError, Result};
use crate::pg::Pg;

/// The schema version this code writes and understands (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 4;

/// How long a writer waits for another process's lock (the reference's default is 5 s).
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

const CREATE_TABLES: &str = "\
CREATE TABLE IF NOT EXISTS blobs (hash TEXT PRIMARY KEY, type TEXT NOT NULL, content TEXT NOT NULL, thought_signature TEXT);
CREATE TABLE IF NOT EXISTS nodes (id TEXT PRIMARY KEY, parent_id TEXT, role TEXT NOT NULL, parts_list TEXT NOT NULL, timestamp INTEGER NOT NULL, config_json TEXT, thought_signatures TEXT, system_prompt_hash TEXT, external_id TEXT);
CREATE TABLE IF NOT EXISTS refs (name TEXT PRIMARY KEY, node_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS action_log (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp INTEGER NOT NULL, action_type TEXT NOT NULL, from_node TEXT, to_node TEXT, metadata TEXT);";

const CREATE_INDEXES: &str = "\
CREATE INDEX IF NOT EXISTS idx_nodes_parent ON nodes(parent_id);
CREATE INDEX IF NOT EXISTS idx_nodes_external_id ON nodes(external_id);";

/// Nullable V4 columns that older files may lack; added with `ALTER TABLE … ADD COLUMN … TEXT`.
const OPTIONAL_COLUMNS: &[(&str, &str)] = &[
    ("blobs", "thought_signature"),
    ("nodes", "config_json"),
    ("nodes", "thought_signatures"),
    ("nodes", "system_prompt_hash"),
    ("nodes", "external_id"),
];

/// Columns without which a table is not a Playfilo table.
const REQUIRED_COLUMNS: &[(&str, &[&str])] = &[
    ("blobs", &["hash", "type", "content"]),
    (
        "nodes",
        &["id", "parent_id", "role", "parts_list", "timestamp"],
    ),
    ("refs", &["name", "node_id"]),
    (
        "action_log",
        &[
            "id",
            "timestamp",
            "action_type",
            "from_node",
            "to_node",
            "metadata",
        ],
    ),
];

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// A handle on one Playfilo database: one connection (an SQLite file or PostgreSQL), all writes
/// in one serialised transaction each.
#[derive(Debug)]
pub struct Store {
    pub(crate) db: Db,
    pub(crate) depth: TxDepth,
    path: Option<PathBuf>,
    /// The last system prompt committed through this connection and its blob hash: prompts
    /// repeat on every node, and can be long, so an unchanged one is neither re-hashed nor
    /// re-inserted (blobs are never deleted, so the blob stays valid).
    pub(crate) last_prompt: std::cell::RefCell<Option<(String, String)>>,
    /// The deepest lineage a walk follows ([`Store::set_max_depth`]).
    max_depth: std::cell::Cell<usize>,
    /// A file opened read-only ([`Store::open_read_only`]) as it is: the `(table, column)`s its
    /// layout lacks (`(table, "*")` for a whole table), which [`Store::copy_into`] reads as NULL
    /// (or no rows). Empty for every store opened for writing (those are migrated to V4).
    pub(crate) absent: HashSet<(String, String)>,
    /// Tests: count descendants with the recursive CTE (the oracle of the faster pass).
    #[cfg(test)]
    pub(crate) cte_counts: std::cell::Cell<bool>,
}

/// Whether [`Store::open_with`] may create a missing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Create {
    /// Create the file (and the schema) when it does not exist.
    IfMissing,
    /// Fail with [`DagError::Missing`] when the file does not exist.
    Never,
}

impl Store {
    /// Opens (creating if needed) the database at `path` and brings its schema to V4.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, Create::IfMissing)
    }

    /// Opens the database at `path`; see [`Create`].
    ///
    /// A file that is not SQLite, an SQLite file without Playfilo tables, or a file whose
    /// `user_version` is newer than [`SCHEMA_VERSION`] is rejected before anything is written.
    pub fn open_with(path: impl AsRef<Path>, create: Create) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let exists = path.exists();
        if !exists && create == Create::Never {
            return Err(DagError::Missing(path));
        }
        if exists {
            check_magic(&path)?;
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create == Create::IfMissing {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        // Two processes opening a new database at once: SQLite answers the journal-mode switch
        // and the schema check with `SQLITE_BUSY` at once, without waiting in the busy handler,
        // while the other one is setting it up. Try again for as long as a busy write would wait.
        let started = std::time::Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            let conn = Connection::open_with_flags(&path, flags)?;
            match Self::init(conn, Some(path.clone())) {
                Err(e) if e.is_busy() && started.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                other => return other,
            }
        }
    }

    /// Opens an existing SQLite file only to read it, exactly as it is: opened read-only, its
    /// journal mode and layout left alone (an older layout is not upgraded; the columns it lacks
    /// read as NULL in [`Store::copy_into`]). For `filo dag migrate --from`. Write calls fail.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if !path.exists() {
            return Err(DagError::Missing(path));
        }
        check_magic(&path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&path, flags)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let layout = inspect(&conn, &path)?;
        let mut absent = HashSet::new();
        for (table, _) in REQUIRED_COLUMNS {
            if !layout.tables.contains(*table) {
                absent.insert(((*table).to_owned(), "*".to_owned()));
            }
        }
        for (table, column) in OPTIONAL_COLUMNS {
            let key = ((*table).to_owned(), (*column).to_owned());
            if !layout.columns.contains(&key) {
                absent.insert(key);
            }
        }
        Ok(Self {
            db: Db::Sqlite(conn),
            depth: TxDepth::default(),
            path: Some(path),
            last_prompt: std::cell::RefCell::new(None),
            max_depth: std::cell::Cell::new(crate::walk::DEFAULT_MAX_DEPTH),
            absent,
            #[cfg(test)]
            cte_counts: std::cell::Cell::new(false),
        })
    }

    /// A private in-memory database with the V4 schema (tests, scratch work).
    pub fn open_in_memory() -> Result<Self> {
        Self::init(Connection::open_in_memory()?, None)
    }

    /// Connects to a Playfilo database in PostgreSQL (`postgres://user:pass@host:port/db`, with
    /// `sslmode=disable|prefer|require` and optionally `sslrootcert=<PEM file>`), creating or
    /// migrating its tables in the schema `playfilo`. A layout newer than this code is refused
    /// before anything is written.
    pub fn connect(url: &str) -> Result<Self> {
        Ok(Self {
            db: Db::Postgres(Box::new(Pg::connect(url)?)),
            depth: TxDepth::default(),
            path: None,
            last_prompt: std::cell::RefCell::new(None),
            max_depth: std::cell::Cell::new(crate::walk::DEFAULT_MAX_DEPTH),
            absent: HashSet::new(),
            #[cfg(test)]
            cte_counts: std::cell::Cell::new(false),
        })
    }

    /// Opens a database named by `location`: a `postgres://` or `postgresql://` URL connects to
    /// PostgreSQL ([`Store::connect`]), anything else is an SQLite file path
    /// ([`Store::open_with`]).
    pub fn open_location(location: &str, create: Create) -> Result<Self> {
        if crate::pg::is_postgres_url(location) {
            Self::connect(location)
        } else {
            Self::open_with(location, create)
        }
    }

    /// How long each call waits for another connection's lock before failing with
    /// [`DagError::is_busy`] (30 s by default; SQLite only, PostgreSQL waits for its locks).
    pub fn set_busy_timeout(&self, timeout: Duration) -> Result<()> {
        if let Some(conn) = self.sqlite() {
            conn.busy_timeout(timeout)?;
        }
        Ok(())
    }

    /// Bounds every lineage walk (life, recall, trace, session loading, resume): a walk that
    /// meets more than `depth` nodes fails with [`DagError::TooDeep`] instead of going on.
    /// The default is [`crate::DEFAULT_MAX_DEPTH`]. (Cycles fail whatever the bound.)
    pub fn set_max_depth(&self, depth: usize) {
        self.max_depth.set(depth.max(1));
    }

    /// The bound of [`Store::set_max_depth`].
    pub fn max_depth(&self) -> usize {
        self.max_depth.get()
    }

    /// For a one-shot read that streams once through much of the file (`recall`'s and `trace`'s
    /// walks towards the root, in a process that then exits): no memory map and a 2 MiB page
    /// cache, so the pages read pass through instead of staying resident (mapped, every page of a
    /// 100,000-node lineage counted in the process's RSS). SQLite only; no effect on the file.
    pub fn set_streaming_reads(&self) -> Result<()> {
        if let Some(conn) = self.sqlite() {
            conn.execute_batch("PRAGMA mmap_size = 0; PRAGMA cache_size = -2048;")?;
        }
        Ok(())
    }

    /// The file path, `None` for an in-memory store or PostgreSQL.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Where the data is, for messages: the file path, `:memory:`, or the PostgreSQL URL without
    /// its password.
    pub fn location(&self) -> String {
        match (&self.db, &self.path) {
            (Db::Postgres(pg), _) => pg.shown().to_owned(),
            (Db::Sqlite(_), Some(p)) => p.display().to_string(),
            (Db::Sqlite(_), None) => ":memory:".to_owned(),
        }
    }

    fn init(conn: Connection, path: Option<PathBuf>) -> Result<Self> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let shown = path.clone().unwrap_or_else(|| PathBuf::from(":memory:"));
        let before = inspect(&conn, &shown)?;
        // WAL is persistent in the file; NORMAL sync is durable in WAL mode except on power loss.
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if path.is_some() && !mode.eq_ignore_ascii_case("wal") {
            conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))?;
        }
        // A 64 MiB page cache and memory-mapped reads: lineage walks touch many pages at random.
        conn.execute_batch(
            "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536; \
             PRAGMA mmap_size = 268435456; PRAGMA temp_store = MEMORY;",
        )?;
        let store = Self {
            db: Db::Sqlite(conn),
            depth: TxDepth::default(),
            path,
            last_prompt: std::cell::RefCell::new(None),
            max_depth: std::cell::Cell::new(crate::walk::DEFAULT_MAX_DEPTH),
            absent: HashSet::new(),
            #[cfg(test)]
            cte_counts: std::cell::Cell::new(false),
        };
        if before.needs_migration()
            && let Some(conn) = store.sqlite()
        {
            store.write(|| {
                let now = inspect(conn, &shown)?;
                migrate(conn, &now)
            })?;
        }
        Ok(store)
    }
}

/// What is in the file before any change.
#[derive(Debug)]
struct Layout {
    tables: HashSet<String>,
    indexes: HashSet<String>,
    columns: HashSet<(String, String)>,
    user_version: i64,
}

impl Layout {
    fn needs_migration(&self) -> bool {
        let tables_ok = REQUIRED_COLUMNS
            .iter()
            .all(|(t, _)| self.tables.contains(*t));
        let columns_ok = OPTIONAL_COLUMNS
            .iter()
            .all(|(t, c)| self.columns.contains(&((*t).to_owned(), (*c).to_owned())));
        let indexes_ok = ["idx_nodes_parent", "idx_nodes_external_id"]
            .iter()
            .all(|i| self.indexes.contains(*i));
        !(tables_ok && columns_ok && indexes_ok)
    }
}

fn check_magic(path: &Path) -> Result<()> {
    let io = |cause| DagError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut header = Vec::with_capacity(16);
    file.by_ref()
        .take(16)
        .read_to_end(&mut header)
        .map_err(io)?;
    if header.is_empty() || header.as_slice() == SQLITE_MAGIC {
        return Ok(());
    }
    Err(DagError::NotPlayfilo {
        path: path.to_path_buf(),
        reason: "not an SQLite database".into(),
    })
}

fn inspect(conn: &Connection, path: &Path) -> Result<Layout> {
    let not_playfilo = |reason: String| DagError::NotPlayfilo {
        path: path.to_path_buf(),
        reason,
    };
    let mut stmt = conn.prepare("SELECT type, name FROM sqlite_master")?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .map_err(|e| not_sqlite(e, path))?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(|e| not_sqlite(e, path))?;
    let user_version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if user_version > SCHEMA_VERSION {
        return Err(DagError::TooNew {
            path: path.to_path_buf(),
            found: user_version,
            supported: SCHEMA_VERSION,
        });
    }
    let mut layout = Layout {
        tables: HashSet::new(),
        indexes: HashSet::new(),
        columns: HashSet::new(),
        user_version,
    };
    for (kind, name) in rows {
        match kind.as_str() {
            "table" => layout.tables.insert(name),
            "index" => layout.indexes.insert(name),
            _ => false,
        };
    }
    let ours = REQUIRED_COLUMNS
        .iter()
        .filter(|(t, _)| layout.tables.contains(*t))
        .count();
    let foreign = layout.tables.iter().any(|t| !t.starts_with("sqlite_"));
    if ours == 0 && foreign {
        return Err(not_playfilo(
            "it has tables but none of blobs, nodes, refs, action_log".into(),
        ));
    }
    for (table, required) in REQUIRED_COLUMNS {
        if !layout.tables.contains(*table) {
            continue;
        }
        let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})"))?;
        let names = stmt
            .query_map([], |r| r.get::<_, String>(1))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        if let Some(missing) = required.iter().find(|c| !names.iter().any(|n| n == *c)) {
            return Err(not_playfilo(format!(
                "table {table} has no column {missing}"
            )));
        }
        for name in names {
            layout.columns.insert(((*table).to_owned(), name));
        }
    }
    Ok(layout)
}

fn not_sqlite(e: rusqlite::Error, path: &Path) -> DagError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => DagError::NotPlayfilo {
            path: path.to_path_buf(),
            reason: "not an SQLite database".into(),
        },
        _ => DagError::Sqlite(e),
    }
}

/// The init order of spec §1.4 that works on every version: tables, missing columns, indexes.
fn migrate(tx: &Connection, layout: &Layout) -> Result<()> {
    tx.execute_batch(CREATE_TABLES)?;
    for (table, column) in OPTIONAL_COLUMNS {
        let present = layout
            .columns
            .contains(&((*table).to_owned(), (*column).to_owned()));
        if layout.tables.contains(*table) && !present {
            tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} TEXT"))?;
        }
    }
    tx.execute_batch(CREATE_INDEXES)?;
    if layout.user_version < SCHEMA_VERSION {
        tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
