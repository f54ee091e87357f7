//! Opening files: creation, WAL, migrations from V3 and older, refusing foreign or newer files.

use filo_dag::{Create, DagError, NewBlob, NodeCommit, SCHEMA_VERSION, Store};
use rusqlite::Connection;

const V3_DDL: &str = "\
CREATE TABLE blobs (hash TEXT PRIMARY KEY, type TEXT NOT NULL, content TEXT NOT NULL, thought_signature TEXT);
CREATE TABLE nodes (id TEXT PRIMARY KEY, parent_id TEXT, role TEXT NOT NULL, parts_list TEXT NOT NULL, timestamp INTEGER NOT NULL, config_json TEXT, thought_signatures TEXT, system_prompt_hash TEXT);
CREATE TABLE refs (name TEXT PRIMARY KEY, node_id TEXT NOT NULL);
CREATE TABLE action_log (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp INTEGER NOT NULL, action_type TEXT NOT NULL, from_node TEXT, to_node TEXT, metadata TEXT);
CREATE INDEX idx_nodes_parent ON nodes(parent_id);
PRAGMA journal_mode = WAL;
INSERT INTO blobs VALUES ('d3167d7e7b608d25db586005b1bdc1cfd12f1ffe39da11919fa112440d875a70', 'text', '\"hello\"', NULL);
INSERT INTO nodes VALUES ('n1', NULL, 'user', '[\"d3167d7e7b608d25db586005b1bdc1cfd12f1ffe39da11919fa112440d875a70\"]', 1700000000000, NULL, NULL, NULL);
INSERT INTO refs VALUES ('PI_HEAD', 'n1');";

fn columns(conn: &Connection, table: &str) -> Vec<String> {
    let mut stmt = conn
        .prepare(&format!("PRAGMA table_info({table})"))
        .unwrap();
    stmt.query_map([], |r| r.get(1))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn index_names(conn: &Connection) -> Vec<String> {
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn a_new_file_gets_schema_v4_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("playfilo.db");
    let store = Store::open(&path).unwrap();
    assert_eq!(store.path(), Some(path.as_path()));
    drop(store);
    let conn = Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(
        columns(&conn, "nodes"),
        [
            "id",
            "parent_id",
            "role",
            "parts_list",
            "timestamp",
            "config_json",
            "thought_signatures",
            "system_prompt_hash",
            "external_id"
        ]
    );
    assert_eq!(
        columns(&conn, "blobs"),
        ["hash", "type", "content", "thought_signature"]
    );
    assert!(index_names(&conn).contains(&"idx_nodes_external_id".to_owned()));
    // Reopening is a no-op.
    Store::open(&path).unwrap();
}

#[test]
fn a_real_v3_file_is_migrated_in_the_working_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch(V3_DDL)
        .unwrap();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.get_ref("PI_HEAD").unwrap().as_deref(), Some("n1"));
    let node = store.node("n1").unwrap().unwrap();
    assert_eq!(node.external_id, None);
    assert_eq!(node.parts.len(), 1);
    // The migrated file accepts V4 writes.
    let c = store
        .commit_node(
            &NodeCommit::new("user", 1)
                .part(NewBlob::text("x"))
                .external_id("abcd1234"),
        )
        .unwrap();
    assert_eq!(
        store.node_id_by_external_id("abcd1234").unwrap(),
        Some(c.id)
    );
    drop(store);
    let conn = Connection::open(&path).unwrap();
    assert!(columns(&conn, "nodes").contains(&"external_id".to_owned()));
    assert!(index_names(&conn).contains(&"idx_nodes_external_id".to_owned()));
}

#[test]
fn older_files_missing_optional_columns_are_completed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TABLE blobs (hash TEXT PRIMARY KEY, type TEXT NOT NULL, content TEXT NOT NULL);
             CREATE TABLE nodes (id TEXT PRIMARY KEY, parent_id TEXT, role TEXT NOT NULL, parts_list TEXT NOT NULL, timestamp INTEGER NOT NULL);",
        )
        .unwrap();
    Store::open(&path).unwrap();
    let conn = Connection::open(&path).unwrap();
    assert_eq!(columns(&conn, "nodes").len(), 9);
    assert_eq!(columns(&conn, "blobs").len(), 4);
    let tables: i64 = conn
        .query_row("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('refs', 'action_log')", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tables, 2);
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    let bytes = b"these are my notes, not a database\n".repeat(200);
    std::fs::write(&path, &bytes).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, DagError::NotPlayfilo { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("is not a Playfilo database: not an SQLite database")
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert!(!dir.path().join("notes.txt-wal").exists());
}

#[test]
fn a_foreign_sqlite_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE cats (name TEXT);")
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(
        err.to_string()
            .contains("none of blobs, nodes, refs, action_log"),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // A table with our name but the wrong shape is refused too.
    let path2 = dir.path().join("odd.db");
    Connection::open(&path2)
        .unwrap()
        .execute_batch("CREATE TABLE nodes (x TEXT);")
        .unwrap();
    let err = Store::open(&path2).unwrap_err();
    assert!(
        err.to_string().contains("table nodes has no column id"),
        "{err}"
    );
}

#[test]
fn a_newer_schema_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 5; CREATE TABLE blobs (hash TEXT);")
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            DagError::TooNew {
                found: 5,
                supported: 4,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_missing_file_is_an_error_when_creation_is_off() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.db");
    let err = Store::open_with(&path, Create::Never).unwrap_err();
    assert!(matches!(err, DagError::Missing(_)));
    assert!(!path.exists());
}
