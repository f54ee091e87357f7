use super::*;

#[test]
fn empty_files_are_accepted_and_initialized() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    std::fs::write(&path, b"").unwrap();
    check_magic(&path).unwrap();
    let store = Store::open(&path).unwrap();
    let conn = store.sqlite().unwrap();
    let layout = inspect(conn, &path).unwrap();
    assert!(!layout.needs_migration());
    assert_eq!(layout.user_version, SCHEMA_VERSION);
}

#[test]
fn a_short_foreign_header_is_not_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x");
    std::fs::write(&path, b"SQLite").unwrap();
    assert!(matches!(
        check_magic(&path),
        Err(DagError::NotPlayfilo { .. })
    ));
}

#[test]
fn missing_index_alone_triggers_migration() {
    let store = Store::open_in_memory().unwrap();
    store
        .sqlite()
        .unwrap()
        .execute_batch("DROP INDEX idx_nodes_external_id")
        .unwrap();
    let layout = inspect(store.sqlite().unwrap(), Path::new(":memory:")).unwrap();
    assert!(layout.needs_migration());
    store
        .write(|| migrate(store.sqlite().unwrap(), &layout))
        .unwrap();
    assert!(
        !inspect(store.sqlite().unwrap(), Path::new(":memory:"))
            .unwrap()
            .needs_migration()
    );
}
